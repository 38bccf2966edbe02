//! Bindings of the sanitizer and truncation cores.

use crate::native::{sanitize, truncate};
use mlua::{Lua, Table, Value};

/// `native.sanitize(text, max_bytes?) -> text, {escaped, truncated, original_bytes, kept_bytes}`.
pub fn sanitize_fn(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, (text, max): (mlua::LuaString, Option<usize>)| {
        let bytes = text.as_bytes();
        let out = sanitize::sanitize(&bytes, max.unwrap_or_else(sanitize::default_max_bytes));
        let report = lua.create_table()?;
        report.set("escaped", out.report.escaped)?;
        report.set("truncated", out.report.truncated)?;
        report.set("original_bytes", out.report.original_bytes)?;
        report.set("kept_bytes", out.report.kept_bytes)?;
        Ok((lua.create_string(out.text.as_bytes())?, report))
    })
}

fn truncation_table(lua: &Lua, t: &truncate::Truncation<'_>) -> mlua::Result<Table> {
    let out = lua.create_table()?;
    out.set("text", t.text.as_ref())?;
    out.set("rendered", t.render())?;
    out.set("marker", t.marker())?;
    out.set("truncated", t.is_truncated())?;
    out.set("total_lines", t.total_lines)?;
    out.set("total_bytes", t.total_bytes)?;
    out.set("kept_bytes", t.kept_bytes)?;
    out.set("omitted_lines", t.omitted_lines())?;
    out.set("next_offset", t.next_offset)?;
    Ok(out)
}

/// `native.truncate`: `head|tail|head_tail(text, max_lines, max_bytes)` return
/// `{text, rendered (text with the marker in place), marker, truncated, total_lines, ...}`.
pub fn truncate_module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    type Cut = for<'a> fn(&'a str, usize, usize) -> truncate::Truncation<'a>;
    let cuts: [(&str, Cut); 3] = [
        ("head", truncate::head),
        ("tail", truncate::tail),
        ("head_tail", truncate::head_tail),
    ];
    for (name, cut) in cuts {
        m.set(
            name,
            lua.create_function(move |lua, (text, lines, bytes): (String, usize, usize)| {
                truncation_table(lua, &cut(&text, lines, bytes))
            })?,
        )?;
    }
    m.set(
        "clip_lines",
        lua.create_function(|_, (text, cols): (String, usize)| {
            Ok(truncate::clip_long_lines(&text, cols))
        })?,
    )?;
    m.set(
        "human_bytes",
        lua.create_function(|_, n: usize| Ok(truncate::human_bytes(n)))?,
    )?;
    m.set(
        "number_lines",
        lua.create_function(|lua, (text, first): (mlua::LuaString, Option<i64>)| {
            lua.create_string(truncate::number_lines(&text.as_bytes(), first.unwrap_or(1)))
        })?,
    )?;
    m.set(
        "count_lines",
        lua.create_function(|_, text: Value| {
            Ok(match text {
                Value::String(s) => crate::native::read::count_lines(&s.as_bytes()),
                _ => 0,
            })
        })?,
    )?;
    Ok(m)
}
