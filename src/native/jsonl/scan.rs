//! Whole-file validation: the file's bytes mapped once, its lines validated in parallel,
//! records kept as spans of those bytes (no per-record allocation, no `Value` trees).
//!
//! Why it is fast, and still exact:
//! - **No copy of the file.** The bytes are mapped read-only (`mmap`): the page cache is used
//!   as is, so there is no 200 MB buffer to allocate, zero and fill. Session files are
//!   append-only (one writer, whole lines; see [`super::append`]), so bytes once written never
//!   change while mapped; only a file truncated by hand while it is being read could fault.
//!   Where a file cannot be mapped it is read into memory instead.
//! - **No tree, and exact.** A line is a record exactly when it parses as a
//!   `serde_json::Value` object, so [`SessionBytes::value`] cannot fail for a record returned.
//!   Three checks, cheapest first, each only ever *accepting*:
//!   1. `quick::check_line_at`: a small grammar walk with a SIMD string scan, for lines it is
//!      sure about (valid UTF-8, no surrogate escape, no escaped key, numbers far inside
//!      `f64`, nesting up to 100); it also finds the line's end, so there is no separate
//!      line-splitting pass. Nearly every real line ends here.
//!   2. `serde_json`'s deserializer with a visitor that keeps nothing but the spans of the
//!      top-level `type`, `id` and `parent_id` strings. It takes the very path `Value` takes
//!      (`deserialize_any` everywhere, string keys, numbers converted, recursion limit); one
//!      deserializer runs over a piece from line to line, so its scratch buffer is reused.
//!   3. The reader's own line parser ([`super::reader::parse_line`]) for whatever is left:
//!      bad lines (rare) get their kind (torn or malformed) and message from it, as ever.
//! - **Parallel, balanced.** The bytes are cut at line starts into 4 MB pieces that up to 4
//!   threads take in turn (a thread slowed by other work on the machine just takes fewer);
//!   line numbers are fixed up in file order afterwards, so no separate counting pass is needed.

use std::borrow::Cow;
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::ops::Deref;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::quick;
use super::reader::{parse_line, BadLine, RawLine};
use super::{JsonlError, Result};

/// Bytes per piece of work of the parallel validation (cut at line starts).
const PIECE: usize = 4 << 20;
/// Most threads used for one file.
const MAX_THREADS: usize = 4;

/// The bytes of a session file: mapped read-only, or read where mapping is not possible.
pub struct SessionBytes {
    bytes: Bytes,
}

enum Bytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl Deref for SessionBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m,
            Bytes::Read(v) => v,
        }
    }
}

impl Default for SessionBytes {
    fn default() -> Self {
        SessionBytes {
            bytes: Bytes::Read(Vec::new()),
        }
    }
}

impl fmt::Debug for SessionBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match self.bytes {
            Bytes::Mapped(_) => "mapped",
            Bytes::Read(_) => "read",
        };
        write!(f, "SessionBytes({} bytes, {how})", self.len())
    }
}

impl SessionBytes {
    /// The first `len` bytes of `file` (the whole file as it was when its length was taken).
    pub(crate) fn load(file: &File, path: &Path, len: u64) -> Result<SessionBytes> {
        let too_big = || {
            JsonlError::io(
                "map",
                path,
                std::io::Error::other("file larger than the address space"),
            )
        };
        let len = usize::try_from(len).map_err(|_| too_big())?;
        if len == 0 {
            return Ok(SessionBytes::default());
        }
        // SAFETY: the mapping is read-only and private to this value. Session files are only
        // ever appended to, so the mapped bytes do not change under us (bytes appended past
        // `len` are not part of the mapping); truncating a session file while it is read is
        // outside the format's contract (module docs).
        match unsafe { memmap2::MmapOptions::new().len(len).map(file) } {
            Ok(m) => Ok(SessionBytes {
                bytes: Bytes::Mapped(m),
            }),
            // Not mappable (some special or network file systems): read it instead.
            Err(_) => {
                let mut v = Vec::with_capacity(len);
                file.take(len as u64)
                    .read_to_end(&mut v)
                    .map_err(|e| JsonlError::io("read", path, e))?;
                Ok(SessionBytes {
                    bytes: Bytes::Read(v),
                })
            }
        }
    }

