//! Self-tests of the fake LLM server, using a raw TCP client (no HTTP crate) so the exact bytes
//! on the wire are what gets checked: HTTP chunk framing, SSE framing, event order, fields.

use crate::support;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use support::fake_llm::{
    split_arguments, Api, Chunking, FakeLlm, Reply, Scenario, StopReason, Turn, Usage,
    NO_MORE_REPLIES,
};

// ---------------------------------------------------------------------------------------------
// Raw HTTP client
// ---------------------------------------------------------------------------------------------

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    /// Payload of each HTTP chunk, as framed by the server.
    chunks: Vec<Vec<u8>>,
    body: Vec<u8>,
    /// The terminating zero-length chunk arrived.
    complete: bool,
    elapsed: Duration,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("body is valid UTF-8 once reassembled")
    }
}

fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
    body: &str,
) -> Response {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect to fake-llm");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set timeout");
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in extra {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).expect("send request");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)
        .expect("read response (within 10 s)");
    parse_response(&raw, started.elapsed())
}

fn post(addr: SocketAddr, path: &str, body: &Value) -> Response {
    send(addr, "POST", path, &[], &body.to_string())
}

fn parse_response(mut raw: &[u8], elapsed: Duration) -> Response {
    // Skip interim responses such as `100 Continue`.
    while raw.starts_with(b"HTTP/1.1 1") {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("interim response has a head");
        raw = &raw[end + 4..];
    }
    let head_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response has a head");
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[head_end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let (chunks, complete) = if chunked {
        dechunk(rest)
    } else {
        (vec![rest.to_vec()], true)
    };
    if !chunked {
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .expect("non-chunked responses carry content-length");
        assert_eq!(len, rest.len(), "content-length matches body");
    }
    Response {
        status,
        body: chunks.concat(),
        headers,
        chunks,
        complete,
        elapsed,
    }
}

/// Decodes chunked transfer encoding; stops (incomplete) at truncated input.
fn dechunk(mut rest: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let mut chunks = Vec::new();
    loop {
        let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (chunks, false);
        };
        let size = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).expect("hex"), 16)
            .expect("chunk size is hex");
        rest = &rest[eol + 2..];
        if size == 0 {
            assert_eq!(rest, b"\r\n", "terminating chunk is followed by CRLF only");
            return (chunks, true);
        }
        if rest.len() < size + 2 {
            chunks.push(rest[..rest.len().min(size)].to_vec());
            return (chunks, false);
        }
        assert_eq!(&rest[size..size + 2], b"\r\n", "chunk data ends with CRLF");
        chunks.push(rest[..size].to_vec());
        rest = &rest[size + 2..];
    }
}

#[derive(Debug)]
struct SseEvent {
    event: Option<String>,
    data: String,
}

impl SseEvent {
    fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("SSE data is JSON")
    }
}

/// Parses SSE text into events and counts comment lines.
fn parse_sse(text: &str) -> (Vec<SseEvent>, usize) {
    let mut events = Vec::new();
    let mut comments = 0;
    for block in text.split("\n\n").filter(|b| !b.is_empty()) {
        let mut event = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if line.starts_with(':') {
                comments += 1;
            } else if let Some(v) = line.strip_prefix("event: ") {
                event = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("data: ") {
                data.push(v);
            } else {
                panic!("unexpected SSE line {line:?}");
            }
        }
        if !data.is_empty() {
            events.push(SseEvent {
                event,
                data: data.join("\n"),
            });
        }
    }
    assert!(
        text.is_empty() || text.ends_with("\n\n"),
        "stream ends on an event boundary"
    );
    (events, comments)
}

// ---------------------------------------------------------------------------------------------
// Fixtures and reassembly
// ---------------------------------------------------------------------------------------------

const ARGS_ASCII: &str = r#"{"path":"src/main.rs","line":42}"#;
const ARGS_MULTIBYTE: &str = r#"{"text":"café 日本語 ok","emoji":"🦀"}"#;

