//! What a model call cost, for every provider: the kernel prices each assistant message's
//! usage from one resolution of the model's entry (the embedded catalog, then what the
//! provider declares for the model, then the user's models.json override; later wins key by
//! key) and sets `usage.cost` before `llm-end` is emitted, so every presenter, the session
//! file and `--mode json` see the same figures. A subscription login (`usage.subscription`)
//! is not priced: presenters show its tokens.

use super::context::provider_spec;
use super::Agent;
use crate::kernel::log::Level;
use crate::kernel::state::Inner;
use crate::native::prices::{self, Limit, ModelInfo, Tokens};
use mlua::{Lua, LuaSerdeExt, Table, Value};

/// What the provider's spec declares for the model: `cost` and `limit` as in the catalog,
/// and the older `context_window` / `max_output_tokens`.
fn declared(inner: &Inner, agent: &Agent) -> ModelInfo {
    let Some(models) = provider_spec(inner, agent).and_then(|p| p.get::<Table>("models").ok())
    else {
        return ModelInfo::default();
    };
    let model = agent.model();
    let Some(entry) = models
        .sequence_values::<Table>()
        .flatten()
        .find(|m| m.get::<Option<String>>("id").ok().flatten().as_deref() == Some(model.as_str()))
    else {
        return ModelInfo::default();
    };
    let mut info = ModelInfo {
        cost: entry
            .get::<Option<Table>>("cost")
            .ok()
            .flatten()
            .and_then(|t| from_table(&t)),
        limit: entry
            .get::<Option<Table>>("limit")
            .ok()
            .flatten()
            .and_then(|t| from_table(&t)),
    };
    let window = entry.get::<Option<u64>>("context_window").ok().flatten();
    let out = entry.get::<Option<u64>>("max_output_tokens").ok().flatten();
    if window.is_some() || out.is_some() {
        let l = info.limit.unwrap_or_default();
        info.limit = Some(Limit {
            context: l.context.or(window),
            output: l.output.or(out),
        });
    }
    info
}

fn from_table<T: serde::de::DeserializeOwned>(t: &Table) -> Option<T> {
    let v: serde_json::Value = serde_json::to_value(t).ok()?;
    serde_json::from_value(v).ok()
}

/// models.json's top-level `models` override for this model (read afresh: a small file, and
/// edits apply without a restart). A bad entry is logged and ignored.
fn user(inner: &Inner, provider: &str, model: &str) -> Option<ModelInfo> {
    let text = std::fs::read_to_string(inner.paths.config_dir.join("models.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    match prices::user_override(&v, provider, model) {
        Ok(o) => o,
        Err(e) => {
            inner.logger.log(Level::Warn, "kernel", &e);
            None
        }
    }
}

/// The model's resolved entry (price and limits).
pub fn model_info(inner: &Inner, agent: &Agent) -> ModelInfo {
    let (provider, model) = (agent.provider(), agent.model());
    let mut info = prices::lookup(&provider, &model).unwrap_or_default();
    info = info.merged(&declared(inner, agent));
    if let Some(o) = user(inner, &provider, &model) {
        info = info.merged(&o);
    }
    info
}

/// Sets `usage.cost` on an assistant message (see the module comment). Leaves a message
/// without usage, a subscription's, or one of a model without a known price as it is.
pub fn annotate(lua: &Lua, inner: &Inner, agent: &Agent, message: &Table) -> mlua::Result<()> {
    let Ok(usage) = message.get::<Table>("usage") else {
        return Ok(());
    };
    if usage.get::<Option<bool>>("subscription")?.unwrap_or(false) {
        usage.set("cost", Value::Nil)?;
        return Ok(());
    }
    let Some(cost) = model_info(inner, agent).cost else {
        return Ok(());
    };
    let n = |k: &str| -> u64 {
        usage
            .get::<Option<f64>>(k)
            .ok()
            .flatten()
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(|v| v as u64)
            .unwrap_or(0)
    };
    let tokens = Tokens {
        input: n("input"),
        output: n("output"),
        cache_read: n("cache_read"),
        cache_write: n("cache_write"),
    };
    usage.set("cost", lua.to_value(&prices::charge(&tokens, &cost))?)?;
    Ok(())
}
