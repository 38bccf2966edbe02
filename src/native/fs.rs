//! File-system helpers shared by the native tools: content stamps for stale-read protection and
//! crash-safe atomic writes.
//!
//! * [`FileStamp`] records what a tool saw when it read a file (mtime, size, content hash).
//!   [`check_fresh`] refuses to go on when the content changed since; a `touch` (mtime only) is
//!   not a change, so it never breaks an edit.
//! * [`write_atomic`] / [`stage_write`] write through a temporary file in the target's own
//!   directory, fsync it, give it the right mode, rename it over the target and fsync the
//!   directory: readers see the old file or the new one, never half of one.
//!
//! POSIX only (fen's stance): modes and mtimes come from `std::os::unix`.

use std::fs::{self, File, Metadata, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;
use thiserror::Error;

/// How many symlinks [`resolve_symlinks`] follows before calling it a loop (Linux's own limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// Mode asked for when creating a brand-new file; the kernel applies the process umask to it,
/// exactly as for an ordinary `open(O_CREAT, 0666)`.
const NEW_FILE_MODE: u32 = 0o666;

/// Errors of the file helpers. Every variant names the path and says what to do next.
#[derive(Debug, Error)]
pub enum FsError {
    /// The file (or a directory on its path) does not exist.
    #[error("{path}: no such file; check the path (relative paths are resolved against the working directory)", path = .path.display())]
    NotFound {
        /// Path that was looked up.
        path: PathBuf,
    },
    /// The OS refused access.
    #[error("{path}: permission denied: cannot {action}; {advice}", path = .path.display())]
    PermissionDenied {
        /// Path the OS refused.
        path: PathBuf,
        /// What was being attempted, e.g. "create a temporary file in this directory".
        action: &'static str,
        /// What the user or model can do about it.
        advice: &'static str,
    },
    /// The file changed on disk since the stamp was taken.
    #[error("{path}: changed on disk since last read ({what}); read it again and redo the change against the current content", path = .path.display())]
    Stale {
        /// File that changed.
        path: PathBuf,
        /// What changed: size and/or content.
        what: String,
    },
    /// The path is a directory (or another non-regular file) where a file was expected.
    #[error("{path}: is not a regular file; give the path of a file", path = .path.display())]
    NotAFile {
        /// Offending path.
        path: PathBuf,
    },
    /// The parent directory is missing and creating it was not asked for.
    #[error("{dir}: parent directory does not exist; create it first or use the create-directories variant", dir = .dir.display())]
    ParentMissing {
        /// The missing directory.
        dir: PathBuf,
    },
    /// Symlinks point at each other.
    #[error("{path}: too many levels of symbolic links; fix the link", path = .path.display())]
    SymlinkLoop {
        /// Where resolution started.
        path: PathBuf,
    },
    /// Any other I/O failure.
    #[error("{path}: cannot {action}: {source}", path = .path.display())]
    Io {
        /// Path involved.
        path: PathBuf,
        /// What was being attempted.
        action: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

impl FsError {
    /// Maps an `io::Error` to the most telling variant.
    fn from_io(path: &Path, action: &'static str, err: io::Error) -> Self {
        match err.kind() {
            io::ErrorKind::NotFound => FsError::NotFound {
                path: path.to_path_buf(),
            },
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                FsError::PermissionDenied {
                    path: path.to_path_buf(),
                    action,
                    advice:
                        "check the permissions (or pick a writable location); nothing was changed",
                }
            }
            _ => FsError::Io {
                path: path.to_path_buf(),
                action,
                source: err,
            },
        }
    }
}

/// What a tool saw of a file when it read it: modification time, size and a content hash.
///
/// Staleness is decided by size and hash; the mtime is kept for reporting and as a cheap
/// "did anything happen" check, but an mtime-only change (`touch`) is not stale.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FileStamp {
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i64,
    /// Size in bytes.
    pub size: u64,
    /// XXH3-64 of the content (fast, non-cryptographic: it guards against accidents, not foes).
    pub hash: u64,
}

impl FileStamp {
    /// Stamp from metadata and the bytes read under it.
    pub fn of_bytes(meta: &Metadata, bytes: &[u8]) -> Self {
        FileStamp {
            mtime_ns: mtime_ns(meta),
            size: bytes.len() as u64,
            hash: hash_bytes(bytes),
        }
    }

    /// Compares `self` (what was read before) with `current`; `Err(Stale)` names what changed.
    pub fn ensure_unchanged(&self, path: &Path, current: &FileStamp) -> Result<(), FsError> {
        let what = if self.size != current.size {
            format!("size {} -> {} bytes", self.size, current.size)
        } else if self.hash != current.hash {
            let when = if self.mtime_ns == current.mtime_ns {
                "mtime unchanged"
            } else {
                "mtime changed"
            };
            format!("content changed, same size, {when}")
        } else {
            return Ok(());
        };
        Err(FsError::Stale {
            path: path.to_path_buf(),
            what,
        })
    }

    /// True when size and mtime equal `meta`'s: the cheap check before trusting a stamp.
    pub fn same_metadata(&self, meta: &Metadata) -> bool {
        self.size == meta.len() && self.mtime_ns == mtime_ns(meta)
    }
}

/// Hash used by [`FileStamp`].
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// Modification time of `meta` in nanoseconds since the epoch (saturating).
fn mtime_ns(meta: &Metadata) -> i64 {
    meta.mtime()
        .saturating_mul(1_000_000_000)
        .saturating_add(meta.mtime_nsec())
}

/// Reads a regular file whole and stamps it from the same open handle (one consistent view).
pub fn read_with_stamp(path: &Path) -> Result<(Vec<u8>, FileStamp), FsError> {
    let mut file = File::open(path).map_err(|e| FsError::from_io(path, "open the file", e))?;
    let meta = file
        .metadata()
        .map_err(|e| FsError::from_io(path, "stat the file", e))?;
    if !meta.is_file() {
        return Err(FsError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)
        .map_err(|e| FsError::from_io(path, "read the file", e))?;
    let stamp = FileStamp::of_bytes(&meta, &bytes);
    Ok((bytes, stamp))
}

/// Current stamp of the file at `path` (reads it whole to hash it).
pub fn stamp(path: &Path) -> Result<FileStamp, FsError> {
    read_with_stamp(path).map(|(_, stamp)| stamp)
}

/// Refuses with [`FsError::Stale`] when the file's size or content differ from `expected`.
/// An mtime-only change is fine.
pub fn check_fresh(path: &Path, expected: &FileStamp) -> Result<(), FsError> {
    let current = stamp(path)?;
    expected.ensure_unchanged(path, &current)
}

/// Follows symlinks (relative ones against their own directory) to the final path. The final
/// target need not exist, so writing through a dangling link creates its target.
pub fn resolve_symlinks(path: &Path) -> Result<PathBuf, FsError> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        match fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&current)
                    .map_err(|e| FsError::from_io(&current, "read the symlink", e))?;
                current = match current.parent() {
                    Some(dir) if link.is_relative() => dir.join(link),
                    _ => link,
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(FsError::from_io(&current, "stat the path", e)),
        }
    }
    Err(FsError::SymlinkLoop {
        path: path.to_path_buf(),
    })
}

