//! bubblewrap tier: the `bwrap` argument list for one command. Read-only `/`, fresh `/dev` and
//! `/proc`, read-write binds of the writable roots, read-only re-binds of git metadata and
//! carve-outs inside them, secrets masked (empty tmpfs over directories, `/dev/null` over
//! files), new pid namespace, optional new network namespace. Every bind target already
//! exists, so bwrap never has to create a mount point in the user's tree.
//!
//! No `--new-session`: fen already starts bwrap in a new session without a controlling
//! terminal (the TIOCSTI escape `--new-session` guards against needs one), and a bwrap session
//! would take the sandbox out of fen's process group, so a timeout or cancel that signals
//! bwrap before it armed `--die-with-parent` left the command running (seen in tests). Kept in
//! the group, the pid namespace's init dies with the group kill and takes every process of the
//! namespace with it, `setsid` escapees included.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex};

use super::git::{self, GitProtections, WalkLimits};
use super::policy::{RootKind, SandboxPolicy};
use super::stamp::{self, Watch};

/// The prepared argument list and what was done to build it.
#[derive(Debug, Clone)]
pub struct BwrapArgs {
    /// Arguments for `bwrap`, ending with `--`; the command and its arguments follow.
    pub args: Vec<OsString>,
    /// Roots that exist and were bound writable (canonical paths).
    pub writable: Vec<PathBuf>,
    /// The git walk result.
    pub git: GitProtections,
}

/// The arguments for one policy without `--chdir` and the final `--`, with what is needed to
/// tell whether they are still exact: the stamps of everything the build looked at, and the
/// identity (device, inode) of every bind source.
#[derive(Debug)]
pub struct Prepared {
    /// The sandbox arguments (mounts, namespaces, capabilities).
    pub args: Vec<OsString>,
    /// Roots that exist and were bound writable (canonical paths).
    pub writable: Vec<PathBuf>,
    /// The git walk result.
    pub git: GitProtections,
    /// Identities of the bind sources, in argument order: a sandbox started with `args` still
    /// shows the right files while these are the same (a file replaced by a rename would
    /// otherwise stay bound at its old inode).
    pub binds: Vec<Option<(u64, u64)>>,
    watch: Watch,
}

/// Builds the arguments for `policy`, with `cwd` as the command's working directory.
/// Always `--cap-drop ALL`: run by root, bwrap otherwise keeps root's capabilities inside and
/// a command could simply remount `/` read-write.
pub fn args(policy: &SandboxPolicy, cwd: Option<&Path>) -> BwrapArgs {
    let p = build(policy, cwd_anchor(policy, cwd));
    let mut a = p.args;
    if let Some(c) = cwd {
        a.push("--chdir".into());
        a.push(c.as_os_str().to_os_string());
    }
    a.push("--".into());
    BwrapArgs {
        args: a,
        writable: p.writable,
        git: p.git,
    }
}

/// A cached preparation: the policy and the `.git` entry of the command's repository when
/// the walk of the roots does not reach it.
type CacheKey = (SandboxPolicy, Option<PathBuf>);

/// Preparations of recent policies; rebuilt when a watched path changes.
static CACHE: Mutex<Vec<(CacheKey, Arc<Prepared>)>> = Mutex::new(Vec::new());
const CACHE_SIZE: usize = 8;

/// The preparation for `policy` and a command running in `cwd`, reused while every path the
/// last build looked at has the same stamp (one `lstat` per watched path instead of a walk),
/// else built again.
pub fn cached(policy: &SandboxPolicy, cwd: Option<&Path>) -> Arc<Prepared> {
    let key: CacheKey = (policy.clone(), cwd_anchor(policy, cwd));
    let hit = {
        let c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        c.iter().find(|(k, _)| *k == key).map(|(_, a)| a.clone())
    };
    if let Some(a) = hit {
        if a.watch.unchanged() {
            return a;
        }
    }
    let fresh = Arc::new(build(policy, key.1.clone()));
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    c.retain(|(k, _)| *k != key);
    if c.len() >= CACHE_SIZE {
        c.remove(0);
    }
    c.push((key, fresh.clone()));
    fresh
}

