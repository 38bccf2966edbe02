//! Directory listings reused across decisions while the directory is unchanged.
//!
//! A command names many words in a few directories, and every word is looked up (is it a
//! symbolic link that may lead to a secret? does it exist? is it a directory?). Looking each
//! up is a system call per word per decision; a listing answers them all from memory.
//!
//! A listing is reused only while the directory's stamp (device, inode, modification and
//! change times, link count, size) is the one it was read under: creating, removing or
//! renaming an entry changes the directory's modification time, so a stale listing is never
//! used. As in git's "racily clean" rule, a listing read within [`RACY`] of the directory's
//! last change is used for that decision only and not kept: a change in the same clock tick
//! would leave the stamp equal.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// What an lstat (or a directory entry's type) says is at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    Missing,
    Symlink,
    Dir,
    BlockDevice,
    Other,
}

impl Seen {
    pub fn of_mode(mode: u32) -> Seen {
        match mode & libc::S_IFMT {
            libc::S_IFLNK => Seen::Symlink,
            libc::S_IFDIR => Seen::Dir,
            libc::S_IFBLK => Seen::BlockDevice,
            _ => Seen::Other,
        }
    }

    fn of_type(t: std::fs::FileType) -> Seen {
        use std::os::unix::fs::FileTypeExt;
        if t.is_symlink() {
            Seen::Symlink
        } else if t.is_dir() {
            Seen::Dir
        } else if t.is_block_device() {
            Seen::BlockDevice
        } else {
            Seen::Other
        }
    }
}

/// How long after a directory's last change its listing may be kept.
const RACY: Duration = Duration::from_millis(100);
/// Larger directories are not listed (their entries are looked up one by one).
const MAX_ENTRIES: usize = 4096;
/// How many listings are kept at most.
const MAX_KEPT: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    nlink: u64,
    size: u64,
}

impl Stamp {
    fn of(dir: &Path) -> Option<Stamp> {
        let m = std::fs::metadata(dir).ok()?;
        m.is_dir().then(|| Stamp {
            dev: m.dev(),
            ino: m.ino(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            nlink: m.nlink(),
            size: m.size(),
        })
    }

    /// Changed so recently that a change in the same clock tick could leave it equal.
    fn racy(&self) -> bool {
        let newest = self.mtime.max(self.ctime);
        let Some(changed) = u64::try_from(newest.0)
            .ok()
            .map(|s| UNIX_EPOCH + Duration::new(s, newest.1.clamp(0, 999_999_999) as u32))
        else {
            return true;
        };
        SystemTime::now()
            .duration_since(changed)
            .map_or(true, |age| age < RACY)
    }
}

/// The entries of one directory, by name.
#[derive(Debug)]
pub struct Listing {
    stamp: Stamp,
    entries: rustc_hash::FxHashMap<OsString, Seen>,
}

impl Listing {
    /// What is at `dir/name`.
    pub fn get(&self, name: &OsStr) -> Seen {
        self.entries.get(name).copied().unwrap_or(Seen::Missing)
    }
}

static KEPT: Mutex<Option<rustc_hash::FxHashMap<PathBuf, Arc<Listing>>>> = Mutex::new(None);

/// The kept listing of `dir` (resolved: no symbolic link in it), if the directory is
/// unchanged since it was read.
pub fn kept(dir: &Path) -> Option<Arc<Listing>> {
    let kept = KEPT.lock().ok()?.as_ref()?.get(dir)?.clone();
    (Stamp::of(dir) == Some(kept.stamp)).then_some(kept)
}

/// The listing of `dir` (resolved: no symbolic link in it) as it is now, or `None` when it
/// cannot be listed (too large, unreadable, changing while read).
pub fn current(dir: &Path) -> Option<Arc<Listing>> {
    let stamp = Stamp::of(dir)?;
    if let Some(l) = KEPT
        .lock()
        .ok()
        .and_then(|k| k.as_ref()?.get(dir).cloned())
        .filter(|l| l.stamp == stamp)
    {
        return Some(l);
    }
    let mut entries = rustc_hash::FxHashMap::default();
    for (n, e) in std::fs::read_dir(dir).ok()?.enumerate() {
        if n >= MAX_ENTRIES {
            return None;
        }
        let e = e.ok()?;
        // `file_type` reads the entry's type from the listing where the file system gives
        // it, and asks lstat otherwise.
        entries.insert(e.file_name(), Seen::of_type(e.file_type().ok()?));
    }
    if Stamp::of(dir) != Some(stamp) {
        return None;
    }
    let listing = Arc::new(Listing { stamp, entries });
    if !stamp.racy() {
        if let Ok(mut kept) = KEPT.lock() {
            let kept = kept.get_or_insert_with(Default::default);
            if kept.len() >= MAX_KEPT {
                kept.clear();
            }
            kept.insert(dir.to_path_buf(), listing.clone());
        }
    }
    Some(listing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_listing_follows_every_change_of_its_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        std::fs::write(d.join("a"), "x").expect("write");
        std::fs::create_dir(d.join("sub")).expect("mkdir");
        let l = current(d).expect("listing");
        assert_eq!(l.get(OsStr::new("a")), Seen::Other);
        assert_eq!(l.get(OsStr::new("sub")), Seen::Dir);
        assert_eq!(l.get(OsStr::new("b")), Seen::Missing);
        // Fresh directories are racy: never kept, so a change right now is seen.
        std::os::unix::fs::symlink("/etc/passwd", d.join("b")).expect("symlink");
        assert_eq!(
            current(d).expect("listing").get(OsStr::new("b")),
            Seen::Symlink
        );
        // Once old enough it is kept, and a later change still shows.
        std::thread::sleep(RACY + Duration::from_millis(20));
        assert!(kept(d).is_none(), "not read since it is old enough");
        // (Other tests' listings may push this one out in between: tried a few times.)
        let kept_now = (0..5).any(|_| {
            let listed = current(d).expect("listing");
            kept(d).is_some_and(|k| Arc::ptr_eq(&listed, &k))
        });
        assert!(kept_now, "an unchanged, old enough listing is kept");
        std::fs::remove_file(d.join("a")).expect("rm");
        std::os::unix::fs::symlink("/etc/passwd", d.join("a")).expect("symlink");
        assert!(kept(d).is_none(), "changed since");
        assert_eq!(
            current(d).expect("listing").get(OsStr::new("a")),
            Seen::Symlink
        );
    }
}
