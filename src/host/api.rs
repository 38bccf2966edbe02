//! The `api` table handed to each extension's entry function. Every function here is bound to
//! its extension (the owner), so every contribution is tagged and can be undone by reload.
//!
//! | field | what it does |
//! | --- | --- |
//! | `api.name` | this extension's name |
//! | `api.register(kind, spec)` | contribute a tool, command, provider, ... (validated against contracts/) |
//! | `api.on(type, fn)` | subscribe to an event type, or `"*"` for all |
//! | `api.emit(event)` | emit an event (validated when its type is in contracts/) |
//! | `api.log(level, msg)` | log to `$XDG_STATE_HOME/fen/logs.jsonl` (and stderr per `FEN_LOG`) |
//! | `api.prompt(text_or_fn, {id, title, order})` | contribute a system prompt fragment |
//! | `api.list(kind)` | read-only snapshots of the active and shadowed contributions of a kind |
//! | `api.state()` | a table private to this extension that survives `/reload` |
//! | `api.load(name)` | load the sibling file `name.lua` (like `require`, cached per load) |
//! | `api.turn` | `submit(text, {when_busy, images})` (async), `cancel()`, `busy()`, `messages()`, `complete{system_prompt, messages, max_tokens}` (async, one model call), `replace_messages(list)`, `context_window()` |
//! | `api.session` | `info()`, `list()`, `new()`, `resume(query)`, `append_state(name?, state)`, `latest_state(name?)`, `append_compaction(record, first_kept_message)` |
//! | `api.enqueue(kind, text)` | queue a `steering` or `follow-up` message for the running agent |
//! | `api.validate(name, value, {strict})` | check a value against a type or protocol message of contracts/: `true` or `nil, why` |
//! | `api.settings` | `get(path)`: a value of the merged settings.json (`"tui.theme"`; nil when absent), a copy; `files()`: each settings file as loaded (`{scope, path, value, error}`), for readers with their own trust rule. Read once per run, again on `/reload` (then a `settings-changed` event) |
//! | `api.kernel` | first-party only: `reload()`, `run_command(line)`, `extensions()`, `contributions(kind)` (the active specs with their functions, for presenters) |

