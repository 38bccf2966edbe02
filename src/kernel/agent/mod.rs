//! The agent loop: a user turn runs model steps until the model stops, the step cap is reached,
//! or the turn is cancelled. Each step asks the active provider (a Lua extension) for one
//! assistant message, re-emitting its stream events, then runs the tool calls it asked for
//! (`dispatch`) and appends exactly one result per call, in call order. What a provider is sent
//! is assembled and repaired in `context`.
//!
//! Conversation messages are canonical Lua tables (contracts/types.toml) kept in one Lua array,
//! so providers, presenters and session backends read them without conversion.
//!
//! Cancellation is explicit: each turn owns a token; every call it makes into Lua runs in a
//! scope holding that token (or a child of it: one per tool call), see `crate::kernel::calls`.

pub mod context;
pub mod cost;
pub mod dispatch;

use super::calls::{self, Scope};
use super::convert;
use super::state::{self, Inner};
pub use context::context_window;
use context::{
    aborted_message, empty_array, error_message, normalize_assistant, provider_context,
    provider_spec, system_prompt, text_message, tool_specs, visible_text,
};
use mlua::{Function, Lua, Table, Value};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use tokio_util::sync::CancellationToken;

/// How the agent runs; from flags, settings and the environment.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub provider: String,
    pub model: String,
    pub max_turns: usize,
    pub max_tokens: u64,
    /// Replaces the base prompt fragment (`--system`, `--system-file`).
    pub system_override: Option<String>,
    pub cwd: std::path::PathBuf,
    /// Extra options handed to the provider (`base_url`, `mock_script`, `thinking`, ...).
    pub provider_options: serde_json::Value,
    /// What a turn answers when no provider is chosen (the CLI words how to set one up).
    pub no_provider_help: String,
}

/// How a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnStatus {
    Ok,
    Cancelled,
    Error,
}

impl TurnStatus {
    /// The status as events and `api.turn.submit` spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Ok => "ok",
            TurnStatus::Cancelled => "cancelled",
            TurnStatus::Error => "error",
        }
    }
}

/// The outcome of one submitted user turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    pub status: TurnStatus,
    pub text: Option<String>,
    pub error: Option<String>,
}

/// Where the conversation is persisted: a session backend and its open session.
#[derive(Clone)]
pub struct Persistence {
    pub backend: Table,
    pub session: Value,
}

pub struct Agent {
    pub config: AgentConfig,
    /// The session messages are appended to (None with `--no-session`).
    pub persistence: RefCell<Option<Persistence>>,
    /// The conversation: canonical messages, oldest first.
    pub messages: Table,
    /// The `Agent` value carried by events: `{cwd, provider, model}`.
    pub handle: Table,
    busy: Cell<bool>,
    steering: RefCell<VecDeque<String>>,
    follow_up: RefCell<VecDeque<String>>,
    /// The running turn's token; a fresh one per turn, so a cancel never outlives its turn.
    turn_cancel: RefCell<CancellationToken>,
    /// Stops the idle watch of the last ended turn (see `ui::watch_idle`): the next turn or
    /// the end of the run trips it.
    pub(crate) idle: RefCell<CancellationToken>,
    /// Provider, model and provider options in use: `/model` and `/thinking` change them
    /// between turns (the `config` keeps what the run started with).
    selection: RefCell<Selection>,
}

/// What the next model call uses.
#[derive(Debug, Clone)]
struct Selection {
    provider: String,
    model: String,
    options: serde_json::Value,
}

