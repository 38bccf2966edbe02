//! Checkpoint records in a session file, and conversation branches.
//!
//! A turn's record `{"type":"checkpoint","id","turn","commit","files","skipped",...}` is
//! appended more than once with the same `id`: when the turn starts (just before its user
//! message: where the conversation before that turn ends), when the snapshot is taken
//! (`commit`), and when the turn ends (`files`, `end`). Readers merge them by `id`.
//!
//! Restoring the conversation to before turn N appends a `branch` record to the same file
//! (see [`crate::native::jsonl::branch`]): the conversation continues from the last message
//! before turn N's first record; nothing is deleted, so the old branch stays reachable with
//! `/resume`. Only the turns of the branch in use are listed.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use super::{CheckpointError, Result};
use crate::native::jsonl;
use crate::native::jsonl::branch::Tree;

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

/// The turns recorded in a session file, on the branch in use.
pub fn turns(path: &Path) -> Result<SessionTurns> {
    let report = jsonl::read_all(path).map_err(|e| CheckpointError::Invalid(e.to_string()))?;
    let view = Tree::new(report.data(), &report.records).current();
    Ok(turns_of(&report, &view.records, path))
}

fn turns_of(report: &jsonl::ReadReport, indices: &[usize], path: &Path) -> SessionTurns {
    let mut out = SessionTurns {
        path: path.to_path_buf(),
        ..Default::default()
    };
    for r in indices.iter().map(|&i| &report.records[i]) {
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
    out
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

/// The records that branch the conversation of `path` to just before `turn`, to append to
/// the same file (nothing is deleted): a `branch` record naming the message the conversation
/// continues from, then the checkpoints extension's state, so later turns are numbered after
/// every turn of the file (the shadow repository's refs are named by turn).
pub fn branch_records(path: &Path, turn: u64) -> Result<Vec<Value>> {
    let report = jsonl::read_all(path).map_err(|e| CheckpointError::Invalid(e.to_string()))?;
    let tree = Tree::new(report.data(), &report.records);
    let view = tree.current();
    let cut = view.records.iter().copied().find(|&i| {
        let r = &report.records[i];
        report.record_type(r).as_deref() == Some("checkpoint")
            && report
                .value(r)
                .is_ok_and(|v| v.get("turn").and_then(Value::as_u64) == Some(turn))
    });
    let Some(cut) = cut else {
        return Err(CheckpointError::Invalid(format!(
            "turn {turn} is not in {}",
            path.display()
        )));
    };
    let point = tree.cut(&view, Some(cut));
    let all: Vec<usize> = (0..report.records.len()).collect();
    let max_turn = turns_of(&report, &all, path)
        .turns
        .iter()
        .map(|t| t.turn)
        .max()
        .unwrap_or(turn);
    let mut branch = serde_json::json!({
        "type": "branch",
        "id": jsonl::new_session_id().to_string(),
        "parent_id": point.leaf,
        "from_id": view.leaf,
        "turn": turn,
        "timestamp": jsonl::rfc3339_utc(SystemTime::now()),
    });
    if let (Some(b), Some(obj)) = (point.before, branch.as_object_mut()) {
        obj.insert("before".into(), Value::from(b));
    }
    let state = serde_json::json!({
        "type": "extension-state",
        "id": jsonl::new_session_id().to_string(),
        "extension": "checkpoints",
        "state": {"turn": max_turn},
    });
    Ok(vec![branch, state])
}

/// The session file's writer (taking its lease: fails while another fen has it open), for
/// [`append`]; taken before anything is restored, so a busy session changes nothing.
pub fn writer(path: &Path) -> Result<jsonl::SessionWriter> {
    jsonl::SessionWriter::open(path).map_err(|e| CheckpointError::Invalid(e.to_string()))
}

/// Appends `records` and makes them durable.
pub fn append(w: &mut jsonl::SessionWriter, records: &[Value]) -> Result<()> {
    for r in records {
        w.append(r)
            .map_err(|e| CheckpointError::Invalid(e.to_string()))?;
    }
    w.sync()
        .map_err(|e| CheckpointError::Invalid(e.to_string()))
}
