//! Persistent sandbox: one long-lived `bwrap` per sandbox configuration, running a tiny
//! launcher (fen's own executable started as `fen __fen-sandbox-launcher FD`) that starts each
//! command on request. A bwrap start (namespaces, ~20 mounts) costs 5–10 ms; a request to a
//! running launcher costs a fork and an exec inside the sandbox that already exists. The
//! Landlock tier runs the same launcher without bwrap, restricted by the ruleset and seccomp
//! filter before its exec: there its keepers are what ends a command's background children
//! (no pid namespace would).
//!
//! Protocol. fen and the launcher share a `SOCK_SEQPACKET` socket pair (the control socket).
//! A request is one message: the shell, the working directory, the command and the complete
//! environment, with two descriptors attached (`SCM_RIGHTS`): the write end of the command's
//! output pipe and one end of a fresh per-command socket pair (the channel). For each request
//! the launcher forks a *keeper* that becomes a child subreaper, starts the shell (own session
//! and process group, stdin `/dev/null`, stdout and stderr on the pipe) and then serves the
//! channel: it reports the shell's pid, forwards signal requests to the command's process
//! group and to every process that left it, and when the shell exits kills whatever of the
//! command is left (every orphan is reparented to the keeper, so nothing escapes by `setsid`
//! or double forks) before it reports the exit status. fen closing the channel (the call was
//! dropped) kills the command the same way. The launcher exits when the control socket
//! closes, which happens when fen exits however it exits; bwrap's pid namespace then ends
//! every process in it.
//!
//! Guarantees are those of the per-command bwrap: the same arguments (mounts, namespaces,
//! `--cap-drop ALL`), the same environment per command (sent complete; the launcher itself
//! runs with an empty one and is not dumpable, so a command cannot read or trace it), and
//! processes that end with their command. A launcher is keyed by its bwrap arguments and
//! the identities of the files they bind: when the file system changes what a fresh bwrap
//! would mount, a new launcher starts.

use std::ffi::{OsStr, OsString};
use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};
use tokio::io::unix::AsyncFd;

use super::policy::SandboxPolicy;

/// The first argument that makes fen's executable run as the launcher.
pub const LAUNCHER_ARG: &str = "__fen-sandbox-launcher";

/// Largest request: a command plus its environment. Larger commands (rare: the kernel limits
/// one argument to 128 KiB anyway) start their own bwrap.
pub const MAX_REQUEST: usize = 192 * 1024;

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Turns the persistent sandbox on or off for this process (on by default once a program is
/// named); off, every command starts its own bwrap. Benchmarks compare the two.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Names the executable that runs the launcher when started with [`LAUNCHER_ARG`] (fen's
/// `main` sets its own; tests and benchmarks set the built `fen`). Without it every command
/// starts its own bwrap.
pub fn set_program(path: PathBuf) {
    let _ = PROGRAM.set(path);
}

/// The launcher executable, if one was named and still exists.
pub fn program() -> Option<&'static Path> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    PROGRAM.get().map(PathBuf::as_path).filter(|p| p.is_file())
}

/// Runs the launcher when `args` (the process arguments after the program name) ask for it;
/// returns its exit code, else `None`. Call first thing in `main`, before any thread starts:
/// the launcher forks.
pub fn dispatch(args: &[OsString]) -> Option<i32> {
    if args.first().map(OsString::as_os_str) != Some(OsStr::new(LAUNCHER_ARG)) {
        return None;
    }
    let fd: RawFd = args.get(1)?.to_str()?.parse().ok()?;
    Some(serve(fd))
}

// ----------------------------------------------------------------------------------------
// Wire format: length-prefixed byte strings.

/// One request, as the launcher receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The shell to run (`bash`, else `sh`).
    pub shell: OsString,
    /// Its working directory; empty: the launcher's.
    pub cwd: OsString,
    /// The command line passed to `shell -c`.
    pub command: OsString,
    /// The complete environment, `KEY=value` each.
    pub env: Vec<OsString>,
}

