//! The servers and the documents they know. One server per (definition, workspace root),
//! started on the first file of its language; a document is opened on the server when fen
//! first touches it and kept in sync with every change fen makes or sees. Nothing here
//! blocks the caller: waits are async and bounded by the deadline they are given.
//!
//! Lifecycle: a server that exits before answering `initialize` the first time (a stub such
//! as rustup's proxy for a missing component) is unavailable for the rest of the process
//! (the next definition for the language is tried instead); one that crashes later is
//! restarted on next use after a backoff (250 ms, 500 ms, 1 s), at most [`MAX_RESTARTS`]
//! times, then reported failed.

use super::client::{self, Conn, Incoming, Spawn};
use super::config::{self, ServerDef};
use super::diag::{self, Diagnostic};
use super::position::{path_to_uri, uri_to_path};
use crate::native::sandbox::{self, Child, PlanInputs};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::watch;

pub const MAX_RESTARTS: u32 = 3;
/// Diagnostics reported per file.
pub const MAX_PER_FILE: usize = 20;
/// Files larger than this are not sent to servers (generated code, data).
pub const MAX_DOCUMENT: u64 = 4 * 1024 * 1024;

type Key = (String, PathBuf);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Starting,
    Running,
    /// Exited unexpectedly; restarted on next use.
    Crashed,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Starting => "starting",
            Status::Running => "running",
            Status::Crashed => "crashed",
            Status::Failed => "failed",
        }
    }
}

struct Server {
    def: ServerDef,
    conn: Option<Arc<Conn>>,
    status: Status,
    error: Option<String>,
    restarts: u32,
    crashed_at: Option<Instant>,
    caps: Value,
    epoch: u64,
    ever_ready: bool,
    /// When it last answered `initialize` (a young server may still be indexing).
    ready_at: Option<Instant>,
}

struct Doc {
    key: Key,
    uri: String,
    lang: String,
    version: i64,
    /// None: the file did not exist when fen first looked (a file `write` creates).
    text: Option<String>,
    stamp: Option<(SystemTime, u64)>,
    /// Whether the server got `didOpen` (it may still be starting).
    opened: bool,
    /// Diagnostics by document version, newest last (a few kept).
    diags: Vec<(i64, Vec<Diagnostic>, Instant)>,
    /// The last pulled diagnostics and the version they are for.
    pulled: Option<(i64, Vec<Diagnostic>)>,
}

#[derive(Default)]
struct State {
    defs: Vec<ServerDef>,
    trusted: bool,
    project_root: PathBuf,
    log_dir: PathBuf,
    /// What `sandbox::plan` decides a server's environment from.
    plan_inputs: PlanInputs,
    wait_ms: u64,
    servers: BTreeMap<Key, Server>,
    /// Definitions that cannot run here, with why (not on PATH, exited at once).
    unavailable: BTreeMap<String, String>,
    docs: HashMap<PathBuf, Doc>,
}

struct Shared {
    st: Mutex<State>,
    changed: watch::Sender<u64>,
}

/// The process-wide set of servers and documents. Cheap to clone.
#[derive(Clone)]
pub struct Manager {
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn global() -> &'static Manager {
    static M: OnceLock<Manager> = OnceLock::new();
    M.get_or_init(Manager::new)
}

/// Ends every server cleanly (see [`client::shutdown_all`]); for the exit paths.
pub fn shutdown_all() {
    client::shutdown_all();
}

/// A server as listed by `/lsp` and `fen lsp status`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ServerInfo {
    pub name: String,
    pub command: String,
    pub extensions: Vec<String>,
    /// running, starting, crashed, failed, unavailable, disabled, idle (not needed yet).
    pub state: String,
    pub root: Option<PathBuf>,
    pub error: Option<String>,
    pub restarts: u32,
    pub log: PathBuf,
    pub project: bool,
    pub documents: usize,
}

