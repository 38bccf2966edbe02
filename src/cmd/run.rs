//! A session run from the command line: pick the provider and the presenter, create the agent,
//! and hand control to the presenter (`fen -p`, `fen --mode json`).

use crate::cmd::cli::{Cli, Mode};
use crate::host::Kernel;
use crate::kernel::agent::{Agent, AgentConfig};
use crate::kernel::convert;
use crate::kernel::sessions;
use crate::kernel::settings::{Paths, Scope, Settings};
use mlua::{Function, Table, Value};
use std::io::{IsTerminal, Read};
use std::process::ExitCode;
use std::rc::Rc;

/// Ways to configure a provider, shown when none is.
pub const SETUP_HELP: &str = "no provider is configured. Use one of:
  --provider openai (with OPENAI_API_KEY) or --provider anthropic (with ANTHROPIC_API_KEY)
  --model provider/model, e.g. --model anthropic/claude-sonnet-4-5
  --base-url http://127.0.0.1:11434/v1 for a local OpenAI-compatible server
  a custom endpoint in ~/.config/fen/models.json
  --mock-script FILE (or FEN_MOCK_SCRIPT) for the scripted mock provider";

/// The providers `~/.config/fen/models.json` declares, sorted (none when it is missing or not
/// valid JSON: the `custom` extension reports that when it loads).
fn declared_providers(paths: &Paths) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(paths.config_dir.join("models.json")) else {
        return Vec::new();
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let mut names: Vec<String> = v["providers"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// What to say when nothing chooses a provider: the declared ones and how to pick one when
/// models.json has some, else every way to configure one.
fn setup_help(paths: &Paths) -> String {
    let declared = declared_providers(paths);
    let Some(first) = declared.first() else {
        return SETUP_HELP.to_string();
    };
    format!(
        "no provider is chosen. ~/.config/fen/models.json declares: {}. Choose one:
  --provider {first} (or --model {first}/MODEL) on the command line
  \"provider\": \"{first}\" in ~/.config/fen/settings.json, to make it the default",
        declared.join(", ")
    )
}

/// The thinking level of the settings, when fen knows it; one it does not know is reported
/// and ignored (called once per run).
fn settings_thinking(settings: &Settings) -> Option<String> {
    settings.thinking.clone().filter(|level| {
        let known = crate::cmd::cli::THINKING_LEVELS.contains(&level.as_str());
        if !known {
            let path = settings
                .layer(Scope::User)
                .map(|l| l.path.display().to_string())
                .unwrap_or_default();
            eprintln!(
                "fen: ignoring thinking level {level:?} in {path}: use one of {}",
                crate::cmd::cli::THINKING_LEVELS.join(", ")
            );
        }
        known
    })
}

/// `(provider, model)` from flags, settings and the environment, in that order: `--model
/// provider/id`, `--provider`, a mock script, `--base-url` (an OpenAI-compatible server),
/// settings.json, then whichever of OPENAI_API_KEY / ANTHROPIC_API_KEY is set.
fn resolve_provider(cli: &Cli, settings: &Settings) -> Option<(String, Option<String>)> {
    // `--model provider/id` names the provider only when --provider does not; ids may hold
    // slashes of their own (OpenRouter's `vendor/model`).
    let (from_model, model) = match (
        &cli.provider,
        cli.model.as_deref().map(|m| m.split_once('/')),
    ) {
        (None, Some(Some((p, m)))) => (Some(p.to_string()), Some(m.to_string())),
        // `--provider P --model P/ID`: the prefix names the chosen provider, so it goes.
        (Some(chosen), Some(Some((p, m)))) if p == chosen.as_str() => (None, Some(m.to_string())),
        _ => (None, cli.model.clone()),
    };
    let env_set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let mock = cli.mock_script.is_some() || env_set("FEN_MOCK_SCRIPT");
    let chosen = cli
        .provider
        .clone()
        .or(from_model)
        .or_else(|| mock.then(|| "mock".to_string()))
        .or_else(|| cli.base_url.as_ref().map(|_| "openai".to_string()));
    if let Some(provider) = chosen {
        return Some((provider, model));
    }
    // The settings' model goes with the settings' provider only.
    if let Some(provider) = settings.provider.clone() {
        return Some((provider, model.or(settings.model.clone())));
    }
    let provider = if env_set("ANTHROPIC_API_KEY") {
        "anthropic"
    } else if env_set("OPENAI_API_KEY") {
        "openai"
    } else {
        return None;
    };
    Some((provider.to_string(), model))
}

/// The model used when only a provider is known: the first its spec declares (model ids live
/// in the provider extensions, never here). None when it declares none.
fn model_for(inner: &crate::kernel::state::Inner, provider: &str) -> Option<String> {
    inner
        .registry
        .borrow()
        .get("provider", provider)
        .and_then(|c| c.spec.get::<Table>("models").ok())
        .and_then(|models| models.get::<Table>(1).ok())
        .and_then(|first| first.get::<String>("id").ok())
}

fn prompt_text(cli: &Cli) -> anyhow::Result<String> {
    if let (None, Some(goal)) = (cli.prompt.as_deref(), cli.goal.as_deref()) {
        return Ok(goal.to_string());
    }
    match cli.prompt.as_deref() {
        Some(p) if p != "-" => Ok(p.to_string()),
        _ => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s)?;
            Ok(s)
        }
    }
}

