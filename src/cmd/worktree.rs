//! `fen -w [NAME]` / `--worktree [NAME]`: the session runs in a new git worktree on branch
//! `fen/NAME` under `.fen/worktrees/NAME/` (added to `.git/info/exclude`; the gitignored files
//! listed in `.worktreeinclude` are copied in). On exit it is removed when nothing changed,
//! else fen says how to merge or remove it. `fen worktree list|remove NAME`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .map_err(|e| anyhow::anyhow!("cannot run git: {e}"))?;
    if !out.status.success() {
        anyhow::bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The top of the repository this directory is in.
fn repo_root() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir()?;
    let top = git(&cwd, &["rev-parse", "--show-toplevel"]).map_err(|_| {
        anyhow::anyhow!(
            "--worktree needs a git repository; {} is not in one",
            cwd.display()
        )
    })?;
    Ok(PathBuf::from(top))
}

fn valid_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !name.starts_with('.');
    if !ok {
        anyhow::bail!("worktree name {name:?}: use letters, digits, '-', '_' and '.'");
    }
    Ok(())
}

/// A worktree the session runs in.
pub struct Entered {
    pub root: PathBuf,
    pub path: PathBuf,
    pub name: String,
    pub base: String,
    /// Files copied in from `.worktreeinclude` (not changes of the session).
    pub copied: Vec<String>,
}

/// Creates the worktree and makes it the current directory.
pub fn enter(name: Option<&str>) -> anyhow::Result<Entered> {
    let root = repo_root()?;
    let name = match name {
        Some(n) => n.to_string(),
        None => {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            format!("session-{secs}")
        }
    };
    valid_name(&name)?;
    let path = root.join(".fen/worktrees").join(&name);
    if path.exists() {
        anyhow::bail!(
            "worktree {name} exists ({}); pick another name or `fen worktree remove {name}`",
            path.display()
        );
    }
    // Keep fen's worktrees out of the user's `git status`.
    let common = PathBuf::from(git(&root, &["rev-parse", "--git-common-dir"])?);
    let common = if common.is_absolute() {
        common
    } else {
        root.join(common)
    };
    let exclude = common.join("info/exclude");
    let current = std::fs::read_to_string(&exclude).unwrap_or_default();
    if !current.lines().any(|l| l.trim() == "/.fen/worktrees/") {
        let _ = std::fs::create_dir_all(common.join("info"));
        let mut text = current;
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("/.fen/worktrees/\n");
        std::fs::write(&exclude, text)?;
    }
    let base = git(&root, &["rev-parse", "HEAD"])?;
    let branch = format!("fen/{name}");
    git(
        &root,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            &branch,
            &path.to_string_lossy(),
            "HEAD",
        ],
    )?;
    let copied = copy_included(&root, &path);
    std::env::set_current_dir(&path)?;
    eprintln!("fen: working in {} (branch {branch})", path.display());
    Ok(Entered {
        root,
        path,
        name,
        base,
        copied,
    })
}

/// Copies the gitignored files `.worktreeinclude` lists (gitignore-style lines; `#` comments).
fn copy_included(root: &Path, to: &Path) -> Vec<String> {
    let mut copied = Vec::new();
    let Ok(text) = std::fs::read_to_string(root.join(".worktreeinclude")) else {
        return copied;
    };
    let mut args = vec![
        "ls-files".to_string(),
        "--others".into(),
        "--ignored".into(),
        "--exclude-standard".into(),
        "-z".into(),
        "--".into(),
    ];
    let patterns: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| format!(":(glob){}", l.trim_start_matches('/')))
        .collect();
    if patterns.is_empty() {
        return copied;
    }
    args.extend(patterns);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Ok(out) = Command::new("git").args(&args).current_dir(root).output() else {
        return copied;
    };
    for rel in out.stdout.split(|&b| b == 0).filter(|p| !p.is_empty()) {
        let rel = String::from_utf8_lossy(rel).into_owned();
        if rel.starts_with(".fen/worktrees/") {
            continue;
        }
        let dest = to.join(&rel);
        if let Some(d) = dest.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        if std::fs::copy(root.join(&rel), &dest).is_ok() {
            copied.push(rel);
        }
    }
    copied
}

/// Whether the worktree holds work: changes or commits beyond its base.
fn changed(path: &Path, base: &str, copied: &[String]) -> bool {
    let dirty = git(path, &["status", "--porcelain", "--untracked-files=all"]).map(|s| {
        s.lines()
            .any(|l| l.get(3..).is_none_or(|p| !copied.iter().any(|c| c == p)))
    });
    let ahead = git(path, &["rev-list", "--count", &format!("{base}..HEAD")]).map(|s| s != "0");
    dirty.unwrap_or(true) || ahead.unwrap_or(true)
}

fn remove(root: &Path, name: &str, force: bool) -> anyhow::Result<()> {
    let path = root.join(".fen/worktrees").join(name);
    let p = path.to_string_lossy().into_owned();
    let mut args = vec!["worktree", "remove"];
    if force {
        args.push("--force");
    }
    args.push(&p);
    git(root, &args)?;
    let branch = format!("fen/{name}");
    git(root, &["branch", if force { "-D" } else { "-d" }, &branch])?;
    Ok(())
}

/// On exit: an unchanged worktree goes; a changed one stays, with what to do next.
pub fn leave(e: &Entered) {
    let _ = std::env::set_current_dir(&e.root);
    if !changed(&e.path, &e.base, &e.copied) {
        match remove(&e.root, &e.name, true) {
            Ok(()) => eprintln!("fen: worktree {} had no changes and was removed", e.name),
            Err(err) => eprintln!("fen: could not remove worktree {}: {err}", e.name),
        }
        return;
    }
    eprintln!(
        "fen: worktree {name} has changes (branch fen/{name} in {path}).\n  merge: commit them there, then `git merge fen/{name}`\n  remove: `fen worktree remove {name}` (discards them)",
        name = e.name,
        path = e.path.display()
    );
}

/// `fen worktree list`.
pub fn list() -> anyhow::Result<ExitCode> {
    let root = repo_root()?;
    let dir = root.join(".fen/worktrees");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .map(|r| {
            r.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    if names.is_empty() {
        println!("no fen worktrees in {}", root.display());
    }
    for n in names {
        let path = dir.join(&n);
        let dirty = git(&path, &["status", "--porcelain"])
            .map(|s| if s.is_empty() { "clean" } else { "changed" })
            .unwrap_or("?");
        println!("{n}  fen/{n}  {dirty}  {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `fen worktree remove NAME`.
pub fn remove_cmd(name: &str) -> anyhow::Result<ExitCode> {
    valid_name(name)?;
    let root = repo_root()?;
    if !root.join(".fen/worktrees").join(name).exists() {
        anyhow::bail!("no worktree {name}; `fen worktree list` shows them");
    }
    remove(&root, name, true)?;
    println!("removed worktree {name} and branch fen/{name}");
    Ok(ExitCode::SUCCESS)
}
