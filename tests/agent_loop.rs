//! The agent loop end to end through `fen -p` / `fen --mode json` with the scripted mock
//! provider, in temp repositories: tools really run, files really change.

use crate::common;
use common::Sandbox;
use serde_json::{json, Value};

fn script(s: &Sandbox, turns: Value) -> String {
    s.write("script.json", &turns.to_string())
        .to_string_lossy()
        .into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `fen --mode json` and returns the parsed event lines.
fn json_run(s: &Sandbox, turns: Value, extra: &[&str]) -> (Vec<Value>, std::process::Output) {
    let path = script(s, turns);
    let mut args = vec!["--mode", "json", "--mock-script", path.as_str()];
    args.extend_from_slice(extra);
    args.push("do the task");
    let out = s.fen(&args);
    let events = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    (events, out)
}

fn of_type<'a>(events: &'a [Value], ty: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == ty).collect()
}

#[test]
fn print_mode_reads_edits_and_runs_commands_in_a_repository() {
    let s = Sandbox::new();
    s.write("work/src/lib.rs", "pub fn answer() -> u32 {\n    41\n}\n");
    let path = script(
        &s,
        json!([
            {"tool_calls": [{"name": "read", "arguments": {"path": "src/lib.rs"}}, {"name": "grep", "arguments": {"pattern": "answer"}}]},
            {"tool_calls": [{"name": "edit", "arguments": {"path": "src/lib.rs", "old_string": "    41", "new_string": "    42"}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": "grep -c 42 src/lib.rs"}}]},
            {"text": "The answer is now 42."}
        ]),
    );
    let out = s.fen(&["-p", "fix the answer", "--mock-script", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "The answer is now 42.\n");
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 {\n    42\n}\n"
    );
    let err = text(&out.stderr);
    for row in [
        "tool> run read src/lib.rs",
        "tool> ok read src/lib.rs",
        "tool> run $ grep -c 42 src/lib.rs",
        "tool> ok bash",
    ] {
        assert!(err.contains(row), "missing {row:?} in\n{err}");
    }
}

#[test]
fn json_mode_streams_contract_events_and_a_final_result() {
    let s = Sandbox::new();
    let (events, out) = json_run(&s, json!([{"thinking": "hmm", "text": "hello there"}]), &[]);
    assert!(out.status.success());
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    for t in [
        "user",
        "message-appended",
        "llm-start",
        "start",
        "thinking-delta",
        "assistant-thinking-delta",
        "text-delta",
        "assistant-text-delta",
        "text-end",
        "done",
        "llm-end",
        "assistant-text",
        "agent-turn-complete",
        "result",
    ] {
        assert!(types.contains(&t), "{t} missing from {types:?}");
    }
    let last = events.last().unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["final_text"], "hello there");
    assert_eq!(last["status"], "ok");
    let deltas: String = of_type(&events, "assistant-text-delta")
        .iter()
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, "hello there");
    let complete = of_type(&events, "agent-turn-complete");
    assert_eq!(complete[0]["status"], "ok");
    assert_eq!(complete[0]["message_count"], 2);
}

#[test]
fn every_tool_call_gets_one_result_in_call_order_even_when_it_fails() {
    let s = Sandbox::new();
    let (events, out) = json_run(
        &s,
        json!([
            {"tool_calls": [
                {"name": "no_such_tool", "arguments": {}, "id": "c1"},
                {"name": "read", "arguments": {"offset": "x"}, "id": "c2"},
                {"name": "read", "arguments": {"path": "missing.txt"}, "id": "c3"},
                {"name": "ls", "arguments": {}, "id": "c4"}
            ]},
            {"text": "ok"}
        ]),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = of_type(&events, "tool-result");
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["result"]["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    let body = |i: usize| {
        results[i]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        body(0).contains("unknown tool: no_such_tool"),
        "{}",
        body(0)
    );
    assert!(
        body(1).contains("invalid arguments for read"),
        "{}",
        body(1)
    );
    assert!(body(2).contains("not found"), "{}", body(2));
    assert_eq!(results[3]["result"]["is_error"], false);
    for r in &results[..3] {
        assert_eq!(r["result"]["is_error"], true);
    }
}

#[test]
fn same_turn_edits_of_one_file_are_all_rejected() {
    let s = Sandbox::new();
    s.write("work/a.txt", "one\ntwo\n");
    let (events, _) = json_run(
        &s,
        json!([
            {"tool_calls": [
                {"name": "edit", "arguments": {"path": "a.txt", "old_string": "one", "new_string": "1"}},
                {"name": "edit", "arguments": {"path": "./a.txt", "old_string": "two", "new_string": "2"}}
            ]},
            {"text": "done"}
        ]),
        &[],
    );
    let results = of_type(&events, "tool-result");
    assert_eq!(results.len(), 2);
    for r in results {
        assert_eq!(r["result"]["is_error"], true);
        assert!(r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("ONE edit call"));
    }
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
}

#[test]
fn before_tool_hooks_veto_in_order_and_a_raising_hook_blocks() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/guard.lua",
        r#"return function(api)
  api.register("hook", { name = "no-rm", before_tool = function(tool, args)
    if tool == "bash" and args.command:find("rm ", 1, true) then
      args.command = "echo tampered"   -- a copy: must not change what runs
      return { block = true, reason = "rm is not allowed" }
    end
  end })
  api.register("hook", { name = "broken", before_tool = function(tool, args)
    if tool == "ls" then error("hook bug") end
  end })
end"#,
    );
    s.write("work/keep.txt", "x");
    let (events, _) = json_run(
        &s,
        json!([
            {"tool_calls": [
                {"name": "bash", "arguments": {"command": "rm keep.txt"}},
                {"name": "ls", "arguments": {}},
                {"name": "bash", "arguments": {"command": "echo fine"}}
            ]},
            {"text": "done"}
        ]),
        &[],
    );
    let results = of_type(&events, "tool-result");
    let body = |i: usize| {
        results[i]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        body(0).contains("blocked by guard: rm is not allowed"),
        "{}",
        body(0)
    );
    assert!(
        body(1).contains("hook of guard failed") && body(1).contains("hook bug"),
        "{}",
        body(1)
    );
    assert!(
        body(2).contains("fine") && body(2).contains("[exit 0]"),
        "{}",
        body(2)
    );
    assert!(s.cwd().join("keep.txt").exists());
}

