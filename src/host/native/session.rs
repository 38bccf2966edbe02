//! Binding of the JSONL session store: `native.session`. The writer holds the session's lease
//! (one writer per session) until `close()` or until it is collected.

use super::{blocking, failure, success};
use crate::kernel::convert;
use crate::native::jsonl::{self, SessionWriter};
use mlua::{Lua, LuaSerdeExt, Table, UserData, UserDataMethods, Value};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// An open session file for appending.
struct Writer(Arc<Mutex<Option<SessionWriter>>>);

impl Writer {
    fn with<R>(
        &self,
        f: impl FnOnce(&mut SessionWriter) -> Result<R, jsonl::JsonlError>,
    ) -> mlua::Result<R> {
        let mut guard = self
            .0
            .lock()
            .map_err(|_| mlua::Error::runtime("session writer poisoned"))?;
        let w = guard
            .as_mut()
            .ok_or_else(|| mlua::Error::runtime("the session is closed"))?;
        f(w).map_err(|e| mlua::Error::runtime(e.to_string()))
    }
}

impl UserData for Writer {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        // One whole line per record, written with a single write.
        methods.add_method("append", |lua, this, record: Value| {
            // A value JSON cannot hold raises (naming where) instead of writing `null`.
            let json = convert::lua_to_json(lua, &record)
                .map_err(|e| mlua::Error::runtime(format!("cannot store the record: {e}")))?;
            this.with(|w| w.append(&json))
        });
        // fsync, off the Lua thread (turn boundaries).
        methods.add_async_method("sync", |_, this, ()| async move {
            let inner = this.0.clone();
            blocking(move || match inner.lock() {
                Ok(g) => g
                    .as_ref()
                    .map_or(Ok(()), |w| w.sync())
                    .map_err(|e| e.to_string()),
                Err(_) => Err("session writer poisoned".to_string()),
            })
            .await?
            .map_err(mlua::Error::runtime)
        });
        methods.add_method("close", |_, this, ()| {
            if let Ok(mut g) = this.0.lock() {
                if let Some(w) = g.take() {
                    let _ = w.sync();
                }
            }
            Ok(())
        });
        methods.add_method("path", |_, this, ()| {
            this.with(|w| Ok(w.path().to_string_lossy().into_owned()))
        });
    }
}

fn writer_value(lua: &Lua, w: SessionWriter) -> mlua::Result<Value> {
    Ok(Value::UserData(
        lua.create_userdata(Writer(Arc::new(Mutex::new(Some(w)))))?,
    ))
}

/// The sessions directory for a working directory: `FEN_SESSION_DIR` when set, else
/// `$XDG_STATE_HOME/fen/sessions/<slug of cwd>/`.
pub fn dir_for(state_dir: &std::path::Path, cwd: &std::path::Path) -> PathBuf {
    match std::env::var_os("FEN_SESSION_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => jsonl::session_dir_for(state_dir, cwd),
    }
}

crate::lua_options! {
    pub(crate) struct ExportOpts as "fen.opts.SessionExport" for "session.export" {
        path: String => "string", "The file written.",
        format: Option<String> => "(\"html\"|\"markdown\"|\"json\")?", "Default html (self-contained).",
        title: Option<String> => "string?", "Default \"fen session\".",
        id: Option<String> => "string?", "The session id shown.",
    }
}

