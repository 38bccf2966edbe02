//! Process supervisor: runs one shell command the way a coding agent needs it.
//!
//! - `bash -c` (else `sh -c`) in its own session and process group, stdin `/dev/null` (or the
//!   bytes of `ProcessSpec::stdin` on a pipe), no controlling terminal, stdout and stderr
//!   merged in order on one pipe.
//! - Non-interactive environment (`GIT_EDITOR=true`, `PAGER=cat`, `TERM=dumb`, ...).
//! - Returns when the shell exits; output from background processes still holding the pipe
//!   is collected for a short drain window, then discarded by a detached drainer (so they do
//!   not die of SIGPIPE) and their pids are reported. `terminate_all_groups` ends them at exit.
//! - Timeout and cancellation: SIGTERM to the group, SIGKILL after a grace period.
//! - Bounded memory: cleaned head + rolling tail kept; the raw output spills to a file once it
//!   outgrows the kept size.
//!
//! Everything is async and runs on a `current_thread` runtime: the pipe is read through the
//! reactor, waits are timers, and file/`/proc` work goes to `spawn_blocking`.

mod clean;
mod groups;
mod kept;
mod live;
pub mod spill;

pub use crate::native::setsid::own_session;
pub use clean::{clean_all, Cleaner};
pub use groups::{
    group_members, is_dead, live_groups, proc_stat, terminate_all_groups, terminate_group,
    terminate_groups, EXIT_GRACE,
};
pub use kept::{Kept, KeptText};

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::Signal;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::sleep_until;
use tokio_util::sync::CancellationToken;

use crate::native::sandbox::{self, launcher, Launch, Sandbox, SandboxError};
use live::LiveBuf;
use spill::Spill;

/// Environment that keeps commands from waiting for a human. Applied over the inherited
/// environment; `ProcessSpec::env` can still override any of them.
///
/// `TERM=dumb`: the command has no terminal (pipes, no controlling tty), so advertising a
/// capable one would be a lie; `dumb` makes curses programs refuse instead of drawing and
/// makes many tools skip colors and progress bars, which the model does not need.
pub const NON_INTERACTIVE_ENV: &[(&str, &str)] = &[
    ("GIT_EDITOR", "true"),
    ("EDITOR", "true"),
    ("VISUAL", "true"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("TERM", "dumb"),
];

/// Requested pipe capacity: fewer wake-ups on bulk output (best effort, Linux only).
const PIPE_SIZE: i32 = 1024 * 1024;
/// Read buffer size.
const READ_CHUNK: usize = 128 * 1024;
/// How often a terminated group is checked for being empty during the grace period.
const KILL_POLL: Duration = Duration::from_millis(10);
/// A date far enough away to stand for "never".
const NEVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// Most bytes a command may be given on stdin (they are held in memory until written).
pub const MAX_STDIN: usize = 8 * 1024 * 1024;

/// What to run and how.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Shell command line, passed to `shell -c`.
    pub command: String,
    /// Working directory; must exist and be a directory. `None`: fen's own.
    pub cwd: Option<PathBuf>,
    /// Environment overrides, applied last (after `NON_INTERACTIVE_ENV`).
    pub env: Vec<(String, String)>,
    /// Inherited variables to drop (e.g. API keys the command must not see).
    pub env_remove: Vec<String>,
    /// Shell to use; `None`: `bash` from PATH, else `/bin/sh`.
    pub shell: Option<PathBuf>,
    /// Wall-clock limit; the group is terminated when it passes.
    pub timeout: Option<Duration>,
    /// Time between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// How long output is still collected after the shell exits while others hold the pipe.
    pub drain_window: Duration,
    /// Cleaned bytes kept from the start of the output.
    pub head_bytes: usize,
    /// Cleaned bytes kept from the end of the output.
    pub tail_bytes: usize,
    /// Directory for the full raw output once it outgrows `head_bytes + tail_bytes`
    /// (created when needed). `None`: nothing is spilled.
    pub spill_dir: Option<PathBuf>,
    /// Minimum time between two live-output callbacks.
    pub live_interval: Duration,
    /// OS sandbox to run the command in; `None`: unsandboxed.
    pub sandbox: Option<Sandbox>,
    /// Bytes written to the command's stdin, then closed (at most `MAX_STDIN`); `None`:
    /// stdin is `/dev/null`.
    pub stdin: Option<std::sync::Arc<[u8]>>,
}

