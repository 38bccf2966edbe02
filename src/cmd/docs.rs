//! `fen docs [--check] [--out FILE]`: render contracts/ to docs/contracts.md (or check it).

use super::stdout;
use crate::kernel::contracts::{self, contracts};
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn docs(check: bool, out: Option<PathBuf>) -> anyhow::Result<ExitCode> {
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
