//! `fen session list|show|doctor|export`: look at, check and repair stored sessions without running
//! an agent. Works on the JSONL store directly (`crate::native::jsonl`).

use crate::cmd::cli::SessionCommand;
use crate::native::export;
use crate::native::jsonl;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub(crate) fn sessions_dir() -> anyhow::Result<PathBuf> {
    Ok(crate::host::native::session::dir_for(
        &crate::kernel::settings::Paths::from_env().state_dir,
        &std::env::current_dir()?,
    ))
}

/// Every sessions directory (for `--all`): the siblings of this directory's one.
fn all_dirs() -> anyhow::Result<Vec<PathBuf>> {
    let mine = sessions_dir()?;
    if std::env::var_os("FEN_SESSION_DIR").is_some_and(|v| !v.is_empty()) {
        return Ok(vec![mine]);
    }
    let root = mine.parent().map(Path::to_path_buf).unwrap_or(mine);
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(&root) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(_) => Vec::new(),
    };
    dirs.sort();
    Ok(dirs)
}

fn age(modified: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let s = now.saturating_sub(modified);
    match s {
        0..=59 => format!("{s}s ago"),
        60..=3599 => format!("{}m ago", s / 60),
        3600..=86399 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

/// Finds a session by path, id or id prefix: in this directory's sessions first, then in every
/// directory's (the ids `fen session list --all` shows work from anywhere).
pub(crate) fn resolve(query: &str) -> anyhow::Result<PathBuf> {
    if Path::new(query).is_file() {
        return Ok(PathBuf::from(query));
    }
    let matches = |dirs: Vec<PathBuf>| -> anyhow::Result<Vec<PathBuf>> {
        let mut found = Vec::new();
        for dir in dirs {
            for s in jsonl::list_sessions(&dir)? {
                let by_id = s.id.as_deref().is_some_and(|id| id.starts_with(query));
                let by_name = s
                    .path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(query));
                if by_id || by_name {
                    found.push(s.path);
                }
            }
        }
        Ok(found)
    };
    let mut found = matches(vec![sessions_dir()?])?;
    if found.is_empty() && !query.is_empty() {
        found = matches(all_dirs()?)?;
    }
    match found.len() {
        0 => anyhow::bail!(
            "no session matches '{query}' (as a path, or an id or id prefix in any directory); `fen session list --all` shows them"
        ),
        1 => Ok(found.remove(0)),
        n => anyhow::bail!("'{query}' matches {n} sessions; give more of the id"),
    }
}

pub fn run(cmd: &SessionCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        SessionCommand::List { all, json } => list(*all, *json),
        SessionCommand::Show { id, tail, json } => show(id, *tail, *json),
        SessionCommand::Doctor { path, repair, json } => {
            // A path that does not exist is still tried as an id, then reported as given.
            let target = match resolve(path) {
                Ok(p) => p,
                Err(_) if Path::new(path).exists() || path.contains('/') => PathBuf::from(path),
                Err(e) => return Err(e),
            };
            doctor(&target, *repair, *json)
        }
        SessionCommand::Export {
            id,
            html: _,
            markdown,
            json,
            output,
        } => {
            let format = if *markdown {
                export::Format::Markdown
            } else if *json {
                export::Format::Json
            } else {
                export::Format::Html
            };
            export_session(id, format, output.as_deref())
        }
    }
}

/// `fen session export`: the session's messages (in file order, as `show` reads them) to one
/// file, written whole or not at all.
fn export_session(
    id: &str,
    format: export::Format,
    output: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let path = resolve(id)?;
    let report = jsonl::read_all(&path)?;
    let mut messages = Vec::new();
    let mut session_id = None;
    let mut title = None;
    for r in &report.records {
        let mut v = report.value(r)?;
        match report.record_type(r).as_deref() {
            Some("message") => {
                let m = v["message"].take();
                if title.is_none() && m["role"] == "user" {
                    let text = match &m["content"] {
                        serde_json::Value::String(s) => s.clone(),
                        c => c[0]["text"].as_str().unwrap_or("").to_string(),
                    };
                    let line: String = text.lines().next().unwrap_or("").chars().take(80).collect();
                    if !line.trim().is_empty() {
                        title = Some(line);
                    }
                }
                messages.push(m);
            }
            Some("session") => session_id = v["id"].as_str().map(str::to_string),
            _ => {}
        }
    }
    let t = export::Transcript {
        title: title.unwrap_or_else(|| "fen session".into()),
        id: session_id.clone(),
        messages,
    };
    let text = export::render(&t, format);
    let out = match output {
        Some(p) if p == Path::new("-") => {
            crate::cmd::stdout(&text)?;
            return Ok(ExitCode::SUCCESS);
        }
        Some(p) => p.to_path_buf(),
        None => {
            let stem = session_id
                .as_deref()
                .map(|s| s.chars().take(13).collect::<String>())
                .unwrap_or_else(|| "export".into());
            PathBuf::from(format!("fen-session-{stem}.{}", format.extension()))
        }
    };
    export::write_file(&out, &text)
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
    crate::cmd::stdout(&format!("wrote {}\n", out.display()))?;
    Ok(ExitCode::SUCCESS)
}

