//! The HTTP client against a hand-written HTTP/1.1 server on 127.0.0.1.
//!
//! The server plays scripts of raw bytes, sleeps, stalls and cuts, so every transport edge a
//! provider meets (keep-alive comments, stalls, dropped streams, error statuses) is real.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use fen::native::http::{
    parse_retry_after, HttpClient, HttpConfig, HttpError, HttpRequest, TimeoutKind,
    DEFAULT_ERROR_BODY_CAP,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Generous bound for "returned promptly" (hang detection, not a speed test).
const HANG: Duration = Duration::from_secs(10);

#[derive(Clone)]
enum Step {
    Write(Vec<u8>),
    Sleep(Duration),
    /// Keep the connection open, reading until the client closes it, then report that.
    Stall,
}

/// A one-connection-per-script test server; the connection is closed after the last step.
struct Server {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
    client_closed: mpsc::UnboundedReceiver<()>,
}

async fn serve(scripts: Vec<Vec<Step>>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let (closed_tx, client_closed) = mpsc::unbounded_channel();
    let recorded = requests.clone();
    tokio::spawn(async move {
        for script in scripts {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let recorded = recorded.clone();
            let closed_tx = closed_tx.clone();
            tokio::spawn(run_script(socket, script, recorded, closed_tx));
        }
    });
    Server {
        url,
        requests,
        client_closed,
    }
}

async fn run_script(
    mut socket: TcpStream,
    script: Vec<Step>,
    recorded: Arc<Mutex<Vec<String>>>,
    closed_tx: mpsc::UnboundedSender<()>,
) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    for step in script {
        match step {
            Step::Write(bytes) => {
                if socket.write_all(&bytes).await.is_err() {
                    let _ = closed_tx.send(());
                    return;
                }
                let _ = socket.flush().await;
            }
            Step::Sleep(d) => tokio::time::sleep(d).await,
            Step::Stall => {
                let mut buf = [0u8; 1024];
                loop {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                let _ = closed_tx.send(());
                return;
            }
        }
    }
    let _ = socket.shutdown().await;
}

/// Reads the request head and a Content-Length body; returns them as text.
async fn read_request(socket: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len = head
        .lines()
        .find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = socket.read(&mut tmp).await.ok()?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    Some(String::from_utf8_lossy(&buf).to_string())
}

const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// One HTTP/1.1 chunk carrying `bytes`.
fn chunk(bytes: &[u8]) -> Vec<u8> {
    let mut out = format!("{:x}\r\n", bytes.len()).into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
    out
}

fn write(bytes: &[u8]) -> Step {
    Step::Write(bytes.to_vec())
}

fn write_chunk(bytes: &[u8]) -> Step {
    Step::Write(chunk(bytes))
}

fn ms(n: u64) -> Step {
    Step::Sleep(Duration::from_millis(n))
}

/// A complete response with a Content-Length body.
fn plain(status_line: &str, headers: &[&str], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status_line}\r\ncontent-length: {}\r\n",
        body.len()
    );
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

fn client(first_byte_ms: u64, idle_ms: u64) -> HttpClient {
    HttpClient::new(HttpConfig {
        connect_timeout: Some(Duration::from_secs(5)),
        first_byte_timeout: Some(Duration::from_millis(first_byte_ms)),
        idle_timeout: Some(Duration::from_millis(idle_ms)),
    })
    .unwrap()
}

fn get(url: &str) -> HttpRequest {
    HttpRequest::new("GET", url)
}

