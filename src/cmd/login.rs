//! `fen login [PROVIDER] [--device] [--no-browser] [--host HOST] [--status]` and
//! `fen logout [PROVIDER]`: drive the `login`, `logout` and `status` functions of the
//! registered auth backends (the first-party ones: openai-chatgpt, github-copilot).
//! What the person must do (a URL, a code) goes to stderr; the outcome to stdout. Tokens are
//! never printed.

use super::{block_on, boot, cli::Cli, print_json, stdout};
use crate::host::Kernel;
use crate::kernel::calls::{call_async, Scope};
use mlua::{Function, Table, Value};
use std::io::IsTerminal;
use std::process::ExitCode;

/// The options of `fen login`.
pub(super) struct LoginArgs<'a> {
    pub provider: Option<&'a str>,
    pub device: bool,
    pub no_browser: bool,
    pub host: Option<&'a str>,
    pub status: bool,
    pub json: bool,
}

/// Active auth backends: (name, spec).
fn backends(kernel: &Kernel) -> Vec<(String, Table)> {
    kernel
        .inner
        .registry
        .borrow()
        .active("auth-backend")
        .iter()
        .filter_map(|c| Some((c.name.clone()?, c.spec.clone())))
        .collect()
}

fn method(spec: &Table, name: &str) -> Option<Function> {
    spec.get::<Option<Function>>(name).ok().flatten()
}

/// Calls `f(args)` as a coroutine (its natives may wait), returning its first two results.
fn call(kernel: &Kernel, f: &Function, args: Value) -> anyhow::Result<(Value, Value)> {
    crate::cmd::ctrl_c_handled_by_runtime();
    let cancel = tokio_util::sync::CancellationToken::new();
    let watcher = cancel.clone();
    let out = block_on(async {
        tokio::task::spawn_local(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                watcher.cancel();
            }
        });
        call_async::<(Value, Value)>(&kernel.lua, f, args, Scope::new(cancel, None, "login")).await
    })?;
    out.map_err(|e| anyhow::anyhow!("{}", crate::kernel::convert::error_parts(&e).0))
}

/// Asks for one of `names` on a terminal; None without one.
fn pick(title: &str, names: &[String]) -> Option<String> {
    if !std::io::stdin().is_terminal() || names.is_empty() {
        return None;
    }
    eprintln!("{title}:");
    for (i, n) in names.iter().enumerate() {
        eprintln!("  {}. {n}", i + 1);
    }
    eprint!("number: ");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).ok()?;
    let n: usize = line.trim().parse().ok()?;
    names.get(n.checked_sub(1)?).cloned()
}

fn login_names(list: &[(String, Table)], what: &str) -> Vec<String> {
    let mut names: Vec<String> = list
        .iter()
        .filter(|(_, s)| method(s, what).is_some())
        .map(|(n, _)| n.clone())
        .collect();
    names.sort();
    names
}

pub(super) fn login(cli: &Cli, a: LoginArgs) -> anyhow::Result<ExitCode> {
    if let Some(why) = a.provider.and_then(crate::native::auth::refusal) {
        eprintln!("fen: {why}");
        return Ok(ExitCode::from(2));
    }
    let kernel = boot(cli)?;
    let list = backends(&kernel);
    if a.status {
        return status(&kernel, &list, a.provider, a.json);
    }
    let names = login_names(&list, "login");
    let name = match a.provider {
        Some(p) => p.to_string(),
        None => match pick("Log in to", &names) {
            Some(n) => n,
            None => {
                eprintln!(
                    "fen: name what to log in to: fen login {}",
                    names.join(" | ")
                );
                return Ok(ExitCode::from(2));
            }
        },
    };
    let Some(f) = list
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, s)| method(s, "login"))
    else {
        eprintln!("fen: no login named '{name}'; known: {}", names.join(", "));
        return Ok(ExitCode::from(2));
    };
    let opts = login_opts(&kernel.lua, &a).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (st, err) = call(&kernel, &f, Value::Table(opts))?;
    match st {
        Value::Table(t) => {
            stdout(&format!("Logged in: {}\n", describe(&t, &name)))?;
            Ok(ExitCode::SUCCESS)
        }
        Value::Nil if !matches!(err, Value::Nil) => {
            let why = text(&err);
            eprintln!("fen: login to {name} failed: {why}");
            // Ctrl-C while waiting for the browser ends like any interrupted command.
            Ok(ExitCode::from(if why == "login cancelled" {
                130
            } else {
                1
            }))
        }
        _ => {
            stdout(&format!("Logged in: {name}\n"))?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `{device, no_browser, host, on_prompt}`: the prompt goes to stderr.
fn login_opts(lua: &mlua::Lua, a: &LoginArgs) -> mlua::Result<Table> {
    let opts = lua.create_table()?;
    opts.set("device", a.device)?;
    opts.set("no_browser", a.no_browser)?;
    opts.set("host", a.host)?;
    opts.set(
        "on_prompt",
        lua.create_function(|_, p: Table| {
            let kind: String = p.get("kind")?;
            let url: String = p.get("url")?;
            if kind == "code" {
                let code: String = p.get("code")?;
                eprintln!("Open {url} and enter the code {code}");
            } else if p.get::<Option<bool>>("opened")?.unwrap_or(false) {
                eprintln!("Your browser was opened to sign in; if it was not, open:\n{url}");
            } else {
                eprintln!("Open this URL in a browser to sign in:\n{url}");
            }
            eprintln!("Waiting for the sign-in to complete (Ctrl-C to give up)...");
            Ok(())
        })?,
    )?;
    Ok(opts)
}

/// A Lua error value as text.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.to_string_lossy(),
        other => format!("{other:?}"),
    }
}

