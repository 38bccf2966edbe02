//! `fen --mode rpc`: JSON Lines in (requests), events, asks and responses out. Steering and
//! follow-ups while busy, abort mid-tool, approvals and `api.ui.select` answered over the pipe,
//! bad lines, end of input mid-turn, and 1,000 prompts in one process.

use crate::common::Sandbox;
use crate::support::fake_llm::{Api, FakeLlm, Reply, Scenario, Turn};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// A running `fen --mode rpc` with a reader thread for its stdout.
struct Rpc {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Value>,
    seen: Vec<Value>,
}

impl Rpc {
    fn start(s: &Sandbox, script: &str, extra: &[&str]) -> Rpc {
        let script = s.write(
            if script.trim_start().starts_with("return") {
                "script.lua"
            } else {
                "script.json"
            },
            script,
        );
        let mut args = vec!["--mode", "rpc", "--mock-script", script.to_str().unwrap()];
        args.extend_from_slice(extra);
        Rpc::spawn(s, &args, &[])
    }

    /// `fen ARGS` (which name the mode) with `env` added.
    fn spawn(s: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Rpc {
        let mut cmd = s.command(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start fen --mode rpc");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("fen printed a line that is not JSON ({e}): {line}")
                });
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Rpc {
            child,
            stdin,
            lines: rx,
            seen: Vec::new(),
        }
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, v: Value) {
        self.send_raw(&v.to_string());
    }

    /// The next line matching `pred` (every line read is kept in `seen`).
    fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if pred(&v) {
                        return v;
                    }
                }
                Err(_) => panic!("no {what} within 30 s; seen:\n{}", self.dump()),
            }
        }
    }

    fn response(&mut self, id: i64) -> Value {
        self.wait_for(&format!("response {id}"), |v| {
            v["type"] == "response" && v["id"] == id
        })
    }

    fn turn_complete(&mut self) -> Value {
        self.wait_for("agent-turn-complete", |v| {
            v["type"] == "agent-turn-complete"
        })
    }

    fn close(&mut self) {
        self.stdin = None;
    }

    /// Closes stdin, waits for the exit and reads what is left.
    fn finish(mut self) -> (i32, Vec<Value>) {
        self.close();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                break st;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "fen did not exit after end of input; seen:\n{}",
                    self.dump()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(v) = self.lines.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(v);
        }
        (status.code().unwrap_or(-1), self.seen)
    }

    fn dump(&self) -> String {
        self.seen
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

#[test]
fn steer_and_follow_up_while_busy() {
    let s = Sandbox::new();
    // Steering lands before the next model call (after the tool); a follow-up only after the
    // model's natural stop.
    let script = json!([
        {"tool_calls": [{"name": "bash", "id": "b1", "arguments": {"command": "sleep 1"}}]},
        {"text": "saw the steer"},
        {"text": "saw the follow-up"}
    ]);
    let mut rpc = Rpc::start(&s, &script.to_string(), &["--no-session"]);
    rpc.send(json!({"id": 1, "type": "prompt", "text": "start"}));
    assert_eq!(rpc.response(1)["ok"], true);
    rpc.wait_for("the tool call", |v| v["type"] == "tool-call");
    rpc.send(json!({"id": 2, "type": "prompt", "text": "later, please"}));
    rpc.send(json!({"id": 3, "type": "prompt", "text": "steer now", "behavior": "steer"}));
    let r2 = rpc.response(2);
    assert_eq!(
        r2["queued"], "follow-up",
        "without behavior: a follow-up {r2}"
    );
    let r3 = rpc.response(3);
    assert_eq!(r3["queued"], "steering", "{r3}");
    rpc.turn_complete();
    rpc.send(json!({"id": 4, "type": "get_messages"}));
    let msgs = rpc.response(4)["messages"].clone();
    let roles: Vec<String> = msgs
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap();
            match m["content"].as_str() {
                Some(t) => format!("{role}: {t}"),
                None => role.to_string(),
            }
        })
        .collect();
    assert_eq!(
        roles,
        [
            "user: start",
            "assistant",
            "tool-result",
            "user: steer now",
            "assistant",
            "user: later, please",
            "assistant"
        ],
        "{msgs}"
    );
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}

