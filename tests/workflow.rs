//! Workflow features end to end through the mock provider: Claude-Code-format command hooks
//! (real scripts: a Bash call blocked with exit 2, input rewritten, context added, a hook
//! sleeping past its timeout, a project hook not run until the folder is trusted) and Markdown
//! slash commands with each placeholder.

use crate::common;
use common::Sandbox;
use serde_json::Value;

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

/// An executable script under the sandbox root; returns its path.
fn exe(s: &Sandbox, rel: &str, body: &str) -> String {
    let p = s.write(rel, body);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p.to_string_lossy().into_owned()
}

fn user_hooks(s: &Sandbox, hooks: Value) {
    let settings = serde_json::json!({"permissions": {"mode": "yolo"}, "hooks": hooks});
    s.write("config/fen/settings.json", &settings.to_string());
}

/// `fen --mode json go` with `args`: the tool-result texts, every event, and the output.
fn run_json(s: &Sandbox, args: &[&str]) -> (Vec<String>, Vec<Value>, std::process::Output) {
    let mut all = vec!["--mode", "json", "go", "--no-session"];
    all.extend_from_slice(args);
    let out = s.fen(&all);
    let mut results = Vec::new();
    let mut events = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(ev) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if ev["type"] == "tool-result" {
            let texts: Vec<&str> = ev["result"]["content"]
                .as_array()
                .map(|a| a.iter().filter_map(|b| b["text"].as_str()).collect())
                .unwrap_or_default();
            results.push(texts.join("\n"));
        }
        events.push(ev);
    }
    (results, events, out)
}

#[test]
fn a_pre_tool_use_hook_blocks_bash_with_exit_2_and_its_stderr_reaches_the_model() {
    let s = Sandbox::new();
    let hook = exe(
        &s,
        "hooks/guard.sh",
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *rm-me*) echo \"refusing: rm-me is protected\" >&2; exit 2;; esac\nexit 0\n",
    );
    user_hooks(
        &s,
        serde_json::json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]}),
    );
    s.write("work/rm-me", "keep");
    let sc = script(
        &s,
        &[
            ("bash", serde_json::json!({"command": "rm rm-me"})),
            ("bash", serde_json::json!({"command": "echo ran-fine"})),
        ],
    );
    let (results, _, out) = run_json(&s, &["--mock-script", &sc]);
    assert_eq!(results.len(), 2, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        results[0].contains("PreToolUse") && results[0].contains("refusing: rm-me is protected"),
        "{}",
        results[0]
    );
    assert!(s.cwd().join("rm-me").exists(), "the blocked command ran");
    assert!(results[1].contains("ran-fine"), "{}", results[1]);
}

#[test]
fn a_hook_rewrites_the_input_and_adds_context_after_the_call() {
    let s = Sandbox::new();
    let rewrite = exe(
        &s,
        "hooks/rewrite.sh",
        "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"allow\", \"updatedInput\": {\"command\": \"echo rewritten-by-hook\"}}}'\n",
    );
    let context = exe(
        &s,
        "hooks/context.sh",
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *rewritten-by-hook*) ;; *) exit 0;; esac\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PostToolUse\", \"additionalContext\": \"remember: tests live in tests/\"}}'\n",
    );
    let prompt = exe(
        &s,
        "hooks/prompt.sh",
        "#!/bin/sh\ncat >/dev/null\necho 'the branch is main'\n",
    );
    user_hooks(
        &s,
        serde_json::json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": rewrite}]}],
            "PostToolUse": [{"matcher": "Edit|Bash", "hooks": [{"type": "command", "command": context}]}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": prompt}]}],
        }),
    );
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "echo original"}))],
    );
    let (results, events, out) = run_json(&s, &["--mock-script", &sc]);
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        results[0].contains("rewritten-by-hook") && !results[0].contains("original"),
        "{}",
        results[0]
    );
    assert!(
        results[0].contains("remember: tests live in tests/"),
        "{}",
        results[0]
    );
    let user = events
        .iter()
        .find(|e| e["type"] == "user")
        .expect("a user event");
    assert!(
        user["line"]
            .as_str()
            .unwrap_or("")
            .contains("the branch is main"),
        "{user}"
    );
}

