//! `api.log`: one JSON object a line to `$XDG_STATE_HOME/fen/logs.jsonl`, and to stderr when
//! `FEN_LOG` allows (`FEN_LOG=debug|info|warn|error`; unset: nothing on stderr).

use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        match s.to_ascii_lowercase().as_str() {
            "debug" | "trace" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warn" | "warning" => Some(Level::Warn),
            "error" => Some(Level::Error),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

pub struct Logger {
    file: PathBuf,
    /// The log file, opened (and its directory made) at the first record, then kept open.
    handle: std::cell::RefCell<Option<std::fs::File>>,
    /// Lowest level written to the file.
    file_level: Level,
    /// Lowest level echoed to stderr, when `FEN_LOG` is set.
    stderr_level: Option<Level>,
}

impl Logger {
    pub fn new(state_dir: &std::path::Path) -> Logger {
        let env = std::env::var("FEN_LOG").ok();
        let stderr_level = env.as_deref().and_then(Level::parse);
        Logger {
            file: state_dir.join("logs.jsonl"),
            handle: std::cell::RefCell::new(None),
            file_level: stderr_level.map_or(Level::Info, |l| l.min(Level::Info)),
            stderr_level,
        }
    }

    /// Writes one record. Logging never fails the caller: an unwritable log is dropped.
    pub fn log(&self, level: Level, owner: &str, msg: &str) {
        if self.stderr_level.is_some_and(|min| level >= min) {
            eprintln!("[{}] {owner}: {msg}", level.as_str());
        }
        if level < self.file_level {
            return;
        }
        let ts = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        let line =
            serde_json::json!({"ts": ts, "level": level.as_str(), "owner": owner, "msg": msg});
        let mut handle = self.handle.borrow_mut();
        if handle.is_none() {
            if let Some(dir) = self.file.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            *handle = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.file)
                .ok();
        }
        if let Some(f) = handle.as_mut() {
            // One write per record (O_APPEND) so concurrent writers never interleave a line.
            let _ = f.write_all(format!("{line}\n").as_bytes());
        }
    }
}