/// Milliseconds since the Unix epoch (message timestamps).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Agent {
    pub fn new(lua: &Lua, config: AgentConfig) -> mlua::Result<Agent> {
        let handle = lua.create_table()?;
        handle.set("cwd", config.cwd.to_string_lossy().as_ref())?;
        handle.set("provider", config.provider.as_str())?;
        handle.set("model", config.model.as_str())?;
        Ok(Agent {
            persistence: RefCell::new(None),
            messages: lua.create_table()?,
            handle,
            busy: Cell::new(false),
            steering: RefCell::new(VecDeque::new()),
            follow_up: RefCell::new(VecDeque::new()),
            turn_cancel: RefCell::new(CancellationToken::new()),
            idle: RefCell::new(CancellationToken::new()),
            selection: RefCell::new(Selection {
                provider: config.provider.clone(),
                model: config.model.clone(),
                options: config.provider_options.clone(),
            }),
            config,
        })
    }

    /// The provider the next model call goes to.
    pub fn provider(&self) -> String {
        self.selection.borrow().provider.clone()
    }

    /// The model the next model call uses.
    pub fn model(&self) -> String {
        self.selection.borrow().model.clone()
    }

    /// The options handed to the provider (`base_url`, `thinking`, ...).
    pub fn options(&self) -> serde_json::Value {
        self.selection.borrow().options.clone()
    }

    /// Switches provider and model for the next turns (`/model`). Refused while a turn runs.
    pub fn set_model(&self, provider: &str, model: &str) -> Result<(), super::KernelError> {
        if self.is_busy() {
            return Err(super::KernelError::AgentBusy);
        }
        let mut s = self.selection.borrow_mut();
        s.provider = provider.to_string();
        s.model = model.to_string();
        let _ = self.handle.set("provider", provider);
        let _ = self.handle.set("model", model);
        Ok(())
    }

    /// Sets one provider option for the next turns (`/thinking` sets `thinking`).
    pub fn set_option(
        &self,
        key: &str,
        value: serde_json::Value,
    ) -> Result<(), super::KernelError> {
        if self.is_busy() {
            return Err(super::KernelError::AgentBusy);
        }
        let mut s = self.selection.borrow_mut();
        if !s.options.is_object() {
            s.options = serde_json::json!({});
        }
        if let Some(obj) = s.options.as_object_mut() {
            if value.is_null() {
                obj.remove(key);
            } else {
                obj.insert(key.to_string(), value);
            }
        }
        Ok(())
    }

    pub fn is_busy(&self) -> bool {
        self.busy.get()
    }

    /// Trips the running turn's cancellation (Ctrl-C, `api.turn.cancel`). No effect when idle:
    /// the next turn gets a fresh token.
    pub fn cancel(&self) {
        if self.busy.get() {
            self.turn_cancel.borrow().cancel();
        }
    }

    /// The running turn's token (a fresh, uncancelled one when idle).
    pub fn turn_token(&self) -> CancellationToken {
        if self.busy.get() {
            self.turn_cancel.borrow().clone()
        } else {
            CancellationToken::new()
        }
    }

    /// Queues a line for the running turn: "steering" (before the next model call) or
    /// "follow-up" (after the model's natural stop).
    pub fn enqueue(&self, kind: &str, text: String) -> Result<(), super::KernelError> {
        match kind {
            "steering" => self.steering.borrow_mut().push_back(text),
            "follow-up" => self.follow_up.borrow_mut().push_back(text),
            other => return Err(super::KernelError::UnknownQueue(other.to_string())),
        }
        Ok(())
    }

    /// How many lines wait in each queue: `(steering, follow-up)`.
    pub fn queued(&self) -> (usize, usize) {
        (self.steering.borrow().len(), self.follow_up.borrow().len())
    }

    // The queues are popped in statements of their own: a borrow held while the line is
    // appended would be live while `message-appended` handlers run, and a handler that
    // enqueues would find the queue borrowed.
    fn pop_steering(&self) -> Option<String> {
        self.steering.borrow_mut().pop_front()
    }

    fn pop_follow_up(&self) -> Option<String> {
        self.follow_up.borrow_mut().pop_front()
    }
}

/// Makes the session durable at a turn boundary (the backend's optional `sync`).
pub async fn sync_session(agent: &Agent) {
    let persistence = agent.persistence.borrow().clone();
    if let Some(p) = persistence {
        if let Ok(Some(sync)) = p.backend.get::<Option<Function>>("sync") {
            let _ = sync.call_async::<()>(p.session.clone()).await;
        }
    }
}

pub(crate) fn event(lua: &Lua, ty: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("type", ty)?;
    Ok(t)
}

