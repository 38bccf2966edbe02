//! Unit tests of the analyser's parts; the corpora live in tests/policy_corpus.rs.

use std::path::PathBuf;

use super::*;

fn ctx() -> ShellContext {
    ShellContext {
        cwd: PathBuf::from("/w"),
        home: PathBuf::from("/home/u"),
    }
}

fn names(cmd: &str) -> Vec<String> {
    analyze(cmd, &ctx())
        .segments
        .iter()
        .map(|s| s.argv.join(" "))
        .collect()
}

#[test]
fn quoting_tricks_normalise_the_command_name() {
    for c in [
        "r''m -rf x",
        "\\rm -rf x",
        "\"r\"m -rf x",
        "'rm' -rf x",
        "/bin/rm -rf x",
        "$'\\x72m' -rf x",
        "r$'m' -rf x",
    ] {
        assert_eq!(names(c), ["rm -rf x"], "{c}");
    }
}

#[test]
fn heredocs_and_here_strings_fed_to_a_shell_are_analysed() {
    let a = analyze("bash <<EOF\nrm -rf /\nEOF\n", &ctx());
    let rm = a
        .segments
        .iter()
        .find(|s| s.name() == "rm")
        .expect("rm inside the heredoc");
    assert_eq!(rm.via, ["bash <stdin>"]);
    let a = analyze("sh <<< 'cat ~/.ssh/id_rsa'", &ctx());
    let cat = a.segments.iter().find(|s| s.name() == "cat").expect("cat");
    assert_eq!(
        cat.paths[0].path.as_deref(),
        Some(std::path::Path::new("/home/u/.ssh/id_rsa"))
    );
    // A heredoc to a non-shell is data, but `$(...)` in an unquoted one still runs.
    assert_eq!(names("cat <<EOF\n$(touch x)\nEOF\n"), ["touch x", "cat"]);
}

#[test]
fn parser_crash_input_is_survived() {
    // tree-sitter-bash 0.25.1 segfaults on this; the parser sees ASCII only.
    let a = analyze("{\u{E01DE}", &ctx());
    assert!(!a.segments.is_empty());
    let a = analyze("echo \u{E01DE}é > \u{4E2D}.txt", &ctx());
    assert_eq!(a.segments[0].paths[0].raw, "\u{4E2D}.txt");
}

#[test]
fn secret_names() {
    for n in [
        ".env",
        ".env.local",
        "api_token.txt",
        "secrets.yaml",
        "credentials.json",
        "id_rsa",
        "id_ed25519.pub",
        "server.pem",
        "GITHUB_TOKEN",
        "private_key.der",
        ".netrc",
    ] {
        assert!(paths::secret_name(n), "{n}");
    }
    for n in [
        ".env.example",
        "tokenizer.rs",
        "secretary.md",
        "main.rs",
        "tokenstream.rs",
        "README.md",
    ] {
        assert!(!paths::secret_name(n), "{n}");
    }
}

#[test]
fn resolve_follows_symlinks_of_the_existing_prefix() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = paths::resolve(dir.path());
    std::fs::create_dir_all(root.join("a/b")).expect("mkdir");
    std::os::unix::fs::symlink(root.join("a/b"), root.join("l")).expect("symlink");
    // `l/..` is `a`, not the directory holding `l`.
    assert_eq!(paths::resolve(&root.join("l/../x/y")), root.join("a/x/y"));
    assert_eq!(
        paths::resolve(&root.join("missing/../l/z")),
        root.join("a/b/z")
    );
    std::os::unix::fs::symlink("/nonexistent/target", root.join("dangling")).expect("symlink");
    assert_eq!(
        paths::resolve(&root.join("dangling")),
        PathBuf::from("/nonexistent/target")
    );
}

#[test]
fn sed_and_awk_read_only_scripts() {
    let ro = |c: &str| readonly::is_read_only(&shell_words(c));
    assert!(ro("sed -n 1,40p f"));
    assert!(ro("sed s/a/b/g f"));
    assert!(ro("sed -e /x/d -e 5q f"));
    assert!(!ro("sed -i s/a/b/ f"));
    assert!(!ro("sed s/a/b/w out f"));
    assert!(!ro("sed 1e f"));
    assert!(!ro("sed -f script.sed f"));
    assert!(ro("awk {print} f"));
    assert!(!ro("awk {system(\"rm\")} f"));
    assert!(!ro("awk {print>\"out\"} f"));
    assert!(ro("git log --oneline"));
    assert!(!ro("git -c core.pager=x log"));
    assert!(!ro("git branch newbranch"));
    assert!(ro("git branch --list"));
    assert!(!ro("find . -delete"));
    assert!(!ro("rg --pre sh x"));
    assert!(!ro("env"));
}

fn shell_words(c: &str) -> Vec<String> {
    c.split_whitespace().map(str::to_string).collect()
}

