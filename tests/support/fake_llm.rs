//! A fake LLM HTTP server that speaks the real streaming wire formats of the OpenAI Chat
//! Completions API, the OpenAI Responses API and the Anthropic Messages API.
//!
//! Tests script a [`Scenario`]: a queue of [`Reply`]s served to successive requests (any path).
//! A [`Turn`] is a high-level description of one assistant turn (thinking, text, tool calls,
//! usage, stop reason) that the server renders into the exact SSE events of the chosen [`Api`].
//! Every request is recorded ([`FakeLlm::requests`]) so tests can assert what the client sent.
//!
//! The server runs on its own thread with its own tokio runtime, so it works from sync and
//! async tests alike, and shuts down when the [`FakeLlm`] is dropped.
//!
//! This file is self-contained so it can be included both as `tests/support/fake_llm.rs`
//! (via `mod support;`) and from an example/binary with `#[path = ...] mod fake_llm;`.

// Each integration test binary uses a different subset of this module.
#![allow(dead_code)]

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// Fixed `created` timestamp so rendered output is deterministic.
const CREATED: u64 = 1_700_000_000;
/// Largest request head (request line + headers) the server accepts.
const MAX_HEAD: usize = 1 << 20;
/// Largest request body the server accepts.
const MAX_BODY: usize = 256 << 20;
/// Size of the coalesced writes used by [`Reply::Deltas`].
const DELTAS_WRITE: usize = 16 * 1024;
/// Body of the 500 sent when the scripted queue is empty.
pub const NO_MORE_REPLIES: &str = "fake-llm: no more scripted replies";

// ---------------------------------------------------------------------------------------------
// Scenario model
// ---------------------------------------------------------------------------------------------

/// Which provider wire format a streamed reply uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Api {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`), `data:`-only SSE + `[DONE]`.
    #[serde(rename = "openai_chat")]
    OpenAiChat,
    /// OpenAI Responses (`POST /v1/responses`), named SSE events with `sequence_number`s.
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
    /// Anthropic Messages (`POST /v1/messages`), named SSE events.
    #[serde(rename = "anthropic")]
    Anthropic,
}

/// One tool call the model makes in a [`Turn`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Call id (`tool_calls[].id` / `call_id` / `tool_use.id`).
    pub id: String,
    /// Tool (function) name.
    pub name: String,
    /// Arguments as a JSON text; streamed in several fragments.
    pub arguments_json: String,
}

/// Token counts reported by a turn. Values are passed through literally into each API's fields
/// (note that Anthropic's `input_tokens` excludes cache reads while OpenAI's includes them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// `prompt_tokens` / `input_tokens`.
    pub input_tokens: u64,
    /// `completion_tokens` / `output_tokens`.
    pub output_tokens: u64,
    /// `prompt_tokens_details.cached_tokens` / `input_tokens_details.cached_tokens` /
    /// Anthropic `cache_read_input_tokens`.
    pub cached_tokens: u64,
    /// Anthropic `cache_creation_input_tokens` (ignored by the OpenAI formats).
    pub cache_creation_tokens: u64,
    /// `completion_tokens_details.reasoning_tokens` / `output_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: u64,
}

/// Why the turn stopped; rendered as each API spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Natural end: chat `stop`, Anthropic `end_turn`, Responses `completed`.
    EndTurn,
    /// Tool calls requested: chat `tool_calls`, Anthropic `tool_use`, Responses `completed`.
    ToolUse,
    /// Output limit: chat `length`, Anthropic `max_tokens`, Responses `incomplete`
    /// with `incomplete_details.reason = "max_output_tokens"`.
    MaxTokens,
}

/// High-level description of one assistant turn, rendered into wire events by the server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Turn {
    /// Model name echoed in the stream; defaults to the request's `model` field.
    pub model: Option<String>,
    /// Thinking / reasoning text (chat `reasoning_content`, Responses reasoning summary,
    /// Anthropic `thinking` block).
    pub thinking: Option<String>,
    /// Anthropic thinking `signature`; Responses reasoning item `encrypted_content`.
    pub signature: Option<String>,
    /// Visible assistant text.
    pub text: Option<String>,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Token usage reported at the end of the stream.
    pub usage: Usage,
    /// Stop reason; defaults to `ToolUse` when there are tool calls, else `EndTurn`.
    pub stop: Option<StopReason>,
    /// Characters per text/thinking/argument delta; 0 means the default of 4.
    pub delta_chars: usize,
}

impl Turn {
    /// A turn with only visible text.
    pub fn text(text: &str) -> Self {
        Turn {
            text: Some(text.to_string()),
            ..Turn::default()
        }
    }

    /// Adds thinking text and (optionally) its signature.
    pub fn with_thinking(mut self, thinking: &str, signature: Option<&str>) -> Self {
        self.thinking = Some(thinking.to_string());
        self.signature = signature.map(str::to_string);
        self
    }

    /// Appends a tool call.
    pub fn with_tool_call(mut self, id: &str, name: &str, arguments_json: &str) -> Self {
        self.tool_calls.push(ToolCall {
            id: id.to_string(),
            name: name.to_string(),
            arguments_json: arguments_json.to_string(),
        });
        self
    }

