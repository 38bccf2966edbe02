//! Permissions end to end through the mock provider: the mode table, headless answers, the
//! line REPL's approval prompt (y, s, a, n, c), "always" kept for the next session, trust,
//! floors in yolo, `--tools`, bad rules, the audit log and the sandbox in auto mode.

use crate::common;
use common::Sandbox;
use serde_json::Value;
use std::io::Write;
use std::time::{Duration, Instant};

fn script(s: &Sandbox, calls: &[(&str, Value)]) -> String {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, args)| serde_json::json!({"name": name, "arguments": args}))
        .collect();
    let turns = serde_json::json!([{"tool_calls": calls}, {"text": "done"}]);
    s.write("script.json", &turns.to_string())
        .to_string_lossy()
        .into_owned()
}

/// `fen --mode json` with `args`; the tool-result texts and the permission decisions.
fn run_json(s: &Sandbox, args: &[&str]) -> (Vec<String>, Vec<Value>, std::process::Output) {
    let mut all = vec!["--mode", "json", "go", "--no-session"];
    all.extend_from_slice(args);
    let out = s.fen(&all);
    let mut results = Vec::new();
    let mut decisions = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(ev) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match ev["type"].as_str() {
            Some("tool-result") => results.push(
                ev["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            ),
            Some("permission-decision") => decisions.push(ev),
            _ => {}
        }
    }
    (results, decisions, out)
}

fn allowed(r: &str) -> bool {
    !r.starts_with("permission denied")
}

#[test]
fn each_mode_decides_as_its_table_says() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    s.write("outside.txt", "secret-ish\n");
    let sc = script(
        &s,
        &[
            ("bash", serde_json::json!({"command": "ls"})),
            ("bash", serde_json::json!({"command": "touch made.txt"})),
            (
                "write",
                serde_json::json!({"path": "new.txt", "content": "x"}),
            ),
            ("read", serde_json::json!({"path": "../outside.txt"})),
        ],
    );
    let expect = |mode: &str| -> [bool; 4] {
        match mode {
            "safe" => [true, false, false, false],
            "default" => [true, false, false, false],
            // auto: shell runs when a sandbox exists (bubblewrap or Landlock on Linux).
            "auto" => [true, true, true, false],
            _ => [true, true, true, true],
        }
    };
    for mode in ["safe", "default", "auto", "yolo"] {
        let (results, decisions, out) =
            run_json(&s, &["--mock-script", &sc, "--permission-mode", mode]);
        assert_eq!(
            results.len(),
            4,
            "{mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Vec<bool> = results.iter().map(|r| allowed(r)).collect();
        assert_eq!(got, expect(mode), "{mode}: {results:#?}");
        assert_eq!(decisions.len(), 4, "{mode}: every call is recorded");
        if mode == "safe" {
            assert!(results[1].contains("— mode:"), "{}", results[1]);
        }
        if mode == "default" {
            assert!(
                results[1].contains("headless: no one to approve it"),
                "{}",
                results[1]
            );
            assert!(results[1].contains("Bash(touch *)"), "{}", results[1]);
        }
    }
    // The audit log holds every decision.
    let audit = std::fs::read_to_string(s.state().join("fen/permissions.jsonl")).unwrap();
    assert!(audit.lines().count() >= 16, "{audit}");
    assert!(audit.contains("\"source\":\"headless\""));
}

#[test]
fn floors_hold_in_yolo_and_a_hook_cannot_lift_them() {
    let s = Sandbox::new();
    // A trusted user hook that allows everything changes nothing: hooks only tighten.
    s.write(
        "config/fen/extensions/allowall.lua",
        r#"return function(api) api.register("hook", { name = "allowall", before_tool = function() return { block = false } end }) end"#,
    );
    let sc = script(
        &s,
        &[
            ("bash", serde_json::json!({"command": "rm -rf ~"})),
            (
                "bash",
                serde_json::json!({"command": "echo x > .git/hooks/pre-commit"}),
            ),
        ],
    );
    let (results, _, _) = run_json(&s, &["--mock-script", &sc, "--yolo"]);
    assert_eq!(results.len(), 2);
    for r in &results {
        assert!(
            r.starts_with("permission denied") && r.contains("floor"),
            "{r}"
        );
    }
}

#[test]
fn headless_never_waits_for_a_person_and_on_ask_allow_lets_calls_through() {
    let s = Sandbox::new();
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "touch a.txt"}))],
    );
    // stdin stays open and silent: an ask must not read it.
    let t0 = Instant::now();
    let mut child = s
        .command(&[
            "-p",
            "go",
            "--no-session",
            "--permission-mode",
            "default",
            "--mock-script",
            &sc,
        ])
        .spawn()
        .unwrap();
    let _stdin = child.stdin.take();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "a headless run waited on an ask"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!s.cwd().join("a.txt").exists());
    let (results, _, _) = run_json(
        &s,
        &[
            "--mock-script",
            &sc,
            "--permission-mode",
            "default",
            "--on-ask",
            "allow",
        ],
    );
    assert!(allowed(&results[0]), "{}", results[0]);
    assert!(s.cwd().join("a.txt").exists());
}

