//! Landlock tier: a Landlock ruleset (list every directory, read files everywhere except the
//! secrets, write only in the
//! writable roots and a few device nodes; no TCP bind/connect and no abstract-socket or signal
//! escape when the kernel's ABI has them), a seccomp filter refusing every socket family but
//! AF_UNIX (and io_uring, which can open sockets) with EACCES when the network is off, and
//! `PR_SET_NO_NEW_PRIVS`.
//!
//! Everything allocating or touching the file system happens in [`Prepared::build`], in the
//! parent. [`Prepared::apply`] runs in the child between fork and exec and only makes raw
//! syscalls on memory prepared before the fork (async-signal-safe).
//!
//! Seccomp filter compilation uses `seccompiler` (rust-vmm, Apache-2.0/BSD-3, only `libc`):
//! it emits the architecture check and the argument comparison correctly for each target,
//! which a hand-written BPF program would have to get right per architecture.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::policy::SandboxPolicy;
use super::stamp::Watch;
use super::SandboxError;

/// Device nodes a command may write (output sinks, terminals, shared memory).
const WRITABLE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// The newest ABI this code was written and tested against; best effort below it.
const TARGET_ABI: ABI = ABI::V6;

/// Rulesets of recent policies; rebuilt when a watched path changes.
static CACHE: Mutex<Vec<(SandboxPolicy, Arc<Prepared>)>> = Mutex::new(Vec::new());
const CACHE_SIZE: usize = 8;

/// The prepared ruleset and filter for `policy`, built once and reused while every path the
/// build looked at (the directories split around secrets, the secrets, the roots) keeps its
/// stamp: a spawn then only applies them (`landlock_restrict_self` on the same ruleset
/// descriptor and one seccomp load of the same program).
pub fn cached(policy: &SandboxPolicy) -> Result<Arc<Prepared>, SandboxError> {
    let hit = {
        let c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        c.iter().find(|(p, _)| p == policy).map(|(_, a)| a.clone())
    };
    if let Some(a) = hit {
        if a.watch.unchanged() {
            return Ok(a);
        }
    }
    let fresh = Arc::new(Prepared::build(policy)?);
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    c.retain(|(p, _)| p != policy);
    if c.len() >= CACHE_SIZE {
        c.remove(0);
    }
    c.push((policy.clone(), fresh.clone()));
    Ok(fresh)
}

/// A ruleset and filter ready to be applied in a child.
#[derive(Debug)]
pub struct Prepared {
    ruleset: Option<OwnedFd>,
    filter: Option<BpfProgram>,
    watch: Watch,
    /// Roots that exist and were made writable.
    pub writable: Vec<PathBuf>,
    /// Directories and files granted read access (everything but the secrets).
    pub readable: Vec<PathBuf>,
    /// What the rules were attached to: every granted path with its identity (device, inode)
    /// at build time. Two preparations with the same identities enforce the same thing, so a
    /// rebuild after an unrelated change keeps the running launcher.
    pub identity: Vec<(PathBuf, Option<(u64, u64)>)>,
}

impl Prepared {
    /// Builds the ruleset for `policy` (fails if the kernel has no Landlock) and, when the
    /// network is off, the seccomp filter.
    pub fn build(policy: &SandboxPolicy) -> Result<Self, SandboxError> {
        let started = std::time::SystemTime::now();
        let ll = |e: &dyn std::fmt::Display| SandboxError::Landlock(e.to_string());
        let fs_all = AccessFs::from_all(TARGET_ABI);
        let fs_read = AccessFs::from_read(TARGET_ABI);
        let mut rs = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(fs_all)
            .map_err(|e| ll(&e))?;
        if !policy.network {
            rs = rs
                .handle_access(AccessNet::from_all(TARGET_ABI))
                .map_err(|e| ll(&e))?
                .scope(Scope::AbstractUnixSocket)
                .map_err(|e| ll(&e))?;
        }
        rs = rs.scope(Scope::Signal).map_err(|e| ll(&e))?;
        let mut created = rs.create().map_err(|e| ll(&e))?;

        let hidden: Vec<PathBuf> = policy
            .hidden
            .iter()
            .flat_map(|h| std::iter::once(h.clone()).chain(fs::canonicalize(h).ok()))
            .collect();
        // Listing directories is allowed everywhere (so `ls /` and `ls ~` work on the way to a
        // hidden secret); reading and executing files only outside the secrets. A secret's
        // name can be listed, its content not.
        if let Some(rule) = rule(Path::new("/"), AccessFs::ReadDir.into()) {
            created = created.add_rule(rule).map_err(|e| ll(&e))?;
        }
        let mut readable = Vec::new();
        let mut watched: Vec<PathBuf> = hidden.clone();
        watched.extend(policy.hidden.iter().cloned());
        read_rules(Path::new("/"), &hidden, &mut readable, &mut watched, 0);
        for p in &readable {
            if let Some(rule) = rule(p, fs_read) {
                created = created.add_rule(rule).map_err(|e| ll(&e))?;
            }
        }

        let mut writable: Vec<PathBuf> = policy
            .writable_roots
            .iter()
            .filter_map(|r| fs::canonicalize(&r.path).ok())
            .collect();
        writable.dedup();
        watched.extend(policy.writable_roots.iter().map(|r| r.path.clone()));
        watched.extend(writable.iter().cloned());
        for p in writable
            .iter()
            .map(PathBuf::as_path)
            .chain(WRITABLE_DEVICES.iter().map(Path::new))
        {
            if let Some(rule) = rule(p, fs_all) {
                created = created.add_rule(rule).map_err(|e| ll(&e))?;
            }
        }
        let fd: Option<OwnedFd> = created.into();
        let Some(fd) = fd else {
            return Err(SandboxError::Landlock(
                "the kernel does not enforce Landlock".into(),
            ));
        };
        let filter = if policy.network {
            None
        } else {
            Some(network_filter()?)
        };
        let identity = readable
            .iter()
            .chain(writable.iter())
            .map(|p| (p.clone(), super::stamp::identity(p)))
            .collect();
        Ok(Self {
            ruleset: Some(fd),
            filter,
            watch: Watch::of(watched, started),
            writable,
            readable,
            identity,
        })
    }

