//! Binding of the HTTP client and SSE parser: `native.http`.

use crate::native::http::{self, HttpClient, HttpConfig, HttpError, HttpRequest};
use crate::native::plain_deltas::{BatchItem, Batcher, PlainKind, Wire};
use crate::native::sse::SseEvent;
use mlua::{Function, Lua, Table, Value};
use std::rc::Rc;
use std::time::{Duration, SystemTime};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("request", lua.create_async_function(request_fn)?)?;
    m.set("fetch_page", lua.create_async_function(fetch_page_fn)?)?;
    m.set(
        "backoff_ms",
        lua.create_function(|_, attempt: u32| {
            let mut rng = fastrand::Rng::new();
            Ok(http::backoff_delay(
                attempt,
                Duration::from_secs(1),
                Duration::from_secs(30),
                &mut rng,
            )
            .as_millis() as u64)
        })?,
    )?;
    Ok(m)
}

/// One client per Lua state (connection reuse), built on first use.
fn client(lua: &Lua) -> Result<Rc<HttpClient>, HttpError> {
    if let Some(c) = lua.app_data_ref::<Rc<HttpClient>>() {
        return Ok(c.clone());
    }
    let c = Rc::new(HttpClient::new(HttpConfig::from_env()?)?);
    lua.set_app_data(c.clone());
    Ok(c)
}

fn error_table(lua: &Lua, e: &HttpError) -> mlua::Result<(Value, Value)> {
    let t = lua.create_table()?;
    let kind = match e {
        HttpError::Connect { .. } => "connect",
        HttpError::Timeout { .. } => "timeout",
        HttpError::Stream { .. } => "stream",
        HttpError::Cancelled => "cancelled",
        _ => "invalid",
    };
    t.set("kind", kind)?;
    t.set("message", e.to_string())?;
    t.set("retryable", e.is_retryable())?;
    Ok((Value::Nil, Value::Table(t)))
}

crate::lua_options! {
    pub(crate) struct RequestOpts as "fen.opts.HttpRequest" for "http.request" {
        method: Option<String> => "string?", "Default POST.",
        url: String => "string", "The URL (http or https).",
        headers: Option<std::collections::BTreeMap<String, String>> => "table<string, string>?", "Request headers.",
        body: Option<crate::host::options::Bytes> => "string?", "The request body (any bytes).",
        sse: Option<bool> => "boolean?", "Read a 2xx response as server-sent events.",
        #[allow(dead_code)] // checked here, read from the table
        on_event: Option<crate::host::options::LuaFunction> => "(fun(e: {event: string, data: string}): boolean?)?", "Each event; return false to stop reading.",
        #[allow(dead_code)] // checked here, read from the table
        on_events: Option<crate::host::options::LuaFunction> => "(fun(batch: table): boolean?)?", "The events of one network read (`batch.n` items); return false to stop.",
        #[allow(dead_code)] // checked here, read from the table
        plain_deltas: Option<String> => "(\"openai-completions\"|\"openai-responses\"|\"anthropic-messages\")?", "With `on_events`: runs of plain text events as `{text}` / `{thinking}` items.",
        error_body_cap: Option<usize> => "integer?", "Bytes of a non-SSE or error body kept (default 64 KiB).",
    }
}

crate::lua_options! {
    pub(crate) struct FetchPageOpts as "fen.opts.HttpFetchPage" for "http.fetch_page" {
        url: String => "string", "The page.",
        format: Option<String> => "(\"markdown\"|\"text\"|\"html\")?", "Default markdown.",
        timeout_ms: Option<u64> => "integer?", "Default 30000.",
        max_bytes: Option<usize> => "integer?", "Larger bodies are refused (default 5 MiB).",
    }
}

