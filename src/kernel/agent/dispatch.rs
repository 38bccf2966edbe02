//! Tool dispatch for one assistant turn: read the calls out of the message, refuse several
//! mutations of one path, run the `before_tool` hooks (async: a hook may wait for an answer),
//! then the tool pipeline — parallel-safe calls of a run concurrently, exclusive ones in order,
//! each with a cancellation token of its own (a child of the turn's) — and append exactly one
//! result per call, in call order.

use super::context::result_message;
use super::{append, emit, event, Agent};
use crate::kernel::calls::{self, Scope};
use crate::kernel::convert;
use crate::kernel::state::Inner;
use crate::kernel::tools::{self, ToolCallContext, ToolOutcome};
use crate::kernel::ui;
use mlua::{Function, Lua, Table, Value};
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// The result a call gets when the turn was cancelled before or while it ran.
pub const CANCELLED: &str = "[cancelled] tool call cancelled before completion";

/// A tool call block of an assistant message.
#[derive(Clone)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub block: Table,
    pub args: serde_json::Value,
    /// Set when the arguments could not be read (they are not JSON, or not an object).
    pub bad_args: Option<String>,
}

/// The tool calls of an assistant message, in order.
pub fn tool_calls(lua: &Lua, message: &Table) -> mlua::Result<Vec<Call>> {
    let mut out = Vec::new();
    let Ok(content) = message.get::<Table>("content") else {
        return Ok(out);
    };
    for (n, b) in content.sequence_values::<Table>().flatten().enumerate() {
        if b.get::<Option<String>>("type")?.as_deref() != Some("tool-call") {
            continue;
        }
        let id = b
            .get::<Option<String>>("id")?
            .unwrap_or_else(|| format!("call_{n}"));
        let name = b.get::<Option<String>>("name")?.unwrap_or_default();
        let (args, bad_args) = match b.get::<Value>("arguments")? {
            Value::Nil => (serde_json::json!({}), None),
            v => match convert::lua_to_json(lua, &v) {
                Ok(args) => (args, None),
                Err(e) => (
                    serde_json::json!({}),
                    Some(format!(
                        "error: the arguments of {name} cannot be read: {e}"
                    )),
                ),
            },
        };
        // The provider could not decode the streamed arguments (truncated or malformed JSON):
        // say so, rather than report the empty table left in their place as a missing property.
        let bad_args = match b.get::<Option<String>>("parse_error")? {
            Some(err) => Some(format!(
                "error: the arguments of this {name} call are not valid JSON ({err}); the tool did not run. Send the call again with complete JSON arguments."
            )),
            None => bad_args,
        };
        // Empty Lua tables decode as arrays or objects by guess; an argument list is an object.
        let args = if args.as_array().is_some_and(|a| a.is_empty()) {
            serde_json::json!({})
        } else {
            args
        };
        out.push(Call {
            id,
            name,
            block: b,
            args,
            bad_args,
        });
    }
    Ok(out)
}

/// The tool spec of a call, if the tool is registered.
fn spec_of(inner: &Inner, name: &str) -> Option<Table> {
    inner
        .registry
        .borrow()
        .get("tool", name)
        .map(|c| c.spec.clone())
}

/// The paths a call mutates, from its tool's `mutates` declaration: argument names such as
/// `"path"` or `"files[].path"` (a field of each element of an array argument).
fn mutated_paths(inner: &Inner, call: &Call) -> Vec<String> {
    let Some(spec) = spec_of(inner, &call.name) else {
        return Vec::new();
    };
    let declared: Vec<String> = spec
        .get::<Option<Vec<String>>>("mutates")
        .ok()
        .flatten()
        .unwrap_or_default();
    let mut paths = Vec::new();
    for decl in declared {
        match decl.split_once("[].") {
            Some((array, field)) => {
                if let Some(items) = call.args.get(array).and_then(|f| f.as_array()) {
                    paths.extend(
                        items
                            .iter()
                            .filter_map(|i| i.get(field).and_then(|p| p.as_str()))
                            .map(str::to_string),
                    );
                }
            }
            None => {
                if let Some(p) = call.args.get(decl.as_str()).and_then(|p| p.as_str()) {
                    paths.push(p.to_string());
                }
            }
        }
    }
    paths
        .into_iter()
        .map(|p| {
            let full = crate::native::fs::expand_path(&p);
            std::fs::canonicalize(&full)
                .unwrap_or(full)
                .to_string_lossy()
                .into_owned()
        })
        .collect()
}