    /// Applies the sandbox to the calling process: no-new-privs, the Landlock ruleset, the
    /// seccomp filter. Only raw syscalls on data built before the fork.
    ///
    /// # Safety
    /// Meant for `pre_exec`: the caller must be the single-threaded child of a fork.
    pub unsafe fn apply(&self) -> io::Result<()> {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::geteuid() == 0 {
            drop_capabilities()?;
        }
        if let Some(fd) = &self.ruleset {
            if libc::syscall(libc::SYS_landlock_restrict_self, fd.as_raw_fd(), 0u32) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(prog) = &self.filter {
            let fprog = libc::sock_fprog {
                len: prog.len() as u16,
                filter: prog.as_ptr() as *mut libc::sock_filter,
            };
            if libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0u32,
                &fprog as *const libc::sock_fprog,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Run by root, a command would keep every capability: CAP_SYS_PTRACE lets it read other
/// processes' memory and environment past Landlock (seen on Linux 6.18), CAP_SYS_MODULE load
/// kernel code. Empties the bounding set (so exec cannot give them back), the ambient set and
/// the current sets, like bubblewrap's `--cap-drop ALL`. Raw syscalls only.
unsafe fn drop_capabilities() -> io::Result<()> {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    // Capabilities past the kernel's last one fail with EINVAL; that is the end of the list.
    for cap in 0..64 {
        if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
            if *libc::__errno_location() == libc::EINVAL {
                break;
            }
            return Err(io::Error::last_os_error());
        }
    }
    libc::prctl(
        libc::PR_CAP_AMBIENT,
        libc::PR_CAP_AMBIENT_CLEAR_ALL,
        0,
        0,
        0,
    );
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    if libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A Landlock rule for `p` with `access` narrowed to what applies to its file type; `None`
/// when it cannot be opened (missing, permission).
fn rule(p: &Path, access: landlock::BitFlags<AccessFs>) -> Option<PathBeneath<PathFd>> {
    let meta = fs::metadata(p).ok()?;
    let access = if meta.is_dir() {
        access
    } else {
        access & AccessFs::from_file(TARGET_ABI)
    };
    let fd = PathFd::new(p).ok()?;
    Some(PathBeneath::new(fd, access))
}

/// Collects the largest subtrees of `dir` containing no hidden path: the whole of `dir` when
/// no secret is inside it, else each child that is not a secret, recursively. Secrets deeper
/// than a few levels below `/` are rare; past the depth bound the whole subtree stays readable.
fn read_rules(
    dir: &Path,
    hidden: &[PathBuf],
    out: &mut Vec<PathBuf>,
    watched: &mut Vec<PathBuf>,
    depth: usize,
) {
    if hidden.iter().any(|h| h == dir) {
        return;
    }
    if depth > 16 || !hidden.iter().any(|h| h.starts_with(dir)) {
        out.push(dir.to_path_buf());
        return;
    }
    // Split around a secret: a new entry here needs a rule of its own (else it would stay
    // unreadable), so the cached ruleset is rebuilt when this directory changes.
    watched.push(dir.to_path_buf());
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        // A symlink granting read would open its target: skip links into a secret.
        if e.file_type().is_ok_and(|t| t.is_symlink()) {
            match fs::canonicalize(&p) {
                Ok(t) if hidden.iter().any(|h| t.starts_with(h) || h.starts_with(&t)) => continue,
                Ok(_) => {}
                Err(_) => continue,
            }
        }
        if e.file_type().is_ok_and(|t| t.is_symlink()) {
            watched.push(p.clone());
        }
        read_rules(&p, hidden, out, watched, depth + 1);
    }
}

/// socket(domain != AF_UNIX) and io_uring_setup → EACCES.
fn network_filter() -> Result<BpfProgram, SandboxError> {
    let se = |e: &dyn std::fmt::Display| SandboxError::Seccomp(e.to_string());
    let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| se(&e))?;
    let not_unix = SeccompRule::new(vec![SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Ne,
        libc::AF_UNIX as u64,
    )
    .map_err(|e| se(&e))?])
    .map_err(|e| se(&e))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_socket, vec![not_unix]);
    rules.insert(libc::SYS_io_uring_setup, vec![]);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(|e| se(&e))?;
    BpfProgram::try_from(filter).map_err(|e| se(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_rules_skip_secrets_only() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        for d in ["a/.ssh", "a/b", "c"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        fs::write(root.join("a/f"), "").unwrap();
        std::os::unix::fs::symlink(root.join("a/.ssh"), root.join("c/link")).unwrap();
        let mut out = Vec::new();
        read_rules(&root, &[root.join("a/.ssh")], &mut out, &mut Vec::new(), 0);
        out.sort();
        assert_eq!(
            out,
            vec![root.join("a/b"), root.join("a/f"), root.join("c")]
        );
        // The link sits in `c`, which has no secret *path* in it, so `c` is granted whole;
        // Landlock checks the resolved path on open, so reading through it is still refused.
    }

    #[test]
    fn filter_compiles() {
        assert!(!network_filter().unwrap().is_empty());
    }
}