    /// The JSON text of `record` (validated as UTF-8 and as a JSON object when read).
    pub fn text(&self, record: &Record) -> &str {
        let start = usize::try_from(record.offset).unwrap_or(usize::MAX);
        let bytes = self
            .get(start..start.saturating_add(record.len))
            .unwrap_or_default();
        simdutf8::basic::from_utf8(bytes).unwrap_or_default()
    }

    /// `record` as a `Value` tree (cannot fail for records produced by the reader).
    pub fn value(&self, record: &Record) -> Result<Value> {
        serde_json::from_str(self.text(record))
            .map_err(|e| JsonlError::InvalidRecord(e.to_string()))
    }

    /// The record's top-level `type`, when it is a string.
    pub fn record_type(&self, record: &Record) -> Option<Cow<'_, str>> {
        self.field(record, record.fields.kind, "type")
    }

    /// The record's top-level `id`, when it is a string.
    pub fn id(&self, record: &Record) -> Option<Cow<'_, str>> {
        self.field(record, record.fields.id, "id")
    }

    /// The record's top-level `parent_id`, when it is a string (None for null or absent).
    pub fn parent_id(&self, record: &Record) -> Option<Cow<'_, str>> {
        self.field(record, record.fields.parent_id, "parent_id")
    }

    fn field(&self, record: &Record, field: Field, name: &str) -> Option<Cow<'_, str>> {
        match field {
            Field::Absent => None,
            Field::Span { start, len } => {
                let (start, len) = (start as usize, len as usize);
                self.text(record).get(start..start + len).map(Cow::Borrowed)
            }
            // Escaped (or only known from a full parse): ask the tree; rare.
            Field::Parse => match self.value(record).ok()?.get_mut(name)?.take() {
                Value::String(s) => Some(Cow::Owned(s)),
                _ => None,
            },
        }
    }
}

/// One good line: a JSON object, kept as a span of the file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// 1-based line number (None where reading started mid-file and lines were not counted).
    pub line: Option<usize>,
    /// Byte offset of the line in the file.
    pub offset: u64,
    /// Length of the line without its `\n`.
    pub len: usize,
    fields: Fields,
}

/// Where the top-level `type`, `id` and `parent_id` strings are inside a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Fields {
    pub(crate) kind: Field,
    pub(crate) id: Field,
    pub(crate) parent_id: Field,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Field {
    /// Absent, or not a string.
    #[default]
    Absent,
    /// A string without escapes: its bytes, relative to the record's start.
    Span { start: u32, len: u32 },
    /// A string with escapes (or a record that only a full parse accepted): parse to read it.
    Parse,
}

/// Result of validating a run of lines.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    pub records: Vec<Record>,
    pub bad_lines: Vec<BadLine>,
    /// Lines seen (good, bad and blank).
    pub lines: usize,
    pub blank_lines: usize,
}

/// Validate every line of `bytes`, which starts at file offset `base` (a line start).
/// With `count_lines`, records and bad lines carry 1-based line numbers counted from `bytes[0]`.
pub(crate) fn validate_lines(bytes: &[u8], base: u64, count_lines: bool) -> Lines {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, MAX_THREADS);
    validate_lines_with(bytes, base, count_lines, PIECE, threads)
}

/// [`validate_lines`] with explicit piece size and thread count (tests use small pieces).
pub(crate) fn validate_lines_with(
    bytes: &[u8],
    base: u64,
    count_lines: bool,
    piece: usize,
    threads: usize,
) -> Lines {
    let piece = piece.max(1);
    let pieces = bytes.len().div_ceil(piece);
    let threads = threads.clamp(1, pieces.max(1));
    let bounds = |k: usize| {
        (
            piece_start(bytes, k * piece),
            piece_start(bytes, (k + 1) * piece),
        )
    };
    let run = |k: usize| {
        let (a, b) = bounds(k);
        (
            k,
            validate_piece(&bytes[a..b], base + a as u64, count_lines),
        )
    };
    let mut done: Vec<(usize, Lines)> = if threads == 1 {
        (0..pieces).map(run).collect()
    } else {
        let next = AtomicUsize::new(0);
        let worker = || {
            let mut mine = Vec::new();
            loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= pieces {
                    return mine;
                }
                mine.push(run(k));
            }
        };
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(worker)).collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    done.sort_unstable_by_key(|(k, _)| *k);
    merge(done.into_iter().map(|(_, part)| part))
}

