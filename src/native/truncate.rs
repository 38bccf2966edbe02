//! Line- and byte-bounded truncation of tool output, with honest, actionable markers.
//!
//! - [`head`] keeps the beginning (file reads), [`tail`] the end (command output),
//!   [`head_tail`] both ends with half of each budget and drops the middle.
//! - Lines: a line is the text up to and including `\n`; a trailing newline does not start an
//!   extra empty line, and `""` has 0 lines. `\r` is ordinary line content.
//! - Cuts fall on line boundaries. Only when not even one whole line fits the byte budget is a
//!   line cut mid-way, at a character boundary (its start for the head, its end for the tail).
//!
//! Markers ([`Truncation::marker`]), one line each, sizes as `24B`, `3.1KB`, `1.2MB`:
//!
//! | case | marker |
//! | --- | --- |
//! | head | `[fen: showing lines 1-2000 of 8412 (2000-line limit). Continue with offset=2001.]` |
//! | head, by bytes | `[fen: showing lines 1-1200 of 8412 (50.0KB limit). Continue with offset=1201.]` |
//! | head, cut line | `[fen: line 1 of 3 is 1.2MB; showing its first 50.0KB (50.0KB limit). Continue with offset=2.]` |
//! | tail | `[fen: showing last 500 lines (1501-2000) of 2000; 1500 lines omitted (500-line limit)]` |
//! | tail, cut line | `[fen: line 2000 of 2000 is 1.2MB; showing its last 50.0KB; 1999 lines omitted (50.0KB limit)]` |
//! | head_tail | `[fen: ... 1234 lines (56.7KB) omitted; showing lines 1-100 and 1335-1434 of 1434 (200-line limit) ...]` |
//!
//! In a head_tail marker a cut line reads `1 (first 25.0KB of 1.2MB)` / `9 (last 25.0KB of 1.2MB)`.
//! "Continue with offset=N" is omitted when nothing is left after the kept part. A head marker
//! that keeps no line at all reads `[fen: showing 0 of 8412 lines (0-line limit). Continue with offset=1.]`.
//! [`Truncation::render`] places the marker where a reader expects it: after a head, before a
//! tail, between the two parts of a head_tail.

use std::borrow::Cow;

use memchr::{memchr, memchr_iter, memrchr};

/// Which part of the text was kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// The beginning.
    Head,
    /// The end.
    Tail,
    /// The beginning and the end; the middle was dropped.
    HeadTail,
}

/// Which limit stopped the text from being kept whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncatedBy {
    /// Nothing was dropped.
    None,
    /// The line budget ran out.
    Lines,
    /// The byte budget ran out.
    Bytes,
}

/// An inclusive, 1-based range of line numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRange {
    /// First line number (1-based).
    pub first: usize,
    /// Last line number (inclusive).
    pub last: usize,
}

impl LineRange {
    /// Number of lines in the range.
    pub fn len(&self) -> usize {
        self.last + 1 - self.first
    }

    /// Always false: a range holds at least one line (absent ranges are `None`).
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// A single line that was cut mid-way because it alone exceeded the byte budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutLine {
    /// Its 1-based line number.
    pub line: usize,
    /// Its full length in bytes (including its newline).
    pub line_bytes: usize,
    /// How many of its bytes were kept.
    pub kept_bytes: usize,
}

/// The kept text of a truncation and the numbers needed to describe it honestly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation<'a> {
    /// The kept text (for [`Kept::HeadTail`], head then tail, split at `omitted_at`).
    pub text: Cow<'a, str>,
    /// Which end(s) were kept.
    pub kept: Kept,
    /// Which limit cut the text, or `None` when it was kept whole.
    pub truncated_by: TruncatedBy,
    /// Lines in the whole input.
    pub total_lines: usize,
    /// Bytes in the whole input.
    pub total_bytes: usize,
    /// Lines kept from the beginning (touched, if `head_cut`), if any.
    pub head_lines: Option<LineRange>,
    /// Lines kept from the end (touched, if `tail_cut`), if any.
    pub tail_lines: Option<LineRange>,
    /// The line of the head part that was cut mid-way, if any (it is `head_lines.last`).
    pub head_cut: Option<CutLine>,
    /// The line of the tail part that was cut mid-way, if any (it is `tail_lines.first`).
    pub tail_cut: Option<CutLine>,
    /// Bytes of `text`.
    pub kept_bytes: usize,
    /// For a truncated head: the 1-based line to continue reading from, if any is left.
    pub next_offset: Option<usize>,
    /// For a truncated head_tail: byte index in `text` where the middle was dropped.
    pub omitted_at: Option<usize>,
    /// The line budget this was computed with.
    pub max_lines: usize,
    /// The byte budget this was computed with.
    pub max_bytes: usize,
}

