//! Subscription logins and their tokens: the credential store (`store`), PKCE and id-token
//! claims (`pkce`), the loopback redirect listener (`loopback`), the OAuth requests shared by
//! the flows (`oauth`), and one module per provider (`openai` for ChatGPT sign-in, `copilot`
//! for GitHub Copilot). No Lua here: the binding `host::native::auth` exposes these to the
//! first-party auth-backend extension.
//!
//! Tokens never leave this module except as the credential a provider request carries to the
//! host that issued it: errors and progress messages name the provider, never a token.

pub mod copilot;
pub mod loopback;
pub mod mcp;
pub mod oauth;
pub mod openai;
pub mod pkce;
pub mod store;

use std::path::PathBuf;

/// What can go wrong; every message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("{path}: {message}")]
    Io { path: PathBuf, message: String },
    #[error("{} is readable by other users (mode {mode:04o}); run `chmod 600 {}` and try again", path.display(), path.display())]
    Permissions { path: PathBuf, mode: u32 },
    #[error("{}: {message}; fix or delete the file and log in again", path.display())]
    Corrupt { path: PathBuf, message: String },
    #[error("not logged in to {provider}; run `fen login {provider}`")]
    NotLoggedIn { provider: String },
    #[error(
        "{provider}: the login expired or was revoked ({detail}); run `fen login {provider}` again"
    )]
    Expired { provider: String, detail: String },
    #[error("{0}")]
    Denied(String),
    #[error("{0}")]
    Http(String),
    #[error("login cancelled")]
    Cancelled,
    #[error("{0}")]
    Other(String),
}

/// Seconds since the Unix epoch.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A token is refreshed when fewer than this many seconds of validity remain.
pub const REFRESH_MARGIN_SECS: i64 = 300;

/// What a provider request needs: the bearer token, when it expires, extra headers, and the
/// API base when the login decides it (Copilot).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Credential {
    pub token: String,
    pub expires_at: Option<i64>,
    pub headers: Vec<(String, String)>,
    pub base_url: Option<String>,
}

/// One logged-in provider as `fen login --status` shows it (never the token).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Status {
    pub provider: String,
    pub email: Option<String>,
    /// The account's login name where the provider has one (GitHub).
    pub user: Option<String>,
    pub plan: Option<String>,
    pub expires_at: Option<i64>,
    pub host: Option<String>,
}

/// What a flow asks the person to do: open a URL, or type a code at a URL.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    /// Open this URL (also printed); the browser was opened unless `--no-browser`.
    OpenUrl { url: String, opened: bool },
    /// Type `code` at `url`.
    DeviceCode { url: String, code: String },
}

/// Settings a flow reads: the endpoints (each overridable in settings.json `auth.NAME`).
pub fn settings_section(config_dir: &std::path::Path, name: &str) -> serde_json::Value {
    let path = config_dir.join("settings.json");
    let Ok(text) = std::fs::read_to_string(path) else {
        return serde_json::Value::Null;
    };
    serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| v.get("auth").and_then(|a| a.get(name)).cloned())
        .unwrap_or(serde_json::Value::Null)
}

/// A string setting of a section, or the default.
pub(crate) fn setting(section: &serde_json::Value, key: &str, default: &str) -> String {
    section
        .get(key)
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(default)
        .to_string()
}

/// Opens `url` in the person's browser (best effort; the URL is printed anyway).
pub fn open_browser(url: &str) -> bool {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|mut child| {
            // Reaped off the caller's thread; the opener exits at once.
            std::thread::spawn(move || child.wait());
        })
        .is_ok()
}

/// Runs file work (the store, its lock) on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, AuthError> + Send + 'static,
) -> Result<T, AuthError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| AuthError::Other(e.to_string()))?
}

