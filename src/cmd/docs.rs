//! `fen docs [--check] [--out FILE]`: render contracts/ to docs/contracts.md and the binding
//! option and register-spec classes to extensions/lib/annotations.gen.lua (or check both).
//! With `--out`, only the contracts page, to FILE.

use super::stdout;
use crate::kernel::contracts::{self, contracts};
use std::path::PathBuf;
use std::process::ExitCode;

pub(super) fn docs(check: bool, out: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let mut pages = vec![(
        out.clone()
            .unwrap_or_else(|| PathBuf::from("docs/contracts.md")),
        contracts::render_markdown(contracts()),
    )];
    if out.is_none() {
        pages.push((
            PathBuf::from(crate::host::annotations::PATH),
            crate::host::annotations::render(contracts()),
        ));
    }
    if check {
        let stale: Vec<String> = pages
            .iter()
            .filter(|(path, page)| std::fs::read_to_string(path).unwrap_or_default() != *page)
            .map(|(path, _)| path.display().to_string())
            .collect();
        if stale.is_empty() {
            let names: Vec<String> = pages.iter().map(|(p, _)| p.display().to_string()).collect();
            stdout(&format!("{} up to date\n", names.join(" and ")))?;
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!(
            "fen: {} stale or missing: run `fen docs` and commit the result",
            stale.join(" and ")
        );
        return Ok(ExitCode::from(1));
    }
    for (path, page) in pages {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, page)?;
        stdout(&format!("wrote {}\n", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
