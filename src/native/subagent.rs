//! Subagent runs: child `fen --mode json` processes supervised for the subagent companion.
//!
//! - Each child leads its own session and process group (`setsid`), stdin and stdout piped,
//!   stderr piped into a bounded tail. At most [`MAX_RUNNING`] run at once: the next start is
//!   refused with [`RunError::Cap`] before anything is spawned.
//! - Its stdout is one JSON object a line (the json presenter). Every line is appended to the
//!   run's transcript file; `llm-start` lines count turns, the last `result` line is the answer,
//!   and `subagent-ask` lines are permission questions the parent must answer (with
//!   [`answer`], a JSON line on the child's stdin). Lines that are not JSON are counted and kept
//!   in the output tail, so a crashing child reports what it printed.
//! - [`kill`] sends SIGTERM to the group, SIGKILL after a grace ([`KILL_GRACE`]); the table is
//!   process-wide, so [`terminate_all`] (on every exit path of the binary) ends every run.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

use crate::native::process::{group_members, own_session, terminate_groups};
use crate::native::registry::{ChildStatus, Registry};

/// Children that may run at once.
pub const MAX_RUNNING: usize = 4;
/// Time between SIGTERM and SIGKILL for [`kill`] (the child fen ends its own tools on SIGTERM).
pub const KILL_GRACE: Duration = Duration::from_millis(1500);
/// Bytes of non-JSON output (stdout and stderr) kept for error reports.
const TAIL_BYTES: usize = 4096;
/// How long stdout may stay open after the child exited before the run counts as finished.
const DRAIN: Duration = Duration::from_millis(500);
/// Longest stdout line kept whole (longer ones are cut in the tail, still parsed).
const MAX_LINE: usize = 8 * 1024 * 1024;
/// Time between SIGTERM and SIGKILL when fen exits.
const EXIT_GRACE: Duration = Duration::from_millis(300);

/// What to start.
#[derive(Debug, Clone, Default)]
pub struct RunSpec {
    /// The program (fen's own executable).
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    /// Environment overrides.
    pub env: Vec<(String, String)>,
    /// Inherited variables the child must not see.
    pub env_remove: Vec<String>,
    /// Where every stdout line is appended (created with its directory).
    pub transcript: Option<PathBuf>,
    /// Shown in lists: the agent's name.
    pub label: String,
    pub background: bool,
}

/// A run's state.
pub type RunStatus = ChildStatus;

/// A snapshot of one run.
#[derive(Debug, Clone)]
pub struct RunInfo {
    pub id: String,
    pub pid: i32,
    pub label: String,
    pub background: bool,
    pub status: RunStatus,
    /// The process exited and its output was read to the end (or the drain window passed).
    pub finished: bool,
    pub killed: bool,
    /// `llm-start` lines seen: model calls of the child.
    pub turns: u32,
    /// The child's last `result` line.
    pub result: Option<serde_json::Value>,
    /// Stdout lines that were not JSON objects.
    pub bad_lines: u32,
    /// The last bytes of non-JSON stdout and of stderr.
    pub tail: String,
    pub transcript: Option<PathBuf>,
    pub started: SystemTime,
    pub elapsed: Duration,
}

/// Why a run operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("active run cap ({MAX_RUNNING}) reached; wait for a run to end (subagent_ctl wait) or cancel one")]
    Cap,
    #[error("no subagent run {0:?} (subagent_ctl list shows them)")]
    Unknown(String),
    #[error("cwd {0} is not an existing directory")]
    BadCwd(PathBuf),
    #[error("cannot start {0}: {1}")]
    Spawn(PathBuf, std::io::Error),
    #[error("cannot answer run {0}: its stdin is closed")]
    Closed(String),
}

#[derive(Debug)]
struct State {
    status: RunStatus,
    exited_at: Option<Instant>,
    stdout_done: bool,
    killed: bool,
    turns: u32,
    result: Option<serde_json::Value>,
    bad_lines: u32,
    tail: VecDeque<u8>,
    asks: VecDeque<serde_json::Value>,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Notify,
    stdin: tokio::sync::Mutex<Option<tokio::process::ChildStdin>>,
}

