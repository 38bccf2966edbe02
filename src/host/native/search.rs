//! Bindings of the in-process search: `native.search.grep` and `native.search.find`, run on
//! the blocking pool; `native.search.fuzzy(query, list, limit)` (the 1-based indices of the
//! best matches, best first) and `native.search.file_list(path)` (async: every file under
//! `path`, .gitignore respected, most recently changed first, walked on the blocking pool;
//! a handle whose `:rank(query, limit)` returns the best paths and `:len()` their count),
//! for the input's menus (`crate::native::fuzzy`).

use super::{blocking, expand_path, failure, success};
use crate::native::search::{self, FindOptions, GrepOptions, OutputMode};
use mlua::{Lua, Table, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("grep", lua.create_async_function(grep_fn)?)?;
    m.set("find", lua.create_async_function(find_fn)?)?;
    m.set(
        "fuzzy",
        lua.create_function(
            |_, (query, list, limit): (String, Vec<String>, Option<usize>)| {
                Ok(crate::native::fuzzy::rank(
                    &query,
                    list.iter().map(String::as_str),
                    limit.unwrap_or(50),
                )
                .into_iter()
                .map(|i| i + 1)
                .collect::<Vec<_>>())
            },
        )?,
    )?;
    m.set("file_list", lua.create_async_function(file_list_fn)?)?;
    Ok(m)
}

/// A flag the walk polls, raised when the running turn is cancelled (Ctrl-C), so a
/// search over a huge tree stops instead of running on in the blocking pool.
fn cancel_flag(lua: &Lua) -> (Arc<AtomicBool>, tokio::task::JoinHandle<()>) {
    let flag = Arc::new(AtomicBool::new(false));
    let token = super::cancel_token(lua);
    let raised = flag.clone();
    let watcher = tokio::spawn(async move {
        token.cancelled().await;
        raised.store(true, Ordering::Relaxed);
    });
    (flag, watcher)
}

crate::lua_options! {
    /// `search.grep` options; an unknown key is an error.
    pub(crate) struct GrepOpts as "fen.opts.SearchGrep" for "search.grep" {
        pattern: String => "string", "A regular expression (or text with `literal`).",
        path: Option<String> => "string?", "File or directory searched (default `.`).",
        glob: Option<String> => "string?", "Only files matching this glob.",
        #[serde(default)]
        ignore_case: bool => "boolean?", "Case-insensitive matching.",
        #[serde(default)]
        literal: bool => "boolean?", "The pattern is plain text.",
        #[serde(default)]
        context: usize => "integer?", "Lines of context around each match.",
        output_mode: Option<String> => "(\"content\"|\"files_with_matches\"|\"count\")?", "Default files_with_matches.",
        head_limit: Option<usize> => "integer?", "Lines (or files) of output at most.",
        #[serde(default)]
        include_hidden: bool => "boolean?", "Search hidden files too.",
        #[serde(default)]
        no_ignore: bool => "boolean?", "Do not honour .gitignore.",
    }
}

crate::lua_options! {
    /// `search.find` options; an unknown key is an error.
    pub(crate) struct FindOpts as "fen.opts.SearchFind" for "search.find" {
        pattern: String => "string", "A glob.",
        path: Option<String> => "string?", "Directory searched (default `.`).",
        limit: Option<usize> => "integer?", "Paths at most.",
        #[serde(default)]
        follow_symlinks: bool => "boolean?", "Follow symbolic links to directories.",
        #[serde(default)]
        include_hidden: bool => "boolean?", "Include hidden files.",
        #[serde(default)]
        no_ignore: bool => "boolean?", "Do not honour .gitignore.",
    }
}