impl Request {
    /// Encodes the request.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(
            64 + self.command.len() + self.env.iter().map(|e| e.len() + 4).sum::<usize>(),
        );
        let mut put = |b: &[u8]| {
            out.extend_from_slice(&(b.len() as u32).to_le_bytes());
            out.extend_from_slice(b);
        };
        put(self.shell.as_bytes());
        put(self.cwd.as_bytes());
        put(self.command.as_bytes());
        for e in &self.env {
            put(e.as_bytes());
        }
        out
    }

    /// Decodes a request; `None` when malformed.
    pub fn decode(mut b: &[u8]) -> Option<Self> {
        let mut fields = Vec::new();
        while !b.is_empty() {
            let n = u32::from_le_bytes(b.get(..4)?.try_into().ok()?) as usize;
            let f = b.get(4..4 + n)?;
            fields.push(OsString::from_vec(f.to_vec()));
            b = &b[4 + n..];
        }
        let mut it = fields.into_iter();
        Some(Self {
            shell: it.next()?,
            cwd: it.next()?,
            command: it.next()?,
            env: it.collect(),
        })
    }
}

/// Keeper → fen: the shell started (its pid inside the sandbox).
const MSG_STARTED: u8 = b'P';
/// Keeper → fen: the shell exited (raw wait status), everything of the command is gone.
const MSG_EXITED: u8 = b'X';
/// Keeper → fen: the shell could not be started (errno).
const MSG_FAILED: u8 = b'E';
/// fen → keeper: send this signal to the command.
const MSG_SIGNAL: u8 = b'K';

fn frame(kind: u8, v: i32) -> [u8; 5] {
    let b = v.to_le_bytes();
    [kind, b[0], b[1], b[2], b[3]]
}

fn unframe(b: &[u8]) -> Option<(u8, i32)> {
    let v = i32::from_le_bytes(b.get(1..5)?.try_into().ok()?);
    Some((*b.first()?, v))
}

// ----------------------------------------------------------------------------------------
// Inside the sandbox.

fn serve(ctl: RawFd) -> i32 {
    // SAFETY: plain syscalls with constant arguments. Not dumpable: a command of the same
    // user cannot ptrace the launcher or read its /proc files. SIGCHLD ignored: keepers are
    // reaped by the kernel.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        libc::signal(libc::SIGCHLD, libc::SIG_IGN);
    }
    let mut buf = vec![0u8; MAX_REQUEST];
    loop {
        let mut cmsg = nix::cmsg_space!([RawFd; 2]);
        let (n, fds) = {
            let mut iov = [IoSliceMut::new(&mut buf)];
            match recvmsg::<()>(ctl, &mut iov, Some(&mut cmsg), MsgFlags::MSG_CMSG_CLOEXEC) {
                Ok(m) => {
                    let mut fds: Vec<OwnedFd> = Vec::new();
                    if let Ok(cm) = m.cmsgs() {
                        for c in cm {
                            if let ControlMessageOwned::ScmRights(v) = c {
                                // SAFETY: the kernel just installed these descriptors for us.
                                fds.extend(
                                    v.into_iter().map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                                );
                            }
                        }
                    }
                    (m.bytes, fds)
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return 1,
            }
        };
        if n == 0 && fds.is_empty() {
            return 0; // fen closed the control socket.
        }
        let (Some(req), [out, chan]) = (Request::decode(&buf[..n]), fds.as_slice()) else {
            continue; // Malformed: the descriptors close, fen sees the channel end.
        };
        // SAFETY: the launcher is single-threaded, so the child may run any code.
        match unsafe { libc::fork() } {
            0 => {
                // SAFETY: closing our copy of the control socket in the keeper.
                unsafe { libc::close(ctl) };
                let code = keep(&req, out, chan);
                // SAFETY: leave without running the launcher's destructors twice.
                unsafe { libc::_exit(code) }
            }
            _ => drop(fds), // Parent: the keeper holds the descriptors now.
        }
    }
}