/// The `ctx` a `before_tool` hook gets: `call_id`, `tool`, a copy of the arguments (what a
/// hook does to it cannot change what runs), `cwd`, the tool's `risk` and `concurrency`, and
/// `ask(question)`, answered by the active presenter (headless ones answer nil, "no user"),
/// unless a `before_ask` hook answers it first (then `answer, "hook"`).
fn hook_ctx(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Agent,
    call: &Call,
    args: &serde_json::Value,
    spec: &Table,
) -> mlua::Result<Table> {
    let ctx = lua.create_table()?;
    ctx.set("call_id", call.id.as_str())?;
    ctx.set("tool_call_id", call.id.as_str())?;
    ctx.set("tool", call.name.as_str())?;
    ctx.set("args", convert::json_to_lua(lua, args)?)?;
    ctx.set("cwd", agent.config.cwd.to_string_lossy().as_ref())?;
    ctx.set("risk", spec.get::<Value>("risk")?)?;
    ctx.set("concurrency", spec.get::<Value>("concurrency")?)?;
    let i = inner.clone();
    let (id, tool, args) = (call.id.clone(), call.name.clone(), args.clone());
    ctx.set(
        "ask",
        lua.create_async_function(move |lua, question: Value| {
            let (i, id, tool, args) = (i.clone(), id.clone(), tool.clone(), args.clone());
            async move {
                // Time spent waiting for a person (or a hook answering for them) does not
                // count against the hook's budget.
                let t0 = Instant::now();
                let about = lua.create_table()?;
                about.set("tool", tool.as_str())?;
                about.set("args", convert::json_to_lua(&lua, &args)?)?;
                about.set("call_id", id.as_str())?;
                let answer = ui::ask(&lua, &i, question, about).await;
                calls::with_current_scope(&lua, |s| s.extend(t0.elapsed()));
                answer
            }
        })?,
    )?;
    Ok(ctx)
}

/// Runs the `before_tool` hooks in registration order with the call's cancellation; the first
/// veto (or raise) wins (`Err`). Cancelling the turn while a hook waits resolves it as a veto
/// with reason "cancelled". A hook returning `{args = {...}}` replaces the arguments the later
/// hooks judge and the tool runs with (`Ok(Some(args))`).
async fn run_hooks(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Agent,
    call: &Call,
    spec: &Table,
    cancel: &CancellationToken,
    turn: &CancellationToken,
) -> Result<Option<serde_json::Value>, String> {
    let mut replaced: Option<serde_json::Value> = None;
    // By `order` (default 100), then registration: the permission policy (order 0) decides
    // first; the hooks after it can only tighten.
    let mut hooks: Vec<(f64, String, Function)> = inner
        .registry
        .borrow()
        .active("hook")
        .iter()
        .filter_map(|c| {
            let order = c.spec.get::<Option<f64>>("order").ok().flatten();
            c.spec
                .get::<Option<Function>>("before_tool")
                .ok()
                .flatten()
                .map(|f| (order.unwrap_or(100.0), c.owner.clone(), f))
        })
        .collect();
    hooks.sort_by(|a, b| a.0.total_cmp(&b.0));
    for (_, owner, f) in hooks {
        let current = replaced.as_ref().unwrap_or(&call.args);
        let ctx = match hook_ctx(lua, inner, agent, call, current, spec) {
            Ok(c) => c,
            Err(e) => return Err(format!("error: {} was blocked: {e}", call.name)),
        };
        let args = ctx.get::<Value>("args").unwrap_or(Value::Nil);
        let scope = Scope::new(
            cancel.clone(),
            Some(inner.handler_budget.get()),
            &format!("the before_tool hook of {owner}"),
        )
        .interrupting(turn);
        let verdict =
            calls::call_async_cancellable::<Value>(lua, &f, (call.name.as_str(), args, ctx), scope)
                .await;
        match verdict {
            _ if cancel.is_cancelled() => {
                return Err(format!("error: {} was blocked: cancelled", call.name));
            }
            Ok(Value::Table(v)) if v.get::<Option<bool>>("block").ok().flatten() == Some(true) => {
                let reason: String = v
                    .get::<Option<String>>("reason")
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| "no reason given".into());
                // A hook that words its own denial ("permission denied: ...") is passed on as is.
                if v.get::<Option<bool>>("verbatim").ok().flatten() == Some(true) {
                    return Err(reason);
                }
                return Err(format!(
                    "error: {} was blocked by {owner}: {reason}",
                    call.name
                ));
            }
            Ok(Value::Table(v)) => {
                if let Ok(Some(new_args)) = v.get::<Option<Table>>("args") {
                    match convert::lua_to_json(lua, &Value::Table(new_args)) {
                        Ok(j @ serde_json::Value::Object(_)) => replaced = Some(j),
                        _ => {
                            return Err(format!(
                                "error: {} was blocked: the hook of {owner} returned arguments that are not an object",
                                call.name
                            ))
                        }
                    }
                }
            }
            Ok(_) => {}
            Err(e) => {
                return Err(format!(
                    "error: {} was blocked because the hook of {owner} failed: {}",
                    call.name,
                    convert::error_parts(&e).0
                ))
            }
        }
    }
    Ok(replaced)
}

