//! A session writer killed with SIGKILL in the middle of its writes leaves every complete line
//! intact, and its lease is taken over. A test target of its own with no harness: the same
//! binary plays the writer (when `FEN_JSONL_TEST_WRITER` names a file) and the test (otherwise),
//! so the writer is a real separate process that can be killed at any instant.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use fen::native::jsonl::{self, lease, read_all, BadLineKind, JsonlError, SessionWriter};
use serde_json::{json, Value};

/// Env var that turns this binary into the looping writer.
const WRITER_ENV: &str = "FEN_JSONL_TEST_WRITER";

fn main() {
    if let Some(path) = std::env::var_os(WRITER_ENV) {
        writer_loop(PathBuf::from(path));
        return;
    }
    // `cargo test -- FILTER` passes arguments; run unless a filter excludes this test.
    let name = "kill_9_of_a_real_writer_leaves_every_complete_line_intact";
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
        println!("0 passed, 0 failed, 1 skipped");
        return;
    }
    kill_9_of_a_real_writer_leaves_every_complete_line_intact();
    println!("test {name} ... ok");
    println!("1 passed, 0 failed");
}

fn header(id: &str) -> Value {
    jsonl::header_record(id, Path::new("/work/proj"), SystemTime::now(), "0.1.0")
}

/// The writer role: append numbered records forever (until killed).
fn writer_loop(path: PathBuf) {
    let mut w = SessionWriter::create(&path, &header("child")).unwrap();
    let mut seq: u64 = 0;
    loop {
        // Varying sizes, some large, so a kill can land inside a big write.
        let pad = "x".repeat(((seq * 7919) % 40_000) as usize);
        w.append(&json!({"type":"message","id":format!("m{seq}"),"seq":seq,"message":{"role":"user","content":pad}}))
            .unwrap();
        if seq.is_multiple_of(50) {
            w.sync().unwrap();
        }
        seq += 1;
    }
}

fn spawn_writer(path: &Path) -> std::process::Child {
    let exe = std::env::current_exe().unwrap();
    Command::new(exe)
        .env(WRITER_ENV, path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_for_lines(path: &Path, n: usize) {
    let t0 = Instant::now();
    loop {
        let count = fs::read(path)
            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
            .unwrap_or(0);
        if count >= n {
            return;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "writer child made no progress"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill_9_of_a_real_writer_leaves_every_complete_line_intact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let mut child = spawn_writer(&path);
    wait_for_lines(&path, 300);

    // While it lives, a second writer is refused with the child's pid.
    match SessionWriter::open(&path) {
        Err(JsonlError::SessionBusy { pid, host, .. }) => {
            assert_eq!(pid, child.id());
            assert_eq!(host, lease::hostname());
        }
        other => panic!("expected SessionBusy, got {other:?}"),
    }

    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap(); // reap, so its pid is really gone

    let rep = read_all(&path).unwrap();
    assert!(rep.bad_lines.len() <= 1, "{:?}", rep.bad_lines);
    if let Some(bad) = rep.bad_lines.first() {
        assert_eq!(bad.line, Some(rep.lines), "only the last line may be bad");
        assert_eq!(bad.kind, BadLineKind::TornLine);
    }
    let values = rep.values().unwrap();
    assert_eq!(values[0]["type"], "session");
    for (i, r) in values[1..].iter().enumerate() {
        assert_eq!(r["seq"], json!(i), "records are complete and in order");
    }
    let n = rep.records.len();
    assert!(n > 300);

    // The dead writer's lease is stale: a new writer takes over and continues cleanly.
    let mut w = SessionWriter::open(&path).unwrap();
    w.append(&json!({"type":"message","id":"after","seq":"after"}))
        .unwrap();
    drop(w);
    let rep2 = read_all(&path).unwrap();
    assert_eq!(rep2.records.len(), n + 1);
    assert_eq!(rep2.id(&rep2.records[n]).as_deref(), Some("after"));
    assert_eq!(rep2.bad_lines.len(), rep.bad_lines.len());
    assert!(
        !lease::lock_path_for(&path).exists(),
        "lease released on drop"
    );
}
