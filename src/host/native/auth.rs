//! Binding of the login core: `native.auth` (`crate::native::auth`). Every function takes a
//! provider name (`openai-chatgpt`, `github-copilot`); endpoints come from settings.json
//! `auth.NAME` (the user's settings only: a cloned project must not redirect a login).
//!
//! - `login(provider, {device, no_browser, host, on_prompt})` *async* -> status | nil, message.
//!   `on_prompt({kind = "url" | "code", url, code, opened})` is called once the person has
//!   something to do.
//! - `credential(provider, stale_token?)` *async* -> `{token, expires_at, headers, base_url}`
//!   | nil, message (refreshed under the store's lock when under 5 minutes remain, or when
//!   `stale_token` is the stored one).
//! - `models(provider)` *async* -> `{ {id, context_window?, ...} }` | nil, message.
//! - `status()` *async* -> `{ {provider, email, user, plan, expires_at, host} }`, or nil, message.
//! - `logout(provider)` *async* -> true when a login was forgotten | nil, message.
//! - `mcp_login(server, {trusted, no_browser, on_prompt})` *async* -> true | nil, message: the
//!   OAuth login of a configured HTTP MCP server (`native::auth::mcp`); `mcp_logout(server,
//!   {trusted})` *async* -> whether there was one.
//! - `refusal(name)` -> why fen refuses that subscription login (Anthropic, Google), or nil.
//! - `path()` -> the auth.json path.

use crate::host::options::LuaFunction;
use crate::native::auth::{self, copilot, oauth::Http, openai, store::Store, AuthError, Prompt};
use mlua::{Function, Lua, LuaSerdeExt, Table, Value};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set("login", lua.create_async_function(login_fn)?)?;
    m.set("credential", lua.create_async_function(credential_fn)?)?;
    m.set("models", lua.create_async_function(models_fn)?)?;
    m.set("status", lua.create_async_function(status_fn)?)?;
    m.set("logout", lua.create_async_function(logout_fn)?)?;
    m.set("mcp_login", lua.create_async_function(mcp_login_fn)?)?;
    m.set("mcp_logout", lua.create_async_function(mcp_logout_fn)?)?;
    m.set(
        "refusal",
        lua.create_function(|_, name: String| Ok(auth::refusal(&name)))?,
    )?;
    m.set(
        "path",
        lua.create_function(|_, ()| Ok(Store::from_env().path().display().to_string()))?,
    )?;
    Ok(m)
}

/// `auth.NAME` of the user's settings.json (the run's settings, read once).
fn section(lua: &Lua, name: &str) -> serde_json::Value {
    let settings = crate::host::run::run(lua).settings();
    settings
        .layer(crate::kernel::settings::Scope::User)
        .and_then(|l| l.value.get("auth"))
        .and_then(|a| a.get(name))
        .cloned()
        .unwrap_or(serde_json::Value::Null)
}

enum Which {
    OpenAi(openai::Endpoints),
    Copilot(copilot::Endpoints),
}

async fn which(
    lua: &Lua,
    provider: &str,
    host: Option<String>,
    store: &Store,
) -> Result<Which, AuthError> {
    match provider {
        openai::PROVIDER => Ok(Which::OpenAi(openai::Endpoints::from_settings(&section(
            lua, provider,
        )))),
        copilot::PROVIDER => {
            let host = match host {
                Some(h) => h,
                None => copilot::stored_host(store)
                    .await
                    .unwrap_or_else(|| "github.com".into()),
            };
            Ok(Which::Copilot(copilot::Endpoints::from_settings(
                &section(lua, provider),
                &host,
            )))
        }
        other => Err(AuthError::Other(format!(
            "no built-in login for '{other}' (known: openai-chatgpt, github-copilot)"
        ))),
    }
}

/// A status row with absent fields left out (not JSON nulls).
fn status_table(lua: &Lua, s: &auth::Status) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("provider", s.provider.as_str())?;
    t.set("email", s.email.as_deref())?;
    t.set("user", s.user.as_deref())?;
    t.set("plan", s.plan.as_deref())?;
    t.set("expires_at", s.expires_at)?;
    t.set("host", s.host.as_deref())?;
    Ok(t)
}

fn fail(lua: &Lua, e: AuthError) -> mlua::Result<(Value, Value)> {
    super::failure(lua, e.to_string())
}

fn http(lua: &Lua) -> Result<Http, AuthError> {
    Http::new(super::cancel_token(lua))
}

