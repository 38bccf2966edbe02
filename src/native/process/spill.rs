//! The spill file: the command's raw output, written off the async thread.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Chunks in flight to the writer; bounds memory when the disk is slower than the pipe.
const QUEUE: usize = 16;

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A running spill writer; bytes sent are appended to the file in order.
pub struct Spill {
    tx: Option<mpsc::Sender<Vec<u8>>>,
    handle: JoinHandle<std::io::Result<()>>,
    path: PathBuf,
}

impl Spill {
    /// Starts a writer for a new file under `dir` (created if missing).
    pub fn start(dir: &Path) -> Self {
        let path = dir.join(file_name());
        let (tx, rx) = mpsc::channel(QUEUE);
        let (dir, p) = (dir.to_path_buf(), path.clone());
        let handle = tokio::task::spawn_blocking(move || write_all(&dir, &p, rx));
        Self {
            tx: Some(tx),
            handle,
            path,
        }
    }

    /// Appends a chunk; waits (asynchronously) when the writer is behind. A failed writer
    /// drops further chunks; the error is reported by `finish`.
    pub async fn send(&mut self, chunk: Vec<u8>) {
        if let Some(tx) = &self.tx {
            if tx.send(chunk).await.is_err() {
                self.tx = None;
            }
        }
    }

    /// Flushes and closes the file; returns its path, or why it could not be written.
    pub async fn finish(mut self) -> Result<PathBuf, String> {
        self.tx = None;
        match self.handle.await {
            Ok(Ok(())) => Ok(self.path),
            Ok(Err(e)) => Err(format!("could not write {}: {e}", self.path.display())),
            Err(e) => Err(format!("spill writer failed: {e}")),
        }
    }
}

fn write_all(dir: &Path, path: &Path, mut rx: mpsc::Receiver<Vec<u8>>) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut w = std::io::BufWriter::with_capacity(256 * 1024, file);
    while let Some(chunk) = rx.blocking_recv() {
        w.write_all(&chunk)?;
    }
    w.flush()
}

/// `bash-<unix-ms>-<pid>-<n>.log`: unique within this process, sortable by time.
fn file_name() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("bash-{ms}-{}-{n}.log", std::process::id())
}

/// How much spilled output to keep between runs (settings.json `tool_output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneLimits {
    /// Files last written longer ago than this are removed.
    pub max_age: Duration,
    /// Then the oldest files go until the directory holds at most this many bytes.
    pub max_total_bytes: u64,
}

impl Default for PruneLimits {
    fn default() -> Self {
        PruneLimits {
            max_age: Duration::from_secs(7 * 24 * 3600),
            max_total_bytes: 100 * 1024 * 1024,
        }
    }
}

/// Files written this recently are never removed for size: another fen may still be writing
/// them, or have just shown their path to a model.
const IN_FLIGHT: Duration = Duration::from_secs(10 * 60);

/// What [`prune`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PruneReport {
    pub removed: usize,
    pub removed_bytes: u64,
    pub kept: usize,
    pub kept_bytes: u64,
}

/// Bounds the spill directory: removes the regular files older than `limits.max_age`, then the
/// oldest until the rest fit `limits.max_total_bytes` (sparing files younger than ten minutes).
/// Blocking file-system work: run it off the Lua thread. A missing directory is empty.
pub fn prune(dir: &Path, limits: &PruneLimits, now: SystemTime) -> std::io::Result<PruneReport> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(PruneReport::default()),
        Err(e) => return Err(e),
    };
    let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .collect();
    files.sort();
    let mut report = PruneReport::default();
    let age = |t: SystemTime| now.duration_since(t).unwrap_or_default();
    let mut total: u64 = files.iter().map(|f| f.1).sum();
    for (modified, len, path) in files {
        let too_old = age(modified) > limits.max_age;
        let too_big = total > limits.max_total_bytes && age(modified) > IN_FLIGHT;
        if (too_old || too_big) && std::fs::remove_file(&path).is_ok() {
            report.removed += 1;
            report.removed_bytes += len;
            total -= len;
        } else {
            report.kept += 1;
            report.kept_bytes += len;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(dir: &Path, name: &str, len: usize, age: Duration) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, vec![b'x'; len]).unwrap();
        let t = SystemTime::now() - age;
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(t)
            .unwrap();
        p
    }

    /// Issue 11.6: spill files were never pruned.
    #[test]
    fn spill_files_are_never_pruned_by_age_and_size() {
        let dir = tempfile::tempdir().unwrap();
        let hour = Duration::from_secs(3600);
        let old = file(dir.path(), "old.log", 10, 30 * 24 * hour);
        let big1 = file(dir.path(), "a.log", 600, 3 * hour);
        let big2 = file(dir.path(), "b.log", 600, 2 * hour);
        let fresh = file(dir.path(), "c.log", 600, Duration::from_secs(5));
        let limits = PruneLimits {
            max_age: 7 * 24 * hour,
            max_total_bytes: 1000,
        };
        let r = prune(dir.path(), &limits, SystemTime::now()).unwrap();
        // The old one by age; then the oldest big ones until 1000 bytes fit, but never the
        // one still in flight.
        assert!(!old.exists() && !big1.exists() && !big2.exists());
        assert!(fresh.exists());
        assert_eq!((r.removed, r.removed_bytes, r.kept), (3, 1210, 1));
        let missing = prune(&dir.path().join("none"), &limits, SystemTime::now()).unwrap();
        assert_eq!(missing, PruneReport::default());
    }
}
