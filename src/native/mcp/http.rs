//! rmcp's streamable HTTP transport over fen's own reqwest 0.12 client: rmcp's built-in client
//! is reqwest 0.13, and two HTTP stacks in one binary cost build time and size for nothing.
//! This implements rmcp's `StreamableHttpClient` (POST a message, GET the server's event
//! stream, DELETE the session) the way rmcp's reqwest client does, with bounded bodies.

use futures_util::stream::{BoxStream, StreamExt};
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::common::http_header::{
    EVENT_STREAM_MIME_TYPE, HEADER_LAST_EVENT_ID, HEADER_SESSION_ID, JSON_MIME_TYPE,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use sse_stream::{Sse, SseStream};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

/// Largest JSON response (and error body kept) read into memory.
const MAX_JSON_BODY: usize = 16 * 1024 * 1024;
const MAX_ERROR_BODY: usize = 4 * 1024;

/// fen's HTTP client as an rmcp transport client; `oauth` when the server's requests carry a
/// login from `fen mcp login` (it then overrides rmcp's fixed auth header).
#[derive(Clone)]
pub struct FenHttpClient {
    pub client: reqwest::Client,
    pub oauth: Option<Arc<OAuthLogin>>,
}

/// The OAuth login of one HTTP server: the token its requests carry. A request the server
/// refuses with 401 gets one refresh (the refresh_token grant, see `native::auth::mcp::token`)
/// and is sent once more; a second 401, or a refresh that fails, is the caller's error.
pub struct OAuthLogin {
    url: String,
    token: std::sync::Mutex<String>,
}

impl OAuthLogin {
    pub fn new(url: &str, token: String) -> Arc<OAuthLogin> {
        Arc::new(OAuthLogin {
            url: url.to_string(),
            token: std::sync::Mutex::new(token),
        })
    }

    fn current(&self) -> String {
        self.token.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A new token after `refused` was refused, None when none can be had.
    async fn renew(&self, refused: &str) -> Option<String> {
        use crate::native::auth::{mcp, oauth::Http, store::Store};
        let http = Http::new(tokio_util::sync::CancellationToken::new()).ok()?;
        let fresh = mcp::token(&http, &Store::from_env(), &self.url, Some(refused))
            .await
            .ok()
            .flatten()
            .filter(|t| t != refused)?;
        *self.token.lock().unwrap_or_else(|p| p.into_inner()) = fresh.clone();
        Some(fresh)
    }
}

/// A reqwest failure, as the transport's client error.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct ClientError(#[from] reqwest::Error);

type Result<T> = std::result::Result<T, StreamableHttpError<ClientError>>;

fn client_err(e: reqwest::Error) -> StreamableHttpError<ClientError> {
    StreamableHttpError::Client(ClientError(e))
}

fn with_headers(
    mut b: reqwest::RequestBuilder,
    session_id: Option<&str>,
    auth: Option<String>,
    custom: HashMap<HeaderName, HeaderValue>,
) -> reqwest::RequestBuilder {
    if let Some(s) = session_id {
        b = b.header(HEADER_SESSION_ID, s);
    }
    if let Some(a) = auth {
        b = b.bearer_auth(a);
    }
    for (k, v) in custom {
        b = b.header(k, v);
    }
    b
}

fn media_is(ct: &str, mime: &str) -> bool {
    ct.split(';')
        .next()
        .is_some_and(|m| m.trim().eq_ignore_ascii_case(mime))
}

/// The body as a byte stream (fen's reqwest has no `stream` feature; `chunk` does the same).
fn body_stream(
    resp: reqwest::Response,
) -> impl futures_util::Stream<Item = std::result::Result<bytes::Bytes, reqwest::Error>> + Send {
    futures_util::stream::unfold(Some(resp), |r| async move {
        let mut r = r?;
        match r.chunk().await {
            Ok(Some(b)) => Some((Ok(b), Some(r))),
            Ok(None) => None,
            Err(e) => Some((Err(e), None)),
        }
    })
}

fn sse(resp: reqwest::Response) -> BoxStream<'static, std::result::Result<Sse, SseError>> {
    SseStream::from_bytes_stream(body_stream(resp)).boxed()
}

/// Reads at most `max` bytes of the body; more is an error.
async fn bounded(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(client_err)? {
        if out.len() + chunk.len() > max {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

fn content_type(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

impl StreamableHttpClient for FenHttpClient {
    type Error = ClientError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse> {
        let body = serde_json::to_vec(&message)?;
        let send = |auth: Option<String>| {
            let req = self
                .client
                .post(uri.as_ref())
                .header(
                    reqwest::header::ACCEPT,
                    format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
                )
                .header(reqwest::header::CONTENT_TYPE, JSON_MIME_TYPE)
                .body(body.clone());
            with_headers(req, session_id.as_deref(), auth, custom_headers.clone()).send()
        };
        let had_session = session_id.is_some();
        let auth = self.oauth.as_ref().map(|o| o.current()).or(auth_header);
        let mut resp = send(auth.clone()).await.map_err(client_err)?;
        // A refused login token (expired or revoked while connected): refresh it once and
        // send the same message once more.
        if resp.status() == reqwest::StatusCode::UNAUTHORIZED {
            if let (Some(o), Some(refused)) = (&self.oauth, &auth) {
                if let Some(fresh) = o.renew(refused).await {
                    resp = send(Some(fresh)).await.map_err(client_err)?;
                }
            }
        }
        let status = resp.status();
        if status == reqwest::StatusCode::ACCEPTED || status == reqwest::StatusCode::NO_CONTENT {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == reqwest::StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        let awaits_no_response = !matches!(message, JsonRpcMessage::Request(_));
        let ct = content_type(&resp);
        let session = resp
            .headers()
            .get(HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if status == reqwest::StatusCode::UNAUTHORIZED {
            // The server wants OAuth (or a new token): the manager says how to log in.
            let challenge = resp
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("Bearer")
                .to_string();
            return Err(StreamableHttpError::AuthRequired(
                rmcp::transport::streamable_http_client::AuthRequiredError::new(challenge),
            ));
        }
        if !status.is_success() {
            let body = bounded(resp, MAX_JSON_BODY).await.unwrap_or_default();
            // A JSON-RPC error in an error response is the server's answer.
            if let Ok(m @ JsonRpcMessage::Error(_)) =
                serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(m, session));
            }
            let text =
                String::from_utf8_lossy(&body[..body.len().min(MAX_ERROR_BODY)]).into_owned();
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {text}"),
            )));
        }
        match ct.as_deref() {
            Some(ct) if media_is(ct, EVENT_STREAM_MIME_TYPE) => {
                Ok(StreamableHttpPostResponse::Sse(sse(resp), session))
            }
            Some(ct) if media_is(ct, JSON_MIME_TYPE) => {
                let body = bounded(resp, MAX_JSON_BODY).await?;
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(m) => Ok(StreamableHttpPostResponse::Json(m, session)),
                    Err(_) if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
                    Err(e) => Err(StreamableHttpError::Deserialize(e)),
                }
            }
            _ if awaits_no_response => Ok(StreamableHttpPostResponse::Accepted),
            _ => Err(StreamableHttpError::UnexpectedContentType(ct)),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        let auth_header = self.oauth.as_ref().map(|o| o.current()).or(auth_header);
        let req = with_headers(
            self.client.delete(uri.as_ref()),
            Some(&session_id),
            auth_header,
            custom_headers,
        );
        let resp = req.send().await.map_err(client_err)?;
        if resp.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        resp.error_for_status().map_err(client_err)?;
        Ok(())
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        let auth_header = self.oauth.as_ref().map(|o| o.current()).or(auth_header);
        let mut req = self.client.get(uri.as_ref()).header(
            reqwest::header::ACCEPT,
            format!("{EVENT_STREAM_MIME_TYPE}, {JSON_MIME_TYPE}"),
        );
        if let Some(id) = last_event_id {
            req = req.header(HEADER_LAST_EVENT_ID, id);
        }
        let req = with_headers(req, session_id.as_deref(), auth_header, custom_headers);
        let resp = req.send().await.map_err(client_err)?;
        if resp.status() == reqwest::StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let resp = resp.error_for_status().map_err(client_err)?;
        match content_type(&resp) {
            Some(ct) if media_is(&ct, EVENT_STREAM_MIME_TYPE) || media_is(&ct, JSON_MIME_TYPE) => {
                Ok(sse(resp))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(other)),
        }
    }
}