fn full_turn() -> Turn {
    Turn::text("Hello wörld, I'll read two files.")
        .with_thinking("Let me think… about 日本 first.", Some("sig-ABC123=="))
        .with_tool_call("call_1", "read", ARGS_ASCII)
        .with_tool_call("call_2", "write", ARGS_MULTIBYTE)
        .with_usage(Usage {
            input_tokens: 120,
            output_tokens: 45,
            cached_tokens: 100,
            cache_creation_tokens: 7,
            reasoning_tokens: 12,
        })
}

#[derive(Debug, Default, PartialEq)]
struct Reassembled {
    thinking: String,
    signature: String,
    text: String,
    /// (id, name, arguments)
    tools: Vec<(String, String, String)>,
    stop: String,
    /// Deltas received per tool call.
    arg_deltas: Vec<usize>,
}

fn reassemble_chat(events: &[SseEvent]) -> (Reassembled, Option<Value>) {
    let mut r = Reassembled::default();
    let mut usage = None;
    let last = events.last().expect("events");
    assert_eq!(last.data, "[DONE]", "chat stream ends with [DONE]");
    for ev in &events[..events.len() - 1] {
        assert!(ev.event.is_none(), "chat completions uses data-only events");
        let v = ev.json();
        assert_eq!(v["object"], "chat.completion.chunk");
        let choices = v["choices"].as_array().expect("choices array");
        if choices.is_empty() {
            usage = Some(v["usage"].clone());
            continue;
        }
        let c = &choices[0];
        let d = &c["delta"];
        if let Some(s) = d["reasoning_content"].as_str() {
            r.thinking.push_str(s);
        }
        if let Some(s) = d["content"].as_str() {
            r.text.push_str(s);
        }
        for tc in d["tool_calls"].as_array().into_iter().flatten() {
            let i = tc["index"].as_u64().expect("index") as usize;
            if i == r.tools.len() {
                assert_eq!(tc["type"], "function");
                r.tools.push((
                    tc["id"].as_str().expect("id on first fragment").into(),
                    tc["function"]["name"].as_str().expect("name").into(),
                    String::new(),
                ));
                r.arg_deltas.push(0);
            }
            let frag = tc["function"]["arguments"].as_str().expect("arguments");
            if !frag.is_empty() {
                r.arg_deltas[i] += 1;
            }
            r.tools[i].2.push_str(frag);
        }
        if let Some(f) = c["finish_reason"].as_str() {
            r.stop = f.into();
        }
    }
    (r, usage)
}

fn reassemble_responses(events: &[SseEvent]) -> (Reassembled, Value) {
    let mut r = Reassembled::default();
    let mut completed = Value::Null;
    for (i, ev) in events.iter().enumerate() {
        let v = ev.json();
        let name = ev.event.as_deref().expect("responses events are named");
        assert_eq!(v["type"], name, "type matches event name");
        assert_eq!(
            v["sequence_number"], i as u64,
            "sequence numbers count from 0"
        );
        match name {
            "response.reasoning_summary_text.delta" => {
                r.thinking.push_str(v["delta"].as_str().expect("delta"))
            }
            "response.output_text.delta" => r.text.push_str(v["delta"].as_str().expect("delta")),
            "response.output_item.added" if v["item"]["type"] == "function_call" => {
                r.tools.push((
                    v["item"]["call_id"].as_str().expect("call_id").into(),
                    v["item"]["name"].as_str().expect("name").into(),
                    String::new(),
                ));
                r.arg_deltas.push(0);
            }
            "response.function_call_arguments.delta" => {
                let t = r.tools.last_mut().expect("delta after item added");
                t.2.push_str(v["delta"].as_str().expect("delta"));
                *r.arg_deltas.last_mut().expect("count") += 1;
            }
            "response.function_call_arguments.done" => {
                let t = r.tools.last().expect("tool");
                assert_eq!(
                    v["arguments"],
                    t.2.as_str(),
                    "done carries the full arguments"
                );
            }
            "response.output_item.done" if v["item"]["type"] == "reasoning" => {
                r.signature = v["item"]["encrypted_content"].as_str().unwrap_or("").into();
            }
            "response.completed" | "response.incomplete" => {
                r.stop = v["response"]["status"].as_str().expect("status").into();
                completed = v["response"].clone();
            }
            _ => {}
        }
    }
    (r, completed)
}