/// What an edit did to one file's diagnostics.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FileReport {
    /// As given.
    pub path: String,
    pub server: String,
    /// `path:line:col severity message`, errors first, at most [`MAX_PER_FILE`].
    pub lines: Vec<String>,
    /// How many were introduced (before the cap).
    pub introduced: usize,
    pub errors: usize,
    /// Set when the deadline passed first: why.
    pub pending: Option<String>,
    /// False when the file was not open before, so all its diagnostics are shown.
    pub baseline: bool,
}

/// One location a navigation request returned.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Item {
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub context: String,
    pub name: Option<String>,
    pub kind: Option<String>,
    pub depth: u32,
}

/// What a navigation request returned.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct NavResult {
    pub server: String,
    pub items: Vec<Item>,
    /// Hover text.
    pub text: Option<String>,
}

impl Default for Manager {
    fn default() -> Self {
        Self::new()
    }
}

fn ext_of(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Whether `command` can be run: a path to an executable file, or a name found on PATH.
fn on_path(command: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        return exec(Path::new(command));
    }
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| exec(&d.join(command))))
        .unwrap_or(false)
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// `path` relative to `cwd` when below it.
pub fn relative(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

fn backoff(restarts: u32) -> Duration {
    Duration::from_millis(250 << restarts.min(4))
}

/// The capability saying the server answers `textDocument/diagnostic`.
fn pulls(caps: &Value) -> bool {
    !caps["diagnosticProvider"].is_null()
}

impl Manager {
    pub fn new() -> Self {
        let (changed, _) = watch::channel(0);
        let st = State {
            wait_ms: config::DEFAULT_DIAGNOSTICS_WAIT_MS,
            defs: config::builtins(),
            ..State::default()
        };
        Manager {
            shared: Arc::new(Shared {
                st: Mutex::new(st),
                changed,
            }),
        }
    }

    fn bump(&self) {
        self.shared.changed.send_modify(|n| *n += 1);
    }

    /// Sets the definitions (from [`config::load`]) and where things go. Servers whose
    /// definition changed or went away are stopped (their documents forgotten).
    pub fn configure(
        &self,
        loaded: &config::Loaded,
        trusted: bool,
        project_root: PathBuf,
        log_dir: PathBuf,
        plan_inputs: PlanInputs,
    ) {
        let mut st = lock(&self.shared.st);
        st.trusted = trusted;
        st.project_root = project_root;
        st.log_dir = log_dir;
        st.plan_inputs = plan_inputs;
        st.wait_ms = loaded.diagnostics_wait_ms;
        st.defs = loaded.servers.clone();
        let defs = st.defs.clone();
        let gone: Vec<Key> = st
            .servers
            .iter()
            .filter(|(_, s)| !defs.iter().any(|d| *d == s.def && !d.disabled))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            if let Some(s) = st.servers.remove(k) {
                if let Some(c) = s.conn {
                    c.kill();
                }
            }
        }
        st.docs.retain(|_, d| !gone.contains(&d.key));
        st.unavailable
            .retain(|n, _| defs.iter().any(|d| d.name == *n && !d.disabled));
        drop(st);
        self.bump();
    }

    pub fn diagnostics_wait(&self) -> Duration {
        Duration::from_millis(lock(&self.shared.st).wait_ms)
    }

    fn log_path(st: &State, name: &str) -> PathBuf {
        st.log_dir
            .join(format!("{}.log", crate::native::mcp::names::sanitize(name)))
    }

    /// The server for `path`: the first enabled definition for its extension that can run.
    fn pick(st: &mut State, path: &Path) -> Option<Key> {
        let ext = ext_of(path);
        if ext.is_empty() {
            return None;
        }
        let cands: Vec<ServerDef> = st
            .defs
            .iter()
            .filter(|d| !d.disabled && d.extensions.contains(&ext))
            .cloned()
            .collect();
        for d in cands {
            if st.unavailable.contains_key(&d.name) {
                continue;
            }
            if !on_path(&d.command) {
                st.unavailable
                    .insert(d.name.clone(), format!("`{}` is not on PATH", d.command));
                continue;
            }
            let root = config::root_for(&d, path, &st.project_root);
            let key = (d.name.clone(), root);
            if let Some(s) = st.servers.get(&key) {
                if s.status == Status::Failed {
                    continue;
                }
            }
            return Some(key);
        }
        None
    }

    /// Starts the server of `key` when it is not running (or restarts a crashed one whose
    /// backoff has passed). Returns when it must wait for the backoff first.
    fn start(&self, st: &mut State, key: &Key) -> Option<Instant> {
        if st.unavailable.contains_key(&key.0) {
            // Once: a stub is not started again (no restart loop).
            return None;
        }
        let def = st.defs.iter().find(|d| d.name == key.0)?.clone();
        let epoch;
        let restarts;
        match st.servers.get_mut(key) {
            Some(s)
                if matches!(
                    s.status,
                    Status::Starting | Status::Running | Status::Failed
                ) =>
            {
                return None
            }
            Some(s) => {
                // Crashed.
                let at = s.crashed_at.unwrap_or_else(Instant::now) + backoff(s.restarts);
                if Instant::now() < at {
                    return Some(at);
                }
                s.restarts += 1;
                s.epoch += 1;
                s.status = Status::Starting;
                s.conn = None;
                epoch = s.epoch;
                restarts = s.restarts;
            }
            None => {
                st.servers.insert(
                    key.clone(),
                    Server {
                        def: def.clone(),
                        conn: None,
                        status: Status::Starting,
                        error: None,
                        restarts: 0,
                        crashed_at: None,
                        caps: Value::Null,
                        epoch: 1,
                        ever_ready: false,
                        ready_at: None,
                    },
                );
                epoch = 1;
                restarts = 0;
            }
        }
        let log = Self::log_path(st, &def.name);
        if restarts > 0 {
            client::note(&log, &format!("restart {restarts} of {MAX_RESTARTS}"));
        }
        let me = self.clone();
        let k = key.clone();
        let on: Arc<dyn Fn(Incoming) + Send + Sync> =
            Arc::new(move |ev| me.incoming(&k, epoch, ev));
        // Where it runs and what it inherits: the one plan of every child fen starts.
        let set: Vec<String> = def.env.keys().cloned().collect();
        let plan = sandbox::plan(&Child::LanguageServer { env: &set }, &st.plan_inputs);
        let why = format!(
            "{}; {} hidden variables removed",
            plan.reason,
            plan.env_remove.len()
        );
        let spawned = Conn::spawn(
            &Spawn {
                command: &def.command,
                args: &def.args,
                env: &def.env,
                env_remove: &plan.env_remove,
                why: &why,
                root: &key.1,
                log: &log,
            },
            on,
        );
        let conn = match spawned {
            Ok(c) => c,
            Err(e) => {
                client::note(&log, &e);
                st.unavailable.insert(def.name.clone(), e);
                st.servers.remove(key);
                return None;
            }
        };
        let mut opts = def.initialization_options.clone();
        if !st.trusted {
            if let Some(o) = config::untrusted_options(&def.name) {
                opts = o;
            }
        }
        let root_uri = path_to_uri(&key.1);
        let params = json!({
            "processId": std::process::id(),
            "clientInfo": {"name": "fen", "version": env!("CARGO_PKG_VERSION")},
            "rootUri": root_uri,
            "rootPath": key.1,
            "workspaceFolders": [{"uri": root_uri, "name": key.1.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()}],
            "initializationOptions": opts,
            "capabilities": {
                "general": {"positionEncodings": ["utf-16"]},
                "workspace": {"configuration": true, "workspaceFolders": true,
                              "symbol": {"dynamicRegistration": false}},
                "textDocument": {
                    "synchronization": {"didSave": true, "dynamicRegistration": false},
                    "publishDiagnostics": {"relatedInformation": false, "versionSupport": true},
                    "diagnostic": {"dynamicRegistration": false, "relatedDocumentSupport": false},
                    "definition": {"linkSupport": true},
                    "implementation": {"linkSupport": true},
                    "references": {},
                    "hover": {"contentFormat": ["plaintext", "markdown"]},
                    "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                    "callHierarchy": {"dynamicRegistration": false},
                },
                "window": {"workDoneProgress": false},
            },
        });
        if let Some(s) = st.servers.get_mut(key) {
            s.conn = Some(conn.clone());
        }
        let me = self.clone();
        let k = key.clone();
        conn.send_request(
            "initialize",
            params,
            Box::new(move |r| me.initialized(&k, epoch, r)),
        );
        None
    }

    fn initialized(&self, key: &Key, epoch: u64, r: Result<Value, String>) {
        let mut st = lock(&self.shared.st);
        let Some(s) = st.servers.get_mut(key).filter(|s| s.epoch == epoch) else {
            return;
        };
        let Some(conn) = s.conn.clone() else { return };
        match r {
            Ok(v) => {
                s.caps = v["capabilities"].clone();
                s.status = Status::Running;
                s.ever_ready = true;
                s.ready_at = Some(Instant::now());
                conn.notify("initialized", json!({}));
                for d in st.docs.values_mut().filter(|d| d.key == *key) {
                    if let Some(text) = &d.text {
                        conn.notify(
                            "textDocument/didOpen",
                            json!({"textDocument": {"uri": d.uri, "languageId": d.lang,
                                   "version": d.version, "text": text}}),
                        );
                        d.opened = true;
                    }
                }
            }
            Err(e) => {
                // `exited` reports a server that died; this is one that refused.
                if !conn.is_dead() {
                    s.status = Status::Failed;
                    s.error = Some(format!("initialize failed: {e}"));
                    conn.kill();
                }
            }
        }
        drop(st);
        self.bump();
    }

    fn incoming(&self, key: &Key, epoch: u64, ev: Incoming) {
        let mut st = lock(&self.shared.st);
        match ev {
            Incoming::Diagnostics {
                uri,
                version,
                items,
            } => {
                let Some(path) = uri_to_path(&uri) else {
                    return;
                };
                let Some(d) = st.docs.get_mut(&path).filter(|d| d.key == *key) else {
                    return;
                };
                let v = version.unwrap_or(d.version);
                d.diags.retain(|(dv, _, _)| *dv != v);
                d.diags.push((v, items, Instant::now()));
                if d.diags.len() > 4 {
                    d.diags.remove(0);
                }
            }
            Incoming::Exited(why) => {
                let log = Self::log_path(&st, &key.0);
                let Some(s) = st.servers.get_mut(key).filter(|s| s.epoch == epoch) else {
                    return;
                };
                client::note(&log, &format!("exited: {why}"));
                if s.status == Status::Failed {
                    // Killed after a failed initialize.
                } else if !s.ever_ready {
                    // It never answered initialize: a stub or a broken install. Once.
                    let name = key.0.clone();
                    st.servers.remove(key);
                    st.unavailable
                        .insert(name, format!("exited before it started ({why})"));
                    for d in st.docs.values_mut().filter(|d| d.key == *key) {
                        d.opened = false;
                    }
                } else if s.restarts >= MAX_RESTARTS {
                    s.status = Status::Failed;
                    s.error = Some(format!("crashed {} times; last: {why}", s.restarts + 1));
                    s.conn = None;
                } else {
                    s.status = Status::Crashed;
                    s.error = Some(why);
                    s.crashed_at = Some(Instant::now());
                    s.conn = None;
                    for d in st.docs.values_mut().filter(|d| d.key == *key) {
                        d.opened = false;
                    }
                }
            }
        }
        drop(st);
        self.bump();
    }

    /// Waits until the server of `key` runs, starting or restarting it; None when it cannot
    /// (the reason is in its status) or `deadline` passed.
    async fn ready(&self, key: &Key, deadline: Instant) -> Result<(Arc<Conn>, Value), String> {
        let mut rx = self.shared.changed.subscribe();
        loop {
            let wake = {
                let mut st = lock(&self.shared.st);
                let wake = self.start(&mut st, key);
                match st.servers.get(key) {
                    None => {
                        return Err(st
                            .unavailable
                            .get(&key.0)
                            .cloned()
                            .unwrap_or_else(|| "not running".into()))
                    }
                    Some(s) if s.status == Status::Running => {
                        if let Some(c) = &s.conn {
                            return Ok((c.clone(), s.caps.clone()));
                        }
                    }
                    Some(s) if s.status == Status::Failed => {
                        return Err(s.error.clone().unwrap_or_else(|| "failed".into()))
                    }
                    _ => {}
                }
                wake
            };
            if Instant::now() >= deadline {
                return Err(format!("{} is still starting", key.0));
            }
            let until = wake.map_or(deadline, |w| w.min(deadline));
            let _ = tokio::time::timeout_at(until.into(), rx.changed()).await;
        }
    }

    /// Makes sure `path` is known to its server: starts the server and opens the document
    /// with its text on disk (a missing file counts as empty-and-absent). Returns the server.
    pub async fn open(&self, path: &Path) -> Option<String> {
        if tokio::fs::metadata(path)
            .await
            .is_ok_and(|m| m.len() > MAX_DOCUMENT)
        {
            return None;
        }
        let text = tokio::fs::read_to_string(path).await.ok();
        let st_stamp = stamp(path);
        let known = {
            let mut st = lock(&self.shared.st);
            let key = Self::pick(&mut st, path)?;
            st.docs
                .get(path)
                .is_some_and(|d| d.key == key)
                .then_some(key)
        };
        if let Some(key) = known {
            self.sync_one(path).await;
            return Some(key.0);
        }
        let mut st = lock(&self.shared.st);
        let key = Self::pick(&mut st, path)?;
        self.start(&mut st, &key);
        let doc = Doc {
            key: key.clone(),
            uri: path_to_uri(path),
            lang: config::language_id(&ext_of(path)).to_string(),
            version: 1,
            text,
            stamp: st_stamp,
            opened: false,
            diags: Vec::new(),
            pulled: None,
        };
        st.docs.insert(path.to_path_buf(), doc);
        let running = st
            .servers
            .get(&key)
            .filter(|s| s.status == Status::Running)
            .and_then(|s| s.conn.clone());
        if let (Some(conn), Some(d)) = (running, st.docs.get_mut(path)) {
            if let Some(text) = &d.text {
                conn.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": d.uri, "languageId": d.lang, "version": d.version, "text": text}}),
                );
                d.opened = true;
            }
        }
        Some(key.0)
    }

    /// Sends the server `path`'s text on disk when it differs from what the server has
    /// (`didChange` + `didSave`, or `didOpen`). Returns (old text, new version) when it
    /// changed. A file that is gone is closed.
    fn push_text(
        &self,
        st: &mut State,
        path: &Path,
        text: Option<String>,
    ) -> Option<(Option<String>, i64)> {
        let st_stamp = stamp(path);
        let d = st.docs.get_mut(path)?;
        d.stamp = st_stamp;
        if d.text == text {
            return None;
        }
        let conn = st
            .servers
            .get(&d.key)
            .filter(|s| s.status == Status::Running)
            .and_then(|s| s.conn.clone());
        let old = std::mem::replace(&mut d.text, text);
        d.version += 1;
        let Some(conn) = conn else {
            d.opened = false;
            return Some((old, d.version));
        };
        match (&d.text, d.opened) {
            (Some(t), true) => {
                conn.notify(
                    "textDocument/didChange",
                    json!({"textDocument": {"uri": d.uri, "version": d.version},
                           "contentChanges": [{"text": t}]}),
                );
                conn.notify(
                    "textDocument/didSave",
                    json!({"textDocument": {"uri": d.uri}}),
                );
            }
            (Some(t), false) => {
                conn.notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {"uri": d.uri, "languageId": d.lang, "version": d.version, "text": t}}),
                );
                d.opened = true;
            }
            (None, true) => {
                conn.notify(
                    "textDocument/didClose",
                    json!({"textDocument": {"uri": d.uri}}),
                );
                d.opened = false;
            }
            (None, false) => {}
        }
        Some((old, d.version))
    }

    async fn sync_one(&self, path: &Path) {
        let unchanged = {
            let st = lock(&self.shared.st);
            st.docs
                .get(path)
                .is_some_and(|d| d.stamp == stamp(path) && d.stamp.is_some())
        };
        if unchanged {
            return;
        }
        let text = tokio::fs::read_to_string(path).await.ok();
        let mut st = lock(&self.shared.st);
        self.push_text(&mut st, path, text);
    }

    /// The stat scan: every open document whose file changed on disk (a shell command, an
    /// editor) is sent to its server again. Returns how many changed.
    pub async fn sync_all(&self) -> usize {
        let changed: Vec<PathBuf> = {
            let st = lock(&self.shared.st);
            st.docs
                .iter()
                .filter(|(p, d)| stamp(p) != d.stamp || (d.stamp.is_none() && p.exists()))
                .map(|(p, _)| p.clone())
                .collect()
        };
        for p in &changed {
            let text = tokio::fs::read_to_string(p).await.ok();
            let mut st = lock(&self.shared.st);
            self.push_text(&mut st, p, text);
        }
        changed.len()
    }

    /// Moves `path`'s document to the next server for its language when its own turned out
    /// unavailable; None when it did not (or there is none).
    fn migrate(&self, path: &Path) -> Option<Key> {
        let mut st = lock(&self.shared.st);
        let old = st.docs.get(path)?.key.clone();
        if !st.unavailable.contains_key(&old.0) {
            return None;
        }
        let Some(key) = Self::pick(&mut st, path) else {
            st.docs.remove(path);
            return None;
        };
        if let Some(d) = st.docs.get_mut(path) {
            d.key = key.clone();
            d.opened = false;
            d.diags.clear();
            d.pulled = None;
        }
        self.start(&mut st, &key);
        Some(key)
    }

    /// The diagnostics of `path` at `version` (or later): pulled when the server answers
    /// `textDocument/diagnostic`, else the first `publishDiagnostics` for it, waited for
    /// until `deadline`.
    async fn diagnostics(
        &self,
        path: &Path,
        version: i64,
        deadline: Instant,
    ) -> Option<Vec<Diagnostic>> {
        let (key, uri) = {
            let st = lock(&self.shared.st);
            let d = st.docs.get(path)?;
            (d.key.clone(), d.uri.clone())
        };
        let mut key = key;
        let (conn, caps) = loop {
            match self.ready(&key, deadline).await {
                Ok(x) => break x,
                // A stub: the next server for the language gets the document (with the text
                // it had, so the diagnostics before the change still come out right).
                Err(_) => key = self.migrate(path)?,
            }
        };
        if pulls(&caps) {
            // The last pull answered for this version already (the "after" of the previous
            // edit is the "before" of this one): no second round trip.
            let pulled = lock(&self.shared.st).docs.get(path).and_then(|d| {
                d.pulled
                    .as_ref()
                    .filter(|(v, _)| *v == version)
                    .map(|(_, items)| items.clone())
            });
            if pulled.is_some() {
                return pulled;
            }
            let req = conn.request(
                "textDocument/diagnostic",
                json!({"textDocument": {"uri": uri}}),
            );
            if let Ok(Ok(v)) = tokio::time::timeout_at(deadline.into(), req).await {
                if v["kind"] == "full" || v["items"].is_array() {
                    let items = diag::parse_list(&v["items"]);
                    if let Some(d) = lock(&self.shared.st).docs.get_mut(path) {
                        if d.version == version {
                            d.pulled = Some((version, items.clone()));
                        }
                    }
                    return Some(items);
                }
            }
            // A failed pull: servers that advertise pull may still push.
        }
        let mut rx = self.shared.changed.subscribe();
        loop {
            let until = {
                let st = lock(&self.shared.st);
                let d = st.docs.get(path)?;
                let alive = st
                    .servers
                    .get(&d.key)
                    .is_some_and(|s| matches!(s.status, Status::Running | Status::Starting));
                let settle = st.servers.get(&d.key).map_or(0, |s| s.def.settle_ms);
                match d.diags.iter().rev().find(|(v, _, _)| *v >= version) {
                    Some((_, items, at)) => {
                        // Staged publications: wait for quiet (a later one moves `at`).
                        let quiet = (*at + Duration::from_millis(settle)).min(deadline);
                        if settle == 0 || Instant::now() >= quiet {
                            return Some(items.clone());
                        }
                        quiet
                    }
                    // A server that died will not answer: no point waiting out the deadline.
                    None if !alive => return None,
                    None if Instant::now() >= deadline => return None,
                    None => deadline,
                }
            };
            // Woken by any change, or at `until` for one last look.
            let _ = tokio::time::timeout_at(until.into(), rx.changed()).await;
        }
    }

    /// Before a change: opens every file of `paths` that has a server (starting servers), so
    /// the diagnostics before the change are known when [`Manager::after_change`] runs.
    pub async fn prepare(&self, paths: &[PathBuf]) {
        for p in paths {
            self.open(p).await;
        }
    }

    /// After a change: sends each file's new text and reports the diagnostics it introduced,
    /// waiting at most `wait` in all. `cwd` makes paths relative.
    pub async fn after_change(
        &self,
        paths: &[PathBuf],
        wait: Duration,
        cwd: &Path,
    ) -> Vec<FileReport> {
        let deadline = Instant::now() + wait;
        let jobs = paths.iter().map(|p| self.report_one(p, deadline, cwd));
        futures_util::future::join_all(jobs)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    async fn report_one(&self, path: &Path, deadline: Instant, cwd: &Path) -> Option<FileReport> {
        let rel = relative(path, cwd);
        let was_open = lock(&self.shared.st).docs.contains_key(path);
        let server = if was_open {
            lock(&self.shared.st).docs.get(path)?.key.0.clone()
        } else {
            // Not seen before (no `prepare`): opened at its new text; no baseline.
            self.open(path).await?
        };
        let mut report = FileReport {
            path: rel.clone(),
            server: server.clone(),
            baseline: was_open,
            ..FileReport::default()
        };
        let (before_version, before_known_empty) = {
            let st = lock(&self.shared.st);
            let d = st.docs.get(path)?;
            (d.version, d.text.is_none())
        };
        let before = if !was_open || before_known_empty {
            Some(Vec::new())
        } else {
            self.diagnostics(path, before_version, deadline).await
        };
        let Some(before) = before else {
            // Send the change anyway so the server stays in sync.
            self.sync_one(path).await;
            report.pending = Some(self.pending_reason(path));
            return Some(report);
        };
        let text = tokio::fs::read_to_string(path).await.ok();
        let (old, version) = {
            let mut st = lock(&self.shared.st);
            match self.push_text(&mut st, path, text.clone()) {
                Some(x) => x,
                None => (text.clone(), st.docs.get(path)?.version),
            }
        };
        if was_open && old == text {
            return Some(report);
        }
        let Some(after) = self.diagnostics(path, version, deadline).await else {
            report.pending = Some(self.pending_reason(path));
            return Some(report);
        };
        let new_text = text.unwrap_or_default();
        let map = diag::line_map(old.as_deref().unwrap_or(""), &new_text);
        let new = if was_open {
            diag::introduced(&before, &after, &map)
        } else {
            diag::introduced(&[], &after, &map)
        };
        let lines: Vec<&str> = new_text.split('\n').collect();
        if let Some(d) = lock(&self.shared.st).docs.get(path) {
            report.server = d.key.0.clone();
        }
        report.introduced = new.len();
        report.errors = new.iter().filter(|d| d.severity == 1).count();
        report.lines = new
            .iter()
            .take(MAX_PER_FILE)
            .map(|d| diag::format(&rel, d, lines.get(d.line as usize).copied()))
            .collect();
        Some(report)
    }

    fn pending_reason(&self, path: &Path) -> String {
        let st = lock(&self.shared.st);
        let Some(d) = st.docs.get(path) else {
            return "no server".into();
        };
        match st.servers.get(&d.key) {
            Some(s) if s.status == Status::Running => format!("{} did not answer in time", d.key.0),
            Some(s) => format!("{} is {}", d.key.0, s.status.as_str()),
            None => format!(
                "{} is unavailable: {}",
                d.key.0,
                st.unavailable
                    .get(&d.key.0)
                    .map(String::as_str)
                    .unwrap_or("?")
            ),
        }
    }

    /// Every definition with its state (one row per running root).
    pub fn servers(&self) -> Vec<ServerInfo> {
        let st = lock(&self.shared.st);
        let mut out = Vec::new();
        for d in &st.defs {
            let log = Self::log_path(&st, &d.name);
            let base = ServerInfo {
                name: d.name.clone(),
                command: std::iter::once(d.command.clone())
                    .chain(d.args.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" "),
                extensions: d.extensions.clone(),
                state: String::new(),
                root: None,
                error: None,
                restarts: 0,
                log,
                project: d.project,
                documents: 0,
            };
            let running: Vec<_> = st.servers.iter().filter(|(k, _)| k.0 == d.name).collect();
            if d.disabled {
                out.push(ServerInfo {
                    state: "disabled".into(),
                    ..base
                });
            } else if let Some(why) = st.unavailable.get(&d.name) {
                out.push(ServerInfo {
                    state: "unavailable".into(),
                    error: Some(why.clone()),
                    ..base
                });
            } else if running.is_empty() {
                let state = if on_path(&d.command) {
                    "idle"
                } else {
                    "unavailable"
                };
                let error =
                    (state == "unavailable").then(|| format!("`{}` is not on PATH", d.command));
                out.push(ServerInfo {
                    state: state.into(),
                    error,
                    ..base
                });
            } else {
                for (k, s) in running {
                    out.push(ServerInfo {
                        state: s.status.as_str().into(),
                        root: Some(k.1.clone()),
                        error: s.error.clone(),
                        restarts: s.restarts,
                        documents: st.docs.values().filter(|doc| doc.key == *k).count(),
                        ..base.clone()
                    });
                }
            }
        }
        out
    }
}