/// Number of lines: `\n` count, plus one for a final line without `\n`.
pub fn count_lines(text: &str) -> usize {
    let bytes = text.as_bytes();
    let newlines = memchr_iter(b'\n', bytes).count();
    newlines + usize::from(!bytes.is_empty() && bytes[bytes.len() - 1] != b'\n')
}

/// Keep the beginning of `text`: at most `max_lines` lines and `max_bytes` bytes.
pub fn head(text: &str, max_lines: usize, max_bytes: usize) -> Truncation<'_> {
    let total_lines = count_lines(text);
    let cut = take_head(text, max_lines, max_bytes);
    let head_lines = range_of(1, cut.lines);
    // A cut line counts as shown: re-reading it from its start would loop forever.
    let next_offset = match cut.by {
        TruncatedBy::None => None,
        _ => Some(cut.lines + 1).filter(|&n| n <= total_lines),
    };
    Truncation {
        text: Cow::Borrowed(&text[..cut.end]),
        kept: Kept::Head,
        truncated_by: cut.by,
        total_lines,
        total_bytes: text.len(),
        head_lines,
        tail_lines: None,
        head_cut: cut.cut.map(|c| c.numbered(cut.lines)),
        tail_cut: None,
        kept_bytes: cut.end,
        next_offset,
        omitted_at: None,
        max_lines,
        max_bytes,
    }
}

/// Keep the end of `text`: at most `max_lines` lines and `max_bytes` bytes.
pub fn tail(text: &str, max_lines: usize, max_bytes: usize) -> Truncation<'_> {
    let total_lines = count_lines(text);
    let cut = take_tail(text, max_lines, max_bytes);
    let first = total_lines + 1 - cut.lines;
    Truncation {
        text: Cow::Borrowed(&text[cut.start..]),
        kept: Kept::Tail,
        truncated_by: cut.by,
        total_lines,
        total_bytes: text.len(),
        head_lines: None,
        tail_lines: range_of(first, total_lines),
        head_cut: None,
        tail_cut: cut.cut.map(|c| c.numbered(first)),
        kept_bytes: text.len() - cut.start,
        next_offset: None,
        omitted_at: None,
        max_lines,
        max_bytes,
    }
}

/// Keep both ends of `text` within `max_lines` and `max_bytes` and drop the middle. The head
/// gets half of each budget (rounded up for lines, down for bytes); the tail gets the rest.
pub fn head_tail(text: &str, max_lines: usize, max_bytes: usize) -> Truncation<'_> {
    let total_lines = count_lines(text);
    if total_lines <= max_lines && text.len() <= max_bytes {
        let mut whole = head(text, max_lines, max_bytes);
        whole.kept = Kept::HeadTail;
        return whole;
    }
    let h = take_head(text, max_lines.div_ceil(2), max_bytes / 2);
    let rest = &text[h.end..];
    let t = take_tail(rest, max_lines - h.lines, max_bytes - h.end);
    let tail_first = total_lines + 1 - t.lines;
    let kept_lines = h.lines + t.lines;
    let truncated_by = if total_lines > max_lines && kept_lines >= max_lines {
        TruncatedBy::Lines
    } else {
        TruncatedBy::Bytes
    };
    let head_cut = h.cut.map(|c| c.numbered(h.lines));
    let mut tail_cut = t.cut.map(|c| c.numbered(tail_first));
    // Both ends cut from the same line: the tail measured only its remainder.
    if let (Some(hc), Some(tc)) = (head_cut, tail_cut.as_mut()) {
        if hc.line == tc.line {
            tc.line_bytes = hc.line_bytes;
        }
    }
    let mut kept = String::with_capacity(h.end + rest.len() - t.start);
    kept.push_str(&text[..h.end]);
    kept.push_str(&rest[t.start..]);
    Truncation {
        kept_bytes: kept.len(),
        text: Cow::Owned(kept),
        kept: Kept::HeadTail,
        truncated_by,
        total_lines,
        total_bytes: text.len(),
        head_lines: range_of(1, h.lines),
        tail_lines: range_of(tail_first, total_lines),
        head_cut,
        tail_cut,
        next_offset: None,
        omitted_at: Some(h.end),
        max_lines,
        max_bytes,
    }
}