#[test]
fn abort_mid_tool_ends_the_process_group_and_records_one_aborted_result() {
    let s = Sandbox::new();
    let script = json!([
        {"tool_calls": [{"name": "bash", "id": "b1", "arguments": {"command": "echo $$ > shell.pid; sleep 60 & echo $! > sleep.pid; wait"}}]},
        {"text": "never reached"}
    ]);
    let mut rpc = Rpc::start(&s, &script.to_string(), &["--no-session"]);
    rpc.send(json!({"id": 1, "type": "prompt", "text": "run it"}));
    rpc.wait_for("the bash call", |v| v["type"] == "tool-call");
    let sleep_pid = s.cwd().join("sleep.pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    let pid = loop {
        if let Ok(t) = std::fs::read_to_string(&sleep_pid) {
            if let Ok(p) = t.trim().parse::<u32>() {
                break p;
            }
        }
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    rpc.send(json!({"id": 2, "type": "abort"}));
    assert_eq!(rpc.response(2)["ok"], true);
    let done = rpc.turn_complete();
    assert_eq!(done["status"], "cancelled", "{done}");
    let results: Vec<&Value> = rpc
        .seen
        .iter()
        .filter(|v| v["type"] == "tool-result" && v["result"]["tool_call_id"] == "b1")
        .collect();
    assert_eq!(
        results.len(),
        1,
        "one result for the aborted call:\n{}",
        rpc.dump()
    );
    assert_eq!(results[0]["result"]["is_error"], true);
    // The whole group is gone (the background sleep too), without waiting for its 60 s.
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.contains(") Z ") {
            break; // a zombie waiting for its reaper is gone as a process
        }
        assert!(
            Instant::now() < deadline,
            "sleep {pid} still runs after abort"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}

#[test]
fn approvals_are_asked_and_answered_over_the_pipe() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "safe"}}"#,
    );
    let script = json!([
        {"tool_calls": [{"name": "write", "id": "w1", "arguments": {"path": "yes.txt", "content": "yes\n"}}]},
        {"tool_calls": [{"name": "write", "id": "w2", "arguments": {"path": "no.txt", "content": "no\n"}}]},
        {"text": "done"}
    ]);
    let mut rpc = Rpc::start(&s, &script.to_string(), &["--no-session"]);
    rpc.send(json!({"id": 1, "type": "prompt", "text": "write two files"}));
    let ask = rpc.wait_for("an approval ask", |v| v["type"] == "ask");
    assert_eq!(ask["kind"], "approval", "{ask}");
    assert_eq!(ask["tool"], "write");
    assert_eq!(ask["tool_call_id"], "w1");
    let ids: Vec<&str> = ask["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["y", "s", "a", "n", "c"], "{ask}");
    // A choice that is not an option is refused and the ask stays open.
    rpc.send(json!({"id": 2, "type": "answer", "ask_id": ask["ask_id"], "choice": "maybe"}));
    let bad = rpc.response(2);
    assert_eq!(bad["ok"], false);
    assert!(
        bad["error"].as_str().unwrap().contains("y, s, a, n, c"),
        "{bad}"
    );
    rpc.send(json!({"id": 3, "type": "answer", "ask_id": ask["ask_id"], "choice": "y"}));
    assert_eq!(rpc.response(3)["ok"], true);
    let ask2 = rpc.wait_for("the second ask", |v| v["type"] == "ask");
    rpc.send(json!({"id": 4, "type": "answer", "ask_id": ask2["ask_id"], "choice": "n", "text": "not that one"}));
    assert_eq!(rpc.response(4)["ok"], true);
    rpc.turn_complete();
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("yes.txt")).unwrap(),
        "yes\n"
    );
    assert!(!s.cwd().join("no.txt").exists());
    let denied = rpc
        .seen
        .iter()
        .find(|v| v["type"] == "tool-result" && v["result"]["tool_call_id"] == "w2")
        .cloned()
        .unwrap();
    assert!(
        denied.to_string().contains("not that one"),
        "the reason reaches the model: {denied}"
    );
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_user_extensions_select_is_answered_over_the_pipe() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/picker.lua",
        r#"return function(api)
  api.register("command", { name = "pick", description = "pick a colour", handler = function()
    local items = { "red", "green", "blue" }
    local n = api.ui.select("Pick a colour", items)
    return "picked " .. tostring(n and items[n])
  end })