/// The keeper of one command: starts it, serves its channel, cleans up after it.
fn keep(req: &Request, out: &OwnedFd, chan: &OwnedFd) -> i32 {
    // SAFETY: plain syscalls. Subreaper: orphans of the command come back to the keeper.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
    }
    let send = |kind: u8, v: i32| {
        let _ = nix::sys::socket::send(chan.as_raw_fd(), &frame(kind, v), MsgFlags::empty());
    };
    let mut cmd = std::process::Command::new(&req.shell);
    cmd.arg("-c").arg(&req.command).env_clear();
    for e in &req.env {
        let b = e.as_bytes();
        if let Some(eq) = b.iter().position(|c| *c == b'=') {
            cmd.env(OsStr::from_bytes(&b[..eq]), OsStr::from_bytes(&b[eq + 1..]));
        }
    }
    if !req.cwd.is_empty() {
        cmd.current_dir(&req.cwd);
    }
    let (Ok(o1), Ok(o2)) = (out.try_clone(), out.try_clone()) else {
        send(MSG_FAILED, libc::EMFILE);
        return 1;
    };
    cmd.stdin(Stdio::null()).stdout(o1).stderr(o2);
    crate::native::setsid::own_session(&mut cmd);
    let child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            send(MSG_FAILED, e.raw_os_error().unwrap_or(libc::EIO));
            return 1;
        }
    };
    drop(cmd);
    let pid = child.id() as i32;
    send(MSG_STARTED, pid);
    let status = watch(pid, chan);
    // Processes end with their command (as with one bwrap per command).
    kill_rest(pid, libc::SIGKILL);
    send(MSG_EXITED, status);
    0
}

/// Serves the channel until the shell exits; returns its raw wait status.
fn watch(pid: i32, chan: &OwnedFd) -> i32 {
    // SAFETY: pidfd_open on our own child.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    let mut chan_open = true;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: if chan_open { chan.as_raw_fd() } else { -1 },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: pidfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // Without a pidfd (old kernel) poll the exit every 20 ms.
        let timeout = if pidfd >= 0 { -1 } else { 20 };
        // SAFETY: two valid pollfd structs.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if fds[0].revents != 0 {
            let mut b = [0u8; 16];
            match nix::sys::socket::recv(chan.as_raw_fd(), &mut b, MsgFlags::empty()) {
                Ok(n) if n > 0 => {
                    if let Some((MSG_SIGNAL, sig)) = unframe(&b[..n]) {
                        signal_command(pid, sig);
                    }
                }
                Err(nix::errno::Errno::EINTR) => {}
                // fen dropped the call: the command must not outlive it.
                _ => {
                    chan_open = false;
                    kill_rest(pid, libc::SIGKILL);
                }
            }
        }
        let mut st = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) };
        if r == pid {
            if pidfd >= 0 {
                // SAFETY: our own descriptor.
                unsafe { libc::close(pidfd) };
            }
            return st;
        }
        if r < 0 {
            return 0;
        }
    }
}

/// Sends `sig` to the command's process group and to every process that left it.
fn signal_command(pid: i32, sig: i32) {
    // SAFETY: signals to the command's group and to our own children.
    unsafe {
        libc::kill(-pid, sig);
        for c in children() {
            if c != pid {
                libc::kill(-c, sig);
                libc::kill(c, sig);
            }
        }
    }
}

