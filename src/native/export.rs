//! A conversation as one file to keep or share: self-contained HTML, Markdown, or JSON.
//!
//! The HTML needs nothing but itself: styles inlined, code highlighted here (the TUI's
//! engines, `term::highlight`), images as `data:` URLs, folding with `<details>` (no script at
//! all), and a Content-Security-Policy that forbids every fetch, so opening it from disk
//! makes no request. Model text is rendered from markdown with raw HTML escaped and remote
//! images turned into links. Text is exported as stored: what the sanitizer escaped or a
//! provider redacted stays so.

use crate::native::term::highlight;
use crate::native::term::style::{Color, Span};
use serde_json::Value;
use std::fmt::Write as _;

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Html,
    Markdown,
    Json,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "html" => Some(Format::Html),
            "markdown" | "md" => Some(Format::Markdown),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    pub fn extension(self) -> &'static str {
        match self {
            Format::Html => "html",
            Format::Markdown => "md",
            Format::Json => "json",
        }
    }
}

/// What is exported: canonical messages (contracts/types.toml) and a title.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    pub title: String,
    /// The session id, when there is one.
    pub id: Option<String>,
    pub messages: Vec<Value>,
}

/// The transcript in `format`.
pub fn render(t: &Transcript, format: Format) -> String {
    match format {
        Format::Html => html(t),
        Format::Markdown => markdown(t),
        Format::Json => {
            let v = serde_json::json!({
                "title": t.title, "id": t.id, "messages": t.messages, "usage": totals(t).json(),
            });
            serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
        }
    }
}

/// Writes `text` to `path` whole or not at all: a temporary file beside it, then a rename.
pub fn write_file(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)?;
    tmp.write_all(text.as_bytes())?;
    tmp.flush()?;
    // A temporary file is private (0600); an export is an ordinary file.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn text_blocks(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Tokens and dollars by model, summed over the assistant messages.
#[derive(Debug, Default)]
struct Totals {
    rows: Vec<(String, [u64; 4], f64, usize, bool)>,
}

impl Totals {
    fn json(&self) -> Value {
        Value::Array(
            self.rows
                .iter()
                .map(|(m, t, c, priced, sub)| {
                    serde_json::json!({"model": m, "input": t[0], "output": t[1],
                        "cache_read": t[2], "cache_write": t[3],
                        "cost": if *priced > 0 { serde_json::json!(c) } else { Value::Null },
                        "subscription": sub})
                })
                .collect(),
        )
    }
}

fn totals(t: &Transcript) -> Totals {
    let mut out = Totals::default();
    for m in t.messages.iter().filter(|m| m["role"] == "assistant") {
        let u = &m["usage"];
        if !u.is_object() {
            continue;
        }
        let model = format!(
            "{}/{}",
            m["provider"].as_str().unwrap_or("?"),
            m["model"].as_str().unwrap_or("?")
        );
        let i = match out.rows.iter().position(|r| r.0 == model) {
            Some(i) => i,
            None => {
                out.rows.push((model, [0; 4], 0.0, 0, false));
                out.rows.len() - 1
            }
        };
        let r = &mut out.rows[i];
        for (k, key) in ["input", "output", "cache_read", "cache_write"]
            .iter()
            .enumerate()
        {
            r.1[k] += u[*key].as_f64().unwrap_or(0.0).max(0.0) as u64;
        }
        if u["subscription"] == true {
            r.4 = true;
        } else if let Some(c) = u["cost"]["total"].as_f64() {
            r.2 += c;
            r.3 += 1;
        }
    }
    out
}

/// One line of a tool call for its summary: the tool and its main argument.
fn call_summary(call: &Value) -> String {
    let name = call["name"].as_str().unwrap_or("?");
    let a = &call["arguments"];
    let main = ["command", "path", "file_path", "pattern", "url", "query"]
        .iter()
        .find_map(|k| a[*k].as_str())
        .unwrap_or("");
    let main: String = main.replace('\n', " ↵ ").chars().take(120).collect();
    if main.is_empty() {
        name.to_string()
    } else {
        format!("{name} {main}")
    }
}

