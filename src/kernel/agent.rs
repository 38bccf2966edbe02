//! The agent loop: a user turn runs model steps until the model stops, the step cap is reached,
//! or the turn is cancelled. Each step asks the active provider (a Lua extension) for one
//! assistant message, re-emitting its stream events, then runs the tool calls it asked for
//! through the tool pipeline and appends exactly one result per call, in call order.
//!
//! Conversation messages are canonical Lua tables (contracts/types.toml) kept in one Lua array,
//! so providers, presenters and session backends read them without conversion.

use super::convert;
use super::state::{self, Inner};
use super::tools::{self, ToolCallContext, ToolOutcome};
use mlua::{Function, Lua, Table, Value};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
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

/// The outcome of one submitted user turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnResult {
    /// `ok`, `cancelled` or `error`.
    pub status: &'static str,
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
    cancel: RefCell<CancellationToken>,
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
            config,
            persistence: RefCell::new(None),
            messages: lua.create_table()?,
            handle,
            busy: Cell::new(false),
            steering: RefCell::new(VecDeque::new()),
            follow_up: RefCell::new(VecDeque::new()),
            cancel: RefCell::new(CancellationToken::new()),
        })
    }

    pub fn is_busy(&self) -> bool {
        self.busy.get()
    }

    /// Trips the running turn's cancellation (Ctrl-C, `/cancel`).
    pub fn cancel(&self) {
        self.cancel.borrow().cancel();
    }

    pub fn enqueue(&self, kind: &str, text: String) -> Result<(), String> {
        match kind {
            "steering" => self.steering.borrow_mut().push_back(text),
            "follow-up" => self.follow_up.borrow_mut().push_back(text),
            other => {
                return Err(format!(
                    "unknown queue {other:?}: use \"steering\" or \"follow-up\""
                ))
            }
        }
        Ok(())
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

fn event(lua: &Lua, ty: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("type", ty)?;
    Ok(t)
}

fn emit(lua: &Lua, inner: &Inner, t: Table) {
    if let Err(e) = state::emit(lua, inner, t, "kernel") {
        inner.logger.log(
            super::log::Level::Error,
            "kernel",
            &format!("event rejected: {e}"),
        );
    }
}

fn text_message(lua: &Lua, role: &str, text: &str) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("role", role)?;
    m.set("content", text)?;
    m.set("timestamp", now_ms())?;
    Ok(m)
}

/// Appends a message, persists it, and emits `message-appended`. A failed write is reported
/// (`error` event) and the session goes on: the conversation in memory is never lost.
fn append(lua: &Lua, inner: &Inner, agent: &Agent, message: Table) -> mlua::Result<()> {
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
    agent.busy.set(true);
    *agent.cancel.borrow_mut() = CancellationToken::new();
    let result = match turn(lua, inner, agent, text).await {
        Ok(r) => r,
        Err(e) => TurnResult {
            status: "error",
            text: None,
            error: Some(convert::error_parts(&e).0),
        },
    };
    agent.busy.set(false);
    sync_session(agent).await;
    if let Ok(ev) = event(lua, "agent-turn-complete") {
        let _ = ev.set("agent", agent.handle.clone());
        let _ = ev.set("status", result.status);
        let _ = ev.set("message_count", agent.messages.raw_len());
        let _ = ev.set("result", result.text.clone());
        let _ = ev.set("error", result.error.clone());
        emit(lua, inner, ev);
    }
    result
}