crate::lua_options! {
    pub(crate) struct LoginOptions as "fen.opts.AuthLogin" for "auth.login" {
        device: Option<bool> => "boolean?", "The device-code flow instead of the browser callback.",
        no_browser: Option<bool> => "boolean?", "Print the URL; do not open a browser.",
        host: Option<String> => "string?", "The host of an enterprise deployment.",
        #[allow(dead_code)] // checked here, read from the table
        on_prompt: Option<LuaFunction> => "(fun(p: {kind: \"url\"|\"code\", url: string, code: string?, opened: boolean?}))?", "Shows what the person must do.",
    }
}

crate::lua_options! {
    pub(crate) struct McpLoginOptions as "fen.opts.AuthMcpLogin" for "auth.mcp_login" {
        trusted: Option<bool> => "boolean?", "The project's settings count.",
        no_browser: Option<bool> => "boolean?", "Print the URL; do not open a browser.",
        #[allow(dead_code)] // checked here, read from the table
        on_prompt: Option<LuaFunction> => "(fun(p: {kind: \"url\", url: string, opened: boolean}))?", "Shows the URL to open.",
    }
}

crate::lua_options! {
    pub(crate) struct McpLogoutOptions as "fen.opts.AuthMcpLogout" for "auth.mcp_logout" {
        trusted: Option<bool> => "boolean?", "The project's settings count.",
    }
}

/// The `on_prompt` callback of an options table already checked by [`super::options`].
fn on_prompt_of(opts: &Value) -> mlua::Result<Option<Function>> {
    match opts {
        Value::Table(t) => t.get("on_prompt"),
        _ => Ok(None),
    }
}

async fn login_fn(lua: Lua, (provider, opts): (String, Value)) -> mlua::Result<(Value, Value)> {
    let o: LoginOptions = super::options(&lua, opts.clone())?;
    let device = o.device.unwrap_or(false);
    let no_browser = o.no_browser.unwrap_or(false);
    let host = o.host;
    let on_prompt = on_prompt_of(&opts)?;
    // The flow reports prompts through a channel; `show_prompts` shows them.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Prompt>();
    let store = Store::from_env();
    let flow = async {
        let notify = move |p: Prompt| {
            let _ = tx.send(p);
        };
        let http = http(&lua)?;
        match which(&lua, &provider, host, &store).await? {
            Which::OpenAi(ep) if device => openai::login_device(&http, &store, &ep, &notify).await,
            Which::OpenAi(ep) => {
                openai::login_browser(&http, &store, &ep, !no_browser, &notify).await
            }
            Which::Copilot(ep) => copilot::login(&http, &store, &ep, &notify).await,
        }
    };
    let (result, shown) = tokio::join!(flow, show_prompts(&lua, rx, on_prompt.as_ref()));
    shown?;
    match result {
        Ok(status) => Ok((Value::Table(status_table(&lua, &status)?), Value::Nil)),
        Err(e) => fail(&lua, e),
    }
}

/// Shows a flow's prompts through `on_prompt({kind = "url" | "code", url, code?, opened?})`,
/// awaited beside the flow (so `on_prompt` may itself wait, e.g. on `api.ui.notify`), until
/// the flow drops its sender.
async fn show_prompts(
    lua: &Lua,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Prompt>,
    on_prompt: Option<&Function>,
) -> mlua::Result<()> {
    while let Some(p) = rx.recv().await {
        let Some(f) = on_prompt else { continue };
        let t = lua.create_table()?;
        match p {
            Prompt::OpenUrl { url, opened } => {
                t.set("kind", "url")?;
                t.set("url", url)?;
                t.set("opened", opened)?;
            }
            Prompt::DeviceCode { url, code } => {
                t.set("kind", "code")?;
                t.set("url", url)?;
                t.set("code", code)?;
            }
        }
        f.call_async::<()>(t).await?;
    }
    Ok(())
}

async fn credential_fn(
    lua: Lua,
    (provider, stale): (String, Option<String>),
) -> mlua::Result<(Value, Value)> {
    let store = Store::from_env();
    let result = async {
        let http = http(&lua)?;
        match which(&lua, &provider, None, &store).await? {
            Which::OpenAi(ep) => openai::credential(&http, &store, &ep, stale.as_deref()).await,
            Which::Copilot(ep) => copilot::credential(&http, &store, &ep, stale.as_deref()).await,
        }
    }
    .await;
    let c = match result {
        Ok(c) => c,
        Err(e) => return fail(&lua, e),
    };
    let t = lua.create_table()?;
    t.set("token", c.token)?;
    t.set("expires_at", c.expires_at)?;
    t.set("base_url", c.base_url)?;
    let h = lua.create_table()?;
    for (k, v) in c.headers {
        h.set(k, v)?;
    }
    t.set("headers", h)?;
    Ok((Value::Table(t), Value::Nil))
}