/// The unified diff an edit or write result carries (as the TUI shows it).
fn result_diff(r: &Value) -> Option<String> {
    if r["is_error"] == true {
        return None;
    }
    let d = &r["details"];
    if let Some(files) = d["files"].as_array() {
        let parts: Vec<&str> = files.iter().filter_map(|f| f["diff"].as_str()).collect();
        if !parts.is_empty() {
            return Some(parts.concat());
        }
    }
    d["diff"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn css_color(c: Color) -> Option<&'static str> {
    Some(match c {
        Color::Red | Color::BrightRed => "#c4372f",
        Color::Green | Color::BrightGreen => "#2e7d32",
        Color::Yellow | Color::BrightYellow => "#9a6700",
        Color::Blue | Color::BrightBlue => "#1f5fbf",
        Color::Magenta | Color::BrightMagenta => "#8e3aa8",
        Color::Cyan | Color::BrightCyan => "#0b7285",
        Color::BrightBlack => "#6e7781",
        _ => return None,
    })
}

fn spans_html(line: &[Span], out: &mut String) {
    for s in line {
        let text = esc(s.text.trim_end_matches('\n'));
        let mut style = String::new();
        if let Some(c) = s.style.fg.and_then(css_color) {
            let _ = write!(style, "color:{c};");
        }
        if s.style.bold {
            style.push_str("font-weight:bold;");
        }
        if s.style.italic {
            style.push_str("font-style:italic;");
        }
        if style.is_empty() {
            out.push_str(&text);
        } else {
            let _ = write!(out, "<span style=\"{style}\">{text}</span>");
        }
    }
}

/// A fenced code block, highlighted when the language is known and the block is not huge.
fn code_html(lang: &str, code: &str) -> String {
    let mut out = format!("<pre class=\"code\" data-lang=\"{}\"><code>", esc(lang));
    let highlighted = (!lang.is_empty() && code.len() <= 256 * 1024)
        .then(|| highlight::highlight_now(lang, code.trim_end_matches('\n')))
        .flatten();
    match highlighted {
        Some(lines) => {
            for (i, l) in lines.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                spans_html(l, &mut out);
            }
        }
        None => out.push_str(&esc(code.trim_end_matches('\n'))),
    }
    out.push_str("</code></pre>\n");
    out
}

/// Markdown to HTML: raw HTML shown as text, images as links (nothing is fetched), fenced
/// code highlighted.
fn markdown_html(text: &str) -> String {
    use pulldown_cmark::{CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};
    let mut out = String::new();
    let mut events: Vec<Event> = Vec::new();
    let mut code: Option<(String, String)> = None;
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for ev in Parser::new_ext(text, opts) {
        match ev {
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => highlight::lang_token(&info).to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((lang, body)) = code.take() {
                    events.push(Event::Html(CowStr::from(code_html(&lang, &body))));
                }
            }
            Event::Text(t) if code.is_some() => {
                if let Some((_, body)) = code.as_mut() {
                    body.push_str(&t);
                }
            }
            Event::Html(h) | Event::InlineHtml(h) => events.push(Event::Text(h)),
            Event::Start(Tag::Image { dest_url, .. }) => {
                events.push(Event::Html(CowStr::from(format!(
                    "<a class=\"image-link\" href=\"{}\">[image: ",
                    esc(&dest_url)
                ))));
            }
            Event::End(TagEnd::Image) => {
                events.push(Event::Html(CowStr::from("]</a>")));
            }
            other => events.push(other),
        }
    }
    pulldown_cmark::html::push_html(&mut out, events.into_iter());
    out
}

fn diff_html(diff: &str) -> String {
    let mut out = String::from("<pre class=\"diff\">");
    for line in diff.lines() {
        let class = if line.starts_with("+++") || line.starts_with("---") {
            "file"
        } else if line.starts_with('+') {
            "add"
        } else if line.starts_with('-') {
            "del"
        } else if line.starts_with("@@") {
            "hunk"
        } else {
            "ctx"
        };
        let _ = writeln!(out, "<span class=\"{class}\">{}</span>", esc(line));
    }
    out.push_str("</pre>");
    out
}

