//! `native.mcp`: the MCP client ([`crate::native::mcp`]) for the `mcp` companion. One set of
//! servers per process; connections run as background tasks, so nothing here holds the Lua
//! thread: `wait` and `call` are async and observe the running call's cancellation.

use crate::native::mcp::{self, config, Part, ServerInfo};
use mlua::{Function, Lua, LuaSerdeExt, Table, Value};

fn server_table(lua: &Lua, s: &ServerInfo, with_tools: bool) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("name", s.name.as_str())?;
    t.set("status", s.status.as_str())?;
    t.set("error", s.error.clone())?;
    t.set("transport", s.transport)?;
    t.set("log", s.log.to_string_lossy().as_ref())?;
    t.set("source", s.source.to_string_lossy().as_ref())?;
    t.set("project", s.project)?;
    t.set("epoch", s.epoch)?;
    t.set("tool_timeout_ms", s.tool_timeout.as_millis() as u64)?;
    t.set("startup_timeout_ms", s.startup_timeout.as_millis() as u64)?;
    t.set("tool_count", s.tools.len())?;
    // What the schemas weigh (name + description + schema JSON), for the search threshold.
    let bytes: usize = s
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
        .sum();
    t.set("schema_bytes", bytes)?;
    if !with_tools {
        return Ok(t);
    }
    let tools = lua.create_table()?;
    for tool in &s.tools {
        let x = lua.create_table()?;
        x.set("name", tool.name.as_str())?;
        x.set("mcp_name", tool.mcp_name.as_str())?;
        x.set("description", tool.description.as_str())?;
        x.set(
            "parameters",
            crate::kernel::convert::json_to_lua(lua, &tool.input_schema)?,
        )?;
        x.set("schema_json", tool.input_schema.to_string())?;
        x.set("read_only", tool.read_only)?;
        tools.push(x)?;
    }
    t.set("tools", tools)?;
    Ok(t)
}

/// One server as an ACP client gives it: `{name, command, args?, env? = {NAME = value}}`
/// (stdio) or `{name, url, headers? = {Name = value}}` (HTTP).
fn client_server(t: &Table) -> Result<config::ServerConfig, String> {
    let name: String = t
        .get::<Option<String>>("name")
        .ok()
        .flatten()
        .filter(|n| !n.is_empty())
        .ok_or("an MCP server needs a name")?;
    let map = |key: &str| -> Result<std::collections::BTreeMap<String, String>, String> {
        match t.get::<Option<Table>>(key) {
            Ok(Some(m)) => m
                .pairs::<String, String>()
                .collect::<mlua::Result<_>>()
                .map_err(|e| format!("server '{name}': {key}: {e}")),
            Ok(None) => Ok(Default::default()),
            Err(e) => Err(format!("server '{name}': {key}: {e}")),
        }
    };
    let transport = if let Ok(Some(command)) = t.get::<Option<String>>("command") {
        config::Transport::Stdio {
            command,
            args: t
                .get::<Option<Vec<String>>>("args")
                .map_err(|e| format!("server '{name}': args: {e}"))?
                .unwrap_or_default(),
            env: map("env")?,
            cwd: None,
        }
    } else if let Ok(Some(url)) = t.get::<Option<String>>("url") {
        config::Transport::Http {
            url,
            headers: map("headers")?,
        }
    } else {
        return Err(format!(
            "server '{name}' needs a command (stdio) or a url (http)"
        ));
    };
    Ok(config::ServerConfig {
        name,
        transport,
        enabled: true,
        startup_timeout: std::time::Duration::from_millis(config::DEFAULT_STARTUP_TIMEOUT_MS),
        tool_timeout: std::time::Duration::from_millis(config::DEFAULT_TOOL_TIMEOUT_MS),
        enabled_tools: None,
        disabled_tools: Vec::new(),
        source: std::path::PathBuf::from("(the ACP client)"),
        project: false,
        oauth: None,
    })
}

crate::lua_options! {
    pub(crate) struct ConfigureOpts as "fen.opts.McpConfigure" for "mcp.configure" {
        trusted: Option<bool> => "boolean?", "The project's settings count.",
    }
}

crate::lua_options! {
    pub(crate) struct ServersOpts as "fen.opts.McpServers" for "mcp.servers" {
        tools: Option<bool> => "boolean?", "`false` leaves the tool lists out (the cheap poll).",
        name: Option<String> => "string?", "That server only.",
    }
}

