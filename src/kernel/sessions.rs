//! Which session the agent appends to, through the active session backend (a Lua extension):
//! open a new one, continue the latest, resume a chosen one, fork a copy, switch mid-run
//! (`/new`, `/resume`), close. History is loaded into the agent's conversation.

use super::agent::{Agent, Persistence};
use super::error::KernelError;
use super::state::Inner;
use mlua::{Function, Lua, Table, Value};

/// What to open.
#[derive(Debug, Clone)]
pub enum Target {
    /// A new, empty session.
    New,
    /// The newest session of the working directory (a new one when there is none).
    Latest,
    /// By path, id or id prefix.
    Find(String),
}

fn lua_err(e: mlua::Error) -> KernelError {
    KernelError::from(e)
}

/// The chosen session backend (`--session-backend`, `jsonl` by default).
pub fn backend(inner: &Inner) -> Result<Table, KernelError> {
    let name = inner.session_backend.borrow().clone();
    let registry = inner.registry.borrow();
    if let Some(c) = registry.get("session-backend", &name) {
        return Ok(c.spec.clone());
    }
    let known: Vec<String> = registry
        .active("session-backend")
        .iter()
        .filter_map(|c| c.name.clone())
        .collect();
    Err(KernelError::NoSessionBackend {
        name,
        loaded: if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        },
    })
}

/// Opens `target` for the agent and loads its history. With `fork`, the history goes into a
/// new session instead (the original is left as it is, and its lease is not needed).
pub async fn open(
    lua: &Lua,
    inner: &Inner,
    agent: &Agent,
    target: Target,
    fork: bool,
) -> Result<(), KernelError> {
    let backend = backend(inner)?;
    let call = |name: &str| backend.get::<Function>(name).map_err(lua_err);
    let opts = lua.create_table().map_err(lua_err)?;
    opts.set("cwd", agent.config.cwd.to_string_lossy().as_ref())
        .map_err(lua_err)?;
    // A backend's `find` may answer with a `branch` of a session (opaque here): `load` gets it.
    let mut branch = Value::Nil;
    let path: Option<String> = match &target {
        Target::New => None,
        Target::Latest => match call("latest")?
            .call_async::<Option<Table>>(opts.clone())
            .await
            .map_err(lua_err)?
        {
            Some(info) => Some(info.get::<String>("path").map_err(lua_err)?),
            None => {
                eprintln!("fen: no earlier session in this directory; starting a new one");
                None
            }
        },
        Target::Find(query) if std::path::Path::new(query).is_file() => Some(query.clone()),
        Target::Find(query) => {
            opts.set("query", query.as_str()).map_err(lua_err)?;
            let found: Vec<Table> = call("find")?
                .call_async::<Vec<Table>>(opts.clone())
                .await
                .map_err(lua_err)?;
            match found.len() {
                0 => return Err(KernelError::NoSessionMatches(query.clone())),
                1 => {
                    branch = found[0].get::<Value>("branch").map_err(lua_err)?;
                    Some(found[0].get::<String>("path").map_err(lua_err)?)
                }
                n => {
                    return Err(KernelError::AmbiguousSession {
                        query: query.clone(),
                        count: n,
                    })
                }
            }
        }
    };
    let session: Value = match &path {
        Some(p) if !fork => call("open_existing")?
            .call_async::<Value>((p.as_str(), opts.clone()))
            .await
            .map_err(lua_err)?,
        _ => call("open")?
            .call_async::<Value>(opts.clone())
            .await
            .map_err(lua_err)?,
    };
    if let Some(p) = &path {
        let load_opts = lua.create_table().map_err(lua_err)?;
        if !fork {
            load_opts.set("session", session.clone()).map_err(lua_err)?;
        }
        load_opts.set("branch", branch).map_err(lua_err)?;
        let messages: Table = call("load")?
            .call_async::<Table>((p.as_str(), load_opts))
            .await
            .map_err(lua_err)?;
        let append = call("append")?;
        for m in messages.sequence_values::<Table>() {
            let m = m.map_err(lua_err)?;
            if fork {
                append
                    .call::<()>((session.clone(), m.clone()))
                    .map_err(lua_err)?;
            }
            agent.messages.push(m).map_err(lua_err)?;
        }
    }
    *agent.persistence.borrow_mut() = Some(Persistence { backend, session });
    Ok(())
}

/// Syncs and closes the agent's session (releases its lease).
pub async fn close(agent: &Agent) {
    super::agent::sync_session(agent).await;
    let persistence = agent.persistence.borrow_mut().take();
    if let Some(p) = persistence {
        if let Ok(close) = p.backend.get::<Function>("close") {
            let _ = close.call_async::<()>(p.session).await;
        }
    }
}

/// Closes the current session, clears the conversation and opens `target` (`/new`, `/resume`).
pub async fn switch(
    lua: &Lua,
    inner: &Inner,
    agent: &Agent,
    target: Target,
) -> Result<(), KernelError> {
    if agent.is_busy() {
        return Err(KernelError::AgentBusy);
    }
    let had_session = agent.persistence.borrow().is_some();
    close(agent).await;
    agent.messages.clear().map_err(lua_err)?;
    if had_session || !matches!(target, Target::New) {
        open(lua, inner, agent, target, false).await?;
    }
    Ok(())
}
