//! Search benchmark: fen's in-process grep/find against `rg` on the same generated tree, in the
//! same run. Prints medians and ratios (target: fen <= 1.5x rg).
//!
//! Tree size: FEN_BENCH_FILES files of ~10 KB (default 20,000 = ~200 MB; 100,000 = ~1 GB).
//! FEN_BENCH_RUNS sets the number of timed runs per measurement (default 7); fen and rg runs
//! alternate so both see the same load on a shared machine.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use fen::native::search::{find, grep, FindOptions, GrepOptions};

const FILE_BYTES: usize = 10 * 1024;
const LITERAL: &str = "NEEDLE_LITERAL_XYZ";
const REGEX: &str = r"fn [a-z]+_handler\(";

fn main() {
    let files = env_usize("FEN_BENCH_FILES", 20_000);
    let runs = env_usize("FEN_BENCH_RUNS", 7).max(1);
    let dir = match tempfile::tempdir() {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("cannot create a temp dir: {err}");
            return;
        }
    };
    let started = Instant::now();
    if let Err(err) = generate(dir.path(), files) {
        eprintln!("cannot generate the tree: {err}");
        return;
    }
    println!(
        "tree: {files} files, ~{} MB, generated in {:.1}s; {runs} runs per figure (median)",
        files * FILE_BYTES / (1024 * 1024),
        started.elapsed().as_secs_f64()
    );
    let root = dir.path();
    let rg_ok = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !rg_ok {
        println!("rg not found: printing fen figures only (install ripgrep to compare)");
    }

    let cancel = AtomicBool::new(false);
    let mut lit = GrepOptions::new(LITERAL, root);
    lit.literal = true;
    let mut lit_no_scan = lit.clone();
    lit_no_scan.ignored_scan_limit = 0;
    let re = GrepOptions::new(REGEX, root);
    let find_opts = FindOptions::new("**/*.rs", root);
    let mut find_all = find_opts.clone();
    find_all.limit = 0;

    // Sanity: report what each search found, so the figures are about equal work.
    if let Ok(r) = grep(&lit, &cancel) {
        println!(
            "  literal: {} matches in {} files, {} ignored files also match",
            r.total_matches, r.total_files, r.ignored_matching_files
        );
    }
    if let Ok(r) = grep(&re, &cancel) {
        println!(
            "  regex:   {} matches in {} files",
            r.total_matches, r.total_files
        );
    }
    if let Ok(r) = find(&find_all, &cancel) {
        println!("  find:    {} files", r.total_matched);
    }

    let root_s = root.to_string_lossy().into_owned();
    let cases: Vec<Case> = vec![
        (
            "grep literal",
            Box::new(|| {
                let _ = grep(&lit, &cancel);
            }),
            vec![
                "-n".into(),
                "--no-heading".into(),
                "-F".into(),
                LITERAL.into(),
                root_s.clone(),
            ],
        ),
        (
            "grep literal (no ignored pass)",
            Box::new(|| {
                let _ = grep(&lit_no_scan, &cancel);
            }),
            vec![
                "-n".into(),
                "--no-heading".into(),
                "-F".into(),
                LITERAL.into(),
                root_s.clone(),
            ],
        ),
        (
            "grep regex",
            Box::new(|| {
                let _ = grep(&re, &cancel);
            }),
            vec![
                "-n".into(),
                "--no-heading".into(),
                REGEX.into(),
                root_s.clone(),
            ],
        ),
        (
            "find **/*.rs",
            Box::new(|| {
                let _ = find(&find_opts, &cancel);
            }),
            vec!["--files".into(), "-g".into(), "*.rs".into(), root_s.clone()],
        ),
    ];

    println!(
        "\n{:<32} {:>10} {:>10} {:>8}",
        "case", "fen ms", "rg ms", "ratio"
    );
    for (name, ours, rg_args) in &cases {
        // Warm the page cache, then alternate fen and rg so both see the same machine load.
        ours();
        let mut fen_times = Vec::with_capacity(runs);
        let mut rg_times = Vec::with_capacity(runs);
        if rg_ok {
            let _ = run_rg(rg_args);
        }
        for _ in 0..runs {
            fen_times.push(time(ours));
            if rg_ok {
                rg_times.push(time(|| {
                    let _ = run_rg(rg_args);
                }));
            }
        }
        let fen = median(fen_times);
        if rg_ok {
            let rg = median(rg_times);
            println!(
                "{name:<32} {:>10.1} {:>10.1} {:>7.2}x",
                ms(fen),
                ms(rg),
                fen.as_secs_f64() / rg.as_secs_f64().max(1e-9)
            );
        } else {
            println!("{name:<32} {:>10.1} {:>10} {:>8}", ms(fen), "-", "-");
        }
    }
}