async fn turn(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Rc<Agent>,
    text: &str,
) -> mlua::Result<TurnResult> {
    let user = event(lua, "user")?;
    user.set("line", text)?;
    emit(lua, inner, user);
    append(lua, inner, agent, text_message(lua, "user", text)?)?;
    let cancel = agent.cancel.borrow().clone();
    let mut last_text = None;
    for _ in 0..agent.config.max_turns {
        while let Some(steer) = agent.steering.borrow_mut().pop_front() {
            append(lua, inner, agent, text_message(lua, "user", &steer)?)?;
        }
        if cancel.is_cancelled() {
            return cancelled(lua, inner, agent, last_text);
        }
        before_request(lua, inner, agent, "auto").await;
        let mut message = step(lua, inner, agent, &cancel).await?;
        if is_context_overflow(&message) {
            // Compact and try once more; the failed attempt is not kept.
            before_request(lua, inner, agent, "overflow").await;
            message = step(lua, inner, agent, &cancel).await?;
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
                let ev = event(lua, "cancelled")?;
                emit(lua, inner, ev);
                return Ok(TurnResult {
                    status: "cancelled",
                    text: last_text,
                    error: None,
                });
            }
            Some("error") => {
                let err: Option<String> = message.get("error_message")?;
                return Ok(TurnResult {
                    status: "error",
                    text: last_text,
                    error: Some(err.unwrap_or_else(|| "the provider reported an error".into())),
                });
            }
            _ => {}
        }
        let calls = tool_calls(lua, &message)?;
        if calls.is_empty() {
            let next = agent.follow_up.borrow_mut().pop_front();
            match next {
                Some(f) => {
                    append(lua, inner, agent, text_message(lua, "user", &f)?)?;
                    continue;
                }
                None => {
                    return Ok(TurnResult {
                        status: "ok",
                        text: last_text,
                        error: None,
                    })
                }
            }
        }
        run_tool_calls(lua, inner, agent, &calls, &cancel).await?;
        if cancel.is_cancelled() {
            return cancelled(lua, inner, agent, last_text);
        }
    }
    Ok(TurnResult {
        status: "error",
        text: last_text,
        error: Some(format!(
            "stopped after {} model steps (--max-turns)",
            agent.config.max_turns
        )),
    })
}

/// Provider errors that mean "the request was too big for the model's context".
fn is_context_overflow(message: &Table) -> bool {
    if message
        .get::<Option<String>>("stop_reason")
        .ok()
        .flatten()
        .as_deref()
        != Some("error")
    {
        return false;
    }
    let text = message
        .get::<Option<String>>("error_message")
        .ok()
        .flatten()
        .unwrap_or_default()
        .to_lowercase();
    [
        "context_length_exceeded",
        "context length",
        "context window",
        "prompt is too long",
        "too many tokens",
        "maximum context",
    ]
    .iter()
    .any(|p| text.contains(p))
}

/// The model's context window, from the provider's declared models (128k when unknown).
pub fn context_window(inner: &Inner, agent: &Agent) -> u64 {
    let registry = inner.registry.borrow();
    let Some(provider) = registry.get("provider", &agent.config.provider) else {
        return 128_000;
    };
    let Ok(models) = provider.spec.get::<Table>("models") else {
        return 128_000;
    };
    models
        .sequence_values::<Table>()
        .flatten()
        .find(|m| {
            m.get::<Option<String>>("id").ok().flatten().as_deref()
                == Some(agent.config.model.as_str())
        })
        .and_then(|m| m.get::<Option<u64>>("context_window").ok().flatten())
        .unwrap_or(128_000)
}

/// Runs every `before_request` hook (compaction lives there). A hook that fails is reported
/// and the request goes ahead.
async fn before_request(lua: &Lua, inner: &Inner, agent: &Agent, trigger: &str) {
    let hooks: Vec<(String, Function)> = inner
        .registry
        .borrow()
        .active("hook")
        .iter()
        .filter_map(|c| {
            c.spec
                .get::<Option<Function>>("before_request")
                .ok()
                .flatten()
                .map(|f| (c.owner.clone(), f))
        })
        .collect();
    for (owner, f) in hooks {
        let Ok(ctx) = lua.create_table() else { return };
        let _ = ctx.set("trigger", trigger);
        let _ = ctx.set("context_window", context_window(inner, agent));
        let _ = ctx.set("max_tokens", agent.config.max_tokens);
        if let Err(e) = f.call_async::<()>(ctx).await {
            if let Ok(ev) = event(lua, "error") {
                let _ = ev.set(
                    "error",
                    format!(
                        "before_request hook of {owner} failed: {}",
                        convert::error_parts(&e).0
                    ),
                );
                emit(lua, inner, ev);
            }
        }
    }
}