end"#,
    );
    let mut rpc = Rpc::start(&s, "[]", &["--no-session"]);
    rpc.send(json!({"id": "c1", "type": "command", "text": "/pick"}));
    let ask = rpc.wait_for("a select ask", |v| v["type"] == "ask");
    assert_eq!(ask["kind"], "select", "{ask}");
    assert_eq!(ask["title"], "Pick a colour");
    assert_eq!(ask["options"][1], json!({"id": 2, "label": "green"}));
    rpc.send(json!({"id": "a1", "type": "answer", "ask_id": ask["ask_id"], "choice": 4}));
    assert_eq!(
        rpc.wait_for("a1", |v| v["id"] == "a1")["ok"],
        false,
        "4 is out of range"
    );
    rpc.send(json!({"id": "a2", "type": "answer", "ask_id": ask["ask_id"], "choice": 2}));
    let r = rpc.wait_for("c1", |v| v["type"] == "response" && v["id"] == "c1");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["text"], "picked green");
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}

#[test]
fn bad_lines_get_error_responses_and_the_session_goes_on() {
    let s = Sandbox::new();
    let mut rpc = Rpc::start(&s, r#"[{"text":"fine"}]"#, &["--no-session"]);
    rpc.send_raw("this is not json");
    rpc.send_raw("[1, 2]");
    rpc.send_raw(r#"{"id": 7, "type": "prompt"}"#);
    rpc.send_raw(r#"{"id": 8, "type": "launch_rockets"}"#);
    rpc.send_raw(r#"{"id": {"x": 1}, "type": "get_state"}"#);
    rpc.send_raw(r#"{"id": 9}"#);
    rpc.send_raw(r#"{"id": 10, "type": "set_thinking", "level": "extreme"}"#);
    rpc.send(json!({"id": 11, "type": "prompt", "text": "still there?"}));
    rpc.turn_complete();
    let errors: Vec<String> = rpc
        .seen
        .iter()
        .filter(|v| v["type"] == "response" && v["ok"] == false)
        .map(|v| v["error"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(errors.len(), 7, "{errors:#?}");
    assert!(errors[0].starts_with("line 1: "), "{}", errors[0]);
    assert!(
        errors[1].starts_with("line 2: a request must be a JSON object"),
        "{errors:#?}"
    );
    assert!(
        errors[2].starts_with("line 3: prompt: field 'text' is required (string)"),
        "{}",
        errors[2]
    );
    assert!(errors[3].starts_with("line 4: unknown type \"launch_rockets\""));
    assert!(errors[4].starts_with("line 5: `id`"));
    assert!(errors[5].starts_with("line 6: `type` is missing"));
    assert!(
        errors[6].starts_with("line 7: set_thinking: field 'level' expected one of \"off\""),
        "{}",
        errors[6]
    );
    assert!(rpc
        .seen
        .iter()
        .any(|v| v["type"] == "assistant-text" && v["text"] == "fine"));
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}

#[test]
fn end_of_input_mid_turn_ends_after_the_turn() {
    let s = Sandbox::new();
    let mut rpc = Rpc::start(
        &s,
        r#"[{"text":"the slow answer","delay_ms":800}]"#,
        &["--no-session"],
    );
    rpc.send(json!({"id": 1, "type": "prompt", "text": "go"}));
    rpc.response(1);
    let (code, seen) = rpc.finish();
    assert_eq!(code, 0);
    let i_text = seen
        .iter()
        .position(|v| v["type"] == "assistant-text" && v["text"] == "the slow answer")
        .expect("the turn finished");
    let i_done = seen
        .iter()
        .position(|v| v["type"] == "agent-turn-complete")
        .unwrap();
    assert!(i_text < i_done);
    assert_eq!(seen[i_done]["status"], "ok");
}

#[test]
fn after_end_of_input_asks_get_the_on_ask_answer() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "safe"}}"#,
    );
    let script = json!([
        {"tool_calls": [{"name": "write", "id": "w1", "arguments": {"path": "x.txt", "content": "x"}}], "delay_ms": 300},
        {"text": "ok"}
    ]);
    let mut rpc = Rpc::start(&s, &script.to_string(), &["--no-session"]);
    rpc.send(json!({"id": 1, "type": "prompt", "text": "write"}));
    rpc.response(1);
    let (code, seen) = rpc.finish();
    assert_eq!(code, 0);
    assert!(!seen.iter().any(|v| v["type"] == "ask"), "nobody is asked");
    let r = seen
        .iter()
        .find(|v| v["type"] == "tool-result")
        .expect("a result");
    assert_eq!(r["result"]["is_error"], true, "{r}");
    assert!(r.to_string().contains("--on-ask deny"), "{r}");
    assert!(!s.cwd().join("x.txt").exists());
}

#[test]
fn a_thousand_prompts_in_one_process_with_flat_memory() {
    let s = Sandbox::new();
    let mut rpc = Rpc::start(
        &s,
        "return function(n) return { text = 'answer ' .. n } end",
        &["--no-session"],
    );
    let mut after_100 = 0;
    for i in 1..=1000 {
        rpc.send(json!({"id": i, "type": "prompt", "text": format!("prompt {i}")}));
        let done = rpc.turn_complete();
        assert_eq!(done["status"], "ok", "{done}");
        // Only the last lines are kept.
        let keep = rpc.seen.len().saturating_sub(50);
        rpc.seen.drain(..keep);
        if i == 100 {
            after_100 = rpc.rss_kb();
        }
        // A new session now and then: each conversation starts empty, as a script would.
        if i % 100 == 0 {
            rpc.send(json!({"id": 100_000 + i, "type": "new_session"}));
            rpc.response(100_000 + i);
        }
    }
    let after_1000 = rpc.rss_kb();
    eprintln!("RSS after 100 prompts: {after_100} kB, after 1000: {after_1000} kB");
    assert!(after_100 > 0);
    // Flat: what 900 more prompts add is a few MB of allocator slack, not a leak per prompt.
    assert!(
        after_1000 < after_100 + 16 * 1024,
        "RSS grew from {after_100} kB to {after_1000} kB over 900 prompts"
    );
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}

/// A 4x3 PNG, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAQAAAADCAIAAAA7ljmRAAAAEElEQVR4nGMQUDCAIwacHABWZwSBI7lGPQAAAABJRU5ErkJggg==";

/// Where the image of the last user message sits in each API's request body.
fn sent_image(api: Api, body: &Value) -> (String, String) {
    match api {
        Api::Anthropic => {
            let user = body["messages"].as_array().unwrap().last().unwrap();
            assert_eq!(user["content"][0]["text"], "what is in it?", "{user}");
            let src = &user["content"][1]["source"];
            (
                src["media_type"].as_str().unwrap().into(),
                src["data"].as_str().unwrap().into(),
            )
        }
        Api::OpenAiChat => {
            let user = body["messages"].as_array().unwrap().last().unwrap();
            assert_eq!(user["content"][0]["text"], "what is in it?", "{user}");
            let url = user["content"][1]["image_url"]["url"].as_str().unwrap();
            let (head, data) = url.split_once(";base64,").unwrap();
            (head.trim_start_matches("data:").into(), data.into())
        }
        Api::OpenAiResponses => {
            let user = body["input"].as_array().unwrap().last().unwrap();
            assert_eq!(user["content"][0]["text"], "what is in it?", "{user}");
            let url = user["content"][1]["image_url"].as_str().unwrap();
            let (head, data) = url.split_once(";base64,").unwrap();
            (head.trim_start_matches("data:").into(), data.into())
        }
    }
}

#[test]
fn images_in_a_prompt_reach_the_provider_and_bad_ones_are_refused() {
    for (provider, api) in [
        ("anthropic", Api::Anthropic),
        ("openai", Api::OpenAiChat),
        ("openai-responses", Api::OpenAiResponses),
    ] {
        let s = Sandbox::new();
        let llm =
            FakeLlm::start(Scenario::new().then(Reply::stream(api, Turn::text("a tiny image"))));
        let url = llm.base_url();
        let mut rpc = Rpc::spawn(
            &s,
            &[
                "--mode",
                "rpc",
                "--no-session",
                "--provider",
                provider,
                "--model",
                "m",
                "--base-url",
                &url,
            ],
            &[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")],
        );
        let cut = {
            use base64::Engine as _;
            let b = base64::engine::general_purpose::STANDARD
                .decode(PNG)
                .unwrap();
            base64::engine::general_purpose::STANDARD.encode(&b[..40])
        };
        // Bad images: each refused with the image's index and what is wrong; nothing is sent.
        for (id, image, why) in [
            (
                1,
                json!({"data": "not base64!", "mime_type": "image/png"}),
                "images[1]: `data` is not base64",
            ),
            (
                2,
                json!({"data": cut, "mime_type": "image/png"}),
                "images[1]: the PNG image is corrupt",
            ),
            (
                3,
                json!({"data": "aGVsbG8=", "mime_type": "image/png"}),
                "images[1]: not a PNG, JPEG, GIF or WebP image",
            ),
            (
                4,
                json!({"data": PNG, "mime_type": "image/bmp"}),
                "images[1]: field 'mime_type' expected one of",
            ),
            (
                5,
                json!({"mime_type": "image/png"}),
                "images[1]: field 'data' is required",
            ),
        ] {
            rpc.send(
                json!({"id": id, "type": "prompt", "text": "what is in it?", "images": [image]}),
            );
            let r = rpc.response(id);
            assert_eq!(r["ok"], false, "{r}");
            assert!(
                r["error"].as_str().unwrap().contains(why),
                "{provider}: {r}"
            );
        }
        assert!(
            llm.requests().is_empty(),
            "a bad image reached the provider"
        );
        rpc.send(json!({"id": 6, "type": "prompt", "text": "what is in it?", "images": [{"data": PNG, "mime_type": "image/png"}]}));
        assert_eq!(rpc.response(6)["ok"], true);
        let user = rpc.wait_for("the user event", |v| v["type"] == "user");
        assert_eq!(user["images"], 1);
        let done = rpc.turn_complete();
        assert_eq!(done["status"], "ok", "{provider}: {done}");
        let reqs = llm.requests();
        assert_eq!(reqs.len(), 1);
        let (mime, data) = sent_image(api, &reqs[0].body);
        assert_eq!(
            (mime.as_str(), data.as_str()),
            ("image/png", PNG),
            "{provider}"
        );
        let (code, _) = rpc.finish();
        assert_eq!(code, 0);
    }
}

#[test]
fn requests_are_checked_against_their_contracts() {
    let s = Sandbox::new();
    let mut rpc = Rpc::start(&s, r#"[{"text":"fine"}]"#, &["--no-session"]);
    for (id, req, why) in [
        (
            1,
            json!({"type": "prompt", "text": "x", "behaviour": "steer"}),
            "prompt: unknown field 'behaviour'; RpcPrompt takes",
        ),
        (
            2,
            json!({"type": "prompt", "text": 5}),
            "prompt: field 'text' expected string, got a number",
        ),
        (
            3,
            json!({"type": "prompt", "text": "x", "behavior": "later"}),
            "prompt: field 'behavior' expected one of \"steer\", \"follow_up\"",
        ),
        (
            4,
            json!({"type": "answer"}),
            "answer: field 'ask_id' is required",
        ),
        (
            5,
            json!({"type": "set_permission_mode", "mode": "god"}),
            "set_permission_mode: field 'mode' expected one of",
        ),
        (
            6,
            json!({"type": "resume", "session": ["a"]}),
            "resume: field 'session' expected string, got a table",
        ),
        (
            7,
            json!({"type": "prompt", "text": "x", "images": [{"data": "aGVsbG8=", "mime_type": "image/png", "width": 3}]}),
            "prompt: images[1]: unknown field 'width'",
        ),
    ] {
        let mut req = req;
        req["id"] = json!(id);
        rpc.send(req);
        let r = rpc.response(id);
        assert_eq!(r["ok"], false, "{r}");
        let err = r["error"].as_str().unwrap();
        assert!(err.starts_with(&format!("line {id}: {why}")), "{err}");
    }
    // JSON null is an absent optional field; the session went on.
    rpc.send(json!({"id": 8, "type": "prompt", "text": "still there?", "behavior": null}));
    assert_eq!(rpc.response(8)["ok"], true);
    assert_eq!(rpc.turn_complete()["status"], "ok");
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}

#[test]
fn state_model_mode_command_and_session_requests_work_end_to_end() {
    let s = Sandbox::new();
    // The summary /compact asks for, else an answer naming the prompt.
    let mut rpc = Rpc::start(
        &s,
        r###"return function(n, ctx)
  if (ctx.system_prompt or ""):find("You compact", 1, true) then return { text = "## Task\nsummary of it" } end
  local last = ctx.messages[#ctx.messages]
  return { text = "answer to " .. tostring(type(last.content) == "string" and last.content or "?") }
end"###,
        &[],
    );
    rpc.send(json!({"id": 1, "type": "list_models"}));
    let r = rpc.response(1);
    assert_eq!(r["current"], "mock/mock", "{r}");
    assert!(r["models"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["id"] == "mock/mock"));
    rpc.send(json!({"id": 2, "type": "list_commands"}));
    let r = rpc.response(2);
    let names: Vec<&str> = r["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"compact") && names.contains(&"permissions"),
        "{names:?}"
    );
    rpc.send(json!({"id": 3, "type": "set_thinking", "level": "high"}));
    assert_eq!(rpc.response(3)["level"], "high");
    rpc.send(json!({"id": 4, "type": "set_permission_mode", "mode": "plan"}));
    assert_eq!(rpc.response(4)["mode"], "plan");
    // (The event comes while the command runs, before its response.)
    assert!(
        rpc.seen
            .iter()
            .any(|v| v["type"] == "permission-mode" && v["mode"] == "plan"),
        "{}",
        rpc.dump()
    );
    rpc.send(json!({"id": 5, "type": "set_permission_mode", "mode": "safe"}));
    assert_eq!(rpc.response(5)["mode"], "safe");
    rpc.send(json!({"id": 6, "type": "set_model", "model": "mock/other-model"}));
    assert_eq!(rpc.response(6)["model"], "mock/other-model");
    rpc.send(json!({"id": 7, "type": "prompt", "text": "hello"}));
    rpc.response(7);
    rpc.turn_complete();
    rpc.send(json!({"id": 8, "type": "get_state"}));
    let st = rpc.response(8)["state"].clone();
    assert_eq!(st["provider"], "mock", "{st}");
    assert_eq!(st["model"], "other-model");
    assert_eq!(st["thinking"], "high");
    assert_eq!(st["permission_mode"], "safe");
    assert_eq!(st["busy"], false);
    assert_eq!(st["message_count"], 2);
    assert_eq!(st["context_window"], 128000);
    let first = st["session_id"].as_str().expect("a session id").to_string();
    rpc.send(json!({"id": 9, "type": "compact", "guidance": "keep the task"}));
    let r = rpc.response(9);
    assert_eq!(r["ok"], true, "{r}");
    rpc.send(json!({"id": 10, "type": "command", "text": "/permissions"}));
    assert!(rpc.response(10)["text"]
        .as_str()
        .unwrap()
        .starts_with("mode: safe"));
    rpc.send(json!({"id": 11, "type": "new_session"}));
    let r = rpc.response(11);
    assert_eq!(r["ok"], true, "{r}");
    rpc.send(json!({"id": 12, "type": "get_messages"}));
    assert_eq!(rpc.response(12)["messages"], json!([]));
    rpc.send(json!({"id": 13, "type": "prompt", "text": "again"}));
    rpc.response(13);
    assert_eq!(rpc.turn_complete()["result"], "answer to again");
    rpc.send(json!({"id": 14, "type": "resume", "session": first}));
    let r = rpc.response(14);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(r["session"]["id"], json!(first));
    assert!(r["message_count"].as_u64().unwrap() >= 1, "{r}");
    rpc.send(json!({"id": 15, "type": "get_messages"}));
    let msgs = rpc.response(15)["messages"].clone();
    assert!(
        msgs.to_string().contains("summary of it"),
        "the compacted session: {msgs}"
    );
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}

#[test]
fn a_steering_prompt_keeps_its_images() {
    let s = Sandbox::new();
    let script = json!([
        {"tool_calls": [{"name": "bash", "id": "b1", "arguments": {"command": "sleep 1"}}]},
        {"text": "saw the picture"}
    ]);
    let mut rpc = Rpc::start(&s, &script.to_string(), &["--no-session"]);
    rpc.send(json!({"id": 1, "type": "prompt", "text": "start"}));
    rpc.wait_for("the tool call", |v| v["type"] == "tool-call");
    rpc.send(
        json!({"id": 2, "type": "prompt", "text": "look at this", "behavior": "steer",
        "images": [{"data": PNG, "mime_type": "image/png"}]}),
    );
    assert_eq!(rpc.response(2)["queued"], "steering");
    rpc.turn_complete();
    rpc.send(json!({"id": 3, "type": "get_messages"}));
    let msgs = rpc.response(3)["messages"].clone();
    let steer = &msgs[3];
    assert_eq!(steer["role"], "user", "{msgs}");
    assert_eq!(
        steer["content"][0],
        json!({"type": "text", "text": "look at this"})
    );
    assert_eq!(
        steer["content"][1],
        json!({"type": "image", "mime_type": "image/png", "data": PNG})
    );
    let (code, _) = rpc.finish();
    assert_eq!(code, 0);
}
