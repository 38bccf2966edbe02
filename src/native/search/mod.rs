//! In-process file search for the `grep`, `find` and `ls` tools.
//!
//! Built on the ripgrep family of crates (`ignore` walks, `grep-searcher` + `grep-regex` match);
//! nothing is run as a subprocess, so a pattern is never mistaken for a command-line option.
//!
//! Shared rules for [`grep()`] and [`find()`]:
//! - `.gitignore` (nested, with negation), `.ignore`, `.git/info/exclude` and the global git
//!   excludes are honoured, also outside a git repository; `no_ignore` turns them off.
//! - hidden files and directories are skipped unless `include_hidden`;
//!   `.git` is never descended into.
//! - the search root named by the caller (a file, or a directory that is itself hidden or
//!   ignored) is always searched.
//! - symlinks are followed only with `follow_symlinks`; loops are counted in [`WalkIssues`],
//!   as are unreadable directories, and neither fails the search.
//! - the walk is parallel; results are sorted afterwards, so output is deterministic.
//! - a cancellation flag is polled for every entry; when set, the call returns
//!   [`SearchError::Cancelled`].
//!
//! [`list_dir()`] (for `ls`) is a plain directory listing: NOT ignore-filtered, hidden entries
//! shown, `.git` shown but not descended.

mod find;
mod glob;
mod grep;
mod list;
mod walk;

pub use find::{find, FindOptions, FindResult};
pub use grep::{
    grep, render_notes, render_text, FileMatches, GrepLine, GrepOptions, GrepResult, OutputMode,
};
pub use list::{list_dir, render_list, EntryKind, ListEntry, ListResult};
pub use walk::WalkIssues;

use std::path::{Path, PathBuf};

/// Errors of the search functions. Each message says what was wrong and what to do.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// The regex did not parse; `message` is the regex crate's (with a caret under the spot).
    #[error("invalid regex pattern {pattern:?}: {message}\n(pass literal=true to search for the text as written)")]
    Pattern {
        /// The pattern as given.
        pattern: String,
        /// The regex parser's message.
        message: String,
        /// Byte offset of the error in the pattern, when the parser reports one.
        offset: Option<usize>,
    },
    /// The glob did not parse.
    #[error("invalid glob {glob:?}: {message}")]
    Glob {
        /// The glob as given.
        glob: String,
        /// The glob parser's message.
        message: String,
    },
    /// The search root does not exist.
    #[error("{}", not_found_message(path, suggestions))]
    NotFound {
        /// The path as given.
        path: PathBuf,
        /// Similar names in the parent directory (possibly empty).
        suggestions: Vec<String>,
    },
    /// The search root could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The cancellation flag was set while searching.
    #[error("search cancelled")]
    Cancelled,
}

fn not_found_message(path: &Path, suggestions: &[String]) -> String {
    let mut msg = format!("path not found: {}", path.display());
    if !suggestions.is_empty() {
        msg.push_str(&format!("; did you mean: {}?", suggestions.join(", ")));
    }
    msg
}

/// Checks that `root` exists; on "not found" offers similar names from its parent.
fn check_root(root: &Path) -> Result<std::fs::Metadata, SearchError> {
    match std::fs::metadata(root) {
        Ok(meta) => Ok(meta),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            let suggestions = match (root.parent(), root.file_name()) {
                (Some(parent), Some(name)) => {
                    let parent = if parent.as_os_str().is_empty() {
                        Path::new(".")
                    } else {
                        parent
                    };
                    crate::native::filetype::similar_names(parent, &name.to_string_lossy(), 3)
                }
                _ => Vec::new(),
            };
            Err(SearchError::NotFound {
                path: root.to_path_buf(),
                suggestions,
            })
        }
        Err(source) => Err(SearchError::Io {
            path: root.to_path_buf(),
            source,
        }),
    }
}

/// The path of `path` relative to `root` for display (`/`-separated on Unix). A root that is a
/// file is displayed as given.
fn display_rel(root: &Path, path: &Path) -> PathBuf {
    match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.to_path_buf(),
        _ => path.to_path_buf(),
    }
}
