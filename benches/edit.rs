//! Edit-engine benchmarks, as ratios against baselines measured in the same run.
//!
//! 1. One exact replacement in a 50 MB file through the full `apply_batch` path (read, stamp,
//!    match, splice, diff, staged temp write + fsync + rename + dir fsync) against a baseline of
//!    `std::fs::read` + writing the bytes to a temp path with std::fs + the same file fsync.
//!    Target: at most 2x.
//! 2. A 40-line fuzzy edit (indentation and block-anchor) in a 20,000-line file. Target: under
//!    30 ms; printed also as a ratio against an exact edit of the same block.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use fen::native::edit::{apply_batch, apply_edits, apply_edits_owned, Edit, FileEdits, Strategy};

const BIG_BYTES: usize = 50 * 1024 * 1024;
const BIG_RUNS: usize = 7;
const FUZZY_LINES: usize = 20_000;
const FUZZY_RUNS: usize = 20;

fn main() {
    let dir = match tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| ".".into()))
    {
        Ok(dir) => dir,
        Err(err) => {
            eprintln!("cannot create bench dir: {err}");
            std::process::exit(1);
        }
    };
    big_file(dir.path());
    fuzzy(dir.path());
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn min(v: &[Duration]) -> Duration {
    v.iter().copied().min().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// 50 MB of code-like lines with one unique marker in the middle.
fn big_content() -> Vec<u8> {
    let mut s = String::with_capacity(BIG_BYTES + 100);
    let mut i = 0usize;
    while s.len() < BIG_BYTES {
        if i == 400_000 {
            s.push_str("    let marker = MARKER_A;\n");
        }
        s.push_str(&format!(
            "    let value_{i} = compute({i}, \"payload text\");\n"
        ));
        i += 1;
    }
    s.into_bytes()
}

fn big_file(dir: &Path) {
    let path = dir.join("big.rs");
    let copy = dir.join("big.copy");
    fs::write(&path, big_content()).expect("write bench file");
    let size = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);

    let mut base = Vec::new();
    let mut full = Vec::new();
    let mut engine = Vec::new();
    let mut forward = true;
    for _ in 0..BIG_RUNS {
        // Baseline: read + write to a temp path + fsync + free, with std::fs.
        let _ = fs::remove_file(&copy);
        let t = Instant::now();
        let bytes = fs::read(&path).expect("read");
        let mut f = fs::File::create(&copy).expect("create");
        f.write_all(&bytes).expect("write");
        f.sync_all().expect("fsync");
        drop(f);
        drop(bytes);
        base.push(t.elapsed());

        let (old, new) = if forward {
            ("MARKER_A", "MARKER_B")
        } else {
            ("MARKER_B", "MARKER_A")
        };
        forward = !forward;

        // In-memory engine only (match + splice + diff), for the breakdown.
        let bytes = fs::read(&path).expect("read");
        let t = Instant::now();
        let out = apply_edits_owned(bytes, &[Edit::new(old, new)], "big.rs").expect("edit");
        engine.push(t.elapsed());
        drop(out);

        // Full path, freeing its buffers inside the timing like the baseline.
        let t = Instant::now();
        let out = apply_batch(&[FileEdits {
            path: path.clone(),
            edits: vec![Edit::new(old, new)],
            expected: None,
        }])
        .expect("apply_batch");
        let strategies = out[0].outcome.strategies.clone();
        drop(out);
        full.push(t.elapsed());
        assert_eq!(strategies, vec![Strategy::Exact]);
    }
    let _ = fs::remove_file(&copy);
    let (b_min, f_min) = (min(&base), min(&full));
    let (b, f, e) = (median(base), median(full), median(engine));
    println!(
        "== exact edit in a {:.1} MB file (median / min of {BIG_RUNS}, interleaved) ==",
        size as f64 / 1e6
    );
    println!(
        "baseline read + temp write + fsync + free (std::fs): {:7.1} / {:7.1} ms",
        ms(b),
        ms(b_min)
    );
    println!(
        "apply_batch (read, stamp, edit, diff, staged write + fsync, rename, dir fsync): {:7.1} / {:7.1} ms",
        ms(f),
        ms(f_min)
    );
    println!(
        "  in-memory apply_edits_owned alone (median): {:7.1} ms",
        ms(e)
    );
    println!(
        "ratio apply_batch / baseline: median {:.2}x, min {:.2}x (target <= 2x)",
        ms(f) / ms(b),
        ms(f_min) / ms(b_min)
    );
}

