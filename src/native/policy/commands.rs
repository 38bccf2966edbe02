//! Per-command knowledge for the shell analyser: which wrappers to peel (`env`, `sudo`,
//! `timeout`, ...), which commands carry more shell (`bash -c`, `eval`, `xargs`, `find -exec`),
//! and which operands of file commands are read, written or deleted.

use std::path::Path;

use super::table::{table, Program};
use super::types::{glob_base, join_path, Access, PathRef};

/// What to do with a leading wrapper word.
pub(crate) enum Peel<'a> {
    /// Not a wrapper.
    No,
    /// Drop this many words; the real command follows.
    Skip(usize),
    /// `env -S 'cmd args'`, `watch 'cmd'`: the words from `skip` on are appended to `string`,
    /// which is parsed as shell.
    Split { skip: usize, string: &'a str },
    /// A wrapper whose command cannot be seen (`sudo -s` with no command).
    Opaque(String),
}

/// Shells whose `-c STRING` or stdin is analysed as more shell.
pub(crate) const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "ksh", "mksh", "ash", "rbash"];

fn is_opt(a: &str) -> bool {
    a.starts_with('-') && a.len() > 1
}

/// Skips options of a wrapper: `with_arg` lists options taking a separate value; returns the
/// index of the first non-option word.
fn skip_opts(argv: &[&str], with_arg: &[&str]) -> usize {
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i];
        if a == "--" {
            return i + 1;
        }
        if !is_opt(a) {
            return i;
        }
        if with_arg.contains(&a) {
            i += 2;
        } else {
            i += 1;
        }
    }
    i
}

/// Recognises a wrapper at the head of `argv` (`argv[0]` already normalised to `name`).
pub(crate) fn peel<'a>(name: &str, argv: &[&'a str]) -> Peel<'a> {
    // Wrappers the command table describes: options, then `wrapper_operands` words.
    if let Some(row) = table().program(name).filter(|r| r.wrapper) {
        let with: Vec<&str> = row
            .value_options
            .iter()
            .chain(&row.writes)
            .chain(&row.reads)
            .map(String::as_str)
            .collect();
        return Peel::Skip((skip_opts(argv, &with) + row.wrapper_operands).min(argv.len()));
    }
    match name {
        "env" => {
            let mut i = 1;
            while i < argv.len() {
                let a = argv[i];
                match a {
                    "--" => {
                        i += 1;
                        break;
                    }
                    "-u" | "--unset" | "-C" | "--chdir" => i += 2,
                    "-S" | "--split-string" => {
                        return match argv.get(i + 1) {
                            Some(s) => Peel::Split {
                                skip: i + 2,
                                string: s,
                            },
                            None => Peel::Skip(argv.len()),
                        };
                    }
                    _ if a.starts_with("--split-string=") => {
                        return Peel::Split {
                            skip: i + 1,
                            string: &a["--split-string=".len()..],
                        };
                    }
                    _ if a.starts_with("-S") => {
                        return Peel::Split {
                            skip: i + 1,
                            string: &a[2..],
                        };
                    }
                    _ if is_opt(a) || a == "-" => i += 1,
                    _ if is_assignment(a) => i += 1,
                    _ => break,
                }
            }
            Peel::Skip(i.min(argv.len()))
        }
        "command" => {
            if argv
                .iter()
                .skip(1)
                .take_while(|a| is_opt(a))
                .any(|a| a.contains('v') || a.contains('V'))
            {
                Peel::No
            } else {
                Peel::Skip(skip_opts(argv, &[]))
            }
        }
        // `coproc cmd args` runs the command in the background; `coproc NAME { ...; }` runs a
        // compound command the parser does not see as one.
        "coproc" => {
            if argv.iter().any(|a| *a == "{" || *a == "(") {
                Peel::Opaque("`coproc` runs a compound command in the background".into())
            } else {
                Peel::Skip(1)
            }
        }
        "sudo" | "doas" => {
            let with_arg = [
                "-u",
                "-g",
                "-C",
                "-D",
                "-h",
                "-p",
                "-r",
                "-t",
                "-U",
                "-T",
                "-R",
                "--user",
                "--group",
                "--chdir",
                "--host",
                "--prompt",
                "--role",
                "--type",
                "--other-user",
                "--command-timeout",
                "--chroot",
                "--close-from",
            ];
            let mut i = 1;
            let mut shell = false;
            let mut no_cmd = false;
            while i < argv.len() {
                let a = argv[i];
                if a == "--" {
                    i += 1;
                    break;
                }
                if !is_opt(a) {
                    break;
                }
                if with_arg.contains(&a) {
                    i += 2;
                    continue;
                }
                if !a.starts_with("--") {
                    shell |= a.contains('s') || a.contains('i');
                    no_cmd |=
                        a.contains('l') || a.contains('v') || a.contains('k') || a.contains('K');
                    if a.contains('e') {
                        // sudoedit: edits its operands.
                        return Peel::No;
                    }
                } else {
                    shell |= a == "--shell" || a == "--login";
                    no_cmd |= a == "--list" || a == "--validate";
                    if a == "--edit" {
                        return Peel::No;
                    }
                }
                i += 1;
            }
            while i < argv.len() && is_assignment(argv[i]) {
                i += 1;
            }
            if i >= argv.len() {
                if shell {
                    return Peel::Opaque(format!("`{name}` opens an interactive root shell"));
                }
                if no_cmd {
                    return Peel::No;
                }
            }
            Peel::Skip(i.min(argv.len()))
        }
        "watch" => {
            let i = skip_opts(
                argv,
                &["-n", "--interval", "-d", "--differences", "-q", "--equexit"],
            );
            match argv.get(i) {
                Some(s) => Peel::Split {
                    skip: i + 1,
                    string: s,
                },
                None => Peel::No,
            }
        }
        _ => Peel::No,
    }
}

