//! Streaming overhead of the whole pipeline: a local server streams 100,000 OpenAI chat text
//! deltas; `fen -p` (provider, SSE parser, Lua stream assembly, event bus, print presenter)
//! consumes them, against `curl -sN` reading the same stream to /dev/null in the same run.
//! Target: at most 3x curl, peak RSS of fen under 30 MB. fen runs under a small relay process
//! (this binary re-executed) so that its peak RSS is its own; the relay's start-up is in fen's
//! time (about a millisecond), which only makes the ratio stricter.
//!
//! Run: `cargo bench --bench stream` (FEN_BENCH_DELTAS to change the count).

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use fake_llm::{Api, FakeLlm, Reply, Scenario};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Waits for `pid` and returns its wait status and its own peak RSS in KB.
fn wait_with_rusage(pid: libc::pid_t) -> (i32, i64) {
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4 failed");
    (status, usage.ru_maxrss)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Set in the environment of the small relay process that starts fen (see `relay_main`).
const RELAY_ENV: &str = "FEN_STREAM_BENCH_RSS_FILE";

/// The relay: runs the command in its arguments and writes that child's peak RSS (KB) to the
/// file named by `RELAY_ENV`. Linux counts the RSS a child had before `exec` (a copy of its
/// parent) in its peak, so fen must be started from a fresh small process, not from this
/// benchmark, whose fake server holds the whole stream in memory.
fn relay_main(rss_file: &str) {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let child = Command::new(&args[0])
        .args(&args[1..])
        .spawn()
        .expect("start fen");
    let (status, rss_kb) = wait_with_rusage(child.id() as libc::pid_t);
    std::fs::write(rss_file, rss_kb.to_string()).expect("write the RSS file");
    std::process::exit(if status == 0 { 0 } else { 1 });
}

fn main() {
    if let Ok(rss_file) = std::env::var(RELAY_ENV) {
        relay_main(&rss_file);
    }
    let count: usize = std::env::var("FEN_BENCH_DELTAS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let runs = 5;
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::Deltas {
                api: Api::OpenAiChat,
                count,
            })
            .repeating(),
    );
    let url = server.base_url();
    let home = tempfile::tempdir().expect("temp dir");
    let fen = env!("CARGO_BIN_EXE_fen");

    let curl = || {
        let t = Instant::now();
        let status = Command::new("curl")
            .args([
                "-sN",
                "-X",
                "POST",
                "-H",
                "content-type: application/json",
                "-d",
                "{\"stream\":true}",
            ])
            .arg(format!("{url}/chat/completions"))
            .stdout(Stdio::null())
            .status();
        status.ok().filter(|s| s.success()).map(|_| t.elapsed())
    };
    // Returns the wall time and fen's own peak RSS (KB), measured by the relay.
    let rss_file = home.path().join("fen-rss");
    let fen_run = || {
        let t = Instant::now();
        let out = Command::new(std::env::current_exe().expect("this benchmark's path"))
            .arg(fen)
            .args([
                "-p",
                "stream please",
                "--provider",
                "openai",
                "--model",
                "m",
                "--base-url",
                &url,
            ])
            .env(RELAY_ENV, &rss_file)
            .env("OPENAI_API_KEY", "bench")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_STATE_HOME", home.path().join("state"))
            .current_dir(home.path())
            .stderr(Stdio::null())
            .output()
            .expect("run fen");
        let elapsed = t.elapsed();
        assert!(out.status.success(), "fen failed");
        assert_eq!(
            out.stdout.len(),
            count + 1,
            "fen printed {} bytes",
            out.stdout.len()
        );
        let rss_kb: i64 = std::fs::read_to_string(&rss_file)
            .expect("the relay's RSS file")
            .parse()
            .expect("an RSS figure");
        (elapsed, rss_kb)
    };

    if curl().is_none() {
        println!("stream: curl is not installed; run `apt-get install curl` for the baseline");
        return;
    }
    let mut curl_times = Vec::new();
    let mut fen_times = Vec::new();
    let mut fen_rss = 0;
    for _ in 0..runs {
        curl_times.push(curl().expect("curl"));
        let (time, rss) = fen_run();
        fen_times.push(time);
        fen_rss = fen_rss.max(rss);
    }
    let (c, f) = (median(curl_times), median(fen_times));
    println!(
        "stream: {count} deltas: fen -p median {:.1} ms, curl -sN {:.1} ms, ratio {:.2}x (target <= 3x); peak RSS of fen {:.1} MB (target < 30 MB)",
        f.as_secs_f64() * 1000.0,
        c.as_secs_f64() * 1000.0,
        f.as_secs_f64() / c.as_secs_f64(),
        fen_rss as f64 / 1024.0
    );
}
