//! HTTP client for providers: requests, streamed bodies and Server-Sent Events with
//! connect / first-byte / idle timeouts and prompt cancellation.
//!
//! Built on reqwest (rustls with ring, HTTP/1.1 + HTTP/2, proxies from `HTTP_PROXY`,
//! `HTTPS_PROXY`, `ALL_PROXY`, `NO_PROXY`). Everything here works on a tokio `current_thread`
//! runtime inside a `LocalSet`; nothing is spawned by this module.
//!
//! Non-2xx statuses are not errors: the caller gets the response and decides (read a capped
//! error body with [`HttpResponse::text`], honour [`parse_retry_after`], back off with
//! [`backoff_delay`]). [`HttpError`] is only for transport trouble, and
//! [`HttpError::is_retryable`] says whether trying again can help.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::native::sse::{SseEvent, SseFinish, SseItem, SseParser};

/// A sensible cap for reading an error body (what providers put in a failed turn).
pub const DEFAULT_ERROR_BODY_CAP: usize = 64 * 1024;

/// Default connect timeout (`FEN_HTTP_CONNECT_TIMEOUT_MS`).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 30_000;
/// Default first-byte timeout (`FEN_HTTP_FIRST_BYTE_TIMEOUT_MS`).
pub const DEFAULT_FIRST_BYTE_TIMEOUT_MS: u64 = 300_000;
/// Default idle timeout (`FEN_HTTP_IDLE_TIMEOUT_MS`).
pub const DEFAULT_IDLE_TIMEOUT_MS: u64 = 120_000;

/// Which of the three timeouts fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimeoutKind {
    /// TCP (+ TLS, + proxy) connection setup took too long.
    Connect,
    /// No response headers (plain requests) or no SSE data event (streams) in time.
    FirstByte,
    /// Too long between body chunks (plain) or between SSE data events (streams).
    Idle,
}

impl TimeoutKind {
    /// The environment variable that sets this timeout.
    pub fn env_var(self) -> &'static str {
        match self {
            TimeoutKind::Connect => "FEN_HTTP_CONNECT_TIMEOUT_MS",
            TimeoutKind::FirstByte => "FEN_HTTP_FIRST_BYTE_TIMEOUT_MS",
            TimeoutKind::Idle => "FEN_HTTP_IDLE_TIMEOUT_MS",
        }
    }

    fn waiting_for(self) -> &'static str {
        match self {
            TimeoutKind::Connect => "connection",
            TimeoutKind::FirstByte => "first response data",
            TimeoutKind::Idle => "further response data",
        }
    }
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutKind::Connect => "connect",
            TimeoutKind::FirstByte => "first-byte",
            TimeoutKind::Idle => "idle",
        })
    }
}

/// Transport errors. Statuses are not errors; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// DNS failure, refused connection, TLS handshake failure, proxy unreachable.
    #[error("could not connect to {url}: {detail} (check the base URL, the network and HTTPS_PROXY/NO_PROXY)")]
    Connect {
        /// The target, without query string or credentials.
        url: String,
        /// The underlying cause chain.
        detail: String,
    },
    /// One of the configured timeouts fired.
    #[error("{kind} timeout: no {} from {url} within {after_ms} ms (raise {} if the server is just slow)", kind.waiting_for(), kind.env_var())]
    Timeout {
        /// Which timeout.
        kind: TimeoutKind,
        /// The configured limit that was exceeded, in milliseconds.
        after_ms: u64,
        /// The target, without query string or credentials.
        url: String,
    },
    /// The connection failed after it was established: closed before the headers, or cut in
    /// the middle of the body (an incomplete chunked or Content-Length body).
    #[error(
        "connection to {url} dropped while reading the response: {detail} (retrying usually helps)"
    )]
    Stream {
        /// The target, without query string or credentials.
        url: String,
        /// The underlying cause chain.
        detail: String,
    },
    /// The cancellation token was triggered; the connection has been dropped.
    #[error("request cancelled")]
    Cancelled,
    /// The request could not be built (bad method, URL, header).
    #[error("invalid HTTP request: {0}")]
    InvalidRequest(String),
    /// The configuration or the TLS setup is unusable.
    #[error("invalid HTTP configuration: {0}")]
    Config(String),
}

