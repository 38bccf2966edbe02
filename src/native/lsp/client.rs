//! One connection to a language server: the child process (its own session and process
//! group, stderr appended to its log, secrets removed from its environment) and two threads,
//! one writing queued messages to its stdin, one reading its stdout. Threads rather than
//! tasks: the connection outlives any one runtime, and [`shutdown_all`] can end it cleanly
//! from the exit path, where no runtime runs any more.

use super::diag::{self, Diagnostic};
use super::rpc;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::io::BufReader;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

/// What the reader thread reports.
pub enum Incoming {
    Diagnostics {
        uri: String,
        version: Option<i64>,
        items: Vec<Diagnostic>,
    },
    /// The server's stdout closed; why, as far as fen can tell.
    Exited(String),
}

type Reply = Box<dyn FnOnce(Result<Value, String>) + Send>;

pub struct Conn {
    out: mpsc::Sender<Value>,
    pending: Arc<Mutex<HashMap<i64, Reply>>>,
    next: AtomicI64,
    pub pgid: i32,
    child: Arc<Mutex<Child>>,
    dead: Arc<AtomicBool>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn live() -> &'static Mutex<Vec<Weak<Conn>>> {
    static L: OnceLock<Mutex<Vec<Weak<Conn>>>> = OnceLock::new();
    L.get_or_init(|| Mutex::new(Vec::new()))
}

fn groups() -> &'static Mutex<HashSet<i32>> {
    static G: OnceLock<Mutex<HashSet<i32>>> = OnceLock::new();
    G.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Appends one of fen's own lines to a server's log.
pub fn note(log: &Path, text: &str) {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
    {
        let _ = writeln!(f, "[fen] {text}");
    }
}

/// What a server is started with.
pub struct Spawn<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a std::collections::BTreeMap<String, String>,
    pub env_remove: &'a [String],
    /// Where it runs and why (its plan, `sandbox::plan`), for the log.
    pub why: &'a str,
    pub root: &'a Path,
    pub log: &'a Path,
}