/// The `.git` entry of the repository `cwd` belongs to, when it lies in a writable root the
/// walk does not search (a repository under `/tmp`, say) and is not the workspace's own
/// (always protected). `None` in the common case, so commands in the workspace share one
/// preparation and one persistent sandbox.
fn cwd_anchor(policy: &SandboxPolicy, cwd: Option<&Path>) -> Option<PathBuf> {
    if !policy.protect_git {
        return None;
    }
    let cwd = fs::canonicalize(cwd?).ok()?;
    let walked: Vec<PathBuf> = policy
        .writable_roots
        .iter()
        .filter(|r| r.protects_git())
        .filter_map(|r| fs::canonicalize(&r.path).ok())
        .collect();
    if walked.iter().any(|w| cwd.starts_with(w)) {
        return None;
    }
    let entry = git::enclosing(&cwd).0?;
    let ws_entry = workspace(policy).and_then(|w| git::enclosing(&w).0);
    (ws_entry.as_ref() != Some(&entry)).then_some(entry)
}

/// The workspace root, canonical.
fn workspace(policy: &SandboxPolicy) -> Option<PathBuf> {
    policy
        .writable_roots
        .iter()
        .find(|r| r.kind == RootKind::Workspace)
        .and_then(|r| fs::canonicalize(&r.path).ok())
}

fn build(policy: &SandboxPolicy, cwd_anchor: Option<PathBuf>) -> Prepared {
    let started = std::time::SystemTime::now();
    let mut a: Vec<OsString> = Vec::with_capacity(64);
    let mut watched: Vec<PathBuf> = Vec::new();
    let mut push = |parts: &[&std::ffi::OsStr]| a.extend(parts.iter().map(|s| s.to_os_string()));
    push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    push(&["--dev".as_ref(), "/dev".as_ref()]);
    push(&["--proc".as_ref(), "/proc".as_ref()]);

    // Canonical, existing roots, parents before children so nested binds stack correctly.
    watched.extend(policy.writable_roots.iter().map(|r| r.path.clone()));
    let mut writable: Vec<PathBuf> = policy
        .writable_roots
        .iter()
        .filter_map(|r| fs::canonicalize(&r.path).ok())
        .filter(|p| p.is_dir() && p != Path::new("/"))
        .collect();
    writable.sort_by_key(|p| p.components().count());
    writable.dedup();
    watched.extend(writable.iter().cloned());
    for w in &writable {
        push(&["--bind".as_ref(), w.as_os_str(), w.as_os_str()]);
    }

    let git_roots: Vec<PathBuf> = if policy.protect_git {
        policy
            .writable_roots
            .iter()
            .filter(|r| r.protects_git())
            .filter_map(|r| fs::canonicalize(&r.path).ok())
            .collect()
    } else {
        Vec::new()
    };
    // The repository the workspace belongs to (its `.git` may be an ancestor's, or a worktree
    // pointer whose common dir is elsewhere) and the command's, wherever they are.
    let mut anchors = Vec::new();
    if policy.protect_git {
        if let Some(ws) = workspace(policy) {
            let (entry, looked) = git::enclosing(&ws);
            watched.extend(looked);
            anchors.extend(entry);
        }
        anchors.extend(cwd_anchor);
    }
    let git = git::find_with(&git_roots, &anchors, WalkLimits::default());
    watched.extend(git.watch.iter().cloned());

    // Read-only re-binds only matter inside writable roots; elsewhere `/` is read-only already.
    let inside = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut ro: Vec<PathBuf> = git.paths.iter().filter(|p| inside(p)).cloned().collect();
    for p in &policy.read_only {
        watched.push(p.clone());
        if let Ok(c) = fs::canonicalize(p) {
            watched.push(c.clone());
            if inside(&c) && !ro.contains(&c) {
                ro.push(c);
            }
        }
    }
    for p in &ro {
        push(&["--ro-bind".as_ref(), p.as_os_str(), p.as_os_str()]);
    }
    // The read-only `.fen/` is for fen's settings and extensions; its `worktrees/` (`fen -w`)
    // are working trees like any other: writable again, their git metadata still read-only.
    for f in policy
        .read_only
        .iter()
        .filter(|p| p.file_name().is_some_and(|n| n == ".fen"))
    {
        let Ok(w) = fs::canonicalize(f.join("worktrees")) else {
            continue;
        };
        if !w.is_dir() || !inside(&w) {
            continue;
        }
        watched.push(w.clone());
        push(&["--bind".as_ref(), w.as_os_str(), w.as_os_str()]);
        for p in ro.iter().filter(|p| p.starts_with(&w)) {
            push(&["--ro-bind".as_ref(), p.as_os_str(), p.as_os_str()]);
        }
    }

    for h in &policy.hidden {
        // Mask the path as named (a symlinked secret is masked at its target too).
        for p in std::iter::once(h.clone()).chain(fs::canonicalize(h).ok()) {
            watched.push(p.clone());
            match fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => push(&["--tmpfs".as_ref(), p.as_os_str()]),
                Ok(m) if m.is_file() => {
                    push(&["--ro-bind".as_ref(), "/dev/null".as_ref(), p.as_os_str()])
                }
                _ => {}
            }
        }
    }

    push(&["--unshare-pid".as_ref(), "--die-with-parent".as_ref()]);
    if !policy.network {
        push(&["--unshare-net".as_ref()]);
    }
    push(&["--cap-drop".as_ref(), "ALL".as_ref()]);
    let binds = bind_sources(&a)
        .map(|p| stamp::identity(Path::new(p)))
        .collect();
    Prepared {
        watch: Watch::of(watched, started),
        args: a,
        writable,
        git,
        binds,
    }
}

