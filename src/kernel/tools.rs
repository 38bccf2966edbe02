//! The tool pipeline shared by `fen tool` and the agent loop: look the tool up, validate the
//! arguments against its JSON schema, execute it (async, cancellable), turn anything it returns
//! or raises into a canonical result, and sanitize every text block. Whatever happens, the
//! caller gets exactly one result.

use super::convert;
use super::state::Inner;
use crate::native::sanitize;
use mlua::{Function, Lua, Table, Value};
use tokio_util::sync::CancellationToken;

/// One content block of a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// `{type = "text", text}`.
    Text(String),
    /// `{type = "image", data, mime_type}`: base64 image data, checked by [`image_block`].
    Image { data: String, mime_type: String },
}

impl Block {
    /// The text of a text block.
    pub fn text(&self) -> Option<&str> {
        match self {
            Block::Text(t) => Some(t),
            Block::Image { .. } => None,
        }
    }

    fn to_json(&self) -> serde_json::Value {
        match self {
            Block::Text(t) => serde_json::json!({"type": "text", "text": t}),
            Block::Image { data, mime_type } => {
                serde_json::json!({"type": "image", "data": data, "mime_type": mime_type})
            }
        }
    }
}

impl From<String> for Block {
    fn from(s: String) -> Block {
        Block::Text(s)
    }
}

/// Image types a tool may return (what the providers take).
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/// Largest base64 image payload accepted from a tool (the read tool sends at most 5 MB).
const MAX_IMAGE_DATA: usize = 8 * 1024 * 1024;

/// Checks an image block from Lua: a known type and base64 data of a sane size. `Err` is the
/// note that replaces it.
fn image_block(b: &Table) -> Result<Block, String> {
    let mime_type: String = b
        .get::<Option<String>>("mime_type")
        .ok()
        .flatten()
        .unwrap_or_default();
    if !IMAGE_TYPES.contains(&mime_type.as_str()) {
        return Err(format!(
            "[fen: image block dropped: mime_type {mime_type:?} is not one of {}]",
            IMAGE_TYPES.join(", ")
        ));
    }
    let data: String = b
        .get::<Option<String>>("data")
        .ok()
        .flatten()
        .unwrap_or_default();
    let base64ish = data
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'='));
    if data.is_empty() || !base64ish || data.len() > MAX_IMAGE_DATA {
        return Err(format!(
            "[fen: image block dropped: data must be base64 of at most {MAX_IMAGE_DATA} bytes]"
        ));
    }
    Ok(Block::Image { data, mime_type })
}

/// A tool's result: text and image blocks for the model, `details` for presenters only.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    pub content: Vec<Block>,
    pub is_error: bool,
    pub details: serde_json::Value,
    /// False when the tool never ran (unknown tool, invalid arguments).
    pub ran: bool,
}

impl ToolOutcome {
    pub fn error(message: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            content: vec![Block::Text(message.into())],
            is_error: true,
            details: serde_json::Value::Null,
            ran: false,
        }
    }

    /// `{"content": [{"type": "text", "text": ...}], "is_error": bool, "details": {...}}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "content": self.content.iter().map(Block::to_json).collect::<Vec<_>>(),
            "is_error": self.is_error,
            "details": self.details,
        })
    }

    /// [`ToolOutcome::to_json`] as JSON text, written without copying the text blocks into a
    /// `serde_json::Value` first (same bytes: keys in the same, sorted, order).
    pub fn to_json_string(&self) -> String {
        // Fields in sorted order, as `serde_json::Value` writes them.
        #[derive(serde::Serialize)]
        #[serde(untagged)]
        enum View<'a> {
            Text {
                text: &'a str,
                #[serde(rename = "type")]
                kind: &'static str,
            },
            Image {
                data: &'a str,
                mime_type: &'a str,
                #[serde(rename = "type")]
                kind: &'static str,
            },
        }
        #[derive(serde::Serialize)]
        struct Outcome<'a> {
            content: Vec<View<'a>>,
            details: &'a serde_json::Value,
            is_error: bool,
        }
        let view = Outcome {
            content: self
                .content
                .iter()
                .map(|b| match b {
                    Block::Text(text) => View::Text { text, kind: "text" },
                    Block::Image { data, mime_type } => View::Image {
                        data,
                        mime_type,
                        kind: "image",
                    },
                })
                .collect(),
            details: &self.details,
            is_error: self.is_error,
        };
        serde_json::to_string(&view).unwrap_or_else(|_| self.to_json().to_string())
    }

    /// Sanitizes every text block (the one sanitizer pass before results are stored or sent);
    /// image blocks were checked when they were taken from Lua.
    fn sanitized(mut self) -> ToolOutcome {
        let cap = sanitize::default_max_bytes();
        for block in &mut self.content {
            let Block::Text(block) = block else {
                continue;
            };
            let clean = sanitize::sanitize(block.as_bytes(), cap);
            if clean.report.escaped > 0 || clean.report.truncated {
                *block = clean.text.into_owned();
            }
        }
        self
    }
}