/// `env -C DIR` / `env --chdir=DIR`.
pub(crate) fn env_chdir<'a>(argv: &[&'a str]) -> Option<&'a str> {
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i];
        if a == "-C" || a == "--chdir" {
            return argv.get(i + 1).copied();
        }
        if let Some(d) = a.strip_prefix("--chdir=") {
            return Some(d);
        }
        if !is_opt(a) && !is_assignment(a) {
            return None;
        }
        i += 1;
    }
    None
}

pub(crate) fn is_assignment(a: &str) -> bool {
    match a.find('=') {
        Some(0) | None => false,
        Some(i) => {
            let n = &a[..i];
            n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !n.starts_with(|c: char| c.is_ascii_digit())
        }
    }
}

/// A command whose arguments hold more commands.
pub(crate) enum Container {
    None,
    /// The string is a shell script (`bash -c S`, `eval ...`, `trap S`, `su -c S`).
    Script {
        how: String,
        script: String,
    },
    /// A shell with no script operand: runs what arrives on stdin.
    Stdin {
        how: String,
    },
    /// Word ranges `[start, end)` of argv that are commands (`xargs CMD`, `find -exec CMD ;`).
    /// `with` is what `{}` stands for (find's single start directory), `placeholder_marker`.
    Argv {
        how: String,
        ranges: Vec<(usize, usize)>,
        with: Option<String>,
    },
}

pub(crate) fn container(argv: &[&str]) -> Container {
    let Some(&name) = argv.first() else {
        return Container::None;
    };
    if SHELLS.contains(&name) {
        let mut c_flag = false;
        let mut s_flag = false;
        let mut i = 1;
        while i < argv.len() {
            let a = argv[i];
            if a == "--" {
                i += 1;
                break;
            }
            if a == "-o"
                || a == "+o"
                || a == "--rcfile"
                || a == "--init-file"
                || a == "-O"
                || a == "+O"
            {
                i += 2;
                continue;
            }
            if a.starts_with("--") {
                i += 1;
                continue;
            }
            if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
                if a.starts_with('-') && a.contains('c') {
                    c_flag = true;
                }
                if a.starts_with('-') && a.contains('s') {
                    s_flag = true;
                }
                i += 1;
                continue;
            }
            break;
        }
        return match argv.get(i) {
            // `bash -s -- args`: the script comes from stdin, the words are its arguments.
            _ if s_flag && !c_flag => Container::Stdin {
                how: format!("{name} <stdin>"),
            },
            Some(s) if c_flag => Container::Script {
                how: format!("{name} -c"),
                script: (*s).to_string(),
            },
            Some(_) => Container::None,
            None if c_flag => Container::None,
            None => Container::Stdin {
                how: format!("{name} <stdin>"),
            },
        };
    }
    match name {
        "eval" if argv.len() > 1 => Container::Script {
            how: "eval".into(),
            script: argv[1..].join(" "),
        },
        "trap" if argv.len() > 2 && !argv[1].starts_with('-') => Container::Script {
            how: "trap".into(),
            script: argv[1].to_string(),
        },
        "su" => {
            let pos = argv.iter().position(|a| *a == "-c" || *a == "--command");
            match pos.and_then(|p| argv.get(p + 1)) {
                Some(s) => Container::Script {
                    how: "su -c".into(),
                    script: (*s).to_string(),
                },
                None => Container::None,
            }
        }
        "git" => {
            let (i, _) = git_subcommand(&argv[1..]);
            let i = i + 1;
            let sub = argv.get(i).copied().unwrap_or("");
            let rest = argv.get(i + 1..).unwrap_or(&[]);
            match sub {
                "submodule" if rest.first() == Some(&"foreach") => {
                    let cmd: Vec<&str> = rest[1..]
                        .iter()
                        .copied()
                        .filter(|a| !a.starts_with("--"))
                        .collect();
                    if cmd.is_empty() {
                        return Container::None;
                    }
                    Container::Script {
                        how: "git submodule foreach".into(),
                        script: cmd.join(" "),
                    }
                }
                "bisect" if rest.first() == Some(&"run") && rest.len() > 1 => Container::Argv {
                    how: "git bisect run".into(),
                    ranges: vec![(i + 2, argv.len())],
                    with: None,
                },
                "rebase" | "difftool" | "mergetool" => {
                    let pos = rest
                        .iter()
                        .position(|a| matches!(*a, "-x" | "--exec" | "--extcmd"));
                    let inline = rest.iter().find_map(|a| {
                        a.strip_prefix("--exec=")
                            .or_else(|| a.strip_prefix("--extcmd="))
                    });
                    match (pos.and_then(|p| rest.get(p + 1)).copied(), inline) {
                        (_, Some(s)) | (Some(s), None) => Container::Script {
                            how: format!("git {sub} --exec"),
                            script: s.to_string(),
                        },
                        _ => Container::None,
                    }
                }
                _ => Container::None,
            }
        }
        "xargs" => {
            let with_arg = [
                "-I",
                "-L",
                "-n",
                "-P",
                "-d",
                "-E",
                "-s",
                "-a",
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--arg-file",
                "--max-lines",
                "--max-chars",
                "--eof",
            ];
            let mut i = 1;
            while i < argv.len() {
                let a = argv[i];
                if a == "--" {
                    i += 1;
                    break;
                }
                if !is_opt(a) {
                    break;
                }
                i += if with_arg.contains(&a) { 2 } else { 1 };
            }
            Container::Argv {
                how: "xargs".into(),
                ranges: vec![(i.min(argv.len()), argv.len())],
                with: None,
            }
        }
        "find" => {
            let roots: Vec<&str> = argv[1..]
                .iter()
                .take_while(|a| !(a.starts_with('-') || **a == "(" || **a == "!" || **a == ")"))
                .copied()
                .collect();
            let mut ranges = Vec::new();
            let mut i = 1;
            while i < argv.len() {
                if matches!(argv[i], "-exec" | "-execdir" | "-ok" | "-okdir") {
                    let start = i + 1;
                    let mut end = start;
                    while end < argv.len() && argv[end] != ";" && argv[end] != "+" {
                        end += 1;
                    }
                    ranges.push((start, end));
                    i = end + 1;
                } else {
                    i += 1;
                }
            }
            if ranges.is_empty() {
                return Container::None;
            }
            let with = match roots.as_slice() {
                [] => Some(".".to_string()),
                [one] => Some((*one).to_string()),
                _ => None,
            };
            Container::Argv {
                how: "find -exec".into(),
                ranges,
                with,
            }
        }
        _ => Container::None,
    }
}