#[test]
fn a_hook_sleeping_past_its_timeout_is_stopped_and_reported_and_the_call_runs() {
    let s = Sandbox::new();
    let slow = exe(&s, "hooks/slow.sh", "#!/bin/sh\ncat >/dev/null\nsleep 60\n");
    let crash = exe(&s, "hooks/crash.sh", "#!/bin/sh\necho boom >&2\nexit 3\n");
    user_hooks(
        &s,
        serde_json::json!({"PreToolUse": [{"hooks": [
            {"type": "command", "command": slow, "timeout": 1},
            {"type": "command", "command": crash},
        ]}]}),
    );
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "echo still-ran"}))],
    );
    let (results, _, out) = run_json(&s, &["--mock-script", &sc]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    assert_eq!(results.len(), 1, "{all}");
    assert!(results[0].contains("still-ran"), "{}", results[0]);
    assert!(all.contains("timed out after 1s"), "{all}");
    assert!(
        all.contains("failed (exit 3)") && all.contains("boom"),
        "{all}"
    );
}

#[test]
fn session_start_adds_context_and_session_end_runs_at_exit() {
    let s = Sandbox::new();
    let end_marker = s.root().join("ended.json");
    let start = exe(
        &s,
        "hooks/start.sh",
        "#!/bin/sh\ncat >/dev/null\necho 'project uses tabs'\n",
    );
    user_hooks(
        &s,
        serde_json::json!({
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": start}]}],
            "SessionEnd": [{"hooks": [{"type": "command", "command": format!("cat > {}", end_marker.display())}]}],
        }),
    );
    let sc = script(&s, &[("bash", serde_json::json!({"command": "echo hi"}))]);
    let (_, events, out) = run_json(&s, &["--mock-script", &sc]);
    assert!(out.status.success());
    let user = events
        .iter()
        .find(|e| e["type"] == "user")
        .expect("a user event");
    assert!(
        user["line"]
            .as_str()
            .unwrap_or("")
            .contains("project uses tabs"),
        "{user}"
    );
    let ended = std::fs::read_to_string(&end_marker).unwrap_or_default();
    assert!(
        ended.contains("\"hook_event_name\":\"SessionEnd\"")
            && ended.contains("\"reason\":\"other\""),
        "{ended}"
    );
}

#[test]
fn project_hooks_run_only_in_a_trusted_folder_and_hooks_lists_them() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    let marker = s.root().join("hook-ran");
    let hook = format!("touch {}", marker.display());
    s.write(
        "work/.claude/settings.json",
        &serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": hook}]}]}})
            .to_string(),
    );
    let sc = script(&s, &[("bash", serde_json::json!({"command": "echo hi"}))]);
    let (results, _, _) = run_json(&s, &["--mock-script", &sc]);
    assert_eq!(results.len(), 1);
    assert!(!marker.exists(), "an untrusted project's hook ran");
    let (results, _, _) = run_json(&s, &["--mock-script", &sc, "--trust"]);
    assert_eq!(results.len(), 1);
    assert!(marker.exists(), "the trusted project's hook did not run");
    // `/hooks` names the source file (the line REPL runs the command).
    let out = s.fen_stdin(
        &["--presenter", "stdio", "--no-session", "--trust"],
        "/hooks\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("PreToolUse") && text.contains(".claude/settings.json"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_stop_hook_keeps_the_turn_going_once() {
    let s = Sandbox::new();
    let stop = exe(
        &s,
        "hooks/stop.sh",
        "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *'\"stop_hook_active\":true'*) exit 0;; esac\necho 'run the tests first' >&2\nexit 2\n",
    );
    user_hooks(
        &s,
        serde_json::json!({"Stop": [{"hooks": [{"type": "command", "command": stop}]}]}),
    );
    let sc = s
        .write(
            "script.json",
            &serde_json::json!([{"text": "first"}, {"text": "second"}]).to_string(),
        )
        .to_string_lossy()
        .into_owned();
    let (_, events, out) = run_json(&s, &["--mock-script", &sc]);
    let users: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message-appended" && e["message"]["role"] == "user")
        .collect();
    assert_eq!(users.len(), 2, "{}", String::from_utf8_lossy(&out.stdout));
    assert!(
        users[1]["message"]["content"]
            .to_string()
            .contains("run the tests first"),
        "{}",
        users[1]
    );
}

