//! Streams recorded from real provider APIs (tests/data/streams/, origins in its README),
//! replayed byte for byte by a local server: bytes no one here wrote. Each test is the
//! regression case of a defect those streams found (issue 23), with the CLI defects found
//! beside them.

use crate::common::Sandbox;
use crate::support::fake_llm::{Api, Chunking, FakeLlm, Reply, Scenario, Turn};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The `data:` payloads of a recorded stream, decoded (`[DONE]` and comments left out).
fn recorded_events(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/streams")
        .join(name);
    let body = std::fs::read_to_string(&path).unwrap();
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// Joins a string field of the Chat Completions deltas (`delta.FIELD`).
fn joined_delta(events: &[Value], field: &str) -> String {
    events
        .iter()
        .filter_map(|e| e["choices"][0]["delta"][field].as_str())
        .collect()
}

/// `fen ARGS PROMPT` against `server`, with both providers' keys set.
fn fen(s: &Sandbox, provider: &str, server: &FakeLlm, extra: &[&str]) -> std::process::Output {
    let url = server.base_url();
    let mut args = vec!["--provider", provider, "--model", "m", "--base-url", &url];
    args.extend_from_slice(extra);
    args.push("hello");
    s.fen_env(
        &args,
        &[
            ("OPENAI_API_KEY", "test-openai-key"),
            ("ANTHROPIC_API_KEY", "test-anthropic-key"),
        ],
    )
}

fn json_events(out: &std::process::Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|x| x == "jsonl") {
            out.push(p);
        }
    }
}

/// The raw lines of the one session file the run left.
fn session_lines(s: &Sandbox) -> Vec<String> {
    let mut files = Vec::new();
    walk(&s.state().join("fen/sessions"), &mut files);
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// The assistant messages of the session, in order.
fn session_assistant_messages(s: &Sandbox) -> Vec<Value> {
    session_lines(s)
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["type"] == "message" && r["message"]["role"] == "assistant")
        .map(|r| r["message"].clone())
        .collect()
}

fn blocks_of<'a>(message: &'a Value, kind: &str) -> Vec<&'a Value> {
    message["content"]
        .as_array()
        .unwrap_or_else(|| panic!("content is not an array: {message}"))
        .iter()
        .filter(|b| b["type"] == kind)
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Providers
// ---------------------------------------------------------------------------------------------

