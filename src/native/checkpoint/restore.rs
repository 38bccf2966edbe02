//! Putting files back: a plan (what differs between now and a checkpoint, with line counts,
//! and which of those files changed by hand since fen last looked), then applying it (files
//! written back with their mode, created ones removed, deleted ones recreated).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::git::Change;
use super::{io_err, Options, Result, Shadow};

#[derive(Debug, Clone, serde::Serialize)]
pub struct FileChange {
    pub path: String,
    /// `restore` (content or mode back), `recreate` (deleted since), `remove` (created since).
    pub action: &'static str,
    pub added: Option<u64>,
    pub removed: Option<u64>,
    #[serde(skip)]
    change: Change,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Plan {
    /// The checkpoint restored.
    pub target: String,
    /// A snapshot of the tree before restoring (so the restore itself can be undone).
    pub current: String,
    pub changes: Vec<FileChange>,
    /// Files among `changes` that differ from what fen last recorded: changed by hand since.
    pub hand_changed: Vec<String>,
    /// Files over the size cap, left as they are.
    pub skipped: Vec<String>,
}

/// What restoring `target` would do now. `baseline` is the last tree the session recorded
/// (the end of its latest turn); a file that differs from it was changed by someone else
/// since. `only`: the files the session's turns changed (None: every file that differs, when
/// a turn ended without saying what it changed, e.g. after kill -9).
pub fn plan(
    shadow: &Shadow,
    opts: &Options,
    target: &str,
    target_skipped: &[String],
    baseline: Option<&str>,
    only: Option<&[String]>,
) -> Result<Plan> {
    let now = shadow.snapshot(opts, "rewind-before")?;
    let mut skipped: Vec<String> = target_skipped.to_vec();
    skipped.extend(now.skipped.iter().cloned());
    skipped.sort();
    skipped.dedup();
    let numstat = numstat(shadow, &now.commit, target)?;
    let mut changes = Vec::new();
    for c in shadow.git.diff_tree(&now.commit, target)? {
        if skipped.binary_search(&c.path).is_ok()
            || only.is_some_and(|o| !o.contains(&c.path))
            || c.old_mode == "160000"
            || c.new_mode == "160000"
        {
            continue;
        }
        let action = match (c.in_old(), c.in_new()) {
            (true, false) => "remove",
            (false, true) => "recreate",
            _ => "restore",
        };
        let (added, removed) = numstat
            .iter()
            .find(|(p, _, _)| *p == c.path)
            .map(|(_, a, r)| (*a, *r))
            .unwrap_or((None, None));
        changes.push(FileChange {
            path: c.path.clone(),
            action,
            added,
            removed,
            change: c,
        });
    }
    let mut hand_changed = Vec::new();
    if let Some(base) = baseline.filter(|b| shadow.git.has_commit(b)) {
        let since = shadow.git.diff_tree(base, &now.commit)?;
        let since: Vec<String> = since.into_iter().map(|c| c.path).collect();
        for c in &changes {
            if since.contains(&c.path) {
                hand_changed.push(c.path.clone());
            }
        }
    }
    Ok(Plan {
        target: target.to_string(),
        current: now.commit,
        changes,
        hand_changed,
        skipped,
    })
}

/// `(path, added, removed)`; None for binary files.
type NumstatRow = (String, Option<u64>, Option<u64>);

/// The lines added and removed per file between two commits.
fn numstat(shadow: &Shadow, from: &str, to: &str) -> Result<Vec<NumstatRow>> {
    let out = shadow.git.run(
        &[
            "diff-tree",
            "-r",
            "-z",
            "--numstat",
            "--no-renames",
            from,
            to,
        ],
        None,
    )?;
    let mut rows = Vec::new();
    for rec in out.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(rec);
        let mut f = text.splitn(3, '\t');
        let (Some(a), Some(r), Some(p)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        rows.push((p.to_string(), a.parse().ok(), r.parse().ok()));
    }
    Ok(rows)
}

/// Applies `plan`: every changed file becomes what the checkpoint holds. Returns the paths
/// written or removed.
pub fn apply(shadow: &Shadow, plan: &Plan) -> Result<Vec<String>> {
    let root = shadow.git.worktree.clone();
    let wanted: Vec<&FileChange> = plan.changes.iter().filter(|c| c.change.in_new()).collect();
    let shas: Vec<&str> = wanted.iter().map(|c| c.change.new_sha.as_str()).collect();
    let blobs = shadow.git.blobs(&shas)?;
    let mut done = Vec::new();
    for (c, bytes) in wanted.iter().zip(blobs) {
        let path = root.join(&c.path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
        }
        write_entry(&path, &c.change.new_mode, &bytes)?;
        done.push(c.path.clone());
    }
    for c in plan.changes.iter().filter(|c| !c.change.in_new()) {
        let path = root.join(&c.path);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => std::fs::remove_file(&path).map_err(|e| io_err("cannot remove", &path, e))?,
            Err(_) => {}
        }
        remove_empty_parents(&root, &path);
        done.push(c.path.clone());
    }
    Ok(done)
}

/// Writes one entry of mode `mode` (a file, executable or not, or a symlink) in place of
/// whatever is at `path`, through a temporary file renamed over it.
fn write_entry(path: &Path, mode: &str, bytes: &[u8]) -> Result<()> {
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.is_dir() {
            return Err(super::CheckpointError::Invalid(format!(
                "{} is a directory now; move it away and rewind again",
                path.display()
            )));
        }
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.fen-rewind"));
    let _ = std::fs::remove_file(&tmp);
    if mode == "120000" {
        let target = String::from_utf8_lossy(bytes).into_owned();
        std::os::unix::fs::symlink(&target, &tmp).map_err(|e| io_err("cannot create", &tmp, e))?;
    } else {
        std::fs::write(&tmp, bytes).map_err(|e| io_err("cannot write", &tmp, e))?;
        let perm = if mode == "100755" { 0o755 } else { 0o644 };
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(perm))
            .map_err(|e| io_err("cannot set the mode of", &tmp, e))?;
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_err("cannot replace", path, e)
    })
}

fn remove_empty_parents(root: &Path, path: &Path) {
    let mut d = path.parent();
    while let Some(dir) = d {
        if dir == root || !dir.starts_with(root) {
            break;
        }
        if std::fs::remove_dir(dir).is_err() {
            break;
        }
        d = dir.parent();
    }
}
