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
//! - `policy.sandbox()` (async) -> `{tier, status, description}` of this machine.
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
use crate::native::policy::{
    decide, Decision, Mode, Request, Risk, RuleInput, RuleKind, RuleSet, RuleSource, Source,
    Verdict, Workspace,
};
use crate::native::sandbox;
use mlua::{Lua, LuaSerdeExt, Table, UserData, UserDataMethods, Value};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("new", lua.create_function(new_fn)?)?;
    m.set(
        "settings_rules",
        lua.create_function(|lua, path: String| match settings_rules(&path) {
            Ok(v) => Ok((lua.to_value(&v)?, Value::Nil)),
            Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e)?))),
        })?,
    )?;
    m.set(
        "sandbox",
        lua.create_async_function(|lua, ()| async move {
            // The first detection runs a trial bwrap: not on the Lua thread.
            let info = blocking(sandbox::detect).await?;
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
            let ws = Arc::new(session_workspace());
            let rules = Arc::new(Mutex::new(RuleSet::default()));
            let d = blocking(move || shell_decision(&command, &rules, &ws)).await?;
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
            let (ws, rules) = unsandboxed(lua);
            let mut rules = rules.lock().unwrap_or_else(|e| e.into_inner());
            let input = RuleInput {
                text: rule,
                kind: RuleKind::Allow,
                source: None,
            };
            match rules.add(&input, &ws) {
                Ok(()) => Ok((Value::Boolean(true), Value::Nil)),
                Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e.to_string())?))),
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
            let path = crate::kernel::settings::Paths::from_env()
                .state_dir
                .join("permissions.jsonl");
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
    let paths = crate::kernel::settings::Paths::from_env();
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

/// What `settings.json` says about permissions and the sandbox, each rule with its line.
#[derive(serde::Serialize, Default)]
struct SettingsRules {
    mode: Option<String>,
    allow: Vec<RuleLine>,
    ask: Vec<RuleLine>,
    deny: Vec<RuleLine>,
    additional_dirs: Vec<String>,
    sandbox: serde_json::Value,
}

#[derive(serde::Serialize)]
struct RuleLine {
    text: String,
    line: u32,
}

