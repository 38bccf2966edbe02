//! Checkpoints: snapshots of a workspace in a shadow git repository outside the user's `.git`
//! (`<state>/checkpoints/<workspace slug>/`), so `/rewind` and `fen rewind` can put the files
//! back as they were before a turn, whatever changed them (edit tools, shell commands, jobs).
//!
//! The shadow repository has its own `GIT_DIR`, one index per session (`GIT_INDEX_FILE`: git's
//! stat cache, so a snapshot hashes only changed files) and `core.worktree` = the workspace.
//! Every git child runs with a scrubbed environment (nothing `GIT_*` from the user's leaks in)
//! and its own identity, so no git configuration is needed and the user's index, branches,
//! stash and reflog are never touched. A snapshot is a commit kept alive by a ref
//! `refs/fen/<session>/<name>`. `.gitignore`d files are not captured unless an include
//! pattern names them; files over a size cap are skipped and named.
//!
//! Everything here blocks (child processes, file I/O): callers run it off the Lua thread.

mod git;
pub mod restore;
pub mod rewind;
pub mod session;

use std::path::{Path, PathBuf};

pub use git::Git;

/// Default size cap of one captured file.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Default bound of all shadow repositories together.
pub const DEFAULT_MAX_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("cannot run git ({0}); checkpoints need the `git` program on PATH")]
    NoGit(String),
    #[error("git {args} failed: {stderr}")]
    Git { args: String, stderr: String },
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, CheckpointError>;

pub(crate) fn io_err(what: &'static str, path: &Path, source: std::io::Error) -> CheckpointError {
    CheckpointError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// What to capture.
#[derive(Debug, Clone)]
pub struct Options {
    /// Patterns (gitignore-style globs, relative to the workspace) of ignored files to capture.
    pub include: Vec<String>,
    /// Files larger than this are skipped (and named).
    pub max_file_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            include: Vec::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// One snapshot.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Snapshot {
    pub commit: String,
    /// Files over the size cap, not captured (workspace-relative).
    pub skipped: Vec<String>,
}

/// The shadow repository of one workspace, seen by one session.
#[derive(Debug, Clone)]
pub struct Shadow {
    pub git: Git,
    /// The session whose refs and index this handle uses (a safe file-name component).
    pub session: String,
}

/// `<state_dir>/checkpoints/<slug of workspace>`.
pub fn shadow_dir(state_dir: &Path, workspace: &Path) -> PathBuf {
    state_dir
        .join("checkpoints")
        .join(crate::native::jsonl::cwd_slug(workspace))
}

/// The workspace of a directory: the nearest ancestor holding `.git`, else the directory.
pub fn workspace_of(dir: &Path) -> PathBuf {
    let mut d = Some(dir);
    while let Some(p) = d {
        if p.join(".git").exists() {
            return p.to_path_buf();
        }
        d = p.parent();
    }
    dir.to_path_buf()
}

/// A session id as a ref and file-name component (anything else becomes `_`).
fn safe_component(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        "_".into()
    } else {
        out
    }
}

impl Shadow {
    /// Opens (creating on first use) the shadow repository of `workspace` for `session`.
    /// `session_path` (the session's file) is remembered so pruning knows when it is gone.
    pub fn open(
        state_dir: &Path,
        workspace: &Path,
        session: &str,
        session_path: Option<&Path>,
    ) -> Result<Shadow> {
        let workspace = workspace
            .canonicalize()
            .map_err(|e| io_err("cannot open workspace", workspace, e))?;
        let dir = shadow_dir(state_dir, &workspace);
        let session = safe_component(session);
        let git = Git::new(&dir, &workspace, &dir.join("index").join(&session));
        git.init()?;
        if let Some(p) = session_path {
            let marker = dir.join("sessions").join(&session);
            if !marker.exists() {
                let _ = std::fs::create_dir_all(dir.join("sessions"));
                std::fs::write(&marker, p.to_string_lossy().as_bytes())
                    .map_err(|e| io_err("cannot write", &marker, e))?;
            }
        }
        Ok(Shadow { git, session })
    }

    fn ref_name(&self, name: &str) -> String {
        format!("refs/fen/{}/{}", self.session, safe_component(name))
    }

    /// Records the working tree as it is now, keeps it as `refs/fen/<session>/<name>`.
    pub fn snapshot(&self, opts: &Options, name: &str) -> Result<Snapshot> {
        let skipped = self.git.stage(opts)?;
        let tree = self.git.write_tree()?;
        let commit = self
            .git
            .commit_tree(&tree, &format!("fen checkpoint {name}"))?;
        self.git
            .update_ref_and_head(&self.ref_name(name), &commit)?;
        Ok(Snapshot { commit, skipped })
    }

    /// The last tree this session recorded (the end of its latest turn, or the tree right
    /// after a rewind): what "changed by hand since" is measured against.
    pub fn baseline(&self) -> Option<String> {
        let r = self.ref_name("baseline");
        self.git
            .run(&["rev-parse", "--verify", "-q", &r], None)
            .ok()
            .map(|o| String::from_utf8_lossy(&o).trim().to_string())
            .filter(|s| !s.is_empty())
    }

