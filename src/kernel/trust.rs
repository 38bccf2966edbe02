//! Folder trust: a cloned repository's code never runs unasked. A project's `.fen/extensions/`
//! (and any project setting that loosens permissions) takes effect only once the user trusts
//! the project folder: its repository root, or the working directory outside a repository.
//! The answer is kept in `$XDG_STATE_HOME/fen/trusted.json` as `{"trusted": ["/abs/dir", ...]}`.

use std::path::{Path, PathBuf};

/// The folder a trust decision is about: the repository root of `cwd` (the nearest ancestor
/// holding `.git`), else `cwd` itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

fn store(state_dir: &Path) -> PathBuf {
    state_dir.join("trusted.json")
}

fn read_list(state_dir: &Path) -> Vec<String> {
    std::fs::read_to_string(store(state_dir))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| {
            v.get("trusted").and_then(|a| a.as_array()).map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// Whether the user trusted the project folder of `cwd`.
pub fn is_trusted(state_dir: &Path, cwd: &Path) -> bool {
    is_trusted_root(state_dir, &project_root(cwd))
}

/// Whether the user trusted the project folder `root` (found by [`project_root`]).
pub fn is_trusted_root(state_dir: &Path, root: &Path) -> bool {
    let root = root.to_string_lossy();
    read_list(state_dir).iter().any(|t| *t == root)
}

/// Records that the user trusts the project folder of `cwd` (written atomically: a crash
/// never leaves a half-written list).
pub fn trust(state_dir: &Path, cwd: &Path) -> std::io::Result<PathBuf> {
    let root = project_root(cwd);
    let mut list = read_list(state_dir);
    let key = root.to_string_lossy().into_owned();
    if !list.contains(&key) {
        list.push(key);
    }
    list.sort();
    std::fs::create_dir_all(state_dir)?;
    let text = serde_json::to_string_pretty(&serde_json::json!({ "trusted": list }))
        .unwrap_or_else(|_| "{}".into());
    let tmp = tempfile::NamedTempFile::new_in(state_dir)?;
    std::fs::write(tmp.path(), text)?;
    tmp.persist(store(state_dir)).map_err(|e| e.error)?;
    Ok(root)
}

#[cfg(test)]
mod tests {
    #[test]
    fn trust_is_per_project_root_and_survives_a_reread() {
        let state = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(repo.path().join(".git")).unwrap();
        let sub = repo.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert!(!super::is_trusted(state.path(), &sub));
        let root = super::trust(state.path(), &sub).unwrap();
        assert_eq!(root, repo.path());
        assert!(super::is_trusted(state.path(), repo.path()));
        assert!(super::is_trusted(state.path(), &sub));
        let other = tempfile::tempdir().unwrap();
        assert!(!super::is_trusted(state.path(), other.path()));
    }
}
