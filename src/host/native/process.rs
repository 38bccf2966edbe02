//! Binding of the process supervisor: `native.process.run`.

use super::{expand_path, failure, success};
use crate::host::run::run;
use crate::native::process::{self, ProcessSpec};
use crate::native::sandbox::Child;
use mlua::{Function, Lua, Table, Value};
use std::time::Duration;

crate::lua_options! {
    pub(crate) struct RunOpts as "fen.opts.ProcessRun" for "process.run" {
        command: String => "string", "The shell command line (run by `sh -c`).",
        cwd: Option<String> => "string?", "Working directory (`~` expanded); default the current one.",
        timeout_ms: Option<f64> => "number?", "Kill the process group after this long.",
        env: Option<std::collections::BTreeMap<String, String>> => "table<string, string>?", "Variables added to the child's environment.",
        head_bytes: Option<usize> => "integer?", "Bytes kept from the start of the output (default: what fits the sanitizer's cap).",
        tail_bytes: Option<usize> => "integer?", "Bytes kept from the end of the output.",
        sandbox: Option<bool> => "boolean?", "`false` runs outside the tool sandbox (a rerun the user approved); default true.",
        stdin: Option<String> => "string?", "Text written to the command's stdin (hooks get their JSON this way); at most 8 MiB.",
    }
}

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("run", lua.create_async_function(run_fn)?)?;
    m.set("run_all", lua.create_async_function(run_all_fn)?)?;
    Ok(m)
}

/// `process.run_all({opts, ...})` -> `{{result} | {error = message}, ...}`: runs every command
/// as `run` does (same sandbox, same scrubbed environment), all at once, and returns when the
/// last one ended (each bounded by its own `timeout_ms`). Hooks of one event run this way.
async fn run_all_fn(lua: Lua, list: Vec<Value>) -> mlua::Result<Table> {
    let runs = list
        .into_iter()
        .map(|opts| run_fn(lua.clone(), (opts, None)));
    let results = futures_util::future::join_all(runs).await;
    let out = lua.create_table()?;
    for (i, r) in results.into_iter().enumerate() {
        let row = match r {
            Ok((Value::Table(t), _)) => t,
            Ok((_, err)) => {
                let t = lua.create_table()?;
                t.set("error", err)?;
                t
            }
            Err(e) => {
                let t = lua.create_table()?;
                t.set("error", e.to_string())?;
                t
            }
        };
        out.raw_set(i + 1, row)?;
    }
    Ok(out)
}

