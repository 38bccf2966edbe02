//! Tolerant, streaming reading of session files.
//!
//! - [`RecordIter`] / [`read_all`]: every line, in order; bad lines are reported with their
//!   line number and kind (`TornLine` = a cut-off prefix of a record, `MalformedJson` = other
//!   garbage), never dropped silently. `read_all` parses in parallel in 16 MB steps.
//! - [`read_all_raw`]: the same checks without building `Value` trees: records are spans of
//!   one buffer, parsed on demand (for consumers that convert JSON themselves).
//! - [`read_from_latest_compaction`]: scans backwards in blocks (memrchr) for the latest valid
//!   `compaction` and for its first kept entry, then reads forward from there; the rest of the
//!   file is never read, so time and memory follow the kept context, not the file size.
//! - [`list_sessions`]: header + first KBs for id/created/title, plus a raw-byte count of
//!   `"type":"message"` occurrences for the message count; no JSON parse of whole files.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use memchr::memmem;
use serde_json::Value;

use super::{JsonlError, Result};

/// Read buffer of the forward scanner: big enough to amortize syscalls, small enough for memory.
const READ_BUF: usize = 1 << 20;
/// Block size of the backward scan.
const REV_BLOCK: usize = 256 << 10;

/// Why a line could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BadLineKind {
    /// A cut-off prefix of a record (crash mid-write); usually the last line.
    TornLine,
    /// Not JSON at all, or JSON that is not an object.
    MalformedJson,
}

/// A line that was skipped, with where it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BadLine {
    /// 1-based line number (None where the reader started mid-file and did not count lines).
    pub line: Option<usize>,
    /// Byte offset of the line's start.
    pub offset: u64,
    /// Torn or malformed.
    pub kind: BadLineKind,
    /// The parser's message.
    pub message: String,
}

/// One item of a [`RecordIter`].
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A parsed record (a JSON object).
    Record {
        /// 1-based line number (None when reading started mid-file).
        line: Option<usize>,
        /// Byte offset of the line's start.
        offset: u64,
        /// The record.
        value: Value,
    },
    /// A line that could not be parsed.
    Bad(BadLine),
}

/// Result of [`read_all`].
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReadReport {
    /// All good records, in file order (the header included).
    pub records: Vec<Value>,
    /// 1-based line number of each record (parallel to `records`).
    pub record_lines: Vec<usize>,
    /// Skipped lines.
    pub bad_lines: Vec<BadLine>,
    /// Number of lines seen (including bad and blank ones).
    pub lines: usize,
    /// Empty or whitespace-only lines (not data, but counted).
    pub blank_lines: usize,
    /// Bytes read.
    pub bytes: u64,
    /// False when the file's last line has no `\n` (the writer crashed mid-line).
    pub ends_with_newline: bool,
}

/// A raw line from [`LineScanner`].
pub(crate) struct RawLine<'a> {
    pub no: usize,
    pub offset: u64,
    pub bytes: &'a [u8],
    pub terminated: bool,
}

/// Forward line splitter over any reader: big buffer, memchr, no per-line allocation.
pub(crate) struct LineScanner<R> {
    reader: R,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    eof: bool,
    /// File offset of `buf[start]`.
    offset: u64,
    line_no: usize,
}

impl<R: Read> LineScanner<R> {
    pub(crate) fn new(reader: R, offset: u64) -> Self {
        LineScanner {
            reader,
            buf: vec![0; READ_BUF],
            start: 0,
            end: 0,
            eof: false,
            offset,
            line_no: 0,
        }
    }

