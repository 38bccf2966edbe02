//! The CLI: parse the command line, boot the kernel when the command needs it, dispatch to
//! one module per subcommand. The top layer: it may use everything below (host, kernel,
//! native); nothing below uses it.

mod acp;
pub mod cli;
mod completion;
mod docs;
mod list;
mod login;
mod lsp;
mod mcp;
pub mod rewind;
pub mod run;
pub mod session;
mod show;
mod tool;
mod worktree;

use crate::host::run::RunContext;
use crate::host::{BootOptions, Kernel};
use crate::kernel::Status;
use cli::{Cli, Command, ShowWhat};
use std::io::Write;
use std::process::ExitCode;

/// The process entry point.
pub fn main() -> ExitCode {
    // `fen --version` alone: printed without building the whole command line parser (what
    // clap would print, in a fraction of the time).
    let mut raw = std::env::args_os().skip(1);
    if let (Some(a), None) = (raw.next(), raw.next()) {
        if a == "--version" || a == "-V" {
            let _ = writeln!(std::io::stdout(), "fen {}", cli::LONG_VERSION);
            return ExitCode::SUCCESS;
        }
    }
    let command = <Cli as clap::CommandFactory>::command();
    let args = match cli::preparse_with(&command, std::env::args_os().collect()) {
        cli::Preparse::Args(args) => args,
        cli::Preparse::Typo(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let cli = cli::parse_with(command, args);
    let code = match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("fen: {err:#}");
            ExitCode::from(1)
        }
    };
    end_children();
    crate::kernel::settings::wait_for_tool_output_pruning(std::time::Duration::from_secs(2));
    code
}

/// Ends every process group fen started: leftovers of foreground commands and background
/// jobs. Called on every way out (normal end, Ctrl-C quit, SIGTERM, SIGHUP); blocking.
pub fn end_children() {
    crate::native::process::terminate_all_groups();
    crate::native::jobs::terminate_all();
    crate::native::mcp::terminate_all();
    crate::native::lsp::shutdown_all();
    crate::native::subagent::terminate_all();
}

/// Runs a future on the one Lua thread: a current-thread runtime driving a `LocalSet`.
pub fn block_on<F: std::future::Future>(fut: F) -> anyhow::Result<F::Output> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    Ok(local.block_on(&rt, fut))
}

/// The run context of this command line: fen's directories, the working directory and its
/// project folder (trusted by trusted.json or `--trust`), the settings, read once.
pub(crate) fn run_context(cli: &Cli) -> anyhow::Result<RunContext> {
    let cwd = std::env::current_dir()?;
    Ok(RunContext::for_cwd(
        crate::kernel::settings::Paths::from_env(),
        cwd,
        cli.trust,
    ))
}

pub(crate) fn boot(cli: &Cli) -> anyhow::Result<Kernel> {
    boot_with(cli, run_context(cli)?)
}

/// Boots the kernel for `ctx` (made by [`run_context`]).
pub(crate) fn boot_with(cli: &Cli, ctx: RunContext) -> anyhow::Result<Kernel> {
    boot_as(cli, ctx, Kernel::boot_with)
}

/// [`boot`] for `fen list tools` (see [`Kernel::boot_for_tool_listing`]).
pub(crate) fn boot_for_tool_listing(cli: &Cli) -> anyhow::Result<Kernel> {
    boot_as(cli, run_context(cli)?, Kernel::boot_for_tool_listing)
}

