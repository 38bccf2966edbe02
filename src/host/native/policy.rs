//! Binding of the permission analyser and the sandbox: `native.policy`.
//!
//! - `policy.new{cwd, additional_dirs, mode, rules = {{text, kind, file, line}}, tools,
//!   sandbox}` -> a policy, or `nil, errors` (every rule that can never match, each naming its
//!   file and line).
//! - `p:decide(tool, risk, args)` -> `{verdict, source, reason, subject, items, scope,
//!   parse_error}` (async: a long command is analysed on the blocking pool).
//! - `p:add_rule(text, kind)` (a session rule), `p:set_mode(mode)`, `p:mode()`, `p:rules()`.
//! - `policy.settings_rules(path)` -> `{mode, allow, ask, deny, additional_dirs, sandbox}` of a
//!   settings.json with each rule's line, or `nil, message`.
//! - `policy.sandbox(opts?)` (async) -> `{tier, status, description}` of this machine;
//!   `{lazy = true}`: without the bubblewrap trial when the answer does not depend on it
//!   (tier `auto`: a sandbox there is, which one the first sandboxed command decides).
//! - `policy.use_sandbox{enabled, required, network, writable_roots, workspace, unsandboxed}`:
//!   how shell commands of tools run from now on (`process.run` and `jobs.start` read it);
//!   `unsandboxed` lists rules (`Bash(cargo test *)`) whose commands run outside the sandbox.
//!   Returns the rules that could not be parsed, each with why.
//! - `policy.sandbox_scope(command)` -> the rules an "always run it outside the sandbox"
//!   answer adds for `command` (its stable prefix, as for "always" approvals); empty when none
//!   is safe to offer.
//! - `policy.allow_unsandboxed(rule)`: adds one such rule for the rest of the process; `nil,
//!   message` when it does not parse.
//! - `policy.audit(record)`: one line of `$XDG_STATE_HOME/fen/permissions.jsonl`.

use super::blocking;
use crate::host::run::run;
use crate::kernel::settings::{Layer, PermissionSettings, Scope};
use crate::native::policy::{
    decide, Mode, Request, Risk, RuleInput, RuleKind, RuleSet, RuleSource, Source, Verdict,
    Workspace,
};
use crate::native::sandbox::{self, Unsandboxed};
use mlua::{Lua, LuaSerdeExt, Table, UserData, UserDataMethods, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("new", lua.create_function(new_fn)?)?;
    m.set(
        "settings_rules",
        lua.create_function(|lua, path: String| match settings_rules(lua, &path) {
            Ok(v) => Ok((lua.to_value(&v)?, Value::Nil)),
            Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e)?))),
        })?,
    )?;
    m.set(
        "sandbox",
        lua.create_async_function(|lua, opts: Value| async move {
            let lazy = super::options::<SandboxInfoOpts>(&lua, opts)?.lazy;
            // The first detection runs a trial bwrap: not on the Lua thread.
            let info = blocking(move || {
                if lazy {
                    lazy_tier()
                } else {
                    sandbox::detect().clone()
                }
            })
            .await?;
            let t = lua.create_table()?;
            t.set("tier", format!("{:?}", info.tier).to_lowercase())?;
            t.set("status", info.status())?;
            t.set("description", info.description())?;
            Ok(t)
        })?,
    )?;
    m.set("use_sandbox", lua.create_function(use_sandbox_fn)?)?;
    m.set(
        "sandbox_scope",
        lua.create_async_function(|lua, command: String| async move {
            let rules = Unsandboxed::new(run(&lua).session_workspace());
            let d = blocking(move || rules.shell_decision(&command)).await?;
            // Only a command that would ask in default mode has a prefix worth remembering.
            let scope = if d.verdict == Verdict::Ask {
                d.scope
            } else {
                Vec::new()
            };
            super::array(&lua, &scope)
        })?,
    )?;
    m.set(
        "allow_unsandboxed",
        lua.create_function(|lua, rule: String| {
            let ctx = run(lua);
            match ctx.unsandboxed().add(&rule) {
                Ok(()) => {
                    // Subagents started from now on get it too.
                    if let Some(mut s) = ctx.sandbox_settings() {
                        s.unsandboxed.push(rule);
                        ctx.set_sandbox_settings(s);
                    }
                    Ok((Value::Boolean(true), Value::Nil))
                }
                Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e)?))),
            }
        })?,
    )?;
    m.set(
        "audit",
        lua.create_function(|lua, record: Value| {
            let mut v = crate::kernel::convert::lua_to_json(lua, &record)
                .map_err(|e| mlua::Error::runtime(format!("policy.audit: {e}")))?;
            if let Some(obj) = v.as_object_mut() {
                obj.insert(
                    "time".into(),
                    httpdate::fmt_http_date(std::time::SystemTime::now()).into(),
                );
            }
            let path = run(lua).paths.state_dir.join("permissions.jsonl");
            // One short line, appended: cheap enough for the Lua thread; a failure to write
            // the audit must not block the call it records.
            let _ = append_line(&path, &v.to_string());
            Ok(())
        })?,
    )?;
    Ok(m)
}

