//! Small natives: JSON (serde_json) and a cancellable sleep.

use crate::kernel::convert;
use mlua::{Lua, Table, Value};

/// `native.json`: `decode(text) -> value | nil, err`, `encode(value) -> text` (keys sorted,
/// functions left out; `json.null` encodes null).
pub fn json_module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "decode",
        lua.create_function(|lua, text: mlua::LuaString| {
            match convert::json_text_to_lua(lua, &text.as_bytes()) {
                Ok(v) => Ok((v, Value::Nil)),
                Err(e) => Ok((
                    Value::Nil,
                    Value::String(lua.create_string(format!("invalid JSON: {e}"))?),
                )),
            }
        })?,
    )?;
    m.set(
        "encode",
        lua.create_function(|lua, v: Value| {
            convert::lua_to_json(lua, &v)
                .map(|j| j.to_string())
                .map_err(|e| mlua::Error::runtime(format!("json.encode: {e}")))
        })?,
    )?;
    // `encode_async(value)`: the same text, for big values (a provider request body): the
    // value is read on the Lua thread, but written out on the blocking pool.
    m.set(
        "encode_async",
        lua.create_async_function(|lua, v: Value| async move {
            let (json, bytes) = convert::lua_to_json_sized(&lua, &v)
                .map_err(|e| mlua::Error::runtime(format!("json.encode: {e}")))?;
            // Below this, a trip to another thread costs more than the writing it saves.
            if bytes < 256 * 1024 {
                return Ok(json.to_string());
            }
            super::blocking(move || json.to_string()).await
        })?,
    )?;
    m.set("null", mlua::LuaSerdeExt::null(lua))?;
    Ok(m)
}

/// `native.sleep(ms)`: waits without blocking the Lua thread; raises "cancelled" when the
/// running turn is cancelled.
pub fn sleep_fn(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_async_function(|lua, ms: f64| async move {
        let cancel = crate::kernel::calls::current_cancel(&lua);
        tokio::select! {
            _ = tokio::time::sleep(std::time::Duration::from_millis(ms.max(0.0) as u64)) => Ok(()),
            _ = cancel.cancelled() => Err(mlua::Error::runtime("cancelled")),
        }
    })
}

/// `native.clock_ms()`: milliseconds since a fixed point of this process, on a monotonic
/// clock: intervals (a double-press window) that a change of the wall clock cannot bend, at a
/// finer grain than `os.time()`'s whole seconds.
pub fn clock_ms_fn(lua: &Lua) -> mlua::Result<mlua::Function> {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = *START.get_or_init(std::time::Instant::now);
    lua.create_function(move |_, ()| Ok(start.elapsed().as_secs_f64() * 1000.0))
}