#[test]
fn hooks_run_in_the_tool_sandbox_without_the_hidden_secrets() {
    if fen::native::sandbox::detect().tier == fen::native::sandbox::Tier::None {
        eprintln!("NOTICE: no sandbox tier on this machine; hook sandbox test skipped");
        return;
    }
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    // Both OS sandbox tiers (bubblewrap, Landlock) set no_new_privs on what they start.
    let hook =
        "grep NoNewPrivs /proc/self/status >&2; echo \"key=${OPENAI_API_KEY:-none}\" >&2; exit 2";
    let settings = serde_json::json!({"permissions": {"mode": "auto"},
        "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": hook}]}]}});
    s.write("config/fen/settings.json", &settings.to_string());
    let sc = script(&s, &[("bash", serde_json::json!({"command": "ls"}))]);
    let out = s.fen_env(
        &["--mode", "json", "go", "--no-session", "--mock-script", &sc],
        &[("OPENAI_API_KEY", "sk-hook-secret")],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("key=none"), "{text}");
    assert!(!text.contains("sk-hook-secret"), "{text}");
    assert!(text.contains("NoNewPrivs:\\t1"), "{text}");
}

/// A mock script whose every answer is `ECHO:` and the last user message.
fn echo_script(s: &Sandbox) -> String {
    s.write(
        "echo.lua",
        r#"return function(n, ctx)
  local m = ctx.messages[#ctx.messages]
  local text = m.content
  if type(text) == "table" then
    local parts = {}
    for _, b in ipairs(text) do parts[#parts + 1] = b.text or "" end
    text = table.concat(parts)
  end
  return { text = "ECHO:" .. tostring(text) }
end"#,
    )
    .to_string_lossy()
    .into_owned()
}

#[test]
fn markdown_commands_expand_each_placeholder_and_list_themselves() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    s.write("work/notes.txt", "the notes say hello\n");
    s.write(
        "home/.claude/commands/git/commit.md",
        "---\ndescription: Commit the staged changes\nargument-hint: [message] [scope]\n---\nStatus: !`echo status-from-shell`\nRefused: !`touch made-by-command.txt`\nFirst: $1; second: $2; all: $ARGUMENTS\nSee @notes.txt\n",
    );
    s.write("config/fen/commands/plain.md", "Just review the code\n");
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "default"}}"#,
    );
    let env = [("HOME", s.root().join("home").to_string_lossy().into_owned())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // Listed with their description and source.
    let out = s.fen_env(&["list", "commands"], &env);
    let list = String::from_utf8_lossy(&out.stdout);
    assert!(
        list.contains("git:commit") && list.contains("Commit the staged changes [message] [scope]"),
        "{list}"
    );
    assert!(
        list.contains("plain") && list.contains("Just review the code"),
        "{list}"
    );
    // Run through the line REPL: the model receives the expanded prompt.
    let sc = echo_script(&s);
    let mut envs = env.clone();
    envs.push(("FEN_MOCK_SCRIPT", &sc));
    // The shell line that is not read-only is asked, as a bash call would be: "n".
    let out = s.fen_stdin(
        &["--presenter", "stdio", "--no-session", "--provider", "mock"],
        "/git:commit \"fix the bug\" core\nn\n/plain now\n",
        &envs,
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("Status: status-from-shell"), "{text}{err}");
    assert!(
        text.contains("Refused: [fen: `touch made-by-command.txt` not run: permission denied")
            && text.contains("the user said no"),
        "{text}"
    );
    assert!(!s.cwd().join("made-by-command.txt").exists());
    assert!(
        text.contains("First: fix the bug; second: core; all: \"fix the bug\" core"),
        "{text}"
    );
    assert!(text.contains("the notes say hello"), "{text}");
    assert!(
        text.contains("Just review the code") && text.contains("Arguments: now"),
        "{text}"
    );
}