/// An interpreter with no script operand reads its program from stdin (`curl | python3`).
pub(crate) fn is_interpreter_reading_stdin(argv: &[&str]) -> bool {
    let Some(&name) = argv.first() else {
        return false;
    };
    let interp = matches!(
        name,
        "python"
            | "python3"
            | "python2"
            | "node"
            | "perl"
            | "ruby"
            | "php"
            | "lua"
            | "deno"
            | "bun"
    ) || name.starts_with("python3.");
    interp
        && argv[1..]
            .iter()
            .all(|a| a.starts_with('-') && *a != "-c" && *a != "-e")
}

fn pr(raw: &str, access: Access, cwd: Option<&Path>) -> PathRef {
    let (base, glob) = glob_base(raw);
    PathRef {
        raw: raw.to_string(),
        path: join_path(cwd, if glob { &base } else { raw }),
        contents: glob,
        access,
        redirect: false,
        implicit: false,
    }
}

/// Splits `args` (after argv[0]) into operands, given the options that take a separate value.
/// Returns (operands, option values keyed by option).
fn operands<'a>(args: &[&'a str], with_arg: &[&str]) -> (Vec<&'a str>, Vec<(&'a str, &'a str)>) {
    let mut ops = Vec::new();
    let mut vals = Vec::new();
    let mut i = 0;
    let mut only_ops = false;
    while i < args.len() {
        let a = args[i];
        if only_ops || !is_opt(a) {
            ops.push(a);
            i += 1;
            continue;
        }
        if a == "--" {
            only_ops = true;
            i += 1;
            continue;
        }
        if let Some((k, v)) = a.split_once('=').filter(|(k, _)| k.starts_with("--")) {
            vals.push((k, v));
            i += 1;
            continue;
        }
        if with_arg.contains(&a) {
            if let Some(v) = args.get(i + 1) {
                vals.push((a, v));
            }
            i += 2;
            continue;
        }
        // `-n5`-style attached values for short options that take one.
        if let (Some(opt), Some(val)) = (a.get(..2), a.get(2..)) {
            if !val.is_empty() && !a.starts_with("--") && with_arg.contains(&opt) {
                vals.push((opt, val));
            }
        }
        i += 1;
    }
    (ops, vals)
}

fn has_short(args: &[&str], flag: char) -> bool {
    args.iter()
        .take_while(|a| **a != "--")
        .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains(flag))
}

/// The files a command's options name, from the command table (`sort -o FILE`, `grep -f
/// FILE`, `time -o FILE`): written or read.
pub(crate) fn option_paths(argv: &[&str], cwd: Option<&Path>) -> (Vec<PathRef>, ()) {
    let mut out = Vec::new();
    let Some(row) = argv.first().and_then(|n| table().program(n)) else {
        return (out, ());
    };
    let args = &argv[1..];
    for (list, access) in [(&row.writes, Access::Write), (&row.reads, Access::Read)] {
        for hit in Program::find_all(list, args) {
            if let Some(v) = hit.value.filter(|v| !v.is_empty()) {
                out.push(pr(&v, access, cwd));
            }
        }
    }
    (out, ())
}