impl Shared {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let mut g = self.state.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut g)
    }

    fn push_tail(&self, bytes: &[u8]) {
        self.with(|s| {
            s.tail.extend(bytes);
            let over = s.tail.len().saturating_sub(TAIL_BYTES);
            s.tail.drain(..over);
        });
    }
}

#[derive(Debug, Clone)]
struct Run {
    id: String,
    pid: i32,
    label: String,
    background: bool,
    transcript: Option<PathBuf>,
    started: SystemTime,
    t0: Instant,
    shared: Arc<Shared>,
}

impl Run {
    fn info(&self) -> RunInfo {
        self.shared.with(|s| RunInfo {
            id: self.id.clone(),
            pid: self.pid,
            label: self.label.clone(),
            background: self.background,
            status: s.status,
            finished: finished(s),
            killed: s.killed,
            turns: s.turns,
            result: s.result.clone(),
            bad_lines: s.bad_lines,
            tail: String::from_utf8_lossy(s.tail.make_contiguous()).into_owned(),
            transcript: self.transcript.clone(),
            started: self.started,
            elapsed: self.t0.elapsed(),
        })
    }
}

fn finished(s: &State) -> bool {
    s.status != RunStatus::Running
        && (s.stdout_done || s.exited_at.is_some_and(|t| t.elapsed() >= DRAIN))
}

static RUNS: Registry<Run> = Registry::new("sa");

fn find(id: &str) -> Result<Run, RunError> {
    RUNS.get(id)
        .ok_or_else(|| RunError::Unknown(id.to_string()))
}

/// Every run, oldest first.
pub fn list() -> Vec<RunInfo> {
    RUNS.map(Run::info)
}

/// One run's snapshot.
pub fn info(id: &str) -> Result<RunInfo, RunError> {
    Ok(find(id)?.info())
}

/// Runs whose process is still running.
pub fn running() -> usize {
    RUNS.map(|run| run.shared.with(|s| s.status == RunStatus::Running))
        .into_iter()
        .filter(|&running| running)
        .count()
}

/// Starts a run. Must be called inside a tokio runtime (the readers and the exit watcher are
/// tasks of it). The cap is checked and the child spawned under one lock, so concurrent starts
/// never exceed it.
pub async fn start(spec: RunSpec) -> Result<RunInfo, RunError> {
    if running() >= MAX_RUNNING {
        return Err(RunError::Cap);
    }
    if let Some(cwd) = &spec.cwd {
        if !tokio::fs::metadata(cwd).await.is_ok_and(|m| m.is_dir()) {
            return Err(RunError::BadCwd(cwd.clone()));
        }
    }
    let transcript = match &spec.transcript {
        Some(path) => {
            if let Some(dir) = path.parent() {
                let _ = tokio::fs::create_dir_all(dir).await;
            }
            tokio::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .await
                .ok()
        }
        None => None,
    };
    let mut cmd = tokio::process::Command::new(&spec.program);
    cmd.args(&spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    for k in &spec.env_remove {
        cmd.env_remove(k);
    }
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    own_session(cmd.as_std_mut());
    let spawned = RUNS.with(|runs| {
        let live = runs
            .values()
            .filter(|r| r.shared.with(|s| s.status == RunStatus::Running))
            .count();
        if live >= MAX_RUNNING {
            return Err(RunError::Cap);
        }
        let child = cmd
            .spawn()
            .map_err(|e| RunError::Spawn(spec.program.clone(), e))?;
        let (n, id) = RUNS.next_id();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                status: RunStatus::Running,
                exited_at: None,
                stdout_done: false,
                killed: false,
                turns: 0,
                result: None,
                bad_lines: 0,
                tail: VecDeque::new(),
                asks: VecDeque::new(),
            }),
            changed: Notify::new(),
            stdin: tokio::sync::Mutex::new(None),
        });
        let run = Run {
            id,
            pid: child.id().map_or(0, |p| p as i32),
            label: spec.label.clone(),
            background: spec.background,
            transcript: spec.transcript.clone(),
            started: SystemTime::now(),
            t0: Instant::now(),
            shared,
        };
        runs.insert(n, run.clone());
        Ok((run, child))
    });
    drop(cmd);
    let (run, mut child) = spawned?;
    if let Some(stdin) = child.stdin.take() {
        *run.shared.stdin.lock().await = Some(stdin);
    }
    if let Some(out) = child.stdout.take() {
        tokio::spawn(read_stdout(out, transcript, run.shared.clone()));
    }
    if let Some(err) = child.stderr.take() {
        tokio::spawn(read_stderr(err, run.shared.clone()));
    }
    let shared = run.shared.clone();
    tokio::spawn(async move {
        let status = ChildStatus::of(child.wait().await);
        shared.with(|s| {
            s.status = status;
            s.exited_at = Some(Instant::now());
        });
        *shared.stdin.lock().await = None;
        shared.changed.notify_waiters();
        // Wake waiters again once the drain window passed (stdout may be held open).
        tokio::time::sleep(DRAIN).await;
        shared.changed.notify_waiters();
    });
    Ok(run.info())
}