/// Atomically replaces (or creates) the file at `path` with `bytes`; see [`stage_write`] for
/// the mode rule. The parent directory must exist.
pub fn write_atomic(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<(), FsError> {
    stage_write(path, bytes, mode, false)?.commit().map(drop)
}

/// Like [`write_atomic`], but first creates missing parent directories (`mkdir -p`).
pub fn write_atomic_create_dirs(
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<(), FsError> {
    stage_write(path, bytes, mode, true)?.commit().map(drop)
}

/// A fully written and fsynced temporary file waiting to be renamed over its target.
/// Dropping it without [`StagedWrite::commit`] deletes the temporary file.
#[derive(Debug)]
pub struct StagedWrite {
    temp: NamedTempFile,
    target: PathBuf,
}

/// First half of an atomic write: resolves symlinks, writes `bytes` to a uniquely named
/// temporary file next to the target, sets its mode and fsyncs it. Nothing visible changes
/// until [`StagedWrite::commit`]; this split lets a batch stage every file before touching any.
///
/// Mode: `Some(m)` is applied as given; `None` keeps the existing file's mode, or for a new
/// file uses 0666 minus the umask like any ordinary file creation.
pub fn stage_write(
    path: &Path,
    bytes: &[u8],
    mode: Option<u32>,
    create_dirs: bool,
) -> Result<StagedWrite, FsError> {
    let target = resolve_symlinks(path)?;
    let existing_mode = existing_file_mode(&target)?;
    let dir = parent_dir(&target);
    ensure_dir(&dir, create_dirs)?;

    let mut temp = tempfile::Builder::new()
        .prefix(&temp_prefix(&target))
        .suffix(".fen-tmp")
        .permissions(Permissions::from_mode(NEW_FILE_MODE))
        .tempfile_in(&dir)
        .map_err(|e| FsError::from_io(&dir, "create a temporary file in this directory", e))?;
    let temp_path = temp.path().to_path_buf();
    temp.write_all(bytes)
        .map_err(|e| FsError::from_io(&temp_path, "write the temporary file", e))?;
    if let Some(m) = mode.or(existing_mode) {
        temp.as_file()
            .set_permissions(Permissions::from_mode(m))
            .map_err(|e| FsError::from_io(&temp_path, "set the file mode", e))?;
    }
    temp.as_file()
        .sync_all()
        .map_err(|e| FsError::from_io(&temp_path, "fsync the temporary file", e))?;
    Ok(StagedWrite { temp, target })
}

impl StagedWrite {
    /// The file this write will replace (symlinks already resolved).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the temporary file over the target and fsyncs the directory. Returns the target.
    pub fn commit(self) -> Result<PathBuf, FsError> {
        let StagedWrite { temp, target } = self;
        // On failure `persist` hands the temp file back; dropping it deletes it.
        temp.persist(&target)
            .map_err(|e| FsError::from_io(&target, "rename the new content into place", e.error))?;
        sync_dir(&parent_dir(&target));
        Ok(target)
    }
}

/// Mode bits of an existing regular file at `target`, after checking that it is writable
/// (renaming over a read-only file would silently bypass its protection).
fn existing_file_mode(target: &Path) -> Result<Option<u32>, FsError> {
    let meta = match fs::metadata(target) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(FsError::from_io(target, "stat the file", e)),
    };
    if !meta.is_file() {
        return Err(FsError::NotAFile {
            path: target.to_path_buf(),
        });
    }
    // Opening for write (without truncating) asks the kernel whether we may write the file.
    OpenOptions::new()
        .write(true)
        .open(target)
        .map_err(|e| match e.kind() {
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                FsError::PermissionDenied {
                    path: target.to_path_buf(),
                    action: "write the file",
                    advice: "the file is read-only; change its mode first if it really should be edited",
                }
            }
            _ => FsError::from_io(target, "open the file for writing", e),
        })?;
    Ok(Some(meta.permissions().mode() & 0o7777))
}