fn reassemble_anthropic(events: &[SseEvent]) -> (Reassembled, Value, Value) {
    let mut r = Reassembled::default();
    let mut start_usage = Value::Null;
    let mut delta_usage = Value::Null;
    let mut block_types = Vec::new();
    for ev in events {
        let v = ev.json();
        let name = ev.event.as_deref().expect("anthropic events are named");
        assert_eq!(v["type"], name, "type matches event name");
        match name {
            "message_start" => start_usage = v["message"]["usage"].clone(),
            "content_block_start" => {
                let b = &v["content_block"];
                assert_eq!(
                    v["index"],
                    block_types.len() as u64,
                    "blocks are indexed in order"
                );
                block_types.push(b["type"].as_str().expect("type").to_string());
                if b["type"] == "tool_use" {
                    assert_eq!(b["input"], serde_json::json!({}));
                    r.tools.push((
                        b["id"].as_str().expect("id").into(),
                        b["name"].as_str().expect("name").into(),
                        String::new(),
                    ));
                    r.arg_deltas.push(0);
                }
            }
            "content_block_delta" => {
                let d = &v["delta"];
                let idx = v["index"].as_u64().expect("index") as usize;
                assert_eq!(idx, block_types.len() - 1, "delta for the open block");
                match d["type"].as_str().expect("delta type") {
                    "thinking_delta" => r.thinking.push_str(d["thinking"].as_str().expect("t")),
                    "signature_delta" => r.signature.push_str(d["signature"].as_str().expect("s")),
                    "text_delta" => r.text.push_str(d["text"].as_str().expect("text")),
                    "input_json_delta" => {
                        let frag = d["partial_json"].as_str().expect("partial_json");
                        let t = r.tools.last_mut().expect("tool block open");
                        t.2.push_str(frag);
                        if !frag.is_empty() {
                            *r.arg_deltas.last_mut().expect("count") += 1;
                        }
                    }
                    other => panic!("unknown delta type {other}"),
                }
            }
            "message_delta" => {
                r.stop = v["delta"]["stop_reason"].as_str().expect("stop").into();
                delta_usage = v["usage"].clone();
            }
            _ => {}
        }
    }
    (r, start_usage, delta_usage)
}

fn expected(stop: &str, with_signature: bool) -> Reassembled {
    let t = full_turn();
    Reassembled {
        thinking: t.thinking.clone().unwrap_or_default(),
        signature: if with_signature {
            t.signature.clone().unwrap_or_default()
        } else {
            String::new()
        },
        text: t.text.clone().unwrap_or_default(),
        tools: t
            .tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.name.clone(), c.arguments_json.clone()))
            .collect(),
        stop: stop.into(),
        arg_deltas: Vec::new(),
    }
}

/// Collapses runs of identical names: ["a","b","b","c"] -> ["a","b*","c"].
fn shape(names: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        match out.last_mut() {
            Some(last) if last.trim_end_matches('*') == n => {
                if !last.ends_with('*') {
                    last.push('*');
                }
            }
            _ => out.push(n.clone()),
        }
    }
    out
}

fn assert_some_chunk_splits_a_char(resp: &Response) {
    assert!(
        resp.chunks.len() > 10,
        "byte chunking produced many HTTP chunks"
    );
    assert!(
        resp.chunks.iter().any(|c| std::str::from_utf8(c).is_err()),
        "some HTTP chunk ends or starts inside a multi-byte character"
    );
    assert!(
        resp.chunks
            .iter()
            .any(|c| c.ends_with(b"\n") && !c.ends_with(b"\n\n")),
        "some HTTP chunk ends between the two newlines of an event terminator"
    );
    assert!(
        resp.chunks.iter().any(|c| !c.ends_with(b"\n\n")),
        "some HTTP chunk ends inside an event"
    );
}

// ---------------------------------------------------------------------------------------------
// Per-API full turns
// ---------------------------------------------------------------------------------------------