pub fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    run_as(cli, None)
}

/// How a run is driven, from the presenter the flags (or the caller) chose.
struct Shape<'a> {
    presenter: &'a str,
    /// Driven by a program over stdin/stdout (`--mode rpc`, `fen acp`): no prompt is needed,
    /// and asks go to that program, not to a --on-ask answer.
    driven: bool,
    /// `-p` and `--mode json`: one prompt, no person to ask.
    headless: bool,
}

/// A session with `presenter` when given (`fen acp`), else the one the flags choose. The
/// steps, in order: refuse a mistaken command line, read the settings, resolve the provider
/// and the prompt, boot, set the kernel up for the run, create the agent, open the session,
/// then hand control to the presenter.
pub fn run_as(cli: &Cli, forced: Option<&str>) -> anyhow::Result<ExitCode> {
    if let Some(code) = refuse_mistakes(cli) {
        return Ok(code);
    }
    let shape = shape(cli, forced);
    let ctx = crate::cmd::run_context(cli)?;
    let settings = ctx.settings();
    let thinking = settings_thinking(&settings);
    // The REPL starts without a provider and says how to configure one at the first prompt.
    let (provider, model) = match resolve_provider(cli, &settings) {
        Some(pm) => pm,
        None if !shape.headless && !shape.driven => (String::new(), Some(String::new())),
        None => {
            eprintln!("fen: {}", setup_help(&ctx.paths));
            return Ok(ExitCode::from(1));
        }
    };
    let prompt = if shape.headless {
        prompt_text(cli)?
    } else {
        cli.prompt.clone().unwrap_or_default()
    };
    if shape.headless && prompt.trim().is_empty() {
        eprintln!("fen: the prompt is empty; pass it as an argument or on stdin");
        return Ok(ExitCode::from(2));
    }
    let system_override = system_override(cli)?;
    if let Some(dir) = &cli.session_dir {
        // The session store reads FEN_SESSION_DIR; the flag is its command-line spelling.
        std::env::set_var("FEN_SESSION_DIR", dir);
    }
    let kernel = crate::cmd::boot_with(cli, ctx)?;
    if !shape.headless && !shape.driven {
        ask_trust(&kernel);
    }
    let spec = match presenter_spec(&kernel, &provider, shape.presenter) {
        Ok(spec) => spec,
        Err(code) => return Ok(code),
    };
    if let Err(code) = set_up_kernel(cli, &kernel, &shape, &settings) {
        return Ok(code);
    }
    let model = match model.or_else(|| model_for(&kernel.inner, &provider)) {
        Some(m) => m,
        None if provider.is_empty() => String::new(),
        None => {
            eprintln!(
                "fen: provider '{provider}' declares no models; choose one with --model {provider}/MODEL_ID (or \"models\" in models.json)"
            );
            return Ok(ExitCode::from(2));
        }
    };
    let config = AgentConfig {
        provider,
        model,
        max_turns: cli.max_turns,
        max_tokens: cli.max_tokens,
        system_override,
        cwd: std::env::current_dir()?,
        provider_options: provider_options(cli, thinking),
        no_provider_help: setup_help(&kernel.run().paths),
    };
    let agent = Rc::new(Agent::new(&kernel.lua, config).map_err(|e| anyhow::anyhow!("{e}"))?);
    *kernel.inner.agent.borrow_mut() = Some(agent.clone());
    if let Err(e) = open_session(cli, &kernel, &agent)? {
        eprintln!("fen: {e}");
        return Ok(ExitCode::from(1));
    }
    // Agent-mode rules for tools: overwriting unread or changed files is refused.
    kernel.run().ledger.borrow_mut().strict = true;
    let code = crate::cmd::block_on(present(&kernel, &agent, &spec, &prompt, shape.presenter))?;
    Ok(ExitCode::from(code.map_err(|e| anyhow::anyhow!("{e}"))?))
}

