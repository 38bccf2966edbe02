//! Lua state setup: the standard libraries, `require("fen.native")`, and the per-extension
//! environment whose `require` finds the extension's sibling files first.

use crate::kernel::loader::Code;
use crate::kernel::state::ExtensionRecord;
use mlua::chunk::ChunkMode;
use mlua::{Function, Lua, Table, Value};

/// A fresh Lua 5.4 state with `fen.native` preloadable.
pub fn new_state() -> mlua::Result<Lua> {
    let creator = Lua::new();
    // mlua runs a full collection when the handle that created a state is dropped, just before
    // `lua_close`, which frees every object (running every pending finalizer) anyway: wasted
    // work at every exit. Clones do not collect, and the state closes with its last handle.
    let lua = creator.clone();
    drop(creator);
    // Streaming makes many short-lived tables (one per event); the generational collector
    // frees them young instead of re-marking the whole heap.
    lua.gc_set_mode(mlua::state::GcMode::Generational(
        mlua::state::GcGenParams::default(),
    ));
    // Every N instructions: is the running call cancelled, interrupted or out of time?
    crate::kernel::calls::install_hook(&lua)?;
    let preload: Table = lua.globals().get::<Table>("package")?.get("preload")?;
    preload.set(
        "fen.native",
        lua.create_function(|lua, ()| super::native::module(lua))?,
    )?;
    Ok(lua)
}

/// Loads one file's code as a function named `chunkname` (`@path`), with `env` as its `_ENV`
/// when given. An embedded first-party file loads from its build-time bytecode, which carries
/// the same chunk name and line information as the source; should that bytecode not load
/// (a Lua built differently, a damaged binary), the source is compiled instead.
pub fn load_code(
    lua: &Lua,
    code: &Code,
    chunkname: &str,
    env: Option<&Table>,
) -> mlua::Result<Function> {
    if let Code::Embedded(file) = code {
        if let Ok(f) = load_bytecode(lua, file.bytecode, chunkname, env) {
            return Ok(f);
        }
    }
    load_source(lua, code.source(), chunkname, env)
}

/// Loads `source` as read from a file (as `lua.load` does).
pub fn load_source(
    lua: &Lua,
    source: &str,
    chunkname: &str,
    env: Option<&Table>,
) -> mlua::Result<Function> {
    let mut chunk = lua.load(source).set_name(chunkname);
    if let Some(env) = env {
        chunk = chunk.set_environment(env.clone());
    }
    chunk.into_function()
}

/// Loads precompiled bytecode (binary only; empty bytecode is an error).
pub fn load_bytecode(
    lua: &Lua,
    bytecode: &[u8],
    chunkname: &str,
    env: Option<&Table>,
) -> mlua::Result<Function> {
    if bytecode.is_empty() {
        return Err(mlua::Error::runtime("no bytecode"));
    }
    let mut chunk = lua
        .load(bytecode)
        .set_name(chunkname)
        .set_mode(ChunkMode::Binary);
    if let Some(env) = env {
        chunk = chunk.set_environment(env.clone());
    }
    chunk.into_function()
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
                .map(|src| (Code::Source(src), path.display().to_string()))
        });
        let found = from_disk.or_else(|| {
            crate::kernel::loader::embedded(&rel)
                .map(|f| (Code::Embedded(f), format!("<embedded>/extensions/{rel}")))
        });
        match found {
            Some((code, path)) => Ok(Value::Function(load_code(
                lua,
                &code,
                &format!("@{path}"),
                None,
            )?)),
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
    sibling_require_with(lua, rec, env, lua.globals().get("require")?)
}