/// Drains a stream, returning the data of every event and the final result.
async fn drain(stream: &mut fen::native::http::SseStream) -> (Vec<String>, Result<(), HttpError>) {
    let mut data = Vec::new();
    loop {
        match stream.next_event().await {
            Ok(Some(e)) => data.push(e.data),
            Ok(None) => return (data, Ok(())),
            Err(e) => return (data, Err(e)),
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn events_arrive_in_order_under_awkward_chunking_inside_a_local_set() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let body = "\u{FEFF}: hi\r\nevent: delta\r\ndata: {\"t\":\"héllo 世界 🎉\"}\r\n\r\n\
                        data: second\r\rdata: third\n\ndata: [DONE]\n\n"
                .as_bytes();
            // Cut inside the BOM, inside "é", inside "🎉", between CR and LF, mid-field.
            let emoji = body.windows(4).position(|w| w == "🎉".as_bytes()).unwrap();
            let e_acute = body.windows(2).position(|w| w == "é".as_bytes()).unwrap();
            let crlf = body.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
            let mut cuts = vec![
                1,
                2,
                9,
                e_acute + 1,
                emoji + 1,
                emoji + 3,
                crlf + 1,
                crlf + 3,
            ];
            cuts.sort_unstable();
            let mut script = vec![write(SSE_HEAD)];
            let mut start = 0;
            for cut in cuts.into_iter().chain([body.len()]) {
                script.push(write_chunk(&body[start..cut]));
                script.push(ms(5));
                start = cut;
            }
            script.push(write(LAST_CHUNK));
            let server = serve(vec![script]).await;

            let mut stream = client(5_000, 5_000)
                .sse(get(&server.url), CancellationToken::new())
                .await
                .unwrap();
            assert_eq!(stream.status(), 200);
            let first = stream.next_event().await.unwrap().unwrap();
            assert_eq!(first.event.as_deref(), Some("delta"));
            assert_eq!(first.data, "{\"t\":\"héllo 世界 🎉\"}");
            let (rest, end) = drain(&mut stream).await;
            assert_eq!(rest, ["second", "third", "[DONE]"]);
            assert_eq!(end, Ok(()));
            assert_eq!(stream.comments_seen(), 1);
            assert!(stream.finish_state().unwrap().is_clean());
            // The client asked for an event stream.
            let req = server.requests.lock().unwrap()[0].to_ascii_lowercase();
            assert!(req.contains("accept: text/event-stream"), "{req}");
        })
        .await;
}

