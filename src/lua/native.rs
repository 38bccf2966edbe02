//! `require("fen.native")`: one table whose fields are the native modules' bindings. Each
//! binding is a thin adapter over a pure Rust core in `crate::native`.

use mlua::{Lua, Table};

/// Builds the `fen.native` table (called once, by `require`).
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let native = lua.create_table()?;
    native.set("version", env!("CARGO_PKG_VERSION"))?;
    Ok(native)
}