    /// Sets the reported usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// Forces a stop reason.
    pub fn with_stop(mut self, stop: StopReason) -> Self {
        self.stop = Some(stop);
        self
    }

    /// Sets the characters per delta.
    pub fn with_delta_chars(mut self, n: usize) -> Self {
        self.delta_chars = n;
        self
    }

    /// The stop reason that will be rendered.
    pub fn stop_reason(&self) -> StopReason {
        self.stop.unwrap_or(if self.tool_calls.is_empty() {
            StopReason::EndTurn
        } else {
            StopReason::ToolUse
        })
    }

    fn chars_per_delta(&self) -> usize {
        if self.delta_chars == 0 {
            4
        } else {
            self.delta_chars
        }
    }
}

/// How the response body bytes are written to the socket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Chunking {
    /// `None`: one write (and one HTTP chunk) per SSE event. `Some(n)`: the event stream is cut
    /// every `n` bytes regardless of event or UTF-8 boundaries, one write per piece; two extra
    /// cuts guarantee that the first multi-byte character and the first event terminator
    /// (`\n\n`) are split.
    pub split_every: Option<usize>,
    /// Pause between writes, in milliseconds (makes the client see the pieces separately).
    pub delay_ms: u64,
}

impl Chunking {
    /// One write per SSE event.
    pub fn events() -> Self {
        Chunking::default()
    }

    /// One write every `n` bytes (split mid-event and mid-character).
    pub fn bytes(n: usize) -> Self {
        Chunking {
            split_every: Some(n.max(1)),
            delay_ms: 0,
        }
    }

    /// Adds a delay between writes.
    pub fn with_delay(mut self, ms: u64) -> Self {
        self.delay_ms = ms;
        self
    }
}

/// One scripted reply, served to one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    /// A complete, well-formed stream of the turn.
    Stream {
        /// Wire format.
        api: Api,
        /// What to say.
        turn: Turn,
        /// How to write it.
        #[serde(default)]
        chunking: Chunking,
    },
    /// A plain (non-streaming) HTTP response, e.g. 429 with `retry-after`, 500, 529.
    Status {
        /// HTTP status code.
        code: u16,
        /// Extra response headers, e.g. `("retry-after", "0")`.
        #[serde(default)]
        headers: Vec<(String, String)>,
        /// Response body (sent with `content-type: application/json`).
        #[serde(default)]
        body: String,
    },
    /// Starts streaming the turn, then drops the connection after `bytes` body bytes
    /// (no terminal event, no terminating HTTP chunk).
    CutAfter {
        /// Wire format.
        api: Api,
        /// What to (start to) say.
        turn: Turn,
        /// SSE bytes sent before the connection is closed.
        bytes: usize,
        /// How to write the bytes that are sent.
        #[serde(default)]
        chunking: Chunking,
    },
    /// Sends `after_events` events, goes silent for `stall_ms` (optionally sending keep-alives:
    /// `: keep-alive` comments for OpenAI, `ping` events for Anthropic), then finishes the stream.
    Stall {
        /// Wire format.
        api: Api,
        /// What to say.
        turn: Turn,
        /// Events sent before the stall.
        after_events: usize,
        /// Length of the stall.
        stall_ms: u64,
        /// Keep-alive period during the stall; `None` means total silence.
        #[serde(default)]
        keepalive_ms: Option<u64>,
    },
    /// Sends `after_events` events, then the API's in-stream error event, then ends the
    /// stream cleanly (HTTP-wise). Anthropic: `event: error` with e.g. `overloaded_error`.
    StreamError {
        /// Wire format.
        api: Api,
        /// What to (start to) say.
        turn: Turn,
        /// Events sent before the error.
        after_events: usize,
        /// Error type, e.g. `overloaded_error` / `server_error`.
        error_type: String,
        /// Error message.
        message: String,
    },
    /// A recorded response body (tests/data/streams/), sent byte for byte as
    /// `text/event-stream`: bytes no one here wrote.
    Recorded {
        /// The SSE bytes, exactly as recorded.
        body: Vec<u8>,
        /// How to write them.
        #[serde(default)]
        chunking: Chunking,
    },
    /// Benchmark: `count` one-character text deltas, written in large coalesced writes.
    /// The text is `count` characters cycling through `a..=z`.
    Deltas {
        /// Wire format.
        api: Api,
        /// Number of text deltas.
        count: usize,
    },
}

impl Reply {
    /// A complete stream, one write per event.
    pub fn stream(api: Api, turn: Turn) -> Self {
        Reply::Stream {
            api,
            turn,
            chunking: Chunking::events(),
        }
    }

    /// A complete stream with the given chunking.
    pub fn stream_chunked(api: Api, turn: Turn, chunking: Chunking) -> Self {
        Reply::Stream {
            api,
            turn,
            chunking,
        }
    }