/// The first line start at or after `at` (0, or just past a `\n`; `bytes.len()` at the end).
fn piece_start(bytes: &[u8], at: usize) -> usize {
    if at == 0 {
        return 0;
    }
    if at >= bytes.len() {
        return bytes.len();
    }
    if bytes[at - 1] == b'\n' {
        return at;
    }
    memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i + 1)
}

/// Concatenate pieces in file order, turning piece-relative line numbers into file ones.
fn merge(parts: impl Iterator<Item = Lines>) -> Lines {
    let parts: Vec<Lines> = parts.collect();
    let mut out = Lines {
        records: Vec::with_capacity(parts.iter().map(|p| p.records.len()).sum()),
        ..Lines::default()
    };
    for p in parts {
        let before = out.lines;
        let shift = |line: Option<usize>| line.map(|l| l + before);
        out.records.extend(p.records.into_iter().map(|mut r| {
            r.line = shift(r.line);
            r
        }));
        out.bad_lines.extend(p.bad_lines.into_iter().map(|mut b| {
            b.line = shift(b.line);
            b
        }));
        out.lines += p.lines;
        out.blank_lines += p.blank_lines;
    }
    out
}

/// Validate the lines of one piece; line numbers are relative to its start.
///
/// One deserializer runs over the piece from line to line (so its scratch buffer is reused);
/// a line is taken from it only when the object it parsed starts and ends on that line with
/// nothing but whitespace after it. Anything else (a bad line, a value running over a line
/// end, two values on a line) is judged alone by [`validate_line`], and a fresh deserializer
/// starts at the next line.
fn validate_piece(bytes: &[u8], base: u64, count_lines: bool) -> Lines {
    // Checking UTF-8 once per piece (SIMD) spares the parser checking it string by string;
    // a piece with invalid UTF-8 somewhere is parsed from bytes, as the line parser does.
    match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => validate_piece_from(bytes, base, count_lines, true, |at| {
            serde_json::Deserializer::from_str(&text[at..]).into_iter()
        }),
        Err(_) => validate_piece_from(bytes, base, count_lines, false, |at| {
            serde_json::Deserializer::from_slice(&bytes[at..]).into_iter()
        }),
    }
}

/// [`validate_piece`] with `stream_at(i)`: a deserializer over the piece from byte `i` on;
/// `utf8`: the piece is valid UTF-8, so [`quick::check`] may vouch for lines.
fn validate_piece_from<'a, R: serde_json::de::Read<'a>>(
    bytes: &'a [u8],
    base: u64,
    count_lines: bool,
    utf8: bool,
    stream_at: impl Fn(usize) -> serde_json::StreamDeserializer<'a, R, TopLine<'a>>,
) -> Lines {
    let mut out = Lines::default();
    // (start of the deserializer in the piece, the deserializer)
    let mut stream: Option<(usize, serde_json::StreamDeserializer<'a, R, TopLine<'a>>)> = None;
    let mut start = 0usize;
    while start < bytes.len() {
        out.lines += 1;
        let (no, offset) = (out.lines, base + start as u64);
        let record = |fields, len| Record {
            line: count_lines.then_some(no),
            offset,
            len,
            fields,
        };
        if let Some((fields, len)) = utf8
            .then(|| quick::check_line_at(&bytes[start..]))
            .flatten()
        {
            out.records.push(record(fields, len));
            stream = None; // it is behind now
            start += len + 1;
            continue;
        }
        let (end, next, terminated) = match memchr::memchr(b'\n', &bytes[start..]) {
            Some(i) => (start + i, start + i + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        let raw = RawLine {
            no,
            offset,
            bytes: &bytes[start..end],
            terminated,
        };
        if raw.bytes.iter().all(|b| b.is_ascii_whitespace()) {
            out.blank_lines += 1;
            start = next;
            continue;
        }
        let (origin, de) = stream.get_or_insert_with(|| (start, stream_at(start)));
        let fields = match de.next() {
            Some(Ok(TopLine(Some(found)))) => {
                let stop = *origin + de.byte_offset();
                let rest_is_blank = bytes
                    .get(stop..end)
                    .is_some_and(|r| r.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')));
                rest_is_blank.then(|| spans(found, raw.bytes)).flatten()
            }
            _ => None,
        };
        match fields {
            Some(fields) => out.records.push(record(fields, raw.bytes.len())),
            None => {
                stream = None;
                match validate_line(&raw, count_lines) {
                    Ok(Some(r)) => out.records.push(r),
                    Ok(None) => out.blank_lines += 1,
                    Err(bad) => out.bad_lines.push(bad),
                }
            }
        }
        start = next;
    }
    out
}

/// One line's value: Some(fields) for an object, None for any other JSON value.
struct TopLine<'de>(Option<TopFields<'de>>);

impl<'de> de::Deserialize<'de> for TopLine<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match d.deserialize_any(Walk { top: true })? {
            Seen::Object(found) => Ok(TopLine(Some(found))),
            _ => Ok(TopLine(None)),
        }
    }
}

