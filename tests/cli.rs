//! The command line as a user types it: version, help, usage errors, listings, contracts, docs.

use crate::common;
use common::Sandbox;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn version_and_help() {
    let s = Sandbox::new();
    let out = s.fen(&["--version"]);
    assert!(out.status.success());
    // `fen 0.1.0 (commit 0123456789ab, built 2026-11-26)`: the commit from git at build time
    // (`unknown` outside a checkout), the date in UTC.
    let line = text(&out.stdout).trim().to_string();
    let rest = line
        .strip_prefix(&format!("fen {} (commit ", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("unexpected version line: {line}"));
    let (commit, date) = rest
        .strip_suffix(')')
        .and_then(|r| r.split_once(", built "))
        .unwrap_or_else(|| panic!("unexpected version line: {line}"));
    assert!(
        commit == "unknown"
            || (commit.len() == 12 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{line}"
    );
    let parts: Vec<&str> = date.split('-').collect();
    assert!(
        parts.len() == 3 && parts.iter().all(|p| p.chars().all(|c| c.is_ascii_digit())),
        "{line}"
    );
    assert!(parts[0].len() == 4 && parts[0] >= "2024", "{line}");
    let out = s.fen(&["--help"]);
    assert!(out.status.success());
    for word in ["list", "show", "docs", "--extension"] {
        assert!(text(&out.stdout).contains(word), "help lacks {word}");
    }
}

#[test]
fn unknown_flags_and_subcommands_exit_2_with_a_suggestion() {
    let s = Sandbox::new();
    let out = s.fen(&["lsit"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("similar subcommand exists: 'list'"),
        "{}",
        text(&out.stderr)
    );
    let out = s.fen(&["list", "--jsn"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--json"),
        "{}",
        text(&out.stderr)
    );
    let out = s.fen(&["list", "toolz"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("'tools'"));
}

#[test]
fn list_events_and_kinds_come_from_contracts() {
    let s = Sandbox::new();
    let events = s.fen_json(&["list", "events", "--json"]);
    let names: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for e in [
        "agent-started",
        "tool-result",
        "extension-error",
        "provider-retry",
    ] {
        assert!(names.contains(&e), "{e} missing");
    }
    let kinds = s.fen_json(&["list", "kinds", "--json"]);
    let names: Vec<&str> = kinds
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "auth-backend",
            "command",
            "control",
            "hook",
            "introspect",
            "panel",
            "presenter",
            "provider",
            "session-backend",
            "status",
            "tool"
        ]
    );
    let human = text(&s.fen(&["list", "commands"]).stdout);
    assert!(
        human
            .lines()
            .any(|l| l.starts_with("help") && l.contains("essentials")),
        "{human}"
    );
}

#[test]
fn show_contract_prints_one_entry_or_suggests() {
    let s = Sandbox::new();
    let out = s.fen(&["show", "contract", "tool-result"]);
    assert!(out.status.success());
    let md = text(&out.stdout);
    assert!(
        md.contains("### tool-result") && md.contains("| `result` | `ToolResultMessage` | yes |"),
        "{md}"
    );
    let json = s.fen_json(&["show", "contract", "register-kinds/tool", "--json"]);
    assert_eq!(json[0]["section"], "register-kinds");
    assert!(json[0]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["name"] == "concurrency"));
    let out = s.fen(&["show", "contract", "tool-reslt"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("did you mean 'tool-result'"));
}

#[test]
fn docs_writes_and_checks_the_contract_page() {
    let s = Sandbox::new();
    let out = s.fen(&["docs", "--check"]);
    assert_eq!(out.status.code(), Some(1), "missing page must be stale");
    assert!(s.fen(&["docs"]).status.success());
    let page = std::fs::read_to_string(s.cwd().join("docs/contracts.md")).unwrap();
    for heading in [
        "## events",
        "## types",
        "## register-kinds",
        "## interfaces",
        "| Field | Type | Required | Summary |",
    ] {
        assert!(page.contains(heading), "{heading} missing");
    }
    assert!(s.fen(&["docs", "--check"]).status.success());
    std::fs::write(
        s.cwd().join("docs/contracts.md"),
        page.replace("Event-bus shapes.", "edited"),
    )
    .unwrap();
    let out = s.fen(&["docs", "--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("stale"));
    let other = s.root().join("other.md");
    assert!(s
        .fen(&["docs", "--out", other.to_str().unwrap()])
        .status
        .success());
    assert_eq!(std::fs::read_to_string(other).unwrap(), page);
}

/// The committed docs/contracts.md must match contracts/ (run `fen docs` after editing them).
#[test]
fn committed_contract_docs_are_fresh() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fen"))
        .args(["docs", "--check"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "docs/contracts.md is stale: run `cargo run -- docs` ({})",
        text(&out.stderr)
    );
}

/// Issue 11.17: a bad `thinking` in settings.json was warned about twice per run.
#[test]
fn a_bad_thinking_setting_is_warned_about_twice() {
    let s = Sandbox::new();
    s.write("config/fen/settings.json", r#"{"thinking": "bogus"}"#);
    s.write("work/s.json", r#"{"turns": [{"text": "hi"}]}"#);
    let out = s.fen(&["-p", "hello", "--mock-script", "s.json"]);
    let err = text(&out.stderr);
    assert_eq!(err.matches("ignoring thinking level").count(), 1, "{err}");
}

/// Issue 11.17: a bad models.json said "serialize error: serialize error: ..."; it names the
/// file, the line and the column.
#[test]
fn a_bad_models_json_says_serialize_error_twice() {
    let s = Sandbox::new();
    s.write(
        "config/fen/models.json",
        "{\"providers\": {\"x\": {\n  \"base_url\": \"http://127.0.0.1:1\",\n}",
    );
    let out = s.fen(&["list", "providers"]);
    let err = text(&out.stderr);
    assert!(!err.contains("serialize error"), "{err}");
    assert!(err.contains("models.json: invalid JSON"), "{err}");
    assert!(err.contains("line 3 column 1"), "{err}");
}

/// Issue 11.7: with -p (or --mode), a one-word prompt that is a subcommand name was taken as the
/// subcommand (`fen -p list --mock-script s.json`: "unexpected argument").
#[test]
fn a_one_word_prompt_that_is_a_subcommand_name_is_taken_as_the_subcommand() {
    let s = Sandbox::new();
    s.write(
        "work/s.json",
        r#"[{"text": "listed"}, {"text": "json too"}]"#,
    );
    let out = s.fen(&["-p", "list", "--mock-script", "s.json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "listed\n");
    let out = s.fen(&[
        "--mock-script",
        "s.json",
        "--mode",
        "json",
        "tool",
        "--no-session",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("\"tool\""),
        "{}",
        text(&out.stdout)
    );
}

/// Issue 11.7: `fen lsit tools` suggested `tool` (for the second word) instead of `list`.
#[test]
fn a_subcommand_typo_with_more_words_suggests_tool_for_the_second_word() {
    let s = Sandbox::new();
    let out = s.fen(&["lsit", "tools"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("similar subcommand exists: 'list'"), "{err}");
}

/// Issue 11.8: with providers in models.json but none chosen, `fen -p` said only "no provider
/// is configured"; it names the declared ones and how to choose one.
#[test]
fn declared_providers_without_a_default_say_no_provider_is_configured() {
    let s = Sandbox::new();
    s.write(
        "config/fen/models.json",
        r#"{"providers": {"proxy": {"base_url": "http://127.0.0.1:9/v1"}, "local": {"base_url": "http://127.0.0.1:9/v1"}}}"#,
    );
    let out = s.fen_env(
        &["-p", "hello"],
        &[
            ("OPENAI_API_KEY", ""),
            ("ANTHROPIC_API_KEY", ""),
            ("FEN_MOCK_SCRIPT", ""),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("declares: local, proxy"), "{err}");
    assert!(err.contains("--provider local"), "{err}");
    assert!(
        err.contains("\"provider\": \"local\"") && err.contains("settings.json"),
        "{err}"
    );
}

/// Issue 11.10: the README's install line must use the lock file.
#[test]
fn readme_installs_without_the_lock_file() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for line in readme.lines().filter(|l| l.contains("cargo install")) {
        assert!(line.contains("--locked"), "{line}");
    }
}

/// Issue 11.9: `--fork` without `-c`/`--resume` was silently ignored.
#[test]
fn fork_without_continue_or_resume_is_silently_ignored() {
    let s = Sandbox::new();
    s.write("work/s.json", r#"[{"text": "hi"}]"#);
    let out = s.fen(&["--fork", "-p", "hello", "--mock-script", "s.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--continue|--resume"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 11.9: `--max-turns 0` was accepted.
#[test]
fn max_turns_0_is_accepted() {
    let s = Sandbox::new();
    let out = s.fen(&["--max-turns", "0", "-p", "hello"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("at least 1"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 11.9: `fen tool` exited 0 after Ctrl-C; 130 is the documented status.
#[test]
fn fen_tool_exits_0_after_ctrl_c() {
    let s = Sandbox::new();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fen"))
        .args(["tool", "bash", r#"{"command": "sleep 30"}"#])
        .current_dir(s.cwd())
        .env("HOME", s.root())
        .env("XDG_CONFIG_HOME", s.config())
        .env("XDG_STATE_HOME", s.state())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Give it time to start the command (a delay, not a speed assertion).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // SAFETY: signalling our own child by its pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed().as_secs() < 60,
            "fen tool did not stop on SIGINT"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let out = child.wait_with_output().unwrap();
    assert_eq!(status.code(), Some(130), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("cancelled"),
        "{}",
        text(&out.stdout)
    );
}

/// An unknown top-level key of settings.json is a warning naming the file and line (logged
/// once, never fatal); known keys are not reported.
#[test]
fn an_unknown_setting_is_reported_once_with_its_file_and_line() {
    let s = Sandbox::new();
    let path = s.write(
        "config/fen/settings.json",
        "{\n  \"permissions\": {\"mode\": \"yolo\"},\n  \"tui\": {},\n  \"colour\": \"red\"\n}",
    );
    let out = s.fen_env(&["list", "tools"], &[("FEN_LOG", "warn")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let line = format!("{}:4: unknown setting \"colour\" (ignored)", path.display());
    assert_eq!(err.matches(&line).count(), 1, "{err}");
    assert!(!err.contains("\"tui\""), "{err}");
}
