//! One writer per session: a lease file `<session>.lock` beside the session.
//!
//! Choice (documented in NOTES.md): the lease is a *file with content* — `{"pid":N,"host":"h"}`
//! — created atomically and exclusively, and its owner additionally holds an `flock` on it
//! for its whole life. The content is what users and other hosts see (the CLI can say "in use
//! by pid N"); the flock is what makes stale detection robust on one host:
//!
//! - Creation: the content is written to a private temp file, then `link(2)`ed to the lease
//!   path. `link` fails with `EEXIST` exactly like `O_CREAT|O_EXCL`, but a reader never sees a
//!   half-written lease (a crash between `open(O_EXCL)` and `write` would leave an empty one).
//! - Busy: a lease from another host is always respected. On this host it is busy when its
//!   pid is alive (`kill(pid, 0)` succeeds or fails with `EPERM`) or its flock is held.
//! - Stale (same host, pid dead, flock free): it is broken under its own flock, after checking
//!   the path still names the same inode, so two processes recovering the same stale lease
//!   at once can never delete each other's fresh lease.
//! - Drop releases: the lease file is removed (only if it is still ours) and the flock dropped.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::MetadataExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{JsonlError, Result};

/// Held lease on a session; released (file removed) on drop.
#[derive(Debug)]
pub struct Lease {
    lock_path: PathBuf,
    /// Kept open: holds the flock and identifies our inode at release.
    file: File,
}

/// What a lease file says about its owner.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LeaseOwner {
    /// Owner process id.
    pub pid: u32,
    /// Owner host name.
    pub host: String,
}

/// The lease path of a session file: `<file>.lock`.
pub fn lock_path_for(session: &Path) -> PathBuf {
    let mut s = session.as_os_str().to_owned();
    s.push(".lock");
    PathBuf::from(s)
}

/// This machine's host name (empty string if it cannot be read).
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buf is valid for buf.len() bytes; gethostname NUL-terminates on success
    // (or truncates; we stop at the first NUL or the end either way).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Whether a process with this pid exists on this host.