    /// A plain status reply with a body.
    pub fn status(code: u16, body: &str) -> Self {
        Reply::Status {
            code,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// Adds a response header to a [`Reply::Status`] (no-op for other kinds).
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        if let Reply::Status { headers, .. } = &mut self {
            headers.push((name.to_string(), value.to_string()));
        }
        self
    }

    /// OpenAI error reply: `{"error":{"message","type","param":null,"code"}}`.
    pub fn openai_error(
        code: u16,
        error_type: &str,
        error_code: Option<&str>,
        message: &str,
    ) -> Self {
        let body = json!({
            "error": {"message": message, "type": error_type, "param": null, "code": error_code}
        });
        Reply::status(code, &body.to_string())
    }

    /// Anthropic error reply: `{"type":"error","error":{"type","message"},"request_id"}`.
    pub fn anthropic_error(code: u16, error_type: &str, message: &str) -> Self {
        let body = json!({
            "type": "error",
            "error": {"type": error_type, "message": message},
            "request_id": "req_fake"
        });
        Reply::status(code, &body.to_string())
    }

    /// 429 in the API's error shape with `retry-after: <secs>` (and `retry-after-ms`).
    pub fn rate_limited(api: Api, retry_after_secs: u64) -> Self {
        let reply = match api {
            Api::Anthropic => {
                Reply::anthropic_error(429, "rate_limit_error", "fake-llm: rate limited")
            }
            Api::OpenAiChat | Api::OpenAiResponses => Reply::openai_error(
                429,
                "requests",
                Some("rate_limit_exceeded"),
                "fake-llm: rate limited",
            ),
        };
        reply
            .with_header("retry-after", &retry_after_secs.to_string())
            .with_header("retry-after-ms", &(retry_after_secs * 1000).to_string())
    }

    /// A recorded stream from `tests/data/streams/NAME`, one write per `split_every` bytes.
    pub fn recorded(name: &str, chunking: Chunking) -> Self {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/streams")
            .join(name);
        match std::fs::read(&path) {
            Ok(body) => Reply::Recorded { body, chunking },
            Err(e) => panic!("fake-llm: cannot read {}: {e}", path.display()),
        }
    }

    /// Anthropic 529 `overloaded_error`.
    pub fn overloaded() -> Self {
        Reply::anthropic_error(529, "overloaded_error", "Overloaded")
    }
}

/// A queue of replies served to successive requests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Scenario {
    /// Replies in serving order.
    pub replies: Vec<Reply>,
    /// When true, the replies are served in a loop forever (manual testing, benchmarks).
    pub repeat: bool,
}

impl Scenario {
    /// An empty scenario (every request gets the "no more scripted replies" 500).
    pub fn new() -> Self {
        Scenario::default()
    }

    /// Appends a reply.
    pub fn then(mut self, reply: Reply) -> Self {
        self.replies.push(reply);
        self
    }

    /// Serves the replies in a loop.
    pub fn repeating(mut self) -> Self {
        self.repeat = true;
        self
    }

    /// Parses a scenario from JSON (`{"replies":[{"kind":"stream",...}],"repeat":false}`).
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// HTTP method, e.g. `POST`.
    pub method: String,
    /// Request target, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// Body parsed as JSON; `Value::Null` when empty, `Value::String` when not JSON.
    pub body: Value,
    /// Body as (lossily decoded) text.
    pub raw_body: String,
}

impl RecordedRequest {
    /// First header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

struct Shared {
    queue: Mutex<VecDeque<Reply>>,
    /// Original replies, used to refill the queue when the scenario repeats.
    cycle: Option<Vec<Reply>>,
    requests: Mutex<Vec<RecordedRequest>>,
}

/// Locks a mutex, recovering from poisoning (a panicking test must not hide the data).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    /// Records a request and takes the reply for it. Returns the request's ordinal too.
    fn take(&self, req: RecordedRequest) -> (usize, Option<Reply>) {
        let n = {
            let mut reqs = lock(&self.requests);
            reqs.push(req);
            reqs.len()
        };
        let mut q = lock(&self.queue);
        if q.is_empty() {
            if let Some(cycle) = &self.cycle {
                q.extend(cycle.iter().cloned());
            }
        }
        (n, q.pop_front())
    }
}

