//! Binding of the HTTP client and SSE parser: `native.http`.

use crate::native::http::{self, HttpClient, HttpConfig, HttpError, HttpRequest};
use mlua::{Function, Lua, Table, Value};
use std::rc::Rc;
use std::time::{Duration, SystemTime};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("request", lua.create_async_function(request_fn)?)?;
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

/// `http.request{method, url, headers = {name = value}, body, sse = bool, on_event = fn,
/// error_body_cap}` -> `{status, headers, body, retry_after_ms, events, comments}` or
/// `nil, {kind = "connect" | "timeout" | "stream" | "cancelled" | "invalid", message, retryable}`.
///
/// With `sse = true` and a 2xx status, every event is passed to `on_event({event, data})` as it
/// arrives (return `false` to stop reading, e.g. after the terminal event); `body` is set for
/// other statuses and for non-SSE requests (capped at `error_body_cap`, default 64 KiB).
/// Header names in the result are lower-case. The running turn's cancellation drops the
/// connection.
async fn request_fn(lua: Lua, spec: Table) -> mlua::Result<(Value, Value)> {
    let method = spec
        .get::<Option<String>>("method")?
        .unwrap_or_else(|| "POST".into());
    let mut req = HttpRequest::new(method, spec.get::<String>("url")?);
    if let Some(h) = spec.get::<Option<Table>>("headers")? {
        for pair in h.pairs::<String, String>() {
            let (k, v) = pair?;
            req = req.header(k, v);
        }
    }
    if let Some(body) = spec.get::<Option<mlua::LuaString>>("body")? {
        req = req.body(body.as_bytes().to_vec());
    }
    let sse = spec.get::<Option<bool>>("sse")?.unwrap_or(false);
    let on_event: Option<Function> = spec.get("on_event")?;
    let cap = spec
        .get::<Option<usize>>("error_body_cap")?
        .unwrap_or(64 * 1024);
    let cancel = super::cancel_token(&lua);
    let client = match client(&lua) {
        Ok(c) => c,
        Err(e) => return error_table(&lua, &e),
    };
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
    let ev = lua.create_table()?;
    loop {
        match stream.next_event().await {
            Ok(Some(e)) => {
                events += 1;
                if let Some(f) = &on_event {
                    // One table reused for every event: 100k deltas must not mean 100k tables.
                    ev.set("event", e.event.as_deref().unwrap_or("message"))?;
                    ev.set("data", e.data)?;
                    if let Value::Boolean(false) = f.call::<Value>(&ev)? {
                        break;
                    }
                }
            }
            Ok(None) => break,
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
