//! Incremental Server-Sent Events parser (WHATWG HTML, "Interpreting an event stream").
//!
//! Pure and synchronous: feed it bytes exactly as they come off the wire with
//! [`SseParser::push`] and it returns every item completed by those bytes. Any chunking works:
//! lines, events, CRLF pairs, the BOM and multi-byte UTF-8 characters may all be split across
//! pushes, because bytes are buffered until a whole line is present and only then decoded.
//!
//! Comments (`:` lines) are reported as [`SseItem::Comment`] rather than dropped, so a caller can
//! tell keep-alives apart from data (an idle timeout must not be reset by a keep-alive).

use memchr::memchr2;

/// The UTF-8 byte order mark, stripped once at the start of a stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; `None` means the default type, `"message"`.
    pub event: Option<String>,
    /// All `data:` lines of the event joined with `\n` (no trailing newline).
    pub data: String,
    /// The last event ID of the stream at dispatch time (it persists across events, per the
    /// spec); `None` when never set or reset with an empty `id:`.
    pub id: Option<String>,
    /// A valid `retry:` value (milliseconds) given inside this event's block, if any.
    pub retry: Option<u64>,
}

impl SseEvent {
    /// The event type, with the spec's default `"message"` filled in.
    pub fn event_type(&self) -> &str {
        self.event.as_deref().unwrap_or("message")
    }
}

/// What a pushed chunk can complete: an event or a comment line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event (a blank line ended a block that had at least one `data` field).
    Event(SseEvent),
    /// A comment line, without its leading `:`. Servers send these as keep-alives.
    Comment(String),
}

/// Whether [`SseParser::finish`] had to throw away an unterminated tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SseFinish {
    /// Bytes of a last line that had no line terminator (discarded, as the spec requires).
    pub partial_line_bytes: usize,
    /// True when fields had been collected for an event that no blank line ever dispatched.
    pub incomplete_event: bool,
}

impl SseFinish {
    /// True when the stream ended cleanly between events.
    pub fn is_clean(&self) -> bool {
        self.partial_line_bytes == 0 && !self.incomplete_event
    }
}

