//! What a session has read: the stamp of every file the `read` tool showed, so `edit` and
//! `write` can refuse to act on a file that changed on disk since (stale-read protection).
//! `strict` is turned on by the agent loop, where overwriting a file the session never read
//! is refused too (a one-shot `fen tool` call is not strict). The run context owns the one
//! ledger of a run (`crate::host::run`).

use crate::native::fs::FileStamp;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Default)]
pub struct ReadLedger {
    pub strict: bool,
    stamps: HashMap<PathBuf, FileStamp>,
}

impl ReadLedger {
    /// The key of a path: its canonical form when it exists (so `./a` and `a` agree).
    pub fn key(path: &Path) -> PathBuf {
        std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
    }
    pub fn record(&mut self, path: &Path, stamp: FileStamp) {
        self.stamps.insert(Self::key(path), stamp);
    }
    pub fn get(&self, path: &Path) -> Option<FileStamp> {
        self.stamps.get(&Self::key(path)).cloned()
    }
}