/// Clip every line longer than `max_columns` characters to its first `max_columns`
/// characters followed by ` ... [line clipped: N chars]` (N = the line's full length in
/// characters, excluding its `\n` / `\r\n`). Returns the text and how many lines were clipped.
pub fn clip_long_lines(text: &str, max_columns: usize) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut clipped = 0;
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        let body = body.strip_suffix('\r').unwrap_or(body);
        // A line of at most `max_columns` bytes cannot have more characters: skip counting.
        if body.len() <= max_columns {
            out.push_str(line);
            continue;
        }
        let chars = body.chars().count();
        if chars <= max_columns {
            out.push_str(line);
            continue;
        }
        let keep = body
            .char_indices()
            .nth(max_columns)
            .map_or(body.len(), |(i, _)| i);
        out.push_str(&body[..keep]);
        out.push_str(&format!(" ... [line clipped: {chars} chars]"));
        out.push_str(&line[body.len()..]);
        clipped += 1;
    }
    (out, clipped)
}

impl Truncation<'_> {
    /// Whether anything was dropped.
    pub fn is_truncated(&self) -> bool {
        self.truncated_by != TruncatedBy::None
    }

    /// Bytes of the input that are not in `text`.
    pub fn omitted_bytes(&self) -> usize {
        self.total_bytes - self.kept_bytes
    }

    /// Lines of the input of which no byte is in `text`.
    pub fn omitted_lines(&self) -> usize {
        let after_head = self.head_lines.map_or(0, |r| r.last);
        let before_tail = self.tail_lines.map_or(self.total_lines + 1, |r| r.first);
        before_tail.saturating_sub(after_head + 1)
    }

    /// Shift line numbers for text that starts after `lines_before` lines of a larger
    /// document (a read from `offset` passes `offset - 1`), so markers name document lines.
    pub fn offset_by(mut self, lines_before: usize) -> Self {
        let shift = |r: LineRange| LineRange {
            first: r.first + lines_before,
            last: r.last + lines_before,
        };
        let shift_cut = |c: CutLine| CutLine {
            line: c.line + lines_before,
            ..c
        };
        self.total_lines += lines_before;
        self.head_lines = self.head_lines.map(shift);
        self.tail_lines = self.tail_lines.map(shift);
        self.head_cut = self.head_cut.map(shift_cut);
        self.tail_cut = self.tail_cut.map(shift_cut);
        self.next_offset = self.next_offset.map(|n| n + lines_before);
        self
    }

    /// The standard one-line marker (see the module docs), or `None` when nothing was dropped.
    pub fn marker(&self) -> Option<String> {
        if !self.is_truncated() {
            return None;
        }
        let limit = self.limit_text();
        let total = self.total_lines;
        Some(match self.kept {
            Kept::Head => {
                let shown = match (self.head_cut, self.head_lines) {
                    (Some(c), _) => format!(
                        "line {} of {total} is {}; showing its first {}",
                        c.line,
                        human_bytes(c.line_bytes),
                        human_bytes(c.kept_bytes)
                    ),
                    (None, Some(r)) => format!("showing lines {}-{} of {total}", r.first, r.last),
                    (None, None) => format!("showing 0 of {total} lines"),
                };
                let next = self
                    .next_offset
                    .map(|n| format!(" Continue with offset={n}."))
                    .unwrap_or_default();
                format!("[fen: {shown} ({limit}).{next}]")
            }
            Kept::Tail => {
                let omitted = self.omitted_lines();
                let shown = match (self.tail_cut, self.tail_lines) {
                    (Some(c), _) => format!(
                        "line {} of {total} is {}; showing its last {}",
                        c.line,
                        human_bytes(c.line_bytes),
                        human_bytes(c.kept_bytes)
                    ),
                    (None, Some(r)) => format!(
                        "showing last {} ({}-{}) of {total}",
                        plural(r.len(), "line"),
                        r.first,
                        r.last
                    ),
                    (None, None) => format!("showing 0 of {total} lines"),
                };
                format!(
                    "[fen: {shown}; {} omitted ({limit})]",
                    plural(omitted, "line")
                )
            }
            Kept::HeadTail => {
                let parts: Vec<String> = [
                    self.head_lines
                        .map(|r| describe_part(r, self.head_cut, "first")),
                    self.tail_lines
                        .map(|r| describe_part(r, self.tail_cut, "last")),
                ]
                .into_iter()
                .flatten()
                .collect();
                let shown = if parts.is_empty() {
                    format!("showing 0 of {total} lines")
                } else {
                    format!("showing lines {} of {total}", parts.join(" and "))
                };
                format!(
                    "[fen: ... {} ({}) omitted; {shown} ({limit}) ...]",
                    plural(self.omitted_lines(), "line"),
                    human_bytes(self.omitted_bytes())
                )
            }
        })
    }

    /// The kept text with the marker placed where a reader expects it: after a head, before a
    /// tail, between the parts of a head_tail (each on its own line). Untruncated text is
    /// returned as is.
    pub fn render(&self) -> String {
        let Some(marker) = self.marker() else {
            return self.text.to_string();
        };
        let text: &str = &self.text;
        match self.kept {
            Kept::Head => join_lines(&[text, &marker]),
            Kept::Tail => join_lines(&[&marker, text]),
            Kept::HeadTail => {
                let at = self.omitted_at.unwrap_or(text.len());
                join_lines(&[&text[..at], &marker, &text[at..]])
            }
        }
    }

    fn limit_text(&self) -> String {
        match self.truncated_by {
            TruncatedBy::Lines => format!("{}-line limit", self.max_lines),
            _ => format!("{} limit", human_bytes(self.max_bytes)),
        }
    }
}

