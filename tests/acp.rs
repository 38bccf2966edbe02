//! `fen acp` driven by the official ACP client library (`@agentclientprotocol/sdk` from npm) in
//! tests/acp/acp.test.mjs: initialize, sessions, prompts with tool calls and permission
//! requests, diffs, cancel, load and list, fs delegation, a client's MCP server, slash commands.
//! Needs node and `npm ci` in tests/acp (.ci/run does it); skipped with a notice otherwise.

use std::path::Path;
use std::process::Command;

#[test]
fn the_official_acp_client_drives_fen_acp() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/acp");
    if Command::new("node").arg("--version").output().is_err() {
        eprintln!("note: node is not installed; skipping the ACP client tests (tests/acp)");
        return;
    }
    if !dir.join("node_modules/@agentclientprotocol/sdk").is_dir() {
        eprintln!("note: run `npm ci` in tests/acp to install the ACP client library; skipping the ACP client tests");
        return;
    }
    let out = Command::new("node")
        .args(["--test", "--test-reporter=spec", "acp.test.mjs"])
        .current_dir(&dir)
        .env("FEN_BIN", env!("CARGO_BIN_EXE_fen"))
        .env(
            "FEN_MCP_SERVER",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/mcp_server.py"),
        )
        .output()
        .expect("run node");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the ACP client tests failed:\n{text}");
    // Every scenario ran (none skipped for a missing server).
    assert!(text.contains("pass 14"), "{text}");
}

/// Bad params (checked against contracts/protocols.toml) get a JSON-RPC error naming the field
/// and what was expected, and the session goes on. Raw lines: the client library would refuse
/// to send most of them.
#[test]
fn bad_acp_params_get_invalid_params_naming_the_field() {
    use crate::common::Sandbox;
    use serde_json::{json, Value};
    use std::io::{BufRead, BufReader, Write};

    let s = Sandbox::new();
    let script = s.write("script.json", r#"[{"text":"fine"}]"#);
    let mut child = s
        .command(&["acp", "--mock-script", script.to_str().unwrap()])
        .spawn()
        .expect("start fen acp");
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let cwd = s.cwd().to_string_lossy().to_string();
    let mut ask = |msg: Value| -> Value {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "fen acp closed its output"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == msg["id"] {
                return v;
            }
        }
    };
    let req = |id: i64, method: &str, params: Value| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let err = |v: &Value| {
        assert_eq!(v["error"]["code"], -32602, "{v}");
        v["error"]["message"].as_str().unwrap().to_string()
    };
    let e = err(&ask(req(1, "initialize", json!({}))));
    assert!(
        e.contains("initialize: field 'protocolVersion' is required"),
        "{e}"
    );
    let r = ask(req(
        2,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    ));
    assert_eq!(r["result"]["protocolVersion"], 1, "{r}");
    let e = err(&ask(req(
        3,
        "session/new",
        json!({"cwd": 7, "mcpServers": []}),
    )));
    assert!(
        e.contains("session/new: field 'cwd' expected string, got a number"),
        "{e}"
    );
    let e = err(&ask(req(
        4,
        "session/new",
        json!({"cwd": cwd, "mcpServers": [{"command": "x"}]}),
    )));
    assert!(e.contains("mcpServers[1]: field 'name' is required"), "{e}");
    let r = ask(req(5, "session/new", json!({"cwd": cwd, "mcpServers": []})));
    let sid = r["result"]["sessionId"]
        .as_str()
        .expect("a session")
        .to_string();
    let e = err(&ask(req(
        6,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "video", "data": "x"}]}),
    )));
    assert!(
        e.contains("prompt[1]: field 'type' expected one of \"text\", \"image\""),
        "{e}"
    );
    let e = err(&ask(req(7, "session/prompt", json!({"sessionId": sid}))));
    assert!(e.contains("field 'prompt' is required"), "{e}");
    let e = err(&ask(req(
        8,
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "god"}),
    )));
    assert!(e.contains("field 'modeId' expected one of \"safe\""), "{e}");
    let r = ask(req(
        9,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hi"}]}),
    ));
    assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success());
}