#[tokio::test(flavor = "current_thread")]
async fn first_byte_timeout_fires_when_only_comments_arrive() {
    let mut script = vec![write(SSE_HEAD)];
    for _ in 0..100 {
        script.push(write_chunk(b": keep-alive\n\n"));
        script.push(ms(50));
    }
    let server = serve(vec![script]).await;
    let started = Instant::now();
    let mut stream = client(400, 60_000)
        .sse(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    let err = stream.next_event().await.unwrap_err();
    assert!(started.elapsed() < HANG);
    assert!(
        matches!(
            err,
            HttpError::Timeout {
                kind: TimeoutKind::FirstByte,
                after_ms: 400,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert!(
        stream.comments_seen() >= 1,
        "comments were received but ignored"
    );
    // The error sticks: the connection is gone.
    assert_eq!(stream.next_event().await.unwrap_err(), err);
}

#[tokio::test(flavor = "current_thread")]
async fn idle_timeout_fires_on_a_stall_after_data_even_with_comments() {
    let mut script = vec![write(SSE_HEAD), write_chunk(b"data: one\n\n")];
    for _ in 0..100 {
        script.push(ms(50));
        script.push(write_chunk(b":\n"));
    }
    let server = serve(vec![script]).await;
    let mut stream = client(60_000, 400)
        .sse(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(stream.next_event().await.unwrap().unwrap().data, "one");
    let err = stream.next_event().await.unwrap_err();
    assert!(
        matches!(
            err,
            HttpError::Timeout {
                kind: TimeoutKind::Idle,
                after_ms: 400,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("FEN_HTTP_IDLE_TIMEOUT_MS"),
        "{err}"
    );
    assert!(stream.comments_seen() >= 2);
}

#[tokio::test(flavor = "current_thread")]
async fn steady_data_outlives_the_first_byte_limit() {
    // The first-byte limit bounds only the wait for the first event, not the whole stream.
    let mut script = vec![write(SSE_HEAD)];
    for i in 0..10 {
        script.push(write_chunk(format!("data: {i}\n\n").as_bytes()));
        script.push(ms(150));
    }
    script.push(write(LAST_CHUNK));
    let server = serve(vec![script]).await;
    let mut stream = client(700, 2_000)
        .sse(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    let (data, end) = drain(&mut stream).await;
    assert_eq!(end, Ok(()));
    assert_eq!(data.len(), 10);
}

#[tokio::test(flavor = "current_thread")]
async fn cancel_mid_stream_returns_promptly_and_closes_the_connection() {
    let script = vec![write(SSE_HEAD), write_chunk(b"data: one\n\n"), Step::Stall];
    let mut server = serve(vec![script]).await;
    let cancel = CancellationToken::new();
    let mut stream = client(60_000, 60_000)
        .sse(get(&server.url), cancel.clone())
        .await
        .unwrap();
    assert_eq!(stream.next_event().await.unwrap().unwrap().data, "one");
    let trip = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trip.cancel();
    });
    let started = Instant::now();
    let err = stream.next_event().await.unwrap_err();
    assert_eq!(err, HttpError::Cancelled);
    assert!(!err.is_retryable());
    assert!(started.elapsed() < HANG);
    // The stream value is still alive, yet the server already saw the connection close.
    let closed = tokio::time::timeout(HANG, server.client_closed.recv()).await;
    assert_eq!(closed, Ok(Some(())), "server never saw the client close");
    drop(stream);
}

#[tokio::test(flavor = "current_thread")]
async fn cancel_before_headers() {
    let mut server = serve(vec![vec![Step::Stall]]).await;
    let cancel = CancellationToken::new();
    let trip = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        trip.cancel();
    });
    let err = client(60_000, 60_000)
        .request(get(&server.url), cancel)
        .await
        .unwrap_err();
    assert_eq!(err, HttpError::Cancelled);
    let closed = tokio::time::timeout(HANG, server.client_closed.recv()).await;
    assert_eq!(closed, Ok(Some(())));
}

#[tokio::test(flavor = "current_thread")]
async fn cut_chunked_stream_is_a_retryable_error_not_a_clean_end() {
    let script = vec![write(SSE_HEAD), write_chunk(b"data: one\n\ndata: par")];
    let server = serve(vec![script]).await;
    let mut stream = client(5_000, 5_000)
        .sse(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    let (data, end) = drain(&mut stream).await;
    assert_eq!(data, ["one"]);
    let err = end.unwrap_err();
    assert!(matches!(err, HttpError::Stream { .. }), "{err:?}");
    assert!(err.is_retryable());
}

#[tokio::test(flavor = "current_thread")]
async fn complete_chunked_body_then_close_is_a_clean_end() {
    let script = vec![
        write(SSE_HEAD),
        write_chunk(b"data: one\n\n"),
        write_chunk(b"data: two\n\n"),
        write(LAST_CHUNK),
    ];
    let server = serve(vec![script]).await;
    let mut stream = client(5_000, 5_000)
        .sse(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    let (data, end) = drain(&mut stream).await;
    assert_eq!((data, end), (vec!["one".into(), "two".into()], Ok(())));
    assert_eq!(stream.next_event().await, Ok(None));
}

#[tokio::test(flavor = "current_thread")]
async fn clean_end_inside_an_event_is_reported_by_finish_state() {
    let script = vec![
        write(SSE_HEAD),
        write_chunk(b"data: one\n\ndata: half"),
        write(LAST_CHUNK),
    ];
    let server = serve(vec![script]).await;
    let mut stream = client(5_000, 5_000)
        .sse(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    let (data, end) = drain(&mut stream).await;
    assert_eq!((data, end), (vec!["one".to_string()], Ok(())));
    let finish = stream.finish_state().unwrap();
    assert!(!finish.is_clean() && finish.partial_line_bytes == 10);
}

#[tokio::test(flavor = "current_thread")]
async fn cut_content_length_body_is_a_stream_error() {
    let script = vec![write(
        b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nonly part",
    )];
    let server = serve(vec![script]).await;
    let mut resp = client(5_000, 5_000)
        .request(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        resp.next_chunk().await.unwrap().as_deref(),
        Some(&b"only part"[..])
    );
    let err = resp.next_chunk().await.unwrap_err();
    assert!(
        matches!(err, HttpError::Stream { .. }) && err.is_retryable(),
        "{err:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn error_statuses_come_back_as_responses_with_capped_bodies() {
    let json = br#"{"error":{"message":"bad model","type":"invalid_request_error"}}"#;
    let big = vec![b'x'; DEFAULT_ERROR_BODY_CAP + 1000];
    let scripts = vec![
        vec![write(&plain(
            "429 Too Many Requests",
            &["retry-after: 3", "content-type: text/plain"],
            b"slow down",
        ))],
        vec![write(&plain(
            "400 Bad Request",
            &["content-type: application/json"],
            json,
        ))],
        vec![write(&plain("500 Internal Server Error", &[], &big))],
    ];
    let server = serve(scripts).await;
    let http = client(5_000, 5_000);

    let resp = http
        .request(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resp.status(), 429);
    assert!(!resp.is_success());
    assert_eq!(
        parse_retry_after(resp.headers(), SystemTime::now()),
        Some(Duration::from_secs(3))
    );
    let body = resp.text(DEFAULT_ERROR_BODY_CAP).await.unwrap();
    assert_eq!((body.text.as_str(), body.truncated), ("slow down", false));

    // A stream request that got an error status still yields the JSON body.
    let stream = http
        .sse(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(stream.status(), 400);
    assert_eq!(stream.header("Content-Type"), Some("application/json"));
    let body = stream.text(DEFAULT_ERROR_BODY_CAP).await.unwrap();
    let v: serde_json::Value = serde_json::from_str(&body.text).unwrap();
    assert_eq!(v["error"]["message"], "bad model");

    let resp = http
        .request(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resp.status(), 500);
    let body = resp.text(DEFAULT_ERROR_BODY_CAP).await.unwrap();
    assert!(body.truncated);
    assert_eq!(body.text.len(), DEFAULT_ERROR_BODY_CAP);
}

#[tokio::test(flavor = "current_thread")]
async fn connect_refused_is_a_retryable_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/chat?key=SECRET",
        listener.local_addr().unwrap()
    );
    drop(listener);
    let err = client(5_000, 5_000)
        .request(get(&url), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::Connect { .. }), "{err:?}");
    assert!(err.is_retryable());
    let msg = err.to_string();
    assert!(!msg.contains("SECRET"), "query string leaked: {msg}");
    assert!(msg.to_lowercase().contains("refused"), "{msg}");
}

#[tokio::test(flavor = "current_thread")]
async fn server_closing_before_headers_is_retryable() {
    let server = serve(vec![vec![]]).await;
    let err = client(5_000, 5_000)
        .request(get(&server.url), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::Stream { .. }), "{err:?}");
    assert!(err.is_retryable());
}

#[tokio::test(flavor = "current_thread")]
async fn first_byte_timeout_on_missing_headers_and_idle_timeout_on_plain_body() {
    let scripts = vec![
        vec![Step::Stall],
        vec![
            write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc"),
            Step::Stall,
        ],
    ];
    let server = serve(scripts).await;
    let http = client(300, 300);
    let err = http
        .request(get(&server.url), CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            HttpError::Timeout {
                kind: TimeoutKind::FirstByte,
                ..
            }
        ),
        "{err:?}"
    );
    let mut resp = http
        .request(get(&server.url), CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        resp.next_chunk().await.unwrap().as_deref(),
        Some(&b"abc"[..])
    );
    let err = resp.next_chunk().await.unwrap_err();
    assert!(
        matches!(
            err,
            HttpError::Timeout {
                kind: TimeoutKind::Idle,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn method_headers_and_body_are_sent() {
    let server = serve(vec![vec![write(&plain("200 OK", &[], b"ok"))]]).await;
    let req = HttpRequest::new("POST", format!("{}/v1/messages", server.url))
        .header("x-api-key", "k1")
        .header("content-type", "application/json")
        .body(br#"{"model":"m"}"#.to_vec());
    let resp = client(5_000, 5_000)
        .request(req, CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(resp.text(100).await.unwrap().text, "ok");
    let seen = server.requests.lock().unwrap()[0].clone();
    assert!(seen.starts_with("POST /v1/messages HTTP/1.1\r\n"), "{seen}");
    assert!(
        seen.to_ascii_lowercase().contains("x-api-key: k1"),
        "{seen}"
    );
    assert!(seen.ends_with(r#"{"model":"m"}"#), "{seen}");
}

#[tokio::test(flavor = "current_thread")]
async fn invalid_requests_are_rejected_without_retry() {
    let http = client(5_000, 5_000);
    let cases = [
        HttpRequest::new("GET", "not a url"),
        HttpRequest::new("GET", "ftp://example.com/"),
        HttpRequest::new("GE T", "http://127.0.0.1:1/"),
        HttpRequest::new("GET", "http://127.0.0.1:1/").header("x-key", "a\nb"),
        HttpRequest::new("GET", "http://127.0.0.1:1/").header("bad name", "v"),
    ];
    for req in cases {
        let err = http
            .request(req.clone(), CancellationToken::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, HttpError::InvalidRequest(_)),
            "{req:?}: {err:?}"
        );
        assert!(!err.is_retryable());
    }
}
