//! The companions through the real binary and the mock provider: todo (limits, replay across
//! --continue, /reload and /compact), skills, background jobs, webfetch and completions.

use crate::common;
use common::Sandbox;
use serde_json::{json, Value};

// ---------------------------------------------------------------- todo

/// A mock that calls todo_write with $MOCK_TODO on a user line starting with "plan", writes
/// summaries for the compactor, and otherwise answers with padding (so /compact has work).
const TODO_SCRIPT: &str = r#"local native = require("fen.native")
return function(n, ctx)
  if ctx.system_prompt and ctx.system_prompt:find("You compact", 1, true) then
    return { text = "SUMMARY" }
  end
  local last = ctx.messages[#ctx.messages]
  if last.role == "user" and type(last.content) == "string" and last.content:find("^plan") then
    return { tool_calls = { { name = "todo_write", arguments = { items = native.json.decode(os.getenv("MOCK_TODO")) } } } }
  end
  return { text = "ok " .. string.rep("x", 400) }
end"#;

fn todo_items(spec: &[(&str, &str)]) -> String {
    let items: Vec<Value> = spec
        .iter()
        .map(|(text, status)| json!({"text": text, "status": status}))
        .collect();
    serde_json::to_string(&items).unwrap()
}

fn todo_repl(s: &Sandbox, input: &str, items: &str, args: &[&str]) -> String {
    let script = s.write("todo.lua", TODO_SCRIPT);
    let mut all = vec!["--mock-script", script.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = s.fen_stdin(&all, input, &[("MOCK_TODO", items)]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn tool_json(s: &Sandbox, name: &str, args: &Value) -> Value {
    let out = s.fen(&["tool", name, &args.to_string()]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn result_text(v: &Value) -> String {
    v["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn todo_write_enforces_its_limits() {
    let s = Sandbox::new();
    let many: Vec<Value> = (0..51)
        .map(|i| json!({"text": format!("t{i}"), "status": "pending"}))
        .collect();
    let r = tool_json(&s, "todo_write", &json!({ "items": many }));
    assert_eq!(r["is_error"], true);
    assert_eq!(
        result_text(&r),
        "error: items must contain at most 50 entries"
    );
    let r = tool_json(
        &s,
        "todo_write",
        &json!({"items": [{"text": "a", "status": "in_progress"}, {"text": "b", "status": "in_progress"}]}),
    );
    assert_eq!(r["is_error"], true);
    assert!(result_text(&r).contains("only one todo item may be in_progress"));
    // 240 bytes after trimming pass, 241 do not.
    let ok = format!("  {}  ", "é".repeat(120));
    let r = tool_json(
        &s,
        "todo_write",
        &json!({"items": [{"text": ok, "status": "pending"}]}),
    );
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(r["details"]["version"], 1);
    assert_eq!(r["details"]["items"][0]["text"], "é".repeat(120));
    let r = tool_json(
        &s,
        "todo_write",
        &json!({"items": [{"text": format!("{}x", "é".repeat(120)), "status": "pending"}]}),
    );
    assert_eq!(r["is_error"], true);
    assert!(result_text(&r).contains("at most 240 bytes"), "{r}");
    let r = tool_json(
        &s,
        "todo_write",
        &json!({"items": [{"text": "a", "status": "done"}]}),
    );
    assert_eq!(r["is_error"], true);
}

#[test]
fn a_rejected_list_leaves_the_previous_one_and_the_json_result_carries_it() {
    let s = Sandbox::new();
    let script = s.write(
        "s.json",
        &json!([
            {"tool_calls": [{"name": "todo_write", "arguments": {"items": [
                {"text": "a", "status": "completed"}, {"text": "b", "status": "in_progress"},
                {"text": "c", "status": "pending"}]}}]},
            {"tool_calls": [{"name": "todo_write", "arguments": {"items": [
                {"text": "x", "status": "in_progress"}, {"text": "y", "status": "in_progress"}]}}]},
            {"text": "done"}
        ])
        .to_string(),
    );
    let out = s.fen(&[
        "--mock-script",
        script.to_str().unwrap(),
        "--mode",
        "json",
        "go",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["todos"]["version"], 1, "{last}");
    assert_eq!(last["todos"]["items"][1]["text"], "b");
    assert_eq!(last["todos"]["items"].as_array().unwrap().len(), 3);
    // The status item and the panel are registered.
    let statuses = s.fen_json(&["list", "statuses", "--json"]);
    assert_eq!(common::find(&statuses, "name", "todo").len(), 1);
    let panels = s.fen_json(&["list", "panels", "--json"]);
    assert_eq!(common::find(&panels, "name", "todos").len(), 1);
}

#[test]
fn the_status_item_counts_and_hides_when_empty() {
    let s = Sandbox::new();
    std::fs::write(
        s.user_extensions().join("probe.lua"),
        r#"return function(api)
  api.register("command", { name = "probe", handler = function()
    return "status=" .. tostring(require("fen.lib.todos").status_text())
  end })
end"#,
    )
    .unwrap();
    let items = todo_items(&[("a", "completed"), ("b", "in_progress"), ("c", "pending")]);
    let out = todo_repl(&s, "/probe\nplan it\n/probe\n", &items, &[]);
    assert!(out.contains("status=nil"), "{out}");
    assert!(out.contains("status=todo:1/3"), "{out}");
    let out = todo_repl(&s, "plan clear\n/probe\n", "[]", &["-c"]);
    assert!(out.contains("status=nil"), "{out}");
}

#[test]
fn the_list_is_replayed_on_continue_and_survives_reload() {
    let s = Sandbox::new();
    let items = todo_items(&[("first", "completed"), ("second", "pending")]);
    let out = todo_repl(&s, "plan it\n", &items, &[]);
    assert!(out.contains("ai> "), "{out}");
    // A new process: no model call is needed to show it (the script would answer "ok ...").
    let out = todo_repl(&s, "/todos show\n/reload\n/todos\n", "[]", &["-c"]);
    let shown = out.matches("[x] first\n[ ] second").count();
    assert_eq!(shown, 2, "{out}");
    assert!(!out.contains("ok xxx"), "{out}");
}

fn compaction_summary(s: &Sandbox) -> String {
    let root = s.state().join("fen/sessions");
    let mut summary = String::new();
    for dir in std::fs::read_dir(root).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap_or_default();
            for line in text.lines() {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    if v["type"] == "compaction" {
                        summary = v["summary"].as_str().unwrap_or("").to_string();
                    }
                }
            }
        }
    }
    summary
}

fn chatter(n: usize) -> String {
    (1..=n)
        .map(|i| format!("message {i} {}\n", "y".repeat(300)))
        .collect()
}

#[test]
fn compaction_keeps_an_open_list_verbatim_and_drops_a_finished_one() {
    let s = Sandbox::new();
    let items = todo_items(&[("done one", "completed"), ("next", "in_progress"), ("later", "pending")]);
    let input = format!("plan it\n{}/compact\n/todos\n", chatter(6));
    let out = todo_repl(&s, &input, &items, &[]);
    assert!(out.contains("compacted "), "{out}");
    let summary = compaction_summary(&s);
    assert!(
        summary.contains("[x] done one\n[~] next\n[ ] later"),
        "{summary}"
    );
    // Resumed after the compaction (the todo_write call was summarised away): still there.
    let out = todo_repl(&s, "/todos\n", &items, &["-c"]);
    assert!(out.contains("[~] next\n[ ] later"), "{out}");

    let s = Sandbox::new();
    let items = todo_items(&[("a", "completed"), ("b", "completed")]);
    let input = format!("plan it\n{}/compact\n", chatter(6));
    let out = todo_repl(&s, &input, &items, &[]);
    assert!(out.contains("compacted "), "{out}");
    let summary = compaction_summary(&s);
    assert!(summary.starts_with("SUMMARY"), "{summary}");
    assert!(!summary.contains("[x]"), "{summary}");
}
