//! Benchmarks of the JSONL session core, as ratios against `wc -l` of the same files in the
//! same run. Run with `cargo bench --bench jsonl`.
//!
//! Each measured operation runs in a child process (this binary re-executed with
//! `FEN_JSONL_BENCH_CHILD=<op>`), so its peak memory (VmHWM) is its own and not the
//! generator's. Times are the best of a few runs with a warm page cache.
//!
//! `read_all` is the full parse a user pays for (`fen session show`): every line validated
//! as a JSON object, bad lines reported, records kept as spans of the mapped file. Its
//! VmHWM includes the mapped file's page-cache pages (shared, not allocated), so the
//! anonymous memory (RssAnon, measured with the result still alive) is printed beside it.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use fen::native::jsonl::{list_sessions, read_all, read_from_latest_compaction};
use serde_json::json;

const CHILD_ENV: &str = "FEN_JSONL_BENCH_CHILD";
const MESSAGES: usize = 100_000;
const COMPACT_AT: usize = 99_000;
const KEPT_BEFORE: usize = 40;
const LIST_FILES: usize = 1_000;
const RUNS: usize = 5;

fn main() {
    if let Ok(op) = std::env::var(CHILD_ENV) {
        child(&op);
        return;
    }
    // `FEN_JSONL_BENCH_GEN=<path>`: only write the 100k-message session there (for profiling).
    if let Some(p) = std::env::var_os("FEN_JSONL_BENCH_GEN") {
        generate_session(Path::new(&p), MESSAGES, Some(COMPACT_AT));
        return;
    }
    // `cargo bench` passes `--bench`; ignore arguments.
    let dir = tempfile::tempdir().expect("temp dir");
    let big = dir.path().join("big.jsonl");
    let t = Instant::now();
    let size = generate_session(&big, MESSAGES, Some(COMPACT_AT));
    println!(
        "generated {} messages, {:.1} MB in {:.2}s",
        MESSAGES,
        size as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    // The same conversation without a compaction: resuming it replays the whole file.
    let plain = dir.path().join("plain.jsonl");
    generate_session(&plain, MESSAGES, None);

    let wc = best(|| run_timed(Command::new("wc").arg("-l").arg(&big)));
    let full = best_child("read_all", &big);
    let trees = best_child("read_all_values", &big);
    let resume = best_child("resume", &big);
    let wc_plain = best(|| run_timed(Command::new("wc").arg("-l").arg(&plain)));
    let resume_full = best_child("resume", &plain);
    let noop = best_child("noop", &big);

    println!(
        "\n== one 100k-message session ({:.1} MB) ==",
        size as f64 / 1e6
    );
    println!("wc -l (baseline, incl. spawn)   {:>9.2} ms", ms(wc));
    println!(
        "read_all (validate all, spans)  {:>9.2} ms  ratio {:>6.2}x wc  (target <= 5x: {})",
        ms(full.time),
        ratio(full.time, wc),
        verdict(ratio(full.time, wc) <= 5.0)
    );
    println!(
        "  + value() of every record     {:>9.2} ms  ratio {:>6.2}x wc  (all Value trees; not a target)",
        ms(trees.time),
        ratio(trees.time, wc)
    );
    println!(
        "read_from_latest_compaction     {:>9.2} ms  ratio {:>6.2}x wc  (target <= 2x: {})",
        ms(resume.time),
        ratio(resume.time, wc),
        verdict(ratio(resume.time, wc) <= 2.0)
    );
    println!(
        "  same, no compaction (replays all){:>6.2} ms  ratio {:>6.2}x wc  (wc -l of it {:.2} ms; target <= 5x: {})",
        ms(resume_full.time),
        ratio(resume_full.time, wc_plain),
        ms(wc_plain),
        verdict(ratio(resume_full.time, wc_plain) <= 5.0)
    );
    println!(
        "\n== peak memory (VmHWM of a child doing only that; RssAnon with the result alive) =="
    );
    println!(
        "empty child (baseline)          {:>9} KB  anon {:>7} KB",
        noop.hwm_kb, noop.anon_kb
    );
    println!(
        "read_all                        {:>9} KB  anon {:>7} KB  (file {} KB, mapped)",
        full.hwm_kb,
        full.anon_kb,
        size / 1024
    );
    println!(
        "  + value() of every record     {:>9} KB  anon {:>7} KB",
        trees.hwm_kb, trees.anon_kb
    );
    println!(
        "read_from_latest_compaction     {:>9} KB  anon {:>7} KB  (+{} KB over baseline; kept context ~{} messages)",
        resume.hwm_kb,
        resume.anon_kb,
        resume.hwm_kb.saturating_sub(noop.hwm_kb),
        KEPT_BEFORE + 1 + (MESSAGES - COMPACT_AT)
    );
    println!(
        "  same, no compaction           {:>9} KB  anon {:>7} KB",
        resume_full.hwm_kb, resume_full.anon_kb
    );

    let list_dir = dir.path().join("many");
    fs::create_dir_all(&list_dir).expect("mkdir");
    let mut total = 0;
    for i in 0..LIST_FILES {
        total += generate_session(&list_dir.join(format!("s{i:04}.jsonl")), 25, None);
    }
    let cat_wc = best(|| {
        run_timed(
            Command::new("sh")
                .arg("-c")
                .arg("cat -- *.jsonl | wc -l")
                .current_dir(&list_dir),
        )
    });
    let list = best_child("list", &list_dir).time;
    println!(
        "\n== list_sessions over {} files ({:.1} MB, ~{} KB each) ==",
        LIST_FILES,
        total as f64 / 1e6,
        total / LIST_FILES as u64 / 1024
    );
    println!("cat *.jsonl | wc -l (baseline)  {:>9.2} ms", ms(cat_wc));
    println!(
        "list_sessions                   {:>9.2} ms  ratio {:>6.2}x",
        ms(list),
        ratio(list, cat_wc)
    );
}

/// Child mode: do one operation, print "<nanos> <vmhwm_kb> <rss_anon_kb>".
fn child(op: &str) {
    let path = PathBuf::from(std::env::var_os("FEN_JSONL_BENCH_PATH").expect("path env"));
    // Results are kept alive past the clock: freeing 100k Values is the caller's cost later.
    let t = Instant::now();
    let kept: Box<dyn std::any::Any> = match op {
        "read_all" => Box::new(read_all(&path).expect("read_all")),
        "read_all_values" => {
            let r = read_all(&path).expect("read_all");
            let values = r.values().expect("values");
            Box::new((r, values))
        }
        "resume" => Box::new(read_from_latest_compaction(&path).expect("resume")),
        "list" => Box::new(list_sessions(&path).expect("list")),
        _ => Box::new(()),
    };
    let el = t.elapsed();
    std::hint::black_box(&kept);
    println!(
        "{} {} {}",
        el.as_nanos(),
        status_kb("VmHWM:"),
        status_kb("RssAnon:")
    );
}

/// Best time and largest memory figures of a child operation.
struct Measured {
    time: Duration,
    hwm_kb: u64,
    anon_kb: u64,
}

fn best_child(op: &str, path: &Path) -> Measured {
    let exe = std::env::current_exe().expect("current exe");
    let mut m = Measured {
        time: Duration::MAX,
        hwm_kb: 0,
        anon_kb: 0,
    };
    for _ in 0..RUNS {
        let out = Command::new(&exe)
            .env(CHILD_ENV, op)
            .env("FEN_JSONL_BENCH_PATH", path)
            .output()
            .expect("spawn child");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut it = text.split_whitespace();
        let nanos: u64 = it.next().and_then(|s| s.parse().ok()).expect("child time");
        let mut kb = || it.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let (hwm, anon) = (kb(), kb());
        m.time = m.time.min(Duration::from_nanos(nanos));
        m.hwm_kb = m.hwm_kb.max(hwm);
        m.anon_kb = m.anon_kb.max(anon);
    }
    m
}

/// A figure of /proc/self/status in KB (0 if missing).
fn status_kb(key: &str) -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

fn run_timed(cmd: &mut Command) -> Duration {
    let t = Instant::now();
    let out = cmd.output().expect("baseline command");
    assert!(out.status.success(), "baseline failed");
    t.elapsed()
}

fn best(mut f: impl FnMut() -> Duration) -> Duration {
    (0..RUNS).map(|_| f()).min().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "MISSED"
    }
}

