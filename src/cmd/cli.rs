//! Command-line interface: flags and subcommands (clap). Unknown flags and subcommands get
//! clap's did-you-mean suggestion and exit status 2.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The levels of `--thinking` (and of settings.json `thinking`).
pub const THINKING_LEVELS: [&str; 5] = ["off", "minimal", "low", "medium", "high"];

/// `fen --version`: the crate version, the commit it was built from and the build date (see
/// build.rs).
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("FEN_GIT_COMMIT"),
    ", built ",
    env!("FEN_BUILD_DATE"),
    ")"
);

#[derive(Debug, Parser)]
#[command(
    name = "fen",
    group = clap::ArgGroup::new("source").args(["continue_session", "resume"]).multiple(false),
    version = LONG_VERSION,
    about = "A coding agent for your terminal: a small Rust kernel, everything else Lua extensions.",
    after_help = "Extensions: drop Lua files into ~/.config/fen/extensions/ (or .fen/extensions/ in a project).\nDocs: docs/extensions.md, docs/contracts.md."
)]
pub struct Cli {
    /// Load this extension (file or directory) first; repeatable. Always loads.
    #[arg(long = "extension", value_name = "PATH", global = true)]
    pub extensions: Vec<PathBuf>,

    /// A first-party source checkout of `extensions/`, used instead of the embedded copies
    /// (also FEN_EXTENSION_ROOT).
    #[arg(long, value_name = "DIR", global = true)]
    pub extension_root: Option<PathBuf>,

    /// Headless: run PROMPT (or stdin when PROMPT is absent or `-`), print the final answer to
    /// stdout and progress to stderr.
    #[arg(short = 'p', long = "print")]
    pub print: bool,

    /// Output mode for headless runs: `text` (the answer), `json` (every event as a line) or
    /// `rpc` (JSON Lines both ways: requests on stdin, events and responses on stdout; see
    /// docs/rpc.md).
    #[arg(long, value_enum, default_value_t = Mode::Text)]
    pub mode: Mode,

    /// Interactive presenter: `tui` (full screen; the default when stdin and stdout are
    /// terminals) or `stdio` (the line REPL). Ignored with -p and --mode json.
    #[arg(long, value_name = "NAME", value_parser = ["tui", "stdio"])]
    pub presenter: Option<String>,

    /// TUI in inline mode: no alternate screen; finished output goes to the terminal's own
    /// scrollback and only a bottom band is redrawn (also settings.json `tui.mode`).
    #[arg(long)]
    pub inline: bool,

    /// Provider to use (see `fen list providers`).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,

    /// Model id, or `provider/model`.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,

