//! Subagents end to end: a parent `fen --mode json` on the fake LLM calls `subagent`, which runs
//! a real child `fen` against the same fake server (the base URL is passed down).

use crate::common::Sandbox;
use crate::support::fake_llm::{Api, FakeLlm, Reply, Scenario, Turn};
use serde_json::{json, Value};
use std::process::Output;
use std::time::{Duration, Instant};

fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The parent: `fen --mode json PROMPT` on the fake server (OpenAI chat), no session file.
fn parent_args(server: &FakeLlm, extra: &[&str], prompt: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "--mode",
        "json",
        "--no-session",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(server.base_url());
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.push(prompt.into());
    args
}

fn run_parent(s: &Sandbox, server: &FakeLlm, extra: &[&str]) -> Output {
    let args = parent_args(server, extra, "delegate");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    s.fen_env(&args, &[("OPENAI_API_KEY", "test-key")])
}

fn call(id: &str, args: Value) -> Turn {
    Turn::default().with_tool_call(id, "subagent", &args.to_string())
}

fn text(t: &str) -> Reply {
    Reply::stream(Api::OpenAiChat, Turn::text(t))
}

/// The `tool-result` events of the run, in order.
fn tool_results(evs: &[Value]) -> Vec<Value> {
    evs.iter()
        .filter(|e| e["type"] == "tool-result")
        .map(|e| e["result"].clone())
        .collect()
}

fn result_text(r: &Value) -> String {
    r["content"][0]["text"].as_str().unwrap_or("").to_string()
}

/// Every process whose command line holds `marker` (a unique task text), from /proc.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Zombies are gone for every purpose but their exit status.
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        if state.starts_with('Z') {
            continue;
        }
        if String::from_utf8_lossy(&cmd).contains(marker) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_childs_answer_comes_back_with_its_details() {
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(
                Api::OpenAiChat,
                call("c1", json!({"agent": "scout", "task": "where is main?"})),
            ))
            .then(text("main is in src/main.rs:1"))
            .then(text("the scout says src/main.rs")),
    );
    let out = run_parent(&s, &server, &[]);
    let evs = events(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&evs);
    assert_eq!(results.len(), 1, "{evs:?}");
    let r = &results[0];
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(result_text(r), "main is in src/main.rs:1");
    let d = &r["details"];
    assert_eq!(d["status"], "ok");
    assert_eq!(d["agent"], "scout");
    assert_eq!(d["turns"], 1);
    let transcript = d["transcript"].as_str().unwrap();
    let lines = std::fs::read_to_string(transcript).unwrap();
    assert!(lines.contains("\"type\":\"result\""), "{lines}");
    // The child ran with the scout's prompt and read-only tools, against the same server.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let child = &reqs[1].body;
    let system = child["messages"][0]["content"].to_string();
    assert!(system.contains("You are scout"), "{system}");
    let mut tools: Vec<String> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    tools.sort();
    assert_eq!(tools, ["find", "grep", "ls", "read"]);
    assert_eq!(reqs[1].header("authorization"), Some("Bearer test-key"));
    // No session file for the child (nor for the parent, run with --no-session).
    let sessions = s.state().join("fen/sessions");
    assert!(!sessions.exists() || std::fs::read_dir(&sessions).unwrap().count() == 0);
}
