//! Tool-result sanitizer: the final safety net between a tool's raw output and the provider.
//!
//! Turns arbitrary bytes into valid UTF-8 text that a provider will accept:
//!
//! - NUL, invalid UTF-8 bytes (including UTF-8-encoded surrogates `ED A0..BF xx`) and control
//!   bytes other than tab, LF and CR are escaped byte-wise as visible ASCII: `\x00`, `\xff`.
//!   DEL (`0x7f`) and the C1 controls (U+0080..U+009F, encoded `C2 80..C2 9F`) count as control;
//!   a C1 control is escaped as its two UTF-8 bytes (`\xc2\x85`).
//! - The text is capped at `max_bytes` on a character boundary and never inside an escape.
//! - A marker line is appended when anything was escaped or cut:
//!   `[fen: output sanitized: 3 bytes escaped]` and/or
//!   `[fen: output truncated: 65536 of 5242880 bytes kept]` (sanitized line first when both,
//!   each on its own line). The marker is preceded by a newline unless the body is empty or
//!   already ends with one.
//! - The output *including* the marker is at most `max_bytes`, and the output is clean text,
//!   so sanitizing it again returns it unchanged (idempotent). Backslashes are never escaped.
//! - When `max_bytes` is too small for any body plus its marker, the result is the bare
//!   numbered truncation line (`[fen: output truncated: 0 of N bytes kept]`) if it fits, else
//!   [`TRUNCATED_FALLBACK`] if that fits, otherwise the empty string.
//!
//! Clean input under the cap is checked with one SIMD UTF-8 validation plus one vectorisable
//! control-byte scan and returned borrowed, without copying.

use std::borrow::Cow;

/// Environment variable that overrides the default per-block byte cap.
pub const MAX_BYTES_ENV: &str = "FEN_TOOL_RESULT_MAX_BYTES";

/// Default per-block byte cap when [`MAX_BYTES_ENV`] is unset or unusable.
pub const DEFAULT_MAX_BYTES: usize = 65536;

/// What is returned when the cap cannot hold even a body-less marker with numbers.
pub const TRUNCATED_FALLBACK: &str = "[fen: output truncated]";

/// Longest UTF-8 encoding of one character; used to size validation windows.
const MAX_CHAR_LEN: usize = 4;

/// Bytes in one escape sequence such as `\x1b`.
const ESCAPE_LEN: usize = 4;

/// The per-block byte cap: `FEN_TOOL_RESULT_MAX_BYTES` if it parses as a positive integer,
/// otherwise [`DEFAULT_MAX_BYTES`]. Zero is ignored because it would erase every result.
pub fn default_max_bytes() -> usize {
    std::env::var(MAX_BYTES_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_MAX_BYTES)
}

/// What the sanitizer did to one text block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SanitizeReport {
    /// Input bytes that were replaced by a `\xNN` escape in the output.
    pub escaped: usize,
    /// Whether part of the input was dropped to respect the cap.
    pub truncated: bool,
    /// Length of the input in bytes.
    pub original_bytes: usize,
    /// Input bytes whose (possibly escaped) form is in the output.
    pub kept_bytes: usize,
}

impl SanitizeReport {
    /// True when the output differs from the input (something escaped, cut or marked).
    pub fn changed(&self) -> bool {
        self.escaped > 0 || self.truncated
    }
}

/// A sanitized text block and what was done to produce it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sanitized<'a> {
    /// Valid UTF-8 text, at most `max_bytes` long including any marker.
    pub text: Cow<'a, str>,
    /// Counts behind the marker.
    pub report: SanitizeReport,
}

/// Sanitize arbitrary bytes into provider-safe text of at most `max_bytes` bytes.
///
/// Clean input (valid UTF-8 without escapable controls) that fits is returned borrowed.
pub fn sanitize(input: &[u8], max_bytes: usize) -> Sanitized<'_> {
    if input.len() <= max_bytes {
        if let Some(clean) = as_clean_str(input) {
            return Sanitized {
                text: Cow::Borrowed(clean),
                report: untouched(input.len()),
            };
        }
    }
    let mut text = String::new();
    let report = sanitize_slow(input, max_bytes, &mut text);
    Sanitized {
        text: Cow::Owned(text),
        report,
    }
}

/// [`sanitize`] for text that is already a `&str` (it may still hold controls or be too long).
pub fn sanitize_str(input: &str, max_bytes: usize) -> Sanitized<'_> {
    sanitize(input.as_bytes(), max_bytes)
}