/// A text block from Lua. Lua strings are bytes: ones that are not UTF-8 are sanitized here,
/// while the bytes are still at hand, so they show as `\xNN` with the sanitizer's marker
/// instead of being lost to U+FFFD (the final pass leaves sanitized text unchanged).
/// The common valid case is checked with SIMD, which matters for a 50 KB read.
fn block_text(s: &mlua::LuaString) -> String {
    let bytes = s.as_bytes();
    match simdutf8::basic::from_utf8(&bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => sanitize::sanitize(&bytes, sanitize::default_max_bytes())
            .text
            .into_owned(),
    }
}

/// Which tools the model is offered and may call: `--tools` (fnmatch patterns, comma
/// separated: `read,grep*`), `--denied-tools`, `--no-tools`. A call to another tool gets
/// `error: tool restricted by --tools: NAME`.
#[derive(Debug, Default)]
pub struct ToolFilter {
    allow: Option<globset::GlobSet>,
    deny: Option<globset::GlobSet>,
    none: bool,
}

impl ToolFilter {
    /// Builds the filter; a pattern that is not a valid glob is an error naming it.
    pub fn new(allow: Option<&str>, deny: Option<&str>, none: bool) -> Result<ToolFilter, String> {
        let set = |list: &str, flag: &str| -> Result<globset::GlobSet, String> {
            let mut b = globset::GlobSetBuilder::new();
            for p in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                b.add(globset::Glob::new(p).map_err(|e| format!("{flag} {p:?}: {e}"))?);
            }
            b.build().map_err(|e| e.to_string())
        };
        Ok(ToolFilter {
            allow: allow.map(|a| set(a, "--tools")).transpose()?,
            deny: deny.map(|d| set(d, "--denied-tools")).transpose()?,
            none,
        })
    }

    /// Whether `name` may be offered and called.
    pub fn allows(&self, name: &str) -> bool {
        if self.none {
            return false;
        }
        if self.deny.as_ref().is_some_and(|d| d.is_match(name)) {
            return false;
        }
        self.allow.as_ref().is_none_or(|a| a.is_match(name))
    }
}

/// Context handed to `execute` as its third argument.
#[derive(Debug, Clone, Default)]
pub struct ToolCallContext {
    pub tool_call_id: Option<String>,
    pub cancel: CancellationToken,
    /// The turn the call belongs to: a user interrupt while the tool's Lua runs cancels it.
    pub turn: Option<CancellationToken>,
}

/// Validates `args` against the tool's schema; `Err` names the field and what is wrong.
pub fn validate_args(
    tool: &str,
    schema: &serde_json::Value,
    args: &serde_json::Value,
) -> Result<(), String> {
    if !args.is_object() {
        return Err(format!(
            "error: invalid arguments for {tool}: expected a JSON object, got {args}"
        ));
    }
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        // A broken schema is the tool author's bug; do not block the call on it.
        Err(_) => return Ok(()),
    };
    let errors: Vec<String> = validator
        .iter_errors(args)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{}: {e}", at.trim_start_matches('/'))
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "error: invalid arguments for {tool}: {}",
            errors.join("; ")
        ))
    }
}

/// Runs one tool through the whole pipeline.
pub async fn run_tool(
    lua: &Lua,
    inner: &Inner,
    name: &str,
    args: serde_json::Value,
    ctx: ToolCallContext,
) -> ToolOutcome {
    let spec: Option<Table> = inner
        .registry
        .borrow()
        .get("tool", name)
        .map(|c| c.spec.clone());
    let Some(spec) = spec else {
        let names: Vec<String> = inner
            .registry
            .borrow()
            .active("tool")
            .iter()
            .filter_map(|c| c.name.clone())
            .collect();
        let hint = crate::kernel::suggest::did_you_mean(name, names.iter().map(String::as_str))
            .map(|s| format!(" (did you mean {s}?)"))
            .unwrap_or_default();
        return ToolOutcome::error(format!(
            "error: unknown tool: {name}{hint}; available: {}",
            names.join(", ")
        ));
    };
    let schema = match spec
        .get::<Value>("parameters")
        .map_err(|e| e.to_string())
        .and_then(|v| convert::lua_to_json(lua, &v).map_err(|e| e.to_string()))
    {
        Ok(s) => s,
        Err(e) => {
            return ToolOutcome::error(format!(
                "error: the parameters schema of {name} cannot be read: {e}"
            ))
        }
    };
    if let Err(msg) = validate_args(name, &schema, &args) {
        return ToolOutcome::error(msg);
    }
    let outcome = match execute(lua, &spec, name, &args, &ctx).await {
        Ok(o) => o,
        Err(_) if ctx.cancel.is_cancelled() => ToolOutcome {
            ran: true,
            ..ToolOutcome::error(format!(
                "[cancelled] {name} was cancelled before completion"
            ))
        },
        Err(e) => ToolOutcome {
            ran: true,
            ..ToolOutcome::error(format!(
                "error: tool {name} failed: {}",
                convert::error_parts(&e).0
            ))
        },
    };
    let outcome = after_tool(lua, inner, name, &args, outcome, &ctx).await;
    outcome.sanitized()
}