/// Directory holding `path` (`.` for a bare file name).
fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes sure `dir` exists, creating it (and its parents) only when asked.
fn ensure_dir(dir: &Path, create: bool) -> Result<(), FsError> {
    if dir.is_dir() {
        return Ok(());
    }
    if !create {
        return Err(FsError::ParentMissing {
            dir: dir.to_path_buf(),
        });
    }
    fs::create_dir_all(dir).map_err(|e| FsError::from_io(dir, "create the directory", e))
}

/// Hidden, recognisable temp-name prefix: `.<file name>.`.
fn temp_prefix(target: &Path) -> String {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.")
}

/// Fsyncs a directory so the rename itself survives a crash. Best effort: the rename already
/// happened, and some file systems refuse fsync on directories, so a failure here is not
/// reported as a failed write.
fn sync_dir(dir: &Path) {
    if let Ok(handle) = File::open(dir) {
        let _ = handle.sync_all();
    }
}

/// Expands `~` and `~/...` to the home directory; other paths are returned as given (relative
/// paths resolve against the process working directory, which is the session's).
pub fn expand_path(path: &str) -> std::path::PathBuf {
    if path == "~" || path.starts_with("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return std::path::PathBuf::from(home)
                .join(path.trim_start_matches('~').trim_start_matches('/'));
        }
    }
    std::path::PathBuf::from(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamp_detects_same_size_content_change_but_not_touch() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        fs::write(&path, "hello").unwrap();
        let before = stamp(&path).unwrap();
        assert_eq!(before.size, 5);
        assert!(check_fresh(&path, &before).is_ok());

        // touch: new mtime, same content -> still fresh
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        let touched = stamp(&path).unwrap();
        assert_ne!(touched.mtime_ns, before.mtime_ns);
        assert!(check_fresh(&path, &before).is_ok());

        fs::write(&path, "jello").unwrap();
        let err = check_fresh(&path, &before).unwrap_err().to_string();
        assert!(err.contains("changed on disk since last read"), "{err}");
        assert!(err.contains("content changed, same size"), "{err}");

        fs::write(&path, "hello!").unwrap();
        let err = check_fresh(&path, &before).unwrap_err().to_string();
        assert!(err.contains("size 5 -> 6 bytes"), "{err}");
    }

    #[test]
    fn write_atomic_creates_replaces_and_keeps_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        write_atomic(&path, b"#!/bin/sh\n", Some(0o755)).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o755
        );
        write_atomic(&path, b"#!/bin/sh\necho hi\n", None).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"#!/bin/sh\necho hi\n");
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o755
        );
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            1,
            "temp file left"
        );
    }

    #[test]
    fn write_atomic_parent_dirs_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/y/z.txt");
        let err = write_atomic(&path, b"z", None).unwrap_err();
        assert!(matches!(err, FsError::ParentMissing { .. }), "{err}");
        write_atomic_create_dirs(&path, b"z", None).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"z");
    }

    #[test]
    fn write_through_symlink_keeps_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real.txt");
        let link = dir.path().join("link.txt");
        fs::write(&target, "old").unwrap();
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        write_atomic(&link, b"new", None).unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read(&target).unwrap(), b"new");
    }

    #[test]
    fn symlink_loop_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::os::unix::fs::symlink(&b, &a).unwrap();
        std::os::unix::fs::symlink(&a, &b).unwrap();
        let err = write_atomic(&a, b"x", None).unwrap_err();
        assert!(matches!(err, FsError::SymlinkLoop { .. }), "{err}");
    }

    #[test]
    fn dropped_stage_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        fs::write(&path, "keep").unwrap();
        let staged = stage_write(&path, b"new", None, false).unwrap();
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 2);
        drop(staged);
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        assert_eq!(fs::read(&path).unwrap(), b"keep");
    }

    #[test]
    fn directory_is_not_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = read_with_stamp(dir.path()).unwrap_err();
        assert!(matches!(err, FsError::NotAFile { .. }), "{err}");
        let err = write_atomic(dir.path(), b"x", None).unwrap_err();
        assert!(matches!(err, FsError::NotAFile { .. }), "{err}");
    }
}