#[test]
fn project_commands_need_trust_and_allowed_tools_pre_approve_for_that_turn() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "default"}}"#,
    );
    s.write(
        "work/.claude/commands/mk.md",
        "---\nallowed-tools: Bash(touch *)\n---\nmake the file\n",
    );
    let sc = s
        .write(
            "script.json",
            &serde_json::json!([
                {"tool_calls": [{"name": "bash", "arguments": {"command": "touch one.txt"}}]},
                {"text": "made"},
                {"tool_calls": [{"name": "bash", "arguments": {"command": "touch two.txt"}}]},
                {"text": "second"}
            ])
            .to_string(),
        )
        .to_string_lossy()
        .into_owned();
    // Untrusted: no such command.
    let out = s.fen(&["list", "commands"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("make the file"));
    // Trusted: /mk runs and its turn may touch without asking; the next plain turn may not
    // (headless asks are denied in the line REPL when stdin is the script... so "n" answers).
    let out = s.fen_stdin(
        &[
            "--presenter",
            "stdio",
            "--no-session",
            "--trust",
            "--mock-script",
            &sc,
        ],
        "/mk\nagain\nn\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(s.cwd().join("one.txt").exists(), "{text}");
    assert!(
        !s.cwd().join("two.txt").exists(),
        "allowed-tools outlived its turn: {text}"
    );
}

fn plan_script(s: &Sandbox) -> String {
    s.write(
        "plan.json",
        &serde_json::json!([
            {"tool_calls": [
                {"name": "write", "arguments": {"path": "made.txt", "content": "x"}},
                {"name": "bash", "arguments": {"command": "ls"}}
            ]},
            {"tool_calls": [{"name": "exit_plan", "arguments": {"plan": "1. write made.txt\n2. check it"}}]},
            {"tool_calls": [{"name": "write", "arguments": {"path": "made.txt", "content": "x"}}]},
            {"text": "finished"}
        ])
        .to_string(),
    )
    .to_string_lossy()
    .into_owned()
}

#[test]
fn headless_plan_mode_refuses_the_write_and_prints_the_plan() {
    let s = Sandbox::new();
    let sc = plan_script(&s);
    let out = s.fen(&[
        "-p",
        "go",
        "--no-session",
        "--permission-mode",
        "plan",
        "--mock-script",
        &sc,
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stdout.trim(), "1. write made.txt\n2. check it", "{stderr}");
    assert!(stderr.contains("fen is in plan mode"), "{stderr}");
    assert!(stderr.contains("ok bash $ ls"), "{stderr}");
    assert!(!s.cwd().join("made.txt").exists());
}

#[test]
fn keep_planning_sends_feedback_and_plan_shows_the_plan_after_continue() {
    let s = Sandbox::new();
    let sc = s
        .write(
            "plan.json",
            &serde_json::json!([
                {"tool_calls": [{"name": "exit_plan", "arguments": {"plan": "1. first idea"}}]},
                {"text": "revising"}
            ])
            .to_string(),
        )
        .to_string_lossy()
        .into_owned();
    let out = s.fen_stdin(
        &[
            "--presenter",
            "stdio",
            "--permission-mode",
            "plan",
            "--mock-script",
            &sc,
        ],
        "go\n3\nuse a smaller change\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("1. first idea") && text.contains("3. 3  keep planning"),
        "{text}"
    );
    // The feedback reached the model as the tool result.
    let sessions = s.state().join("fen");
    let mut found = String::new();
    for e in walk(&sessions) {
        if e.extension().is_some_and(|x| x == "jsonl") {
            let t = std::fs::read_to_string(&e).unwrap_or_default();
            if t.contains("exit_plan") {
                found = t;
            }
        }
    }
    assert!(
        found.contains("Their feedback: use a smaller change"),
        "{found}"
    );
    // `/plan` in a continued session shows the plan kept in it.
    let out = s.fen_stdin(
        &["--presenter", "stdio", "-c", "--mock-script", &sc],
        "/plan\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("last plan (keep):") && text.contains("1. first idea"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn question_script(s: &Sandbox) -> String {
    s.write(
        "question.json",
        &serde_json::json!([
            {"tool_calls": [{"name": "question", "arguments": {"questions": [
                {"question": "Which database?", "header": "storage", "options": [
                    {"label": "sqlite", "description": "one file"}, {"label": "postgres"}]},
                {"question": "Which targets?", "multi_select": true, "options": [
                    {"label": "linux"}, {"label": "mac"}, {"label": "windows"}]},
                {"question": "Anything else?", "options": [{"label": "no"}]}
            ]}}]},
            {"text": "finished"}
        ])
        .to_string(),
    )
    .to_string_lossy()
    .into_owned()
}

/// The text of every tool result in the sandbox's session files.
fn session_text(s: &Sandbox) -> String {
    walk(&s.state().join("fen"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect()
}

#[test]
fn the_question_tool_is_answered_in_the_line_repl_and_headless_says_decide_yourself() {
    let s = Sandbox::new();
    let sc = question_script(&s);
    let out = s.fen_stdin(
        &["--presenter", "stdio", "--mock-script", &sc],
        "go\n2\n1 3\n2\nship it friday\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("storage: Which database?") && text.contains("1  sqlite — one file"),
        "{text}"
    );
    assert!(
        text.contains("3. 3  other (type your own answer)"),
        "{text}"
    );
    let session = session_text(&s);
    assert!(
        session.contains("Which database?\\n→ postgres"),
        "{session}"
    );
    assert!(
        session.contains("Which targets?\\n→ linux, windows"),
        "{session}"
    );
    assert!(
        session.contains("Anything else?\\n→ ship it friday"),
        "{session}"
    );
    // Headless: nobody waits, the model is told to decide.
    let out = s.fen(&["--mode", "json", "go", "--no-session", "--mock-script", &sc]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("No one can answer questions in this run"),
        "{stdout}"
    );
}

fn run_goal(s: &Sandbox, turns: Value, extra: &[&str]) -> (std::process::Output, Vec<Value>) {
    let sc = s
        .write("goal.json", &turns.to_string())
        .to_string_lossy()
        .into_owned();
    let mut args = vec![
        "-p",
        "--goal",
        "tidy the repo",
        "--no-session",
        "--mock-script",
        &sc,
    ];
    args.extend_from_slice(extra);
    let out = s.fen(&args);
    // The same run with --mode json streams a `goal` event at each change of status.
    let mut jargs = vec![
        "--mode",
        "json",
        "--goal",
        "tidy the repo",
        "--no-session",
        "--mock-script",
        &sc,
    ];
    jargs.extend_from_slice(extra);
    let jout = s.fen(&jargs);
    let goals = String::from_utf8_lossy(&jout.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "goal")
        .collect();
    (out, goals)
}

#[test]
fn a_goal_continues_turn_after_turn_until_the_model_reports_it_complete() {
    let s = Sandbox::new();
    let (out, goals) = run_goal(
        &s,
        serde_json::json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
            {"text": "first step done"},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo step-two"}}]},
            {"text": "second step done"},
            {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete", "reason": "repo tidied"}}]},
            {"text": "all done"}
        ]),
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("ok bash $ echo step-two"), "{stderr}");
    assert!(
        stderr.contains("goal complete: tidy the repo") && stderr.contains("repo tidied"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "all done");
    let statuses: Vec<&str> = goals.iter().filter_map(|g| g["status"].as_str()).collect();
    assert_eq!(statuses, ["active", "complete"]);
}

#[test]
fn a_goal_out_of_budget_stops_and_exits_non_zero() {
    let s = Sandbox::new();
    let (out, goals) = run_goal(
        &s,
        serde_json::json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}], "usage": {"input": 600, "output": 100}},
            {"text": "working", "usage": {"input": 600, "output": 100}},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo never"}}]},
            {"text": "never reached"}
        ]),
        &["--goal-budget", "1000"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("goal budget_limited") && stderr.contains("token budget used"),
        "{stderr}"
    );
    assert!(!stderr.contains("echo never"), "{stderr}");
    assert_eq!(goals.last().unwrap()["status"], "budget_limited");
}

#[test]
fn a_goal_that_stalls_three_times_is_blocked() {
    let s = Sandbox::new();
    let (out, goals) = run_goal(
        &s,
        serde_json::json!([
            {"text": "thinking about it"},
            {"text": "still thinking"},
            {"text": "hmm"},
            {"text": "no idea"},
            {"text": "never reached"}
        ]),
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("goal blocked") && stderr.contains("made no tool call"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "no idea");
    assert_eq!(goals.last().unwrap()["status"], "blocked");
}

#[test]
fn goal_command_sets_shows_and_clears_the_goal_in_the_line_repl() {
    let s = Sandbox::new();
    let sc = s
        .write(
            "goal.json",
            &serde_json::json!([
                {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
                {"text": "looked around"},
                {"tool_calls": [{"name": "update_goal", "arguments": {"status": "complete", "reason": "listed"}}]},
                {"text": "done"}
            ])
            .to_string(),
        )
        .to_string_lossy()
        .into_owned();
    let out = s.fen_stdin(
        &["--presenter", "stdio", "--mock-script", &sc],
        "/goal list the files --budget 5000 --time 10m\n/goal\n/goal clear\n/goal\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("goal complete: list the files (tokens 0/5.0k, time")
            && text.contains("/10m00s) — listed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("goal cleared") && text.contains("no goal; set one"),
        "{text}"
    );
    // The goal is a record of the session.
    let session = session_text(&s);
    assert!(
        session.contains("\"objective\":\"list the files\""),
        "{session}"
    );
}

#[test]
fn a_notification_hook_runs_while_an_approval_waits() {
    let s = Sandbox::new();
    let marker = s.root().join("notified.json");
    let hook = format!("cat > {}", marker.display());
    let settings = serde_json::json!({"permissions": {"mode": "default"},
        "hooks": {"Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command", "command": hook}]}]}});
    s.write("config/fen/settings.json", &settings.to_string());
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "touch a.txt"}))],
    );
    let mut child = s
        .command(&["--presenter", "stdio", "--no-session", "--mock-script", &sc])
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    use std::io::Write;
    stdin.write_all(b"go\n").unwrap();
    stdin.flush().unwrap();
    let t0 = std::time::Instant::now();
    while !std::fs::read_to_string(&marker).is_ok_and(|t| t.ends_with('}'))
        && t0.elapsed() < std::time::Duration::from_secs(20)
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    stdin.write_all(b"n\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let seen = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(
        seen.contains("\"hook_event_name\":\"Notification\"")
            && seen.contains("\"notification_type\":\"permission_prompt\"")
            && seen.contains("touch a.txt"),
        "{seen}{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!s.cwd().join("a.txt").exists());
}

