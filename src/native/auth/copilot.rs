//! GitHub Copilot (`github-copilot`): the RFC 8628 device flow on github.com or a GitHub
//! Enterprise host, and the exchange of the GitHub token for the short-lived Copilot token
//! (whose answer names the API base), redone when that token nears its expiry.

use super::oauth::{device_flow, origin, Http};
use super::store::Store;
use super::{blocking, field, now, setting, AuthError, Credential, Prompt, Status};
use serde_json::{json, Value};

pub const PROVIDER: &str = "github-copilot";
/// The OAuth app id the Copilot editor integrations use.
pub const CLIENT_ID: &str = "Iv1.b507a08c87ecfe98";
const DEFAULT_API: &str = "https://api.githubcopilot.com";

/// The headers Copilot's API requires of an editor integration.
pub const HEADERS: [(&str, &str); 4] = [
    ("editor-version", "vscode/1.99.3"),
    ("editor-plugin-version", "copilot-chat/0.26.7"),
    ("copilot-integration-id", "vscode-chat"),
    ("user-agent", "GitHubCopilotChat/0.26.7"),
];

/// The endpoints for one GitHub host, each settable in settings.json `auth.github-copilot`.
#[derive(Debug, Clone)]
pub struct Endpoints {
    pub host: String,
    pub device_code_url: String,
    pub access_token_url: String,
    pub copilot_token_url: String,
    /// The GitHub API base (`/user` names the account in `fen login --status`).
    pub api_url: String,
    pub client_id: String,
}

impl Endpoints {
    /// `host` is `github.com` or an Enterprise domain (its API lives at `api.HOST`).
    pub fn from_settings(s: &Value, host: &str) -> Endpoints {
        let host = host
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_string();
        let api = if host == "github.com" {
            "https://api.github.com".to_string()
        } else {
            format!("https://api.{host}")
        };
        let api_url = setting(s, "api_url", &api)
            .trim_end_matches('/')
            .to_string();
        Endpoints {
            device_code_url: setting(
                s,
                "device_code_url",
                &format!("https://{host}/login/device/code"),
            ),
            access_token_url: setting(
                s,
                "access_token_url",
                &format!("https://{host}/login/oauth/access_token"),
            ),
            copilot_token_url: setting(
                s,
                "copilot_token_url",
                &format!("{api_url}/copilot_internal/v2/token"),
            ),
            api_url,
            client_id: setting(s, "client_id", CLIENT_ID),
            host,
        }
    }
}

/// The device flow, then a first exchange (which also proves the account has Copilot).
pub async fn login(
    http: &Http,
    store: &Store,
    ep: &Endpoints,
    notify: &dyn Fn(Prompt),
) -> Result<Status, AuthError> {
    let tokens = device_flow(
        http,
        &ep.device_code_url,
        &ep.access_token_url,
        &ep.client_id,
        "read:user",
        notify,
    )
    .await?;
    let github = tokens.access_token;
    let exchanged = exchange(http, ep, &github).await?;
    let mut entry = exchanged;
    if let Some(user) = user(http, ep, &github).await {
        entry["user"] = field(&user, "login").into();
        entry["email"] = field(&user, "email").into();
    }
    entry["github_token"] = github.into();
    entry["host"] = ep.host.clone().into();
    entry["type"] = "oauth".into();
    let status = status_of(&entry);
    let s = store.clone();
    blocking(move || s.put(PROVIDER, Some(entry)).map(|_| ())).await?;
    Ok(status)
}

/// The account the GitHub token belongs to (`login`, `email`), from the API's `/user`; None
/// when it cannot be read (the login works without it).
async fn user(http: &Http, ep: &Endpoints, github: &str) -> Option<Value> {
    let auth = format!("token {github}");
    let url = format!("{}/user", ep.api_url);
    let a = http
        .get(&url, &[("authorization", &auth), HEADERS[3]])
        .await
        .ok()?;
    a.ok().then_some(a.body)
}

/// GitHub token → Copilot token: `{copilot_token, expires_at, api_base, plan}`.
async fn exchange(http: &Http, ep: &Endpoints, github: &str) -> Result<Value, AuthError> {
    let auth = format!("token {github}");
    let mut headers: Vec<(&str, &str)> = vec![("authorization", &auth)];
    headers.extend(HEADERS.iter().copied());
    let a = http.get(&ep.copilot_token_url, &headers).await?;
    if a.status == 401 {
        return Err(AuthError::Expired {
            provider: PROVIDER.into(),
            detail: "GitHub no longer accepts the stored token".into(),
        });
    }
    if a.status == 403 || a.status == 404 {
        return Err(AuthError::Denied(format!(
            "{} has no Copilot subscription for this account ({})",
            origin(&ep.copilot_token_url),
            a.error_text()
        )));
    }
    if !a.ok() {
        return Err(AuthError::Http(format!(
            "the Copilot token exchange at {} failed: {}",
            origin(&ep.copilot_token_url),
            a.error_text()
        )));
    }
    let Some(token) = field(&a.body, "token") else {
        return Err(AuthError::Http(
            "the Copilot token exchange answered without a token".into(),
        ));
    };
    let api = a.body["endpoints"]["api"]
        .as_str()
        .unwrap_or(DEFAULT_API)
        .trim_end_matches('/')
        .to_string();
    Ok(json!({
        "copilot_token": token,
        "expires_at": a.body["expires_at"].as_i64().unwrap_or(now() + 1500),
        "api_base": api,
        "plan": a.body["sku"].as_str(),
    }))
}