/// The paths a (peeled) command reads, writes or deletes through its operands. The second
/// value is an opaque reason when the command's effect on files cannot be told.
pub(crate) fn collect_paths(argv: &[&str], cwd: Option<&Path>) -> (Vec<PathRef>, Option<String>) {
    let mut out = Vec::new();
    let Some(&name) = argv.first() else {
        return (out, None);
    };
    let args = &argv[1..];
    macro_rules! each {
        ($ops:expr, $acc:expr) => {
            for o in $ops.iter() {
                out.push(pr(o, $acc, cwd));
            }
        };
    }
    // The command table: files named by option values, and operands with one role.
    if let Some(row) = table().program(name) {
        out = option_paths(argv, cwd).0;
        let role = match row.operands.as_deref() {
            Some("read") => Some(Access::Read),
            Some("write") => Some(Access::Write),
            Some("delete") => Some(Access::Delete),
            _ => None,
        };
        if let Some(role) = role {
            let with: Vec<&str> = row
                .value_options
                .iter()
                .chain(&row.writes)
                .chain(&row.reads)
                .map(String::as_str)
                .collect();
            let (ops, _) = operands(args, &with);
            if ops.is_empty() {
                for d in &row.default_operands {
                    out.push(pr(d, role, cwd));
                }
            }
            each!(&ops, role);
            return (out, None);
        }
    }
    match name {
        "mv" => {
            let (ops, vals) = operands(args, &["-t", "-S", "--target-directory", "--suffix"]);
            if let Some((_, t)) = vals
                .iter()
                .find(|(k, _)| *k == "-t" || *k == "--target-directory")
            {
                each!(&ops, Access::Delete);
                each!(&[t], Access::Write);
            } else if let Some((last, rest)) = ops.split_last() {
                each!(rest, Access::Delete);
                each!(&[last], Access::Write);
            }
        }
        "cp" | "install" | "rsync" | "scp" => {
            let with = [
                "-t",
                "-S",
                "-m",
                "-o",
                "-g",
                "--target-directory",
                "--suffix",
                "-e",
                "--exclude",
                "--include",
                "-P",
                "-i",
                "-F",
                "-c",
                "-l",
                "--rsh",
                "--filter",
                "-f",
            ];
            let (ops, vals) = operands(args, &with);
            let del = args
                .iter()
                .any(|a| a.starts_with("--delete") || *a == "--remove-source-files");
            let dst_access = if del { Access::Delete } else { Access::Write };
            let local = |o: &&str| !(name == "rsync" || name == "scp") || !o.contains(':');
            if let Some((_, t)) = vals
                .iter()
                .find(|(k, _)| *k == "-t" || *k == "--target-directory")
            {
                let ops: Vec<&str> = ops.into_iter().filter(local).collect();
                each!(&ops, Access::Read);
                each!(&[t], dst_access);
            } else if let Some((last, rest)) = ops.split_last() {
                if name == "install" && has_short(args, 'd') {
                    each!(&ops, Access::Write);
                } else {
                    let rest: Vec<&str> = rest.iter().copied().filter(local).collect();
                    each!(&rest, Access::Read);
                    if local(last) {
                        each!(&[last], dst_access);
                    }
                }
            }
        }
        "ln" | "link" => {
            let (ops, vals) = operands(args, &["-t", "-S", "--target-directory", "--suffix"]);
            if let Some((_, t)) = vals
                .iter()
                .find(|(k, _)| *k == "-t" || *k == "--target-directory")
            {
                each!(&[t], Access::Write);
            } else if ops.len() >= 2 {
                each!(&ops[ops.len() - 1..], Access::Write);
            } else if let Some(one) = ops.first() {
                let base = one.rsplit('/').next().unwrap_or(one);
                each!(&[base], Access::Write);
            }
        }
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" | "chcon" => {
            // chmod modes like `-x` look like options.
            let mut ops: Vec<&str> = Vec::new();
            let mut reference = false;
            let mut only = false;
            for a in args {
                if only {
                    ops.push(a);
                } else if *a == "--" {
                    only = true;
                } else if a.starts_with("--reference") {
                    reference = true;
                } else if is_opt(a)
                    && !(matches!(name, "chmod" | "chattr") && ops.is_empty() && is_mode_like(a))
                {
                } else {
                    ops.push(a);
                }
            }
            let skip = usize::from(!reference && name != "setfacl");
            if ops.len() > skip {
                each!(&ops[skip..], Access::Write);
            }
        }
        "dd" => {
            for a in args {
                if let Some(f) = a.strip_prefix("of=") {
                    out.push(pr(f, Access::Write, cwd));
                } else if let Some(f) = a.strip_prefix("if=") {
                    out.push(pr(f, Access::Read, cwd));
                }
            }
        }
        "sed" | "gsed" => {
            let (ops, vals) = operands(
                args,
                &["-e", "-f", "--expression", "--file", "-l", "--line-length"],
            );
            let in_place = args.iter().take_while(|a| **a != "--").any(|a| {
                a.starts_with("--in-place")
                    || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains('i'))
            });
            let script_given = vals
                .iter()
                .any(|(k, _)| matches!(*k, "-e" | "-f" | "--expression" | "--file"));
            for (k, v) in &vals {
                if matches!(*k, "-f" | "--file") {
                    out.push(pr(v, Access::Read, cwd));
                }
            }
            let files = if script_given {
                &ops[..]
            } else {
                ops.get(1..).unwrap_or(&[])
            };
            for f in files {
                out.push(pr(
                    f,
                    if in_place {
                        Access::Write
                    } else {
                        Access::Read
                    },
                    cwd,
                ));
            }
        }
        "perl" => {
            let in_place = args
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].contains('i'));
            if in_place {
                let (ops, vals) = operands(args, &["-e", "-E", "-I", "-M", "-m"]);
                let files = if vals.iter().any(|(k, _)| *k == "-e" || *k == "-E") {
                    &ops[..]
                } else {
                    ops.get(1..).unwrap_or(&[])
                };
                for f in files {
                    out.push(pr(f, Access::Write, cwd));
                }
            }
        }
        "head" | "tail" => {
            let (ops, _) = operands(
                args,
                &[
                    "-n",
                    "-c",
                    "--lines",
                    "--bytes",
                    "-s",
                    "--sleep-interval",
                    "--pid",
                    "--max-unchanged-stats",
                ],
            );
            // `head -20 file`.
            let ops: Vec<&str> = ops
                .into_iter()
                .filter(|o| !(o.starts_with('+') && o[1..].chars().all(|c| c.is_ascii_digit())))
                .collect();
            each!(&ops, Access::Read);
        }
        "sort" | "uniq" | "cut" | "tr" | "shuf" | "split" | "csplit" => {
            let (ops, vals) = operands(
                args,
                &[
                    "-o",
                    "--output",
                    "-k",
                    "--key",
                    "-t",
                    "--field-separator",
                    "-S",
                    "--buffer-size",
                    "-T",
                    "--temporary-directory",
                    "-d",
                    "-f",
                    "-s",
                    "-w",
                    "-b",
                    "-l",
                    "-n",
                    "-c",
                    "-C",
                    "-a",
                    "--parallel",
                    "--batch-size",
                    "--random-source",
                    "-i",
                    "--input-range",
                    "--head-count",
                    "-e",
                ],
            );
            for (k, v) in &vals {
                if matches!(*k, "-o" | "--output") && name != "split" {
                    out.push(pr(v, Access::Write, cwd));
                }
            }
            match name {
                "tr" => {}
                "uniq" => {
                    if let Some(i) = ops.first() {
                        out.push(pr(i, Access::Read, cwd));
                    }
                    if let Some(o) = ops.get(1) {
                        out.push(pr(o, Access::Write, cwd));
                    }
                }
                "split" | "csplit" => {
                    if let Some(i) = ops.first() {
                        out.push(pr(i, Access::Read, cwd));
                    }
                    let prefix = ops
                        .get(if name == "split" { 1 } else { usize::MAX })
                        .copied()
                        .unwrap_or("x");
                    out.push(pr(&format!("{prefix}*"), Access::Write, cwd));
                }
                "shuf" if args.contains(&"-e") => {}
                _ => each!(&ops, Access::Read),
            }
        }
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "zgrep" => {
            let with = [
                "-e",
                "-f",
                "-m",
                "-A",
                "-B",
                "-C",
                "-d",
                "-D",
                "--regexp",
                "--file",
                "--max-count",
                "--context",
                "--after-context",
                "--before-context",
                "-g",
                "--glob",
                "--iglob",
                "-t",
                "--type",
                "-T",
                "--type-not",
                "-j",
                "--threads",
                "-M",
                "--max-columns",
                "-r",
                "--replace",
                "-E",
                "--encoding",
                "--max-depth",
                "--maxdepth",
                "--sort",
                "--sortr",
                "--color",
                "--colors",
                "--pre",
                "--pre-glob",
                "--type-add",
                "--ignore-file",
                "--label",
                "--exclude",
                "--include",
                "--exclude-dir",
                "--include-dir",
                "--binary-files",
                "--devices",
                "--directories",
                "--path-separator",
                "--max-filesize",
                "--engine",
                "-p",
            ];
            // grep's -r is a flag (recursive); rg's -r takes the replacement.
            let with: Vec<&str> = with
                .iter()
                .copied()
                .filter(|o| {
                    let rg_valued = matches!(*o, "-r" | "-E" | "-T");
                    *o != "-p" && (name == "rg" || !rg_valued)
                })
                .collect();
            let (ops, vals) = operands(args, &with);
            let pattern_given = vals
                .iter()
                .any(|(k, _)| matches!(*k, "-e" | "-f" | "--regexp" | "--file"));
            for (k, v) in &vals {
                if matches!(*k, "-f" | "--file" | "--ignore-file") {
                    out.push(pr(v, Access::Read, cwd));
                }
            }
            let files_list = args.iter().any(|a| *a == "--files" || *a == "--type-list");
            let files = if pattern_given || files_list {
                &ops[..]
            } else {
                ops.get(1..).unwrap_or(&[])
            };
            // rg, and grep -r, search the working directory when given no path.
            let recursive = name == "rg"
                || name == "ag"
                || name == "ack"
                || has_short(args, 'r')
                || has_short(args, 'R')
                || args.iter().any(|a| {
                    a.starts_with("--recursive") || a.starts_with("--dereference-recursive")
                });
            if files.is_empty() && recursive {
                each!(["."], Access::Read);
            }
            each!(files, Access::Read);
        }
        "find" | "fd" | "fdfind" => {
            if name == "find" {
                let roots: Vec<&str> = args
                    .iter()
                    .take_while(|a| !(a.starts_with('-') || **a == "(" || **a == "!" || **a == ")"))
                    .copied()
                    .collect();
                let roots = if roots.is_empty() { vec!["."] } else { roots };
                let deletes = args.contains(&"-delete");
                for r in &roots {
                    let mut p = pr(
                        r,
                        if deletes {
                            Access::Delete
                        } else {
                            Access::Read
                        },
                        cwd,
                    );
                    p.contents |= deletes;
                    out.push(p);
                }
                let mut i = 0;
                while i < args.len() {
                    if matches!(args[i], "-fprint" | "-fprint0" | "-fls" | "-fprintf") {
                        if let Some(f) = args.get(i + 1) {
                            out.push(pr(f, Access::Write, cwd));
                        }
                    }
                    i += 1;
                }
            } else {
                let (ops, _) = operands(
                    args,
                    &[
                        "-e",
                        "--extension",
                        "-t",
                        "--type",
                        "-E",
                        "--exclude",
                        "-d",
                        "--max-depth",
                        "--min-depth",
                        "-x",
                        "--exec",
                        "-X",
                        "--exec-batch",
                        "-j",
                        "--threads",
                        "-S",
                        "--size",
                        "--changed-within",
                        "--changed-before",
                        "-o",
                        "--owner",
                        "--base-directory",
                        "--search-path",
                        "-c",
                        "--color",
                        "--max-results",
                        "--ignore-file",
                    ],
                );
                let paths = ops.get(1..).unwrap_or(&[]);
                if paths.is_empty() {
                    each!(&["."], Access::Read);
                } else {
                    each!(paths, Access::Read);
                }
            }
        }
        "awk" | "gawk" | "mawk" | "jq" | "yq" | "gojq" => {
            let (ops, vals) = operands(
                args,
                &[
                    "-f",
                    "-v",
                    "-F",
                    "--from-file",
                    "--arg",
                    "--argjson",
                    "--slurpfile",
                    "--rawfile",
                    "--indent",
                    "-L",
                ],
            );
            let prog_file = vals.iter().any(|(k, _)| *k == "-f" || *k == "--from-file");
            let files = if prog_file {
                &ops[..]
            } else {
                ops.get(1..).unwrap_or(&[])
            };
            let in_place = name == "gawk" && args.windows(2).any(|w| w == ["-i", "inplace"])
                || (name == "yq" && has_short(args, 'i'));
            each!(
                files,
                if in_place {
                    Access::Write
                } else {
                    Access::Read
                }
            );
        }
        "tar" | "bsdtar" => {
            let first = args.first().copied().unwrap_or("");
            let cluster = first.trim_start_matches('-');
            let mode_of = |c: char| {
                args.iter().any(|a| {
                    (a.starts_with('-') && !a.starts_with("--") && a.contains(c))
                        || (*a == first && !first.starts_with('-') && cluster.contains(c))
                })
            };
            let create = mode_of('c') || mode_of('r') || mode_of('u') || args.contains(&"--create");
            let extract = mode_of('x') || args.contains(&"--extract") || args.contains(&"--get");
            // The archive: `-f FILE`, or the word after a cluster containing f.
            let mut archive = None;
            let mut dir = None;
            let mut i = 0;
            while i < args.len() {
                let a = args[i];
                if let Some(f) = a.strip_prefix("--file=") {
                    archive = Some(f);
                } else if let Some(d) = a.strip_prefix("--directory=") {
                    dir = Some(d);
                } else if a == "-C" || a == "--directory" {
                    dir = args.get(i + 1).copied();
                    i += 1;
                } else if a == "--file"
                    || ((a.starts_with('-') && !a.starts_with("--") || i == 0) && a.ends_with('f'))
                {
                    archive = args.get(i + 1).copied();
                    i += 1;
                }
                i += 1;
            }
            if let Some(a) = archive.filter(|a| *a != "-") {
                out.push(pr(
                    a,
                    if create { Access::Write } else { Access::Read },
                    cwd,
                ));
            }
            if extract {
                let d = dir.unwrap_or(".");
                let mut p = pr(d, Access::Write, cwd);
                p.contents = true;
                out.push(p);
            }
        }
        "unzip" => {
            let (ops, vals) = operands(args, &["-d", "-x", "-P"]);
            if let Some(a) = ops.first() {
                out.push(pr(a, Access::Read, cwd));
            }
            if !has_short(args, 'l') && !has_short(args, 't') && !has_short(args, 'p') {
                let d = vals
                    .iter()
                    .find(|(k, _)| *k == "-d")
                    .map(|(_, v)| *v)
                    .unwrap_or(".");
                let mut p = pr(d, Access::Write, cwd);
                p.contents = true;
                out.push(p);
            }
        }
        "curl" | "wget" => {
            let mut i = 0;
            while i < args.len() {
                let a = args[i];
                let next = args.get(i + 1).copied();
                match a {
                    "-o" | "--output" | "-O" if name == "wget" || a != "-O" => {
                        if let Some(f) = next {
                            out.push(pr(f, Access::Write, cwd));
                        }
                        i += 1;
                    }
                    "-P" | "--directory-prefix" if name == "wget" => {
                        if let Some(f) = next {
                            let mut p = pr(f, Access::Write, cwd);
                            p.contents = true;
                            out.push(p);
                        }
                        i += 1;
                    }
                    "-T" | "--upload-file" | "-K" | "--config" | "--post-file" | "--body-file"
                    | "-i" | "--input-file" => {
                        if let Some(f) = next {
                            out.push(pr(f, Access::Read, cwd));
                        }
                        i += 1;
                    }
                    "-d" | "--data" | "--data-binary" | "--data-raw" | "--data-urlencode"
                    | "-F" | "--form" | "--json" => {
                        if let Some(v) = next {
                            if let Some(pos) = v.find('@') {
                                let f = &v[pos + 1..];
                                if !f.is_empty() && f != "-" {
                                    out.push(pr(f, Access::Read, cwd));
                                }
                            }
                        }
                        i += 1;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        "git" => git_paths(args, cwd, &mut out),
        _ => {}
    }
    (out, None)
}

fn is_mode_like(a: &str) -> bool {
    let body = a.trim_start_matches(['-', '+', '=']);
    !body.is_empty() && body.chars().all(|c| "rwxXstugoa,+-=0123456789".contains(c))
}

/// Git global options before the subcommand: returns (index of the subcommand, `-C` dirs).
pub(crate) fn git_subcommand<'a>(args: &[&'a str]) -> (usize, Vec<&'a str>) {
    let mut i = 0;
    let mut dirs = Vec::new();
    while i < args.len() {
        let a = args[i];
        if matches!(
            a,
            "-C" | "-c"
                | "--git-dir"
                | "--work-tree"
                | "--namespace"
                | "--exec-path"
                | "--config-env"
                | "--super-prefix"
                | "--list-cmds"
        ) {
            if a == "-C" {
                if let Some(d) = args.get(i + 1) {
                    dirs.push(*d);
                }
            }
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            break;
        }
    }
    (i, dirs)
}