pub(crate) fn emit(lua: &Lua, inner: &Inner, t: Table) {
    if let Err(e) = state::emit(lua, inner, t, "kernel") {
        inner.logger.log(
            super::log::Level::Error,
            "kernel",
            &format!("event rejected: {e}"),
        );
    }
}

/// Appends a message, persists it, and emits `message-appended`. A failed write is reported
/// (`error` event) and the session goes on: the conversation in memory is never lost.
pub(crate) fn append(lua: &Lua, inner: &Inner, agent: &Agent, message: Table) -> mlua::Result<()> {
    agent.messages.push(message.clone())?;
    let persistence = agent.persistence.borrow().clone();
    if let Some(p) = persistence {
        let result = p
            .backend
            .get::<Function>("append")
            .and_then(|f| f.call::<()>((p.session.clone(), message.clone())));
        if let Err(e) = result {
            let ev = event(lua, "error")?;
            ev.set(
                "error",
                format!(
                    "could not save the message to the session: {}",
                    convert::error_parts(&e).0
                ),
            )?;
            emit(lua, inner, ev);
        }
    }
    let ev = event(lua, "message-appended")?;
    ev.set("agent", agent.handle.clone())?;
    ev.set("index", agent.messages.raw_len())?;
    ev.set("message", message)?;
    emit(lua, inner, ev);
    Ok(())
}

/// Runs one submitted user turn to its end.
pub async fn run_turn(lua: &Lua, inner: &Rc<Inner>, agent: &Rc<Agent>, text: &str) -> TurnResult {
    let cancel = CancellationToken::new();
    *agent.turn_cancel.borrow_mut() = cancel.clone();
    agent.idle.borrow().cancel();
    agent.busy.set(true);
    let result = match turn(lua, inner, agent, text, &cancel).await {
        Ok(r) => r,
        Err(e) => TurnResult {
            status: TurnStatus::Error,
            text: None,
            error: Some(convert::error_parts(&e).0),
        },
    };
    after_turn(lua, inner, &result).await;
    agent.busy.set(false);
    sync_session(agent).await;
    if let Ok(ev) = event(lua, "agent-turn-complete") {
        let _ = ev.set("agent", agent.handle.clone());
        let _ = ev.set("status", result.status.as_str());
        let _ = ev.set("message_count", agent.messages.raw_len());
        let _ = ev.set("result", result.text.clone());
        let _ = ev.set("error", result.error.clone());
        emit(lua, inner, ev);
    }
    let idle = CancellationToken::new();
    *agent.idle.borrow_mut() = idle.clone();
    super::ui::watch_idle(lua, inner, agent, idle);
    result
}

