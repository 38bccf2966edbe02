//! The connections: one background task per server that starts it (stdio child or streamable
//! HTTP, through rmcp), lists its tools within the start-up timeout, then watches it until it
//! ends or is stopped. Nothing here waits on the caller's behalf unless asked ([`Manager::wait`]);
//! a server that fails or dies is marked failed and its calls answer at once.
//!
//! A stdio server runs in its own session and process group, its stderr appended to its log;
//! every live group is recorded so [`terminate_all`] ends them when fen exits, and the child
//! gets SIGKILL from the kernel should fen itself be killed (`PR_SET_PDEATHSIG`).

use super::config::{ServerConfig, Transport};
use super::http::{FenHttpClient, OAuthLogin};
use super::names;
use crate::native::sandbox::{self, Child, PlanInputs};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::{Peer, RoleClient, ServiceError};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};
use rmcp::transport::TokioChildProcess;
use rmcp::ServiceExt;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Where a server is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// `enabled: false` in its config.
    Disabled,
    /// Configured, not started yet.
    Idle,
    Connecting,
    Ready,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Disabled => "disabled",
            Status::Idle => "idle",
            Status::Connecting => "connecting",
            Status::Ready => "connected",
            Status::Failed => "failed",
        }
    }
}

/// One tool of a server, as fen offers it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolInfo {
    /// `mcp__SERVER__TOOL` (see [`names::tool_name`]).
    pub name: String,
    /// The tool's name on its server.
    pub mcp_name: String,
    pub description: String,
    /// The server's input schema (an object schema).
    pub input_schema: Value,
    /// `annotations.readOnlyHint`.
    pub read_only: bool,
}

/// A server as listed.
#[derive(Clone, Debug)]
pub struct ServerInfo {
    pub name: String,
    pub status: Status,
    pub error: Option<String>,
    pub transport: &'static str,
    pub tools: Vec<ToolInfo>,
    pub log: PathBuf,
    pub source: PathBuf,
    pub project: bool,
    pub tool_timeout: Duration,
    pub startup_timeout: Duration,
    /// Bumped at every (re)start: a change of tools comes with a new epoch.
    pub epoch: u64,
}

/// What a tool call returned.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    pub is_error: bool,
    pub content: Vec<Part>,
}

/// One part of a result.
#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Text(String),
    Image { data: String, mime_type: String },
}

/// Why a call did not return a result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("no MCP server named '{0}' is configured")]
    UnknownServer(String),
    #[error("MCP server '{server}' is {status}{}; run `/mcp reconnect {server}` to try again", reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default())]
    Unavailable {
        server: String,
        status: &'static str,
        reason: Option<String>,
    },
    #[error("MCP server '{server}' did not answer {tool} within {} ms", timeout.as_millis())]
    Timeout {
        server: String,
        tool: String,
        timeout: Duration,
    },
    #[error("cancelled")]
    Cancelled,
    #[error("MCP server '{server}' failed during the call ({message}); run `/mcp reconnect {server}` to restart it")]
    Died { server: String, message: String },
    #[error("MCP server '{server}' answered {tool} with an error: {message}")]
    Protocol {
        server: String,
        tool: String,
        message: String,
    },
}

struct Entry {
    config: ServerConfig,
    status: Status,
    error: Option<String>,
    tools: Vec<ToolInfo>,
    peer: Option<Peer<RoleClient>>,
    stop: Option<CancellationToken>,
    epoch: u64,
}

struct Shared {
    servers: Mutex<BTreeMap<String, Entry>>,
    changed: watch::Sender<u64>,
    log_dir: Mutex<PathBuf>,
    /// What `sandbox::plan` decides a stdio server's environment from.
    plan_inputs: Mutex<PlanInputs>,
    /// Built by the first HTTP server's connection: loading the system's TLS roots takes
    /// milliseconds that runs without HTTP servers must not pay.
    http: OnceLock<reqwest::Client>,
}

/// The set of configured servers and their connections. Cheap to clone (shared).
#[derive(Clone)]
pub struct Manager {
    shared: Arc<Shared>,
}