/// Anthropic's web search: `message_delta.usage` holds the final, cumulative counts (22,397
/// input tokens), not message_start's 2,068. Server-side tool blocks pass without harm.
#[test]
fn anthropic_usage_is_the_last_value_of_each_field() {
    let events = recorded_events("anthropic-web-search.sse");
    let last = events
        .iter()
        .rfind(|e| e["type"] == "message_delta")
        .unwrap();
    let start = events
        .iter()
        .find(|e| e["type"] == "message_start")
        .unwrap();
    let want_input = last["usage"]["input_tokens"].as_u64().unwrap();
    assert_ne!(
        Some(want_input),
        start["message"]["usage"]["input_tokens"].as_u64()
    );
    let answer: String = events
        .iter()
        .filter(|e| e["delta"]["type"] == "text_delta")
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    for chunking in [Chunking::events(), Chunking::bytes(997)] {
        let s = Sandbox::new();
        let server = FakeLlm::start(
            Scenario::new().then(Reply::recorded("anthropic-web-search.sse", chunking)),
        );
        let out = fen(&s, "anthropic", &server, &["--mode", "json"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let events = json_events(&out);
        let result = events.last().unwrap();
        assert_eq!(result["usage"]["input"], want_input, "{result}");
        assert_eq!(result["usage"]["output"], last["usage"]["output_tokens"]);
        assert_eq!(result["usage"]["cache_read"], 0);
        let shown: String = events
            .iter()
            .filter(|e| e["type"] == "assistant-text-delta")
            .filter_map(|e| e["delta"].as_str())
            .collect();
        assert_eq!(shown, answer);
    }
}

/// Groq sends an `error` event after 412 characters of reasoning: the reasoning was shown,
/// and the saved message (the session's too) keeps it.
#[test]
fn a_mid_stream_error_keeps_the_reasoning_that_was_shown() {
    let events = recorded_events("groq-reasoning-then-error.sse");
    let reasoning = joined_delta(&events, "reasoning");
    assert!(reasoning.len() > 400, "{reasoning}");
    let s = Sandbox::new();
    let server = FakeLlm::start(Scenario::new().then(Reply::recorded(
        "groq-reasoning-then-error.sse",
        Chunking::bytes(1500),
    )));
    let out = fen(&s, "openai", &server, &["-p"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("Tool call validation failed"),
        "{}",
        text(&out.stderr)
    );
    let messages = session_assistant_messages(&s);
    let m = messages.last().unwrap();
    assert_eq!(m["stop_reason"], "error");
    let thinking = blocks_of(m, "thinking");
    assert_eq!(thinking.len(), 1, "{m}");
    assert_eq!(thinking[0]["thinking"], reasoning.as_str());
}

/// Groq's text "maybe" then an error event; OpenRouter's error chunk after reasoning: the
/// open block keeps what arrived.
#[test]
fn a_mid_stream_error_keeps_the_text_and_the_reasoning_that_were_shown() {
    for (name, want_text) in [
        ("groq-text-then-error.sse", true),
        ("openrouter-error-chunk.sse", false),
    ] {
        let events = recorded_events(name);
        let reasoning = joined_delta(&events, "reasoning");
        let answer = joined_delta(&events, "content");
        assert!(!reasoning.is_empty());
        assert_eq!(!answer.is_empty(), want_text, "{name}: {answer}");
        let s = Sandbox::new();
        let server =
            FakeLlm::start(Scenario::new().then(Reply::recorded(name, Chunking::events())));
        let out = fen(&s, "openai", &server, &["-p"]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", text(&out.stdout));
        let messages = session_assistant_messages(&s);
        let m = messages.last().unwrap();
        assert_eq!(m["stop_reason"], "error", "{name}");
        let thinking = blocks_of(m, "thinking");
        assert_eq!(thinking[0]["thinking"], reasoning.as_str(), "{name}");
        let texts: String = blocks_of(m, "text")
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect();
        assert_eq!(texts, answer, "{name}");
    }
}

/// A message with no content blocks (an empty answer, a request that failed at once) is
/// saved and streamed with `content: []`, never `{}`.
#[test]
fn empty_content_is_an_array_in_the_session_and_the_json_stream() {
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(Api::OpenAiChat, Turn::default()))
            .then(Reply::status(400, r#"{"error":{"message":"bad"}}"#)),
    );
    let out = fen(&s, "openai", &server, &["--mode", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(!stdout.contains(r#""content":{}"#), "{stdout}");
    let lines = session_lines(&s);
    assert!(
        lines.iter().all(|l| !l.contains(r#""content":{}"#)),
        "{lines:#?}"
    );
    let messages = session_assistant_messages(&s);
    assert_eq!(messages.last().unwrap()["content"], json!([]));
    // A request that fails before anything arrived: an error message, content [] too.
    let s = Sandbox::new();
    let server =
        FakeLlm::start(Scenario::new().then(Reply::status(400, r#"{"error":{"message":"bad"}}"#)));
    let out = fen(&s, "openai", &server, &["-p"]);
    assert_eq!(out.status.code(), Some(1));
    let messages = session_assistant_messages(&s);
    assert_eq!(messages.last().unwrap()["content"], json!([]));
    assert!(session_lines(&s)
        .iter()
        .all(|l| !l.contains(r#""content":{}"#)));
}

/// gpt-4o refusing (Chat Completions `refusal` deltas): `-p` prints the refusal as the
/// answer (exit 0, a note on stderr), and the message says `stop_reason = "refusal"`.
#[test]
fn an_openai_chat_refusal_is_the_answer_marked_as_a_refusal() {
    let refusal = joined_delta(&recorded_events("openai-chat-refusal.sse"), "refusal");
    assert!(refusal.starts_with("I'm sorry"), "{refusal}");
    let s = Sandbox::new();
    let server = FakeLlm::start(Scenario::new().then(Reply::recorded(
        "openai-chat-refusal.sse",
        Chunking::events(),
    )));
    let out = fen(&s, "openai", &server, &["-p"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{refusal}\n"));
    assert!(
        text(&out.stderr).contains("the model refused"),
        "{}",
        text(&out.stderr)
    );
    let m = session_assistant_messages(&s).pop().unwrap();
    assert_eq!(m["stop_reason"], "refusal", "{m}");
    assert_eq!(blocks_of(&m, "text")[0]["text"], refusal.as_str());
}

/// The Responses API's refusal content part (`response.refusal.delta` / `.done`), written here
/// after OpenAI's API reference (no public recording of one was found).
#[test]
fn an_openai_responses_refusal_is_the_answer_marked_as_a_refusal() {
    let events = [
        json!({"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}),
        json!({"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","status":"in_progress","content":[]}}),
        json!({"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"refusal","refusal":""}}),
        json!({"type":"response.refusal.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"I can't help"}),
        json!({"type":"response.refusal.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" with that."}),
        json!({"type":"response.refusal.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"refusal":"I can't help with that."}),
        json!({"type":"response.completed","sequence_number":6,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":10,"output_tokens":7,"total_tokens":17}}}),
    ];
    let body: String = events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect();
    let s = Sandbox::new();
    let server = FakeLlm::start(Scenario::new().then(Reply::Recorded {
        body: body.into_bytes(),
        chunking: Chunking::events(),
    }));
    let out = fen(&s, "openai-responses", &server, &["-p"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "I can't help with that.\n");
    let m = session_assistant_messages(&s).pop().unwrap();
    assert_eq!(m["stop_reason"], "refusal", "{m}");
}

/// Mistral's Magistral streams `delta.content` as a list of typed blocks (thinking, then
/// text) before it goes back to plain strings: both arrive, as thinking and as text.
#[test]
fn magistral_typed_content_blocks_are_thinking_and_text() {
    let events = recorded_events("mistral-magistral-thinking.sse");
    let (mut thinking, mut answer) = (String::new(), String::new());
    for e in &events {
        match &e["choices"][0]["delta"]["content"] {
            Value::String(t) => answer.push_str(t),
            Value::Array(parts) => {
                for p in parts {
                    match p["type"].as_str() {
                        Some("thinking") => {
                            for t in p["thinking"].as_array().unwrap() {
                                thinking.push_str(t["text"].as_str().unwrap());
                            }
                        }
                        Some("text") => answer.push_str(p["text"].as_str().unwrap()),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    assert!(thinking.len() > 100 && answer.len() > 100);
    let s = Sandbox::new();
    let server = FakeLlm::start(Scenario::new().then(Reply::recorded(
        "mistral-magistral-thinking.sse",
        Chunking::bytes(4096),
    )));
    let out = fen(&s, "openai", &server, &["-p"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{answer}\n"));
    let m = session_assistant_messages(&s).pop().unwrap();
    assert_eq!(blocks_of(&m, "thinking")[0]["thinking"], thinking.as_str());
    assert_eq!(m["content"][0]["type"], "thinking", "{m}");
}

/// `--provider P --model P/ID` sends ID; another prefix is part of the id.
#[test]
fn a_model_prefix_naming_the_chosen_provider_is_removed() {
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(Api::OpenAiChat, Turn::text("one")))
            .then(Reply::stream(Api::OpenAiChat, Turn::text("two"))),
    );
    let url = server.base_url();
    let env = [("OPENAI_API_KEY", "k")];
    for model in ["openai/gpt-4.1", "meta-llama/llama-3"] {
        let out = s.fen_env(
            &[
                "--provider",
                "openai",
                "--model",
                model,
                "--base-url",
                &url,
                "-p",
                "hi",
            ],
            &env,
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let reqs = server.requests();
    assert_eq!(reqs[0].body["model"], "gpt-4.1");
    assert_eq!(reqs[1].body["model"], "meta-llama/llama-3");
}

// ---------------------------------------------------------------------------------------------
// Tools and CLI
// ---------------------------------------------------------------------------------------------

fn tool(s: &Sandbox, name: &str, args: &str) -> (Option<i32>, Value, String) {
    let out = s.fen(&["tool", name, args]);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v, text(&out.stderr))
}

fn result_text(v: &Value) -> String {
    v["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Models send integers as `1.0`: every integer option of every built-in tool takes them;
/// `1.5` is refused naming the field.
#[test]
fn integer_options_given_as_integral_floats_are_accepted() {
    let s = Sandbox::new();
    s.write("work/a.txt", "one\ntwo\nthree\nfour\n");
    s.write("work/b.txt", "two\n");
    s.write("work/sub/c.txt", "x\n");
    let cases = [
        ("find", r#"{"pattern": "*.txt", "limit": 1.0}"#),
        (
            "grep",
            r#"{"pattern": "two", "head_limit": 2.0, "context": 1.0}"#,
        ),
        ("ls", r#"{"path": ".", "depth": 2.0}"#),
        ("read", r#"{"path": "a.txt", "offset": 2.0, "limit": 1.0}"#),
        ("bash", r#"{"command": "echo ok", "timeout": 5.0}"#),
    ];
    for (name, args) in cases {
        let (code, v, err) = tool(&s, name, args);
        assert_eq!(code, Some(0), "{name}: {err}");
        assert_eq!(v["is_error"], false, "{name} {args}: {v}");
    }
    let (_, v, _) = tool(
        &s,
        "read",
        r#"{"path": "a.txt", "offset": 2.0, "limit": 1.0}"#,
    );
    assert!(result_text(&v).contains("two") && !result_text(&v).contains("three"));
    let (_, v, _) = tool(&s, "find", r#"{"pattern": "*.txt", "limit": 1.0}"#);
    assert!(!result_text(&v).contains("b.txt") || !result_text(&v).contains("a.txt"));
    for (name, args, field) in [
        ("find", r#"{"pattern": "*.txt", "limit": 1.5}"#, "limit"),
        (
            "grep",
            r#"{"pattern": "two", "head_limit": 2.5}"#,
            "head_limit",
        ),
    ] {
        let (_, v, err) = tool(&s, name, args);
        let all = format!("{v} {err}");
        assert!(all.contains(field), "{name}: {all}");
        assert!(!all.contains("deserialize error"), "{name}: {all}");
    }
}

/// A PNG that does not decode: one readable line, no decoder debug dump.
#[test]
fn a_corrupt_png_is_reported_in_one_readable_line() {
    let s = Sandbox::new();
    // A PNG signature and a chunk header of zeros: what a file cut or zero-filled looks like.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend_from_slice(&[0u8; 64]);
    std::fs::write(s.cwd().join("broken.png"), &png).unwrap();
    let (_, v, _) = tool(&s, "read", r#"{"path": "broken.png"}"#);
    let t = result_text(&v);
    assert!(t.contains("the PNG image is corrupt: "), "{t}");
    assert!(
        !t.contains('{') && !t.contains("\\0") && !t.contains('\0'),
        "{t}"
    );
    assert_eq!(t.lines().count(), 1, "{t}");
}

const MCP_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_server.py");

fn have_python() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 is not installed (the MCP test server needs it)");
    }
    ok
}

/// A server whose name is so long that its tools' names are shortened: `fen tool` finds it by
/// the names it produces.
#[test]
fn fen_tool_finds_the_server_of_a_shortened_mcp_name() {
    if !have_python() {
        return;
    }
    let s = Sandbox::new();
    let long = "a-server-whose-name-is-much-longer-than-anyone-would-type-by-hand";
    s.write(
        "config/fen/mcp.json",
        &json!({"mcpServers": {long: {"command": "python3", "args": [MCP_SERVER]}}}).to_string(),
    );
    let list = s.fen_json(&["mcp", "list", "--json"]);
    let name = list[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .find(|n| n.len() == 64)
        .unwrap_or_else(|| panic!("no shortened name in {list}"));
    assert!(!name.contains(long), "{name}");
    let echo = list[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["mcp_name"] == "echo")
        .unwrap()["name"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, v, err) = tool(&s, &echo, r#"{"text": "hi"}"#);
    assert_eq!(code, Some(0), "{echo}: {err} {v}");
    assert_eq!(result_text(&v), "echo: hi");
}

/// `fen mcp list` in an untrusted folder whose only servers are the project's says they are
/// there and how to turn them on.
#[test]
fn mcp_list_names_the_project_servers_an_untrusted_folder_leaves_off() {
    let s = Sandbox::new();
    s.write(
        "work/.mcp.json",
        &json!({"mcpServers": {"proj": {"command": "python3", "args": [MCP_SERVER]}}}).to_string(),
    );
    let out = s.fen(&["mcp", "list"]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("no MCP servers configured"), "{stdout}");
    assert!(
        stdout.contains("proj (") && stdout.contains("--trust"),
        "{stdout}"
    );
}

// ---------------------------------------------------------------------------------------------
// Interactive
// ---------------------------------------------------------------------------------------------

fn history_files(s: &Sandbox) -> Vec<String> {
    std::fs::read_dir(s.state().join("fen/history"))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The TUI's history follows fen's working directory, not a stale `$PWD` (`env -C DIR fen`).
#[test]
fn tui_history_follows_the_working_directory_not_pwd() {
    let s = Sandbox::new();
    let elsewhere = s.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let script = crate::tui::script(&s, r#"[{"text":"a1"}]"#);
    let mut t = crate::tui::Tui::spawn(
        &s,
        &["--mock-script", &script],
        100,
        30,
        &[("PWD", elsewhere.to_str().unwrap())],
    );
    t.wait_for("Ask anything");
    t.send("remember me\r");
    t.wait("a1 and idle", |sc| {
        sc.contains("a1") && !sc.contains("working")
    });
    t.send("\x04\x04");
    t.wait_exit();
    drop(t);
    let files = history_files(&s);
    let cwd_name: String = s
        .cwd()
        .to_string_lossy()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    assert_eq!(files, [format!("{cwd_name}.jsonl")], "{files:?}");
}

/// The second Ctrl-C quits within 2 s only: one about 2.5 s later (2 whole seconds as
/// `os.time()` counts them, which the old window took for "again") arms again instead.
#[test]
fn the_ctrl_c_quit_window_is_two_seconds_on_a_monotonic_clock() {
    use std::time::{Duration, SystemTime, UNIX_EPOCH};
    let s = Sandbox::new();
    let mut t = crate::tui::start(&s, r#"[{"text":"x"}]"#);
    t.wait_for("Ask anything");
    // Press just after a wall-clock second begins, so that about 2.5 s later os.time() has
    // moved by 2, not 3: the old whole-second window would quit.
    let frac = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_millis();
    std::thread::sleep(Duration::from_millis(u64::from((1050 - frac) % 1000)));
    t.send("\x03");
    t.wait_for("press Ctrl-C again to quit");
    std::thread::sleep(Duration::from_millis(2400));
    t.send("\x03");
    // Still running (the old window quit here): what is typed now reaches the input.
    std::thread::sleep(Duration::from_millis(300));
    t.send("abc");
    t.wait("typing after the late press", |_| {
        t.rows()[29].starts_with("› abc")
    });
    // Ctrl-C clears the input, arms, and a quick second press quits.
    t.send("\x03");
    t.wait("the input cleared", |_| !t.rows()[29].starts_with("› abc"));
    t.send("\x03");
    t.wait_for("press Ctrl-C again to quit");
    t.send("\x03");
    assert_eq!(t.wait_exit(), 0);
}

/// The line REPL: Ctrl-C while a slash command waits on a model call (`api.turn.complete`)
/// cancels that command like a turn: its request is dropped, no "press Ctrl-C again to quit",
/// and the next command does not wait for the first call.
#[test]
fn ctrl_c_in_the_line_repl_cancels_a_command_waiting_on_a_model_call() {
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/ask.lua",
        r#"return function(api)
  api.register("command", { name = "ask", description = "one model call", handler = function(args)
    local m = api.turn.complete({ messages = { { role = "user", content = args, timestamp = 0 } } })
    local first = (m.content or {})[1] or {}
    return "answer> " .. tostring(m.stop_reason) .. " " .. tostring(first.text or m.error_message)
  end })
end
"#,
    );
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::Stall {
                api: Api::OpenAiChat,
                turn: Turn::text("never seen"),
                after_events: 1,
                stall_ms: 20_000,
                keepalive_ms: None,
            })
            .then(Reply::stream(Api::OpenAiChat, Turn::text("second answer"))),
    );
    let url = server.base_url();
    let mut child = s
        .command(&[
            "--presenter",
            "stdio",
            "--provider",
            "openai",
            "--base-url",
            &url,
        ])
        .env("OPENAI_API_KEY", "k")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"/ask first\n").unwrap();
    // Wait until the first request is on the wire, then press Ctrl-C.
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests().is_empty() {
        assert!(Instant::now() < deadline, "the command made no request");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    stdin.write_all(b"/ask second\n").unwrap();
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    // The stall is 20 s: finishing well before it means the first call was dropped (a hang
    // bound, not a speed claim).
    assert!(started.elapsed() < Duration::from_secs(15), "{out}\n{err}");
    assert_eq!(status.code(), Some(0), "{out}\n{err}");
    assert!(!err.contains("again to quit"), "{err}");
    assert!(out.contains("second answer"), "{out}\n{err}");
    assert!(!out.contains("never seen"), "{out}");
    // The cancelled call answers with an aborted message, as a cancelled turn does.
    assert!(out.contains("answer> aborted"), "{out}");
    assert_eq!(server.requests().len(), 2);
}

/// Every recording names its origin (repository, path, commit) in the README beside it.
#[test]
fn every_recorded_stream_names_its_origin() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/streams");
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        let row = readme
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("{name} has no row in tests/data/streams/README.md"));
        assert!(
            row.contains('/')
                && row
                    .split_whitespace()
                    .any(|w| w.len() == 40 && w.bytes().all(|b| b.is_ascii_hexdigit())),
            "{name}: the row names no repository and commit: {row}"
        );
    }
}

/// What already worked stays working: o3-mini's reasoning summaries stream as thinking, and
/// its reasoning item goes back (id and `encrypted_content`) on the next request of the
/// session (`fen -p -c`).
#[test]
fn responses_encrypted_reasoning_streams_and_goes_back_on_the_next_request() {
    let events = recorded_events("openai-responses-encrypted-reasoning.sse");
    let item = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
        .map(|e| e["item"].clone())
        .unwrap();
    let answer: String = events
        .iter()
        .filter(|e| e["type"] == "response.output_text.delta")
        .filter_map(|e| e["delta"].as_str())
        .collect();
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::recorded(
                "openai-responses-encrypted-reasoning.sse",
                Chunking::bytes(8192),
            ))
            .then(Reply::stream(Api::OpenAiResponses, Turn::text("again"))),
    );
    let out = fen(&s, "openai-responses", &server, &["-p"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{answer}\n"));
    let out = fen(&s, "openai-responses", &server, &["-p", "-c"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reqs = server.requests();
    let input = reqs[1].body["input"].as_array().unwrap();
    let back = input
        .iter()
        .find(|i| i["type"] == "reasoning")
        .unwrap_or_else(|| panic!("no reasoning item sent back: {}", reqs[1].body));
    assert_eq!(back["id"], item["id"]);
    assert_eq!(back["encrypted_content"], item["encrypted_content"]);
}

/// gpt-4o's two parallel calls with `{}` arguments: both are answered, each with its own id.
#[test]
fn parallel_tool_calls_of_a_recorded_chat_stream_are_each_answered() {
    let events = recorded_events("openai-chat-parallel-tool-calls.sse");
    let ids: Vec<String> = events
        .iter()
        .flat_map(|e| {
            e["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c["id"].as_str().map(str::to_string))
        .collect();
    assert_eq!(ids.len(), 2);
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::recorded(
                "openai-chat-parallel-tool-calls.sse",
                Chunking::bytes(100),
            ))
            .then(Reply::stream(Api::OpenAiChat, Turn::text("done"))),
    );
    let out = fen(&s, "openai", &server, &["-p"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "done\n");
    let reqs = server.requests();
    let messages = reqs[1].body["messages"].as_array().unwrap();
    let answered: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(answered, ids);
}