impl HttpError {
    /// True for failures a retry can fix: connect failures, timeouts, dropped streams.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            HttpError::Connect { .. } | HttpError::Timeout { .. } | HttpError::Stream { .. }
        )
    }
}

/// The three timeouts; `None` means no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpConfig {
    /// Limit for establishing the connection (including TLS and proxy CONNECT).
    pub connect_timeout: Option<Duration>,
    /// Limit from sending the request to the response headers (plain requests) or to the first
    /// SSE data event (streams; comments/keep-alives do not count).
    pub first_byte_timeout: Option<Duration>,
    /// Limit between body chunks (plain) or between SSE data events (comments do not count).
    pub idle_timeout: Option<Duration>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            connect_timeout: Some(Duration::from_millis(DEFAULT_CONNECT_TIMEOUT_MS)),
            first_byte_timeout: Some(Duration::from_millis(DEFAULT_FIRST_BYTE_TIMEOUT_MS)),
            idle_timeout: Some(Duration::from_millis(DEFAULT_IDLE_TIMEOUT_MS)),
        }
    }
}

impl HttpConfig {
    /// Reads `FEN_HTTP_CONNECT_TIMEOUT_MS`, `FEN_HTTP_FIRST_BYTE_TIMEOUT_MS` and
    /// `FEN_HTTP_IDLE_TIMEOUT_MS` (milliseconds; `0` disables; unset or empty = default).
    pub fn from_env() -> Result<Self, HttpError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env) with a custom variable lookup (for tests and settings).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, HttpError> {
        let read = |kind: TimeoutKind, default_ms: u64| -> Result<Option<Duration>, HttpError> {
            let name = kind.env_var();
            let ms = match lookup(name) {
                Some(v) if !v.trim().is_empty() => v.trim().parse::<u64>().map_err(|_| {
                    HttpError::Config(format!(
                        "{name}={v:?} is not a whole number of milliseconds (use e.g. {default_ms}, or 0 for no limit)"
                    ))
                })?,
                _ => default_ms,
            };
            Ok((ms > 0).then(|| Duration::from_millis(ms)))
        };
        Ok(Self {
            connect_timeout: read(TimeoutKind::Connect, DEFAULT_CONNECT_TIMEOUT_MS)?,
            first_byte_timeout: read(TimeoutKind::FirstByte, DEFAULT_FIRST_BYTE_TIMEOUT_MS)?,
            idle_timeout: read(TimeoutKind::Idle, DEFAULT_IDLE_TIMEOUT_MS)?,
        })
    }
}

/// A request as the Lua side describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    /// Method name, e.g. `"POST"`.
    pub method: String,
    /// Absolute `http://` or `https://` URL.
    pub url: String,
    /// Header name/value pairs, sent in order (repeated names are all sent).
    pub headers: Vec<(String, String)>,
    /// Request body, if any.
    pub body: Option<Vec<u8>>,
    /// Follow redirects (up to 10, reqwest's default). `false` returns 3xx responses as they
    /// are, for callers that decide themselves (webfetch follows same-host ones only).
    pub follow_redirects: bool,
}

impl HttpRequest {
    /// A request with no headers and no body.
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        Self {
            method: method.into(),
            url: url.into(),
            headers: Vec::new(),
            body: None,
            follow_redirects: true,
        }
    }

    /// Returns 3xx responses instead of following them (builder style).
    pub fn no_redirects(mut self) -> Self {
        self.follow_redirects = false;
        self
    }

    /// Adds a header (builder style).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the body (builder style).
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }

    fn has_header(&self, name: &str) -> bool {
        self.headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(name))
    }
}

/// A whole body read with a cap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CappedText {
    /// The body decoded as UTF-8 (invalid bytes replaced), cut on a character boundary.
    pub text: String,
    /// True when the body was longer than the cap (the rest was not read).
    pub truncated: bool,
}

