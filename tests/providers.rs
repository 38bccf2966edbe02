//! The three HTTP providers end to end: `fen -p` against a local server that speaks each API's
//! real streaming wire format (tests/support/fake_llm.rs), with retries, cut streams, stalls and
//! error bodies. No test talks to a real LLM API.

use crate::common;
use crate::support;
use common::Sandbox;
use support::fake_llm::{Api, Chunking, FakeLlm, Reply, Scenario, Turn};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

struct Run {
    out: std::process::Output,
}

impl Run {
    fn stdout(&self) -> String {
        text(&self.out.stdout)
    }
    fn stderr(&self) -> String {
        text(&self.out.stderr)
    }
    fn code(&self) -> Option<i32> {
        self.out.status.code()
    }
}

fn run(
    s: &Sandbox,
    provider: &str,
    server: &FakeLlm,
    extra_env: &[(&str, &str)],
    mode_json: bool,
) -> Run {
    let url = server.base_url();
    let mut args = vec![
        "--provider",
        provider,
        "--model",
        "m",
        "--base-url",
        url.as_str(),
    ];
    if mode_json {
        args.extend(["--mode", "json"]);
    } else {
        args.push("-p");
    }
    args.push("look at notes.txt");
    let mut env = vec![
        ("OPENAI_API_KEY", "test-openai-key"),
        ("ANTHROPIC_API_KEY", "test-anthropic-key"),
    ];
    env.extend_from_slice(extra_env);
    Run {
        out: s.fen_env(&args, &env),
    }
}

fn api_of(provider: &str) -> Api {
    match provider {
        "openai" => Api::OpenAiChat,
        "openai-responses" => Api::OpenAiResponses,
        _ => Api::Anthropic,
    }
}

