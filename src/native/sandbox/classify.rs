//! Was a failed sandboxed command stopped by the sandbox? Reads the exit status and the
//! output tail for the errors the sandbox produces (read-only file system, permission denied
//! on a path outside the writable roots, network unreachable or refused sockets, DNS failing
//! with the network off) and names the boundary and the setting that lifts it. Heuristic by
//! nature: it only speaks when the evidence names a sandbox boundary.

use std::path::{Path, PathBuf};

use super::policy::{RootKind, SandboxPolicy};

/// Which boundary a command ran into.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Boundary {
    /// A write outside the writable roots.
    Write(PathBuf),
    /// A write to a path the sandbox keeps read-only inside a root (git metadata, `.fen`).
    Protected(PathBuf),
    /// A read of a secret the sandbox hides (`~/.ssh`, fen's credentials, ...).
    Secret(PathBuf),
    /// A write refused with no path in the message.
    WriteUnknown,
    /// A write under a writable root that does not exist (a package cache never created, such
    /// as `~/.npm`): the sandbox creates nothing in the user's tree, so it stays read-only.
    MissingRoot(PathBuf),
    /// Network access with the network off.
    Network,
}

/// A sandbox denial found in a command's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blocked {
    /// The boundary hit.
    pub boundary: Boundary,
    /// The output line that shows it.
    pub evidence: String,
}

impl Blocked {
    /// One line for the model and the user: the boundary and how to allow it.
    pub fn line(&self) -> String {
        match &self.boundary {
            Boundary::Write(p) => format!(
                "sandbox: writing {} was blocked (outside the writable roots); to allow it, add \
                 \"{}\" to sandbox.writable_roots in settings.json or rerun outside the sandbox",
                p.display(),
                suggest_root(p).display()
            ),
            Boundary::Protected(p) => format!(
                "sandbox: {} is kept read-only (git metadata and fen settings are protected \
                 inside the workspace); rerun outside the sandbox if this write is intended",
                p.display()
            ),
            Boundary::Secret(p) => format!(
                "sandbox: {} is hidden from sandboxed commands (secrets such as ~/.ssh and \
                 fen's credentials); rerun outside the sandbox if the command really needs it",
                p.display()
            ),
            Boundary::WriteUnknown => "sandbox: a write outside the writable roots was blocked; \
                 add the directory to sandbox.writable_roots in settings.json or rerun outside \
                 the sandbox"
                .to_string(),
            Boundary::MissingRoot(r) => format!(
                "sandbox: {} is a writable root that does not exist, and the sandbox creates \
                 nothing in your home; create it once outside the sandbox (mkdir -p {}) or \
                 rerun outside the sandbox",
                r.display(),
                r.display()
            ),
            Boundary::Network => "sandbox: network access was blocked (the network is off); \
                 set sandbox.network = true in settings.json or rerun outside the sandbox"
                .to_string(),
        }
    }

    /// The line for a run where nobody can be asked to rerun the command outside the sandbox
    /// (a headless run): the boundary, the setting that lifts it, or an interactive session.
    pub fn headless_hint(&self) -> String {
        let (what, setting) = match &self.boundary {
            Boundary::Write(p) => (
                format!(
                    "writing {} was blocked (outside the writable roots)",
                    p.display()
                ),
                format!(
                    "add \"{}\" to sandbox.writable_roots in settings.json",
                    suggest_root(p).display()
                ),
            ),
            Boundary::WriteUnknown => (
                "a write outside the writable roots was blocked".into(),
                "add the directory to sandbox.writable_roots in settings.json".into(),
            ),
            Boundary::MissingRoot(r) => (
                format!("{} is a writable root that does not exist", r.display()),
                format!("create it (mkdir -p {})", r.display()),
            ),
            Boundary::Network => (
                "network access was blocked (the network is off)".into(),
                "set sandbox.network = true in settings.json".into(),
            ),
            Boundary::Protected(p) => (
                format!("{} is kept read-only", p.display()),
                "run the command yourself if the write is intended".into(),
            ),
            Boundary::Secret(p) => (
                format!("{} is hidden from sandboxed commands", p.display()),
                "run the command yourself if it really needs it".into(),
            ),
        };
        format!(
            "sandbox: {what}; nobody can be asked in this run to rerun it outside the sandbox: \
             {setting}, or run fen interactively in default mode to be asked"
        )
    }
}

