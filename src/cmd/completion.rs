//! `fen completion bash|zsh|fish`: the shell completion script, generated from the clap
//! definition by clap_complete (so it never drifts from the real flags and subcommands).

use super::cli::{Cli, CompletionShell};
use clap::CommandFactory;
use clap_complete::Shell;
use std::process::ExitCode;

pub(super) fn completion(shell: CompletionShell) -> anyhow::Result<ExitCode> {
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "fen", &mut script);
    super::stdout(&String::from_utf8_lossy(&script))?;
    Ok(ExitCode::SUCCESS)
}