/// One line: Ok(Some) record, Ok(None) blank, Err bad line (exactly as `parse_line` says).
pub(crate) fn validate_line(
    raw: &RawLine<'_>,
    count_lines: bool,
) -> std::result::Result<Option<Record>, BadLine> {
    if raw.bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(None);
    }
    let record = |fields| Record {
        line: count_lines.then_some(raw.no),
        offset: raw.offset,
        len: raw.bytes.len(),
        fields,
    };
    if let Some(fields) = fast_validate(raw.bytes) {
        return Ok(Some(record(fields)));
    }
    // Rare: let the reader's own line parser decide and word the report.
    match parse_line(raw, count_lines) {
        Ok(Some(_)) => Ok(Some(record(Fields {
            kind: Field::Parse,
            id: Field::Parse,
            parent_id: Field::Parse,
        }))),
        Ok(None) => Ok(None),
        Err(bad) => Err(bad),
    }
}

/// Some(fields) when `line` parses as a JSON object the way `Value` would parse it.
fn fast_validate(line: &[u8]) -> Option<Fields> {
    let mut de = serde_json::Deserializer::from_slice(line);
    let TopLine(found) = de::Deserialize::deserialize(&mut de).ok()?;
    de.end().ok()?;
    spans(found?, line)
}

/// The fields' strings as spans of `line` (which they were borrowed from).
fn spans(found: TopFields<'_>, line: &[u8]) -> Option<Fields> {
    let origin = line.as_ptr() as usize;
    let span = |s: Found<'_>| match s {
        Found::Absent => Some(Field::Absent),
        Found::Escaped => Some(Field::Parse),
        Found::Str(s) => {
            let start = (s.as_ptr() as usize).checked_sub(origin)?;
            (start + s.len() <= line.len()).then_some(())?;
            Some(Field::Span {
                start: u32::try_from(start).ok()?,
                len: u32::try_from(s.len()).ok()?,
            })
        }
    };
    Some(Fields {
        kind: span(found.kind).unwrap_or(Field::Parse),
        id: span(found.id).unwrap_or(Field::Parse),
        parent_id: span(found.parent_id).unwrap_or(Field::Parse),
    })
}

/// What the validating walk saw of one value.
enum Seen<'de> {
    /// An object; at the top level, with its interesting fields.
    Object(TopFields<'de>),
    /// A string (borrowed from the line when it had no escapes).
    Str(Option<&'de str>),
    Other,
}

#[derive(Default)]
struct TopFields<'de> {
    kind: Found<'de>,
    id: Found<'de>,
    parent_id: Found<'de>,
}

#[derive(Default, Clone, Copy)]
enum Found<'de> {
    #[default]
    Absent,
    Str(&'de str),
    Escaped,
}

/// Keys `serde_json::Value` treats specially when first in an object (its `raw_value` and
/// `arbitrary_precision` tokens): the walk leaves such objects to the full parse.
const PRIVATE_KEY_PREFIX: &str = "$serde_json::private::";

/// A validating visitor that keeps nothing (but the top-level fields).
#[derive(Clone, Copy)]
struct Walk {
    top: bool,
}

