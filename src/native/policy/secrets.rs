//! Secret files inside a directory (`.env`, `*.pem`, `id_rsa`, `credentials.json`, ...): found
//! by a bounded walk so the sandbox can mask them from sandboxed commands, and so a recursive
//! read (`grep -r`) that would print them to the model is judged as the secret read it is. The walk ignores
//! `.gitignore` (secrets are usually ignored) but skips the heavy directories no secret lives
//! in, and stops at a depth and an entry budget so a large tree costs a bounded time.

use std::path::{Path, PathBuf};

use super::paths::secret_name;

/// How deep below the root secrets are looked for.
pub const MAX_DEPTH: usize = 6;
/// How many entries the walk reads at most.
pub const MAX_ENTRIES: usize = 20_000;

/// Directories never walked: generated or vendored trees, and git's own data.
const SKIP: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".tox",
    "dist",
    "build",
    ".next",
    ".cache",
    "vendor",
];

/// How long a walk's answer is reused for the same directory. A secret the model creates in
/// the meantime is no secret from the model; the ones that matter were there before.
const REUSE: std::time::Duration = std::time::Duration::from_secs(30);

/// [`in_tree`], reusing the answer for the same directory for a while: a session that greps
/// recursively again and again walks its tree once.
pub fn in_tree_cached(root: &Path) -> Vec<PathBuf> {
    static WALKS: Recent<PathBuf, Vec<PathBuf>> = Recent::new(256);
    WALKS.get_or(root.to_path_buf(), || in_tree(root))
}

/// Answers reused for [`REUSE`] (a model repeats its commands), by key; at most `cap` kept.
pub struct Recent<K, V> {
    map: std::sync::Mutex<Option<std::collections::HashMap<K, (std::time::Instant, V)>>>,
    cap: usize,
}

impl<K: std::hash::Hash + Eq, V: Clone> Recent<K, V> {
    pub const fn new(cap: usize) -> Self {
        Recent {
            map: std::sync::Mutex::new(None),
            cap,
        }
    }

    /// The answer for `key` computed within [`REUSE`], else `compute()` (run unlocked).
    pub fn get_or(&self, key: K, compute: impl FnOnce() -> V) -> V {
        if let Ok(m) = self.map.lock() {
            if let Some((at, v)) = m.as_ref().and_then(|m| m.get(&key)) {
                if at.elapsed() < REUSE {
                    return v.clone();
                }
            }
        }
        let v = compute();
        if let Ok(mut m) = self.map.lock() {
            let m = m.get_or_insert_with(Default::default);
            if m.len() > self.cap {
                m.clear();
            }
            m.insert(key, (std::time::Instant::now(), v.clone()));
        }
        v
    }
}

/// Could a glob's last component match a secret-like name? A cheap test before listing the
/// file system: the pattern names a secret word, or matches one of the usual secret names.
pub fn glob_may_match_secret(last: &str) -> bool {
    const WORDS: &[&str] = &[
        "env",
        "pem",
        "id_",
        "secret",
        "token",
        "credential",
        "private",
        "netrc",
        "pgpass",
        "key",
    ];
    const NAMES: &[&str] = &[
        ".env",
        ".env.local",
        ".env.production",
        "id_rsa",
        "id_ed25519",
        "id_ecdsa",
        "id_dsa",
        "server.pem",
        "secrets.yaml",
        "secret.txt",
        "api_token.txt",
        "credentials.json",
        "credentials",
        ".netrc",
        ".pgpass",
        "private_key",
        "environ",
    ];
    let lower = last.to_ascii_lowercase();
    let literal: String = lower.chars().filter(|c| !"*?[]{}!".contains(*c)).collect();
    if WORDS.iter().any(|w| literal.contains(w)) {
        return true;
    }
    match globset::Glob::new(&lower) {
        Ok(g) => {
            let m = g.compile_matcher();
            NAMES.iter().any(|n| m.is_match(n))
        }
        Err(_) => true,
    }
}

/// The secret-named files under `root` (depth and entries bounded), in walk order.
pub fn in_tree(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(false)
        .follow_links(false)
        .max_depth(Some(MAX_DEPTH))
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && e.file_name().to_str().is_some_and(|n| SKIP.contains(&n)))
        })
        .build();
    for (seen, entry) in walker.flatten().enumerate() {
        if seen >= MAX_ENTRIES {
            break;
        }
        let is_file = entry
            .file_type()
            .is_some_and(|t| t.is_file() || t.is_symlink());
        if is_file && entry.file_name().to_str().is_some_and(secret_name) {
            found.push(entry.into_path());
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_secrets_ignored_or_not_and_skips_heavy_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = dir.path();
        for (p, t) in [
            (".gitignore", ".env\n"),
            (".env", "KEY=1"),
            (".env.example", "KEY="),
            ("config/credentials.json", "{}"),
            ("deploy/server.pem", "x"),
            ("src/main.rs", "fn main() {}"),
            ("node_modules/x/.env", "no"),
        ] {
            let f = r.join(p);
            std::fs::create_dir_all(f.parent().expect("parent")).expect("mkdir");
            std::fs::write(f, t).expect("write");
        }
        let mut got: Vec<String> = in_tree(r)
            .iter()
            .map(|p| p.strip_prefix(r).expect("under").display().to_string())
            .collect();
        got.sort();
        assert_eq!(
            got,
            [".env", "config/credentials.json", "deploy/server.pem"]
        );
    }
}
