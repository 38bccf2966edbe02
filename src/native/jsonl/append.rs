//! The single writer of a session file.
//!
//! Every record is serialized to one buffer ending in `\n` and handed to the kernel in one
//! `write(2)` on an `O_APPEND` descriptor, so a crash leaves at most one torn last line.
//! `sync()` (fsync) is for turn boundaries. Opening for append first terminates a torn
//! last line with `\n`, so the fragment stays its own (bad) line and new records start clean.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::lease::Lease;
use super::{JsonlError, Result};

/// Appends whole JSON lines to one session file while holding its lease.
#[derive(Debug)]
pub struct SessionWriter {
    path: PathBuf,
    file: File,
    /// Reused serialization buffer (one allocation for the writer's life).
    buf: Vec<u8>,
    /// True when opening found a torn last line and terminated it.
    repaired_torn_tail: bool,
    // Declared last: dropped after the file is closed.
    lease: Lease,
}

impl SessionWriter {
    /// Open (creating if needed) `path` for appending; takes the lease first.
    ///
    /// Fails with `SessionBusy` when another live writer holds it.
    pub fn open(path: &Path) -> Result<SessionWriter> {
        let lease = Lease::acquire(path)?;
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(|e| JsonlError::io("open for append", path, e))?;
        let repaired_torn_tail = terminate_torn_tail(&mut file, path)?;
        Ok(SessionWriter {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(4096),
            repaired_torn_tail,
            lease,
        })
    }

    /// Create a new session file with `header` as its first line; fails if the file exists.
    pub fn create(path: &Path, header: &Value) -> Result<SessionWriter> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| JsonlError::io("create dir", dir, e))?;
        }
        let lease = Lease::acquire(path)?;
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(path)
            .map_err(|e| JsonlError::io("create session", path, e))?;
        let mut w = SessionWriter {
            path: path.to_path_buf(),
            file,
            buf: Vec::with_capacity(4096),
            repaired_torn_tail: false,
            lease,
        };
        w.append(header)?;
        Ok(w)
    }

    /// Append one record as one whole line in a single write.
    pub fn append(&mut self, record: &Value) -> Result<()> {
        self.buf.clear();
        // Serializing a Value cannot fail (keys are strings); map it anyway, never panic.
        serde_json::to_writer(&mut self.buf, record)
            .map_err(|e| JsonlError::InvalidRecord(e.to_string()))?;
        self.buf.push(b'\n');
        write_line(&mut self.file, &self.buf, &self.path)
    }

    /// Append an already-serialized JSON record (no trailing newline needed).
    ///
    /// Rejects text with a raw newline or that is not valid JSON, so one call is one line.
    pub fn append_raw(&mut self, json: &[u8]) -> Result<()> {
        let json = json.strip_suffix(b"\n").unwrap_or(json);
        if memchr::memchr2(b'\n', b'\r', json).is_some() {
            return Err(JsonlError::InvalidRecord(
                "raw newline inside the record".into(),
            ));
        }
        serde_json::from_slice::<serde::de::IgnoredAny>(json)
            .map_err(|e| JsonlError::InvalidRecord(e.to_string()))?;
        self.buf.clear();
        self.buf.extend_from_slice(json);
        self.buf.push(b'\n');
        write_line(&mut self.file, &self.buf, &self.path)
    }

    /// fsync the file (call at turn boundaries).
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| JsonlError::io("sync", &self.path, e))
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The held lease.
    pub fn lease(&self) -> &Lease {
        &self.lease
    }

    /// Whether opening found a torn last line (and started a fresh line after it).
    pub fn repaired_torn_tail(&self) -> bool {
        self.repaired_torn_tail
    }
}

/// One `write(2)` for the whole line; a short write (disk full, signal) is finished with
/// further writes so we never leave a half line behind while the process lives.
fn write_line(file: &mut File, line: &[u8], path: &Path) -> Result<()> {
    let n = loop {
        match file.write(line) {
            Ok(n) => break n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(JsonlError::io("append to", path, e)),
        }
    };
    if n < line.len() {
        file.write_all(&line[n..])
            .map_err(|e| JsonlError::io("append to", path, e))?;
    }
    Ok(())
}

/// If the file is non-empty and does not end in `\n`, write one; true when it did.
fn terminate_torn_tail(file: &mut File, path: &Path) -> Result<bool> {
    let len = file
        .metadata()
        .map_err(|e| JsonlError::io("stat", path, e))?
        .len();
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))
        .and_then(|_| file.read_exact(&mut last))
        .map_err(|e| JsonlError::io("read tail of", path, e))?;
    if last[0] == b'\n' {
        return Ok(false);
    }
    write_line(file, b"\n", path)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn append_writes_whole_lines_and_fixes_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, b"{\"type\":\"session\"}\n{\"type\":\"mes").unwrap();
        let mut w = SessionWriter::open(&p).unwrap();
        assert!(w.repaired_torn_tail());
        w.append(&json!({"type":"message","id":"a"})).unwrap();
        w.append_raw(br#"{"type":"message","id":"b"}"#).unwrap();
        assert!(w.append_raw(b"{\"a\":1}\n{\"b\":2}").is_err());
        assert!(w.append_raw(b"{not json").is_err());
        w.sync().unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[1], "{\"type\":\"mes");
        assert_eq!(lines[3], r#"{"type":"message","id":"b"}"#);
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn create_refuses_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/s.jsonl");
        let w = SessionWriter::create(&p, &json!({"type":"session"})).unwrap();
        drop(w);
        assert!(SessionWriter::create(&p, &json!({"type":"session"})).is_err());
    }
}