/// What to add to the roots for a blocked path: its directory (a file's parent).
fn suggest_root(p: &Path) -> PathBuf {
    if p.is_dir() {
        p.to_path_buf()
    } else {
        p.parent()
            .map_or_else(|| p.to_path_buf(), Path::to_path_buf)
    }
}

const WRITE_MARKERS: &[&str] = &["read-only file system", "erofs", "os error 30", "errno 30"];
const DENIED_MARKERS: &[&str] = &[
    "permission denied",
    "eacces",
    "os error 13",
    "errno 13",
    "operation not permitted",
    "eperm",
];
const NET_MARKERS: &[&str] = &[
    "network is unreachable",
    "enetunreach",
    "could not resolve host",
    "temporary failure in name resolution",
    "name or service not known",
    "no address associated with hostname",
    "getaddrinfo",
    "enotfound",
    "eai_again",
    "failed to lookup address",
    "dns error",
    "nodename nor servname",
    // Inside bubblewrap's network namespace a local server outside it is not there.
    "connection refused",
    "econnrefused",
    "errno 111",
    "couldn't connect to server",
];
/// Words that tie a permission error to a socket rather than a file.
const SOCKET_WORDS: &[&str] = &[
    "socket", "connect", "/dev/tcp", "/dev/udp", "http", "urlopen",
];

/// Looks at a finished sandboxed command. `exit_code` `Some(0)` never counts; 126/127 (not
/// executable / not found) are ordinary failures. `tail` is the end of the output.
pub fn classify(policy: &SandboxPolicy, exit_code: Option<i32>, tail: &str) -> Option<Blocked> {
    if matches!(exit_code, Some(0) | Some(126) | Some(127)) {
        return None;
    }
    let lines: Vec<&str> = tail.lines().collect();
    let start = lines.len().saturating_sub(200);
    for (i, line) in lines.iter().enumerate().skip(start).rev() {
        let l = line.to_ascii_lowercase();
        let denied = DENIED_MARKERS.iter().any(|m| l.contains(m));
        // A bare "Permission denied" (Python's `PermissionError: [Errno 13] Permission denied`
        // from a refused socket) after a traceback or log line that names a socket.
        let socket_near = |l: &str| SOCKET_WORDS.iter().any(|m| l.contains(m));
        let bare_socket = denied
            && paths_in(line).is_empty()
            && lines[i.saturating_sub(6)..i]
                .iter()
                .any(|p| socket_near(&p.to_ascii_lowercase()));
        if !policy.network
            && (NET_MARKERS.iter().any(|m| l.contains(m))
                || (denied && socket_near(&l))
                || bare_socket)
        {
            return Some(Blocked {
                boundary: Boundary::Network,
                evidence: line.trim().to_string(),
            });
        }
        let erofs = WRITE_MARKERS.iter().any(|m| l.contains(m));
        if !erofs && !denied {
            continue;
        }
        let path = paths_in(line).into_iter().next();
        let boundary = match path {
            Some(p) if policy.hidden.iter().any(|h| p.starts_with(h)) => Boundary::Secret(p),
            Some(p) if !policy.is_writable(&p) => Boundary::Write(p),
            Some(p) if missing_root(policy, &p).is_some() => {
                Boundary::MissingRoot(missing_root(policy, &p).unwrap_or(p))
            }
            Some(p) if is_protected(policy, &p) => Boundary::Protected(p),
            // EACCES inside a root is the file's own permissions, not the sandbox.
            Some(_) => continue,
            None if erofs => Boundary::WriteUnknown,
            None => continue,
        };
        return Some(Blocked {
            boundary,
            evidence: line.trim().to_string(),
        });
    }
    None
}