/// One model call outside the loop (no tools, no stream events), for companions such as
/// compaction: `api.turn.complete{system_prompt, messages, max_tokens}`.
pub async fn complete_once(
    lua: &Lua,
    inner: &Inner,
    agent: &Agent,
    request: Table,
) -> mlua::Result<Table> {
    let spec = inner
        .registry
        .borrow()
        .get("provider", &agent.config.provider)
        .map(|c| c.spec.clone());
    let Some(spec) = spec else {
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
    let options = match convert::json_to_lua(lua, &agent.config.provider_options)? {
        Value::Table(t) => t,
        _ => lua.create_table()?,
    };
    let cancel = agent.cancel.borrow().clone();
    let complete: Function = spec.get("complete")?;
    let quiet = lua.create_function(|_, _: Value| Ok(()))?;
    let call = complete.call_async::<Value>((
        agent.config.model.as_str(),
        ctx,
        options,
        quiet,
        tools::yield_fn(lua, &cancel)?,
    ));
    match call.await {
        Ok(Value::Table(m)) => normalize_assistant(lua, agent, m),
        Ok(_) => error_message(lua, agent, "the provider returned no message"),
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
        status: "cancelled",
        text,
        error: None,
    })
}

fn aborted_message(lua: &Lua, agent: &Agent) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("role", "assistant")?;
    m.set("content", empty_array(lua)?)?;
    m.set("stop_reason", "aborted")?;
    m.set("timestamp", now_ms())?;
    m.set("provider", agent.config.provider.as_str())?;
    m.set("model", agent.config.model.as_str())?;
    Ok(m)
}

/// An empty table that encodes as `[]` (content is always an array).
fn empty_array(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set_metatable(Some(mlua::LuaSerdeExt::array_metatable(lua)))?;
    Ok(t)
}

fn error_message(lua: &Lua, agent: &Agent, msg: &str) -> mlua::Result<Table> {
    let m = aborted_message(lua, agent)?;
    m.set("stop_reason", "error")?;
    m.set("error_message", msg)?;
    Ok(m)
}

fn visible_text(message: &Table) -> mlua::Result<String> {
    let mut out = String::new();
    if let Ok(content) = message.get::<Table>("content") {
        for block in content.sequence_values::<Table>().flatten() {
            if block.get::<Option<String>>("type")?.as_deref() == Some("text") {
                out.push_str(&block.get::<Option<String>>("text")?.unwrap_or_default());
            }
        }
    }
    Ok(out)
}