/// The line REPL with `input` on stdin (not a terminal: answers are read line by line).
fn repl(s: &Sandbox, sc: &str, input: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "--presenter",
        "stdio",
        "--no-session",
        "--permission-mode",
        "default",
        "--mock-script",
        sc,
    ];
    args.extend_from_slice(extra);
    let mut child = s.command(&args).spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_line_repl_asks_and_each_answer_does_what_it_says() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    // y: once.
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "touch yes.txt"}))],
    );
    let out = repl(&s, &sc, "go\ny\n", &[]);
    assert!(
        out.contains("Approve bash \"touch yes.txt\"? [y]es [s]ession [a]lways [n]o [c]ancel"),
        "{out}"
    );
    assert!(s.cwd().join("yes.txt").exists(), "{out}");
    // n with a reason: denied, and the model is told why.
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "touch no.txt"}))],
    );
    let out = repl(&s, &sc, "go\nn: not now\n", &[]);
    assert!(!s.cwd().join("no.txt").exists());
    assert!(
        out.contains("permission denied: touch no.txt — user: not now"),
        "{out}"
    );
    // s: one answer covers the variants of the command for the session.
    let sc = script(
        &s,
        &[
            ("bash", serde_json::json!({"command": "touch s1.txt"})),
            (
                "bash",
                serde_json::json!({"command": "cd . && touch s2.txt"}),
            ),
        ],
    );
    let out = repl(&s, &sc, "go\ns\n", &[]);
    assert_eq!(out.matches("[y]es [s]ession").count(), 1, "{out}");
    assert!(
        s.cwd().join("s1.txt").exists() && s.cwd().join("s2.txt").exists(),
        "{out}"
    );
    // a: always, written to .fen/settings.local.json and honoured by the next (headless) run.
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "mkdir -p d1"}))],
    );
    let out = repl(&s, &sc, "go\na\n", &[]);
    assert!(s.cwd().join("d1").is_dir(), "{out}");
    let local = std::fs::read_to_string(s.cwd().join(".fen/settings.local.json")).unwrap();
    assert!(local.contains("Bash(mkdir"), "{local}");
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "mkdir -p d2"}))],
    );
    let (results, _, _) = run_json(&s, &["--mock-script", &sc, "--permission-mode", "default"]);
    assert!(allowed(&results[0]), "{}", results[0]);
    assert!(s.cwd().join("d2").is_dir());
    // c: cancels the turn.
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "touch c.txt"}))],
    );
    let out = repl(&s, &sc, "go\nc\n", &[]);
    assert!(!s.cwd().join("c.txt").exists());
    assert!(out.contains("cancelled"), "{out}");
}

#[test]
fn an_untrusted_projects_allow_rules_and_hooks_have_no_effect() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    s.write(
        "work/.fen/settings.json",
        r#"{"permissions": {"mode": "yolo", "allow": ["Bash(*)"], "deny": ["Bash(rm *)"]}}"#,
    );
    s.write(
        "work/.fen/extensions/opener.lua",
        r#"return function(api) api.register("hook", { name = "opener", order = -1, before_tool = function() return nil end }) end"#,
    );
    let sc = script(
        &s,
        &[
            ("bash", serde_json::json!({"command": "touch x.txt"})),
            ("bash", serde_json::json!({"command": "rm -f nothing.txt"})),
        ],
    );
    let (results, _, _) = run_json(&s, &["--mock-script", &sc, "--permission-mode", "default"]);
    assert!(
        !allowed(&results[0]),
        "an untrusted allow rule applied: {}",
        results[0]
    );
    // A project deny rule tightens even untrusted.
    assert!(results[1].contains("Bash(rm *)"), "{}", results[1]);
    // Trusted, its allow rule applies.
    let (results, _, _) = run_json(
        &s,
        &[
            "--mock-script",
            &sc,
            "--permission-mode",
            "default",
            "--trust",
        ],
    );
    assert!(allowed(&results[0]), "{}", results[0]);
}