    /// The next line (without its `\n`), or None at end of input.
    pub(crate) fn next_line(&mut self) -> std::io::Result<Option<RawLine<'_>>> {
        let mut searched = 0;
        loop {
            let window = &self.buf[self.start + searched..self.end];
            if let Some(i) = memchr::memchr(b'\n', window) {
                let (a, b) = (self.start, self.start + searched + i);
                return Ok(Some(self.take(a, b, b + 1, true)));
            }
            searched = self.end - self.start;
            if self.eof {
                if self.start == self.end {
                    return Ok(None);
                }
                let (a, b) = (self.start, self.end);
                return Ok(Some(self.take(a, b, b, false)));
            }
            self.fill()?;
        }
    }

    fn take(&mut self, a: usize, b: usize, next: usize, terminated: bool) -> RawLine<'_> {
        self.line_no += 1;
        let offset = self.offset;
        self.offset += (next - a) as u64;
        self.start = next;
        RawLine {
            no: self.line_no,
            offset,
            bytes: &self.buf[a..b],
            terminated,
        }
    }

    /// Move the partial line to the front (growing for long lines) and read more.
    fn fill(&mut self) -> std::io::Result<()> {
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.reader.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

/// Parse one line: Ok(Some) record, Ok(None) blank, Err(bad line).
pub(crate) fn parse_line(
    raw: &RawLine<'_>,
    count_lines: bool,
) -> std::result::Result<Option<Value>, BadLine> {
    if raw.bytes.iter().all(|b| b.is_ascii_whitespace()) {
        return Ok(None);
    }
    let line = count_lines.then_some(raw.no);
    match serde_json::from_slice::<Value>(raw.bytes) {
        Ok(v @ Value::Object(_)) => Ok(Some(v)),
        Ok(_) => Err(BadLine {
            line,
            offset: raw.offset,
            kind: BadLineKind::MalformedJson,
            message: "line is JSON but not an object".into(),
        }),
        Err(e) => Err(BadLine {
            line,
            offset: raw.offset,
            // A prefix of valid JSON always fails with an EOF error: that is a torn write.
            kind: if e.is_eof() {
                BadLineKind::TornLine
            } else {
                BadLineKind::MalformedJson
            },
            message: e.to_string(),
        }),
    }
}

/// Streaming iterator over a session file's records and bad lines (blank lines skipped).
pub struct RecordIter {
    scanner: LineScanner<File>,
    path: PathBuf,
    count_lines: bool,
    /// Set once a line without trailing `\n` was seen.
    unterminated_tail: bool,
    blank_lines: usize,
}

impl RecordIter {
    /// Iterate `path` from its start.
    pub fn open(path: &Path) -> Result<RecordIter> {
        let file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
        Ok(Self::from_file(file, path, 0, true))
    }

    /// Iterate `path` from byte `offset` (which must be a line start); line numbers are None.
    pub fn open_at(path: &Path, offset: u64) -> Result<RecordIter> {
        let mut file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| JsonlError::io("seek in", path, e))?;
        Ok(Self::from_file(file, path, offset, offset == 0))
    }

    fn from_file(file: File, path: &Path, offset: u64, count_lines: bool) -> RecordIter {
        RecordIter {
            scanner: LineScanner::new(file, offset),
            path: path.to_path_buf(),
            count_lines,
            unterminated_tail: false,
            blank_lines: 0,
        }
    }

    /// Lines read so far.
    pub fn lines(&self) -> usize {
        self.scanner.line_no
    }

    /// Byte offset just past the last line returned.
    pub fn offset(&self) -> u64 {
        self.scanner.offset
    }

    /// Blank lines skipped so far.
    pub fn blank_lines(&self) -> usize {
        self.blank_lines
    }

    /// Whether the last line read had no trailing newline.
    pub fn unterminated_tail(&self) -> bool {
        self.unterminated_tail
    }
}

impl Iterator for RecordIter {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let raw = match self.scanner.next_line() {
                Ok(Some(raw)) => raw,
                Ok(None) => return None,
                Err(e) => return Some(Err(JsonlError::io("read", &self.path, e))),
            };
            if !raw.terminated {
                self.unterminated_tail = true;
            }
            let (line, offset) = (self.count_lines.then_some(raw.no), raw.offset);
            match parse_line(&raw, self.count_lines) {
                Ok(Some(value)) => {
                    return Some(Ok(Entry::Record {
                        line,
                        offset,
                        value,
                    }))
                }
                Ok(None) => self.blank_lines += 1,
                Err(bad) => return Some(Ok(Entry::Bad(bad))),
            }
        }
    }
}