/// Thinking, text and a tool call whose arguments hold multibyte text split across deltas and
/// TCP writes; then a final answer.
fn two_step(api: Api) -> Scenario {
    let first = Turn::text("Reading it.")
        .with_thinking("I should read the file.", Some("SIG-abc"))
        .with_tool_call("call_1", "read", r#"{"path":"notes.txt","limit":5}"#)
        .with_delta_chars(3);
    Scenario::new()
        .then(Reply::stream_chunked(api, first, Chunking::bytes(7)))
        .then(Reply::stream(api, Turn::text("The notes say héllo 日本.")))
}

fn check_two_step(provider: &str) {
    let s = Sandbox::new();
    s.write("work/notes.txt", "héllo 日本\n");
    let server = FakeLlm::start(two_step(api_of(provider)));
    let r = run(&s, provider, &server, &[], false);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.stdout(), "The notes say héllo 日本.\n");
    assert!(
        r.stderr().contains("tool> ok read notes.txt"),
        "{}",
        r.stderr()
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let second = &reqs[1].body;
    let sent = second.to_string();
    // The tool result went back with its call id, and the file content is in it.
    assert!(
        sent.contains("call_1") && sent.contains("héllo 日本"),
        "{sent}"
    );
    match provider {
        "openai" => {
            assert_eq!(reqs[0].path, "/v1/chat/completions");
            assert_eq!(
                reqs[0].header("authorization"),
                Some("Bearer test-openai-key")
            );
            assert_eq!(reqs[0].body["stream"], true);
            assert_eq!(reqs[0].body["stream_options"]["include_usage"], true);
            assert_eq!(reqs[0].body["messages"][0]["role"], "system");
            assert!(reqs[0].body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["function"]["name"] == "read"));
            let msgs = second["messages"].as_array().unwrap();
            let tool = msgs
                .iter()
                .find(|m| m["role"] == "tool")
                .expect("tool message");
            assert_eq!(tool["tool_call_id"], "call_1");
            let asst = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
            assert_eq!(asst["tool_calls"][0]["function"]["name"], "read");
            let args: serde_json::Value = serde_json::from_str(
                asst["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .unwrap(),
            )
            .unwrap();
            assert_eq!(args["path"], "notes.txt");
        }
        "openai-responses" => {
            assert_eq!(reqs[0].path, "/v1/responses");
            assert_eq!(reqs[0].body["store"], false);
            assert!(reqs[0].body["instructions"].as_str().is_some());
            let input = second["input"].as_array().unwrap();
            assert!(input
                .iter()
                .any(|i| i["type"] == "function_call" && i["call_id"] == "call_1"));
            assert!(input
                .iter()
                .any(|i| i["type"] == "function_call_output" && i["call_id"] == "call_1"));
        }
        _ => {
            assert_eq!(reqs[0].path, "/v1/messages");
            assert_eq!(reqs[0].header("x-api-key"), Some("test-anthropic-key"));
            assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(
                reqs[0].body["system"][0]["cache_control"]["type"],
                "ephemeral"
            );
            let tools = reqs[0].body["tools"].as_array().unwrap();
            assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
            let msgs = second["messages"].as_array().unwrap();
            let asst = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
            let thinking = asst["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "thinking")
                .expect("thinking kept");
            assert_eq!(thinking["signature"], "SIG-abc");
            let last = msgs.last().unwrap();
            let result = last["content"]
                .as_array()
                .unwrap()
                .iter()
                .find(|b| b["type"] == "tool_result")
                .unwrap();
            assert_eq!(result["tool_use_id"], "call_1");
            assert_eq!(
                last["content"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
                "ephemeral"
            );
        }
    }
}

#[test]
fn openai_chat_completions_runs_a_tool_and_answers() {
    check_two_step("openai");
}

#[test]
fn openai_responses_runs_a_tool_and_answers() {
    check_two_step("openai-responses");
}

#[test]
fn anthropic_messages_runs_a_tool_and_answers() {
    check_two_step("anthropic");
}

#[test]
fn usage_and_deltas_reach_the_json_stream() {
    for provider in ["openai", "openai-responses", "anthropic"] {
        let s = Sandbox::new();
        let turn =
            Turn::text("abcdefghij")
                .with_delta_chars(2)
                .with_usage(support::fake_llm::Usage {
                    input_tokens: 100,
                    output_tokens: 20,
                    cached_tokens: 80,
                    ..Default::default()
                });
        // A pause between events: each arrives on its own and must be passed on at once.
        let server = FakeLlm::start(Scenario::new().then(Reply::stream_chunked(
            api_of(provider),
            turn,
            Chunking::events().with_delay(20),
        )));
        let r = run(&s, provider, &server, &[], true);
        assert_eq!(r.code(), Some(0), "{provider}: {}", r.stderr());
        let events: Vec<serde_json::Value> = r
            .stdout()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let deltas: Vec<&str> = events
            .iter()
            .filter(|e| e["type"] == "assistant-text-delta")
            .map(|e| e["delta"].as_str().unwrap())
            .collect();
        assert_eq!(deltas.concat(), "abcdefghij", "{provider}");
        assert!(
            deltas.len() >= 5,
            "{provider}: deltas were not streamed one by one"
        );
        let result = events.last().unwrap();
        assert_eq!(result["usage"]["output"], 20, "{provider}: {result}");
        assert_eq!(result["usage"]["cache_read"], 80, "{provider}: {result}");
    }
}

/// A long answer whose one-character deltas arrive many to a TCP read: the text and the
/// thinking come out exact (escapes, newlines, multibyte characters cut across writes), and
/// runs of deltas are passed on joined, one per read, not one per wire event.
#[test]
fn a_long_streamed_answer_arrives_exact_with_its_deltas_joined_per_read() {
    let answer: String = (0..3000)
        .map(|i| ["a", "é", "\"", "\\", "\n", "日", " ", "\t", "z"][i % 9])
        .collect();
    let thinking = "Let me think: \"quoted\" and 日本.".repeat(40);
    for provider in ["openai", "openai-responses", "anthropic"] {
        let s = Sandbox::new();
        let turn = Turn::text(&answer)
            .with_thinking(&thinking, Some("SIG"))
            .with_delta_chars(1);
        let server = FakeLlm::start(Scenario::new().then(Reply::stream_chunked(
            api_of(provider),
            turn,
            Chunking::bytes(16 * 1024),
        )));
        let r = run(&s, provider, &server, &[], true);
        assert_eq!(r.code(), Some(0), "{provider}: {}", r.stderr());
        let events: Vec<serde_json::Value> = r
            .stdout()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let deltas = |ty: &str| -> Vec<String> {
            events
                .iter()
                .filter(|e| e["type"] == ty)
                .map(|e| e["delta"].as_str().unwrap().to_owned())
                .collect()
        };
        let text = deltas("assistant-text-delta");
        assert_eq!(text.concat(), answer, "{provider}");
        assert_eq!(
            deltas("assistant-thinking-delta").concat(),
            thinking,
            "{provider}"
        );
        assert!(
            text.len() < answer.chars().count() / 10,
            "{provider}: {} text deltas for {} wire deltas: not joined",
            text.len(),
            answer.chars().count()
        );
        let result = events.last().unwrap();
        assert!(
            result["final_text"] == answer.as_str(),
            "{provider}: final text differs"
        );
    }
}

#[test]
fn a_429_with_retry_after_then_success_is_retried_with_an_event() {
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::rate_limited(Api::OpenAiChat, 0))
            .then(Reply::stream(Api::OpenAiChat, Turn::text("ok after retry"))),
    );
    let r = run(&s, "openai", &server, &[], true);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let events: Vec<serde_json::Value> = r
        .stdout()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let retry = events
        .iter()
        .find(|e| e["type"] == "provider-retry")
        .expect("provider-retry event");
    assert_eq!(retry["attempt"], 1);
    assert_eq!(retry["delay_ms"], 0);
    assert!(retry["reason"].as_str().unwrap().contains("429"));
    assert_eq!(events.last().unwrap()["final_text"], "ok after retry");
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_500_then_success_is_retried_and_the_print_presenter_says_so() {
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::anthropic_error(500, "api_error", "boom").with_header("retry-after", "0"))
            .then(Reply::stream(Api::Anthropic, Turn::text("recovered"))),
    );
    let r = run(&s, "anthropic", &server, &[], false);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.stdout(), "recovered\n");
    assert!(
        r.stderr().contains("retry> attempt 1/4 failed (HTTP 500"),
        "{}",
        r.stderr()
    );
}