async fn models_fn(lua: Lua, provider: String) -> mlua::Result<(Value, Value)> {
    let store = Store::from_env();
    let result = async {
        let http = http(&lua)?;
        match which(&lua, &provider, None, &store).await? {
            Which::OpenAi(ep) => openai::models(&http, &store, &ep).await,
            Which::Copilot(ep) => copilot::models(&http, &store, &ep).await,
        }
    }
    .await;
    match result {
        Ok(list) => Ok((lua.to_value(&list)?, Value::Nil)),
        Err(e) => fail(&lua, e),
    }
}

async fn status_fn(lua: Lua, (): ()) -> mlua::Result<(Value, Value)> {
    let store = Store::from_env();
    let loaded = super::blocking(move || store.load()).await?;
    let map = match loaded {
        Ok(m) => m,
        Err(e) => return fail(&lua, e),
    };
    let mut rows = Vec::new();
    for (key, entry) in &map {
        match key.as_str() {
            openai::PROVIDER => rows.push(openai::status_of(entry)),
            copilot::PROVIDER => rows.push(copilot::status_of(entry)),
            _ => {}
        }
    }
    let out = lua.create_table()?;
    for r in &rows {
        out.push(status_table(&lua, r)?)?;
    }
    Ok((Value::Table(out), Value::Nil))
}

async fn logout_fn(lua: Lua, provider: String) -> mlua::Result<(Value, Value)> {
    let store = Store::from_env();
    let result = match provider.as_str() {
        openai::PROVIDER => openai::logout(&store).await,
        copilot::PROVIDER => copilot::logout(&store).await,
        other => Err(AuthError::Other(format!("no built-in login for '{other}'"))),
    };
    match result {
        Ok(b) => Ok((Value::Boolean(b), Value::Nil)),
        Err(e) => fail(&lua, e),
    }
}

/// The URL and client of MCP server `name` from the mcp.json files.
fn mcp_server(
    lua: &Lua,
    name: &str,
    trusted: bool,
) -> Result<(String, Option<auth::mcp::ClientConfig>), String> {
    let ctx = crate::host::run::run(lua);
    crate::native::mcp::config::http_server(
        &ctx.paths.config_dir,
        &ctx.cwd,
        &ctx.project_root,
        trusted,
        name,
    )
}

async fn mcp_login_fn(lua: Lua, (name, opts): (String, Value)) -> mlua::Result<(Value, Value)> {
    let o: McpLoginOptions = super::options(&lua, opts.clone())?;
    let (trusted, no_browser) = (o.trusted.unwrap_or(false), o.no_browser.unwrap_or(false));
    let on_prompt = on_prompt_of(&opts)?;
    let (url, client) = match mcp_server(&lua, &name, trusted) {
        Ok(v) => v,
        Err(e) => return super::failure(&lua, e),
    };
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Prompt>();
    let store = Store::from_env();
    let flow = async {
        let notify = move |p: Prompt| {
            let _ = tx.send(p);
        };
        let http = http(&lua)?;
        auth::mcp::login(
            &http,
            &store,
            &url,
            &client.unwrap_or_default(),
            !no_browser,
            &notify,
        )
        .await
    };
    let (result, shown) = tokio::join!(flow, show_prompts(&lua, rx, on_prompt.as_ref()));
    shown?;
    match result {
        Ok(()) => Ok((Value::Boolean(true), Value::Nil)),
        Err(e) => fail(&lua, e),
    }
}

async fn mcp_logout_fn(lua: Lua, (name, opts): (String, Value)) -> mlua::Result<(Value, Value)> {
    let trusted = super::options::<McpLogoutOptions>(&lua, opts)?
        .trusted
        .unwrap_or(false);
    let (url, _) = match mcp_server(&lua, &name, trusted) {
        Ok(v) => v,
        Err(e) => return super::failure(&lua, e),
    };
    match auth::mcp::logout(&Store::from_env(), &url).await {
        Ok(b) => Ok((Value::Boolean(b), Value::Nil)),
        Err(e) => fail(&lua, e),
    }
}