/// Process groups of live stdio servers, for [`terminate_all`].
fn groups() -> &'static Mutex<HashSet<i32>> {
    static G: OnceLock<Mutex<HashSet<i32>>> = OnceLock::new();
    G.get_or_init(|| Mutex::new(HashSet::new()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Ends every stdio server's process group (SIGTERM, then SIGKILL after a short grace).
/// Blocking; for the binary's exit paths.
pub fn terminate_all() {
    let gs: Vec<i32> = lock(groups()).drain().collect();
    crate::native::process::terminate_groups(&gs, Duration::from_millis(300));
}

fn kill_group(pgid: i32) {
    use nix::sys::signal::{killpg, Signal};
    lock(groups()).remove(&pgid);
    let _ = killpg(nix::unistd::Pid::from_raw(pgid), Signal::SIGKILL);
}

/// Sets one server's entry: a new one idle (or disabled); a changed one stopped and reset.
fn insert(map: &mut BTreeMap<String, Entry>, config: ServerConfig) {
    if let Some(e) = map.get_mut(&config.name) {
        if e.config == config {
            return;
        }
        if let Some(s) = e.stop.take() {
            s.cancel();
        }
    }
    let status = if config.enabled {
        Status::Idle
    } else {
        Status::Disabled
    };
    let epoch = map.get(&config.name).map_or(0, |e| e.epoch + 1);
    map.insert(
        config.name.clone(),
        Entry {
            config,
            status,
            error: None,
            tools: Vec::new(),
            peer: None,
            stop: None,
            epoch,
        },
    );
}

/// The process-wide manager (fen has one set of servers per process, like its jobs).
pub fn global() -> &'static Manager {
    static M: OnceLock<Manager> = OnceLock::new();
    M.get_or_init(Manager::new)
}

impl Default for Manager {
    fn default() -> Self {
        Self::new()
    }
}

/// The file a server's stderr (and fen's notes about it) go to.
pub fn log_path(log_dir: &Path, server: &str) -> PathBuf {
    log_dir.join(format!("{}.log", names::sanitize(server)))
}

impl Manager {
    pub fn new() -> Self {
        let (changed, _) = watch::channel(0);
        Manager {
            shared: Arc::new(Shared {
                servers: Mutex::new(BTreeMap::new()),
                changed,
                log_dir: Mutex::new(std::env::temp_dir().join("fen-mcp")),
                plan_inputs: Mutex::new(PlanInputs::default()),
                http: OnceLock::new(),
            }),
        }
    }

    fn notify(&self) {
        self.shared.changed.send_modify(|n| *n += 1);
    }

    /// Sets what [`sandbox::plan`] decides a stdio server's environment from.
    pub fn set_plan_inputs(&self, plan_inputs: PlanInputs) {
        *lock(&self.shared.plan_inputs) = plan_inputs;
    }

    /// Sets the servers: new ones are added (idle, or disabled), ones whose config changed
    /// are stopped and reset, ones no longer listed are stopped and removed. `plan_inputs`
    /// (the run's hidden environment) is what [`sandbox::plan`] decides a stdio server's
    /// environment from.
    pub fn configure(&self, servers: Vec<ServerConfig>, log_dir: PathBuf, plan_inputs: PlanInputs) {
        *lock(&self.shared.log_dir) = log_dir;
        *lock(&self.shared.plan_inputs) = plan_inputs;
        let mut map = lock(&self.shared.servers);
        let names: HashSet<String> = servers.iter().map(|s| s.name.clone()).collect();
        map.retain(|name, e| {
            let keep = names.contains(name);
            if !keep {
                if let Some(s) = e.stop.take() {
                    s.cancel();
                }
            }
            keep
        });
        for config in servers {
            insert(&mut map, config);
        }
        drop(map);
        self.notify();
    }

    /// Adds servers beside the configured ones (an ACP client's `mcpServers`); a server of
    /// the same name is replaced when its config differs. Starts none.
    pub fn add(&self, servers: Vec<ServerConfig>) {
        let mut map = lock(&self.shared.servers);
        for config in servers {
            insert(&mut map, config);
        }
        drop(map);
        self.notify();
    }

    /// Starts `name` in the background when it is idle or failed (a no-op when connecting,
    /// connected or disabled). Must run inside a tokio runtime. False when unknown.
    pub fn start(&self, name: &str) -> bool {
        self.start_inner(name, false)
    }

    /// Stops `name` (whatever its state) and starts it again; disabled servers too.
    pub fn reconnect(&self, name: &str) -> bool {
        self.start_inner(name, true)
    }

    /// Starts every enabled server that is idle.
    pub fn start_all(&self) {
        let names: Vec<String> = lock(&self.shared.servers)
            .iter()
            .filter(|(_, e)| e.status == Status::Idle)
            .map(|(n, _)| n.clone())
            .collect();
        for n in names {
            self.start(&n);
        }
    }

    fn start_inner(&self, name: &str, force: bool) -> bool {
        let mut map = lock(&self.shared.servers);
        let Some(e) = map.get_mut(name) else {
            return false;
        };
        let startable = matches!(e.status, Status::Idle | Status::Failed);
        if !force && !startable {
            return true;
        }
        if let Some(s) = e.stop.take() {
            s.cancel();
        }
        let stop = CancellationToken::new();
        e.stop = Some(stop.clone());
        e.status = Status::Connecting;
        e.error = None;
        e.peer = None;
        e.epoch += 1;
        let (epoch, config) = (e.epoch, e.config.clone());
        drop(map);
        self.notify();
        let me = self.clone();
        tokio::spawn(async move { me.run(config, epoch, stop).await });
        true
    }

    /// Applies `f` to the entry when it is still at `epoch` (a later restart owns it then).
    fn update(&self, name: &str, epoch: u64, f: impl FnOnce(&mut Entry)) -> bool {
        let mut map = lock(&self.shared.servers);
        let Some(e) = map.get_mut(name).filter(|e| e.epoch == epoch) else {
            return false;
        };
        f(e);
        drop(map);
        self.notify();
        true
    }

    fn fail(&self, name: &str, epoch: u64, message: String) {
        self.note(name, &format!("failed: {message}"));
        self.update(name, epoch, |e| {
            e.status = Status::Failed;
            e.error = Some(message);
            e.peer = None;
            // Ends this connection's task (and process group), not a later one's.
            if let Some(s) = e.stop.take() {
                s.cancel();
            }
        });
    }

    /// Appends one of fen's own lines to the server's log.
    fn note(&self, name: &str, text: &str) {
        use std::io::Write;
        let path = log_path(&lock(&self.shared.log_dir), name);
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "[fen] {text}");
        }
    }

    async fn run(self, config: ServerConfig, epoch: u64, stop: CancellationToken) {
        let name = config.name.clone();
        let mut pgid = None;
        let connect = self.connect(&config, &mut pgid);
        let started = tokio::select! {
            _ = stop.cancelled() => {
                if let Some(g) = pgid { kill_group(g) }
                return;
            }
            r = tokio::time::timeout(config.startup_timeout, connect) => r,
        };
        let (service, tools) = match started {
            Ok(Ok(s)) => s,
            Ok(Err(message)) => {
                if let Some(g) = pgid {
                    kill_group(g);
                }
                return self.fail(&name, epoch, message);
            }
            Err(_) => {
                if let Some(g) = pgid {
                    kill_group(g);
                }
                let ms = config.startup_timeout.as_millis();
                return self.fail(&name, epoch, format!("did not start within {ms} ms"));
            }
        };
        let peer = service.peer().clone();
        let n = tools.len();
        let ready = self.update(&name, epoch, |e| {
            e.status = Status::Ready;
            e.tools = tools;
            e.peer = Some(peer);
        });
        if !ready {
            let _ = service.cancel().await;
            if let Some(g) = pgid {
                kill_group(g);
            }
            return;
        }
        self.note(&name, &format!("connected ({n} tools)"));
        let ct = service.cancellation_token();
        let watcher = stop.clone();
        tokio::spawn(async move {
            watcher.cancelled().await;
            ct.cancel();
        });
        let reason = service.waiting().await;
        if let Some(g) = pgid {
            kill_group(g);
        }
        if !stop.is_cancelled() {
            let why = match reason {
                Ok(r) => format!("the connection closed ({r:?})"),
                Err(e) => format!("the connection task failed ({e})"),
            };
            self.fail(&name, epoch, why);
        }
        stop.cancel();
    }

    /// Starts the transport, runs the handshake and lists the tools.
    async fn connect(
        &self,
        config: &ServerConfig,
        pgid: &mut Option<i32>,
    ) -> Result<
        (
            rmcp::service::RunningService<RoleClient, ClientConfig>,
            Vec<ToolInfo>,
        ),
        String,
    > {
        let info = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("fen", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        let service = match &config.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                let child = self.spawn(&config.name, command, args, env, cwd.as_deref())?;
                *pgid = child.id().map(|p| p as i32);
                if let Some(g) = *pgid {
                    lock(groups()).insert(g);
                }
                info.serve(child)
                    .await
                    .map_err(|e| format!("the MCP handshake failed: {e}"))?
            }
            Transport::Http { url, headers } => {
                let mut custom = HashMap::new();
                for (k, v) in headers {
                    let name = http::HeaderName::from_bytes(k.as_bytes())
                        .map_err(|_| format!("bad header name \"{k}\""))?;
                    let value = http::HeaderValue::from_str(v)
                        .map_err(|_| format!("bad value for header \"{k}\""))?;
                    custom.insert(name, value);
                }
                let cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                    .custom_headers(custom);
                // A login from `fen mcp login` (refreshed when it nears its expiry, and when
                // the server refuses it).
                let oauth = oauth_token(url).await.map(|t| OAuthLogin::new(url, t));
                // The HTTP client (and its TLS roots) is built for the first HTTP server only.
                let client = match self.shared.http.get() {
                    Some(c) => c.clone(),
                    None => {
                        let c = tokio::task::spawn_blocking(reqwest::Client::new)
                            .await
                            .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
                        self.shared.http.get_or_init(|| c).clone()
                    }
                };
                let transport = StreamableHttpClientTransport::with_client(
                    FenHttpClient { client, oauth },
                    cfg,
                );
                info.serve(transport).await.map_err(|e| {
                    let text = e.to_string();
                    if is_auth_required(&text) {
                        format!(
                            "needs login (the server answered 401): run `fen mcp login {}`",
                            config.name
                        )
                    } else {
                        format!("the MCP handshake with {url} failed: {text}")
                    }
                })?
            }
        };
        let listed = service
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("tools/list failed: {e}"))?;
        let tools = listed
            .into_iter()
            .filter(|t| config.tool_allowed(&t.name))
            .map(|t| ToolInfo {
                name: names::tool_name(&config.name, &t.name),
                mcp_name: t.name.to_string(),
                description: t.description.as_deref().unwrap_or("").to_string(),
                input_schema: Value::Object((*t.input_schema).clone()),
                read_only: t
                    .annotations
                    .as_ref()
                    .and_then(|a| a.read_only_hint)
                    .unwrap_or(false),
            })
            .collect();
        Ok((service, tools))
    }

    fn spawn(
        &self,
        name: &str,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
    ) -> Result<TokioChildProcess, String> {
        let log_dir = lock(&self.shared.log_dir).clone();
        std::fs::create_dir_all(&log_dir)
            .map_err(|e| format!("cannot create {}: {e}", log_dir.display()))?;
        let log = log_path(&log_dir, name);
        // Where it runs and what it inherits: the one plan of every child fen starts.
        let set: Vec<String> = env.keys().cloned().collect();
        let plan = sandbox::plan(
            &Child::McpServer { env: &set },
            &lock(&self.shared.plan_inputs),
        );
        self.note(
            name,
            &format!(
                "starting {command} {} ({}; {} hidden variables removed)",
                args.join(" "),
                plan.reason,
                plan.env_remove.len()
            ),
        );
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        let mut cmd = tokio::process::Command::new(command);
        cmd.args(args);
        for k in &plan.env_remove {
            cmd.env_remove(k);
        }
        cmd.envs(plan.env);
        cmd.envs(env);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        cmd.kill_on_drop(true);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: setsid, prctl and getppid are async-signal-safe and touch no memory of the
        // parent. Its own session: no controlling terminal (nothing it writes reaches the
        // user's screen, Ctrl-C does not reach it) and a group fen can kill as one.
        unsafe {
            cmd.pre_exec(move || {
                nix::unistd::setsid().map_err(std::io::Error::from)?;
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                // fen died between fork and prctl: do not outlive it.
                if libc::getppid() != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let (child, _) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::from(stderr))
            .spawn()
            .map_err(|e| format!("cannot start `{command}`: {e}"))?;
        Ok(child)
    }

    /// Waits until none of `names` (every server when `None`) is connecting.
    pub async fn wait(&self, names: Option<&[String]>) {
        let mut rx = self.shared.changed.subscribe();
        loop {
            let busy = lock(&self.shared.servers).iter().any(|(n, e)| {
                e.status == Status::Connecting && names.is_none_or(|ns| ns.contains(n))
            });
            if !busy || rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// A receiver that changes whenever a server's state does.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.changed.subscribe()
    }

    /// Every server, by name.
    pub fn servers(&self) -> Vec<ServerInfo> {
        let log_dir = lock(&self.shared.log_dir).clone();
        lock(&self.shared.servers)
            .iter()
            .map(|(n, e)| ServerInfo {
                name: n.clone(),
                status: e.status,
                error: e.error.clone(),
                transport: e.config.transport.kind(),
                tools: e.tools.clone(),
                log: log_path(&log_dir, n),
                source: e.config.source.clone(),
                project: e.config.project,
                tool_timeout: e.config.tool_timeout,
                startup_timeout: e.config.startup_timeout,
                epoch: e.epoch,
            })
            .collect()
    }

    /// The server whose tool is called `fen_name` (`mcp__SERVER__TOOL`): the one whose listed
    /// tools have that name, else, before it connected, the configured server that could
    /// produce it (its prefix, or the head of a shortened name; longest name wins).
    pub fn server_for_tool(&self, fen_name: &str) -> Option<String> {
        let servers = lock(&self.shared.servers);
        if let Some((n, _)) = servers
            .iter()
            .find(|(_, e)| e.tools.iter().any(|t| t.name == fen_name))
        {
            return Some(n.clone());
        }
        servers
            .keys()
            .filter(|n| names::could_produce(n, fen_name))
            .max_by_key(|n| n.len())
            .cloned()
    }

    /// Calls `tool` (its MCP name) on `server` with `args`, bounded by the server's tool
    /// timeout and `cancel`. A server that is not connected answers at once.
    pub async fn call(
        &self,
        server: &str,
        tool: &str,
        args: Map<String, Value>,
        cancel: CancellationToken,
    ) -> Result<CallOutcome, CallError> {
        let (peer, timeout, epoch) = {
            let map = lock(&self.shared.servers);
            let e = map
                .get(server)
                .ok_or_else(|| CallError::UnknownServer(server.to_string()))?;
            match (&e.peer, e.status) {
                (Some(p), Status::Ready) if !p.is_transport_closed() => {
                    (p.clone(), e.config.tool_timeout, e.epoch)
                }
                (_, status) => {
                    let status = if status == Status::Ready {
                        "failed"
                    } else {
                        status.as_str()
                    };
                    return Err(CallError::Unavailable {
                        server: server.to_string(),
                        status,
                        reason: e.error.clone(),
                    });
                }
            }
        };
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(args);
        let r = tokio::select! {
            _ = cancel.cancelled() => return Err(CallError::Cancelled),
            r = tokio::time::timeout(timeout, peer.call_tool(params)) => r,
        };
        let result = match r {
            Err(_) => {
                return Err(CallError::Timeout {
                    server: server.to_string(),
                    tool: tool.to_string(),
                    timeout,
                })
            }
            Ok(Err(ServiceError::McpError(e))) => {
                return Err(CallError::Protocol {
                    server: server.to_string(),
                    tool: tool.to_string(),
                    message: e.message.to_string(),
                })
            }
            Ok(Err(e)) => {
                let mut message = e.to_string();
                if is_auth_required(&message) {
                    // The transport already refreshed the token once and retried (see
                    // `http::OAuthLogin`): the login itself is gone.
                    message = format!(
                        "needs login (the server refused the token, and a refresh did not help): run `fen mcp login {server}`, or `/mcp login {server}` in a session"
                    );
                }
                if peer.is_transport_closed()
                    || matches!(
                        e,
                        ServiceError::TransportClosed | ServiceError::TransportSend(_)
                    )
                {
                    self.fail(server, epoch, message.clone());
                }
                return Err(CallError::Died {
                    server: server.to_string(),
                    message,
                });
            }
            Ok(Ok(r)) => r,
        };
        let v = serde_json::to_value(&result).unwrap_or(Value::Null);
        Ok(outcome(&v))
    }
}

/// A `CallToolResult` (as JSON) in fen's shape: text and image parts; anything else as its
/// JSON text; `structuredContent` when there is no content.
fn outcome(v: &Value) -> CallOutcome {
    let mut content = Vec::new();
    for c in v["content"].as_array().into_iter().flatten() {
        match c["type"].as_str() {
            Some("text") => content.push(Part::Text(c["text"].as_str().unwrap_or("").to_string())),
            Some("image") => content.push(Part::Image {
                data: c["data"].as_str().unwrap_or("").to_string(),
                mime_type: c["mimeType"].as_str().unwrap_or("image/png").to_string(),
            }),
            Some("resource") if c["resource"]["text"].is_string() => content.push(Part::Text(
                c["resource"]["text"].as_str().unwrap_or("").to_string(),
            )),
            _ => content.push(Part::Text(c.to_string())),
        }
    }
    if content.is_empty() {
        if let Some(s) = v.get("structuredContent").filter(|s| !s.is_null()) {
            content.push(Part::Text(s.to_string()));
        }
    }
    CallOutcome {
        is_error: v["isError"].as_bool().unwrap_or(false),
        content,
    }
}

/// Whether an rmcp error is the transport's 401 (`StreamableHttpError::AuthRequired`).
fn is_auth_required(text: &str) -> bool {
    text.contains("authorization required") || text.contains("Auth required")
}

/// The stored OAuth token of the server at `url` (see `native::auth::mcp`), None without one.
async fn oauth_token(url: &str) -> Option<String> {
    let store = crate::native::auth::store::Store::from_env();
    let http = crate::native::auth::oauth::Http::new(CancellationToken::new()).ok()?;
    crate::native::auth::mcp::token(&http, &store, url, None)
        .await
        .ok()
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_map_text_images_and_is_error() {
        let v = serde_json::json!({
            "content": [{"type": "text", "text": "hi"}, {"type": "image", "data": "AAA", "mimeType": "image/gif"},
                        {"type": "audio", "data": "x"}],
            "isError": true,
        });
        let o = outcome(&v);
        assert!(o.is_error);
        assert_eq!(o.content[0], Part::Text("hi".into()));
        assert_eq!(
            o.content[1],
            Part::Image {
                data: "AAA".into(),
                mime_type: "image/gif".into()
            }
        );
        assert!(matches!(&o.content[2], Part::Text(t) if t.contains("audio")));
        let o = outcome(&serde_json::json!({"content": [], "structuredContent": {"a": 1}}));
        assert_eq!(o.content, vec![Part::Text("{\"a\":1}".into())]);
        assert!(!o.is_error);
    }
}