pub fn status_of(entry: &Value) -> Status {
    Status {
        provider: PROVIDER.into(),
        email: field(entry, "email"),
        user: field(entry, "user"),
        plan: field(entry, "plan"),
        expires_at: entry["expires_at"].as_i64(),
        host: field(entry, "host"),
    }
}

fn credential_of(entry: &Value) -> Credential {
    Credential {
        token: field(entry, "copilot_token").unwrap_or_default(),
        expires_at: entry["expires_at"].as_i64(),
        headers: HEADERS
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain([(
                "openai-intent".to_string(),
                "conversation-edits".to_string(),
            )])
            .collect(),
        base_url: Some(field(entry, "api_base").unwrap_or_else(|| DEFAULT_API.into())),
    }
}

/// The stored entry's host (for endpoints), `github.com` when none is stored.
pub async fn stored_host(store: &Store) -> Option<String> {
    let s = store.clone();
    blocking(move || s.get(PROVIDER))
        .await
        .ok()
        .flatten()
        .and_then(|e| field(&e, "host"))
}

/// The credential for a request: the Copilot token while it has more than 5 minutes left,
/// else a new exchange (one across processes: see [`super::renew_entry`]). `stale` forces one
/// unless another process already replaced that token.
pub async fn credential(
    http: &Http,
    store: &Store,
    ep: &Endpoints,
    stale: Option<&str>,
) -> Result<Credential, AuthError> {
    let usable = |e: &Value| super::usable(e, "copilot_token", stale, false);
    let not_logged_in = || AuthError::NotLoggedIn {
        provider: PROVIDER.into(),
    };
    let entry = super::renew_entry(store, PROVIDER, usable, |mut entry| async move {
        let github = field(&entry, "github_token").ok_or_else(not_logged_in)?;
        let fresh = exchange(http, ep, &github).await?;
        for k in ["copilot_token", "expires_at", "api_base", "plan"] {
            entry[k] = fresh[k].clone();
        }
        Ok(entry)
    })
    .await?
    .ok_or_else(not_logged_in)?;
    Ok(credential_of(&entry))
}

/// The models Copilot offers this account (its model list).
pub async fn models(http: &Http, store: &Store, ep: &Endpoints) -> Result<Vec<Value>, AuthError> {
    let cred = credential(http, store, ep, None).await?;
    let base = cred.base_url.clone().unwrap_or_else(|| DEFAULT_API.into());
    let body = super::get_with(http, &format!("{base}/models"), &cred).await?;
    Ok(body["data"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|m| m["model_picker_enabled"].as_bool() != Some(false))
        .filter_map(|m| {
            let id = field(m, "id")?;
            let limits = &m["capabilities"]["limits"];
            let mut out = json!({"id": id});
            if let Some(w) = limits["max_context_window_tokens"].as_u64() {
                out["context_window"] = w.into();
            }
            if let Some(w) = limits["max_output_tokens"].as_u64() {
                out["max_output_tokens"] = w.into();
            }
            Some(out)
        })
        .collect())
}

pub async fn logout(store: &Store) -> Result<bool, AuthError> {
    super::forget(store, PROVIDER).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enterprise_hosts_get_their_own_endpoints() {
        let gh = Endpoints::from_settings(&Value::Null, "github.com");
        assert_eq!(gh.device_code_url, "https://github.com/login/device/code");
        assert_eq!(
            gh.copilot_token_url,
            "https://api.github.com/copilot_internal/v2/token"
        );
        let ghe = Endpoints::from_settings(&Value::Null, "https://ghe.example.com/");
        assert_eq!(ghe.host, "ghe.example.com");
        assert_eq!(ghe.api_url, "https://api.ghe.example.com");
        assert_eq!(
            ghe.access_token_url,
            "https://ghe.example.com/login/oauth/access_token"
        );
        assert_eq!(
            ghe.copilot_token_url,
            "https://api.ghe.example.com/copilot_internal/v2/token"
        );
        let set = Endpoints::from_settings(
            &serde_json::json!({"copilot_token_url": "http://127.0.0.1:1/t"}),
            "github.com",
        );
        assert_eq!(set.copilot_token_url, "http://127.0.0.1:1/t");
    }
}