#[test]
fn a_call_denied_once_is_refused_again_in_the_same_turn() {
    let s = Sandbox::new();
    let args = serde_json::json!({"command": "touch twice.txt"});
    let sc = script(&s, &[("bash", args.clone()), ("bash", args)]);
    let (results, _, _) = run_json(&s, &["--mock-script", &sc, "--permission-mode", "default"]);
    assert!(
        results[1].contains("already denied in this turn"),
        "{}",
        results[1]
    );
}

#[test]
fn tools_outside_the_tools_flag_are_neither_offered_nor_run() {
    let s = Sandbox::new();
    let lua = s.write(
        "script.lua",
        r#"return function(n, ctx)
  if n == 1 then return { tool_calls = { { name = "bash", arguments = { command = "ls" } } } } end
  local names = {}
  for _, t in ipairs(ctx.tools) do names[#names + 1] = t.name end
  table.sort(names)
  return { text = "offered: " .. table.concat(names, ",") }
end"#,
    );
    let out = s.fen(&[
        "--mode",
        "json",
        "go",
        "--no-session",
        "--mock-script",
        lua.to_str().unwrap(),
        "--tools",
        "read,grep*",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("error: tool restricted by --tools: bash"),
        "{text}"
    );
    assert!(text.contains("offered: grep,read"), "{text}");
}

#[test]
fn a_rule_that_can_never_match_is_reported_with_its_file_and_everything_is_refused() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        "{\n  \"permissions\": {\n    \"allow\": [\"Nosuchtool(x)\"]\n  }\n}\n",
    );
    let sc = script(&s, &[("bash", serde_json::json!({"command": "ls"}))]);
    let out = s.fen(&["--mode", "json", "go", "--no-session", "--mock-script", &sc]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("settings.json:3"), "{text}");
    assert!(text.contains("Nosuchtool(x)"), "{text}");
    assert!(
        text.contains("permission denied: permission rules"),
        "{text}"
    );
}