async fn read_stdout(
    out: tokio::process::ChildStdout,
    mut transcript: Option<tokio::fs::File>,
    shared: Arc<Shared>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, out);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if let Some(f) = &mut transcript {
            if f.write_all(&line).await.is_err() {
                transcript = None;
            }
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<serde_json::Value>(text) {
            Ok(v) if v.is_object() => {
                let kind = v.get("type").and_then(|t| t.as_str()).unwrap_or("");
                match kind {
                    "llm-start" => shared.with(|s| s.turns += 1),
                    "result" => shared.with(|s| s.result = Some(v.clone())),
                    "subagent-ask" => shared.with(|s| s.asks.push_back(v.clone())),
                    _ => continue,
                }
            }
            _ => {
                shared.with(|s| s.bad_lines += 1);
                let cut = &text[..text.len().min(MAX_LINE)];
                shared.push_tail(cut);
                shared.push_tail(b"\n");
            }
        }
        shared.changed.notify_waiters();
    }
    if let Some(f) = &mut transcript {
        let _ = f.flush().await;
    }
    shared.with(|s| s.stdout_done = true);
    shared.changed.notify_waiters();
}

async fn read_stderr(mut err: tokio::process::ChildStderr, shared: Arc<Shared>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match err.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => shared.push_tail(&buf[..n]),
        }
    }
}

/// What [`next`] saw.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// A permission question of the child: `{type = "subagent-ask", id, request}`.
    Ask(serde_json::Value),
    /// The run finished.
    Finished(RunInfo),
}