/// Waits (at most 20 s) for `path` to hold a complete JSON object; its text.
fn wait_for_json(path: &std::path::Path) -> String {
    let t0 = std::time::Instant::now();
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.trim_end().ends_with('}') || t0.elapsed() > std::time::Duration::from_secs(20) {
            return text;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn a_permission_request_hook_answers_the_approval_in_the_persons_place() {
    let s = Sandbox::new();
    let log = s.root().join("permission-requests.jsonl");
    let hook = exe(
        &s,
        "hooks/approve.sh",
        &format!(
            "#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' \"$input\" >> {}\ncase \"$input\" in\n  *allowed-by-hook*) echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PermissionRequest\", \"decision\": {{\"behavior\": \"allow\"}}}}}}';;\n  *) echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PermissionRequest\", \"decision\": {{\"behavior\": \"deny\", \"message\": \"the hook keeps this file out\"}}}}}}';;\nesac\n",
            log.display()
        ),
    );
    let settings = serde_json::json!({"permissions": {"mode": "default"},
        "hooks": {"PermissionRequest": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]}});
    s.write("config/fen/settings.json", &settings.to_string());
    let sc = script(
        &s,
        &[
            (
                "bash",
                serde_json::json!({"command": "touch allowed-by-hook.txt"}),
            ),
            ("bash", serde_json::json!({"command": "touch refused.txt"})),
        ],
    );
    // Nobody answers on stdin (it ends after the prompt): what runs was approved by the hook.
    let out = s.fen_stdin(&["--presenter", "stdio", "--mock-script", &sc], "go\n", &[]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.cwd().join("allowed-by-hook.txt").exists(), "{text}");
    assert!(!s.cwd().join("refused.txt").exists(), "{text}");
    let session = session_text(&s);
    assert!(
        session
            .contains("permission denied: touch refused.txt — hook: the hook keeps this file out"),
        "{session}"
    );
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    let first: Value = serde_json::from_str(seen.lines().next().unwrap_or("{}")).unwrap();
    assert_eq!(first["hook_event_name"], "PermissionRequest", "{seen}");
    assert_eq!(first["tool_name"], "Bash");
    assert_eq!(first["tool_input"]["command"], "touch allowed-by-hook.txt");
    assert_eq!(first["permission_mode"], "default");
    // Headless runs never ask, so the hook is not run there (as in Claude Code's -p).
    std::fs::remove_file(&log).unwrap();
    let (results, _, _) = run_json(&s, &["--mock-script", &sc]);
    assert!(results[0].contains("headless"), "{}", results[0]);
    assert!(!log.exists(), "the PermissionRequest hook ran headless");
}

#[test]
fn a_pre_compact_hook_sees_manual_and_auto_compactions_and_may_refuse_them() {
    let s = Sandbox::new();
    let log = s.root().join("pre-compact.jsonl");
    let hook = exe(
        &s,
        "hooks/precompact.sh",
        &format!(
            "#!/bin/sh\ninput=$(cat)\nprintf '%s\\n' \"$input\" >> {}\ncase \"$input\" in\n  *'\"trigger\":\"manual\"'*) echo 'not while the migration runs' >&2; exit 2;;\nesac\necho '{{\"decision\": \"block\", \"reason\": \"keep everything\"}}'\n",
            log.display()
        ),
    );
    user_hooks(
        &s,
        serde_json::json!({"PreCompact": [{"hooks": [{"type": "command", "command": hook}]}]}),
    );
    // A mock that summarises when the compactor asks and otherwise answers with some bulk.
    let mock = s.write(
        "compact.lua",
        r#"return function(n, ctx)
  if ctx.system_prompt and ctx.system_prompt:find("You compact", 1, true) then
    return { text = "SUMMARY" }
  end
  return { text = "reply " .. string.rep("x", 400) }
end"#,
    );
    let mock = mock.to_string_lossy().into_owned();
    let turns: String = (1..=12)
        .map(|i| format!("message number {i} {}\n", "y".repeat(300)))
        .collect();
    let out = s.fen_stdin(
        &["--presenter", "stdio", "--mock-script", &mock],
        &format!("{turns}/compact keep the numbers\n"),
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(
            "nothing compacted: blocked by a hook: PreCompact hook: not while the migration runs"
        ),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    let manual: Value = serde_json::from_str(seen.lines().last().unwrap_or("{}")).unwrap();
    assert_eq!(manual["hook_event_name"], "PreCompact", "{seen}");
    assert_eq!(manual["trigger"], "manual");
    assert_eq!(manual["custom_instructions"], "keep the numbers");
    assert!(!session_text(&s).contains("\"type\":\"compaction\""));
    // The automatic trigger: the hook is asked with `auto` and its `decision: block` holds.
    std::fs::remove_file(&log).unwrap();
    let out = s.fen_stdin(
        &[
            "--presenter",
            "stdio",
            "--no-session",
            "--mock-script",
            &mock,
            "--max-tokens",
            "500",
        ],
        &turns,
        &[("FEN_MOCK_CONTEXT_WINDOW", "2000")],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(seen.contains("\"trigger\":\"auto\""), "{seen}{text}");
    assert!(
        text.contains("compaction failed: blocked by a hook: PreCompact hook: keep everything"),
        "{text}"
    );
    assert!(!text.contains("info> compacted"), "{text}");
}

#[test]
fn a_notification_hook_runs_once_the_prompt_waited_idle() {
    let s = Sandbox::new();
    let marker = s.root().join("idle.json");
    let settings = serde_json::json!({"permissions": {"mode": "yolo"},
        "hooks": {"idle_after": 1, "Notification": [{"matcher": "idle_prompt",
            "hooks": [{"type": "command", "command": format!("cat > {}", marker.display())}]}]}});
    s.write("config/fen/settings.json", &settings.to_string());
    let sc = s
        .write(
            "idle.json",
            &serde_json::json!([{"text": "hello"}]).to_string(),
        )
        .to_string_lossy()
        .into_owned();
    let mut child = s
        .command(&["--presenter", "stdio", "--no-session", "--mock-script", &sc])
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    use std::io::Write;
    stdin.write_all(b"go\n").unwrap();
    stdin.flush().unwrap();
    let seen = wait_for_json(&marker);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let ev: Value = serde_json::from_str(&seen).unwrap_or_else(|_| {
        panic!(
            "no idle notification: {seen}{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(ev["hook_event_name"], "Notification");
    assert_eq!(ev["notification_type"], "idle_prompt");
    assert_eq!(ev["message"], "fen is waiting for your input");
}

#[test]
fn a_hook_reads_a_payload_far_larger_than_an_argument_on_stdin() {
    let s = Sandbox::new();
    let payload = s.root().join("payload.json");
    user_hooks(
        &s,
        serde_json::json!({"PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command",
            "command": format!("cat > {}", payload.display())}]}]}),
    );
    // 300 KiB of content: well past the 128 KiB one process argument (or variable) may hold.
    let content: String = (0..300 * 1024)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let sc = script(
        &s,
        &[(
            "write",
            serde_json::json!({"path": "big.txt", "content": content}),
        )],
    );
    let (results, _, out) = run_json(&s, &["--mock-script", &sc]);
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let got = std::fs::read_to_string(&payload).unwrap_or_default();
    let v: Value = serde_json::from_str(&got)
        .unwrap_or_else(|e| panic!("the hook got {} bytes, not JSON: {e}", got.len()));
    assert_eq!(v["tool_name"], "Write");
    assert_eq!(v["tool_input"]["content"].as_str(), Some(content.as_str()));
    assert_eq!(v["tool_input"]["file_path"], "big.txt");
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("big.txt")).unwrap_or_default(),
        content
    );
}

