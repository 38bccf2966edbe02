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

use super::git::{self, GitProtections, WalkLimits};
use super::policy::SandboxPolicy;

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

/// Builds the arguments for `policy`, with `cwd` as the command's working directory.
/// Always `--cap-drop ALL`: run by root, bwrap otherwise keeps root's capabilities inside and
/// a command could simply remount `/` read-write.
pub fn args(policy: &SandboxPolicy, cwd: Option<&Path>) -> BwrapArgs {
    let mut a: Vec<OsString> = Vec::with_capacity(64);
    let mut push = |parts: &[&std::ffi::OsStr]| a.extend(parts.iter().map(|s| s.to_os_string()));
    push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    push(&["--dev".as_ref(), "/dev".as_ref()]);
    push(&["--proc".as_ref(), "/proc".as_ref()]);

    // Canonical, existing roots, parents before children so nested binds stack correctly.
    let mut writable: Vec<PathBuf> = policy
        .writable_roots
        .iter()
        .filter_map(|r| fs::canonicalize(&r.path).ok())
        .filter(|p| p.is_dir() && p != Path::new("/"))
        .collect();
    writable.sort_by_key(|p| p.components().count());
    writable.dedup();
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
    let git = git::find(&git_roots, WalkLimits::default());

    // Read-only re-binds only matter inside writable roots; elsewhere `/` is read-only already.
    let inside = |p: &Path| writable.iter().any(|w| p.starts_with(w));
    let mut ro: Vec<PathBuf> = git.paths.iter().filter(|p| inside(p)).cloned().collect();
    for p in &policy.read_only {
        if let Ok(c) = fs::canonicalize(p) {
            if inside(&c) && !ro.contains(&c) {
                ro.push(c);
            }
        }
    }
    for p in &ro {
        push(&["--ro-bind".as_ref(), p.as_os_str(), p.as_os_str()]);
    }

    for h in &policy.hidden {
        // Mask the path as named (a symlinked secret is masked at its target too).
        for p in std::iter::once(h.clone()).chain(fs::canonicalize(h).ok()) {
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
    if let Some(c) = cwd {
        push(&["--chdir".as_ref(), c.as_os_str()]);
    }
    push(&["--".as_ref()]);
    BwrapArgs {
        args: a,
        writable,
        git,
    }
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
