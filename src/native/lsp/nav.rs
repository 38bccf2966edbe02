//! Code navigation: definition, references, hover, symbols, implementations and call
//! hierarchy, asked of the server of a file. Positions in and out are 1-based with columns in
//! characters (as `read` shows them); each location comes with its line of text.

use super::manager::{relative, Item, Manager, NavResult};
use super::position::{char_to_utf16_col, path_to_uri, uri_to_path, utf16_to_char_col};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The operations the `lsp` tool offers.
pub const OPERATIONS: [&str; 8] = [
    "definition",
    "references",
    "hover",
    "document_symbols",
    "workspace_symbols",
    "implementation",
    "incoming_calls",
    "outgoing_calls",
];

/// Most locations returned.
pub const MAX_ITEMS: usize = 200;
/// How long after it starts a server may still be indexing: an empty `workspace/symbol`
/// answer is asked again in that time.
const INDEXING: Duration = Duration::from_secs(20);

const KINDS: [&str; 26] = [
    "file",
    "module",
    "namespace",
    "package",
    "class",
    "method",
    "property",
    "field",
    "constructor",
    "enum",
    "interface",
    "function",
    "variable",
    "constant",
    "string",
    "number",
    "boolean",
    "array",
    "object",
    "key",
    "null",
    "enum member",
    "struct",
    "event",
    "operator",
    "type parameter",
];

fn kind_name(v: &Value) -> Option<String> {
    let k = v.as_u64()? as usize;
    KINDS.get(k.checked_sub(1)?).map(|s| s.to_string())
}

/// A request.
pub struct Query<'a> {
    pub operation: &'a str,
    pub path: Option<&'a Path>,
    /// 1-based.
    pub line: u32,
    /// 1-based, in characters.
    pub column: u32,
    pub query: &'a str,
    pub cwd: &'a Path,
    pub timeout: Duration,
}

struct Lines(HashMap<PathBuf, Option<Vec<String>>>);

impl Lines {
    fn line(&mut self, path: &Path, line: u32) -> Option<String> {
        let lines = self.0.entry(path.to_path_buf()).or_insert_with(|| {
            std::fs::read_to_string(path).ok().map(|t| {
                t.split('\n')
                    .map(|l| l.trim_end_matches('\r').to_string())
                    .collect()
            })
        });
        lines.as_ref()?.get(line as usize).cloned()
    }
}

/// (uri, start position) of a Location, LocationLink, or an item with `selectionRange`.
fn location(v: &Value) -> Option<(String, &Value)> {
    if let Some(uri) = v["targetUri"].as_str() {
        let r = if v["targetSelectionRange"].is_object() {
            &v["targetSelectionRange"]
        } else {
            &v["targetRange"]
        };
        return Some((uri.to_string(), &r["start"]));
    }
    let uri = v["uri"].as_str().or(v["location"]["uri"].as_str())?;
    for r in [&v["selectionRange"], &v["range"], &v["location"]["range"]] {
        if r.is_object() {
            return Some((uri.to_string(), &r["start"]));
        }
    }
    // A WorkspaceSymbol without a range.
    static ZERO: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    Some((
        uri.to_string(),
        ZERO.get_or_init(|| json!({"line": 0, "character": 0})),
    ))
}

fn item(lines: &mut Lines, cwd: &Path, v: &Value, depth: u32) -> Option<Item> {
    let (uri, start) = location(v)?;
    let path = uri_to_path(&uri)?;
    let line = start["line"].as_u64().unwrap_or(0) as u32;
    let units = start["character"].as_u64().unwrap_or(0) as u32;
    let text = lines.line(&path, line).unwrap_or_default();
    Some(Item {
        path: relative(&path, cwd),
        line: line + 1,
        column: utf16_to_char_col(&text, units) + 1,
        context: text.trim().chars().take(200).collect(),
        name: v["name"].as_str().map(str::to_string),
        kind: kind_name(&v["kind"]),
        depth,
    })
}

fn flatten_symbols(
    lines: &mut Lines,
    cwd: &Path,
    uri: &str,
    list: &Value,
    depth: u32,
    out: &mut Vec<Item>,
) {
    for s in list.as_array().into_iter().flatten() {
        if out.len() >= MAX_ITEMS {
            return;
        }
        let mut v = s.clone();
        if v.get("location").is_none() && v.get("uri").is_none() {
            v["uri"] = json!(uri);
        }
        if let Some(i) = item(lines, cwd, &v, depth) {
            out.push(i);
        }
        flatten_symbols(lines, cwd, uri, &s["children"], depth + 1, out);
    }
}

fn hover_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().map(hover_text).collect::<Vec<_>>().join("\n\n"),
        Value::Object(o) => o.get("value").map(hover_text).unwrap_or_default(),
        _ => String::new(),
    }
}

async fn ask(
    conn: &super::client::Conn,
    server: &str,
    deadline: Instant,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    match tokio::time::timeout_at(deadline.into(), conn.request(method, params)).await {
        Ok(r) => r.map_err(|e| format!("{server} answered {method} with an error: {e}")),
        Err(_) => Err(format!("{server} did not answer {method} in time")),
    }
}

