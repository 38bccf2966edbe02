//! Read-only command recognition: commands that only read files and print, with the flags
//! that would make them write or run other programs excluded (`find -delete/-exec`, `sed -i`,
//! `git -c`, `git --output`, `rg --pre`, `sort -o`, `tree -o`, ...). Paths and redirects are
//! judged separately: a read-only command whose output is redirected into a file is not
//! read-only as a whole (see `decide`).

use super::commands::{git_config_reads, git_config_writes, git_subcommand};
use super::table::{table, Program};

/// Is this (peeled) argv a read-only command? Only programs in the command table
/// (`commands.toml`) can be; an option that writes, changes state or runs code, or an operand
/// that defines code, makes them not.
pub fn is_read_only(argv: &[String]) -> bool {
    let Some(name) = argv.first() else {
        return true;
    };
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    // `X --version` / `X --help` alone.
    if args.len() == 1 && matches!(args[0], "--version" | "--help") && !name.contains('/') {
        return true;
    }
    let Some(row) = table().program(name) else {
        return false;
    };
    if row.risky(&args).is_some()
        || Program::find(&row.global_exec, &args).is_some()
        || row.exec_operand(&args).is_some()
    {
        return false;
    }
    if let Some(checker) = &row.checker {
        return checked(checker, name, &args);
    }
    if !row.subcommands.is_empty() {
        return row.read_only_subcommand(&args);
    }
    row.read_only
}

/// What a checked program's arguments make it run or reveal beyond what the user named: a sed
/// `e` command or a script file, an awk `system()`, pipe or program file, `ps e`'s
/// environments. Judged as code: a wildcard allow rule does not cover it.
pub(crate) fn checker_runs_code(checker: &str, args: &[&str]) -> Option<&'static str> {
    match checker {
        "sed" => {
            if args
                .iter()
                .any(|a| *a == "-f" || *a == "--file" || a.starts_with("--file="))
            {
                return Some("runs a script from a file");
            }
            let scripts = sed_scripts(args);
            scripts
                .iter()
                .any(|s| !sed_script_safe(s) && s.contains('e'))
                .then_some("runs a command from its script (`e`)")
        }
        "awk" => {
            let prog_file = args.iter().any(|a| {
                matches!(
                    *a,
                    "-f" | "--file" | "-E" | "--exec" | "-l" | "--load" | "-i" | "--include"
                ) || a.starts_with("-f")
                    || a.starts_with("-E")
            });
            if prog_file {
                return Some("runs a program from a file");
            }
            args.iter()
                .any(|p| ["system", "|", "getline"].iter().any(|k| p.contains(k)))
                .then_some("runs commands from its program (`system`, a pipe)")
        }
        "ps" => (!checked("ps", "ps", args))
            .then_some("prints every process's environment, keys included"),
        _ => None,
    }
}

/// The scripts of a sed call: `-e` values, else the first operand.
fn sed_scripts<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut scripts = Vec::new();
    let mut first = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a == "-e" || a == "--expression" {
            if let Some(s) = args.get(i + 1) {
                scripts.push(*s);
            }
            i += 2;
            continue;
        }
        if let Some(s) = a.strip_prefix("--expression=") {
            scripts.push(s);
        } else if !a.starts_with('-') && first.is_none() {
            first = Some(a);
        }
        i += 1;
    }
    if scripts.is_empty() {
        scripts.extend(first);
    }
    scripts
}

/// The judgements that need code, named by a row's `checker`.
fn checked(checker: &str, name: &str, args: &[&str]) -> bool {
    match checker {
        "rustc" => args
            .iter()
            .all(|a| a.starts_with("--print") || *a == "-vV" || *a == "--version" || *a == "-V"),
        "rustup" => {
            matches!(args.first(), Some(&"show" | &"--version" | &"which"))
                || args.first() == Some(&"toolchain") && args.get(1) == Some(&"list")
        }
        "uniq" => args.iter().filter(|a| !a.starts_with('-')).count() <= 1,
        "xxd" => {
            !args.iter().any(|a| *a == "-r" || *a == "-revert")
                && args.iter().filter(|a| !a.starts_with('-')).count() <= 1
        }
        "hostname" => args
            .iter()
            .all(|a| a.starts_with('-') && !matches!(*a, "-F" | "--file" | "-b" | "--boot")),
        // A bare `env`/`printenv` dumps every variable, provider keys included.
        "env" => args.is_empty() && name != "env",
        "printenv" => !args.is_empty() && args.iter().all(|a| !secret_like_var(a)),
        // BSD `e` (`ps auxe`, `ps eww`) prints every process's environment.
        "ps" => !args.iter().any(|a| !a.starts_with('-') && a.contains('e')),
        "awk" => awk_read_only(args),
        "sed" => sed_read_only(args),
        "git" => git_read_only(args),
        "command" => args
            .iter()
            .take_while(|a| a.starts_with('-'))
            .any(|a| a.contains('v') || a.contains('V')),
        _ => false,
    }
}

