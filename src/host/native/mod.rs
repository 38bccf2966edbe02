//! `require("fen.native")`: one table whose fields are the native modules' bindings. Each
//! binding is a thin adapter over a pure Rust core in `crate::native`: it converts arguments,
//! runs slow work off the Lua thread (`spawn_blocking`, awaited as an mlua async function), and
//! returns plain tables. Expected failures (a missing file, a bad pattern) come back as
//! `nil, message` so a tool can turn them into an error result; misuse raises.
//!
//! | field | module |
//! | --- | --- |
//! | `sanitize(text, max_bytes?)` | [`crate::native::sanitize`] |
//! | `truncate` | [`crate::native::truncate`]: `head`, `tail`, `head_tail`, `clip_lines`, `human_bytes` |
//! | `fs` | `read`, `write`, `list`, `expand`, `set_strict` ([`crate::native::read`], [`crate::native::fs`]) |
//! | `edit` | `apply` ([`crate::native::edit`]) |
//! | `search` | `grep`, `find` ([`crate::native::search`]) |
//! | `process` | `run` ([`crate::native::process`]) |
//! | `json` | `decode`, `encode`, `null` |
//! | `http` | `request` (plain or SSE, cancellable), `fetch_page` (webfetch), `backoff_ms` ([`crate::native::http`]) |
//! | `image` | `prepare(data, mime_type)` (a prompt's base64 image, checked and scaled; [`crate::native::image`]) |
//! | `sleep(ms)` | cancellable wait |
//! | `clock_ms()` | milliseconds on a monotonic clock (for intervals; not a date) |
//! | `term` | `read_line()` (async, nil at end of input), `isatty(fd)` |
//! | `line` | `read(prompt)` (async; line editing and history on a terminal, escape sequences removed without one), `interactive()`, `pending()` |
//! | `platform` | `{os, arch}` |
//! | `jobs` | `start`, `output`, `kill`, `list`, `running`, `on_exit` ([`crate::native::jobs`]) |
//! | `markup` | `front_matter`, `html_to_markdown`, `html_to_text` ([`crate::native::frontmatter`], [`crate::native::html`]) |
//! | `lsp` | `configure`, `prepare`, `after_change`, `sync`, `query`, `servers` ([`crate::native::lsp`]) |
//! | `mcp` | `configure`, `start`, `reconnect`, `wait`, `servers`, `server_for_tool`, `call`, `watch` ([`crate::native::mcp`]) |
//! | `auth` | `login`, `credential`, `models`, `status`, `logout`, `path` ([`crate::native::auth`]) |
//! | `subagent` | `start`, `wait`, `kill`, `list`, `info`, `running` ([`crate::native::subagent`]) |
//! | `checkpoint` | `workspace_of`, `snapshot`, `turns`, `rewind`, `prune` ([`crate::native::checkpoint`]) |
//! | `session` | `dir_for`, `create`, `open` (writers with `append`, `sync`, `close`), `resume`, `list` ([`crate::native::jsonl`]) |

mod auth;
pub mod checkpoint;
mod edit;
mod fs;
mod http;
mod image;
mod jobs;
mod line;
mod lsp;
mod markup;
mod mcp;
mod misc;
mod policy;
mod process;
mod search;
pub mod session;
mod subagent;
mod term;
mod text;

/// The run's read ledger, for the file bindings (`crate::host::run::RunContext::ledger`).
mod ledger {
    pub fn with<R>(
        lua: &mlua::Lua,
        f: impl FnOnce(&mut crate::native::ledger::ReadLedger) -> R,
    ) -> R {
        f(&mut crate::host::run::run(lua).ledger.borrow_mut())
    }
}

use mlua::{Lua, Table, Value};

/// The fields of `fen.native` made on first use (see [`module`]).
const LAZY: [&str; 19] = [
    "image",
    "auth",
    "checkpoint",
    "truncate",
    "fs",
    "edit",
    "search",
    "process",
    "json",
    "http",
    "term",
    "session",
    "jobs",
    "markup",
    "line",
    "policy",
    "mcp",
    "subagent",
    "lsp",
];