/// `http.request{method, url, headers = {name = value}, body, sse = bool, on_event = fn,
/// on_events = fn, plain_deltas = api, error_body_cap}` -> `{status, headers, body,
/// retry_after_ms, events, comments}` or `nil, {kind = "connect" | "timeout" | "stream" |
/// "cancelled" | "invalid", message, retryable}`.
///
/// With `sse = true` and a 2xx status, events are delivered as they arrive, either one by one
/// to `on_event({event, data})` or, with `on_events`, as a batch per network read:
/// `on_events(batch)` where `batch.n` items `batch[i]` are `{event, data}` or, with
/// `plain_deltas` naming a wire format ("openai-completions", "openai-responses",
/// "anthropic-messages"), `{text = ...}` / `{thinking = ...}` for runs of events that carry
/// nothing but text (see `native::plain_deltas`). Either callback returns `false` to stop
/// reading (e.g. after the terminal event). The item tables are reused: copy what you keep.
/// `body` is set for other statuses and for non-SSE requests (capped at `error_body_cap`,
/// default 64 KiB).
/// Header names in the result are lower-case. The running turn's cancellation drops the
/// connection.
async fn request_fn(lua: Lua, spec: Table) -> mlua::Result<(Value, Value)> {
    // Callbacks are checked here and taken from the table by `Delivery::new`.
    let o: RequestOpts = super::options(&lua, Value::Table(spec.clone()))?;
    let mut req = HttpRequest::new(o.method.unwrap_or_else(|| "POST".into()), o.url);
    for (k, v) in o.headers.unwrap_or_default() {
        req = req.header(k, v);
    }
    if let Some(body) = o.body {
        req = req.body(body.0);
    }
    let sse = o.sse.unwrap_or(false);
    let cap = o.error_body_cap.unwrap_or(64 * 1024);
    let cancel = super::cancel_token(&lua);
    let client = match client(&lua) {
        Ok(c) => c,
        Err(e) => return error_table(&lua, &e),
    };
    client.warm_up(&req.url).await;
    let out = lua.create_table()?;
    let headers_table = |headers: &[(String, String)]| -> mlua::Result<Table> {
        let t = lua.create_table()?;
        for (k, v) in headers {
            t.set(k.to_ascii_lowercase(), v.as_str())?;
        }
        Ok(t)
    };
    if !sse {
        let resp = match client.request(req, cancel).await {
            Ok(r) => r,
            Err(e) => return error_table(&lua, &e),
        };
        out.set("status", resp.status())?;
        out.set("headers", headers_table(resp.headers())?)?;
        let retry = http::parse_retry_after(resp.headers(), SystemTime::now());
        out.set("retry_after_ms", retry.map(|d| d.as_millis() as u64))?;
        match resp.text(cap).await {
            Ok(t) => out.set("body", t.text)?,
            Err(e) => return error_table(&lua, &e),
        }
        return Ok((Value::Table(out), Value::Nil));
    }
    let mut stream = match client.sse(req, cancel).await {
        Ok(s) => s,
        Err(e) => return error_table(&lua, &e),
    };
    out.set("status", stream.status())?;
    out.set("headers", headers_table(stream.headers())?)?;
    let retry = http::parse_retry_after(stream.headers(), SystemTime::now());
    out.set("retry_after_ms", retry.map(|d| d.as_millis() as u64))?;
    if !stream.is_success() {
        match stream.text(cap).await {
            Ok(t) => out.set("body", t.text)?,
            Err(e) => return error_table(&lua, &e),
        }
        return Ok((Value::Table(out), Value::Nil));
    }
    let mut events = 0u64;
    let mut delivery = Delivery::new(&lua, &spec)?;
    let mut raw = Vec::new();
    loop {
        match stream.next_batch(&mut raw).await {
            Ok(()) if raw.is_empty() => break,
            Ok(()) => {
                events += raw.len() as u64;
                if !delivery.deliver(&mut raw)? {
                    break;
                }
            }
            Err(e) => {
                let (nil, err) = error_table(&lua, &e)?;
                if let Value::Table(t) = &err {
                    t.set("events", events)?;
                }
                return Ok((nil, err));
            }
        }
    }
    out.set("events", events)?;
    out.set("comments", stream.comments_seen())?;
    Ok((Value::Table(out), Value::Nil))
}

/// Hands received events to the Lua callback, reusing its tables: 100k deltas must not mean
/// 100k tables.
struct Delivery {
    lua: Lua,
    callback: Option<(Function, bool)>,
    batcher: Batcher,
    batch: Table,
    items: Vec<Table>,
    /// Items set in `batch` by the previous call (cleared beyond the new length).
    last_len: usize,
}

impl Delivery {
    fn new(lua: &Lua, spec: &Table) -> mlua::Result<Delivery> {
        let batched: Option<Function> = spec.get("on_events")?;
        let single: Option<Function> = spec.get("on_event")?;
        let wire = match spec.get::<Option<String>>("plain_deltas")? {
            None => None,
            Some(api) => Some(Wire::from_api(&api).ok_or_else(|| {
                mlua::Error::runtime(format!(
                    "plain_deltas: unknown wire format '{api}' (expected openai-completions, openai-responses or anthropic-messages)"
                ))
            })?),
        };
        Ok(Delivery {
            lua: lua.clone(),
            callback: batched.map(|f| (f, true)).or(single.map(|f| (f, false))),
            batcher: Batcher::new(wire),
            batch: lua.create_table()?,
            items: Vec::new(),
            last_len: 0,
        })
    }

