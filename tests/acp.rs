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
    assert!(text.contains("pass 12"), "{text}");
}
