//! Questions for the person at the terminal, answered by the active presenter.
//!
//! `api.ui.notify/select/prompt` and a hook's `ctx.ask` all come here. The active presenter's
//! spec may provide async functions of the same names (`notify(text)`, `select(title, items)`,
//! `prompt(question, default)`, `ask(request)`); the calling coroutine waits for the answer.
//! A presenter without one (print, json: headless runs never wait for a person) answers at
//! once with `nil, "no user"`. Cancelling the caller's scope answers `nil, "cancelled"`.

use super::calls::{self, Scope};
use super::state::Inner;
use mlua::{Function, IntoLuaMulti, Lua, MultiValue, Value};

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
