//! Checkpoint benchmark, as a ratio against `git status` on the same tree in the same run.
//!
//! A git repository of 20,000 files (committed), one warm-up snapshot (the shadow index is
//! then git's stat cache), then per round: 10 files changed, one snapshot taken, compared
//! with one `git status` of the user's repository. Targets: a snapshot ≤ 50 ms and ≤ 3x
//! `git status` (median of the rounds).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use fen::native::checkpoint::{Options, Shadow};

const FILES: usize = 20_000;
const CHANGED: usize = 10;
const ROUNDS: usize = 9;

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(ok, "git {args:?} failed");
}

/// CPU time (user + system) of every child waited for so far: on a loaded machine wall time
/// mostly measures the wait for a core, this what the git children themselves cost.
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given; RUSAGE_CHILDREN is always valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    if Command::new("git").arg("--version").output().is_err() {
        eprintln!("skipped: git is not installed");
        return;
    }
    let tmp = tempfile::tempdir().expect("temp dir");
    let ws = tmp.path().join("repo");
    let state = tmp.path().join("state");
    for i in 0..FILES {
        let dir = ws.join(format!("d{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).expect("mkdir");
        }
        std::fs::write(
            dir.join(format!("f{i}.txt")),
            format!("file {i}\n").repeat(8),
        )
        .expect("write");
    }
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "init"]);
    let shadow = Shadow::open(&state, &ws, "bench", None).expect("shadow");
    let opts = Options::default();
    let t = Instant::now();
    shadow.snapshot(&opts, "warm").expect("first snapshot");
    println!("first snapshot (hashes every file): {:?}", t.elapsed());
    // git status once to warm its own index stat cache.
    git(&ws, &["status", "--porcelain"]);

    let mut snaps = Vec::new();
    let mut statuses = Vec::new();
    let (mut snap_cpu, mut status_cpu) = (Duration::ZERO, Duration::ZERO);
    for round in 0..ROUNDS {
        for k in 0..CHANGED {
            let i = (round * 997 + k * 1931) % FILES;
            let p = ws.join(format!("d{:03}/f{i}.txt", i / 100));
            std::fs::write(&p, format!("changed in round {round}\n")).expect("change");
        }
        let c = children_cpu();
        let t = Instant::now();
        let out = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(&ws)
            .output()
            .expect("git status");
        assert!(out.status.success());
        statuses.push(t.elapsed());
        status_cpu += children_cpu() - c;
        let c = children_cpu();
        let t = Instant::now();
        let snap = shadow
            .snapshot(&opts, &format!("r{round}"))
            .expect("snapshot");
        snaps.push(t.elapsed());
        snap_cpu += children_cpu() - c;
        assert_eq!(snap.commit.len(), 40);
    }
    let (snap, status) = (median(snaps), median(statuses));
    let ratio = snap.as_secs_f64() / status.as_secs_f64();
    println!(
        "checkpoint of {FILES} files with {CHANGED} changed: {:.1} ms (median of {ROUNDS}); git status: {:.1} ms; ratio {ratio:.2}x (target <= 3x, <= 50 ms)",
        snap.as_secs_f64() * 1000.0,
        status.as_secs_f64() * 1000.0
    );
    println!(
        "cpu time of the git children per round: checkpoint {:.1} ms, git status {:.1} ms (ratio {:.2}x)",
        snap_cpu.as_secs_f64() * 1000.0 / ROUNDS as f64,
        status_cpu.as_secs_f64() * 1000.0 / ROUNDS as f64,
        snap_cpu.as_secs_f64() / status_cpu.as_secs_f64()
    );
    if ratio > 3.0 || snap > Duration::from_millis(50) {
        println!("checkpoint: OVER TARGET");
        std::process::exit(1);
    }
}