fn git_paths(args: &[&str], cwd: Option<&Path>, out: &mut Vec<PathRef>) {
    let (i, dirs) = git_subcommand(args);
    let base = dirs.iter().fold(cwd.map(Path::to_path_buf), |acc, d| {
        join_path(acc.as_deref(), d)
    });
    for d in &dirs {
        out.push(pr(d, Access::Read, cwd));
    }
    let Some(&sub) = args.get(i) else { return };
    let rest = &args[i + 1..];
    let mut k = 0;
    while k < rest.len() {
        let a = rest[k];
        if let Some(f) = a.strip_prefix("--output=") {
            out.push(pr(f, Access::Write, base.as_deref()));
        } else if (a == "--output" || (a == "-o" && sub == "archive")) && k + 1 < rest.len() {
            out.push(pr(rest[k + 1], Access::Write, base.as_deref()));
            k += 1;
        }
        k += 1;
    }
    if matches!(sub, "clone" | "init") || (sub == "worktree" && rest.first() == Some(&"add")) {
        let with = [
            "-b",
            "--branch",
            "-o",
            "--origin",
            "-c",
            "--config",
            "--depth",
            "--reference",
            "--template",
            "--separate-git-dir",
            "-u",
            "--upload-pack",
            "--shallow-since",
            "--filter",
            "--object-format",
            "--initial-branch",
        ];
        let skip = usize::from(sub == "worktree");
        let (ops, _) = operands(&rest[skip..], &with);
        let dest = match sub {
            "clone" => ops.get(1).copied().or_else(|| {
                ops.first().map(|u| {
                    u.trim_end_matches('/')
                        .trim_end_matches(".git")
                        .rsplit(['/', ':'])
                        .next()
                        .unwrap_or(".")
                })
            }),
            _ => ops.first().copied(),
        };
        let mut p = pr(dest.unwrap_or("."), Access::Write, base.as_deref());
        p.contents = true;
        out.push(p);
    }
    if sub == "config" {
        let reading = git_config_reads(rest);
        let writing = git_config_writes(rest);
        let (ops, vals) = operands(
            rest,
            &[
                "-f",
                "--file",
                "--blob",
                "--type",
                "--default",
                "--comment",
                "--value",
            ],
        );
        let ops: Vec<&str> = ops
            .into_iter()
            .filter(|o| {
                !matches!(
                    *o,
                    "get" | "set" | "unset" | "list" | "edit" | "rename-section" | "remove-section"
                )
            })
            .collect();
        let sets = writing || (!reading && ops.len() >= 2);
        if !sets {
            return;
        }
        let target = if let Some((_, f)) = vals.iter().find(|(k, _)| *k == "-f" || *k == "--file") {
            f.to_string()
        } else if rest.contains(&"--global") {
            "~/.gitconfig".to_string()
        } else if rest.contains(&"--system") {
            "/etc/gitconfig".to_string()
        } else if rest.contains(&"--worktree") {
            ".git/config.worktree".to_string()
        } else {
            ".git/config".to_string()
        };
        let mut p = pr(&target, Access::Write, base.as_deref());
        if target.starts_with("~/") {
            p.path = None;
            p.raw = target;
        }
        out.push(p);
    }
}

