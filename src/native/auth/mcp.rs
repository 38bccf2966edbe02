//! OAuth for remote MCP servers (the MCP authorization spec): a server that answers 401 names
//! its protected-resource metadata in `WWW-Authenticate`; that names the authorization server,
//! whose metadata gives the endpoints; the client registers itself (RFC 7591) when the server
//! offers registration, else uses the entry's `oauth.client_id`; then the authorization-code
//! flow with PKCE and a loopback redirect, with the server's URL as the `resource`. Tokens are
//! kept in auth.json under the server's URL and refreshed under the store's lock.

use super::oauth::{origin, Http, Tokens};
use super::pkce::{random_token, Pkce};
use super::store::Store;
use super::{blocking, field, now, AuthError, Prompt};
use serde_json::{json, Value};

/// The `oauth` of a server entry: a pre-registered client for servers without registration.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClientConfig {
    pub client_id: Option<String>,
    pub scopes: Vec<String>,
}

/// The `resource_metadata` parameter of a `WWW-Authenticate: Bearer ...` header.
pub fn resource_metadata_url(www_authenticate: &str) -> Option<String> {
    let i = www_authenticate.find("resource_metadata=")?;
    let rest = &www_authenticate[i + "resource_metadata=".len()..];
    let value = match rest.strip_prefix('"') {
        Some(q) => q.split('"').next()?,
        None => rest.split([',', ' ']).next()?,
    };
    Some(value.to_string())
}

/// The well-known URL `suffix` for `url` (path inserted after it, RFC 8414 §3).
fn well_known(url: &str, suffix: &str) -> Option<String> {
    let u = url::Url::parse(url).ok()?;
    let path = u.path().trim_end_matches('/');
    Some(format!(
        "{}/.well-known/{suffix}{path}",
        u.origin().ascii_serialization()
    ))
}

async fn get_json(http: &Http, url: &str) -> Result<Option<Value>, AuthError> {
    let a = http.get(url, &[]).await?;
    Ok(if a.ok() && a.body.is_object() {
        Some(a.body)
    } else {
        None
    })
}

/// What discovery found.
#[derive(Clone, Debug)]
pub struct Discovered {
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub scopes: Vec<String>,
}

