//! SSE consumption speed: `HttpClient` + SSE parser + serde_json on 100,000 OpenAI-shaped
//! text-delta events from a local server, against `curl -sN URL -o /dev/null` on the same
//! server in the same run. Prints times, the ratio, and peak RSS (VmHWM).
//!
//! Two server modes: `bulk` (64 KiB HTTP chunks, measures parsing throughput) and `per-event`
//! (one HTTP chunk and one write per event, like a real provider; measures per-event cost).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fen::native::http::{HttpClient, HttpConfig, HttpRequest};
use fen::native::sse::{SseItem, SseParser};
use tokio_util::sync::CancellationToken;

const EVENTS: usize = 100_000;
const EVENT: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";
const RUNS: usize = 3;

fn main() {
    let events: Arc<Vec<Vec<u8>>> = Arc::new(
        (0..EVENTS)
            .map(|_| EVENT.as_bytes().to_vec())
            .chain([DONE.as_bytes().to_vec()])
            .collect(),
    );
    let total_bytes: usize = events.iter().map(Vec::len).sum();
    let addr = start_server(events.clone());
    println!(
        "http bench: {EVENTS} events, {:.2} MB of SSE, best of {RUNS} runs",
        total_bytes as f64 / 1e6
    );
    println!("VmHWM before client runs: {} kB", vm_hwm_kb());

    for (label, json) in [
        ("SSE parser alone", false),
        ("SSE parser + serde_json", true),
    ] {
        let t = best_of(|| parse_in_memory(&events, json));
        println!(
            "{label:>24} in memory: {:>7.1} ms ({:.0} MB/s)",
            ms(t),
            total_bytes as f64 / 1e6 / t.as_secs_f64()
        );
    }

    let have_curl = Command::new("curl").arg("--version").output().is_ok();
    for mode in ["bulk", "per-event"] {
        let url = format!("http://{addr}/{mode}");
        let curl = have_curl.then(|| best_of(|| consume_with_curl(&url)));
        for (label, json) in [("events only", false), ("events + JSON", true)] {
            let fen = best_of(|| consume_with_fen(&url, json));
            print!("{mode:>9} {label:>13}: fen {:>7.1} ms", ms(fen));
            match curl {
                Some(curl) => println!(
                    " | curl {:>7.1} ms | ratio fen/curl {:.2}x",
                    ms(curl),
                    fen.as_secs_f64() / curl.as_secs_f64()
                ),
                None => println!(" | curl not found, no baseline"),
            }
        }
    }
    println!(
        "VmHWM after (includes the in-process server and its payload): {} kB",
        vm_hwm_kb()
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn best_of(mut f: impl FnMut() -> Duration) -> Duration {
    (0..RUNS).map(|_| f()).min().unwrap_or_default()
}

/// The whole fen-side pipeline: request, SSE events, and (if `json`) decoding every delta.
fn consume_with_fen(url: &str, json: bool) -> Duration {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    let started = Instant::now();
    let chars = local.block_on(&rt, async {
        let client = HttpClient::new(HttpConfig::default()).expect("client");
        let mut stream = client
            .sse(HttpRequest::new("GET", url), CancellationToken::new())
            .await
            .expect("request");
        let mut chars = 0usize;
        while let Some(event) = stream.next_event().await.expect("event") {
            if event.data == "[DONE]" {
                continue;
            }
            if !json {
                chars += 1;
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(&event.data).expect("json");
            chars += v["choices"][0]["delta"]["content"]
                .as_str()
                .map_or(0, str::len);
        }
        chars
    });
    let elapsed = started.elapsed();
    assert_eq!(chars, EVENTS, "lost events");
    elapsed
}

fn consume_with_curl(url: &str) -> Duration {
    let started = Instant::now();
    let status = Command::new("curl")
        .args(["-sN", url, "-o", "/dev/null"])
        .stdout(Stdio::null())
        .status()
        .expect("curl");
    assert!(status.success());
    started.elapsed()
}

fn parse_in_memory(events: &[Vec<u8>], json: bool) -> Duration {
    let bytes: Vec<u8> = events.concat();
    let started = Instant::now();
    let mut parser = SseParser::new();
    let mut items = Vec::new();
    let mut n = 0usize;
    for piece in bytes.chunks(16 * 1024) {
        parser.push_into(piece, &mut items);
        for item in items.drain(..) {
            if let SseItem::Event(e) = item {
                if e.data != "[DONE]" && !json {
                    n += 1;
                } else if e.data != "[DONE]" {
                    let v: serde_json::Value = serde_json::from_str(&e.data).expect("json");
                    n += usize::from(v["choices"].is_array());
                }
            }
        }
    }
    assert_eq!(n, EVENTS);
    started.elapsed()
}

fn start_server(events: Arc<Vec<Vec<u8>>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        for socket in listener.incoming().flatten() {
            let events = events.clone();
            std::thread::spawn(move || {
                let _ = serve_one(socket, &events);
            });
        }
    });
    addr
}

fn serve_one(socket: TcpStream, events: &[Vec<u8>]) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let mut reader = BufReader::new(socket.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let mut out = socket;
    out.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n",
    )?;
    if request_line.contains("/per-event") {
        for e in events {
            let mut framed = format!("{:x}\r\n", e.len()).into_bytes();
            framed.extend_from_slice(e);
            framed.extend_from_slice(b"\r\n");
            out.write_all(&framed)?;
        }
    } else {
        let body = events.concat();
        for piece in body.chunks(64 * 1024) {
            write!(out, "{:x}\r\n", piece.len())?;
            out.write_all(piece)?;
            out.write_all(b"\r\n")?;
        }
    }
    out.write_all(b"0\r\n\r\n")?;
    out.flush()
}

fn vm_hwm_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