/// One provider call. Never fails for provider trouble: that becomes an assistant message with
/// `stop_reason = "error"`; cancellation becomes one with `stop_reason = "aborted"`.
async fn step(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Rc<Agent>,
    cancel: &CancellationToken,
) -> mlua::Result<Table> {
    let spec = inner
        .registry
        .borrow()
        .get("provider", &agent.config.provider)
        .map(|c| c.spec.clone());
    let Some(spec) = spec else {
        if agent.config.provider.is_empty() {
            return error_message(lua, agent, &agent.config.no_provider_help);
        }
        let msg = format!(
            "no provider named '{}' is registered",
            agent.config.provider
        );
        return error_message(lua, agent, &msg);
    };
    let complete: Function = spec.get("complete")?;
    let ctx = lua.create_table()?;
    ctx.set("system_prompt", system_prompt(inner, agent))?;
    ctx.set("messages", provider_context(lua, &agent.messages)?)?;
    ctx.set("tools", tool_specs(lua, inner)?)?;
    ctx.set("max_tokens", agent.config.max_tokens)?;
    let options = match convert::json_to_lua(lua, &agent.config.provider_options)? {
        Value::Table(t) => t,
        _ => lua.create_table()?,
    };
    let start = event(lua, "llm-start")?;
    start.set("provider", agent.config.provider.as_str())?;
    start.set("model", agent.config.model.as_str())?;
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
    lua.set_app_data(cancel.clone());
    let call = complete.call_async::<Value>((
        agent.config.model.as_str(),
        ctx,
        options,
        on_event,
        tools::yield_fn(lua, cancel)?,
    ));
    let outcome = tokio::select! {
        r = call => Some(r),
        _ = cancel.cancelled() => None,
    };
    let message = match outcome {
        None => aborted_message(lua, agent)?,
        Some(Ok(Value::Table(m))) => normalize_assistant(lua, agent, m)?,
        Some(Ok(other)) => error_message(
            lua,
            agent,
            &format!(
                "provider {} returned a {} instead of an assistant message",
                agent.config.provider,
                other.type_name()
            ),
        )?,
        Some(Err(_)) if cancel.is_cancelled() => aborted_message(lua, agent)?,
        Some(Err(e)) => error_message(lua, agent, &convert::error_parts(&e).0)?,
    };
    emit_stream_summary(lua, inner, &message)?;
    let end = event(lua, "llm-end")?;
    end.set("message", message.clone())?;
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

/// Fills what a provider left out of its message (role, content array, timestamp, names).
fn normalize_assistant(lua: &Lua, agent: &Agent, m: Table) -> mlua::Result<Table> {
    m.set("role", "assistant")?;
    if !matches!(m.get::<Value>("content")?, Value::Table(_)) {
        m.set("content", lua.create_table()?)?;
    }
    if m.get::<Value>("timestamp")?.is_nil() {
        m.set("timestamp", now_ms())?;
    }
    if m.get::<Value>("provider")?.is_nil() {
        m.set("provider", agent.config.provider.as_str())?;
    }
    if m.get::<Value>("model")?.is_nil() {
        m.set("model", agent.config.model.as_str())?;
    }
    if m.get::<Value>("stop_reason")?.is_nil() {
        m.set("stop_reason", "stop")?;
    }
    Ok(m)
}

fn system_prompt(inner: &Inner, agent: &Agent) -> String {
    match &agent.config.system_override {
        Some(base) => {
            let rest = state::assemble_prompt_without(inner, "base");
            if rest.is_empty() {
                base.clone()
            } else {
                format!("{base}\n\n{rest}")
            }
        }
        None => state::assemble_prompt(inner),
    }
}

/// Tools as providers see them: `{name, description, parameters}` of every active tool.
fn tool_specs(lua: &Lua, inner: &Inner) -> mlua::Result<Table> {
    let out = lua.create_table()?;
    let specs: Vec<Table> = inner
        .registry
        .borrow()
        .active("tool")
        .iter()
        .map(|c| c.spec.clone())
        .collect();
    for spec in specs {
        let t = lua.create_table()?;
        t.set("name", spec.get::<Value>("name")?)?;
        t.set("description", spec.get::<Value>("description")?)?;
        t.set("parameters", spec.get::<Value>("parameters")?)?;
        out.push(t)?;
    }
    Ok(out)
}

/// The conversation as sent to a provider: assistant turns that ended in error or were aborted
/// are left out, every tool call gets a result (a synthetic one if none was recorded) and
/// results without their call are dropped. Repairs history loaded from elsewhere too.
pub fn provider_context(lua: &Lua, messages: &Table) -> mlua::Result<Table> {
    let out = lua.create_table()?;
    let mut open_calls: Vec<(String, String)> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let close_open =
        |out: &Table, open: &mut Vec<(String, String)>, answered: &[String]| -> mlua::Result<()> {
            for (id, name) in open.drain(..) {
                if !answered.contains(&id) {
                    out.push(synthetic_result(
                        lua,
                        &id,
                        &name,
                        "[fen: no result was recorded for this tool call (interrupted)]",
                    )?)?;
                }
            }
            Ok(())
        };
    for m in messages.sequence_values::<Table>() {
        let m = m?;
        let role: String = m.get::<Option<String>>("role")?.unwrap_or_default();
        match role.as_str() {
            "assistant" => {
                let stop: Option<String> = m.get("stop_reason")?;
                if matches!(stop.as_deref(), Some("error") | Some("aborted")) {
                    continue;
                }
                close_open(&out, &mut open_calls, &answered)?;
                answered.clear();
                if let Ok(content) = m.get::<Table>("content") {
                    for b in content.sequence_values::<Table>().flatten() {
                        if b.get::<Option<String>>("type")?.as_deref() == Some("tool-call") {
                            let id: String = b.get::<Option<String>>("id")?.unwrap_or_default();
                            let name: String = b.get::<Option<String>>("name")?.unwrap_or_default();
                            open_calls.push((id, name));
                        }
                    }
                }
                out.push(m)?;
            }
            "tool-result" => {
                let id: String = m.get::<Option<String>>("tool_call_id")?.unwrap_or_default();
                let known = open_calls.iter().any(|(c, _)| *c == id);
                if known && !answered.contains(&id) {
                    answered.push(id);
                    out.push(m)?;
                }
            }
            _ => {
                close_open(&out, &mut open_calls, &answered)?;
                answered.clear();
                out.push(m)?;
            }
        }
    }
    close_open(&out, &mut open_calls, &answered)?;
    Ok(out)
}

fn synthetic_result(lua: &Lua, id: &str, name: &str, text: &str) -> mlua::Result<Table> {
    let outcome = ToolOutcome {
        content: vec![text.to_string()],
        is_error: true,
        details: serde_json::Value::Null,
        ran: false,
    };
    result_message(lua, id, name, &outcome)
}

fn result_message(lua: &Lua, id: &str, name: &str, outcome: &ToolOutcome) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("role", "tool-result")?;
    m.set("tool_call_id", id)?;
    m.set("tool_name", name)?;
    let content = lua.create_table()?;
    for text in &outcome.content {
        let b = lua.create_table()?;
        b.set("type", "text")?;
        b.set("text", text.as_str())?;
        content.push(b)?;
    }
    m.set("content", content)?;
    m.set("is_error", outcome.is_error)?;
    if !outcome.details.is_null() {
        m.set("details", convert::json_to_lua(lua, &outcome.details)?)?;
    }
    m.set("timestamp", now_ms())?;
    Ok(m)
}