/// Bytes read per step of [`read_all`]; each step's lines are parsed in parallel.
const PAR_CHUNK: usize = 16 << 20;

/// Read a whole session: all records, every bad line reported.
///
/// Streams the file in 16 MB steps; the complete lines of each step are split at line
/// boundaries across up to 4 threads (JSON parsing dominates; the split keeps file order).
pub fn read_all(path: &Path) -> Result<ReadReport> {
    read_all_chunked(path, PAR_CHUNK)
}

fn read_all_chunked(path: &Path, chunk: usize) -> Result<ReadReport> {
    let mut file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let mut report = ReadReport {
        ends_with_newline: true,
        ..ReadReport::default()
    };
    let mut buf: Vec<u8> = Vec::new();
    // `buf[..carry]` is a partial line left from the previous step.
    let mut carry = 0usize;
    let mut offset = 0u64; // file offset of buf[0]
    loop {
        buf.resize(carry + chunk, 0);
        let n =
            read_full(&mut file, &mut buf[carry..]).map_err(|e| JsonlError::io("read", path, e))?;
        let filled = carry + n;
        let eof = n == 0 || filled < buf.len();
        // Complete lines end at the last newline; at EOF the rest is a final (unterminated) line.
        let upto = if eof {
            filled
        } else {
            // No newline at all: one line longer than the buffer; grow and read on.
            memchr::memrchr(b'\n', &buf[..filled]).map_or(0, |i| i + 1)
        };
        parse_region(&buf[..upto], offset, threads, &mut report);
        if eof {
            if upto > 0 && buf[upto - 1] != b'\n' {
                report.ends_with_newline = false;
            }
            report.bytes = offset + upto as u64;
            return Ok(report);
        }
        buf.copy_within(upto..filled, 0);
        carry = filled - upto;
        offset += upto as u64;
    }
}

/// Parse the lines of `region` (starting at file `offset`) into `report`, in order.
fn parse_region(region: &[u8], offset: u64, threads: usize, report: &mut ReadReport) {
    let parts = parse_parts(region, offset, threads, report.lines, |raw| {
        parse_line(raw, true)
    });
    for p in parts {
        report.records.extend(p.records);
        report.record_lines.extend(p.record_lines);
        report.bad_lines.extend(p.bad_lines);
        report.blank_lines += p.blank_lines;
        report.lines = p.last_line;
    }
}

