//! Unified diff of an edit. Only the changed region (plus context) is diffed, so a one-line
//! change in a 50 MB file costs microseconds; hunk headers carry the real line numbers.

use std::fmt::Write;
use std::time::Duration;

use similar::{Algorithm, ChangeTag, TextDiff};

use super::matching::Match;

/// Context lines around each hunk, as `diff -u`.
const CONTEXT: usize = 3;
/// Upper bound on the line diff (a huge rewrite falls back to a coarser but correct diff).
const DIFF_TIMEOUT: Duration = Duration::from_secs(1);

/// Unified diff (`--- a/label`, `+++ b/label`, `@@ -l,n +l,n @@` hunks) of `old` with the
/// sorted, disjoint `placed` matches replaced; `start` is the first byte that really changes.
pub(crate) fn unified(label: &str, old: &str, placed: &[(usize, Match)], start: usize) -> String {
    let last_end = placed.last().map_or(start, |(_, m)| m.end);
    let from = back_lines(old, start, CONTEXT);
    let to = forward_lines(old, last_end, CONTEXT);
    let new_window = splice_window(old, placed, from, to);
    let line_offset = memchr::memchr_iter(b'\n', &old.as_bytes()[..from]).count();

    let diff = line_diff(&old[from..to], &new_window);
    render(label, &diff, line_offset, usize::MAX).0
}

/// Unified diff of a whole-file rewrite (`write`), cut after the last whole line that fits in
/// `max_bytes`; the flag says it was cut. Hunk headers keep their full counts.
pub fn unified_whole(label: &str, old: &str, new: &str, max_bytes: usize) -> (String, bool) {
    render(label, &line_diff(old, new), 0, max_bytes)
}

fn line_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, 'a, str> {
    TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new)
}

/// The diff's hunks, their lines numbered from `line_offset`, cut before the first hunk
/// header or line that would pass `max_bytes` (the flag says it was cut).
fn render(
    label: &str,
    diff: &TextDiff<str>,
    line_offset: usize,
    max_bytes: usize,
) -> (String, bool) {
    let mut out = format!("--- a/{label}\n+++ b/{label}\n");
    let mut piece = String::new();
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        piece.clear();
        let _ = writeln!(
            piece,
            "@@ -{} +{} @@",
            hunk_range(line_offset + old_range.start, old_range.len()),
            hunk_range(line_offset + new_range.start, new_range.len()),
        );
        if out.len() + piece.len() > max_bytes {
            return (out, true);
        }
        out.push_str(&piece);
        for op in &group {
            for change in diff.iter_changes(op) {
                piece.clear();
                piece.push(match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                });
                piece.push_str(change.value());
                if change.missing_newline() {
                    piece.push_str("\n\\ No newline at end of file\n");
                }
                if out.len() + piece.len() > max_bytes {
                    return (out, true);
                }
                out.push_str(&piece);
            }
        }
    }
    (out, false)
}

/// The new text of `old[from..to]`. The first match may begin before `from` when its
/// replacement repeats the old text's first lines; that shared part is identical, so the
/// replacement is entered at the same offset.
fn splice_window(old: &str, placed: &[(usize, Match)], from: usize, to: usize) -> String {
    let mut out = String::with_capacity(to - from + 64);
    let mut at = from;
    for (_, m) in placed {
        if m.start < from {
            out.push_str(m.replacement.get(from - m.start..).unwrap_or_default());
        } else {
            out.push_str(&old[at..m.start]);
            out.push_str(&m.replacement);
        }
        at = m.end;
    }
    out.push_str(&old[at..to]);
    out
}

/// `start,len` in unified-diff convention (1-based; an empty range names the line before).
fn hunk_range(start0: usize, len: usize) -> String {
    if len == 0 {
        format!("{start0},0")
    } else {
        format!("{},{}", start0 + 1, len)
    }
}

/// Offset of the start of the line `lines` lines above the one holding `pos`.
fn back_lines(text: &str, pos: usize, lines: usize) -> usize {
    let bytes = &text.as_bytes()[..pos];
    memchr::memrchr_iter(b'\n', bytes)
        .nth(lines)
        .map_or(0, |nl| nl + 1)
}

/// Offset just after `lines` more full lines following the line that `pos` ends in.
fn forward_lines(text: &str, pos: usize, lines: usize) -> usize {
    let bytes = text.as_bytes();
    // A position right after a newline already ends its line.
    let at_line_start = pos == 0 || bytes[pos - 1] == b'\n';
    let wanted = if at_line_start { lines } else { lines + 1 };
    if wanted == 0 {
        return pos;
    }
    memchr::memchr_iter(b'\n', &bytes[pos..])
        .nth(wanted - 1)
        .map_or(bytes.len(), |nl| pos + nl + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: usize, end: usize, replacement: &str) -> (usize, Match) {
        let replacement = replacement.to_string();
        (
            1,
            Match {
                start,
                end,
                replacement,
            },
        )
    }

    #[test]
    fn whole_file_diffs_and_their_cap() {
        let (d, cut) = unified_whole("a.txt", "one\ntwo\nthree\n", "one\n2\nthree\n", 1 << 20);
        assert!(!cut);
        assert_eq!(
            d,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n"
        );
        let (d, _) = unified_whole("n", "", "x\ny\n", 1 << 20);
        assert!(d.contains("@@ -0,0 +1,2 @@\n+x\n+y\n"), "{d}");
        let big: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (d, cut) = unified_whole("b", "", &big, 200);
        assert!(cut && d.len() <= 200 && d.ends_with('\n'), "{d}");
    }

    #[test]
    fn hunk_headers_carry_real_line_numbers() {
        let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let start = old.find("line 10").unwrap();
        let placed = [m(start, start + "line 10\n".len(), "line ten\n")];
        let diff = unified("f.txt", &old, &placed, start + 5);
        assert!(
            diff.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ -7,7 +7,7 @@\n"),
            "{diff}"
        );
        assert!(diff.contains("-line 10\n+line ten\n"), "{diff}");
        assert!(diff.ends_with(" line 13\n"), "{diff}");
    }

    #[test]
    fn replacement_repeating_many_old_lines_is_diffed_from_the_right_place() {
        let old: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        // Replaces l1..l6 with l1..l5 + "X": the change starts at line 6.
        let end = old.find("l7").unwrap();
        let new: String = (1..=5).map(|i| format!("l{i}\n")).collect::<String>() + "X\n";
        let start = old.find("l6").unwrap();
        let diff = unified("f", &old, &[m(0, end, &new)], start);
        assert!(
            diff.contains("@@ -3,7 +3,7 @@\n l3\n l4\n l5\n-l6\n+X\n l7\n"),
            "{diff}"
        );
    }

    #[test]
    fn missing_final_newline_is_marked() {
        let diff = unified("f", "a", &[m(0, 1, "b")], 0);
        assert!(
            diff.contains("-a\n\\ No newline at end of file\n+b\n"),
            "{diff}"
        );
    }
}