/// The source operand of every `--bind` / `--ro-bind` in `args`.
fn bind_sources(args: &[OsString]) -> impl Iterator<Item = &OsString> {
    args.windows(2)
        .filter(|w| w[0] == "--bind" || w[0] == "--ro-bind")
        .map(|w| &w[1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::sandbox::policy::PolicyInputs;

    fn s(a: &[OsString]) -> Vec<String> {
        a.iter().map(|x| x.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn argv_shape() {
        let t = tempfile::tempdir().unwrap();
        let ws = fs::canonicalize(t.path()).unwrap().join("ws");
        let home = ws.parent().unwrap().join("home");
        fs::create_dir_all(ws.join(".git/hooks")).unwrap();
        fs::write(ws.join(".git/HEAD"), "x").unwrap();
        fs::write(ws.join(".git/config"), "").unwrap();
        fs::create_dir_all(home.join(".ssh")).unwrap();
        fs::create_dir_all(home.join(".config/fen")).unwrap();
        fs::write(home.join(".config/fen/auth.json"), "{}").unwrap();
        let p = SandboxPolicy::build(&PolicyInputs {
            workspace: ws.clone(),
            home: Some(home.clone()),
            ..Default::default()
        });
        let b = args(&p, Some(&ws));
        let v = s(&b.args);
        let joined = v.join(" ");
        assert!(joined.starts_with("--ro-bind / / --dev /dev --proc /proc"));
        let w = ws.display().to_string();
        assert!(joined.contains(&format!("--bind {w} {w}")));
        assert!(joined.contains(&format!("--ro-bind {w}/.git/config {w}/.git/config")));
        assert!(joined.contains(&format!("--ro-bind {w}/.git/hooks {w}/.git/hooks")));
        assert!(joined.contains(&format!("--tmpfs {}/.ssh", home.display())));
        assert!(joined.contains(&format!(
            "--ro-bind /dev/null {}/.config/fen/auth.json",
            home.display()
        )));
        // Missing secrets and the missing .fen carve-out create no mount points.
        assert!(!joined.contains(".aws") && !joined.contains("/.fen"));
        assert!(joined.contains("--unshare-net") && joined.contains("--cap-drop ALL"));
        assert_eq!(v.last().map(String::as_str), Some("--"));
    }

    #[test]
    fn network_on_keeps_the_net_namespace() {
        let t = tempfile::tempdir().unwrap();
        let mut p = SandboxPolicy::build(&PolicyInputs {
            workspace: t.path().to_path_buf(),
            network: true,
            ..Default::default()
        });
        p.protect_git = false;
        let v = s(&args(&p, None).args);
        assert!(!v.iter().any(|x| x == "--unshare-net"));
    }
}