    /// Delivers one read's events; false when the callback asked to stop.
    fn deliver(&mut self, raw: &mut Vec<SseEvent>) -> mlua::Result<bool> {
        let Some((f, batched)) = self.callback.clone() else {
            raw.clear();
            return Ok(true);
        };
        if !batched {
            let item = self.item(0)?;
            for e in raw.drain(..) {
                item.set("event", e.event.as_deref().unwrap_or("message"))?;
                item.set("data", e.data)?;
                if let Value::Boolean(false) = f.call::<Value>(&item)? {
                    return Ok(false);
                }
            }
            return Ok(true);
        }
        let items = self.batcher.batch(raw.drain(..));
        let n = items.len();
        for (i, it) in items.into_iter().enumerate() {
            let t = self.item(i)?;
            let (event, data, text, thinking) = match it {
                BatchItem::Event(e) => (
                    Some(e.event.unwrap_or_else(|| "message".into())),
                    Some(e.data),
                    None,
                    None,
                ),
                BatchItem::Plain(PlainKind::Text, s) => (None, None, Some(s), None),
                BatchItem::Plain(PlainKind::Thinking, s) => (None, None, None, Some(s)),
            };
            t.set("event", event)?;
            t.set("data", data)?;
            t.set("text", text)?;
            t.set("thinking", thinking)?;
            self.batch.raw_set(i + 1, t)?;
        }
        for i in n + 1..=self.last_len {
            self.batch.raw_set(i, Value::Nil)?;
        }
        self.last_len = n;
        self.batch.raw_set("n", n)?;
        Ok(!matches!(
            f.call::<Value>(&self.batch)?,
            Value::Boolean(false)
        ))
    }

    /// The `i`-th reusable item table (created on first use).
    fn item(&mut self, i: usize) -> mlua::Result<Table> {
        if i >= self.items.len() {
            self.items.push(self.lua.create_table()?);
        }
        Ok(self.items[i].clone())
    }
}

/// `http.fetch_page{url, format = "markdown" | "text" | "html", timeout_ms, max_bytes}`
/// *async*: a GET for webfetch ([`crate::native::webfetch`]): same-host redirects followed,
/// a cross-host one returned as `{redirect = target, from, status}`, bodies over `max_bytes`
/// (default 5 MiB) refused. Returns `{url, status, content_type, content, bytes, redirects}`
/// or `nil, message`.
async fn fetch_page_fn(lua: Lua, spec: Value) -> mlua::Result<(Value, Value)> {
    use crate::native::webfetch::{self, FetchSpec, Fetched, Format};
    let spec: FetchPageOpts = super::options(&lua, spec)?;
    let format_name = spec.format.unwrap_or_else(|| "markdown".into());
    let Some(format) = Format::parse(&format_name) else {
        return super::failure(
            &lua,
            format!("format {format_name:?} is not one of markdown, text, html"),
        );
    };
    let fetch = FetchSpec {
        url: spec.url,
        format,
        timeout: std::time::Duration::from_millis(spec.timeout_ms.unwrap_or(30_000)),
        max_bytes: spec.max_bytes.unwrap_or(webfetch::DEFAULT_MAX_BYTES),
    };
    let client = match client(&lua) {
        Ok(c) => c,
        Err(e) => return super::failure(&lua, e.to_string()),
    };
    let cancel = super::cancel_token(&lua);
    let out = lua.create_table()?;
    match webfetch::fetch(&client, &fetch, cancel).await {
        Ok(Fetched::Page(p)) => {
            out.set("url", p.url)?;
            out.set("status", p.status)?;
            out.set("content_type", p.content_type)?;
            out.set("content", p.content)?;
            out.set("bytes", p.bytes)?;
            out.set("redirects", super::array(&lua, &p.redirects)?)?;
        }
        Ok(Fetched::CrossHost { from, to, status }) => {
            out.set("redirect", to)?;
            out.set("from", from)?;
            out.set("status", status)?;
        }
        Err(e) => return super::failure(&lua, e.to_string()),
    }
    super::success(out)
}
