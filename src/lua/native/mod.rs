//! `require("fen.native")`: one table whose fields are the native modules' bindings. Each
//! binding is a thin adapter over a pure Rust core in `crate::native`: it converts arguments,
//! runs slow work off the Lua thread (`spawn_blocking`, awaited as an mlua async function), and
//! returns plain tables. Expected failures (a missing file, a bad pattern) come back as
//! `nil, message` so a tool can turn them into an error result; misuse raises.
//!
//! | field | module |
//! | --- | --- |
//! | `sanitize(text, max_bytes?)` | [`crate::native::sanitize`] |
//! | `truncate` | [`crate::native::truncate`]: `head`, `tail`, `head_tail`, `clip_lines`, `human_bytes` |
//! | `fs` | `read`, `write`, `list`, `expand`, `set_strict` ([`crate::native::read`], [`crate::native::fs`]) |
//! | `edit` | `apply` ([`crate::native::edit`]) |
//! | `search` | `grep`, `find` ([`crate::native::search`]) |
//! | `process` | `run` ([`crate::native::process`]) |
//! | `json` | `decode`, `encode`, `null` |
//! | `http` | `request` (plain or SSE, cancellable), `backoff_ms` ([`crate::native::http`]) |
//! | `sleep(ms)` | cancellable wait |
//! | `term` | `read_line()` (async, nil at end of input), `isatty(fd)` |
//! | `platform` | `{os, arch}` |
//! | `session` | `dir_for`, `create`, `open` (writers with `append`, `sync`, `close`), `resume`, `list` ([`crate::native::jsonl`]) |

mod edit;
mod fs;
mod http;
mod ledger;
mod misc;
mod process;
mod search;
pub mod session;
mod term;
mod text;

pub use ledger::ReadLedger;

use mlua::{Lua, Table, Value};

/// Builds the `fen.native` table (called once, by `require`).
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let native = lua.create_table()?;
    native.set("version", env!("CARGO_PKG_VERSION"))?;
    native.set("sanitize", text::sanitize_fn(lua)?)?;
    native.set("truncate", text::truncate_module(lua)?)?;
    native.set("fs", fs::module(lua)?)?;
    native.set("edit", edit::module(lua)?)?;
    native.set("search", search::module(lua)?)?;
    native.set("process", process::module(lua)?)?;
    native.set("json", misc::json_module(lua)?)?;
    native.set("http", http::module(lua)?)?;
    native.set("term", term::module(lua)?)?;
    native.set("session", session::module(lua)?)?;
    let platform = lua.create_table()?;
    platform.set("os", std::env::consts::OS)?;
    platform.set("arch", std::env::consts::ARCH)?;
    native.set("platform", platform)?;
    native.set("sleep", misc::sleep_fn(lua)?)?;
    Ok(native)
}

/// The cancellation token of the running turn, installed in the Lua state's app data by
/// whoever runs tools (the agent loop, `fen tool`); a fresh, never-cancelled token otherwise.
pub fn cancel_token(lua: &Lua) -> tokio_util::sync::CancellationToken {
    lua.app_data_ref::<tokio_util::sync::CancellationToken>()
        .map(|t| t.clone())
        .unwrap_or_default()
}

/// Runs blocking work on tokio's blocking pool and awaits it.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> mlua::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| mlua::Error::runtime(format!("native task failed: {e}")))
}

/// `nil, message`: the shape of an expected failure.
pub(crate) fn failure(lua: &Lua, message: impl Into<String>) -> mlua::Result<(Value, Value)> {
    Ok((
        Value::Nil,
        Value::String(lua.create_string(message.into())?),
    ))
}

/// A Lua array that stays an array when empty (it serializes to `[]`, not `{}`).
pub(crate) fn array<T: serde::Serialize>(lua: &Lua, items: &[T]) -> mlua::Result<Value> {
    use mlua::LuaSerdeExt;
    lua.to_value(items)
}

/// `value, nil`.
pub(crate) fn success(value: Table) -> mlua::Result<(Value, Value)> {
    Ok((Value::Table(value), Value::Nil))
}

/// Expands `~` and `~/...` to the home directory; other paths are returned as given (relative
/// paths resolve against the process working directory, which is the session's).
pub fn expand_path(path: &str) -> std::path::PathBuf {
    if path == "~" || path.starts_with("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return std::path::PathBuf::from(home)
                .join(path.trim_start_matches('~').trim_start_matches('/'));
        }
    }
    std::path::PathBuf::from(path)
}