/// A command line that is surely a mistake: a one-word "prompt" close to a subcommand
/// (`fen lsit`), or `--on-ask parent` on a terminal. The exit code to end with, if so.
fn refuse_mistakes(cli: &Cli) -> Option<ExitCode> {
    if let Some(word) = cli
        .prompt
        .as_deref()
        .filter(|p| !cli.print && cli.mode == Mode::Text && !p.contains(char::is_whitespace))
    {
        let subcommands = [
            "list",
            "show",
            "docs",
            "tool",
            "session",
            "completion",
            "help",
        ];
        if let Some(s) = crate::kernel::suggest::did_you_mean(word, subcommands) {
            eprintln!("error: unrecognized subcommand '{word}'\n\n  tip: a similar subcommand exists: '{s}'\n\nFor more information, try '--help'.");
            return Some(ExitCode::from(2));
        }
    }
    // `--on-ask parent` reads answers from the parent fen on stdin; on a terminal no parent is
    // there, and a person would be asked in a protocol they cannot see.
    if cli.on_ask == "parent" && std::io::stdin().is_terminal() {
        eprintln!("error: --on-ask parent is for subagent children (stdin must be the parent fen's pipe); use --on-ask deny or allow");
        return Some(ExitCode::from(2));
    }
    None
}

/// The presenter: `forced`, else the flags' choice; interactive runs get the TUI on a
/// terminal, else the line REPL.
fn shape<'a>(cli: &Cli, forced: Option<&'a str>) -> Shape<'a> {
    let presenter = if let Some(p) = forced {
        p
    } else if cli.mode == Mode::Rpc {
        "rpc"
    } else if cli.mode == Mode::Json {
        "json"
    } else if cli.print {
        "print"
    } else if let Some(p) = cli.presenter.as_deref() {
        if p == "tui" {
            "tui"
        } else {
            "stdio"
        }
    } else if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        "tui"
    } else {
        "stdio"
    };
    let driven = presenter == "rpc" || presenter == "acp";
    Shape {
        presenter,
        driven,
        headless: !driven && presenter != "stdio" && presenter != "tui",
    }
}

/// `--system` or the text of `--system-file`.
fn system_override(cli: &Cli) -> anyhow::Result<Option<String>> {
    Ok(match (&cli.system, &cli.system_file) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(f)) => Some(
            std::fs::read_to_string(f)
                .map_err(|e| anyhow::anyhow!("cannot read --system-file {}: {e}", f.display()))?,
        ),
        (None, None) => None,
    })
}

