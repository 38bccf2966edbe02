//! Proxy environment variables are honoured. Its own test binary with a single test, because
//! the proxy variables are process-wide and read when a client is built.

use std::sync::{Arc, Mutex};

use fen::native::http::{HttpClient, HttpConfig, HttpError, HttpRequest};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// A server that records each request's first line and answers `reply` then closes.
async fn recorder(reply: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let lines = Arc::new(Mutex::new(Vec::new()));
    let seen = lines.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let mut tmp = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match socket.read(&mut tmp).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&tmp[..n]),
                }
            }
            let text = String::from_utf8_lossy(&buf).to_string();
            seen.lock()
                .unwrap()
                .push(text.lines().next().unwrap_or("").to_string());
            let _ = socket.write_all(reply.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    });
    (addr, lines)
}

const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok";
const FORBIDDEN: &str = "HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";

#[tokio::test(flavor = "current_thread")]
async fn http_proxy_https_proxy_and_no_proxy_are_honoured() {
    let (proxy, proxy_seen) = recorder(OK).await;
    let (tunnel_proxy, tunnel_seen) = recorder(FORBIDDEN).await;
    let (origin, origin_seen) = recorder(OK).await;
    for name in [
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "ALL_PROXY",
        "no_proxy",
    ] {
        std::env::remove_var(name);
    }
    std::env::set_var("HTTP_PROXY", format!("http://{proxy}"));
    std::env::set_var("HTTPS_PROXY", format!("http://{tunnel_proxy}"));
    std::env::set_var("NO_PROXY", "127.0.0.1");
    let http = HttpClient::new(HttpConfig::default()).unwrap();

    // Plain HTTP goes through HTTP_PROXY as an absolute-form request.
    let resp = http
        .request(
            HttpRequest::new("GET", "http://fen-proxy-test.invalid/x"),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(resp.text(10).await.unwrap().text, "ok");
    assert_eq!(
        proxy_seen.lock().unwrap().as_slice(),
        ["GET http://fen-proxy-test.invalid/x HTTP/1.1"]
    );

    // HTTPS tunnels through HTTPS_PROXY; a refusing proxy is a retryable connect failure.
    let err = http
        .request(
            HttpRequest::new("GET", "https://fen-proxy-test.invalid/y"),
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, HttpError::Connect { .. }), "{err:?}");
    assert!(err.is_retryable());
    assert_eq!(
        tunnel_seen.lock().unwrap().as_slice(),
        ["CONNECT fen-proxy-test.invalid:443 HTTP/1.1"]
    );

    // NO_PROXY hosts are reached directly.
    let resp = http
        .request(
            HttpRequest::new("GET", format!("http://{origin}/z")),
            CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(origin_seen.lock().unwrap().as_slice(), ["GET /z HTTP/1.1"]);
    assert_eq!(proxy_seen.lock().unwrap().len(), 1);
}