pub fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 performs only the existence/permission check.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Try a non-blocking exclusive flock; true when we got it.
fn try_flock(file: &File) -> bool {
    // SAFETY: a valid open fd; LOCK_NB never blocks.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Read and parse a lease file's owner; `None` when unreadable or garbled.
pub fn read_owner(lock_path: &Path) -> Option<LeaseOwner> {
    let text = fs::read(lock_path).ok()?;
    serde_json::from_slice(&text).ok()
}

impl Lease {
    /// Acquire the lease of `session`, recovering a stale one; `SessionBusy` if held.
    pub fn acquire(session: &Path) -> Result<Lease> {
        let lock_path = lock_path_for(session);
        let me = LeaseOwner {
            pid: std::process::id(),
            host: hostname(),
        };
        // A few rounds: each round either wins, reports busy, or removed a stale lease.
        for _ in 0..8 {
            if let Some(file) = try_create(&lock_path, &me)? {
                // Nobody else can hold the flock of a brand-new inode.
                try_flock(&file);
                return Ok(Lease { lock_path, file });
            }
            match check_existing(&lock_path, &me.host)? {
                Existing::Gone | Existing::Broken => continue,
                Existing::Busy(owner) => {
                    return Err(JsonlError::SessionBusy {
                        pid: owner.pid,
                        host: owner.host,
                        lock_path,
                    })
                }
            }
        }
        // Someone keeps recreating it: treat as busy with whatever it says now.
        let owner = read_owner(&lock_path).unwrap_or(LeaseOwner {
            pid: 0,
            host: String::new(),
        });
        Err(JsonlError::SessionBusy {
            pid: owner.pid,
            host: owner.host,
            lock_path,
        })
    }

    /// The lease file path.
    pub fn path(&self) -> &Path {
        &self.lock_path
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Remove only if the path still names our inode (never someone else's lease).
        if let (Ok(ours), Ok(now)) = (self.file.metadata(), fs::metadata(&self.lock_path)) {
            if ours.ino() == now.ino() && ours.dev() == now.dev() {
                let _ = fs::remove_file(&self.lock_path);
            }
        }
        // The flock goes away when `file` closes.
    }
}

/// Create the lease atomically with its content; `None` if it already exists.
fn try_create(lock_path: &Path, me: &LeaseOwner) -> Result<Option<File>> {
    let mut tmp_name = lock_path.as_os_str().to_owned();
    // pid + a per-process counter: unique even for threads of one process.
    static SEQ: AtomicU64 = AtomicU64::new(0);
    tmp_name.push(format!(
        ".tmp.{}.{}",
        me.pid,
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = PathBuf::from(tmp_name);
    let body = serde_json::to_vec(me).map_err(|e| JsonlError::InvalidRecord(e.to_string()))?;
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| JsonlError::io("create lease temp", &tmp, e))?;
    let written = f.write_all(&body).and_then(|_| f.sync_all());
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(JsonlError::io("write lease", &tmp, e));
    }
    let linked = fs::hard_link(&tmp, lock_path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(Some(f)),
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(None),
        Err(e) => Err(JsonlError::io("create lease", lock_path, e)),
    }
}

enum Existing {
    /// Vanished between our attempts: retry.
    Gone,
    /// Was stale and we removed it: retry.
    Broken,
    /// Held by a live owner.
    Busy(LeaseOwner),
}

/// Decide about an existing lease, breaking it when it is provably stale.
fn check_existing(lock_path: &Path, my_host: &str) -> Result<Existing> {
    let mut file = match OpenOptions::new().read(true).open(lock_path) {
        Ok(f) => f,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Existing::Gone),
        Err(e) => return Err(JsonlError::io("open lease", lock_path, e)),
    };
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .map_err(|e| JsonlError::io("read lease", lock_path, e))?;
    // A garbled lease (written by something else) counts as a dead owner on this host,
    // but only if nobody holds its flock.
    let owner: LeaseOwner = serde_json::from_slice(&text).unwrap_or(LeaseOwner {
        pid: 0,
        host: my_host.to_string(),
    });
    if owner.host != my_host || pid_alive(owner.pid) {
        return Ok(Existing::Busy(owner));
    }
    if !try_flock(&file) {
        return Ok(Existing::Busy(owner));
    }
    // Under the flock: is the path still this inode? (Another recoverer may have replaced it.)
    let ours = file
        .metadata()
        .map_err(|e| JsonlError::io("stat lease", lock_path, e))?;
    match fs::metadata(lock_path) {
        Ok(now) if now.ino() == ours.ino() && now.dev() == ours.dev() => {
            match fs::remove_file(lock_path) {
                Ok(()) => Ok(Existing::Broken),
                Err(e) if e.kind() == ErrorKind::NotFound => Ok(Existing::Gone),
                Err(e) => Err(JsonlError::io("remove stale lease", lock_path, e)),
            }
        }
        _ => Ok(Existing::Gone),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_pid_is_alive_and_bogus_is_not() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
    }

    #[test]
    fn acquire_release_reacquire() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("s.jsonl");
        let l = Lease::acquire(&s).unwrap();
        let owner = read_owner(l.path()).unwrap();
        assert_eq!(owner.pid, std::process::id());
        drop(l);
        assert!(!lock_path_for(&s).exists());
        let _again = Lease::acquire(&s).unwrap();
    }

    #[test]
    fn other_host_lease_is_respected() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("s.jsonl");
        fs::write(
            lock_path_for(&s),
            br#"{"pid":1,"host":"elsewhere.invalid"}"#,
        )
        .unwrap();
        match Lease::acquire(&s) {
            Err(JsonlError::SessionBusy { pid, host, .. }) => {
                assert_eq!(pid, 1);
                assert_eq!(host, "elsewhere.invalid");
            }
            other => panic!("expected busy, got {other:?}"),
        }
    }

    #[test]
    fn garbled_lease_without_flock_is_recovered() {
        let dir = tempfile::tempdir().unwrap();
        let s = dir.path().join("s.jsonl");
        fs::write(lock_path_for(&s), b"").unwrap();
        let l = Lease::acquire(&s).unwrap();
        assert_eq!(read_owner(l.path()).unwrap().pid, std::process::id());
    }
}
