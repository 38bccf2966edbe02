//! Boot and reload: creates the Lua state, discovers extensions, reads their manifests, runs
//! each entry inside a load transaction with its own `api` table, and commits what it
//! registered. `Kernel` is the handle the CLI holds.

use super::run::{self, RunContext};
use super::{api, vm};
use crate::kernel::calls;
use crate::kernel::convert;
use crate::kernel::loader::{self, Candidate, DiscoveryConfig, RootKind};
use crate::kernel::log::Level;
use crate::kernel::settings::{Paths, Settings};
use crate::kernel::state::{
    assemble_prompt, emit, ExtensionRecord, Inner, LoadTxn, ReloadReport, Status,
};
use mlua::{Lua, Table, Value};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Options for [`Kernel::boot`].
#[derive(Debug, Clone)]
pub struct BootOptions {
    pub discovery: DiscoveryConfig,
    pub paths: Paths,
}

impl BootOptions {
    /// Roots from the environment (`FEN_EXTENSION_ROOT`, `FEN_EXTENSIONS_PATH`, XDG) plus the
    /// explicit `--extension` paths and `--extension-root`, for the run of `ctx`.
    pub fn for_run(
        ctx: &RunContext,
        explicit: Vec<std::path::PathBuf>,
        overlay: Option<std::path::PathBuf>,
    ) -> BootOptions {
        let overlay = overlay.or_else(|| {
            std::env::var_os("FEN_EXTENSION_ROOT")
                .filter(|v| !v.is_empty())
                .map(std::path::PathBuf::from)
        });
        BootOptions {
            discovery: DiscoveryConfig {
                explicit,
                overlay,
                cwd: ctx.cwd.clone(),
                extensions_path: crate::kernel::settings::extensions_path_from_env(),
                config_dir: ctx.paths.config_dir.clone(),
                embedded: true,
                project_trusted: ctx.trusted(),
            },
            paths: ctx.paths.clone(),
        }
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
        let ctx = RunContext::new(
            opts.paths.clone(),
            opts.discovery.cwd.clone(),
            opts.discovery.project_trusted,
        );
        Kernel::boot_with(opts, ctx)
    }

    /// [`Kernel::boot`] with the run context the caller made (and may have read already).
    pub fn boot_with(opts: BootOptions, ctx: RunContext) -> mlua::Result<Kernel> {
        Kernel::boot_skipping(opts, ctx, |_| false)
    }

    /// [`Kernel::boot_with`] for a listing of tools (`fen list tools`): the embedded presenters
    /// are not run. They contribute presenters, commands, hooks and event handlers, never a tool
    /// (tests/kernel_loader.rs holds them to it), and they are about a quarter of the Lua a boot
    /// loads. Their records stay `Pending`.
    pub fn boot_for_tool_listing(opts: BootOptions, ctx: RunContext) -> mlua::Result<Kernel> {
        Kernel::boot_skipping(opts, ctx, embedded_presenter)
    }

    fn boot_skipping(
        opts: BootOptions,
        ctx: RunContext,
        skip: fn(&ExtensionRecord) -> bool,
    ) -> mlua::Result<Kernel> {
        let lua = vm::new_state()?;
        vm::install_lib_searcher(&lua, opts.discovery.overlay.clone())?;
        let ctx = run::install(&lua, ctx);
        let inner = Rc::new(Inner::new(opts.discovery, opts.paths));
        for problem in &ctx.settings().problems {
            inner.logger.log(Level::Warn, "settings", problem);
        }
        let kernel = Kernel { lua, inner };
        load(&kernel.lua, &kernel.inner, skip);
        Ok(kernel)
    }

    /// The run context (paths, settings, sandbox, ...).
    pub fn run(&self) -> Rc<RunContext> {
        run::run(&self.lua)
    }

    /// Re-reads the settings, re-discovers and, per extension, removes its contributions and
    /// runs its entry again. Transactional per extension: one that fails keeps its previous
    /// contributions.
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