fn lazy_field(lua: &Lua, name: &str) -> mlua::Result<Value> {
    Ok(Value::Table(match name {
        "auth" => auth::module(lua)?,
        "checkpoint" => checkpoint::module(lua)?,
        "truncate" => text::truncate_module(lua)?,
        "fs" => fs::module(lua)?,
        "edit" => edit::module(lua)?,
        "search" => search::module(lua)?,
        "process" => process::module(lua)?,
        "json" => misc::json_module(lua)?,
        "http" => http::module(lua)?,
        "image" => image::module(lua)?,
        "term" => term::module(lua)?,
        "session" => session::module(lua)?,
        "jobs" => jobs::module(lua)?,
        "markup" => markup::module(lua)?,
        "line" => line::module(lua)?,
        "policy" => policy::module(lua)?,
        "mcp" => mcp::module(lua)?,
        "subagent" => subagent::module(lua)?,
        "lsp" => lsp::module(lua)?,
        _ => return Ok(Value::Nil),
    }))
}

/// Builds the `fen.native` table (called once, by `require`). The module tables are made on
/// first access (every extension requires `fen.native` at boot, few use most of it, and their
/// functions cost start-up time to make); `pairs` makes them all first, so the table lists the
/// same fields as if they had been made up front.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let native = lua.create_table()?;
    native.set("version", env!("CARGO_PKG_VERSION"))?;
    native.set("sanitize", text::sanitize_fn(lua)?)?;
    let platform = lua.create_table()?;
    platform.set("os", std::env::consts::OS)?;
    platform.set("arch", std::env::consts::ARCH)?;
    native.set("platform", platform)?;
    native.set("sleep", misc::sleep_fn(lua)?)?;
    native.set("clock_ms", misc::clock_ms_fn(lua)?)?;
    // fen's directories and the project folder, from the run context (resolved once).
    let ctx = crate::host::run::run(lua);
    let dirs = lua.create_table()?;
    dirs.set(
        "config_dir",
        ctx.paths.config_dir.to_string_lossy().as_ref(),
    )?;
    dirs.set("state_dir", ctx.paths.state_dir.to_string_lossy().as_ref())?;
    dirs.set("project_root", ctx.project_root.to_string_lossy().as_ref())?;
    native.set("paths", dirs)?;
    let meta = lua.create_table()?;
    meta.set(
        "__index",
        lua.create_function(|lua, (t, key): (Table, Value)| {
            let Value::String(name) = &key else {
                return Ok(Value::Nil);
            };
            let value = lazy_field(lua, &name.to_str()?)?;
            if !value.is_nil() {
                t.raw_set(key, value.clone())?;
            }
            Ok(value)
        })?,
    )?;
    let next: mlua::Function = lua.globals().get("next")?;
    meta.set(
        "__pairs",
        lua.create_function(move |lua, t: Table| {
            for name in LAZY {
                if t.raw_get::<Value>(name)?.is_nil() {
                    t.raw_set(name, lazy_field(lua, name)?)?;
                }
            }
            Ok((next.clone(), t, Value::Nil))
        })?,
    )?;
    native.set_metatable(Some(meta))?;
    Ok(native)
}

/// The cancellation token of the call that is running this native (see
/// `crate::kernel::calls`): a tool call's, the turn's, a command's; one nobody cancels outside
/// any scope.
pub fn cancel_token(lua: &Lua) -> tokio_util::sync::CancellationToken {
    crate::kernel::calls::current_cancel(lua)
}

/// Runs blocking work on tokio's blocking pool and awaits it.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> mlua::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| mlua::Error::runtime(format!("native task failed: {e}")))
}

/// `nil, message`: the shape of an expected failure.
pub(crate) fn failure(lua: &Lua, message: impl Into<String>) -> mlua::Result<(Value, Value)> {
    Ok((
        Value::Nil,
        Value::String(lua.create_string(message.into())?),
    ))
}

/// A Lua array that stays an array when empty (it serializes to `[]`, not `{}`).
pub(crate) fn array<T: serde::Serialize>(lua: &Lua, items: &[T]) -> mlua::Result<Value> {
    use mlua::LuaSerdeExt;
    lua.to_value(items)
}