fn append_line(path: &std::path::Path, line: &str) -> std::io::Result<()> {
    use std::io::Write;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(format!("{line}\n").as_bytes())
}

/// The analyser's state for one session: workspace, rules (settings and session), mode.
struct Policy {
    workspace: Arc<Workspace>,
    rules: Arc<Mutex<RuleSet>>,
    mode: Mode,
    sandbox_available: bool,
}

fn kind_of(s: &str) -> mlua::Result<RuleKind> {
    match s {
        "allow" => Ok(RuleKind::Allow),
        "ask" => Ok(RuleKind::Ask),
        "deny" => Ok(RuleKind::Deny),
        other => Err(mlua::Error::runtime(format!(
            "unknown rule kind {other:?}: use allow, ask or deny"
        ))),
    }
}

fn risk_of(s: &str) -> Risk {
    match s {
        "read" => Risk::Read,
        "write" => Risk::Write,
        _ => Risk::Shell,
    }
}

crate::lua_options! {
    pub(crate) struct NewOpts as "fen.opts.PolicyNew" for "policy.new" {
        cwd: String => "string", "The workspace.",
        #[serde(default)]
        additional_dirs: Vec<String> => "string[]?", "More directories that count as the workspace.",
        mode: String => "\"safe\"|\"default\"|\"auto\"|\"yolo\"", "The permission mode.",
        #[serde(default)]
        rules: Vec<RuleOpt> => "fen.opts.PolicyRule[]?", "The permission rules, each with where it was written.",
        #[serde(default)]
        tools: Vec<String> => "string[]?", "The active tools.",
        #[serde(default)]
        sandbox: bool => "boolean?", "Shell commands run in the OS sandbox.",
    }
}

crate::lua_options! {
    pub(crate) struct RuleOpt as "fen.opts.PolicyRule" for "policy.new (a rule)" {
        text: String => "string", "`Bash(git *)`, `Read(./.env)`, ...",
        kind: String => "\"allow\"|\"ask\"|\"deny\"", "What the rule decides.",
        file: Option<String> => "string?", "Where the rule was written.",
        line: Option<u32> => "integer?", "Its line in that file.",
    }
}

fn new_fn(lua: &Lua, t: Table) -> mlua::Result<(Value, Value)> {
    let o: NewOpts = super::options(lua, Value::Table(t))?;
    let mode: Mode = o.mode.parse().map_err(mlua::Error::runtime)?;
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let ctx = run(lua);
    let paths = &ctx.paths;
    let config_dir = paths.config_dir.clone();
    let dirs: Vec<PathBuf> = o
        .additional_dirs
        .iter()
        .map(|d| crate::native::fs::expand_path(d))
        .collect();
    let ws = Workspace::new(&PathBuf::from(&o.cwd), &dirs, &home, &config_dir)
        .with_state_dir(&paths.state_dir);
    let mut inputs = Vec::new();
    for r in &o.rules {
        inputs.push(RuleInput {
            text: r.text.clone(),
            kind: kind_of(&r.kind)?,
            source: r.file.as_ref().map(|f| RuleSource {
                file: f.clone(),
                line: r.line.unwrap_or(0),
            }),
        });
    }
    let names: Vec<&str> = o.tools.iter().map(String::as_str).collect();
    match RuleSet::parse(&inputs, Some(&names), &ws) {
        Ok(rules) => {
            let p = Policy {
                workspace: Arc::new(ws),
                rules: Arc::new(Mutex::new(rules)),
                mode,
                sandbox_available: o.sandbox,
            };
            Ok((Value::UserData(lua.create_userdata(p)?), Value::Nil))
        }
        Err(errors) => {
            let list: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            Ok((Value::Nil, lua.to_value(&list)?))
        }
    }
}