    /// Runs a slash command line (`/name args`) to completion; the caller provides the runtime
    /// (see `crate::cmd::block_on`). Returns the handler's text, if any.
    pub async fn run_command(
        &self,
        line: &str,
    ) -> Result<Option<String>, crate::kernel::KernelError> {
        crate::kernel::state::run_command(&self.lua, &self.inner, line).await
    }
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
fn resolve(lua: &Lua, candidates: Vec<Candidate>, trusted: bool) -> Vec<ExtensionRecord> {
    let mut records: Vec<ExtensionRecord> = Vec::new();
    let mut winners: HashMap<String, String> = HashMap::new();
    for c in candidates {
        if c.root.kind == RootKind::Project && !trusted {
            // Not even its manifest runs: it is code from the folder. It takes no name either,
            // so it shadows nothing.
            records.push(ExtensionRecord {
                name: c.default_name.clone(),
                description: None,
                status: Status::Untrusted,
                message: Some(
                    "not loaded: this folder is not trusted (its extensions can run code); \
                     answer the trust prompt of an interactive `fen`, or run with --trust"
                        .into(),
                ),
                root_kind: c.root.kind,
                root: c.root.display(),
                rank: c.root.rank,
                entry: c.location.default_entry(),
                location: c.location.clone(),
                first_party: false,
                shadowed_by: None,
                requires_bin: Vec::new(),
            });
            continue;
        }
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

/// A presenter of the embedded set (`extensions/adapters/presenters/`). A source checkout's
/// (`--extension-root`) may have been edited, so it always runs.
pub fn embedded_presenter(rec: &ExtensionRecord) -> bool {
    rec.root_kind == RootKind::Embedded
        && matches!(&rec.location, loader::Location::EmbeddedDir(p) if p.starts_with("adapters/presenters/"))
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
        // The file's top level and its entry function share one budget: an extension that
        // loops at load time fails alone and the others load.
        let label = format!("extension '{}'", rec.name);
        let budget = calls::DEFAULT_BUDGET;
        let started = std::time::Instant::now();
        let load = |f: &mlua::Function, args: Value| -> mlua::Result<Value> {
            let left = budget.saturating_sub(started.elapsed());
            calls::call_sync::<Value>(lua, f, args, left, || label.clone()).map_err(|e| {
                if calls::is_stop_error(&e) && e.to_string().contains("(infinite loop?)") {
                    mlua::Error::runtime(format!(
                        "did not finish loading within {} s (infinite loop?)",
                        budget.as_secs()
                    ))
                } else {
                    e
                }
            })
        };
        match load(&chunk, Value::Nil)? {
            Value::Function(f) => load(&f, Value::Table(api_table)).map(|_| ()),
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

/// Which environment variables tool children must not see (kept in the run context).
fn hide_secrets(lua: &Lua, inner: &Inner) {
    let provider_keys: Vec<String> = inner
        .registry
        .borrow()
        .active("provider")
        .iter()
        .filter_map(|c| c.spec.get::<Option<String>>("key_env").ok().flatten())
        .collect();
    let ctx = run::run(lua);
    let settings = ctx.settings();
    let env = &settings.tool_env;
    let names = std::env::vars_os().filter_map(|(k, _)| k.into_string().ok());
    let hidden =
        crate::kernel::settings::hidden_child_env(names, &provider_keys, &env.remove, &env.keep);
    ctx.set_hidden_env(hidden);
}

/// `/reload`: the settings read again (new problems logged, a `settings-changed` event when
/// they differ), then discovery and load for every extension.
pub fn reload(lua: &Lua, inner: &Rc<Inner>) -> ReloadReport {
    let ctx = run::run(lua);
    let old = ctx.settings();
    let new = Settings::load(
        &ctx.paths.config_dir,
        &ctx.project_root,
        inner.project_trusted.get(),
    );
    for problem in new.problems.iter().filter(|p| !old.problems.contains(p)) {
        inner.logger.log(Level::Warn, "settings", problem);
    }
    let changed = new.changed_keys(&old);
    ctx.set_settings(new);
    let report = load(lua, inner, |_| false);
    if !changed.is_empty() {
        let event = serde_json::json!({"type": "settings-changed", "keys": changed});
        if let Ok(Value::Table(t)) = convert::json_to_lua(lua, &event) {
            if let Err(e) = emit(lua, inner, t, "kernel") {
                inner.logger.log(Level::Error, "kernel", &e.to_string());
            }
        }
    }
    report
}

/// Discovery + load for every extension (boot is the first load).
fn load(lua: &Lua, inner: &Rc<Inner>, skip: fn(&ExtensionRecord) -> bool) -> ReloadReport {
    // Loading allocates only what stays alive (specs, closures): collecting during it is
    // wasted work at start-up.
    lua.gc_stop();
    let report = reload_all(lua, inner, skip);
    hide_secrets(lua, inner);
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

/// Discovery, then every enabled extension run except those `skip` names (left `Pending`).
fn reload_all(lua: &Lua, inner: &Rc<Inner>, skip: fn(&ExtensionRecord) -> bool) -> ReloadReport {
    let before: HashSet<String> = inner
        .extensions
        .borrow()
        .iter()
        .filter(|r| r.status == Status::Loaded || r.status == Status::Error)
        .map(|r| r.name.clone())
        .collect();
    let mut records = resolve(
        lua,
        loader::discover(&inner.discovery),
        inner.project_trusted.get(),
    );
    let mut report = ReloadReport::default();
    let mut kept: HashSet<String> = HashSet::new();
    let mut loaded_events = Vec::new();
    for rec in records.iter_mut() {
        if rec.status != Status::Pending || skip(rec) {
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
