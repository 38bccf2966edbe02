//! "Not found" diagnostics: where did `old_string` come closest, and where does it first differ?
//! The goal is a message that lets the model fix `old_string` in one retry.

use std::time::{Duration, Instant};

use super::error::Closest;
use super::matching::{Haystack, OldLines};

/// Single-line bigram similarity below this is "nothing close".
const MIN_LINE_SIMILARITY: f32 = 0.5;
/// The per-line similarity scan is a best-effort hint: it stops after this long.
const SIMILARITY_SCAN_BUDGET: Duration = Duration::from_millis(250);
/// Lines longer than this are clipped around the difference in the message.
const MAX_SHOWN_CHARS: usize = 160;

/// The closest region to `old` in `hay`, or `None` when nothing resembles it.
pub(crate) fn closest(hay: &Haystack, old: &str) -> Option<Closest> {
    let old = OldLines::new(old);
    let count = hay.lines().len();
    if count == 0 {
        return None;
    }
    let start = best_window(hay, &old.lines).or_else(|| best_single_line(hay, &old.lines))?;
    let n = old.lines.len().min(count - start);
    let (diff_k, column) = first_difference(hay, &old.lines, start, n);
    let actual = if start + diff_k < count {
        hay.line_text(start + diff_k)
    } else {
        ""
    };
    let expected = old.lines.get(diff_k).copied().unwrap_or("");
    Some(Closest {
        start_line: start + 1,
        end_line: start + n.max(1),
        diff_line: start + diff_k + 1,
        column,
        actual: clip(actual, column),
        expected: clip(expected, column),
    })
}

/// Window start where the most non-blank lines equal `old`'s after trimming (needs >= 1).
fn best_window(hay: &Haystack, old: &[&str]) -> Option<usize> {
    let count = hay.lines().len();
    let trimmed: Vec<&str> = old.iter().map(|l| l.trim()).collect();
    let mut best: Option<(usize, usize)> = None;
    for i in 0..count {
        let score = trimmed
            .iter()
            .enumerate()
            .take_while(|(k, _)| i + k < count)
            .filter(|(k, t)| !t.is_empty() && hay.line_text(i + k).trim() == **t)
            .count();
        if score > 0 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, i));
        }
    }
    best.map(|(_, i)| i)
}

/// Window start aligned on the file line most similar to `old`'s first non-blank line, by
/// the Dice coefficient of character bigrams (linear per line, unlike a full diff).
fn best_single_line(hay: &Haystack, old: &[&str]) -> Option<usize> {
    let count = hay.lines().len();
    let deadline = Instant::now() + SIMILARITY_SCAN_BUDGET;
    let k0 = old.iter().position(|l| !l.trim().is_empty())?;
    let wanted = bigrams(old[k0].trim(), Vec::new());
    let mut scratch = Vec::new();
    let mut best: Option<(f32, usize)> = None;
    for i in 0..count {
        if i % 1024 == 0 && Instant::now() > deadline {
            break;
        }
        scratch = bigrams(hay.line_text(i).trim(), scratch);
        let score = dice(&wanted, &scratch);
        if score >= MIN_LINE_SIMILARITY && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, i));
        }
    }
    best.map(|(_, i)| i.saturating_sub(k0))
}

/// Sorted character bigrams of `s` (packed into u64), reusing `buf`.
fn bigrams(s: &str, mut buf: Vec<u64>) -> Vec<u64> {
    buf.clear();
    let mut chars = s.chars();
    if let Some(mut prev) = chars.next() {
        for ch in chars {
            buf.push((u64::from(prev) << 32) | u64::from(ch));
            prev = ch;
        }
    }
    buf.sort_unstable();
    buf
}

/// Dice coefficient of two sorted bigram multisets (1.0 for two empty ones).
fn dice(a: &[u64], b: &[u64]) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let (mut i, mut j, mut shared) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                shared += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * shared as f32 / (a.len() + b.len()) as f32
}

/// Index (into `old`) of the first differing line and the 1-based char column of the
/// first differing character on it.
fn first_difference(hay: &Haystack, old: &[&str], start: usize, n: usize) -> (usize, usize) {
    for (k, expected) in old.iter().enumerate() {
        if k >= n {
            // The file ends before old_string does.
            return (k, 1);
        }
        let actual = hay.line_text(start + k);
        if actual != *expected {
            let column = actual
                .chars()
                .zip(expected.chars())
                .take_while(|(a, b)| a == b)
                .count();
            return (k, column + 1);
        }
    }
    (0, 1)
}

/// Clips a long line to a window around `column` (1-based chars), marking cuts with "…".
fn clip(line: &str, column: usize) -> String {
    let chars = line.chars().count();
    if chars <= MAX_SHOWN_CHARS {
        return line.to_string();
    }
    let from = column.saturating_sub(MAX_SHOWN_CHARS / 3);
    let to = (from + MAX_SHOWN_CHARS).min(chars);
    let body: String = line.chars().skip(from).take(to - from).collect();
    let head = if from > 0 { "…" } else { "" };
    let tail = if to < chars { "…" } else { "" };
    format!("{head}{body}{tail}")
}