/// A 20,000-line file of small functions; returns it and the 40-line block at line ~10,000.
fn fuzzy_content() -> (String, String) {
    let mut s = String::new();
    let mut block = String::new();
    let mut line = 0;
    let mut f = 0;
    while line < FUZZY_LINES {
        let target = f == 250;
        let body_lines = if target { 38 } else { 8 };
        let mut func = format!("    fn handler_{f}(&self, input: &str) -> usize {{\n");
        for k in 0..body_lines {
            func.push_str(&format!(
                "        let step_{k} = input.len() * {k} + self.offset_{f};\n"
            ));
        }
        func.push_str("    }\n");
        line += body_lines + 2;
        if target {
            block = func.clone();
        }
        s.push_str(&func);
        f += 1;
    }
    (s, block)
}

fn time_edit(content: &str, edit: &Edit, want: Strategy) -> Duration {
    let mut times = Vec::new();
    for _ in 0..FUZZY_RUNS {
        let t = Instant::now();
        let out = apply_edits(content.as_bytes(), std::slice::from_ref(edit)).expect("fuzzy edit");
        times.push(t.elapsed());
        assert_eq!(out.strategies, vec![want]);
    }
    median(times)
}

fn fuzzy(dir: &Path) {
    let (content, block) = fuzzy_content();
    let lines = content.lines().count();
    let block_lines = block.lines().count();
    let new_block = block.replace("* 7 +", "* 70 +");

    let exact = Edit::new(block.clone(), new_block.clone());
    // The model dropped the 4-space impl indentation.
    let dedent = |s: &str| -> String {
        s.lines()
            .map(|l| l.strip_prefix("    ").unwrap_or(l).to_string() + "\n")
            .collect()
    };
    let indentation = Edit::new(dedent(&block), dedent(&new_block));
    // The model misremembered two middle lines.
    let anchored = Edit::new(
        block.replace("* 3 +", "* 33 +").replace("* 20 +", "* 2 +"),
        new_block.clone(),
    );

    let t_exact = time_edit(&content, &exact, Strategy::Exact);
    let t_indent = time_edit(&content, &indentation, Strategy::Indentation);
    let t_anchor = time_edit(&content, &anchored, Strategy::BlockAnchor);

    // Error path: a 40-line old_string that matches nowhere (closest-region search).
    let missing = Edit::new(
        block
            .replace("handler_250", "handler_gone")
            .replace("step_", "stride_"),
        "x",
    );
    let t = Instant::now();
    let Err(err) = apply_edits(content.as_bytes(), &[missing]) else {
        panic!("the missing block must not match");
    };
    let t_missing = t.elapsed();
    assert!(err.to_string().contains("closest region"), "{err}");
    let one_line = Edit::new("let nothing_like_this = 42;", "x");
    let t = Instant::now();
    let Err(_) = apply_edits(content.as_bytes(), &[one_line]) else {
        panic!("the missing line must not match");
    };
    let t_missing_line = t.elapsed();

    // Full path once for the block-anchor case.
    let path = dir.join("fuzzy.rs");
    fs::write(&path, &content).expect("write fuzzy file");
    let t = Instant::now();
    apply_batch(&[FileEdits {
        path,
        edits: vec![anchored],
        expected: None,
    }])
    .expect("fuzzy apply_batch");
    let t_batch = t.elapsed();

    println!("== {block_lines}-line fuzzy edit in a {lines}-line file (median of {FUZZY_RUNS}) ==");
    println!("exact (baseline):          {:7.2} ms", ms(t_exact));
    println!(
        "indentation:               {:7.2} ms  ({:.1}x exact; target < 30 ms)",
        ms(t_indent),
        ms(t_indent) / ms(t_exact)
    );
    println!(
        "block anchor:              {:7.2} ms  ({:.1}x exact; target < 30 ms)",
        ms(t_anchor),
        ms(t_anchor) / ms(t_exact)
    );
    println!(
        "block anchor, apply_batch: {:7.2} ms (incl. atomic write + fsync)",
        ms(t_batch)
    );
    println!(
        "not found, 40 lines (closest-region diagnostics): {:7.2} ms",
        ms(t_missing)
    );
    println!(
        "not found, 1 line (per-line similarity scan):     {:7.2} ms",
        ms(t_missing_line)
    );
}