#[test]
fn openai_chat_full_turn_reassembles() {
    let server = FakeLlm::start(Scenario::new().then(Reply::stream_chunked(
        Api::OpenAiChat,
        full_turn(),
        Chunking::bytes(7),
    )));
    let body = serde_json::json!({
        "model": "gpt-test", "stream": true, "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hi"}]
    });
    let resp = post(server.addr, "/v1/chat/completions", &body);
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(resp.header("transfer-encoding"), Some("chunked"));
    assert!(resp.complete);
    assert_some_chunk_splits_a_char(&resp);

    let (events, _) = parse_sse(&resp.text());
    let first = events[0].json();
    assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(first["model"], "gpt-test", "model echoes the request");
    let (r, usage) = reassemble_chat(&events);
    let arg_deltas = r.arg_deltas.clone();
    assert_eq!(
        Reassembled {
            arg_deltas: vec![],
            ..r
        },
        expected("tool_calls", false)
    );
    assert!(
        arg_deltas.iter().all(|&n| n >= 3),
        "arguments come in several deltas: {arg_deltas:?}"
    );
    let usage = usage.expect("usage chunk with empty choices");
    assert_eq!(usage["prompt_tokens"], 120);
    assert_eq!(usage["completion_tokens"], 45);
    assert_eq!(usage["total_tokens"], 165);
    assert_eq!(usage["prompt_tokens_details"]["cached_tokens"], 100);
    // Ordering: usage chunk comes right before [DONE], after the finish_reason chunk.
    let n = events.len();
    assert_eq!(events[n - 2].json()["choices"], serde_json::json!([]));
    assert_eq!(
        events[n - 3].json()["choices"][0]["finish_reason"],
        "tool_calls"
    );
}

#[test]
fn openai_chat_without_include_usage_sends_no_usage_chunk() {
    let server =
        FakeLlm::start(Scenario::new().then(Reply::stream(Api::OpenAiChat, Turn::text("hi"))));
    let resp = post(
        server.addr,
        "/v1/chat/completions",
        &serde_json::json!({"model": "m", "stream": true}),
    );
    let (events, _) = parse_sse(&resp.text());
    let (r, usage) = reassemble_chat(&events);
    assert_eq!(r.text, "hi");
    assert_eq!(r.stop, "stop");
    assert!(usage.is_none());
    assert!(
        events[0].json().get("usage").is_none(),
        "no usage:null field either"
    );
}

#[test]
fn openai_responses_full_turn_reassembles() {
    let server = FakeLlm::start(Scenario::new().then(Reply::stream_chunked(
        Api::OpenAiResponses,
        full_turn(),
        Chunking::bytes(5),
    )));
    let resp = post(
        server.addr,
        "/v1/responses",
        &serde_json::json!({"model": "gpt-5", "stream": true}),
    );
    assert_eq!(resp.status, 200);
    assert!(resp.complete);
    assert_some_chunk_splits_a_char(&resp);
    let (events, _) = parse_sse(&resp.text());
    let names: Vec<String> = events
        .iter()
        .map(|e| e.event.clone().expect("named"))
        .collect();
    let want = [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta*",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta*",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta*",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta*",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ];
    assert_eq!(shape(&names), want);
    let (r, completed) = reassemble_responses(&events);
    let arg_deltas = r.arg_deltas.clone();
    assert_eq!(
        Reassembled {
            arg_deltas: vec![],
            ..r
        },
        expected("completed", true)
    );
    assert!(arg_deltas.iter().all(|&n| n >= 3));
    assert_eq!(completed["model"], "gpt-5");
    assert_eq!(completed["output"].as_array().map(Vec::len), Some(4));
    let u = &completed["usage"];
    assert_eq!(u["input_tokens"], 120);
    assert_eq!(u["output_tokens"], 45);
    assert_eq!(u["total_tokens"], 165);
    assert_eq!(u["input_tokens_details"]["cached_tokens"], 100);
    assert_eq!(u["output_tokens_details"]["reasoning_tokens"], 12);
}

