//! Lua state setup: the standard libraries, `require("fen.native")`, and the per-extension
//! environment whose `require` finds the extension's sibling files first.

use crate::kernel::host::ExtensionRecord;
use mlua::{Function, Lua, Table, Value};

/// A fresh Lua 5.4 state with `fen.native` preloadable.
pub fn new_state() -> mlua::Result<Lua> {
    let lua = Lua::new();
    let preload: Table = lua.globals().get::<Table>("package")?.get("preload")?;
    preload.set(
        "fen.native",
        lua.create_function(|lua, ()| super::native::module(lua))?,
    )?;
    Ok(lua)
}

/// The environment an extension's files run in: its own globals table falling back to `_G`
/// (so extensions do not trample each other's globals), with a `require` that looks for
/// `name.lua` / `name/init.lua` beside the extension first (dots become slashes) and then
/// falls back to the global `require` (for `fen.native` and the standard modules).
pub fn extension_env(lua: &Lua, rec: &ExtensionRecord) -> mlua::Result<Table> {
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.set("__index", lua.globals())?;
    env.set_metatable(Some(meta))?;
    env.set("require", sibling_require(lua, rec, &env)?)?;
    Ok(env)
}

/// Builds the `require` of one extension. Modules are cached per load of the extension, so a
/// reload picks up edited siblings.
pub fn sibling_require(lua: &Lua, rec: &ExtensionRecord, env: &Table) -> mlua::Result<Function> {
    let location = rec.location.clone();
    let env = env.clone();
    let cache = lua.create_table()?;
    let global_require: Function = lua.globals().get("require")?;
    lua.create_function(move |lua, name: String| {
        if let Some(v) = cache.get::<Option<Value>>(name.as_str())? {
            return Ok(v);
        }
        let rel = name.replace('.', "/");
        for file in [format!("{rel}.lua"), format!("{rel}/init.lua")] {
            if let Ok(src) = location.read(&file) {
                let chunk = lua
                    .load(src)
                    .set_name(format!("@{}", location.display_file(&file)))
                    .set_environment(env.clone());
                let value = match chunk.call::<Value>(name.as_str())? {
                    Value::Nil => Value::Boolean(true),
                    v => v,
                };
                cache.set(name.as_str(), value.clone())?;
                return Ok(value);
            }
        }
        global_require.call::<Value>(name)
    })
}
