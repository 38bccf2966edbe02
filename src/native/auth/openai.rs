//! ChatGPT sign-in (`openai-chatgpt`): the authorization-code flow with PKCE and a loopback
//! redirect, the device flow, refresh under the store's lock, and the credential the Codex
//! backend wants (a bearer token and the `ChatGPT-Account-Id` header from the id token).

use super::oauth::{origin, Http, Tokens};
use super::pkce::{jwt_claims, random_token, Pkce};
use super::store::Store;
use super::{blocking, field, now, setting, AuthError, Credential, Prompt, Status};
use serde_json::{json, Value};
use std::time::Duration;

pub const PROVIDER: &str = "openai-chatgpt";
/// The public client id of the Codex CLI, which OpenAI lets third-party tools use.
pub const CLIENT_ID: &str = "app_EMoamEEZ73f0CkXaXp7hrann";
/// The loopback port OpenAI registered for that client.
pub const PORT: u16 = 1455;
const CALLBACK_PATH: &str = "/auth/callback";
const SCOPE: &str = "openid profile email offline_access";
/// The claim of the id token that carries the ChatGPT account and plan.
const AUTH_CLAIM: &str = "https://api.openai.com/auth";

/// The endpoints, each settable in settings.json `auth.openai-chatgpt`.
#[derive(Debug, Clone)]
pub struct Endpoints {
    pub authorize_url: String,
    pub token_url: String,
    pub device_code_url: String,
    pub device_token_url: String,
    pub device_verification_url: String,
    pub device_redirect_uri: String,
    pub api_base: String,
    pub client_id: String,
}

impl Endpoints {
    pub fn from_settings(s: &Value) -> Endpoints {
        Endpoints {
            authorize_url: setting(
                s,
                "authorize_url",
                "https://auth.openai.com/oauth/authorize",
            ),
            token_url: setting(s, "token_url", "https://auth.openai.com/oauth/token"),
            device_code_url: setting(
                s,
                "device_code_url",
                "https://auth.openai.com/api/accounts/deviceauth/usercode",
            ),
            device_token_url: setting(
                s,
                "device_token_url",
                "https://auth.openai.com/api/accounts/deviceauth/token",
            ),
            device_verification_url: setting(
                s,
                "device_verification_url",
                "https://auth.openai.com/codex/device",
            ),
            device_redirect_uri: setting(
                s,
                "device_redirect_uri",
                "https://auth.openai.com/deviceauth/callback",
            ),
            api_base: setting(s, "api_base", "https://chatgpt.com/backend-api/codex"),
            client_id: setting(s, "client_id", CLIENT_ID),
        }
    }
}

