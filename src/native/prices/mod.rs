//! The price catalog and what a model call cost. Data, not code: `catalog.json` (embedded) is
//! in models.dev's shape, per provider and model `cost: {input, output, cache_read,
//! cache_write}` in US dollars per million tokens and `limit: {context, output}` in tokens.
//! A user overrides any model with the same keys (models.json, see `docs/cost.md`); the
//! resolution order is the caller's (the kernel), the merging and the arithmetic are here.

use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// Dollars per million tokens; an absent price is unknown (merging keeps the other side's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
pub struct Cost {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cache_read: Option<f64>,
    pub cache_write: Option<f64>,
}

/// Token limits of a model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
pub struct Limit {
    pub context: Option<u64>,
    pub output: Option<u64>,
}

/// What the catalog knows of one model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
pub struct ModelInfo {
    #[serde(default)]
    pub cost: Option<Cost>,
    #[serde(default)]
    pub limit: Option<Limit>,
}

impl ModelInfo {
    /// `over`'s known fields replace this one's, key by key.
    pub fn merged(self, over: &ModelInfo) -> ModelInfo {
        let cost = match (self.cost, over.cost) {
            (Some(a), Some(b)) => Some(Cost {
                input: b.input.or(a.input),
                output: b.output.or(a.output),
                cache_read: b.cache_read.or(a.cache_read),
                cache_write: b.cache_write.or(a.cache_write),
            }),
            (a, b) => b.or(a),
        };
        let limit = match (self.limit, over.limit) {
            (Some(a), Some(b)) => Some(Limit {
                context: b.context.or(a.context),
                output: b.output.or(a.output),
            }),
            (a, b) => b.or(a),
        };
        ModelInfo { cost, limit }
    }
}

/// Token counts of one call, as the canonical usage carries them (`input` without cache
/// reads and writes, which are counted apart).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, Serialize)]
pub struct Tokens {
    #[serde(default)]
    pub input: u64,
    #[serde(default)]
    pub output: u64,
    #[serde(default)]
    pub cache_read: u64,
    #[serde(default)]
    pub cache_write: u64,
}

/// Dollars of one call, by kind and in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Charge {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    pub total: f64,
}

/// What `tokens` cost at `cost`. A cache price the catalog does not give is the input price
/// (providers without a cache discount bill cached tokens as input); an unknown input or
/// output price is zero.
pub fn charge(tokens: &Tokens, cost: &Cost) -> Charge {
    let per = |n: u64, price: Option<f64>| n as f64 * price.unwrap_or(0.0).max(0.0) / 1_000_000.0;
    let input = per(tokens.input, cost.input);
    let output = per(tokens.output, cost.output);
    let cache_read = per(tokens.cache_read, cost.cache_read.or(cost.input));
    let cache_write = per(tokens.cache_write, cost.cache_write.or(cost.input));
    Charge {
        input,
        output,
        cache_read,
        cache_write,
        total: input + output + cache_read + cache_write,
    }
}

#[derive(Debug, Deserialize)]
struct ProviderEntry {
    #[serde(default)]
    models: std::collections::BTreeMap<String, ModelInfo>,
}

type Catalog = std::collections::BTreeMap<String, ProviderEntry>;

fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let v: serde_json::Value =
            serde_json::from_str(include_str!("catalog.json")).unwrap_or_default();
        let mut out = Catalog::new();
        if let serde_json::Value::Object(map) = v {
            for (k, v) in map {
                if let Ok(p) = serde_json::from_value::<ProviderEntry>(v) {
                    out.insert(k, p);
                }
            }
        }
        out
    })
}

/// The spellings of a model id to try, most specific first: as given, without a
/// `vendor/` prefix, without a date or `-latest` suffix (`claude-sonnet-4-5-20250929`,
/// `gpt-4o-2024-08-06`).
fn candidates(model: &str) -> Vec<String> {
    let mut out = vec![model.to_string()];
    let base = model.rsplit('/').next().unwrap_or(model).to_string();
    if base != model {
        out.push(base.clone());
    }
    let strip = |s: &str| -> Option<String> {
        if let Some(r) = s.strip_suffix("-latest") {
            return Some(r.to_string());
        }
        let (head, tail) = s.rsplit_once('-')?;
        if tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_digit()) {
            return Some(head.to_string());
        }
        // -YYYY-MM-DD
        let parts: Vec<&str> = s.rsplitn(4, '-').collect();
        if parts.len() == 4
            && [2usize, 2, 4]
                .iter()
                .zip(&parts[..3])
                .all(|(n, p)| p.len() == *n && p.bytes().all(|b| b.is_ascii_digit()))
        {
            return Some(parts[3].to_string());
        }
        None
    };
    if let Some(s) = strip(&base) {
        out.push(s);
    }
    out
}

