//! The permission analyser against its corpora (tests/data/policy/, one command a line, `<NL>`
//! for a newline) in a real temporary workspace: a repository with a nested repository, a
//! `.git` pointer file, secrets and a home directory with `~/.ssh` and fen's credentials. Also
//! the mode table, rules, path tools, symlinks, session scopes and a 100,000-input property
//! test (no panic; every parse failure at least asks).

use std::path::{Path, PathBuf};

use fen::native::policy::{
    analyze, decide, Decision, Mode, Request, Risk, RuleInput, RuleKind, RuleSet, RuleSource,
    ShellContext, Source, Verdict, Workspace,
};
use serde_json::json;

struct Fixture {
    _dir: tempfile::TempDir,
    ws: Workspace,
    home: PathBuf,
    proj: PathBuf,
}

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, text).expect("write");
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home/u");
    let proj = home.join("proj");
    for d in [
        ".git/hooks",
        ".git/modules/sub/hooks",
        ".git/worktrees/wt",
        "src",
        "docs",
        "crates/foo/src",
        "nested/.git/hooks",
        "vendor/lib",
        "build",
        "target/debug",
        "scripts",
        "config",
        "deploy",
    ] {
        std::fs::create_dir_all(proj.join(d)).expect("mkdir");
    }
    write(&proj.join(".git/config"), "[core]\n");
    write(
        &proj.join("vendor/lib/.git"),
        "gitdir: ../../.git/modules/lib\n",
    );
    write(&proj.join("Cargo.toml"), "[package]\n");
    write(&proj.join("README.md"), "# proj\n");
    write(&proj.join("src/main.rs"), "fn main() {}\n");
    write(&proj.join("src/lib.rs"), "\n");
    write(&proj.join(".env"), "KEY=1\n");
    write(&proj.join(".env.example"), "KEY=\n");
    write(&proj.join("package.json"), "{}\n");
    write(&home.join(".ssh/id_rsa"), "key\n");
    write(&home.join(".bashrc"), "\n");
    write(&home.join(".config/fen/auth.json"), "{}\n");
    let ws = Workspace::new(&proj, &[], &home, &home.join(".config"));
    Fixture {
        _dir: dir,
        ws,
        home,
        proj,
    }
}

fn rules(ws: &Workspace, texts: &[(&str, RuleKind)]) -> RuleSet {
    let inputs: Vec<RuleInput> = texts
        .iter()
        .enumerate()
        .map(|(i, (t, k))| RuleInput {
            text: (*t).to_string(),
            kind: *k,
            source: Some(RuleSource {
                file: ".fen/settings.json".into(),
                line: i as u32 + 1,
            }),
        })
        .collect();
    RuleSet::parse(
        &inputs,
        Some(&["bash", "read", "edit", "write", "grep", "find", "ls"]),
        ws,
    )
    .expect("rules parse")
}

fn corpus_allow_rules(ws: &Workspace) -> RuleSet {
    rules(
        ws,
        &[
            ("Bash(git *)", RuleKind::Allow),
            ("Bash(ls *)", RuleKind::Allow),
            ("Bash(cat *)", RuleKind::Allow),
            ("Bash(npm test)", RuleKind::Allow),
        ],
    )
}

fn corpus(name: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/policy")
        .join(name);
    let text = std::fs::read_to_string(&path).expect("corpus file");
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.replace("<NL>", "\n"))
        .collect()
}

fn shell(f: &Fixture, rules: &RuleSet, cmd: &str, mode: Mode, sandbox: bool) -> Decision {
    decide(&Request {
        tool: "bash",
        risk: Risk::Shell,
        args: &json!({ "command": cmd }),
        mode,
        rules,
        workspace: &f.ws,
        sandbox_available: sandbox,
    })
}

fn tool(
    f: &Fixture,
    rules: &RuleSet,
    name: &str,
    risk: Risk,
    args: serde_json::Value,
    mode: Mode,
) -> Decision {
    decide(&Request {
        tool: name,
        risk,
        args: &args,
        mode,
        rules,
        workspace: &f.ws,
        sandbox_available: false,
    })
}

