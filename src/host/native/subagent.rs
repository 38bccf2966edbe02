//! `native.subagent`: child `fen` runs for the subagent companion ([`crate::native::subagent`]).
//!
//! A foreground run is bound to the call that started it: cancelling that call (the turn)
//! kills the child's process group from Rust, whatever the Lua side is doing. A run's
//! permission asks are answered by a task of its own that calls `on_ask(request)` and writes
//! the answer to the child's stdin; `on_exit(info)` is called once when the run finished.

use crate::kernel::calls::{self, Scope};
use crate::kernel::convert;
use crate::native::sandbox::Child;
use crate::native::subagent::{self as sa, RunInfo, RunSpec};
use mlua::{Function, Lua, Table, Value};
use std::time::Duration;

/// Longest single `wait`.
const MAX_WAIT: Duration = Duration::from_secs(24 * 3600);

fn info_table(lua: &Lua, info: &RunInfo) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("id", info.id.as_str())?;
    t.set("pid", info.pid)?;
    t.set("label", info.label.as_str())?;
    t.set("background", info.background)?;
    super::set_child_status(&t, info.status)?;
    t.set("finished", info.finished)?;
    t.set("killed", info.killed)?;
    t.set("turns", info.turns)?;
    if let Some(r) = &info.result {
        t.set("result", convert::json_to_lua(lua, r)?)?;
    }
    t.set("bad_lines", info.bad_lines)?;
    t.set("tail", info.tail.as_str())?;
    t.set(
        "transcript",
        info.transcript
            .as_ref()
            .map(|p| p.to_string_lossy().into_owned()),
    )?;
    t.set("elapsed_ms", info.elapsed.as_millis() as u64)?;
    Ok(t)
}

crate::lua_options! {
    pub(crate) struct StartOptions as "fen.opts.SubagentStart" for "subagent.start" {
        args: Vec<String> => "string[]", "fen's arguments for the child.",
        cwd: Option<String> => "string?", "The child's working directory.",
        label: String => "string", "Shown in listings.",
        #[serde(default)]
        background: bool => "boolean?", "Keep running after the starting call returns.",
        transcript: Option<String> => "string?", "A file the child's JSON lines are copied to.",
        #[serde(default)]
        keep_env: Vec<String> => "string[]?", "Hidden variables this child may see after all (the provider's key).",
        #[serde(default)]
        env: std::collections::BTreeMap<String, String> => "table<string, string>?", "Variables added to the child's environment.",
    }
}

crate::lua_options! {
    pub(crate) struct Handlers as "fen.opts.SubagentHandlers" for "subagent.start (handlers)" {
        #[allow(dead_code)] // checked here, read from the table
        on_ask: Option<crate::host::options::LuaFunction> => "(fun(request: table): string?)?", "Answers the child's questions (may wait).",
        #[allow(dead_code)] // checked here, read from the table
        on_exit: Option<crate::host::options::LuaFunction> => "(fun(info: fen.SubagentInfo))?", "Called once the child exited.",
    }
}

crate::lua_options! {
    pub(crate) struct WaitOpts as "fen.opts.SubagentWait" for "subagent.wait" {
        wait_ms: Option<u64> => "integer?", "Wait this long at most (default 0).",
    }
}

/// Pumps the run's asks to `on_ask` and reports its end to `on_exit` (a detached task).
fn pump(lua: Lua, id: String, on_ask: Option<Function>, on_exit: Option<Function>) {
    tokio::task::spawn_local(async move {
        loop {
            match sa::next(&id, Duration::from_secs(3600)).await {
                Err(_) => return,
                Ok(None) => continue,
                Ok(Some(sa::RunEvent::Ask(ask))) => {
                    let answer = match &on_ask {
                        Some(f) => {
                            let req = match convert::json_to_lua(&lua, &ask["request"]) {
                                Ok(v) => v,
                                Err(_) => Value::Nil,
                            };
                            let scope = Scope::new(
                                tokio_util::sync::CancellationToken::new(),
                                None,
                                "a subagent's permission ask",
                            );
                            let call = calls::call_async::<Value>(&lua, f, req, scope);
                            // The child may end (killed, cancelled) while the person decides.
                            tokio::select! {
                                v = call => v.ok().and_then(|v| convert::lua_to_json(&lua, &v).ok()),
                                _ = sa::wait(&id, MAX_WAIT) => return report_exit(&lua, &id, on_exit.as_ref()),
                            }
                        }
                        None => None,
                    };
                    let answer = answer.unwrap_or_else(|| serde_json::json!("n"));
                    let line = serde_json::json!({
                        "type": "subagent-answer", "id": ask["id"].clone(), "answer": answer,
                    });
                    let _ = sa::answer(&id, &line).await;
                }
                Ok(Some(sa::RunEvent::Finished(_))) => {
                    return report_exit(&lua, &id, on_exit.as_ref());
                }
            }
        }
    });
}

fn report_exit(lua: &Lua, id: &str, on_exit: Option<&Function>) {
    let (Some(f), Ok(info)) = (on_exit, sa::info(id)) else {
        return;
    };
    // The callback reports its own failures (it runs detached from any call).
    if let Ok(t) = info_table(lua, &info) {
        let _ = f.call::<Value>(t);
    }
}