/// A tool result's content blocks: text preformatted, images inline.
fn result_body(r: &Value) -> String {
    let mut out = String::new();
    match &r["content"] {
        Value::String(s) => {
            let _ = write!(out, "<pre class=\"result\">{}</pre>", esc(s));
        }
        Value::Array(blocks) => {
            for b in blocks {
                match b["type"].as_str() {
                    Some("text") => {
                        let _ = write!(
                            out,
                            "<pre class=\"result\">{}</pre>",
                            esc(b["text"].as_str().unwrap_or(""))
                        );
                    }
                    Some("image") => out.push_str(&image_html(b)),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

fn image_html(b: &Value) -> String {
    let mime = b["mime_type"].as_str().unwrap_or("image/png");
    let data = b["data"].as_str().unwrap_or("");
    // Only a real image type and base64 text go into the data URL.
    let mime_ok = mime.starts_with("image/")
        && mime[6..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.');
    let data_ok = data
        .bytes()
        .all(|c| c.is_ascii_alphanumeric() || c == b'+' || c == b'/' || c == b'=');
    if !mime_ok || !data_ok || data.is_empty() {
        return "<p class=\"note\">(an image that could not be embedded)</p>".into();
    }
    format!("<img class=\"inline\" alt=\"image\" src=\"data:{mime};base64,{data}\">")
}

fn number(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.2}M", n as f64 / 1_000_000.0)
    }
}

const CSS: &str = r#"
:root { color-scheme: light dark; --fg:#1f2328; --bg:#ffffff; --dim:#6e7781; --box:#f6f8fa; --line:#d0d7de; --user:#ddf4ff; --add:#dafbe1; --del:#ffebe9; --hunk:#ddf4ff; }
@media (prefers-color-scheme: dark) { :root { --fg:#e6edf3; --bg:#0d1117; --dim:#8b949e; --box:#161b22; --line:#30363d; --user:#0c2d6b; --add:#033a16; --del:#67060c; --hunk:#0c2d6b; } }
body { font: 15px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg); background: var(--bg); max-width: 980px; margin: 2em auto; padding: 0 1em; }
h1.title { font-size: 1.4em; border-bottom: 1px solid var(--line); padding-bottom: .3em; }
.meta { color: var(--dim); font-size: .85em; }
.msg { margin: 1em 0; }
.user { background: var(--user); border-radius: 6px; padding: .5em .8em; white-space: pre-wrap; }
.user::before { content: "› "; font-weight: bold; }
.assistant { padding: 0 .2em; }
.error { color: #c4372f; }
details { border: 1px solid var(--line); border-radius: 6px; margin: .4em 0; background: var(--box); }
details > summary { cursor: pointer; padding: .25em .6em; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: .9em; }
details > *:not(summary) { margin: .4em .6em; }
details.thinking > summary { color: var(--dim); font-style: italic; }
.thinking-text { white-space: pre-wrap; color: var(--dim); font-style: italic; }
.ok { color: #2e7d32; } .err { color: #c4372f; }
pre { background: var(--box); border: 1px solid var(--line); border-radius: 6px; padding: .6em; overflow-x: auto; font: 13px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; white-space: pre-wrap; word-break: break-word; }
pre.diff span { display: block; } .diff .add { background: var(--add); } .diff .del { background: var(--del); } .diff .hunk { background: var(--hunk); color: var(--dim); } .diff .file { font-weight: bold; }
img.inline { max-width: 100%; border: 1px solid var(--line); border-radius: 4px; }
table { border-collapse: collapse; } th, td { border: 1px solid var(--line); padding: .2em .6em; }
.usage table { font-size: .9em; } .usage td.n { text-align: right; }
.note { color: var(--dim); font-style: italic; }
"#;

/// The self-contained page.
pub fn html(t: &Transcript) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n<h1 class=\"title\">{}</h1>\n",
        esc(&t.title),
        esc(&t.title)
    );
    if let Some(id) = &t.id {
        let _ = writeln!(out, "<p class=\"meta\">session {}</p>", esc(id));
    }
    // Results by call id, so each call shows with its result.
    let mut results: std::collections::HashMap<&str, &Value> = std::collections::HashMap::new();
    for m in &t.messages {
        if m["role"] == "tool-result" {
            if let Some(id) = m["tool_call_id"].as_str() {
                results.insert(id, m);
            }
        }
    }
    for m in &t.messages {
        match m["role"].as_str() {
            Some("user") => {
                let _ = writeln!(
                    out,
                    "<div class=\"msg user\">{}</div>",
                    esc(&text_blocks(&m["content"]))
                );
            }
            Some("assistant") => {
                out.push_str("<div class=\"msg assistant\">\n");
                for b in m["content"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                    match b["type"].as_str() {
                        Some("text") => {
                            out.push_str(&markdown_html(b["text"].as_str().unwrap_or("")))
                        }
                        Some("thinking") => {
                            let body = if b["redacted"] == true {
                                "(redacted by the provider)".to_string()
                            } else {
                                b["thinking"].as_str().unwrap_or("").to_string()
                            };
                            let _ = writeln!(
                                out,
                                "<details class=\"thinking\"><summary>✻ thinking</summary><div class=\"thinking-text\">{}</div></details>",
                                esc(&body)
                            );
                        }
                        Some("tool-call") => {
                            let r = b["id"].as_str().and_then(|id| results.get(id)).copied();
                            let (verb, class) = match r {
                                Some(r) if r["is_error"] == true => ("err", "err"),
                                Some(_) => ("ok", "ok"),
                                None => ("no result", "err"),
                            };
                            let args =
                                serde_json::to_string_pretty(&b["arguments"]).unwrap_or_default();
                            let _ = write!(
                                out,
                                "<details class=\"tool\"><summary>tool&gt; <span class=\"{class}\">{verb}</span> {}</summary>\n<pre class=\"args\">{}</pre>\n",
                                esc(&call_summary(b)),
                                esc(&args)
                            );
                            if let Some(r) = r {
                                if let Some(d) = result_diff(r) {
                                    out.push_str(&diff_html(&d));
                                }
                                out.push_str(&result_body(r));
                            }
                            out.push_str("</details>\n");
                        }
                        _ => {}
                    }
                }
                if m["stop_reason"] == "error" {
                    let _ = writeln!(
                        out,
                        "<p class=\"error\">error: {}</p>",
                        esc(m["error_message"]
                            .as_str()
                            .unwrap_or("the model call failed"))
                    );
                } else if m["stop_reason"] == "aborted" {
                    out.push_str("<p class=\"note\">(cancelled)</p>\n");
                }
                out.push_str("</div>\n");
            }
            Some("tool-result") => {
                // Shown with its call; an orphan result (its call compacted away) alone.
                let id = m["tool_call_id"].as_str().unwrap_or("");
                let has_call = t.messages.iter().any(|a| {
                    a["role"] == "assistant"
                        && a["content"]
                            .as_array()
                            .is_some_and(|c| c.iter().any(|b| b["id"] == id))
                });
                if !has_call {
                    let _ = writeln!(
                        out,
                        "<details class=\"tool\"><summary>tool&gt; {}</summary>{}</details>",
                        esc(m["tool_name"].as_str().unwrap_or("?")),
                        result_body(m)
                    );
                }
            }
            _ => {}
        }
    }
    let totals = totals(t);
    if !totals.rows.is_empty() {
        out.push_str("<section class=\"usage\"><h2>Usage and cost</h2><table><tr><th>model</th><th>input</th><th>output</th><th>cache read</th><th>cache write</th><th>cost</th></tr>\n");
        let mut sum = 0.0;
        for (model, n, cost, priced, sub) in &totals.rows {
            let money = if *sub {
                "subscription".to_string()
            } else if *priced > 0 {
                sum += cost;
                format!("${cost:.4}")
            } else {
                "unknown".to_string()
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
                esc(model),
                number(n[0]),
                number(n[1]),
                number(n[2]),
                number(n[3]),
                esc(&money)
            );
        }
        let _ = writeln!(out, "</table><p>total cost: ${sum:.4}</p></section>");
    }
    out.push_str("<p class=\"meta\">exported by fen</p>\n</body>\n</html>\n");
    out
}

/// The transcript as Markdown: messages in order, thinking and tool results in `<details>`.
pub fn markdown(t: &Transcript) -> String {
    let mut out = format!("# {}\n\n", t.title);
    let fence = |s: &str| {
        let mut f = "```".to_string();
        while s.contains(&f) {
            f.push('`');
        }
        f
    };
    for m in &t.messages {
        match m["role"].as_str() {
            Some("user") => {
                let text = text_blocks(&m["content"]);
                let quoted: Vec<String> = text.lines().map(|l| format!("> {l}")).collect();
                let _ = write!(out, "**You:**\n\n{}\n\n", quoted.join("\n"));
            }
            Some("assistant") => {
                for b in m["content"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                    match b["type"].as_str() {
                        Some("text") => {
                            let _ = write!(out, "{}\n\n", b["text"].as_str().unwrap_or(""));
                        }
                        Some("thinking") if b["redacted"] != true => {
                            let th = b["thinking"].as_str().unwrap_or("");
                            let f = fence(th);
                            let _ = write!(out, "<details><summary>thinking</summary>\n\n{f}\n{th}\n{f}\n\n</details>\n\n");
                        }
                        Some("tool-call") => {
                            let _ = write!(
                                out,
                                "**tool:** `{}`\n\n",
                                call_summary(b).replace('`', "'")
                            );
                        }
                        _ => {}
                    }
                }
                if m["stop_reason"] == "error" {
                    let _ = write!(
                        out,
                        "**error:** {}\n\n",
                        m["error_message"].as_str().unwrap_or("")
                    );
                }
            }
            Some("tool-result") => {
                let body = result_diff(m).unwrap_or_else(|| text_blocks(&m["content"]));
                let f = fence(&body);
                let lang = if result_diff(m).is_some() { "diff" } else { "" };
                let _ = write!(
                    out,
                    "<details><summary>{} result{}</summary>\n\n{f}{lang}\n{}\n{f}\n\n</details>\n\n",
                    m["tool_name"].as_str().unwrap_or("tool"),
                    if m["is_error"] == true { " (error)" } else { "" },
                    body.trim_end()
                );
            }
            _ => {}
        }
    }
    let totals = totals(t);
    if !totals.rows.is_empty() {
        out.push_str("## Usage and cost\n\n| model | input | output | cache read | cache write | cost |\n|---|---|---|---|---|---|\n");
        for (model, n, cost, priced, sub) in &totals.rows {
            let money = if *sub {
                "subscription".into()
            } else if *priced > 0 {
                format!("${cost:.4}")
            } else {
                "unknown".into()
            };
            let _ = writeln!(
                out,
                "| {model} | {} | {} | {} | {} | {money} |",
                number(n[0]),
                number(n[1]),
                number(n[2]),
                number(n[3])
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Transcript {
        Transcript {
            title: "fix <the> bug".into(),
            id: Some("0190abc".into()),
            messages: vec![
                json!({"role": "user", "content": "please fix it <script>alert(1)</script>"}),
                json!({"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5",
                    "content": [
                        {"type": "thinking", "thinking": "let me look"},
                        {"type": "text", "text": "Sure. <img src=\"http://evil/x.png\"> ![pic](http://evil/y.png)\n\n```rust\nfn main() {}\n```"},
                        {"type": "tool-call", "id": "c1", "name": "edit", "arguments": {"path": "src/a.rs"}}
                    ],
                    "usage": {"input": 1000, "output": 100, "cache_read": 0, "cache_write": 0,
                              "cost": {"input": 0.003, "output": 0.0015, "cache_read": 0, "cache_write": 0, "total": 0.0045}}}),
                json!({"role": "tool-result", "tool_call_id": "c1", "tool_name": "edit", "is_error": false,
                    "content": [{"type": "text", "text": "edited; token sk-\\x1b[31m kept escaped"},
                                {"type": "image", "mime_type": "image/png", "data": "iVBORw0KGgo="}],
                    "details": {"files": [{"diff": "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-old\n+new\n"}]}}),
            ],
        }
    }

    #[test]
    fn html_is_self_contained_and_escapes_what_it_must() {
        let h = html(&sample());
        assert!(h.contains("default-src 'none'"));
        assert!(!h.contains("<script"), "raw HTML must not survive");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(!h.contains("<img src=\"http"), "no remote image");
        assert!(h.contains("[image: "));
        assert!(h.contains("<details class=\"thinking\">"));
        assert!(h.contains("tool&gt; <span class=\"ok\">ok</span> edit src/a.rs"));
        assert!(h.contains("<span class=\"add\">+new</span>"));
        assert!(h.contains("<span class=\"del\">-old</span>"));
        assert!(h.contains("data:image/png;base64,iVBORw0KGgo="));
        assert!(h.contains("sk-\\x1b[31m kept escaped"));
        assert!(h.contains("$0.0045"));
        assert!(h.contains("<title>fix &lt;the&gt; bug</title>"));
        // Fenced code is highlighted natively (spans with colours).
        assert!(h.contains("data-lang=\"rust\""));
        assert!(h.contains("<span style=\"color:"), "no highlighting");
    }

    #[test]
    fn a_bad_image_is_not_embedded() {
        let b = json!({"type": "image", "mime_type": "text/html", "data": "PGI+"});
        assert!(image_html(&b).contains("could not be embedded"));
        let b = json!({"type": "image", "mime_type": "image/png", "data": "\"><script>"});
        assert!(image_html(&b).contains("could not be embedded"));
    }

    #[test]
    fn markdown_and_json() {
        let md = markdown(&sample());
        assert!(md.starts_with("# fix <the> bug"));
        assert!(md.contains("> please fix it"));
        assert!(md.contains("```diff\n--- a/src/a.rs"));
        assert!(md.contains("| anthropic/claude-sonnet-4-5 | 1.0k | 100 | 0 | 0 | $0.0045 |"));
        let j: Value = serde_json::from_str(&render(&sample(), Format::Json)).expect("json");
        assert_eq!(j["messages"].as_array().map(Vec::len), Some(3));
        assert_eq!(j["usage"][0]["cost"], json!(0.0045));
    }
}