/// Write a session of `n` realistic ~2 KB messages (user / assistant+tool call / tool
/// result, chained by parent_id), optionally with a compaction before message `compact_at`
/// that keeps the previous KEPT_BEFORE messages. Returns the file size.
fn generate_session(path: &Path, n: usize, compact_at: Option<usize>) -> u64 {
    let mut out = std::io::BufWriter::new(fs::File::create(path).expect("create"));
    let header = json!({"type":"session","version":2,"id":"bench","cwd":"/work/proj",
                        "created":"2026-11-21T22:44:58.000Z","fen_version":"0.1.0"});
    writeln!(out, "{header}").expect("write");
    let body = "The quick brown fox jumps over the lazy dog; fn main() { println!(\"hi\"); }\n";
    let mut ids: Vec<String> = Vec::with_capacity(n);
    let mut parent = serde_json::Value::Null;
    for i in 0..n {
        if Some(i) == compact_at {
            let kept = &ids[i.saturating_sub(KEPT_BEFORE)];
            let c = json!({"type":"compaction","id":"compaction-1","parent_id":parent,
                           "summary":"Earlier: refactored the parser, fixed tests.",
                           "first_kept_entry_id":kept,"tokens_before":500_000,"tokens_after":20_000});
            writeln!(out, "{c}").expect("write");
        }
        let id = format!("019a{i:08x}-0000-7000-8000-000000000000");
        let text = body.repeat(20 + i % 12);
        let message = match i % 3 {
            0 => {
                json!({"role":"user","content":[{"type":"text","text":format!("Please look at item {i}. {text}")}]})
            }
            1 => json!({"role":"assistant","content":[
                    {"type":"thinking","thinking":&text[..text.len() / 4]},
                    {"type":"text","text":&text[..text.len() / 2]},
                    {"type":"tool-call","id":format!("call-{i}"),"name":"read",
                     "arguments":{"path":format!("src/f{i}.rs"),"offset":1,"limit":200}}],
                    "stop_reason":"tool-use","usage":{"input":12000,"output":300}}),
            _ => {
                json!({"role":"tool-result","tool_call_id":format!("call-{}", i - 1),"tool_name":"read",
                    "content":[{"type":"text","text":text}],"is_error":false})
            }
        };
        let rec = json!({"type":"message","id":id,"parent_id":parent,
                         "timestamp":"2026-11-21T22:44:58.000Z","message":message});
        writeln!(out, "{rec}").expect("write");
        parent = json!(id);
        ids.push(id);
    }
    out.flush().expect("flush");
    drop(out);
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}