/// The first option that makes a command write, change state or run code (from the command
/// table). A wildcard allow rule (`Bash(git *)`) does not cover it unless the rule spells it.
pub(crate) fn risky_flag(argv: &[String]) -> Option<&'static str> {
    let name = argv.first()?.as_str();
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let row = table().program(name)?;
    let global = if row.global_exec.is_empty() {
        0
    } else {
        git_subcommand(&args).0.min(args.len())
    };
    Program::find(&row.global_exec, &args[..global])
        .or_else(|| row.risky(&args))
        .map(|hit| hit.option)
}

/// Why running this (peeled) argv runs code the user did not name, from the command table:
/// an option that runs a program or carries code, or an operand that defines code. The
/// second value is a shell command the option carries (`tar --to-command=CMD`), to analyse.
pub(crate) fn runs_code(argv: &[String]) -> Option<(String, Option<String>)> {
    let name = argv.first()?.as_str();
    let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
    let row = table().program(name)?;
    let global = if row.global_exec.is_empty() {
        0
    } else {
        git_subcommand(&args).0.min(args.len())
    };
    if let Some(hit) = Program::find(&row.global_exec, &args[..global]) {
        // `git -c core.pager=CMD`: the value of a key that names a program is shell.
        let script = hit
            .value
            .as_deref()
            .and_then(|v| v.split_once('='))
            .filter(|(k, _)| git_key_runs_code(k))
            .map(|(_, v)| v.trim_start_matches('!').to_string());
        return Some((
            format!("`{name} {}` makes it run other code", hit.option),
            script,
        ));
    }
    if let Some(hit) = Program::find(&row.script, &args) {
        let script = hit.value.map(|v| {
            // `--checkpoint-action=exec=CMD`
            v.strip_prefix("exec=").map(str::to_string).unwrap_or(v)
        });
        return Some((format!("`{name} {}` runs a command", hit.option), script));
    }
    if let Some(hit) = Program::find(&row.exec, &args) {
        return Some((format!("`{name} {}` runs other code", hit.option), None));
    }
    if let Some(hit) = Program::find(&row.inline_code, &args) {
        return Some((
            format!(
                "`{name} {}` runs inline code the analyser cannot read",
                hit.option
            ),
            None,
        ));
    }
    if let Some(why) = row
        .checker
        .as_deref()
        .and_then(|c| super::readonly::checker_runs_code(c, &args))
    {
        return Some((format!("`{name}` {why}"), None));
    }
    row.exec_operand(&args)
        .map(|op| (format!("`{name} {op}` defines code that runs later"), None))
}