/// One call through hooks and the tool pipeline, with its own token (a child of the turn's).
async fn run_one(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Agent,
    call: &Call,
    turn: &CancellationToken,
) -> ToolOutcome {
    if turn.is_cancelled() {
        return ToolOutcome::error(CANCELLED);
    }
    if !inner.tool_filter.borrow().allows(&call.name) {
        return ToolOutcome::error(format!("error: tool restricted by --tools: {}", call.name));
    }
    if let Some(msg) = &call.bad_args {
        return ToolOutcome::error(msg.clone());
    }
    let cancel = turn.child_token();
    let mut args = call.args.clone();
    if let Some(spec) = spec_of(inner, &call.name) {
        match run_hooks(lua, inner, agent, call, &spec, &cancel, turn).await {
            Err(veto) => return ToolOutcome::error(veto),
            Ok(Some(replaced)) => args = replaced,
            Ok(None) => {}
        }
    }
    let ctx = ToolCallContext {
        tool_call_id: Some(call.id.clone()),
        cancel,
        turn: Some(turn.clone()),
    };
    tools::run_tool(lua, inner, &call.name, args, ctx).await
}

/// One tool call made on the person's behalf (a Markdown command's !`cmd`,
/// `api.turn.run_tool`): the same `--tools` restriction, `before_tool` hooks (the permission
/// policy may ask or refuse) and pipeline as the model's calls, with `cancel` as its turn.
/// Nothing is appended to the conversation.
pub async fn run_for_person(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Agent,
    name: &str,
    args: serde_json::Value,
    cancel: &CancellationToken,
) -> ToolOutcome {
    let n = inner.next_seq();
    let call = Call {
        id: format!("person_{n}"),
        name: name.to_string(),
        block: match lua.create_table() {
            Ok(t) => t,
            Err(e) => return ToolOutcome::error(format!("error: {e}")),
        },
        args,
        bad_args: None,
    };
    run_one(lua, inner, agent, &call, cancel).await
}

/// Runs every call of one assistant message and appends their results in call order.
pub async fn run_tool_calls(
    lua: &Lua,
    inner: &Rc<Inner>,
    agent: &Agent,
    calls: &[Call],
    cancel: &CancellationToken,
) -> mlua::Result<()> {
    let mut outcomes: Vec<Option<ToolOutcome>> = vec![None; calls.len()];
    // Several mutations of one path in one turn would race on a moving snapshot.
    let paths: Vec<Vec<String>> = calls.iter().map(|c| mutated_paths(inner, c)).collect();
    let mut per_path: HashMap<&str, usize> = HashMap::new();
    for p in paths.iter().flatten() {
        *per_path.entry(p.as_str()).or_default() += 1;
    }
    for (i, ps) in paths.iter().enumerate() {
        if ps
            .iter()
            .any(|p| per_path.get(p.as_str()).copied().unwrap_or(0) > 1)
        {
            outcomes[i] = Some(ToolOutcome::error(
                "error: several edit/write calls in one turn target the same file; none was applied. Retry as ONE edit call with all changes in its edits array (or one write).",
            ));
        }
    }
    for c in calls {
        let ev = event(lua, "tool-call")?;
        ev.set("tool_call", c.block.clone())?;
        emit(lua, inner, ev);
    }
    let parallel: Vec<bool> = calls
        .iter()
        .map(|c| {
            spec_of(inner, &c.name)
                .and_then(|t| t.get::<Option<String>>("concurrency").ok().flatten())
                .as_deref()
                == Some("parallel_safe")
        })
        .collect();
    let mut i = 0;
    while i < calls.len() {
        if outcomes[i].is_some() {
            i += 1;
            continue;
        }
        if parallel[i] {
            let mut j = i;
            while j < calls.len() && parallel[j] && outcomes[j].is_none() {
                j += 1;
            }
            let batch = futures_util::future::join_all(
                calls[i..j]
                    .iter()
                    .map(|c| run_one(lua, inner, agent, c, cancel)),
            )
            .await;
            for (k, o) in batch.into_iter().enumerate() {
                outcomes[i + k] = Some(o);
            }
            i = j;
        } else {
            outcomes[i] = Some(run_one(lua, inner, agent, &calls[i], cancel).await);
            i += 1;
        }
    }
    for (c, o) in calls.iter().zip(outcomes) {
        let o = o.unwrap_or_else(|| ToolOutcome::error(CANCELLED));
        let msg = result_message(lua, &c.id, &c.name, &o)?;
        let ev = event(lua, "tool-result")?;
        ev.set("result", msg.clone())?;
        emit(lua, inner, ev);
        append(lua, inner, agent, msg)?;
    }
    Ok(())
}