/// `start(opts, handlers?)` *async* -> info | nil, message. `opts = {args, cwd?, label,
/// background?, transcript?, keep_env?, env?}`; `handlers = {on_ask = fn(request) -> answer
/// (async), on_exit = fn(info)}`. `wait(id, {wait_ms})` *async* -> info (never kills; a
/// cancelled call returns once its foreground child is gone, with `cancelled = true`);
/// `kill(id)` *async* -> info | nil, message; `list()` -> [info]; `info(id)` -> info | nil,
/// message; `running()` -> n; `max_running`. `start`'s info also has `plan`: why the child
/// runs where it runs (`sandbox::plan`). info = `{id, pid, label, background, status,
/// running, finished, exit_code?, signal?, killed, turns, result?, bad_lines, tail,
/// transcript?, elapsed_ms}`.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("max_running", sa::MAX_RUNNING)?;
    m.set(
        "start",
        lua.create_async_function(|lua, (opts, handlers): (Table, Option<Table>)| async move {
            let o: StartOptions = super::options(&lua, Value::Table(opts))?;
            if let Some(h) = &handlers {
                super::options::<Handlers>(&lua, Value::Table(h.clone()))?;
            }
            // The child fen runs outside the sandbox and plans its own tool commands with the
            // parent's sandbox settings and without its hidden variables (`sandbox::plan`).
            let plan = crate::host::run::run(&lua)
                .plan(Child::Subagent {
                    keep_env: &o.keep_env,
                })
                .await?;
            let program = std::env::current_exe()
                .map_err(|e| mlua::Error::runtime(format!("cannot find fen's executable: {e}")))?;
            let mut env: Vec<(String, String)> = o.env.into_iter().collect();
            env.extend(plan.env);
            let spec = RunSpec {
                program,
                args: o.args,
                cwd: o.cwd.map(|c| super::expand_path(&c)),
                env,
                env_remove: plan.env_remove,
                transcript: o.transcript.map(Into::into),
                label: o.label,
                background: o.background,
            };
            let background = spec.background;
            let info = match sa::start(spec).await {
                Ok(info) => info,
                Err(e) => return super::failure(&lua, e.to_string()),
            };
            let (on_ask, on_exit) = match &handlers {
                Some(h) => (
                    h.get::<Option<Function>>("on_ask")?,
                    h.get::<Option<Function>>("on_exit")?,
                ),
                None => (None, None),
            };
            pump(lua.clone(), info.id.clone(), on_ask, on_exit);
            if !background {
                // Cancelling the call that started a foreground run ends the child's group.
                let cancel = super::cancel_token(&lua);
                let id = info.id.clone();
                tokio::task::spawn_local(async move {
                    tokio::select! {
                        _ = cancel.cancelled() => { let _ = sa::kill(&id, sa::KILL_GRACE).await; }
                        _ = sa::wait(&id, MAX_WAIT) => {}
                    }
                });
            }
            let t = info_table(&lua, &info)?;
            t.set("plan", plan.reason)?;
            super::success(t)
        })?,
    )?;
    m.set(
        "wait",
        lua.create_async_function(|lua, (id, opts): (String, Value)| async move {
            let wait_ms = super::options::<WaitOpts>(&lua, opts)?.wait_ms.unwrap_or(0);
            let cancel = super::cancel_token(&lua);
            let wait = Duration::from_millis(wait_ms).min(MAX_WAIT);
            let (r, cancelled) = tokio::select! {
                r = sa::wait(&id, wait) => (r, false),
                _ = cancel.cancelled() => {
                    // A foreground child is being killed by its guard: report it gone.
                    let bg = sa::info(&id).map(|i| i.background).unwrap_or(true);
                    let grace = if bg { Duration::ZERO } else { sa::KILL_GRACE + Duration::from_secs(1) };
                    (sa::wait(&id, grace).await, true)
                }
            };
            match r {
                Ok(info) => {
                    let t = info_table(&lua, &info)?;
                    t.set("cancelled", cancelled)?;
                    super::success(t)
                }
                Err(e) => super::failure(&lua, e.to_string()),
            }
        })?,
    )?;
    m.set(
        "kill",
        lua.create_async_function(|lua, id: String| async move {
            match sa::kill(&id, sa::KILL_GRACE).await {
                Ok(info) => super::success(info_table(&lua, &info)?),
                Err(e) => super::failure(&lua, e.to_string()),
            }
        })?,
    )?;
    m.set(
        "list",
        lua.create_function(|lua, ()| {
            let t = lua.create_table()?;
            for (i, info) in sa::list().iter().enumerate() {
                t.raw_set(i + 1, info_table(lua, info)?)?;
            }
            Ok(t)
        })?,
    )?;
    m.set(
        "info",
        lua.create_function(|lua, id: String| match sa::info(&id) {
            Ok(info) => super::success(info_table(lua, &info)?),
            Err(e) => super::failure(lua, e.to_string()),
        })?,
    )?;
    m.set("running", lua.create_function(|_, ()| Ok(sa::running()))?)?;
    Ok(m)
}
