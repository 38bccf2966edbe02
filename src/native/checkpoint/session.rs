//! Checkpoint records in a session file, and conversation branches.
//!
//! A turn's record `{"type":"checkpoint","id","turn","commit","files","skipped",...}` is
//! appended more than once with the same `id`: when the turn starts (just before its user
//! message: where the conversation before that turn ends), when the snapshot is taken
//! (`commit`), and when the turn ends (`files`, `end`). Readers merge them by `id`.
//!
//! Restoring the conversation to before turn N writes a new session file (a branch) with
//! every record that comes before turn N's first record; the original is left as it is, so
//! the old branch stays reachable with `/resume`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::{CheckpointError, Result};
use crate::native::jsonl;

/// One user turn as its checkpoint records tell it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Turn {
    pub turn: u64,
    pub id: String,
    /// The snapshot taken before the turn's first call that could change files (None when the
    /// turn changed nothing).
    pub commit: Option<String>,
    /// The snapshot taken when the turn ended.
    pub end: Option<String>,
    pub files: Vec<String>,
    pub skipped: Vec<String>,
    pub prompt: Option<String>,
    /// The workspace the snapshots are of.
    pub workspace: Option<String>,
    /// The shadow repository's name for the session (its refs and index).
    pub shadow_session: Option<String>,
    /// Whether the turn finished (an `end` record was written).
    pub ended: bool,
}

/// What a session file says about its turns.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct SessionTurns {
    pub path: PathBuf,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    /// Oldest first.
    pub turns: Vec<Turn>,
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v.and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    })
}

fn merge(t: &mut Turn, rec: &Value) {
    let s = |k: &str| rec.get(k).and_then(Value::as_str).map(str::to_string);
    if let Some(n) = rec.get("turn").and_then(Value::as_u64) {
        t.turn = n;
    }
    if let Some(c) = s("commit") {
        t.commit = Some(c);
    }
    if let Some(c) = s("end") {
        t.end = Some(c);
        t.ended = true;
    }
    if let Some(f) = strings(rec.get("files")) {
        if rec.get("end").is_some() || !f.is_empty() {
            t.files = f;
        }
    }
    if let Some(f) = strings(rec.get("skipped")) {
        for p in f {
            if !t.skipped.contains(&p) {
                t.skipped.push(p);
            }
        }
    }
    for (k, slot) in [
        ("prompt", &mut t.prompt),
        ("workspace", &mut t.workspace),
        ("shadow_session", &mut t.shadow_session),
    ] {
        if let Some(v) = s(k) {
            *slot = Some(v);
        }
    }
}

/// The turns recorded in a session file.
pub fn turns(path: &Path) -> Result<SessionTurns> {
    let report = jsonl::read_all(path).map_err(|e| CheckpointError::Invalid(e.to_string()))?;
    let mut out = SessionTurns {
        path: path.to_path_buf(),
        ..Default::default()
    };
    for r in &report.records {
        match report.record_type(r).as_deref() {
            Some("session") => {
                if let Ok(v) = report.value(r) {
                    out.session_id = v.get("id").and_then(Value::as_str).map(str::to_string);
                    out.cwd = v.get("cwd").and_then(Value::as_str).map(str::to_string);
                }
            }
            Some("checkpoint") => {
                let Ok(v) = report.value(r) else { continue };
                let Some(id) = v.get("id").and_then(Value::as_str) else {
                    continue;
                };
                match out.turns.iter_mut().find(|t| t.id == id) {
                    Some(t) => merge(t, &v),
                    None => {
                        let mut t = Turn {
                            id: id.to_string(),
                            ..Default::default()
                        };
                        merge(&mut t, &v);
                        out.turns.push(t);
                    }
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

impl SessionTurns {
    pub fn get(&self, turn: u64) -> Option<&Turn> {
        self.turns.iter().find(|t| t.turn == turn)
    }

    /// The snapshot that holds the files as they were just before `turn`: its own, else
    /// (it changed nothing) the next later turn's; None when no turn since changed files.
    pub fn commit_before(&self, turn: u64) -> Option<&Turn> {
        self.turns
            .iter()
            .filter(|t| t.turn >= turn && t.commit.is_some())
            .min_by_key(|t| t.turn)
    }

    /// The last tree fen recorded: the end of the latest turn that took snapshots.
    pub fn baseline(&self) -> Option<&str> {
        self.turns
            .iter()
            .filter(|t| t.end.is_some())
            .max_by_key(|t| t.turn)
            .and_then(|t| t.end.as_deref())
    }

    /// Files changed from `turn` on (the union of the turns' `files`).
    pub fn files_since(&self, turn: u64) -> Vec<String> {
        let mut all: Vec<String> = self
            .turns
            .iter()
            .filter(|t| t.turn >= turn)
            .flat_map(|t| t.files.iter().cloned())
            .collect();
        all.sort();
        all.dedup();
        all
    }
}

/// A new session file holding the conversation from before `turn` of `path` (a branch); its
/// header names the session it came from. Returns the new file's path and id.
pub fn branch(path: &Path, turn: u64) -> Result<(PathBuf, String)> {
    let report = jsonl::read_all(path).map_err(|e| CheckpointError::Invalid(e.to_string()))?;
    let mut cut = None;
    let mut header = None;
    for (i, r) in report.records.iter().enumerate() {
        match report.record_type(r).as_deref() {
            Some("session") if header.is_none() => header = report.value(r).ok(),
            Some("checkpoint") => {
                let Ok(v) = report.value(r) else { continue };
                if v.get("turn").and_then(Value::as_u64) == Some(turn) {
                    cut = Some(i);
                    break;
                }
            }
            _ => {}
        }
    }
    let Some(cut) = cut else {
        return Err(CheckpointError::Invalid(format!(
            "turn {turn} is not in {}",
            path.display()
        )));
    };
    let header = header.unwrap_or(Value::Null);
    let cwd = header
        .get("cwd")
        .and_then(Value::as_str)
        .unwrap_or(".")
        .to_string();
    let id = jsonl::new_session_id();
    let dir = path.parent().unwrap_or(Path::new("."));
    let new_path = jsonl::new_session_path(dir, SystemTime::now(), id);
    let mut h = jsonl::header_record(
        &id.to_string(),
        Path::new(&cwd),
        SystemTime::now(),
        env!("CARGO_PKG_VERSION"),
    );
    if let Some(obj) = h.as_object_mut() {
        obj.insert(
            "branch_of".into(),
            header.get("id").cloned().unwrap_or(Value::Null),
        );
        obj.insert("branch_turn".into(), Value::from(turn));
    }
    let mut w = jsonl::SessionWriter::create(&new_path, &h)
        .map_err(|e| CheckpointError::Invalid(e.to_string()))?;
    for r in &report.records[..cut] {
        if report.record_type(r).as_deref() == Some("session") {
            continue;
        }
        w.append_raw(report.text(r).as_bytes())
            .map_err(|e| CheckpointError::Invalid(e.to_string()))?;
    }
    w.sync()
        .map_err(|e| CheckpointError::Invalid(e.to_string()))?;
    Ok((new_path, id.to_string()))
}
