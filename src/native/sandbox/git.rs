//! Finds the git metadata to keep read-only inside the writable roots: for every repository
//! under a root (at any depth, bounded), its `config` and `hooks`, the `.git` pointer file of
//! worktrees and submodules, and in each worktree gitdir the `commondir`, `gitdir` and
//! `config.worktree` files that say where config and hooks come from. Objects, refs, the index
//! and logs stay writable, so commits, branches and worktrees keep working.
//!
//! Repositories outside the searched roots are reached through their links: a worktree's
//! gitdir names its common directory (`commondir`), whose config and hooks are protected
//! wherever it lives, and [`enclosing`] finds the repository a directory (the workspace, the
//! command's working directory) belongs to. Temp and cache roots are never walked: `/tmp` is
//! shared by every program of the machine and changes with every `mktemp`, so a walk there
//! would cost a read of each entry per command and never stay cached.

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
    /// Git directories already protected (a common dir is reached from each of its worktrees).
    seen: Vec<PathBuf>,
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
    find_with(roots, &[], limits)
}

/// [`find`], plus the repositories of the `.git` entries in `anchors` (from [`enclosing`]),
/// wherever they are.
pub fn find_with(roots: &[PathBuf], anchors: &[PathBuf], limits: WalkLimits) -> GitProtections {
    let mut out = GitProtections::default();
    for a in anchors {
        protect_entry(a, &mut out);
    }
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
                    if ft.is_dir() || ft.is_file() {
                        protect_entry(&e.path(), &mut out);
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

/// Protects the repository of one `.git` entry: a git directory, or a pointer file (worktree,
/// submodule) and the gitdir it names.
fn protect_entry(path: &Path, out: &mut GitProtections) {
    out.watch.push(path.to_path_buf());
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => protect_gitdir(path, out),
        Ok(m) if m.is_file() => {
            out.add(path.to_path_buf());
            if let Some(gd) = read_pointer(path) {
                protect_gitdir(&gd, out);
            }
        }
        _ => {}
    }
}

/// The `.git` entry of the repository `dir` belongs to: `dir/.git` or the nearest ancestor's.
/// Returns it with every path looked at (to watch: a repository created later at any of
/// them changes the answer).
pub fn enclosing(dir: &Path) -> (Option<PathBuf>, Vec<PathBuf>) {
    let mut looked = Vec::new();
    for a in dir.ancestors() {
        let g = a.join(".git");
        looked.push(g.clone());
        if fs::symlink_metadata(&g).is_ok_and(|m| m.is_dir() || m.is_file()) {
            return (Some(g), looked);
        }
    }
    (None, looked)
}

/// For a workspace inside a linked worktree: the worktree's gitdir (`.git/worktrees/NAME`,
/// with its HEAD, index and logs) and the common directory it shares with the main
/// repository. `None` for an ordinary repository or no repository.
pub fn worktree_dirs(workspace: &Path) -> Option<(PathBuf, PathBuf)> {
    let (entry, _) = enclosing(workspace);
    let entry = entry?;
    if !fs::symlink_metadata(&entry).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let gitdir = read_pointer(&entry)?;
    let common = common_dir(&gitdir)?;
    Some((gitdir, common))
}

/// The common directory a linked gitdir names in its `commondir` file.
pub fn common_dir(gitdir: &Path) -> Option<PathBuf> {
    let text = fs::read_to_string(gitdir.join("commondir")).ok()?;
    let target = text.lines().next()?.trim();
    if target.is_empty() {
        return None;
    }
    fs::canonicalize(gitdir.join(target)).ok()
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
    let key = fs::canonicalize(gitdir).unwrap_or_else(|_| gitdir.to_path_buf());
    if out.seen.contains(&key) {
        return;
    }
    out.seen.push(key);
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
    // A linked gitdir takes config and hooks from its common dir, which may lie anywhere
    // (another writable root such as /tmp): protect it as well.
    if let Some(common) = common_dir(gitdir) {
        protect_one(&common, out, depth + 1);
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
    fn a_worktrees_common_dir_is_protected_wherever_it_is() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        // main/.git with a linked worktree at wt/ (outside the walked root `ws`).
        repo(&root.join("main"));
        let gd = root.join("main/.git/worktrees/wt");
        fs::create_dir_all(&gd).unwrap();
        fs::write(gd.join("HEAD"), "x").unwrap();
        fs::write(gd.join("commondir"), "../..\n").unwrap();
        fs::write(gd.join("gitdir"), "x").unwrap();
        fs::create_dir_all(root.join("ws/wt")).unwrap();
        fs::write(
            root.join("ws/wt/.git"),
            format!("gitdir: {}\n", gd.display()),
        )
        .unwrap();
        let g = find(&[root.join("ws")], WalkLimits::default());
        let has = |p: &str| g.paths.contains(&root.join(p));
        assert!(has("ws/wt/.git") && has("main/.git/worktrees/wt/commondir"));
        assert!(
            has("main/.git/config") && has("main/.git/hooks"),
            "{:?}",
            g.paths
        );
        // From a directory inside the worktree, `enclosing` finds its pointer.
        fs::create_dir_all(root.join("ws/wt/src")).unwrap();
        let (entry, looked) = enclosing(&root.join("ws/wt/src"));
        assert_eq!(entry, Some(root.join("ws/wt/.git")));
        assert_eq!(looked.len(), 2);
        let g = find_with(&[], &[root.join("ws/wt/.git")], WalkLimits::default());
        assert!(g.paths.contains(&root.join("main/.git/config")));
        assert_eq!(
            worktree_dirs(&root.join("ws/wt/src")),
            Some((gd.clone(), root.join("main/.git")))
        );
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
