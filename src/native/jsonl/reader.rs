//! Tolerant reading of session files.
//!
//! - [`read_all`]: the whole file, every line validated (UTF-8, the full JSON grammar, an
//!   object), in file order; bad lines are reported with their line number, offset and kind
//!   (`TornLine` = a cut-off prefix of a record, `MalformedJson` = other garbage), never
//!   dropped silently. Good records are spans of the mapped file with `type`, `id` and
//!   `parent_id` at hand; a `Value` tree is built only when asked for ([`ReadReport::value`]).
//!   The file is mapped, not copied, and validated in parallel: see [`super::scan`].
//! - [`RecordIter`]: the same per-line verdicts as a stream of `Value`s, one line at a time
//!   (memory: one read buffer), for consumers that want to stop early.
//! - [`read_from_latest_compaction`]: searches the mapped file backwards (memmem) for the
//!   latest valid `compaction` and for its first kept entry, then validates forward from
//!   there like `read_all`; with a recent compaction the rest of the file is never touched, so
//!   time and memory follow the kept context, not the file size. Without a compaction (the
//!   search then runs in parallel pieces) it replays the whole file after the header.
//! - [`list_sessions`]: header + first KBs for id/created/title, plus a raw-byte count of
//!   `"type":"message"` occurrences for the message count; no JSON parse of whole files.

use std::borrow::Cow;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use memchr::memmem;
use serde_json::Value;

use super::branch::{has_branches, Branch, Point, Tree};
use super::scan::{validate_lines, Record, SessionBytes};
use super::{JsonlError, Result};

/// Read buffer of the forward scanner: big enough to amortize syscalls, small enough for memory.
const READ_BUF: usize = 1 << 20;

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

/// Result of [`read_all`]: the good records in file order (the header included), as spans
/// of the file's bytes, and every bad line.
#[derive(Debug, Default)]
pub struct ReadReport {
    /// All good records, in file order; `line` is always Some.
    pub records: Vec<Record>,
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
    data: SessionBytes,
}

impl ReadReport {
    /// The JSON text of `record`.
    pub fn text(&self, record: &Record) -> &str {
        self.data.text(record)
    }

    /// `record` as a `Value` tree (cannot fail for records of this report).
    pub fn value(&self, record: &Record) -> Result<Value> {
        self.data.value(record)
    }

    /// Every record as a `Value` tree, in file order (costs what building them costs).
    pub fn values(&self) -> Result<Vec<Value>> {
        self.records.iter().map(|r| self.value(r)).collect()
    }

    /// The record's top-level `type`, when it is a string (no parse for plain strings).
    pub fn record_type(&self, record: &Record) -> Option<Cow<'_, str>> {
        self.data.record_type(record)
    }

    /// The record's top-level `id`, when it is a string.
    pub fn id(&self, record: &Record) -> Option<Cow<'_, str>> {
        self.data.id(record)
    }

    /// The record's top-level `parent_id`, when it is a string (None for null or absent).
    pub fn parent_id(&self, record: &Record) -> Option<Cow<'_, str>> {
        self.data.parent_id(record)
    }

    /// The file's bytes the records are spans of.
    pub fn data(&self) -> &SessionBytes {
        &self.data
    }
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

/// Read a whole session: every line validated, bad lines reported, good ones kept as spans.
///
/// The file is mapped (not copied) and its lines validated in parallel (see [`super::scan`]):
/// each good line is checked to parse as a JSON object exactly as `serde_json::Value` would
/// parse it, but no tree is built. Read a record with [`ReadReport::text`] or
/// [`ReadReport::value`]; `type`, `id` and `parent_id` are at hand without a parse.
pub fn read_all(path: &Path) -> Result<ReadReport> {
    let file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| JsonlError::io("stat", path, e))?
        .len();
    let bytes = SessionBytes::load(&file, path, len)?;
    let lines = validate_lines(&bytes, 0, true);
    Ok(ReadReport {
        records: lines.records,
        bad_lines: lines.bad_lines,
        lines: lines.lines,
        blank_lines: lines.blank_lines,
        bytes: bytes.len() as u64,
        ends_with_newline: bytes.last().is_none_or(|&b| b == b'\n'),
        data: bytes,
    })
}

