//! `fen tool NAME ARGS`: run one tool headlessly through the whole pipeline and print its
//! result as JSON.

use super::{block_on, boot, cli::Cli, stdout};
use std::process::ExitCode;

/// `fen tool NAME ARGS`: exit 0 when the tool ran (even if its result is an error), 2 when it
/// could not run (unknown tool, arguments that are not JSON or do not fit the schema), 130 when
/// Ctrl-C cancelled it.
pub(super) fn tool(cli: &Cli, name: &str, args: &str) -> anyhow::Result<ExitCode> {
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
        crate::cmd::ctrl_c_handled_by_runtime();
        tokio::task::spawn_local(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                watcher.cancel();
            }
        });
        // An MCP tool: connect its server first (bounded by its start-up timeout).
        if name.starts_with("mcp__") {
            crate::cmd::mcp::settle(&kernel, Some(name)).await;
        }
        let ctx = crate::kernel::tools::ToolCallContext {
            tool_call_id: None,
            cancel: cancel.clone(),
            turn: None,
        };
        crate::kernel::tools::run_tool(&kernel.lua, &kernel.inner, name, args, ctx).await
    })?;
    let mut line = outcome.to_json_string();
    line.push('\n');
    stdout(&line)?;
    if !outcome.ran {
        // An MCP tool whose server did not connect: say why, and where its log is.
        if let Some(s) = crate::native::mcp::global()
            .server_for_tool(name)
            .and_then(|n| {
                crate::native::mcp::global()
                    .servers()
                    .into_iter()
                    .find(|s| s.name == n)
            })
        {
            eprintln!(
                "fen: MCP server '{}' is {}{} (log {})",
                s.name,
                s.status.as_str(),
                s.error.map(|e| format!(": {e}")).unwrap_or_default(),
                s.log.display()
            );
        }
        eprintln!(
            "fen: {}",
            outcome
                .content
                .first()
                .and_then(|b| b.text())
                .unwrap_or("the tool did not run")
        );
        return Ok(ExitCode::from(2));
    }
    // Ctrl-C stopped the tool: the result says so, and the status too (as for `fen -p`).
    if cancel.is_cancelled() {
        return Ok(ExitCode::from(130));
    }
    Ok(ExitCode::SUCCESS)
}