/// A running fake LLM server. Dropping it stops the server.
pub struct FakeLlm {
    /// Bound address (127.0.0.1 and an ephemeral port unless started with `try_start_on`).
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl FakeLlm {
    /// Starts a server on 127.0.0.1 with an ephemeral port. Panics if it cannot (test helper).
    pub fn start(scenario: Scenario) -> FakeLlm {
        match FakeLlm::try_start(scenario) {
            Ok(server) => server,
            Err(e) => panic!("fake-llm: could not start the server on 127.0.0.1: {e}"),
        }
    }

    /// Starts a server on 127.0.0.1 with an ephemeral port.
    pub fn try_start(scenario: Scenario) -> io::Result<FakeLlm> {
        FakeLlm::try_start_on(SocketAddr::from(([127, 0, 0, 1], 0)), scenario)
    }

    /// Starts a server on the given address.
    pub fn try_start_on(addr: SocketAddr, scenario: Scenario) -> io::Result<FakeLlm> {
        // Bind synchronously so the caller gets the port (or the error) before we return.
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let shared = Arc::new(Shared {
            queue: Mutex::new(scenario.replies.iter().cloned().collect()),
            cycle: scenario.repeat.then_some(scenario.replies),
            requests: Mutex::new(Vec::new()),
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (tx, rx) = oneshot::channel();
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("fake-llm".to_string())
            .spawn(move || {
                runtime.block_on(async move {
                    match TcpListener::from_std(std_listener) {
                        Ok(listener) => accept_loop(listener, thread_shared, rx).await,
                        Err(e) => eprintln!("fake-llm: listener setup failed: {e}"),
                    }
                });
                // Dropping the runtime here cancels connections still being served.
            })?;
        Ok(FakeLlm {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT/v1` — what a client's `base_url` should be.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.requests).clone()
    }

    /// Appends a reply to the queue of a running server.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.queue).push_back(reply);
    }

    /// Replies not yet served (ignores repetition).
    pub fn remaining(&self) -> usize {
        lock(&self.shared.queue).len()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept_loop(listener: TcpListener, shared: Arc<Shared>, mut stop: oneshot::Receiver<()>) {
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(handle_connection(stream, Arc::clone(&shared)));
                }
            }
        }
    }
}

/// Serves exactly one request per connection, then closes it (`connection: close`).
async fn handle_connection(mut stream: TcpStream, shared: Arc<Shared>) {
    // Small writes must leave immediately so clients see the chunking we chose.
    let _ = stream.set_nodelay(true);
    let req = match read_request(&mut stream).await {
        Ok(Some(req)) => req,
        Ok(None) => return,
        Err(e) => {
            let body = json!({"error": {"message": format!("fake-llm: bad request: {e}")}});
            let _ = write_status(&mut stream, 400, &[], &body.to_string()).await;
            return;
        }
    };
    let ctx = RenderCtx::from_request(&req.body);
    let (n, reply) = shared.take(req);
    let ctx = RenderCtx { n, ..ctx };
    let result = match reply {
        Some(reply) => serve_reply(&mut stream, reply, &ctx).await,
        None => write_status(&mut stream, 500, &[], NO_MORE_REPLIES).await,
    };
    if result.is_ok() {
        let _ = stream.shutdown().await;
    }
}

/// Reads one HTTP/1.1 request (head + `Content-Length` body). `Ok(None)` on a silent close.
async fn read_request(stream: &mut TcpStream) -> io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::with_capacity(8192);
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too large",
            ));
        }
        let mut tmp = [0u8; 8192];
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return if buf.is_empty() {
                Ok(None)
            } else {
                Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "request head cut short",
                ))
            };
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    if header("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "chunked request bodies are not supported; send Content-Length",
        ));
    }
    let len = match header("content-length") {
        Some(v) => v
            .parse::<usize>()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad Content-Length"))?,
        None => 0,
    };
    if len > MAX_BODY {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "request body too large",
        ));
    }
    if header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
        stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    }
    let mut body = buf.split_off(head_end + 4);
    while body.len() < len {
        let mut tmp = vec![0u8; (len - body.len()).min(64 * 1024)];
        let n = stream.read(&mut tmp).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "request body cut short",
            ));
        }
        body.extend_from_slice(&tmp[..n]);
    }
    body.truncate(len);
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let body = if raw_body.trim().is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&raw_body).unwrap_or_else(|_| Value::String(raw_body.clone()))
    };
    Ok(Some(RecordedRequest {
        method,
        path,
        headers,
        body,
        raw_body,
    }))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn reason_phrase(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Fake",
    }
}

async fn write_status(
    stream: &mut TcpStream,
    code: u16,
    headers: &[(String, String)],
    body: &str,
) -> io::Result<()> {
    let content_type = if body.trim_start().starts_with(['{', '[']) {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut out = format!(
        "HTTP/1.1 {code} {}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason_phrase(code),
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    stream.write_all(out.as_bytes()).await
}

/// One step of a streamed response body.
enum Step {
    /// Written as one HTTP chunk, in one write.
    Data(Vec<u8>),
    /// Pause.
    Sleep(u64),
}

async fn serve_reply(stream: &mut TcpStream, reply: Reply, ctx: &RenderCtx) -> io::Result<()> {
    let (api, steps, finish) = match reply {
        Reply::Status {
            code,
            headers,
            body,
        } => return write_status(stream, code, &headers, &body).await,
        Reply::Stream {
            api,
            turn,
            chunking,
        } => (api, chunk_steps(render(api, &turn, ctx), chunking), true),
        Reply::CutAfter {
            api,
            turn,
            bytes,
            chunking,
        } => {
            let mut all = render(api, &turn, ctx).concat();
            all.truncate(bytes);
            (api, chunk_steps(vec![all], chunking), false)
        }
        Reply::Stall {
            api,
            turn,
            after_events,
            stall_ms,
            keepalive_ms,
        } => (
            api,
            stall_steps(
                api,
                render(api, &turn, ctx),
                after_events,
                stall_ms,
                keepalive_ms,
            ),
            true,
        ),
        Reply::StreamError {
            api,
            turn,
            after_events,
            error_type,
            message,
        } => {
            let mut events = render(api, &turn, ctx);
            events.truncate(after_events);
            events.push(render_error_event(api, &error_type, &message, after_events));
            (api, chunk_steps(events, Chunking::events()), true)
        }
        Reply::Deltas { api, count } => (api, deltas_steps(api, count, ctx), true),
        // The API only names the request-id header; the body is the recording's.
        Reply::Recorded { body, chunking } => {
            (Api::OpenAiChat, chunk_steps(vec![body], chunking), true)
        }
    };
    write_stream(stream, api, ctx, steps, finish).await
}

async fn write_stream(
    stream: &mut TcpStream,
    api: Api,
    ctx: &RenderCtx,
    steps: Vec<Step>,
    finish: bool,
) -> io::Result<()> {
    let request_id = match api {
        Api::Anthropic => format!("request-id: req_fake{}", ctx.n),
        Api::OpenAiChat | Api::OpenAiResponses => format!("x-request-id: req_fake{}", ctx.n),
    };
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n{request_id}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await?;
    for step in steps {
        match step {
            Step::Data(data) if data.is_empty() => {}
            Step::Data(data) => {
                let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
                chunk.extend_from_slice(&data);
                chunk.extend_from_slice(b"\r\n");
                stream.write_all(&chunk).await?;
            }
            Step::Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
    }
    if finish {
        stream.write_all(b"0\r\n\r\n").await?;
    }
    stream.flush().await
}

/// Turns rendered events into write steps according to `chunking`.
fn chunk_steps(events: Vec<Vec<u8>>, chunking: Chunking) -> Vec<Step> {
    let pieces: Vec<Vec<u8>> = match chunking.split_every {
        None => events,
        Some(n) => split_bytes(&events.concat(), n),
    };
    let mut steps = Vec::with_capacity(pieces.len() * 2);
    for (i, piece) in pieces.into_iter().enumerate() {
        if i > 0 && chunking.delay_ms > 0 {
            steps.push(Step::Sleep(chunking.delay_ms));
        }
        steps.push(Step::Data(piece));
    }
    steps
}

/// Cuts `bytes` every `n` bytes, plus two guaranteed awkward cuts in case the regular ones
/// miss them: inside the first multi-byte UTF-8 character and between the two newlines that
/// end the first SSE event.
fn split_bytes(bytes: &[u8], n: usize) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = (0..bytes.len()).step_by(n.max(1)).collect();
    if let Some(lead) = bytes.iter().position(|b| *b >= 0xC0) {
        cuts.push(lead + 1);
    }
    if let Some(end) = find(bytes, b"\n\n") {
        cuts.push(end + 1);
    }
    cuts.push(bytes.len());
    cuts.sort_unstable();
    cuts.dedup();
    cuts.windows(2)
        .map(|w| bytes[w[0]..w[1]].to_vec())
        .filter(|p| !p.is_empty())
        .collect()
}

/// Events before the stall, keep-alives (or silence) during it, the rest after it.
fn stall_steps(
    api: Api,
    events: Vec<Vec<u8>>,
    after_events: usize,
    stall_ms: u64,
    keepalive_ms: Option<u64>,
) -> Vec<Step> {
    let split = after_events.min(events.len());
    let mut events = events;
    let rest = events.split_off(split);
    let mut steps = chunk_steps(events, Chunking::events());
    match keepalive_ms {
        Some(period) if period > 0 => {
            let keepalive = match api {
                Api::Anthropic => sse_event("ping", &json!({"type": "ping"})),
                Api::OpenAiChat | Api::OpenAiResponses => b": keep-alive\n\n".to_vec(),
            };
            let mut left = stall_ms;
            while left > 0 {
                let nap = period.min(left);
                steps.push(Step::Sleep(nap));
                left -= nap;
                if left > 0 {
                    steps.push(Step::Data(keepalive.clone()));
                }
            }
        }
        _ => steps.push(Step::Sleep(stall_ms)),
    }
    steps.extend(chunk_steps(rest, Chunking::events()));
    steps
}

/// Benchmark stream of `count` one-character deltas cycling through `a..=z`, packed into large
/// writes. Chat and Anthropic stamp copies of one rendered delta event (rendering 100k events
/// through `serde_json::Value` would make the server, not the client, the bottleneck).
fn deltas_steps(api: Api, count: usize, ctx: &RenderCtx) -> Vec<Step> {
    let letter = |i: usize| b'a' + (i % 26) as u8;
    let turn = |text: String| Turn {
        text: Some(text),
        delta_chars: 1,
        usage: Usage {
            input_tokens: 10,
            output_tokens: count as u64,
            ..Usage::default()
        },
        ..Turn::default()
    };
    if api == Api::OpenAiResponses || count == 0 {
        let text = (0..count).map(|i| letter(i) as char).collect();
        return coalesce_steps(render(api, &turn(text), ctx));
    }
    // U+0007 is escaped by serde_json as `\u0007`, which occurs nowhere else in the events.
    const MARK: &[u8] = b"\\u0007";
    let events = render(api, &turn("\u{7}".to_string()), ctx);
    let mut out = Vec::with_capacity(events.len() + count);
    for event in events {
        match find(&event, MARK) {
            Some(at) => {
                let (head, tail) = (&event[..at], &event[at + MARK.len()..]);
                for i in 0..count {
                    let mut e = Vec::with_capacity(event.len());
                    e.extend_from_slice(head);
                    e.push(letter(i));
                    e.extend_from_slice(tail);
                    out.push(e);
                }
            }
            None => out.push(event),
        }
    }
    coalesce_steps(out)
}

/// Packs events into large writes (benchmark replies).
fn coalesce_steps(events: Vec<Vec<u8>>) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut buf = Vec::with_capacity(DELTAS_WRITE + 512);
    for event in events {
        buf.extend_from_slice(&event);
        if buf.len() >= DELTAS_WRITE {
            steps.push(Step::Data(std::mem::take(&mut buf)));
        }
    }
    steps.push(Step::Data(buf));
    steps
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// Per-request facts the renderers need.
#[derive(Debug, Clone)]
struct RenderCtx {
    /// 1-based request ordinal, used to make ids unique.
    n: usize,
    /// `model` from the request body.
    request_model: Option<String>,
    /// `stream_options.include_usage` from the request body (Chat Completions only).
    include_usage: bool,
}

impl RenderCtx {
    fn from_request(body: &Value) -> Self {
        RenderCtx {
            n: 0,
            request_model: body
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string),
            include_usage: body
                .pointer("/stream_options/include_usage")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    fn model(&self, turn: &Turn) -> String {
        turn.model
            .clone()
            .or_else(|| self.request_model.clone())
            .unwrap_or_else(|| "fake-model".to_string())
    }
}

/// Renders a turn into complete SSE events (each ends with a blank line).
pub fn render_events(api: Api, turn: &Turn) -> Vec<Vec<u8>> {
    let ctx = RenderCtx {
        n: 1,
        request_model: None,
        include_usage: true,
    };
    render(api, turn, &ctx)
}

fn render(api: Api, turn: &Turn, ctx: &RenderCtx) -> Vec<Vec<u8>> {
    match api {
        Api::OpenAiChat => render_openai_chat(turn, ctx),
        Api::OpenAiResponses => render_openai_responses(turn, ctx),
        Api::Anthropic => render_anthropic(turn, ctx),
    }
}

fn sse_data(v: &Value) -> Vec<u8> {
    format!("data: {v}\n\n").into_bytes()
}

fn sse_event(name: &str, v: &Value) -> Vec<u8> {
    format!("event: {name}\ndata: {v}\n\n").into_bytes()
}

/// Splits text into pieces of `n` characters (never inside a UTF-8 character).
fn split_chars(s: &str, n: usize) -> Vec<&str> {
    let bounds: Vec<usize> = s
        .char_indices()
        .map(|(i, _)| i)
        .step_by(n.max(1))
        .chain(std::iter::once(s.len()))
        .collect();
    bounds
        .windows(2)
        .map(|w| &s[w[0]..w[1]])
        .filter(|p| !p.is_empty())
        .collect()
}

/// Splits tool-call arguments into fragments of `n` characters, plus two deliberately awkward
/// cuts: one inside the first run of non-ASCII characters (between two of them, or just before
/// a lone one) and one inside the first `\uXXXX` escape. A delta is a JSON string, so it can
/// never hold half a UTF-8 character; mid-character splits happen at the byte level through
/// [`Chunking::bytes`].
pub fn split_arguments(s: &str, n: usize) -> Vec<&str> {
    let mut bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).step_by(n.max(1)).collect();
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    if let Some(start) = chars.iter().position(|(_, c)| !c.is_ascii()) {
        let run = chars[start..]
            .iter()
            .take_while(|(_, c)| !c.is_ascii())
            .count();
        bounds.push(chars[start + run / 2].0);
    }
    if let Some(pos) = s.find("\\u") {
        bounds.push(pos + 3);
    }
    bounds.push(0);
    bounds.push(s.len());
    bounds.sort_unstable();
    bounds.dedup();
    bounds
        .windows(2)
        .map(|w| &s[w[0]..w[1]])
        .filter(|p| !p.is_empty())
        .collect()
}

fn render_openai_chat(turn: &Turn, ctx: &RenderCtx) -> Vec<Vec<u8>> {
    let id = format!("chatcmpl-fake{}", ctx.n);
    let model = ctx.model(turn);
    let chunk = |delta: Value, finish: Value| {
        let mut c = json!({
            "id": id, "object": "chat.completion.chunk", "created": CREATED, "model": model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        });
        if ctx.include_usage {
            c["usage"] = Value::Null;
        }
        sse_data(&c)
    };
    let n = turn.chars_per_delta();
    let mut out = vec![chunk(
        json!({"role": "assistant", "content": "", "refusal": null}),
        Value::Null,
    )];
    if let Some(thinking) = &turn.thinking {
        for piece in split_chars(thinking, n) {
            out.push(chunk(json!({"reasoning_content": piece}), Value::Null));
        }
    }
    if let Some(text) = &turn.text {
        for piece in split_chars(text, n) {
            out.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    for (i, tc) in turn.tool_calls.iter().enumerate() {
        out.push(chunk(
            json!({"tool_calls": [{
                "index": i, "id": tc.id, "type": "function",
                "function": {"name": tc.name, "arguments": ""}
            }]}),
            Value::Null,
        ));
        for piece in split_arguments(&tc.arguments_json, n) {
            out.push(chunk(
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    let finish = match turn.stop_reason() {
        StopReason::EndTurn => "stop",
        StopReason::ToolUse => "tool_calls",
        StopReason::MaxTokens => "length",
    };
    out.push(chunk(json!({}), json!(finish)));
    if ctx.include_usage {
        let u = turn.usage;
        out.push(sse_data(&json!({
            "id": id, "object": "chat.completion.chunk", "created": CREATED, "model": model,
            "system_fingerprint": "fp_fake", "choices": [],
            "usage": {
                "prompt_tokens": u.input_tokens,
                "completion_tokens": u.output_tokens,
                "total_tokens": u.input_tokens + u.output_tokens,
                "prompt_tokens_details": {"cached_tokens": u.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": u.reasoning_tokens, "audio_tokens": 0,
                    "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0
                }
            }
        })));
    }
    out.push(b"data: [DONE]\n\n".to_vec());
    out
}

/// Accumulates Responses API events, stamping `type` and `sequence_number`.
struct ResponsesOut {
    events: Vec<Vec<u8>>,
    seq: u64,
}

impl ResponsesOut {
    fn push(&mut self, name: &str, mut v: Value) {
        v["type"] = json!(name);
        v["sequence_number"] = json!(self.seq);
        self.seq += 1;
        self.events.push(sse_event(name, &v));
    }
}

fn render_openai_responses(turn: &Turn, ctx: &RenderCtx) -> Vec<Vec<u8>> {
    let resp_id = format!("resp_fake{}", ctx.n);
    let model = ctx.model(turn);
    let response = |status: &str, output: &[Value], usage: Value, incomplete: Value| {
        json!({
            "id": resp_id, "object": "response", "created_at": CREATED, "status": status,
            "error": null, "incomplete_details": incomplete, "model": model,
            "output": output, "parallel_tool_calls": true, "store": false,
            "usage": usage
        })
    };
    let mut out = ResponsesOut {
        events: Vec::new(),
        seq: 0,
    };
    let mut output: Vec<Value> = Vec::new();
    out.push(
        "response.created",
        json!({"response": response("in_progress", &[], Value::Null, Value::Null)}),
    );
    out.push(
        "response.in_progress",
        json!({"response": response("in_progress", &[], Value::Null, Value::Null)}),
    );
    let n = turn.chars_per_delta();

    if let Some(thinking) = &turn.thinking {
        let oi = output.len();
        let item_id = format!("rs_fake{}_{oi}", ctx.n);
        out.push(
            "response.output_item.added",
            json!({"output_index": oi, "item": {"id": item_id, "type": "reasoning", "summary": []}}),
        );
        out.push(
            "response.reasoning_summary_part.added",
            json!({"item_id": item_id, "output_index": oi, "summary_index": 0,
                   "part": {"type": "summary_text", "text": ""}}),
        );
        for piece in split_chars(thinking, n) {
            out.push(
                "response.reasoning_summary_text.delta",
                json!({"item_id": item_id, "output_index": oi, "summary_index": 0, "delta": piece}),
            );
        }
        out.push(
            "response.reasoning_summary_text.done",
            json!({"item_id": item_id, "output_index": oi, "summary_index": 0, "text": thinking}),
        );
        out.push(
            "response.reasoning_summary_part.done",
            json!({"item_id": item_id, "output_index": oi, "summary_index": 0,
                   "part": {"type": "summary_text", "text": thinking}}),
        );
        let mut item = json!({
            "id": item_id, "type": "reasoning",
            "summary": [{"type": "summary_text", "text": thinking}]
        });
        if let Some(sig) = &turn.signature {
            item["encrypted_content"] = json!(sig);
        }
        out.push(
            "response.output_item.done",
            json!({"output_index": oi, "item": item}),
        );
        output.push(item);
    }

    if let Some(text) = &turn.text {
        let oi = output.len();
        let item_id = format!("msg_fake{}_{oi}", ctx.n);
        out.push(
            "response.output_item.added",
            json!({"output_index": oi, "item": {
                "id": item_id, "type": "message", "status": "in_progress",
                "role": "assistant", "content": []
            }}),
        );
        out.push(
            "response.content_part.added",
            json!({"item_id": item_id, "output_index": oi, "content_index": 0,
                   "part": {"type": "output_text", "annotations": [], "text": ""}}),
        );
        for piece in split_chars(text, n) {
            out.push(
                "response.output_text.delta",
                json!({"item_id": item_id, "output_index": oi, "content_index": 0,
                       "delta": piece, "logprobs": []}),
            );
        }
        out.push(
            "response.output_text.done",
            json!({"item_id": item_id, "output_index": oi, "content_index": 0,
                   "text": text, "logprobs": []}),
        );
        let part = json!({"type": "output_text", "annotations": [], "text": text});
        out.push(
            "response.content_part.done",
            json!({"item_id": item_id, "output_index": oi, "content_index": 0, "part": part}),
        );
        let item = json!({
            "id": item_id, "type": "message", "status": "completed",
            "role": "assistant", "content": [part]
        });
        out.push(
            "response.output_item.done",
            json!({"output_index": oi, "item": item}),
        );
        output.push(item);
    }

    for tc in &turn.tool_calls {
        let oi = output.len();
        let item_id = format!("fc_fake{}_{oi}", ctx.n);
        out.push(
            "response.output_item.added",
            json!({"output_index": oi, "item": {
                "id": item_id, "type": "function_call", "status": "in_progress",
                "arguments": "", "call_id": tc.id, "name": tc.name
            }}),
        );
        for piece in split_arguments(&tc.arguments_json, n) {
            out.push(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": oi, "delta": piece}),
            );
        }
        out.push(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": oi, "arguments": tc.arguments_json}),
        );
        let item = json!({
            "id": item_id, "type": "function_call", "status": "completed",
            "arguments": tc.arguments_json, "call_id": tc.id, "name": tc.name
        });
        out.push(
            "response.output_item.done",
            json!({"output_index": oi, "item": item}),
        );
        output.push(item);
    }

    let u = turn.usage;
    let usage = json!({
        "input_tokens": u.input_tokens,
        "input_tokens_details": {"cached_tokens": u.cached_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens},
        "total_tokens": u.input_tokens + u.output_tokens
    });
    if turn.stop_reason() == StopReason::MaxTokens {
        out.push(
            "response.incomplete",
            json!({"response": response(
                "incomplete", &output, usage, json!({"reason": "max_output_tokens"})
            )}),
        );
    } else {
        out.push(
            "response.completed",
            json!({"response": response("completed", &output, usage, Value::Null)}),
        );
    }
    out.events
}

fn render_anthropic(turn: &Turn, ctx: &RenderCtx) -> Vec<Vec<u8>> {
    let model = ctx.model(turn);
    let u = turn.usage;
    let n = turn.chars_per_delta();
    let mut out = vec![sse_event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_fake{}", ctx.n), "type": "message", "role": "assistant",
            "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {
                "input_tokens": u.input_tokens,
                "cache_creation_input_tokens": u.cache_creation_tokens,
                "cache_read_input_tokens": u.cached_tokens,
                "output_tokens": 1
            }
        }}),
    )];
    let mut index = 0usize;
    let start = |out: &mut Vec<Vec<u8>>, index: usize, block: Value| {
        out.push(sse_event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        // The real API sends a ping right after the first block starts.
        if index == 0 {
            out.push(sse_event("ping", &json!({"type": "ping"})));
        }
    };
    let delta = |index: usize, delta: Value| {
        sse_event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let stop = |index: usize| {
        sse_event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        )
    };

    if let Some(thinking) = &turn.thinking {
        start(
            &mut out,
            index,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
        );
        for piece in split_chars(thinking, n) {
            out.push(delta(
                index,
                json!({"type": "thinking_delta", "thinking": piece}),
            ));
        }
        if let Some(sig) = &turn.signature {
            out.push(delta(
                index,
                json!({"type": "signature_delta", "signature": sig}),
            ));
        }
        out.push(stop(index));
        index += 1;
    }
    if let Some(text) = &turn.text {
        start(&mut out, index, json!({"type": "text", "text": ""}));
        for piece in split_chars(text, n) {
            out.push(delta(index, json!({"type": "text_delta", "text": piece})));
        }
        out.push(stop(index));
        index += 1;
    }
    for tc in &turn.tool_calls {
        start(
            &mut out,
            index,
            json!({"type": "tool_use", "id": tc.id, "name": tc.name, "input": {}}),
        );
        // The real API opens tool input with an empty fragment.
        out.push(delta(
            index,
            json!({"type": "input_json_delta", "partial_json": ""}),
        ));
        for piece in split_arguments(&tc.arguments_json, n) {
            out.push(delta(
                index,
                json!({"type": "input_json_delta", "partial_json": piece}),
            ));
        }
        out.push(stop(index));
        index += 1;
    }
    let stop_reason = match turn.stop_reason() {
        StopReason::EndTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
    };
    out.push(sse_event(
        "message_delta",
        &json!({"type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": u.output_tokens}}),
    ));
    out.push(sse_event("message_stop", &json!({"type": "message_stop"})));
    out
}

/// The API's in-stream error event.
fn render_error_event(api: Api, error_type: &str, message: &str, seq: usize) -> Vec<u8> {
    match api {
        Api::Anthropic => sse_event(
            "error",
            &json!({"type": "error", "error": {"type": error_type, "message": message}}),
        ),
        Api::OpenAiChat => sse_data(&json!({
            "error": {"message": message, "type": error_type, "param": null, "code": null}
        })),
        Api::OpenAiResponses => sse_event(
            "error",
            &json!({"type": "error", "code": error_type, "message": message,
                    "param": null, "sequence_number": seq}),
        ),
    }
}
