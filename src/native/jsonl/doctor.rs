//! Session integrity checks (`doctor`) and a non-destructive `repair`.
//!
//! Both run the same single pass over the file ([`Walker`]): it pairs tool calls with tool
//! results group by group (an assistant message opens a group; the next user or assistant
//! message closes it), and for each line decides keep / change / drop / insert. `doctor`
//! keeps only the issues; `repair` also writes the decided output beside the original
//! (`<name>.repaired.jsonl`, via a temp file + rename) and a report (`<name>.doctor.json`).
//! Unchanged lines are copied byte for byte.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::reader::{parse_line, BadLineKind, LineScanner};
use super::{rfc3339_utc, JsonlError, Result};

/// Tool result text blocks larger than this are `oversized_tool_result`.
pub const MAX_TOOL_RESULT_BYTES: usize = 100_000;
/// Text of a synthesized result for a call that never got one.
pub const MISSING_RESULT_TEXT: &str = "[session doctor: missing tool result replaced]";

/// What kind of problem an issue is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IssueCode {
    /// A line that is not a JSON object.
    MalformedJson,
    /// A cut-off line (crash mid-write).
    TornLine,
    /// A tool call with no result before the next user/assistant message (or the end).
    MissingToolResult,
    /// A tool result whose call id is not a call of its assistant message.
    OrphanToolResult,
    /// A call id used by two tool calls, or a call that got more than one result.
    DuplicateToolCall,
    /// Tool result text with control bytes (< 0x20 except tab/newline/CR, or 0x7f).
    UnsanitizedToolResult,
    /// A tool result text block over 100,000 bytes.
    OversizedToolResult,
    /// An assistant message that ended with `stop_reason = "error"` (warning only).
    AssistantError,
    /// A session header that is not on line 1, or a file whose line 1 is not a header.
    OrphanedHeader,
}

impl IssueCode {
    /// The snake_case code as written in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueCode::MalformedJson => "malformed_json",
            IssueCode::TornLine => "torn_line",
            IssueCode::MissingToolResult => "missing_tool_result",
            IssueCode::OrphanToolResult => "orphan_tool_result",
            IssueCode::DuplicateToolCall => "duplicate_tool_call",
            IssueCode::UnsanitizedToolResult => "unsanitized_tool_result",
            IssueCode::OversizedToolResult => "oversized_tool_result",
            IssueCode::AssistantError => "assistant_error",
            IssueCode::OrphanedHeader => "orphaned_header",
        }
    }
}

/// How bad an issue is: errors make a report not ok; warnings are informational.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Breaks replay or a provider request.
    Error,
    /// Worth knowing, harmless to replay.
    Warning,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DoctorIssue {
    /// The issue code.
    pub code: IssueCode,
    /// Error or warning.
    pub severity: Severity,
    /// 1-based line the issue is on (for a missing result: the assistant message's line).
    pub line: usize,
    /// Human-readable detail.
    pub message: String,
}

/// Result of [`doctor`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DoctorReport {
    /// The checked file.
    pub path: PathBuf,
    /// True when there is no error-severity issue.
    pub ok: bool,
    /// All findings in line order of discovery.
    pub issues: Vec<DoctorIssue>,
    /// Lines in the file.
    pub lines: usize,
    /// Parsed records.
    pub records: usize,
}

/// One change made by [`repair`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RepairChange {
    /// The issue that caused it.
    pub code: IssueCode,
    /// Source line (1-based).
    pub line: usize,
    /// What was done.
    pub action: String,
}

/// Result of [`repair`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RepairReport {
    /// The untouched original.
    pub original: PathBuf,
    /// The repaired copy (`<name>.repaired.jsonl`).
    pub repaired_path: PathBuf,
    /// This report as JSON (`<name>.doctor.json`).
    pub report_path: PathBuf,
    /// The doctor findings on the original.
    pub doctor: DoctorReport,
    /// What was changed, in order.
    pub changes: Vec<RepairChange>,
    /// Records in the original / in the copy.
    pub records_in: usize,
    /// Records written to the copy.
    pub records_out: usize,
}

