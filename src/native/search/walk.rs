//! The directory walker shared by grep and find, and the record of what went wrong on the way.

use std::path::Path;

use ignore::WalkBuilder;

/// How many error messages [`WalkIssues`] keeps verbatim.
const KEPT_MESSAGES: usize = 5;

/// Problems met while walking that did not stop the search.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalkIssues {
    /// Symlink loops detected (only when following symlinks).
    pub loops: usize,
    /// Directories or files that could not be read for lack of permission.
    pub permission_denied: usize,
    /// Any other error (vanished files, broken ignore files, ...).
    pub other: usize,
    /// The first few error messages, for the model.
    pub messages: Vec<String>,
}

impl WalkIssues {
    /// Total number of problems recorded.
    pub fn total(&self) -> usize {
        self.loops + self.permission_denied + self.other
    }

    /// Records one walk error.
    pub(crate) fn record(&mut self, err: &ignore::Error) {
        match classify(err) {
            Kind::Loop => self.loops += 1,
            Kind::Permission => self.permission_denied += 1,
            Kind::Other => self.other += 1,
        }
        if self.messages.len() < KEPT_MESSAGES {
            self.messages.push(err.to_string());
        }
    }

    /// Records an I/O error met while reading a file or directory.
    pub(crate) fn record_io(&mut self, path: &Path, err: &std::io::Error) {
        if err.kind() == std::io::ErrorKind::PermissionDenied {
            self.permission_denied += 1;
        } else {
            self.other += 1;
        }
        if self.messages.len() < KEPT_MESSAGES {
            self.messages.push(format!("{}: {err}", path.display()));
        }
    }

    /// Adds another record into this one.
    pub(crate) fn merge(&mut self, other: WalkIssues) {
        self.loops += other.loops;
        self.permission_denied += other.permission_denied;
        self.other += other.other;
        for msg in other.messages {
            if self.messages.len() < KEPT_MESSAGES {
                self.messages.push(msg);
            }
        }
    }
}

enum Kind {
    Loop,
    Permission,
    Other,
}

fn classify(err: &ignore::Error) -> Kind {
    match err {
        ignore::Error::Loop { .. } => Kind::Loop,
        ignore::Error::WithPath { err, .. }
        | ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => classify(err),
        ignore::Error::Partial(errs) => errs.first().map_or(Kind::Other, classify),
        ignore::Error::Io(io) if io.kind() == std::io::ErrorKind::PermissionDenied => {
            Kind::Permission
        }
        _ => Kind::Other,
    }
}

/// Which filters a walk applies.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WalkConfig {
    pub include_hidden: bool,
    pub no_ignore: bool,
    pub follow_symlinks: bool,
}

/// A walker over `root` with fen's rules: ignore files honoured (also outside git) unless
/// `no_ignore`, hidden entries skipped unless `include_hidden`, `.git` never descended into.
pub(crate) fn builder(root: &Path, cfg: WalkConfig) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    // `standard_filters` also toggles `hidden`, so set hidden afterwards.
    b.standard_filters(!cfg.no_ignore)
        .hidden(!cfg.include_hidden)
        .require_git(false)
        .follow_links(cfg.follow_symlinks)
        // The root is exempt: a caller who names `.git` explicitly gets it searched.
        .filter_entry(|entry| entry.depth() == 0 || entry.file_name() != ".git");
    b
}

/// Number of walker threads: ignore's own default (available parallelism, capped at 12).
pub(crate) fn threads() -> usize {
    0
}