/// The presenter's spec, once the provider (when named) and the presenter are known to be
/// registered; else what is wrong, said, and the exit code.
fn presenter_spec(kernel: &Kernel, provider: &str, presenter: &str) -> Result<Table, ExitCode> {
    let inner = &kernel.inner;
    if !provider.is_empty() && inner.registry.borrow().get("provider", provider).is_none() {
        let known: Vec<String> = inner
            .registry
            .borrow()
            .active("provider")
            .iter()
            .filter_map(|c| c.name.clone())
            .collect();
        eprintln!(
            "fen: unknown provider '{provider}' (registered: {})",
            known.join(", ")
        );
        return Err(ExitCode::from(1));
    }
    let spec = inner
        .registry
        .borrow()
        .get("presenter", presenter)
        .map(|c| c.spec.clone());
    spec.ok_or_else(|| {
        eprintln!("fen: the {presenter} presenter is not loaded (see `fen list extensions`)");
        ExitCode::from(1)
    })
}

/// What the run's flags tell the kernel: presenter, session backend, tool filter, the run
/// options companions read, the handler budget.
fn set_up_kernel(
    cli: &Cli,
    kernel: &Kernel,
    shape: &Shape<'_>,
    settings: &Settings,
) -> Result<(), ExitCode> {
    let inner = &kernel.inner;
    *inner.presenter.borrow_mut() = Some(shape.presenter.to_string());
    *inner.session_backend.borrow_mut() = cli.session_backend.clone();
    match crate::kernel::tools::ToolFilter::new(
        cli.tools.as_deref(),
        cli.denied_tools.as_deref(),
        cli.no_tools,
    ) {
        Ok(f) => *inner.tool_filter.borrow_mut() = f,
        Err(e) => {
            eprintln!("fen: {e}");
            return Err(ExitCode::from(2));
        }
    }
    *inner.run_options.borrow_mut() = serde_json::json!({
        "permission_mode": if cli.yolo { Some("yolo".to_string()) } else { cli.permission_mode.clone() },
        "on_ask": cli.on_ask,
        "headless": shape.headless,
        // The --tools patterns (nil: every tool) and --no-tools, for companions that start
        // something only when its tools could be offered (MCP servers).
        "tool_patterns": cli.tools.as_deref().map(|t| t.split(',').map(str::trim).filter(|p| !p.is_empty()).collect::<Vec<_>>()),
        "no_tools": cli.no_tools,
        "trusted": inner.project_trusted.get(),
        // What a subagent child needs to run like its parent (the subagents companion).
        "base_url": cli.base_url,
        "mock_script": cli.mock_script.as_ref().map(|p| p.to_string_lossy().into_owned()),
        "extensions": cli.extensions.iter().map(|p| p.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        "extension_root": cli.extension_root.as_ref().map(|p| p.to_string_lossy().into_owned()),
        "session_backend": cli.session_backend,
        "inline": cli.inline,
        // A goal set on the command line (the goal companion).
        "goal": cli.goal,
        "goal_budget": cli.goal_budget,
        "goal_time": cli.goal_time,
    });
    if let Some(ms) = settings.handler_budget_ms.filter(|ms| *ms > 0) {
        inner
            .handler_budget
            .set(std::time::Duration::from_millis(ms));
    }
    Ok(())
}

/// The provider's options from the flags (and the settings' thinking level).
fn provider_options(cli: &Cli, settings_thinking: Option<String>) -> serde_json::Value {
    let mut options = serde_json::json!({});
    if let Some(url) = &cli.base_url {
        options["base_url"] = url.clone().into();
    }
    if let Some(script) = &cli.mock_script {
        options["mock_script"] = script.to_string_lossy().into_owned().into();
    }
    if let Some(level) = cli.thinking.clone().or(settings_thinking) {
        options["thinking"] = level.into();
    }
    options
}

/// Opens (or resumes, or forks) the session the flags name; `--no-session` opens none.
fn open_session(
    cli: &Cli,
    kernel: &Kernel,
    agent: &Rc<Agent>,
) -> anyhow::Result<Result<(), crate::kernel::KernelError>> {
    let target = if cli.no_session {
        return Ok(Ok(()));
    } else if cli.continue_session {
        sessions::Target::Latest
    } else if let Some(q) = &cli.resume {
        sessions::Target::Find(q.clone())
    } else {
        sessions::Target::New
    };
    crate::cmd::block_on(sessions::open(
        &kernel.lua,
        &kernel.inner,
        agent,
        target,
        cli.fork,
    ))
}

/// Ctrl-C cancels the running turn (or a running slash command); pressed again soon, quits.
fn watch_ctrl_c(agent: Rc<Agent>, inner: Rc<crate::kernel::state::Inner>) {
    tokio::task::spawn_local(async move {
        crate::cmd::ctrl_c_handled_by_runtime();
        let mut ctrl_c = CtrlC::default();
        while tokio::signal::ctrl_c().await.is_ok() {
            // A running slash command (one waiting on a model call, say) is cancelled
            // like a turn.
            let busy = agent.is_busy() || !inner.commands.borrow().is_empty();
            match ctrl_c.press(busy, std::time::Instant::now()) {
                CtrlCAction::CancelTurn => {
                    agent.cancel();
                    crate::kernel::state::cancel_foreground(&inner);
                }
                CtrlCAction::Hint => {
                    eprintln!("\nfen: press Ctrl-C again to quit (Ctrl-D also quits)")
                }
                CtrlCAction::Quit => {
                    crate::native::term::setup::restore();
                    crate::cmd::end_children();
                    std::process::exit(130);
                }
            }
        }
    });
}

/// SIGTERM and SIGHUP (terminal closed) end fen, and with it every process group it started:
/// jobs run in their own sessions, so nothing else would reach them.
fn watch_termination() {
    tokio::task::spawn_local(async move {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut hup)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        let code = tokio::select! {
            _ = term.recv() => 143,
            _ = hup.recv() => 129,
        };
        // The TUI's terminal modes first, so the shell gets a usable terminal back.
        crate::native::term::setup::restore();
        crate::cmd::end_children();
        std::process::exit(code);
    });
}

