//! Code highlighting benchmarks (own harness), each against a baseline measured in the same run:
//! - highlighting a 5,000-line Rust block (target ≤ 50 ms; the tree-sitter engine), against
//!   parsing the same answer as markdown with highlighting off and against the TextMate engine
//!   (syntect) on the same block; loading each engine's assets once; and a 5,000-line block
//!   growing 50 lines at a time, as while an answer streams (incremental re-parse);
//! - off the input path: keystroke-to-paint p95 in a real pty while a 5,000-line block is being
//!   highlighted, against the same answer with an unhighlighted (no language) block;
//! - start-up unchanged: the TUI's first paint of a resumed session whose transcript holds a
//!   Rust block, against the same block without a language (highlighting must not delay the
//!   first paint), and that building and painting a screen with no code block loads no assets.
//!
//! Run: `cargo bench --bench highlight`

use fen::native::term::highlight;
use fen::native::term::layout::Layout;
use fen::native::term::markdown;
use fen::native::term::screen::Screen;
use fen::native::term::transcript::BlockSpec;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/cpu.rs"]
mod cpu;
#[path = "support/pty.rs"]
mod pty;
use pty::{home, median, ms, Pty};

/// A Rust block of about `n` lines (varied, like real code).
fn rust_code(n: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.lines().count() < n {
        s.push_str(&format!(
            "/// Doc for item {i}.\npub fn item_{i}(x: &str, n: u64) -> Result<Vec<String>, Error> {{\n    let mut out = Vec::with_capacity(n as usize); // {i}\n    for (k, c) in x.chars().enumerate() {{\n        if k % 2 == 0 && c != '\\n' {{ out.push(format!(\"{{k}}:{{c}} {i}\")); }}\n    }}\n    Ok(out)\n}}\n\n"
        ));
        i += 1;
    }
    s.lines().take(n).collect::<Vec<_>>().join("\n")
}