/// Kills the command's group and every process reparented to the keeper, until neither is
/// left. A killed parent's children are reparented to the keeper before the parent becomes a
/// zombie, so emptiness seen after reaping is final.
fn kill_rest(pid: i32, sig: i32) {
    for _ in 0..2000 {
        // SAFETY: signals to the command's group and our own children; reaping our children.
        unsafe {
            libc::kill(-pid, sig);
            let kids = children();
            for c in &kids {
                libc::kill(-*c, sig);
                libc::kill(*c, sig);
            }
            let mut st = 0;
            while libc::waitpid(-1, &mut st, libc::WNOHANG) > 0 {}
            let group_gone = libc::kill(-pid, 0) != 0;
            if kids.is_empty() && group_gone {
                return;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Whether this process has any child, running or not (one `waitid` that reaps nothing).
fn has_children() -> bool {
    // SAFETY: waitid with WNOWAIT|WNOHANG only inspects; `info` is a valid siginfo_t.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        ) == 0
    }
}

/// Pids whose parent is this process: none without asking /proc when [`has_children`] says
/// so (the common case: a command that left nothing behind), else the kernel's list of the
/// (single-threaded) keeper's children when it has one (`CONFIG_PROC_CHILDREN`), else a scan
/// of /proc (inside bubblewrap it shows only the sandbox's processes; under Landlock it is the
/// whole machine's).
fn children() -> Vec<i32> {
    if !has_children() {
        return Vec::new();
    }
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    if let Ok(list) = std::fs::read_to_string(format!("/proc/self/task/{me}/children")) {
        return list
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name (which may contain spaces) close with ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|s| s.parse::<i32>().ok());
        if ppid == Some(me) {
            out.push(pid);
        }
    }
    out
}

// ----------------------------------------------------------------------------------------
// fen's side.

/// A running launcher: its bwrap and the control socket.
#[derive(Debug)]
pub struct Launcher {
    key: Key,
    ctl: Mutex<OwnedFd>,
    child: Mutex<Option<std::process::Child>>,
}

impl Launcher {
    /// Kills the launcher's bwrap (its pid namespace, and everything in it, goes with it).
    fn kill(&self) {
        if let Ok(mut c) = self.child.lock() {
            if let Some(c) = c.as_mut() {
                let _ = c.kill();
            }
        }
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        // Closing the control socket (after this) ends the launcher; bwrap is reaped on a
        // thread of its own so nothing waits here.
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut c) = child {
            if !matches!(c.try_wait(), Ok(Some(_))) {
                std::thread::spawn(move || c.wait());
            }
        }
    }
}

/// What a launcher was started with: its policy and the sandbox it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    policy: SandboxPolicy,
    via: Via,
}

/// The sandbox a launcher runs in.
#[derive(Debug, Clone)]
enum Via {
    /// `bwrap` with these arguments and the identities of the files they bind.
    Bwrap {
        bwrap: PathBuf,
        args: Vec<OsString>,
        binds: Vec<Option<(u64, u64)>>,
    },
    /// This Landlock ruleset and seccomp filter, applied to the launcher itself (so to every
    /// command it starts); compared by what the rules were attached to (with the policy, which
    /// decides the network filter).
    #[cfg(target_os = "linux")]
    Landlock(Arc<super::lsm::Prepared>),
}

impl PartialEq for Via {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (
                Via::Bwrap { bwrap, args, binds },
                Via::Bwrap {
                    bwrap: b2,
                    args: a2,
                    binds: s2,
                },
            ) => bwrap == b2 && args == a2 && binds == s2,
            #[cfg(target_os = "linux")]
            (Via::Landlock(a), Via::Landlock(b)) => {
                Arc::ptr_eq(a, b) || (a.writable == b.writable && a.identity == b.identity)
            }
            #[cfg(target_os = "linux")]
            _ => false,
        }
    }
}

impl Eq for Via {}

static LAUNCHERS: Mutex<Vec<Arc<Launcher>>> = Mutex::new(Vec::new());
/// Configurations whose launcher failed twice in a row.
static FAILED: Mutex<Vec<Key>> = Mutex::new(Vec::new());
/// How long a request waits for the keeper's first answer (a new launcher included).
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
const MAX_LAUNCHERS: usize = 4;

/// A command started by a launcher, seen from fen.
#[derive(Debug)]
pub struct Remote {
    chan: AsyncFd<OwnedFd>,
    /// The shell's pid inside the sandbox.
    pub pid: i32,
    // Keeps the launcher (and its pid namespace) alive while the command runs.
    _launcher: Arc<Launcher>,
}

impl Remote {
    /// Waits for the command to end (the shell's status, after every process of the command
    /// is gone).
    pub async fn wait(&self) -> io::Result<ExitStatus> {
        loop {
            let mut guard = self.chan.readable().await?;
            let mut b = [0u8; 16];
            match guard.try_io(|fd| {
                nix::sys::socket::recv(fd.get_ref().as_raw_fd(), &mut b, MsgFlags::MSG_DONTWAIT)
                    .map_err(io::Error::from)
            }) {
                Ok(Ok(0)) => {
                    return Err(io::Error::other("the sandbox launcher went away"));
                }
                Ok(Ok(n)) => {
                    if let Some((MSG_EXITED, st)) = unframe(&b[..n]) {
                        return Ok(ExitStatus::from_raw(st));
                    }
                }
                Ok(Err(e)) => return Err(e),
                Err(_would_block) => continue,
            }
        }
    }

