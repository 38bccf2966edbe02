//! The permission analyser: a pure core (no Lua, no kernel) that judges a tool call.
//!
//! - [`shell::analyze`] parses a bash command with tree-sitter-bash into [`Segment`]s (one per
//!   simple command that would run), peeling wrappers, recursing into substitutions, `bash -c`,
//!   `eval`, `xargs`, `find -exec` and heredocs fed to a shell, tracking `cd`, and collecting the
//!   paths each segment reads, writes and deletes.
//! - [`Workspace`] resolves and classifies paths (workspace, outside, protected, secret,
//!   device, stream).
//! - [`table`] is the per-program knowledge as data (`commands.toml`): read-only programs and
//!   subcommands, options that write, run code or carry a shell command, and variables that
//!   make programs run code. [`readonly::is_read_only`] applies it.
//! - [`floors::check`] finds floors (always denied) and destructive operations.
//! - [`RuleSet`] compiles Claude-Code-syntax rules (`Bash(cargo test *)`, `Read(./.env*)`).
//! - [`decide`] combines all of it with the permission [`Mode`] into a [`Decision`].
//!
//! Typical use (what the Lua binding does per call):
//! ```ignore
//! let ws = Workspace::new(&cwd, &additional_dirs, &home, &config_dir);
//! let rules = RuleSet::parse(&inputs, Some(&tool_names), &ws)?;
//! let d = decide(&Request { tool: "bash", risk: Risk::Shell, args: &json, mode: Mode::Default,
//!                           rules: &rules, workspace: &ws, sandbox_available: false });
//! match d.verdict { Verdict::Allow => run(), Verdict::Ask => prompt(d.items, d.scope), Verdict::Deny => refuse(d.reason) }
//! ```

pub mod commands;
pub mod decide;
pub mod floors;
pub mod listing;
pub mod paths;
pub mod readonly;
pub mod rules;
pub mod secrets;
pub mod shell;
pub mod table;
pub mod types;

pub use decide::{
    decide, scope_rule, Decision, Item, ItemKind, Mode, Request, Risk, Source, Verdict,
};
pub use paths::{PathClass, PathInfo, ResolveCache, Workspace};
pub use rules::{Rule, RuleError, RuleInput, RuleKind, RuleSet, RuleSource};
pub use shell::{analyze, Access, PathRef, Segment, ShellAnalysis, ShellContext, MAX_DEPTH};

#[cfg(test)]
mod tests;
