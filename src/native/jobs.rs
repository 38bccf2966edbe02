//! Background jobs: shell commands that outlive the tool call that started them (a dev server
//! started now and read or stopped later).
//!
//! - Each job is `bash -c` (else `sh -c`) as the leader of its own session and process group,
//!   stdin `/dev/null`, stdout and stderr merged into a log file under the state directory.
//!   The log is capped (64 MiB by default); output past the cap is read and discarded, so the
//!   job never blocks on a full pipe nor dies of SIGPIPE.
//! - `output` returns the bytes logged since the previous read and the status, waiting (bounded)
//!   for new output or the exit; `kill` sends SIGTERM to the group, then SIGKILL after a grace.
//! - The job table is process-wide, so [`terminate_all`] (called on every exit path of the
//!   binary: normal end, Ctrl-C, SIGTERM) ends every job's group, whoever started it.

use crate::native::registry::{ChildStatus, Registry};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use nix::fcntl::OFlag;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::Notify;

use crate::native::process::{
    default_shell, group_members, own_session, restrict, sandboxed_shell, terminate_groups,
    NON_INTERACTIVE_ENV,
};
use crate::native::sandbox::{self, Launch, Sandbox, SandboxError};

/// Jobs that may run at once.
pub const MAX_RUNNING: usize = 16;
/// Default log cap: 64 MiB.
pub const DEFAULT_LOG_CAP: u64 = 64 * 1024 * 1024;
/// Longest `output` wait.
pub const MAX_WAIT: Duration = Duration::from_secs(300);
/// Time between SIGTERM and SIGKILL for `kill`.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// Time between SIGTERM and SIGKILL when fen exits.
const EXIT_GRACE: Duration = Duration::from_millis(200);

/// What to start.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub command: String,
    pub cwd: Option<PathBuf>,
    /// Directory of the log files (created when needed).
    pub log_dir: PathBuf,
    pub log_cap: u64,
    /// Environment overrides, applied after the non-interactive defaults.
    pub env: Vec<(String, String)>,
    /// Inherited variables the job must not see (provider keys and other secrets).
    pub env_remove: Vec<String>,
    /// OS sandbox to run the job in (the one shell tool commands use); `None`: unsandboxed.
    /// A job gets a sandbox of its own (one bwrap per job, or the Landlock ruleset applied
    /// in its spawn), so ending its process group ends everything it started.
    pub sandbox: Option<Sandbox>,
}

/// A job's state.
pub type JobStatus = ChildStatus;

/// A snapshot of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub id: String,
    pub pid: i32,
    pub command: String,
    pub log: PathBuf,
    pub status: JobStatus,
    /// Bytes written to the log (at most the cap).
    pub logged: u64,
    /// Whether `kill` ended it.
    pub killed: bool,
    pub started: SystemTime,
}

/// What `output` returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutput {
    pub info: JobInfo,
    /// The new bytes (the most recent `max_bytes` of them).
    pub bytes: Vec<u8>,
    /// New bytes left out because there were more than `max_bytes`.
    pub skipped: u64,
    /// The log reached its cap: later output was discarded.
    pub capped: bool,
}

/// Why a job operation failed.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("{MAX_RUNNING} jobs are already running; stop one with job_kill first")]
    TooMany,
    #[error("no job {0:?} (see /jobs)")]
    Unknown(String),
    #[error("cwd {0} is not an existing directory")]
    BadCwd(PathBuf),
    #[error("cannot create the job log {0}: {1}")]
    Log(PathBuf, std::io::Error),
    #[error("cannot start the shell: {0}")]
    Spawn(std::io::Error),
    #[error("cannot read the job log {0}: {1}")]
    Read(PathBuf, std::io::Error),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

#[derive(Debug)]
struct State {
    status: JobStatus,
    logged: u64,
    read_offset: u64,
    capped: bool,
    killed: bool,
    /// The reader reached the end of the pipe (nothing more will be logged).
    drained: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Notify,
}

impl Shared {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }
}