    /// Asks the keeper to send `sig` to the command (its group and the processes that left it).
    pub fn signal(&self, sig: i32) {
        let _ = nix::sys::socket::send(
            self.chan.get_ref().as_raw_fd(),
            &frame(MSG_SIGNAL, sig),
            MsgFlags::MSG_DONTWAIT,
        );
    }
}

/// Starts `req` in the launcher for (`policy`, `bwrap`, `args`, `binds`), starting the
/// launcher first if needed. Blocking (the first call starts bwrap and waits for the shell's
/// pid): call off the async thread. `out` is the write end of the output pipe.
pub fn start(
    policy: &SandboxPolicy,
    bwrap: &Path,
    args: &[OsString],
    binds: &[Option<(u64, u64)>],
    req: &Request,
    out: &OwnedFd,
) -> io::Result<(OwnedFd, i32, Arc<Launcher>)> {
    let key = Key {
        policy: policy.clone(),
        via: Via::Bwrap {
            bwrap: bwrap.to_path_buf(),
            args: args.to_vec(),
            binds: binds.to_vec(),
        },
    };
    start_key(key, req, out)
}

/// Starts `req` in the Landlock launcher of `prepared` (a launcher process restricted by the
/// ruleset, as every command it starts): a command's keeper is a child subreaper outside any
/// pid namespace, so background children, `setsid` and double forks included, end with the
/// command as they do under bubblewrap. Blocking; `out` as for [`start`].
#[cfg(target_os = "linux")]
pub(super) fn start_landlock(
    policy: &SandboxPolicy,
    prepared: &Arc<super::lsm::Prepared>,
    req: &Request,
    out: &OwnedFd,
) -> io::Result<(OwnedFd, i32, Arc<Launcher>)> {
    let key = Key {
        policy: policy.clone(),
        via: Via::Landlock(prepared.clone()),
    };
    start_key(key, req, out)
}

/// Starts the launcher for (`policy`, `bwrap`, `args`, `binds`) now, if none runs, so the first
/// command does not wait for bwrap. Blocking.
pub fn warm(
    policy: &SandboxPolicy,
    bwrap: &Path,
    args: &[OsString],
    binds: &[Option<(u64, u64)>],
) -> io::Result<()> {
    let key = Key {
        policy: policy.clone(),
        via: Via::Bwrap {
            bwrap: bwrap.to_path_buf(),
            args: args.to_vec(),
            binds: binds.to_vec(),
        },
    };
    warm_key(&key)
}

/// [`warm`] for the Landlock launcher of `prepared`.
#[cfg(target_os = "linux")]
pub(super) fn warm_landlock(
    policy: &SandboxPolicy,
    prepared: &Arc<super::lsm::Prepared>,
) -> io::Result<()> {
    let key = Key {
        policy: policy.clone(),
        via: Via::Landlock(prepared.clone()),
    };
    warm_key(&key)
}

fn warm_key(key: &Key) -> io::Result<()> {
    let program = program().ok_or_else(|| io::Error::other("no launcher program"))?;
    if FAILED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(key)
    {
        return Ok(());
    }
    get_or_start(key, program, false).map(|_| ())
}