/// A shell-risk tool with no command (an MCP server's tool) runs outside the OS sandbox: auto
/// mode asks for it even when a sandbox is available (shell commands then run without asking).
#[test]
fn a_shell_risk_tool_without_a_command_asks_in_auto_mode_even_with_a_sandbox() {
    let ws = Workspace::new(
        std::path::Path::new("/w"),
        &[],
        std::path::Path::new("/home/u"),
        std::path::Path::new("/home/u/.config"),
    );
    let rules = RuleSet::default();
    let judge = |tool: &str, args: serde_json::Value, mode: Mode| {
        decide(&Request {
            tool,
            risk: Risk::Shell,
            args: &args,
            mode,
            rules: &rules,
            workspace: &ws,
            sandbox_available: true,
        })
        .verdict
    };
    let mcp = || serde_json::json!({"text": "x"});
    assert_eq!(judge("mcp__srv__echo", mcp(), Mode::Auto), Verdict::Ask);
    assert_eq!(judge("mcp__srv__echo", mcp(), Mode::Default), Verdict::Ask);
    assert_eq!(judge("mcp__srv__echo", mcp(), Mode::Yolo), Verdict::Allow);
    // The same mode lets a sandboxed shell command through.
    let make = serde_json::json!({"command": "make build"});
    assert_eq!(judge("bash", make, Mode::Auto), Verdict::Allow);
}

#[test]
fn plan_mode_runs_reads_and_refuses_writes_asks_and_rule_allowed_commands() {
    let ws = Workspace::new(
        std::path::Path::new("/w"),
        &[],
        std::path::Path::new("/home/u"),
        std::path::Path::new("/home/u/.config"),
    );
    let mut rules = RuleSet::default();
    rules
        .add(
            &RuleInput {
                text: "Bash(make *)".into(),
                kind: RuleKind::Allow,
                source: None,
            },
            &ws,
        )
        .unwrap();
    let judge = |tool: &str, risk: Risk, args: serde_json::Value| {
        decide(&Request {
            tool,
            risk,
            args: &args,
            mode: Mode::Plan,
            rules: &rules,
            workspace: &ws,
            sandbox_available: true,
        })
    };
    let read = judge("read", Risk::Read, serde_json::json!({"path": "/w/a.rs"}));
    assert_eq!(read.verdict, Verdict::Allow, "{}", read.reason);
    let ls = judge(
        "bash",
        Risk::Shell,
        serde_json::json!({"command": "ls -la"}),
    );
    assert_eq!(ls.verdict, Verdict::Allow, "{}", ls.reason);
    for (tool, risk, args) in [
        (
            "write",
            Risk::Write,
            serde_json::json!({"path": "/w/a.rs", "content": "x"}),
        ),
        ("edit", Risk::Write, serde_json::json!({"path": "/w/a.rs"})),
        (
            "bash",
            Risk::Shell,
            serde_json::json!({"command": "touch x"}),
        ),
        (
            "bash",
            Risk::Shell,
            serde_json::json!({"command": "make build"}),
        ),
        ("mcp__s__t", Risk::Shell, serde_json::json!({})),
    ] {
        let d = judge(tool, risk, args);
        assert_eq!(d.verdict, Verdict::Deny, "{tool}");
        assert_eq!(
            d.reason,
            crate::native::policy::decide::PLAN_REFUSAL,
            "{tool}"
        );
        assert!(d.scope.is_empty());
    }
    // Floors keep their own reason.
    let floor = judge(
        "bash",
        Risk::Shell,
        serde_json::json!({"command": "rm -rf ~"}),
    );
    assert_eq!(floor.verdict, Verdict::Deny);
    assert_ne!(floor.reason, crate::native::policy::decide::PLAN_REFUSAL);
    assert_eq!("plan".parse::<Mode>(), Ok(Mode::Plan));
}

/// Every row of the command table carries test rows (`examples`), checked here in a scratch
/// workspace: adding a program is adding a row with its test rows beside it.
/// The paths the analyser names for a command, as `ROLE PATH, ...` (`write_into` and
/// `delete_tree` for a directory's contents; words only judged for secrets left out).
fn named_paths(cmd: &str) -> String {
    let seg = analyze(cmd, &ctx())
        .segments
        .into_iter()
        .next()
        .expect("a segment");
    let mut got: Vec<String> = seg
        .paths
        .iter()
        .filter(|p| !p.implicit && !p.redirect)
        .map(|p| {
            let role = match (p.access, p.contents && !p.raw.contains(['*', '?', '['])) {
                (Access::Read, _) => "read",
                (Access::Write, false) => "write",
                (Access::Write, true) => "write_into",
                (Access::Delete, false) => "delete",
                (Access::Delete, true) => "delete_tree",
            };
            format!("{role} {}", p.raw)
        })
        .collect::<Vec<_>>();
    got.sort_unstable();
    got.join(", ")
}