use crate::kernel::contracts::contracts;
use crate::kernel::convert;
use crate::kernel::events::Handler;
use crate::kernel::log::Level;
use crate::kernel::prompt::{PromptContent, PromptFragment};
use crate::kernel::registry::Contribution;
use crate::kernel::state::{self, ExtensionRecord, Inner};
use mlua::{Function, Lua, Table, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// Builds the `api` table of one extension.
pub fn build(lua: &Lua, inner: &Rc<Inner>, rec: &ExtensionRecord) -> mlua::Result<Table> {
    let owner = rec.name.clone();
    let register = register_fn(lua, inner, rec)?;

    let (i, o) = (inner.clone(), owner.clone());
    let on = lua.create_function(move |_, (event, func): (String, Function)| {
        let handler = Handler {
            owner: o.clone(),
            event,
            func,
        };
        if i.with_txn(&o, |t| t.handlers.push(handler.clone()))
            .is_none()
        {
            i.bus.borrow_mut().add(handler);
        }
        Ok(())
    })?;

    let (i, o) = (inner.clone(), owner.clone());
    let emit = lua.create_function(move |lua, event: Value| match event {
        Value::Table(t) => state::emit(lua, &i, t, &format!("extension '{o}'")),
        other => Err(mlua::Error::runtime(format!(
            "api.emit expects an event table with a 'type' field, got {}",
            other.type_name()
        ))),
    })?;

    let (i, o) = (inner.clone(), owner.clone());
    let log = lua.create_function(move |lua, (level, msg): (String, Value)| {
        let lvl = Level::parse(&level).ok_or_else(|| {
            mlua::Error::runtime(format!(
                "api.log: unknown level {level:?} (use debug, info, warn or error)"
            ))
        })?;
        // Text as a Lua author reads it: strings as they are, tables as JSON, the rest as
        // `tostring` would print them.
        let text = match msg {
            Value::String(s) => s.to_string_lossy(),
            Value::Table(_) => match convert::lua_data_to_json(lua, &msg) {
                Ok(j) => j.to_string(),
                Err(e) => format!("<table: {e}>"),
            },
            Value::Nil => "nil".to_string(),
            Value::Boolean(b) => b.to_string(),
            Value::Integer(n) => n.to_string(),
            Value::Number(n) => n.to_string(),
            other => other
                .to_string()
                .unwrap_or_else(|_| other.type_name().to_string()),
        };
        i.logger.log(lvl, &o, &text);
        Ok(())
    })?;

    let prompt = prompt_fn(lua, inner, &owner)?;

    let (i, o) = (inner.clone(), owner.clone());
    let state = lua.create_function(move |lua, ()| {
        let mut states = i.states.borrow_mut();
        if let Some(t) = states.get(&o) {
            return Ok(t.clone());
        }
        let t = lua.create_table()?;
        states.insert(o.clone(), t.clone());
        Ok(t)
    })?;

    // api.load goes through a `require` of the extension's own, made on first use (most
    // extensions never call it, and boot makes one api table per extension).
    let load_rec = rec.clone();
    let global_require: Function = lua.globals().get("require")?;
    let env_require: RefCell<Option<Function>> = RefCell::new(None);
    let load = lua.create_function(move |lua, name: String| {
        let location = &load_rec.location;
        // The same files the sibling `require` looks for: dots are directories.
        let rel = name.replace('.', "/");
        let found = [format!("{rel}.lua"), format!("{rel}/init.lua")]
            .iter()
            .any(|f| location.read(f).is_ok());
        if !found {
            return Err(mlua::Error::runtime(format!(
                "api.load: no sibling file {rel}.lua or {rel}/init.lua beside {}",
                location.display_file("")
            )));
        }
        let existing = env_require.borrow().clone();
        let require = match existing {
            Some(f) => f,
            None => {
                let env = super::vm::extension_env(lua, &load_rec)?;
                let f =
                    super::vm::sibling_require_with(lua, &load_rec, &env, global_require.clone())?;
                *env_require.borrow_mut() = Some(f.clone());
                f
            }
        };
        require.call::<Value>(name)
    })?;

    let (append_state, latest_state) = owned_session_fns(lua, inner, &owner)?;
    let shared = shared(lua, inner)?;
    // One call into Lua assembles the table (a field set from Rust costs more than in Lua).
    shared.get::<Function>("assemble")?.call((
        shared.clone(),
        owner.as_str(),
        rec.first_party,
        register,
        on,
        emit,
        log,
        prompt,
        state,
        load,
        append_state,
        latest_state,
    ))
}

/// Assembles one extension's api table from the shared functions and its own; each extension
/// gets tables of its own, so one that changes a field of its `api.turn` changes nobody else's.
const ASSEMBLE: &str = r#"
local function copy(t)
  local c = {}
  for k, v in next, t do c[k] = v end
  return c
end
return function(shared, name, first_party, register, on, emit, log, prompt, state, load,
    append_state, latest_state)
  local session = copy(shared.session)
  session.append_state = append_state
  session.latest_state = latest_state
  return {
    name = name, first_party = first_party, register = register, on = on, emit = emit,
    log = log, prompt = prompt, list = shared.list, validate = shared.validate, state = state, load = load,
    turn = copy(shared.turn), session = session, enqueue = shared.enqueue, ui = copy(shared.ui),
    kernel = first_party and copy(shared.kernel) or nil, settings = copy(shared.settings),
  }
end
"#;

/// The functions of the api that do not depend on the extension (they act on the kernel, the
/// running agent or its session), made once per Lua state: boot builds one api table per
/// extension, and an async function is costly to make. Also `assemble` (see [`ASSEMBLE`]).
fn shared(lua: &Lua, inner: &Rc<Inner>) -> mlua::Result<Table> {
    const KEY: &str = "fen.api.shared";
    if let Ok(t) = lua.named_registry_value::<Table>(KEY) {
        return Ok(t);
    }
    let t = lua.create_table()?;
    let i = inner.clone();
    t.set(
        "list",
        lua.create_function(move |lua, kind: String| list(lua, &i, &kind))?,
    )?;
    let i = inner.clone();
    t.set(
        "enqueue",
        lua.create_function(move |lua, (kind, text): (String, String)| {
            let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
            agent
                .enqueue(&kind, text.clone())
                .map_err(mlua::Error::external)?;
            let ev = lua.create_table()?;
            ev.set("type", "queued")?;
            ev.set("line", text)?;
            state::emit(lua, &i, ev, "kernel")
        })?,
    )?;
    // `validate(name, value, {strict})`: `true`, or `nil, why` naming the bad field (a
    // protocol message on arrival, checked against contracts/; see `convert::validate_value`).
    t.set(
        "validate",
        lua.create_function(|lua, (name, value, opts): (String, Value, Option<Table>)| {
            let strict = opts
                .and_then(|o| o.get::<Option<bool>>("strict").ok().flatten())
                .unwrap_or(false);
            match convert::validate_value(&name, &value, strict) {
                Ok(()) => Ok((Value::Boolean(true), Value::Nil)),
                Err(why) => Ok((Value::Nil, Value::String(lua.create_string(why)?))),
            }
        })?,
    )?;
    t.set("turn", turn_table(lua, inner)?)?;
    t.set("ui", ui_table(lua, inner)?)?;
    t.set("session", session_table(lua, inner)?)?;
    t.set("kernel", kernel_table(lua, inner)?)?;
    t.set("settings", settings_table(lua)?)?;
    t.set(
        "assemble",
        lua.load(ASSEMBLE).set_name("=fen.api").eval::<Function>()?,
    )?;
    lua.set_named_registry_value(KEY, &t)?;
    Ok(t)
}

/// `api.session`: `info()` -> `{path, id}` or nil; `list()` -> this directory's sessions, newest
/// first; `new()` and `resume(query)` switch the running agent's session (async; `nil, message`
/// on failure); `append_state(name_or_state, state?)` / `latest_state(name?)` persist and read
/// an extension's state in the session (the name defaults to the calling extension). These are
/// the shared ones; `owned_session_fns` makes the two that know the extension.
fn session_table(lua: &Lua, inner: &Rc<Inner>) -> mlua::Result<Table> {
    use crate::kernel::sessions::{self, Target};
    let t = lua.create_table()?;
    let i = inner.clone();
    t.set(
        "info",
        lua.create_function(move |lua, ()| {
            let Some(p) = current(&i) else {
                return Ok(Value::Nil);
            };
            let Value::Table(s) = &p.session else {
                return Ok(Value::Nil);
            };
            let out = lua.create_table()?;
            out.set("path", s.get::<Value>("path")?)?;
            out.set("id", s.get::<Value>("id")?)?;
            Ok(Value::Table(out))
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "list",
        lua.create_async_function(move |lua, ()| {
            let i = i.clone();
            async move {
                let backend = sessions::backend(&i).map_err(mlua::Error::external)?;
                let opts = lua.create_table()?;
                if let Some(a) = i.agent.borrow().as_ref() {
                    opts.set("cwd", a.config.cwd.to_string_lossy().as_ref())?;
                }
                backend
                    .get::<Function>("list")?
                    .call_async::<Value>(opts)
                    .await
            }
        })?,
    )?;
    for (name, resume) in [("new", false), ("resume", true)] {
        let i = inner.clone();
        t.set(
            name,
            lua.create_async_function(move |lua, query: Option<String>| {
                let i = i.clone();
                async move {
                    let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
                    let target = match (resume, query) {
                        (false, _) => Target::New,
                        (true, Some(q)) if !q.is_empty() => Target::Find(q),
                        (true, _) => Target::Latest,
                    };
                    match sessions::switch(&lua, &i, &agent, target).await {
                        Ok(()) => {
                            let ev = lua.create_table()?;
                            ev.set("type", "reset-conversation")?;
                            state::emit(&lua, &i, ev, "kernel")?;
                            Ok((true, None::<String>))
                        }
                        Err(e) => Ok((false, Some(e.to_string()))),
                    }
                }
            })?,
        )?;
    }
    let i = inner.clone();
    // A record of the extension's own type (`{type = "checkpoint", ...}`), appended to the
    // session file as it is; false when there is no session or the backend keeps no records.
    t.set(
        "append_record",
        lua.create_function(move |_, record: Table| {
            let Some(p) = current(&i) else {
                return Ok(false);
            };
            match p.backend.get::<Option<Function>>("append_record")? {
                Some(f) => {
                    f.call::<()>((p.session, record))?;
                    Ok(true)
                }
                None => Ok(false),
            }
        })?,
    )?;
    let i = inner.clone();
    // Async: the backend makes the entry durable before the context is replaced.
    t.set(
        "append_compaction",
        lua.create_async_function(move |_, (record, first_kept): (Table, Value)| {
            let p = current(&i);
            async move {
                let Some(p) = p else { return Ok(false) };
                match p.backend.get::<Option<Function>>("append_compaction")? {
                    Some(f) => {
                        f.call_async::<()>((p.session, record, first_kept)).await?;
                        Ok(true)
                    }
                    None => Ok(false),
                }
            }
        })?,
    )?;
    Ok(t)
}

/// The persistence of the running agent's session, if any.
fn current(i: &Inner) -> Option<crate::kernel::agent::Persistence> {
    i.agent
        .borrow()
        .as_ref()
        .and_then(|a| a.persistence.borrow().clone())
}

/// `api.session.append_state` and `latest_state`, whose state name defaults to `owner`.
fn owned_session_fns(
    lua: &Lua,
    inner: &Rc<Inner>,
    owner: &str,
) -> mlua::Result<(Function, Function)> {
    let (i, o) = (inner.clone(), owner.to_string());
    let append_state = lua.create_function(move |_, (a, b): (Value, Value)| {
        // `append_state(name, state)` or `append_state(state)` (named after the caller).
        let (name, state) = match (&a, b) {
            (Value::String(n), state) if !state.is_nil() => (n.to_string_lossy(), state),
            _ => (o.clone(), a.clone()),
        };
        let Some(p) = current(&i) else {
            return Ok(false);
        };
        match p.backend.get::<Option<Function>>("append_state")? {
            Some(f) => {
                f.call::<()>((p.session, name, state))?;
                Ok(true)
            }
            None => Ok(false),
        }
    })?;
    let (i, o) = (inner.clone(), owner.to_string());
    let latest_state = lua.create_function(move |_, name: Option<String>| {
        let Some(p) = current(&i) else {
            return Ok(Value::Nil);
        };
        match p.backend.get::<Option<Function>>("latest_state")? {
            Some(f) => f.call::<Value>((p.session, name.unwrap_or_else(|| o.clone()))),
            None => Ok(Value::Nil),
        }
    })?;
    Ok((append_state, latest_state))
}

/// `opts.images` of `api.turn.submit`: image blocks (`native.image.prepare` makes them), each
/// checked against the `ImageContent` contract and copied without extra fields (what is stored
/// in the session is what the provider is sent). Raises naming the bad one.
fn image_blocks(lua: &Lua, images: Value) -> mlua::Result<Vec<Table>> {
    let list = match images {
        Value::Nil => return Ok(Vec::new()),
        Value::Table(t) => t,
        other => {
            return Err(mlua::Error::runtime(format!(
                "api.turn.submit: opts.images must be a list of image blocks, got a {}",
                other.type_name()
            )))
        }
    };
    let contract = contracts()
        .types()
        .entries
        .iter()
        .find(|c| c.name == "ImageContent")
        .ok_or_else(|| mlua::Error::runtime("contracts: ImageContent is missing"))?;
    let mut out = Vec::new();
    for (n, block) in list.sequence_values::<Value>().enumerate() {
        let Value::Table(block) = block? else {
            return Err(mlua::Error::runtime(format!(
                "api.turn.submit: opts.images[{}] must be an image block {{type = \"image\", data, mime_type}}",
                n + 1
            )));
        };
        if let Err(msg) = convert::validate_table(contract, &block) {
            return Err(mlua::Error::runtime(format!(
                "api.turn.submit: opts.images[{}]: {msg}",
                n + 1
            )));
        }
        let copy = lua.create_table()?;
        for key in ["type", "data", "mime_type"] {
            copy.set(key, block.get::<Value>(key)?)?;
        }
        out.push(copy);
    }
    Ok(out)
}

fn no_agent() -> mlua::Error {
    mlua::Error::runtime(
        "no agent is running: api.turn and api.enqueue work while a presenter runs a session",
    )
}

/// `api.ui`: `notify(text)`, `select(title, items) -> index|nil`, `prompt(question, default)
/// -> text|nil`, `ask(request) -> answer|nil` (the presenter's approval prompt, as a
/// `before_tool` hook's `ctx.ask`). Async: the calling coroutine waits for the active presenter's answer; a
/// presenter that cannot ask (print, json) answers `nil, "no user"` at once.
fn ui_table(lua: &Lua, inner: &Rc<Inner>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for name in ["notify", "select", "select_multi", "prompt", "ask"] {
        let i = inner.clone();
        t.set(
            name,
            lua.create_async_function(move |lua, args: mlua::MultiValue| {
                let i = i.clone();
                async move {
                    if name != "ask" {
                        return crate::kernel::ui::call_presenter(&lua, &i, name, args).await;
                    }
                    // An approval forwarded here (a subagent child's) may be answered by a
                    // `before_ask` hook, as a `ctx.ask` is: the request says what it is about.
                    let request = args.into_iter().next().unwrap_or(Value::Nil);
                    let about = lua.create_table()?;
                    if let Value::Table(r) = &request {
                        for k in ["tool", "args", "call_id"] {
                            about.set(k, r.get::<Value>(k)?)?;
                        }
                    }
                    crate::kernel::ui::ask(&lua, &i, request, about).await
                }
            })?,
        )?;
    }
    Ok(t)
}

crate::lua_options! {
    pub(crate) struct SubmitOpts as "fen.opts.TurnSubmit" for "api.turn.submit" {
        when_busy: Option<String> => "(\"reject\"|\"steering\"|\"follow-up\")?", "While a turn runs: refuse (default) or queue the text.",
        images: Option<serde_json::Value> => "fen.PreparedImage[]?", "Images (from `native.image.prepare`) sent with the text.",
    }
}

crate::lua_options! {
    pub(crate) struct PromptOpts as "fen.opts.Prompt" for "api.prompt" {
        id: Option<String> => "string?", "Replaces your fragment with the same id (default: a new one).",
        title: Option<String> => "string?", "Shown by /context.",
        order: Option<f64> => "number?", "Fragments are joined by order (default 100).",
    }
}

/// The options classes of the `api` functions (for the generated annotations).
pub fn option_classes() -> Vec<crate::host::options::Class> {
    use crate::host::options::class;
    vec![class::<SubmitOpts>(), class::<PromptOpts>()]
}

/// `api.turn`: `submit(text, {when_busy = "reject" | "steering" | "follow-up", images})` runs a user
/// turn and returns `{status = "ok" | "cancelled" | "error" | "queued" | "rejected", text,
/// error}`; `cancel()` cancels the running turn; `busy()` tells whether one runs;
/// `before_compact(ctx)` runs the `before_compact` hooks (nil, or why one blocks);
/// `run_tool(name, args)` runs one call on the person's behalf as the model's would go
/// (restriction, `before_tool` hooks and permission policy, the tool) and returns its result
/// with `text` (the text blocks joined) and `ran` (false when refused or invalid).
fn turn_table(lua: &Lua, inner: &Rc<Inner>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let i = inner.clone();
    t.set(
        "submit",
        lua.create_async_function(move |lua, (text, opts): (String, Value)| {
            let i = i.clone();
            async move {
                let opts: SubmitOpts = crate::host::options::options(&lua, opts)?;
                let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
                let out = lua.create_table()?;
                let images = match &opts.images {
                    Some(v) => image_blocks(&lua, mlua::LuaSerdeExt::to_value(&lua, v)?)?,
                    None => Vec::new(),
                };
                if agent.is_busy() {
                    let when = opts.when_busy;
                    match when.as_deref().unwrap_or("reject") {
                        "reject" => {
                            out.set("status", "rejected")?;
                            out.set(
                                "error",
                                "the agent is busy; wait for the turn to end or cancel it",
                            )?;
                        }
                        kind => {
                            agent
                                .enqueue_with_images(kind, text.clone(), images)
                                .map_err(mlua::Error::external)?;
                            let ev = lua.create_table()?;
                            ev.set("type", "queued")?;
                            ev.set("line", text)?;
                            state::emit(&lua, &i, ev, "kernel")?;
                            out.set("status", "queued")?;
                        }
                    }
                    return Ok(out);
                }
                let r =
                    crate::kernel::agent::run_turn_with_images(&lua, &i, &agent, &text, &images)
                        .await;
                out.set("status", r.status.as_str())?;
                out.set("text", r.text)?;
                out.set("error", r.error)?;
                Ok(out)
            }
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "cancel",
        lua.create_function(move |_, ()| {
            state::cancel_foreground(&i);
            Ok(())
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "busy",
        lua.create_function(move |_, ()| {
            Ok(i.agent.borrow().as_ref().is_some_and(|a| a.is_busy()))
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "complete",
        lua.create_async_function(move |lua, request: Table| {
            let i = i.clone();
            async move {
                let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
                crate::kernel::agent::complete_once(&lua, &i, &agent, request).await
            }
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "before_compact",
        lua.create_async_function(move |lua, ctx: Table| {
            let i = i.clone();
            async move { Ok(crate::kernel::agent::before_compact(&lua, &i, ctx).await) }
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "run_tool",
        lua.create_async_function(move |lua, (name, args): (String, Value)| {
            let i = i.clone();
            async move {
                let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
                // An empty table reads as an array; an argument list is an object.
                let args = match args {
                    Value::Nil => serde_json::json!({}),
                    v => match convert::lua_to_json(&lua, &v).map_err(mlua::Error::external)? {
                        serde_json::Value::Array(a) if a.is_empty() => serde_json::json!({}),
                        j => j,
                    },
                };
                let cancel = crate::kernel::calls::current_cancel(&lua);
                let o = crate::kernel::agent::dispatch::run_for_person(
                    &lua, &i, &agent, &name, args, &cancel,
                )
                .await;
                let out = convert::json_to_lua(&lua, &o.to_json())?;
                if let Value::Table(t) = &out {
                    let text: Vec<&str> = o
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            crate::kernel::tools::Block::Text(t) => Some(t.as_str()),
                            _ => None,
                        })
                        .collect();
                    t.set("text", text.join("\n"))?;
                    t.set("ran", o.ran)?;
                }
                Ok(out)
            }
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "replace_messages",
        lua.create_function(move |_, messages: Table| {
            let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
            crate::kernel::agent::replace_messages(&agent, messages)
        })?,
    )?;
    let i = inner.clone();
    // `model()` -> `{provider, model, thinking}` in use now.
    t.set(
        "model",
        lua.create_function(move |lua, ()| {
            let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
            let out = lua.create_table()?;
            out.set("provider", agent.provider())?;
            out.set("model", agent.model())?;
            out.set(
                "thinking",
                agent
                    .options()
                    .get("thinking")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
            )?;
            Ok(out)
        })?,
    )?;
    let i = inner.clone();
    // `set_model(provider, model)`: the next turns use them (refused while a turn runs, or
    // for a provider that is not registered).
    t.set(
        "set_model",
        lua.create_function(move |lua, (provider, model): (String, String)| {
            let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
            if i.registry.borrow().get("provider", &provider).is_none() {
                return Err(mlua::Error::runtime(format!(
                    "no provider named '{provider}' is registered (`fen list providers`)"
                )));
            }
            agent
                .set_model(&provider, &model)
                .map_err(mlua::Error::external)?;
            let ev = lua.create_table()?;
            ev.set("type", "model-changed")?;
            ev.set("provider", provider)?;
            ev.set("model", model)?;
            state::emit(lua, &i, ev, "kernel")
        })?,
    )?;
    let i = inner.clone();
    // `set_thinking(level)`: off, minimal, low, medium or high for the next turns.
    t.set(
        "set_thinking",
        lua.create_function(move |_, level: String| {
            let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
            const LEVELS: [&str; 5] = ["off", "minimal", "low", "medium", "high"];
            if !LEVELS.contains(&level.as_str()) {
                return Err(mlua::Error::runtime(format!(
                    "unknown thinking level {level:?}: use {}",
                    LEVELS.join(", ")
                )));
            }
            agent
                .set_option("thinking", serde_json::Value::String(level))
                .map_err(mlua::Error::external)
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "context_window",
        lua.create_function(move |_, ()| {
            let agent = i.agent.borrow().clone().ok_or_else(no_agent)?;
            Ok(crate::kernel::agent::context_window(&i, &agent))
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "messages",
        lua.create_function(move |_, ()| {
            Ok(i.agent.borrow().as_ref().map(|a| a.messages.clone()))
        })?,
    )?;
    Ok(t)
}

fn register_fn(lua: &Lua, inner: &Rc<Inner>, rec: &ExtensionRecord) -> mlua::Result<Function> {
    let i = inner.clone();
    let owner = rec.name.clone();
    let file = rec.entry_file();
    let rank = rec.rank;
    lua.create_function(move |_, (kind, spec): (String, Value)| {
        let whose = format!("extension '{owner}' ({file})");
        let Some(contract) = contracts().register_kind(&kind) else {
            let kinds = contracts().kind_names();
            let hint = crate::kernel::suggest::did_you_mean(&kind, kinds.iter().copied())
                .map(|s| format!("did you mean '{s}'? "))
                .unwrap_or_default();
            return Err(mlua::Error::runtime(format!(
                "{whose}: unknown register kind '{kind}' ({hint}known kinds: {})",
                kinds.join(", ")
            )));
        };
        let Value::Table(spec) = spec else {
            return Err(mlua::Error::runtime(format!(
                "{whose}: api.register('{kind}', spec) expects a table spec, got {}",
                spec.type_name()
            )));
        };
        for field in &contract.fields {
            if let Some(default) = &field.default {
                if spec.get::<Value>(field.name.as_str())?.is_nil() {
                    spec.set(field.name.as_str(), default.as_str())?;
                }
            }
        }
        if let Err(msg) = convert::validate_table(contract, &spec) {
            return Err(mlua::Error::runtime(format!(
                "{whose}: invalid {kind} spec: {msg}"
            )));
        }
        let name = match &contract.unique_by {
            Some(key) => spec.get::<Option<String>>(key.as_str())?,
            None => spec.get::<Option<String>>("name").ok().flatten(),
        };
        let contribution = Contribution {
            kind: kind.clone(),
            name,
            owner: owner.clone(),
            rank,
            seq: 0,
            spec: spec.clone(),
        };
        if i.with_txn(&owner, |t| t.contributions.push(contribution.clone()))
            .is_none()
        {
            i.registry.borrow_mut().add(contribution);
        }
        Ok(())
    })
}

fn prompt_fn(lua: &Lua, inner: &Rc<Inner>, owner: &str) -> mlua::Result<Function> {
    let i = inner.clone();
    let o = owner.to_string();
    lua.create_function(move |lua, (content, opts): (Value, Value)| {
        let opts: PromptOpts = crate::host::options::options(lua, opts)?;
        let content = match content {
            Value::String(s) => PromptContent::Text(s.to_string_lossy()),
            Value::Function(f) => PromptContent::Dynamic(f),
            other => {
                return Err(mlua::Error::runtime(format!(
                    "api.prompt expects a string or a function returning a string, got {}",
                    other.type_name()
                )))
            }
        };
        let seq = i.next_seq();
        let fragment = PromptFragment {
            owner: o.clone(),
            id: opts.id.unwrap_or_else(|| format!("{o}#{seq}")),
            title: opts.title,
            order: opts.order.unwrap_or(100.0),
            seq,
            content,
        };
        let replace = |list: &mut Vec<PromptFragment>, f: PromptFragment| {
            list.retain(|p| !(p.owner == f.owner && p.id == f.id));
            list.push(f);
        };
        let pending = i.with_txn(&o, |t| replace(&mut t.prompts, fragment.clone()));
        if pending.is_none() {
            replace(&mut i.prompts.borrow_mut(), fragment);
        }
        Ok(())
    })
}

/// `api.list(kind)`: each entry is a read-only view over a copy of the spec's data.
fn list(lua: &Lua, inner: &Inner, kind: &str) -> mlua::Result<Table> {
    let entries: Vec<serde_json::Value> = {
        let registry = inner.registry.borrow();
        registry
            .list(kind)
            .iter()
            .map(|l| convert::contribution_json(lua, l))
            .collect()
    };
    let readonly: Function = readonly_fn(lua)?;
    let out = lua.create_table()?;
    for e in entries {
        out.push(readonly.call::<Value>(convert::json_to_lua(lua, &e)?)?)?;
    }
    Ok(out)
}

fn readonly_fn(lua: &Lua) -> mlua::Result<Function> {
    const KEY: &str = "fen.readonly";
    if let Ok(f) = lua.named_registry_value::<Function>(KEY) {
        return Ok(f);
    }
    let f: Function = lua
        .load(
            r#"
            return function(t)
              return setmetatable({}, {
                __index = t,
                __newindex = function(_, k)
                  error("api.list entries are read-only snapshots (tried to set " .. tostring(k) .. ")", 2)
                end,
                __pairs = function() return next, t, nil end,
                __len = function() return #t end,
              })
            end
            "#,
        )
        .set_name("=fen.readonly")
        .eval()?;
    lua.set_named_registry_value(KEY, f.clone())?;
    Ok(f)
}

/// The privileged table of first-party extensions.
/// `api.settings`: the run's settings (see `crate::kernel::settings::Settings`), read-only: each
/// call converts a fresh copy.
fn settings_table(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "get",
        lua.create_function(|lua, path: Option<String>| {
            let settings = super::run::run(lua).settings();
            match settings.get(path.as_deref().unwrap_or("")) {
                Some(v) => convert::json_to_lua(lua, v),
                None => Ok(Value::Nil),
            }
        })?,
    )?;
    t.set(
        "files",
        lua.create_function(|lua, ()| {
            let settings = super::run::run(lua).settings();
            let out = lua.create_table()?;
            for layer in &settings.layers {
                let f = lua.create_table()?;
                f.set("scope", format!("{:?}", layer.scope).to_lowercase())?;
                f.set("path", layer.path.to_string_lossy().as_ref())?;
                f.set("value", convert::json_to_lua(lua, &layer.value)?)?;
                f.set("error", layer.error.clone())?;
                out.push(f)?;
            }
            Ok(out)
        })?,
    )?;
    Ok(t)
}

fn kernel_table(lua: &Lua, inner: &Rc<Inner>) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let i = inner.clone();
    t.set(
        "reload",
        lua.create_function(move |lua, ()| {
            let report = super::boot::reload(lua, &i);
            let out = lua.create_table()?;
            out.set("summary", report.summary())?;
            out.set("loaded", report.loaded)?;
            out.set("removed", report.removed)?;
            let errors = lua.create_table()?;
            for (name, err) in report.errors {
                let e = lua.create_table()?;
                e.set("name", name)?;
                e.set("error", err)?;
                errors.push(e)?;
            }
            out.set("errors", errors)?;
            Ok(out)
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "contributions",
        lua.create_function(move |lua, kind: String| {
            // The live specs (functions included), in registration order: the TUI calls panel
            // renders, status renders and control handlers through them.
            let out = lua.create_table()?;
            for c in i.registry.borrow().active(&kind) {
                let e = lua.create_table()?;
                e.set("name", c.name.clone())?;
                e.set("owner", c.owner.clone())?;
                e.set("spec", c.spec.clone())?;
                out.push(e)?;
            }
            Ok(out)
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "run_command",
        lua.create_async_function(move |lua, line: String| {
            let i = i.clone();
            async move {
                match state::run_command(&lua, &i, &line).await {
                    Ok(text) => Ok((text, None::<String>)),
                    Err(e) => Ok((None, Some(e.to_string()))),
                }
            }
        })?,
    )?;
    let i = inner.clone();
    // `run_options()` -> this run's flags for policy extensions (permissions), and
    // `allowed_tools`: the active tools `--tools`/`--denied-tools`/`--no-tools` let through.
    let i2 = inner.clone();
    t.set(
        "run_options",
        lua.create_function(move |lua, ()| {
            let mut o = i2.run_options.borrow().clone();
            if o.is_object() {
                let filter = i2.tool_filter.borrow();
                let tools: Vec<String> = i2
                    .registry
                    .borrow()
                    .active("tool")
                    .iter()
                    .filter_map(|c| c.name.clone())
                    .filter(|n| filter.allows(n))
                    .collect();
                o["allowed_tools"] = tools.into();
                if o.get("trusted").is_none() {
                    o["trusted"] = i2.project_trusted.get().into();
                }
            }
            convert::json_to_lua(lua, &o)
        })?,
    )?;
    // `prompt_fragments()` -> `{id, title, owner, bytes}` in prompt order (`/context`).
    t.set(
        "prompt_fragments",
        lua.create_function(move |lua, ()| {
            let fragments = i.prompts.borrow().clone();
            let out = lua.create_table()?;
            for (f, text) in crate::kernel::prompt::render(&fragments, |_, _, _| {}) {
                let row = lua.create_table()?;
                row.set("id", f.id.as_str())?;
                row.set("title", f.title.clone())?;
                row.set("owner", f.owner.as_str())?;
                row.set("bytes", text.len())?;
                out.push(row)?;
            }
            Ok(out)
        })?,
    )?;
    let i = inner.clone();
    t.set(
        "extensions",
        lua.create_function(move |lua, ()| {
            let records = i.extensions.borrow().clone();
            let out = lua.create_table()?;
            for r in records {
                out.push(convert::json_to_lua(
                    lua,
                    &crate::kernel::extension_json(&r),
                )?)?;
            }
            Ok(out)
        })?,
    )?;
    Ok(t)
}
