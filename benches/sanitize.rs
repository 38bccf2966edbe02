//! Sanitizer throughput against a same-run memcpy baseline.
//!
//! Targets: clean 64 MiB mixed UTF-8 <= 3x memcpy; with 1% control bytes <= 10x memcpy.
//! max_bytes = usize::MAX so the whole buffer is scanned (a 64 KiB cap would stop early).

use std::hint::black_box;
use std::time::{Duration, Instant};

use fen::native::sanitize::{sanitize, sanitize_into};

const SIZE: usize = 64 << 20;
const RUNS: usize = 7;

/// Deterministic mixed ASCII + multibyte text (code-like lines with 2-, 3- and 4-byte chars).
fn mixed_text(size: usize) -> Vec<u8> {
    let pieces = [
        "fn main() { let x = 42; println!(\"{x}\"); }\n",
        "// café résumé naïve — “quoted” ±5°C\n",
        "    пример текста: ошибка в строке 12\n",
        "中文注释：这是一个测试。日本語のテキスト。\n",
        "emoji 😀🚀 and math ∑∫√ in one line\n",
        "plain ascii line with some words and numbers 0123456789\n",
    ];
    let mut out = Vec::with_capacity(size + 128);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    while out.len() < size {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        out.extend_from_slice(pieces[(seed >> 33) as usize % pieces.len()].as_bytes());
    }
    // Trim back to a char boundary at or below `size`.
    let mut end = size.min(out.len());
    while end > 0 && (out[end] & 0xc0) == 0x80 {
        end -= 1;
    }
    out.truncate(end);
    out
}

/// Replace ~1% of ASCII letters with control bytes (0x01..0x1f minus tab/LF/CR, 0x7f, 0x00).
fn with_controls(mut data: Vec<u8>) -> Vec<u8> {
    let controls = [0x00u8, 0x01, 0x07, 0x08, 0x1b, 0x7f, 0x0c];
    let mut seed: u64 = 12345;
    let mut replaced = 0;
    let target = data.len() / 100;
    let len = data.len();
    while replaced < target {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let i = (seed >> 16) as usize % len;
        if data[i].is_ascii_alphanumeric() {
            data[i] = controls[replaced % controls.len()];
            replaced += 1;
        }
    }
    data
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn time_runs(mut f: impl FnMut()) -> Duration {
    f(); // warm-up
    median(
        (0..RUNS)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed()
            })
            .collect(),
    )
}

fn gbps(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / d.as_secs_f64() / 1e9
}

fn main() {
    let clean = mixed_text(SIZE);
    let dirty = with_controls(clean.clone());
    let n = clean.len();

    let mut dst = vec![0u8; n];
    let memcpy = time_runs(|| {
        dst.copy_from_slice(black_box(&clean));
        black_box(&dst);
    });

    let clean_t = time_runs(|| {
        let out = sanitize(black_box(&clean), usize::MAX);
        assert!(!out.report.changed());
        black_box(out);
    });

    // Same work written into a reused buffer: like the baseline, no fresh pages to fault in.
    let mut buf = String::with_capacity(n * 2);
    let clean_into_t = time_runs(|| {
        black_box(sanitize_into(black_box(&clean), usize::MAX, &mut buf));
    });

    let mut escaped = 0;
    let dirty_t = time_runs(|| {
        let out = sanitize(black_box(&dirty), usize::MAX);
        escaped = out.report.escaped;
        black_box(out);
    });

    let dirty_into_t = time_runs(|| {
        black_box(sanitize_into(black_box(&dirty), usize::MAX, &mut buf));
    });

    // Informational: a 5 MiB dirty block under the default 64 KiB cap stops early.
    let capped_t = time_runs(|| {
        black_box(sanitize(black_box(&dirty[..5 << 20]), 65536));
    });

    println!("buffer: {n} bytes of mixed UTF-8, median of {RUNS} runs");
    println!(
        "memcpy baseline      : {:>9.3?} ({:.2} GB/s)",
        memcpy,
        gbps(n, memcpy)
    );
    let row = |name: &str, t: Duration, target: &str| {
        println!(
            "{name:<34}: {:>9.3?} ({:>5.2} GB/s)  ratio {:>5.2}x {target}",
            t,
            gbps(n, t),
            t.as_secs_f64() / memcpy.as_secs_f64()
        );
    };
    row("sanitize clean (borrowed)", clean_t, "(target <= 3x)");
    row("sanitize_into clean (reused buf)", clean_into_t, "");
    row(
        "sanitize 1% controls (fresh alloc)",
        dirty_t,
        "(incl. page faults)",
    );
    row(
        "sanitize_into 1% controls (reused)",
        dirty_into_t,
        "(target <= 10x)",
    );
    println!("{escaped} bytes escaped in the 1% case");
    println!("sanitize 5 MiB dirty, 64 KiB cap: {capped_t:.3?}");
}