fn start_key(key: Key, req: &Request, out: &OwnedFd) -> io::Result<(OwnedFd, i32, Arc<Launcher>)> {
    let program = program().ok_or_else(|| io::Error::other("no launcher program"))?;
    let body = req.encode();
    if body.len() > MAX_REQUEST {
        return Err(io::Error::other("request too large for the launcher"));
    }
    if FAILED
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&key)
    {
        return Err(io::Error::other("the sandbox launcher cannot start here"));
    }
    // A dead launcher (killed, or its sandbox failed) is replaced once; a configuration whose
    // launcher never answers is not tried again (its commands start a bwrap each).
    for attempt in 0..2 {
        let l = get_or_start(&key, program, attempt > 0)?;
        match send_request(&l, &body, out) {
            Ok((chan, pid)) => return Ok((chan, pid, l)),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                // Stuck: end its sandbox (and whatever runs there) before anything else runs.
                l.kill();
                forget(&l);
                return Err(e);
            }
            Err(e) if attempt == 0 && e.kind() != io::ErrorKind::NotFound => {
                forget(&l);
                continue;
            }
            Err(e) => {
                if e.kind() != io::ErrorKind::NotFound {
                    forget(&l);
                    let mut f = FAILED.lock().unwrap_or_else(|e| e.into_inner());
                    if f.len() >= MAX_LAUNCHERS {
                        f.remove(0);
                    }
                    f.push(key);
                }
                return Err(e);
            }
        }
    }
    Err(io::Error::other("the sandbox launcher did not start"))
}

fn get_or_start(key: &Key, program: &Path, fresh: bool) -> io::Result<Arc<Launcher>> {
    let mut all = LAUNCHERS.lock().unwrap_or_else(|e| e.into_inner());
    if !fresh {
        if let Some(l) = all.iter().find(|l| l.key == *key) {
            return Ok(l.clone());
        }
    }
    let l = Arc::new(launch(key, program)?);
    // A launcher for the same policy with other arguments is outdated: drop it (it lives on
    // while its running commands hold it).
    all.retain(|o| o.key.policy != key.policy);
    if all.len() >= MAX_LAUNCHERS {
        all.remove(0);
    }
    all.push(l.clone());
    Ok(l)
}

fn forget(l: &Arc<Launcher>) {
    let mut all = LAUNCHERS.lock().unwrap_or_else(|e| e.into_inner());
    all.retain(|o| !Arc::ptr_eq(o, l));
}

