//! Compaction with the mock provider: /compact, the automatic trigger, recovery from a
//! context-overflow error, and the replay after resume.

use crate::common;
use common::Sandbox;

/// A mock that writes summaries when asked by the compactor, and otherwise answers with what
/// its context starts with and how many messages it holds.
const SCRIPT: &str = r#"return function(n, ctx)
  if ctx.system_prompt and ctx.system_prompt:find("You compact", 1, true) then
    local convo = ctx.messages[1].content
    return { text = "SUMMARY of " .. select(2, convo:gsub("\nuser: ", "")) .. " user turns" }
  end
  local first = ctx.messages[1].content
  if type(first) ~= "string" then first = "?" end
  if os.getenv("MOCK_OVERFLOW") and not first:find("Summary", 1, true) and #ctx.messages > 6 then
    return { error = "HTTP 400: context_length_exceeded: prompt is too long" }
  end
  return { text = string.format("ctx=%d first=%s pad=%s", #ctx.messages, first:sub(1, 60):gsub("\n", " "), string.rep("x", 400)) }
end"#;

fn repl(s: &Sandbox, input: &str, env: &[(&str, &str)], args: &[&str]) -> String {
    let script = s.write("script.lua", SCRIPT);
    let mut all = vec!["--mock-script", script.to_str().unwrap()];
    all.extend_from_slice(args);
    String::from_utf8_lossy(&s.fen_stdin(&all, input, env).stdout).into_owned()
}

fn turns(n: usize) -> String {
    (1..=n)
        .map(|i| format!("message number {i} {}\n", "y".repeat(300)))
        .collect()
}

fn session_text(s: &Sandbox) -> String {
    let root = s.state().join("fen/sessions");
    let dir = std::fs::read_dir(root)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let file = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    std::fs::read_to_string(file).unwrap()
}

#[test]
fn manual_compact_summarises_writes_the_entry_and_resume_replays_from_it() {
    let s = Sandbox::new();
    let input = format!("{}/compact keep the numbers\nafter compaction\n", turns(8));
    let out = repl(&s, &input, &[], &[]);
    let report = out
        .lines()
        .find(|l| l.starts_with("compacted "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(report.contains("kept the last"), "{report}");
    let last = out.lines().rfind(|l| l.starts_with("ai> ")).unwrap();
    assert!(
        last.contains("first=[Summary of the earlier conversation"),
        "{last}"
    );
    let session = session_text(&s);
    let compaction: serde_json::Value = session
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|r| r["type"] == "compaction")
        .expect("compaction record");
    assert_eq!(compaction["trigger"], "manual");
    assert_eq!(compaction["guidance"], "keep the numbers");
    assert!(compaction["summary"]
        .as_str()
        .unwrap()
        .starts_with("SUMMARY of"));
    assert!(
        compaction["tokens_after"].as_u64().unwrap()
            < compaction["tokens_before"].as_u64().unwrap()
    );
    assert!(compaction["first_kept_entry_id"].is_string());
    // Everything said before stays on disk.
    assert!(session.contains("message number 1 "));
    // Resuming replays from the compaction: the summary comes first.
    let out = repl(&s, "resumed question\n", &[], &["-c"]);
    assert!(
        out.contains("first=[Summary of the earlier conversation"),
        "{out}"
    );
}

#[test]
fn the_automatic_trigger_compacts_before_an_oversized_request() {
    let s = Sandbox::new();
    let out = repl(
        &s,
        &turns(12),
        &[("FEN_MOCK_CONTEXT_WINDOW", "2000")],
        &["--max-tokens", "500"],
    );
    assert!(out.contains("info> compacted"), "{out}");
    let session = session_text(&s);
    assert!(
        session.contains("\"trigger\":\"auto\""),
        "no auto compaction recorded"
    );
}

#[test]
fn a_context_overflow_error_compacts_and_retries_once() {
    let s = Sandbox::new();
    let out = repl(&s, &turns(6), &[("MOCK_OVERFLOW", "1")], &[]);
    assert!(out.contains("info> compacted"), "{out}");
    let last = out.lines().rfind(|l| l.starts_with("ai> ")).unwrap();
    assert!(last.contains("first=[Summary"), "{out}");
    assert!(!out.contains("err> HTTP 400"), "{out}");
    assert!(session_text(&s).contains("\"trigger\":\"overflow\""));
}
