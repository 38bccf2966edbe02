//! Streaming cleanup of terminal output for the kept text.
//!
//! Removes ANSI/VT escape sequences (CSI, OSC, DCS/SOS/PM/APC strings and two-byte ESC
//! sequences) and collapses `\r`-redrawn progress lines to their final state. The state
//! survives across `feed` calls, so sequences split between pipe reads are handled.
//! `\r\n` is an ordinary newline; a trailing bare `\r` keeps the line it ends.

/// The part of a line held back because a later bare `\r` may still erase it. Progress
/// lines are short; past this size the line is committed and a later `\r` starts a new
/// line instead (memory must stay bounded on a 1 GB line without newlines).
const LINE_CAP: usize = 8 * 1024;

/// An OSC/DCS string that never terminates stops being swallowed after this many bytes,
/// so a stray `ESC ]` in binary-ish output cannot hide the rest of the output.
const STRING_CAP: usize = 64 * 1024;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Plain text.
    Text,
    /// Just saw ESC.
    Esc,
    /// ESC followed by intermediate bytes (0x20..=0x2F), waiting for the final byte.
    EscIntermediate,
    /// Inside `ESC [` parameters, waiting for the final byte (0x40..=0x7E).
    Csi,
    /// Inside an OSC/DCS/SOS/PM/APC string, waiting for BEL or ST (`ESC \`).
    Str,
}

/// Incremental cleaner; feed raw bytes, receive cleaned bytes through a sink.
#[derive(Debug)]
pub struct Cleaner {
    state: State,
    str_len: usize,
    /// Uncommitted tail of the current line (may still be erased by a bare `\r`).
    line: Vec<u8>,
    /// Part of the current line was already emitted (the line outgrew `LINE_CAP`).
    line_committed: bool,
    /// A `\r` was seen; it erases the line if ordinary text follows before a `\n`.
    cr_pending: bool,
}

impl Default for Cleaner {
    fn default() -> Self {
        Self::new()
    }
}

impl Cleaner {
    /// A cleaner at the start of a stream.
    pub fn new() -> Self {
        Self {
            state: State::Text,
            str_len: 0,
            line: Vec::new(),
            line_committed: false,
            cr_pending: false,
        }
    }

    /// Cleans `input`, calling `sink` with cleaned bytes in order.
    pub fn feed(&mut self, input: &[u8], sink: &mut impl FnMut(&[u8])) {
        let mut i = 0;
        while i < input.len() {
            let rest = &input[i..];
            match self.state {
                State::Text => i += self.text_run(rest, sink),
                State::Esc => {
                    let b = rest[0];
                    if is_c0(b) {
                        // A control byte aborts the sequence and is handled as text.
                        self.state = State::Text;
                        continue;
                    }
                    self.state = match b {
                        b'[' => State::Csi,
                        b']' | b'P' | b'X' | b'^' | b'_' => {
                            self.str_len = 0;
                            State::Str
                        }
                        0x20..=0x2f => State::EscIntermediate,
                        _ => State::Text,
                    };
                    i += 1;
                }
                State::EscIntermediate => {
                    let b = rest[0];
                    if is_c0(b) {
                        self.state = State::Text;
                        continue;
                    }
                    if !(0x20..=0x2f).contains(&b) {
                        self.state = State::Text;
                    }
                    i += 1;
                }
                State::Csi => {
                    let b = rest[0];
                    if is_c0(b) {
                        self.state = State::Text;
                        continue;
                    }
                    if !(0x20..=0x3f).contains(&b) {
                        // Final byte (or garbage): the sequence ends here.
                        self.state = State::Text;
                    }
                    i += 1;
                }
                State::Str => match memchr::memchr2(BEL, ESC, rest) {
                    Some(p) => {
                        self.state = if rest[p] == BEL {
                            State::Text
                        } else {
                            // ESC ends the string; `ESC \` is ST and `\` is consumed as a final.
                            State::Esc
                        };
                        i += p + 1;
                    }
                    None => {
                        self.str_len += rest.len();
                        if self.str_len > STRING_CAP {
                            self.state = State::Text;
                        }
                        i += rest.len();
                    }
                },
            }
        }
    }

    /// Ends the stream: emits the unfinished last line.
    pub fn finish(&mut self, sink: &mut impl FnMut(&[u8])) {
        if !self.line.is_empty() {
            sink(&self.line);
            self.line.clear();
        }
        self.line_committed = false;
        self.cr_pending = false;
        self.state = State::Text;
    }

