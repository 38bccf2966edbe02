//! Binding of the edit-apply engine: `native.edit.apply`.

use super::{blocking, expand_path, failure, ledger, success};
use crate::native::edit::{self, Edit, FileEdits};
use mlua::{Lua, Table, Value};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("apply", lua.create_async_function(apply_fn)?)?;
    m.set("apply_text", lua.create_async_function(apply_text_fn)?)?;
    Ok(m)
}

/// `edit.apply_text(text, {{old_string, new_string, replace_all}}, label?)` -> `{text, diff,
/// replacements, first_changed_line, strategies}` or `nil, message`: the same engine on a
/// buffer instead of a file (the text of an editor's buffer, for `fen acp`); writes nothing.
async fn apply_text_fn(
    lua: Lua,
    (text, list, label): (mlua::LuaString, Table, Option<String>),
) -> mlua::Result<(Value, Value)> {
    let bytes = text.as_bytes().to_vec();
    let edits = edits_of(&list)?;
    let label = label.unwrap_or_else(|| "file".into());
    match blocking(move || edit::apply_edits_owned(bytes, &edits, &label)).await? {
        Ok(o) => {
            let t = lua.create_table()?;
            t.set("text", lua.create_string(&o.new_bytes)?)?;
            t.set("diff", o.diff.as_str())?;
            t.set("replacements", o.replacements)?;
            t.set("first_changed_line", o.first_changed_line)?;
            let strategies: Vec<&str> = o.strategies.iter().map(|s| s.as_str()).collect();
            t.set("strategies", super::array(&lua, &strategies)?)?;
            success(t)
        }
        Err(e) => failure(&lua, e.to_string()),
    }
}

fn edits_of(list: &Table) -> mlua::Result<Vec<Edit>> {
    let mut edits = Vec::new();
    for e in list.sequence_values::<Table>() {
        let e = e?;
        edits.push(Edit {
            old_string: e.get::<String>("old_string")?,
            new_string: e.get::<String>("new_string")?,
            replace_all: e.get::<Option<bool>>("replace_all")?.unwrap_or(false),
        });
    }
    Ok(edits)
}

/// `edit.apply({{path, edits = {{old_string, new_string, replace_all}}}, ...})` ->
/// `{files = {{path, diff, replacements, first_changed_line, strategies}}}` or `nil, message`.
/// All files are validated before any is written; nothing is written when one fails. A file
/// this session read is checked against what was read (stale-read protection).
async fn apply_fn(lua: Lua, files: Table) -> mlua::Result<(Value, Value)> {
    let mut batch = Vec::new();
    for f in files.sequence_values::<Table>() {
        let f = f?;
        let path = expand_path(&f.get::<String>("path")?);
        if let Err(msg) = super::fs::refuse_special(&path) {
            return failure(&lua, format!("{msg}; no file was changed"));
        }
        let edits = edits_of(&f.get::<Table>("edits")?)?;
        let expected = ledger::with(&lua, |l| l.get(&path));
        batch.push(FileEdits {
            path,
            edits,
            expected,
        });
    }
    match blocking(move || edit::apply_batch(&batch)).await? {
        Ok(outcomes) => {
            let out = lua.create_table()?;
            let list = lua.create_table()?;
            for o in outcomes {
                ledger::with(&lua, |l| l.record(&o.path, o.stamp));
                let t = lua.create_table()?;
                t.set("path", o.path.to_string_lossy().as_ref())?;
                t.set("diff", o.outcome.diff.as_str())?;
                t.set("replacements", o.outcome.replacements)?;
                t.set("first_changed_line", o.outcome.first_changed_line)?;
                let strategies: Vec<&str> =
                    o.outcome.strategies.iter().map(|s| s.as_str()).collect();
                t.set("strategies", super::array(&lua, &strategies)?)?;
                list.push(t)?;
            }
            out.set("files", list)?;
            success(out)
        }
        Err(e) => failure(&lua, e.to_string()),
    }
}
