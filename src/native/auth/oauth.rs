//! The OAuth requests the flows share: form and JSON posts with a JSON answer, token answers,
//! and the RFC 8628 device flow. Error messages carry the server's `error` and
//! `error_description`, never a body that could hold a token.

use super::{AuthError, Prompt};
use crate::native::http::{HttpClient, HttpConfig, HttpRequest};
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Largest answer read from an OAuth endpoint.
const BODY_CAP: usize = 1 << 20;

/// An HTTP client bound to one cancellation token.
#[derive(Clone)]
pub struct Http {
    client: HttpClient,
    pub cancel: CancellationToken,
}

/// A status and its JSON body (`Null` when the body is not JSON).
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Answer {
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// `error` (and `error_description`) of an OAuth error answer, else the status.
    pub fn error_text(&self) -> String {
        let e = self.body.get("error");
        let code = e
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .or_else(|| {
                e.and_then(|v| v.get("message"))
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            })
            .or_else(|| {
                self.body
                    .get("message")
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
            });
        let desc = self.body.get("error_description").and_then(|v| v.as_str());
        match (code, desc) {
            (Some(c), Some(d)) => format!("{c}: {d}"),
            (Some(c), None) => c,
            _ => format!("HTTP {}", self.status),
        }
    }

    /// The `error` code alone.
    pub fn error_code(&self) -> Option<&str> {
        self.body.get("error").and_then(|v| v.as_str())
    }
}

impl Http {
    pub fn new(cancel: CancellationToken) -> Result<Http, AuthError> {
        let config = HttpConfig::from_env().map_err(|e| AuthError::Other(e.to_string()))?;
        let client = HttpClient::new(config).map_err(|e| AuthError::Other(e.to_string()))?;
        Ok(Http { client, cancel })
    }

    pub async fn send(&self, req: HttpRequest) -> Result<Answer, AuthError> {
        let url = req.url.clone();
        let res = self
            .client
            .request(
                req.header("accept", "application/json"),
                self.cancel.clone(),
            )
            .await
            .map_err(|e| match e {
                crate::native::http::HttpError::Cancelled => AuthError::Cancelled,
                e => AuthError::Http(format!("{}: {e}", origin(&url))),
            })?;
        let status = res.status();
        let text = res
            .text(BODY_CAP)
            .await
            .map_err(|e| AuthError::Http(format!("{}: {e}", origin(&url))))?;
        let body = serde_json::from_str(&text.text).unwrap_or(Value::Null);
        Ok(Answer { status, body })
    }

    pub async fn post_form(
        &self,
        url: &str,
        fields: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Result<Answer, AuthError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let mut req = HttpRequest::new("POST", url)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    pub async fn post_json(
        &self,
        url: &str,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> Result<Answer, AuthError> {
        let mut req = HttpRequest::new("POST", url)
            .header("content-type", "application/json")
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    pub async fn get(&self, url: &str, headers: &[(&str, &str)]) -> Result<Answer, AuthError> {
        let mut req = HttpRequest::new("GET", url);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        self.send(req).await
    }

    /// POSTs an MCP `initialize` to `url` without credentials and returns the response's header
    /// `name` (the `WWW-Authenticate` of a 401); None on any failure.
    pub async fn probe_header(&self, url: &str, name: &str) -> Option<String> {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "fen", "version": env!("CARGO_PKG_VERSION")}}});
        let req = HttpRequest::new("POST", url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        let res = self.client.request(req, self.cancel.clone()).await.ok()?;
        res.header(name).map(str::to_string)
    }

    /// Waits `d` unless cancelled.
    pub async fn sleep(&self, d: Duration) -> Result<(), AuthError> {
        tokio::select! {
            _ = self.cancel.cancelled() => Err(AuthError::Cancelled),
            _ = tokio::time::sleep(d) => Ok(()),
        }
    }
}

/// `scheme://host[:port]` of a URL, for messages.
pub fn origin(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => u.origin().ascii_serialization(),
        Err(_) => "the server".into(),
    }
}

/// A token endpoint's answer.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub id_token: Option<String>,
    pub expires_in: Option<i64>,
}

impl Tokens {
    pub fn from_answer(a: &Answer, what: &str) -> Result<Tokens, AuthError> {
        if !a.ok() {
            return Err(AuthError::Denied(format!("{what}: {}", a.error_text())));
        }
        let s = |k: &str| a.body.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let Some(access_token) = s("access_token") else {
            return Err(AuthError::Http(format!(
                "{what}: the answer has no access_token"
            )));
        };
        Ok(Tokens {
            access_token,
            refresh_token: s("refresh_token"),
            id_token: s("id_token"),
            expires_in: a.body.get("expires_in").and_then(|v| v.as_i64()),
        })
    }
}

/// The RFC 8628 device flow: asks `device_code_url` for a code, shows it through `notify`, and
/// polls `token_url` until the person approves, denies, or the code expires. Returns the
/// token answer.
pub async fn device_flow(
    http: &Http,
    device_code_url: &str,
    token_url: &str,
    client_id: &str,
    scope: &str,
    notify: &dyn Fn(Prompt),
) -> Result<Tokens, AuthError> {
    let mut fields = vec![("client_id", client_id)];
    if !scope.is_empty() {
        fields.push(("scope", scope));
    }
    let a = http.post_form(device_code_url, &fields, &[]).await?;
    if !a.ok() {
        return Err(AuthError::Http(format!(
            "device code request to {} failed: {}",
            origin(device_code_url),
            a.error_text()
        )));
    }
    let s = |k: &str| a.body.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let (Some(device_code), Some(user_code)) = (s("device_code"), s("user_code")) else {
        return Err(AuthError::Http(format!(
            "{} answered without a device_code and user_code",
            origin(device_code_url)
        )));
    };
    let url = s("verification_uri_complete")
        .or_else(|| s("verification_uri"))
        .unwrap_or_else(|| origin(device_code_url) + "/login/device");
    let mut interval = a.body.get("interval").and_then(|v| v.as_u64()).unwrap_or(5);
    let expires_in = a
        .body
        .get("expires_in")
        .and_then(|v| v.as_u64())
        .unwrap_or(900);
    notify(Prompt::DeviceCode {
        url,
        code: user_code,
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(expires_in);
    loop {
        http.sleep(poll_delay(interval)).await?;
        if tokio::time::Instant::now() > deadline {
            return Err(AuthError::Denied(
                "the device code expired before it was entered; run the login again".into(),
            ));
        }
        let a = http
            .post_form(
                token_url,
                &[
                    ("client_id", client_id),
                    ("device_code", &device_code),
                    ("grant_type", "urn:ietf:params:oauth:grant-type:device_code"),
                ],
                &[],
            )
            .await?;
        match a.error_code() {
            Some("authorization_pending") => continue,
            Some("slow_down") => {
                interval += 5;
                continue;
            }
            Some("access_denied") => {
                return Err(AuthError::Denied(
                    "the login was denied in the browser".into(),
                ))
            }
            Some("expired_token") => {
                return Err(AuthError::Denied(
                    "the device code expired before it was entered; run the login again".into(),
                ))
            }
            _ => return Tokens::from_answer(&a, "device login"),
        }
    }
}

/// The wait between polls: the server's interval, at least 200 ms (local test servers say 0).
pub fn poll_delay(interval_secs: u64) -> Duration {
    Duration::from_secs(interval_secs).max(Duration::from_millis(200))
}