/// The next pending ask of the run, or its end, waiting up to `wait` (`None`: timeout).
pub async fn next(id: &str, wait: Duration) -> Result<Option<RunEvent>, RunError> {
    let run = find(id)?;
    let deadline = Instant::now() + wait;
    loop {
        let notified = run.shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(ask) = run.shared.with(|s| s.asks.pop_front()) {
            return Ok(Some(RunEvent::Ask(ask)));
        }
        if run.shared.with(|s| finished(s)) {
            return Ok(Some(RunEvent::Finished(run.info())));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
}

/// Waits up to `wait` for the run to finish (asks are left for their handler); returns the
/// snapshot either way (`finished` tells which). Never kills the child.
pub async fn wait(id: &str, wait: Duration) -> Result<RunInfo, RunError> {
    let run = find(id)?;
    let deadline = Instant::now() + wait;
    loop {
        let notified = run.shared.changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if run.shared.with(|s| finished(s)) || Instant::now() >= deadline {
            return Ok(run.info());
        }
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
}

/// Writes one JSON line to the child's stdin (the answer to an ask).
pub async fn answer(id: &str, value: &serde_json::Value) -> Result<(), RunError> {
    let run = find(id)?;
    let mut line = serde_json::to_vec(value).unwrap_or_default();
    line.push(b'\n');
    let mut stdin = run.shared.stdin.lock().await;
    let Some(w) = stdin.as_mut() else {
        return Err(RunError::Closed(id.to_string()));
    };
    if w.write_all(&line).await.is_err() || w.flush().await.is_err() {
        *stdin = None;
        return Err(RunError::Closed(id.to_string()));
    }
    Ok(())
}

/// Ends a run's process group: SIGTERM, then SIGKILL after `grace` if anything is left.
/// Returns once the child was reaped (or after a short wait).
pub async fn kill(id: &str, grace: Duration) -> Result<RunInfo, RunError> {
    let run = find(id)?;
    let pgid = run.pid;
    let running = run.shared.with(|s| {
        let r = s.status == RunStatus::Running;
        if r {
            s.killed = true;
        }
        r
    });
    let empty = || async move {
        tokio::task::spawn_blocking(move || group_members(pgid).is_empty())
            .await
            .unwrap_or(false)
    };
    if pgid > 0 && (running || !empty().await) {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && !empty().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !empty().await {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
    let deadline = Instant::now() + Duration::from_millis(500);
    while run.shared.with(|s| s.status == RunStatus::Running) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(run.info())
}

/// Ends every run's process group: SIGTERM to all, SIGKILL to what is left after a short
/// grace. Blocking; for the binary's exit paths.
pub fn terminate_all() {
    let groups: Vec<i32> = RUNS
        .map(|run| run.pid)
        .into_iter()
        .filter(|&p| p > 0)
        .collect();
    terminate_groups(&groups, EXIT_GRACE);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> RunSpec {
        RunSpec {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            label: "t".into(),
            ..RunSpec::default()
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn lines_are_parsed_asks_answered_and_the_end_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = sh(
            r#"echo '{"type":"llm-start"}'; echo '{"type":"subagent-ask","id":1}'; read a; echo "{\"type\":\"result\",\"final_text\":$a}"; echo oops >&2; exit 3"#,
        );
        spec.transcript = Some(dir.path().join("t/run.jsonl"));
        let run = start(spec).await.unwrap();
        let ev = next(&run.id, Duration::from_secs(5)).await.unwrap();
        assert!(
            matches!(ev, Some(RunEvent::Ask(ref v)) if v["id"] == 1),
            "{ev:?}"
        );
        answer(&run.id, &serde_json::json!("yes")).await.unwrap();
        let ev = next(&run.id, Duration::from_secs(5)).await.unwrap();
        let Some(RunEvent::Finished(info)) = ev else {
            panic!("{ev:?}")
        };
        assert_eq!(info.status, RunStatus::Exited(3));
        assert_eq!(info.turns, 1);
        assert_eq!(info.result.unwrap()["final_text"], "yes");
        assert!(info.tail.contains("oops"), "{:?}", info.tail);
        let t = std::fs::read_to_string(dir.path().join("t/run.jsonl")).unwrap();
        assert_eq!(t.lines().count(), 3, "{t}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn wait_is_bounded_and_kill_ends_the_group() {
        let run = start(sh("sleep 30 & sleep 30; echo done")).await.unwrap();
        let t = Instant::now();
        let info = wait(&run.id, Duration::from_millis(300)).await.unwrap();
        assert!(t.elapsed() < Duration::from_secs(2));
        assert!(!info.finished);
        assert!(!group_members(run.pid).is_empty());
        let info = kill(&run.id, KILL_GRACE).await.unwrap();
        assert!(info.killed);
        assert_eq!(info.status, RunStatus::Signaled(15));
        assert!(group_members(run.pid).is_empty());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn bad_json_is_counted_and_kept() {
        let run = start(sh("echo 'not json'; exit 0")).await.unwrap();
        let info = wait(&run.id, Duration::from_secs(5)).await.unwrap();
        assert!(info.finished);
        assert_eq!(info.bad_lines, 1);
        assert!(info.tail.contains("not json"));
    }
}
