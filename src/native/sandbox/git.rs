//! Finds the git metadata to keep read-only inside the writable roots: for every repository
//! under a root (at any depth, bounded), its `config` and `hooks`, the `.git` pointer file of
//! worktrees and submodules, and in each worktree gitdir the `commondir`, `gitdir` and
//! `config.worktree` files that say where config and hooks come from. Objects, refs, the index
//! and logs stay writable, so commits, branches and worktrees keep working.

use std::collections::VecDeque;
use std::fs;
use std::path::{Path, PathBuf};

/// Directories never descended into: big, machine-made, and not where repositories live.
pub const SKIP_DIRS: &[&str] = &[
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    ".gradle",
    ".cache",
    "dist",
    ".next",
];

/// Walk bounds: depth below a root, and directories read in all.
#[derive(Debug, Clone, Copy)]
pub struct WalkLimits {
    /// Deepest directory level searched below a root.
    pub max_depth: usize,
    /// Directories read before the walk stops.
    pub max_dirs: usize,
}

impl Default for WalkLimits {
    fn default() -> Self {
        Self {
            max_depth: 12,
            max_dirs: 20_000,
        }
    }
}

/// What the walk found.
#[derive(Debug, Default, Clone)]
pub struct GitProtections {
    /// Existing files and directories to re-bind read-only, deduplicated, in walk order.
    pub paths: Vec<PathBuf>,
    /// Repositories whose `hooks` directory was missing and was created empty so it can be
    /// bound read-only (what `git init` makes anyway; it is inside `.git`, not the tree).
    pub created_hooks: Vec<PathBuf>,
    /// The walk hit `max_dirs` and stopped early.
    pub truncated: bool,
    /// Every path whose state decided the result (directories read, candidate files looked
    /// at): while none of their stamps changes, a new walk would find the same thing.
    pub watch: Vec<PathBuf>,
}

impl GitProtections {
    fn add(&mut self, p: PathBuf) {
        if !self.paths.contains(&p) {
            self.paths.push(p);
        }
    }
}

/// Searches each root for repositories and collects what to protect.
pub fn find(roots: &[PathBuf], limits: WalkLimits) -> GitProtections {
    let mut out = GitProtections::default();
    let mut budget = limits.max_dirs;
    for root in roots {
        let mut queue: VecDeque<(PathBuf, usize)> = VecDeque::new();
        queue.push_back((root.clone(), 0));
        while let Some((dir, depth)) = queue.pop_front() {
            if budget == 0 {
                out.truncated = true;
                return out;
            }
            budget -= 1;
            out.watch.push(dir.clone());
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let name = e.file_name();
                let Ok(ft) = e.file_type() else { continue };
                if name == ".git" {
                    let path = e.path();
                    if ft.is_dir() {
                        protect_gitdir(&path, &mut out);
                    } else if ft.is_file() {
                        // Worktree or submodule: the pointer file itself, then its gitdir.
                        out.watch.push(path.clone());
                        out.add(path.clone());
                        if let Some(gd) = read_pointer(&path) {
                            protect_gitdir(&gd, &mut out);
                        }
                    }
                    continue;
                }
                if ft.is_dir() && depth < limits.max_depth && !SKIP_DIRS.iter().any(|s| name == *s)
                {
                    queue.push_back((e.path(), depth + 1));
                }
            }
        }
    }
    out
}

/// `gitdir: <path>` of a `.git` pointer file, resolved against its directory.
pub fn read_pointer(pointer: &Path) -> Option<PathBuf> {
    let text = fs::read_to_string(pointer).ok()?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    if target.is_empty() {
        return None;
    }
    let p = Path::new(target);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        pointer.parent()?.join(p)
    };
    fs::canonicalize(abs).ok()
}

/// Protects one git directory: config, hooks, and the files of a linked gitdir that redirect
/// config or hooks; recurses into `modules/` (submodule gitdirs) and `worktrees/`.
fn protect_gitdir(gitdir: &Path, out: &mut GitProtections) {
    protect_one(gitdir, out, 0);
}

