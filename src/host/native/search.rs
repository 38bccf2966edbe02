//! Bindings of the in-process search: `native.search.grep` and `native.search.find`, run on
//! the blocking pool.

use super::{blocking, expand_path, failure, success};
use crate::native::search::{self, FindOptions, GrepOptions, OutputMode};
use mlua::{Lua, Table, Value};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("grep", lua.create_async_function(grep_fn)?)?;
    m.set("find", lua.create_async_function(find_fn)?)?;
    Ok(m)
}

/// A flag the walk polls, raised when the running turn is cancelled (Ctrl-C, `/cancel`), so a
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

fn opt<T: mlua::FromLua>(t: &Table, key: &str) -> mlua::Result<Option<T>> {
    t.get::<Option<T>>(key)
}

/// `search.grep{pattern, path, glob, ignore_case, literal, context, output_mode, head_limit,
/// include_hidden, no_ignore}` -> `{text, notes, total_matches, total_files, truncated}`.
/// Paths are shown relative to the working directory (as a path given to `read`).
async fn grep_fn(lua: Lua, t: Table) -> mlua::Result<(Value, Value)> {
    let pattern: String = t.get("pattern")?;
    let path: String = opt(&t, "path")?.unwrap_or_else(|| ".".into());
    let mut o = GrepOptions::new(pattern, expand_path(&path));
    o.glob = opt(&t, "glob")?;
    o.ignore_case = opt(&t, "ignore_case")?.unwrap_or(false);
    o.literal = opt(&t, "literal")?.unwrap_or(false);
    o.context = opt(&t, "context")?.unwrap_or(0);
    o.head_limit = opt(&t, "head_limit")?.unwrap_or(o.head_limit);
    o.include_hidden = opt(&t, "include_hidden")?.unwrap_or(false);
    o.no_ignore = opt(&t, "no_ignore")?.unwrap_or(false);
    o.output_mode = match opt::<String>(&t, "output_mode")?.as_deref() {
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
async fn find_fn(lua: Lua, t: Table) -> mlua::Result<(Value, Value)> {
    let pattern: String = t.get("pattern")?;
    let path: String = opt(&t, "path")?.unwrap_or_else(|| ".".into());
    let mut o = FindOptions::new(pattern, expand_path(&path));
    o.limit = opt(&t, "limit")?.unwrap_or(o.limit);
    o.follow_symlinks = opt(&t, "follow_symlinks")?.unwrap_or(false);
    o.include_hidden = opt(&t, "include_hidden")?.unwrap_or(false);
    o.no_ignore = opt(&t, "no_ignore")?.unwrap_or(false);
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