#[test]
fn anthropic_full_turn_reassembles() {
    let server = FakeLlm::start(Scenario::new().then(Reply::stream_chunked(
        Api::Anthropic,
        full_turn(),
        Chunking::bytes(3),
    )));
    let resp = post(
        server.addr,
        "/v1/messages",
        &serde_json::json!({"model": "claude-x", "stream": true}),
    );
    assert_eq!(resp.status, 200);
    assert!(resp.complete);
    assert_some_chunk_splits_a_char(&resp);
    let (events, _) = parse_sse(&resp.text());
    let names: Vec<String> = events
        .iter()
        .map(|e| {
            let v = e.json();
            match v["type"].as_str() {
                Some("content_block_start") => {
                    format!(
                        "start:{}",
                        v["content_block"]["type"].as_str().unwrap_or("?")
                    )
                }
                Some("content_block_delta") => {
                    format!("delta:{}", v["delta"]["type"].as_str().unwrap_or("?"))
                }
                _ => e.event.clone().expect("named"),
            }
        })
        .collect();
    let want = [
        "message_start",
        "start:thinking",
        "ping",
        "delta:thinking_delta*",
        "delta:signature_delta",
        "content_block_stop",
        "start:text",
        "delta:text_delta*",
        "content_block_stop",
        "start:tool_use",
        "delta:input_json_delta*",
        "content_block_stop",
        "start:tool_use",
        "delta:input_json_delta*",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ];
    assert_eq!(shape(&names), want);
    let (r, start_usage, delta_usage) = reassemble_anthropic(&events);
    let arg_deltas = r.arg_deltas.clone();
    assert_eq!(
        Reassembled {
            arg_deltas: vec![],
            ..r
        },
        expected("tool_use", true)
    );
    assert!(arg_deltas.iter().all(|&n| n >= 3));
    assert_eq!(start_usage["input_tokens"], 120);
    assert_eq!(start_usage["cache_read_input_tokens"], 100);
    assert_eq!(start_usage["cache_creation_input_tokens"], 7);
    assert_eq!(delta_usage["output_tokens"], 45);
    assert_eq!(events[0].json()["message"]["model"], "claude-x");
}

#[test]
fn stop_reasons_map_per_api() {
    let turn = Turn::text("cut").with_stop(StopReason::MaxTokens);
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(Api::OpenAiChat, turn.clone()))
            .then(Reply::stream(Api::OpenAiResponses, turn.clone()))
            .then(Reply::stream(Api::Anthropic, turn))
            .then(Reply::stream(Api::Anthropic, Turn::text("done"))),
    );
    let body = serde_json::json!({"model": "m"});
    let (ev, _) = parse_sse(&post(server.addr, "/v1/chat/completions", &body).text());
    assert_eq!(reassemble_chat(&ev).0.stop, "length");
    let (ev, _) = parse_sse(&post(server.addr, "/v1/responses", &body).text());
    let (r, resp) = reassemble_responses(&ev);
    assert_eq!(r.stop, "incomplete");
    assert_eq!(resp["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(
        ev.last().and_then(|e| e.event.clone()).as_deref(),
        Some("response.incomplete")
    );
    let (ev, _) = parse_sse(&post(server.addr, "/v1/messages", &body).text());
    assert_eq!(reassemble_anthropic(&ev).0.stop, "max_tokens");
    let (ev, _) = parse_sse(&post(server.addr, "/v1/messages", &body).text());
    assert_eq!(reassemble_anthropic(&ev).0.stop, "end_turn");
}