/// A tool call block of an assistant message.
#[derive(Clone)]
struct Call {
    id: String,
    name: String,
    block: Table,
    args: serde_json::Value,
}

fn tool_calls(lua: &Lua, message: &Table) -> mlua::Result<Vec<Call>> {
    let mut out = Vec::new();
    let Ok(content) = message.get::<Table>("content") else {
        return Ok(out);
    };
    for (n, b) in content.sequence_values::<Table>().flatten().enumerate() {
        if b.get::<Option<String>>("type")?.as_deref() != Some("tool-call") {
            continue;
        }
        let id = b
            .get::<Option<String>>("id")?
            .unwrap_or_else(|| format!("call_{n}"));
        let name = b.get::<Option<String>>("name")?.unwrap_or_default();
        let args = match b.get::<Value>("arguments")? {
            Value::Nil => serde_json::json!({}),
            v => convert::lua_to_json(lua, v),
        };
        // Empty Lua tables decode as arrays or objects by guess; an argument list is an object.
        let args = if args.as_array().is_some_and(|a| a.is_empty()) {
            serde_json::json!({})
        } else {
            args
        };
        out.push(Call {
            id,
            name,
            block: b,
            args,
        });
    }
    Ok(out)
}

/// The paths a mutating call writes, for the one-mutation-per-path-per-turn rule.
fn mutated_paths(call: &Call) -> Vec<String> {
    if call.name != "edit" && call.name != "write" {
        return Vec::new();
    }
    let mut paths = Vec::new();
    if let Some(p) = call.args.get("path").and_then(|p| p.as_str()) {
        paths.push(p.to_string());
    }
    if let Some(files) = call.args.get("files").and_then(|f| f.as_array()) {
        paths.extend(
            files
                .iter()
                .filter_map(|f| f.get("path").and_then(|p| p.as_str()).map(str::to_string)),
        );
    }
    paths
        .into_iter()
        .map(|p| {
            let full = crate::native::fs::expand_path(&p);
            std::fs::canonicalize(&full)
                .unwrap_or(full)
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// Runs `before_tool` hooks in registration order; the first veto (or raise) wins.
fn run_hooks(lua: &Lua, inner: &Inner, call: &Call) -> Option<String> {
    let hooks: Vec<(String, Table)> = inner
        .registry
        .borrow()
        .active("hook")
        .iter()
        .map(|c| (c.owner.clone(), c.spec.clone()))
        .collect();
    for (owner, spec) in hooks {
        let Ok(f) = spec.get::<Function>("before_tool") else {
            continue;
        };
        // Each hook sees its own copy: what it does to it cannot change what runs.
        let args = convert::json_to_lua(lua, &call.args).unwrap_or(Value::Nil);
        let ctx = lua.create_table().ok()?;
        let _ = ctx.set("tool_call_id", call.id.as_str());
        match f.call::<Value>((call.name.as_str(), args, ctx)) {
            Ok(Value::Table(verdict))
                if verdict.get::<Option<bool>>("block").ok().flatten() == Some(true) =>
            {
                let reason: String = verdict
                    .get::<Option<String>>("reason")
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| "no reason given".into());
                return Some(format!(
                    "error: {} was blocked by {owner}: {reason}",
                    call.name
                ));
            }
            Ok(_) => {}
            Err(e) => {
                return Some(format!(
                    "error: {} was blocked because the hook of {owner} failed: {}",
                    call.name,
                    convert::error_parts(&e).0
                ))
            }
        }
    }
    None
}

async fn run_one(lua: &Lua, inner: &Inner, call: &Call, cancel: &CancellationToken) -> ToolOutcome {
    if cancel.is_cancelled() {
        return ToolOutcome::error("[cancelled] tool call cancelled before completion");
    }
    if inner.registry.borrow().get("tool", &call.name).is_some() {
        if let Some(veto) = run_hooks(lua, inner, call) {
            return ToolOutcome::error(veto);
        }
    }
    let ctx = ToolCallContext {
        tool_call_id: Some(call.id.clone()),
        cancel: cancel.clone(),
    };
    tools::run_tool(lua, inner, &call.name, call.args.clone(), ctx).await
}

async fn run_tool_calls(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Agent,
    calls: &[Call],
    cancel: &CancellationToken,
) -> mlua::Result<()> {
    let mut outcomes: Vec<Option<ToolOutcome>> = vec![None; calls.len()];
    // Several edit/write calls on one path in one turn would race on a moving snapshot.
    let mut per_path: HashMap<String, usize> = HashMap::new();
    for c in calls {
        for p in mutated_paths(c) {
            *per_path.entry(p).or_default() += 1;
        }
    }
    for (i, c) in calls.iter().enumerate() {
        if mutated_paths(c)
            .iter()
            .any(|p| per_path.get(p).copied().unwrap_or(0) > 1)
        {
            outcomes[i] = Some(ToolOutcome::error(
                "error: several edit/write calls in one turn target the same file; none was applied. Retry as ONE edit call with all changes in its edits array (or one write).",
            ));
        }
    }
    for c in calls {
        let ev = event(lua, "tool-call")?;
        ev.set("tool_call", c.block.clone())?;
        emit(lua, inner, ev);
    }
    let parallel: Vec<bool> = calls
        .iter()
        .map(|c| {
            inner
                .registry
                .borrow()
                .get("tool", &c.name)
                .and_then(|t| t.spec.get::<Option<String>>("concurrency").ok().flatten())
                .as_deref()
                == Some("parallel_safe")
        })
        .collect();
    let mut i = 0;
    while i < calls.len() {
        if outcomes[i].is_some() {
            i += 1;
            continue;
        }
        if parallel[i] {
            let mut j = i;
            while j < calls.len() && parallel[j] && outcomes[j].is_none() {
                j += 1;
            }
            let batch = futures_util::future::join_all(
                calls[i..j].iter().map(|c| run_one(lua, inner, c, cancel)),
            )
            .await;
            for (k, o) in batch.into_iter().enumerate() {
                outcomes[i + k] = Some(o);
            }
            i = j;
        } else {
            outcomes[i] = Some(run_one(lua, inner, &calls[i], cancel).await);
            i += 1;
        }
    }
    for (c, o) in calls.iter().zip(outcomes) {
        let o = o.unwrap_or_else(|| {
            ToolOutcome::error("[cancelled] tool call cancelled before completion")
        });
        let msg = result_message(lua, &c.id, &c.name, &o)?;
        let ev = event(lua, "tool-result")?;
        ev.set("result", msg.clone())?;
        emit(lua, inner, ev);
        append(lua, inner, agent, msg)?;
    }
    Ok(())
}