#[test]
fn auto_mode_runs_shell_commands_in_the_os_sandbox() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "echo inside"}))],
    );
    let out = s.fen(&[
        "--mode",
        "json",
        "go",
        "--no-session",
        "--mock-script",
        &sc,
        "--permission-mode",
        "auto",
    ]);
    let tier = fen::native::sandbox::detect().tier;
    let ev: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool-result")
        .collect();
    assert_eq!(ev.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let details = &ev[0]["result"]["details"];
    let sandboxed = details["sandboxed"].as_bool().unwrap_or(false);
    assert_eq!(
        sandboxed,
        tier != fen::native::sandbox::Tier::None,
        "tier {tier:?}: {details}"
    );
    assert!(ev[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("inside"));
}

#[test]
fn a_directory_grep_skips_secret_files_and_says_how_many() {
    let s = Sandbox::new();
    s.write("work/notes.txt", "KEY=visible\n");
    s.write("work/api_token.txt", "KEY=sk-hidden\n");
    s.write("work/deploy/server.pem", "KEY=pem-hidden\n");
    let out = s.fen(&["tool", "grep", r#"{"pattern": "KEY"}"#]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = v["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("notes.txt"), "{text}");
    assert!(
        !text.contains("sk-hidden") && !text.contains("pem-hidden"),
        "{text}"
    );
    assert!(text.contains("2 secret-like files skipped"), "{text}");
    // Named explicitly, it is searched (the permission policy judges that call).
    let out = s.fen(&[
        "tool",
        "grep",
        r#"{"pattern": "KEY", "path": "api_token.txt"}"#,
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("sk-hidden"));
}

/// A directory outside every writable root of the sandbox (the workspace and HOME are under
/// /tmp, a root): the target directory, or /var/tmp when the clone (so the target) is under
/// /tmp or $TMPDIR.
fn outside_dir(name: &str) -> std::path::PathBuf {
    let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let target = std::fs::canonicalize(&target).unwrap_or(target);
    let temps: Vec<std::path::PathBuf> = ["/tmp".into(), std::env::temp_dir()]
        .iter()
        .filter_map(|t| std::fs::canonicalize(t).ok())
        .collect();
    let base = if temps.iter().any(|t| target.starts_with(t)) {
        std::path::PathBuf::from("/var/tmp")
    } else {
        target
    };
    let d = base.join(format!("perm-outside-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn an_escalation_answered_always_runs_the_commands_rule_outside_the_sandbox_from_then_on() {
    if fen::native::sandbox::detect().tier == fen::native::sandbox::Tier::None {
        eprintln!("NOTICE: no sandbox tier on this machine; escalation test skipped");
        return;
    }
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    let out = outside_dir("always");
    // `make` hides the write from the analyser: only the sandbox sees it.
    s.write(
        "work/Makefile",
        &format!(
            "out:\n\techo made > {o}/made.txt\nother:\n\techo other > {o}/other.txt\n",
            o = out.display()
        ),
    );
    // Session 1, line REPL: approve the call (y), then the sandbox stops it and the escalation
    // offers once / always for Bash(make out *) / no: choose always (2).
    let sc = script(&s, &[("bash", serde_json::json!({"command": "make out"}))]);
    let text = repl(&s, &sc, "go\ny\n2\n", &[]);
    assert!(text.contains("Run it again outside the sandbox?"), "{text}");
    assert!(text.contains("2. always for Bash(make out *)"), "{text}");
    assert!(
        out.join("made.txt").exists(),
        "the approved rerun did not run: {text}"
    );
    let local = std::fs::read_to_string(s.cwd().join(".fen/settings.local.json")).unwrap();
    let v: Value = serde_json::from_str(&local).unwrap();
    assert_eq!(
        v["sandbox"]["unsandboxed"],
        serde_json::json!(["Bash(make out *)"]),
        "{local}"
    );
    // Session 2, headless: the rule is honoured without asking (a variant of the command too).
    std::fs::remove_file(out.join("made.txt")).unwrap();
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "FOO=1 make out"}))],
    );
    let (results, _, o) = run_json(&s, &["--mock-script", &sc, "--permission-mode", "auto"]);
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("made.txt").exists(), "{}", results[0]);
    assert!(
        results[0].contains("ran outside the sandbox: sandbox.unsandboxed rule Bash(make out *)"),
        "{}",
        results[0]
    );
    // Another command is still sandboxed, and headless names the boundary and how to allow it.
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "make other"}))],
    );
    let (results, _, _) = run_json(&s, &["--mock-script", &sc, "--permission-mode", "auto"]);
    assert!(!out.join("other.txt").exists(), "{}", results[0]);
    assert!(results[0].contains("sandbox: writing"), "{}", results[0]);
    assert!(
        results[0].contains("add Bash(make other *) to sandbox.unsandboxed"),
        "{}",
        results[0]
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// The analyser's answers as a user sees them: a bad rule reported at the start of a `-p` run
/// (naming file, line and rule) with every call refused; a floor's denial naming the path
/// refused; a redirect escaping a wildcard allow rule; fen's own settings files out of reach
/// of every tool; the audit line naming the rule that decided and the suggested scope.
#[test]
fn rules_denials_and_audit_name_what_decided() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git/hooks")).unwrap();
    std::fs::create_dir_all(s.cwd().join(".fen")).unwrap();
    s.write("work/.fen/settings.json", "{}\n");
    // 1. A rule that can never match: `-p` says so on stderr at start; the call is refused.
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "default", "allow": ["Frobnicate(src/**)"]}}"#,
    );
    let sc = script(&s, &[("bash", serde_json::json!({"command": "ls"}))]);
    let out = s.fen(&["-p", "go", "--no-session", "--mock-script", &sc]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("error> permission rules:") && err.contains("Frobnicate(src/**)"),
        "{err}"
    );
    assert!(err.contains("settings.json:1"), "{err}");
    assert!(err.contains("tool> err bash"), "the call is refused: {err}");

    // 2. With good rules: floors name the path, redirects escape `Bash(echo *)`, and fen's
    //    settings are a floor in yolo too.
    s.write(
        "config/fen/settings.json",
        "{\"permissions\": {\"mode\": \"default\",\n \"allow\": [\"Bash(echo *)\"]}}",
    );
    let sc = script(
        &s,
        &[
            (
                "bash",
                serde_json::json!({"command": "echo x > .git/hooks/pre-commit"}),
            ),
            ("bash", serde_json::json!({"command": "echo x > Makefile"})),
            ("bash", serde_json::json!({"command": "echo hi"})),
            (
                "write",
                serde_json::json!({"path": ".fen/settings.local.json", "content": "{}"}),
            ),
            (
                "bash",
                serde_json::json!({"command": "echo '{}' > .fen/settings.json"}),
            ),
        ],
    );
    let (results, _, out) = run_json(&s, &["--mock-script", &sc]);
    assert_eq!(results.len(), 5, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        results[0].starts_with("permission denied: ")
            && results[0].contains(".git/hooks/pre-commit — floor"),
        "the denial names the path: {}",
        results[0]
    );
    assert!(
        results[1].contains("headless: no one to approve it"),
        "a redirect is not covered by Bash(echo *): {}",
        results[1]
    );
    assert!(!s.cwd().join("Makefile").exists());
    assert!(allowed(&results[2]), "{}", results[2]);
    for r in &results[3..] {
        assert!(
            r.contains("floor") && r.contains("fen's own permission settings"),
            "{r}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(s.cwd().join(".fen/settings.json")).unwrap(),
        "{}\n"
    );
    assert!(!s.cwd().join(".fen/settings.local.json").exists());
    let (results, _, _) = run_json(&s, &["--mock-script", &sc, "--yolo"]);
    assert!(results[3].contains("floor") && results[4].contains("floor"));

    // 3. The audit: the rule that allowed `echo hi` with its file and line, and the scope
    //    an approval of the redirect would have added.
    let audit = std::fs::read_to_string(s.state().join("fen/permissions.jsonl")).unwrap();
    let lines: Vec<Value> = audit
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let by_rule = lines
        .iter()
        .find(|l| l["subject"] == "echo hi")
        .expect("echo hi audited");
    assert_eq!(by_rule["rule"]["text"], "Bash(echo *)");
    assert_eq!(by_rule["rule"]["line"], 2);
    assert!(by_rule["rule"]["file"]
        .as_str()
        .unwrap()
        .ends_with("fen/settings.json"));
    let asked = lines
        .iter()
        .find(|l| l["subject"] == "echo x" && l["source"] == "headless")
        .expect("the redirect audited");
    assert!(asked["scope"].is_array(), "{asked}");
}