/// Join non-empty pieces so each starts on its own line.
fn join_lines(pieces: &[&str]) -> String {
    let mut out = String::with_capacity(pieces.iter().map(|p| p.len() + 1).sum());
    for piece in pieces.iter().filter(|p| !p.is_empty()) {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(piece);
    }
    out
}

/// `1-100`, or for a cut line `1 (first 25.0KB of 1.2MB)`.
fn describe_part(range: LineRange, cut: Option<CutLine>, which: &str) -> String {
    match cut {
        Some(c) => format!(
            "{} ({which} {} of {})",
            c.line,
            human_bytes(c.kept_bytes),
            human_bytes(c.line_bytes)
        ),
        None => format!("{}-{}", range.first, range.last),
    }
}

/// `1 line`, `3 lines`.
fn plural(n: usize, unit: &str) -> String {
    if n == 1 {
        format!("{n} {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

/// `24B`, `3.1KB`, `1.2MB` (binary units, one decimal), as in fen's tool rows.
pub fn human_bytes(n: usize) -> String {
    const KB: f64 = 1024.0;
    let f = n as f64;
    if n < 1024 {
        format!("{n}B")
    } else if f < KB * KB {
        format!("{:.1}KB", f / KB)
    } else if f < KB * KB * KB {
        format!("{:.1}MB", f / (KB * KB))
    } else {
        format!("{:.1}GB", f / (KB * KB * KB))
    }
}

/// `cat -n` style: each line behind its number (`{:>6}\t`), counting from `first`, one trailing
/// `\r` per line dropped, lines joined with `\n` and no newline after the last. A final newline
/// does not start another line, but an empty text is one empty line.
pub fn number_lines(text: &[u8], first: i64) -> Vec<u8> {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let mut out =
        Vec::with_capacity(body.len() + 8 * (memchr::memchr_iter(b'\n', body).count() + 1));
    let mut n = first;
    let mut start = 0;
    loop {
        let end = memchr::memchr(b'\n', &body[start..]).map_or(body.len(), |i| start + i);
        let line = &body[start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        push_line_number(&mut out, n);
        out.extend_from_slice(line);
        if end == body.len() {
            return out;
        }
        out.push(b'\n');
        n = n.wrapping_add(1);
        start = end + 1;
    }
}

/// `{:>6}\t` of `n` (formatting machinery costs more than the rest of numbering a line).
fn push_line_number(out: &mut Vec<u8>, n: i64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut m = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    let width = digits.len() - at + usize::from(n < 0);
    out.extend(std::iter::repeat_n(b' ', 6usize.saturating_sub(width)));
    if n < 0 {
        out.push(b'-');
    }
    out.extend_from_slice(&digits[at..]);
    out.push(b'\t');
}

fn range_of(first: usize, last: usize) -> Option<LineRange> {
    (last >= first).then_some(LineRange { first, last })
}

/// A cut line before its number is known.
#[derive(Clone, Copy)]
struct RawCut {
    line_bytes: usize,
    kept_bytes: usize,
}

impl RawCut {
    fn numbered(self, line: usize) -> CutLine {
        CutLine {
            line,
            line_bytes: self.line_bytes,
            kept_bytes: self.kept_bytes,
        }
    }
}

/// Where a head cut ends: `text[..end]` kept, `lines` lines touched (including a cut one).
struct HeadCut {
    end: usize,
    lines: usize,
    cut: Option<RawCut>,
    by: TruncatedBy,
}

fn take_head(text: &str, max_lines: usize, max_bytes: usize) -> HeadCut {
    let bytes = text.as_bytes();
    let (mut end, mut lines) = (0, 0);
    loop {
        if end == bytes.len() {
            return HeadCut {
                end,
                lines,
                cut: None,
                by: TruncatedBy::None,
            };
        }
        if lines == max_lines {
            return HeadCut {
                end,
                lines,
                cut: None,
                by: TruncatedBy::Lines,
            };
        }
        let line_end = memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |i| end + i + 1);
        if line_end > max_bytes {
            // Cut mid-line only when not one whole line fits; otherwise stop at the boundary.
            let mid = if lines == 0 {
                text.floor_char_boundary(max_bytes)
            } else {
                0
            };
            let cut = (mid > 0).then_some(RawCut {
                line_bytes: line_end,
                kept_bytes: mid,
            });
            return HeadCut {
                end: if lines == 0 { mid } else { end },
                lines: lines + usize::from(mid > 0),
                cut,
                by: TruncatedBy::Bytes,
            };
        }
        end = line_end;
        lines += 1;
    }
}

/// Where a tail cut starts: `text[start..]` kept, `lines` lines touched (including a cut one).
struct TailCut {
    start: usize,
    lines: usize,
    cut: Option<RawCut>,
    by: TruncatedBy,
}

fn take_tail(text: &str, max_lines: usize, max_bytes: usize) -> TailCut {
    let bytes = text.as_bytes();
    let len = bytes.len();
    let (mut start, mut lines) = (len, 0);
    loop {
        if start == 0 {
            return TailCut {
                start,
                lines,
                cut: None,
                by: TruncatedBy::None,
            };
        }
        if lines == max_lines {
            return TailCut {
                start,
                lines,
                cut: None,
                by: TruncatedBy::Lines,
            };
        }
        // The line ending at `start` (its own `\n` is at start - 1 unless it is the last line).
        let line_start = memrchr(b'\n', &bytes[..start - 1]).map_or(0, |i| i + 1);
        if len - line_start > max_bytes {
            let mid = if lines == 0 {
                text.ceil_char_boundary(len - max_bytes)
            } else {
                len
            };
            let kept = len - mid;
            let cut = (lines == 0 && kept > 0).then_some(RawCut {
                line_bytes: len - line_start,
                kept_bytes: kept,
            });
            return TailCut {
                start: if lines == 0 { mid } else { start },
                lines: lines + usize::from(cut.is_some()),
                cut,
                by: TruncatedBy::Bytes,
            };
        }
        start = line_start;
        lines += 1;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn number_lines_like_cat_n() {
        let n =
            |t: &str, first| String::from_utf8(super::number_lines(t.as_bytes(), first)).unwrap();
        assert_eq!(n("a\nb\n", 1), "     1\ta\n     2\tb");
        assert_eq!(n("a\nb", 1), "     1\ta\n     2\tb");
        assert_eq!(n("a\r\nb\r\r\n", 9), "     9\ta\n    10\tb\r");
        assert_eq!(n("", 1), "     1\t");
        assert_eq!(n("\n", 3), "     3\t");
        assert_eq!(n("a\n\n", 1), "     1\ta\n     2\t");
        assert_eq!(n("x\n", 1234567), "1234567\tx");
        assert_eq!(n("x\ny", -1), "    -1\tx\n     0\ty");
        assert_eq!(n("x", 0), "     0\tx");
        assert_eq!(n("x", -12345), "-12345\tx");
        assert_eq!(n("x", i64::MIN), "-9223372036854775808\tx");
    }

    use super::*;

    #[test]
    fn counts_lines() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\n\n"), 2);
        assert_eq!(count_lines("\n"), 1);
    }

    #[test]
    fn head_by_lines_marker() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let t = head(&text, 4, 1000);
        assert_eq!(t.text, "l1\nl2\nl3\nl4\n");
        assert_eq!(t.next_offset, Some(5));
        assert_eq!(
            t.marker().as_deref(),
            Some("[fen: showing lines 1-4 of 10 (4-line limit). Continue with offset=5.]")
        );
    }

    #[test]
    fn tail_by_lines_marker() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let t = tail(&text, 3, 1000);
        assert_eq!(t.text, "l8\nl9\nl10\n");
        assert_eq!(
            t.marker().as_deref(),
            Some("[fen: showing last 3 lines (8-10) of 10; 7 lines omitted (3-line limit)]")
        );
    }

    #[test]
    fn human_bytes_formats() {
        assert_eq!(human_bytes(24), "24B");
        assert_eq!(human_bytes(51200), "50.0KB");
        assert_eq!(human_bytes(5 * 1024 * 1024), "5.0MB");
    }
}