/// Incremental SSE parser; one per stream.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of the current, not yet terminated line (also holds the first <3 bytes while the
    /// BOM check is pending).
    line: Vec<u8>,
    /// The BOM check at stream start has been done.
    bom_checked: bool,
    /// The previous push ended with CR: an LF opening the next push belongs to that CRLF.
    skip_lf: bool,
    /// Data buffer of the event being collected (each line followed by `\n`).
    data: String,
    /// At least one `data` field was seen in the current block.
    has_data: bool,
    /// Any field at all was seen in the current block (for [`SseFinish`]).
    has_fields: bool,
    event_type: Option<String>,
    last_event_id: Option<String>,
    block_retry: Option<u64>,
    reconnection_time: Option<u64>,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes and returns the items they complete, in stream order.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseItem> {
        let mut out = Vec::new();
        self.push_into(bytes, &mut out);
        out
    }

    /// Like [`push`](Self::push) but appends to `out`, so a hot loop can reuse one vector.
    pub fn push_into(&mut self, bytes: &[u8], out: &mut Vec<SseItem>) {
        if self.bom_checked {
            self.feed(bytes, out);
            return;
        }
        // Collect at least three bytes (or a non-BOM prefix) before deciding about the BOM.
        self.line.extend_from_slice(bytes);
        if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
            return;
        }
        self.bom_checked = true;
        let mut pending = std::mem::take(&mut self.line);
        let start = if pending.starts_with(BOM) {
            BOM.len()
        } else {
            0
        };
        self.feed(&pending[start..], out);
        // Keep the allocation if feed did not need the line buffer.
        if self.line.is_empty() {
            pending.clear();
            self.line = pending;
        }
    }

    /// Ends the stream. Per the spec an unterminated last line and an undispatched event are
    /// discarded; the return value says whether that happened (a hint the stream was cut).
    pub fn finish(&mut self) -> SseFinish {
        let result = SseFinish {
            partial_line_bytes: self.line.len(),
            incomplete_event: self.has_fields,
        };
        self.line.clear();
        self.reset_block();
        result
    }

    /// The reconnection time last set by a valid `retry:` field anywhere in the stream.
    pub fn reconnection_time(&self) -> Option<u64> {
        self.reconnection_time
    }

    /// The stream's current last event ID (what a reconnect would send as `Last-Event-ID`).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// Splits `input` into lines, buffering a trailing partial line.
    fn feed(&mut self, input: &[u8], out: &mut Vec<SseItem>) {
        let mut rest = input;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(i) = memchr2(b'\r', b'\n', rest) {
            if self.line.is_empty() {
                self.process_line(&rest[..i], out);
            } else {
                self.line.extend_from_slice(&rest[..i]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, out);
                self.line = line;
                self.line.clear();
            }
            let terminator = rest[i];
            rest = &rest[i + 1..];
            if terminator == b'\r' {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    // The LF of a CRLF may open the next push.
                    None => self.skip_lf = true,
                }
            }
        }
        self.line.extend_from_slice(rest);
    }

    /// Interprets one complete line (without its terminator).
    fn process_line(&mut self, raw: &[u8], out: &mut Vec<SseItem>) {
        if raw.is_empty() {
            self.dispatch(out);
            return;
        }
        // Lines end only at ASCII CR/LF, so a line never splits a UTF-8 sequence; invalid bytes
        // become U+FFFD as the spec's UTF-8 decode does.
        let line = match simdutf8::basic::from_utf8(raw) {
            Ok(valid) => std::borrow::Cow::Borrowed(valid),
            Err(_) => String::from_utf8_lossy(raw),
        };
        if let Some(comment) = line.strip_prefix(':') {
            out.push(SseItem::Comment(comment.to_owned()));
            return;
        }
        let (field, value) = match memchr::memchr(b':', line.as_bytes()) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line.as_ref(), ""),
        };
        self.process_field(field, value);
    }

    fn process_field(&mut self, field: &str, value: &str) {
        match field {
            "data" => {
                self.data.push_str(value);
                self.data.push('\n');
                self.has_data = true;
            }
            "event" => self.event_type = Some(value.to_owned()),
            // An id containing NUL is ignored entirely (spec).
            "id" if !value.contains('\0') => {
                self.last_event_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                // Absurdly long digit strings overflow; ignoring them is the spec's "else ignore".
                if let Ok(ms) = value.parse::<u64>() {
                    self.block_retry = Some(ms);
                    self.reconnection_time = Some(ms);
                }
            }
            _ => {}
        }
        // Unknown and ignored fields still mean "an event was under way" for finish().
        self.has_fields = true;
    }

    fn dispatch(&mut self, out: &mut Vec<SseItem>) {
        if self.has_data {
            let mut data = std::mem::take(&mut self.data);
            data.pop(); // the trailing '\n' added after the last data line
            out.push(SseItem::Event(SseEvent {
                event: self.event_type.take(),
                data,
                id: self.last_event_id.clone(),
                retry: self.block_retry,
            }));
        }
        self.reset_block();
    }

    fn reset_block(&mut self) {
        self.data.clear();
        self.has_data = false;
        self.has_fields = false;
        self.event_type = None;
        self.block_retry = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(items: Vec<SseItem>) -> Vec<SseEvent> {
        items
            .into_iter()
            .filter_map(|i| match i {
                SseItem::Event(e) => Some(e),
                SseItem::Comment(_) => None,
            })
            .collect()
    }

    fn ev(data: &str) -> SseEvent {
        SseEvent {
            data: data.to_owned(),
            ..SseEvent::default()
        }
    }

    #[test]
    fn data_with_and_without_space_and_multiline() {
        let mut p = SseParser::new();
        let got = events(p.push(b"data:a\ndata: b\ndata:  c\n\n"));
        assert_eq!(got, vec![ev("a\nb\n c")]);
    }

    #[test]
    fn event_type_id_retry_and_persistence_of_id() {
        let mut p = SseParser::new();
        let got = events(p.push(b"event: delta\nid: 7\nretry: 1500\ndata: x\n\ndata: y\n\n"));
        assert_eq!(got[0].event.as_deref(), Some("delta"));
        assert_eq!(got[0].id.as_deref(), Some("7"));
        assert_eq!(got[0].retry, Some(1500));
        // Event type and retry are per block; the last event id persists.
        assert_eq!(got[1].event_type(), "message");
        assert_eq!(got[1].id.as_deref(), Some("7"));
        assert_eq!(got[1].retry, None);
        assert_eq!(p.reconnection_time(), Some(1500));
    }

    #[test]
    fn invalid_retry_and_nul_id_are_ignored() {
        let mut p = SseParser::new();
        let got = events(p.push(b"id: 1\ndata: a\n\nretry: 12a\nid: 2\0x\ndata: b\n\n"));
        assert_eq!(got[1].retry, None);
        assert_eq!(got[1].id.as_deref(), Some("1"));
        assert_eq!(p.reconnection_time(), None);
    }

    #[test]
    fn empty_id_resets_last_event_id() {
        let mut p = SseParser::new();
        let got = events(p.push(b"id: 1\ndata: a\n\nid\ndata: b\n\n"));
        assert_eq!(got[1].id, None);
    }

    #[test]
    fn comments_are_reported_and_blocks_without_data_are_not_dispatched() {
        let mut p = SseParser::new();
        let got = p.push(b": ping\n\nevent: x\n\n:\ndata\n\n");
        assert_eq!(
            got,
            vec![
                SseItem::Comment(" ping".into()),
                SseItem::Comment(String::new()),
                // `data` without a colon is a data field with an empty value.
                SseItem::Event(ev("")),
            ]
        );
    }

    #[test]
    fn all_line_endings() {
        let mut p = SseParser::new();
        let got = events(p.push(b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"));
        assert_eq!(got, vec![ev("a"), ev("b"), ev("c")]);
    }

    #[test]
    fn cr_at_chunk_end_then_lf() {
        let mut p = SseParser::new();
        let mut got = p.push(b"data: a\r");
        got.extend(p.push(b"\ndata: b\r"));
        got.extend(p.push(b"\n\r"));
        got.extend(p.push(b"\n"));
        assert_eq!(events(got), vec![ev("a\nb")]);
    }

    #[test]
    fn bom_is_stripped_once_even_when_split() {
        let mut p = SseParser::new();
        let mut got = p.push(b"\xEF");
        got.extend(p.push(b"\xBB"));
        got.extend(p.push(b"\xBFdata: a\n\n\xEF\xBB\xBFdata: b\n\n"));
        let got = events(got);
        assert_eq!(got[0], ev("a"));
        // A later BOM is part of the field name, so that line is an unknown field.
        assert_eq!(got.len(), 1);
    }

    #[test]
    fn short_non_bom_stream_start_is_kept() {
        let mut p = SseParser::new();
        let mut got = p.push(b"d");
        got.extend(p.push(b"ata: z\n\n"));
        assert_eq!(events(got), vec![ev("z")]);
    }

    #[test]
    fn multibyte_split_across_pushes() {
        let text = "data: héllo → 世界 🎉\n\n".as_bytes();
        for cut in 0..text.len() {
            let mut p = SseParser::new();
            let mut got = p.push(&text[..cut]);
            got.extend(p.push(&text[cut..]));
            assert_eq!(events(got), vec![ev("héllo → 世界 🎉")], "cut at {cut}");
        }
    }

    #[test]
    fn invalid_utf8_becomes_replacement_char() {
        let mut p = SseParser::new();
        let got = events(p.push(b"data: a\xFFb\n\n"));
        assert_eq!(got, vec![ev("a\u{FFFD}b")]);
    }

    #[test]
    fn finish_reports_and_discards_unterminated_tail() {
        let mut p = SseParser::new();
        assert!(events(p.push(b"data: a\n\ndata: b\ndata: c")).len() == 1);
        let f = p.finish();
        assert_eq!(f.partial_line_bytes, 7);
        assert!(f.incomplete_event);
        assert!(!f.is_clean());
        let mut q = SseParser::new();
        q.push(b"data: a\n\n");
        assert!(q.finish().is_clean());
    }
}
