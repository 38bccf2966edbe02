//! File-name search: the core of the `find` tool.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

use ignore::{DirEntry, WalkState};

use super::glob::PathGlob;
use super::walk::{self, WalkConfig, WalkIssues};
use super::{check_root, display_rel, SearchError};

/// Parameters of one [`find`] call. Build with [`FindOptions::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct FindOptions {
    /// Glob list: `**/*.rs`, `*.toml` (no `/`: matches the file name at any depth),
    /// `src/*.rs` (with `/`: matches the path relative to `path`), `*.{rs,toml}`, `!*.md`.
    /// An empty pattern matches every file.
    pub pattern: String,
    /// The directory to search.
    pub path: PathBuf,
    /// At most this many entries are returned; 0 = no cap.
    pub limit: usize,
    /// Follow symbolic links (loops are detected and counted in `issues.loops`).
    pub follow_symlinks: bool,
    /// Also list hidden files and directories (`.git` is still skipped).
    pub include_hidden: bool,
    /// Ignore `.gitignore` / `.ignore` / git excludes.
    pub no_ignore: bool,
}

impl FindOptions {
    /// Options with the defaults: limit 1000, no symlink following, ignore rules and
    /// hidden-skipping on.
    pub fn new(pattern: impl Into<String>, path: impl Into<PathBuf>) -> FindOptions {
        FindOptions {
            pattern: pattern.into(),
            path: path.into(),
            limit: 1000,
            follow_symlinks: false,
            include_hidden: false,
            no_ignore: false,
        }
    }
}

/// The outcome of [`find`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FindResult {
    /// The search root as given.
    pub root: PathBuf,
    /// Matching files relative to the root (`/`-separated), most recently modified first,
    /// ties by path.
    pub entries: Vec<String>,
    /// Files that matched, before `limit`.
    pub total_matched: usize,
    /// Matching files left out by `limit`.
    pub truncated: usize,
    /// Walk problems (unreadable directories, symlink loops) that did not stop the search.
    pub issues: WalkIssues,
}

/// Finds files under `opts.path` whose path matches `opts.pattern`. Only files are listed
/// (and, when not following links, symlinks to files). Polls `cancel` for every entry.
pub fn find(opts: &FindOptions, cancel: &AtomicBool) -> Result<FindResult, SearchError> {
    let glob = PathGlob::new(&opts.pattern)?;
    check_root(&opts.path)?;
    let cfg = WalkConfig {
        include_hidden: opts.include_hidden,
        no_ignore: opts.no_ignore,
        follow_symlinks: opts.follow_symlinks,
    };
    let found: Mutex<Vec<(SystemTime, PathBuf)>> = Mutex::new(Vec::new());
    let issues = Mutex::new(WalkIssues::default());
    let cancelled = AtomicBool::new(false);
    let mut builder = walk::builder(&opts.path, cfg);
    builder.threads(walk::threads());
    builder.build_parallel().run(|| {
        let mut local = Local {
            found: Vec::new(),
            issues: WalkIssues::default(),
            sink: (&found, &issues),
        };
        let (glob, cancelled) = (&glob, &cancelled);
        Box::new(move |entry| {
            if cancel.load(Ordering::Relaxed) {
                cancelled.store(true, Ordering::Relaxed);
                return WalkState::Quit;
            }
            match entry {
                Ok(entry) => local.consider(&entry, glob, opts),
                Err(err) => local.issues.record(&err),
            }
            WalkState::Continue
        })
    });
    if cancelled.load(Ordering::Relaxed) {
        return Err(SearchError::Cancelled);
    }
    let mut found = found
        .into_inner()
        .unwrap_or_else(|poison| poison.into_inner());
    // Newest first, then by path for a stable order.
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total_matched = found.len();
    let keep = if opts.limit == 0 {
        total_matched
    } else {
        opts.limit.min(total_matched)
    };
    Ok(FindResult {
        root: opts.path.clone(),
        entries: found
            .into_iter()
            .take(keep)
            .map(|(_, p)| p.to_string_lossy().into_owned())
            .collect(),
        total_matched,
        truncated: total_matched - keep,
        issues: issues
            .into_inner()
            .unwrap_or_else(|poison| poison.into_inner()),
    })
}

type Found = Vec<(SystemTime, PathBuf)>;

/// Per-thread results, flushed when the walker drops the visitor.
struct Local<'a> {
    found: Found,
    issues: WalkIssues,
    sink: (&'a Mutex<Found>, &'a Mutex<WalkIssues>),
}

impl Local<'_> {
    fn consider(&mut self, entry: &DirEntry, glob: &PathGlob, opts: &FindOptions) {
        if !is_file_like(entry) {
            return;
        }
        let rel = display_rel(&opts.path, entry.path());
        if !glob.is_match(&rel) {
            return;
        }
        // Without following links, a symlink's own mtime is what the walk sees; with
        // following, `metadata` is the target's. Either way a failure sorts it last.
        let mtime = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        self.found.push((mtime, rel));
    }
}

impl Drop for Local<'_> {
    fn drop(&mut self) {
        let (found, issues) = self.sink;
        found
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .append(&mut self.found);
        issues
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .merge(std::mem::take(&mut self.issues));
    }
}

/// A regular file, or a symlink (not followed) whose target is a file.
fn is_file_like(entry: &DirEntry) -> bool {
    match entry.file_type() {
        Some(t) if t.is_file() => true,
        Some(t) if t.is_symlink() => std::fs::metadata(entry.path()).is_ok_and(|m| m.is_file()),
        _ => false,
    }
}