fn protect_one(gitdir: &Path, out: &mut GitProtections, depth: usize) {
    // Symlinked metadata would let a bind land outside; bind only real entries.
    out.watch.extend(
        [
            "config",
            "config.worktree",
            "commondir",
            "gitdir",
            "hooks",
            "HEAD",
            "worktrees",
            "modules",
        ]
        .iter()
        .map(|f| gitdir.join(f)),
    );
    for f in ["config", "config.worktree", "commondir", "gitdir"] {
        let p = gitdir.join(f);
        if fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            out.add(p);
        }
    }
    let hooks = gitdir.join("hooks");
    match fs::symlink_metadata(&hooks) {
        Ok(m) if m.is_dir() => out.add(hooks),
        Ok(_) => {}
        // Only a real git directory (has HEAD) gets a hooks directory made for it.
        Err(_) if gitdir.join("HEAD").is_file() && !gitdir.join("commondir").exists() => {
            if fs::create_dir(&hooks).is_ok() {
                out.created_hooks.push(hooks.clone());
                out.add(hooks);
            }
        }
        Err(_) => {}
    }
    if depth >= 4 {
        return;
    }
    for sub in ["worktrees", "modules"] {
        let Ok(entries) = fs::read_dir(gitdir.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let p = e.path();
                if p.join("HEAD").is_file() {
                    protect_one(&p, out, depth + 1);
                } else if sub == "modules" {
                    // Submodule names may contain slashes: modules/a/b/HEAD.
                    protect_nested_modules(&p, out, depth + 1);
                }
            }
        }
    }
}

fn protect_nested_modules(dir: &Path, out: &mut GitProtections, depth: usize) {
    if depth >= 6 {
        return;
    }
    out.watch.push(dir.to_path_buf());
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            let p = e.path();
            if p.join("HEAD").is_file() {
                protect_one(&p, out, depth + 1);
            } else {
                protect_nested_modules(&p, out, depth + 1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo(dir: &Path) {
        fs::create_dir_all(dir.join(".git/hooks")).unwrap();
        fs::write(dir.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        fs::write(dir.join(".git/config"), "").unwrap();
    }

    #[test]
    fn finds_nested_and_pointer_repos() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        repo(&root);
        repo(&root.join("a/b/nested"));
        repo(&root.join("node_modules/x"));
        // A worktree whose gitdir is inside the main repository.
        fs::create_dir_all(root.join(".git/worktrees/wt")).unwrap();
        fs::write(root.join(".git/worktrees/wt/HEAD"), "x").unwrap();
        fs::write(root.join(".git/worktrees/wt/commondir"), "../..").unwrap();
        fs::write(root.join(".git/worktrees/wt/gitdir"), "x").unwrap();
        fs::create_dir_all(root.join("wt")).unwrap();
        fs::write(root.join("wt/.git"), "gitdir: ../.git/worktrees/wt\n").unwrap();
        // A repository without hooks gets an empty one.
        fs::create_dir_all(root.join("c/.git")).unwrap();
        fs::write(root.join("c/.git/HEAD"), "x").unwrap();

        let g = find(std::slice::from_ref(&root), WalkLimits::default());
        let has = |p: &str| g.paths.contains(&root.join(p));
        assert!(has(".git/config") && has(".git/hooks"));
        assert!(has("a/b/nested/.git/config") && has("a/b/nested/.git/hooks"));
        assert!(!has("node_modules/x/.git/config"));
        assert!(has("wt/.git"));
        assert!(has(".git/worktrees/wt/commondir") && has(".git/worktrees/wt/gitdir"));
        assert!(has("c/.git/hooks"));
        assert_eq!(g.created_hooks, vec![root.join("c/.git/hooks")]);
        assert!(!g.truncated);
    }

    #[test]
    fn walk_is_bounded() {
        let t = tempfile::tempdir().unwrap();
        for i in 0..20 {
            fs::create_dir_all(t.path().join(format!("d{i}"))).unwrap();
        }
        let g = find(
            &[t.path().to_path_buf()],
            WalkLimits {
                max_depth: 3,
                max_dirs: 5,
            },
        );
        assert!(g.truncated);
    }
}