#[test]
fn argument_splits_land_inside_multibyte_runs_and_escapes() {
    let pieces = split_arguments(r#"{"k":"日本"}"#, 100);
    assert_eq!(pieces.concat(), r#"{"k":"日本"}"#);
    assert!(
        pieces.iter().any(|p| p.ends_with('日')),
        "split between 日 and 本: {pieces:?}"
    );
    let pieces = split_arguments(r#"{"k":"é"}"#, 100);
    assert!(
        pieces.iter().any(|p| p.starts_with('é')),
        "split right before é: {pieces:?}"
    );
    let pieces = split_arguments(r#"{"k":"\u00e9"}"#, 100);
    assert!(
        pieces.iter().any(|p| p.ends_with("\\u0")),
        "split inside \\u escape: {pieces:?}"
    );
    let pieces = split_arguments("{}", 1);
    assert_eq!(pieces, ["{", "}"]);
    assert!(split_arguments("", 4).is_empty());
}

// ---------------------------------------------------------------------------------------------
// Failure replies
// ---------------------------------------------------------------------------------------------

#[test]
fn status_replies_carry_provider_error_shapes_and_headers() {
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::rate_limited(Api::OpenAiChat, 0))
            .then(Reply::overloaded())
            .then(Reply::anthropic_error(
                400,
                "invalid_request_error",
                "bad field",
            ))
            .then(Reply::status(500, "boom").with_header("x-extra", "1")),
    );
    let body = serde_json::json!({});
    let r = post(server.addr, "/v1/chat/completions", &body);
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("0"));
    assert_eq!(r.header("retry-after-ms"), Some("0"));
    let v: Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(v["error"]["code"], "rate_limit_exceeded");
    assert!(v["error"]["message"].is_string() && v["error"].get("param").is_some());

    let r = post(server.addr, "/v1/messages", &body);
    assert_eq!(r.status, 529);
    let v: Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");

    let r = post(server.addr, "/v1/messages", &body);
    assert_eq!(r.status, 400);
    let v: Value = serde_json::from_slice(&r.body).expect("json");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["message"], "bad field");

    let r = post(server.addr, "/v1/anything", &body);
    assert_eq!(r.status, 500);
    assert_eq!(r.header("x-extra"), Some("1"));
    assert_eq!(r.body, b"boom");
}

#[test]
fn exhausted_queue_replies_500_saying_so() {
    let server = FakeLlm::start(Scenario::new().then(Reply::status(204, "")));
    assert_eq!(
        post(server.addr, "/v1/x", &serde_json::json!({})).status,
        204
    );
    let r = post(server.addr, "/v1/x", &serde_json::json!({}));
    assert_eq!(r.status, 500);
    assert_eq!(String::from_utf8_lossy(&r.body), NO_MORE_REPLIES);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn cut_after_drops_the_connection_mid_stream() {
    let full: usize = support::fake_llm::render_events(Api::Anthropic, &full_turn())
        .iter()
        .map(Vec::len)
        .sum();
    let server = FakeLlm::start(Scenario::new().then(Reply::CutAfter {
        api: Api::Anthropic,
        turn: full_turn(),
        bytes: 301,
        chunking: Chunking::bytes(50),
    }));
    let r = post(server.addr, "/v1/messages", &serde_json::json!({}));
    assert_eq!(r.status, 200);
    assert!(!r.complete, "no terminating chunk after a cut");
    assert_eq!(r.body.len(), 301);
    assert!(full > 301);
    let text = String::from_utf8_lossy(&r.body);
    assert!(text.starts_with("event: message_start"));
    assert!(!text.contains("message_stop"));
}

#[test]
fn stall_goes_silent_then_finishes_with_keepalives() {
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::Stall {
                api: Api::OpenAiChat,
                turn: Turn::text("abcdefgh"),
                after_events: 2,
                stall_ms: 400,
                keepalive_ms: Some(100),
            })
            .then(Reply::Stall {
                api: Api::Anthropic,
                turn: Turn::text("abcdefgh"),
                after_events: 3,
                stall_ms: 300,
                keepalive_ms: Some(100),
            })
            .then(Reply::Stall {
                api: Api::OpenAiResponses,
                turn: Turn::text("abcdefgh"),
                after_events: 1,
                stall_ms: 300,
                keepalive_ms: None,
            }),
    );
    let r = post(server.addr, "/v1/chat/completions", &serde_json::json!({}));
    assert!(
        r.elapsed >= Duration::from_millis(350),
        "stalled: {:?}",
        r.elapsed
    );
    assert!(r.elapsed < Duration::from_secs(10));
    let (events, comments) = parse_sse(&r.text());
    assert_eq!(
        comments, 3,
        "keep-alive comments every 100 ms of a 400 ms stall"
    );
    assert_eq!(reassemble_chat(&events).0.text, "abcdefgh");
    let text = r.text();
    let stall_at = text.find(": keep-alive").expect("keep-alive present");
    assert_eq!(
        text[..stall_at].matches("data: ").count(),
        2,
        "stall after two events"
    );

    let r = post(server.addr, "/v1/messages", &serde_json::json!({}));
    assert!(r.elapsed >= Duration::from_millis(250));
    let (events, _) = parse_sse(&r.text());
    let pings = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("ping"))
        .count();
    assert_eq!(pings, 1 + 2, "the usual ping plus two keep-alive pings");
    assert_eq!(reassemble_anthropic(&events).0.text, "abcdefgh");

    let r = post(server.addr, "/v1/responses", &serde_json::json!({}));
    assert!(r.elapsed >= Duration::from_millis(250));
    let (events, comments) = parse_sse(&r.text());
    assert_eq!(comments, 0);
    assert_eq!(reassemble_responses(&events).0.text, "abcdefgh");
}