/// Secret files inside the workspace are masked from sandboxed commands in auto mode, so a
/// script the policy lets run cannot print them to the model; a `Read(...)` allow rule naming
/// one keeps it readable.
#[test]
fn auto_mode_masks_workspace_secrets_from_sandboxed_commands() {
    let tier = fen::native::sandbox::detect().tier;
    if tier == fen::native::sandbox::Tier::None {
        eprintln!("note: no OS sandbox on this machine; the masking test is skipped");
        return;
    }
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    s.write("work/.env", "TOKEN=sk-in-dotenv\n");
    s.write(
        "work/config/credentials.json",
        "{\"k\": \"sk-in-credentials\"}\n",
    );
    s.write(
        "work/show.sh",
        "cat .env config/credentials.json 2>&1; echo shown\n",
    );
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "sh show.sh"}))],
    );
    let run = |settings: &str| {
        s.write("config/fen/settings.json", settings);
        let (results, _, out) = run_json(&s, &["--mock-script", &sc, "--permission-mode", "auto"]);
        assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
        results[0].clone()
    };
    let masked = run(r#"{"permissions": {"mode": "auto"}}"#);
    assert!(masked.contains("shown"), "the script ran: {masked}");
    assert!(
        !masked.contains("sk-in-dotenv") && !masked.contains("sk-in-credentials"),
        "{tier:?}: {masked}"
    );
    let readable = run(r#"{"permissions": {"mode": "auto", "allow": ["Read(./.env)"]}}"#);
    assert!(readable.contains("sk-in-dotenv"), "{readable}");
    assert!(!readable.contains("sk-in-credentials"), "{readable}");
}

/// The sandbox is chosen by the first command that must run in it: a default-mode session
/// that only reads never tries bubblewrap (no trial, so no recorded outcome), and the first
/// sandboxed command of an auto-mode session runs the trial and records it.
#[test]
fn the_sandbox_trial_waits_for_the_first_sandboxed_command() {
    if fen::native::sandbox::find_on_path("bwrap").is_none() {
        eprintln!("NOTICE: bwrap not found; sandbox trial test skipped");
        return;
    }
    let s = Sandbox::new();
    let record = s.state().join("fen/sandbox-probe");
    s.write("work/a.txt", "a\n");
    let sc = script(&s, &[("ls", serde_json::json!({}))]);
    let (results, _, o) = run_json(&s, &["--mock-script", &sc, "--permission-mode", "default"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(results[0].contains("a.txt"), "{results:?}");
    assert!(
        !record.exists(),
        "a read-only session tried bubblewrap: {}",
        std::fs::read_to_string(&record).unwrap_or_default()
    );
    if fen::native::sandbox::detect().tier == fen::native::sandbox::Tier::None {
        eprintln!("NOTICE: no sandbox tier on this machine; the sandboxed half skipped");
        return;
    }
    let sc = script(
        &s,
        &[(
            "bash",
            serde_json::json!({"command": "echo made > made.txt"}),
        )],
    );
    let (_, _, o) = run_json(&s, &["--mock-script", &sc, "--permission-mode", "auto"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(s.cwd().join("made.txt").exists());
    let text = std::fs::read_to_string(&record).expect("the trial's record");
    assert!(text.starts_with("fen-sandbox-probe 1\nbwrap "), "{text}");
}

/// A background job runs where a bash call of the same command runs (one sandbox plan): a
/// `sandbox.unsandboxed` rule sends both outside the sandbox, and a command no rule covers
/// stays inside for both.
#[test]
fn a_background_job_and_a_bash_call_of_the_same_command_get_the_same_sandbox_plan() {
    if fen::native::sandbox::detect().tier == fen::native::sandbox::Tier::None {
        eprintln!("NOTICE: no sandbox tier on this machine; job/bash plan test skipped");
        return;
    }
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    let out = outside_dir("jobplan");
    // `make` hides the write from the analyser: only the sandbox sees it.
    s.write(
        "work/Makefile",
        &format!(
            "out:\n\techo made >> {o}/made.txt\nother:\n\techo other >> {o}/other.txt\n",
            o = out.display()
        ),
    );
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "auto"}, "sandbox": {"unsandboxed": ["Bash(make out *)"]}}"#,
    );
    let call = |name: &str, args: Value| serde_json::json!({"tool_calls": [{"name": name, "arguments": args}]});
    let turns = serde_json::json!([
        call("bash", serde_json::json!({"command": "make out", "background": true})),
        call("job_output", serde_json::json!({"id": "bg1", "wait_s": 20})),
        call("bash", serde_json::json!({"command": "make out"})),
        call("bash", serde_json::json!({"command": "make other", "background": true})),
        call("job_output", serde_json::json!({"id": "bg2", "wait_s": 20})),
        call("bash", serde_json::json!({"command": "make other"})),
        {"text": "done"}
    ]);
    let sc = s.write("script.json", &turns.to_string());
    let (results, _, o) = run_json(
        &s,
        &["--mock-script", &sc.to_string_lossy(), "--on-ask", "allow"],
    );
    assert_eq!(results.len(), 6, "{}", String::from_utf8_lossy(&o.stderr));
    let made = std::fs::read_to_string(out.join("made.txt")).unwrap_or_default();
    assert_eq!(
        made.lines().count(),
        2,
        "the job and the bash call of `make out` both run outside the sandbox: {made:?} {results:#?}"
    );
    assert!(
        results[2].contains("sandbox.unsandboxed rule Bash(make out *)"),
        "{}",
        results[2]
    );
    assert!(
        !out.join("other.txt").exists(),
        "`make other` stays in the sandbox, as a job and as a bash call: {results:#?}"
    );
    assert!(results[5].contains("sandbox: writing"), "{}", results[5]);
    let _ = std::fs::remove_dir_all(&out);
}