/// The HTTP client; cheap to clone (connections are pooled and shared).
///
/// Two reqwest clients are built on first use: one with the system's root certificates for
/// `https://` (loading them reads and parses every certificate file, a few milliseconds), and
/// one without for plain `http://` to a local server, which must not pay for TLS it never uses.
/// With a proxy configured in the environment every request takes the first (the proxy itself
/// may speak TLS).
#[derive(Debug, Clone)]
pub struct HttpClient {
    tls: std::sync::Arc<std::sync::OnceLock<reqwest::Client>>,
    plain: std::sync::Arc<std::sync::OnceLock<reqwest::Client>>,
    /// The same two without redirect following, built on first use.
    tls_manual: std::sync::Arc<std::sync::OnceLock<reqwest::Client>>,
    plain_manual: std::sync::Arc<std::sync::OnceLock<reqwest::Client>>,
    proxied: bool,
    config: HttpConfig,
}

/// A reqwest client with fen's user agent and connect timeout; TLS roots only when needed.
fn build_client(
    config: &HttpConfig,
    tls: bool,
    follow: bool,
) -> Result<reqwest::Client, HttpError> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("fen/", env!("CARGO_PKG_VERSION")))
        .tls_built_in_root_certs(tls);
    if !follow {
        builder = builder.redirect(reqwest::redirect::Policy::none());
    }
    if let Some(t) = config.connect_timeout {
        builder = builder.connect_timeout(t);
    }
    builder
        .build()
        .map_err(|e| HttpError::Config(format!("cannot set up the HTTP client: {}", chain(&e))))
}