#[test]
fn a_stream_cut_before_any_content_is_retried() {
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::CutAfter {
                api: Api::Anthropic,
                turn: Turn::text("partial answer"),
                bytes: 40,
                chunking: Chunking::events(),
            })
            .then(Reply::stream(Api::Anthropic, Turn::text("whole answer"))),
    );
    let r = run(
        &s,
        "anthropic",
        &server,
        &[("FEN_HTTP_IDLE_TIMEOUT_MS", "2000")],
        false,
    );
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.stdout(), "whole answer\n");
}

#[test]
fn a_stream_cut_after_content_was_delivered_is_an_error_not_a_silent_retry() {
    let s = Sandbox::new();
    let turn = Turn::text("this answer will be cut somewhere in the middle").with_delta_chars(2);
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::CutAfter {
                api: Api::OpenAiChat,
                turn,
                bytes: 900,
                chunking: Chunking::events(),
            })
            .then(Reply::stream(
                Api::OpenAiChat,
                Turn::text("should not be used"),
            )),
    );
    let r = run(
        &s,
        "openai",
        &server,
        &[("FEN_HTTP_IDLE_TIMEOUT_MS", "2000")],
        false,
    );
    assert_eq!(r.code(), Some(1), "{}", r.stdout());
    assert_eq!(server.requests().len(), 1);
    assert!(!r.stdout().contains("should not be used"));
}

#[test]
fn a_stalled_stream_times_out_on_idle_and_is_retried() {
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::Stall {
                api: Api::OpenAiChat,
                turn: Turn::text("slow"),
                after_events: 0,
                stall_ms: 5000,
                keepalive_ms: Some(100),
            })
            .then(Reply::stream(Api::OpenAiChat, Turn::text("fast"))),
    );
    let r = run(
        &s,
        "openai",
        &server,
        &[("FEN_HTTP_FIRST_BYTE_TIMEOUT_MS", "500")],
        false,
    );
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.stdout(), "fast\n");
    assert!(r.stderr().contains("retry>"), "{}", r.stderr());
}

#[test]
fn a_400_is_shown_readably_and_not_retried() {
    let s = Sandbox::new();
    let server = FakeLlm::start(Scenario::new().then(Reply::openai_error(
        400,
        "invalid_request_error",
        None,
        "max_tokens is too large",
    )));
    let r = run(&s, "openai", &server, &[], false);
    assert_eq!(r.code(), Some(1));
    let err = r.stderr();
    assert!(
        err.contains("HTTP 400") && err.contains("invalid_request_error: max_tokens is too large"),
        "{err}"
    );
    assert!(!err.contains("stack traceback"), "{err}");
    assert_eq!(server.requests().len(), 1);
}