/// `configure{trusted}` -> `{servers = {name...}, errors = {msg...}, untrusted = {{name, file}}}`
/// reads the config files (see [`config::files`]) and sets the servers (starting none);
/// `start(name?)` starts one (or every enabled idle one) in the background -> bool;
/// `reconnect(name)` -> true | nil, message; `wait(names?)` *async* until none of them is
/// connecting; `servers{tools?, name?}` -> [{name, status, error?, transport, log, source,
/// project, epoch, tool_timeout_ms, startup_timeout_ms, tool_count, schema_bytes, tools = [{name,
/// mcp_name, description, parameters, schema_json, read_only}]}] (`tools = false` leaves the
/// tool list out: the cheap poll; `name` only that server); `server_for_tool(fen_name)` -> name | nil;
/// `call(server, tool, args)` *async* -> `{is_error, content}` | nil, message;
/// `watch(fn)` calls `fn()` after every change of any server until `fn` returns false.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "configure",
        lua.create_function(|lua, opts: Value| {
            let trusted = super::options::<ConfigureOpts>(lua, opts)?
                .trusted
                .unwrap_or(false);
            let ctx = crate::host::run::run(lua);
            let paths = &ctx.paths;
            let files = config::files(&paths.config_dir, &ctx.cwd, &ctx.project_root);
            let loaded = config::load(&files, trusted, &|k| std::env::var(k).ok());
            let mut servers = loaded.servers;
            // Servers a client added (`add`) stay across a re-read of the files.
            for extra in ctx.mcp_added.borrow().iter() {
                servers.retain(|s| s.name != extra.name);
                servers.push(extra.clone());
            }
            let names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
            // A stdio server's environment is what `sandbox::plan` decides from these.
            mcp::global().configure(servers, paths.state_dir.join("mcp"), ctx.plan_inputs());
            let out = lua.create_table()?;
            out.set("servers", lua.to_value(&names)?)?;
            let errors: Vec<String> = loaded.errors.iter().map(|e| e.to_string()).collect();
            out.set("errors", super::array(lua, &errors)?)?;
            out.set("untrusted", super::untrusted_list(lua, &loaded.untrusted)?)?;
            Ok(out)
        })?,
    )?;
    m.set(
        "add",
        lua.create_function(|lua, list: Table| {
            let mut configs = Vec::new();
            for item in list.sequence_values::<Table>() {
                match client_server(&item?) {
                    Ok(c) => configs.push(c),
                    Err(msg) => return Ok((Value::Nil, Value::String(lua.create_string(msg)?))),
                }
            }
            let ctx = crate::host::run::run(lua);
            let mut added = ctx.mcp_added.borrow_mut();
            for c in &configs {
                added.retain(|s| s.name != c.name);
                added.push(c.clone());
            }
            drop(added);
            let names: Vec<String> = configs.iter().map(|c| c.name.clone()).collect();
            // Added before any `configure`: their environment is planned all the same.
            mcp::global().set_plan_inputs(ctx.plan_inputs());
            mcp::global().add(configs);
            Ok((lua.to_value(&names)?, Value::Nil))
        })?,
    )?;
    m.set(
        "start",
        lua.create_function(|_, name: Option<String>| {
            Ok(match name {
                Some(n) => mcp::global().start(&n),
                None => {
                    mcp::global().start_all();
                    true
                }
            })
        })?,
    )?;
    m.set(
        "reconnect",
        lua.create_function(|lua, name: String| {
            if mcp::global().reconnect(&name) {
                Ok((Value::Boolean(true), Value::Nil))
            } else {
                super::failure(lua, format!("no MCP server named '{name}' is configured"))
            }
        })?,
    )?;
    m.set(
        "wait",
        lua.create_async_function(|lua, names: Option<Vec<String>>| async move {
            let cancel = super::cancel_token(&lua);
            tokio::select! {
                _ = mcp::global().wait(names.as_deref()) => {}
                _ = cancel.cancelled() => {}
            }
            Ok(())
        })?,
    )?;
    m.set(
        "servers",
        lua.create_function(|lua, opts: Value| {
            let o: ServersOpts = super::options(lua, opts)?;
            let (with_tools, only) = (o.tools.unwrap_or(true), o.name);
            let t = lua.create_table()?;
            for s in mcp::global().servers() {
                if only.as_ref().is_some_and(|n| *n != s.name) {
                    continue;
                }
                t.push(server_table(lua, &s, with_tools)?)?;
            }
            Ok(t)
        })?,
    )?;
    m.set(
        "server_for_tool",
        lua.create_function(|_, name: String| Ok(mcp::global().server_for_tool(&name)))?,
    )?;
    m.set(
        "call",
        lua.create_async_function(
            |lua, (server, tool, args): (String, String, Value)| async move {
                let args = match crate::kernel::convert::lua_to_json(&lua, &args) {
                    Ok(serde_json::Value::Object(m)) => m,
                    Ok(serde_json::Value::Null | serde_json::Value::Array(_)) => Default::default(),
                    Ok(other) => {
                        return super::failure(
                            &lua,
                            format!("arguments must be an object, got {other}"),
                        )
                    }
                    Err(e) => return super::failure(&lua, format!("bad arguments: {e}")),
                };
                let cancel = super::cancel_token(&lua);
                match mcp::global().call(&server, &tool, args, cancel).await {
                    Ok(o) => {
                        let t = lua.create_table()?;
                        t.set("is_error", o.is_error)?;
                        let content = lua.create_table()?;
                        for p in o.content {
                            let b = lua.create_table()?;
                            match p {
                                Part::Text(text) => {
                                    b.set("type", "text")?;
                                    b.set("text", text)?;
                                }
                                Part::Image { data, mime_type } => {
                                    b.set("type", "image")?;
                                    b.set("data", data)?;
                                    b.set("mime_type", mime_type)?;
                                }
                            }
                            content.push(b)?;
                        }
                        t.set("content", content)?;
                        super::success(t)
                    }
                    Err(e) => super::failure(&lua, e.to_string()),
                }
            },
        )?,
    )?;
    m.set(
        "watch",
        lua.create_function(|_, f: Function| {
            let mut rx = mcp::global().subscribe();
            tokio::task::spawn_local(async move {
                while rx.changed().await.is_ok() {
                    // The callback reports its own failures (it runs detached from any call).
                    // Async: the callback may wait (`api.ui.notify` goes to the presenter).
                    match f.call_async::<Value>(()).await {
                        Ok(Value::Boolean(false)) => break,
                        _ => continue,
                    }
                }
            });
            Ok(())
        })?,
    )?;
    Ok(m)
}