/// Git configuration keys whose value is a command git runs.
fn git_key_runs_code(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.starts_with("alias.")
        || [
            "pager",
            "editor",
            "command",
            "program",
            "helper",
            "external",
            "driver",
            "hook",
            "textconv",
            "clean",
            "smudge",
            "process",
            "sshcommand",
            "fsmonitor",
            "askpass",
        ]
        .iter()
        .any(|end| k.ends_with(end))
}

/// `git config` arguments that only read (`--get`, `--list`, `get`, ...).
pub(crate) fn git_config_reads(rest: &[&str]) -> bool {
    rest.iter().any(|a| {
        matches!(
            *a,
            "--get"
                | "--get-all"
                | "--get-regexp"
                | "--get-urlmatch"
                | "--list"
                | "-l"
                | "get"
                | "list"
                | "--get-color"
                | "--get-colorbool"
        )
    })
}

/// `git config` arguments that change the configuration (`--add`, `--unset`, `set`, ...).
pub(crate) fn git_config_writes(rest: &[&str]) -> bool {
    rest.iter().any(|a| {
        matches!(
            *a,
            "--add"
                | "--unset"
                | "--unset-all"
                | "--replace-all"
                | "--rename-section"
                | "--remove-section"
                | "-e"
                | "--edit"
                | "set"
                | "unset"
                | "rename-section"
                | "remove-section"
                | "edit"
        )
    })
}
