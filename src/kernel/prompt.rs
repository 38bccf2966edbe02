//! System prompt assembly from fragments contributed with `api.prompt(text_or_fn, opts)`.
//! Fragments are ordered by `order` (default 100), then registration; a function fragment is
//! called at assembly time and may return nil or "" to contribute nothing.

use mlua::{Function, Value};

#[derive(Clone, Debug)]
pub enum PromptContent {
    Text(String),
    Dynamic(Function),
}

#[derive(Clone, Debug)]
pub struct PromptFragment {
    pub owner: String,
    pub id: String,
    pub title: Option<String>,
    pub order: f64,
    pub seq: u64,
    pub content: PromptContent,
}

/// Orders fragments and renders them, separated by blank lines. A dynamic fragment that raises
/// is skipped and reported through `on_error(owner, id, message)`: a broken extension must not
/// take the whole prompt down.
pub fn assemble(fragments: &[PromptFragment], on_error: impl FnMut(&str, &str, String)) -> String {
    render(fragments, on_error)
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The fragments in prompt order with their rendered text; empty ones left out.
pub fn render(
    fragments: &[PromptFragment],
    mut on_error: impl FnMut(&str, &str, String),
) -> Vec<(&PromptFragment, String)> {
    let mut sorted: Vec<&PromptFragment> = fragments.iter().collect();
    sorted.sort_by(|a, b| a.order.total_cmp(&b.order).then(a.seq.cmp(&b.seq)));
    let mut parts = Vec::new();
    for f in sorted {
        let text = match &f.content {
            PromptContent::Text(t) => t.clone(),
            PromptContent::Dynamic(func) => match func.call::<Value>(()) {
                Ok(Value::String(s)) => s.to_string_lossy(),
                Ok(_) => String::new(),
                Err(e) => {
                    on_error(&f.owner, &f.id, e.to_string());
                    String::new()
                }
            },
        };
        let text = text.trim();
        if !text.is_empty() {
            parts.push((f, text.to_string()));
        }
    }
    parts
}