/// Per-line decoder: Ok(Some) record, Ok(None) blank line, Err bad line.
type LineFn<R> = fn(&RawLine<'_>) -> std::result::Result<Option<R>, BadLine>;

/// Split `region` at line starts into up to `threads` parts and decode them in parallel.
fn parse_parts<R: Send>(
    region: &[u8],
    offset: u64,
    threads: usize,
    lines_before: usize,
    f: LineFn<R>,
) -> Vec<Part<R>> {
    if region.is_empty() {
        return Vec::new();
    }
    let mut cuts = vec![0usize];
    for k in 1..threads {
        let target = region.len() * k / threads;
        let last = *cuts.last().unwrap_or(&0);
        if target <= last {
            continue;
        }
        if let Some(i) = memchr::memchr(b'\n', &region[target..]) {
            if target + i + 1 < region.len() {
                cuts.push(target + i + 1);
            }
        }
    }
    cuts.push(region.len());
    // First line number of each part (counting newlines is far cheaper than parsing).
    let mut first_lines = Vec::with_capacity(cuts.len());
    let mut line = lines_before;
    for w in cuts.windows(2) {
        first_lines.push(line);
        line += memchr::memchr_iter(b'\n', &region[w[0]..w[1]]).count();
    }
    if cuts.len() <= 2 {
        return vec![parse_part(region, offset, lines_before, f)];
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = cuts
            .windows(2)
            .zip(&first_lines)
            .map(|(w, &first)| {
                let bytes = &region[w[0]..w[1]];
                let off = offset + w[0] as u64;
                s.spawn(move || parse_part(bytes, off, first, f))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

/// Decoded lines of one part of a region.
struct Part<R> {
    records: Vec<R>,
    record_lines: Vec<usize>,
    bad_lines: Vec<BadLine>,
    blank_lines: usize,
    last_line: usize,
}

/// Decode every line of `bytes`; `before` is the number of lines preceding it in the file.
fn parse_part<R>(bytes: &[u8], offset: u64, before: usize, f: LineFn<R>) -> Part<R> {
    let mut part = Part {
        records: Vec::new(),
        record_lines: Vec::new(),
        bad_lines: Vec::new(),
        blank_lines: 0,
        last_line: before,
    };
    let mut start = 0usize;
    while start < bytes.len() {
        let (end, next, terminated) = match memchr::memchr(b'\n', &bytes[start..]) {
            Some(i) => (start + i, start + i + 1, true),
            None => (bytes.len(), bytes.len(), false),
        };
        part.last_line += 1;
        let raw = RawLine {
            no: part.last_line,
            offset: offset + start as u64,
            bytes: &bytes[start..end],
            terminated,
        };
        match f(&raw) {
            Ok(Some(v)) => {
                part.records.push(v);
                part.record_lines.push(raw.no);
            }
            Ok(None) => part.blank_lines += 1,
            Err(bad) => part.bad_lines.push(bad),
        }
        start = next;
    }
    part
}

/// One validated record of a [`RawReadReport`]: a span of its `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord {
    /// 1-based line number.
    pub line: usize,
    /// Byte offset of the line in the file (and in `data`).
    pub offset: u64,
    /// Length of the JSON text (without the newline).
    pub len: usize,
}

/// Result of [`read_all_raw`]: every good line validated as a JSON object, kept as text.
#[derive(Debug, Clone, Default)]
pub struct RawReadReport {
    /// The whole file.
    pub data: Vec<u8>,
    /// Good records, in file order.
    pub records: Vec<RawRecord>,
    /// Skipped lines.
    pub bad_lines: Vec<BadLine>,
    /// Number of lines seen.
    pub lines: usize,
    /// Blank lines.
    pub blank_lines: usize,
    /// False when the last line has no `\n`.
    pub ends_with_newline: bool,
}

impl RawReadReport {
    /// The JSON text of `record` (validated UTF-8 and JSON at read time).
    pub fn text(&self, record: &RawRecord) -> &str {
        let start = record.offset as usize;
        let bytes = self.data.get(start..start + record.len).unwrap_or_default();
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    /// Parse `record` into a Value (cannot fail for records produced by the reader).
    pub fn value(&self, record: &RawRecord) -> Result<Value> {
        serde_json::from_str(self.text(record))
            .map_err(|e| JsonlError::InvalidRecord(e.to_string()))
    }
}

/// Read a whole session as validated raw records: the full JSON grammar, UTF-8 and
/// "is an object" are checked for every line (bad lines reported exactly as in
/// [`read_all`]), but no tree is built and nothing is allocated per record. Use it when the
/// consumer converts records itself (e.g. straight into Lua tables) or only needs some.
pub fn read_all_raw(path: &Path) -> Result<RawReadReport> {
    let data = std::fs::read(path).map_err(|e| JsonlError::io("read", path, e))?;
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let mut report = RawReadReport {
        ends_with_newline: data.last().is_none_or(|&b| b == b'\n'),
        ..RawReadReport::default()
    };
    let parts = parse_parts(&data, 0, threads, 0, validate_line);
    for p in parts {
        report.records.extend(p.records);
        report.bad_lines.extend(p.bad_lines);
        report.blank_lines += p.blank_lines;
        report.lines = p.last_line;
    }
    report.data = data;
    Ok(report)
}

/// Validate one line without building a tree.
fn validate_line(raw: &RawLine<'_>) -> std::result::Result<Option<RawRecord>, BadLine> {
    let first = raw.bytes.iter().position(|b| !b.is_ascii_whitespace());
    let Some(first) = first else {
        return Ok(None);
    };
    let bad = |kind, message: String| BadLine {
        line: Some(raw.no),
        offset: raw.offset,
        kind,
        message,
    };
    let text = std::str::from_utf8(raw.bytes)
        .map_err(|e| bad(BadLineKind::MalformedJson, format!("invalid UTF-8: {e}")))?;
    match serde_json::from_str::<serde::de::IgnoredAny>(text) {
        Ok(_) if raw.bytes[first] == b'{' => Ok(Some(RawRecord {
            line: raw.no,
            offset: raw.offset,
            len: raw.bytes.len(),
        })),
        Ok(_) => Err(bad(
            BadLineKind::MalformedJson,
            "line is JSON but not an object".into(),
        )),
        Err(e) if e.is_eof() => Err(bad(BadLineKind::TornLine, e.to_string())),
        Err(e) => Err(bad(BadLineKind::MalformedJson, e.to_string())),
    }
}

/// Result of [`read_from_latest_compaction`].
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ResumeReport {
    /// The header (first line) when it is a `session` record.
    pub header: Option<Value>,
    /// Records to replay, in file order: from the compaction's first kept entry (or the
    /// compaction itself) to the end; without a compaction, everything after the header.
    pub records: Vec<Value>,
    /// Index in `records` of the compaction used, if any.
    pub compaction_index: Option<usize>,
    /// Byte offset where `records` start.
    pub start_offset: u64,
    /// Bad lines in the replayed span (line numbers are None: the prefix was not counted).
    pub bad_lines: Vec<BadLine>,
    /// Bad lines in the header or during the backward scan worth knowing about.
    pub notes: Vec<String>,
    /// File size.
    pub file_len: u64,
}

/// Lines of a file from the end backwards, in blocks (memory: one block + one line).
struct RevLines {
    file: File,
    /// File offset of `buf[0]`.
    buf_start: u64,
    /// Unconsumed bytes `[buf_start, buf_start + buf.len())`.
    buf: Vec<u8>,
}

impl RevLines {
    fn new(file: File, len: u64) -> std::io::Result<RevLines> {
        let mut r = RevLines {
            file,
            buf_start: len,
            buf: Vec::new(),
        };
        // Drop the final newline so the last line is not seen as an empty line.
        r.load_block()?;
        if r.buf.last() == Some(&b'\n') {
            r.buf.pop();
        }
        Ok(r)
    }

    /// Prepend the previous block; false at the file start.
    fn load_block(&mut self) -> std::io::Result<bool> {
        if self.buf_start == 0 {
            return Ok(false);
        }
        let n = (self.buf_start as usize).min(REV_BLOCK);
        let from = self.buf_start - n as u64;
        let mut block = vec![0u8; n + self.buf.len()];
        self.file.seek(SeekFrom::Start(from))?;
        self.file.read_exact(&mut block[..n])?;
        block[n..].copy_from_slice(&self.buf);
        self.buf = block;
        self.buf_start = from;
        Ok(true)
    }

    /// The previous line as (offset, bytes), or None at the start of the file.
    fn prev(&mut self) -> std::io::Result<Option<(u64, Vec<u8>)>> {
        loop {
            if let Some(i) = memchr::memrchr(b'\n', &self.buf) {
                let line = self.buf[i + 1..].to_vec();
                self.buf.truncate(i);
                return Ok(Some((self.buf_start + i as u64 + 1, line)));
            }
            if !self.load_block()? {
                if self.buf_start == 0 && !self.buf.is_empty() {
                    let line = std::mem::take(&mut self.buf);
                    return Ok(Some((0, line)));
                }
                return Ok(None);
            }
        }
    }
}

/// The compaction found by the backward scan.
struct FoundCompaction {
    offset: u64,
    first_kept: Option<String>,
}

/// Resume a session: header + the records from the latest valid compaction on.
///
/// Scans backwards from the end in blocks for the last line holding `"compaction"` that parses
/// as a `type = "compaction"` record with a `summary`; then, if it names
/// `first_kept_entry_id`, keeps scanning back for the line whose top-level `id` is that (a
/// byte search for `"id":"<id>"` first); then reads forward from there to the end.
/// Without a compaction it replays everything after the header.
pub fn read_from_latest_compaction(path: &Path) -> Result<ResumeReport> {
    let file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| JsonlError::io("stat", path, e))?
        .len();
    let mut report = ResumeReport {
        file_len: len,
        ..ResumeReport::default()
    };
    let header_end = read_header(path, &mut report)?;
    let mut rev = RevLines::new(file, len).map_err(|e| JsonlError::io("read", path, e))?;
    let found = find_compaction(&mut rev, header_end, &mut report.notes)
        .map_err(|e| JsonlError::io("read", path, e))?;
    let start = match &found {
        None => header_end,
        Some(c) => match &c.first_kept {
            None => c.offset,
            Some(id) => match find_entry_by_id(&mut rev, header_end, id)
                .map_err(|e| JsonlError::io("read", path, e))?
            {
                Some(off) => off,
                None => {
                    report.notes.push(format!(
                        "first_kept_entry_id {id} not found before the compaction; replaying from the compaction"
                    ));
                    c.offset
                }
            },
        },
    };
    drop(rev);
    report.start_offset = start;
    let compaction_offset = found.as_ref().map(|c| c.offset);
    for entry in RecordIter::open_at(path, start)? {
        match entry? {
            Entry::Record { offset, value, .. } => {
                if Some(offset) == compaction_offset {
                    report.compaction_index = Some(report.records.len());
                }
                report.records.push(value);
            }
            Entry::Bad(bad) => report.bad_lines.push(bad),
        }
    }
    Ok(report)
}

/// Read the first line as the header; returns the offset just past it (0 if not a header).
fn read_header(path: &Path, report: &mut ResumeReport) -> Result<u64> {
    let file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
    let mut sc = LineScanner::new(file, 0);
    // Small first read is fine: LineScanner grows only for long lines.
    let Some(raw) = sc
        .next_line()
        .map_err(|e| JsonlError::io("read", path, e))?
    else {
        return Ok(0);
    };
    let end = raw.offset + raw.bytes.len() as u64 + u64::from(raw.terminated);
    match parse_line(&raw, true) {
        Ok(Some(v)) if v.get("type").and_then(Value::as_str) == Some("session") => {
            report.header = Some(v);
            Ok(end)
        }
        Ok(_) => {
            report
                .notes
                .push("line 1 is not a session header; replaying from the file start".into());
            Ok(0)
        }
        Err(bad) => {
            report
                .notes
                .push(format!("line 1 (header) is unreadable: {}", bad.message));
            Ok(end)
        }
    }
}

fn find_compaction(
    rev: &mut RevLines,
    floor: u64,
    notes: &mut Vec<String>,
) -> std::io::Result<Option<FoundCompaction>> {
    let needle = memmem::Finder::new(b"\"compaction\"");
    while let Some((offset, line)) = rev.prev()? {
        if offset < floor {
            return Ok(None);
        }
        if needle.find(&line).is_none() {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&line) else {
            notes.push(format!(
                "skipped an unreadable compaction-like line at byte {offset}"
            ));
            continue;
        };
        if v.get("type").and_then(Value::as_str) != Some("compaction") {
            continue;
        }
        if v.get("summary").and_then(Value::as_str).is_none() {
            notes.push(format!(
                "skipped a compaction without a summary at byte {offset}"
            ));
            continue;
        }
        let first_kept = v
            .get("first_kept_entry_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        return Ok(Some(FoundCompaction { offset, first_kept }));
    }
    Ok(None)
}

fn find_entry_by_id(rev: &mut RevLines, floor: u64, id: &str) -> std::io::Result<Option<u64>> {
    let quoted = serde_json::to_string(id).unwrap_or_default();
    let needle_bytes = format!("\"id\":{quoted}");
    let needle = memmem::Finder::new(needle_bytes.as_bytes());
    while let Some((offset, line)) = rev.prev()? {
        if offset < floor {
            return Ok(None);
        }
        if needle.find(&line).is_none() {
            continue;
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&line) {
            if v.get("id").and_then(Value::as_str) == Some(id) {
                return Ok(Some(offset));
            }
        }
    }
    Ok(None)
}

/// One session in a listing.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SessionSummary {
    /// The session file.
    pub path: PathBuf,
    /// Header `id` (None if the header is missing or unreadable).
    pub id: Option<String>,
    /// Header `created` (or `timestamp`, as older files spelled it).
    pub created: Option<String>,
    /// File modification time, seconds since the Unix epoch.
    pub modified: u64,
    /// First user message text, whitespace-collapsed, at most ~80 chars.
    pub title: Option<String>,
    /// Number of `"type":"message"` occurrences in the raw bytes (see module docs).
    pub message_count: usize,
    /// File size in bytes.
    pub bytes: u64,
}

/// How much of each file is parsed for header and title.
const LIST_PREFIX: usize = 64 << 10;
/// Title length in chars.
const TITLE_CHARS: usize = 80;

/// Summaries of the `*.jsonl` sessions in `dir` (not `*.repaired.jsonl`), newest first.
///
/// Cost per file: one read of the first 64 KB (header, title) and one pass of `memmem`
/// over the raw bytes counting `"type":"message"` (our writer serializes compactly, so each
/// message record contains that exact key/value once; text containing it is escaped as
/// `\"type\"` and does not match). No JSON parse beyond the first lines.
pub fn list_sessions(dir: &Path) -> Result<Vec<SessionSummary>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(JsonlError::io("list", dir, e)),
    };
    let mut out = Vec::new();
    let mut buf = vec![0u8; READ_BUF];
    for ent in rd {
        let ent = ent.map_err(|e| JsonlError::io("list", dir, e))?;
        let path = ent.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".jsonl") || name.ends_with(".repaired.jsonl") {
            continue;
        }
        // A file vanishing mid-listing is not an error for the listing.
        if let Ok(s) = summarize(&path, &mut buf) {
            out.push(s);
        }
    }
    out.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.path.cmp(&a.path)));
    Ok(out)
}