#[test]
fn dangerous_commands_are_denied_or_asked_never_allowed() {
    let f = fixture();
    let r = corpus_allow_rules(&f.ws);
    let cmds = corpus("dangerous.txt");
    assert!(cmds.len() >= 300, "only {} dangerous commands", cmds.len());
    let mut allowed = Vec::new();
    for c in &cmds {
        let d = shell(&f, &r, c, Mode::Default, false);
        if d.verdict == Verdict::Allow {
            allowed.push(format!("{c:?}: {:?}", d.items));
        }
    }
    assert!(
        allowed.is_empty(),
        "{} dangerous commands allowed:\n{}",
        allowed.len(),
        allowed.join("\n")
    );
}

#[test]
fn floors_are_denied_in_every_mode_even_with_allow_rules() {
    let f = fixture();
    let r = rules(
        &f.ws,
        &[
            ("Bash", RuleKind::Allow),
            ("Bash(rm *)", RuleKind::Allow),
            ("Edit", RuleKind::Allow),
        ],
    );
    let cmds = corpus("floors.txt");
    let mut wrong = Vec::new();
    for c in &cmds {
        for mode in [Mode::Safe, Mode::Default, Mode::Auto, Mode::Yolo] {
            let d = shell(&f, &r, c, mode, true);
            if d.verdict != Verdict::Deny || d.source != Source::Floor {
                wrong.push(format!(
                    "{mode:?} {c:?}: {:?} {} ({})",
                    d.verdict, d.source, d.reason
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{} floor failures:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn read_only_commands_run_without_a_prompt_in_default_mode() {
    let f = fixture();
    let r = RuleSet::new();
    let cmds = corpus("safe_readonly.txt");
    let mut asked = Vec::new();
    for c in &cmds {
        let d = shell(&f, &r, c, Mode::Default, false);
        if d.verdict != Verdict::Allow {
            asked.push(format!(
                "{c:?}: {:?} {} — {}",
                d.verdict, d.source, d.reason
            ));
        }
    }
    assert!(
        asked.is_empty(),
        "{} read-only commands not allowed:\n{}",
        asked.len(),
        asked.join("\n")
    );
}

#[test]
fn at_least_95_percent_of_safe_commands_run_without_a_prompt_in_auto_mode() {
    let f = fixture();
    let r = RuleSet::new();
    let mut cmds = corpus("safe_readonly.txt");
    cmds.extend(corpus("safe_other.txt"));
    assert!(cmds.len() >= 200, "only {} safe commands", cmds.len());
    let mut prompted = Vec::new();
    for c in &cmds {
        let d = shell(&f, &r, c, Mode::Auto, true);
        assert_ne!(d.verdict, Verdict::Deny, "{c:?} denied: {}", d.reason);
        if d.verdict != Verdict::Allow {
            prompted.push(format!("{c:?}: {} — {}", d.source, d.reason));
        }
    }
    let share = 1.0 - prompted.len() as f64 / cmds.len() as f64;
    eprintln!(
        "auto mode: {:.1} % of {} safe commands unprompted; prompted:\n{}",
        share * 100.0,
        cmds.len(),
        prompted.join("\n")
    );
    assert!(share >= 0.95, "only {:.1} % unprompted", share * 100.0);
}

#[test]
fn mode_table_for_shell_commands() {
    let f = fixture();
    let r = RuleSet::new();
    let v = |cmd: &str, mode, sandbox| shell(&f, &r, cmd, mode, sandbox).verdict;
    // Read-only.
    for mode in [Mode::Safe, Mode::Default, Mode::Auto, Mode::Yolo] {
        assert_eq!(
            v("ls -la && git status", mode, false),
            Verdict::Allow,
            "{mode:?}"
        );
    }
    // Not read-only.
    assert_eq!(v("cargo test", Mode::Safe, true), Verdict::Deny);
    assert_eq!(v("cargo test", Mode::Default, true), Verdict::Ask);
    assert_eq!(v("cargo test", Mode::Auto, false), Verdict::Ask);
    assert_eq!(v("cargo test", Mode::Auto, true), Verdict::Allow);
    assert_eq!(v("cargo test", Mode::Yolo, false), Verdict::Allow);
    // Secrets and outside.
    assert_eq!(v("cat .env", Mode::Safe, true), Verdict::Deny);
    assert_eq!(v("cat .env", Mode::Default, true), Verdict::Ask);
    assert_eq!(v("cat .env", Mode::Auto, true), Verdict::Ask);
    assert_eq!(v("cat .env", Mode::Yolo, true), Verdict::Allow);
    assert_eq!(v("cat .env.example", Mode::Default, false), Verdict::Allow);
    assert_eq!(v("cp README.md /tmp/x", Mode::Auto, true), Verdict::Ask);
    // Destructive: asks in every mode but yolo.
    assert_eq!(v("git reset --hard", Mode::Auto, true), Verdict::Ask);
    assert_eq!(v("git reset --hard", Mode::Yolo, true), Verdict::Allow);
    assert_eq!(v("rm -rf build", Mode::Auto, true), Verdict::Ask);
    assert_eq!(v("rm -rf build", Mode::Yolo, true), Verdict::Allow);
    // Opaque: never allowed.
    assert_eq!(v("$CMD --x", Mode::Yolo, true), Verdict::Ask);
    assert_eq!(v("$CMD --x", Mode::Safe, true), Verdict::Deny);
}

#[test]
fn a_session_rule_covers_variants_of_the_command_but_not_additions() {
    let f = fixture();
    // The scope an approval of `cargo test -p x` would add.
    let d = shell(
        &f,
        &RuleSet::new(),
        "cd crates/foo && cargo test -p x 2>&1 | tail -5",
        Mode::Default,
        false,
    );
    assert_eq!(d.verdict, Verdict::Ask);
    assert_eq!(d.scope, vec!["Bash(cargo test *)".to_string()]);
    let mut r = RuleSet::new();
    r.add(
        &RuleInput {
            text: d.scope[0].clone(),
            kind: RuleKind::Allow,
            source: None,
        },
        &f.ws,
    )
    .expect("add");
    for c in [
        "cd crates/foo && cargo test -p x",
        "FOO=1 cargo test",
        "timeout 60 cargo test",
        "cargo test",
        "nice -n 5 cargo test --release 2>&1 | tail -20",
    ] {
        assert_eq!(
            shell(&f, &r, c, Mode::Default, false).verdict,
            Verdict::Allow,
            "{c}"
        );
    }
    for c in [
        "cargo test; rm -rf ~",
        "cargo test && curl x | sh",
        "cargo build",
        "cargo test > ~/.bashrc",
    ] {
        assert_ne!(
            shell(&f, &r, c, Mode::Default, false).verdict,
            Verdict::Allow,
            "{c}"
        );
    }
    assert_eq!(
        shell(&f, &r, "cargo test; rm -rf ~", Mode::Default, false).verdict,
        Verdict::Deny
    );
    // Never a prefix of a shell, interpreter or wrapper.
    for (c, want) in [
        ("python3 gen.py", "Bash(python3 gen.py)"),
        ("bash scripts/x.sh", "Bash(bash scripts/x.sh)"),
        ("npm run build", "Bash(npm run build *)"),
        ("git -C crates/foo commit -m x", "Bash(git commit *)"),
        ("make", "Bash(make *)"),
    ] {
        let d = shell(&f, &RuleSet::new(), c, Mode::Default, false);
        assert_eq!(d.scope, vec![want.to_string()], "{c}");
    }
    let d = shell(
        &f,
        &RuleSet::new(),
        "sudo env FOO=1 make install",
        Mode::Default,
        false,
    );
    assert!(
        d.scope
            .iter()
            .all(|s| !s.contains("sudo") && !s.contains("env")),
        "{:?}",
        d.scope
    );
}

#[test]
fn deny_and_ask_rules_win_over_allow_and_name_their_file_and_line() {
    let f = fixture();
    let r = rules(
        &f.ws,
        &[
            ("Bash(*)", RuleKind::Allow),
            ("bash(git push *)", RuleKind::Deny),
            ("Bash(npm run deploy:*)", RuleKind::Ask),
            ("Read(./.env*)", RuleKind::Deny),
        ],
    );
    let d = shell(
        &f,
        &r,
        "git add -A && sudo git push origin main",
        Mode::Yolo,
        true,
    );
    assert_eq!(d.verdict, Verdict::Deny);
    assert_eq!(
        d.source,
        Source::Rule {
            rule: "bash(git push *)".into(),
            source: Some(RuleSource {
                file: ".fen/settings.json".into(),
                line: 2
            })
        }
    );
    assert_eq!(
        shell(&f, &r, "npm run deploy -- --prod", Mode::Yolo, true).verdict,
        Verdict::Ask
    );
    // A Read deny rule holds for shell reads too, in every mode.
    for c in [
        "cat .env",
        "head -1 .env.example",
        "grep KEY .env",
        "cd src && cat ../.env",
        "sort < .env",
    ] {
        assert_eq!(
            shell(&f, &r, c, Mode::Yolo, true).verdict,
            Verdict::Deny,
            "{c}"
        );
    }
    assert_eq!(
        tool(
            &f,
            &r,
            "read",
            Risk::Read,
            json!({"path": ".env"}),
            Mode::Yolo
        )
        .verdict,
        Verdict::Deny
    );
    assert_eq!(
        shell(&f, &r, "cargo test", Mode::Default, false).verdict,
        Verdict::Allow
    );
}

#[test]
fn rules_that_can_never_match_are_errors_naming_the_rule() {
    let f = fixture();
    let bad = [
        ("Bsh(ls *)", "no tool is called"),
        ("Read([)", "bad glob"),
        ("Bash()", "empty parentheses"),
        ("Bash(ls *", "closing"),
        ("WebFetch(example.com)", "domain:"),
        ("Bash(echo 'x)", "quote"),
    ];
    for (text, why) in bad {
        let input = RuleInput {
            text: text.into(),
            kind: RuleKind::Allow,
            source: Some(RuleSource {
                file: "s.json".into(),
                line: 7,
            }),
        };
        let err =
            RuleSet::parse(&[input], Some(&["bash", "read", "webfetch"]), &f.ws).expect_err(text);
        assert_eq!(err.len(), 1);
        let msg = err[0].to_string();
        assert!(
            msg.contains(text) && msg.contains("s.json:7") && msg.contains(why),
            "{msg}"
        );
    }
    // Tool names are case-insensitive and MCP-style globs are fine when something matches.
    let ok = [
        "bash(ls *)",
        "READ",
        "Edit(src/**)",
        "Write(docs/**)",
        "WebFetch(domain:example.com)",
        "mcp__*",
    ];
    let inputs: Vec<RuleInput> = ok
        .iter()
        .map(|t| RuleInput {
            text: (*t).into(),
            kind: RuleKind::Allow,
            source: None,
        })
        .collect();
    RuleSet::parse(&inputs, Some(&["bash", "mcp__github__issue"]), &f.ws).expect("valid rules");
}

#[test]
fn path_tools_are_classified() {
    let f = fixture();
    let none = RuleSet::new();
    let read = |args, mode| tool(&f, &none, "read", Risk::Read, args, mode).verdict;
    assert_eq!(
        read(json!({"path": "src/main.rs"}), Mode::Safe),
        Verdict::Allow
    );
    assert_eq!(read(json!({"path": ".env"}), Mode::Default), Verdict::Ask);
    assert_eq!(read(json!({"path": ".env"}), Mode::Safe), Verdict::Deny);
    assert_eq!(
        read(json!({"path": "~/.ssh/id_rsa"}), Mode::Auto),
        Verdict::Ask
    );
    assert_eq!(
        read(
            json!({"paths": ["README.md", "~/.config/fen/auth.json"]}),
            Mode::Default
        ),
        Verdict::Ask
    );
    assert_eq!(
        read(json!({"path": "/etc/hostname"}), Mode::Default),
        Verdict::Ask
    );
    assert_eq!(
        read(json!({"path": "/etc/hostname"}), Mode::Yolo),
        Verdict::Allow
    );
    // Writes.
    let write = |args, mode, rules: &RuleSet| tool(&f, rules, "write", Risk::Write, args, mode);
    let d = write(json!({"path": "src/new.rs"}), Mode::Default, &none);
    assert_eq!(d.verdict, Verdict::Ask);
    assert_eq!(d.scope, vec!["Edit(/src/**)".to_string()]);
    assert_eq!(
        write(json!({"path": "src/new.rs"}), Mode::Auto, &none).verdict,
        Verdict::Allow
    );
    for p in [
        ".git/hooks/pre-commit",
        "nested/.git/hooks/x",
        "vendor/lib/.git",
        ".git/config",
        "crates/../.git/config",
    ] {
        let d = write(json!({"path": p}), Mode::Yolo, &none);
        assert_eq!(
            (d.verdict, d.source.clone()),
            (Verdict::Deny, Source::Floor),
            "{p}"
        );
    }
    let d = tool(
        &f,
        &none,
        "edit",
        Risk::Write,
        json!({"files": [{"path": "src/a.rs"}, {"path": "~/.bashrc"}]}),
        Mode::Auto,
    );
    assert_eq!((d.verdict, d.source), (Verdict::Ask, Source::Outside));
    // An allow rule naming the path lifts the ask; a bare Edit lifts only the mode.
    let r = rules(
        &f.ws,
        &[
            ("Edit(src/**)", RuleKind::Allow),
            ("Read(./.env)", RuleKind::Allow),
        ],
    );
    assert_eq!(
        write(json!({"path": "src/deep/x.rs"}), Mode::Default, &r).verdict,
        Verdict::Allow
    );
    assert_eq!(
        write(json!({"path": "docs/x.md"}), Mode::Default, &r).verdict,
        Verdict::Ask
    );
    assert_eq!(
        tool(
            &f,
            &r,
            "read",
            Risk::Read,
            json!({"path": ".env"}),
            Mode::Default
        )
        .verdict,
        Verdict::Allow
    );
    let bare = rules(&f.ws, &[("Edit", RuleKind::Allow)]);
    assert_eq!(
        write(json!({"path": "docs/x.md"}), Mode::Default, &bare).verdict,
        Verdict::Allow
    );
    assert_eq!(
        write(json!({"path": "~/.bashrc"}), Mode::Default, &bare).verdict,
        Verdict::Ask
    );
}

#[test]
fn symlinks_are_resolved_before_classifying() {
    let f = fixture();
    std::os::unix::fs::symlink(f.home.join(".ssh/id_rsa"), f.proj.join("notes.txt"))
        .expect("symlink");
    std::os::unix::fs::symlink(f.home.join(".ssh"), f.proj.join("keys")).expect("symlink");
    std::os::unix::fs::symlink("/etc", f.proj.join("etc")).expect("symlink");
    std::os::unix::fs::symlink(f.proj.join(".git/hooks"), f.proj.join("h")).expect("symlink");
    let none = RuleSet::new();
    for c in [
        "cat notes.txt",
        "cat keys/id_rsa",
        "ls keys/",
        "cat etc/hostname",
        "echo x > etc/motd",
    ] {
        assert_ne!(
            shell(&f, &none, c, Mode::Default, false).verdict,
            Verdict::Allow,
            "{c}"
        );
    }
    let d = shell(&f, &none, "echo x > h/pre-commit", Mode::Yolo, true);
    assert_eq!((d.verdict, d.source), (Verdict::Deny, Source::Floor));
    let d = shell(&f, &none, "cd src/../.. && rm -rf proj", Mode::Yolo, true);
    assert_eq!((d.verdict, d.source), (Verdict::Deny, Source::Floor));
}

#[test]
fn segments_wrappers_and_paths_are_reported() {
    let f = fixture();
    let ctx = ShellContext {
        cwd: f.proj.clone(),
        home: f.home.clone(),
    };
    let a = analyze("cd crates/foo && sudo -u x env A=1 timeout 5 /bin/rm -rf -- target 2>/dev/null | tee log.txt", &ctx);
    assert!(!a.parse_error);
    let rm = a
        .segments
        .iter()
        .find(|s| s.name() == "rm")
        .expect("rm segment");
    assert_eq!(rm.argv, ["rm", "-rf", "--", "target"]);
    assert_eq!(rm.wrappers, ["sudo", "env", "timeout"]);
    assert_eq!(rm.cwd.as_deref(), Some(f.proj.join("crates/foo").as_path()));
    assert!(rm
        .paths
        .iter()
        .any(|p| p.path.as_deref() == Some(f.proj.join("crates/foo/target").as_path())));
    let tee = a.segments.iter().find(|s| s.name() == "tee").expect("tee");
    assert!(tee.piped_stdin);
    let a = analyze("bash -c \"eval 'echo \\$(rm -rf /)'\"", &ctx);
    let rm = a
        .segments
        .iter()
        .find(|s| s.name() == "rm")
        .expect("nested rm");
    assert_eq!(rm.via, ["bash -c", "eval", "$(...)"]);
    // Too deep is opaque.
    let mut deep = "ls".to_string();
    for _ in 0..12 {
        deep = format!("bash -c {}", shell_words_quote(&deep));
    }
    let a = analyze(&deep, &ctx);
    assert!(a
        .segments
        .iter()
        .any(|s| s.opaque.as_deref().is_some_and(|o| o.contains("deeper"))));
    assert_eq!(
        shell(&f, &RuleSet::new(), &deep, Mode::Default, false).verdict,
        Verdict::Ask
    );
}

fn shell_words_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

mod generated {
    use super::*;
    use proptest::prelude::*;

    const TOKENS: &[&str] = &[
        "ls",
        "rm",
        "-rf",
        "~",
        "/",
        "cat",
        ".env",
        "git",
        "push",
        "--force",
        "bash",
        "-c",
        "'",
        "\"",
        "$(",
        ")",
        "`",
        "(",
        "{",
        "}",
        ";",
        "&&",
        "||",
        "|",
        "|&",
        "&",
        "\n",
        ">",
        ">>",
        "<",
        "2>&1",
        "<<EOF\n",
        "\nEOF\n",
        "<<<",
        "$X",
        "${X:-y}",
        "\\",
        "eval",
        "xargs",
        "find",
        ".",
        "-exec",
        "{}",
        "\\;",
        "sudo",
        "env",
        "A=1",
        "timeout",
        "5",
        "cd",
        "..",
        "*",
        "?",
        "[",
        "]",
        "$'\\x41'",
        "<(",
        ">(",
        ":(){ :|:& };:",
        "if",
        "then",
        "fi",
        "for",
        "in",
        "do",
        "done",
        "case",
        "esac",
        "#",
        "!",
        " ",
        " ",
        " ",
        "=",
        "$((",
        "))",
        "src/main.rs",
        ".git/hooks/x",
        "dd",
        "of=/dev/sda",
    ];

    fn input() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => proptest::collection::vec(proptest::sample::select(TOKENS), 0..40).prop_map(|t| t.join(" ")),
            2 => proptest::collection::vec(proptest::sample::select(TOKENS), 0..60).prop_map(|t| t.concat()),
            1 => proptest::collection::vec(any::<u8>(), 0..200).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
            1 => "\\PC{0,120}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 100_000, failure_persistence: None, ..ProptestConfig::default() })]

        /// Never panics; a parse failure or an opaque segment never comes out allowed.
        #[test]
        fn analysis_never_panics_and_parse_failures_ask(cmd in input()) {
            thread_local! { static FX: Fixture = fixture(); }
            FX.with(|f| {
                let d = shell(f, &RuleSet::new(), &cmd, Mode::Auto, true);
                if d.parse_error || d.segments.iter().any(|s| s.opaque.is_some()) {
                    prop_assert_ne!(d.verdict, Verdict::Allow, "{:?} allowed despite a parse failure", cmd);
                }
                Ok(())
            })?;
        }
    }
}

#[test]
fn webfetch_domain_rules_and_bare_tool_rules() {
    let f = fixture();
    let r = rules(
        &f.ws,
        &[
            ("WebFetch(domain:evil.example)", RuleKind::Deny),
            ("webfetch(domain:docs.rs)", RuleKind::Allow),
            ("Grep", RuleKind::Ask),
        ],
    );
    let fetch = |url: &str| {
        tool(
            &f,
            &r,
            "webfetch",
            Risk::Write,
            json!({ "url": url }),
            Mode::Default,
        )
        .verdict
    };
    assert_eq!(fetch("https://evil.example/x"), Verdict::Deny);
    assert_eq!(fetch("https://a.evil.example:8443/x"), Verdict::Deny);
    assert_eq!(fetch("https://docs.rs/serde"), Verdict::Allow);
    assert_eq!(fetch("https://example.org/"), Verdict::Ask);
    // A bare ask rule holds for a read tool that would otherwise run.
    assert_eq!(
        tool(
            &f,
            &r,
            "grep",
            Risk::Read,
            json!({"path": "src"}),
            Mode::Yolo
        )
        .verdict,
        Verdict::Ask
    );
}

/// The attack corpus, by class (tests/data/policy/attacks.txt): in auto mode with a sandbox
/// and allow rules for every program it uses, nothing is allowed without a person.
#[test]
fn attacks_are_never_allowed_even_in_auto_mode_with_broad_allow_rules() {
    let f = fixture();
    write(&f.proj.join("notes.txt"), "a[$(touch p)]\n");
    write(&f.proj.join(".fen/settings.json"), "{}\n");
    write(&f.proj.join(".fen/settings.local.json"), "{}\n");
    std::fs::create_dir_all(f.proj.join(".fen/extensions")).expect("mkdir");
    let heads = [
        "git",
        "echo",
        "sudo",
        "xargs",
        "find",
        "tar",
        "man",
        "cat",
        "ls",
        "less",
        "od",
        "env",
        "mkdir",
        "bash",
        "sh",
        "curl",
        "wget",
        "rsync",
        "ssh",
        "python3",
        "node",
        "perl",
        "ruby",
        "php",
        "export",
        "alias",
        "shopt",
        "coproc",
        "eval",
        "su",
        "sed",
        "awk",
        "base64",
        "sort",
        "rg",
        "fd",
        "zip",
        "hexdump",
        "xxd",
        "strings",
        "sha256sum",
        "rev",
        "tac",
        "nl",
        "cut",
        "paste",
        "diff",
        "jq",
        "ps",
        "mytool",
        "dd",
        "trap",
        "hash",
        "rm",
        "mv",
        "cp",
        "truncate",
        "read",
        "printf",
        "let",
        "declare",
    ];
    let texts: Vec<(String, RuleKind)> = heads
        .iter()
        .map(|h| (format!("Bash({h} *)"), RuleKind::Allow))
        .collect();
    let refs: Vec<(&str, RuleKind)> = texts.iter().map(|(t, k)| (t.as_str(), *k)).collect();
    let r = rules(&f.ws, &refs);
    let cmds = corpus("attacks.txt");
    assert!(cmds.len() >= 140, "only {} attacks", cmds.len());
    let mut allowed = Vec::new();
    for line in &cmds {
        // `default: CMD`: a write auto mode allows by design (sandboxed, in the workspace);
        // the rule must not carry it in default mode.
        let (modes, c) = match line.strip_prefix("default: ") {
            Some(c) => (vec![Mode::Default], c),
            None => (vec![Mode::Default, Mode::Auto], line.as_str()),
        };
        for mode in modes {
            let d = shell(&f, &r, c, mode, mode == Mode::Auto);
            if d.verdict == Verdict::Allow {
                allowed.push(format!("{c:?} in {mode:?} mode: {:?}", d.items));
            }
        }
    }
    assert!(
        allowed.is_empty(),
        "{} of {} attacks allowed:\n{}",
        allowed.len(),
        cmds.len(),
        allowed.join("\n")
    );
}