/// Result of [`read_from_latest_compaction`].
#[derive(Debug, Default)]
pub struct ResumeReport {
    /// The header (first line) when it is a `session` record.
    pub header: Option<Value>,
    /// Records to replay, in file order: from the compaction's first kept entry (or the
    /// compaction itself) to the end; without a compaction, everything after the header.
    /// Spans of the file like [`ReadReport::records`] (`line` is None unless replay starts at
    /// the file's start); read them with [`ResumeReport::text`] or [`ResumeReport::value`].
    pub records: Vec<Record>,
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
    /// In a file with branches: the highest top-level `turn` of its `checkpoint` and `branch`
    /// records, on any branch (turns are numbered across branches: their snapshots are
    /// named by number).
    pub max_turn: Option<u64>,
    data: SessionBytes,
}

impl ResumeReport {
    /// The JSON text of `record`.
    pub fn text(&self, record: &Record) -> &str {
        self.data.text(record)
    }

    /// `record` as a `Value` tree (cannot fail for records of this report).
    pub fn value(&self, record: &Record) -> Result<Value> {
        self.data.value(record)
    }

    /// Every record to replay as a `Value` tree, in file order.
    pub fn values(&self) -> Result<Vec<Value>> {
        self.records.iter().map(|r| self.value(r)).collect()
    }

    /// The record's top-level `type`, when it is a string.
    pub fn record_type(&self, record: &Record) -> Option<Cow<'_, str>> {
        self.data.record_type(record)
    }
}

/// The lines of `bytes[floor..end]` that contain `needle`, last first, as (offset, line):
/// one backward substring search over the mapped bytes, no line splitting, no copies.
struct RevMatches<'a> {
    bytes: &'a [u8],
    floor: usize,
    end: usize,
    finder: memmem::FinderRev<'a>,
}

impl<'a> RevMatches<'a> {
    /// `floor` must be a line start; `end` a line start or `bytes.len()`.
    fn new(bytes: &'a [u8], floor: usize, end: usize, needle: &'a [u8]) -> Self {
        RevMatches {
            bytes,
            floor: floor.min(bytes.len()),
            end: end.min(bytes.len()),
            finder: memmem::FinderRev::new(needle),
        }
    }
}

impl<'a> Iterator for RevMatches<'a> {
    type Item = (u64, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let (bytes, floor) = (self.bytes, self.floor);
        let at = floor + self.finder.rfind(bytes.get(floor..self.end)?)?;
        let start = memchr::memrchr(b'\n', &bytes[floor..at]).map_or(floor, |i| floor + i + 1);
        let stop = memchr::memchr(b'\n', &bytes[at..self.end]).map_or(self.end, |i| at + i);
        self.end = start;
        Some((start as u64, &bytes[start..stop]))
    }
}

/// The compaction found by the backward scan.
struct FoundCompaction {
    offset: u64,
    first_kept: Option<String>,
}

/// Resume a session: header + the records from the latest valid compaction on.
///
/// Searches backwards from the end for the last line holding `"compaction"` that parses as a
/// `type = "compaction"` record with a `summary`; then, if it names `first_kept_entry_id`,
/// keeps searching back for the line whose top-level `id` is that (a byte search for
/// `"id":"<id>"` first); then validates forward from there to the end, as [`read_all`] does.
/// Without a compaction it replays everything after the header.
pub fn read_from_latest_compaction(path: &Path) -> Result<ResumeReport> {
    resume_at(path, None)
}