/// The stored entry of `key`, renewed when it is not `usable`: under the store's lock the entry
/// is read again (another process may have renewed it meanwhile), and only when it is still
/// not usable does `renew` run, its result stored before the lock is let go. So two fen
/// processes never both refresh one token. None when nothing is stored under `key`.
pub(crate) async fn renew_entry<F, Fut>(
    store: &store::Store,
    key: &str,
    usable: impl Fn(&serde_json::Value) -> bool,
    renew: F,
) -> Result<Option<serde_json::Value>, AuthError>
where
    F: FnOnce(serde_json::Value) -> Fut,
    Fut: std::future::Future<Output = Result<serde_json::Value, AuthError>>,
{
    let get = || {
        let (s, k) = (store.clone(), key.to_string());
        blocking(move || s.get(&k))
    };
    match get().await? {
        None => return Ok(None),
        Some(e) if usable(&e) => return Ok(Some(e)),
        Some(_) => {}
    }
    let s = store.clone();
    let lock = blocking(move || s.lock()).await?;
    let Some(entry) = get().await? else {
        return Ok(None);
    };
    if usable(&entry) {
        return Ok(Some(entry));
    }
    let new = renew(entry).await?;
    let (s, k, saved) = (store.clone(), key.to_string(), new.clone());
    blocking(move || s.put_locked(&lock, &k, saved)).await?;
    Ok(Some(new))
}

/// Whether a stored entry's token (its field `token_key`) serves as it is. With `stale` (a
/// token a server just refused): when the stored one is another (someone renewed it already).
/// Else while more than [`REFRESH_MARGIN_SECS`] remain; `no_expiry` is the answer for an entry
/// without `expires_at`.
pub(crate) fn usable(
    entry: &serde_json::Value,
    token_key: &str,
    stale: Option<&str>,
    no_expiry: bool,
) -> bool {
    match stale {
        Some(st) => field(entry, token_key).as_deref() != Some(st),
        None => entry["expires_at"]
            .as_i64()
            .map_or(no_expiry, |t| t - now() > REFRESH_MARGIN_SECS),
    }
}

/// Forgets the entry of `key`; true when there was one.
pub(crate) async fn forget(store: &store::Store, key: &str) -> Result<bool, AuthError> {
    let (s, k) = (store.clone(), key.to_string());
    blocking(move || s.put(&k, None)).await
}

/// GETs a model list (or another JSON document) with a provider's credential.
pub(crate) async fn get_with(
    http: &oauth::Http,
    url: &str,
    cred: &Credential,
) -> Result<serde_json::Value, AuthError> {
    let bearer = format!("Bearer {}", cred.token);
    let mut headers: Vec<(&str, &str)> = vec![("authorization", &bearer)];
    for (k, v) in &cred.headers {
        headers.push((k, v));
    }
    let a = http.get(url, &headers).await?;
    if !a.ok() {
        return Err(AuthError::Http(format!(
            "the model list of {} failed: {}",
            oauth::origin(url),
            a.error_text()
        )));
    }
    Ok(a.body)
}

/// The string field `k` of a JSON entry.
pub(crate) fn field(v: &serde_json::Value, k: &str) -> Option<String> {
    v.get(k).and_then(|x| x.as_str()).map(str::to_string)
}

/// Subscription logins fen refuses, and why: their terms allow the subscription only in the
/// vendor's own apps. `None` for every other name.
pub fn refusal(name: &str) -> Option<String> {
    let (vendor, service, key) = match name {
        "anthropic" | "claude" => (
            "Anthropic",
            "Claude Pro/Max",
            "ANTHROPIC_API_KEY (console.anthropic.com)",
        ),
        "google" | "gemini" | "gemini-cli" | "antigravity" => (
            "Google",
            "Gemini (Gemini CLI, Antigravity) consumer",
            "GEMINI_API_KEY (aistudio.google.com) with a provider in ~/.config/fen/models.json",
        ),
        _ => return None,
    };
    Some(format!(
        "fen does not log in to {service} subscriptions: {vendor}'s terms allow subscription use only in {vendor}'s own apps, and accounts using them elsewhere have been suspended. Use an API key instead: set {key}."
    ))
}
