//! The pure-Rust core of fen's JSONL session storage.
//!
//! A session is one file of JSON records, one a line: a `session` header, then `message`,
//! `compaction`, `extension-state` and `branch` entries. This core only knows a record's `type` and
//! its ids; everything else is opaque `serde_json::Value`.
//!
//! - [`append`]: the single writer ([`SessionWriter`]): whole lines, one `write(2)` each,
//!   `sync()` at turn boundaries, never appends onto a torn last line.
//! - [`lease`]: one writer per session ([`Lease`]), `SessionBusy { pid, host }` otherwise.
//! - [`reader`]: tolerant reader (whole file, or streaming), resume from the latest
//!   compaction by scanning backwards, cheap session listing.
//! - [`scan`]: the whole-file validation behind `read_all` and resume: the file mapped, lines
//!   validated in parallel, records kept as spans ([`Record`], [`SessionBytes`]).
//! - [`doctor`]: integrity checks and a non-destructive repair.
//! - [`branch`]: branches of the conversation inside one file (`branch` records).

pub mod append;
pub mod branch;
pub mod doctor;
pub mod lease;
mod quick;
pub mod reader;
pub mod scan;

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

pub use append::SessionWriter;
pub use doctor::{
    doctor, repair, DoctorIssue, DoctorReport, IssueCode, RepairChange, RepairReport, Severity,
};
pub use lease::Lease;
pub use reader::{
    latest_session, list_sessions, read_all, read_from_latest_compaction, resume_at, BadLine,
    BadLineKind, Entry, ReadReport, RecordIter, ResumeReport, SessionSummary,
};
pub use scan::{Record, SessionBytes};

/// Errors of the session storage core.
#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    /// A file-system operation failed.
    /// (The OS error is part of the message, not a `source`: an error chain printed with
    /// `{:#}` would say it twice.)
    #[error("{op} {path}: {error}")]
    Io {
        /// What was being done ("open", "read", "append to", ...).
        op: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        error: std::io::Error,
    },
    /// Another live process holds the session's lease.
    #[error("session in use by pid {pid} on {host} (lease {lock_path}); use --fork to continue in a copy, or delete the lease file if that process is gone")]
    SessionBusy {
        /// The pid recorded in the lease.
        pid: u32,
        /// The host recorded in the lease.
        host: String,
        /// The lease file.
        lock_path: PathBuf,
    },
    /// A record handed to `append_raw` was not one line of valid JSON.
    #[error("invalid record: {0}; pass exactly one JSON value without raw newlines")]
    InvalidRecord(String),
}

impl JsonlError {
    pub(crate) fn io(op: &'static str, path: &Path, source: std::io::Error) -> Self {
        JsonlError::Io {
            op,
            path: path.to_path_buf(),
            error: source,
        }
    }
}

/// Result alias of this module.
pub type Result<T> = std::result::Result<T, JsonlError>;

/// Session file format version written in headers.
pub const SESSION_VERSION: u64 = 2;

/// Longest slug kept verbatim; longer ones are cut and suffixed with a hash (NAME_MAX is 255).
const MAX_SLUG: usize = 180;

/// The session directory of a working directory: `<state_dir>/sessions/<slug>`.
///
/// The slug is `--<path>--` where `/` becomes `-` and every byte outside `[A-Za-z0-9._]`
/// (including a literal `-`) becomes `%XX`, so distinct paths never share a directory
/// (`/a-b` -> `--a%2Db--`, `/a/b` -> `--a-b--`). The leading `/` of an absolute path is
/// dropped; a relative path is marked with `~` (which never appears unescaped otherwise).
pub fn session_dir_for(state_dir: &Path, cwd: &Path) -> PathBuf {
    state_dir.join("sessions").join(cwd_slug(cwd))
}