#[test]
fn stream_error_events_have_the_provider_shape() {
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::StreamError {
                api: Api::Anthropic,
                turn: Turn::text("partial answer"),
                after_events: 4,
                error_type: "overloaded_error".into(),
                message: "Overloaded".into(),
            })
            .then(Reply::StreamError {
                api: Api::OpenAiChat,
                turn: Turn::text("partial"),
                after_events: 2,
                error_type: "server_error".into(),
                message: "oops".into(),
            }),
    );
    let r = post(server.addr, "/v1/messages", &serde_json::json!({}));
    assert!(r.complete);
    let (events, _) = parse_sse(&r.text());
    assert_eq!(events.len(), 5);
    let last = events.last().expect("error event");
    assert_eq!(last.event.as_deref(), Some("error"));
    let v = last.json();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "overloaded_error");
    assert_eq!(v["error"]["message"], "Overloaded");

    let r = post(server.addr, "/v1/chat/completions", &serde_json::json!({}));
    let (events, _) = parse_sse(&r.text());
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].json()["error"]["type"], "server_error");
    assert!(!r.text().contains("[DONE]"));
}

// ---------------------------------------------------------------------------------------------
// Recording, scenarios, lifecycle
// ---------------------------------------------------------------------------------------------

#[test]
fn requests_are_recorded_with_headers_and_json_body() {
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(Api::Anthropic, Turn::text("ok")))
            .then(Reply::status(200, "{}")),
    );
    let body = serde_json::json!({
        "model": "claude-x", "stream": true,
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "file body"}
        ]}]
    });
    let r = send(
        server.addr,
        "POST",
        "/v1/messages",
        &[
            ("x-api-key", "sk-test"),
            ("anthropic-version", "2023-06-01"),
        ],
        &body.to_string(),
    );
    assert_eq!(r.status, 200);
    send(
        server.addr,
        "GET",
        "/v1/models",
        &[("Authorization", "Bearer k")],
        "",
    );

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[0].path, "/v1/messages");
    assert_eq!(reqs[0].header("X-API-Key"), Some("sk-test"));
    assert_eq!(reqs[0].header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(reqs[0].body, body);
    assert_eq!(
        reqs[0].body["system"][0]["cache_control"]["type"],
        "ephemeral"
    );
    assert_eq!(reqs[1].method, "GET");
    assert_eq!(reqs[1].header("authorization"), Some("Bearer k"));
    assert_eq!(reqs[1].body, Value::Null);
}

#[test]
fn large_bodies_and_expect_continue_are_read_whole() {
    let server = FakeLlm::start(Scenario::new().then(Reply::status(200, "{}")));
    let big = "x".repeat(300_000);
    let body = serde_json::json!({"content": big}).to_string();
    let r = send(
        server.addr,
        "POST",
        "/v1/responses",
        &[("expect", "100-continue")],
        &body,
    );
    assert_eq!(r.status, 200);
    assert_eq!(
        server.requests()[0].body["content"].as_str().map(str::len),
        Some(300_000)
    );
}