async fn turn(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Rc<Agent>,
    text: &str,
    cancel: &CancellationToken,
) -> mlua::Result<TurnResult> {
    let text = match before_turn(lua, inner, text, cancel).await {
        Ok(t) => t,
        Err(reason) => {
            return Ok(TurnResult {
                status: TurnStatus::Error,
                text: None,
                error: Some(reason),
            })
        }
    };
    let text = text.as_str();
    let user = event(lua, "user")?;
    user.set("line", text)?;
    emit(lua, inner, user);
    append(lua, inner, agent, text_message(lua, "user", text)?)?;
    let mut last_text = None;
    let mut stops = 0u32;
    for _ in 0..agent.config.max_turns {
        while let Some(steer) = agent.pop_steering() {
            append(lua, inner, agent, text_message(lua, "user", &steer)?)?;
        }
        if cancel.is_cancelled() {
            return cancelled(lua, inner, agent, last_text);
        }
        before_request(lua, inner, agent, "auto", cancel).await;
        if cancel.is_cancelled() {
            return cancelled(lua, inner, agent, last_text);
        }
        let mut message = step(lua, inner, agent, cancel).await?;
        if context::is_context_overflow(inner, agent, &message) && !cancel.is_cancelled() {
            // Compact and try once more; the failed attempt is not kept.
            before_request(lua, inner, agent, "overflow", cancel).await;
            message = step(lua, inner, agent, cancel).await?;
        }
        let stop: Option<String> = message.get("stop_reason")?;
        let visible = visible_text(&message)?;
        if !visible.is_empty() {
            let ev = event(lua, "assistant-text")?;
            ev.set("text", visible.as_str())?;
            ev.set("final", true)?;
            emit(lua, inner, ev);
            last_text = Some(visible);
        }
        append(lua, inner, agent, message.clone())?;
        match stop.as_deref() {
            Some("aborted") => {
                emit(lua, inner, event(lua, "cancelled")?);
                return Ok(TurnResult {
                    status: TurnStatus::Cancelled,
                    text: last_text,
                    error: None,
                });
            }
            Some("error") => {
                let err: Option<String> = message.get("error_message")?;
                return Ok(TurnResult {
                    status: TurnStatus::Error,
                    text: last_text,
                    error: Some(err.unwrap_or_else(|| "the provider reported an error".into())),
                });
            }
            _ => {}
        }
        let calls = dispatch::tool_calls(lua, &message)?;
        if calls.is_empty() {
            match agent.pop_follow_up() {
                Some(f) => {
                    append(lua, inner, agent, text_message(lua, "user", &f)?)?;
                    continue;
                }
                None => {
                    if let Some(more) = before_stop(lua, inner, stops, cancel).await {
                        stops += 1;
                        append(lua, inner, agent, text_message(lua, "user", &more)?)?;
                        continue;
                    }
                    return Ok(TurnResult {
                        status: TurnStatus::Ok,
                        text: last_text,
                        error: None,
                    });
                }
            }
        }
        dispatch::run_tool_calls(lua, inner, agent, &calls, cancel).await?;
        if cancel.is_cancelled() {
            return cancelled(lua, inner, agent, last_text);
        }
    }
    Ok(TurnResult {
        status: TurnStatus::Error,
        text: last_text,
        error: Some(format!(
            "stopped after {} model steps (--max-turns)",
            agent.config.max_turns
        )),
    })
}

/// The active hooks that have a function field `field`, with their owners.
fn hooks_with(inner: &Inner, field: &str) -> Vec<(String, Function)> {
    inner.registry.borrow().hook_functions(field)
}

/// Reports a hook point's function that raised (an `error` event); the loop goes on.
fn hook_failed(lua: &Lua, inner: &Inner, what: &str, owner: &str, e: &mlua::Error) {
    if let Ok(ev) = event(lua, "error") {
        let _ = ev.set(
            "error",
            format!(
                "{what} hook of {owner} failed: {}",
                convert::error_parts(e).0
            ),
        );
        emit(lua, inner, ev);
    }
}

/// Runs the `on_shutdown` hooks (each may wait, within its own limits) as the run ends, with
/// `{reason = "normal" | "crashed"}`; the settings hooks' SessionEnd event runs here. A hook
/// that fails is reported; none can stop the exit.
pub async fn shutdown_hooks(lua: &Lua, inner: &Inner, reason: &str) {
    if let Some(agent) = inner.agent.borrow().as_ref() {
        agent.idle.borrow().cancel();
    }
    for (owner, f) in hooks_with(inner, "on_shutdown") {
        let Ok(ctx) = lua.create_table() else { return };
        let _ = ctx.set("reason", reason);
        let scope = Scope::new(
            CancellationToken::new(),
            None,
            &format!("the on_shutdown hook of {owner}"),
        );
        if let Err(e) = calls::call_async_cancellable::<Value>(lua, &f, ctx, scope).await {
            hook_failed(lua, inner, "on_shutdown", &owner, &e);
        }
    }
}