/// The browser flow: prints (and opens) the authorize URL, waits for the redirect, exchanges
/// the code.
pub async fn login_browser(
    http: &Http,
    store: &Store,
    ep: &Endpoints,
    open_browser: bool,
    notify: &dyn Fn(Prompt),
) -> Result<Status, AuthError> {
    let pkce = Pkce::new();
    let state = random_token(32);
    let listener = super::loopback::bind(PORT, CALLBACK_PATH).await?;
    let redirect_uri = listener.redirect_uri();
    let mut url = url::Url::parse(&ep.authorize_url)
        .map_err(|e| AuthError::Other(format!("auth.openai-chatgpt.authorize_url: {e}")))?;
    url.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", &ep.client_id)
        .append_pair("redirect_uri", &redirect_uri)
        .append_pair("scope", SCOPE)
        .append_pair("code_challenge", &pkce.challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("id_token_add_organizations", "true")
        .append_pair("codex_cli_simplified_flow", "true")
        .append_pair("state", &state)
        .append_pair("originator", "fen");
    let url = url.to_string();
    let opened = open_browser && super::open_browser(&url);
    notify(Prompt::OpenUrl { url, opened });
    let code = listener.wait(&state, &http.cancel).await?;
    drop(listener);
    let tokens = exchange(http, ep, &code, &redirect_uri, &pkce.verifier).await?;
    save(store, tokens, None).await
}

/// The device flow (OpenAI's own shape: a user code, then an authorization code and verifier
/// to exchange).
pub async fn login_device(
    http: &Http,
    store: &Store,
    ep: &Endpoints,
    notify: &dyn Fn(Prompt),
) -> Result<Status, AuthError> {
    let a = http
        .post_json(
            &ep.device_code_url,
            &json!({"client_id": ep.client_id}),
            &[],
        )
        .await?;
    if !a.ok() {
        let hint = if a.status == 404 || a.status == 403 {
            " (device login must be enabled in your ChatGPT security settings, or by your workspace admin)"
        } else {
            ""
        };
        return Err(AuthError::Http(format!(
            "device login request to {} failed: {}{hint}",
            origin(&ep.device_code_url),
            a.error_text()
        )));
    }
    let device_auth_id = field(&a.body, "device_auth_id");
    let user_code = field(&a.body, "user_code").or_else(|| field(&a.body, "usercode"));
    let (Some(device_auth_id), Some(user_code)) = (device_auth_id, user_code) else {
        return Err(AuthError::Http(
            "the device login answer has no device_auth_id and user_code".into(),
        ));
    };
    let interval = a
        .body
        .get("interval")
        .and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.parse().ok()))
        })
        .unwrap_or(5);
    notify(Prompt::DeviceCode {
        url: ep.device_verification_url.clone(),
        code: user_code.clone(),
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15 * 60);
    let (code, verifier) = loop {
        http.sleep(super::oauth::poll_delay(interval)).await?;
        if tokio::time::Instant::now() > deadline {
            return Err(AuthError::Denied(
                "the device code was not entered within 15 minutes; run the login again".into(),
            ));
        }
        let a = http
            .post_json(
                &ep.device_token_url,
                &json!({"device_auth_id": device_auth_id, "user_code": user_code}),
                &[],
            )
            .await?;
        if a.status == 403 || a.status == 404 {
            continue; // not yet approved
        }
        if !a.ok() {
            return Err(AuthError::Denied(format!(
                "device login: {}",
                a.error_text()
            )));
        }
        match (
            field(&a.body, "authorization_code"),
            field(&a.body, "code_verifier"),
        ) {
            (Some(c), Some(v)) => break (c, v),
            _ => {
                return Err(AuthError::Http(
                    "the device login answer has no authorization_code".into(),
                ))
            }
        }
    };
    let tokens = exchange(http, ep, &code, &ep.device_redirect_uri, &verifier).await?;
    save(store, tokens, None).await
}

async fn exchange(
    http: &Http,
    ep: &Endpoints,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<Tokens, AuthError> {
    let a = http
        .post_form(
            &ep.token_url,
            &[
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri),
                ("client_id", &ep.client_id),
                ("code_verifier", verifier),
            ],
            &[],
        )
        .await?;
    Tokens::from_answer(&a, "the code exchange")
}

/// Stores a token answer (keeping the old refresh token and id token when the answer has
/// none) and returns the status it gives.
async fn save(store: &Store, t: Tokens, old: Option<&Value>) -> Result<Status, AuthError> {
    let entry = entry_of(t, old);
    let status = status_of(&entry);
    let store = store.clone();
    blocking(move || store.put(PROVIDER, Some(entry)).map(|_| ())).await?;
    Ok(status)
}

fn entry_of(t: Tokens, old: Option<&Value>) -> Value {
    let old_field = |k: &str| old.and_then(|o| field(o, k));
    let id_token = t.id_token.or_else(|| old_field("id_token"));
    let claims = id_token
        .as_deref()
        .and_then(jwt_claims)
        .unwrap_or(Value::Null);
    let auth = &claims[AUTH_CLAIM];
    let expires_at = t
        .expires_in
        .map(|s| now() + s)
        .or_else(|| jwt_claims(&t.access_token).and_then(|c| c["exp"].as_i64()))
        .unwrap_or(now() + 3600);
    json!({
        "type": "oauth",
        "access_token": t.access_token,
        "refresh_token": t.refresh_token.or_else(|| old_field("refresh_token")),
        "id_token": id_token,
        "expires_at": expires_at,
        "account_id": auth["chatgpt_account_id"].as_str().map(str::to_string).or_else(|| old_field("account_id")),
        "plan": auth["chatgpt_plan_type"].as_str(),
        "email": claims["email"].as_str(),
    })
}

