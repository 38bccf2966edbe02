//! MCP client benchmarks, as ratios against baselines measured in the same run, against the
//! test server (tests/support/mcp_server.py, stdio).
//!
//! 1. Call overhead: 2000 `echo` calls through the manager (rmcp, timeout, cancellation,
//!    result mapping) vs. the same JSON-RPC lines written and read on a bare pipe to the same
//!    server. What fen adds per call over the server's own cost.
//! 2. Start-up: spawn, `initialize` and `tools/list` through the manager vs. spawning the
//!    server and doing the same three exchanges by hand.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fen::native::mcp::{config, Manager, Status};
use tokio_util::sync::CancellationToken;

const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_server.py");
const CALLS: usize = 2000;
const STARTS: usize = 10;

fn bare_session(calls: usize) -> (Duration, Duration) {
    let t = Instant::now();
    let mut child = Command::new("python3")
        .arg(SERVER)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    let mut ask = |msg: String, reply: bool| {
        stdin.write_all(msg.as_bytes()).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
        if reply {
            line.clear();
            out.read_line(&mut line).expect("read");
            assert!(line.contains("\"result\""), "{line}");
        }
    };
    ask(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}"#.into(), true);
    ask(
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into(),
        false,
    );
    ask(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.into(),
        true,
    );
    let started = t.elapsed();
    let t = Instant::now();
    for i in 0..calls {
        ask(
            format!(
                r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hi"}}}}}}"#,
                i + 2
            ),
            true,
        );
    }
    let called = t.elapsed();
    drop(stdin);
    let _ = child.wait();
    (started, called)
}

async fn manager_session(m: &Manager, calls: usize) -> (Duration, Duration) {
    let t = Instant::now();
    m.reconnect("b");
    m.wait(None).await;
    let started = t.elapsed();
    let s = m.servers();
    assert_eq!(s[0].status, Status::Ready, "{:?}", s[0].error);
    let t = Instant::now();
    for _ in 0..calls {
        let mut args = serde_json::Map::new();
        args.insert("text".into(), "hi".into());
        let r = m.call("b", "echo", args, CancellationToken::new()).await;
        assert!(r.is_ok_and(|o| !o.is_error));
    }
    (started, t.elapsed())
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let text =
        format!(r#"{{"mcpServers": {{"b": {{"command": "python3", "args": ["{SERVER}"]}}}}}}"#);
    let (servers, errors) = config::parse(&text, Path::new("bench.json"), false, &|_| None);
    assert!(errors.is_empty());
    let m = Manager::new();
    let logs = tempfile::tempdir().expect("temp dir");
    m.configure(servers, logs.path().to_path_buf(), Default::default());

    let (_, base_calls) = bare_session(CALLS);
    let (_, fen_calls) = rt.block_on(manager_session(&m, CALLS));
    let per = |d: Duration| d.as_secs_f64() * 1e6 / CALLS as f64;
    println!(
        "mcp call: {:.1} us/call via fen vs {:.1} us/call bare pipe: ratio {:.2}",
        per(fen_calls),
        per(base_calls),
        fen_calls.as_secs_f64() / base_calls.as_secs_f64()
    );

    let mut base = Duration::ZERO;
    let mut ours = Duration::ZERO;
    for _ in 0..STARTS {
        base += bare_session(0).0;
        ours += rt.block_on(manager_session(&m, 0)).0;
    }
    println!(
        "mcp start-up: {:.1} ms via fen vs {:.1} ms bare: ratio {:.2}",
        ours.as_secs_f64() * 1e3 / STARTS as f64,
        base.as_secs_f64() * 1e3 / STARTS as f64,
        ours.as_secs_f64() / base.as_secs_f64()
    );
    fen::native::mcp::terminate_all();
}
