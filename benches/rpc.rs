//! `fen --mode rpc` against `fen --mode json`, as a ratio measured in the same run (mock
//! provider, no session file):
//!
//! 1. Round trip of one prompt from a cold start: spawn, prompt, wait for the turn's end,
//!    exit. `--mode json` takes the prompt as an argument; `--mode rpc` reads it as a request
//!    line and answers with a response line besides the same events. Target: rpc adds at most
//!    1 ms.
//! 2. Warm: prompts one after the other in one `--mode rpc` process (what a script or an
//!    editor pays per prompt once fen runs), against the cold json run.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FEN: &str = env!("CARGO_BIN_EXE_fen");
const RUNS: usize = 30;
const WARM: usize = 200;

fn command(home: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(FEN);
    c.args(args)
        .current_dir(home.join("work"))
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("XDG_STATE_HOME", home.join("state"))
        .env_remove("FEN_EXTENSIONS_PATH")
        .env_remove("FEN_EXTENSION_ROOT")
        .env_remove("FEN_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    c
}

/// CPU time (user + system) of every child reaped so far: a run's own cost, whatever else
/// the machine does (wall time on a shared 2-core machine counts other builds' ticks).
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes into the struct we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Wall and CPU time of `f` (which spawns and reaps one fen).
fn timed(f: impl FnOnce() -> Duration) -> (Duration, Duration) {
    let c = children_cpu();
    let wall = f();
    (wall, children_cpu() - c)
}

fn json_once(home: &Path, script: &Path) -> Duration {
    let t = Instant::now();
    let out = command(
        home,
        &[
            "--mode",
            "json",
            "--no-session",
            "--mock-script",
            script.to_str().unwrap(),
            "hi",
        ],
    )
    .stdin(Stdio::null())
    .output()
    .expect("fen --mode json");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"type\":\"result\""));
    t.elapsed()
}

/// Waits for the line of the turn's end.
fn until_done(out: &mut impl BufRead) {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).expect("read") > 0,
            "fen ended early"
        );
        if line.contains("\"type\":\"agent-turn-complete\"") {
            return;
        }
    }
}

fn rpc_once(home: &Path, script: &Path) -> Duration {
    let t = Instant::now();
    let mut child = command(
        home,
        &[
            "--mode",
            "rpc",
            "--no-session",
            "--mock-script",
            script.to_str().unwrap(),
        ],
    )
    .spawn()
    .expect("fen --mode rpc");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    stdin
        .write_all(b"{\"id\":1,\"type\":\"prompt\",\"text\":\"hi\"}\n")
        .unwrap();
    drop(stdin);
    until_done(&mut out);
    assert!(child.wait().unwrap().success());
    t.elapsed()
}

/// Per prompt, `n` prompts in one process (after one to warm up).
fn rpc_warm(home: &Path, script: &Path, n: usize) -> Duration {
    let mut child = command(
        home,
        &[
            "--mode",
            "rpc",
            "--no-session",
            "--mock-script",
            script.to_str().unwrap(),
        ],
    )
    .spawn()
    .expect("fen --mode rpc");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |i: usize| {
        writeln!(stdin, "{{\"id\":{i},\"type\":\"prompt\",\"text\":\"hi\"}}").unwrap();
        stdin.flush().unwrap();
        until_done(&mut out);
    };
    ask(0);
    let t = Instant::now();
    for i in 1..=n {
        ask(i);
    }
    let per = t.elapsed() / n as u32;
    drop(stdin);
    let _ = child.wait();
    per
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let dir = std::env::temp_dir().join(format!("fen-bench-rpc-{}", std::process::id()));
    let home: PathBuf = dir.clone();
    std::fs::create_dir_all(home.join("work")).unwrap();
    std::fs::create_dir_all(home.join("config/fen")).unwrap();
    std::fs::write(
        home.join("config/fen/settings.json"),
        r#"{"permissions": {"mode": "yolo"}}"#,
    )
    .unwrap();
    let script = home.join("script.lua");
    std::fs::write(&script, "return function(n) return { text = 'ok' } end").unwrap();

    // Warm the page cache and the binary once each.
    json_once(&home, &script);
    rpc_once(&home, &script);
    let (mut json, mut rpc) = (Vec::new(), Vec::new());
    let (mut json_cpu, mut rpc_cpu) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let (w, c) = timed(|| json_once(&home, &script));
        json.push(w);
        json_cpu.push(c);
        let (w, c) = timed(|| rpc_once(&home, &script));
        rpc.push(w);
        rpc_cpu.push(c);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let (j, r) = (median(json), median(rpc));
    let (jc, rc) = (median(json_cpu), median(rpc_cpu));
    println!(
        "cold prompt round trip (median of {RUNS}), wall: --mode json {:.1} ms, --mode rpc {:.1} ms, rpc adds {:+.2} ms (ratio {:.3}; target <= +1 ms)",
        ms(j), ms(r), ms(r) - ms(j), r.as_secs_f64() / j.as_secs_f64()
    );
    println!(
        "  CPU of the fen process: --mode json {:.1} ms, --mode rpc {:.1} ms, rpc adds {:+.2} ms (ratio {:.3})",
        ms(jc), ms(rc), ms(rc) - ms(jc), rc.as_secs_f64() / jc.as_secs_f64()
    );
    let warm = rpc_warm(&home, &script, WARM);
    println!(
        "warm: {WARM} prompts in one --mode rpc process: {:.2} ms a prompt ({:.1}x faster than a cold --mode json run)",
        warm.as_secs_f64() * 1000.0,
        j.as_secs_f64() / warm.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