#[derive(Debug, Clone)]
struct Job {
    id: String,
    pid: i32,
    command: String,
    log: PathBuf,
    started: SystemTime,
    shared: Arc<Shared>,
}

impl Job {
    fn info(&self) -> JobInfo {
        let (status, logged, killed) = self.shared.with(|s| (s.status, s.logged, s.killed));
        JobInfo {
            id: self.id.clone(),
            pid: self.pid,
            command: self.command.clone(),
            log: self.log.clone(),
            status,
            logged,
            killed,
            started: self.started,
        }
    }
}

static JOBS: Registry<Job> = Registry::new("bg");

fn find(id: &str) -> Result<Job, JobError> {
    JOBS.get(id)
        .ok_or_else(|| JobError::Unknown(id.to_string()))
}

/// Every job, oldest first.
pub fn list() -> Vec<JobInfo> {
    JOBS.map(Job::info)
}

/// Jobs still running.
pub fn running() -> usize {
    list()
        .iter()
        .filter(|j| j.status == JobStatus::Running)
        .count()
}

/// Starts a job. Must be called inside a tokio runtime (the log writer and the exit watcher
/// are tasks of it).
pub async fn start(spec: JobSpec) -> Result<JobInfo, JobError> {
    if running() >= MAX_RUNNING {
        return Err(JobError::TooMany);
    }
    if let Some(cwd) = &spec.cwd {
        if !tokio::fs::metadata(cwd).await.is_ok_and(|m| m.is_dir()) {
            return Err(JobError::BadCwd(cwd.clone()));
        }
    }
    let launch = match &spec.sandbox {
        None => Launch::Unsandboxed,
        Some(sb) => {
            let (sb, cwd) = (sb.clone(), spec.cwd.clone());
            tokio::task::spawn_blocking(move || sandbox::prepare(&sb, cwd.as_deref()))
                .await
                .map_err(|e| {
                    SandboxError::Unavailable(format!("sandbox preparation panicked: {e}"))
                })??
        }
    };
    let (n, id) = JOBS.next_id();
    let log = spec
        .log_dir
        .join(format!("{}-{id}.log", std::process::id()));
    tokio::fs::create_dir_all(&spec.log_dir)
        .await
        .map_err(|e| JobError::Log(spec.log_dir.clone(), e))?;
    let file = tokio::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&log)
        .await
        .map_err(|e| JobError::Log(log.clone(), e))?;
    let (read_fd, write_fd) =
        nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(|e| JobError::Spawn(e.into()))?;
    let stderr_fd = write_fd.try_clone().map_err(JobError::Spawn)?;
    let mut cmd = sandboxed_shell(&launch, default_shell(), spec.cwd.as_deref());
    cmd.arg("-c")
        .arg(&spec.command)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_fd))
        .stderr(Stdio::from(stderr_fd))
        .envs(NON_INTERACTIVE_ENV.iter().copied())
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    for k in &spec.env_remove {
        cmd.env_remove(k);
    }
    own_session(cmd.as_std_mut());
    restrict(&mut cmd, &launch);
    let mut child = cmd.spawn().map_err(JobError::Spawn)?;
    drop(cmd);
    let pid = child.id().map_or(0, |p| p as i32);
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            status: JobStatus::Running,
            logged: 0,
            read_offset: 0,
            capped: false,
            killed: false,
            drained: false,
        }),
        changed: Notify::new(),
    });
    let job = Job {
        id: id.clone(),
        pid,
        command: spec.command.clone(),
        log: log.clone(),
        started: SystemTime::now(),
        shared: shared.clone(),
    };
    JOBS.with(|j| j.insert(n, job.clone()));
    let reader = pipe::Receiver::from_owned_fd(read_fd).map_err(JobError::Spawn)?;
    tokio::spawn(log_writer(reader, file, spec.log_cap, shared.clone()));
    tokio::spawn(async move {
        let status = ChildStatus::of(child.wait().await);
        shared.with(|s| s.status = status);
        shared.changed.notify_waiters();
    });
    Ok(job.info())
}