/// Runs the `before_turn` hooks on a submitted prompt (they may wait): `{block = true, reason}`
/// refuses the turn (`Err(reason)`, nothing is appended), `{text = "..."}` replaces the prompt.
/// A hook that fails is reported and the prompt goes on unchanged.
async fn before_turn(
    lua: &Lua,
    inner: &Inner,
    text: &str,
    cancel: &CancellationToken,
) -> Result<String, String> {
    let mut text = text.to_string();
    for (owner, f) in hooks_with(inner, "before_turn") {
        let scope = Scope::new(
            cancel.clone(),
            None,
            &format!("the before_turn hook of {owner}"),
        );
        match calls::call_async_cancellable::<Value>(lua, &f, text.as_str(), scope).await {
            Ok(Value::Table(v)) => {
                if v.get::<Option<bool>>("block").ok().flatten() == Some(true) {
                    let reason: Option<String> = v.get("reason").ok().flatten();
                    return Err(
                        reason.unwrap_or_else(|| format!("the prompt was blocked by {owner}"))
                    );
                }
                if let Ok(Some(t)) = v.get::<Option<String>>("text") {
                    text = t;
                }
            }
            Ok(_) => {}
            Err(e) => hook_failed(lua, inner, "before_turn", &owner, &e),
        }
    }
    Ok(text)
}

/// Runs the `before_stop` hooks when the model ends its turn: the first that returns
/// `{continue_with = "..."}` keeps the turn going with that text as the next user message.
/// `ctx.stop_hook_active` tells a hook the turn already continued because of one.
async fn before_stop(
    lua: &Lua,
    inner: &Inner,
    stops: u32,
    cancel: &CancellationToken,
) -> Option<String> {
    for (owner, f) in hooks_with(inner, "before_stop") {
        if cancel.is_cancelled() {
            return None;
        }
        let ctx = lua.create_table().ok()?;
        let _ = ctx.set("stop_hook_active", stops > 0);
        let _ = ctx.set("continuations", stops);
        let scope = Scope::new(
            cancel.clone(),
            None,
            &format!("the before_stop hook of {owner}"),
        );
        match calls::call_async_cancellable::<Value>(lua, &f, ctx, scope).await {
            Ok(Value::Table(v)) => {
                if let Ok(Some(t)) = v.get::<Option<String>>("continue_with") {
                    return Some(t);
                }
            }
            Ok(_) => {}
            Err(e) => hook_failed(lua, inner, "before_stop", &owner, &e),
        }
    }
    None
}

/// Runs the `before_compact` hooks (the compaction companion calls them through
/// `api.turn.before_compact` before it summarises) in the caller's scope, with `ctx`
/// (`trigger`, `custom_instructions`): the first that returns `{block = true, reason}` skips
/// the compaction (`Some(reason)`). A hook that fails is reported and changes nothing.
pub async fn before_compact(lua: &Lua, inner: &Inner, ctx: Table) -> Option<String> {
    let cancel = calls::current_cancel(lua);
    for (owner, f) in hooks_with(inner, "before_compact") {
        if cancel.is_cancelled() {
            return None;
        }
        let scope = Scope::new(
            cancel.clone(),
            None,
            &format!("the before_compact hook of {owner}"),
        );
        match calls::call_async_cancellable::<Value>(lua, &f, ctx.clone(), scope).await {
            Ok(Value::Table(v)) if v.get::<Option<bool>>("block").ok().flatten() == Some(true) => {
                let reason: Option<String> = v.get("reason").ok().flatten();
                return Some(reason.unwrap_or_else(|| format!("blocked by {owner}")));
            }
            Ok(_) => {}
            Err(e) => hook_failed(lua, inner, "before_compact", &owner, &e),
        }
    }
    None
}

/// Runs every `before_request` hook (compaction lives there) in the turn's scope: Ctrl-C
/// stops a compaction's model call like any other. A hook that fails is reported and the
/// request goes ahead.
async fn before_request(
    lua: &Lua,
    inner: &Inner,
    agent: &Agent,
    trigger: &str,
    cancel: &CancellationToken,
) {
    for (owner, f) in hooks_with(inner, "before_request") {
        if cancel.is_cancelled() {
            return;
        }
        let Ok(ctx) = lua.create_table() else { return };
        let _ = ctx.set("trigger", trigger);
        let _ = ctx.set("context_window", context_window(inner, agent));
        let _ = ctx.set("max_tokens", agent.config.max_tokens);
        let scope = Scope::new(
            cancel.clone(),
            None,
            &format!("the before_request hook of {owner}"),
        );
        let result = calls::call_async_cancellable::<()>(lua, &f, ctx, scope).await;
        if let Err(e) = result {
            if cancel.is_cancelled() {
                return;
            }
            hook_failed(lua, inner, "before_request", &owner, &e);
        }
    }
}

