//! `fen mcp list [--json]`, `fen mcp login NAME`, `fen mcp logout NAME`, and [`settle`]: what one-shot commands (`fen list tools`,
//! `fen tool mcp__...`) run before they read the tools, so MCP servers that connect within
//! their start-up timeout count.

use super::{block_on, boot, cli::Cli, print_json, stdout};
use crate::host::Kernel;
use std::process::ExitCode;

/// Runs the `mcp` companion's `settle` (its introspect entry): connects every configured
/// server, or only the one `tool` belongs to, waits within their start-up timeouts and
/// registers their tools. Nothing when the companion is not loaded.
pub(crate) async fn settle(kernel: &Kernel, tool: Option<&str>) {
    let f = kernel
        .inner
        .registry
        .borrow()
        .active("introspect")
        .iter()
        .find(|c| c.owner == "mcp" && c.name.as_deref() == Some("mcp"))
        .and_then(|c| {
            c.spec
                .get::<Option<mlua::Function>>("settle")
                .ok()
                .flatten()
        });
    let Some(f) = f else {
        return;
    };
    let run = async {
        let opts = kernel.lua.create_table()?;
        opts.set("trusted", kernel.inner.project_trusted.get())?;
        opts.set("tool", tool)?;
        f.call_async::<()>(opts).await
    };
    if let Err(e) = run.await {
        eprintln!("fen: the mcp companion failed: {e}");
    }
}

/// `fen mcp list [--json]`.
pub(super) fn list(cli: &Cli, json: bool) -> anyhow::Result<ExitCode> {
    let kernel = boot(cli)?;
    block_on(settle(&kernel, None))?;
    let servers = crate::native::mcp::global().servers();
    if json {
        let rows: Vec<serde_json::Value> = servers
            .iter()
            .map(|s| {
                serde_json::json!({
                    "name": s.name,
                    "status": s.status.as_str(),
                    "transport": s.transport,
                    "error": s.error,
                    "log": s.log,
                    "source": s.source,
                    "tools": s.tools.iter().map(|t| serde_json::json!({
                        "name": t.name, "mcp_name": t.mcp_name,
                        "description": t.description, "read_only": t.read_only,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect();
        print_json(&serde_json::Value::Array(rows))?;
        return Ok(ExitCode::SUCCESS);
    }
    let untrusted = if kernel.inner.project_trusted.get() {
        Vec::new()
    } else {
        untrusted_project_servers()
    };
    if servers.is_empty() && untrusted.is_empty() {
        stdout("no MCP servers configured (~/.config/fen/mcp.json, .mcp.json, .fen/mcp.json)\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    if !untrusted.is_empty() {
        out.push_str(&format!(
            "this folder is not trusted: its project servers stay off until you run fen with --trust (or answer the trust prompt of an interactive fen): {}\n",
            untrusted.join(", ")
        ));
    }
    for s in &servers {
        out.push_str(&format!(
            "{:<16} {:<10} {:<5} {} tools  log {}\n",
            s.name,
            s.status.as_str(),
            s.transport,
            s.tools.len(),
            s.log.display()
        ));
        if let Some(e) = &s.error {
            out.push_str(&format!("    error: {e}\n"));
        }
        for t in &s.tools {
            let desc = t.description.lines().next().unwrap_or("");
            out.push_str(&format!("    {:<40} {desc}\n", t.name));
        }
    }
    stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The configured server `name` with an HTTP URL (project files count in a trusted folder).
fn http_server(
    cli: &Cli,
    name: &str,
) -> Result<(String, Option<crate::native::auth::mcp::ClientConfig>), String> {
    let paths = crate::kernel::settings::Paths::from_env();
    let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
    let trusted = cli.trust || crate::kernel::trust::is_trusted(&paths.state_dir, &cwd);
    let root = crate::kernel::trust::project_root(&cwd);
    crate::native::mcp::config::http_server(&paths.config_dir, &cwd, &root, trusted, name)
}

/// `fen mcp login NAME [--no-browser]`.
pub(super) fn login(cli: &Cli, name: &str, no_browser: bool) -> anyhow::Result<ExitCode> {
    use crate::native::auth::{mcp as oauth, oauth::Http, store::Store, Prompt};
    let (url, client) = match http_server(cli, name) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("fen: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let notify = |p: Prompt| {
        if let Prompt::OpenUrl { url, opened } = p {
            if opened {
                eprintln!("Your browser was opened to sign in; if it was not, open:\n{url}");
            } else {
                eprintln!("Open this URL in a browser to sign in:\n{url}");
            }
            eprintln!("Waiting for the sign-in to complete (Ctrl-C to give up)...");
        }
    };
    let result = block_on(async {
        let http = Http::new(tokio_util::sync::CancellationToken::new())?;
        oauth::login(
            &http,
            &Store::from_env(),
            &url,
            &client.unwrap_or_default(),
            !no_browser,
            &notify,
        )
        .await
    })?;
    match result {
        Ok(()) => {
            stdout(&format!("Logged in to MCP server '{name}' ({url})\n"))?;
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("fen: login to MCP server '{name}' failed: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// `fen mcp logout NAME`.
pub(super) fn logout(cli: &Cli, name: &str) -> anyhow::Result<ExitCode> {
    let (url, _) = match http_server(cli, name) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("fen: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let store = crate::native::auth::store::Store::from_env();
    match block_on(crate::native::auth::mcp::logout(&store, &url))? {
        Ok(true) => stdout(&format!("Logged out of MCP server '{name}'\n"))?,
        Ok(false) => stdout(&format!("Not logged in to MCP server '{name}'\n"))?,
        Err(e) => {
            eprintln!("fen: {e}");
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The project servers (`NAME (FILE)`) that an untrusted folder leaves off.
fn untrusted_project_servers() -> Vec<String> {
    use crate::native::mcp::config;
    let paths = crate::kernel::settings::Paths::from_env();
    let Ok(cwd) = std::env::current_dir() else {
        return Vec::new();
    };
    let root = crate::kernel::trust::project_root(&cwd);
    let files = config::files(&paths.config_dir, &cwd, &root);
    config::load(&files, false, &|k| std::env::var(k).ok())
        .untrusted
        .into_iter()
        .map(|(name, file)| format!("{name} ({})", file.display()))
        .collect()
}