/// Hands control to the presenter. Lifecycle: init, agent-started, run, agent-shutdown,
/// shutdown. A failed init ends the run before anything started; shutdown runs whatever run
/// did. The exit status.
async fn present(
    kernel: &Kernel,
    agent: &Rc<Agent>,
    spec: &Table,
    prompt: &str,
    presenter: &str,
) -> mlua::Result<u8> {
    let (lua, inner) = (&kernel.lua, &kernel.inner);
    watch_ctrl_c(agent.clone(), inner.clone());
    watch_termination();
    let ctx: Table = lua.create_table()?;
    ctx.set("prompt", prompt)?;
    ctx.set("mode", presenter)?;
    let lifecycle = |name: &str| spec.get::<Option<Function>>(name).ok().flatten();
    let init_error = match lifecycle("init") {
        Some(init) => init
            .call_async::<()>(ctx.clone())
            .await
            .err()
            .map(|e| format!("init: {}", convert::error_parts(&e).0)),
        None => None,
    };
    let (code, error) = if let Some(e) = init_error {
        (1, Some(e))
    } else {
        let started = serde_json::json!({"type": "agent-started", "cwd": agent.config.cwd, "model": agent.config.model, "provider": agent.config.provider});
        if let Ok(Value::Table(t)) = convert::json_to_lua(lua, &started) {
            let _ = t.set("agent", agent.handle.clone());
            let _ = kernel.emit(t);
        }
        let run: Function = spec.get("run")?;
        match run.call_async::<Value>(ctx.clone()).await {
            Ok(Value::Integer(n)) => (exit_status(n), None),
            Ok(Value::Number(n)) => (exit_status(n as i64), None),
            Ok(_) => (0, None),
            Err(e) => (1, Some(convert::error_parts(&e).0)),
        }
    };
    let reason = if error.is_some() { "crashed" } else { "normal" };
    crate::kernel::agent::shutdown_hooks(lua, inner, reason).await;
    let shutdown = lua.create_table()?;
    shutdown.set("type", "agent-shutdown")?;
    shutdown.set("agent", agent.handle.clone())?;
    shutdown.set("reason", reason)?;
    shutdown.set("error", error.clone())?;
    let _ = kernel.emit(shutdown);
    sessions::close(agent).await;
    if let Some(e) = error {
        eprintln!("fen: the {presenter} presenter failed: {e}");
    }
    if let Some(f) = lifecycle("shutdown") {
        if let Err(e) = f.call_async::<()>(ctx).await {
            eprintln!(
                "fen: the {presenter} presenter's shutdown failed: {}",
                convert::error_parts(&e).0
            );
        }
    }
    Ok(code)
}

