//! The spill file: the command's raw output, written off the async thread.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

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