impl Conn {
    /// Starts the server. `on` gets diagnostics and the end of the stream, on the reader
    /// thread (it must not block).
    pub fn spawn(s: &Spawn, on: Arc<dyn Fn(Incoming) + Send + Sync>) -> Result<Arc<Conn>, String> {
        use std::os::unix::process::CommandExt;
        if let Some(dir) = s.log.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        note(
            s.log,
            &format!(
                "starting {} {} in {} ({})",
                s.command,
                s.args.join(" "),
                s.root.display(),
                s.why
            ),
        );
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(s.log)
            .map_err(|e| format!("cannot open {}: {e}", s.log.display()))?;
        let mut cmd = std::process::Command::new(s.command);
        cmd.args(s.args)
            .current_dir(s.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr));
        for k in s.env_remove {
            cmd.env_remove(k);
        }
        cmd.envs(s.env);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: setsid, prctl and getppid are async-signal-safe and touch no memory of the
        // parent. Its own session: no terminal, a group fen can end as one; SIGKILL should
        // fen die without cleaning up.
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", s.command))?;
        let pgid = child.id() as i32;
        lock(groups()).insert(pgid);
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => return Err("the server's pipes could not be opened".into()),
        };
        let (tx, rx) = mpsc::channel::<Value>();
        let pending: Arc<Mutex<HashMap<i64, Reply>>> = Arc::default();
        let dead = Arc::new(AtomicBool::new(false));
        let child = Arc::new(Mutex::new(child));
        std::thread::Builder::new()
            .name("fen-lsp-write".into())
            .spawn(move || {
                let mut w = std::io::BufWriter::new(stdin);
                while let Ok(msg) = rx.recv() {
                    if rpc::write_message(&mut w, &msg).is_err() {
                        break;
                    }
                }
            })
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let root_uri = super::position::path_to_uri(s.root);
        let reader = Reader {
            out: tx.clone(),
            pending: pending.clone(),
            dead: dead.clone(),
            child: child.clone(),
            root_uri,
            on,
        };
        std::thread::Builder::new()
            .name("fen-lsp-read".into())
            .spawn(move || reader.run(stdout))
            .map_err(|e| format!("cannot start a thread: {e}"))?;
        let conn = Arc::new(Conn {
            out: tx,
            pending,
            next: AtomicI64::new(1),
            pgid,
            child,
            dead,
        });
        let mut l = lock(live());
        l.retain(|w| w.strong_count() > 0);
        l.push(Arc::downgrade(&conn));
        Ok(conn)
    }

    pub fn is_dead(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }

    pub fn notify(&self, method: &str, params: Value) {
        let _ = self
            .out
            .send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request; `reply` gets the answer on the reader thread (or, when the server is
    /// gone, on a thread of its own: never inside this call, whose caller may hold a lock
    /// the reply takes).
    pub(super) fn send_request(&self, method: &str, params: Value, reply: Reply) -> i64 {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let gone = |reply: Reply| {
            std::thread::spawn(move || reply(Err("the server is not running".into())));
        };
        if self.is_dead() {
            gone(reply);
            return id;
        }
        lock(&self.pending).insert(id, reply);
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.out.send(msg).is_err() {
            if let Some(r) = lock(&self.pending).remove(&id) {
                gone(r);
            }
        }
        id
    }

    /// Sends a request and awaits its answer; dropping the future cancels the request
    /// (`$/cancelRequest`), so a deadline costs the server nothing further.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let id = self.send_request(
            method,
            params,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        struct Guard<'a>(&'a Conn, i64, bool);
        impl Drop for Guard<'_> {
            fn drop(&mut self) {
                if !self.2 && lock(&self.0.pending).remove(&self.1).is_some() {
                    self.0.notify("$/cancelRequest", json!({"id": self.1}));
                }
            }
        }
        let mut guard = Guard(self, id, false);
        let r = rx
            .await
            .unwrap_or_else(|_| Err("the server is not running".into()));
        guard.2 = true;
        r
    }

    /// Sends a request and waits for its answer on this thread, at most `timeout`.
    pub fn request_blocking(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let (tx, rx) = mpsc::channel();
        self.send_request(
            method,
            params,
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        rx.recv_timeout(timeout)
            .unwrap_or_else(|_| Err("no answer".into()))
    }

    /// Ends the process group at once.
    pub fn kill(&self) {
        use nix::sys::signal::{killpg, Signal};
        lock(groups()).remove(&self.pgid);
        let _ = killpg(nix::unistd::Pid::from_raw(self.pgid), Signal::SIGKILL);
        let _ = lock(&self.child).try_wait();
    }

    /// Whether the process ended within `within`.
    fn exited(&self, within: Duration) -> bool {
        let end = Instant::now() + within;
        loop {
            if matches!(lock(&self.child).try_wait(), Ok(Some(_))) {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.kill();
    }
}

struct Reader {
    out: mpsc::Sender<Value>,
    pending: Arc<Mutex<HashMap<i64, Reply>>>,
    dead: Arc<AtomicBool>,
    child: Arc<Mutex<Child>>,
    root_uri: String,
    on: Arc<dyn Fn(Incoming) + Send + Sync>,
}

impl Reader {
    fn run(self, stdout: std::process::ChildStdout) {
        let mut r = BufReader::with_capacity(64 * 1024, stdout);
        let why = loop {
            match rpc::read_message(&mut r) {
                Ok(Some(msg)) => self.handle(msg),
                Ok(None) => break "its output ended".to_string(),
                Err(e) => break format!("it sent a broken message ({e})"),
            }
        };
        self.dead.store(true, Ordering::SeqCst);
        let waiting: Vec<Reply> = lock(&self.pending).drain().map(|(_, r)| r).collect();
        for r in waiting {
            r(Err("the server exited".into()));
        }
        // The exit status, when the process is gone (it usually is once stdout closed).
        let mut status = None;
        for _ in 0..40 {
            if let Ok(Some(s)) = lock(&self.child).try_wait() {
                status = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let why = match status {
            Some(s) => format!("{why}; {s}"),
            None => why,
        };
        (self.on)(Incoming::Exited(why));
    }

    fn handle(&self, msg: Value) {
        let method = msg["method"].as_str();
        match (method, msg.get("id")) {
            (None, Some(id)) => {
                let Some(id) = id.as_i64() else { return };
                let Some(reply) = lock(&self.pending).remove(&id) else {
                    return;
                };
                match msg.get("error") {
                    Some(e) if !e.is_null() => reply(Err(e["message"]
                        .as_str()
                        .unwrap_or("an error without a message")
                        .to_string())),
                    _ => reply(Ok(msg.get("result").cloned().unwrap_or(Value::Null))),
                }
            }
            (Some(m), Some(id)) => {
                // Requests from the server: answer what a client with no UI can.
                let result = match m {
                    "workspace/configuration" => {
                        let n = msg["params"]["items"].as_array().map_or(0, |a| a.len());
                        Ok(Value::Array(vec![Value::Null; n]))
                    }
                    "workspace/workspaceFolders" => {
                        Ok(json!([{"uri": self.root_uri, "name": "root"}]))
                    }
                    "client/registerCapability"
                    | "client/unregisterCapability"
                    | "window/workDoneProgress/create"
                    | "window/showMessageRequest"
                    | "workspace/diagnostic/refresh"
                    | "workspace/semanticTokens/refresh"
                    | "workspace/inlayHint/refresh"
                    | "workspace/codeLens/refresh" => Ok(Value::Null),
                    _ => {
                        Err(json!({"code": -32601, "message": format!("fen does not handle {m}")}))
                    }
                };
                let reply = match result {
                    Ok(r) => json!({"jsonrpc": "2.0", "id": id, "result": r}),
                    Err(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
                };
                let _ = self.out.send(reply);
            }
            (Some("textDocument/publishDiagnostics"), None) => {
                let p = &msg["params"];
                if let Some(uri) = p["uri"].as_str() {
                    (self.on)(Incoming::Diagnostics {
                        uri: uri.to_string(),
                        version: p["version"].as_i64(),
                        items: diag::parse_list(&p["diagnostics"]),
                    });
                }
            }
            _ => {}
        }
    }
}

/// Ends every live server cleanly (`shutdown`, then `exit`), within about half a second in
/// all, then ends whatever is left of their process groups. Blocking; for the exit paths.
pub fn shutdown_all() {
    let conns: Vec<Arc<Conn>> = lock(live()).drain(..).filter_map(|w| w.upgrade()).collect();
    let start = Instant::now();
    let budget = Duration::from_millis(400);
    let asked: Vec<_> = conns
        .iter()
        .filter(|c| !c.is_dead())
        .map(|c| {
            let (tx, rx) = mpsc::channel();
            c.send_request(
                "shutdown",
                Value::Null,
                Box::new(move |r| {
                    let _ = tx.send(r);
                }),
            );
            (c.clone(), rx)
        })
        .collect();
    for (c, rx) in &asked {
        let left = budget.saturating_sub(start.elapsed());
        let _ = rx.recv_timeout(left);
        c.notify("exit", Value::Null);
    }
    for (c, _) in &asked {
        let left = budget.saturating_sub(start.elapsed());
        c.exited(left.max(Duration::from_millis(20)));
    }
    let gs: Vec<i32> = lock(groups()).drain().collect();
    crate::native::process::terminate_groups(&gs, Duration::from_millis(200));
}
