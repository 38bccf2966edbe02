//! The mechanism that applies the command table (`commands.toml`) to a segment: peeling the
//! wrappers it lists, and naming the paths a command reads, writes or deletes from its
//! options and its operand layout. Also the containers whose arguments are more shell (`bash
//! -c`, `eval`, `xargs`, `find -exec`) and the two path judges rows name by `paths` (tar's
//! mode letters, git's subcommands).

use std::borrow::Cow;
use std::path::Path;

use super::table::{table, Program, Role, Slot};
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

/// Recognises a wrapper at the head of `argv` (`argv[0]` already normalised to `name`), from
/// its row in the command table: its options (by `value_options`), assignments, then
/// `wrapper_operands` more words.
pub(crate) fn peel<'a>(name: &str, argv: &[&'a str]) -> Peel<'a> {
    let Some(row) = table().program(name).filter(|r| r.wrapper) else {
        return Peel::No;
    };
    let with = row.valued_options();
    let mut i = 1;
    while i < argv.len() {
        let a = argv[i];
        if a == "--" {
            i += 1;
            break;
        }
        if row.skip_words.iter().any(|w| w == a) {
            i += 1;
            continue;
        }
        if !is_opt(a) {
            break;
        }
        // `env -S 'cmd args'`: the string is parsed as shell, the words after it appended.
        if let Some(hit) = Program::find(&row.split_string, &argv[i..i + 1]) {
            let attached = hit.value.is_some() && a != hit.option;
            return match (attached, argv.get(i + 1)) {
                (true, _) => Peel::Split {
                    skip: i + 1,
                    string: a
                        .strip_prefix(hit.option)
                        .map(|v| v.strip_prefix('=').unwrap_or(v))
                        .unwrap_or(""),
                },
                (false, Some(s)) => Peel::Split {
                    skip: i + 2,
                    string: s,
                },
                (false, None) => Peel::Skip(argv.len()),
            };
        }
        i += if with.iter().any(|w| w == a) { 2 } else { 1 };
    }
    let i = i.min(argv.len());
    let own = &argv[1..i];
    if Program::has(&row.not_wrapper_with, own) {
        return Peel::No;
    }
    let mut i = i;
    while row.wrapper_assignments && i < argv.len() && is_assignment(argv[i]) {
        i += 1;
    }
    if argv[i..]
        .iter()
        .any(|a| row.opaque_operands.iter().any(|o| o == a))
    {
        return Peel::Opaque(format!(
            "`{name}` runs a compound command the analyser cannot see"
        ));
    }
    if i >= argv.len() {
        if Program::has(&row.shell_without_command, own) {
            return Peel::Opaque(format!("`{name}` opens an interactive shell"));
        }
        if Program::has(&row.self_without_command, own) {
            return Peel::No;
        }
    }
    if row.command_string {
        return match argv.get(i) {
            Some(s) => Peel::Split {
                skip: i + 1,
                string: s,
            },
            None => Peel::No,
        };
    }
    Peel::Skip((i + row.wrapper_operands).min(argv.len()))
}

/// The directory a wrapper's options move the command to (`env -C DIR`, `sudo -D DIR`).
pub(crate) fn wrapper_chdir(name: &str, own: &[&str]) -> Option<String> {
    let row = table().program(name)?;
    Program::find(&row.chdir_options, own).and_then(|h| h.value)
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
    operands2::<&str, &str>(args, with_arg, &[])
}

/// [`operands`], with options that take two values (`jq --arg NAME VALUE`).
fn operands2<'a, S: AsRef<str>, T: AsRef<str>>(
    args: &[&'a str],
    with_arg: &[S],
    with_two: &[T],
) -> (Vec<&'a str>, Vec<(&'a str, &'a str)>) {
    let with_arg = |a: &str| with_arg.iter().any(|w| w.as_ref() == a);
    let with_two = |a: &str| with_two.iter().any(|w| w.as_ref() == a);
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
        if with_two(a) {
            i += 3;
            continue;
        }
        if with_arg(a) {
            if let Some(v) = args.get(i + 1) {
                vals.push((a, v));
            }
            i += 2;
            continue;
        }
        // `-n5`-style attached values for short options that take one.
        if let (Some(opt), Some(val)) = (a.get(..2), a.get(2..)) {
            if !val.is_empty() && !a.starts_with("--") && with_arg(opt) {
                vals.push((opt, val));
            }
        }
        i += 1;
    }
    (ops, vals)
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

