//! One rewind: the plan for restoring the files of a session to before a turn, applying it,
//! and the records that branch the conversation. Shared by `fen rewind` and `/rewind`.

use std::path::{Path, PathBuf};

use super::restore::{self, Plan};
use super::session::{self, SessionTurns};
use super::{CheckpointError, Options, Result, Shadow};

#[derive(Debug, Clone)]
pub struct Request {
    pub state_dir: PathBuf,
    pub session_path: PathBuf,
    pub turn: u64,
    pub code: bool,
    pub conversation: bool,
    /// False: only plan (what would change, what was changed by hand).
    pub apply: bool,
    /// Apply even when files were changed by hand since fen last recorded them.
    pub force: bool,
    pub options: Options,
}

#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Outcome {
    pub turn: u64,
    /// The turn's prompt (for the input box after a conversation restore).
    pub prompt: Option<String>,
    pub plan: Option<Plan>,
    /// Paths written or removed.
    pub restored: Vec<String>,
    /// A conversation restore: the session file (the same: the branch is inside it) and the
    /// id of its `branch` record.
    pub branch: Option<String>,
    pub branch_id: Option<String>,
    /// The message the conversation continues from (None: from nothing).
    pub leaf: Option<String>,
    /// The records to append to the session file (the caller appends them: the session
    /// writer of a running fen holds the file's lease).
    pub branch_records: Vec<serde_json::Value>,
    /// Why nothing was applied (hand-changed files without `force`).
    pub refused: Option<String>,
}

/// The shadow repository a session's turn snapshots live in.
pub fn shadow_for(state_dir: &Path, turns: &SessionTurns, turn: &session::Turn) -> Result<Shadow> {
    let workspace = turn
        .workspace
        .clone()
        .or_else(|| turns.cwd.clone())
        .ok_or_else(|| CheckpointError::Invalid("the session names no workspace".into()))?;
    let name = turn
        .shadow_session
        .clone()
        .or_else(|| turns.session_id.clone())
        .unwrap_or_else(|| "_".into());
    Shadow::open(state_dir, Path::new(&workspace), &name, None)
}

pub fn run(req: &Request) -> Result<Outcome> {
    let turns = session::turns(&req.session_path)?;
    let Some(t) = turns.get(req.turn) else {
        let known: Vec<String> = turns.turns.iter().map(|t| t.turn.to_string()).collect();
        return Err(CheckpointError::Invalid(format!(
            "no turn {} in this session (turns: {}); `fen rewind --list` shows them",
            req.turn,
            if known.is_empty() {
                "none".into()
            } else {
                known.join(", ")
            }
        )));
    };
    let mut out = Outcome {
        turn: req.turn,
        prompt: t.prompt.clone(),
        ..Default::default()
    };
    if req.code {
        if let Some(with_commit) = turns.commit_before(req.turn) {
            let shadow = shadow_for(&req.state_dir, &turns, with_commit)?;
            let target = with_commit.commit.clone().unwrap_or_default();
            if !shadow.git.has_commit(&target) {
                return Err(CheckpointError::Invalid(format!(
                    "the checkpoint of turn {} is gone (pruned?)",
                    with_commit.turn
                )));
            }
            // "Changed by hand" is measured against the tree the session last recorded.
            let latest = turns
                .turns
                .iter()
                .filter(|t| t.commit.is_some())
                .max_by_key(|t| t.turn)
                .unwrap_or(with_commit);
            let base_shadow = shadow_for(&req.state_dir, &turns, latest)?;
            let baseline = base_shadow.baseline();
            // Only what this session's turns changed, unless one of them never said.
            let unknown = turns
                .turns
                .iter()
                .any(|t| t.turn >= req.turn && t.commit.is_some() && !t.ended);
            let only = turns.files_since(req.turn);
            let plan = restore::plan(
                &shadow,
                &req.options,
                &target,
                &with_commit.skipped,
                baseline.as_deref(),
                if unknown { None } else { Some(&only) },
            )?;
            if req.apply {
                if !plan.hand_changed.is_empty() && !req.force {
                    out.refused = Some(format!(
                        "changed by hand since fen last recorded them: {}",
                        plan.hand_changed.join(", ")
                    ));
                } else {
                    out.restored = restore::apply(&shadow, &plan)?;
                    let after = shadow.snapshot(&req.options, "rewind-after")?;
                    base_shadow.set_baseline(&after.commit)?;
                }
            }
            out.plan = Some(plan);
        }
    }
    if req.conversation && req.apply && out.refused.is_none() {
        let records = session::branch_records(&req.session_path, req.turn)?;
        let field = |k: &str| {
            records
                .first()
                .and_then(|r| r.get(k))
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        };
        out.branch = Some(req.session_path.to_string_lossy().into_owned());
        out.branch_id = field("id");
        out.leaf = field("parent_id");
        out.branch_records = records;
    }
    Ok(out)
}