/// Check a session file; never modifies it.
pub fn doctor(path: &Path) -> Result<DoctorReport> {
    let mut sink = std::io::sink();
    let w = walk(path, &mut sink)?;
    Ok(w.into_report(path))
}

/// Write a repaired copy beside `path` plus a JSON report; the original is never edited.
pub fn repair(path: &Path) -> Result<RepairReport> {
    let (repaired_path, report_path) = repair_paths(path);
    let tmp = {
        let mut s = repaired_path.as_os_str().to_owned();
        s.push(format!(".tmp.{}", std::process::id()));
        PathBuf::from(s)
    };
    let out = File::create(&tmp).map_err(|e| JsonlError::io("create", &tmp, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let walked = walk(path, &mut out).and_then(|w| {
        let out = out;
        let file = out
            .into_inner()
            .map_err(|e| JsonlError::io("write", &tmp, e.into_error()))?;
        file.sync_all()
            .map_err(|e| JsonlError::io("sync", &tmp, e))?;
        Ok(w)
    });
    let w = match walked {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    std::fs::rename(&tmp, &repaired_path)
        .map_err(|e| JsonlError::io("rename into", &repaired_path, e))?;
    let records_in = w.records_in;
    let records_out = w.records_out;
    let changes = w.changes.clone();
    let report = RepairReport {
        original: path.to_path_buf(),
        repaired_path,
        report_path: report_path.clone(),
        doctor: w.into_report(path),
        changes,
        records_in,
        records_out,
    };
    let body =
        serde_json::to_vec_pretty(&report).map_err(|e| JsonlError::InvalidRecord(e.to_string()))?;
    std::fs::write(&report_path, body).map_err(|e| JsonlError::io("write", &report_path, e))?;
    Ok(report)
}

/// `<dir>/<stem>.repaired.jsonl` and `<dir>/<stem>.doctor.json` for `<dir>/<stem>.jsonl`.
pub fn repair_paths(path: &Path) -> (PathBuf, PathBuf) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
    (
        path.with_file_name(format!("{stem}.repaired.jsonl")),
        path.with_file_name(format!("{stem}.doctor.json")),
    )
}

/// What a walk found and did (the walker minus its output).
struct Outcome {
    issues: Vec<DoctorIssue>,
    changes: Vec<RepairChange>,
    lines: usize,
    records_in: usize,
    records_out: usize,
}

impl Outcome {
    fn into_report(self, path: &Path) -> DoctorReport {
        DoctorReport {
            path: path.to_path_buf(),
            ok: !self.issues.iter().any(|i| i.severity == Severity::Error),
            issues: self.issues,
            lines: self.lines,
            records: self.records_in,
        }
    }
}

fn walk(path: &Path, out: &mut dyn Write) -> Result<Outcome> {
    let file = File::open(path).map_err(|e| JsonlError::io("open", path, e))?;
    let mut sc = LineScanner::new(file, 0);
    let mut w = Walker::new(out, path);
    while let Some(raw) = sc
        .next_line()
        .map_err(|e| JsonlError::io("read", path, e))?
    {
        w.lines = raw.no;
        match parse_line(&raw, true) {
            Ok(None) => {}
            Ok(Some(v)) => w.record(raw.no, raw.bytes, v)?,
            Err(bad) => {
                let code = match bad.kind {
                    BadLineKind::TornLine => IssueCode::TornLine,
                    BadLineKind::MalformedJson => IssueCode::MalformedJson,
                };
                w.issue(code, raw.no, bad.message);
                w.change(code, raw.no, "dropped the line");
            }
        }
    }
    w.close_group()?;
    Ok(Outcome {
        issues: w.issues,
        changes: w.changes,
        lines: w.lines,
        records_in: w.records_in,
        records_out: w.records_out,
    })
}

/// The open tool-call group of the latest assistant message.
struct Group {
    line: usize,
    timestamp: Option<Value>,
    /// (call id, tool name) not yet answered, in call order.
    pending: Vec<(String, String)>,
}

/// The single pass shared by doctor and repair.
struct Walker<'o> {
    out: &'o mut dyn Write,
    path: &'o Path,
    issues: Vec<DoctorIssue>,
    changes: Vec<RepairChange>,
    lines: usize,
    records_in: usize,
    records_out: usize,
    group: Option<Group>,
    calls_seen: HashSet<String>,
    answered: HashSet<String>,
    /// Dropped or superseded ids -> the id later children should point to instead.
    reparent: HashMap<String, Value>,
    last_id: Option<Value>,
}

impl<'o> Walker<'o> {
    fn new(out: &'o mut dyn Write, path: &'o Path) -> Self {
        Walker {
            out,
            path,
            issues: Vec::new(),
            changes: Vec::new(),
            lines: 0,
            records_in: 0,
            records_out: 0,
            group: None,
            calls_seen: HashSet::new(),
            answered: HashSet::new(),
            reparent: HashMap::new(),
            last_id: None,
        }
    }

    fn issue(&mut self, code: IssueCode, line: usize, message: impl Into<String>) {
        let severity = match code {
            IssueCode::AssistantError => Severity::Warning,
            _ => Severity::Error,
        };
        self.issues.push(DoctorIssue {
            code,
            severity,
            line,
            message: message.into(),
        });
    }

    fn change(&mut self, code: IssueCode, line: usize, action: impl Into<String>) {
        self.changes.push(RepairChange {
            code,
            line,
            action: action.into(),
        });
    }

    fn record(&mut self, line: usize, raw: &[u8], mut v: Value) -> Result<()> {
        self.records_in += 1;
        let first_record = self.records_in == 1;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        if kind == "session" {
            if first_record {
                return self.emit(raw, None);
            }
            self.issue(
                IssueCode::OrphanedHeader,
                line,
                "a second session header in the middle of the file",
            );
            self.change(IssueCode::OrphanedHeader, line, "dropped the extra header");
            return Ok(());
        }
        if first_record {
            // Reported, not repaired: inventing a header would invent an id and a cwd.
            self.issues.push(DoctorIssue {
                code: IssueCode::OrphanedHeader,
                severity: Severity::Warning,
                line,
                message: "line 1 is not a session header".into(),
            });
        }
        if kind != "message" {
            return self.emit_checked_parent(raw, v);
        }
        let role = v
            .pointer("/message/role")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        match role.as_str() {
            "tool-result" => self.tool_result(line, raw, v),
            _ => {
                self.close_group()?;
                let changed = if role == "assistant" {
                    self.assistant(line, &mut v)
                } else {
                    false
                };
                self.emit_maybe_changed(raw, v, changed)
            }
        }
    }

    /// Register an assistant message's calls; true if its content was changed.
    fn assistant(&mut self, line: usize, v: &mut Value) -> bool {
        if v.pointer("/message/stop_reason").and_then(Value::as_str) == Some("error") {
            self.issue(
                IssueCode::AssistantError,
                line,
                "assistant message ended with stop_reason \"error\" (kept; excluded from context at replay)",
            );
        }
        let mut group = Group {
            line,
            timestamp: v.get("timestamp").cloned(),
            pending: Vec::new(),
        };
        let mut changed = false;
        if let Some(Value::Array(blocks)) = v.pointer_mut("/message/content") {
            let mut keep = Vec::with_capacity(blocks.len());
            for b in blocks.drain(..) {
                if b.get("type").and_then(Value::as_str) != Some("tool-call") {
                    keep.push(b);
                    continue;
                }
                let id = b
                    .get("id")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let name = b
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if !self.calls_seen.insert(id.clone()) {
                    self.issues.push(DoctorIssue {
                        code: IssueCode::DuplicateToolCall,
                        severity: Severity::Error,
                        line,
                        message: format!("tool call id {id:?} was already used by an earlier call"),
                    });
                    self.change(
                        IssueCode::DuplicateToolCall,
                        line,
                        format!("removed the repeated tool call {id:?}; its results are dropped as extras"),
                    );
                    changed = true;
                    continue;
                }
                group.pending.push((id, name));
                keep.push(b);
            }
            *blocks = keep;
        }
        self.group = Some(group);
        changed
    }

    fn tool_result(&mut self, line: usize, raw: &[u8], mut v: Value) -> Result<()> {
        let id = v
            .pointer("/message/tool_call_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let pending_pos = self
            .group
            .as_ref()
            .and_then(|g| g.pending.iter().position(|(c, _)| *c == id));
        if let (Some(pos), Some(g)) = (pending_pos, self.group.as_mut()) {
            g.pending.remove(pos);
            self.answered.insert(id);
            let changed = self.check_result_text(line, &mut v);
            return self.emit_maybe_changed(raw, v, changed);
        }
        let (code, what) = if self.answered.contains(&id) {
            (
                IssueCode::DuplicateToolCall,
                "a second result for tool call",
            )
        } else {
            (
                IssueCode::OrphanToolResult,
                "a result for no pending tool call",
            )
        };
        self.issue(code, line, format!("{what} {id:?}"));
        self.change(code, line, "dropped the tool result");
        self.drop_record(&v);
        Ok(())
    }

    /// Sanitize control bytes and cut oversized text blocks; true if anything changed.
    fn check_result_text(&mut self, line: usize, v: &mut Value) -> bool {
        let mut changed = false;
        let mut found = Vec::new();
        let Some(content) = v.pointer_mut("/message/content") else {
            return false;
        };
        let texts: Vec<&mut String> = match content {
            Value::String(s) => vec![s],
            Value::Array(blocks) => blocks
                .iter_mut()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| match b.get_mut("text") {
                    Some(Value::String(s)) => Some(s),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        for text in texts {
            let bad = text.chars().filter(|&c| is_unsafe_char(c)).count();
            if bad > 0 {
                *text = sanitize_text(text);
                found.push((
                    IssueCode::UnsanitizedToolResult,
                    format!("{bad} control character(s) in tool result text"),
                    "escaped control characters as \\xNN".to_string(),
                ));
                changed = true;
            }
            if text.len() > MAX_TOOL_RESULT_BYTES {
                let before = text.len();
                *text = cut_text(text);
                found.push((
                    IssueCode::OversizedToolResult,
                    format!(
                        "tool result text block of {before} bytes (limit {MAX_TOOL_RESULT_BYTES})"
                    ),
                    format!("cut from {before} to {} bytes with a marker", text.len()),
                ));
                changed = true;
            }
        }
        for (code, msg, action) in found {
            self.issue(code, line, msg);
            self.change(code, line, action);
        }
        changed
    }

    /// End the open group: every call still pending gets a synthesized error result.
    fn close_group(&mut self) -> Result<()> {
        let Some(group) = self.group.take() else {
            return Ok(());
        };
        for (id, name) in group.pending {
            self.issue(
                IssueCode::MissingToolResult,
                group.line,
                format!("tool call {id:?} ({name}) has no result"),
            );
            self.change(
                IssueCode::MissingToolResult,
                group.line,
                format!("inserted an error result for {id:?} after its assistant message"),
            );
            self.answered.insert(id.clone());
            let new_id = Value::String(super::new_session_id().hyphenated().to_string());
            let ts = group
                .timestamp
                .clone()
                .unwrap_or_else(|| Value::String(rfc3339_utc(std::time::SystemTime::now())));
            let rec = json!({
                "type": "message",
                "id": new_id,
                "parent_id": self.last_id.clone().unwrap_or(Value::Null),
                "timestamp": ts,
                "message": {
                    "role": "tool-result",
                    "tool_call_id": id,
                    "tool_name": name,
                    "content": [{"type": "text", "text": MISSING_RESULT_TEXT}],
                    "is_error": true,
                },
            });
            // Children of the entry we inserted after now hang below the inserted one.
            if let Some(Value::String(prev)) = &self.last_id {
                self.reparent.insert(prev.clone(), new_id.clone());
            }
            self.write_value(&rec)?;
            self.last_id = Some(new_id);
        }
        Ok(())
    }

    /// A dropped record's children point to its parent instead.
    fn drop_record(&mut self, v: &Value) {
        if let Some(Value::String(id)) = v.get("id") {
            let parent = v.get("parent_id").cloned().unwrap_or(Value::Null);
            let parent = self.resolve(parent);
            self.reparent.insert(id.clone(), parent);
        }
    }

    fn resolve(&self, mut parent: Value) -> Value {
        // Bounded: each hop follows an id that was dropped or superseded earlier.
        for _ in 0..self.reparent.len() + 1 {
            match &parent {
                Value::String(p) => match self.reparent.get(p) {
                    Some(next) if next != &parent => parent = next.clone(),
                    _ => break,
                },
                _ => break,
            }
        }
        parent
    }

    fn emit_maybe_changed(&mut self, raw: &[u8], v: Value, changed: bool) -> Result<()> {
        if changed {
            self.emit(raw, Some(v))
        } else {
            self.emit_checked_parent(raw, v)
        }
    }

    /// Emit unchanged bytes unless the parent must be re-pointed.
    fn emit_checked_parent(&mut self, raw: &[u8], v: Value) -> Result<()> {
        let needs =
            matches!(v.get("parent_id"), Some(Value::String(p)) if self.reparent.contains_key(p));
        if needs {
            self.emit(raw, Some(v))
        } else {
            self.note_id(&v);
            self.records_out += 1;
            self.write_raw(raw)
        }
    }

    /// Emit `v` re-serialized (with its parent fixed), or `raw` when `v` is None.
    fn emit(&mut self, raw: &[u8], v: Option<Value>) -> Result<()> {
        let Some(mut v) = v else {
            self.records_out += 1;
            return self.write_raw(raw);
        };
        if let Some(p) = v.get("parent_id").cloned() {
            let fixed = self.resolve(p.clone());
            if fixed != p {
                if let Some(slot) = v.get_mut("parent_id") {
                    *slot = fixed;
                }
            }
        }
        self.note_id(&v);
        self.write_value(&v)
    }

    fn note_id(&mut self, v: &Value) {
        if let Some(id @ Value::String(_)) = v.get("id") {
            self.last_id = Some(id.clone());
        }
    }

    fn write_value(&mut self, v: &Value) -> Result<()> {
        self.records_out += 1;
        let mut line =
            serde_json::to_vec(v).map_err(|e| JsonlError::InvalidRecord(e.to_string()))?;
        line.push(b'\n');
        self.out
            .write_all(&line)
            .map_err(|e| JsonlError::io("write repaired copy of", self.path, e))
    }

    fn write_raw(&mut self, raw: &[u8]) -> Result<()> {
        self.out
            .write_all(raw)
            .and_then(|_| self.out.write_all(b"\n"))
            .map_err(|e| JsonlError::io("write repaired copy of", self.path, e))
    }
}

/// Control characters a terminal or provider should never receive raw.
fn is_unsafe_char(c: char) -> bool {
    (c < '\u{20}' && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{7f}'
}

/// Replace unsafe control characters with a visible `\xNN`.
fn sanitize_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_unsafe_char(c) {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// Cut to at most MAX_TOOL_RESULT_BYTES (marker included) on a char boundary.
fn cut_text(text: &str) -> String {
    let marker_room = 96;
    let mut keep = MAX_TOOL_RESULT_BYTES - marker_room;
    while !text.is_char_boundary(keep) {
        keep -= 1;
    }
    format!(
        "{}\n[session doctor: tool result cut from {} to {} bytes]",
        &text[..keep],
        text.len(),
        keep
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_and_cut() {
        assert_eq!(sanitize_text("a\u{0}b\tc\u{7f}\n"), "a\\x00b\tc\\x7f\n");
        let big = "é".repeat(60_000);
        let cut = cut_text(&big);
        assert!(cut.len() <= MAX_TOOL_RESULT_BYTES);
        assert!(cut.contains("[session doctor: tool result cut from 120000 to"));
    }

    #[test]
    fn repair_paths_sit_beside_original() {
        let (r, d) = repair_paths(Path::new("/s/x.jsonl"));
        assert_eq!(r, PathBuf::from("/s/x.repaired.jsonl"));
        assert_eq!(d, PathBuf::from("/s/x.doctor.json"));
    }
}