/// The paths a (peeled) command reads, writes or deletes, from its row in the command table:
/// files its options name, then its operands by the row's layout. The second value is an
/// opaque reason when the command's effect on files cannot be told.
pub(crate) fn collect_paths(argv: &[&str], cwd: Option<&Path>) -> (Vec<PathRef>, Option<String>) {
    let Some(row) = argv.first().and_then(|n| table().program(n)) else {
        return (Vec::new(), None);
    };
    // `tar czf a.tgz src`: an old-style first word is a cluster of options.
    let dashed;
    let mut argv = argv;
    let owned: Vec<&str>;
    if row.old_style_options && argv.get(1).is_some_and(|a| !a.starts_with('-')) {
        dashed = format!("-{}", argv[1]);
        owned = std::iter::once(argv[0])
            .chain(std::iter::once(dashed.as_str()))
            .chain(argv[2..].iter().copied())
            .collect();
        argv = &owned;
    }
    let mut out = option_paths(argv, cwd).0;
    let args = &argv[1..];
    match row.paths.as_deref() {
        Some("tar") => tar_paths(args, cwd, &mut out),
        Some("git") => git_paths(args, cwd, &mut out),
        _ => {}
    }
    if !row.touches_paths() {
        return (out, None);
    }
    let mut roles = operand_roles(row, args);
    if row.remote_operands {
        // `host:path` is on another machine.
        roles.retain(|(_, text)| !text.contains(':'));
    }
    for (opt, changes) in &row.role_changes {
        if Program::has(std::slice::from_ref(opt), args) {
            for (role, _) in roles.iter_mut() {
                if let Some((_, to)) = changes
                    .iter()
                    .find(|(from, _)| from.is_none_or(|f| f == *role))
                {
                    *role = *to;
                }
            }
        }
    }
    for (role, raw) in roles {
        let (access, contents) = match role {
            Role::Read => (Access::Read, false),
            Role::Write | Role::WritePrefix | Role::WriteName => (Access::Write, false),
            Role::Delete => (Access::Delete, false),
            Role::WriteInto => (Access::Write, true),
            Role::DeleteTree => (Access::Delete, true),
            Role::Skip | Role::Pattern => continue,
        };
        let raw = match role {
            Role::WritePrefix => Cow::Owned(format!("{raw}*")),
            Role::WriteName => Cow::Owned(raw.rsplit('/').next().unwrap_or(&raw).to_string()),
            _ => raw,
        };
        let mut p = pr(&raw, access, cwd);
        p.contents |= contents;
        out.push(p);
    }
    (out, None)
}

