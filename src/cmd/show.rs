//! `fen show contract NAME [--json]`: one entry of the contracts.

use super::{list::contract_json, print_json, stdout};
use crate::kernel::contracts::{self, contracts};
use std::process::ExitCode;

pub(super) fn show_contract(name: &str, json: bool) -> anyhow::Result<ExitCode> {
    let c = contracts();
    let found = c.find(name);
    if found.is_empty() {
        let hint = crate::kernel::suggest::did_you_mean(name, c.all_names())
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