/// The embedded catalog's entry for a model: under its provider first, then under any
/// provider (a gateway serving `claude-sonnet-4-5` bills what Anthropic does, as far as
/// fen knows).
pub fn lookup(provider: &str, model: &str) -> Option<ModelInfo> {
    let cat = catalog();
    let names = candidates(model);
    if let Some(p) = cat.get(provider) {
        for n in &names {
            if let Some(m) = p.models.get(n) {
                return Some(*m);
            }
        }
    }
    for n in &names {
        for p in cat.values() {
            if let Some(m) = p.models.get(n) {
                return Some(*m);
            }
        }
    }
    None
}

/// A user's override for a model from models.json's top-level `models` table, keyed
/// `provider/model` or `model` (the first wins): `{"models": {"anthropic/claude-sonnet-4-5":
/// {"cost": {"input": 3}}}}`. An entry that is not in the catalog's shape is an error naming it.
pub fn user_override(
    models_json: &serde_json::Value,
    provider: &str,
    model: &str,
) -> Result<Option<ModelInfo>, String> {
    let Some(map) = models_json.get("models").and_then(|m| m.as_object()) else {
        return Ok(None);
    };
    for key in [format!("{provider}/{model}"), model.to_string()] {
        if let Some(v) = map.get(&key) {
            return serde_json::from_value::<ModelInfo>(v.clone())
                .map(Some)
                .map_err(|e| format!("models.json: models.{key}: {e}"));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_catalog_parses_and_has_the_built_in_models() {
        // Every model the built-in providers declare has a price and a window.
        for (p, m) in [
            ("anthropic", "claude-sonnet-4-5"),
            ("anthropic", "claude-opus-4-1"),
            ("anthropic", "claude-haiku-4-5"),
            ("openai", "gpt-5"),
            ("openai", "gpt-5-mini"),
            ("openai", "gpt-4.1"),
        ] {
            let info = lookup(p, m).unwrap_or_else(|| panic!("{p}/{m} missing"));
            let cost = info.cost.expect("cost");
            assert!(cost.input.unwrap_or(0.0) > 0.0 && cost.output.unwrap_or(0.0) > 0.0);
            assert!(info.limit.and_then(|l| l.context).unwrap_or(0) >= 128_000);
        }
    }

    #[test]
    fn dated_and_prefixed_ids_find_their_model() {
        let want = lookup("anthropic", "claude-sonnet-4-5");
        assert!(want.is_some());
        assert_eq!(lookup("anthropic", "claude-sonnet-4-5-20250929"), want);
        assert_eq!(lookup("openrouter", "anthropic/claude-sonnet-4-5"), want);
        assert_eq!(
            lookup("openai", "gpt-4o-2024-08-06"),
            lookup("openai", "gpt-4o")
        );
        assert_eq!(
            lookup("anthropic", "claude-3-5-haiku-latest"),
            lookup("anthropic", "claude-3-5-haiku")
        );
        assert_eq!(lookup("nobody", "no-such-model"), None);
    }

    #[test]
    fn charge_prices_each_kind_and_cache_falls_back_to_input() {
        let cost = Cost {
            input: Some(3.0),
            output: Some(15.0),
            cache_read: Some(0.3),
            cache_write: None,
        };
        let t = Tokens {
            input: 1_000_000,
            output: 200_000,
            cache_read: 2_000_000,
            cache_write: 100_000,
        };
        let c = charge(&t, &cost);
        assert!((c.input - 3.0).abs() < 1e-9);
        assert!((c.output - 3.0).abs() < 1e-9);
        assert!((c.cache_read - 0.6).abs() < 1e-9);
        assert!((c.cache_write - 0.3).abs() < 1e-9);
        assert!((c.total - 6.9).abs() < 1e-9);
    }

    #[test]
    fn overrides_merge_key_by_key_and_bad_ones_are_named() {
        let v: serde_json::Value = serde_json::json!({"models": {
            "anthropic/claude-sonnet-4-5": {"cost": {"input": 1.5}, "limit": {"context": 1000000}},
            "bad": {"cost": {"input": "cheap"}}
        }});
        let over = user_override(&v, "anthropic", "claude-sonnet-4-5")
            .expect("ok")
            .expect("found");
        let base = lookup("anthropic", "claude-sonnet-4-5").expect("catalog");
        let m = base.merged(&over);
        let cost = m.cost.expect("cost");
        assert_eq!(cost.input, Some(1.5));
        assert_eq!(cost.output, Some(15.0));
        assert_eq!(m.limit.and_then(|l| l.context), Some(1_000_000));
        assert_eq!(m.limit.and_then(|l| l.output), Some(64_000));
        let err = user_override(&v, "x", "bad").expect_err("bad entry");
        assert!(err.contains("models.bad"), "{err}");
        assert_eq!(user_override(&v, "x", "other").expect("ok"), None);
    }
}