/// [`sanitize`] writing into `out` (cleared first), so a caller can reuse one buffer across
/// many blocks instead of allocating (and page-faulting) a fresh one each time.
pub fn sanitize_into(input: &[u8], max_bytes: usize, out: &mut String) -> SanitizeReport {
    out.clear();
    if input.len() <= max_bytes {
        if let Some(clean) = as_clean_str(input) {
            out.push_str(clean);
            return untouched(input.len());
        }
    }
    sanitize_slow(input, max_bytes, out)
}

impl Sanitized<'_> {
    /// Detach from the input buffer.
    pub fn into_owned(self) -> Sanitized<'static> {
        Sanitized {
            text: Cow::Owned(self.text.into_owned()),
            report: self.report,
        }
    }
}

/// Escapes what [`sanitize`] escapes, with no cap and no marker: for callers that report the
/// count themselves (the `read` tool escapes line by line). Returns the text and the number of
/// input bytes escaped; clean input is borrowed.
pub fn escape(input: &[u8]) -> (Cow<'_, str>, usize) {
    if let Some(clean) = as_clean_str(input) {
        return (Cow::Borrowed(clean), 0);
    }
    let mut out = String::new();
    let body = escape_prefix(input, usize::MAX, &mut out);
    (Cow::Owned(out), body.escaped)
}

/// The input as `&str` when [`escape`] would return it unchanged (valid UTF-8, no control to
/// escape). Clean text stays clean when cut at newlines.
pub fn clean_str(input: &[u8]) -> Option<&str> {
    as_clean_str(input)
}

/// Report for input passed through unchanged.
fn untouched(len: usize) -> SanitizeReport {
    SanitizeReport {
        original_bytes: len,
        kept_bytes: len,
        ..SanitizeReport::default()
    }
}

/// The input as `&str` when it is valid UTF-8 and holds nothing to escape.
fn as_clean_str(input: &[u8]) -> Option<&str> {
    // Controls first: on dirty input this usually stops early and skips a full validation.
    if find_control(input).is_some() {
        return None;
    }
    simdutf8::basic::from_utf8(input).ok()
}

/// Escaping path: try increasingly large marker reservations until body + marker fit.
fn sanitize_slow(input: &[u8], max_bytes: usize, out: &mut String) -> SanitizeReport {
    let total = input.len();
    // Worst-case marker sizes: every count is at most `total`, so its digits bound the length.
    let trunc_worst = 1 + truncated_marker(total, total).len();
    let sanitized_worst = 1 + sanitized_marker(total.max(2)).len();
    // Last resort before the fallback: an empty body with just the numbered truncation line.
    let budgets = [
        Some(max_bytes),
        max_bytes.checked_sub(trunc_worst),
        max_bytes.checked_sub(trunc_worst + sanitized_worst),
        Some(0),
    ];
    for budget in budgets.into_iter().flatten() {
        out.clear();
        let body = escape_prefix(input, budget, out);
        let report = SanitizeReport {
            escaped: body.escaped,
            truncated: body.consumed < total,
            original_bytes: total,
            kept_bytes: body.consumed,
        };
        if append_markers(out, &report, max_bytes) {
            return report;
        }
    }
    fallback(total, max_bytes, out)
}

/// Append the marker lines the report calls for; false (and `out` untouched) if the result
/// would exceed `max_bytes`.
fn append_markers(out: &mut String, report: &SanitizeReport, max_bytes: usize) -> bool {
    let mut markers: Vec<String> = Vec::with_capacity(2);
    if report.escaped > 0 {
        markers.push(sanitized_marker(report.escaped));
    }
    if report.truncated {
        markers.push(truncated_marker(report.kept_bytes, report.original_bytes));
    }
    if markers.is_empty() {
        return out.len() <= max_bytes;
    }
    let needs_newline = !out.is_empty() && !out.ends_with('\n');
    let marker = markers.join("\n");
    if out.len() + usize::from(needs_newline) + marker.len() > max_bytes {
        return false;
    }
    if needs_newline {
        out.push('\n');
    }
    out.push_str(&marker);
    true
}

/// Result when not even an empty body with a numbered marker fits.
fn fallback(total: usize, max_bytes: usize, out: &mut String) -> SanitizeReport {
    out.clear();
    if total > 0 && TRUNCATED_FALLBACK.len() <= max_bytes {
        out.push_str(TRUNCATED_FALLBACK);
    }
    SanitizeReport {
        escaped: 0,
        truncated: total > 0,
        original_bytes: total,
        kept_bytes: 0,
    }
}