impl HttpClient {
    /// A client. Proxies come from the environment at this point; TLS roots are loaded by the
    /// first `https://` request.
    pub fn new(config: HttpConfig) -> Result<Self, HttpError> {
        let proxied = [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty()));
        let client = HttpClient {
            tls: Default::default(),
            plain: Default::default(),
            tls_manual: Default::default(),
            plain_manual: Default::default(),
            proxied,
            config,
        };
        // Fail now, not at the first request, if the configuration cannot work at all.
        client.reqwest_client(proxied, true)?;
        Ok(client)
    }

    /// The reqwest client for a URL (with TLS roots unless plain HTTP without a proxy).
    fn reqwest_client(&self, tls: bool, follow: bool) -> Result<&reqwest::Client, HttpError> {
        let cell = match (tls, follow) {
            (true, true) => &self.tls,
            (false, true) => &self.plain,
            (true, false) => &self.tls_manual,
            (false, false) => &self.plain_manual,
        };
        if let Some(c) = cell.get() {
            return Ok(c);
        }
        let client = build_client(&self.config, tls, follow)?;
        Ok(cell.get_or_init(|| client))
    }

    /// Builds the client a request to `url` needs on the blocking pool, when it is not built
    /// yet: loading the system's TLS roots takes milliseconds, which must not be spent on the
    /// thread that runs Lua. A failure is left for the request itself to report.
    pub async fn warm_up(&self, url: &str) {
        self.warm_up_for(url, true).await
    }

    /// [`warm_up`](Self::warm_up) for requests that do (`follow`) or do not follow redirects.
    pub async fn warm_up_for(&self, url: &str, follow: bool) {
        let tls = self.proxied || !url.starts_with("http://");
        let cell = match (tls, follow) {
            (true, true) => &self.tls,
            (false, true) => &self.plain,
            (true, false) => &self.tls_manual,
            (false, false) => &self.plain_manual,
        };
        if cell.get().is_some() {
            return;
        }
        let (cell, config) = (cell.clone(), self.config);
        let _ = tokio::task::spawn_blocking(move || {
            if let Ok(c) = build_client(&config, tls, follow) {
                let _ = cell.set(c);
            }
        })
        .await;
    }

    /// The timeouts in force.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// Sends a request and waits for the response headers (bounded by the first-byte timeout).
    /// Any status is returned as a response; the body is read with [`HttpResponse::next_chunk`].
    pub async fn request(
        &self,
        req: HttpRequest,
        cancel: CancellationToken,
    ) -> Result<HttpResponse, HttpError> {
        let started = Instant::now();
        let url = redact_url(&req.url);
        let builder = self.build(req)?;
        let first_byte_deadline = self.config.first_byte_timeout.map(|t| started + t);
        let sent = tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(HttpError::Cancelled),
            r = builder.send() => r,
            _ = sleep_until_opt(first_byte_deadline) => {
                return Err(self.timeout(TimeoutKind::FirstByte, &url));
            }
        };
        let inner = sent.map_err(|e| self.send_error(e, &url))?;
        let headers = inner
            .headers()
            .iter()
            .map(|(n, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_owned(), value)
            })
            .collect();
        Ok(HttpResponse {
            status: inner.status().as_u16(),
            headers,
            inner: Some(inner),
            cancel,
            config: self.config,
            first_byte_deadline,
            url,
        })
    }

    /// Sends a request expecting an event stream (adds `Accept: text/event-stream` unless set).
    /// Check [`SseStream::status`] before reading events: a non-2xx body is usually JSON.
    pub async fn sse(
        &self,
        mut req: HttpRequest,
        cancel: CancellationToken,
    ) -> Result<SseStream, HttpError> {
        if !req.has_header("accept") {
            req.headers
                .push(("accept".to_owned(), "text/event-stream".to_owned()));
        }
        Ok(self.request(req, cancel).await?.into_sse())
    }

    fn build(&self, req: HttpRequest) -> Result<reqwest::RequestBuilder, HttpError> {
        let method = reqwest::Method::from_bytes(req.method.as_bytes()).map_err(|_| {
            HttpError::InvalidRequest(format!("{:?} is not an HTTP method", req.method))
        })?;
        let url = reqwest::Url::parse(&req.url).map_err(|e| {
            HttpError::InvalidRequest(format!(
                "{:?} is not a valid URL: {e}",
                redact_url(&req.url)
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpError::InvalidRequest(format!(
                "URL scheme {:?} is not supported; use http:// or https://",
                url.scheme()
            )));
        }
        let mut headers = reqwest::header::HeaderMap::with_capacity(req.headers.len());
        for (name, value) in &req.headers {
            let n = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                HttpError::InvalidRequest(format!("{name:?} is not a valid header name"))
            })?;
            let v = reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                // Do not echo the value: it may be an API key.
                HttpError::InvalidRequest(format!(
                    "the value of header {name:?} contains characters not allowed in HTTP headers (newline or control)"
                ))
            })?;
            headers.append(n, v);
        }
        let tls = self.proxied || url.scheme() != "http";
        let mut builder = self
            .reqwest_client(tls, req.follow_redirects)?
            .request(method, url)
            .headers(headers);
        if let Some(body) = req.body {
            builder = builder.body(body);
        }
        Ok(builder)
    }

    fn timeout(&self, kind: TimeoutKind, url: &str) -> HttpError {
        timeout_error(&self.config, kind, url)
    }

    fn send_error(&self, e: reqwest::Error, url: &str) -> HttpError {
        if e.is_builder() {
            return HttpError::InvalidRequest(chain(&e.without_url()));
        }
        if e.is_connect() {
            if e.is_timeout() {
                return self.timeout(TimeoutKind::Connect, url);
            }
            return HttpError::Connect {
                url: url.to_owned(),
                detail: chain(&e.without_url()),
            };
        }
        // Connected, but the server closed or broke the connection before the headers.
        HttpError::Stream {
            url: url.to_owned(),
            detail: chain(&e.without_url()),
        }
    }
}

/// A response: status and headers now, body on demand.
#[derive(Debug)]
pub struct HttpResponse {
    status: u16,
    headers: Vec<(String, String)>,
    /// `None` once the connection was dropped (cancel, timeout, error): dropping it at once is
    /// what makes cancellation prompt even if the caller keeps this value around.
    inner: Option<reqwest::Response>,
    cancel: CancellationToken,
    config: HttpConfig,
    first_byte_deadline: Option<Instant>,
    url: String,
}