impl UserData for Policy {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_async_method(
            "decide",
            |lua, this, (tool, risk, args): (String, String, Value)| async move {
                let json = crate::kernel::convert::lua_to_json(&lua, &args)
                    .map_err(|e| mlua::Error::runtime(format!("policy:decide: {e}")))?;
                let (ws, rules, mode, sandbox) = (
                    this.workspace.clone(),
                    this.rules.clone(),
                    this.mode,
                    this.sandbox_available,
                );
                let risk = risk_of(&risk);
                let run = move || {
                    let rules = rules.lock().unwrap_or_else(|e| e.into_inner());
                    decide(&Request {
                        tool: &tool,
                        risk,
                        args: &json,
                        mode,
                        rules: &rules,
                        workspace: &ws,
                        sandbox_available: sandbox,
                    })
                };
                // Most calls take well under a millisecond; a long command goes to the pool.
                let long = args_len(&args) > 1024;
                let d = if long { blocking(run).await? } else { run() };
                let out = lua.create_table()?;
                out.set("verdict", lua.to_value(&d.verdict)?)?;
                out.set("source", d.source.to_string())?;
                out.set("reason", d.reason.as_str())?;
                out.set("subject", d.subject.as_str())?;
                out.set("parse_error", d.parse_error)?;
                out.set("read_only", d.read_only)?;
                if let Source::Rule { rule, source } = &d.source {
                    // The rule that decided, with where it is written (for the audit).
                    let r = lua.create_table()?;
                    r.set("text", rule.as_str())?;
                    if let Some(src) = source {
                        r.set("file", src.file.as_str())?;
                        r.set("line", src.line)?;
                    }
                    out.set("rule", r)?;
                }
                let items = lua.create_table()?;
                for it in &d.items {
                    let i = lua.create_table()?;
                    i.set("kind", lua.to_value(&it.kind)?)?;
                    i.set("subject", it.subject.as_str())?;
                    i.set("verdict", lua.to_value(&it.verdict)?)?;
                    i.set("source", it.source.to_string())?;
                    i.set("reason", it.reason.as_str())?;
                    items.push(i)?;
                }
                out.set("items", items)?;
                out.set("scope", super::array(&lua, &d.scope)?)?;
                let segs: Vec<String> = d.segments.iter().map(|s| s.text.clone()).collect();
                out.set("segments", super::array(&lua, &segs)?)?;
                Ok(out)
            },
        );
        methods.add_method("add_rule", |_, this, (text, kind): (String, String)| {
            let input = RuleInput {
                text,
                kind: kind_of(&kind)?,
                source: None,
            };
            let mut rules = this.rules.lock().unwrap_or_else(|e| e.into_inner());
            rules
                .add(&input, &this.workspace)
                .map_err(|e| mlua::Error::runtime(e.to_string()))
        });
        methods.add_method_mut("set_mode", |_, this, mode: String| {
            this.mode = mode.parse().map_err(mlua::Error::runtime)?;
            Ok(())
        });
        methods.add_method("mode", |lua, this, ()| lua.to_value(&this.mode));
    }
}

/// Size of the command (or other string arguments) of a call, to choose where to analyse it.
fn args_len(args: &Value) -> usize {
    match args {
        Value::Table(t) => t
            .get::<Option<mlua::LuaString>>("command")
            .ok()
            .flatten()
            .map_or(0, |s| s.as_bytes().len()),
        _ => 0,
    }
}

/// What the settings file `path` says about permissions and the sandbox, each rule with its
/// line: one of the run's settings layers as loaded (at boot or `/reload`), else the file read
/// now (a file outside the three).
fn settings_rules(lua: &Lua, path: &str) -> Result<PermissionSettings, String> {
    let settings = run(lua).settings();
    let layer = match settings.layers.iter().find(|l| l.path == Path::new(path)) {
        Some(l) => l.clone(),
        None => Layer::read(Scope::Local, PathBuf::from(path)),
    };
    match &layer.error {
        Some(e) => Err(e.clone()),
        None => Ok(layer.permissions()),
    }
}

crate::lua_options! {
    pub(crate) struct SandboxInfoOpts as "fen.opts.PolicySandbox" for "policy.sandbox" {
        #[serde(default)]
        lazy: bool => "boolean?", "Answer without the bubblewrap trial when it does not change the answer (the first sandboxed command runs it).",
    }
}

/// The tier info without the bubblewrap trial when the answer to "is there a sandbox" does
/// not depend on it (tier `Auto`: bubblewrap or Landlock, decided by the first sandboxed
/// command). Blocking: reads the recorded trial outcome.
fn lazy_tier() -> sandbox::TierInfo {
    if let Some(info) = sandbox::detect_without_trial() {
        return info.clone();
    }
    if !sandbox::available() {
        return sandbox::detect().clone();
    }
    sandbox::detected()
        .cloned()
        .unwrap_or_else(|| sandbox::TierInfo {
            tier: sandbox::Tier::Auto,
            bwrap: sandbox::find_on_path("bwrap"),
            bwrap_problem: None,
            landlock_abi: sandbox::landlock_abi(),
        })
}

