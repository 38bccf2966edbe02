//! Directory listing: the core of the `ls` tool.
//!
//! Deliberately NOT ignore-filtered: `ls` shows what is on disk, including dotfiles and
//! gitignored files (the model uses `find`/`grep` for the filtered view). `.git` is shown as
//! `.git/` but never descended into, and symlinks are never followed.

use std::fs;
use std::path::{Path, PathBuf};

use super::walk::WalkIssues;
use super::{check_root, SearchError};

/// Entries counted beyond `limit` at most; past this `total` is a lower bound.
const COUNT_CAP: usize = 100_000;

/// What an entry is (symlinks are not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
    /// A socket, FIFO or device.
    Other,
}

/// One listed entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListEntry {
    /// Path relative to the listed directory, `/`-separated (`src`, `src/main.rs`).
    pub path: String,
    /// What the entry is.
    pub kind: EntryKind,
}

impl ListEntry {
    /// The path with its marker: `/` after directories, `@` after symlinks.
    pub fn display(&self) -> String {
        match self.kind {
            EntryKind::Dir => format!("{}/", self.path),
            EntryKind::Symlink => format!("{}@", self.path),
            EntryKind::File | EntryKind::Other => self.path.clone(),
        }
    }
}

/// The outcome of [`list_dir`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListResult {
    /// The listed directory as given.
    pub root: PathBuf,
    /// Entries in tree order: each directory's children sorted by name (case-insensitive,
    /// then byte order), a directory's contents right after it.
    pub entries: Vec<ListEntry>,
    /// Entries found within `depth` (capped at 100,000 counted).
    pub total: usize,
    /// Entries left out by `limit`.
    pub truncated: usize,
    /// Subdirectories that could not be read.
    pub issues: WalkIssues,
}

/// Lists `path` down to `depth` levels (0 is treated as 1), returning at most `limit`
/// entries (0 = no cap). Errors only when `path` itself is missing, unreadable or not a
/// directory.
pub fn list_dir(path: &Path, depth: usize, limit: usize) -> Result<ListResult, SearchError> {
    let meta = check_root(path)?;
    if !meta.is_dir() {
        return Err(SearchError::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other("not a directory; use read to view a file"),
        });
    }
    let children = read_sorted(path).map_err(|source| SearchError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut lister = Lister {
        depth: depth.max(1),
        limit: if limit == 0 { usize::MAX } else { limit },
        result: ListResult {
            root: path.to_path_buf(),
            entries: Vec::new(),
            total: 0,
            truncated: 0,
            issues: WalkIssues::default(),
        },
    };
    lister.visit_children(path, "", children, 1);
    let result = &mut lister.result;
    result.truncated = result.total - result.entries.len();
    Ok(lister.result)
}

struct Lister {
    depth: usize,
    limit: usize,
    result: ListResult,
}

impl Lister {
    fn visit_children(&mut self, dir: &Path, prefix: &str, children: Vec<Child>, level: usize) {
        for child in children {
            if self.result.total >= COUNT_CAP {
                return;
            }
            let rel = format!("{prefix}{}", child.name);
            self.result.total += 1;
            if self.result.entries.len() < self.limit {
                self.result.entries.push(ListEntry {
                    path: rel.clone(),
                    kind: child.kind,
                });
            }
            // `.git` is shown but its contents are noise to the model.
            if child.kind == EntryKind::Dir && level < self.depth && child.name != ".git" {
                let sub = dir.join(&child.name);
                match read_sorted(&sub) {
                    Ok(grandchildren) => {
                        self.visit_children(&sub, &format!("{rel}/"), grandchildren, level + 1)
                    }
                    Err(err) => self.result.issues.record_io(&sub, &err),
                }
            }
        }
    }
}

struct Child {
    name: String,
    kind: EntryKind,
}

/// The entries of `dir`, sorted case-insensitively with byte order breaking ties.
fn read_sorted(dir: &Path) -> std::io::Result<Vec<Child>> {
    let mut children = Vec::new();
    for entry in fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let kind = match entry.file_type() {
            Ok(t) if t.is_symlink() => EntryKind::Symlink,
            Ok(t) if t.is_dir() => EntryKind::Dir,
            Ok(t) if t.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        children.push(Child {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind,
        });
    }
    children.sort_by(|a, b| {
        a.name
            .to_lowercase()
            .cmp(&b.name.to_lowercase())
            .then_with(|| a.name.cmp(&b.name))
    });
    Ok(children)
}

/// One entry per line with markers, then a line saying how many entries were left out.
pub fn render_list(result: &ListResult) -> String {
    let mut out = String::new();
    for entry in &result.entries {
        out.push_str(&entry.display());
        out.push('\n');
    }
    if result.truncated > 0 {
        out.push_str(&format!(
            "... {} more entries not shown (raise limit or list a subdirectory)\n",
            result.truncated
        ));
    }
    out
}