impl HttpResponse {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// All headers, names lowercase, values decoded lossily as UTF-8.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        header_value(&self.headers, name)
    }

    /// The next body chunk; `Ok(None)` at a clean end. Fails with an idle timeout when no chunk
    /// arrives within the idle limit, `Stream` when the body is cut, `Cancelled` on cancel.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, HttpError> {
        let deadline = self.config.idle_timeout.map(|t| Instant::now() + t);
        self.chunk_until(deadline, TimeoutKind::Idle).await
    }

    /// Reads the whole body, stopping after `cap` bytes (use [`DEFAULT_ERROR_BODY_CAP`] for
    /// error bodies); the connection is dropped if the body was longer.
    pub async fn text(mut self, cap: usize) -> Result<CappedText, HttpError> {
        let mut buf: Vec<u8> = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = self.next_chunk().await? {
            let room = cap - buf.len();
            if chunk.len() >= room {
                buf.extend_from_slice(&chunk[..room]);
                // Exactly filling the cap is only truncation if anything follows.
                truncated = chunk.len() > room || self.next_chunk().await?.is_some();
                break;
            }
            buf.extend_from_slice(&chunk);
        }
        Ok(CappedText {
            text: decode_capped(&buf, truncated),
            truncated,
        })
    }

    /// Turns this response into an event stream; the first-byte deadline keeps running from
    /// when the request was sent.
    pub fn into_sse(self) -> SseStream {
        SseStream {
            response: self,
            parser: SseParser::new(),
            pending: VecDeque::new(),
            scratch: Vec::new(),
            data_seen: false,
            idle_deadline: None,
            comments: 0,
            finish: None,
            failed: None,
        }
    }

    /// Waits for a chunk until `deadline`; a timeout reports `kind`.
    async fn chunk_until(
        &mut self,
        deadline: Option<Instant>,
        kind: TimeoutKind,
    ) -> Result<Option<Bytes>, HttpError> {
        let Some(inner) = self.inner.as_mut() else {
            return Ok(None);
        };
        let result = tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Err(HttpError::Cancelled),
            r = inner.chunk() => r.map_err(|e| HttpError::Stream {
                url: self.url.clone(),
                detail: chain(&e.without_url()),
            }),
            _ = sleep_until_opt(deadline) => Err(timeout_error(&self.config, kind, &self.url)),
        };
        match result {
            Ok(Some(bytes)) => Ok(Some(bytes)),
            Ok(None) => {
                self.inner = None;
                Ok(None)
            }
            Err(e) => {
                // Drop the connection now rather than when the caller drops us.
                self.inner = None;
                Err(e)
            }
        }
    }
}

/// A Server-Sent Events stream with data-aware timeouts.
#[derive(Debug)]
pub struct SseStream {
    response: HttpResponse,
    parser: SseParser,
    pending: VecDeque<SseEvent>,
    scratch: Vec<SseItem>,
    data_seen: bool,
    idle_deadline: Option<Instant>,
    comments: u64,
    finish: Option<SseFinish>,
    failed: Option<HttpError>,
}