impl<'de> DeserializeSeed<'de> for Walk {
    type Value = Seen<'de>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Seen<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk {
    type Value = Seen<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> std::result::Result<Seen<'de>, E> {
        Ok(Seen::Other)
    }

    fn visit_i64<E>(self, _: i64) -> std::result::Result<Seen<'de>, E> {
        Ok(Seen::Other)
    }

    fn visit_u64<E>(self, _: u64) -> std::result::Result<Seen<'de>, E> {
        Ok(Seen::Other)
    }

    fn visit_f64<E>(self, _: f64) -> std::result::Result<Seen<'de>, E> {
        Ok(Seen::Other)
    }

    fn visit_borrowed_str<E>(self, s: &'de str) -> std::result::Result<Seen<'de>, E> {
        Ok(Seen::Str(Some(s)))
    }

    fn visit_str<E>(self, _: &str) -> std::result::Result<Seen<'de>, E> {
        Ok(Seen::Str(None))
    }

    fn visit_unit<E>(self) -> std::result::Result<Seen<'de>, E> {
        Ok(Seen::Other)
    }

    fn visit_none<E>(self) -> std::result::Result<Seen<'de>, E> {
        Ok(Seen::Other)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Seen<'de>, D::Error> {
        d.deserialize_any(Walk { top: false })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> std::result::Result<Seen<'de>, A::Error> {
        while a.next_element_seed(Walk { top: false })?.is_some() {}
        Ok(Seen::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> std::result::Result<Seen<'de>, A::Error> {
        let mut fields = TopFields::default();
        let mut first = true;
        while let Some(key) = a.next_key_seed(KeySeed)? {
            if first && key == Key::Private {
                return Err(de::Error::custom("left to the full parse"));
            }
            first = false;
            let slot = match (self.top, key) {
                (true, Key::Type) => &mut fields.kind,
                (true, Key::Id) => &mut fields.id,
                (true, Key::ParentId) => &mut fields.parent_id,
                _ => {
                    a.next_value_seed(Walk { top: false })?;
                    continue;
                }
            };
            // A repeated key replaces the earlier value, as in `Value`.
            *slot = match a.next_value_seed(Walk { top: false })? {
                Seen::Str(Some(s)) => Found::Str(s),
                Seen::Str(None) => Found::Escaped,
                _ => Found::Absent,
            };
        }
        Ok(Seen::Object(fields))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Type,
    Id,
    ParentId,
    Private,
    Other,
}