/// [`sibling_require`] falling back to `global_require`.
pub fn sibling_require_with(
    lua: &Lua,
    rec: &ExtensionRecord,
    env: &Table,
    global_require: Function,
) -> mlua::Result<Function> {
    let location = rec.location.clone();
    let env = env.clone();
    let cache = lua.create_table()?;
    lua.create_function(move |lua, name: String| {
        if let Some(v) = cache.get::<Option<Value>>(name.as_str())? {
            return Ok(v);
        }
        let rel = name.replace('.', "/");
        for file in [format!("{rel}.lua"), format!("{rel}/init.lua")] {
            if let Ok(code) = location.code(&file) {
                let chunk = load_code(
                    lua,
                    &code,
                    &format!("@{}", location.display_file(&file)),
                    Some(&env),
                )?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::loader::{EmbeddedFile, EMBEDDED};

    fn chunk_name(path: &str) -> String {
        format!("@<embedded>/extensions/{path}")
    }

    /// An embedded file whose bytecode is `bytecode` (leaked: `Code::Embedded` wants 'static).
    fn embedded(source: &str, bytecode: Vec<u8>) -> Code {
        Code::Embedded(Box::leak(Box::new(EmbeddedFile {
            path: "test/x.lua",
            source: Box::leak(source.to_string().into_boxed_str()),
            bytecode: Box::leak(bytecode.into_boxed_slice()),
        })))
    }

    fn compile(lua: &Lua, source: &str) -> Vec<u8> {
        load_source(lua, source, &chunk_name("test/x.lua"), None)
            .unwrap()
            .dump(false)
    }

    /// Dropping the state (its last handle) closes it: finalizers of live and of unreachable
    /// objects both run.
    #[test]
    fn closing_the_state_runs_every_finalizer() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let count = Arc::new(AtomicUsize::new(0));
        let lua = new_state().unwrap();
        let c = count.clone();
        let bump = lua
            .create_function(move |_, ()| {
                c.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .unwrap();
        lua.globals().set("bump", bump).unwrap();
        lua.load(
            "KEPT = setmetatable({}, { __gc = function() bump() end })
             setmetatable({}, { __gc = function() bump() end })",
        )
        .exec()
        .unwrap();
        let handle = lua.clone();
        drop(lua);
        assert_eq!(
            count.load(Ordering::SeqCst),
            0,
            "closed while a handle was left"
        );
        drop(handle);
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn the_collector_is_generational() {
        let lua = new_state().unwrap();
        // Switching mode returns the previous one.
        let before: String = lua
            .load("return collectgarbage('incremental')")
            .eval()
            .unwrap();
        assert_eq!(before, "generational");
    }

    #[test]
    fn embedded_files_are_sorted_for_lookup() {
        assert!(EMBEDDED.windows(2).all(|w| w[0].path < w[1].path));
        for f in EMBEDDED {
            assert!(std::ptr::eq(
                crate::kernel::loader::embedded(f.path).unwrap(),
                f
            ));
        }
    }

    /// The bytecode in the binary is what the Lua in the binary makes of the source in the
    /// binary, under the chunk name errors show: never stale, never from another Lua.
    #[test]
    fn embedded_bytecode_is_compiled_from_the_embedded_source() {
        let lua = new_state().unwrap();
        assert!(EMBEDDED.len() > 10);
        for f in EMBEDDED {
            let fresh = load_source(&lua, f.source, &chunk_name(f.path), None)
                .unwrap_or_else(|e| panic!("{}: {e}", f.path))
                .dump(false);
            assert!(
                fresh == f.bytecode,
                "{}: embedded bytecode differs from its source",
                f.path
            );
        }
    }

    #[test]
    fn bytecode_keeps_the_chunk_name_and_line_numbers() {
        let lua = new_state().unwrap();
        let source = "local t = {}\n\nerror('boom')\n";
        let code = embedded(source, compile(&lua, source));
        let f = load_code(&lua, &code, &chunk_name("test/x.lua"), None).unwrap();
        assert_eq!(
            f.info().source.as_deref(),
            Some("@<embedded>/extensions/test/x.lua")
        );
        let err = f.call::<()>(()).unwrap_err().to_string();
        assert!(
            err.contains("<embedded>/extensions/test/x.lua:3: boom"),
            "{err}"
        );
    }

    #[test]
    fn bytecode_runs_in_the_given_environment() {
        let lua = new_state().unwrap();
        let source = "return answer";
        let code = embedded(source, compile(&lua, source));
        let env = lua.create_table().unwrap();
        env.set("answer", 42).unwrap();
        let f = load_code(&lua, &code, &chunk_name("test/x.lua"), Some(&env)).unwrap();
        assert_eq!(f.call::<i64>(()).unwrap(), 42);
    }

    /// Bytecode that does not load (damaged, cut short, from another Lua, missing) is not
    /// trusted: the source is compiled instead and behaves the same.
    #[test]
    fn unloadable_bytecode_falls_back_to_the_source() {
        let lua = new_state().unwrap();
        let source = "return 'from source'";
        let good = compile(&lua, "return 'from bytecode'");
        // Header: "\x1bLua", version, format, 6 check bytes, sizes of Instruction,
        // lua_Integer and lua_Number, then a check integer and float.
        let patched = |at: usize, byte: u8| {
            let mut b = good.clone();
            b[at] = byte;
            b
        };
        let damaged: Vec<Vec<u8>> = vec![
            Vec::new(),
            good[..good.len() / 2].to_vec(),
            good[..20].to_vec(),
            b"\x1bLua garbage".to_vec(),
            patched(4, 0x53),  // Lua 5.3
            patched(5, 1),     // another format
            patched(7, b'x'),  // the check bytes (text-mode conversion)
            patched(13, 4),    // a 32-bit lua_Integer
            patched(15, 0x7f), // the check integer
        ];
        for bytecode in damaged {
            let code = embedded(source, bytecode.clone());
            let f = load_code(&lua, &code, &chunk_name("test/x.lua"), None).unwrap();
            assert_eq!(
                f.call::<String>(()).unwrap(),
                "from source",
                "bytecode {bytecode:?}"
            );
        }
        // Sound bytecode is what runs.
        let f = load_code(
            &lua,
            &embedded(source, good),
            &chunk_name("test/x.lua"),
            None,
        )
        .unwrap();
        assert_eq!(f.call::<String>(()).unwrap(), "from bytecode");
    }
}