/// Runs every `after_turn` hook (checkpoints record what the turn changed there) once the
/// turn ended, before `agent-turn-complete`. Not cancellable by the turn (it has ended);
/// each hook has a time budget; a hook that fails is reported.
async fn after_turn(lua: &Lua, inner: &Inner, result: &TurnResult) {
    for (owner, f) in hooks_with(inner, "after_turn") {
        let Ok(ctx) = lua.create_table() else { return };
        let _ = ctx.set("status", result.status.as_str());
        let scope = Scope::new(
            CancellationToken::new(),
            Some(std::time::Duration::from_secs(60)),
            &format!("the after_turn hook of {owner}"),
        );
        if let Err(e) = calls::call_async_cancellable::<()>(lua, &f, ctx, scope).await {
            hook_failed(lua, inner, "after_turn", &owner, &e);
        }
    }
}

/// The provider's per-call options as a Lua table.
fn provider_options(lua: &Lua, agent: &Agent) -> mlua::Result<Table> {
    Ok(match convert::json_to_lua(lua, &agent.options())? {
        Value::Table(t) => t,
        _ => lua.create_table()?,
    })
}

/// One model call outside the loop (no tools, no stream events), for companions such as
/// compaction: `api.turn.complete{system_prompt, messages, max_tokens}`. It runs with the
/// caller's cancellation (a compaction inside a turn stops with the turn).
pub async fn complete_once(
    lua: &Lua,
    inner: &Inner,
    agent: &Agent,
    request: Table,
) -> mlua::Result<Table> {
    let Some(spec) = provider_spec(inner, agent) else {
        return error_message(lua, agent, "no provider is configured");
    };
    let ctx = lua.create_table()?;
    ctx.set("system_prompt", request.get::<Value>("system_prompt")?)?;
    ctx.set("messages", request.get::<Table>("messages")?)?;
    ctx.set("tools", empty_array(lua)?)?;
    ctx.set(
        "max_tokens",
        request
            .get::<Option<u64>>("max_tokens")?
            .unwrap_or(agent.config.max_tokens),
    )?;
    let options = provider_options(lua, agent)?;
    let cancel = calls::current_scope(lua)
        .map(|s| s.cancel)
        .unwrap_or_else(|| agent.turn_token());
    let complete: Function = spec.get("complete")?;
    let quiet = lua.create_function(|_, _: Value| Ok(()))?;
    let scope = Scope::new(cancel.clone(), None, "a model call");
    let call = calls::call_async_cancellable::<Value>(
        lua,
        &complete,
        (
            agent.model(),
            ctx,
            options,
            quiet,
            super::tools::yield_fn(lua, &cancel)?,
        ),
        scope,
    );
    match call.await {
        Ok(Value::Table(m)) => normalize_assistant(lua, agent, m),
        Ok(_) => error_message(lua, agent, "the provider returned no message"),
        Err(_) if cancel.is_cancelled() => aborted_message(lua, agent),
        Err(e) => error_message(lua, agent, &convert::error_parts(&e).0),
    }
}

/// Replaces the conversation (compaction installs its summary and the kept messages).
pub fn replace_messages(agent: &Agent, messages: Table) -> mlua::Result<()> {
    agent.messages.clear()?;
    for m in messages.sequence_values::<Table>() {
        agent.messages.push(m?)?;
    }
    Ok(())
}

/// Appends the aborted assistant message and emits `cancelled`.
fn cancelled(
    lua: &Lua,
    inner: &Inner,
    agent: &Agent,
    text: Option<String>,
) -> mlua::Result<TurnResult> {
    append(lua, inner, agent, aborted_message(lua, agent)?)?;
    emit(lua, inner, event(lua, "cancelled")?);
    Ok(TurnResult {
        status: TurnStatus::Cancelled,
        text,
        error: None,
    })
}

