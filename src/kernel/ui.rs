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
    let scope = Scope::new(cancel.clone(), None, &format!("the presenter's {name}"));
    match calls::call_async_cancellable::<MultiValue>(lua, &f, args, scope).await {
        Ok(v) => Ok(v),
        Err(_) if cancel.is_cancelled() => (Value::Nil, "cancelled").into_lua_multi(lua),
        Err(e) => Err(e),
    }
}