impl SseStream {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.response.status()
    }

    /// True for 2xx.
    pub fn is_success(&self) -> bool {
        self.response.is_success()
    }

    /// All headers, names lowercase.
    pub fn headers(&self) -> &[(String, String)] {
        self.response.headers()
    }

    /// The first value of a header (name matched case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.response.header(name)
    }

    /// Reads the body as capped text instead of events (for non-2xx responses).
    pub async fn text(self, cap: usize) -> Result<CappedText, HttpError> {
        self.response.text(cap).await
    }

    /// How many comment lines (keep-alives) have been received.
    pub fn comments_seen(&self) -> u64 {
        self.comments
    }

    /// After `next_event` returned `Ok(None)`: whether the stream ended between events or
    /// with an unterminated event the parser had to discard.
    pub fn finish_state(&self) -> Option<SseFinish> {
        self.finish
    }

    /// The next data event; `Ok(None)` when the server ended the body cleanly.
    ///
    /// Until the first event the first-byte timeout applies (counted from the request), then
    /// the idle timeout between events. Comments never count as data. After an error the
    /// connection is closed and every later call returns the same error.
    pub async fn next_event(&mut self) -> Result<Option<SseEvent>, HttpError> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(Some(event));
            }
            if let Some(e) = &self.failed {
                return Err(e.clone());
            }
            if self.finish.is_some() {
                return Ok(None);
            }
            let (deadline, kind) = if self.data_seen {
                (self.idle_deadline, TimeoutKind::Idle)
            } else {
                (self.response.first_byte_deadline, TimeoutKind::FirstByte)
            };
            match self.response.chunk_until(deadline, kind).await {
                Ok(Some(bytes)) => self.absorb(&bytes),
                Ok(None) => self.finish = Some(self.parser.finish()),
                Err(e) => {
                    self.failed = Some(e.clone());
                    return Err(e);
                }
            }
        }
    }

    /// Every event already received, waiting (as [`Self::next_event`] does) only when none
    /// is: about one network read's worth, so a consumer pays its per-call cost once per read
    /// rather than once per event. `out` is cleared first and stays empty at the end of the
    /// stream.
    pub async fn next_batch(&mut self, out: &mut Vec<SseEvent>) -> Result<(), HttpError> {
        out.clear();
        if let Some(first) = self.next_event().await? {
            out.push(first);
            out.extend(self.pending.drain(..));
        }
        Ok(())
    }

    /// Parses a chunk; data events restart the idle clock, comments only get counted.
    fn absorb(&mut self, bytes: &[u8]) {
        self.parser.push_into(bytes, &mut self.scratch);
        let before = self.pending.len();
        for item in self.scratch.drain(..) {
            match item {
                SseItem::Event(event) => self.pending.push_back(event),
                SseItem::Comment(_) => self.comments += 1,
            }
        }
        if self.pending.len() > before {
            self.data_seen = true;
            self.idle_deadline = self
                .response
                .config
                .idle_timeout
                .map(|t| Instant::now() + t);
        }
    }
}

