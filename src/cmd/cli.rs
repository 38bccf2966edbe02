//! Command-line interface: flags and subcommands (clap). Unknown flags and subcommands get
//! clap's did-you-mean suggestion and exit status 2.

use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// The levels of `--thinking` (and of settings.json `thinking`).
pub const THINKING_LEVELS: [&str; 5] = ["off", "minimal", "low", "medium", "high"];

#[derive(Debug, Parser)]
#[command(
    name = "fen",
    version,
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

    /// Output mode for headless runs: `text` (the answer) or `json` (every event as a line).
    #[arg(long, value_enum, default_value_t = Mode::Text)]
    pub mode: Mode,

    /// Provider to use (see `fen list providers`).
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,

    /// Model id, or `provider/model`.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,

    /// API root including its version prefix, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,

    /// Most model steps in one turn.
    #[arg(long, value_name = "N", default_value_t = 1000)]
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
    #[arg(long)]
    pub fork: bool,

    /// Keep nothing on disk for this run.
    #[arg(long, conflicts_with_all = ["continue_session", "resume"])]
    pub no_session: bool,

    /// Which session backend stores the conversation (a `session-backend` extension).
    #[arg(long, value_name = "NAME", default_value = "jsonl")]
    pub session_backend: String,

    /// Trust this folder for this run: its `.fen/extensions/` load and its project settings
    /// may loosen permissions (without it, only folders trusted at an interactive prompt do).
    #[arg(long, global = true)]
    pub trust: bool,

    /// Where session files go (also FEN_SESSION_DIR).
    #[arg(long, value_name = "DIR", global = true)]
    pub session_dir: Option<PathBuf>,

    /// The task, for --print and --mode json.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Text,
    Json,
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
    /// Check a session file; exit 1 when it has issues.
    Doctor {
        path: PathBuf,
        /// Write a repaired copy beside the original (never edits it in place).
        #[arg(long)]
        repair: bool,
        /// `{"path", "ok", "issues": [{"code", "line", "message"}]}`.
        #[arg(long)]
        json: bool,
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
            | ListWhat::Skills => return None,
        })
    }
}