/// The most recently modified session in `dir` (for `--continue`).
pub fn latest_session(dir: &Path) -> Result<Option<PathBuf>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(JsonlError::io("list", dir, e)),
    };
    let mut best: Option<(SystemTime, PathBuf)> = None;
    for ent in rd.flatten() {
        let path = ent.path();
        let name = ent.file_name();
        let name = name.to_string_lossy();
        if !name.ends_with(".jsonl") || name.ends_with(".repaired.jsonl") {
            continue;
        }
        let Ok(m) = ent.metadata().and_then(|m| m.modified()) else {
            continue;
        };
        if best.as_ref().is_none_or(|(t, p)| (m, &path) > (*t, p)) {
            best = Some((m, path));
        }
    }
    Ok(best.map(|(_, p)| p))
}

fn summarize(path: &Path, buf: &mut [u8]) -> Result<SessionSummary> {
    let mut file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
    let meta = file
        .metadata()
        .map_err(|e| JsonlError::io("stat", path, e))?;
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs());
    let mut s = SessionSummary {
        path: path.to_path_buf(),
        id: None,
        created: None,
        modified,
        title: None,
        message_count: 0,
        bytes: meta.len(),
    };
    let needle = memmem::Finder::new(b"\"type\":\"message\"");
    let overlap = needle.needle().len() - 1;
    // `keep` bytes at the front of buf are the tail of the previous chunk (needle overlap).
    let mut keep = 0usize;
    let mut first = true;
    loop {
        let n =
            read_full(&mut file, &mut buf[keep..]).map_err(|e| JsonlError::io("read", path, e))?;
        if n == 0 {
            break;
        }
        let chunk = &buf[..keep + n];
        s.message_count += needle.find_iter(chunk).count();
        if first {
            first = false;
            summarize_prefix(&chunk[..chunk.len().min(LIST_PREFIX)], &mut s);
        }
        keep = overlap.min(chunk.len());
        let tail = chunk.len() - keep;
        buf.copy_within(tail..tail + keep, 0);
    }
    Ok(s)
}