/// What a Ctrl-C does: cancel the running turn; with no turn running, say how to quit; a
/// second press soon after the first quits at once (also when a cancel is slow to land).
#[derive(Debug, Default)]
struct CtrlC {
    last: Option<std::time::Instant>,
}

#[derive(Debug, PartialEq, Eq)]
enum CtrlCAction {
    CancelTurn,
    Hint,
    Quit,
}

/// How close two presses must be to count as "again".
const CTRL_C_AGAIN: std::time::Duration = std::time::Duration::from_secs(2);

impl CtrlC {
    fn press(&mut self, busy: bool, now: std::time::Instant) -> CtrlCAction {
        let again = self
            .last
            .is_some_and(|t| now.saturating_duration_since(t) < CTRL_C_AGAIN);
        self.last = Some(now);
        match (again, busy) {
            (true, _) => CtrlCAction::Quit,
            (false, true) => CtrlCAction::CancelTurn,
            (false, false) => CtrlCAction::Hint,
        }
    }
}

/// An interactive run in a folder whose project extensions are not trusted asks once, on the
/// terminal, before anything of the folder runs; "yes" is kept in trusted.json and the
/// extensions load. Without a terminal nothing is asked (and nothing of the folder runs).
fn ask_trust(kernel: &Kernel) {
    use std::io::{BufRead, IsTerminal, Write};
    let untrusted: Vec<String> = kernel
        .extensions()
        .iter()
        .filter(|r| r.status == crate::kernel::Status::Untrusted)
        .map(|r| r.name.clone())
        .collect();
    if untrusted.is_empty() || !std::io::stdin().is_terminal() {
        return;
    }
    let root = kernel.run().project_root.clone();
    eprint!(
        "fen: {} has project extensions ({}).\nTrust this folder? Its extensions can run code. [y/N] ",
        root.display(),
        untrusted.join(", ")
    );
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).is_err() {
        return;
    }
    if !matches!(line.trim(), "y" | "Y" | "yes") {
        eprintln!("fen: not trusted; its extensions stay off (run with --trust to load them once)");
        return;
    }
    match crate::kernel::trust::trust(&kernel.inner.paths.state_dir, &root) {
        Ok(_) => {
            kernel.inner.project_trusted.set(true);
            let report = kernel.reload();
            eprintln!("fen: trusted {}; {}", root.display(), report.summary());
        }
        Err(e) => eprintln!("fen: could not record the trust: {e}"),
    }
}

/// A presenter's exit status as a process status: 0-255 as given; anything else is a failure
/// (1), never a silently wrapped value (256 would become 0, success).
pub fn exit_status(n: i64) -> u8 {
    u8::try_from(n).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn ctrl_c_cancels_a_turn_hints_when_idle_and_quits_when_pressed_again() {
        let t0 = Instant::now();
        let mut c = CtrlC::default();
        assert_eq!(c.press(true, t0), CtrlCAction::CancelTurn);
        // Much later, another turn: cancel again, not quit.
        let t1 = t0 + Duration::from_secs(30);
        assert_eq!(c.press(true, t1), CtrlCAction::CancelTurn);
        // The cancel is slow; the user presses again: quit.
        assert_eq!(
            c.press(true, t1 + Duration::from_millis(500)),
            CtrlCAction::Quit
        );
        let mut c = CtrlC::default();
        assert_eq!(c.press(false, t0), CtrlCAction::Hint);
        assert_eq!(
            c.press(false, t0 + Duration::from_secs(1)),
            CtrlCAction::Quit
        );
        let mut c = CtrlC::default();
        assert_eq!(c.press(false, t0), CtrlCAction::Hint);
        assert_eq!(
            c.press(false, t0 + Duration::from_secs(5)),
            CtrlCAction::Hint
        );
    }
}