/// How long a server asked us to wait: `retry-after-ms` (milliseconds, may be fractional)
/// first, then `retry-after` as seconds or an HTTP-date (a date in the past gives zero).
/// Names are matched case-insensitively; unparseable values are ignored.
pub fn parse_retry_after(headers: &[(String, String)], now: SystemTime) -> Option<Duration> {
    let non_negative_secs = |v: f64| (v.is_finite() && v >= 0.0).then_some(v);
    if let Some(ms) = header_value(headers, "retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(non_negative_secs)
    {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = header_value(headers, "retry-after")?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return non_negative_secs(secs).and_then(|s| Duration::try_from_secs_f64(s).ok());
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Full-jitter exponential backoff: a uniform random delay in
/// `[0, min(cap, base * 2^(attempt-1)))`; `attempt` counts from 1.
pub fn backoff_delay(
    attempt: u32,
    base: Duration,
    cap: Duration,
    rng: &mut fastrand::Rng,
) -> Duration {
    let exponent = attempt.saturating_sub(1).min(63);
    let ceiling = base
        .checked_mul(1u32.checked_shl(exponent).unwrap_or(u32::MAX))
        .map_or(cap, |d| d.min(cap));
    ceiling.mul_f64(rng.f64())
}

fn header_value<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn timeout_error(config: &HttpConfig, kind: TimeoutKind, url: &str) -> HttpError {
    let limit = match kind {
        TimeoutKind::Connect => config.connect_timeout,
        TimeoutKind::FirstByte => config.first_byte_timeout,
        TimeoutKind::Idle => config.idle_timeout,
    };
    HttpError::Timeout {
        kind,
        after_ms: limit.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        url: url.to_owned(),
    }
}

/// Sleeps until `deadline`, or forever when there is none.
async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// A URL fit for messages: no credentials, no query (keys sometimes travel there).
fn redact_url(raw: &str) -> String {
    match reqwest::Url::parse(raw) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => "<unparseable URL>".to_owned(),
    }
}

/// An error and its sources, joined with ": " (reqwest's own message is too terse alone).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// Decodes a capped body; when truncated, a UTF-8 sequence cut by the cap is dropped rather
/// than turned into U+FFFD.
fn decode_capped(buf: &[u8], truncated: bool) -> String {
    let bytes = match std::str::from_utf8(buf) {
        Err(e) if truncated && e.error_len().is_none() => &buf[..e.valid_up_to()],
        _ => buf,
    };
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn retry_after_seconds_ms_and_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            parse_retry_after(&h(&[("Retry-After", "7")]), now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after(&h(&[("retry-after", "0")]), now),
            Some(Duration::ZERO)
        );
        // retry-after-ms wins over retry-after.
        assert_eq!(
            parse_retry_after(
                &h(&[("retry-after", "7"), ("retry-after-ms", "1500.5")]),
                now
            ),
            Some(Duration::from_micros(1_500_500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(90));
        assert_eq!(
            parse_retry_after(&h(&[("Retry-After", &later)]), now),
            Some(Duration::from_secs(90))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(90));
        assert_eq!(
            parse_retry_after(&h(&[("Retry-After", &earlier)]), now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after(&h(&[("retry-after", "-3")]), now), None);
        assert_eq!(parse_retry_after(&h(&[("retry-after", "soon")]), now), None);
        assert_eq!(parse_retry_after(&h(&[]), now), None);
        // A bad retry-after-ms falls back to retry-after.
        assert_eq!(
            parse_retry_after(&h(&[("retry-after-ms", "x"), ("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
    }

    #[test]
    fn backoff_is_full_jitter_under_the_capped_ceiling() {
        let mut rng = fastrand::Rng::with_seed(7);
        let base = Duration::from_secs(1);
        let cap = Duration::from_secs(30);
        for attempt in 1..=70u32 {
            let ceiling = if attempt >= 6 {
                cap
            } else {
                base * (1 << (attempt - 1))
            };
            let mut max_seen = Duration::ZERO;
            for _ in 0..200 {
                let d = backoff_delay(attempt, base, cap, &mut rng);
                assert!(d <= ceiling, "attempt {attempt}: {d:?} > {ceiling:?}");
                max_seen = max_seen.max(d);
            }
            // Full jitter spreads over the whole range, not just near zero.
            assert!(max_seen > ceiling / 2, "attempt {attempt}: {max_seen:?}");
        }
        assert!(backoff_delay(0, base, cap, &mut rng) <= base);
    }

    #[test]
    fn config_from_lookup_defaults_overrides_zero_and_errors() {
        let c = HttpConfig::from_lookup(|_| None).unwrap();
        assert_eq!(c, HttpConfig::default());
        let c = HttpConfig::from_lookup(|n| match n {
            "FEN_HTTP_IDLE_TIMEOUT_MS" => Some("250".into()),
            "FEN_HTTP_FIRST_BYTE_TIMEOUT_MS" => Some("0".into()),
            _ => Some(" ".into()),
        })
        .unwrap();
        assert_eq!(c.idle_timeout, Some(Duration::from_millis(250)));
        assert_eq!(c.first_byte_timeout, None);
        assert_eq!(
            c.connect_timeout,
            Some(Duration::from_millis(DEFAULT_CONNECT_TIMEOUT_MS))
        );
        let err = HttpConfig::from_lookup(|n| {
            (n == "FEN_HTTP_CONNECT_TIMEOUT_MS").then(|| "5s".to_string())
        })
        .unwrap_err();
        assert!(
            err.to_string().contains("FEN_HTTP_CONNECT_TIMEOUT_MS"),
            "{err}"
        );
    }

    #[test]
    fn retryability() {
        let url = String::from("http://x/");
        assert!(HttpError::Connect {
            url: url.clone(),
            detail: String::new()
        }
        .is_retryable());
        assert!(HttpError::Stream {
            url: url.clone(),
            detail: String::new()
        }
        .is_retryable());
        assert!(HttpError::Timeout {
            kind: TimeoutKind::Idle,
            after_ms: 1,
            url
        }
        .is_retryable());
        assert!(!HttpError::Cancelled.is_retryable());
        assert!(!HttpError::InvalidRequest(String::new()).is_retryable());
    }

    #[test]
    fn redaction_and_capped_decoding() {
        assert_eq!(
            redact_url("https://user:pw@api.example.com/v1/x?key=SECRET#f"),
            "https://api.example.com/v1/x"
        );
        let s = "aé".as_bytes();
        assert_eq!(decode_capped(&s[..2], true), "a");
        assert_eq!(decode_capped(&s[..2], false), "a\u{FFFD}");
    }
}
