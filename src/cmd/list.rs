//! `fen list [tools|commands|providers|extensions|events|kinds|models|skills|agents] [--json]`.

use super::{boot, cli::Cli, cli::ListWhat, print_json, stdout};
use crate::host::Kernel;
use crate::kernel::contracts::{self, contracts};
use crate::kernel::extension_json;
use std::process::ExitCode;

pub(super) fn list(cli: &Cli, what: ListWhat, json: bool) -> anyhow::Result<ExitCode> {
    let c = contracts();
    let rows: Vec<serde_json::Value> = match what {
        ListWhat::Events => c.events().entries.iter().map(contract_json).collect(),
        ListWhat::Kinds => c
            .register_kinds()
            .entries
            .iter()
            .map(contract_json)
            .collect(),
        ListWhat::Extensions => boot(cli)?.extensions().iter().map(extension_json).collect(),
        ListWhat::Models => models_json(&boot(cli)?),
        ListWhat::Skills => snapshot_rows(&boot(cli)?, "skills", "skills"),
        ListWhat::Agents => snapshot_rows(&boot(cli)?, "subagents", "agents"),
        // MCP tools of the servers that connect within their start-up timeout count.
        ListWhat::Tools => {
            let kernel = super::boot_for_tool_listing(cli)?;
            super::block_on(super::mcp::settle(&kernel, None))?;
            let rows = kernel.list_json("tool");
            // The process ends after printing: closing the Lua state would free every object
            // one by one (a tenth of the run) and no finalizer matters to a listing (servers
            // are ended by `end_children`).
            std::mem::forget(kernel);
            rows
        }
        other => {
            let kind = other.register_kind().unwrap_or("tool");
            boot(cli)?.list_json(kind)
        }
    };
    if json {
        print_json(&serde_json::Value::Array(rows))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for row in &rows {
        let s = |k: &str| row.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let line = match what {
            ListWhat::Events | ListWhat::Kinds => format!("{:<26} {}", s("name"), s("summary")),
            ListWhat::Models => format!("{}/{}", s("provider"), s("id")),
            ListWhat::Skills | ListWhat::Agents if s("status") == "invalid" => {
                format!("warning: skipped {}: {}", s("location"), s("message"))
            }
            ListWhat::Skills | ListWhat::Agents => {
                let shadow = match row.get("shadowed_by").and_then(|v| v.as_str()) {
                    Some(by) => format!("  [shadowed by {by}]"),
                    None => String::new(),
                };
                // The description on its own line: it says what the skill or agent is for.
                let description = s("description").lines().next().unwrap_or("");
                let about = if description.is_empty() {
                    String::new()
                } else {
                    format!("\n    {description}")
                };
                format!(
                    "{:<24} {:<8} {}{shadow}{about}",
                    s("name"),
                    s("scope"),
                    s("location")
                )
            }
            ListWhat::Extensions => {
                let msg = s("message");
                let tail = if msg.is_empty() {
                    String::new()
                } else {
                    format!("  ({msg})")
                };
                format!(
                    "{:<22} {:<12} {:<9} {}{tail}",
                    s("name"),
                    s("status"),
                    s("root_kind"),
                    s("path")
                )
            }
            _ => {
                let desc = s("description").lines().next().unwrap_or("");
                let shadow = match row.get("shadowed_by").and_then(|v| v.as_str()) {
                    Some(by) => format!("  [shadowed by {by}]"),
                    None => String::new(),
                };
                let name = row.get("name").and_then(|v| v.as_str()).unwrap_or("-");
                format!("{:<20} {:<18} {desc}{shadow}", name, s("owner"))
            }
        };
        out.push_str(line.trim_end());
        out.push('\n');
    }
    stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// A companion's rows from its introspection snapshot `name` (the skills companion's
/// `skills`, the subagents companion's `agents`: valid, shadowed and invalid entries); none
/// when the companion is not loaded.
fn snapshot_rows(kernel: &Kernel, owner: &str, name: &str) -> Vec<serde_json::Value> {
    let snapshot = kernel
        .inner
        .registry
        .borrow()
        .active("introspect")
        .iter()
        .find(|c| c.owner == owner && c.name.as_deref() == Some(name))
        .and_then(|c| c.spec.get::<mlua::Function>("snapshot").ok());
    let Some(f) = snapshot else {
        return Vec::new();
    };
    let snapshot = f
        .call::<mlua::Value>(())
        .map_err(|e| e.to_string())
        .and_then(|v| {
            crate::kernel::convert::lua_to_json(&kernel.lua, &v).map_err(|e| e.to_string())
        });
    match snapshot {
        Ok(v) => v["rows"].as_array().cloned().unwrap_or_default(),
        Err(e) => {
            eprintln!("fen: the {owner} companion failed: {e}");
            Vec::new()
        }
    }
}

/// Every model the active providers declare (their optional `models` list), as
/// `{provider, id, context_window, max_output_tokens, reasoning}`.
fn models_json(kernel: &Kernel) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for p in kernel.list_json("provider") {
        if !p["shadowed_by"].is_null() {
            continue;
        }
        let name = p["name"].as_str().unwrap_or("");
        let offered = offered_models(kernel, name);
        for m in offered
            .as_ref()
            .or(p["models"].as_array())
            .into_iter()
            .flatten()
        {
            let mut m = m.clone();
            if let Some(obj) = m.as_object_mut() {
                obj.insert("provider".into(), p["name"].clone());
            }
            out.push(m);
        }
    }
    out
}

/// The models a provider with `list_models` (a subscription's plan) offers now; None when it
/// has no such function, is not logged in, or cannot be reached (its declared list stands).
fn offered_models(kernel: &Kernel, provider: &str) -> Option<Vec<serde_json::Value>> {
    let f = kernel
        .inner
        .registry
        .borrow()
        .active("provider")
        .iter()
        .find(|c| c.name.as_deref() == Some(provider))
        .and_then(|c| {
            c.spec
                .get::<Option<mlua::Function>>("list_models")
                .ok()
                .flatten()
        })?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let scope = crate::kernel::calls::Scope::new(cancel, None, "list_models");
    let (list, _err) = super::block_on(crate::kernel::calls::call_async::<(
        mlua::Value,
        mlua::Value,
    )>(&kernel.lua, &f, (), scope))
    .ok()?
    .ok()?;
    match crate::kernel::convert::lua_to_json(&kernel.lua, &list).ok()? {
        serde_json::Value::Array(a) => Some(a),
        _ => None,
    }
}

pub(super) fn contract_json(c: &contracts::Contract) -> serde_json::Value {
    serde_json::json!({
        "name": c.name,
        "summary": c.summary,
        "fields": c.fields.iter().map(|f| serde_json::json!({
            "name": f.name, "type": f.ty, "required": f.required, "summary": f.summary,
            "values": f.values, "value": f.value, "signature": f.signature, "default": f.default,
        })).collect::<Vec<_>>(),
        "members": c.members.iter().map(|m| serde_json::json!({
            "name": m.name, "kind": m.kind, "summary": m.summary,
        })).collect::<Vec<_>>(),
    })
}
