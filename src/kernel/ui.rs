//! Questions for the person at the terminal, answered by the active presenter.
//!
//! `api.ui.notify/select/prompt` and a hook's `ctx.ask` all come here. The active presenter's
//! spec may provide async functions of the same names (`notify(text)`, `select(title, items)`,
//! `prompt(question, default)`, `ask(request)`); the calling coroutine waits for the answer.
//! A presenter without one (print, json: headless runs never wait for a person) answers at
//! once with `nil, "no user"`. Cancelling the caller's scope answers `nil, "cancelled"`.
//! Hooks take part: `on_wait` runs beside every question (and once a session idles after a
//! turn), and `before_ask` may answer an approval in the person's place.

use super::calls::{self, Scope};
use super::state::Inner;
use mlua::{Function, IntoLuaMulti, Lua, MultiValue, Table, Value};
use std::rc::Rc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Calls the active presenter's `name` function with `args`; see the module docs.
pub async fn call_presenter(
    lua: &Lua,
    inner: &Inner,
    name: &str,
    args: impl IntoLuaMulti,
) -> mlua::Result<MultiValue> {
    let presenter = inner.presenter.borrow().clone();
    let f: Option<Function> = presenter.and_then(|p| {
        inner
            .registry
            .borrow()
            .get("presenter", &p)
            .and_then(|c| c.spec.get::<Option<Function>>(name).ok().flatten())
    });
    let Some(f) = f else {
        return (Value::Nil, "no user").into_lua_multi(lua);
    };
    let cancel = calls::current_cancel(lua);
    let args = args.into_lua_multi(lua)?;
    let scope = Scope::new(cancel.clone(), None, &format!("the presenter's {name}"));
    // Someone now waits for the person: the `on_wait` hooks (the settings hooks' Notification
    // event) run beside the question and are stopped once it is answered.
    let hooks: Vec<(String, Function)> = if name == "notify" {
        Vec::new()
    } else {
        inner.registry.borrow().hook_functions("on_wait")
    };
    let hook_cancel = cancel.child_token();
    let waiting = async {
        if hooks.is_empty() {
            return;
        }
        let Ok(ctx) = lua.create_table() else { return };
        let _ = ctx.set("kind", name);
        let _ = ctx.set("request", args.front().cloned().unwrap_or(Value::Nil));
        let runs = hooks.iter().map(|(owner, h)| {
            let scope = Scope::new(
                hook_cancel.clone(),
                None,
                &format!("the on_wait hook of {owner}"),
            );
            calls::call_async_cancellable::<()>(lua, h, ctx.clone(), scope)
        });
        // A failing or stopped notification changes nothing about the question.
        let _ = futures_util::future::join_all(runs).await;
    };
    let asking = async {
        let r = calls::call_async_cancellable::<MultiValue>(lua, &f, args.clone(), scope).await;
        hook_cancel.cancel();
        r
    };
    let (answer, ()) = futures_util::future::join(asking, waiting).await;
    match answer {
        Ok(v) => Ok(v),
        Err(_) if cancel.is_cancelled() => (Value::Nil, "cancelled").into_lua_multi(lua),
        Err(e) => Err(e),
    }
}

/// An approval question (a hook's `ctx.ask`, `api.ui.ask`): a `before_ask` hook may answer it
/// in the person's place (then `answer, "hook"`), else the active presenter asks. `about`
/// tells the hooks what is asked about (`tool`, `args`, `call_id`); `request` is added to it.
pub async fn ask(
    lua: &Lua,
    inner: &Inner,
    request: Value,
    about: Table,
) -> mlua::Result<MultiValue> {
    about.set("request", request.clone())?;
    match before_ask(lua, inner, &about).await {
        Some((answer, _)) => (answer, "hook").into_lua_multi(lua),
        None => call_presenter(lua, inner, "ask", request).await,
    }
}

/// Asks the `before_ask` hooks whether one answers a hook's `ctx.ask` in the person's place
/// (the settings hooks' PermissionRequest event runs here), in the caller's scope and in
/// registration order. `ctx`: `request`, `tool`, `args`, `call_id`. The first answer that is
/// not nil wins and comes back with its hook's owner; a hook that fails is logged and the
/// person is asked as usual.
pub async fn before_ask(lua: &Lua, inner: &Inner, ctx: &Table) -> Option<(Value, String)> {
    let hooks = inner.registry.borrow().hook_functions("before_ask");
    let cancel = calls::current_cancel(lua);
    for (owner, f) in hooks {
        if cancel.is_cancelled() {
            return None;
        }
        let scope = Scope::new(
            cancel.clone(),
            None,
            &format!("the before_ask hook of {owner}"),
        );
        match calls::call_async_cancellable::<Value>(lua, &f, ctx.clone(), scope).await {
            Ok(Value::Nil) => {}
            Ok(v) => return Some((v, owner)),
            Err(e) => inner.logger.log(
                super::log::Level::Warn,
                &owner,
                &format!(
                    "before_ask hook failed: {}",
                    super::convert::error_parts(&e).0
                ),
            ),
        }
    }
    None
}

/// After a turn of an interactive run, someone may have walked away: each hook with both
/// `on_wait` and `idle_after` (seconds) gets `on_wait{kind = "idle"}` once the session has
/// waited that long for the next prompt (the settings hooks' Notification `idle_prompt`).
/// `stop` (tripped by the next turn or the end of the run) ends the wait and the hook. No
/// such hook, no timer.
pub fn watch_idle(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Rc<super::agent::Agent>,
    stop: CancellationToken,
) {
    let headless = inner
        .run_options
        .borrow()
        .get("headless")
        .and_then(|v| v.as_bool())
        .unwrap_or(false);
    if headless {
        return;
    }
    let hooks: Vec<(String, Function, f64)> = inner
        .registry
        .borrow()
        .active("hook")
        .iter()
        .filter_map(|c| {
            let after = c.spec.get::<Option<f64>>("idle_after").ok().flatten()?;
            let f = c.spec.get::<Option<Function>>("on_wait").ok().flatten()?;
            (after.is_finite() && after > 0.0).then(|| (c.owner.clone(), f, after))
        })
        .collect();
    for (owner, f, after) in hooks {
        let (lua, inner, agent, stop) = (lua.clone(), inner.clone(), agent.clone(), stop.clone());
        tokio::task::spawn_local(async move {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_secs_f64(after.min(86_400.0))) => {}
            }
            // A slash command still running counts as someone being there.
            if agent.is_busy() || !inner.commands.borrow().is_empty() {
                return;
            }
            let Ok(ctx) = lua.create_table() else { return };
            let _ = ctx.set("kind", "idle");
            let _ = ctx.set("request", "fen is waiting for your input");
            let scope = Scope::new(stop, None, &format!("the on_wait hook of {owner}"));
            let _ = calls::call_async_cancellable::<()>(&lua, &f, ctx, scope).await;
        });
    }
}
