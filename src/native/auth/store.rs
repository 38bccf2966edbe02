//! `$XDG_DATA_HOME/fen/auth.json`: one JSON object from a key (a provider name, or an MCP
//! server's URL) to that key's credentials. Created 0600 in a 0700 directory, replaced
//! atomically (a temp file in the same directory, renamed), and refused when others can read
//! it. Changes that depend on the current value (a refresh) run under an exclusive lock on
//! `auth.json.lock`, so two fen processes never both refresh the same token.

use super::AuthError;
use serde_json::{Map, Value};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The credential file.
#[derive(Debug, Clone)]
pub struct Store {
    path: PathBuf,
}

/// An exclusive lock on the store, released on drop.
pub struct Lock {
    _file: nix::fcntl::Flock<File>,
}

impl Store {
    /// `$XDG_DATA_HOME/fen/auth.json` (default `~/.local/share/fen/auth.json`).
    pub fn from_env() -> Store {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        let data = std::env::var_os("XDG_DATA_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".local/share"));
        Store::at(data.join("fen/auth.json"))
    }

    pub fn at(path: PathBuf) -> Store {
        Store { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Creates the directory (0700) when missing.
    fn ensure_dir(&self) -> Result<(), AuthError> {
        let dir = self.dir();
        if !dir.exists() {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| io(dir, e))?;
        }
        Ok(())
    }

    /// The whole file (`{}` when absent). Refuses a file group or others can read or write.
    pub fn load(&self) -> Result<Map<String, Value>, AuthError> {
        let meta = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Map::new()),
            Err(e) => return Err(io(&self.path, e)),
        };
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(AuthError::Permissions {
                path: self.path.clone(),
                mode,
            });
        }
        let text = std::fs::read_to_string(&self.path).map_err(|e| io(&self.path, e))?;
        if text.trim().is_empty() {
            return Ok(Map::new());
        }
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(AuthError::Corrupt {
                path: self.path.clone(),
                message: "not a JSON object".into(),
            }),
            Err(e) => Err(AuthError::Corrupt {
                path: self.path.clone(),
                message: e.to_string(),
            }),
        }
    }

    /// One key's entry.
    pub fn get(&self, key: &str) -> Result<Option<Value>, AuthError> {
        Ok(self.load()?.remove(key))
    }

    /// Writes the whole file atomically (0600).
    fn save(&self, map: &Map<String, Value>) -> Result<(), AuthError> {
        self.ensure_dir()?;
        let dir = self.dir();
        // tempfile creates the file 0600.
        let mut tmp = tempfile::Builder::new()
            .prefix(".auth.json.")
            .tempfile_in(dir)
            .map_err(|e| io(dir, e))?;
        let text = serde_json::to_string_pretty(&Value::Object(map.clone()))
            .map_err(|e| AuthError::Other(e.to_string()))?;
        tmp.write_all(text.as_bytes())
            .and_then(|_| tmp.as_file().sync_all())
            .map_err(|e| io(dir, e))?;
        tmp.persist(&self.path)
            .map_err(|e| io(&self.path, e.error))?;
        Ok(())
    }

    /// Sets (or with `None` removes) one key; returns whether something changed.
    pub fn put(&self, key: &str, value: Option<Value>) -> Result<bool, AuthError> {
        let _lock = self.lock()?;
        let mut map = self.load()?;
        let changed = match value {
            Some(v) => map.insert(key.to_string(), v.clone()) != Some(v),
            None => map.remove(key).is_some(),
        };
        if changed {
            self.save(&map)?;
        }
        Ok(changed)
    }

    /// Writes one key while the caller already holds [`Store::lock`].
    pub fn put_locked(&self, _lock: &Lock, key: &str, value: Value) -> Result<(), AuthError> {
        let mut map = self.load()?;
        map.insert(key.to_string(), value);
        self.save(&map)
    }

    /// Waits for the exclusive lock (blocking: call from the blocking pool).
    pub fn lock(&self) -> Result<Lock, AuthError> {
        self.ensure_dir()?;
        let path = self.path.with_extension("json.lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        let locked = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| io(&path, std::io::Error::from(e)))?;
        Ok(Lock { _file: locked })
    }
}

fn io(path: &Path, e: std::io::Error) -> AuthError {
    AuthError::Io {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_private_and_refused_when_readable_by_others() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::at(dir.path().join("fen/auth.json"));
        assert!(store.load().unwrap().is_empty());
        store
            .put("p", Some(serde_json::json!({"access_token": "x"})))
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(store.path()), 0o600);
        assert_eq!(mode(&dir.path().join("fen")), 0o700);
        assert_eq!(store.get("p").unwrap().unwrap()["access_token"], "x");
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = store.load().unwrap_err().to_string();
        assert!(err.contains("chmod 600"), "{err}");
        std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(store.put("p", None).unwrap());
        assert!(store.get("p").unwrap().is_none());
    }
}