/// `sed` without `-i`, whose script only prints, deletes from output, substitutes or quits
/// (no `w`, `r`, `e` commands or `w`/`e` substitution flags).
fn sed_read_only(args: &[&str]) -> bool {
    let mut scripts: Vec<&str> = Vec::new();
    let mut operands: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i];
        if a.starts_with("--in-place") || a == "-f" || a == "--file" || a.starts_with("--file=") {
            return false;
        }
        if a == "-e" || a == "--expression" {
            match args.get(i + 1) {
                Some(s) => scripts.push(s),
                None => return false,
            }
            i += 2;
            continue;
        }
        if let Some(s) = a.strip_prefix("--expression=") {
            scripts.push(s);
        } else if a.starts_with("--") {
        } else if a.starts_with('-') && a.len() > 1 {
            if a[1..].contains('i') || a[1..].contains('f') {
                return false;
            }
        } else {
            operands.push(a);
        }
        i += 1;
    }
    if scripts.is_empty() {
        match operands.first() {
            Some(s) => scripts.push(s),
            None => return false,
        }
    }
    scripts.iter().all(|s| sed_script_safe(s))
}

fn sed_script_safe(script: &str) -> bool {
    for cmd in script.split([';', '\n']) {
        let c = cmd.trim();
        if c.is_empty() {
            continue;
        }
        // Strip the address: numbers, `$`, `,`, `/re/`, `!`.
        let b = c.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'0'..=b'9' | b'$' | b',' | b'!' | b' ' | b'~' | b'+' => i += 1,
                b'/' | b'\\' => {
                    let delim = if b[i] == b'\\' {
                        i += 1;
                        match b.get(i) {
                            Some(d) => *d,
                            None => return false,
                        }
                    } else {
                        b'/'
                    };
                    i += 1;
                    while i < b.len() && b[i] != delim {
                        if b[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                _ => break,
            }
        }
        let rest = match c.get(i..) {
            Some(r) => r.trim_start(),
            None => return false,
        };
        let Some(op) = rest.chars().next() else {
            continue;
        };
        match op {
            'p' | 'd' | 'q' | 'Q' | '=' | 'l' | 'n' | 'N' | 'P' | 'D' | 'h' | 'H' | 'g' | 'G'
            | 'x' | '{' | '}' => {
                if rest.len() > 1
                    && !rest[1..]
                        .trim()
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == '}')
                {
                    return false;
                }
            }
            's' | 'y' => {
                let rb = rest.as_bytes();
                let Some(&delim) = rb.get(1) else {
                    return false;
                };
                let mut parts = 0;
                let mut j = 2;
                while j < rb.len() && parts < 2 {
                    if rb[j] == b'\\' {
                        j += 2;
                        continue;
                    }
                    if rb[j] == delim {
                        parts += 1;
                    }
                    j += 1;
                }
                if parts < 2 {
                    return false;
                }
                let flags = rest.get(j..).unwrap_or("");
                if op == 's'
                    && !flags
                        .trim()
                        .chars()
                        .all(|f| "gipImM0123456789}".contains(f))
                {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

fn git_read_only(args: &[&str]) -> bool {
    let (i, _) = git_subcommand(args);
    // Global options that run programs or write.
    for a in &args[..i.min(args.len())] {
        if matches!(*a, "-c" | "--config-env" | "--exec-path")
            || a.starts_with("--exec-path=")
            || a.starts_with("--config-env=")
        {
            return false;
        }
    }
    let Some(&sub) = args.get(i) else {
        return true;
    };
    let rest = &args[i + 1..];
    if rest.iter().any(|a| {
        a.starts_with("--output")
            || *a == "-o" && sub != "grep" && sub != "ls-files"
            || a.starts_with("--ext-diff")
            || *a == "--open-files-in-pager"
            || a.starts_with("-O")
    }) {
        return false;
    }
    let positional = rest.iter().filter(|a| !a.starts_with('-')).count();
    match sub {
        "status" | "diff" | "log" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
        | "describe" | "shortlog" | "cat-file" | "grep" | "merge-base" | "name-rev"
        | "for-each-ref" | "count-objects" | "var" | "check-ignore" | "check-attr"
        | "diff-tree" | "diff-files" | "diff-index" | "rev-list" | "whatchanged" | "version"
        | "help" | "show-ref" | "annotate" | "show-branch" | "cherry" | "range-diff"
        | "verify-commit" | "verify-tag" | "fsck" | "check-ref-format" => true,
        "branch" => {
            let listing = rest.iter().any(|a| {
                matches!(
                    *a,
                    "--list"
                        | "-l"
                        | "--show-current"
                        | "--contains"
                        | "--merged"
                        | "--no-merged"
                        | "--points-at"
                )
            });
            !rest.iter().any(|a| {
                matches!(
                    *a,
                    "-d" | "-D"
                        | "-m"
                        | "-M"
                        | "-c"
                        | "-C"
                        | "--delete"
                        | "--move"
                        | "--copy"
                        | "-f"
                        | "--force"
                        | "-u"
                        | "--set-upstream-to"
                        | "--unset-upstream"
                        | "--edit-description"
                        | "--track"
                        | "-t"
                )
            }) && (positional == 0 || listing)
        }
        "tag" => {
            let listing = rest.iter().any(|a| {
                matches!(
                    *a,
                    "-l" | "--list" | "--contains" | "--points-at" | "--merged" | "--no-merged"
                )
            });
            !rest.iter().any(|a| {
                matches!(
                    *a,
                    "-d" | "--delete" | "-a" | "-s" | "-f" | "-m" | "-F" | "-u"
                )
            }) && (positional == 0 || listing)
        }
        "remote" => {
            rest.is_empty()
                || matches!(
                    rest.first(),
                    Some(&"-v" | &"--verbose" | &"show" | &"get-url")
                )
        }
        "stash" => matches!(rest.first(), Some(&"list" | &"show")),
        "worktree" => matches!(rest.first(), Some(&"list")),
        "submodule" => matches!(rest.first(), Some(&"status" | &"summary")) || rest.is_empty(),
        "reflog" => {
            rest.is_empty()
                || matches!(rest.first(), Some(&"show"))
                || rest
                    .first()
                    .is_some_and(|a| !matches!(*a, "expire" | "delete" | "drop"))
                    && rest
                        .iter()
                        .all(|a| !matches!(*a, "expire" | "delete" | "drop"))
        }
        "config" => {
            let reading = git_config_reads(rest);
            let writing = git_config_writes(rest);
            !writing && (reading || positional <= 1)
        }
        "symbolic-ref" => positional <= 1 && !rest.iter().any(|a| *a == "-d" || *a == "--delete"),
        _ => false,
    }
}

/// A variable name that probably holds a credential.
fn secret_like_var(name: &str) -> bool {
    let up = name.to_ascii_uppercase();
    [
        "KEY",
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "SESSION",
    ]
    .iter()
    .any(|k| up.contains(k))
}

/// awk whose program cannot run commands or write files: no `system`, pipes, `getline`,
/// output redirection, `-f` program files or in-place editing.
fn awk_read_only(args: &[&str]) -> bool {
    let mut i = 0;
    let mut program = None;
    while i < args.len() {
        let a = args[i];
        match a {
            "-f" | "--file" | "-i" | "--include" | "-l" | "--load" | "-E" | "--exec" => {
                return false
            }
            "-F" | "-v" | "--assign" | "--field-separator" => i += 2,
            _ if a.starts_with("-f") || a.starts_with("-i") || a.starts_with("-E") => return false,
            _ if a.starts_with('-') && a.len() > 1 => i += 1,
            _ => {
                program = Some(a);
                break;
            }
        }
    }
    let Some(p) = program else { return false };
    if ["system", "|", "getline", "fflush", "close(", "ENVIRON"]
        .iter()
        .any(|k| p.contains(k))
    {
        return false;
    }
    // `print > "file"` / `printf ... >> f`: a `>` after a print before the statement ends.
    let mut rest = p;
    while let Some(pos) = rest.find("print") {
        let after = &rest[pos..];
        let end = after.find([';', '}', '\n']).unwrap_or(after.len());
        if after[..end].contains('>') {
            return false;
        }
        rest = &after[5..];
    }
    true
}