fn settings_rules(path: &str) -> Result<SettingsRules, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(SettingsRules::default()),
        Err(e) => return Err(format!("cannot read {path}: {e}")),
    };
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{path}:{}:{}: not valid JSON: {e}", e.line(), e.column()))?;
    let perms = v.get("permissions").cloned().unwrap_or_default();
    let list = |key: &str| -> Vec<RuleLine> {
        perms
            .get(key)
            .and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|r| r.as_str())
                    .map(|r| RuleLine {
                        text: r.to_string(),
                        line: line_of(&text, r),
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(SettingsRules {
        mode: perms
            .get("mode")
            .and_then(|m| m.as_str())
            .map(str::to_string),
        allow: list("allow"),
        ask: list("ask"),
        deny: list("deny"),
        additional_dirs: perms
            .get("additional_dirs")
            .or_else(|| perms.get("additionalDirectories"))
            .and_then(|a| a.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        sandbox: v.get("sandbox").cloned().unwrap_or_default(),
    })
}

/// The line (1-based) where a rule's JSON string first appears in the file.
fn line_of(text: &str, rule: &str) -> u32 {
    let needle = serde_json::to_string(rule).unwrap_or_default();
    text.find(&needle)
        .map(|at| text[..at].matches('\n').count() as u32 + 1)
        .unwrap_or(0)
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
    }
}

/// The sandbox tool commands run in (app data of the state; `process.run` reads it).
#[derive(Clone)]
pub struct ToolSandbox(pub Option<sandbox::Sandbox>);

/// Rules whose commands run outside the sandbox ("always" answers to an escalation and
/// `sandbox.unsandboxed` in settings), with the workspace they are resolved against.
pub struct Unsandboxed {
    workspace: Arc<Workspace>,
    rules: Arc<Mutex<RuleSet>>,
}

/// The session's workspace as the permission analyser sees it (fen's working directory).
fn session_workspace() -> Workspace {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"));
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let paths = crate::kernel::settings::Paths::from_env();
    Workspace::new(&cwd, &[], &home, &paths.config_dir).with_state_dir(&paths.state_dir)
}

/// The unsandboxed rules of this state (created empty on first use).
fn unsandboxed(lua: &Lua) -> (Arc<Workspace>, Arc<Mutex<RuleSet>>) {
    if let Some(u) = lua.app_data_ref::<Unsandboxed>() {
        return (u.workspace.clone(), u.rules.clone());
    }
    let (ws, rules) = (
        Arc::new(session_workspace()),
        Arc::new(Mutex::new(RuleSet::default())),
    );
    lua.set_app_data(Unsandboxed {
        workspace: ws.clone(),
        rules: rules.clone(),
    });
    (ws, rules)
}

/// How the analyser judges `command` as a bash call in default mode with `rules` only.
fn shell_decision(command: &str, rules: &Mutex<RuleSet>, ws: &Workspace) -> Decision {
    let rules = rules.lock().unwrap_or_else(|e| e.into_inner());
    decide(&Request {
        tool: "bash",
        risk: Risk::Shell,
        args: &serde_json::json!({ "command": command }),
        mode: Mode::Default,
        rules: &rules,
        workspace: ws,
        sandbox_available: false,
    })
}

/// The `sandbox.unsandboxed` rule that lets `command` run outside the sandbox, if one does:
/// every segment that is not read-only must be allowed by such a rule (so `cargo test; rm -rf
/// x` is not covered by `Bash(cargo test *)`), and at least one rule must have matched (a
/// read-only command alone never leaves the sandbox). Long commands are analysed off the Lua
/// thread.
pub async fn unsandboxed_rule(lua: &Lua, command: &str) -> mlua::Result<Option<String>> {
    let (ws, rules) = {
        let Some(u) = lua.app_data_ref::<Unsandboxed>() else {
            return Ok(None);
        };
        let rules = u.rules.lock().unwrap_or_else(|e| e.into_inner());
        if rules.of_kind(RuleKind::Allow).next().is_none() {
            return Ok(None);
        }
        drop(rules);
        (u.workspace.clone(), u.rules.clone())
    };
    let long = command.len() > 1024;
    let command = command.to_string();
    let judge = move || {
        let d = shell_decision(&command, &rules, &ws);
        if d.verdict != Verdict::Allow {
            return None;
        }
        d.items.iter().find_map(|i| match &i.source {
            Source::Rule { rule, .. } => Some(rule.clone()),
            _ => None,
        })
    };
    if long {
        blocking(judge).await
    } else {
        Ok(judge())
    }
}

fn use_sandbox_fn(lua: &Lua, t: Table) -> mlua::Result<Value> {
    let o: SandboxOpts = super::options(lua, Value::Table(t))?;
    // The rules that send commands outside the sandbox (replaced as a whole: settings reload).
    let ws = Arc::new(session_workspace());
    let mut set = RuleSet::default();
    let mut problems = Vec::new();
    for r in &o.unsandboxed {
        let input = RuleInput {
            text: r.clone(),
            kind: RuleKind::Allow,
            source: None,
        };
        if let Err(e) = set.add(&input, &ws) {
            problems.push(format!("sandbox.unsandboxed: {e}"));
        }
    }
    lua.set_app_data(Unsandboxed {
        workspace: ws.clone(),
        rules: Arc::new(Mutex::new(set)),
    });
    let problems = lua.to_value(&problems)?;
    if !o.enabled {
        lua.set_app_data(ToolSandbox(None));
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
    lua.set_app_data(ToolSandbox(Some(sandbox::Sandbox::detected(
        policy, o.required,
    ))));
    Ok(problems)
}