    /// API root including its version prefix, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Most model steps in one turn (at least 1).
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = at_least_one)]
    pub max_turns: usize,

    /// Output token budget of one model call.
    #[arg(long, value_name = "N", default_value_t = 16384)]
    pub max_tokens: u64,

    /// How hard the model thinks: off, minimal, low, medium or high (OpenAI reasoning effort,
    /// Anthropic thinking budget). Default: settings.json `thinking`, else the model's own.
    #[arg(long, value_name = "LEVEL", value_parser = THINKING_LEVELS)]
    pub thinking: Option<String>,

    /// Replace the base system prompt with TEXT.
    #[arg(long, value_name = "TEXT", conflicts_with = "system_file")]
    pub system: Option<String>,

    /// Replace the base system prompt with the contents of FILE.
    #[arg(long, value_name = "FILE")]
    pub system_file: Option<PathBuf>,

    /// Script of the mock provider (also FEN_MOCK_SCRIPT): a JSON list of turns.
    #[arg(long, value_name = "FILE")]
    pub mock_script: Option<PathBuf>,

    /// Continue the latest session of this working directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub continue_session: bool,

    /// Resume a session by id, id prefix or path.
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,

    /// With --continue/--resume: continue in a new session seeded with that one's history.
    #[arg(long, requires = "source")]
    pub fork: bool,

    /// Run the session in a new git worktree on branch fen/NAME under .fen/worktrees/NAME/
    /// (removed on exit when nothing changed). NAME defaults to session-<time>.
    #[arg(short = 'w', long = "worktree", value_name = "NAME", num_args = 0..=1)]
    pub worktree: Option<Option<String>>,

    /// Keep nothing on disk for this run.
    #[arg(long, conflicts_with_all = ["continue_session", "resume"])]
    pub no_session: bool,

    /// Which session backend stores the conversation (a `session-backend` extension).
    #[arg(long, value_name = "NAME", default_value = "jsonl")]
    pub session_backend: String,

    /// Permission mode: safe, default, auto, yolo or plan (also settings.json `permissions.mode`).
    #[arg(long, value_name = "MODE", value_parser = ["safe", "default", "auto", "yolo", "plan"])]
    pub permission_mode: Option<String>,

    /// Same as --permission-mode yolo: every call runs without asking (floors and deny rules
    /// still hold).
    #[arg(long, conflicts_with = "permission_mode")]
    pub yolo: bool,

    /// What a headless run answers when a call needs approval: deny (default) or allow;
    /// `parent` (for subagent children) asks the parent fen through stdout and stdin.
    #[arg(long, value_name = "ANSWER", value_parser = ["deny", "allow", "parent"], default_value = "deny")]
    pub on_ask: String,

    /// Offer only these tools (comma-separated fnmatch patterns, e.g. `read,grep*`).
    #[arg(long, value_name = "PATTERNS")]
    pub tools: Option<String>,

    /// Never offer these tools (comma-separated fnmatch patterns).
    #[arg(long, value_name = "PATTERNS")]
    pub denied_tools: Option<String>,

    /// Offer no tools at all.
    #[arg(long)]
    pub no_tools: bool,

    /// Trust this folder for this run: its `.fen/extensions/` load and its project settings
    /// may loosen permissions (without it, only folders trusted at an interactive prompt do).
    #[arg(long, global = true)]
    pub trust: bool,

    /// Where session files go (also FEN_SESSION_DIR).
    #[arg(long, value_name = "DIR", global = true)]
    pub session_dir: Option<PathBuf>,

    /// Headless goal: work on OBJECTIVE turn after turn until the model reports it complete
    /// or blocked, or the budget runs out (exit 0 only when complete). Used as the prompt when
    /// no PROMPT is given.
    #[arg(long, value_name = "OBJECTIVE")]
    pub goal: Option<String>,

    /// Token budget of --goal (input and output tokens of every model call).
    #[arg(long, value_name = "TOKENS", requires = "goal")]
    pub goal_budget: Option<u64>,

    /// Time budget of --goal: `30m`, `2h`, `90s`.
    #[arg(long, value_name = "DURATION", requires = "goal")]
    pub goal_time: Option<String>,

    /// The task, for --print and --mode json.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// A count of 1 or more (`--max-turns 0` would stop before the first model call).
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Text,
    Json,
    Rpc,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List extensions, contributions of a register kind, events or kinds.
    List {
        /// What to list.
        #[arg(value_enum, default_value_t = ListWhat::Extensions)]
        what: ListWhat,
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool headlessly and print its result as one JSON object.
    Tool {
        /// Tool name (see `fen list tools`).
        name: String,
        /// Arguments as a JSON object, e.g. '{"path": "README.md"}' (default {}).
        #[arg(default_value = "{}")]
        args: String,
    },
    /// List, show, check and repair stored sessions.
    Session {
        #[command(subcommand)]
        what: SessionCommand,
    },
    /// Show one entry of the reference.
    Show {
        #[command(subcommand)]
        what: ShowWhat,
    },
    /// Print a shell completion script: `fen completion bash > ~/.local/share/bash-completion/completions/fen`.
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: CompletionShell,
    },
    /// Undo turns: list a session's checkpoints, or restore the files and/or the
    /// conversation to before a turn (see docs/checkpoints.md).
    Rewind {
        /// Session id, id prefix or path (default: the latest of this directory).
        #[arg(long, value_name = "ID")]
        session: Option<String>,
        /// List the turns, newest first, with the files each changed.
        #[arg(long, conflicts_with = "to")]
        list: bool,
        /// Restore to just before this turn (a number `--list` shows).
        #[arg(long, value_name = "TURN")]
        to: Option<u64>,
        /// Restore the files only.
        #[arg(long, conflicts_with_all = ["conversation", "both"])]
        code: bool,
        /// Restore the conversation only (a new branch appended to the session file; the old one stays).
        #[arg(long, conflicts_with = "both")]
        conversation: bool,
        /// Restore both (the default).
        #[arg(long)]
        both: bool,
        /// Overwrite files changed by hand since fen last recorded them.
        #[arg(long)]
        yes: bool,
        /// `text`, or `json`: one `rewind` event on stdout.
        #[arg(long, value_enum)]
        mode: Option<Mode>,
    },
    /// fen's git worktrees (`fen -w NAME`): list them, or remove one and its branch.
    Worktree {
        #[command(subcommand)]
        what: WorktreeCommand,
    },
    /// MCP servers (see docs/mcp.md).
    Mcp {
        #[command(subcommand)]
        what: McpCommand,
    },
    /// Log in with a subscription (openai-chatgpt, github-copilot; a picker without one).
    /// Credentials go to $XDG_DATA_HOME/fen/auth.json (see docs/login.md).
    Login {
        /// openai-chatgpt or github-copilot (or another registered auth backend).
        provider: Option<String>,
        /// The device-code flow (type a code on another machine's browser).
        #[arg(long)]
        device: bool,
        /// Print the sign-in URL without opening a browser.
        #[arg(long)]
        no_browser: bool,
        /// GitHub Enterprise host for github-copilot (default github.com).
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Each logged-in provider: account email, plan, token expiry (never the token).
        #[arg(long)]
        status: bool,
        /// With --status: one JSON document on stdout.
        #[arg(long, requires = "status")]
        json: bool,
    },
    /// Forget a subscription login (a picker without PROVIDER).
    Logout {
        /// openai-chatgpt or github-copilot.
        provider: Option<String>,
    },
    /// Run as an Agent Client Protocol agent on stdin/stdout, for editors (Zed, JetBrains,
    /// Neovim, Emacs; see docs/acp.md). Takes the session flags: `fen acp --model ID ...`.
    Acp {
        /// Session flags, as for `fen` itself (`--model`, `--permission-mode`, ...).
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "FLAGS"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// Language servers (see docs/lsp.md).
    Lsp {
        #[command(subcommand)]
        what: LspCommand,
    },
    /// Write docs/contracts.md from contracts/ (or check that it is current).
    Docs {
        /// Exit 1 when the page differs from what contracts/ would generate; write nothing.
        #[arg(long)]
        check: bool,
        /// Page to write or check (default docs/contracts.md under the current directory).
        #[arg(long, value_name = "PATH")]
        out: Option<PathBuf>,
    },
}