/// Copies the pipe into the log until every writer closed it, up to `cap` bytes.
async fn log_writer(
    mut reader: pipe::Receiver,
    mut file: tokio::fs::File,
    cap: u64,
    shared: Arc<Shared>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut written: u64 = 0;
    let mut file_ok = true;
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if written >= cap || !file_ok {
            continue;
        }
        let room = (cap - written).min(n as u64) as usize;
        let mut chunk = buf[..room].to_vec();
        let capped = room < n;
        if capped {
            chunk.extend_from_slice(
                format!("\n[fen: log capped at {cap} bytes; later output discarded]\n").as_bytes(),
            );
        }
        if file.write_all(&chunk).await.is_err() || file.flush().await.is_err() {
            file_ok = false;
            continue;
        }
        written += chunk.len() as u64;
        let logged = written;
        if capped {
            written = written.max(cap);
        }
        shared.with(|s| {
            s.logged = logged;
            s.capped |= capped;
        });
        shared.changed.notify_waiters();
    }
    shared.with(|s| s.drained = true);
    shared.changed.notify_waiters();
}

/// The bytes logged since the previous `output` of this job (at most the last `max_bytes` of
/// them) and its status, waiting up to `wait` (at most [`MAX_WAIT`]) for new output or the
/// exit when there is none yet.
pub async fn output(id: &str, wait: Duration, max_bytes: usize) -> Result<JobOutput, JobError> {
    let job = find(id)?;
    let deadline = Instant::now() + wait.min(MAX_WAIT);
    loop {
        let notified = job.shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let (fresh, exited) = job
            .shared
            .with(|s| (s.logged > s.read_offset, s.status != JobStatus::Running));
        if fresh || exited || Instant::now() >= deadline {
            break;
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
    // The shell exited: give its last output a moment to reach the log (a child of the job
    // may keep the pipe open longer; it is not waited for).
    let settle = Instant::now() + Duration::from_millis(200);
    loop {
        let notified = job.shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let waiting = job
            .shared
            .with(|s| s.status != JobStatus::Running && !s.drained);
        if !waiting || Instant::now() >= settle {
            break;
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(settle.into()) => {}
        }
    }
    let (from, to, capped) = job.shared.with(|s| {
        let from = s.read_offset;
        s.read_offset = s.logged;
        (from, s.logged, s.capped)
    });
    let len = to.saturating_sub(from);
    let skipped = len.saturating_sub(max_bytes as u64);
    let path = job.log.clone();
    let bytes = tokio::task::spawn_blocking(move || read_range(&path, from + skipped, to))
        .await
        .map_err(|e| JobError::Read(job.log.clone(), std::io::Error::other(e)))?
        .map_err(|e| JobError::Read(job.log.clone(), e))?;
    Ok(JobOutput {
        info: job.info(),
        bytes,
        skipped,
        capped,
    })
}

fn read_range(path: &Path, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut out = Vec::with_capacity(to.saturating_sub(from) as usize);
    f.take(to.saturating_sub(from)).read_to_end(&mut out)?;
    Ok(out)
}

/// Ends a job's process group: SIGTERM, then SIGKILL after `grace` if anything is left.
/// Returns the job once its shell has been reaped (or after a short wait).
pub async fn kill(id: &str, grace: Duration) -> Result<JobInfo, JobError> {
    let job = find(id)?;
    job.shared.with(|s| s.killed = true);
    let pgid = job.pid;
    let empty = || async move {
        tokio::task::spawn_blocking(move || group_members(pgid).is_empty())
            .await
            .unwrap_or(false)
    };
    if pgid > 0 && !empty().await {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && !empty().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !empty().await {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
    // Let the watcher reap the shell so the status is final.
    let deadline = Instant::now() + Duration::from_millis(500);
    while job.shared.with(|s| s.status == JobStatus::Running) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(job.info())
}

/// Waits until the job's shell exited; returns its final snapshot.
pub async fn wait_exit(id: &str) -> Result<JobInfo, JobError> {
    let job = find(id)?;
    loop {
        let notified = job.shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if job.shared.with(|s| s.status != JobStatus::Running) {
            return Ok(job.info());
        }
        notified.await;
    }
}

/// Ends every job's process group: SIGTERM to all, SIGKILL to whatever is left after a short
/// grace. Blocking; for the binary's exit paths (outside or at the end of the runtime).
pub fn terminate_all() {
    let groups: Vec<i32> = JOBS
        .map(|job| job.pid)
        .into_iter()
        .filter(|&p| p > 0)
        .collect();
    terminate_groups(&groups, EXIT_GRACE);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(cmd: &str, dir: &Path) -> JobSpec {
        JobSpec {
            command: cmd.into(),
            cwd: None,
            log_dir: dir.to_path_buf(),
            log_cap: DEFAULT_LOG_CAP,
            env: Vec::new(),
            env_remove: Vec::new(),
            sandbox: None,
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn output_is_read_incrementally_and_the_exit_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let job = start(spec("echo one; sleep 0.3; echo two; exit 3", dir.path()))
            .await
            .unwrap();
        assert!(job.id.starts_with("bg"));
        let first = output(&job.id, Duration::from_secs(5), 1 << 20)
            .await
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&first.bytes), "one\n");
        assert_eq!(first.info.status, JobStatus::Running);
        let mut text = String::new();
        let mut status = JobStatus::Running;
        for _ in 0..20 {
            let o = output(&job.id, Duration::from_secs(2), 1 << 20)
                .await
                .unwrap();
            text.push_str(&String::from_utf8_lossy(&o.bytes));
            status = o.info.status;
            if status != JobStatus::Running {
                break;
            }
        }
        assert!(text.contains("two\n"), "{text:?}");
        let end = wait_exit(&job.id).await.unwrap();
        assert_eq!(end.status, JobStatus::Exited(3), "{status:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_silent_job_waits_then_reports_running_and_kill_ends_the_group() {
        let dir = tempfile::tempdir().unwrap();
        let job = start(spec("sh -c 'sleep 999 & wait'", dir.path()))
            .await
            .unwrap();
        let t = Instant::now();
        let o = output(&job.id, Duration::from_millis(300), 1024)
            .await
            .unwrap();
        assert!(t.elapsed() >= Duration::from_millis(250));
        assert_eq!(o.info.status, JobStatus::Running);
        assert!(o.bytes.is_empty());
        let info = kill(&job.id, KILL_GRACE).await.unwrap();
        assert!(info.killed);
        assert_eq!(info.status, JobStatus::Signaled(15));
        assert!(group_members(job.pid).is_empty());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn hidden_variables_do_not_reach_the_job() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(
            "echo \"[${HOME:+home}${PATH_FOR_JOBS_TEST:-gone}]\"",
            dir.path(),
        );
        s.env = vec![("PATH_FOR_JOBS_TEST".into(), "seen".into())];
        s.env_remove = vec!["HOME".into()];
        let job = start(s).await.unwrap();
        wait_exit(&job.id).await.unwrap();
        let o = output(&job.id, Duration::from_secs(2), 1000).await.unwrap();
        assert_eq!(String::from_utf8_lossy(&o.bytes), "[seen]\n");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_log_is_capped_and_output_keeps_the_latest_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = spec(
            "head -c 100000 /dev/zero | tr '\\0' a; echo; echo end",
            dir.path(),
        );
        s.log_cap = 50_000;
        let job = start(s).await.unwrap();
        wait_exit(&job.id).await.unwrap();
        let o = output(&job.id, Duration::from_secs(2), 1000).await.unwrap();
        assert!(o.capped);
        assert!(o.skipped > 0);
        assert!(String::from_utf8_lossy(&o.bytes).contains("log capped at 50000 bytes"));
        let len = std::fs::metadata(&o.info.log).unwrap().len();
        assert!(len < 50_200, "{len}");
    }
}