/// Runs every hook's `after_tool(tool_name, args, result, ctx)` on a call that ran, in the
/// call's scope (it may wait; cancelling the call stops it): a string it returns is appended
/// to the result as a text block (the language-server companion adds the diagnostics an edit
/// introduced). Hooks can only add; one that fails is logged and the result stays as it was.
async fn after_tool(
    lua: &Lua,
    inner: &Inner,
    name: &str,
    args: &serde_json::Value,
    mut outcome: ToolOutcome,
    ctx: &ToolCallContext,
) -> ToolOutcome {
    if !outcome.ran {
        return outcome;
    }
    let hooks: Vec<(String, Function)> = inner.registry.borrow().hook_functions("after_tool");
    for (owner, f) in hooks {
        if ctx.cancel.is_cancelled() {
            break;
        }
        let call = async {
            let result = lua.create_table()?;
            result.set("is_error", outcome.is_error)?;
            result.set("details", convert::json_to_lua(lua, &outcome.details)?)?;
            let text: Vec<&str> = outcome.content.iter().filter_map(Block::text).collect();
            result.set("text", text.join("\n"))?;
            let c = lua.create_table()?;
            c.set("tool_call_id", ctx.tool_call_id.clone())?;
            c.set("tool_name", name)?;
            let mut scope = crate::kernel::calls::Scope::new(
                ctx.cancel.clone(),
                None,
                &format!("the after_tool hook of {owner}"),
            );
            if let Some(turn) = &ctx.turn {
                scope = scope.interrupting(turn);
            }
            crate::kernel::calls::call_async::<Value>(
                lua,
                &f,
                (name, convert::json_to_lua(lua, args)?, result, c),
                scope,
            )
            .await
        };
        match call.await {
            Ok(Value::String(s)) => {
                let text = s.to_string_lossy();
                if !text.is_empty() {
                    outcome.content.push(Block::Text(text));
                }
            }
            Ok(_) => {}
            Err(e) => inner.logger.log(
                super::log::Level::Error,
                &owner,
                &format!(
                    "the after_tool hook failed on {name}: {}",
                    convert::error_parts(&e).0
                ),
            ),
        }
    }
    outcome
}

async fn execute(
    lua: &Lua,
    spec: &Table,
    name: &str,
    args: &serde_json::Value,
    ctx: &ToolCallContext,
) -> mlua::Result<ToolOutcome> {
    let execute: Function = spec.get("execute")?;
    let lua_args = convert::json_to_lua(lua, args)?;
    let yield_fn = yield_fn(lua, &ctx.cancel)?;
    let ctx_table = lua.create_table()?;
    ctx_table.set("tool_call_id", ctx.tool_call_id.clone())?;
    ctx_table.set("tool_name", name)?;
    ctx_table.set("cancelled", {
        let cancel = ctx.cancel.clone();
        lua.create_function(move |_, ()| Ok(cancel.is_cancelled()))?
    })?;
    // The call runs in a scope of its own: natives that wait (processes, search) observe this
    // call's token, and the instruction hook stops a runaway loop once it is cancelled.
    let mut scope =
        crate::kernel::calls::Scope::new(ctx.cancel.clone(), None, &format!("tool {name}"));
    if let Some(turn) = &ctx.turn {
        scope = scope.interrupting(turn);
    }
    let value = crate::kernel::calls::call_async::<Value>(
        lua,
        &execute,
        (lua_args, yield_fn, ctx_table),
        scope,
    )
    .await?;
    Ok(shape_result(lua, name, value))
}