impl ProcessSpec {
    /// A spec with defaults: no timeout, 200 ms grace, 1 s drain, 32 KiB + 32 KiB kept,
    /// no spill dir, 100 ms live interval.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            cwd: None,
            env: Vec::new(),
            env_remove: Vec::new(),
            shell: None,
            timeout: None,
            kill_grace: Duration::from_millis(200),
            drain_window: Duration::from_secs(1),
            head_bytes: 32 * 1024,
            tail_bytes: 32 * 1024,
            spill_dir: None,
            live_interval: Duration::from_millis(100),
            sandbox: None,
            stdin: None,
        }
    }
}

/// How a run ended and what it printed.
#[derive(Debug, Clone)]
pub struct ProcessResult {
    /// Shell exit code; `None` when it died of a signal.
    pub exit_code: Option<i32>,
    /// Signal that killed the shell, if any.
    pub signal: Option<i32>,
    /// The timeout passed and the group was terminated.
    pub timed_out: bool,
    /// The cancellation token fired and the group was terminated.
    pub cancelled: bool,
    /// Wall-clock time of the whole call.
    pub duration: Duration,
    /// Raw bytes read from the pipe (before cleanup).
    pub total_bytes: u64,
    /// Cleaned output; head + marker + tail when cut.
    pub text: String,
    /// Whether `text` is cut.
    pub truncated: bool,
    /// Bytes of `text` shown as `\xNN` escapes (invalid UTF-8, control bytes): the caller must
    /// say so, since the tool-result sanitizer sees only clean text afterwards.
    pub escaped_bytes: usize,
    /// File holding the full raw output, when it outgrew the kept size.
    pub spill_path: Option<PathBuf>,
    /// Why the spill file could not be written, if it could not.
    pub spill_error: Option<String>,
    /// Processes of the command's group still running after it returned.
    pub background_pids: Vec<i32>,
    /// The command's process group id (the shell's pid); still registered for
    /// `terminate_group` / `terminate_all_groups` while `background_pids` is not empty.
    pub pgid: i32,
}