/// The slug of a working directory (see [`session_dir_for`]).
pub fn cwd_slug(cwd: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let raw = cwd.as_os_str().as_bytes();
    let (marker, body) = match raw.strip_prefix(b"/") {
        Some(rest) => ("", rest),
        None => ("~", raw),
    };
    let mut enc = String::with_capacity(body.len() + 8);
    for &b in body {
        match b {
            b'/' => enc.push('-'),
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'_' => enc.push(b as char),
            _ => enc.push_str(&format!("%{b:02X}")),
        }
    }
    if enc.len() > MAX_SLUG {
        // Keep a readable prefix; the hash of the full path keeps it distinct.
        let mut cut = MAX_SLUG;
        while !enc.is_char_boundary(cut) {
            cut -= 1;
        }
        enc = format!("{}%%{:016x}", &enc[..cut], fnv1a64(raw));
    }
    format!("--{marker}{enc}--")
}

/// FNV-1a: a stable, dependency-free hash for the rare over-long slug.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A fresh session id (UUIDv7: time-ordered).
pub fn new_session_id() -> uuid::Uuid {
    uuid::Uuid::now_v7()
}

/// The file of a new session: `<dir>/<UTC time like 2026-11-21T22-44-58Z>_<id>.jsonl`.
pub fn new_session_path(dir: &Path, now: SystemTime, id: uuid::Uuid) -> PathBuf {
    let stamp = utc_parts(now);
    let name = format!(
        "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}Z_{}.jsonl",
        stamp.0,
        stamp.1,
        stamp.2,
        stamp.3,
        stamp.4,
        stamp.5,
        id.hyphenated()
    );
    dir.join(name)
}

/// RFC 3339 UTC timestamp with milliseconds, e.g. `2026-11-21T22:44:58.123Z`.
pub fn rfc3339_utc(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = utc_parts(t);
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_millis())
        .unwrap_or(0);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
}

/// A session header record (`type = "session"`).
pub fn header_record(
    id: &str,
    cwd: &Path,
    created: SystemTime,
    fen_version: &str,
) -> serde_json::Value {
    serde_json::json!({
        "type": "session",
        "version": SESSION_VERSION,
        "id": id,
        "cwd": cwd.to_string_lossy(),
        "created": rfc3339_utc(created),
        "fen_version": fen_version,
    })
}

/// (year, month, day, hour, minute, second) in UTC; times before 1970 clamp to the epoch.
fn utc_parts(t: SystemTime) -> (i64, u32, u32, u32, u32, u32) {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        ((rem % 3600) / 60) as u32,
        (rem % 60) as u32,
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn slug_is_unambiguous_and_safe() {
        let a = cwd_slug(Path::new("/a-b"));
        let b = cwd_slug(Path::new("/a/b"));
        assert_eq!(a, "--a%2Db--");
        assert_eq!(b, "--a-b--");
        assert_ne!(cwd_slug(Path::new("a")), cwd_slug(Path::new("/a")));
        let weird = cwd_slug(Path::new("/x y/ü/%"));
        assert!(weird
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"-%._~".contains(&c)));
        let long = format!("/{}", "d/".repeat(300));
        let s = cwd_slug(Path::new(&long));
        assert!(s.len() < 255, "{}", s.len());
        let long2 = format!("/{}x", "d/".repeat(300));
        assert_ne!(s, cwd_slug(Path::new(&long2)));
    }

    #[test]
    fn session_path_has_utc_time_and_uuid() {
        // 2026-11-21T22:44:58Z
        let t = UNIX_EPOCH + Duration::from_secs(1_795_301_098);
        let id = new_session_id();
        let p = new_session_path(Path::new("/s"), t, id);
        assert_eq!(
            p,
            PathBuf::from(format!("/s/2026-11-21T22-44-58Z_{}.jsonl", id.hyphenated()))
        );
        assert_eq!(id.get_version_num(), 7);
        assert_eq!(rfc3339_utc(t), "2026-11-21T22:44:58.000Z");
    }

    #[test]
    fn session_dir_layout() {
        let d = session_dir_for(Path::new("/st/fen"), Path::new("/home/u/proj"));
        assert_eq!(d, PathBuf::from("/st/fen/sessions/--home-u-proj--"));
    }
}