fn boot_as(
    cli: &Cli,
    ctx: RunContext,
    boot: fn(BootOptions, RunContext) -> mlua::Result<Kernel>,
) -> anyhow::Result<Kernel> {
    crate::kernel::settings::prune_tool_output_in_background(
        &ctx.paths,
        ctx.settings().tool_output,
    );
    // From here on Lua code runs: Ctrl-C must be able to stop it.
    install_interrupt_handler();
    let opts = BootOptions::for_run(&ctx, cli.extensions.clone(), cli.extension_root.clone());
    let kernel =
        boot(opts, ctx).map_err(|e| anyhow::anyhow!("cannot start the Lua kernel: {e}"))?;
    for r in kernel.extensions() {
        if r.status == Status::Error {
            eprintln!(
                "fen: extension '{}' failed to load: {}",
                r.name,
                r.message.as_deref().unwrap_or("?")
            );
        }
    }
    Ok(kernel)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        None => match &cli.worktree {
            Some(name) => {
                let entered = worktree::enter(name.as_deref())?;
                let r = run::run(&cli);
                worktree::leave(&entered);
                r
            }
            None => run::run(&cli),
        },
        Some(Command::Worktree { what }) => match what {
            cli::WorktreeCommand::List => worktree::list(),
            cli::WorktreeCommand::Remove { name } => worktree::remove_cmd(name),
        },
        Some(Command::List { what, json }) => list::list(&cli, *what, *json),
        Some(Command::Show {
            what: ShowWhat::Contract { name, json },
        }) => show::show_contract(name, *json),
        Some(Command::Acp { args }) => acp::acp(args),
        Some(Command::Docs { check, out }) => docs::docs(*check, out.clone()),
        Some(Command::Completion { shell }) => completion::completion(*shell),
        Some(Command::Tool { name, args }) => tool::tool(&cli, name, args),
        Some(Command::Mcp {
            what: cli::McpCommand::List { json },
        }) => mcp::list(&cli, *json),
        Some(Command::Mcp {
            what: cli::McpCommand::Login { name, no_browser },
        }) => mcp::login(&cli, name, *no_browser),
        Some(Command::Mcp {
            what: cli::McpCommand::Logout { name },
        }) => mcp::logout(&cli, name),
        Some(Command::Login {
            provider,
            device,
            no_browser,
            host,
            status,
            json,
        }) => login::login(
            &cli,
            login::LoginArgs {
                provider: provider.as_deref(),
                device: *device,
                no_browser: *no_browser,
                host: host.as_deref(),
                status: *status,
                json: *json,
            },
        ),
        Some(Command::Logout { provider }) => login::logout(&cli, provider.as_deref()),
        Some(Command::Rewind {
            session,
            list,
            to,
            code,
            conversation,
            both,
            yes,
            mode,
        }) => {
            if let Some(dir) = &cli.session_dir {
                std::env::set_var("FEN_SESSION_DIR", dir);
            }
            rewind::run(&rewind::Args {
                session: session.clone(),
                list: *list,
                to: *to,
                code: *code || *both,
                conversation: *conversation || *both,
                yes: *yes,
                mode: mode.unwrap_or(cli.mode),
            })
        }
        Some(Command::Lsp {
            what: cli::LspCommand::Status { json, no_start },
        }) => lsp::status(&cli, *json, *no_start),
        Some(Command::Session { what }) => {
            if let Some(dir) = &cli.session_dir {
                std::env::set_var("FEN_SESSION_DIR", dir);
            }
            session::run(what)
        }
    }
}

/// Writes to stdout; a reader that went away (`fen list | head`) is not an error.
pub(crate) fn stdout(text: &str) -> anyhow::Result<()> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

pub(crate) fn print_json(v: &serde_json::Value) -> anyhow::Result<()> {
    stdout(&format!("{}\n", serde_json::to_string_pretty(v)?))
}

/// Whether a runtime of this command handles Ctrl-C itself (a session, `fen tool`); else the
/// first Ctrl-C ends fen as the default action would have.
static CTRL_C_HANDLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called by commands that handle Ctrl-C on their runtime (tokio's `ctrl_c`).
pub(crate) fn ctrl_c_handled_by_runtime() {
    CTRL_C_HANDLED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// On SIGINT, asks whatever Lua code runs now to stop (an extension looping forever cannot
/// be reached by the runtime's own Ctrl-C handling, which needs the Lua thread). tokio's
/// handler for the same signal keeps working beside it. Registering an action replaces the
/// default one, so a command without its own handling (`fen list ...`) exits here with 130.
fn install_interrupt_handler() {
    // SAFETY: the action bumps an atomic counter and may call `_exit`, both async-signal-safe.
    let _ = unsafe {
        signal_hook_registry::register(libc::SIGINT, || {
            crate::kernel::calls::interrupt();
            if !CTRL_C_HANDLED.load(std::sync::atomic::Ordering::SeqCst) {
                libc::_exit(130);
            }
        })
    };
}