#[test]
fn shell_lines_of_a_markdown_command_go_through_the_permission_policy_and_sandbox() {
    let s = Sandbox::new();
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    s.write(
        "config/fen/settings.json",
        &serde_json::json!({"permissions": {"mode": "default",
            "allow": ["Bash(grep NoNewPrivs /proc/self/status)", "Read(//proc/**)"],
            "deny": ["Bash(echo forbidden *)"]}})
        .to_string(),
    );
    s.write(
        "config/fen/commands/probe.md",
        "Sandbox: !`grep NoNewPrivs /proc/self/status`\nDenied: !`echo forbidden word`\nAsked: !`touch asked.txt`\n",
    );
    let sc = echo_script(&s);
    let out = s.fen_stdin(
        &["--presenter", "stdio", "--no-session", "--provider", "mock"],
        "/probe\ny\n",
        &[("FEN_MOCK_SCRIPT", &sc)],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("Denied: [fen: `echo forbidden word` not run: permission denied")
            && !text.contains("Denied: forbidden word"),
        "{text}{err}"
    );
    // Asked as the bash call would be, and run once approved.
    assert!(
        text.contains("Approve bash") && text.contains("touch asked.txt"),
        "{text}"
    );
    assert!(s.cwd().join("asked.txt").exists(), "{text}{err}");
    if fen::native::sandbox::detect().tier == fen::native::sandbox::Tier::None {
        eprintln!("NOTICE: no sandbox tier on this machine; the sandbox part is skipped");
    } else {
        // Both OS sandbox tiers set no_new_privs on what they start.
        assert!(text.contains("Sandbox: NoNewPrivs:\t1"), "{text}{err}");
    }
}

