//! The input's `@` file menu in a 20,000-file repository (own harness; `fen` in a real pty with
//! the mock provider):
//! - `@` typed to the menu's first paths on screen, p95 over repeated `@` / Backspace, against a
//!   plain keystroke's paint in the same run (target: ≤ 20 ms, and a small ratio);
//! - `@gamma` (a narrowing query typed at once) the same way;
//! - typing `gamma` a letter at a time after `@`: each keystroke to its frame (the echoed
//!   input and the re-ranked menu are painted together), p95;
//! - start to the first `@` results when `@` is typed at the first paint (the walk is still
//!   running: the list arrives from the blocking pool and the open menu repaints);
//! - the native ranking alone: 20,000 paths ranked for a query against one pass that
//!   lowercases each path (the least any matcher does), and the five rankings of typing
//!   `gamma` with the previous keystroke's matches reused.
//!
//! Run: `cargo bench --bench menu`

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "support/pty.rs"]
mod pty;
use pty::{ms, p95, Pty};

const FILES: usize = 20_000;

/// 200 directories of 100 files under work/, a .git marker and an ignored directory.
fn repo(home: &Path) -> Vec<String> {
    let work = home.join("work");
    std::fs::create_dir_all(work.join(".git")).unwrap();
    std::fs::write(work.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(work.join("target")).unwrap();
    std::fs::write(work.join("target/ignored.rs"), "").unwrap();
    let mut paths = Vec::with_capacity(FILES);
    for d in 0..FILES / 100 {
        let dir = format!("pkg{d:03}/src/module_{d}");
        std::fs::create_dir_all(work.join(&dir)).unwrap();
        for f in 0..100 {
            let p = format!(
                "{dir}/file_{f:03}_{}.rs",
                ["alpha", "beta", "gamma", "delta"][f % 4]
            );
            std::fs::write(work.join(&p), "").unwrap();
            paths.push(p);
        }
    }
    paths
}

fn screen_has(p: &Pty, needle: &str) -> bool {
    p.screen
        .lock()
        .unwrap()
        .screen()
        .contents()
        .contains(needle)
}

/// Time from sending `keys` until `pred` holds on the screen.
fn until(p: &mut Pty, keys: &[u8], pred: impl Fn(&Pty) -> bool) -> Duration {
    let t0 = Instant::now();
    p.send(keys);
    let deadline = t0 + Duration::from_secs(10);
    while !pred(p) {
        assert!(Instant::now() < deadline, "the screen never changed");
        std::thread::sleep(Duration::from_micros(200));
    }
    t0.elapsed()
}

fn main() {
    let fen = env!("CARGO_BIN_EXE_fen");
    let h = pty::home();
    std::fs::write(h.path().join("script.json"), r#"[{"text":"ok"}]"#).unwrap();
    let paths = repo(h.path());
    let script = h.path().join("script.json");
    let script = script.to_str().unwrap();

    // Cold: `@` at the first paint, while the walk runs.
    let mut p = Pty::spawn(fen, &["--mock-script", script, "--no-session"], h.path());
    p.wait_text("/ for commands");
    let cold = until(&mut p, b"@", |p| screen_has(p, "@pkg"));
    let since_start = p.started.elapsed();
    drop(p);

    let mut p = Pty::spawn(fen, &["--mock-script", script, "--no-session"], h.path());
    p.wait_text("/ for commands");
    // Let the start-up walk finish (the warm case: the list is in).
    std::thread::sleep(Duration::from_millis(1500));
    let n = 40;
    let gap = Duration::from_millis(40);
    let mut plain = Vec::new();
    let mut at = Vec::new();
    let mut query = Vec::new();
    let mut typing = Vec::new();
    for _ in 0..n {
        // A plain keystroke: "x" appears, then goes.
        plain.push(until(&mut p, b"x", |p| screen_has(p, "› x")));
        until(&mut p, b"\x7f", |p| !screen_has(p, "› x"));
        std::thread::sleep(gap);
        // `@`: the menu's first paths.
        at.push(until(&mut p, b"@", |p| screen_has(p, "@pkg")));
        std::thread::sleep(gap);
        // A narrowing query, typed at once.
        query.push(until(&mut p, b"gamma", |p| {
            screen_has(p, "› @gamma") && screen_has(p, "_gamma.rs")
        }));
        until(&mut p, b"\x7f\x7f\x7f\x7f\x7f\x7f", |p| {
            !screen_has(p, "@pkg")
        });
        std::thread::sleep(gap);
        // The same query a letter at a time.
        until(&mut p, b"@", |p| screen_has(p, "@pkg"));
        for k in 1..=5 {
            std::thread::sleep(gap);
            let typed = format!("› @{}", &"gamma"[..k]);
            typing.push(until(&mut p, &b"gamma"[k - 1..k], |p| {
                screen_has(p, &typed)
            }));
        }
        until(&mut p, b"\x7f\x7f\x7f\x7f\x7f\x7f", |p| {
            !screen_has(p, "@pkg")
        });
        std::thread::sleep(gap);
    }
    let (plain, at, query, typing) = (p95(plain), p95(at), p95(query), p95(typing));
    println!("menu: {FILES} files");
    println!(
        "  cold: `@` at first paint to results {:.1} ms ({:.0} ms after start)",
        ms(cold),
        ms(since_start)
    );
    println!("  plain keystroke p95       {:.2} ms", ms(plain));
    println!(
        "  `@` to first results p95  {:.2} ms  ratio {:.2} (target ≤ 20 ms)",
        ms(at),
        ms(at) / ms(plain).max(0.001)
    );
    println!(
        "  `@`+query narrowing p95   {:.2} ms  ratio {:.2}",
        ms(query),
        ms(query) / ms(plain).max(0.001)
    );
    println!(
        "  typing `gamma` after `@`, per keystroke p95 {:.2} ms  ratio {:.2} (target ≤ 20 ms)",
        ms(typing),
        ms(typing) / ms(plain).max(0.001)
    );
    drop(p);

    // The native ranking alone.
    let reps = 20;
    let t0 = Instant::now();
    let mut sink = 0usize;
    for _ in 0..reps {
        sink += paths.iter().map(|p| p.to_lowercase().len()).sum::<usize>();
    }
    let base = t0.elapsed() / reps;
    let t0 = Instant::now();
    for _ in 0..reps {
        sink += fen::native::fuzzy::rank("gam", paths.iter().map(String::as_str), 50).len();
    }
    let rank = t0.elapsed() / reps;
    let t0 = Instant::now();
    for _ in 0..reps {
        let mut n = fen::native::fuzzy::Narrowing::default();
        for k in 1..=5 {
            sink += n.rank(&paths, &"gamma"[..k], 50).len();
        }
    }
    let typing = t0.elapsed() / reps;
    println!(
        "  rank 20,000 paths         {:.2} ms  (lowercasing them: {:.2} ms, ratio {:.2})",
        ms(rank),
        ms(base),
        ms(rank) / ms(base).max(0.001),
    );
    println!(
        "  typing g,a,m,m,a (5 rankings, narrowing) {:.2} ms in all, ratio {:.2} to one lowercasing pass [{}]",
        ms(typing),
        ms(typing) / ms(base).max(0.001),
        sink % 2
    );
}
