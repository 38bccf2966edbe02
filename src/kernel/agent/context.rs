//! Context assembly and repair: the canonical messages the loop appends (user, aborted, error,
//! tool results), what a provider is sent (system prompt, repaired history, tool specs), and
//! the model facts the loop needs (context window, overflow errors as the provider declares
//! them).

use super::{now_ms, Agent};
use crate::kernel::convert;
use crate::kernel::state::{self, Inner};
use crate::kernel::tools::{Block, ToolOutcome};
use mlua::{Lua, Table, Value};

/// A message with plain text content (user turns, steering, follow-ups).
pub fn text_message(lua: &Lua, role: &str, text: &str) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("role", role)?;
    m.set("content", text)?;
    m.set("timestamp", now_ms())?;
    Ok(m)
}

/// A user message: plain text content, or, with images, `[text block, image blocks...]`.
pub fn user_message(lua: &Lua, text: &str, images: &[Table]) -> mlua::Result<Table> {
    if images.is_empty() {
        return text_message(lua, "user", text);
    }
    let content = empty_array(lua)?;
    let block = lua.create_table()?;
    block.set("type", "text")?;
    block.set("text", text)?;
    content.push(block)?;
    for image in images {
        content.push(image.clone())?;
    }
    let m = lua.create_table()?;
    m.set("role", "user")?;
    m.set("content", content)?;
    m.set("timestamp", now_ms())?;
    Ok(m)
}

/// An empty table that encodes as `[]` (content is always an array).
pub fn empty_array(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set_metatable(Some(mlua::LuaSerdeExt::array_metatable(lua)))?;
    Ok(t)
}

/// The assistant message a cancelled step leaves: empty, `stop_reason = "aborted"`.
pub fn aborted_message(lua: &Lua, agent: &Agent) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("role", "assistant")?;
    m.set("content", empty_array(lua)?)?;
    m.set("stop_reason", "aborted")?;
    m.set("timestamp", now_ms())?;
    m.set("provider", agent.provider().as_str())?;
    m.set("model", agent.model().as_str())?;
    Ok(m)
}

/// An assistant message that ended in error (never sent back to a provider).
pub fn error_message(lua: &Lua, agent: &Agent, msg: &str) -> mlua::Result<Table> {
    let m = aborted_message(lua, agent)?;
    m.set("stop_reason", "error")?;
    m.set("error_message", msg)?;
    Ok(m)
}

/// The text blocks of an assistant message, joined.
pub fn visible_text(message: &Table) -> mlua::Result<String> {
    let mut out = String::new();
    if let Ok(content) = message.get::<Table>("content") {
        for block in content.sequence_values::<Table>().flatten() {
            if block.get::<Option<String>>("type")?.as_deref() == Some("text") {
                out.push_str(&block.get::<Option<String>>("text")?.unwrap_or_default());
            }
        }
    }
    Ok(out)
}

/// Fills what a provider left out of its message (role, content array, timestamp, names).
pub fn normalize_assistant(lua: &Lua, agent: &Agent, m: Table) -> mlua::Result<Table> {
    m.set("role", "assistant")?;
    match m.get::<Value>("content")? {
        // An empty table from Lua would encode as `{}`: content is always an array.
        Value::Table(t) if t.is_empty() && t.metatable().is_none() => {
            t.set_metatable(Some(mlua::LuaSerdeExt::array_metatable(lua)))?;
        }
        Value::Table(_) => {}
        _ => m.set("content", empty_array(lua)?)?,
    }
    if m.get::<Value>("timestamp")?.is_nil() {
        m.set("timestamp", now_ms())?;
    }
    if m.get::<Value>("provider")?.is_nil() {
        m.set("provider", agent.provider().as_str())?;
    }
    if m.get::<Value>("model")?.is_nil() {
        m.set("model", agent.model().as_str())?;
    }
    if m.get::<Value>("stop_reason")?.is_nil() {
        m.set("stop_reason", "stop")?;
    }
    Ok(m)
}

/// The system prompt: every `api.prompt` fragment, the `base` one replaced by `--system`.
pub fn system_prompt(inner: &Inner, agent: &Agent) -> String {
    match &agent.config.system_override {
        Some(base) => {
            let rest = state::assemble_prompt_without(inner, "base");
            if rest.is_empty() {
                base.clone()
            } else {
                format!("{base}\n\n{rest}")
            }
        }
        None => state::assemble_prompt(inner),
    }
}

/// Tools as providers see them: `{name, description, parameters}` of every active tool, less
/// those with `exposure = "search"` (offered once their owner flips it to `direct`).
pub fn tool_specs(lua: &Lua, inner: &Inner) -> mlua::Result<Table> {
    // `--no-tools` leaves it empty: still a JSON array for a provider that encodes it.
    let out = empty_array(lua)?;
    let filter = inner.tool_filter.borrow();
    let specs: Vec<Table> = inner
        .registry
        .borrow()
        .active("tool")
        .iter()
        .filter(|c| c.name.as_deref().is_some_and(|n| filter.allows(n)))
        .map(|c| c.spec.clone())
        .collect();
    for spec in specs {
        if spec
            .get::<Option<String>>("exposure")
            .ok()
            .flatten()
            .as_deref()
            == Some("search")
        {
            continue;
        }
        let t = lua.create_table()?;
        t.set("name", spec.get::<Value>("name")?)?;
        t.set("description", spec.get::<Value>("description")?)?;
        t.set("parameters", spec.get::<Value>("parameters")?)?;
        out.push(t)?;
    }
    Ok(out)
}

