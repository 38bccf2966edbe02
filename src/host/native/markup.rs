//! `native.markup`: front matter of Markdown files and HTML conversion
//! ([`crate::native::frontmatter`], [`crate::native::html`]).

use crate::native::{frontmatter, html};
use mlua::{Lua, Table, Value};

/// `front_matter(text) -> {fields, body} | nil, message`; `scan(roots, file_name) ->
/// [{root (1-based), dir, file, fields | error, body_bytes}]` (sync: a few directory reads, at
/// load and reload); `scan_files(roots, suffix)`: the same for every `ROOT/*suffix` file, with
/// `body`; `scan_tree(roots, suffix)`: `scan_files` through nested directories;
/// `html_to_markdown(html)`,
/// `html_to_text(html)` (script and style dropped).
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "front_matter",
        lua.create_function(|lua, text: mlua::LuaString| {
            let text = String::from_utf8_lossy(&text.as_bytes()).into_owned();
            match frontmatter::parse(&text) {
                Ok(fm) => {
                    let out = lua.create_table()?;
                    out.set(
                        "fields",
                        crate::kernel::convert::json_to_lua(
                            lua,
                            &serde_json::Value::Object(fm.fields),
                        )?,
                    )?;
                    out.set("body", fm.body)?;
                    super::success(out)
                }
                Err(e) => super::failure(lua, e.to_string()),
            }
        })?,
    )?;
    m.set(
        "scan",
        lua.create_function(|lua, (roots, file_name): (Vec<String>, String)| {
            let roots: Vec<std::path::PathBuf> = roots.into_iter().map(Into::into).collect();
            docs_table(lua, frontmatter::scan(&roots, &file_name), false)
        })?,
    )?;
    m.set(
        "scan_files",
        lua.create_function(|lua, (roots, suffix): (Vec<String>, String)| {
            let roots: Vec<std::path::PathBuf> = roots.into_iter().map(Into::into).collect();
            docs_table(lua, frontmatter::scan_files(&roots, &suffix), true)
        })?,
    )?;
    m.set(
        "scan_tree",
        lua.create_function(|lua, (roots, suffix): (Vec<String>, String)| {
            let roots: Vec<std::path::PathBuf> = roots.into_iter().map(Into::into).collect();
            docs_table(lua, frontmatter::scan_tree(&roots, &suffix, 4), true)
        })?,
    )?;
    m.set(
        "html_to_markdown",
        lua.create_async_function(|lua, text: String| async move {
            match super::blocking(move || html::to_markdown(&text)).await? {
                Ok(md) => Ok((Value::String(lua.create_string(md)?), Value::Nil)),
                Err(e) => super::failure(&lua, e.to_string()),
            }
        })?,
    )?;
    m.set(
        "html_to_text",
        lua.create_async_function(|_, text: String| async move {
            super::blocking(move || html::to_text(&text)).await
        })?,
    )?;
    Ok(m)
}

/// The documents of a scan as Lua rows; `with_body` adds each body (small files only).
fn docs_table(lua: &Lua, docs: Vec<frontmatter::FoundDoc>, with_body: bool) -> mlua::Result<Table> {
    let out = lua.create_table()?;
    for (i, doc) in docs.into_iter().enumerate() {
        let t = lua.create_table()?;
        t.set("root", doc.root + 1)?;
        t.set("dir", doc.dir.to_string_lossy().as_ref())?;
        t.set("file", doc.file.to_string_lossy().as_ref())?;
        match doc.parsed {
            Ok(fm) => {
                t.set(
                    "fields",
                    crate::kernel::convert::json_to_lua(
                        lua,
                        &serde_json::Value::Object(fm.fields),
                    )?,
                )?;
                t.set("body_bytes", doc.body_bytes)?;
                if with_body {
                    t.set("body", fm.body)?;
                }
            }
            Err(e) => t.set("error", e)?,
        }
        out.raw_set(i + 1, t)?;
    }
    Ok(out)
}