/// [`read_from_latest_compaction`] of the branch in use (see [`super::branch`]), or with
/// `at`, of the branch continuing from that point. When a branch record lies in the span to
/// replay (or `at` is given), the file is validated whole (a branch's records are spread
/// over it); otherwise as above.
pub fn resume_at(path: &Path, at: Option<&Point>) -> Result<ResumeReport> {
    let file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| JsonlError::io("stat", path, e))?
        .len();
    let mut report = ResumeReport {
        file_len: len,
        ..ResumeReport::default()
    };
    let bytes = SessionBytes::load(&file, path, len)?;
    let header_end = read_header(&bytes, &mut report);
    let floor = usize::try_from(header_end).unwrap_or(usize::MAX);
    let found = find_compaction(&bytes, floor, &mut report.notes);
    let start = match &found {
        None => header_end,
        Some(c) => match &c.first_kept {
            None => c.offset,
            Some(id) => match find_entry_by_id(&bytes, floor, c.offset, id) {
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
    let from = usize::try_from(start)
        .unwrap_or(usize::MAX)
        .min(bytes.len());
    // No branch record in the replayed span: it is all one run, the end of the branch in use
    // (what comes before is summarized by the compaction). Otherwise the branch is worked out
    // from the whole file.
    if at.is_some() || has_branches(&bytes[from..]) {
        return Ok(resume_branch(bytes, report, at));
    }
    report.start_offset = start;
    // Forward from `start`: validated in parallel like `read_all`, kept as spans.
    let lines = validate_lines(&bytes[from..], start, start == 0);
    let compaction_offset = found.as_ref().map(|c| c.offset);
    report.compaction_index =
        compaction_offset.and_then(|off| lines.records.iter().position(|r| r.offset == off));
    report.records = lines.records;
    report.bad_lines = lines.bad_lines;
    report.data = bytes;
    Ok(report)
}

/// The replay of one branch: its records from its latest compaction (or its first kept
/// entry) on.
fn resume_branch(
    bytes: SessionBytes,
    mut report: ResumeReport,
    at: Option<&Point>,
) -> ResumeReport {
    let lines = validate_lines(&bytes, 0, true);
    report.max_turn = lines
        .records
        .iter()
        .filter(|r| {
            matches!(
                bytes.record_type(r).as_deref(),
                Some("checkpoint" | "branch")
            )
        })
        .filter_map(|r| bytes.value(r).ok()?.get("turn")?.as_u64())
        .max();
    let records: Vec<Record> = {
        let tree = Tree::new(&bytes, &lines.records);
        let view = match at {
            Some(p) => tree.at(p),
            None => tree.current(),
        };
        view.records
            .iter()
            .map(|&i| lines.records[i])
            .filter(|r| bytes.record_type(r).as_deref() != Some("session"))
            .collect()
    };
    let compaction = records.iter().rposition(|r| {
        bytes.record_type(r).as_deref() == Some("compaction")
            && bytes
                .value(r)
                .is_ok_and(|v| v.get("summary").is_some_and(Value::is_string))
    });
    let start = compaction.map_or(0, |c| {
        let first_kept = bytes.value(&records[c]).ok().and_then(|v| {
            v.get("first_kept_entry_id")
                .and_then(Value::as_str)
                .map(str::to_string)
        });
        match first_kept {
            None => c,
            Some(id) => records[..c]
                .iter()
                .rposition(|r| bytes.id(r).as_deref() == Some(id.as_str()))
                .unwrap_or_else(|| {
                    report.notes.push(format!(
                        "first_kept_entry_id {id} not found before the compaction; replaying from the compaction"
                    ));
                    c
                }),
        }
    });
    report.compaction_index = compaction.map(|c| c - start);
    report.start_offset = records.get(start).map_or(report.file_len, |r| r.offset);
    report.records = records[start..].to_vec();
    report.bad_lines = lines.bad_lines;
    report.data = bytes;
    report
}

/// Read the first line as the header; returns the offset just past it (0 if not a header).
fn read_header(bytes: &[u8], report: &mut ResumeReport) -> u64 {
    if bytes.is_empty() {
        return 0;
    }
    let (line, end) = match memchr::memchr(b'\n', bytes) {
        Some(i) => (&bytes[..i], i + 1),
        None => (bytes, bytes.len()),
    };
    let raw = RawLine {
        no: 1,
        offset: 0,
        bytes: line,
        terminated: end > line.len(),
    };
    match parse_line(&raw, true) {
        Ok(Some(v)) if v.get("type").and_then(Value::as_str) == Some("session") => {
            report.header = Some(v);
            end as u64
        }
        Ok(_) => {
            report
                .notes
                .push("line 1 is not a session header; replaying from the file start".into());
            0
        }
        Err(bad) => {
            report
                .notes
                .push(format!("line 1 (header) is unreadable: {}", bad.message));
            end as u64
        }
    }
}

/// The last line at or after `floor` holding `"compaction"` that is a valid compaction.
fn find_compaction(bytes: &[u8], floor: usize, notes: &mut Vec<String>) -> Option<FoundCompaction> {
    let needle = b"\"compaction\"";
    let end = last_match_end(bytes, floor, needle);
    for (offset, line) in RevMatches::new(bytes, floor, end, needle) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
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
        return Some(FoundCompaction { offset, first_kept });
    }
    None
}

/// Bytes searched from the end by one thread before the rest is searched in parallel.
const TAIL_SEARCH: usize = 8 << 20;

/// An end for [`RevMatches`] with no match of `needle` in `bytes[end..]`: just past the line of
/// the last match, or `floor` when there is none. The last 8 MB are searched first (a recent
/// compaction is found there); a file without a match is then searched in parallel pieces,
/// so a file that has none costs a fraction of a serial pass.
fn last_match_end(bytes: &[u8], floor: usize, needle: &[u8]) -> usize {
    let floor = floor.min(bytes.len());
    let tail = bytes.len().saturating_sub(TAIL_SEARCH).max(floor);
    let line_end =
        |at: usize| memchr::memchr(b'\n', &bytes[at..]).map_or(bytes.len(), |i| at + i + 1);
    let finder = memmem::FinderRev::new(needle);
    if let Some(at) = finder.rfind(&bytes[tail..]) {
        return line_end(tail + at);
    }
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    // Pieces overlap by the needle's length so no match is cut in two.
    let piece = (tail - floor).div_ceil(threads).max(1);
    let hit = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let a = floor + k * piece;
                let b = (a + piece + needle.len())
                    .min(tail + needle.len())
                    .min(bytes.len());
                let finder = &finder;
                s.spawn(move || {
                    (a < b)
                        .then(|| finder.rfind(&bytes[a..b]).map(|i| a + i))
                        .flatten()
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .max()
    });
    hit.map_or(floor, line_end)
}

/// The offset of the last line in `[floor, before)` whose top-level `id` is `id`.
fn find_entry_by_id(bytes: &[u8], floor: usize, before: u64, id: &str) -> Option<u64> {
    let quoted = serde_json::to_string(id).unwrap_or_default();
    let needle = format!("\"id\":{quoted}");
    let end = usize::try_from(before).unwrap_or(usize::MAX);
    RevMatches::new(bytes, floor, end, needle.as_bytes())
        .find(|(_, line)| {
            serde_json::from_slice::<Value>(line)
                .is_ok_and(|v| v.get("id").and_then(Value::as_str) == Some(id))
        })
        .map(|(offset, _)| offset)
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
    /// The file's other branches than the one in use (see [`super::branch`]).
    pub branches: Vec<Branch>,
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
        branches: Vec::new(),
    };
    let branch_needle = memmem::Finder::new(super::branch::NEEDLE);
    let mut branched = false;
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
        branched = branched || branch_needle.find(chunk).is_some();
        if first {
            first = false;
            summarize_prefix(&chunk[..chunk.len().min(LIST_PREFIX)], &mut s);
        }
        keep = overlap.min(chunk.len());
        let tail = chunk.len() - keep;
        buf.copy_within(tail..tail + keep, 0);
    }
    if branched {
        // Only files with branches are read whole: the count is of the branch in use.
        let report = read_all(path)?;
        let tree = Tree::new(&report.data, &report.records);
        s.message_count = tree
            .current()
            .records
            .iter()
            .filter(|&&i| report.record_type(&report.records[i]).as_deref() == Some("message"))
            .count();
        s.branches = tree.others();
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
    fn rev_matches_yields_matching_lines_last_first() {
        let text = "head x\nx one\nnone\nxx two\n\nthree x\nlast";
        let got: Vec<(u64, &[u8])> =
            RevMatches::new(text.as_bytes(), 7, text.len(), b"x").collect();
        let want: Vec<(u64, &[u8])> = vec![
            (text.find("three").unwrap() as u64, b"three x"),
            (text.find("xx").unwrap() as u64, b"xx two"),
            (7, b"x one"),
        ];
        assert_eq!(got, want, "one entry per line, never below the floor");
        let end = text.find("xx").unwrap();
        let got: Vec<u64> = RevMatches::new(text.as_bytes(), 0, end, b"x")
            .map(|(o, _)| o)
            .collect();
        assert_eq!(got, vec![7, 0]);
        assert_eq!(RevMatches::new(b"", 0, 0, b"x").count(), 0);
    }

    #[test]
    fn last_match_end_is_past_the_line_of_the_last_match() {
        let mut text = String::from("head\n");
        let mut want = None;
        for i in 0..(3 * TAIL_SEARCH / 100) {
            if i == 7 || i == 1000 || i == 1001 {
                text.push_str("a \"needle\" here\n");
                want = Some(text.len());
            } else {
                text.push_str(&format!("{i:0>98}\n"));
            }
        }
        let b = text.as_bytes();
        assert!(
            b.len() > 2 * TAIL_SEARCH,
            "the parallel search is exercised"
        );
        assert_eq!(last_match_end(b, 5, b"\"needle\""), want.unwrap());
        assert_eq!(last_match_end(b, 5, b"\"absent\""), 5);
        // A match in the tail, and a match cut by a piece boundary.
        let tail = b.len() - TAIL_SEARCH;
        let mut places = vec![b.len() - 50, tail - 3, 5];
        for threads in 2..=4 {
            let piece = (tail - 5).div_ceil(threads);
            places.extend((1..threads).map(|k| 5 + k * piece - 3));
        }
        for at in places {
            let mut t = b.to_vec();
            t[at..at + 8].copy_from_slice(b"\"absent\"");
            let got = last_match_end(&t, 5, b"\"absent\"");
            let end = t[at..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(t.len(), |i| at + i + 1);
            assert_eq!(got, end, "match at {at}");
        }
    }

    #[test]
    fn read_all_agrees_with_the_streaming_iterator() {
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
        assert!(!whole.ends_with_newline);
        let mut it = RecordIter::open(&p).unwrap();
        let (mut records, mut bad) = (Vec::new(), Vec::new());
        for e in it.by_ref() {
            match e.unwrap() {
                Entry::Record {
                    line,
                    offset,
                    value,
                } => records.push((line, offset, value)),
                Entry::Bad(b) => bad.push(b),
            }
        }
        let got: Vec<_> = whole
            .records
            .iter()
            .map(|r| (r.line, r.offset, whole.value(r).unwrap()))
            .collect();
        assert_eq!(got, records);
        assert_eq!(whole.bad_lines, bad);
        assert_eq!(
            (whole.lines, whole.blank_lines),
            (it.lines(), it.blank_lines())
        );
    }

    #[test]
    fn empty_file_reads_as_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("e.jsonl");
        std::fs::write(&p, "").unwrap();
        let r = read_all(&p).unwrap();
        assert!(r.records.is_empty() && r.bad_lines.is_empty());
        assert_eq!((r.lines, r.bytes), (0, 0));
        assert!(r.ends_with_newline);
        let res = read_from_latest_compaction(&p).unwrap();
        assert!(res.records.is_empty() && res.header.is_none());
    }

    #[test]
    fn title_is_collapsed_and_cut() {
        assert_eq!(make_title("  fix\n the   bug "), "fix the bug");
        let t = make_title(&"é".repeat(200));
        assert_eq!(t.chars().count(), TITLE_CHARS);
        assert!(t.ends_with('…'));
    }
}