/// A named measurement: fen's closure and the equivalent rg arguments.
type Case<'a> = (&'static str, Box<dyn Fn() + 'a>, Vec<String>);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn time(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

/// Runs rg with its output read through a pipe and discarded: rg quits early when its stdout
/// is /dev/null, which would not be the same work.
fn run_rg(args: &[String]) -> std::io::Result<()> {
    let mut child = Command::new("rg")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    if let Some(mut out) = child.stdout.take() {
        let mut buf = vec![0u8; 64 * 1024];
        while out.read(&mut buf)? > 0 {}
    }
    child.wait()?;
    Ok(())
}

/// A deterministic tree: nested directories, mixed extensions, a `.git` marker so rg honours
/// `.gitignore` too, and an ignored `vendor/` directory holding 2% of the files.
fn generate(root: &Path, files: usize) -> std::io::Result<()> {
    fs::create_dir_all(root.join(".git"))?;
    fs::write(root.join(".gitignore"), "vendor/\n")?;
    let corpus = corpus(4 * 1024 * 1024);
    let mut rng = Lcg(0x5eed);
    for i in 0..files {
        let ext = ["rs", "rs", "rs", "rs", "ts", "ts", "ts", "md", "txt", "txt"][i % 10];
        let dir = if i % 50 == 7 {
            root.join(format!("vendor/v{}", i % 13))
        } else {
            root.join(format!("d{:02}/s{:02}", i % 40, (i / 40) % 25))
        };
        fs::create_dir_all(&dir)?;
        let start = (rng.next() as usize) % (corpus.len() - FILE_BYTES);
        let start = corpus[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(0, |p| start + p + 1);
        let end = (start + FILE_BYTES).min(corpus.len());
        let mut body = corpus[start..end].to_vec();
        if i % 997 == 3 || (i % 50 == 7 && i % 4 == 3) {
            body.extend_from_slice(format!("let x = \"{LITERAL}\";\n").as_bytes());
        }
        fs::write(dir.join(format!("f{i:06}.{ext}")), body)?;
    }
    Ok(())
}

/// Pseudo-code text: identifiers, keywords and now and then a `fn name_handler(` line.
fn corpus(bytes: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "let", "mut", "value", "result", "self", "config", "match", "return", "Some", "None",
        "impl", "struct", "buffer", "index", "count", "parse", "error", "Ok", "into", "iter",
        "map", "filter", "collect", "String", "Vec", "usize", "pub", "async", "await", "data",
    ];
    let mut rng = Lcg(42);
    let mut out = Vec::with_capacity(bytes + 128);
    while out.len() < bytes {
        let indent = (rng.next() % 3) as usize * 4;
        out.extend(std::iter::repeat_n(b' ', indent));
        if rng.next().is_multiple_of(400) {
            let name = WORDS[(rng.next() as usize) % WORDS.len()].to_lowercase();
            out.extend_from_slice(format!("fn {name}_handler(req: Request) {{").as_bytes());
        } else {
            let n = 4 + rng.next() % 10;
            for k in 0..n {
                if k > 0 {
                    out.push(b' ');
                }
                out.extend_from_slice(WORDS[(rng.next() as usize) % WORDS.len()].as_bytes());
            }
            out.push(b';');
        }
        out.push(b'\n');
    }
    out
}

struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}