/// What `fen login --status` shows of a stored entry.
pub fn status_of(entry: &Value) -> Status {
    Status {
        provider: PROVIDER.into(),
        email: field(entry, "email"),
        user: None,
        plan: field(entry, "plan"),
        expires_at: entry["expires_at"].as_i64(),
        host: None,
    }
}

fn credential_of(entry: &Value, ep: &Endpoints) -> Credential {
    let mut headers = vec![
        ("originator".to_string(), "fen".to_string()),
        (
            "openai-beta".to_string(),
            "responses=experimental".to_string(),
        ),
    ];
    if let Some(id) = field(entry, "account_id") {
        headers.push(("chatgpt-account-id".into(), id));
    }
    Credential {
        token: field(entry, "access_token").unwrap_or_default(),
        expires_at: entry["expires_at"].as_i64(),
        headers,
        base_url: Some(ep.api_base.clone()),
    }
}

/// The credential for a request: the stored token while it has more than 5 minutes left,
/// else a refreshed one (one refresh across processes: see [`super::renew_entry`]). `stale`
/// (the token a request was refused with) forces a refresh unless another process already
/// replaced that token.
pub async fn credential(
    http: &Http,
    store: &Store,
    ep: &Endpoints,
    stale: Option<&str>,
) -> Result<Credential, AuthError> {
    let usable = |e: &Value| super::usable(e, "access_token", stale, false);
    let entry = super::renew_entry(store, PROVIDER, usable, |entry| async move {
        let Some(refresh_token) = field(&entry, "refresh_token") else {
            return Err(AuthError::Expired {
                provider: PROVIDER.into(),
                detail: "no refresh token is stored".into(),
            });
        };
        let a = http
            .post_form(
                &ep.token_url,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", &refresh_token),
                    ("client_id", &ep.client_id),
                    ("scope", "openid profile email"),
                ],
                &[],
            )
            .await?;
        if a.status == 400 || a.status == 401 {
            return Err(AuthError::Expired {
                provider: PROVIDER.into(),
                detail: format!("the refresh was refused: {}", a.error_text()),
            });
        }
        let tokens = Tokens::from_answer(&a, "the token refresh")?;
        Ok(entry_of(tokens, Some(&entry)))
    })
    .await?
    .ok_or(AuthError::NotLoggedIn {
        provider: PROVIDER.into(),
    })?;
    Ok(credential_of(&entry, ep))
}

/// The models the account's plan offers (the backend's model list).
pub async fn models(http: &Http, store: &Store, ep: &Endpoints) -> Result<Vec<Value>, AuthError> {
    let cred = credential(http, store, ep, None).await?;
    let url = format!(
        "{}/models?client_version=0.99.0",
        ep.api_base.trim_end_matches('/')
    );
    let body = super::get_with(http, &url, &cred).await?;
    let list = body["models"]
        .as_array()
        .or_else(|| body["data"].as_array())
        .cloned()
        .unwrap_or_default();
    Ok(list
        .iter()
        .filter_map(|m| {
            let id = field(m, "slug").or_else(|| field(m, "id"))?;
            let mut out = json!({"id": id});
            if let Some(w) = m["context_window"].as_u64() {
                out["context_window"] = w.into();
            }
            out["reasoning"] = true.into();
            Some(out)
        })
        .collect())
}

/// Forgets the login; true when there was one.
pub async fn logout(store: &Store) -> Result<bool, AuthError> {
    super::forget(store, PROVIDER).await
}