fn list(all: bool, json: bool) -> anyhow::Result<ExitCode> {
    let dirs = if all {
        all_dirs()?
    } else {
        vec![sessions_dir()?]
    };
    let mut sessions = Vec::new();
    for d in dirs {
        sessions.extend(jsonl::list_sessions(&d)?);
    }
    sessions.sort_by(|a, b| b.modified.cmp(&a.modified).then(b.path.cmp(&a.path)));
    if json {
        crate::cmd::stdout(&format!("{}\n", serde_json::to_string_pretty(&sessions)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = String::new();
    for s in &sessions {
        let id = s.id.as_deref().unwrap_or("?");
        // With --all, the directory the session was started in (from its header).
        let dir = if all {
            format!("  {}", session_cwd(&s.path).unwrap_or_else(|| "?".into()))
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{}  {:>8}  {:>4} msgs{dir}  {}\n",
            &id[..id.len().min(13)],
            age(s.modified),
            s.message_count,
            s.title.as_deref().unwrap_or("(no messages)")
        ));
        // Other branches of the file (a rewound conversation): `fen --resume LEAF` takes one.
        for b in &s.branches {
            out.push_str(&format!(
                "    branch {}  {:>4} msgs  {}\n",
                b.point.leaf.as_deref().unwrap_or("?"),
                b.message_count,
                b.title.as_deref().unwrap_or("")
            ));
        }
    }
    if sessions.is_empty() {
        out.push_str(
            "no sessions yet in this directory (fen session list --all shows every directory's)\n",
        );
    }
    crate::cmd::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// The `cwd` of a session's header line.
fn session_cwd(path: &Path) -> Option<String> {
    use std::io::{BufRead, Read};
    let file = std::fs::File::open(path).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(file.take(64 * 1024))
        .read_line(&mut first)
        .ok()?;
    let header: serde_json::Value = serde_json::from_str(first.trim_end()).ok()?;
    header["cwd"].as_str().map(str::to_string)
}

fn text_of(content: &serde_json::Value) -> String {
    match content {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map(str::to_string),
                Some("thinking") => b["thinking"].as_str().map(|t| format!("(thinking) {t}")),
                Some("tool-call") => Some(format!(
                    "(calls {} {})",
                    b["name"].as_str().unwrap_or("?"),
                    b["arguments"]
                )),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn show(id: &str, tail: Option<usize>, json: bool) -> anyhow::Result<ExitCode> {
    let path = resolve(id)?;
    let report = jsonl::read_all(&path)?;
    // The branch in use (the whole file when it has no branch records).
    let view = jsonl::branch::Tree::new(report.data(), &report.records).current();
    // Only the shown messages are parsed into trees, one at a time.
    let mut records: Vec<&jsonl::Record> = view
        .records
        .iter()
        .map(|&i| &report.records[i])
        .filter(|r| report.record_type(r).as_deref() == Some("message"))
        .collect();
    if let Some(n) = tail {
        records = records.split_off(records.len().saturating_sub(n));
    }
    if json {
        let v = records
            .iter()
            .map(|r| Ok(report.value(r)?["message"].take()))
            .collect::<anyhow::Result<Vec<serde_json::Value>>>()?;
        crate::cmd::stdout(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = format!("session {}\n", path.display());
    for r in records {
        let record = report.value(r)?;
        let m = &record["message"];
        let prefix = match m["role"].as_str() {
            Some("user") => "you>".to_string(),
            Some("assistant") if m["stop_reason"] == "error" => "err>".to_string(),
            Some("assistant") => "ai>".to_string(),
            Some("tool-result") => {
                format!(
                    "tool< {}{}",
                    m["tool_name"].as_str().unwrap_or("?"),
                    if m["is_error"] == true {
                        " (error)"
                    } else {
                        ""
                    }
                )
            }
            _ => "?>".to_string(),
        };
        let mut body = text_of(&m["content"]);
        if m["stop_reason"] == "error" {
            body = m["error_message"].as_str().unwrap_or("error").to_string();
        }
        if body.len() > 2000 {
            let cut = (0..=2000)
                .rev()
                .find(|i| body.is_char_boundary(*i))
                .unwrap_or(0);
            body = format!("{} ... [{} bytes]", &body[..cut], body.len());
        }
        out.push_str(&format!("{prefix} {body}\n"));
    }
    if !report.bad_lines.is_empty() {
        out.push_str(&format!(
            "[{} damaged line(s) skipped; run `fen session doctor {}`]\n",
            report.bad_lines.len(),
            path.display()
        ));
    }
    crate::cmd::stdout(&out)?;
    Ok(ExitCode::SUCCESS)
}

fn doctor(path: &Path, repair: bool, json: bool) -> anyhow::Result<ExitCode> {
    let report = jsonl::doctor(path)?;
    let healthy = report.ok && report.issues.is_empty();
    let repaired = if repair && !healthy {
        Some(jsonl::repair(path)?)
    } else {
        None
    };
    if json {
        let mut v = serde_json::json!({
            "path": report.path,
            "ok": healthy,
            "issues": report.issues.iter().map(|i| serde_json::json!({
                "code": i.code.as_str(), "line": i.line, "message": i.message,
            })).collect::<Vec<_>>(),
        });
        if let Some(r) = &repaired {
            v["repaired_path"] = serde_json::json!(r.repaired_path);
            v["report_path"] = serde_json::json!(r.report_path);
            v["changes"] = serde_json::to_value(&r.changes)?;
        }
        crate::cmd::stdout(&format!("{}\n", serde_json::to_string_pretty(&v)?))?;
    } else {
        let mut out = String::new();
        if healthy {
            out.push_str(&format!(
                "{}: healthy ({} records)\n",
                path.display(),
                report.records
            ));
        }
        for i in &report.issues {
            out.push_str(&format!(
                "{}:{}: {}: {}\n",
                path.display(),
                i.line,
                i.code.as_str(),
                i.message
            ));
        }
        if let Some(r) = &repaired {
            out.push_str(&format!(
                "wrote a repaired copy to {} ({} change(s); report in {}); the original is untouched\n",
                r.repaired_path.display(),
                r.changes.len(),
                r.report_path.display()
            ));
        }
        crate::cmd::stdout(&out)?;
    }
    Ok(if healthy {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