/// `process.run({command, cwd, timeout_ms, env = {K = V}, stdin, head_bytes, tail_bytes, sandbox},
/// on_output?)` -> `{exit_code, signal, timed_out, cancelled, duration_ms, total_bytes, text,
/// truncated, escaped_bytes, spill_path, background_pids, sandboxed, sandbox_blocked,
/// sandbox_hint, unsandboxed_rule, plan}` (`sandbox_hint`: the way out when nobody can be asked) or `nil, message` (bad cwd, spawn failure). `unsandboxed_rule` names
/// the `sandbox.unsandboxed` rule that ran the command outside the sandbox; `plan` says why
/// it ran where it ran (`sandbox::plan`). Head and tail
/// default to what fits the sanitizer's cap (about 31 KB each). `on_output(text)` receives throttled live chunks.
/// The turn's cancellation (Ctrl-C) kills the process group.
async fn run_fn(
    lua: Lua,
    (opts, on_output): (Value, Option<Function>),
) -> mlua::Result<(Value, Value)> {
    let opts: RunOpts = super::options(&lua, opts)?;
    let mut spec = ProcessSpec::new(opts.command);
    spec.cwd = opts.cwd.map(|c| expand_path(&c));
    spec.timeout = opts
        .timeout_ms
        .map(|ms| Duration::from_millis(ms.max(0.0) as u64));
    // Text for the command's stdin (hooks get their JSON this way); at most 8 MiB.
    spec.stdin = opts
        .stdin
        .map(|s| std::sync::Arc::from(s.into_bytes().as_slice()));
    spec.env.extend(opts.env.unwrap_or_default());
    // Head + tail must fit the sanitizer's cap with room for the markers and the status line,
    // or the cap would cut the tail and the exit status the model most needs.
    let budget = keep_budget(crate::native::sanitize::default_max_bytes());
    spec.head_bytes = opts.head_bytes.unwrap_or(spec.head_bytes.min(budget));
    spec.tail_bytes = opts.tail_bytes.unwrap_or(spec.tail_bytes.min(budget));
    let ctx = run(&lua);
    spec.spill_dir = Some(ctx.paths.state_dir.join("tool-output"));
    // Tool commands run in the sandbox the permissions extension chose (`policy.use_sandbox`),
    // unless the call says `sandbox = false` (a rerun the user approved outside it) or a
    // `sandbox.unsandboxed` rule covers the command (an "always" answer to an escalation);
    // provider keys and other secrets never reach them (one plan: `sandbox::plan`).
    let requested = opts.sandbox.unwrap_or(true);
    let plan = ctx
        .plan(Child::Shell {
            command: &spec.command,
            requested,
        })
        .await?;
    spec.env_remove = plan.env_remove;
    spec.sandbox = plan.sandbox;
    let unsandboxed_rule = plan.rule;
    let plan_reason = plan.reason;
    let sandbox_policy = spec.sandbox.as_ref().map(|s| s.policy.clone());
    let cancel = super::cancel_token(&lua);
    let mut forward = |chunk: &str| {
        if let Some(f) = &on_output {
            // A failing progress callback must not kill the command it reports on.
            let _ = f.call::<()>(chunk);
        }
    };
    let sink: Option<&mut (dyn FnMut(&str) + '_)> = if on_output.is_some() {
        Some(&mut forward)
    } else {
        None
    };
    let r = match process::run(spec, cancel, sink).await {
        Ok(r) => r,
        Err(e) => return failure(&lua, e.to_string()),
    };
    let t = lua.create_table()?;
    // A failure caused by the sandbox names the boundary it hit and how to allow it.
    if let Some(policy) = &sandbox_policy {
        let tail_start = r.text.len().saturating_sub(4096);
        let tail_start = (tail_start..r.text.len())
            .find(|i| r.text.is_char_boundary(*i))
            .unwrap_or(r.text.len());
        if let Some(b) =
            crate::native::sandbox::classify(policy, r.exit_code, &r.text[tail_start..])
        {
            t.set("sandbox_blocked", b.line())?;
            t.set("sandbox_hint", b.headless_hint())?;
        }
    }
    t.set("sandboxed", sandbox_policy.is_some())?;
    t.set("unsandboxed_rule", unsandboxed_rule)?;
    t.set("plan", plan_reason)?;
    t.set("exit_code", r.exit_code)?;
    t.set("signal", r.signal)?;
    t.set("timed_out", r.timed_out)?;
    t.set("cancelled", r.cancelled)?;
    t.set("duration_ms", r.duration.as_millis() as u64)?;
    t.set("total_bytes", r.total_bytes)?;
    t.set("text", r.text)?;
    t.set("truncated", r.truncated)?;
    t.set("escaped_bytes", r.escaped_bytes)?;
    t.set(
        "spill_path",
        r.spill_path.map(|p| p.to_string_lossy().into_owned()),
    )?;
    t.set("spill_error", r.spill_error)?;
    t.set("background_pids", super::array(&lua, &r.background_pids)?)?;
    success(t)
}

/// Bytes of head (and of tail) that fit a result capped at `cap` bytes, leaving room for the
/// omission marker (with the spill path) and the status lines.
fn keep_budget(cap: usize) -> usize {
    if cap > 8192 {
        (cap - 2048) / 2
    } else {
        cap / 4
    }
}