crate::lua_options! {
    pub(crate) struct SandboxOpts as "fen.opts.PolicyUseSandbox" for "policy.use_sandbox" {
        enabled: bool => "boolean", "Run tool shell commands in the OS sandbox.",
        #[serde(default)]
        required: bool => "boolean?", "Refuse commands when no sandbox is available.",
        #[serde(default)]
        network: bool => "boolean?", "Allow network access.",
        #[serde(default)]
        writable_roots: Vec<String> => "string[]?", "More writable directories.",
        workspace: String => "string", "The writable workspace.",
        #[serde(default)]
        unsandboxed: Vec<String> => "string[]?", "Rules of commands run outside the sandbox.",
        #[serde(default)]
        allow_rules: Vec<String> => "string[]?", "Allow rules (`Read(./.env)`): secret files in the workspace they name stay readable to sandboxed commands; every other secret file there is masked.",
        #[serde(default)]
        prestart: bool => "boolean?", "Start the persistent sandbox now, in the background (auto mode), when the machine's tier is known without the bubblewrap trial.",
    }
}

/// `root` as an absolute path (a child `fen` may work elsewhere, so the roots it is handed
/// must not depend on its directory); unresolvable ones (`~/x` without HOME) stay as written.
fn absolute_root(root: &str, workspace: &str) -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    sandbox::policy::resolve(root, Path::new(workspace), home.as_deref())
        .map_or_else(|| root.to_string(), |p| p.display().to_string())
}

fn use_sandbox_fn(lua: &Lua, t: Table) -> mlua::Result<Value> {
    let mut o: SandboxOpts = super::options(lua, Value::Table(t))?;
    let ctx = run(lua);
    // A subagent's `fen` plans its tool commands with its parent's sandbox settings: on (or
    // required) when either says so (never looser than the child's own policy assumes), the
    // parent's network switch, its writable roots and unsandboxed rules added to the child's.
    let mut roots: Vec<String> = o
        .writable_roots
        .iter()
        .map(|r| absolute_root(r, &o.workspace))
        .collect();
    if let Some(parent) = ctx.parent_sandbox() {
        o.enabled |= parent.enabled;
        o.required |= parent.required;
        o.network = parent.network;
        for r in &parent.writable_roots {
            if !roots.contains(r) {
                roots.push(r.clone());
            }
        }
        for r in &parent.unsandboxed {
            if !o.unsandboxed.contains(r) {
                o.unsandboxed.push(r.clone());
            }
        }
    }
    o.writable_roots = roots;
    ctx.set_sandbox_settings(sandbox::SandboxSettings {
        enabled: o.enabled,
        required: o.required,
        network: o.network,
        writable_roots: o.writable_roots.clone(),
        unsandboxed: o.unsandboxed.clone(),
    });
    // The rules that send commands outside the sandbox (replaced as a whole: settings reload).
    let ws = ctx.session_workspace();
    let set = Unsandboxed::new(ws.clone());
    let mut problems = Vec::new();
    for r in &o.unsandboxed {
        if let Err(e) = set.add(r) {
            problems.push(format!("sandbox.unsandboxed: {e}"));
        }
    }
    ctx.set_unsandboxed(set);
    let problems = lua.to_value(&problems)?;
    if !o.enabled {
        ctx.set_tool_sandbox(None);
        return Ok(problems);
    }
    let mut inputs = sandbox::inputs_from_env(PathBuf::from(&o.workspace));
    inputs.network = o.network;
    inputs.writable_roots.extend(o.writable_roots);
    // Secret files in the workspace are masked unless a rule lets them be read.
    let mut readable = RuleSet::default();
    for r in &o.allow_rules {
        let input = RuleInput {
            text: r.clone(),
            kind: RuleKind::Allow,
            source: None,
        };
        let _ = readable.add(&input, &ws);
    }
    for secret in crate::native::policy::secrets::in_tree_cached(Path::new(&o.workspace)) {
        if !readable.allows_read(&secret) {
            inputs.hidden.push(secret.display().to_string());
        }
    }
    let policy = sandbox::SandboxPolicy::build(&inputs);
    let sb = sandbox::Sandbox::detected(policy, o.required);
    if o.prestart {
        sandbox::prestart(&sb, Path::new(&o.workspace));
    }
    ctx.set_tool_sandbox(Some(sb));
    Ok(problems)
}
