//! The kernel's shared state: the registry, the event bus, the prompt fragments and the
//! extension records (`Inner`), and the dispatch that acts on them (events, commands, prompt
//! assembly). Booting the Lua state and (re)loading extensions is the host's job
//! (`crate::host::boot`); this module knows nothing of the `api` table or the VM setup.

use super::convert;
use super::events::{self, Bus, Handler};
use super::loader::{DiscoveryConfig, Location, RootKind};
use super::log::{Level, Logger};
use super::prompt::{self, PromptFragment};
use super::registry::{Contribution, Registry};
use super::settings::Paths;
use mlua::{Function, Lua, Table, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// How an extension ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Loaded,
    Disabled,
    MissingDeps,
    Error,
    Shadowed,
    /// A project extension of a folder the user has not trusted: not run.
    Untrusted,
    /// Found and enabled, not yet run (only during boot and reload).
    Pending,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Loaded => "loaded",
            Status::Disabled => "disabled",
            Status::MissingDeps => "missing-deps",
            Status::Error => "error",
            Status::Shadowed => "shadowed",
            Status::Untrusted => "untrusted",
            Status::Pending => "pending",
        }
    }
}

/// One discovered extension and what became of it.
#[derive(Debug, Clone)]
pub struct ExtensionRecord {
    pub name: String,
    pub description: Option<String>,
    pub status: Status,
    /// Why it is in error, disabled, missing deps or shadowed.
    pub message: Option<String>,
    pub root_kind: RootKind,
    pub root: String,
    pub rank: usize,
    pub location: Location,
    /// The entry file, relative to the extension's directory.
    pub entry: String,
    pub first_party: bool,
    /// For a shadowed copy: the path of the extension that won the name.
    pub shadowed_by: Option<String>,
    pub requires_bin: Vec<String>,
}

impl ExtensionRecord {
    /// The path shown for this extension (its directory, file, or embedded location).
    pub fn path(&self) -> String {
        match &self.location {
            Location::Dir(d) => d.display().to_string(),
            Location::File(f) => f.display().to_string(),
            Location::EmbeddedDir(p) => format!("<embedded>/extensions/{p}"),
        }
    }
    pub fn entry_file(&self) -> String {
        self.location.display_file(&self.entry)
    }
}

/// What one extension contributes while its entry runs; committed only if the entry succeeds,
/// so a failed load leaves nothing half-registered.
#[derive(Default)]
pub struct LoadTxn {
    pub owner: String,
    pub contributions: Vec<Contribution>,
    pub handlers: Vec<Handler>,
    pub prompts: Vec<PromptFragment>,
}

/// Everything the kernel shares with the Lua callbacks.
pub struct Inner {
    pub registry: RefCell<Registry>,
    pub bus: RefCell<Bus>,
    pub prompts: RefCell<Vec<PromptFragment>>,
    pub extensions: RefCell<Vec<ExtensionRecord>>,
    pub states: RefCell<HashMap<String, Table>>,
    pub txn: RefCell<Option<LoadTxn>>,
    pub discovery: DiscoveryConfig,
    /// Whether this folder's project extensions may run (`--trust`, trusted.json, or the
    /// user's answer to the trust prompt during this run).
    pub project_trusted: Cell<bool>,
    pub paths: Paths,
    pub logger: Logger,
    /// The agent of this run, once a presenter runs one (`api.turn.*` act on it).
    pub agent: RefCell<Option<Rc<super::agent::Agent>>>,
    /// The presenter running the session (`api.ui.*` and hooks' `ask` go to it).
    pub presenter: RefCell<Option<String>>,
    /// Time budget of a synchronous call into an extension (event handlers, panels, status
    /// items) and of a `before_tool` hook's own running time; settings `handler_budget_ms`.
    pub handler_budget: Cell<std::time::Duration>,
    /// Flags of this run that first-party policy extensions read (`api.kernel.run_options()`):
    /// `permission_mode`, `on_ask`, `headless`, `trusted`.
    pub run_options: RefCell<serde_json::Value>,
    /// Which tools the model is offered at all (`--tools`, `--denied-tools`, `--no-tools`).
    pub tool_filter: RefCell<super::tools::ToolFilter>,
    /// The session backend chosen for this run (`--session-backend`).
    pub session_backend: RefCell<String>,
    /// Tokens of slash commands running now (Ctrl-C and `api.turn.cancel` stop them too).
    pub commands: RefCell<Vec<(u64, tokio_util::sync::CancellationToken)>>,
    seq: Cell<u64>,
}