/// `search.grep{pattern, path, glob, ignore_case, literal, context, output_mode, head_limit,
/// include_hidden, no_ignore}` -> `{text, notes, total_matches, total_files, truncated}`.
/// Paths are shown relative to the working directory (as a path given to `read`).
async fn grep_fn(lua: Lua, t: Value) -> mlua::Result<(Value, Value)> {
    let g: GrepOpts = super::options(&lua, t)?;
    let path: String = g.path.unwrap_or_else(|| ".".into());
    let mut o = GrepOptions::new(g.pattern, expand_path(&path));
    o.glob = g.glob;
    o.ignore_case = g.ignore_case;
    o.literal = g.literal;
    o.context = g.context;
    o.head_limit = g.head_limit.unwrap_or(o.head_limit);
    o.include_hidden = g.include_hidden;
    o.no_ignore = g.no_ignore;
    o.output_mode = match g.output_mode.as_deref() {
        None | Some("content") => OutputMode::Content,
        Some("files_with_matches") => OutputMode::FilesWithMatches,
        Some("count") => OutputMode::Count,
        Some(other) => {
            return failure(
                &lua,
                format!("unknown output_mode {other:?}: use content, files_with_matches or count"),
            )
        }
    };
    let mode = o.output_mode;
    let (cancel, watcher) = cancel_flag(&lua);
    let outcome = blocking(move || search::grep(&o, &cancel)).await;
    watcher.abort();
    match outcome? {
        Ok(mut r) => {
            prefix_paths(&mut r, &path);
            let out = lua.create_table()?;
            out.set("text", search::render_text(&r, mode))?;
            out.set("notes", super::array(&lua, &search::render_notes(&r))?)?;
            out.set("total_matches", r.total_matches)?;
            out.set("total_files", r.total_files)?;
            out.set("truncated", r.truncated)?;
            out.set("ignored_matching_files", r.ignored_matching_files)?;
            out.set("skipped_binary", r.skipped_binary)?;
            success(out)
        }
        Err(e) => failure(&lua, e.to_string()),
    }
}

/// Makes the paths of a directory search usable as given to `read`: the core reports them
/// relative to the searched directory, the model works from the working directory.
fn prefix_paths(r: &mut search::GrepResult, given: &str) {
    let full = expand_path(given);
    if full == std::path::Path::new(".") || !r.root.is_dir() {
        return;
    }
    let base = full.to_string_lossy();
    let sep = if base.ends_with('/') { "" } else { "/" };
    for f in &mut r.files {
        f.path = format!("{base}{sep}{}", f.path);
    }
}

/// `search.find{pattern, path, limit, follow_symlinks, include_hidden, no_ignore}` ->
/// `{paths, total, rest, issues}` (paths relative to `path`, newest first).
async fn find_fn(lua: Lua, t: Value) -> mlua::Result<(Value, Value)> {
    let f: FindOpts = super::options(&lua, t)?;
    let path: String = f.path.unwrap_or_else(|| ".".into());
    let mut o = FindOptions::new(f.pattern, expand_path(&path));
    o.limit = f.limit.unwrap_or(o.limit);
    o.follow_symlinks = f.follow_symlinks;
    o.include_hidden = f.include_hidden;
    o.no_ignore = f.no_ignore;
    let (cancel, watcher) = cancel_flag(&lua);
    let outcome = blocking(move || search::find(&o, &cancel)).await;
    watcher.abort();
    match outcome? {
        Ok(r) => {
            let out = lua.create_table()?;
            out.set("paths", super::array(&lua, &r.entries)?)?;
            out.set("total", r.total_matched)?;
            out.set("rest", r.truncated)?;
            out.set("loops", r.issues.loops)?;
            out.set("permission_denied", r.issues.permission_denied)?;
            out.set("issues", super::array(&lua, &r.issues.messages)?)?;
            success(out)
        }
        Err(e) => failure(&lua, e.to_string()),
    }
}

/// The files of a tree, kept on the Rust side: ranking 20,000 paths is a native loop, and
/// only the few shown cross into Lua. The last query's matches are kept, so a letter typed
/// scores only those.
struct FileList(Arc<Vec<String>>, Mutex<crate::native::fuzzy::Narrowing>);

impl mlua::UserData for FileList {
    fn add_methods<M: mlua::UserDataMethods<Self>>(m: &mut M) {
        m.add_method("len", |_, this, ()| Ok(this.0.len()));
        m.add_method(
            "rank",
            |_, this, (query, limit): (String, Option<usize>)| {
                let ranked = this.1.lock().unwrap_or_else(|p| p.into_inner()).rank(
                    &this.0,
                    &query,
                    limit.unwrap_or(50),
                );
                Ok(ranked
                    .into_iter()
                    .map(|i| this.0[i].clone())
                    .collect::<Vec<_>>())
            },
        );
    }
}

async fn file_list_fn(lua: Lua, path: Option<String>) -> mlua::Result<(Value, Value)> {
    let mut o = FindOptions::new("", expand_path(path.as_deref().unwrap_or(".")));
    // Enough for any repository; a home directory's millions stop here.
    o.limit = 200_000;
    let cancel = AtomicBool::new(false);
    match blocking(move || search::find(&o, &cancel)).await? {
        Ok(r) => Ok((
            Value::UserData(lua.create_userdata(FileList(Arc::new(r.entries), Mutex::default()))?),
            Value::Nil,
        )),
        Err(e) => failure(&lua, e.to_string()),
    }
}
