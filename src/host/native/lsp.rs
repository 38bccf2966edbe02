//! `native.lsp`: the language-server client ([`crate::native::lsp`]) for the `lsp` companion.
//! One set of servers per process; their I/O runs on threads of their own, so nothing here
//! holds the Lua thread: the waits are async and observe the running call's cancellation.
//!
//! `configure{trusted}` -> `{errors = {msg...}, untrusted = {{name, file}}, wait_ms}` reads the
//! `lsp` tables of settings.json (the user's; the project's `.fen/settings.json` and
//! `.fen/settings.local.json`, which may only disable servers until the folder is trusted);
//! `prepare(paths)` *async* opens the files that have a server (starting it) so the
//! diagnostics before a change are known; `after_change(paths)` *async* -> `[{path, server,
//! lines, introduced, errors, pending?, baseline}]` sends their new text and waits (at most
//! `lsp.diagnostics_wait_ms`) for the diagnostics the change introduced; `sync()` *async* ->
//! count, the stat scan of open documents; `query{operation, path, line, column, query}`
//! *async* -> `{server, items = [{path, line, column, context, name?, kind?, depth}], text?}` |
//! nil, message; `servers()` -> `[{name, command, extensions, state, root?, error?, restarts,
//! log, project, documents}]`.

use crate::native::lsp::{self, config, nav};
use mlua::{Lua, LuaSerdeExt, Table, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Navigation requests may take longer than diagnostics (a cold project index).
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// `p` as an absolute path (relative to `cwd`, `~` expanded), symlinks resolved as far as
/// the file exists (a file `write` is about to create has no real path yet).
fn absolute(p: &str, cwd: &Path) -> PathBuf {
    let full = cwd.join(crate::native::fs::expand_path(p));
    if let Ok(c) = std::fs::canonicalize(&full) {
        return c;
    }
    match (full.parent(), full.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .map(|d| d.join(name))
            .unwrap_or(full),
        _ => full,
    }
}

fn paths_of(lua: &Lua, v: Value) -> mlua::Result<Vec<PathBuf>> {
    let list: Vec<String> = lua.from_value(v)?;
    let cwd = std::env::current_dir().map_err(mlua::Error::external)?;
    Ok(list.iter().map(|p| absolute(p, &cwd)).collect())
}

crate::lua_options! {
    pub(crate) struct ConfigureOpts as "fen.opts.LspConfigure" for "lsp.configure" {
        trusted: Option<bool> => "boolean?", "The project's settings count.",
    }
}

crate::lua_options! {
    pub(crate) struct QueryOpts as "fen.opts.LspQuery" for "lsp.query" {
        operation: Option<String> => "string?", "definition, references, hover, symbols, ...",
        path: Option<String> => "string?", "The file asked about.",
        line: Option<u32> => "integer?", "1-based (default 1).",
        column: Option<u32> => "integer?", "1-based (default 1).",
        query: Option<String> => "string?", "For workspace symbols.",
    }
}

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "configure",
        lua.create_function(|lua, opts: Value| {
            let trusted = super::options::<ConfigureOpts>(lua, opts)?
                .trusted
                .unwrap_or(false);
            // The `lsp` tables of the settings files (user, then the project's two).
            let ctx = crate::host::run::run(lua);
            let (files, mut errors) = ctx.settings().files();
            let loaded = config::load(&files, trusted);
            errors.extend(loaded.errors.iter().cloned());
            lsp::global().configure(
                &loaded,
                trusted,
                ctx.project_root.clone(),
                ctx.paths.state_dir.join("lsp"),
                ctx.plan_inputs(),
            );
            let out = lua.create_table()?;
            out.set("errors", super::array(lua, &errors)?)?;
            out.set("untrusted", super::untrusted_list(lua, &loaded.untrusted)?)?;
            out.set("wait_ms", loaded.diagnostics_wait_ms)?;
            Ok(out)
        })?,
    )?;
    m.set(
        "prepare",
        lua.create_async_function(|lua, paths: Value| async move {
            let paths = paths_of(&lua, paths)?;
            let cancel = super::cancel_token(&lua);
            tokio::select! {
                _ = lsp::global().prepare(&paths) => {}
                _ = cancel.cancelled() => {}
            }
            Ok(())
        })?,
    )?;
    m.set(
        "after_change",
        lua.create_async_function(|lua, paths: Value| async move {
            let paths = paths_of(&lua, paths)?;
            let cwd = std::env::current_dir().map_err(mlua::Error::external)?;
            let cancel = super::cancel_token(&lua);
            let m = lsp::global();
            let wait = m.diagnostics_wait();
            let reports = tokio::select! {
                r = m.after_change(&paths, wait, &cwd) => r,
                _ = cancel.cancelled() => Vec::new(),
            };
            lua.to_value_with(
                &reports,
                mlua::serde::SerializeOptions::new().serialize_none_to_null(false),
            )
        })?,
    )?;
    m.set(
        "sync",
        lua.create_async_function(|lua, ()| async move {
            let cancel = super::cancel_token(&lua);
            Ok(tokio::select! {
                n = lsp::global().sync_all() => n,
                _ = cancel.cancelled() => 0,
            })
        })?,
    )?;
    m.set(
        "query",
        lua.create_async_function(|lua, t: Value| async move {
            let t: QueryOpts = super::options(&lua, t)?;
            let operation: String = t.operation.unwrap_or_default();
            let path: Option<String> = t.path;
            let line: u32 = t.line.unwrap_or(1);
            let column: u32 = t.column.unwrap_or(1);
            let query: String = t.query.unwrap_or_default();
            let cwd = std::env::current_dir().map_err(mlua::Error::external)?;
            let abs = path.as_deref().map(|p| absolute(p, &cwd));
            let cancel = super::cancel_token(&lua);
            let q = nav::Query {
                operation: &operation,
                path: abs.as_deref(),
                line,
                column,
                query: &query,
                cwd: &cwd,
                timeout: QUERY_TIMEOUT,
            };
            let r = tokio::select! {
                r = lsp::global().navigate(q) => r,
                _ = cancel.cancelled() => Err("cancelled".into()),
            };
            match r {
                Ok(r) => {
                    let v = lua.to_value_with(
                        &r,
                        mlua::serde::SerializeOptions::new().serialize_none_to_null(false),
                    )?;
                    Ok((v, Value::Nil))
                }
                Err(e) => super::failure(&lua, e),
            }
        })?,
    )?;
    m.set(
        "servers",
        lua.create_function(|lua, ()| {
            let list = lsp::global().servers();
            lua.to_value_with(
                &list,
                mlua::serde::SerializeOptions::new().serialize_none_to_null(false),
            )
        })?,
    )?;
    Ok(m)
}
