//! `fen acp`: fen as an Agent Client Protocol agent (JSON-RPC 2.0 over stdin/stdout) for
//! editors. A session run like `fen --mode rpc`, with the `acp` presenter speaking ACP; the
//! flags after `acp` are the session flags (`fen acp --model ID`), parsed as `fen`'s own.

use crate::cmd::cli::Cli;
use clap::Parser;
use std::ffi::OsString;
use std::process::ExitCode;

pub(super) fn acp(args: &[OsString]) -> anyhow::Result<ExitCode> {
    // What came before `acp` (global flags such as --extension) and what came after it, as
    // one command line without the subcommand.
    let all: Vec<OsString> = std::env::args_os().collect();
    let before = all.len().saturating_sub(args.len() + 1);
    let argv: Vec<OsString> = all[..before].iter().chain(args).cloned().collect();
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return Ok(ExitCode::from(2));
        }
    };
    if cli.command.is_some() || cli.prompt.is_some() {
        eprintln!("error: `fen acp` takes session flags only (a prompt comes from the editor)");
        return Ok(ExitCode::from(2));
    }
    crate::cmd::run::run_as(&cli, Some("acp"))
}