#[test]
fn every_command_table_example_gets_its_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let proj = home.join("proj");
    for d in ["src", ".git", ".ssh"] {
        std::fs::create_dir_all(proj.join(d)).expect("mkdir");
    }
    std::fs::create_dir_all(home.join(".ssh")).expect("mkdir");
    for (p, t) in [
        (proj.join("README.md"), "# x\n"),
        (proj.join("Cargo.toml"), "[package]\n"),
        (proj.join("package.json"), "{}\n"),
        (proj.join(".env"), "KEY=1\n"),
        (home.join(".ssh/id_rsa"), "key\n"),
    ] {
        std::fs::write(p, t).expect("write");
    }
    let ws = Workspace::new(&proj, &[], &home, &home.join(".config"));
    let none = RuleSet::default();
    let mut wrong = Vec::new();
    let mut count = 0;
    for (name, row) in table::table().programs() {
        for ex in &row.examples {
            count += 1;
            let (expect, cmd) = ex.split_once(": ").expect("EXPECT: command");
            let args = serde_json::json!({ "command": cmd });
            let judge = |mode: Mode, rules: &RuleSet, sandbox: bool| {
                decide(&Request {
                    tool: "bash",
                    risk: Risk::Shell,
                    args: &args,
                    mode,
                    rules,
                    workspace: &ws,
                    sandbox_available: sandbox,
                })
            };
            let ok = match expect {
                "ro" => judge(Mode::Default, &none, false).verdict == Verdict::Allow,
                "ask" => judge(Mode::Default, &none, false).verdict == Verdict::Ask,
                "deny" => judge(Mode::Default, &none, false).verdict == Verdict::Deny,
                "opaque" => {
                    let first = cmd.split_whitespace().next().unwrap_or(name);
                    let head = if row.aliases.iter().any(|a| a == first) {
                        first
                    } else {
                        name
                    };
                    let rule = RuleSet::parse(
                        &[RuleInput {
                            text: format!("Bash({head} *)"),
                            kind: RuleKind::Allow,
                            source: None,
                        }],
                        None,
                        &ws,
                    )
                    .expect("rule");
                    judge(Mode::Auto, &rule, true).verdict == Verdict::Ask
                }
                // `paths: CMD => ROLE PATH, ...`: what the row's operand layout names.
                "paths" => {
                    let (cmd, want) = cmd.split_once(" =>").expect("paths: CMD => ROLES");
                    let got = named_paths(cmd);
                    let mut want: Vec<&str> = want.split(',').map(str::trim).collect();
                    want.sort_unstable();
                    let want = want.join(", ").trim_start_matches(", ").to_string();
                    if got != want {
                        wrong.push(format!("[{name}] {cmd}: named `{got}`, want `{want}`"));
                    }
                    true
                }
                other => panic!("row `{name}`: unknown expectation `{other}`"),
            };
            if !ok {
                let d = judge(Mode::Default, &none, false);
                wrong.push(format!("[{name}] {ex}: got {:?} ({})", d.verdict, d.reason));
            }
        }
    }
    assert!(count > 150, "only {count} examples");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Decisions reuse a directory's listing while it is unchanged: a word that becomes a link
/// to a secret after the listing was kept is still seen as the secret read it is.
#[test]
fn a_kept_directory_listing_never_hides_a_new_link_to_a_secret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = paths::resolve(dir.path());
    let (home, proj) = (root.join("home"), root.join("home/proj"));
    std::fs::create_dir_all(home.join(".ssh")).expect("mkdir");
    std::fs::create_dir_all(&proj).expect("mkdir");
    std::fs::write(home.join(".ssh/id_rsa"), "KEY").expect("write");
    let names: Vec<String> = (0..12).map(|i| format!("f{i}")).collect();
    for n in &names {
        std::fs::write(proj.join(n), "x").expect("write");
    }
    let ws = Workspace::new(&proj, &[], &home, &home.join(".config"));
    let rules = RuleSet::default();
    // Many words in one directory: past the first lookups its listing answers.
    let command = serde_json::json!({ "command": format!("od -c {}", names.join(" ")) });
    let judge = || {
        decide(&Request {
            tool: "bash",
            risk: Risk::Shell,
            args: &command,
            mode: Mode::Auto,
            rules: &rules,
            workspace: &ws,
            sandbox_available: true,
        })
        .verdict
    };
    // Old enough to be kept across decisions, then used by the next.
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(judge(), Verdict::Allow);
    assert_eq!(judge(), Verdict::Allow);
    // The last word becomes a link to the key, in the same directory.
    let last = proj.join(&names[11]);
    std::fs::remove_file(&last).expect("rm");
    std::os::unix::fs::symlink(home.join(".ssh/id_rsa"), &last).expect("symlink");
    assert_ne!(judge(), Verdict::Allow, "a link to the key is read through");
}
