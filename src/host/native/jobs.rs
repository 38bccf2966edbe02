//! `native.jobs`: background shell jobs ([`crate::native::jobs`]). Logs go to
//! `$XDG_STATE_HOME/fen/jobs/`.

use crate::host::run::run;
use crate::native::jobs::{self, JobInfo, JobSpec};
use crate::native::sandbox::Child;
use mlua::{Function, Lua, Table, Value};
use std::time::Duration;

fn info_table(lua: &Lua, info: &JobInfo) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("id", info.id.as_str())?;
    t.set("pid", info.pid)?;
    t.set("command", info.command.as_str())?;
    t.set("log", info.log.to_string_lossy().as_ref())?;
    super::set_child_status(&t, info.status)?;
    t.set("logged", info.logged)?;
    t.set("killed", info.killed)?;
    Ok(t)
}

crate::lua_options! {
    pub(crate) struct StartOpts as "fen.opts.JobsStart" for "jobs.start" {
        command: String => "string", "The shell command line.",
        cwd: Option<String> => "string?", "Working directory; default the current one.",
        log_cap: Option<u64> => "integer?", "Bytes of output the log keeps.",
    }
}

crate::lua_options! {
    pub(crate) struct OutputOpts as "fen.opts.JobsOutput" for "jobs.output" {
        wait_ms: Option<u64> => "integer?", "Wait this long for new output or the exit (default 0).",
        max_bytes: Option<usize> => "integer?", "Bytes of new output returned at most (default 64 KiB).",
    }
}

/// `start{command, cwd?, log_cap?}` *async* -> info | nil, message (the job runs where a
/// bash call of the same command would: the sandbox `policy.use_sandbox` chose, unless a
/// `sandbox.unsandboxed` rule covers it, named by the info's `unsandboxed_rule`); `output(id, {wait_ms,
/// max_bytes})` *async* -> `{text, skipped, capped, ...info}` | nil, message; `kill(id)`
/// *async* -> info | nil, message; `list()` -> [info]; `running()` -> n;
/// `on_exit(id, fn)` calls `fn(info)` once the job's shell has exited.
/// info = `{id, pid, command, log, status ("running" | "exited N" | "signal N"), running,
/// exit_code?, signal?, logged, killed}`.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("max_running", jobs::MAX_RUNNING)?;
    m.set(
        "start",
        lua.create_async_function(|lua, spec: Value| async move {
            let StartOpts {
                command,
                cwd,
                log_cap: cap,
            } = super::options(&lua, spec)?;
            let ctx = run(&lua);
            // Jobs run where the shell tool's commands run: the same sandbox, left only by
            // the same `sandbox.unsandboxed` rules (one plan for both).
            let plan = ctx
                .plan(Child::Shell {
                    command: &command,
                    requested: true,
                })
                .await?;
            let spec = JobSpec {
                command,
                cwd: cwd.map(Into::into),
                log_dir: ctx.paths.state_dir.join("jobs"),
                log_cap: cap.unwrap_or(jobs::DEFAULT_LOG_CAP),
                env: Vec::new(),
                // Provider keys and other secrets never reach a job.
                env_remove: plan.env_remove,
                sandbox: plan.sandbox,
            };
            match jobs::start(spec).await {
                Ok(info) => {
                    let t = info_table(&lua, &info)?;
                    t.set("unsandboxed_rule", plan.rule)?;
                    t.set("plan", plan.reason)?;
                    super::success(t)
                }
                Err(e) => super::failure(&lua, e.to_string()),
            }
        })?,
    )?;
    m.set(
        "output",
        lua.create_async_function(|lua, (id, opts): (String, Value)| async move {
            let o: OutputOpts = super::options(&lua, opts)?;
            let (wait_ms, max_bytes) = (o.wait_ms.unwrap_or(0), o.max_bytes.unwrap_or(64 * 1024));
            let cancel = super::cancel_token(&lua);
            let wait = jobs::output(&id, Duration::from_millis(wait_ms), max_bytes);
            let r = tokio::select! {
                r = wait => r,
                _ = cancel.cancelled() => jobs::output(&id, Duration::ZERO, max_bytes).await,
            };
            match r {
                Ok(o) => {
                    let t = info_table(&lua, &o.info)?;
                    t.set("text", lua.create_string(&o.bytes)?)?;
                    t.set("skipped", o.skipped)?;
                    t.set("capped", o.capped)?;
                    super::success(t)
                }
                Err(e) => super::failure(&lua, e.to_string()),
            }
        })?,
    )?;
    m.set(
        "kill",
        lua.create_async_function(|lua, id: String| async move {
            match jobs::kill(&id, jobs::KILL_GRACE).await {
                Ok(info) => super::success(info_table(&lua, &info)?),
                Err(e) => super::failure(&lua, e.to_string()),
            }
        })?,
    )?;
    m.set(
        "list",
        lua.create_function(|lua, ()| {
            let t = lua.create_table()?;
            for (i, info) in jobs::list().iter().enumerate() {
                t.raw_set(i + 1, info_table(lua, info)?)?;
            }
            Ok(t)
        })?,
    )?;
    m.set("running", lua.create_function(|_, ()| Ok(jobs::running()))?)?;
    m.set(
        "on_exit",
        lua.create_function(|lua, (id, f): (String, Function)| {
            let lua = lua.clone();
            tokio::task::spawn_local(async move {
                if let Ok(info) = jobs::wait_exit(&id).await {
                    // The callback reports its own failures (it runs detached from any call).
                    if let Ok(t) = info_table(&lua, &info) {
                        let _ = f.call::<Value>(t);
                    }
                }
            });
            Ok(())
        })?,
    )?;
    Ok(m)
}
