//! Streaming overhead of the whole pipeline: a local server streams 100,000 OpenAI chat text
//! deltas; `fen -p` (provider, SSE parser, Lua stream assembly, event bus, print presenter)
//! consumes them, against `curl -sN` reading the same stream to /dev/null in the same run.
//! Target: at most 3x curl, peak RSS of fen under 30 MB.
//!
//! Run: `cargo bench --bench stream` (FEN_BENCH_DELTAS to change the count).

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use fake_llm::{Api, FakeLlm, Reply, Scenario};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn max_rss_of_children_kb() -> i64 {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    usage.ru_maxrss
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
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
    let fen_run = || {
        let t = Instant::now();
        let out = Command::new(fen)
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
            .env("OPENAI_API_KEY", "bench")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("XDG_STATE_HOME", home.path().join("state"))
            .current_dir(home.path())
            .stderr(Stdio::null())
            .output()
            .expect("run fen");
        assert!(out.status.success(), "fen failed");
        assert_eq!(
            out.stdout.len(),
            count + 1,
            "fen printed {} bytes",
            out.stdout.len()
        );
        t.elapsed()
    };

    if curl().is_none() {
        println!("stream: curl is not installed; run `apt-get install curl` for the baseline");
        return;
    }
    let mut curl_times = Vec::new();
    let mut fen_times = Vec::new();
    for _ in 0..runs {
        curl_times.push(curl().expect("curl"));
        fen_times.push(fen_run());
    }
    let (c, f) = (median(curl_times), median(fen_times));
    println!(
        "stream: {count} deltas: fen -p median {:.1} ms, curl -sN {:.1} ms, ratio {:.2}x (target <= 3x); peak RSS of children {:.1} MB (target < 30 MB)",
        f.as_secs_f64() * 1000.0,
        c.as_secs_f64() * 1000.0,
        f.as_secs_f64() / c.as_secs_f64(),
        max_rss_of_children_kb() as f64 / 1024.0
    );
}