/// One provider call. Never fails for provider trouble: that becomes an assistant message with
/// `stop_reason = "error"`; cancellation becomes one with `stop_reason = "aborted"`.
async fn step(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Rc<Agent>,
    cancel: &CancellationToken,
) -> mlua::Result<Table> {
    let Some(spec) = provider_spec(inner, agent) else {
        if agent.provider().is_empty() {
            return error_message(lua, agent, &agent.config.no_provider_help);
        }
        let msg = format!("no provider named '{}' is registered", agent.provider());
        return error_message(lua, agent, &msg);
    };
    let complete: Function = spec.get("complete")?;
    let ctx = lua.create_table()?;
    ctx.set("system_prompt", system_prompt(inner, agent))?;
    ctx.set("messages", provider_context(lua, &agent.messages)?)?;
    ctx.set("tools", tool_specs(lua, inner)?)?;
    ctx.set("max_tokens", agent.config.max_tokens)?;
    let options = provider_options(lua, agent)?;
    let start = event(lua, "llm-start")?;
    start.set("provider", agent.provider().as_str())?;
    start.set("model", agent.model().as_str())?;
    emit(lua, inner, start);

    let i = inner.clone();
    let on_event = lua.create_function(move |lua, ev: Table| {
        let ty: String = ev.get("type")?;
        let presenter_twin = match ty.as_str() {
            "text-delta" => Some("assistant-text-delta"),
            "thinking-delta" => Some("assistant-thinking-delta"),
            _ => None,
        };
        let delta: Option<String> = ev.get("delta")?;
        state::emit(lua, &i, ev, "provider")?;
        if let (Some(twin), Some(delta)) = (presenter_twin, delta) {
            let t = lua.create_table()?;
            t.set("type", twin)?;
            t.set("delta", delta)?;
            state::emit(lua, &i, t, "kernel")?;
        }
        Ok(())
    })?;
    let scope = Scope::new(
        cancel.clone(),
        None,
        &format!("provider {}", agent.provider()),
    );
    let outcome = calls::call_async_cancellable::<Value>(
        lua,
        &complete,
        (
            agent.model(),
            ctx,
            options,
            on_event,
            super::tools::yield_fn(lua, cancel)?,
        ),
        scope,
    )
    .await;
    let message = match outcome {
        Err(_) if cancel.is_cancelled() => aborted_message(lua, agent)?,
        Ok(Value::Table(m)) => normalize_assistant(lua, agent, m)?,
        Ok(other) => error_message(
            lua,
            agent,
            &format!(
                "provider {} returned a {} instead of an assistant message",
                agent.provider(),
                other.type_name()
            ),
        )?,
        Err(e) => error_message(lua, agent, &convert::error_parts(&e).0)?,
    };
    cost::annotate(lua, inner, agent, &message)?;
    emit_stream_summary(lua, inner, &message)?;
    let end = event(lua, "llm-end")?;
    end.set("message", message.clone())?;
    if let Ok(usage) = message.get::<Table>("usage") {
        end.set("cost", usage.get::<Value>("cost")?)?;
        end.set("usage", usage)?;
    }
    emit(lua, inner, end);
    Ok(message)
}

/// After a model call: `assistant-thinking` with the message's whole reasoning (for presenters
/// that show blocks, not deltas; `assistant-text` follows from the loop), then
/// `assistant-stream-end`.
fn emit_stream_summary(lua: &Lua, inner: &Inner, message: &Table) -> mlua::Result<()> {
    let mut thinking = String::new();
    if let Ok(blocks) = message.get::<Table>("content") {
        for block in blocks.sequence_values::<Table>().flatten() {
            if block.get::<Option<String>>("type")?.as_deref() == Some("thinking") {
                thinking.push_str(&block.get::<Option<String>>("thinking")?.unwrap_or_default());
            }
        }
    }
    if !thinking.is_empty() {
        let ev = event(lua, "assistant-thinking")?;
        ev.set("text", thinking)?;
        ev.set("final", true)?;
        emit(lua, inner, ev);
    }
    emit(lua, inner, event(lua, "assistant-stream-end")?);
    Ok(())
}