/// The writable root `p` lies under when that root does not exist.
fn missing_root(policy: &SandboxPolicy, p: &Path) -> Option<PathBuf> {
    policy
        .writable_roots
        .iter()
        .filter(|r| p.starts_with(&r.path))
        .max_by_key(|r| r.path.components().count())
        .filter(|r| matches!(r.kind, RootKind::Cache | RootKind::Settings) && !r.path.exists())
        .map(|r| r.path.clone())
}

fn is_protected(policy: &SandboxPolicy, p: &Path) -> bool {
    let s = p.to_string_lossy();
    s.contains("/.git/config")
        || s.contains("/.git/hooks")
        || s.ends_with("/.git")
        || s.ends_with("/commondir")
        || s.ends_with("/gitdir")
        || policy.read_only.iter().any(|r| {
            p.starts_with(r) && !(r.ends_with(".fen") && p.starts_with(r.join("worktrees")))
        })
}

/// Absolute paths in a message line: quoted ('…', "…", `…`, ‘…’) or bare tokens starting
/// with `/`, trailing `:` `,` `)` trimmed; `/dev/tcp/...` is not a file.
pub fn paths_in(line: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for q in ['\'', '"', '`', '‘', '’'] {
        for (i, part) in line.split(q).enumerate() {
            if i % 2 == 1 && part.starts_with('/') && !part.contains(' ') {
                out.push(PathBuf::from(part));
            }
        }
    }
    if out.is_empty() {
        // A shell names itself and the script line first (`/bin/sh: 1: cannot create x: ...`,
        // `/bin/bash: line 1: x: ...`): that path is the reporter, not what was refused.
        let words: Vec<&str> = line.split_whitespace().collect();
        let shell_prefix = match words.as_slice() {
            [_, n, ..] if n.strip_suffix(':').is_some_and(is_number) => 2,
            [_, l, n, ..] if *l == "line" && n.strip_suffix(':').is_some_and(is_number) => 3,
            _ => 0,
        };
        let reporter = words.first().is_some_and(|w| w.ends_with(':'));
        let skip = if reporter { shell_prefix } else { 0 };
        for tok in words.into_iter().skip(skip) {
            let t = tok.trim_matches(|c: char| {
                matches!(
                    c,
                    ':' | ',' | ')' | '(' | ';' | '\'' | '"' | '`' | '[' | ']' | '‘' | '’'
                )
            });
            if t.starts_with('/') && t.len() > 1 {
                out.push(PathBuf::from(t));
            }
        }
    }
    out.retain(|p| !p.starts_with("/dev/tcp") && !p.starts_with("/dev/udp"));
    out
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::native::sandbox::policy::PolicyInputs;

    fn policy() -> SandboxPolicy {
        SandboxPolicy::build(&PolicyInputs {
            workspace: PathBuf::from("/w"),
            home: Some(PathBuf::from("/home/u")),
            ..Default::default()
        })
    }

    fn boundary(tail: &str) -> Option<Boundary> {
        classify(&policy(), Some(1), tail).map(|b| b.boundary)
    }

    #[test]
    fn writes_outside_roots() {
        let w = |p: &str| Some(Boundary::Write(PathBuf::from(p)));
        assert_eq!(
            boundary("touch: cannot touch '/etc/x': Read-only file system"),
            w("/etc/x")
        );
        assert_eq!(
            boundary("bash: line 1: /home/u/.bashrc: Permission denied"),
            w("/home/u/.bashrc")
        );
        // The shell that reports names itself first; that is not the path refused.
        assert_eq!(
            boundary("/bin/sh: 1: cannot create /etc/x: Read-only file system"),
            w("/etc/x")
        );
        assert_eq!(
            boundary("/bin/sh: 1: cannot create out.txt: Read-only file system"),
            Some(Boundary::WriteUnknown)
        );
        assert_eq!(
            boundary("/bin/bash: line 3: out.txt: Read-only file system"),
            Some(Boundary::WriteUnknown)
        );
        assert_eq!(
            boundary("PermissionError: [Errno 13] Permission denied: '/opt/x.txt'"),
            w("/opt/x.txt")
        );
        assert_eq!(
            boundary("npm ERR! EROFS: read-only file system, mkdir '/home/u/.npm/_logs'"),
            w("/home/u/.npm/_logs")
        );
        assert_eq!(
            boundary("error: failed to open `/home/u/.rustup/x`\nCaused by: Read-only file system (os error 30)"),
            Some(Boundary::WriteUnknown),
            "the path and the cause are on different lines; the cause line alone has no path"
        );
        let b = classify(
            &policy(),
            Some(1),
            "touch: cannot touch '/etc/x': Read-only file system",
        )
        .unwrap();
        assert!(
            b.line().contains("\"/etc\" to sandbox.writable_roots"),
            "{}",
            b.line()
        );
    }

    #[test]
    fn protected_and_ordinary_denials() {
        assert_eq!(
            boundary("bash: /w/.git/hooks/pre-commit: Read-only file system"),
            Some(Boundary::Protected(PathBuf::from(
                "/w/.git/hooks/pre-commit"
            )))
        );
        assert_eq!(boundary("cat: /w/secret: Permission denied"), None);
        assert_eq!(
            boundary("cat: /home/u/.ssh/id_rsa: Permission denied"),
            Some(Boundary::Secret(PathBuf::from("/home/u/.ssh/id_rsa")))
        );
        assert_eq!(boundary("error: test failed"), None);
        assert_eq!(
            classify(
                &policy(),
                Some(0),
                "touch: cannot touch '/etc/x': Read-only file system"
            ),
            None
        );
        assert_eq!(
            classify(&policy(), Some(127), "bash: /x: Permission denied"),
            None
        );
    }

    #[test]
    fn network_only_when_off() {
        for t in [
            "curl: (6) Could not resolve host: example.com",
            "bash: connect: Network is unreachable",
            "bash: socket: Permission denied",
            "npm ERR! getaddrinfo EAI_AGAIN registry.npmjs.org",
            "ping: socket: Operation not permitted",
        ] {
            assert_eq!(boundary(t), Some(Boundary::Network), "{t}");
        }
        let mut p = policy();
        p.network = true;
        assert_eq!(
            classify(&p, Some(6), "curl: (6) Could not resolve host: example.com"),
            None
        );
        let b = classify(&policy(), Some(1), "curl: (7) Network is unreachable").unwrap();
        assert!(b.line().contains("sandbox.network = true"));
        // Refused connections (bubblewrap's own loopback) and a bare EACCES after a
        // traceback that names a socket (Landlock).
        for t in [
            "Error: connect ECONNREFUSED 127.0.0.1:8080",
            "curl: (7) Failed to connect to 127.0.0.1 port 80: Couldn't connect to server",
            "ConnectionRefusedError: [Errno 111] Connection refused",
            "  File \"x.py\", line 1\n    sock.connect(sa)\nPermissionError: [Errno 13] Permission denied",
        ] {
            assert_eq!(boundary(t), Some(Boundary::Network), "{t}");
        }
        // A bare EACCES with nothing about sockets near it stays unexplained.
        assert_eq!(
            boundary("PermissionError: [Errno 13] Permission denied"),
            None
        );
        let h = classify(
            &policy(),
            Some(1),
            "Error: connect ECONNREFUSED 127.0.0.1:80",
        )
        .unwrap()
        .headless_hint();
        assert!(h.contains("network access was blocked"), "{h}");
        assert!(
            h.contains("sandbox.network = true") && h.contains("default mode"),
            "{h}"
        );
    }

    #[test]
    fn a_write_under_a_missing_root_says_to_create_it() {
        let mut p = policy();
        p.writable_roots.push(crate::native::sandbox::WritableRoot {
            path: PathBuf::from("/home/u/.npm"),
            kind: crate::native::sandbox::RootKind::Cache,
        });
        let b = classify(
            &p,
            Some(1),
            "mkdir: cannot create directory ‘/home/u/.npm/_logs’: Read-only file system",
        )
        .unwrap();
        assert_eq!(
            b.boundary,
            Boundary::MissingRoot(PathBuf::from("/home/u/.npm"))
        );
        assert!(b.line().contains("mkdir -p /home/u/.npm"), "{}", b.line());
    }
}
