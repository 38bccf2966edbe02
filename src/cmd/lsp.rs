//! `fen lsp status [--json] [--no-start]`: the language servers of this folder with their
//! state. Servers start lazily in a session; here each one on PATH is started once (at the
//! project root) so the state is what a session would find: running, or unavailable (a stub
//! that exits at once), failed and why.

use super::{block_on, boot, cli::Cli, print_json, stdout};
use crate::native::lsp::{self, config};
use std::process::ExitCode;
use std::time::{Duration, Instant};

pub(super) fn status(cli: &Cli, json: bool, no_start: bool) -> anyhow::Result<ExitCode> {
    let kernel = boot(cli)?;
    let trusted = kernel.inner.project_trusted.get();
    let ctx = kernel.run();
    let (files, mut errors) = ctx.settings().files();
    let loaded = config::load(&files, trusted);
    errors.extend(loaded.errors.iter().cloned());
    let m = lsp::global();
    m.configure(
        &loaded,
        trusted,
        ctx.project_root.clone(),
        ctx.paths.state_dir.join("lsp"),
        ctx.plan_inputs(),
    );
    if !no_start {
        block_on(m.probe(Instant::now() + Duration::from_secs(10)))?;
    }
    let servers = m.servers();
    if json {
        print_json(&serde_json::json!({
            "servers": servers,
            "errors": errors,
            "untrusted": loaded.untrusted.iter().map(|(n, f)| serde_json::json!({"name": n, "file": f})).collect::<Vec<_>>(),
            "diagnostics_wait_ms": loaded.diagnostics_wait_ms,
        }))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for e in &errors {
        out.push_str(&format!("settings: {e}\n"));
    }
    for (name, file) in &loaded.untrusted {
        out.push_str(&format!(
            "{name}: defined in {} but this folder is not trusted (run with --trust)\n",
            file.display()
        ));
    }
    for s in &servers {
        out.push_str(&format!("{:<14} {:<11} {}\n", s.name, s.state, s.command));
        if let Some(e) = &s.error {
            out.push_str(&format!("    {e}\n"));
        }
        if s.state != "idle" && s.state != "disabled" && s.state != "unavailable" {
            out.push_str(&format!("    log {}\n", s.log.display()));
        }
    }
    stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}