/// Why a command could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The working directory does not exist.
    #[error("working directory {} does not exist; pass an existing directory as cwd", path.display())]
    CwdMissing {
        /// The directory asked for.
        path: PathBuf,
    },
    /// The working directory is a file or something else.
    #[error("working directory {} is not a directory; pass a directory as cwd", path.display())]
    CwdNotDirectory {
        /// The path asked for.
        path: PathBuf,
    },
    /// The working directory could not be inspected.
    #[error("cannot access working directory {}: {source}; check its permissions", path.display())]
    CwdAccess {
        /// The directory asked for.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The output pipe could not be created.
    #[error("cannot create the output pipe: {0}; fen may be out of file descriptors")]
    Pipe(#[source] io::Error),
    /// The shell could not be started.
    #[error("cannot start {}: {source}; check that the shell exists and is executable", shell.display())]
    Spawn {
        /// The shell tried.
        shell: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The sandbox could not be set up (or is required and unavailable); nothing ran.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// More input than `MAX_STDIN`; nothing ran.
    #[error("the command's input is {bytes} bytes, more than the {max} bytes a command may be given on stdin; pass less (or a file path) instead", max = MAX_STDIN)]
    StdinTooLarge {
        /// The size asked for.
        bytes: usize,
    },
    /// Waiting for the shell failed; its group was killed.
    #[error("lost track of the command ({0}); its process group was killed, run it again")]
    Wait(#[source] io::Error),
}

/// Why the group was terminated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    TimedOut,
    Cancelled,
}

/// Runs `spec.command` under supervision; see the module docs. `on_output` receives cleaned
/// live output, coalesced, at most every `spec.live_interval`; it is called on this task.
pub async fn run(
    spec: ProcessSpec,
    cancel: CancellationToken,
    mut on_output: Option<&mut (dyn FnMut(&str) + '_)>,
) -> Result<ProcessResult, ProcessError> {
    let started = Instant::now();
    if let Some(cwd) = &spec.cwd {
        validate_cwd(cwd).await?;
    }
    if let Some(input) = &spec.stdin {
        if input.len() > MAX_STDIN {
            return Err(ProcessError::StdinTooLarge { bytes: input.len() });
        }
    }
    let shell = spec
        .shell
        .clone()
        .unwrap_or_else(|| default_shell().to_path_buf());
    let (read_fd, write_fd) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| ProcessError::Pipe(e.into()))?;
    let _ = fcntl(&read_fd, FcntlArg::F_SETPIPE_SZ(PIPE_SIZE));
    let (mut proc, pgid) = match &spec.sandbox {
        None => local(&spec, &shell, &Launch::Unsandboxed, write_fd)?,
        Some(sb) => {
            let (sb, spec2, shell2) = (sb.clone(), spec.clone(), shell.clone());
            // Preparation (cached) and, under bubblewrap, the request to the persistent
            // sandbox are blocking: off the async thread.
            let (launch, started, write_fd) = tokio::task::spawn_blocking(move || {
                let launch = sandbox::prepare(&sb, spec2.cwd.as_deref())?;
                let started = match &launch {
                    // The persistent sandbox passes no stdin: a command given input runs as a
                    // child of its own (inside the same sandbox).
                    _ if spec2.stdin.is_some() => None,
                    Launch::Unsandboxed => None,
                    _ => start_remote(&spec2, &shell2, &sb, &launch, &write_fd).ok(),
                };
                Ok::<_, SandboxError>((launch, started, write_fd))
            })
            .await
            .map_err(|e| {
                SandboxError::Unavailable(format!("sandbox preparation panicked: {e}"))
            })??;
            match started {
                Some((chan, pid, l)) => {
                    drop(write_fd);
                    let r = launcher::remote(chan, pid, l).map_err(ProcessError::Wait)?;
                    (Proc::Remote(r), 0)
                }
                None => local(&spec, &shell, &launch, write_fd)?,
            }
        }
    };
    let mut guard = KillOnDrop(matches!(proc, Proc::Local(_)).then_some(pgid));
    // The input is written beside the output loop; a command that exits without reading it
    // all ends the writer (EPIPE), and whatever is still unwritten when the run returns is
    // dropped with it.
    let writer = match (&mut proc, &spec.stdin) {
        (Proc::Local(child), Some(input)) => child.stdin.take().map(|mut w| {
            let input = input.clone();
            tokio::spawn(async move {
                use tokio::io::AsyncWriteExt;
                let _ = w.write_all(&input).await;
            })
        }),
        _ => None,
    };
    let _writer = AbortOnDrop(writer);
    let mut reader = pipe::Receiver::from_owned_fd(read_fd).map_err(ProcessError::Pipe)?;

    let mut out = Collector::new(&spec, on_output.is_some());
    let mut buf = vec![0u8; READ_CHUNK];
    let far = Instant::now() + NEVER;
    let timeout_at = spec.timeout.map_or(far, |t| started + t);
    let timeout_sleep = sleep_until(timeout_at.into());
    tokio::pin!(timeout_sleep);

    let mut status: Option<ExitStatus> = None;
    let mut stop: Option<Stop> = None;
    let mut kill_at: Option<Instant> = None;
    let mut drain_deadline = far;
    let mut eof = false;
    let mut live_due = Instant::now() + spec.live_interval;

    loop {
        let drain_passed = status.is_some() && Instant::now() >= drain_deadline;
        if status.is_some() && kill_at.is_none() && (eof || drain_passed) {
            break;
        }
        let running = status.is_none();
        tokio::select! {
            biased;
            _ = cancel.cancelled(), if running && stop.is_none() => {
                stop = Some(Stop::Cancelled);
                kill_at = Some(proc.start_kill(pgid, spec.kill_grace));
            }
            _ = &mut timeout_sleep, if running && stop.is_none() && spec.timeout.is_some() => {
                stop = Some(Stop::TimedOut);
                kill_at = Some(proc.start_kill(pgid, spec.kill_grace));
            }
            _ = sleep_until(kill_at.unwrap_or(far).into()), if kill_at.is_some() => {
                proc.signal(pgid, Signal::SIGKILL);
                kill_at = None;
            }
            st = proc.wait(), if running => {
                status = Some(st.map_err(ProcessError::Wait)?);
                drain_deadline = Instant::now() + spec.drain_window;
            }
            r = reader.read(&mut buf), if !eof => match r {
                Ok(n) if n > 0 => out.push(&buf[..n]).await,
                // A read error on our own pipe is treated like the end of the output.
                _ => {
                    eof = true;
                    if kill_at.is_some() && status.is_some() && group_empty(pgid, &proc).await {
                        kill_at = None;
                    }
                }
            },
            // Pipe closed while SIGKILL is still pending: poll until the dying members are
            // gone instead of always waiting out the whole grace period.
            _ = tokio::time::sleep(KILL_POLL), if kill_at.is_some() && !running && eof => {
                if group_empty(pgid, &proc).await {
                    kill_at = None;
                }
            }
            _ = sleep_until(drain_deadline.into()), if !running && !eof && !drain_passed => {}
            _ = sleep_until(live_due.into()), if out.live_pending() => {}
        }
        if out.live_pending() && Instant::now() >= live_due {
            out.flush_live(&mut on_output);
            live_due = Instant::now() + spec.live_interval;
        }
    }

    out.finish_stream();
    out.flush_live(&mut on_output);
    if !eof {
        spawn_drainer(reader, pgid);
    }
    // A command of the persistent sandbox has no processes left when its keeper reports the
    // exit (they end with the command, as with one bwrap per command).
    let background_pids = match proc {
        Proc::Local(_) => members(pgid).await,
        Proc::Remote(_) => Vec::new(),
    };
    if background_pids.is_empty() && eof && pgid > 0 {
        groups::unregister(pgid);
    }
    guard.0 = None;
    let status = status.unwrap_or_else(|| ExitStatus::from_raw(0));
    Ok(out
        .into_result(Outcome {
            status,
            stop,
            started,
            background_pids,
            pgid,
        })
        .await)
}

/// Facts about the run gathered by `run` for the result.
struct Outcome {
    status: ExitStatus,
    stop: Option<Stop>,
    started: Instant,
    background_pids: Vec<i32>,
    pgid: i32,
}

/// The running command: a child of fen, or a command of the persistent sandbox.
enum Proc {
    Local(Child),
    Remote(launcher::Remote),
}

impl Proc {
    async fn wait(&mut self) -> io::Result<ExitStatus> {
        match self {
            Proc::Local(c) => c.wait().await,
            Proc::Remote(r) => r.wait().await,
        }
    }

    /// Signals the command's process group (the keeper does it inside the sandbox, processes
    /// that left the group included).
    fn signal(&self, pgid: i32, sig: Signal) {
        match self {
            Proc::Local(_) => groups::signal_group(pgid, sig),
            Proc::Remote(r) => r.signal(sig as i32),
        }
    }

    /// Sends SIGTERM; returns when SIGKILL is due.
    fn start_kill(&self, pgid: i32, grace: Duration) -> Instant {
        self.signal(pgid, Signal::SIGTERM);
        Instant::now() + grace
    }
}

/// Spawns the shell as fen's child; registers its group.
fn local(
    spec: &ProcessSpec,
    shell: &Path,
    launch: &Launch,
    write_fd: std::os::fd::OwnedFd,
) -> Result<(Proc, i32), ProcessError> {
    let child = spawn(spec, shell, launch, write_fd)?;
    let Some(pgid) = child.id().map(|p| p as i32) else {
        return Err(ProcessError::Wait(io::Error::other(
            "the shell exited before it could be tracked",
        )));
    };
    groups::register(pgid);
    Ok((Proc::Local(child), pgid))
}

/// Starts the command in the persistent sandbox of `launch` (blocking). `None`-worthy
/// errors (no launcher program, a launcher that cannot start, an oversized request) make the
/// caller start the command as its own child instead (a bwrap of its own, or the shell with
/// the Landlock ruleset), which reports real failures itself.
fn start_remote(
    spec: &ProcessSpec,
    shell: &Path,
    sb: &Sandbox,
    launch: &Launch,
    out: &std::os::fd::OwnedFd,
) -> io::Result<(
    std::os::fd::OwnedFd,
    i32,
    std::sync::Arc<launcher::Launcher>,
)> {
    let cwd = match &spec.cwd {
        Some(c) => c.clone(),
        None => std::env::current_dir()?,
    };
    let req = launcher::Request {
        shell: shell.as_os_str().to_os_string(),
        cwd: cwd.into_os_string(),
        command: spec.command.clone().into(),
        env: command_env(spec),
    };
    launch.start_persistent(&sb.policy, &req, out)
}

/// The command's complete environment, as `spawn` would give it: fen's own minus
/// `env_remove`, then `NON_INTERACTIVE_ENV`, then `spec.env`.
fn command_env(spec: &ProcessSpec) -> Vec<std::ffi::OsString> {
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(k, _)| !spec.env_remove.iter().any(|r| k == r.as_str()))
        .collect();
    let mut set = |k: &str, v: &str| {
        env.retain(|(ek, _)| ek != k);
        env.push((k.into(), v.into()));
    };
    for (k, v) in NON_INTERACTIVE_ENV {
        set(k, v);
    }
    for (k, v) in &spec.env {
        set(k, v);
    }
    env.into_iter()
        .map(|(mut k, v)| {
            k.push("=");
            k.push(v);
            k
        })
        .collect()
}

async fn members(pgid: i32) -> Vec<i32> {
    tokio::task::spawn_blocking(move || groups::group_members(pgid))
        .await
        .unwrap_or_default()
}

async fn group_empty(pgid: i32, proc: &Proc) -> bool {
    match proc {
        Proc::Local(_) => members(pgid).await.is_empty(),
        Proc::Remote(_) => true,
    }
}

/// Keeps reading (and discarding) the pipe so background processes that still write to it
/// are not killed by SIGPIPE; forgets the group once the pipe closes and it is empty.
fn spawn_drainer(mut reader: pipe::Receiver, pgid: i32) {
    tokio::spawn(async move {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n) = reader.read(&mut buf).await {
            if n == 0 {
                break;
            }
        }
        let _ = tokio::task::spawn_blocking(move || groups::prune(pgid)).await;
    });
}