impl Inner {
    /// Empty state: nothing registered, no agent yet.
    pub fn new(discovery: DiscoveryConfig, paths: Paths) -> Inner {
        Inner {
            registry: RefCell::new(Registry::default()),
            bus: RefCell::new(Bus::default()),
            prompts: RefCell::new(Vec::new()),
            extensions: RefCell::new(Vec::new()),
            states: RefCell::new(HashMap::new()),
            txn: RefCell::new(None),
            logger: Logger::new(&paths.state_dir),
            project_trusted: Cell::new(discovery.project_trusted),
            discovery,
            paths,
            agent: RefCell::new(None),
            presenter: RefCell::new(None),
            handler_budget: Cell::new(super::calls::DEFAULT_BUDGET),
            commands: RefCell::new(Vec::new()),
            session_backend: RefCell::new("jsonl".to_string()),
            run_options: RefCell::new(serde_json::json!({})),
            tool_filter: RefCell::new(super::tools::ToolFilter::default()),
            seq: Cell::new(0),
        }
    }

    pub fn next_seq(&self) -> u64 {
        let n = self.seq.get() + 1;
        self.seq.set(n);
        n
    }

    /// The load transaction of `owner`, when its entry is running now.
    pub fn with_txn<R>(&self, owner: &str, f: impl FnOnce(&mut LoadTxn) -> R) -> Option<R> {
        let mut txn = self.txn.borrow_mut();
        match txn.as_mut() {
            Some(t) if t.owner == owner => Some(f(t)),
            _ => None,
        }
    }

    pub fn record(&self, name: &str) -> Option<ExtensionRecord> {
        self.extensions
            .borrow()
            .iter()
            .find(|r| r.name == name && r.status != Status::Shadowed)
            .cloned()
    }
}

/// What a reload did.
#[derive(Debug, Clone, Default)]
pub struct ReloadReport {
    pub loaded: Vec<String>,
    /// `(extension, error)`; an extension that was loaded before keeps its old contributions.
    pub errors: Vec<(String, String)>,
    /// Extensions whose contributions were removed because they are gone or now disabled.
    pub removed: Vec<String>,
}

impl ReloadReport {
    pub fn summary(&self) -> String {
        let mut s = format!("reloaded {} extension(s)", self.loaded.len());
        if !self.removed.is_empty() {
            s.push_str(&format!("; removed {}", self.removed.join(", ")));
        }
        for (name, err) in &self.errors {
            s.push_str(&format!("\nerror in {name}: {err}"));
        }
        s
    }
}

pub fn assemble_prompt(inner: &Inner) -> String {
    assemble_prompt_without(inner, "")
}

/// The prompt without the fragment whose id is `skip` (`--system` replaces the `base` one).
pub fn assemble_prompt_without(inner: &Inner, skip: &str) -> String {
    let fragments: Vec<PromptFragment> = inner
        .prompts
        .borrow()
        .iter()
        .filter(|f| f.id != skip)
        .cloned()
        .collect();
    prompt::assemble(&fragments, |owner, id, err| {
        inner.logger.log(
            Level::Error,
            owner,
            &format!("prompt fragment {id} failed: {err}"),
        );
    })
}