/// `export(messages, {format, path, title, id})` (async): the conversation as one file
/// (`crate::native::export`; format `html`, `markdown` or `json`), rendered and written whole
/// on the blocking pool; the path written, or nil, message.
async fn export_fn(lua: Lua, (messages, opts): (Value, Value)) -> mlua::Result<(Value, Value)> {
    use crate::native::export;
    let opts: ExportOpts = super::options(&lua, opts)?;
    let format: String = opts.format.unwrap_or_else(|| "html".into());
    let Some(format) = export::Format::parse(&format) else {
        return failure(
            &lua,
            format!("unknown export format '{format}' (html, markdown, json)"),
        );
    };
    let path: String = opts.path;
    let messages: serde_json::Value = lua.from_value(messages)?;
    let t = export::Transcript {
        title: opts.title.unwrap_or_else(|| "fen session".into()),
        id: opts.id,
        messages: match messages {
            serde_json::Value::Array(a) => a,
            _ => Vec::new(),
        },
    };
    let target = crate::native::fs::expand_path(&path);
    let written = target.clone();
    match blocking(move || export::write_file(&target, &export::render(&t, format))).await? {
        Ok(()) => Ok((
            Value::String(lua.create_string(written.to_string_lossy().as_ref())?),
            Value::Nil,
        )),
        Err(e) => failure(&lua, format!("cannot write {path}: {e}")),
    }
}

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("export", lua.create_async_function(export_fn)?)?;
    m.set(
        "dir_for",
        lua.create_function(|lua, cwd: String| {
            let state_dir = &crate::host::run::run(lua).paths.state_dir;
            Ok(dir_for(state_dir, std::path::Path::new(&cwd))
                .to_string_lossy()
                .into_owned())
        })?,
    )?;
    m.set(
        "new_id",
        lua.create_function(|_, ()| Ok(jsonl::new_session_id().to_string()))?,
    )?;
    // create(dir, cwd) -> writer, id | nil, message: a new session file with its header.
    m.set(
        "create",
        lua.create_function(|lua, (dir, cwd): (String, String)| {
            let id = jsonl::new_session_id();
            let path = jsonl::new_session_path(std::path::Path::new(&dir), SystemTime::now(), id);
            let header = jsonl::header_record(
                &id.to_string(),
                std::path::Path::new(&cwd),
                SystemTime::now(),
                env!("CARGO_PKG_VERSION"),
            );
            if let Err(e) = std::fs::create_dir_all(&dir) {
                return Ok((
                    Value::Nil,
                    Value::String(lua.create_string(format!("cannot create {dir}: {e}"))?),
                ));
            }
            match SessionWriter::create(&path, &header) {
                Ok(w) => Ok((
                    writer_value(lua, w)?,
                    Value::String(lua.create_string(id.to_string())?),
                )),
                Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e.to_string())?))),
            }
        })?,
    )?;
    // open(path) -> writer | nil, message ("session in use by pid N ...").
    m.set(
        "open",
        lua.create_function(|lua, path: String| {
            match SessionWriter::open(std::path::Path::new(&path)) {
                Ok(w) => Ok((writer_value(lua, w)?, Value::Nil)),
                Err(e) => Ok((Value::Nil, Value::String(lua.create_string(e.to_string())?))),
            }
        })?,
    )?;
    // resume(path, at?) -> {header, records, compaction_index, bad_lines, notes}: replays the
    // branch in use (or the one continuing from `at` = {leaf, before}) from its latest
    // compaction; a file without branches is not read whole.
    m.set(
        "resume",
        lua.create_async_function(|lua, (path, at): (String, Value)| async move {
            let at: Option<jsonl::branch::Point> = match at {
                Value::Nil => None,
                v => Some(lua.from_value(v)?),
            };
            match blocking(move || jsonl::resume_at(std::path::Path::new(&path), at.as_ref()))
                .await?
            {
                Ok(r) => {
                    let t = lua.create_table()?;
                    t.set("header", lua.to_value(&r.header)?)?;
                    let records = lua.create_table()?;
                    // Straight from the validated text to Lua tables: no `Value` trees. Tables
                    // can only be made on the Lua thread; a long replay lets the executor run
                    // now and then, so the screen stays live.
                    for (n, rec) in r.records.iter().enumerate() {
                        if n > 0 && n % 2000 == 0 {
                            tokio::task::yield_now().await;
                        }
                        let v = convert::json_text_to_lua(&lua, r.text(rec).as_bytes())
                            .map_err(mlua::Error::runtime)?;
                        records.push(v)?;
                    }
                    t.set("records", records)?;
                    t.set("compaction_index", r.compaction_index.map(|i| i + 1))?;
                    t.set("bad_lines", r.bad_lines.len())?;
                    t.set("max_turn", r.max_turn)?;
                    success(t)
                }
                Err(e) => failure(&lua, e.to_string()),
            }
        })?,
    )?;
    // list(dir) -> [{path, id, created, modified, title, message_count, branches}], newest
    // first; `branches`: the file's other branches, [{point = {leaf, before?}, message_count, title}].
    m.set(
        "list",
        lua.create_async_function(|lua, dir: String| async move {
            match blocking(move || jsonl::list_sessions(std::path::Path::new(&dir))).await? {
                Ok(mut list) => {
                    list.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.path.cmp(&a.path)));
                    let out = lua.create_table()?;
                    for s in list {
                        let t = lua.create_table()?;
                        t.set("path", s.path.to_string_lossy().as_ref())?;
                        t.set("id", s.id)?;
                        t.set("created", s.created)?;
                        t.set("modified", s.modified)?;
                        t.set("title", s.title)?;
                        t.set("message_count", s.message_count)?;
                        t.set("branches", lua.to_value(&s.branches)?)?;
                        out.push(t)?;
                    }
                    success(out)
                }
                Err(e) => failure(&lua, e.to_string()),
            }
        })?,
    )?;
    Ok(m)
}