/// Starts `bwrap <args> -- <program> __fen-sandbox-launcher 3` (or, for Landlock, the
/// program itself with the ruleset applied) with the launcher's end of a new control socket
/// as descriptor 3, an empty environment, and its own session.
fn launch(key: &Key, program: &Path) -> io::Result<Launcher> {
    let (mine, theirs) = packet_pair()?;
    let raw = theirs.as_raw_fd();
    let mut cmd = match &key.via {
        Via::Bwrap { bwrap, args, .. } => {
            let mut c = std::process::Command::new(bwrap);
            c.args(args).arg("--").arg(program);
            c
        }
        #[cfg(target_os = "linux")]
        Via::Landlock(_) => std::process::Command::new(program),
    };
    cmd.arg(LAUNCHER_ARG)
        .arg("3")
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: dup2/fcntl/setsid are async-signal-safe and use only the raw descriptor number.
    unsafe {
        cmd.pre_exec(move || {
            if raw == 3 {
                if libc::fcntl(3, libc::F_SETFD, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
            } else if libc::dup2(raw, 3) != 3 {
                return Err(io::Error::last_os_error());
            }
            nix::unistd::setsid().map(|_| ()).map_err(io::Error::from)
        });
    }
    #[cfg(target_os = "linux")]
    if let Via::Landlock(prepared) = &key.via {
        let prepared = prepared.clone();
        // SAFETY: `apply` makes only raw syscalls on data built before the fork (see
        // `process::restrict`); a failure aborts the spawn, nothing runs unsandboxed.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
    }
    let child = spawn_from_a_lasting_thread(cmd)?;
    drop(theirs);
    Ok(Launcher {
        key: key.clone(),
        ctl: Mutex::new(mine),
        child: Mutex::new(Some(child)),
    })
}

/// Spawns `cmd` from a thread that lives as long as the process. bwrap's `--die-with-parent`
/// ties the sandbox to the *thread* that started it (`PR_SET_PDEATHSIG`): started from a
/// blocking-pool thread, it would be killed when that thread retires after idling.
fn spawn_from_a_lasting_thread(cmd: std::process::Command) -> io::Result<std::process::Child> {
    type Job = (
        std::process::Command,
        std::sync::mpsc::Sender<io::Result<std::process::Child>>,
    );
    static TX: OnceLock<Option<Mutex<std::sync::mpsc::Sender<Job>>>> = OnceLock::new();
    let tx = TX.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("fen-sandbox-spawner".into())
            .spawn(move || {
                for (mut cmd, back) in rx {
                    let _ = back.send(cmd.spawn());
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let Some(tx) = tx else {
        return Err(io::Error::other("cannot start the sandbox spawner thread"));
    };
    let (back, answer) = std::sync::mpsc::channel();
    tx.lock()
        .unwrap_or_else(|e| e.into_inner())
        .send((cmd, back))
        .map_err(|_| io::Error::other("the sandbox spawner thread is gone"))?;
    answer
        .recv()
        .map_err(|_| io::Error::other("the sandbox spawner thread is gone"))?
}

/// A connected pair of close-on-exec Unix packet sockets.
fn packet_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(io::Error::from)
}

/// Sends one request and waits for the keeper's answer (started, or why not).
fn send_request(l: &Launcher, body: &[u8], out: &OwnedFd) -> io::Result<(OwnedFd, i32)> {
    let (mine, theirs) = packet_pair()?;
    {
        let ctl = l.ctl.lock().unwrap_or_else(|e| e.into_inner());
        let fds = [out.as_raw_fd(), theirs.as_raw_fd()];
        let cm = [ControlMessage::ScmRights(&fds)];
        sendmsg::<()>(
            ctl.as_raw_fd(),
            &[IoSlice::new(body)],
            &cm,
            MsgFlags::MSG_NOSIGNAL,
            None,
        )
        .map_err(io::Error::from)?;
    }
    drop(theirs);
    // The first answer: started (pid) or failed (errno). A closed channel means the launcher
    // is gone (it closes what it received when it cannot serve it). A launcher that does not
    // answer in time (stopped by a command of its sandbox, say) is given up: dropping the
    // channel makes its keeper kill the command if it ever starts it.
    let mut b = [0u8; 16];
    let mut pfd = libc::pollfd {
        fd: mine.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let deadline = std::time::Instant::now() + ANSWER_TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the sandbox launcher did not answer",
            ));
        }
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().min(i32::MAX as u128) as i32) };
        if r > 0 {
            break;
        }
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::last_os_error());
        }
    }
    let n = loop {
        match nix::sys::socket::recv(mine.as_fd().as_raw_fd(), &mut b, MsgFlags::empty()) {
            Err(nix::errno::Errno::EINTR) => continue,
            r => break r.map_err(io::Error::from)?,
        }
    };
    match unframe(&b[..n]) {
        Some((MSG_STARTED, pid)) => Ok((mine, pid)),
        Some((MSG_FAILED, errno)) => Err(io::Error::new(
            io::ErrorKind::NotFound,
            io::Error::from_raw_os_error(errno),
        )),
        _ => Err(io::Error::other("the sandbox launcher closed the request")),
    }
}

/// Wraps a started command's channel for async use.
pub fn remote(chan: OwnedFd, pid: i32, launcher: Arc<Launcher>) -> io::Result<Remote> {
    nix::fcntl::fcntl(
        &chan,
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )
    .map_err(io::Error::from)?;
    Ok(Remote {
        // SAFETY: `chan` is an OwnedFd, open and unchanged for as long as the AsyncFd owns it.
        chan: unsafe { AsyncFd::register_with_interest(chan, tokio::io::Interest::READABLE) }
            .map_err(|e| e.into_parts().1)?,
        pid,
        _launcher: launcher,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_round_trips() {
        let r = Request {
            shell: "/bin/bash".into(),
            cwd: "".into(),
            command: "echo 'a b' && true".into(),
            env: vec!["A=1".into(), "B=x=y".into()],
        };
        assert_eq!(Request::decode(&r.encode()), Some(r));
        assert_eq!(Request::decode(&[1, 0, 0]), None);
        assert_eq!(unframe(&frame(MSG_EXITED, -7)), Some((MSG_EXITED, -7)));
    }
}