    /// Handles plain text at the start of `rest`; returns how many bytes it consumed.
    fn text_run(&mut self, rest: &[u8], sink: &mut impl FnMut(&[u8])) -> usize {
        let special = memchr::memchr2(ESC, b'\r', rest).unwrap_or(rest.len());
        let plain = &rest[..special];
        if !plain.is_empty() {
            // Complete lines: fast path that hands whole lines to the sink without copying.
            if let Some(nl) = memchr::memrchr(b'\n', plain) {
                let first_nl = memchr::memchr(b'\n', plain).unwrap_or(nl);
                self.text(&plain[..first_nl], sink);
                self.end_line(sink);
                if nl > first_nl {
                    sink(&plain[first_nl + 1..=nl]);
                }
                self.text(&plain[nl + 1..], sink);
            } else {
                self.text(plain, sink);
            }
            return special;
        }
        match rest[0] {
            ESC => self.state = State::Esc,
            _ => self.cr_pending = true, // b'\r'
        }
        1
    }

    /// Appends text without newlines to the current line.
    fn text(&mut self, t: &[u8], sink: &mut impl FnMut(&[u8])) {
        if t.is_empty() {
            return;
        }
        if self.cr_pending {
            self.cr_pending = false;
            self.line.clear();
            if self.line_committed {
                // The erased line was partly emitted already; start a fresh line.
                sink(b"\n");
                self.line_committed = false;
            }
        }
        if self.line_committed {
            sink(t);
        } else if self.line.len() + t.len() > LINE_CAP {
            sink(&self.line);
            self.line.clear();
            sink(t);
            self.line_committed = true;
        } else {
            self.line.extend_from_slice(t);
        }
    }

    /// A `\n` arrived: the current line is final.
    fn end_line(&mut self, sink: &mut impl FnMut(&[u8])) {
        self.cr_pending = false;
        self.line.extend_from_slice(b"\n");
        sink(&self.line);
        self.line.clear();
        self.line_committed = false;
    }
}

/// C0 control bytes that abort an escape sequence (ESC itself restarts one).
fn is_c0(b: u8) -> bool {
    b < 0x20 && b != ESC
}

/// Cleans a whole buffer at once (convenience for tests and small outputs).
pub fn clean_all(input: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut c = Cleaner::new();
    let mut sink = |s: &[u8]| out.extend_from_slice(s);
    c.feed(input, &mut sink);
    c.finish(&mut sink);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clean(s: &str) -> String {
        String::from_utf8(clean_all(s.as_bytes())).unwrap_or_default()
    }

    /// Cleans `s` fed one byte at a time: every split point must give the same answer.
    fn clean_bytewise(s: &str) -> String {
        let mut out = Vec::new();
        let mut c = Cleaner::new();
        let mut sink = |b: &[u8]| out.extend_from_slice(b);
        for b in s.as_bytes() {
            c.feed(std::slice::from_ref(b), &mut sink);
        }
        c.finish(&mut sink);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn progress_and_colors() {
        let s = "a\r50%\r100%\n\x1b[31mred\x1b[0m\n";
        assert_eq!(clean(s), "100%\nred\n");
        assert_eq!(clean_bytewise(s), "100%\nred\n");
    }

    #[test]
    fn crlf_is_newline_and_trailing_cr_keeps_line() {
        assert_eq!(clean("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(clean("done\r"), "done");
        assert_eq!(clean("x\r\r\ny"), "x\ny");
    }

    #[test]
    fn osc_and_other_escapes() {
        let s = "\x1b]0;title\x07A\x1b]8;;http://x\x1b\\B\x1b(BC\x1b=D\x1bPdcs\x1b\\E\n";
        assert_eq!(clean(s), "ABCDE\n");
        assert_eq!(clean_bytewise(s), "ABCDE\n");
    }

    #[test]
    fn erase_line_redraw() {
        let s = "\x1b[2K\r[==  ] 50%\x1b[2K\r[====] 100%\nok\n";
        assert_eq!(clean(s), "[====] 100%\nok\n");
        assert_eq!(clean_bytewise(s), "[====] 100%\nok\n");
    }

    #[test]
    fn stray_esc_before_newline_does_not_eat_it() {
        assert_eq!(clean("a\x1b\nb\n"), "a\nb\n");
    }

    #[test]
    fn long_line_is_committed_and_bounded() {
        let long = "x".repeat(LINE_CAP * 3);
        let s = format!("{long}\rshort\n");
        let out = clean(&s);
        assert_eq!(out, format!("{long}\nshort\n"));
    }

    #[test]
    fn utf8_passes_through() {
        assert_eq!(clean_bytewise("héllo → wörld\n"), "héllo → wörld\n");
    }
}