/// Read until `buf` is full or EOF.
fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Header fields and the title from the first complete lines of `prefix`.
fn summarize_prefix(prefix: &[u8], s: &mut SessionSummary) {
    for (i, line) in prefix.split(|&b| b == b'\n').enumerate() {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            continue; // includes the cut-off last line of the prefix
        };
        if i == 0 && v.get("type").and_then(Value::as_str) == Some("session") {
            s.id = v.get("id").and_then(Value::as_str).map(str::to_owned);
            s.created = v
                .get("created")
                .or_else(|| v.get("timestamp"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            continue;
        }
        if let Some(t) = user_text(&v) {
            s.title = Some(make_title(&t));
            return;
        }
    }
}

/// The text of a user `message` record.
fn user_text(v: &Value) -> Option<String> {
    if v.get("type").and_then(Value::as_str) != Some("message") {
        return None;
    }
    let m = v.get("message")?;
    if m.get("role").and_then(Value::as_str) != Some("user") {
        return None;
    }
    match m.get("content")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|b| b.get("text"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    }
}

/// Collapse whitespace and cut to TITLE_CHARS chars with an ellipsis.
fn make_title(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= TITLE_CHARS {
        return collapsed;
    }
    let mut t: String = collapsed.chars().take(TITLE_CHARS - 1).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    #[test]
    fn scanner_handles_long_lines_and_unterminated_tail() {
        let long = "x".repeat(READ_BUF * 3 + 7);
        let data = format!("a\n{long}\n\nlast");
        let mut sc = LineScanner::new(Cursor::new(data.into_bytes()), 0);
        let mut got = Vec::new();
        while let Some(l) = sc.next_line().unwrap() {
            got.push((l.no, l.offset, l.bytes.len(), l.terminated));
        }
        let n = long.len();
        assert_eq!(
            got,
            vec![
                (1, 0, 1, true),
                (2, 2, n, true),
                (3, 3 + n as u64, 0, true),
                (4, 4 + n as u64, 4, false)
            ]
        );
    }

    #[test]
    fn rev_lines_yields_lines_backwards_across_blocks() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let mut text = String::new();
        let mut offs = Vec::new();
        for i in 0..5000 {
            offs.push(text.len() as u64);
            text.push_str(&format!("{i}:{}\n", "y".repeat(i % 300)));
        }
        std::fs::write(&p, &text).unwrap();
        let f = File::open(&p).unwrap();
        let mut r = RevLines::new(f, text.len() as u64).unwrap();
        for i in (0..5000).rev() {
            let (off, line) = r.prev().unwrap().unwrap();
            assert_eq!(off, offs[i]);
            assert!(line.starts_with(format!("{i}:").as_bytes()));
        }
        assert!(r.prev().unwrap().is_none());
    }

    #[test]
    fn read_all_is_the_same_for_any_chunk_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let mut text = String::new();
        for i in 0..200 {
            text.push_str(&format!(
                "{{\"i\":{i},\"pad\":\"{}\"}}\n",
                "p".repeat(i * 3)
            ));
            if i % 37 == 0 {
                text.push_str("garbage\n\n");
            }
        }
        text.push_str("{\"torn\":");
        std::fs::write(&p, &text).unwrap();
        let whole = read_all(&p).unwrap();
        assert_eq!(whole.records.len(), 200);
        assert_eq!(whole.bad_lines.len(), 7);
        assert_eq!(whole.bad_lines[6].kind, BadLineKind::TornLine);
        assert_eq!(whole.bytes, text.len() as u64);
        for chunk in [1, 7, 64, 1000] {
            let r = read_all_chunked(&p, chunk).unwrap();
            assert_eq!(r.records, whole.records, "chunk {chunk}");
            assert_eq!(r.record_lines, whole.record_lines);
            assert_eq!(r.bad_lines, whole.bad_lines);
            assert_eq!(
                (r.lines, r.blank_lines, r.bytes),
                (whole.lines, whole.blank_lines, whole.bytes)
            );
            assert!(!r.ends_with_newline);
        }
    }

    #[test]
    fn title_is_collapsed_and_cut() {
        assert_eq!(make_title("  fix\n the   bug "), "fix the bug");
        let t = make_title(&"é".repeat(200));
        assert_eq!(t.chars().count(), TITLE_CHARS);
        assert!(t.ends_with('…'));
    }
}
