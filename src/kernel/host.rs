//! The kernel host: one Lua state, the registry, the event bus, the prompt fragments and the
//! extension records; boot, load, reload and dispatch. Lua-facing pieces (`api`, `require`,
//! `fen.native`) live in `crate::lua`; they call back into the functions here.

use super::events::{self, Bus, Handler};
use super::loader::{self, Candidate, DiscoveryConfig, Location, RootKind};
use super::log::{Level, Logger};
use super::prompt::{self, PromptFragment};
use super::registry::{Contribution, Registry};
use super::settings::Paths;
use crate::lua::{api, convert, vm};
use mlua::{Function, Lua, Table, Value};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// How an extension ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Loaded,
    Disabled,
    MissingDeps,
    Error,
    Shadowed,
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
    pub paths: Paths,
    pub logger: Logger,
    /// The agent of this run, once a presenter runs one (`api.turn.*` act on it).
    pub agent: RefCell<Option<Rc<super::agent::Agent>>>,
    seq: Cell<u64>,
}

impl Inner {
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

/// Options for [`Kernel::boot`].
#[derive(Debug, Clone)]
pub struct BootOptions {
    pub discovery: DiscoveryConfig,
    pub paths: Paths,
}

impl BootOptions {
    /// Roots from the environment (`FEN_EXTENSION_ROOT`, `FEN_EXTENSIONS_PATH`, XDG) plus the
    /// explicit `--extension` paths and `--extension-root`.
    pub fn from_env(
        cwd: std::path::PathBuf,
        explicit: Vec<std::path::PathBuf>,
        overlay: Option<std::path::PathBuf>,
    ) -> BootOptions {
        let paths = Paths::from_env();
        let overlay = overlay.or_else(|| {
            std::env::var_os("FEN_EXTENSION_ROOT")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from)
        });
        BootOptions {
            discovery: DiscoveryConfig {
                explicit,
                overlay,
                cwd,
                extensions_path: super::settings::extensions_path_from_env(),
                config_dir: paths.config_dir.clone(),
                embedded: true,
            },
            paths,
        }
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

/// The running kernel.
pub struct Kernel {
    pub lua: Lua,
    pub inner: Rc<Inner>,
}

impl Kernel {
    /// Creates the Lua state and loads every discovered extension.
    pub fn boot(opts: BootOptions) -> mlua::Result<Kernel> {
        let lua = vm::new_state()?;
        vm::install_lib_searcher(&lua, opts.discovery.overlay.clone())?;
        let inner = Rc::new(Inner {
            registry: RefCell::new(Registry::default()),
            bus: RefCell::new(Bus::default()),
            prompts: RefCell::new(Vec::new()),
            extensions: RefCell::new(Vec::new()),
            states: RefCell::new(HashMap::new()),
            txn: RefCell::new(None),
            logger: Logger::new(&opts.paths.state_dir),
            discovery: opts.discovery,
            paths: opts.paths,
            agent: RefCell::new(None),
            seq: Cell::new(0),
        });
        let kernel = Kernel { lua, inner };
        kernel.reload();
        Ok(kernel)
    }

    /// Re-discovers and, per extension, removes its contributions and runs its entry again.
    /// Transactional per extension: one that fails keeps its previous contributions.
    pub fn reload(&self) -> ReloadReport {
        reload(&self.lua, &self.inner)
    }

    pub fn extensions(&self) -> Vec<ExtensionRecord> {
        self.inner.extensions.borrow().clone()
    }

    /// Emits an event from Rust (validated like `api.emit`).
    pub fn emit(&self, event: Table) -> mlua::Result<()> {
        emit(&self.lua, &self.inner, event, "the host")
    }

    /// Emits an event given as JSON.
    pub fn emit_json(&self, event: &serde_json::Value) -> mlua::Result<()> {
        let table = convert::json_to_lua(&self.lua, event)?;
        match table {
            Value::Table(t) => self.emit(t),
            _ => Err(mlua::Error::runtime("an event must be a table")),
        }
    }