/// Finds the authorization server of the MCP server at `server_url`.
pub async fn discover(http: &Http, server_url: &str) -> Result<Discovered, AuthError> {
    // Ask the server itself first: its 401 names the resource metadata.
    let header = probe_header(http, server_url).await;
    let mut candidates = Vec::new();
    if let Some(u) = header.as_deref().and_then(resource_metadata_url) {
        candidates.push(u);
    }
    candidates.extend(well_known(server_url, "oauth-protected-resource"));
    if let Ok(u) = url::Url::parse(server_url) {
        candidates.push(format!(
            "{}/.well-known/oauth-protected-resource",
            u.origin().ascii_serialization()
        ));
    }
    let mut resource = None;
    for c in &candidates {
        if let Some(v) = get_json(http, c).await? {
            resource = Some(v);
            break;
        }
    }
    let issuer = resource
        .as_ref()
        .and_then(|r| r["authorization_servers"][0].as_str().map(str::to_string))
        .or_else(|| {
            url::Url::parse(server_url)
                .ok()
                .map(|u| u.origin().ascii_serialization())
        })
        .ok_or_else(|| AuthError::Other(format!("{server_url} is not a URL")))?;
    let scopes: Vec<String> = resource
        .as_ref()
        .and_then(|r| r["scopes_supported"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut meta = None;
    let mut tried = Vec::new();
    for suffix in ["oauth-authorization-server", "openid-configuration"] {
        if let Some(u) = well_known(&issuer, suffix) {
            tried.push(u.clone());
            if let Some(v) = get_json(http, &u).await? {
                meta = Some(v);
                break;
            }
        }
    }
    let Some(meta) = meta else {
        return Err(AuthError::Other(format!(
            "{} publishes no OAuth metadata (tried {})",
            origin(&issuer),
            tried.join(", ")
        )));
    };
    let (Some(authorization_endpoint), Some(token_endpoint)) = (
        field(&meta, "authorization_endpoint"),
        field(&meta, "token_endpoint"),
    ) else {
        return Err(AuthError::Other(format!(
            "the OAuth metadata of {} has no authorization_endpoint or token_endpoint",
            origin(&issuer)
        )));
    };
    Ok(Discovered {
        authorization_endpoint,
        token_endpoint,
        registration_endpoint: field(&meta, "registration_endpoint"),
        scopes,
    })
}

/// The `WWW-Authenticate` header of an unauthenticated request to the server, if it has one.
async fn probe_header(http: &Http, server_url: &str) -> Option<String> {
    http.probe_header(server_url, "www-authenticate").await
}

/// `fen mcp login NAME`: discovery, a client (registered or configured), the browser flow.
pub async fn login(
    http: &Http,
    store: &Store,
    server_url: &str,
    client: &ClientConfig,
    open_browser: bool,
    notify: &dyn Fn(Prompt),
) -> Result<(), AuthError> {
    let d = discover(http, server_url).await?;
    let listener = super::loopback::bind(0, "/callback").await?;
    let redirect_uri = listener.redirect_uri();
    let (client_id, client_secret) = match (&client.client_id, &d.registration_endpoint) {
        (Some(id), _) => (id.clone(), None),
        (None, Some(reg)) => {
            let a = http
                .post_json(
                    reg,
                    &json!({
                        "client_name": "fen",
                        "redirect_uris": [redirect_uri],
                        "grant_types": ["authorization_code", "refresh_token"],
                        "response_types": ["code"],
                        "token_endpoint_auth_method": "none",
                    }),
                    &[],
                )
                .await?;
            match field(&a.body, "client_id") {
                Some(id) if a.ok() => (id, field(&a.body, "client_secret")),
                _ => {
                    return Err(AuthError::Other(format!(
                        "client registration at {} failed: {}",
                        origin(reg),
                        a.error_text()
                    )))
                }
            }
        }
        (None, None) => {
            return Err(AuthError::Other(format!(
                "the authorization server of {server_url} offers no client registration; add \"oauth\": {{\"client_id\": \"...\"}} to the server's entry"
            )))
        }
    };
    let scopes = if client.scopes.is_empty() {
        d.scopes.clone()
    } else {
        client.scopes.clone()
    };
    let pkce = Pkce::new();
    let state = random_token(24);
    let mut url = url::Url::parse(&d.authorization_endpoint)
        .map_err(|e| AuthError::Other(format!("authorization_endpoint: {e}")))?;
    {
        let mut q = url.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &client_id)
            .append_pair("redirect_uri", &redirect_uri)
            .append_pair("code_challenge", &pkce.challenge)
            .append_pair("code_challenge_method", "S256")
            .append_pair("state", &state)
            .append_pair("resource", server_url);
        if !scopes.is_empty() {
            q.append_pair("scope", &scopes.join(" "));
        }
    }
    let url = url.to_string();
    let opened = open_browser && super::open_browser(&url);
    notify(Prompt::OpenUrl { url, opened });
    let code = listener.wait(&state, &http.cancel).await?;
    drop(listener);
    let mut fields = vec![
        ("grant_type", "authorization_code"),
        ("code", code.as_str()),
        ("redirect_uri", redirect_uri.as_str()),
        ("client_id", client_id.as_str()),
        ("code_verifier", pkce.verifier.as_str()),
        ("resource", server_url),
    ];
    if let Some(s) = &client_secret {
        fields.push(("client_secret", s));
    }
    let a = http.post_form(&d.token_endpoint, &fields, &[]).await?;
    let t = Tokens::from_answer(&a, "the code exchange")?;
    let entry = json!({
        "type": "mcp-oauth",
        "access_token": t.access_token,
        "refresh_token": t.refresh_token,
        "expires_at": t.expires_in.map(|s| now() + s),
        "client_id": client_id,
        "client_secret": client_secret,
        "token_url": d.token_endpoint,
    });
    let s = store.clone();
    let key = server_url.to_string();
    blocking(move || s.put(&key, Some(entry)).map(|_| ())).await
}

/// The bearer token for `server_url`: the stored one, refreshed (once across processes, see
/// [`super::renew_entry`]) when under 5 minutes remain or when `stale` (a token the server just
/// refused) is still the stored one. `Ok(None)` without a login; an `Expired` error when the
/// refresh was refused or impossible (log in again).
pub async fn token(
    http: &Http,
    store: &Store,
    server_url: &str,
    stale: Option<&str>,
) -> Result<Option<String>, AuthError> {
    // A token without an expiry is used until the server refuses it.
    let usable = |e: &Value| super::usable(e, "access_token", stale, true);
    let expired = |detail: String| AuthError::Expired {
        provider: server_url.to_string(),
        detail,
    };
    let entry = super::renew_entry(store, server_url, usable, |entry| async move {
        let (Some(rt), Some(token_url), Some(client_id)) = (
            field(&entry, "refresh_token"),
            field(&entry, "token_url"),
            field(&entry, "client_id"),
        ) else {
            return Err(expired("no refresh token is stored".into()));
        };
        let secret = field(&entry, "client_secret");
        let mut fields = vec![
            ("grant_type", "refresh_token"),
            ("refresh_token", rt.as_str()),
            ("client_id", client_id.as_str()),
            ("resource", server_url),
        ];
        if let Some(s) = &secret {
            fields.push(("client_secret", s));
        }
        let a = http.post_form(&token_url, &fields, &[]).await?;
        if !a.ok() {
            return Err(expired(format!(
                "the refresh was refused: {}",
                a.error_text()
            )));
        }
        let t = Tokens::from_answer(&a, "the token refresh")?;
        let mut new = entry.clone();
        new["access_token"] = t.access_token.into();
        if let Some(r) = t.refresh_token {
            new["refresh_token"] = r.into();
        }
        new["expires_at"] = t.expires_in.map(|s| now() + s).into();
        Ok(new)
    })
    .await?;
    Ok(entry.and_then(|e| field(&e, "access_token")))
}

/// Forgets the login of `server_url`; true when there was one.
pub async fn logout(store: &Store, server_url: &str) -> Result<bool, AuthError> {
    super::forget(store, server_url).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_resource_metadata_from_www_authenticate() {
        assert_eq!(
            resource_metadata_url(r#"Bearer realm="x", resource_metadata="https://a.b/.well-known/oauth-protected-resource/mcp""#).as_deref(),
            Some("https://a.b/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(resource_metadata_url("Bearer"), None);
        assert_eq!(
            well_known("https://a.b/mcp", "oauth-protected-resource").as_deref(),
            Some("https://a.b/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            well_known("https://a.b", "oauth-authorization-server").as_deref(),
            Some("https://a.b/.well-known/oauth-authorization-server")
        );
    }
}