#[test]
fn parallel_safe_calls_run_concurrently_and_exclusive_ones_alone() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/timing.lua",
        r#"local native = require("fen.native")
return function(api)
  local log = api.state()
  log.events = {}
  local function tool(name, concurrency)
    api.register("tool", { name = name, description = name, concurrency = concurrency, risk = "read",
      parameters = { type = "object", properties = { tag = { type = "string" } } },
      execute = function(args)
        table.insert(log.events, "start " .. args.tag)
        native.sleep(150)
        table.insert(log.events, "end " .. args.tag)
        return table.concat(log.events, ",")
      end })
  end
  tool("slow_parallel", "parallel_safe")
  tool("slow_exclusive", "exclusive")
end"#,
    );
    let (events, out) = json_run(
        &s,
        json!([
            {"tool_calls": [
                {"name": "slow_parallel", "arguments": {"tag": "a"}},
                {"name": "slow_parallel", "arguments": {"tag": "b"}},
                {"name": "slow_exclusive", "arguments": {"tag": "c"}},
                {"name": "slow_exclusive", "arguments": {"tag": "d"}}
            ]},
            {"text": "done"}
        ]),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results = of_type(&events, "tool-result");
    let last = results[3]["result"]["content"][0]["text"].as_str().unwrap();
    let events: Vec<&str> = last.split(',').collect();
    // a and b overlap (both start before either ends; which ends first is the scheduler's
    // choice), then c and d run alone, in order.
    let mut first: Vec<&str> = events[..2].to_vec();
    first.sort();
    let mut second: Vec<&str> = events[2..4].to_vec();
    second.sort();
    assert_eq!(first, ["start a", "start b"], "{last}");
    assert_eq!(second, ["end a", "end b"], "{last}");
    assert_eq!(
        events[4..],
        ["start c", "end c", "start d", "end d"],
        "{last}"
    );
}

