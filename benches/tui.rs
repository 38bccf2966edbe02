//! TUI benchmarks (own harness), `fen` in a real pty with the mock provider:
//! - idle: bytes written and CPU over 10 s with nothing happening (target: 0 bytes, < 0.1 % of
//!   a core), against `cat` idling in a pty in the same run;
//! - keystroke to the last byte painted (the end of the synchronized-output frame), p95 with a
//!   resumed 10,000-message transcript against a 10-message one (target ≤ 8 ms, ratio ≤ 1.2);
//! - RSS with the 10,000-message transcript against its text size (target ≤ 3x + 40 MB);
//! - start to first paint against `fen --version` (target ≤ 15 ms);
//! - streaming a 50 KB markdown answer through the native core: time per delta in the last
//!   tenth against the first tenth (target ≤ 1.5);
//! - inline mode (`--inline`) next to the full screen: idle bytes and CPU, keystroke p95 with
//!   10 and 10,000 resumed messages, each as a ratio inline / full screen (target: the same
//!   figures, ratio ≈ 1).
//!
//! Run: `cargo bench --bench tui`

use fen::native::term::layout::Layout;
use fen::native::term::screen::Screen;
use fen::native::term::transcript::BlockSpec;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/pty.rs"]
mod pty;
use pty::{ms, Pty};

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = after.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    // Fields after the command name: state is 0, utime 11, stime 12.
    n(11) + n(12)
}

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn ticks_per_sec() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn home() -> tempfile::TempDir {
    let d = pty::home();
    std::fs::write(d.path().join("script.json"), r#"[{"text":"ok"}]"#).unwrap();
    d
}

/// A session file of `n` messages (alternating user / assistant, ~100 bytes of text each).
/// Returns its path and the bytes of message text in it.
fn session(home: &Path, n: usize) -> (String, usize) {
    let path = home.join(format!("session-{n}.jsonl"));
    let mut out = String::new();
    out.push_str(&format!(
        r#"{{"created":"2026-11-24T00:00:00.000Z","cwd":"{}","fen_version":"0.1.0","id":"00000000-0000-7000-8000-{n:012}","type":"session","version":2}}"#,
        home.join("work").display()
    ));
    out.push('\n');
    let mut text_bytes = 0;
    let mut parent: Option<String> = None;
    for i in 0..n {
        let id = format!("00000000-0000-7000-9000-{i:012}");
        let text = format!("message {i}: the quick brown fox jumps over the lazy dog, **again** and `again` — line {i}");
        text_bytes += text.len();
        let message = if i % 2 == 0 {
            serde_json::json!({"content": text, "role": "user", "timestamp": 1795485446137u64 + i as u64})
        } else {
            serde_json::json!({"content": [{"type": "text", "text": text}], "role": "assistant", "model": "mock", "provider": "mock", "stop_reason": "stop", "timestamp": 1795485446137u64 + i as u64, "usage": {"input": 0, "output": 0}})
        };
        let mut rec = serde_json::json!({"id": id, "message": message, "timestamp": 1795485446137u64 + i as u64, "type": "message"});
        if let Some(p) = &parent {
            rec["parent_id"] = p.clone().into();
        }
        out.push_str(&rec.to_string());
        out.push('\n');
        parent = Some(id);
    }
    std::fs::write(&path, out).unwrap();
    (path.to_string_lossy().into_owned(), text_bytes)
}

/// Bytes written and CPU (% of a core) of `fen ARGS` over 10 idle seconds, and of `cat` in
/// a pty over the same time.
fn idle(fen: &str, args: &[&str], home: &Path) -> (usize, f64, f64) {
    let p = Pty::spawn(fen, args, home);
    p.wait_text("Ask anything");
    std::thread::sleep(Duration::from_millis(300));
    let (b0, c0) = (p.bytes(), cpu_ticks(p.pid()));
    let cat = Pty::spawn("cat", &[], home);
    std::thread::sleep(Duration::from_millis(100));
    let cat0 = cpu_ticks(cat.pid());
    std::thread::sleep(Duration::from_secs(10));
    let (b1, c1) = (p.bytes(), cpu_ticks(p.pid()));
    let cat1 = cpu_ticks(cat.pid());
    let tps = ticks_per_sec();
    (
        b1 - b0,
        (c1 - c0) as f64 / tps / 10.0 * 100.0,
        (cat1 - cat0) as f64 / tps / 10.0 * 100.0,
    )
}

fn main() {
    let fen = env!("CARGO_BIN_EXE_fen");

    // Start to first paint, against `fen --version` (process start-up).
    let h = home();
    let script = h.path().join("script.json");
    let script = script.to_str().unwrap();
    let mut firsts = Vec::new();
    let mut versions = Vec::new();
    for _ in 0..15 {
        let p = Pty::spawn(fen, &["--mock-script", script, "--no-session"], h.path());
        let t = p
            .frame_end_after(p.started, Duration::from_secs(10))
            .expect("first paint");
        firsts.push(t - p.started);
        drop(p);
        let t0 = Instant::now();
        let st = std::process::Command::new(fen)
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .status()
            .expect("fen --version");
        assert!(st.success());
        versions.push(t0.elapsed());
    }
    firsts.sort();
    versions.sort();
    let (first, version) = (firsts[firsts.len() / 2], versions[versions.len() / 2]);
    println!(
        "first paint: median {:.2} ms; fen --version {:.2} ms; ratio {:.2}x (target ≤ 15 ms)",
        ms(first),
        ms(version),
        first.as_secs_f64() / version.as_secs_f64()
    );

    // Idle: 10 s with nothing happening, full screen and inline.
    let mut idles = Vec::new();
    for (label, inline) in [("full screen", false), ("inline", true)] {
        let mut args = vec!["--mock-script", script, "--no-session"];
        if inline {
            args.push("--inline");
        }
        let (bytes, cpu, cat) = idle(fen, &args, h.path());
        println!(
            "idle 10 s, {label}: {bytes} bytes written; CPU {cpu:.3}% of a core (cat in a pty: {cat:.3}%) (target 0 bytes, < 0.1%)"
        );
        idles.push((bytes, cpu));
    }
    println!(
        "idle, inline vs full screen: {} vs {} bytes; CPU ratio {:.2}",
        idles[1].0,
        idles[0].0,
        if idles[0].1 > 0.0 {
            idles[1].1 / idles[0].1
        } else {
            1.0
        }
    );

    // Keystroke to paint: 10 vs 10,000 resumed messages.
    let (small, _) = session(h.path(), 10);
    let (large, large_text) = session(h.path(), 10_000);
    let mut results = Vec::new();
    let mut inline_results = Vec::new();
    for inline in [false, true] {
        for (label, path) in [("10 messages", &small), ("10,000 messages", &large)] {
            let mut args = vec!["--mock-script", script, "--resume", path];
            if inline {
                args.push("--inline");
            }
            let t0 = Instant::now();
            let mut p = Pty::spawn(fen, &args, h.path());
            p.wait_text("Ask anything");
            let open = t0.elapsed();
            std::thread::sleep(Duration::from_millis(300));
            p.keystroke_p95(20, Duration::from_millis(30));
            let k = p.keystroke_p95(200, Duration::from_millis(30));
            let rss = rss_kb(p.pid());
            let mode = if inline { "inline" } else { "full screen" };
            println!(
                "keystroke to paint, {mode}, {label}: p95 {:.2} ms; open {:.0} ms; RSS {:.1} MB",
                ms(k),
                ms(open),
                rss as f64 / 1024.0
            );
            if inline {
                inline_results.push((k, rss));
            } else {
                results.push((k, rss));
            }
        }
    }
    println!(
        "keystroke p95 ratio 10,000 / 10 messages: {:.2} full screen, {:.2} inline (target ≤ 1.2, p95 ≤ 8 ms)",
        results[1].0.as_secs_f64() / results[0].0.as_secs_f64(),
        inline_results[1].0.as_secs_f64() / inline_results[0].0.as_secs_f64()
    );
    println!(
        "keystroke p95 ratio inline / full screen: {:.2} (10 messages), {:.2} (10,000 messages)",
        inline_results[0].0.as_secs_f64() / results[0].0.as_secs_f64(),
        inline_results[1].0.as_secs_f64() / results[1].0.as_secs_f64()
    );
    let budget_kb = (3 * large_text / 1024 + 40 * 1024) as u64;
    println!(
        "RSS with 10,000 messages: {:.1} MB for {:.1} MB of text; budget (3x text + 40 MB) {:.1} MB; ratio {:.2}",
        results[1].1 as f64 / 1024.0,
        large_text as f64 / 1024.0 / 1024.0,
        budget_kb as f64 / 1024.0,
        results[1].1 as f64 / budget_kb as f64
    );

    // Streaming a 50 KB answer through the core: per-delta cost, last tenth vs first tenth.
    let mut answer = String::new();
    let mut i = 0;
    while answer.len() < 50_000 {
        answer.push_str(&format!(
            "Paragraph {i} has **bold**, `code` and a [link](http://x.y/{i}).\n\n- item {i}\n- item {i}b\n\n"
        ));
        if i % 10 == 0 {
            answer.push_str("```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\n");
        }
        i += 1;
    }
    let deltas: Vec<&str> = {
        let mut v = Vec::new();
        let mut rest = answer.as_str();
        while !rest.is_empty() {
            let mut cut = rest.len().min(16);
            while !rest.is_char_boundary(cut) {
                cut += 1;
            }
            v.push(&rest[..cut]);
            rest = &rest[cut..];
        }
        v
    };
    let mut screen = Screen::new(100, 30, true);
    screen.set_layout(Layout::default(), Instant::now());
    let id = screen.transcript.push(BlockSpec {
        markdown: Some(true),
        ..Default::default()
    });
    let mut times = Vec::with_capacity(deltas.len());
    let mut out = Vec::new();
    for d in &deltas {
        let t0 = Instant::now();
        screen.transcript.append(id, d).expect("append");
        screen.changed();
        out.clear();
        screen.paint(Instant::now(), &mut out);
        times.push(t0.elapsed());
    }
    let tenth = times.len() / 10;
    let first: Duration = times[..tenth].iter().sum();
    let last: Duration = times[times.len() - tenth..].iter().sum();
    println!(
        "streaming 50 KB ({} deltas): first tenth {:.1} µs/delta, last tenth {:.1} µs/delta; ratio {:.2} (target ≤ 1.5)",
        deltas.len(),
        first.as_secs_f64() * 1e6 / tenth as f64,
        last.as_secs_f64() * 1e6 / tenth as f64,
        last.as_secs_f64() / first.as_secs_f64()
    );
}