/// Each operand (and option value) the row's layout gives a role, with its text.
fn operand_roles<'a>(row: &'a Program, args: &[&'a str]) -> Vec<(Role, Cow<'a, str>)> {
    let mut out: Vec<(Role, Cow<'a, str>)> = Vec::new();
    let with = row.valued_options();
    let mut ops: Vec<&str> = if row.roots_only {
        args.iter()
            .take_while(|a| !(is_opt(a) || matches!(**a, "(" | "!" | ")")))
            .copied()
            .collect()
    } else {
        operands2(args, with, &row.two_value_options).0
    };
    if let Some(letters) = row.mode_operand.as_deref() {
        // `chmod -x FILE`: a mode that looks like an option is the first operand.
        let mode_like = |a: &str| {
            let body = a.trim_start_matches(['-', '+', '=']);
            !body.is_empty() && body.chars().all(|c| letters.contains(c))
        };
        if let Some(m) = args
            .iter()
            .take_while(|a| **a != "--")
            .find(|a| is_opt(a) && mode_like(a))
        {
            ops.insert(0, m);
        }
    }
    if !row.assignments.is_empty() {
        ops.retain(|o| match o.split_once('=') {
            Some((k, v)) => match row.assignments.get(k) {
                Some(role) => {
                    out.push((*role, Cow::Borrowed(v)));
                    false
                }
                None => true,
            },
            None => true,
        });
    }
    for hit in Program::find_all(&row.at_file_options, args) {
        if let Some(f) = hit.value.as_deref().and_then(|v| v.split_once('@')) {
            if !f.1.is_empty() && f.1 != "-" {
                out.push((Role::Read, Cow::Owned(f.1.to_string())));
            }
        }
    }
    let mut named: Vec<Role> = Vec::new();
    for (opt, role) in &row.value_roles {
        for hit in Program::find_all(std::slice::from_ref(opt), args) {
            if let Some(v) = hit.value.filter(|v| !v.is_empty()) {
                out.push((*role, Cow::Owned(v)));
                named.push(*role);
            }
        }
    }
    out.extend(
        row.implied_paths
            .iter()
            .filter(|(role, _)| !named.contains(role))
            .map(|(role, p)| (*role, Cow::Borrowed(p.as_str()))),
    );
    if row.layout.is_empty() {
        return out;
    }
    let mut layout: Vec<&Slot> = row.layout.iter().collect();
    if Program::has(&row.pattern_options, args) {
        layout.retain(|s| s.role != Role::Pattern);
    }
    let target = Program::find(&row.target_options, args).and_then(|h| h.value);
    let many = layout.iter().position(|s| s.many);
    if let (Some(t), Some(m)) = (target, many) {
        // `cp -t DIR a b`: every operand is a source, the value the destination.
        for o in &ops {
            out.push((layout[m].role, Cow::Borrowed(*o)));
        }
        if let Some(dest) = layout.iter().enumerate().find(|(i, _)| *i != m) {
            out.push((dest.1.role, Cow::Owned(t)));
        }
        return out;
    }
    if ops.len() == 1 {
        if let Some(role) = row.lone_operand {
            out.push((role, Cow::Borrowed(ops[0])));
            return out;
        }
    }
    // Single slots before the repeated one take operands from the front, those after it
    // from the back; the repeated slot takes the rest. Without a repeated slot, extra
    // operands take the last slot's role.
    let (front, back) = match many {
        Some(m) => (&layout[..m], &layout[m + 1..]),
        None => (&layout[..], &layout[layout.len()..]),
    };
    // A slot takes its operand, else its default.
    let take = |slot: &&'a Slot, op: Option<&&'a str>| {
        op.map(|o| Cow::Borrowed(*o))
            .or_else(|| slot.default.as_deref().map(Cow::Borrowed))
            .map(|text| (slot.role, text))
    };
    let n_front = front.len().min(ops.len());
    let n_back = back.len().min(ops.len() - n_front);
    let (head, rest) = ops.split_at(n_front);
    let (rest, tail) = rest.split_at(rest.len() - n_back);
    for (i, slot) in front.iter().enumerate() {
        out.extend(take(slot, head.get(i)));
    }
    // Slots after the repeated one are filled from the end: the first ones may go without.
    let missing = back.len() - n_back;
    let tail: Vec<_> = back
        .iter()
        .enumerate()
        .filter_map(|(j, slot)| take(slot, j.checked_sub(missing).and_then(|k| tail.get(k))))
        .collect();
    let rest_role = match many {
        Some(m) => layout[m].role,
        None => layout.last().map_or(Role::Read, |s| s.role),
    };
    // `ls`, `rg x`, `grep -r x`: no path means the working directory.
    if rest.is_empty()
        && many.is_some()
        && (row.default_operands_with.is_empty() || Program::has(&row.default_operands_with, args))
    {
        out.extend(
            row.default_operands
                .iter()
                .map(|d| (rest_role, Cow::Borrowed(d.as_str()))),
        );
    }
    out.extend(rest.iter().map(|o| (rest_role, Cow::Borrowed(*o))));
    out.extend(tail);
    out
}

/// tar: the archive (`-f FILE`) is written when creating, read otherwise; extracting writes
/// into `-C DIR` (or the working directory).
fn tar_paths(args: &[&str], cwd: Option<&Path>, out: &mut Vec<PathRef>) {
    let mode = |letters: &[&str]| {
        Program::has(
            &letters.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
            args,
        )
    };
    let create = mode(&[
        "-c",
        "-r",
        "-u",
        "-A",
        "--create",
        "--append",
        "--update",
        "--concatenate",
        "--delete",
    ]);
    let extract = mode(&["-x", "--extract", "--get"]);
    let archive = Program::find(&["-f".to_string(), "--file".to_string()], args)
        .and_then(|h| h.value)
        .filter(|a| a != "-");
    if let Some(a) = archive {
        out.push(pr(
            &a,
            if create { Access::Write } else { Access::Read },
            cwd,
        ));
    }
    if extract {
        let dir = Program::find(&["-C".to_string(), "--directory".to_string()], args)
            .and_then(|h| h.value)
            .unwrap_or_else(|| ".".into());
        let mut p = pr(&dir, Access::Write, cwd);
        p.contents = true;
        out.push(p);
    }
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