/// An object key, classified (string keys only, as `Value` reads them).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Key, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E>(self, s: &str) -> std::result::Result<Key, E> {
        Ok(match s {
            "type" => Key::Type,
            "id" => Key::Id,
            "parent_id" => Key::ParentId,
            _ if s.starts_with(PRIVATE_KEY_PREFIX) => Key::Private,
            _ => Key::Other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn classify(line: &[u8]) -> std::result::Result<Option<Value>, BadLine> {
        let raw = RawLine {
            no: 7,
            offset: 100,
            bytes: line,
            terminated: true,
        };
        let bytes = SessionBytes {
            bytes: Bytes::Read([vec![0; 100], line.to_vec()].concat()),
        };
        validate_line(&raw, true).map(|r| r.map(|r| bytes.value(&r).expect("value of a record")))
    }

    fn old(line: &[u8]) -> std::result::Result<Option<Value>, BadLine> {
        let raw = RawLine {
            no: 7,
            offset: 100,
            bytes: line,
            terminated: true,
        };
        parse_line(&raw, true)
    }

    #[test]
    fn agrees_with_value_parsing_on_edge_cases() {
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(200), "]".repeat(200));
        let ok_deep = format!("{{\"a\":{}1{}}}", "[".repeat(100), "]".repeat(100));
        let cases: Vec<&[u8]> = vec![
            br#"{"a":"\ud800"}"#,
            br#"{"a":"\udc00"}"#,
            br#"{"a":"\ud800\u0041"}"#,
            br#"{"a":"\ud83d\ude00"}"#,
            br#"{"\ud800":1}"#,
            br#"{"a":1e400}"#,
            br#"{"a":-1e400}"#,
            br#"{"a":1e-400}"#,
            br#"{"a":123456789012345678901234567890}"#,
            br#"{"a":1.7976931348623158e308}"#,
            br#"{"a":01}"#,
            br#"{"a":1.}"#,
            br#"{"a":tru}"#,
            br#"{"a":"x"} x"#,
            b"{\"a\":\"x\"} \t\r",
            br#"{"a":"\x"}"#,
            b"{\"a\":\"\t\"}",
            br#"{"a":"x}"#,
            br#"{"a":[1,2}"#,
            br#"{"a":1,}"#,
            br#"{"a":NaN}"#,
            br#"{"a":1,"a":2}"#,
            br#"[1,2]"#,
            br#""str""#,
            br#"12"#,
            br#"null"#,
            br#"{}"#,
            br#"{"$serde_json::private::RawValue":"[1]"}"#,
            br#"{"$serde_json::private::RawValue":"{\"a\":1}"}"#,
            br#"{"$serde_json::private::RawValue":5}"#,
            br#"{"x":{"$serde_json::private::RawValue":"[1]"}}"#,
            br#"{"x":1,"$serde_json::private::RawValue":"[1]"}"#,
            b"{\"a\":\"\xff\"}",
            b"{\"a\":\"\xc3",
            b"{\"a\":\"\xc3\xa9\"}",
            b"\xef\xbb\xbf{}",
            b"\x0c",
            b"{\"a\":1}\x0c",
            deep.as_bytes(),
            ok_deep.as_bytes(),
        ];
        for line in cases {
            assert_eq!(
                classify(line),
                old(line),
                "{:?}",
                String::from_utf8_lossy(line)
            );
        }
    }

    /// Bits of JSON and of almost-JSON that random lines are made of.
    const FRAGS: &[&[u8]] = &[
        b"{",
        b"}",
        b"[",
        b"]",
        b"\"",
        b":",
        b",",
        b" ",
        b"\t",
        b"\r",
        b"\x0c",
        b"\\",
        b"\\u",
        b"\\n",
        b"d8",
        b"dc00",
        b"0",
        b"1",
        b"9",
        b"-",
        b"+",
        b".",
        b"e",
        b"E",
        b"400",
        b"true",
        b"null",
        b"fals",
        b"a",
        b"\"type\"",
        b"\"id\"",
        b"\"parent_id\"",
        b"\"$serde_json::private::RawValue\"",
        b"\xc3\xa9",
        b"\xc3",
        b"\xff",
        b"\x01",
        b"{\"a\":",
        b"\"x\"",
        b"\n",
    ];

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            "[a-z\"\\\u{0}-\u{1f}\u{e9}\u{1F600}]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
                proptest::collection::btree_map("[a-z_]{0,6}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// Per line, what the reader's line parser says (the reference).
    fn old_verdicts(text: &[u8]) -> (Vec<(usize, Value)>, Vec<BadLine>, usize) {
        let (mut good, mut bad, mut blank) = (Vec::new(), Vec::new(), 0);
        let mut offset = 0u64;
        let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        if text.ends_with(b"\n") || text.is_empty() {
            lines.pop();
        }
        for (i, line) in lines.into_iter().enumerate() {
            let raw = RawLine {
                no: i + 1,
                offset,
                bytes: line,
                terminated: true,
            };
            match parse_line(&raw, true) {
                Ok(Some(v)) => good.push((i + 1, v)),
                Ok(None) => blank += 1,
                Err(b) => bad.push(b),
            }
            offset += line.len() as u64 + 1;
        }
        (good, bad, blank)
    }

    fn new_verdicts(
        text: &[u8],
        piece: usize,
        threads: usize,
    ) -> (Vec<(usize, Value)>, Vec<BadLine>, usize) {
        let bytes = SessionBytes {
            bytes: Bytes::Read(text.to_vec()),
        };
        let got = validate_lines_with(&bytes, 0, true, piece, threads);
        let good = got
            .records
            .iter()
            .map(|r| {
                let v = bytes.value(r).expect("value of a record");
                for (name, got) in [
                    ("type", bytes.record_type(r)),
                    ("id", bytes.id(r)),
                    ("parent_id", bytes.parent_id(r)),
                ] {
                    assert_eq!(
                        got.as_deref(),
                        v.get(name).and_then(Value::as_str),
                        "{name}"
                    );
                }
                (r.line.unwrap(), v)
            })
            .collect();
        (good, got.bad_lines, got.blank_lines)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn random_lines_are_judged_like_value_parsing(
            lines in proptest::collection::vec(
                proptest::collection::vec(proptest::sample::select(FRAGS), 0..24), 1..8),
            piece in 1usize..200,
            threads in 1usize..4,
        ) {
            let text: Vec<u8> = lines.iter().map(|l| l.concat()).collect::<Vec<_>>().join(&b'\n');
            prop_assert_eq!(new_verdicts(&text, piece, threads), old_verdicts(&text));
        }

        #[test]
        fn cut_or_damaged_records_are_judged_like_value_parsing(
            values in proptest::collection::vec(arb_json(), 1..6),
            at in any::<proptest::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<bool>(),
            piece in 1usize..400,
        ) {
            let mut text = Vec::new();
            for (i, v) in values.iter().enumerate() {
                let rec = serde_json::json!({"type": "t", "id": format!("i{i}\u{e9}"), "parent_id": v, "v": v});
                text.extend(serde_json::to_vec(&rec).unwrap());
                text.push(b'\n');
            }
            let i = at.index(text.len() + 1);
            if cut { text.truncate(i) } else { text.insert(i, byte) }
            prop_assert_eq!(new_verdicts(&text, piece, 2), old_verdicts(&text));
        }
    }

    #[test]
    fn fields_are_spans_or_parsed_on_demand() {
        let text = concat!(
            "{\"type\":\"message\",\"id\":\"m1\",\"parent_id\":null,\"x\":{\"type\":\"inner\"}}\n",
            "{\"type\":\"mes\\u0073age\",\"id\":7,\"parent_id\":\"p\\\"q\",\"id\":\"m2\"}\n",
            "{\"$serde_json::private::RawValue\":\"{\\\"type\\\":\\\"raw\\\"}\"}\n",
            "{\"ty\\u0070e\":\"escaped-key\"}\n",
        );
        let bytes = SessionBytes {
            bytes: Bytes::Read(text.as_bytes().to_vec()),
        };
        let got = validate_lines(&bytes, 0, true);
        assert!(got.bad_lines.is_empty(), "{:?}", got.bad_lines);
        let r = &got.records;
        assert_eq!(r.len(), 4);
        assert_eq!(bytes.record_type(&r[0]).as_deref(), Some("message"));
        assert!(matches!(bytes.record_type(&r[0]), Some(Cow::Borrowed(_))));
        assert_eq!(bytes.id(&r[0]).as_deref(), Some("m1"));
        assert_eq!(bytes.parent_id(&r[0]), None);
        assert_eq!(bytes.record_type(&r[1]).as_deref(), Some("message"));
        assert_eq!(bytes.id(&r[1]).as_deref(), Some("m2"), "last key wins");
        assert_eq!(bytes.parent_id(&r[1]).as_deref(), Some("p\"q"));
        assert_eq!(bytes.record_type(&r[2]).as_deref(), Some("raw"));
        assert_eq!(bytes.record_type(&r[3]).as_deref(), Some("escaped-key"));
        for rec in r {
            let v = bytes.value(rec).unwrap();
            let want = v.get("type").and_then(Value::as_str);
            assert_eq!(bytes.record_type(rec).as_deref(), want);
        }
    }

    #[test]
    fn pieces_threads_and_line_numbers_do_not_change_the_result() {
        let mut text = String::new();
        for i in 0..300 {
            text.push_str(&format!(
                "{{\"type\":\"t{i}\",\"pad\":\"{}\"}}\n",
                "p".repeat(i % 50)
            ));
            match i % 41 {
                0 => text.push_str("garbage\n"),
                1 => text.push_str("\n  \n"),
                2 => text.push_str("[1]\n"),
                3 => text.push_str("{\"torn\":\n"),
                _ => {}
            }
        }
        text.push_str("{\"last\":");
        let bytes = text.as_bytes();
        let whole = validate_lines_with(bytes, 0, true, usize::MAX, 1);
        assert_eq!(whole.records.len(), 300);
        assert_eq!(whole.bad_lines.len(), 8 * 3 + 1);
        for piece in [1, 5, 64, 333, 4096] {
            for threads in [1, 2, 3] {
                let got = validate_lines_with(bytes, 0, true, piece, threads);
                assert_eq!(
                    got.records, whole.records,
                    "piece {piece} threads {threads}"
                );
                assert_eq!(got.bad_lines, whole.bad_lines);
                assert_eq!(
                    (got.lines, got.blank_lines),
                    (whole.lines, whole.blank_lines)
                );
            }
        }
        // Line numbers and offsets are the file's: check against a plain split.
        for (i, line) in text.split('\n').enumerate() {
            let off = text
                .split('\n')
                .take(i)
                .map(|l| l.len() as u64 + 1)
                .sum::<u64>();
            if let Some(r) = whole.records.iter().find(|r| r.line == Some(i + 1)) {
                assert_eq!((r.offset, r.len), (off, line.len()));
            } else if let Some(b) = whole.bad_lines.iter().find(|b| b.line == Some(i + 1)) {
                assert_eq!(b.offset, off);
            } else {
                assert!(line.trim().is_empty(), "line {} lost: {line:?}", i + 1);
            }
        }
    }
}