/// Dispatches `/name args` to the active command of that name. Handlers may wait (they run
/// as coroutines, each with a cancellation token of its own that Ctrl-C trips); one marked
/// `idle_only` is refused while the agent is busy.
pub async fn run_command(
    lua: &Lua,
    inner: &Inner,
    line: &str,
) -> Result<Option<String>, super::KernelError> {
    let line = line.trim();
    let body = line.strip_prefix('/').unwrap_or(line);
    let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let found: Option<(Function, bool)> = {
        let registry = inner.registry.borrow();
        registry.get("command", name).and_then(|c| {
            let idle_only = c
                .spec
                .get::<Option<bool>>("idle_only")
                .ok()
                .flatten()
                .unwrap_or(false);
            c.spec
                .get::<Function>("handler")
                .ok()
                .map(|h| (h, idle_only))
        })
    };
    let Some((handler, idle_only)) = found else {
        let names: Vec<String> = {
            let registry = inner.registry.borrow();
            registry
                .active("command")
                .iter()
                .filter_map(|c| c.name.clone())
                .collect()
        };
        let hint = super::suggest::did_you_mean(name, names.iter().map(String::as_str))
            .map(|s| format!(" (did you mean /{s}?)"))
            .unwrap_or_else(|| " (try /help)".to_string());
        return Err(super::KernelError::UnknownCommand {
            name: name.to_string(),
            hint,
        });
    };
    let busy = inner.agent.borrow().as_ref().is_some_and(|a| a.is_busy());
    if idle_only && busy {
        return Err(super::KernelError::CommandWhileBusy(name.to_string()));
    }
    let ctx = lua.create_table()?;
    let token = tokio_util::sync::CancellationToken::new();
    let id = inner.next_seq();
    inner.commands.borrow_mut().push((id, token.clone()));
    let scope = super::calls::Scope::new(token.clone(), None, &format!("/{name}"));
    let result = super::calls::call_async::<Value>(lua, &handler, (args.trim(), ctx), scope).await;
    inner.commands.borrow_mut().retain(|(n, _)| *n != id);
    match result {
        Ok(Value::String(s)) => Ok(Some(s.to_string_lossy())),
        Ok(_) => Ok(None),
        Err(e) => Err(super::KernelError::CommandFailed {
            name: name.to_string(),
            message: convert::error_parts(&e).0,
        }),
    }
}

/// Cancels the running turn and every running command (Ctrl-C, `api.turn.cancel`).
pub fn cancel_foreground(inner: &Inner) {
    if let Some(a) = inner.agent.borrow().as_ref() {
        a.cancel();
    }
    for (_, t) in inner.commands.borrow().iter() {
        t.cancel();
    }
}

/// Validates an event against its contract (when it has one) and delivers it to every
/// subscriber. A handler that raises does not stop delivery; it produces `extension-error`
/// (never for an `extension-error` handler, so errors cannot loop).
pub fn emit(lua: &Lua, inner: &Inner, event: Table, emitter: &str) -> mlua::Result<()> {
    let ty_value = event.get::<Value>("type")?;
    let Value::String(ty_lua) = &ty_value else {
        return Err(mlua::Error::runtime(format!(
            "{emitter} emitted an event without a string 'type' (got {})",
            ty_value.type_name()
        )));
    };
    let ty_str = ty_lua.to_str()?;
    let ty: &str = &ty_str;
    // The kernel's own events are built by tested code; what extensions emit is checked.
    if emitter != "kernel" {
        if let Some(contract) = events::event_contract(ty) {
            if let Err(msg) = convert::validate_table(contract, &event) {
                return Err(mlua::Error::runtime(format!(
                    "{emitter} emitted an invalid '{ty}' event: {msg}"
                )));
            }
        }
    }
    let targets = inner.bus.borrow_mut().subscribers(ty);
    let budget = inner.handler_budget.get();
    for h in targets.iter() {
        let label = || format!("the {ty} handler of {}", h.owner);
        if let Err(err) = super::calls::call_sync::<()>(lua, &h.func, &event, budget, label) {
            let (message, traceback) = convert::error_parts(&err);
            if ty == "extension-error" {
                inner.logger.log(
                    Level::Error,
                    &h.owner,
                    &format!("extension-error handler failed: {message}"),
                );
                continue;
            }
            inner.logger.log(
                Level::Error,
                &h.owner,
                &format!("handler for {ty} failed: {message}"),
            );
            let report = lua.create_table()?;
            report.set("type", "extension-error")?;
            report.set("owner", h.owner.as_str())?;
            report.set("event", ty)?;
            report.set("error", message)?;
            if let Some(tb) = traceback {
                report.set("traceback", tb)?;
            }
            emit(lua, inner, report, "kernel")?;
        }
    }
    Ok(())
}
