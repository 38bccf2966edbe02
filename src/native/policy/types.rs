//! The path operands the analyser collects, shared by the shell walk (`shell.rs`) and the
//! per-program knowledge (`commands.rs`): a leaf, so neither imports the other for them.

use std::path::{Path, PathBuf};

/// How a segment touches a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Read (operand of cat/grep/..., `<` redirect, `cp` source).
    Read,
    /// Created, overwritten, appended to or changed (redirect targets, tee, touch, chmod, ...).
    Write,
    /// Removed (rm, rmdir, mv source, unlink, shred).
    Delete,
}

/// A path operand or redirect target of a segment.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PathRef {
    /// The word as written after unquoting (`~` expanded), or its source text if dynamic.
    pub raw: String,
    /// The absolute path (lexically joined to the segment's cwd; not yet resolved against the
    /// file system). `None` when the word has an expansion the analyser cannot evaluate or the
    /// cwd is unknown.
    pub path: Option<PathBuf>,
    /// The operation reaches the entries under `path` (a glob like `dir/*`, `find DIR -exec`,
    /// xargs input), not only `path` itself.
    pub contents: bool,
    pub access: Access,
    /// Came from a redirect (`>`, `>>`, `<`, `2>`, `&>`, ...) rather than an operand.
    pub redirect: bool,
    /// An operand the command table does not describe (any word of any program): judged
    /// only for what it would reveal (a secret), not as a read of the workspace boundary.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub implicit: bool,
}

/// The directory part of a glob before its first wildcard: `/etc/*.conf` → `/etc`, `*` → `.`.
pub(crate) fn glob_base(word: &str) -> (String, bool) {
    let Some(pos) = word.find(['*', '?', '[', '{']) else {
        return (word.to_string(), false);
    };
    let head = &word[..pos];
    match head.rfind('/') {
        Some(0) => ("/".to_string(), true),
        Some(i) => (head[..i].to_string(), true),
        None => (".".to_string(), true),
    }
}

/// Joins `p` to `cwd` lexically (no file-system access); `None` if relative with no cwd.
pub(crate) fn join_path(cwd: Option<&Path>, p: &str) -> Option<PathBuf> {
    let path = Path::new(p);
    if path.is_absolute() {
        Some(path.to_path_buf())
    } else {
        cwd.map(|c| c.join(path))
    }
}