    pub fn set_baseline(&self, commit: &str) -> Result<()> {
        self.git.update_ref(&self.ref_name("baseline"), commit)
    }

    /// Workspace-relative paths that differ between two snapshots.
    pub fn changed(&self, from: &str, to: &str) -> Result<Vec<String>> {
        Ok(self
            .git
            .diff_tree(from, to)?
            .into_iter()
            .map(|c| c.path)
            .collect())
    }
}

/// Deletes the refs of sessions whose file is gone, then (oldest first) the refs of the
/// oldest sessions while the shadow repositories together exceed `max_total_bytes`, and lets
/// git drop what is unreachable. Returns the sessions dropped.
pub fn prune(state_dir: &Path, max_total_bytes: u64) -> Result<Vec<String>> {
    let root = state_dir.join("checkpoints");
    let mut dropped = Vec::new();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(dropped);
    };
    // (modified, repo dir, session)
    let mut live: Vec<(std::time::SystemTime, PathBuf, String)> = Vec::new();
    let mut repos = Vec::new();
    let mut dropped_in: Vec<PathBuf> = Vec::new();
    for e in entries.flatten() {
        let dir = e.path();
        if !dir.join("HEAD").exists() {
            continue;
        }
        repos.push(dir.clone());
        let Ok(sessions) = std::fs::read_dir(dir.join("sessions")) else {
            continue;
        };
        for s in sessions.flatten() {
            let name = s.file_name().to_string_lossy().into_owned();
            let target = std::fs::read_to_string(s.path()).unwrap_or_default();
            if target.is_empty() || !Path::new(&target).exists() {
                drop_session(&dir, &name)?;
                dropped.push(name);
                dropped_in.push(dir.clone());
            } else {
                let modified = s
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                live.push((modified, dir.clone(), name));
            }
        }
    }
    // git prune walks every object: only where something was dropped.
    for dir in &repos {
        if dropped_in.contains(dir) {
            Git::at(dir).prune()?;
        }
    }
    live.sort();
    let mut total = dir_size(&root);
    let mut i = 0;
    while total > max_total_bytes && i < live.len() {
        let (_, dir, name) = &live[i];
        drop_session(dir, name)?;
        Git::at(dir).prune()?;
        dropped.push(name.clone());
        total = dir_size(&root);
        i += 1;
    }
    Ok(dropped)
}

fn drop_session(dir: &Path, session: &str) -> Result<()> {
    Git::at(dir).delete_refs(&format!("refs/fen/{session}/"))?;
    let _ = std::fs::remove_file(dir.join("sessions").join(session));
    let _ = std::fs::remove_file(dir.join("index").join(session));
    Ok(())
}

fn dir_size(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => total += e.metadata().map(|m| m.len()).unwrap_or(0),
                Err(_) => {}
            }
        }
    }
    total
}

/// The `checkpoints` object of settings.json files.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Settings {
    pub enabled: bool,
    pub include: Vec<String>,
    pub max_file_bytes: u64,
    pub max_total_bytes: u64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            include: Vec::new(),
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_total_bytes: DEFAULT_MAX_TOTAL_BYTES,
        }
    }
}

/// Reads `checkpoints` from each settings file in order (later files override fields;
/// include patterns add up). Missing or unreadable files count as empty; a field of the
/// wrong type is named in the returned problems.
pub fn read_settings(files: &[PathBuf]) -> (Settings, Vec<String>) {
    let parsed: Vec<(PathBuf, serde_json::Value)> = files
        .iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(f).ok()?;
            let v = serde_json::from_str::<serde_json::Value>(&text).ok()?;
            Some((f.clone(), v))
        })
        .collect();
    settings_of(&parsed)
}

/// [`read_settings`] of files already parsed (the run's settings).
pub fn settings_of(files: &[(PathBuf, serde_json::Value)]) -> (Settings, Vec<String>) {
    let mut s = Settings::default();
    let mut problems = Vec::new();
    for (f, v) in files {
        let Some(c) = v.get("checkpoints") else {
            continue;
        };
        let bad = |k: &str, want: &str| format!("{}: checkpoints.{k} must be {want}", f.display());
        if let Some(e) = c.get("enabled") {
            match e.as_bool() {
                Some(b) => s.enabled = b,
                None => problems.push(bad("enabled", "true or false")),
            }
        }
        if let Some(list) = c.get("include") {
            match list.as_array() {
                Some(a) => s
                    .include
                    .extend(a.iter().filter_map(|p| p.as_str().map(str::to_string))),
                None => problems.push(bad("include", "a list of patterns")),
            }
        }
        for (k, slot) in [
            ("max_file_bytes", &mut s.max_file_bytes),
            ("max_total_bytes", &mut s.max_total_bytes),
        ] {
            if let Some(n) = c.get(k) {
                match n.as_u64() {
                    Some(n) => *slot = n,
                    None => problems.push(bad(k, "a number of bytes")),
                }
            }
        }
    }
    (s, problems)
}