/// The provider spec of the agent's provider, if registered.
pub fn provider_spec(inner: &Inner, agent: &Agent) -> Option<Table> {
    inner
        .registry
        .borrow()
        .get("provider", &agent.provider())
        .map(|c| c.spec.clone())
}

/// The model's context window: what the provider declares for it, the price catalog's or the
/// user's models.json override (`super::cost::model_info`); 128k when none says.
pub fn context_window(inner: &Inner, agent: &Agent) -> u64 {
    super::cost::model_info(inner, agent)
        .limit
        .and_then(|l| l.context)
        .filter(|n| *n > 0)
        .unwrap_or(128_000)
}

/// Whether an assistant message is the provider saying "the request was too big for the
/// model's context": the provider spec's `context_overflow` phrases (lower case) found in its
/// error text. The phrases belong to the provider, not the kernel.
pub fn is_context_overflow(inner: &Inner, agent: &Agent, message: &Table) -> bool {
    if message
        .get::<Option<String>>("stop_reason")
        .ok()
        .flatten()
        .as_deref()
        != Some("error")
    {
        return false;
    }
    let text = message
        .get::<Option<String>>("error_message")
        .ok()
        .flatten()
        .unwrap_or_default()
        .to_lowercase();
    let Some(spec) = provider_spec(inner, agent) else {
        return false;
    };
    let phrases: Vec<String> = spec
        .get::<Option<Vec<String>>>("context_overflow")
        .ok()
        .flatten()
        .unwrap_or_default();
    phrases
        .iter()
        .any(|p| !p.is_empty() && text.contains(&p.to_lowercase()))
}

/// The conversation as sent to a provider: assistant turns that ended in error or were aborted
/// are left out, every tool call gets a result (a synthetic one if none was recorded) and
/// results without their call are dropped. Repairs history loaded from elsewhere too.
pub fn provider_context(lua: &Lua, messages: &Table) -> mlua::Result<Table> {
    let out = lua.create_table()?;
    let mut open_calls: Vec<(String, String)> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let close_open =
        |out: &Table, open: &mut Vec<(String, String)>, answered: &[String]| -> mlua::Result<()> {
            for (id, name) in open.drain(..) {
                if !answered.contains(&id) {
                    out.push(synthetic_result(
                        lua,
                        &id,
                        &name,
                        "[fen: no result was recorded for this tool call (interrupted)]",
                    )?)?;
                }
            }
            Ok(())
        };
    for m in messages.sequence_values::<Table>() {
        let m = m?;
        let role: String = m.get::<Option<String>>("role")?.unwrap_or_default();
        match role.as_str() {
            "assistant" => {
                let stop: Option<String> = m.get("stop_reason")?;
                if matches!(stop.as_deref(), Some("error") | Some("aborted")) {
                    continue;
                }
                close_open(&out, &mut open_calls, &answered)?;
                answered.clear();
                if let Ok(content) = m.get::<Table>("content") {
                    for b in content.sequence_values::<Table>().flatten() {
                        if b.get::<Option<String>>("type")?.as_deref() == Some("tool-call") {
                            let id: String = b.get::<Option<String>>("id")?.unwrap_or_default();
                            let name: String = b.get::<Option<String>>("name")?.unwrap_or_default();
                            open_calls.push((id, name));
                        }
                    }
                }
                out.push(m)?;
            }
            "tool-result" => {
                let id: String = m.get::<Option<String>>("tool_call_id")?.unwrap_or_default();
                let known = open_calls.iter().any(|(c, _)| *c == id);
                if known && !answered.contains(&id) {
                    answered.push(id);
                    out.push(m)?;
                }
            }
            _ => {
                close_open(&out, &mut open_calls, &answered)?;
                answered.clear();
                out.push(m)?;
            }
        }
    }
    close_open(&out, &mut open_calls, &answered)?;
    Ok(out)
}

fn synthetic_result(lua: &Lua, id: &str, name: &str, text: &str) -> mlua::Result<Table> {
    result_message(lua, id, name, &ToolOutcome::error(text))
}

/// The `tool-result` message for one call's outcome.
pub fn result_message(
    lua: &Lua,
    id: &str,
    name: &str,
    outcome: &ToolOutcome,
) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("role", "tool-result")?;
    m.set("tool_call_id", id)?;
    m.set("tool_name", name)?;
    let content = empty_array(lua)?;
    for block in &outcome.content {
        let b = lua.create_table()?;
        match block {
            Block::Text(text) => {
                b.set("type", "text")?;
                b.set("text", text.as_str())?;
            }
            Block::Image { data, mime_type } => {
                b.set("type", "image")?;
                b.set("data", data.as_str())?;
                b.set("mime_type", mime_type.as_str())?;
            }
        }
        content.push(b)?;
    }
    m.set("content", content)?;
    m.set("is_error", outcome.is_error)?;
    if !outcome.details.is_null() {
        m.set("details", convert::json_to_lua(lua, &outcome.details)?)?;
    }
    m.set("timestamp", now_ms())?;
    Ok(m)
}