/// `--thinking LEVEL` (or settings.json `thinking`) reaches each API in its own spelling;
/// `off` sends nothing; an unknown level is refused before anything runs.
#[test]
fn the_thinking_level_reaches_each_api_in_its_own_spelling() {
    let body_for = |provider: &str, flag: Option<&str>, settings: Option<&str>| {
        let s = Sandbox::new();
        if let Some(level) = settings {
            s.write(
                "config/fen/settings.json",
                &format!(r#"{{"thinking": "{level}"}}"#),
            );
        }
        let server =
            FakeLlm::start(Scenario::new().then(Reply::stream(api_of(provider), Turn::text("ok"))));
        let url = server.base_url();
        let mut args = vec![
            "-p",
            "hi",
            "--provider",
            provider,
            "--model",
            "m",
            "--base-url",
            &url,
        ];
        if let Some(level) = flag {
            args.extend(["--thinking", level]);
        }
        let out = s.fen_env(
            &args,
            &[("OPENAI_API_KEY", "k"), ("ANTHROPIC_API_KEY", "k")],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        server.requests()[0].body.clone()
    };
    let b = body_for("openai", Some("high"), None);
    assert_eq!(b["reasoning_effort"], "high", "{b}");
    let b = body_for("openai-responses", None, Some("low"));
    assert_eq!(b["reasoning"]["effort"], "low", "settings.json: {b}");
    let b = body_for("openai-responses", Some("medium"), Some("low"));
    assert_eq!(
        b["reasoning"]["effort"], "medium",
        "the flag beats settings: {b}"
    );
    let b = body_for("anthropic", Some("high"), None);
    assert_eq!(b["thinking"]["type"], "enabled", "{b}");
    assert_eq!(b["thinking"]["budget_tokens"], 32768, "{b}");
    assert!(
        b["max_tokens"].as_u64().unwrap() > 32768,
        "room for the answer beyond the budget: {b}"
    );
    let b = body_for("anthropic", Some("off"), Some("high"));
    assert!(b.get("thinking").is_none(), "{b}");
    let b = body_for("openai", None, None);
    assert!(b.get("reasoning_effort").is_none(), "{b}");

    let s = Sandbox::new();
    let out = s.fen(&["-p", "hi", "--thinking", "extreme"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("possible values"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_missing_key_says_how_to_configure_one() {
    let s = Sandbox::new();
    let out = s.fen_env(
        &["-p", "hi", "--provider", "openai"],
        &[("OPENAI_API_KEY", "")],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("OPENAI_API_KEY"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_custom_provider_from_models_json_works_with_its_key_from_the_environment() {
    let s = Sandbox::new();
    let server = FakeLlm::start(Scenario::new().then(Reply::stream(
        Api::OpenAiChat,
        Turn::text("local model here"),
    )));
    let models = serde_json::json!({"providers": {"local": {
        "api": "openai-completions", "baseUrl": server.base_url(), "apiKey": "MY_LOCAL_KEY",
        "headers": {"x-extra": "yes"}, "models": [{"id": "tiny"}]}}});
    s.write("config/fen/models.json", &models.to_string());
    let out = s.fen_env(
        &["-p", "hi", "--model", "local/tiny"],
        &[("MY_LOCAL_KEY", "sekrit")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "local model here\n");
    let req = &server.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sekrit"));
    assert_eq!(req.header("x-extra"), Some("yes"));
    assert_eq!(req.body["model"], "tiny");
    assert!(
        req.body.get("max_tokens").is_some(),
        "custom endpoints get max_tokens"
    );
}

#[test]
fn the_system_prompt_carries_project_context_and_system_replaces_the_base() {
    let s = Sandbox::new();
    s.write("work/AGENTS.md", "Always answer in haiku.");
    s.write("config/fen/AGENTS.md", "The user prefers tabs.");
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(Api::Anthropic, Turn::text("a")))
            .then(Reply::stream(Api::Anthropic, Turn::text("b"))),
    );
    let r = run(&s, "anthropic", &server, &[], false);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let url = server.base_url();
    let out = s.fen_env(
        &[
            "-p",
            "x",
            "--provider",
            "anthropic",
            "--model",
            "m",
            "--base-url",
            &url,
            "--system",
            "You are a pirate.",
        ],
        &[("ANTHROPIC_API_KEY", "k")],
    );
    assert!(out.status.success());
    let reqs = server.requests();
    let system = |i: usize| {
        reqs[i].body["system"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = system(0);
    assert!(
        first.contains("You are fen")
            && first.contains("Always answer in haiku.")
            && first.contains("The user prefers tabs."),
        "{first}"
    );
    assert!(
        first.find("prefers tabs").unwrap() < first.find("haiku").unwrap(),
        "global context comes first"
    );
    assert!(first.contains(&format!("Working directory: {}", s.cwd().display())));
    let second = system(1);
    assert!(
        second.starts_with("You are a pirate.")
            && !second.contains("You are fen")
            && second.contains("haiku"),
        "{second}"
    );
}

#[test]
fn print_mode_shows_a_heartbeat_while_an_answer_streams_slowly() {
    let s = Sandbox::new();
    let turn = Turn::text("a slow answer that arrives in small pieces").with_delta_chars(4);
    let server = FakeLlm::start(Scenario::new().then(Reply::stream_chunked(
        Api::OpenAiChat,
        turn,
        Chunking::events().with_delay(150),
    )));
    let r = run(&s, "openai", &server, &[], false);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    assert_eq!(r.stdout(), "a slow answer that arrives in small pieces\n");
    assert!(r.stderr().contains("... streaming ("), "{}", r.stderr());
}

/// Issue 11.5: truncated JSON arguments from the model were reported as a missing property,
/// and the progress row printed `$ nil`.
#[test]
fn truncated_json_arguments_are_reported_as_a_missing_property() {
    for provider in ["openai", "anthropic"] {
        let s = Sandbox::new();
        let api = api_of(provider);
        let server = FakeLlm::start(
            Scenario::new()
                .then(Reply::stream(
                    api,
                    Turn::text("").with_tool_call("call_1", "bash", r#"{"command": "echo hi"#),
                ))
                .then(Reply::stream(api, Turn::text("sorry"))),
        );
        let r = run(&s, provider, &server, &[], false);
        assert_eq!(r.code(), Some(0), "{provider}: {}", r.stderr());
        let reqs = server.requests();
        assert_eq!(reqs.len(), 2, "{provider}");
        let body = &reqs[1].raw_body;
        assert!(body.contains("are not valid JSON"), "{provider}: {body}");
        assert!(
            body.contains("echo hi"),
            "{provider}: the first bytes are quoted: {body}"
        );
        assert!(
            !body.contains("missing property") && !body.contains("is a required property"),
            "{provider}: {body}"
        );
        assert!(!body.contains("serialize error"), "{provider}: {body}");
        let err = r.stderr();
        assert!(!err.contains("$ nil"), "{provider}: {err}");
        assert!(err.contains("not valid JSON"), "{provider}: {err}");
    }
}

/// A valid 1x1 RGBA PNG, and its base64.
fn pixel_png() -> (Vec<u8>, String) {
    use base64::Engine as _;
    let img = image::RgbaImage::from_pixel(1, 1, image::Rgba([255, 0, 0, 255]));
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    let bytes = out.into_inner();
    let b64 = base64::engine::general_purpose::STANDARD.encode(&bytes);
    (bytes, b64)
}

/// Issue 16, images in read: reading a 1x1 PNG (named without an image extension: detected by
/// content) puts an image part in each API's request body, in that API's wire format.
#[test]
fn a_1x1_png_read_reaches_each_api_as_an_image() {
    let (png, b64) = pixel_png();
    for provider in ["openai", "openai-responses", "anthropic"] {
        let s = Sandbox::new();
        std::fs::write(s.cwd().join("pixel.dat"), &png).unwrap();
        let api = api_of(provider);
        let server = FakeLlm::start(
            Scenario::new()
                .then(Reply::stream(
                    api,
                    Turn::text("").with_tool_call("call_1", "read", r#"{"path":"pixel.dat"}"#),
                ))
                .then(Reply::stream(api, Turn::text("a red pixel"))),
        );
        let r = run(&s, provider, &server, &[], false);
        assert_eq!(r.code(), Some(0), "{provider}: {}", r.stderr());
        assert_eq!(r.stdout(), "a red pixel\n");
        let body = &server.requests()[1].body;
        let url = format!("data:image/png;base64,{b64}");
        match provider {
            "anthropic" => {
                let msgs = body["messages"].as_array().unwrap();
                let result = msgs
                    .iter()
                    .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
                    .find(|b| b["type"] == "tool_result")
                    .expect("a tool_result block");
                let parts = result["content"].as_array().expect("content blocks");
                assert!(parts[0]["text"].as_str().unwrap().contains("PNG, 1x1"));
                assert_eq!(
                    parts[1],
                    serde_json::json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64}})
                );
            }
            "openai" => {
                let msgs = body["messages"].as_array().unwrap();
                let tool = msgs.iter().position(|m| m["role"] == "tool").unwrap();
                assert!(msgs[tool]["content"].as_str().unwrap().contains("PNG, 1x1"));
                let user = &msgs[tool + 1];
                assert_eq!(user["role"], "user");
                assert_eq!(user["content"][1]["type"], "image_url");
                assert_eq!(user["content"][1]["image_url"]["url"], url);
            }
            _ => {
                let items = body["input"].as_array().unwrap();
                let out = items
                    .iter()
                    .position(|m| m["type"] == "function_call_output")
                    .unwrap();
                let user = &items[out + 1];
                assert_eq!(user["role"], "user");
                assert_eq!(user["content"][1]["type"], "input_image");
                assert_eq!(user["content"][1]["image_url"], url);
            }
        }
    }
}

/// Issue 16, images in read: a models.json model declared with `"input": ["text"]` gets a text
/// note instead of the image.
#[test]
fn a_text_only_model_gets_a_note_instead_of_the_image() {
    let (png, b64) = pixel_png();
    let s = Sandbox::new();
    std::fs::write(s.cwd().join("pixel.png"), &png).unwrap();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(
                Api::OpenAiChat,
                Turn::text("").with_tool_call("call_1", "read", r#"{"path":"pixel.png"}"#),
            ))
            .then(Reply::stream(Api::OpenAiChat, Turn::text("no eyes"))),
    );
    let models = serde_json::json!({"providers": {"local": {
        "api": "openai-completions", "baseUrl": server.base_url(),
        "models": [{"id": "blind", "input": ["text"]}]}}});
    s.write("config/fen/models.json", &models.to_string());
    let out = s.fen(&["-p", "look", "--model", "local/blind"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let body = &server.requests()[1].raw_body;
    assert!(
        !body.contains(&b64) && !body.contains("image_url"),
        "{body}"
    );
    assert!(body.contains("does not take image input"), "{body}");
}

/// Issue 11.16: the `-p` heartbeat said "(N chars)" but counted bytes.
#[test]
fn the_heartbeat_says_chars_but_counts_bytes() {
    let s = Sandbox::new();
    let answer = "é".repeat(100);
    let turn = Turn::text(&answer).with_delta_chars(4);
    let server = FakeLlm::start(Scenario::new().then(Reply::stream_chunked(
        Api::OpenAiChat,
        turn,
        Chunking::events().with_delay(150),
    )));
    let r = run(&s, "openai", &server, &[], false);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let err = r.stderr();
    let counts: Vec<usize> = err
        .lines()
        .filter_map(|l| l.strip_prefix("... streaming ("))
        .filter_map(|l| l.strip_suffix(" chars)"))
        .filter_map(|n| n.parse().ok())
        .collect();
    assert!(!counts.is_empty(), "{err}");
    assert!(counts.iter().all(|&n| n <= 100), "{counts:?}");
}

/// Issue 11.16: `-p` never said how many tokens the turn used; it does once, at the end, summed
/// over the turn's model calls.
#[test]
fn print_mode_never_says_how_many_tokens_were_used() {
    use support::fake_llm::Usage;
    let s = Sandbox::new();
    s.write("work/notes.txt", "n\n");
    let usage = |i, o, c| Usage {
        input_tokens: i,
        output_tokens: o,
        cached_tokens: c,
        ..Default::default()
    };
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(
                Api::Anthropic,
                Turn::text("")
                    .with_tool_call("call_1", "read", r#"{"path":"notes.txt"}"#)
                    .with_usage(usage(100, 10, 50)),
            ))
            .then(Reply::stream(
                Api::Anthropic,
                Turn::text("done").with_usage(usage(200, 20, 150)),
            )),
    );
    let r = run(&s, "anthropic", &server, &[], false);
    assert_eq!(r.code(), Some(0), "{}", r.stderr());
    let err = r.stderr();
    assert_eq!(err.matches("tokens> ").count(), 1, "{err}");
    assert!(
        err.contains("tokens> input 300, output 30, cache read 200, cache write 0"),
        "{err}"
    );
}