/// The cooperative `yield_fn` handed to tools and providers: lets the executor run (the UI
/// paints, other work proceeds) and raises "cancelled" once the turn was cancelled.
pub fn yield_fn(lua: &Lua, cancel: &CancellationToken) -> mlua::Result<Function> {
    let cancel = cancel.clone();
    lua.create_async_function(move |_, ()| {
        let cancel = cancel.clone();
        async move {
            tokio::task::yield_now().await;
            if cancel.is_cancelled() {
                return Err(mlua::Error::runtime("cancelled"));
            }
            Ok(())
        }
    })
}

/// Accepts what a tool returned: a result table, or a bare string (one text block).
fn shape_result(lua: &Lua, name: &str, value: Value) -> ToolOutcome {
    let mut out = ToolOutcome {
        content: Vec::new(),
        is_error: false,
        details: serde_json::Value::Null,
        ran: true,
    };
    match value {
        Value::String(s) => out.content.push(block_text(&s).into()),
        Value::Table(t) => {
            out.is_error = t
                .get::<Option<bool>>("is_error")
                .ok()
                .flatten()
                .unwrap_or(false);
            match t.get::<Value>("content") {
                Ok(Value::String(s)) => out.content.push(block_text(&s).into()),
                Ok(Value::Table(blocks)) => {
                    for block in blocks.sequence_values::<Value>().flatten() {
                        match block {
                            Value::String(s) => out.content.push(block_text(&s).into()),
                            Value::Table(b)
                                if b.get::<Option<String>>("type").ok().flatten().as_deref()
                                    == Some("image") =>
                            {
                                out.content
                                    .push(image_block(&b).unwrap_or_else(Block::Text));
                            }
                            Value::Table(b) => {
                                if let Ok(Some(text)) = b.get::<Option<mlua::LuaString>>("text") {
                                    out.content.push(block_text(&text).into());
                                }
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
            if let Ok(details) = t.get::<Value>("details") {
                if !details.is_nil() {
                    match convert::lua_to_json(lua, &details) {
                        Ok(d) => out.details = d,
                        // Details are for presenters; a bad value is reported, not lost silently.
                        Err(e) => {
                            out.details = serde_json::json!({"error": format!("details: {e}")})
                        }
                    }
                }
            }
        }
        Value::Nil => out
            .content
            .push(Block::Text(format!("{name} returned nothing"))),
        other => out.content.push(Block::Text(format!(
            "{name} returned a {} instead of a result table",
            other.type_name()
        ))),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{validate_args, Block, ToolOutcome};
    use serde_json::json;

    #[test]
    fn the_json_text_is_that_of_to_json() {
        let outcomes = [
            ToolOutcome {
                content: vec![
                    Block::Text("a\tb\n\"q\"".into()),
                    Block::Image {
                        data: "iVBORw0KGgo=".into(),
                        mime_type: "image/png".into(),
                    },
                    Block::Text("\u{1b}é".into()),
                ],
                is_error: false,
                details: json!({"z": 1, "a": [null, {"k": "v"}], "m": "x"}),
                ran: true,
            },
            ToolOutcome::error("error: nope"),
            ToolOutcome {
                content: Vec::new(),
                is_error: true,
                details: json!([]),
                ran: true,
            },
        ];
        for o in outcomes {
            assert_eq!(
                o.to_json_string(),
                serde_json::to_string(&o.to_json()).unwrap()
            );
        }
    }

    #[test]
    fn arguments_are_checked_against_the_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1},
                "paths": {"type": "array", "items": {"anyOf": [{"type": "string"}]}},
            },
            "required": ["path"],
        });
        assert_eq!(
            validate_args("t", &schema, &json!({"path": "a", "limit": 3})),
            Ok(())
        );
        let err = validate_args("t", &schema, &json!({"path": "a", "limit": 0})).unwrap_err();
        assert!(
            err.starts_with("error: invalid arguments for t: limit: "),
            "{err}"
        );
        let err = validate_args("t", &schema, &json!({"limit": 2})).unwrap_err();
        assert!(err.contains("\"path\" is a required property"), "{err}");
        let err = validate_args("t", &schema, &json!([])).unwrap_err();
        assert!(err.contains("expected a JSON object"), "{err}");
    }

    /// A schema that is not valid JSON Schema (checked against the draft 2020-12 meta-schema)
    /// is the tool author's bug: the call is not blocked on it.
    #[test]
    fn a_broken_schema_does_not_block_the_call() {
        for schema in [
            json!({"type": "object", "properties": {"path": {"type": 5}}}),
            json!({"type": "object", "required": "path"}),
            json!({"type": "object", "properties": {"n": {"minimum": "one"}}}),
        ] {
            assert_eq!(
                validate_args("t", &schema, &json!({"path": 1})),
                Ok(()),
                "{schema}"
            );
        }
    }
}
