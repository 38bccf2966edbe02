//! Regression tests of the kernel soundness issue: each is named after the defect it pins and
//! failed on the code before the fix (re-entrant steering, cancellation leaking between turns
//! and between parallel tools, silent nulls, secrets in tool children, idle-only commands,
//! runaway Lua, kernel events against their contracts, async hooks).

use crate::common;
use common::Sandbox;
use fen::host::Kernel;
use fen::kernel::agent::{self, Agent, TurnResult, TurnStatus};
use serde_json::Value;
use std::io::Read;
use std::process::Stdio;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Hang bound for a whole `fen` run (not a speed claim: debug build, busy machine).
const HANG: Duration = Duration::from_secs(60);

fn boot_with_agent(s: &Sandbox, script: &str) -> (Kernel, Rc<Agent>) {
    common::boot_with_agent(s, &s.write("script.json", script))
}

/// Runs a turn and cancels it after `ms` (as Ctrl-C would); returns its result and how long
/// it took.
fn run_and_cancel_after(k: &Kernel, a: &Rc<Agent>, ms: u64, text: &str) -> (TurnResult, Duration) {
    let t0 = Instant::now();
    let r = fen::cmd::block_on(async {
        let a2 = a.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            a2.cancel();
        });
        agent::run_turn(&k.lua, &k.inner, a, text).await
    })
    .unwrap();
    (r, t0.elapsed())
}

/// The text of every tool result in the agent's conversation.
fn result_texts(a: &Agent) -> Vec<String> {
    a.messages
        .sequence_values::<mlua::Table>()
        .flatten()
        .filter(|m| m.get::<String>("role").ok().as_deref() == Some("tool-result"))
        .map(|m| {
            let c: mlua::Table = m.get("content").unwrap();
            let b: mlua::Table = c.get(1).unwrap();
            b.get::<String>("text").unwrap()
        })
        .collect()
}

fn ext(s: &Sandbox, name: &str, code: &str) {
    s.write(&format!("config/fen/extensions/{name}.lua"), code);
}

/// The JSON lines `fen --mode json` printed.
fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `fen --mode json go` with a mock script and no session file.
fn json_go(s: &Sandbox, script: &std::path::Path) -> std::process::Output {
    s.fen(&[
        "--mode",
        "json",
        "go",
        "--mock-script",
        script.to_str().unwrap(),
        "--no-session",
    ])
}