/// Stops the stdin writer when `run` returns or is dropped.
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(h) = &self.0 {
            h.abort();
        }
    }
}

/// SIGKILLs the group if `run` is dropped before it finished (e.g. the caller gave up).
struct KillOnDrop(Option<i32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pgid) = self.0 {
            groups::signal_group(pgid, Signal::SIGKILL);
        }
    }
}

async fn validate_cwd(cwd: &Path) -> Result<(), ProcessError> {
    match tokio::fs::metadata(cwd).await {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(ProcessError::CwdNotDirectory {
            path: cwd.to_path_buf(),
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(ProcessError::CwdMissing {
            path: cwd.to_path_buf(),
        }),
        Err(source) => Err(ProcessError::CwdAccess {
            path: cwd.to_path_buf(),
            source,
        }),
    }
}

/// `bash` found on PATH, else `/bin/sh`.
pub fn default_shell() -> &'static Path {
    static SHELL: OnceLock<PathBuf> = OnceLock::new();
    SHELL.get_or_init(|| {
        std::env::var_os("PATH")
            .and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("bash"))
                    .find(|c| is_executable(c))
            })
            .unwrap_or_else(|| PathBuf::from("/bin/sh"))
    })
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Starts the shell in a new session with both output streams on `write_fd`, inside the
/// sandbox `launch` describes.
fn spawn(
    spec: &ProcessSpec,
    shell: &Path,
    launch: &Launch,
    write_fd: std::os::fd::OwnedFd,
) -> Result<Child, ProcessError> {
    let stderr_fd = write_fd.try_clone().map_err(ProcessError::Pipe)?;
    let mut cmd = sandboxed_shell(launch, shell, spec.cwd.as_deref());
    let stdin = if spec.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    cmd.arg("-c")
        .arg(&spec.command)
        .stdin(stdin)
        .stdout(Stdio::from(write_fd))
        .stderr(Stdio::from(stderr_fd));
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    for k in &spec.env_remove {
        cmd.env_remove(k);
    }
    cmd.envs(NON_INTERACTIVE_ENV.iter().copied());
    cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
    own_session(cmd.as_std_mut());
    restrict(&mut cmd, launch);
    let shell = match launch {
        Launch::Bubblewrap { bwrap, .. } => bwrap.as_path(),
        _ => shell,
    };
    let child = cmd.spawn().map_err(|source| ProcessError::Spawn {
        shell: shell.to_path_buf(),
        source,
    });
    // `cmd` (holding our copies of the pipe's write end) drops here, so the pipe reaches
    // EOF once the command's processes close it.
    child
}