impl Manager {
    /// Runs one navigation request. Errors are messages for the model.
    pub async fn navigate(&self, q: Query<'_>) -> Result<NavResult, String> {
        if !OPERATIONS.contains(&q.operation) {
            return Err(format!(
                "unknown operation \"{}\"; use one of {}",
                q.operation,
                OPERATIONS.join(", ")
            ));
        }
        self.sync_all().await;
        let deadline = Instant::now() + q.timeout;
        let Some(path) = q.path else {
            return Err(
                "`path` is required (for workspace_symbols, any file of the language)".into(),
            );
        };
        if !path.is_file() {
            return Err(format!("{} is not a file", path.display()));
        }
        let Some(server) = self.open(path).await else {
            return Err(format!(
                "no language server for {} (see `/lsp` for the servers and why they are not running)",
                path.display()
            ));
        };
        let (conn, caps) = self.connection(path, deadline).await?;
        let uri = path_to_uri(path);
        let text = tokio::fs::read_to_string(path).await.unwrap_or_default();
        let line_text = text
            .split('\n')
            .nth(q.line.saturating_sub(1) as usize)
            .unwrap_or("");
        let pos = json!({
            "line": q.line.saturating_sub(1),
            "character": char_to_utf16_col(line_text, q.column.saturating_sub(1)),
        });
        let at = json!({"textDocument": {"uri": uri}, "position": pos});
        let needs = |cap: &str| -> Result<(), String> {
            match &caps[cap] {
                Value::Null | Value::Bool(false) => {
                    Err(format!("{server} does not support {}", q.operation))
                }
                _ => Ok(()),
            }
        };
        let mut lines = Lines(HashMap::new());
        let mut out = NavResult {
            server: server.clone(),
            ..NavResult::default()
        };
        let cwd = q.cwd;
        let push_all = |out: &mut NavResult, lines: &mut Lines, v: &Value| {
            let list: Vec<Value> = match v {
                Value::Array(a) => a.clone(),
                Value::Null => Vec::new(),
                other => vec![other.clone()],
            };
            for l in list.iter().take(MAX_ITEMS) {
                if let Some(i) = item(lines, cwd, l, 0) {
                    out.items.push(i);
                }
            }
        };
        match q.operation {
            "definition" => {
                needs("definitionProvider")?;
                let v = ask(&conn, &server, deadline, "textDocument/definition", at).await?;
                push_all(&mut out, &mut lines, &v);
            }
            "implementation" => {
                needs("implementationProvider")?;
                let v = ask(&conn, &server, deadline, "textDocument/implementation", at).await?;
                push_all(&mut out, &mut lines, &v);
            }
            "references" => {
                needs("referencesProvider")?;
                let mut p = at;
                p["context"] = json!({"includeDeclaration": true});
                let v = ask(&conn, &server, deadline, "textDocument/references", p).await?;
                push_all(&mut out, &mut lines, &v);
            }
            "hover" => {
                needs("hoverProvider")?;
                let v = ask(&conn, &server, deadline, "textDocument/hover", at).await?;
                let t = hover_text(&v["contents"]);
                out.text = Some(t.trim().to_string());
            }
            "document_symbols" => {
                needs("documentSymbolProvider")?;
                let v = ask(
                    &conn,
                    &server,
                    deadline,
                    "textDocument/documentSymbol",
                    json!({"textDocument": {"uri": uri}}),
                )
                .await?;
                flatten_symbols(&mut lines, cwd, &uri, &v, 0, &mut out.items);
            }
            "workspace_symbols" => {
                needs("workspaceSymbolProvider")?;
                let mut pause = Duration::from_millis(250);
                loop {
                    let v = ask(
                        &conn,
                        &server,
                        deadline,
                        "workspace/symbol",
                        json!({"query": q.query}),
                    )
                    .await?;
                    // A server still indexing the workspace answers nothing (pyright does
                    // for its first seconds): ask again while it is young, within the deadline.
                    let empty = v.as_array().is_none_or(|a| a.is_empty());
                    if empty && self.young(path, INDEXING) && Instant::now() + pause < deadline {
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(1));
                        continue;
                    }
                    push_all(&mut out, &mut lines, &v);
                    break;
                }
            }
            _ => {
                needs("callHierarchyProvider")?;
                let prepared = ask(
                    &conn,
                    &server,
                    deadline,
                    "textDocument/prepareCallHierarchy",
                    at,
                )
                .await?;
                let incoming = q.operation == "incoming_calls";
                for it in prepared.as_array().into_iter().flatten().take(5) {
                    let (method, field) = if incoming {
                        ("callHierarchy/incomingCalls", "from")
                    } else {
                        ("callHierarchy/outgoingCalls", "to")
                    };
                    let v = ask(&conn, &server, deadline, method, json!({"item": it})).await?;
                    for call in v.as_array().into_iter().flatten().take(MAX_ITEMS) {
                        if let Some(i) = item(&mut lines, cwd, &call[field], 0) {
                            out.items.push(i);
                        }
                    }
                }
            }
        }
        Ok(out)
    }
}