/// CPU time of this process so far (every thread, the highlight worker included).
fn process_cpu() -> Duration {
    cpu::cpu_time(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// A session file with one question and `answer` as the reply.
fn session(home: &Path, name: &str, answer: &str) -> String {
    let path = home.join(format!("{name}.jsonl"));
    let head = serde_json::json!({"created":"2026-11-24T00:00:00.000Z","cwd":home.join("work"),"fen_version":"0.1.0","id":format!("00000000-0000-7000-8000-{:012}", name.len()),"type":"session","version":2});
    let user = serde_json::json!({"id":"00000000-0000-7000-9000-000000000001","message":{"content":"show me","role":"user","timestamp":1795485446137u64},"timestamp":1795485446137u64,"type":"message"});
    let asst = serde_json::json!({"id":"00000000-0000-7000-9000-000000000002","parent_id":"00000000-0000-7000-9000-000000000001","message":{"content":[{"type":"text","text":answer}],"role":"assistant","model":"mock","provider":"mock","stop_reason":"stop","timestamp":1795485446138u64,"usage":{"input":0,"output":0}},"timestamp":1795485446138u64,"type":"message"});
    std::fs::write(&path, format!("{head}\n{user}\n{asst}\n")).unwrap();
    path.to_string_lossy().into_owned()
}

fn main() {
    let fen = env!("CARGO_BIN_EXE_fen");

    // 1. Start-up: painting a screen without code loads nothing.
    let mut screen = Screen::new(100, 30, true);
    screen.set_layout(Layout::default(), Instant::now());
    let id = screen.transcript.push(BlockSpec {
        markdown: Some(true),
        ..Default::default()
    });
    screen
        .transcript
        .append(id, "# Title\n\nno code here, `inline` only\n")
        .unwrap();
    screen.changed();
    let mut out = Vec::new();
    screen.paint(Instant::now(), &mut out);
    println!(
        "assets loaded after painting an answer without a code block: {} (must be false)",
        highlight::loaded()
    );

    // First paint of a resumed transcript with a code block vs. one without.
    let h = home();
    // The baseline holds the same block without a language: never highlighted.
    let plain = session(
        h.path(),
        "plain",
        &format!("An answer with code:\n\n```\n{}\n```\n", rust_code(200)),
    );
    let code = session(
        h.path(),
        "code",
        &format!("An answer with code:\n\n```rust\n{}\n```\n", rust_code(200)),
    );
    let script = h.path().join("script.json");
    std::fs::write(&script, r#"[{"text":"ok"}]"#).unwrap();
    let script = script.to_str().unwrap().to_string();
    let mut firsts = [Vec::new(), Vec::new()];
    for _ in 0..11 {
        for (k, path) in [&plain, &code].into_iter().enumerate() {
            let p = Pty::spawn(fen, &["--mock-script", &script, "--resume", path], h.path());
            let t = p
                .frame_end_after(p.started, Duration::from_secs(20))
                .expect("first paint");
            firsts[k].push(t - p.started);
        }
    }
    let (fp_plain, fp_code) = (median(firsts[0].clone()), median(firsts[1].clone()));
    println!(
        "first paint, resumed: a 200-line Rust block {:.2} ms, the same block without a language (never highlighted) {:.2} ms; ratio {:.2} (target ≈ 1.0)",
        ms(fp_code),
        ms(fp_plain),
        fp_code.as_secs_f64() / fp_plain.as_secs_f64()
    );

    // 2. Loading the assets once, then highlighting 5,000 lines.
    assert_eq!(highlight::engine("rust"), Some("tree-sitter"));
    let t0 = Instant::now();
    highlight::highlight_now("rust", "fn x() {}").expect("rust is known");
    let load = t0.elapsed();
    let t0 = Instant::now();
    highlight::highlight_now_textmate("rust", "fn x() {}").expect("rust is known");
    let load_textmate = t0.elapsed();
    let code5k = rust_code(5000);
    let (mut hl, mut tm) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let t0 = Instant::now();
        let lines = highlight::highlight_now("rust", &code5k).expect("highlighted");
        hl.push(t0.elapsed());
        assert_eq!(lines.len(), 5000);
    }
    for _ in 0..3 {
        let t0 = Instant::now();
        let lines = highlight::highlight_now_textmate("rust", &code5k).expect("highlighted");
        tm.push(t0.elapsed());
        assert_eq!(lines.len(), 5000);
    }
    let answer = format!("Some code:\n\n```rust\n{code5k}\n```\n");
    highlight::set_enabled(false);
    let mut base = Vec::new();
    for _ in 0..5 {
        let t0 = Instant::now();
        let lines = markdown::parse(&answer);
        base.push(t0.elapsed());
        assert!(lines.len() > 5000);
    }
    highlight::set_enabled(true);
    let (hl, tm, base) = (median(hl), median(tm), median(base));
    println!(
        "highlighting 5,000 lines of Rust: {:.1} ms (target ≤ 50 ms); markdown parse of the same answer, plain: {:.1} ms, ratio {:.1}x; the TextMate engine on the same block: {:.1} ms, ratio {:.2}; asset load (once, on the worker): tree-sitter Rust {:.1} ms, TextMate {:.1} ms",
        ms(hl),
        ms(base),
        hl.as_secs_f64() / base.as_secs_f64(),
        ms(tm),
        hl.as_secs_f64() / tm.as_secs_f64(),
        ms(load),
        ms(load_textmate)
    );

    // Other grammars, 5,000 lines each (a TextMate language stays at the syntect figure).
    let samples = [
        ("python", "def item_{i}(x: str, n: int) -> list[str]:\n    \"\"\"Doc {i}.\"\"\"\n    out = []  # {i}\n    for k, c in enumerate(x):\n        if k % 2 == 0 and c != '\\n':\n            out.append(f\"{{k}}:{{c}} {i}\")\n    return out\n\n"),
        ("typescript", "/** Doc {i}. */\nexport function item{i}(x: string, n: number): string[] {{\n  const out: string[] = []; // {i}\n  for (const [k, c] of [...x].entries()) {{\n    if (k % 2 === 0 && c !== '\\n') out.push(`${{k}}:${{c}} {i}`);\n  }}\n  return out;\n}}\n\n"),
    ];
    for (lang, template) in samples {
        let mut code = String::new();
        let mut i = 0;
        while code.lines().count() < 5000 {
            code.push_str(
                &template
                    .replace("{i}", &i.to_string())
                    .replace("{{", "{")
                    .replace("}}", "}"),
            );
            i += 1;
        }
        let code: String = code.lines().take(5000).collect::<Vec<_>>().join("\n");
        highlight::highlight_now(lang, "x").expect("known");
        let runs: Vec<Duration> = (0..5)
            .map(|_| {
                let t0 = Instant::now();
                let lines = highlight::highlight_now(lang, &code).expect("highlighted");
                assert_eq!(lines.len(), 5000);
                t0.elapsed()
            })
            .collect();
        println!(
            "highlighting 5,000 lines of {lang} ({}): {:.1} ms",
            highlight::engine(lang).unwrap_or("?"),
            ms(median(runs))
        );
    }

    // A block streaming in: 5,000 lines arriving 50 at a time, each step highlighted through
    // the worker before the next (an incremental parse; the worker rests as long as a pass
    // took, so wall time is about twice the CPU time).
    let all: Vec<&str> = code5k.lines().collect();
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let mut steps = 0;
    for n in (50..=all.len()).step_by(50) {
        let prefix = format!("// stream\n{}", all[..n].join("\n"));
        let done = highlight::wait_done("rust", &prefix, Duration::from_secs(30));
        assert!(matches!(done, highlight::Lookup::Done(_)));
        steps += 1;
    }
    let stream = t0.elapsed();
    let cpu = process_cpu() - cpu0;
    println!(
        "streaming a 5,000-line block in {steps} steps of 50 lines: {:.0} ms of CPU ({:.2} ms a step), {:.0} ms wall; CPU against highlighting it whole once: ratio {:.1}, against the TextMate engine once: {:.2}",
        ms(cpu),
        ms(cpu) / steps as f64,
        ms(stream),
        cpu.as_secs_f64() / hl.as_secs_f64(),
        cpu.as_secs_f64() / tm.as_secs_f64()
    );
    // The whole path through the worker: lookup → the first highlighted lines → all of them
    // (after the worker's rest following the last streamed pass).
    std::thread::sleep(Duration::from_millis(100));
    let fresh = format!("{code5k}\n// first");
    let t0 = Instant::now();
    while let highlight::Lookup::Pending(_, 0) = highlight::lookup("rust", &fresh) {
        std::thread::sleep(Duration::from_micros(200));
    }
    println!(
        "through the worker, first highlighted lines of a 5,000-line block: {:.1} ms",
        ms(t0.elapsed())
    );
    let t0 = Instant::now();
    let done = highlight::wait_done(
        "rust",
        &format!("{code5k}\n// fresh"),
        Duration::from_secs(30),
    );
    println!(
        "through the worker (queue, highlight, publish): {:.1} ms, complete: {}",
        ms(t0.elapsed()),
        matches!(done, highlight::Lookup::Done(_))
    );

    // 3. Off the input path: keystrokes while the worker highlights 5,000 lines, against the
    //    same answer with a block without a language (never highlighted).
    for (label, lang) in [
        ("no language (baseline)", ""),
        ("rust, highlighting", "rust"),
    ] {
        let h = home();
        let text = format!("Code:\n\n```{lang}\n{code5k}\n```\n\nend of answer");
        let script = h.path().join("script.json");
        std::fs::write(&script, serde_json::json!([{ "text": text }]).to_string()).unwrap();
        let mut p = Pty::spawn(
            fen,
            &["--mock-script", script.to_str().unwrap(), "--no-session"],
            h.path(),
        );
        p.wait_text("Ask anything");
        std::thread::sleep(Duration::from_millis(300));
        p.send(b"go\r");
        p.wait_text("end of answer");
        // Keys right away, 20 ms apart (frames are at least 16.7 ms apart: closer keys would
        // measure the frame pacing, not the work): the first ones land while the worker runs.
        let during = p.keystroke_p95(25, Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(500));
        let after = p.keystroke_p95(25, Duration::from_millis(20));
        println!(
            "keystroke to paint, 5,000-line block, {label}: p95 {:.2} ms in the first 0.5 s after the answer, {:.2} ms later",
            ms(during),
            ms(after)
        );
    }
}
