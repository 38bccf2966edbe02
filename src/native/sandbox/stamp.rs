//! File system stamps: what `lstat` says about a path (device, inode, type, size, mtime), and a
//! watch list of stamps that tells whether a cached sandbox preparation is still exact.
//!
//! A directory's mtime changes when an entry is added, removed or renamed in it, so stamping
//! every directory a walk read (and every file whose presence or identity it used) is enough
//! to know the walk would find the same thing again, at the cost of one `lstat` per path
//! instead of a `readdir`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What `lstat` said about a path; `None` stands for "missing or unreadable".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
}

/// The stamp of `p` (not following a final symlink).
pub fn stamp(p: &Path) -> Option<Stamp> {
    let m = std::fs::symlink_metadata(p).ok()?;
    Some(Stamp {
        dev: m.dev(),
        ino: m.ino(),
        mode: m.mode(),
        size: m.size(),
        mtime: m.mtime(),
        mtime_nsec: m.mtime_nsec(),
    })
}

/// The identity of the file `p` names (following symlinks): device and inode. Two equal
/// identities mean a bind mount of `p` made earlier still shows the same file.
pub fn identity(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

/// Paths and their stamps when a result was computed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Watch {
    stamps: Vec<(PathBuf, Option<Stamp>)>,
    /// A path changed so close to the computation that a later change could keep the same
    /// coarse timestamp: never trusted (git's "racy timestamp" rule).
    racy: bool,
}

/// Changes this close to the start of a computation may share its timestamp with a later one
/// (file system clocks tick coarsely); generous on purpose.
const RACY_MARGIN: Duration = Duration::from_millis(100);

impl Watch {
    /// Stamps `paths` now (duplicates are stamped once); `started` is when the computation
    /// that read them began.
    pub fn of(paths: impl IntoIterator<Item = PathBuf>, started: SystemTime) -> Self {
        let mut v: Vec<PathBuf> = paths.into_iter().collect();
        v.sort();
        v.dedup();
        let limit = started
            .checked_sub(RACY_MARGIN)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128);
        let stamps: Vec<(PathBuf, Option<Stamp>)> = v
            .into_iter()
            .map(|p| {
                let s = stamp(&p);
                (p, s)
            })
            .collect();
        let racy = stamps.iter().any(|(_, s)| {
            s.is_some_and(|s| (s.mtime as i128) * 1_000_000_000 + s.mtime_nsec as i128 >= limit)
        });
        Self { stamps, racy }
    }

    /// Whether every path still has the stamp it had (and none was racy).
    pub fn unchanged(&self) -> bool {
        !self.racy && self.stamps.iter().all(|(p, s)| stamp(p) == *s)
    }

    /// How many paths are watched.
    pub fn len(&self) -> usize {
        self.stamps.len()
    }

    /// Whether nothing is watched.
    pub fn is_empty(&self) -> bool {
        self.stamps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_and_racy_stamps_are_never_trusted() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().to_path_buf();
        // Just created, computation started now: racy, so not trusted.
        let w = Watch::of([dir.clone()], SystemTime::now());
        assert!(!w.unchanged());
        // A computation that started well after the last change is trusted...
        let later = SystemTime::now() + Duration::from_secs(10);
        let w = Watch::of([dir.clone(), dir.join("missing")], later);
        assert!(w.unchanged());
        // ...until a watched path appears or changes.
        std::fs::write(dir.join("missing"), "").unwrap();
        assert!(!w.unchanged());
    }
}