/// `fen worktree ...`.
#[derive(Debug, Subcommand)]
pub enum WorktreeCommand {
    /// The worktrees under .fen/worktrees/ with their branch and whether they changed.
    List,
    /// Remove a worktree and its branch fen/NAME (its changes are discarded).
    Remove {
        /// The worktree's name.
        name: String,
    },
}

/// `fen mcp ...`.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Connect every configured server (each within its start-up timeout) and list each with
    /// its status, transport and tools.
    List {
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Log in to an MCP server that requires OAuth (its URL's tokens go to auth.json).
    Login {
        /// The server's name in mcp.json.
        name: String,
        /// Print the sign-in URL without opening a browser.
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the OAuth login of an MCP server.
    Logout {
        /// The server's name in mcp.json.
        name: String,
    },
}

/// `fen lsp ...`.
#[derive(Debug, Subcommand)]
pub enum LspCommand {
    /// Start every configured server that is on PATH (in this folder's project root, each
    /// within 10 s) and list every server with its state: running, unavailable, failed and
    /// why, disabled.
    Status {
        /// One JSON document on stdout.
        #[arg(long)]
        json: bool,
        /// List the servers without starting any.
        #[arg(long)]
        no_start: bool,
    },
}

/// The shells `fen completion` writes scripts for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// This directory's sessions, newest first (title, age, message count).
    List {
        /// Every directory's sessions.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Print a session's transcript.
    Show {
        /// Session id, id prefix or path.
        id: String,
        /// Only the last N messages.
        #[arg(long, value_name = "N")]
        tail: Option<usize>,
        /// The messages as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Check a session (path, id or id prefix); exit 1 when it has issues.
    Doctor {
        /// Session path, id or id prefix.
        path: String,
        /// Write a repaired copy beside the original (never edits it in place).
        #[arg(long)]
        repair: bool,
        /// `{"path", "ok", "issues": [{"code", "line", "message"}]}`.
        #[arg(long)]
        json: bool,
    },
    /// Write a session as one file: self-contained HTML (the default), Markdown or JSON.
    #[command(group = clap::ArgGroup::new("format").args(["html", "markdown", "json"]).multiple(false))]
    Export {
        /// Session id, id prefix or path.
        id: String,
        /// One HTML file that opens from disk with no network (the default).
        #[arg(long)]
        html: bool,
        /// Markdown.
        #[arg(long)]
        markdown: bool,
        /// The messages and usage as JSON.
        #[arg(long)]
        json: bool,
        /// Where to write (`-` for stdout); default `fen-session-<id>.<html|md|json>` here.
        #[arg(short = 'o', long = "output", value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum ShowWhat {
    /// A contract: an event, type, register kind or interface (`section/name` to pick one).
    Contract {
        name: String,
        /// The contract as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ListWhat {
    Extensions,
    Models,
    Tools,
    Commands,
    Providers,
    Presenters,
    Hooks,
    Panels,
    Statuses,
    Controls,
    #[value(name = "session-backends")]
    SessionBackends,
    #[value(name = "auth-backends")]
    AuthBackends,
    Events,
    Kinds,
    /// Skills (SKILL.md) the skills companion found; shadowed and invalid ones marked.
    Skills,
    /// Subagent definitions the subagents companion found; shadowed and invalid ones marked.
    Agents,
}

impl ListWhat {
    /// The register kind a listing shows, for contribution listings.
    pub fn register_kind(self) -> Option<&'static str> {
        Some(match self {
            ListWhat::Tools => "tool",
            ListWhat::Commands => "command",
            ListWhat::Providers => "provider",
            ListWhat::Presenters => "presenter",
            ListWhat::Hooks => "hook",
            ListWhat::Panels => "panel",
            ListWhat::Statuses => "status",
            ListWhat::Controls => "control",
            ListWhat::SessionBackends => "session-backend",
            ListWhat::AuthBackends => "auth-backend",
            ListWhat::Extensions
            | ListWhat::Models
            | ListWhat::Events
            | ListWhat::Kinds
            | ListWhat::Skills
            | ListWhat::Agents => return None,
        })
    }
}

/// The subcommand names (clap's own `help` included).
pub fn subcommand_names() -> Vec<String> {
    use clap::CommandFactory;
    subcommand_names_of(&Cli::command())
}

/// [`subcommand_names`] of a command already built (building fen's is most of parsing).
fn subcommand_names_of(cmd: &clap::Command) -> Vec<String> {
    let mut names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    names.push("help".into());
    names
}

/// What to do with the command line before clap sees it.
#[derive(Debug, PartialEq, Eq)]
pub enum Preparse {
    /// Parse these arguments.
    Args(Vec<std::ffi::OsString>),
    /// A typo of a subcommand: print this error and exit 2.
    Typo(String),
}

/// Settles the two readings of a first bare word that clap cannot tell apart:
/// - with `-p`/`--print` or `--mode`, the positional is the prompt even when it is a subcommand
///   name (`fen -p list`): it is moved after a `--`, where clap takes it as PROMPT;
/// - without them, a first word that is not a subcommand but close to one, followed by more
///   words (`fen lsit tools`), is a typo of that subcommand, not a prompt (clap would suggest a
///   subcommand for the second word instead).
pub fn preparse(args: Vec<std::ffi::OsString>) -> Preparse {
    use clap::CommandFactory;
    preparse_with(&Cli::command(), args)
}

/// [`preparse`] with `Cli::command()` built by the caller, who parses with it next
/// ([`parse_with`]): the command is built once per run.
pub fn preparse_with(cmd: &clap::Command, args: Vec<std::ffi::OsString>) -> Preparse {
    let names = subcommand_names_of(cmd);
    let takes_value = |arg: &clap::Arg| arg.get_action().takes_values();
    let long_takes_value = |name: &str| {
        cmd.get_arguments()
            .find(|a| a.get_long() == Some(name))
            .is_some_and(takes_value)
    };
    let short_takes_value = |c: char| {
        cmd.get_arguments()
            .find(|a| a.get_short() == Some(c))
            .is_some_and(takes_value)
    };
    let mut headless = false;
    let mut positionals: Vec<usize> = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let Some(a) = args[i].to_str() else {
            positionals.push(i);
            i += 1;
            continue;
        };
        if a == "--" {
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            if name == "print" || name == "mode" {
                headless = true;
            }
            if !long.contains('=') && long_takes_value(name) {
                i += 1;
            }
        } else if a.len() > 1 && a.starts_with('-') {
            let shorts: Vec<char> = a[1..].chars().collect();
            if shorts.contains(&'p') {
                headless = true;
            }
            if shorts.last().is_some_and(|c| short_takes_value(*c)) {
                i += 1;
            }
        } else {
            positionals.push(i);
            // A subcommand's own arguments are its business.
            if !headless && names.iter().any(|s| s == a) {
                break;
            }
        }
        i += 1;
    }
    let Some(&first) = positionals.first() else {
        return Preparse::Args(args);
    };
    let word = args[first].to_string_lossy().into_owned();
    let is_subcommand = names.contains(&word);
    if headless && is_subcommand {
        let mut out = args;
        let prompt = out.remove(first);
        if !out.iter().any(|a| a == "--") {
            out.push("--".into());
        }
        out.push(prompt);
        return Preparse::Args(out);
    }
    if !headless && !is_subcommand && positionals.len() > 1 && !word.contains(char::is_whitespace) {
        if let Some(s) =
            crate::kernel::suggest::did_you_mean(&word, names.iter().map(String::as_str))
        {
            return Preparse::Typo(format!(
                "error: unrecognized subcommand '{word}'\n\n  tip: a similar subcommand exists: '{s}'\n\nFor more information, try '--help'."
            ));
        }
    }
    Preparse::Args(args)
}

/// `Cli::parse_from(args)` on `cmd` (which must be `Cli::command()`): the same matches, the
/// same errors and exits, without building the command a second time.
pub fn parse_with(cmd: clap::Command, args: Vec<std::ffi::OsString>) -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let mut matches = cmd.get_matches_from(args);
    match Cli::from_arg_matches_mut(&mut matches) {
        Ok(cli) => cli,
        Err(e) => e.format(&mut Cli::command()).exit(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prep(args: &[&str]) -> Preparse {
        preparse(args.iter().map(|a| a.into()).collect())
    }

    fn args(args: &[&str]) -> Preparse {
        Preparse::Args(args.iter().map(|a| a.into()).collect())
    }

    #[test]
    fn a_subcommand_word_after_print_is_the_prompt() {
        assert_eq!(
            prep(&["fen", "-p", "list", "--mock-script", "s.json"]),
            args(&["fen", "-p", "--mock-script", "s.json", "--", "list"])
        );
        assert_eq!(
            prep(&["fen", "--mock-script", "s.json", "--mode", "json", "tool"]),
            args(&[
                "fen",
                "--mock-script",
                "s.json",
                "--mode",
                "json",
                "--",
                "tool"
            ])
        );
        // Not headless: the subcommand stays one.
        assert_eq!(
            prep(&["fen", "list", "tools"]),
            args(&["fen", "list", "tools"])
        );
        assert_eq!(prep(&["fen", "-p", "hello"]), args(&["fen", "-p", "hello"]));
    }

    #[test]
    fn a_typo_of_a_subcommand_before_more_words_names_the_subcommand() {
        match prep(&["fen", "lsit", "tools"]) {
            Preparse::Typo(msg) => assert!(msg.contains("'list'"), "{msg}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            prep(&["fen", "--model", "lsit", "hello"]),
            args(&["fen", "--model", "lsit", "hello"])
        );
    }
}