#[test]
fn a_markdown_commands_model_runs_its_turn_only_and_help_lists_it() {
    let s = Sandbox::new();
    s.write(
        "config/fen/commands/deep.md",
        "---\ndescription: Think harder\nmodel: mock/mock-two\n---\nthink about it\n",
    );
    s.write(
        "config/fen/commands/same.md",
        "---\nmodel: mock-three\n---\nand this\n",
    );
    let sc = echo_script(&s);
    let out = s.fen_stdin(
        &[
            "--presenter",
            "stdio",
            "--provider",
            "mock",
            "--model",
            "mock",
        ],
        "/help\n/deep\nplain turn\n/same\n",
        &[("FEN_MOCK_SCRIPT", &sc)],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("/deep") && text.contains("Think harder"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each assistant message names the model that wrote it.
    let models: Vec<String> = session_text(&s)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["message"]["role"] == "assistant")
        .map(|r| r["message"]["model"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(models, ["mock-two", "mock", "mock-three"], "{text}");
}

#[test]
fn pre_tool_use_additional_context_reaches_the_model_with_the_result() {
    let s = Sandbox::new();
    let hook = exe(
        &s,
        "hooks/pre-context.sh",
        "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"additionalContext\": \"the linter runs on save\"}}'\n",
    );
    user_hooks(
        &s,
        serde_json::json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": hook}]}]}),
    );
    let sc = script(
        &s,
        &[("bash", serde_json::json!({"command": "echo the-call-ran"}))],
    );
    let (results, _, out) = run_json(&s, &["--mock-script", &sc]);
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        results[0].contains("the-call-ran")
            && results[0].contains("[PreToolUse hook] the linter runs on save"),
        "{}",
        results[0]
    );
}

#[test]
fn hooks_see_the_permission_mode_the_settings_chose() {
    let s = Sandbox::new();
    let marker = s.root().join("prompt.json");
    // user_hooks sets the mode to yolo in settings.json (no flag).
    user_hooks(
        &s,
        serde_json::json!({"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": format!("cat > {}", marker.display())}]}]}),
    );
    let sc = s
        .write(
            "plain.json",
            &serde_json::json!([{"text": "hi"}]).to_string(),
        )
        .to_string_lossy()
        .into_owned();
    let (_, _, out) = run_json(&s, &["--mock-script", &sc]);
    let seen = std::fs::read_to_string(&marker).unwrap_or_default();
    assert!(
        seen.contains("\"permission_mode\":\"bypassPermissions\""),
        "{seen}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