/// `[fen: output sanitized: N bytes escaped]`
fn sanitized_marker(escaped: usize) -> String {
    let unit = if escaped == 1 { "byte" } else { "bytes" };
    format!("[fen: output sanitized: {escaped} {unit} escaped]")
}

/// `[fen: output truncated: K of N bytes kept]`
fn truncated_marker(kept: usize, total: usize) -> String {
    format!("[fen: output truncated: {kept} of {total} bytes kept]")
}

/// How much of the input an escaped prefix covers.
struct Body {
    /// Input bytes represented in the output.
    consumed: usize,
    /// Input bytes escaped in the output.
    escaped: usize,
}

/// Append to `out` (empty) the escaped form of the longest prefix of `input` that fits in
/// `limit` bytes, cutting only at character and escape boundaries.
fn escape_prefix(input: &[u8], limit: usize, out: &mut String) -> Body {
    // Escapes only grow the text, so the kept input size is a floor for the output size.
    out.reserve(input.len().min(limit));
    let mut escaped = 0;
    let mut pos = 0;
    while pos < input.len() {
        let room = limit - out.len();
        if room == 0 {
            break;
        }
        // Each input byte yields at least one output byte, so a window of `room` bytes (plus
        // one character's slack) is all that can still fit; avoid validating beyond it.
        let window_end = pos.saturating_add(room).saturating_add(MAX_CHAR_LEN);
        let window = &input[pos..input.len().min(window_end)];
        let (valid, invalid_len) = split_valid(window, window_end >= input.len());
        let valid_len = valid.len();
        let stop = copy_valid(valid, out, limit, &mut escaped);
        pos += stop;
        if stop < valid_len {
            break;
        }
        if invalid_len == 0 {
            if valid_len == 0 {
                // No progress possible (cannot happen for windows of >= 4 bytes); stop rather
                // than spin, and let the caller mark the rest as truncated.
                break;
            }
            continue;
        }
        let can = ((limit - out.len()) / ESCAPE_LEN).min(invalid_len);
        for &b in &input[pos..pos + can] {
            push_escape(out, b);
        }
        escaped += can;
        pos += can;
        if can < invalid_len {
            break;
        }
    }
    Body {
        consumed: pos,
        escaped,
    }
}

/// Split `window` into its leading valid UTF-8 text and the length of the invalid sequence
/// right after it (0 if none). A sequence cut by the window edge is not reported as invalid
/// unless the window reaches the end of the input.
fn split_valid(window: &[u8], at_input_end: bool) -> (&str, usize) {
    match simdutf8::compat::from_utf8(window) {
        Ok(text) => (text, 0),
        Err(err) => {
            let valid_up_to = err.valid_up_to();
            let invalid_len = match err.error_len() {
                Some(n) => n,
                None if at_input_end => window.len() - valid_up_to,
                None => 0,
            };
            // The prefix was just validated; this second SIMD pass only re-derives the `&str`.
            let text = simdutf8::basic::from_utf8(&window[..valid_up_to]).unwrap_or_default();
            (text, invalid_len)
        }
    }
}

/// Copy valid text to `out`, escaping controls, until `limit` would be exceeded. Returns the
/// number of bytes of `valid` consumed.
fn copy_valid(valid: &str, out: &mut String, limit: usize, escaped: &mut usize) -> usize {
    let bytes = valid.as_bytes();
    let mut pos = 0;
    while pos < bytes.len() {
        let (run_end, ctrl_len) = match find_control(&bytes[pos..]) {
            Some((at, len)) => (pos + at, len),
            None => (bytes.len(), 0),
        };
        let room = limit - out.len();
        if run_end - pos > room {
            let cut = valid.floor_char_boundary(pos + room);
            out.push_str(&valid[pos..cut]);
            return cut;
        }
        out.push_str(&valid[pos..run_end]);
        pos = run_end;
        if ctrl_len == 0 {
            break;
        }
        if limit - out.len() < ctrl_len * ESCAPE_LEN {
            return pos;
        }
        for &b in &bytes[pos..pos + ctrl_len] {
            push_escape(out, b);
        }
        *escaped += ctrl_len;
        pos += ctrl_len;
    }
    pos
}

/// Append `\xNN` (lowercase hex) for one byte.
fn push_escape(out: &mut String, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let esc = [
        b'\\',
        b'x',
        HEX[usize::from(b >> 4)],
        HEX[usize::from(b & 0x0f)],
    ];
    // All four bytes are ASCII, so this conversion cannot fail.
    out.push_str(std::str::from_utf8(&esc).unwrap_or_default());
}

