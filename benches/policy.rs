//! Permission analysis latency: the full `decide` of a bash call (tree-sitter parse, segments,
//! path resolution and classification against a real temporary workspace, floors, rules) for
//! commands of 64 B to 4 KB built from the test corpora, against a same-run baseline: splitting
//! the same command into words with the `shell-words` crate.
//!
//! Target: p99 <= 2 ms for commands up to 4 KB on the 2-core machine.
//!
//! Columns: `decide` p50/p99/max, `analyze` alone (parse and walk, no file system) p99, the
//! baseline's p99 and the ratio of the two p99s.
//!
//! Run: `cargo bench --bench policy` (`FEN_BENCH_SLOWEST=1` names the slowest commands of each
//! size; `FEN_BENCH_DUMP=FILE` appends each command's CPU time to FILE, to compare two builds
//! command by command).

#[path = "support/cpu.rs"]
mod cpu;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use fen::native::policy::{
    analyze, decide, Mode, Request, Risk, RuleInput, RuleKind, RuleSet, ShellContext, Workspace,
};
use serde_json::json;

const PER_SIZE: usize = 300;
const SIZES: &[usize] = &[64, 256, 1024, 2048, 4096];

fn corpus() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/policy");
    let mut out = Vec::new();
    for name in ["safe_readonly.txt", "safe_other.txt", "dangerous.txt"] {
        let text = std::fs::read_to_string(dir.join(name)).expect("corpus file");
        out.extend(
            text.lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .map(|l| l.replace("<NL>", "\n")),
        );
    }
    out
}

/// Deterministic commands of about `size` bytes: corpus lines joined with `&&`, `;`, `|`.
fn commands(lines: &[String], size: usize, n: usize) -> Vec<String> {
    let seps = [" && ", "; ", " | ", "\n"];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15 ^ size as u64;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    (0..n)
        .map(|_| {
            let mut cmd = String::new();
            loop {
                let line = &lines[next() % lines.len()];
                if line.contains('\n') {
                    continue; // heredocs only whole
                }
                if !cmd.is_empty() && cmd.len() + line.len() + 4 > size {
                    break;
                }
                if !cmd.is_empty() {
                    cmd.push_str(seps[next() % seps.len()]);
                }
                cmd.push_str(line);
                if cmd.len() >= size {
                    break;
                }
            }
            cmd
        })
        .collect()
}

/// CPU time of this thread (see support/cpu.rs).
fn thread_cpu() -> Duration {
    cpu::cpu_time(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home/u");
    let proj = home.join("proj");
    for d in [
        ".git/hooks",
        "src",
        "docs",
        "crates/foo/src",
        "nested/.git/hooks",
        "build",
        "target/debug",
        "scripts",
    ] {
        std::fs::create_dir_all(proj.join(d)).expect("mkdir");
    }
    std::fs::create_dir_all(home.join(".ssh")).expect("mkdir");
    let ws = Workspace::new(&proj, &[], &home, &home.join(".config"));
    let inputs: Vec<RuleInput> = [
        "Bash(git *)",
        "Bash(ls *)",
        "Bash(cat *)",
        "Bash(npm test)",
        "Bash(cargo test *)",
        "Read(./.env*)",
    ]
    .iter()
    .map(|t| RuleInput {
        text: (*t).into(),
        kind: if t.starts_with("Read") {
            RuleKind::Deny
        } else {
            RuleKind::Allow
        },
        source: None,
    })
    .collect();
    let rules = RuleSet::parse(&inputs, None, &ws).expect("rules");
    let lines = corpus();

    println!("policy analysis (decide on a bash call), {PER_SIZE} commands per size, baseline = shell_words::split");
    let ctx = ShellContext {
        cwd: proj.clone(),
        home: home.clone(),
    };
    println!(
        "{:>6} {:>10} {:>10} {:>10} {:>12} {:>14} {:>12} {:>8}",
        "size", "p50 µs", "p99 µs", "max µs", "cpu p99 µs", "parse p99 µs", "split p99 µs", "ratio"
    );
    let mut worst_p99 = Duration::ZERO;
    let mut worst_cpu = Duration::ZERO;
    for &size in SIZES {
        let cmds = commands(&lines, size, PER_SIZE);
        let args: Vec<serde_json::Value> = cmds.iter().map(|c| json!({ "command": c })).collect();
        // Warm up (parser creation, page cache).
        for a in args.iter().take(20) {
            black_box(decide(&Request {
                tool: "bash",
                risk: Risk::Shell,
                args: a,
                mode: Mode::Default,
                rules: &rules,
                workspace: &ws,
                sandbox_available: true,
            }));
        }
        let mut t = Vec::with_capacity(cmds.len());
        let mut b = Vec::with_capacity(cmds.len());
        let mut a_t = Vec::with_capacity(cmds.len());
        let mut cpu = Vec::with_capacity(cmds.len());
        for (c, a) in cmds.iter().zip(&args) {
            let start = Instant::now();
            black_box(shell_words::split(black_box(c)).ok());
            b.push(start.elapsed());
            let start = Instant::now();
            black_box(analyze(black_box(c), &ctx));
            a_t.push(start.elapsed());
            let start = Instant::now();
            let c0 = thread_cpu();
            black_box(decide(&Request {
                tool: "bash",
                risk: Risk::Shell,
                args: black_box(a),
                mode: Mode::Default,
                rules: &rules,
                workspace: &ws,
                sandbox_available: true,
            }));
            t.push(start.elapsed());
            cpu.push(thread_cpu().saturating_sub(c0));
            if let Some(f) = std::env::var_os("FEN_BENCH_DUMP") {
                use std::io::Write;
                let mut out = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(f)
                    .expect("dump file");
                writeln!(
                    out,
                    "{size}\t{:.1}\t{:?}",
                    us(*cpu.last().expect("sample")),
                    c
                )
                .expect("dump");
            }
        }
        if std::env::var_os("FEN_BENCH_SLOWEST").is_some() {
            // Which commands make the tail: the three slowest of this size.
            let mut by: Vec<(Duration, &String)> = t.iter().copied().zip(&cmds).collect();
            by.sort_by_key(|b| std::cmp::Reverse(b.0));
            for (d, c) in by.iter().take(3) {
                let head: String = c.chars().take(400).collect();
                eprintln!("slow {size}: {:.0} µs: {head:?}", us(*d));
            }
        }
        t.sort();
        b.sort();
        a_t.sort();
        cpu.sort();
        let cpu99 = pct(&cpu, 0.99);
        worst_cpu = worst_cpu.max(cpu99);
        let p99 = pct(&t, 0.99);
        worst_p99 = worst_p99.max(p99);
        let bp99 = pct(&b, 0.99);
        println!(
            "{:>6} {:>10.1} {:>10.1} {:>10.1} {:>12.1} {:>14.1} {:>12.2} {:>7.0}x",
            size,
            us(pct(&t, 0.5)),
            us(p99),
            us(*t.last().expect("samples")),
            us(cpu99),
            us(pct(&a_t, 0.99)),
            us(bp99),
            us(p99) / us(bp99).max(0.001)
        );
    }
    let verdict = |d: Duration| {
        if d <= Duration::from_millis(2) {
            "met"
        } else {
            "MISSED"
        }
    };
    println!(
        "worst wall p99 {:.0} µs (target <= 2000 µs): {}",
        us(worst_p99),
        verdict(worst_p99)
    );
    println!(
        "worst cpu  p99 {:.0} µs (target <= 2000 µs): {}",
        us(worst_cpu),
        verdict(worst_cpu)
    );
}