/// The command that starts `shell` inside the sandbox `launch` describes, as its own process:
/// `bwrap <args> --chdir cwd -- shell` under bubblewrap, else `shell`. The caller adds `-c`,
/// the command, stdio, environment and `setsid`, then calls [`restrict`].
pub fn sandboxed_shell(launch: &Launch, shell: &Path, cwd: Option<&Path>) -> Command {
    match launch {
        Launch::Bubblewrap { bwrap, prepared } => {
            let mut c = Command::new(bwrap);
            c.args(Launch::bwrap_command_args(prepared, cwd)).arg(shell);
            c
        }
        _ => Command::new(shell),
    }
}

/// Applies the Landlock tier in the child (after the caller's own `pre_exec` steps); nothing
/// for the other launches.
pub fn restrict(cmd: &mut Command, launch: &Launch) {
    #[cfg(target_os = "linux")]
    if let Launch::Landlock(prepared) = launch {
        let prepared = prepared.clone();
        // SAFETY: `apply` makes only raw syscalls (prctl, landlock_restrict_self, seccomp) on
        // a ruleset fd and a filter built before the fork; it allocates nothing. A failure
        // aborts the spawn, so the command never runs unsandboxed.
        unsafe {
            cmd.pre_exec(move || prepared.apply());
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (cmd, launch);
}

/// Everything done with the bytes read: spill, cleanup, kept text, live output.
struct Collector {
    cleaner: Cleaner,
    kept: Kept,
    live: Option<LiveBuf>,
    raw_total: u64,
    /// Raw bytes held until the spill threshold is crossed (then written first).
    raw_prefix: Vec<u8>,
    spill_threshold: u64,
    spill_dir: Option<PathBuf>,
    spill: Option<Spill>,
}

impl Collector {
    fn new(spec: &ProcessSpec, live: bool) -> Self {
        Self {
            cleaner: Cleaner::new(),
            kept: Kept::new(spec.head_bytes, spec.tail_bytes),
            live: live.then(LiveBuf::new),
            raw_total: 0,
            raw_prefix: Vec::new(),
            spill_threshold: (spec.head_bytes + spec.tail_bytes) as u64,
            spill_dir: spec.spill_dir.clone(),
            spill: None,
        }
    }

    async fn push(&mut self, data: &[u8]) {
        self.raw_total += data.len() as u64;
        self.spill_raw(data).await;
        let (kept, live) = (&mut self.kept, &mut self.live);
        self.cleaner.feed(data, &mut |s: &[u8]| {
            kept.push(s);
            if let Some(l) = live {
                l.push(s);
            }
        });
    }

    /// Holds raw bytes until the threshold, then streams everything to the spill file.
    async fn spill_raw(&mut self, data: &[u8]) {
        if let Some(spill) = &mut self.spill {
            spill.send(data.to_vec()).await;
            return;
        }
        let Some(dir) = &self.spill_dir else { return };
        if self.raw_total <= self.spill_threshold {
            self.raw_prefix.extend_from_slice(data);
            return;
        }
        let mut spill = Spill::start(dir);
        spill.send(std::mem::take(&mut self.raw_prefix)).await;
        spill.send(data.to_vec()).await;
        self.spill = Some(spill);
    }

    fn finish_stream(&mut self) {
        let (kept, live) = (&mut self.kept, &mut self.live);
        self.cleaner.finish(&mut |s: &[u8]| {
            kept.push(s);
            if let Some(l) = live {
                l.push(s);
            }
        });
    }

    fn live_pending(&self) -> bool {
        self.live.as_ref().is_some_and(|l| !l.is_empty())
    }

    fn flush_live(&mut self, cb: &mut Option<&mut (dyn FnMut(&str) + '_)>) {
        if let (Some(live), Some(cb)) = (&mut self.live, cb.as_mut()) {
            if let Some(text) = live.take_text() {
                cb(&text);
            }
        }
    }

    async fn into_result(self, o: Outcome) -> ProcessResult {
        let (spill_path, spill_error) = match self.spill {
            Some(s) => match s.finish().await {
                Ok(p) => (Some(p), None),
                Err(e) => (None, Some(e)),
            },
            None => (None, None),
        };
        let kept = self.kept.finish();
        let counts = kept_counts(&kept);
        let text = if kept.truncated {
            let mut t = kept.head;
            if !t.is_empty() && !t.ends_with('\n') {
                t.push('\n');
            }
            t.push_str(&marker(&counts, self.raw_total, &spill_path, &spill_error));
            t.push('\n');
            t.push_str(&kept.tail);
            t
        } else {
            kept.head
        };
        ProcessResult {
            exit_code: o.status.code(),
            signal: o.status.signal(),
            timed_out: o.stop == Some(Stop::TimedOut),
            cancelled: o.stop == Some(Stop::Cancelled),
            duration: o.started.elapsed(),
            total_bytes: self.raw_total,
            text,
            truncated: kept.truncated,
            escaped_bytes: kept.escaped_bytes,
            spill_path,
            spill_error,
            background_pids: o.background_pids,
            pgid: o.pgid,
        }
    }
}

/// (omitted bytes, omitted lines, cleaned total bytes, cleaned total lines).
fn kept_counts(k: &KeptText) -> (u64, u64, u64, u64) {
    (
        k.omitted_bytes,
        k.omitted_lines,
        k.total_bytes,
        k.total_lines,
    )
}

/// The line standing between head and tail in a cut output.
fn marker(
    (omitted_bytes, omitted_lines, total, total_lines): &(u64, u64, u64, u64),
    raw_total: u64,
    spill: &Option<PathBuf>,
    spill_error: &Option<String>,
) -> String {
    let full = match (spill, spill_error) {
        (Some(p), _) => format!("full output ({raw_total} bytes) saved to {}", p.display()),
        (None, Some(e)) => format!("full output not saved: {e}"),
        (None, None) => "full output not saved".to_string(),
    };
    format!(
        "[... {omitted_bytes} bytes ({omitted_lines} lines) omitted of {total} bytes ({total_lines} lines); {full} ...]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_is_honest() {
        let m = marker(
            &(10, 2, 100, 20),
            120,
            &Some(PathBuf::from("/tmp/x.log")),
            &None,
        );
        assert!(m.contains("10 bytes (2 lines) omitted of 100 bytes"));
        assert!(m.contains("120 bytes) saved to /tmp/x.log"));
    }

    #[test]
    fn default_shell_is_executable() {
        assert!(is_executable(default_shell()));
    }
}