/// One status row as words: provider, user, email, host, plan, expiry.
fn describe(t: &Table, name: &str) -> String {
    let s = |k: &str| t.get::<Option<String>>(k).ok().flatten();
    let mut parts = vec![s("provider").unwrap_or_else(|| name.to_string())];
    if let Some(u) = s("user") {
        parts.push(format!("user {u}"));
    }
    if let Some(e) = s("email") {
        parts.push(e);
    }
    if let Some(h) = s("host").filter(|h| h != "github.com") {
        parts.push(format!("host {h}"));
    }
    if let Some(p) = s("plan") {
        parts.push(format!("plan {p}"));
    }
    if let Some(at) = t.get::<Option<i64>>("expires_at").ok().flatten() {
        let left = at - crate::native::auth::now();
        parts.push(if left > 0 {
            format!("token valid for {}", human(left))
        } else {
            "token expired (refreshed on next use)".to_string()
        });
    }
    parts.join("  ")
}

fn human(secs: i64) -> String {
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn status(
    kernel: &Kernel,
    list: &[(String, Table)],
    only: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut rows = Vec::new();
    let mut failed = false;
    for (name, spec) in list {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        let Some(f) = method(spec, "status") else {
            continue;
        };
        match call(kernel, &f, Value::Nil) {
            Ok((Value::Table(t), _)) => rows.push((name.clone(), t)),
            Ok(_) => {}
            Err(e) => {
                eprintln!("fen: {name}: {e}");
                failed = true;
            }
        }
    }
    if json {
        let out: Vec<serde_json::Value> = rows
            .iter()
            .map(|(_, t)| {
                crate::kernel::convert::lua_to_json(&kernel.lua, &Value::Table(t.clone()))
                    .unwrap_or(serde_json::Value::Null)
            })
            .collect();
        print_json(&serde_json::Value::Array(out))?;
    } else if rows.is_empty() {
        stdout("not logged in to anything (fen login openai-chatgpt | github-copilot)\n")?;
    } else {
        let mut out = String::new();
        for (name, t) in &rows {
            out.push_str(&describe(t, name));
            out.push('\n');
        }
        stdout(&out)?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub(super) fn logout(cli: &Cli, provider: Option<&str>) -> anyhow::Result<ExitCode> {
    let kernel = boot(cli)?;
    let list = backends(&kernel);
    let names = login_names(&list, "logout");
    let name = match provider {
        Some(p) => p.to_string(),
        None => match pick("Log out of", &names) {
            Some(n) => n,
            None => {
                eprintln!(
                    "fen: name what to log out of: fen logout {}",
                    names.join(" | ")
                );
                return Ok(ExitCode::from(2));
            }
        },
    };
    let Some(f) = list
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, s)| method(s, "logout"))
    else {
        eprintln!("fen: no login named '{name}'; known: {}", names.join(", "));
        return Ok(ExitCode::from(2));
    };
    match call(&kernel, &f, Value::Nil)? {
        (Value::Boolean(true), _) => stdout(&format!("Logged out of {name}\n"))?,
        (Value::Nil, Value::Nil) | (Value::Boolean(false), _) => {
            stdout(&format!("Not logged in to {name}\n"))?
        }
        (_, err) => {
            eprintln!("fen: logout of {name} failed: {}", text(&err));
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