impl Manager {
    /// Whether `path`'s server started running less than `within` ago.
    pub(super) fn young(&self, path: &Path, within: Duration) -> bool {
        let st = lock(&self.shared.st);
        st.docs
            .get(path)
            .and_then(|d| st.servers.get(&d.key))
            .and_then(|s| s.ready_at)
            .is_some_and(|at| at.elapsed() < within)
    }

    /// The running connection of `path`'s server (opened before), waiting until `deadline`.
    pub(super) async fn connection(
        &self,
        path: &Path,
        deadline: Instant,
    ) -> Result<(Arc<Conn>, Value), String> {
        let key = lock(&self.shared.st)
            .docs
            .get(path)
            .map(|d| d.key.clone())
            .ok_or("no server for this file")?;
        self.ready(&key, deadline).await
    }
}

impl Manager {
    /// Starts every enabled server that is on PATH at the project root and waits (until
    /// `deadline`) for each to run or fail: what `fen lsp status` shows.
    pub async fn probe(&self, deadline: Instant) {
        let keys: Vec<Key> = {
            let st = lock(&self.shared.st);
            st.defs
                .iter()
                .filter(|d| {
                    !d.disabled && !st.unavailable.contains_key(&d.name) && on_path(&d.command)
                })
                .map(|d| (d.name.clone(), st.project_root.clone()))
                .collect()
        };
        let waits = keys.iter().map(|k| self.ready(k, deadline));
        futures_util::future::join_all(waits).await;
    }
}