/// `{{name, file}, ...}`: the project servers (MCP, language) left out until the folder is
/// trusted, as `mcp.configure` and `lsp.configure` report them.
pub(crate) fn untrusted_list(
    lua: &Lua,
    untrusted: &[(String, std::path::PathBuf)],
) -> mlua::Result<Table> {
    let out = lua.create_table()?;
    for (name, file) in untrusted {
        let u = lua.create_table()?;
        u.set("name", name.as_str())?;
        u.set("file", file.to_string_lossy().as_ref())?;
        out.push(u)?;
    }
    Ok(out)
}

pub(crate) use crate::host::options::options;

/// The options classes of the `fen.native` bindings (for the generated annotations).
pub fn option_classes() -> Vec<crate::host::options::Class> {
    use crate::host::options::class;
    vec![
        class::<auth::LoginOptions>(),
        class::<auth::McpLoginOptions>(),
        class::<auth::McpLogoutOptions>(),
        class::<checkpoint::SnapshotOptions>(),
        class::<checkpoint::RewindOptions>(),
        class::<fs::ReadOpts>(),
        class::<fs::ListOpts>(),
        class::<http::RequestOpts>(),
        class::<http::FetchPageOpts>(),
        class::<jobs::StartOpts>(),
        class::<jobs::OutputOpts>(),
        class::<lsp::ConfigureOpts>(),
        class::<lsp::QueryOpts>(),
        class::<mcp::ConfigureOpts>(),
        class::<mcp::ServersOpts>(),
        class::<policy::NewOpts>(),
        class::<policy::RuleOpt>(),
        class::<policy::SandboxOpts>(),
        class::<policy::SandboxInfoOpts>(),
        class::<process::RunOpts>(),
        class::<search::GrepOpts>(),
        class::<search::FindOpts>(),
        class::<session::ExportOpts>(),
        class::<subagent::StartOptions>(),
        class::<subagent::Handlers>(),
        class::<subagent::WaitOpts>(),
        class::<term::OpenOpts>(),
    ]
}

/// A child's state on its info table: `status` ("running" | "exited N" | "signal N"),
/// `running`, and `exit_code` or `signal` once it ended (jobs and subagent runs).
pub(crate) fn set_child_status(
    t: &Table,
    status: crate::native::registry::ChildStatus,
) -> mlua::Result<()> {
    use crate::native::registry::ChildStatus;
    t.set("status", status.to_string())?;
    t.set("running", status == ChildStatus::Running)?;
    match status {
        ChildStatus::Exited(n) => t.set("exit_code", n),
        ChildStatus::Signaled(n) => t.set("signal", n),
        ChildStatus::Running => Ok(()),
    }
}

/// `value, nil`.
pub(crate) fn success(value: Table) -> mlua::Result<(Value, Value)> {
    Ok((Value::Table(value), Value::Nil))
}

pub use crate::native::fs::expand_path;

#[cfg(test)]
mod tests {
    /// The module tables are made on first access, once; `pairs` lists every field.
    #[test]
    fn native_fields_are_made_on_first_use_and_listed_by_pairs() {
        let lua = crate::host::vm::new_state().unwrap();
        let out: String = lua
            .load(
                r#"
                local native = require("fen.native")
                local before = rawget(native, "fs") == nil
                local same = native.fs == native.fs and type(native.fs.read) == "function"
                local names = {}
                for k, v in pairs(native) do names[#names + 1] = k .. ":" .. type(v) end
                table.sort(names)
                return tostring(before) .. " " .. tostring(same) .. " " .. tostring(native.nope)
                  .. " " .. table.concat(names, ",")
                "#,
            )
            .eval()
            .unwrap();
        assert_eq!(
            out,
            "true true nil auth:table,checkpoint:table,clock_ms:function,edit:table,fs:table,http:table,image:table,jobs:table,json:table,line:table,\
             lsp:table,markup:table,mcp:table,paths:table,platform:table,policy:table,process:table,sanitize:function,search:table,\
             session:table,sleep:function,subagent:table,term:table,truncate:table,version:string"
        );
    }
}
