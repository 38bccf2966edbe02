//! Lua state setup: the standard libraries, `require("fen.native")`, and the per-extension
//! environment whose `require` finds the extension's sibling files first.

use crate::kernel::host::ExtensionRecord;
use mlua::{Function, Lua, Table, Value};

/// A fresh Lua 5.4 state with `fen.native` preloadable.
pub fn new_state() -> mlua::Result<Lua> {
    let lua = Lua::new();
    // Streaming makes many short-lived tables (one per event); the generational collector
    // frees them young instead of re-marking the whole heap.
    lua.load("collectgarbage('generational')").exec()?;
    let preload: Table = lua.globals().get::<Table>("package")?.get("preload")?;
    preload.set(
        "fen.native",
        lua.create_function(|lua, ()| super::native::module(lua))?,
    )?;
    Ok(lua)
}

/// Makes the first-party Lua libraries (`extensions/lib/*.lua`) loadable as
/// `require("fen.lib.NAME")`: from the first-party source checkout when one is given
/// (`--extension-root`), else from the copies embedded in the binary.
pub fn install_lib_searcher(lua: &Lua, overlay: Option<std::path::PathBuf>) -> mlua::Result<()> {
    let searchers: Table = lua.globals().get::<Table>("package")?.get("searchers")?;
    let searcher = lua.create_function(move |lua, name: String| {
        let Some(rest) = name.strip_prefix("fen.lib.") else {
            return Ok(Value::Nil);
        };
        let rel = format!("lib/{}.lua", rest.replace('.', "/"));
        let from_disk = overlay.as_ref().and_then(|dir| {
            let path = dir.join(&rel);
            std::fs::read_to_string(&path)
                .ok()
                .map(|src| (src, path.display().to_string()))
        });
        let found = from_disk.or_else(|| {
            crate::kernel::loader::EMBEDDED
                .iter()
                .find(|(p, _)| *p == rel)
                .map(|(_, src)| (src.to_string(), format!("<embedded>/extensions/{rel}")))
        });
        match found {
            Some((src, path)) => Ok(Value::Function(
                lua.load(src).set_name(format!("@{path}")).into_function()?,
            )),
            None => Ok(Value::String(
                lua.create_string(format!("\n\tno first-party library {rel}"))?,
            )),
        }
    })?;
    searchers.raw_insert(2, searcher)
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