/// True for ASCII bytes that must be escaped: C0 controls except tab, LF, CR; and DEL.
#[inline(always)]
fn is_ascii_control_to_escape(b: u8) -> bool {
    (b < 0x20) & (b != b'\t') & (b != b'\n') & (b != b'\r') | (b == 0x7f)
}

/// Chunk width for the vectorised scan.
const CHUNK: usize = 64;

/// Position and byte length of the first control character to escape in UTF-8 `bytes`:
/// an ASCII control (length 1) or a C1 control `C2 80..9F` (length 2).
///
/// Each 64-byte chunk (plus the successor of its last byte, for the C1 pair test) is first
/// OR-reduced with a branch-free loop that LLVM vectorises; only a chunk with a hit is
/// located, through a vectorised byte-flag array read back eight flags per `u64`. The last
/// partial chunk is searched byte by byte.
fn find_control(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut base = 0;
    while base + CHUNK < bytes.len() {
        let here = &bytes[base..base + CHUNK];
        let next = &bytes[base + 1..base + CHUNK + 1];
        let any = here
            .iter()
            .zip(next)
            .fold(false, |acc, (&b, &n)| acc | starts_control(b, n));
        if any {
            let at = base + first_flag(here, next);
            let len = if bytes[at] == 0xc2 { 2 } else { 1 };
            return Some((at, len));
        }
        base += CHUNK;
    }
    find_control_exact(bytes, base, bytes.len())
}

/// Whether byte `b`, followed by `n`, starts a control to escape.
#[inline(always)]
fn starts_control(b: u8, n: u8) -> bool {
    is_ascii_control_to_escape(b) | ((b == 0xc2) & (n & 0xe0 == 0x80))
}

/// Index of the first control in a chunk known to hold one (`CHUNK` if none, never reached).
fn first_flag(here: &[u8], next: &[u8]) -> usize {
    let mut flags = [0u8; CHUNK];
    for ((f, &b), &n) in flags.iter_mut().zip(here).zip(next) {
        *f = u8::from(starts_control(b, n));
    }
    flags
        .chunks_exact(8)
        .enumerate()
        .find_map(|(i, word)| {
            let word = u64::from_le_bytes(word.try_into().ok()?);
            (word != 0).then(|| i * 8 + word.trailing_zeros() as usize / 8)
        })
        .unwrap_or(CHUNK)
}

/// Byte-by-byte search for a control starting in `bytes[from..to]`.
fn find_control_exact(bytes: &[u8], from: usize, to: usize) -> Option<(usize, usize)> {
    (from..to).find_map(|i| {
        let b = bytes[i];
        if is_ascii_control_to_escape(b) {
            Some((i, 1))
        } else if b == 0xc2 && bytes.get(i + 1).is_some_and(|&n| starts_control(b, n)) {
            Some((i, 2))
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(input: &[u8], max: usize) -> (String, SanitizeReport) {
        let out = sanitize(input, max);
        (out.text.into_owned(), out.report)
    }

    #[test]
    fn clean_text_is_borrowed() {
        let out = sanitize("héllo\tworld\r\n".as_bytes(), 100);
        assert!(matches!(out.text, Cow::Borrowed(_)));
        assert_eq!(out.text, "héllo\tworld\r\n");
        assert!(!out.report.changed());
    }

    #[test]
    fn nul_is_escaped_with_marker() {
        let (text, report) = s(b"a\0b", 100);
        assert_eq!(text, "a\\x00b\n[fen: output sanitized: 1 byte escaped]");
        assert_eq!(report.escaped, 1);
        assert!(!report.truncated);
    }

    #[test]
    fn find_control_sees_c1_and_ascii() {
        assert_eq!(find_control(b"abc"), None);
        assert_eq!(find_control("x\u{85}".as_bytes()), Some((1, 2)));
        assert_eq!(find_control("©\x7f".as_bytes()), Some((2, 1)));
        let mut long = vec![b'a'; 200];
        long[130] = 0x1b;
        assert_eq!(find_control(&long), Some((130, 1)));
    }

    #[test]
    fn escape_prefix_never_splits_escapes() {
        let mut out = String::new();
        let body = escape_prefix(b"\0\0\0", 7, &mut out);
        assert_eq!(out, "\\x00");
        assert_eq!(body.consumed, 1);
    }

    #[test]
    fn window_cut_mid_char_is_not_invalid() {
        // A long multibyte run with a small limit: windowing must not escape valid bytes.
        let input = "ж".repeat(100);
        let mut out = String::new();
        let body = escape_prefix(input.as_bytes(), 9, &mut out);
        assert_eq!(out, "жжжж");
        assert_eq!(body.escaped, 0);
    }
}