    /// The assembled system prompt from every `api.prompt` fragment.
    pub fn assemble_prompt(&self) -> String {
        assemble_prompt(&self.inner)
    }

    /// `fen list KIND --json`: every contribution of a kind, shadowed ones included.
    pub fn list_json(&self, kind: &str) -> Vec<serde_json::Value> {
        let registry = self.inner.registry.borrow();
        registry
            .list(kind)
            .iter()
            .map(|l| convert::contribution_json(&self.lua, l))
            .collect()
    }

    /// Runs a slash command line (`/name args`) to completion (outside any runtime). Returns
    /// the handler's text, if any.
    pub fn run_command(&self, line: &str) -> Result<Option<String>, String> {
        crate::runtime::block_on(run_command(&self.lua, &self.inner, line))
            .map_err(|e| e.to_string())?
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
/// as coroutines); one marked `idle_only` is refused while the agent is busy.
pub async fn run_command(lua: &Lua, inner: &Inner, line: &str) -> Result<Option<String>, String> {
    let line = line.trim();
    let body = line.strip_prefix('/').unwrap_or(line);
    let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let handler: Option<Function> = {
        let registry = inner.registry.borrow();
        registry
            .get("command", name)
            .and_then(|c| c.spec.get::<Function>("handler").ok())
    };
    let Some(handler) = handler else {
        let names: Vec<String> = {
            let registry = inner.registry.borrow();
            registry
                .active("command")
                .iter()
                .filter_map(|c| c.name.clone())
                .collect()
        };
        let hint = crate::suggest::did_you_mean(name, names.iter().map(String::as_str))
            .map(|s| format!(" (did you mean /{s}?)"))
            .unwrap_or_else(|| " (try /help)".to_string());
        return Err(format!("unknown command: /{name}{hint}"));
    };
    let ctx = lua.create_table().map_err(|e| e.to_string())?;
    match handler.call_async::<Value>((args.trim(), ctx)).await {
        Ok(Value::String(s)) => Ok(Some(s.to_string_lossy())),
        Ok(_) => Ok(None),
        Err(e) => Err(format!("/{name} failed: {}", convert::error_parts(&e).0)),
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
            if let Err((field, msg)) = convert::validate_table(contract, &event) {
                return Err(mlua::Error::runtime(format!(
                    "{emitter} emitted an invalid '{ty}' event: field '{field}' {msg}"
                )));
            }
        }
    }
    let targets = inner.bus.borrow_mut().subscribers(ty);
    for h in targets.iter() {
        if let Err(err) = h.func.call::<()>(&event) {
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

/// Reads a candidate's manifest (a Lua file returning a table, run with no globals).
fn read_manifest(lua: &Lua, c: &Candidate) -> Result<Option<Table>, String> {
    if !c.location.has_manifest() {
        return Ok(None);
    }
    let code = c
        .location
        .code("manifest.lua")
        .map_err(|e| format!("cannot read manifest.lua: {e}"))?;
    let env = lua.create_table().map_err(|e| e.to_string())?;
    let name = format!("@{}", c.location.display_file("manifest.lua"));
    // Embedded manifests run from their bytecode; a source manifest is evaluated as before (a
    // bare table expression is accepted as well as `return {...}`).
    let precompiled = match &code {
        loader::Code::Embedded(f) => vm::load_bytecode(lua, f.bytecode, &name, Some(&env)).ok(),
        loader::Code::Source(_) => None,
    };
    let value = match precompiled {
        Some(f) => f.call::<Value>(()),
        None => lua
            .load(code.source())
            .set_name(name)
            .set_environment(env)
            .eval::<Value>(),
    };
    match value {
        Ok(Value::Table(t)) => Ok(Some(t)),
        Ok(other) => Err(format!(
            "manifest.lua must return a table, got {}",
            other.type_name()
        )),
        Err(e) => Err(format!("manifest.lua: {}", convert::error_parts(&e).0)),
    }
}

/// Turns candidates into records: manifests read, first name wins, shadowed copies recorded,
/// disabled and missing-deps decided. Enabled winners are `Pending`.
fn resolve(lua: &Lua, candidates: Vec<Candidate>) -> Vec<ExtensionRecord> {
    let mut records: Vec<ExtensionRecord> = Vec::new();
    let mut winners: HashMap<String, String> = HashMap::new();
    for c in candidates {
        let mut rec = ExtensionRecord {
            name: c.default_name.clone(),
            description: None,
            status: Status::Pending,
            message: None,
            root_kind: c.root.kind,
            root: c.root.display(),
            rank: c.root.rank,
            entry: c.location.default_entry(),
            location: c.location.clone(),
            first_party: c.root.kind.first_party(),
            shadowed_by: None,
            requires_bin: Vec::new(),
        };
        let mut enabled = true;
        match read_manifest(lua, &c) {
            Ok(Some(m)) => {
                if let Ok(Some(n)) = m.get::<Option<String>>("name") {
                    rec.name = n;
                }
                rec.description = m.get::<Option<String>>("description").ok().flatten();
                if let Ok(Some(e)) = m.get::<Option<String>>("entry") {
                    rec.entry = e;
                }
                enabled = m
                    .get::<Option<bool>>("enabled_by_default")
                    .ok()
                    .flatten()
                    .unwrap_or(true);
                if let Ok(Some(req)) = m.get::<Option<Table>>("requires") {
                    if let Ok(Some(bins)) = req.get::<Option<Vec<String>>>("bin") {
                        rec.requires_bin = bins;
                    }
                }
            }
            Ok(None) => {}
            Err(msg) => {
                rec.status = Status::Error;
                rec.message = Some(msg);
            }
        }
        if c.shadowed_by_dir {
            rec.status = Status::Shadowed;
            rec.shadowed_by = winners.get(&rec.name).cloned();
            rec.message = Some("a directory of the same name in the same root wins".into());
        } else if let Some(winner) = winners.get(&rec.name) {
            rec.status = Status::Shadowed;
            rec.shadowed_by = Some(winner.clone());
            rec.message = Some(format!("shadowed by {winner}"));
        } else {
            winners.insert(rec.name.clone(), rec.path());
            if rec.status == Status::Pending {
                let missing: Vec<&String> = rec
                    .requires_bin
                    .iter()
                    .filter(|b| !loader::binary_on_path(b))
                    .collect();
                if !enabled && rec.root_kind != RootKind::Explicit {
                    rec.status = Status::Disabled;
                    rec.message = Some("enabled_by_default = false in its manifest".into());
                } else if !missing.is_empty() {
                    rec.status = Status::MissingDeps;
                    let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
                    rec.message = Some(format!(
                        "missing binary: {} (install it and /reload)",
                        names.join(", ")
                    ));
                }
            }
        }
        records.push(rec);
    }
    records
}

/// Runs one extension's entry inside a load transaction and commits its contributions.
fn load_extension(lua: &Lua, inner: &Rc<Inner>, rec: &ExtensionRecord) -> Result<(), String> {
    *inner.txn.borrow_mut() = Some(LoadTxn {
        owner: rec.name.clone(),
        ..LoadTxn::default()
    });
    let result = (|| -> mlua::Result<()> {
        let env = vm::extension_env(lua, rec)?;
        let api_table = api::build(lua, inner, rec)?;
        let code = rec.location.code(&rec.entry).map_err(|e| {
            mlua::Error::runtime(format!("cannot read entry {}: {e}", rec.entry_file()))
        })?;
        let chunk = vm::load_code(lua, &code, &format!("@{}", rec.entry_file()), Some(&env))?;
        match chunk.call::<Value>(())? {
            Value::Function(f) => f.call::<()>(api_table),
            other => Err(mlua::Error::runtime(format!(
                "{} must return function(api) ... end, got {}",
                rec.entry_file(),
                other.type_name()
            ))),
        }
    })();
    let txn = inner.txn.borrow_mut().take().unwrap_or_default();
    match result {
        Ok(()) => {
            let owner = rec.name.as_str();
            {
                let mut registry = inner.registry.borrow_mut();
                registry.remove_owner(owner);
                for c in txn.contributions {
                    registry.add(c);
                }
            }
            inner.bus.borrow_mut().replace_owner(owner, txn.handlers);
            {
                let mut prompts = inner.prompts.borrow_mut();
                prompts.retain(|p| p.owner != owner);
                prompts.extend(txn.prompts);
            }
            Ok(())
        }
        Err(e) => Err(convert::error_parts(&e).0),
    }
}

fn remove_owner(inner: &Inner, owner: &str) {
    inner.registry.borrow_mut().remove_owner(owner);
    inner.bus.borrow_mut().replace_owner(owner, Vec::new());
    inner.prompts.borrow_mut().retain(|p| p.owner != owner);
}

/// Discovery + load for every extension (boot is the first reload).
pub fn reload(lua: &Lua, inner: &Rc<Inner>) -> ReloadReport {
    // Loading allocates only what stays alive (specs, closures): collecting during it is
    // wasted work at start-up.
    lua.gc_stop();
    let report = reload_all(lua, inner);
    lua.gc_restart();
    defer_next_collection(lua);
    report
}

/// Restarting the collector leaves it due at the next allocation, and that first collection
/// after boot is a major one (the heap grew far past its last estimate): it marks everything
/// boot made, most of which lives as long as the process. Let the heap grow by its own size
/// first (as the incremental collector's default pause would): a short `fen tool` run then
/// never collects, and a long session collects as before once it has allocated that much.
fn defer_next_collection(lua: &Lua) {
    let kb = (lua.used_memory() / 1024).clamp(1, i32::MAX as usize) as std::ffi::c_int;
    // SAFETY: a GC control call on the state's own thread; with a negative step it only adds
    // `kb` KB of credit to the collector's debt and runs no collection.
    let _ = unsafe {
        lua.exec_raw::<()>((), |state| {
            mlua::ffi::lua_gc(state, mlua::ffi::LUA_GCSTEP, -kb);
        })
    };
}

fn reload_all(lua: &Lua, inner: &Rc<Inner>) -> ReloadReport {
    let before: HashSet<String> = inner
        .extensions
        .borrow()
        .iter()
        .filter(|r| r.status == Status::Loaded || r.status == Status::Error)
        .map(|r| r.name.clone())
        .collect();
    let mut records = resolve(lua, loader::discover(&inner.discovery));
    let mut report = ReloadReport::default();
    let mut kept: HashSet<String> = HashSet::new();
    let mut loaded_events = Vec::new();
    for rec in records.iter_mut() {
        if rec.status != Status::Pending {
            continue;
        }
        match load_extension(lua, inner, rec) {
            Ok(()) => {
                rec.status = Status::Loaded;
                kept.insert(rec.name.clone());
                report.loaded.push(rec.name.clone());
                loaded_events.push((rec.name.clone(), rec.first_party));
            }
            Err(msg) => {
                inner
                    .logger
                    .log(Level::Error, &rec.name, &format!("failed to load: {msg}"));
                rec.status = Status::Error;
                if before.contains(&rec.name)
                    && !inner.registry.borrow().owned_by(&rec.name).is_empty()
                {
                    rec.message = Some(format!("{msg} (kept its previous contributions)"));
                    kept.insert(rec.name.clone());
                } else {
                    rec.message = Some(msg.clone());
                }
                report.errors.push((rec.name.clone(), msg));
            }
        }
    }
    for gone in before.difference(&kept) {
        remove_owner(inner, gone);
        report.removed.push(gone.clone());
    }
    report.removed.sort();
    *inner.extensions.borrow_mut() = records;
    for (name, first_party) in loaded_events {
        let event = serde_json::json!({"type": "extension-loaded", "name": name, "first_party": first_party});
        if let Ok(Value::Table(t)) = convert::json_to_lua(lua, &event) {
            if let Err(e) = emit(lua, inner, t, "kernel") {
                inner.logger.log(Level::Error, "kernel", &e.to_string());
            }
        }
    }
    report
}
