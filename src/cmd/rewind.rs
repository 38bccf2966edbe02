//! `fen rewind [--session ID] --list | --to TURN [--code|--conversation|--both] [--yes]`:
//! the turns of a session and their checkpoints, and restoring the files and/or the
//! conversation to before one (see docs/checkpoints.md). Works on the session file and the
//! shadow repository directly; no agent runs.

use crate::cmd::cli::Mode;
use crate::host::native::checkpoint::settings_files;
use crate::native::checkpoint::{self as cp, rewind, session};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub struct Args {
    pub session: Option<String>,
    pub list: bool,
    pub to: Option<u64>,
    pub code: bool,
    pub conversation: bool,
    pub yes: bool,
    pub mode: Mode,
}

fn session_path(query: Option<&str>) -> anyhow::Result<PathBuf> {
    if let Some(q) = query {
        return super::session::resolve(q);
    }
    let dir = super::session::sessions_dir()?;
    let list = crate::native::jsonl::list_sessions(&dir)?;
    match list.into_iter().next() {
        Some(s) => Ok(s.path),
        None => anyhow::bail!(
            "no session in this directory; give one with --session ID (`fen session list --all`)"
        ),
    }
}

pub fn run(a: &Args) -> anyhow::Result<ExitCode> {
    let path = session_path(a.session.as_deref())?;
    let json = a.mode == Mode::Json;
    if a.list || a.to.is_none() {
        if !a.list {
            anyhow::bail!("say what to do: --list, or --to TURN (a turn number --list shows)");
        }
        let turns = session::turns(&path)?;
        if json {
            let mut v = serde_json::to_value(&turns)?;
            if let Some(list) = v.get_mut("turns").and_then(|t| t.as_array_mut()) {
                list.reverse();
            }
            super::print_json(&serde_json::json!({"type": "rewind-list", "session": v}))?;
            return Ok(ExitCode::SUCCESS);
        }
        let mut out = String::new();
        out.push_str(&format!(
            "session {} ({})\n",
            turns.session_id.as_deref().unwrap_or("?"),
            path.display()
        ));
        if turns.turns.is_empty() {
            out.push_str("no turns recorded yet\n");
        }
        for t in turns.turns.iter().rev() {
            let prompt: String = t
                .prompt
                .as_deref()
                .unwrap_or("")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let prompt: String = prompt.chars().take(60).collect();
            let files = if t.files.is_empty() {
                "no files changed".to_string()
            } else {
                t.files.join(", ")
            };
            out.push_str(&format!("{:>4}  {prompt}\n      {files}\n", t.turn));
            if !t.skipped.is_empty() {
                out.push_str(&format!(
                    "      not captured (over the size cap): {}\n",
                    t.skipped.join(", ")
                ));
            }
        }
        super::stdout(&out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let turn = a.to.unwrap_or(0);
    // Neither flag: both.
    let (code, conversation) = if !a.code && !a.conversation {
        (true, true)
    } else {
        (a.code, a.conversation)
    };
    let turns = session::turns(&path)?;
    let workspace = turns
        .get(turn)
        .and_then(|t| t.workspace.clone())
        .or(turns.cwd.clone())
        .unwrap_or_else(|| ".".into());
    let paths = crate::kernel::settings::Paths::from_env();
    let (settings, problems) = cp::read_settings(&settings_files(&paths, Path::new(&workspace)));
    for p in problems {
        eprintln!("fen: {p}");
    }
    let req = rewind::Request {
        state_dir: paths.state_dir.clone(),
        session_path: path.clone(),
        turn,
        code,
        conversation,
        apply: true,
        force: a.yes,
        options: cp::Options {
            include: settings.include,
            max_file_bytes: settings.max_file_bytes,
        },
    };
    // The session's lease first: a session open in another fen is left as it is.
    let mut writer = if conversation {
        Some(session::writer(&path)?)
    } else {
        None
    };
    let out = rewind::run(&req)?;
    if let (Some(w), false) = (writer.as_mut(), out.branch_records.is_empty()) {
        session::append(w, &out.branch_records)?;
    }
    if json {
        let mut v = serde_json::to_value(&out)?;
        if let Some(o) = v.as_object_mut() {
            o.remove("branch_records");
            o.insert("type".into(), "rewind".into());
            o.insert("session".into(), path.to_string_lossy().into_owned().into());
            o.insert("code".into(), code.into());
            o.insert("conversation".into(), conversation.into());
        }
        super::print_json(&v)?;
        return Ok(if out.refused.is_some() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    if let Some(plan) = &out.plan {
        for c in &plan.changes {
            let counts = match (c.added, c.removed) {
                (Some(a), Some(r)) => format!(" (+{a} -{r})"),
                _ => String::new(),
            };
            eprintln!("  {:<8} {}{counts}", c.action, c.path);
        }
        if !plan.skipped.is_empty() {
            eprintln!(
                "fen: left as they are (over the size cap): {}",
                plan.skipped.join(", ")
            );
        }
    }
    if let Some(why) = &out.refused {
        eprintln!("fen: rewind refused: {why}; run again with --yes to overwrite them");
        return Ok(ExitCode::from(1));
    }
    if code {
        println!(
            "restored {} file(s) to before turn {turn}",
            out.restored.len()
        );
    }
    if out.branch.is_some() {
        println!(
            "conversation rewound to before turn {turn}: a new branch of session {} (continue it with `fen -c`; the old branch stays: `fen session list` names it)",
            turns.session_id.as_deref().unwrap_or("?"),
        );
    }
    Ok(ExitCode::SUCCESS)
}
