//! `native.checkpoint`: snapshots of the workspace in a shadow git repository and rewinds
//! ([`crate::native::checkpoint`]). Every function runs its git children on the blocking pool;
//! failures come back as `nil, message`.

use crate::kernel::convert;
use crate::native::checkpoint::{self as cp, rewind, session, Options, Shadow};
use mlua::{Lua, Table, Value};
use std::path::{Path, PathBuf};

use super::{blocking, failure};

fn state_dir(lua: &Lua) -> PathBuf {
    crate::host::run::run(lua).paths.state_dir.clone()
}

crate::lua_options! {
    pub(crate) struct SnapshotOptions as "fen.opts.CheckpointSnapshot" for "checkpoint.snapshot" {
        workspace: String => "string", "The directory snapshotted.",
        session: String => "string", "The session id.",
        session_path: Option<String> => "string?", "The session file (its records name the snapshots).",
        name: String => "string", "A label for the snapshot.",
        #[serde(default)]
        include: Vec<String> => "string[]?", "Ignored files to snapshot all the same (globs).",
        max_file_bytes: Option<u64> => "integer?", "Larger files are skipped.",
        since: Option<String> => "string?", "Diff against this commit and return the changed paths as `files`.",
        #[serde(default)]
        baseline: bool => "boolean?", "Make this snapshot the session's baseline (the tree fen last recorded).",
    }
}

crate::lua_options! {
    pub(crate) struct RewindOptions as "fen.opts.CheckpointRewind" for "checkpoint.rewind" {
        session_path: String => "string", "The session file (its records name the snapshots).",
        turn: u64 => "integer", "Rewind to before this turn.",
        #[serde(default)]
        code: bool => "boolean?", "Restore the files.",
        #[serde(default)]
        conversation: bool => "boolean?", "Branch the conversation.",
        #[serde(default)]
        apply: bool => "boolean?", "Do it (default: only the plan).",
        #[serde(default)]
        force: bool => "boolean?", "Overwrite files changed since.",
        #[serde(default)]
        include: Vec<String> => "string[]?", "Ignored files to snapshot all the same (globs).",
        max_file_bytes: Option<u64> => "integer?", "Larger files are skipped.",
    }
}

/// The settings files that may hold `checkpoints`: the user's, then the project's.
pub fn settings_files(paths: &crate::kernel::settings::Paths, workspace: &Path) -> Vec<PathBuf> {
    vec![
        paths.config_dir.join("settings.json"),
        workspace.join(".fen").join("settings.json"),
        workspace.join(".fen").join("settings.local.json"),
    ]
}

fn options(include: Vec<String>, max: Option<u64>) -> Options {
    Options {
        include,
        max_file_bytes: max.unwrap_or(cp::DEFAULT_MAX_FILE_BYTES),
    }
}

fn to_lua<T: serde::Serialize>(lua: &Lua, v: &T) -> mlua::Result<Value> {
    let json = serde_json::to_value(v).map_err(mlua::Error::external)?;
    convert::json_to_lua(lua, &json)
}

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "workspace_of",
        lua.create_function(|_, dir: String| {
            Ok(cp::workspace_of(Path::new(&dir))
                .to_string_lossy()
                .into_owned())
        })?,
    )?;
    // settings(workspace) -> {enabled, include, max_file_bytes, max_total_bytes, problems}
    m.set(
        "settings",
        lua.create_async_function(|lua, workspace: String| async move {
            let ctx = crate::host::run::run(&lua);
            let (s, problems) = if Path::new(&workspace) == ctx.project_root {
                // The project's files: the run's settings, read once.
                let (files, _) = ctx.settings().files();
                let files: Vec<(PathBuf, serde_json::Value)> =
                    files.into_iter().map(|(p, v, _)| (p, v)).collect();
                cp::settings_of(&files)
            } else {
                let files = settings_files(&ctx.paths, Path::new(&workspace));
                blocking(move || cp::read_settings(&files)).await?
            };
            let t = to_lua(&lua, &s)?;
            if let Value::Table(t) = &t {
                t.set("problems", problems)?;
            }
            Ok(t)
        })?,
    )?;
    // snapshot{workspace, session, session_path?, name, include?, max_file_bytes?, since?,
    // baseline?} -> {commit, skipped, files?} | nil, message
    m.set(
        "snapshot",
        lua.create_async_function(|lua, opts: Value| async move {
            let o: SnapshotOptions = super::options(&lua, opts)?;
            let state = state_dir(&lua);
            let r = blocking(move || -> cp::Result<serde_json::Value> {
                let shadow = Shadow::open(
                    &state,
                    Path::new(&o.workspace),
                    &o.session,
                    o.session_path.as_deref().map(Path::new),
                )?;
                let snap = shadow.snapshot(&options(o.include, o.max_file_bytes), &o.name)?;
                if o.baseline {
                    shadow.set_baseline(&snap.commit)?;
                }
                let files = match &o.since {
                    Some(from) if shadow.git.has_commit(from) => {
                        Some(shadow.changed(from, &snap.commit)?)
                    }
                    _ => None,
                };
                Ok(serde_json::json!({
                    "commit": snap.commit, "skipped": snap.skipped, "files": files,
                }))
            })
            .await?;
            match r {
                Ok(v) => Ok((convert::json_to_lua(&lua, &v)?, Value::Nil)),
                Err(e) => failure(&lua, e.to_string()),
            }
        })?,
    )?;
    // turns(session_path) -> {session_id, cwd, turns = {...oldest first}} | nil, message
    m.set(
        "turns",
        lua.create_async_function(|lua, path: String| async move {
            match blocking(move || session::turns(Path::new(&path))).await? {
                Ok(t) => Ok((to_lua(&lua, &t)?, Value::Nil)),
                Err(e) => failure(&lua, e.to_string()),
            }
        })?,
    )?;
    // rewind{session_path, turn, code?, conversation?, apply?, force?, include?,
    // max_file_bytes?} -> outcome | nil, message
    m.set(
        "rewind",
        lua.create_async_function(|lua, opts: Value| async move {
            let o: RewindOptions = super::options(&lua, opts)?;
            let req = rewind::Request {
                state_dir: state_dir(&lua),
                session_path: PathBuf::from(o.session_path),
                turn: o.turn,
                code: o.code,
                conversation: o.conversation,
                apply: o.apply,
                force: o.force,
                options: options(o.include, o.max_file_bytes),
            };
            match blocking(move || rewind::run(&req)).await? {
                Ok(out) => Ok((to_lua(&lua, &out)?, Value::Nil)),
                Err(e) => failure(&lua, e.to_string()),
            }
        })?,
    )?;
    // prune(max_total_bytes?) -> {dropped sessions} | nil, message
    m.set(
        "prune",
        lua.create_async_function(|lua, max: Option<u64>| async move {
            let max = max.unwrap_or(cp::DEFAULT_MAX_TOTAL_BYTES);
            let state = state_dir(&lua);
            match blocking(move || cp::prune(&state, max)).await? {
                Ok(d) => Ok((to_lua(&lua, &d)?, Value::Nil)),
                Err(e) => failure(&lua, e.to_string()),
            }
        })?,
    )?;
    Ok(m)
}
