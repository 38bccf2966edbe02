//! The agent loop through the library: queues, error turns kept but not re-sent, and the
//! repair of a history whose tool calls lack results.

use crate::common;
use common::Sandbox;
use fen::host::Kernel;
use fen::kernel::agent::{self, Agent};
use std::rc::Rc;

fn boot_with_agent(s: &Sandbox, script: &str) -> (Kernel, Rc<Agent>) {
    common::boot_with_agent(s, &s.write("script.lua", script))
}

/// A mock that answers with the roles (and stop reasons) of the context it was sent.
const ECHO_CONTEXT: &str = r#"return function(n, ctx)
  local roles = {}
  for _, m in ipairs(ctx.messages) do
    local c = type(m.content) == "string" and (":" .. m.content) or ""
    roles[#roles + 1] = m.role .. (m.stop_reason and ("/" .. m.stop_reason) or "") .. c
  end
  if n == 1 then return { error = "first call fails" } end
  return { text = table.concat(roles, " ") }
end"#;

#[test]
fn an_error_turn_stays_in_the_transcript_but_is_not_sent_again() {
    let s = Sandbox::new();
    let (k, a) = boot_with_agent(&s, ECHO_CONTEXT);
    let r1 = fen::cmd::block_on(agent::run_turn(&k.lua, &k.inner, &a, "one")).unwrap();
    assert_eq!(r1.status.as_str(), "error");
    assert_eq!(r1.error.as_deref(), Some("first call fails"));
    let r2 = fen::cmd::block_on(agent::run_turn(&k.lua, &k.inner, &a, "two")).unwrap();
    assert_eq!(r2.status.as_str(), "ok");
    assert_eq!(r2.text.as_deref(), Some("user:one user:two"));
    // The transcript keeps the failed assistant turn.
    assert_eq!(a.messages.raw_len(), 4);
}

#[test]
fn steering_is_drained_before_the_next_call_and_follow_ups_after_a_natural_stop() {
    let s = Sandbox::new();
    let script = r#"return function(n, ctx)
  local roles = {}
  for _, m in ipairs(ctx.messages) do
    roles[#roles + 1] = m.role .. (type(m.content) == "string" and (":" .. m.content) or "")
  end
  if n == 1 then return { tool_calls = { { name = "ls", arguments = {} } } } end
  return { text = table.concat(roles, " ") }
end"#;
    let (k, a) = boot_with_agent(&s, script);
    a.enqueue("steering", "steer me".into()).unwrap();
    a.enqueue("follow-up", "and then this".into()).unwrap();
    let r = fen::cmd::block_on(agent::run_turn(&k.lua, &k.inner, &a, "start")).unwrap();
    assert_eq!(r.status.as_str(), "ok");
    // Steering came before the first call; the follow-up ran after the natural stop (turn 3).
    assert_eq!(
        r.text.as_deref(),
        Some("user:start user:steer me assistant tool-result assistant user:and then this")
    );
    assert!(a.enqueue("sideways", "x".into()).is_err());
}

#[test]
fn history_with_a_missing_result_or_an_orphan_result_is_repaired_before_sending() {
    let s = Sandbox::new();
    let (k, _a) = boot_with_agent(&s, ECHO_CONTEXT);
    let history: mlua::Table = k
        .lua
        .load(
            r#"return {
      { role = "user", content = "hi", timestamp = 1 },
      { role = "assistant", timestamp = 2, stop_reason = "tool-use", content = {
          { type = "tool-call", id = "a", name = "ls", arguments = {} },
          { type = "tool-call", id = "b", name = "ls", arguments = {} } } },
      { role = "tool-result", tool_call_id = "a", tool_name = "ls", content = {}, is_error = false, timestamp = 3 },
      { role = "tool-result", tool_call_id = "zzz", tool_name = "ls", content = {}, is_error = false, timestamp = 4 },
      { role = "user", content = "next", timestamp = 5 },
    }"#,
        )
        .eval()
        .unwrap();
    let ctx = agent::context::provider_context(&k.lua, &history).unwrap();
    let summary: Vec<String> = ctx
        .sequence_values::<mlua::Table>()
        .map(|m| {
            let m = m.unwrap();
            let role: String = m.get("role").unwrap();
            let id: Option<String> = m.get("tool_call_id").unwrap();
            format!("{role}{}", id.map(|i| format!("({i})")).unwrap_or_default())
        })
        .collect();
    assert_eq!(
        summary,
        [
            "user",
            "assistant",
            "tool-result(a)",
            "tool-result(b)",
            "user"
        ]
    );
    let synthetic: mlua::Table = ctx.get(4).unwrap();
    assert!(synthetic.get::<bool>("is_error").unwrap());
}
