//! Bounded head + rolling tail of the cleaned output.

use std::collections::VecDeque;

/// Keeps the first `head_cap` and the last `tail_cap` bytes of a stream, counting the rest.
#[derive(Debug)]
pub struct Kept {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
    lines: u64,
}

/// The kept text split into its two parts, ready for a marker between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptText {
    /// Beginning of the output (the whole output when nothing was cut).
    pub head: String,
    /// End of the output; empty when nothing was cut.
    pub tail: String,
    /// Whether bytes between head and tail were dropped.
    pub truncated: bool,
    /// Cleaned bytes dropped between head and tail.
    pub omitted_bytes: u64,
    /// Newlines within the dropped bytes.
    pub omitted_lines: u64,
    /// Cleaned bytes seen in total.
    pub total_bytes: u64,
    /// Newlines seen in total.
    pub total_lines: u64,
    /// Bytes of the kept text shown as `\xNN` escapes (invalid UTF-8, control bytes).
    pub escaped_bytes: usize,
}

impl Kept {
    /// An empty buffer keeping at most `head_cap + tail_cap` bytes.
    pub fn new(head_cap: usize, tail_cap: usize) -> Self {
        Self {
            head: Vec::with_capacity(head_cap.min(64 * 1024)),
            head_cap,
            tail: VecDeque::new(),
            tail_cap,
            total: 0,
            lines: 0,
        }
    }

    /// Appends cleaned bytes.
    pub fn push(&mut self, mut s: &[u8]) {
        self.total += s.len() as u64;
        self.lines += memchr::memchr_iter(b'\n', s).count() as u64;
        if self.head.len() < self.head_cap {
            let n = (self.head_cap - self.head.len()).min(s.len());
            self.head.extend_from_slice(&s[..n]);
            s = &s[n..];
        }
        if s.is_empty() || self.tail_cap == 0 {
            return;
        }
        if s.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&s[s.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + s.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(s);
        }
    }

    /// Cleaned bytes pushed so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Produces the kept text; cuts land on line boundaries when one is near, and never
    /// inside a UTF-8 character.
    pub fn finish(self) -> KeptText {
        let tail: Vec<u8> = self.tail.into_iter().collect();
        let truncated = self.total > (self.head.len() + tail.len()) as u64;
        if !truncated {
            let mut all = self.head;
            all.extend_from_slice(&tail);
            let (head, escaped_bytes) = visible_text(&all);
            return KeptText {
                head,
                escaped_bytes,
                tail: String::new(),
                truncated: false,
                omitted_bytes: 0,
                omitted_lines: 0,
                total_bytes: self.total,
                total_lines: self.lines,
            };
        }
        let head = &self.head[..head_cut(&self.head)];
        let tail = &tail[tail_cut(&tail)..];
        let kept_lines = count_nl(head) + count_nl(tail);
        let omitted_bytes = self.total - (head.len() + tail.len()) as u64;
        let ((head, escaped_head), (tail, escaped_tail)) = (visible_text(head), visible_text(tail));
        KeptText {
            head,
            tail,
            escaped_bytes: escaped_head + escaped_tail,
            truncated: true,
            omitted_bytes,
            omitted_lines: self.lines.saturating_sub(kept_lines),
            total_bytes: self.total,
            total_lines: self.lines,
        }
    }
}

/// The kept bytes as text: bytes that are not UTF-8 (and control bytes) become visible `\xNN`
/// escapes, as the tool-result sanitizer writes them, rather than U+FFFD, which would hide what
/// the program printed.
/// Also returns how many bytes were escaped, so the result can say so.
fn visible_text(bytes: &[u8]) -> (String, usize) {
    let (text, escaped) = crate::native::sanitize::escape(bytes);
    (text.into_owned(), escaped)
}

fn count_nl(s: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', s).count() as u64
}

/// End of the kept head: just after the last newline when that loses at most a quarter of
/// the head, else the last complete UTF-8 character.
fn head_cut(head: &[u8]) -> usize {
    if let Some(nl) = memchr::memrchr(b'\n', head) {
        if nl + 1 >= head.len() - head.len() / 4 {
            return nl + 1;
        }
    }
    let mut cut = head.len();
    // Step back over an incomplete trailing character (at most 3 bytes).
    for back in 1..=4.min(head.len()) {
        let b = head[head.len() - back];
        if !is_continuation(b) {
            if utf8_len(b) > back {
                cut = head.len() - back;
            }
            break;
        }
    }
    cut
}

/// Start of the kept tail: just after the first newline when that loses at most a quarter
/// of the tail, else the first UTF-8 character start.
fn tail_cut(tail: &[u8]) -> usize {
    if let Some(nl) = memchr::memchr(b'\n', tail) {
        if nl < tail.len() / 4 {
            return nl + 1;
        }
    }
    tail.iter()
        .take(4)
        .position(|&b| !is_continuation(b))
        .unwrap_or(0)
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Length of the UTF-8 sequence a lead byte starts (1 for ASCII or invalid bytes).
fn utf8_len(b: u8) -> usize {
    match b {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut k = Kept::new(8, 8);
        k.push(b"hello ");
        k.push(b"world\n");
        let t = k.finish();
        assert!(!t.truncated);
        assert_eq!(t.head, "hello world\n");
        assert_eq!(t.total_lines, 1);
    }

    #[test]
    fn cut_on_lines_with_counts() {
        let mut k = Kept::new(16, 16);
        for i in 0..100 {
            k.push(format!("line{i:02}\n").as_bytes());
        }
        let t = k.finish();
        assert!(t.truncated);
        assert_eq!(t.head, "line00\nline01\n");
        assert_eq!(t.tail, "line98\nline99\n");
        assert_eq!(t.omitted_lines, 96);
        assert_eq!(t.omitted_bytes, 96 * 7);
    }

    #[test]
    fn never_splits_a_character() {
        // 'é' is 2 bytes; caps fall in the middle of characters.
        let s = "é".repeat(1000);
        let mut k = Kept::new(7, 7);
        k.push(s.as_bytes());
        let t = k.finish();
        assert!(t.truncated);
        assert!(!t.head.contains('\u{FFFD}') && !t.tail.contains('\u{FFFD}'));
        assert_eq!(t.head, "ééé");
        assert_eq!(t.tail, "ééé");
        assert_eq!(t.omitted_bytes, 2000 - (t.head.len() + t.tail.len()) as u64);
    }

    #[test]
    fn tail_rolls_over_many_pushes() {
        let mut k = Kept::new(4, 4);
        for b in b"abcdefghijklmnop" {
            k.push(std::slice::from_ref(b));
        }
        let t = k.finish();
        assert_eq!((t.head.as_str(), t.tail.as_str()), ("abcd", "mnop"));
    }
}