#[test]
fn provider_errors_end_the_turn_and_are_not_sent_back() {
    let s = Sandbox::new();
    // A Lua mock script that records how many messages each call saw.
    let script_path = s.write(
        "script.lua",
        r#"return function(n, ctx)
  local roles = {}
  for _, m in ipairs(ctx.messages) do roles[#roles + 1] = m.role .. (m.stop_reason and (":" .. m.stop_reason) or "") end
  if n == 1 then return { error = "upstream exploded (500)" } end
  return { text = "saw " .. table.concat(roles, " ") }
end"#,
    );
    let out = s.fen(&[
        "-p",
        "first",
        "--mock-script",
        script_path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("upstream exploded (500)"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_step_cap_stops_a_looping_model() {
    let s = Sandbox::new();
    let turns: Vec<Value> = (0..10)
        .map(|_| json!({"tool_calls": [{"name": "ls", "arguments": {}}]}))
        .collect();
    let path = script(&s, Value::Array(turns));
    let out = s.fen(&["-p", "loop", "--mock-script", &path, "--max-turns", "3"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("stopped after 3 model steps"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_script_that_runs_out_is_a_clear_error() {
    let s = Sandbox::new();
    let path = script(
        &s,
        json!([{"tool_calls": [{"name": "ls", "arguments": {}}]}]),
    );
    let out = s.fen(&["-p", "go", "--mock-script", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("the script has 1 turns and turn 2 was requested"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn no_provider_configured_says_how_to_configure_one() {
    let s = Sandbox::new();
    let out = s.fen_env(&["-p", "hi"], &[("FEN_MOCK_SCRIPT", "")]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("no provider is configured") && err.contains("--mock-script"),
        "{err}"
    );
    let out = s.fen(&["-p", "hi", "--provider", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("unknown provider 'nosuch'"));
}

#[test]
fn the_prompt_can_come_from_stdin() {
    let s = Sandbox::new();
    let path = script(&s, json!([{"text": "from stdin ok"}]));
    let out = s.fen_stdin(&["-p", "-", "--mock-script", &path], "task on stdin", &[]);
    assert_eq!(text(&out.stdout), "from stdin ok\n");
}

#[test]
fn ctrl_c_cancels_a_running_tool_and_exits_130() {
    let s = Sandbox::new();
    let marker = s.root().join("grandchild.pid");
    let cmd = format!("sleep 60 & echo $! > {}; wait", marker.display());
    let path = script(
        &s,
        json!([{"tool_calls": [{"name": "bash", "arguments": {"command": cmd}}]}, {"text": "never"}]),
    );
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fen"))
        .args(["-p", "run it", "--mock-script", &path])
        .current_dir(s.cwd())
        .env("HOME", s.root())
        .env("XDG_CONFIG_HOME", s.config())
        .env("XDG_STATE_HOME", s.state())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !marker.exists()
        || std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .trim()
            .is_empty()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the command never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pid: i32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    // The sleeping grandchild was killed with its process group.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false);
    assert!(!alive, "grandchild {pid} survived the cancel");
}

/// A presenter's optional `init` and `shutdown` run around `run`, in order, with `run` seeing
/// `agent-started` after `init`; an `init` that raises ends the run before any turn, with a
/// clear message and exit 1, and `shutdown` still runs.
#[test]
fn presenter_init_and_shutdown_run_around_run_and_a_failed_init_stops_the_run() {
    let s = Sandbox::new();
    let log = s.root().join("lifecycle.log");
    let ext = |fail_init: bool| {
        format!(
            r#"
return function(api)
  local function note(s)
    local f = assert(io.open({log:?}, "a")); f:write(s, "\n"); f:close()
  end
  api.on("agent-started", function() note("agent-started") end)
  api.on("agent-shutdown", function() note("agent-shutdown") end)
  api.register("presenter", {{
    name = "print",
    init = function(ctx) note("init " .. ctx.prompt) {fail} end,
    run = function(ctx)
      note("run")
      local r = api.turn.submit(ctx.prompt)
      note("turn " .. r.status)
      return 0
    end,
    shutdown = function() note("shutdown") end,
  }})
end
"#,
            fail = if fail_init {
                "error('no terminal here')"
            } else {
                ""
            }
        )
    };
    let script = s.write("script.json", r#"[{"text":"done"}]"#);
    let ok = s.write("ok.lua", &ext(false));
    let out = s.fen(&[
        "--extension",
        ok.to_str().unwrap(),
        "-p",
        "go",
        "--mock-script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "init go\nagent-started\nrun\nturn ok\nagent-shutdown\nshutdown\n"
    );

    std::fs::remove_file(&log).unwrap();
    let bad = s.write("bad.lua", &ext(true));
    let out = s.fen(&[
        "--extension",
        bad.to_str().unwrap(),
        "-p",
        "go",
        "--mock-script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("presenter failed: init:") && err.contains("no terminal here"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "init go\nagent-shutdown\nshutdown\n",
        "no turn ran"
    );
}

/// `--mode json` starts with `agent-started`, carries the whole-block events, and ends with the
/// result line.
#[test]
fn json_mode_starts_with_agent_started_and_ends_with_the_result() {
    let s = Sandbox::new();
    let script = s.write(
        "script.json",
        r#"[{"thinking":"let me see","text":"done"}]"#,
    );
    let out = s.fen(&[
        "--mode",
        "json",
        "go",
        "--mock-script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.first().unwrap()["type"], "agent-started");
    assert_eq!(lines.first().unwrap()["provider"], "mock");
    assert_eq!(lines.last().unwrap()["type"], "result");
    assert_eq!(lines.last().unwrap()["final_text"], "done");
    // Whole-block events after the stream: thinking, then the stream's end, before llm-end.
    let at = |ty: &str| {
        lines
            .iter()
            .position(|l| l["type"] == ty)
            .unwrap_or_else(|| panic!("no {ty}"))
    };
    assert_eq!(lines[at("assistant-thinking")]["text"], "let me see");
    assert!(at("assistant-thinking") < at("assistant-stream-end"));
    assert!(at("assistant-stream-end") < at("llm-end"));
    assert_eq!(lines[at("assistant-text")]["text"], "done");
}

/// `--mode json`: every `llm-end` carries the call's `usage` and `cost` (priced from
/// models.json, cache reads and writes at their own prices) and the `result` line adds them
/// up; a subscription's call has tokens and no dollars.
#[test]
fn json_mode_prices_each_call_and_the_result() {
    let s = Sandbox::new();
    s.write(
        "config/fen/models.json",
        r#"{"models": {"mock/mock": {"cost": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}}}}"#,
    );
    s.write("work/a.txt", "hello\n");
    let (events, out) = json_run(
        &s,
        json!([
            {"tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}],
             "usage": {"input": 1000, "output": 100, "cache_read": 2000, "cache_write": 400}},
            {"text": "done", "usage": {"input": 10000, "output": 1000}}
        ]),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let close = |v: &Value, want: f64| {
        let got = v.as_f64().unwrap_or(f64::NAN);
        assert!((got - want).abs() < 1e-9, "{got} != {want}");
    };
    let ends = of_type(&events, "llm-end");
    assert_eq!(ends.len(), 2, "{events:?}");
    // $3/M in, $15/M out, $0.30/M cache reads, $3.75/M cache writes.
    close(&ends[0]["cost"]["total"], 0.003 + 0.0015 + 0.0006 + 0.0015);
    close(&ends[0]["cost"]["cache_read"], 0.0006);
    close(&ends[0]["cost"]["cache_write"], 0.0015);
    assert_eq!(ends[0]["usage"]["cache_read"], 2000);
    close(&ends[1]["cost"]["total"], 0.03 + 0.015);
    let result = of_type(&events, "result");
    assert_eq!(result.len(), 1);
    close(&result[0]["cost"]["total"], 0.0066 + 0.045);
    assert_eq!(result[0]["usage"]["input"], 11000);
    assert_eq!(result[0]["usage"]["cache_write"], 400);

    // A subscription login: tokens, no dollars.
    let s = Sandbox::new();
    s.write(
        "config/fen/models.json",
        r#"{"models": {"mock/mock": {"cost": {"input": 3, "output": 15}}}}"#,
    );
    let (events, out) = json_run(
        &s,
        json!([{"text": "done", "usage": {"input": 500, "output": 50, "subscription": true}}]),
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let end = of_type(&events, "llm-end")[0];
    assert!(end["cost"].is_null(), "{end}");
    let result = of_type(&events, "result")[0];
    assert!(result["cost"].is_null(), "{result}");
    assert_eq!(result["usage"]["input"], 500);
    assert_eq!(result["usage"]["subscription"], true);
}
