//! Boot and dispatch: parse the command line, boot the kernel when the command needs it, run.

use crate::cli::{Cli, Command, ListWhat, ShowWhat};
use crate::kernel::contracts::{self, contracts};
use crate::kernel::{extension_json, BootOptions, Kernel, Status};
use clap::Parser;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

/// The process entry point.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("fen: {err:#}");
            ExitCode::from(1)
        }
    };
    // No process group fen started outlives it.
    crate::native::process::terminate_all_groups();
    code
}

/// Runs a future on the one Lua thread: a current-thread runtime driving a `LocalSet`.
pub fn block_on<F: std::future::Future>(fut: F) -> anyhow::Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    Ok(local.block_on(&rt, fut))
}

/// `fen tool NAME ARGS`: exit 0 when the tool ran (even if its result is an error), 2 when it
/// could not run (unknown tool, arguments that are not JSON or do not fit the schema).
fn tool(cli: &Cli, name: &str, args: &str) -> anyhow::Result<ExitCode> {
    let args: serde_json::Value = match serde_json::from_str(args) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("fen: tool arguments are not valid JSON ({e}); pass one JSON object, e.g. '{{\"path\": \"README.md\"}}'");
            return Ok(ExitCode::from(2));
        }
    };
    let kernel = boot(cli)?;
    let cancel = tokio_util::sync::CancellationToken::new();
    let outcome = block_on(async {
        let watcher = cancel.clone();
        tokio::task::spawn_local(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                watcher.cancel();
            }
        });
        let ctx = crate::kernel::tools::ToolCallContext {
            tool_call_id: None,
            cancel: cancel.clone(),
        };
        crate::kernel::tools::run_tool(&kernel.lua, &kernel.inner, name, args, ctx).await
    })?;
    let mut line = outcome.to_json_string();
    line.push('\n');
    stdout(&line)?;
    if !outcome.ran {
        eprintln!(
            "fen: {}",
            outcome
                .content
                .first()
                .map(String::as_str)
                .unwrap_or("the tool did not run")
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn boot(cli: &Cli) -> anyhow::Result<Kernel> {
    let cwd = std::env::current_dir()?;
    let opts = BootOptions::from_env(cwd, cli.extensions.clone(), cli.extension_root.clone());
    let kernel =
        Kernel::boot(opts).map_err(|e| anyhow::anyhow!("cannot start the Lua kernel: {e}"))?;
    for r in kernel.extensions() {
        if r.status == Status::Error {
            eprintln!(
                "fen: extension '{}' failed to load: {}",
                r.name,
                r.message.as_deref().unwrap_or("?")
            );
        }
    }
    Ok(kernel)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        None => crate::session::run(&cli),
        Some(Command::List { what, json }) => list(&cli, *what, *json),
        Some(Command::Show {
            what: ShowWhat::Contract { name, json },
        }) => show_contract(name, *json),
        Some(Command::Docs { check, out }) => docs(*check, out.clone()),
        Some(Command::Tool { name, args }) => tool(&cli, name, args),
        Some(Command::Session { what }) => {
            if let Some(dir) = &cli.session_dir {
                std::env::set_var("FEN_SESSION_DIR", dir);
            }
            crate::session_cmd::run(what)
        }
    }
}

/// Writes to stdout; a reader that went away (`fen list | head`) is not an error.
pub(crate) fn stdout(text: &str) -> anyhow::Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn print_json(v: &serde_json::Value) -> anyhow::Result<()> {
    stdout(&format!("{}\n", serde_json::to_string_pretty(v)?))
}

fn list(cli: &Cli, what: ListWhat, json: bool) -> anyhow::Result<ExitCode> {
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

/// Every model the active providers declare (their optional `models` list), as
/// `{provider, id, context_window, max_output_tokens, reasoning}`.
fn models_json(kernel: &Kernel) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for p in kernel.list_json("provider") {
        if !p["shadowed_by"].is_null() {
            continue;
        }
        for m in p["models"].as_array().into_iter().flatten() {
            let mut m = m.clone();
            if let Some(obj) = m.as_object_mut() {
                obj.insert("provider".into(), p["name"].clone());
            }
            out.push(m);
        }
    }
    out
}

fn contract_json(c: &contracts::Contract) -> serde_json::Value {
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

fn show_contract(name: &str, json: bool) -> anyhow::Result<ExitCode> {
    let c = contracts();
    let found = c.find(name);
    if found.is_empty() {
        let hint = crate::suggest::did_you_mean(name, c.all_names())
            .map(|s| format!(" (did you mean '{s}'?)"))
            .unwrap_or_default();
        eprintln!("fen: no contract named '{name}'{hint}; `fen list events` and `fen list kinds` show the names");
        return Ok(ExitCode::from(2));
    }
    if json {
        let v: Vec<_> = found
            .iter()
            .map(|(s, entry)| {
                let mut j = contract_json(entry);
                j["section"] = s.section.clone().into();
                j
            })
            .collect();
        print_json(&serde_json::Value::Array(v))?;
        return Ok(ExitCode::SUCCESS);
    }
    for (section, entry) in found {
        stdout(&format!(
            "_{}_\n\n{}",
            section.section,
            contracts::render_entry(entry)
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn docs(check: bool, out: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let path = out.unwrap_or_else(|| PathBuf::from("docs/contracts.md"));
    let page = contracts::render_markdown(contracts());
    if check {
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == page {
            stdout(&format!("{} is up to date\n", path.display()))?;
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!(
            "fen: {} is stale or missing: run `fen docs` and commit the result",
            path.display()
        );
        return Ok(ExitCode::from(1));
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&path, page)?;
    stdout(&format!("wrote {}\n", path.display()))?;
    Ok(ExitCode::SUCCESS)
}