/// The text of every `tool-result` event.
fn tool_results(evs: &[Value]) -> Vec<String> {
    evs.iter()
        .filter(|e| e["type"] == "tool-result")
        .map(|e| {
            e["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn reentrant_steering_from_a_message_appended_handler_does_not_panic() {
    let s = Sandbox::new();
    // On the second user message (the first steering line, appended while the loop drains the
    // queue) the handler queues more, both ways.
    ext(
        &s,
        "steer",
        r#"return function(api)
  local users = 0
  api.on("message-appended", function(ev)
    if ev.message.role ~= "user" then return end
    users = users + 1
    if users == 1 then api.enqueue("steering", "first steer") end
    if users == 2 then
      api.enqueue("steering", "second steer")
      api.turn.submit("third steer", { when_busy = "steering" })
    end
  end)
end"#,
    );
    let script = s.write("s.json", r#"[{"text": "done"}]"#);
    let out = json_go(&s, &script);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert!(!stderr.contains("already borrowed"), "{stderr}");
    let users: Vec<String> = events(&out.stdout)
        .iter()
        .filter(|e| e["type"] == "message-appended" && e["message"]["role"] == "user")
        .map(|e| e["message"]["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        users,
        ["go", "first steer", "second steer", "third steer"],
        "every queued line reaches the conversation, in order"
    );
}

#[test]
fn a_cancelled_turn_does_not_leak_into_a_later_command() {
    let s = Sandbox::new();
    ext(
        &s,
        "napper",
        r#"return function(api)
  api.register("command", { name = "nap", description = "sleeps briefly",
    handler = function() require("fen.native").sleep(10) return "rested" end })
end"#,
    );
    let (k, a) = boot_with_agent(&s, r#"[{"text": "late", "delay_ms": 30000}]"#);
    let out = fen::cmd::block_on(async {
        let a2 = a.clone();
        tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            a2.cancel();
        });
        let t0 = Instant::now();
        let r = agent::run_turn(&k.lua, &k.inner, &a, "hi").await;
        assert_eq!(r.status, TurnStatus::Cancelled);
        assert!(t0.elapsed() < HANG);
        k.run_command("/nap").await
    })
    .unwrap();
    assert_eq!(
        out.map_err(|e| e.to_string()),
        Ok(Some("rested".to_string()))
    );
}

#[test]
fn parallel_tools_each_keep_their_cancellation() {
    let s = Sandbox::new();
    // `quick` ends first; `slow` starts a long wait only after that, so it must still find
    // its own call's token (the old global token was gone by then).
    ext(
        &s,
        "pair",
        r#"return function(api)
  local native = require("fen.native")
  local function tool(name, body)
    api.register("tool", { name = name, description = name, risk = "read",
      concurrency = "parallel_safe", parameters = { type = "object", properties = {} },
      execute = body })
  end
  tool("quick", function() native.sleep(10) return "quick done" end)
  tool("slow", function() native.sleep(300) native.sleep(60000) return "slow done" end)
end"#,
    );
    let (k, a) = boot_with_agent(
        &s,
        r#"[{"tool_calls": [{"name": "quick", "arguments": {}}, {"name": "slow", "arguments": {}}]},
            {"text": "unreachable"}]"#,
    );
    let (r, took) = run_and_cancel_after(&k, &a, 800, "go");
    assert_eq!(r.status, TurnStatus::Cancelled);
    assert!(
        took < Duration::from_secs(30),
        "the slow call saw the cancel"
    );
    let results = result_texts(&a);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0], "quick done");
    assert!(results[1].contains("[cancelled]"), "{}", results[1]);
}

#[test]
fn a_compaction_model_call_is_cancellable() {
    let s = Sandbox::new();
    // A before_request hook that makes a slow model call (as compaction does) must stop with
    // the turn.
    ext(
        &s,
        "slowcompact",
        r#"return function(api)
  api.register("hook", { name = "slow", before_request = function()
    api.turn.complete({ system_prompt = "s", messages = { { role = "user", content = "x" } } })
  end })
end"#,
    );
    let (k, a) = boot_with_agent(&s, r#"[{"text": "summary", "delay_ms": 60000}]"#);
    let (r, took) = run_and_cancel_after(&k, &a, 300, "go");
    assert_eq!(r.status, TurnStatus::Cancelled);
    assert!(took < Duration::from_secs(30));
}

#[test]
fn lua_values_that_are_not_json_raise_naming_the_path() {
    let s = Sandbox::new();
    let k = Kernel::boot(s.boot_options()).unwrap();
    let out: String = k
        .lua
        .load(
            r#"
local json = require("fen.native").json
local results = {}
local function try(v)
  local ok, err = pcall(json.encode, v)
  results[#results + 1] = ok and ("ok " .. err) or tostring(err):match("^[^\n]*")
end
local cut = ("é"):sub(1, 1)
try({ messages = { {}, {}, { content = { { text = "abc" .. cut } } } } })
local t = {} t.self = t
try(t)
try({ f = function() end })
try({ n = 0/0 })
try({ ok = { 1, 2 }, null = json.null })
return table.concat(results, "\n")
"#,
        )
        .eval()
        .unwrap();
    let lines: Vec<&str> = out.lines().collect();
    let expected = [
        "messages[3].content[1].text: invalid UTF-8 at byte 3",
        "self: the table contains itself",
        "f: a function cannot become JSON",
        "n: the number NaN has no JSON form",
    ];
    for (line, want) in lines.iter().zip(expected) {
        assert!(line.contains(want), "{line:?} lacks {want:?}");
    }
    assert_eq!(lines[4], r#"ok {"null":null,"ok":[1,2]}"#);
}

#[test]
fn a_bad_extension_state_is_refused_and_no_null_line_is_written() {
    let s = Sandbox::new();
    ext(
        &s,
        "badstate",
        r#"return function(api)
  api.on("agent-turn-complete", function()
    local ok, err = pcall(api.session.append_state, { cb = function() end })
    api.session.append_state({ error = tostring(err), ok = ok })
  end)
end"#,
    );
    let script = s.write("s.json", r#"[{"text": "hi"}]"#);
    let out = s.fen(&["-p", "go", "--mock-script", script.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sessions = walk_files(&s.state().join("fen/sessions"));
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let text = std::fs::read_to_string(&sessions[0]).unwrap();
    assert!(
        !text.lines().any(|l| l.contains("\"state\":null")),
        "{text}"
    );
    assert!(
        text.contains("cb: a function cannot become JSON"),
        "the refusal names the bad field: {text}"
    );
}

fn walk_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
    out
}

#[test]
fn bash_children_do_not_see_provider_keys() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"tool_env": {"keep": ["KEPT_API_KEY"], "remove": ["MY_SECRET"]}}"#,
    );
    let out = s.fen_env(
        &["tool", "bash", r#"{"command": "env"}"#],
        &[
            ("OPENAI_API_KEY", "sk-openai-secret"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("SOMETHING_API_KEY", "other-secret"),
            ("KEPT_API_KEY", "kept-value"),
            ("MY_SECRET", "hidden-value"),
            ("PLAIN_VAR", "plain-value"),
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for secret in [
        "sk-openai-secret",
        "sk-ant-secret",
        "other-secret",
        "hidden-value",
    ] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
    assert!(text.contains("KEPT_API_KEY=kept-value"), "{text}");
    assert!(text.contains("PLAIN_VAR=plain-value"), "{text}");
}

#[test]
fn an_idle_only_command_is_refused_while_the_agent_is_busy() {
    let s = Sandbox::new();
    let (k, a) = boot_with_agent(&s, r#"[{"text": "late", "delay_ms": 30000}]"#);
    let refused = fen::cmd::block_on(async {
        let a2 = a.clone();
        let lua = k.lua.clone();
        let inner = k.inner.clone();
        let probe = tokio::task::spawn_local(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let r = fen::kernel::state::run_command(&lua, &inner, "/reload").await;
            a2.cancel();
            r
        });
        let _ = agent::run_turn(&k.lua, &k.inner, &a, "hi").await;
        probe.await.unwrap()
    })
    .unwrap();
    assert_eq!(
        refused,
        Err(fen::kernel::KernelError::CommandWhileBusy("reload".into()))
    );
    // Idle again: the same command runs.
    assert!(common::run_command(&k, "/reload").is_ok());
}

#[test]
fn a_looping_extension_fails_to_load_alone() {
    let s = Sandbox::new();
    ext(&s, "spin", "while true do end");
    ext(
        &s,
        "fine",
        r#"return function(api) api.register("command", { name = "fine", description = "ok", handler = function() return "ok" end }) end"#,
    );
    let t0 = Instant::now();
    let out = s.fen(&["list", "extensions", "--json"]);
    assert!(t0.elapsed() < HANG);
    assert_eq!(out.status.code(), Some(0));
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let find = |n: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == n)
            .cloned()
            .unwrap()
    };
    assert_eq!(find("spin")["status"], "error");
    assert!(
        find("spin")["message"]
            .as_str()
            .unwrap()
            .contains("did not finish loading within 2 s (infinite loop?)"),
        "{}",
        find("spin")
    );
    assert_eq!(find("fine")["status"], "loaded");
}

#[test]
fn a_looping_event_handler_raises_extension_error_and_the_run_goes_on() {
    let s = Sandbox::new();
    s.write("config/fen/settings.json", r#"{"handler_budget_ms": 300}"#);
    ext(
        &s,
        "loopy",
        r#"return function(api) api.on("user", function() while true do end end) end"#,
    );
    let script = s.write("s.json", r#"[{"text": "answered"}]"#);
    let out = json_go(&s, &script);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let evs = events(&out.stdout);
    let err = evs
        .iter()
        .find(|e| e["type"] == "extension-error")
        .expect("an extension-error event");
    assert_eq!(err["owner"], "loopy");
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains("did not finish within 300 ms (infinite loop?)"),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("answered"));
}

#[test]
fn ctrl_c_stops_a_tool_that_loops_in_lua() {
    let s = Sandbox::new();
    ext(
        &s,
        "spintool",
        r#"return function(api)
  api.register("tool", { name = "spin", description = "loops", risk = "read",
    parameters = { type = "object", properties = {} },
    execute = function() local n = 0 while true do n = n + 1 end end })
end"#,
    );
    let script = s.write(
        "s.json",
        r#"[{"tool_calls": [{"name": "spin", "arguments": {}}]}, {"text": "after"}]"#,
    );
    let mut child = s
        .command(&[
            "-p",
            "go",
            "--mock-script",
            script.to_str().unwrap(),
            "--no-session",
        ])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("fen did not stop after Ctrl-C while a tool looped in Lua");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_ne!(status.code(), Some(0), "{err}");
}

#[test]
fn every_kernel_event_matches_its_contract() {
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    let script = s.write(
        "s.json",
        r#"[{"thinking": "let me look", "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}, {"name": "nope", "arguments": {}}]},
            {"text": "it says alpha"}]"#,
    );
    let out = s.fen(&[
        "--mode",
        "json",
        "read it",
        "--mock-script",
        script.to_str().unwrap(),
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let evs = events(&out.stdout);
    let lua = mlua::Lua::new();
    let mut checked = std::collections::BTreeSet::new();
    for ev in &evs {
        let Some(ty) = ev["type"].as_str() else {
            continue;
        };
        let Some(contract) = fen::kernel::events::event_contract(ty) else {
            continue;
        };
        let table = match fen::kernel::convert::json_to_lua(&lua, ev).unwrap() {
            mlua::Value::Table(t) => t,
            other => panic!("{other:?}"),
        };
        if let Err(msg) = fen::kernel::convert::validate_table(contract, &table) {
            panic!("{ty}: {msg}\n{ev}");
        }
        checked.insert(ty.to_string());
    }
    for ty in [
        "agent-started",
        "user",
        "message-appended",
        "llm-start",
        "assistant-thinking",
        "tool-call",
        "tool-result",
        "assistant-text",
        "llm-end",
        "agent-turn-complete",
    ] {
        assert!(
            checked.contains(ty),
            "no {ty} event was checked: {checked:?}"
        );
    }
}

#[test]
fn a_waiting_before_tool_hook_gets_call_details_and_is_vetoed_on_cancel() {
    let s = Sandbox::new();
    ext(
        &s,
        "asker",
        r#"return function(api)
  api.register("hook", { name = "asker", before_tool = function(name, args, ctx)
    local answer, why = ctx.ask({ question = "run " .. name .. "?" })
    if args.path == "wait.txt" then require("fen.native").sleep(60000) end
    return { block = true, reason = table.concat({ ctx.tool, ctx.call_id, ctx.risk,
      ctx.concurrency, tostring(args.path), tostring(answer), tostring(why) }, "|") }
  end })
end"#,
    );
    // Headless: ask answers nil, "no user" at once; the hook sees the call's details.
    let script = s.write(
        "s.json",
        r#"[{"tool_calls": [{"id": "c1", "name": "read", "arguments": {"path": "a.txt"}}]}, {"text": "ok"}]"#,
    );
    let out = json_go(&s, &script);
    let results = tool_results(&events(&out.stdout));
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        results[0].contains("read|c1|read|parallel_safe|a.txt|nil|no user"),
        "{}",
        results[0]
    );
    // A hook that waits is resolved as a veto "cancelled" when the turn is cancelled.
    let (k, a) = boot_with_agent(
        &s,
        r#"[{"tool_calls": [{"name": "read", "arguments": {"path": "wait.txt"}}]}, {"text": "x"}]"#,
    );
    let (r, took) = run_and_cancel_after(&k, &a, 300, "go");
    assert_eq!(r.status, TurnStatus::Cancelled);
    assert!(took < Duration::from_secs(30));
    let last_result = result_texts(&a).pop().unwrap();
    assert!(last_result.contains("cancelled"), "{last_result}");
}

#[test]
fn a_presenter_exit_status_out_of_range_is_a_failure() {
    assert_eq!(fen_exit_status(256), 1);
    assert_eq!(fen_exit_status(-1), 1);
    assert_eq!(fen_exit_status(3), 3);
}

fn fen_exit_status(n: i64) -> u8 {
    fen::cmd::run::exit_status(n)
}

#[test]
fn a_non_utf8_repl_line_is_accepted_lossily() {
    let s = Sandbox::new();
    let script = s.write(
        "s.json",
        r#"[{"text": "first answer"}, {"text": "second answer"}]"#,
    );
    let mut child = s
        .command(&["--mock-script", script.to_str().unwrap(), "--no-session"])
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"caf\xe9 au lait\nnext line\n").unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("first answer"), "{text}");
    assert!(text.contains("second answer"), "the REPL went on: {text}");
}

#[test]
fn a_misspelt_native_option_is_an_error_not_a_silent_default() {
    let s = Sandbox::new();
    let k = Kernel::boot(s.boot_options()).unwrap();
    let out: String = fen::cmd::block_on(async {
        k.lua
            .load(
                r#"
local native = require("fen.native")
local _, grep_err = pcall(native.search.grep, { pattern = "x", ignorecase = true })
local _, http_err = pcall(native.http.request, { url = "http://127.0.0.1:1", hedaers = {} })
return tostring(grep_err):match("^[^\n]*") .. "\n" .. tostring(http_err):match("^[^\n]*")
"#,
            )
            .eval_async::<String>()
            .await
            .unwrap()
    })
    .unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].contains("search.grep") && lines[0].contains("unknown field `ignorecase`"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("http.request: unknown option `hedaers` (did you mean `headers`?)"),
        "{}",
        lines[1]
    );
}

#[test]
fn model_and_thinking_switch_between_turns() {
    let s = Sandbox::new();
    let log = s.root().join("calls.txt");
    ext(
        &s,
        "spy",
        &format!(
            r#"return function(api)
  api.on("llm-start", function(ev)
    local m = api.turn.model()
    local fh = io.open({:?}, "a")
    fh:write(ev.provider .. "/" .. ev.model .. " " .. tostring(m.thinking) .. "\n")
    fh:close()
  end)
end"#,
            log.to_string_lossy()
        ),
    );
    let script = s.write("s.json", r#"[{"text": "one"}, {"text": "two"}]"#);
    let mut child = s
        .command(&[
            "--presenter",
            "stdio",
            "--no-session",
            "--mock-script",
            script.to_str().unwrap(),
        ])
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin
            .write_all(b"first\n/model mock/other-model\n/thinking low\n/thinking loud\nsecond\n")
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("model: mock/other-model"), "{text}");
    assert!(text.contains("unknown thinking level \"loud\""), "{text}");
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls, "mock/mock nil\nmock/other-model low\n", "{text}");
}

/// Every binding's options are strict: an unknown key names the function and the key, a wrong
/// type names the key and the type it takes (these bindings ignored both before).
#[test]
fn every_binding_refuses_an_unknown_or_mistyped_option() {
    let s = Sandbox::new();
    let k = Kernel::boot(s.boot_options()).unwrap();
    let out: String = fen::cmd::block_on(async {
        k.lua
            .load(
                r#"
local native = require("fen.native")
local out = {}
local function try(f, ...)
  local ok, err = pcall(f, ...)
  out[#out + 1] = ok and "ok" or tostring(err):match("^[^\n]*")
end
try(native.process.run, { command = "true", sandbx = false })
try(native.fs.list, ".", { dept = 2 })
try(native.fs.read, "Cargo.toml", { limit = "ten" })
try(native.jobs.output, "nope", { wait = 1 })
try(native.mcp.servers, { tool = false })
try(native.term.open, { inlined = true })
return table.concat(out, "\n")
"#,
            )
            .eval_async::<String>()
            .await
            .unwrap()
    })
    .unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[0].contains("process.run: unknown option `sandbx` (did you mean `sandbox`?)"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("fs.list: unknown option `dept`"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("fs.read: limit:") && lines[2].contains("limit is integer?"),
        "{}",
        lines[2]
    );
    assert!(
        lines[3].contains("jobs.output: unknown option `wait`"),
        "{}",
        lines[3]
    );
    assert!(
        lines[4].contains("mcp.servers: unknown option `tool`"),
        "{}",
        lines[4]
    );
    assert!(
        lines[5].contains("term.open: unknown option `inlined`"),
        "{}",
        lines[5]
    );
}