#[test]
fn scenario_json_round_trips_and_repeats() {
    let json = r#"{
        "repeat": true,
        "replies": [
            {"kind": "stream", "api": "openai_chat",
             "turn": {"text": "hey", "tool_calls": [{"id": "c1", "name": "ls", "arguments_json": "{}"}]},
             "chunking": {"split_every": 4, "delay_ms": 0}},
            {"kind": "status", "code": 429, "headers": [["retry-after", "0"]], "body": "{}"}
        ]
    }"#;
    let scenario = Scenario::from_json(json).expect("scenario parses");
    assert!(scenario.repeat);
    let again = Scenario::from_json(&serde_json::to_string(&scenario).expect("ser")).expect("de");
    assert_eq!(again, scenario);
    let server = FakeLlm::start(scenario);
    for _ in 0..2 {
        let (ev, _) =
            parse_sse(&post(server.addr, "/v1/chat/completions", &serde_json::json!({})).text());
        let r = reassemble_chat(&ev).0;
        assert_eq!((r.text.as_str(), r.stop.as_str()), ("hey", "tool_calls"));
        assert_eq!(
            post(server.addr, "/v1/chat/completions", &serde_json::json!({})).status,
            429
        );
    }
}

#[test]
fn deltas_reply_streams_many_tiny_deltas() {
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::Deltas {
                api: Api::OpenAiChat,
                count: 5000,
            })
            .then(Reply::Deltas {
                api: Api::Anthropic,
                count: 300,
            })
            .then(Reply::Deltas {
                api: Api::OpenAiResponses,
                count: 100,
            }),
    );
    let r = post(server.addr, "/v1/chat/completions", &serde_json::json!({}));
    let (events, _) = parse_sse(&r.text());
    assert_eq!(
        events.len(),
        5000 + 3,
        "role chunk + deltas + finish + [DONE]"
    );
    let text = reassemble_chat(&events).0.text;
    assert_eq!(text.len(), 5000);
    assert!(text.starts_with("abcdefghijklmnopqrstuvwxyza"));
    assert!(r.chunks.len() < 100, "coalesced into large writes");

    let r = post(server.addr, "/v1/messages", &serde_json::json!({}));
    let (events, _) = parse_sse(&r.text());
    let (r, _, usage) = reassemble_anthropic(&events);
    assert_eq!(r.text.len(), 300);
    assert!(r.text.starts_with("abcdefghijklmnopqrstuvwxyzab"));
    assert_eq!(usage["output_tokens"], 300);

    let r = post(server.addr, "/v1/responses", &serde_json::json!({}));
    let (events, _) = parse_sse(&r.text());
    let text = reassemble_responses(&events).0.text;
    assert_eq!(text.len(), 100);
    assert!(text.starts_with("abcdefghijklmnopqrstuvwxyzab"));
}

#[test]
fn push_adds_replies_and_drop_stops_the_server() {
    let server = FakeLlm::start(Scenario::new());
    assert_eq!(server.remaining(), 0);
    server.push(Reply::status(418, "teapot"));
    assert_eq!(server.remaining(), 1);
    assert_eq!(post(server.addr, "/", &serde_json::json!({})).status, 418);
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
    assert!(server.base_url().ends_with("/v1"));
    let addr = server.addr;
    drop(server);
    assert!(TcpStream::connect(addr).is_err(), "listener closed on drop");
}

#[tokio::test]
async fn works_from_inside_an_async_test() {
    let server =
        FakeLlm::start(Scenario::new().then(Reply::stream(Api::OpenAiChat, Turn::text("async"))));
    let addr = server.addr;
    let r = tokio::task::spawn_blocking(move || {
        post(addr, "/v1/chat/completions", &serde_json::json!({}))
    })
    .await
    .expect("join");
    let (events, _) = parse_sse(&r.text());
    assert_eq!(reassemble_chat(&events).0.text, "async");
    drop(server); // dropping inside a runtime must not panic
}
