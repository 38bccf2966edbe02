//! webfetch's core: GET one http(s) URL through fen's HTTP client (proxies honoured), follow
//! redirects that stay on the same host, stop at one that leaves it (the caller reports the
//! target instead of fetching it), refuse bodies over a cap, and convert HTML to Markdown or
//! text (`native::html`).

use crate::native::html;
use crate::native::http::{HttpClient, HttpError, HttpRequest};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The default body cap: 5 MiB.
pub const DEFAULT_MAX_BYTES: usize = 5 * 1024 * 1024;
/// Same-host redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 10;

/// What to return of an HTML page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// HTML converted to Markdown (other content types unchanged).
    Markdown,
    /// HTML reduced to plain text.
    Text,
    /// The body as received.
    Html,
}

impl Format {
    /// `markdown`, `text` or `html`.
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "markdown" => Some(Format::Markdown),
            "text" => Some(Format::Text),
            "html" => Some(Format::Html),
            _ => None,
        }
    }
}

/// One fetch.
#[derive(Debug, Clone)]
pub struct FetchSpec {
    pub url: String,
    pub format: Format,
    /// For the whole fetch, redirects included.
    pub timeout: Duration,
    pub max_bytes: usize,
}

/// A fetched page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The URL finally fetched (after same-host redirects).
    pub url: String,
    pub status: u16,
    pub content_type: String,
    /// The body, converted as asked.
    pub content: String,
    /// Bytes received.
    pub bytes: usize,
    /// Same-host redirects followed, in order.
    pub redirects: Vec<String>,
}

/// The outcome of a fetch that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetched {
    Page(Page),
    /// A redirect to another host, not followed.
    CrossHost {
        from: String,
        to: String,
        status: u16,
    },
}

/// Why a fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum WebFetchError {
    #[error("{0:?} is not a valid URL: {1}")]
    BadUrl(String, String),
    #[error("only http:// and https:// URLs can be fetched (got {0}://)")]
    Scheme(String),
    #[error("the response is larger than the {limit} byte limit ({})", .declared.map_or_else(|| "body cut off".to_string(), |n| format!("Content-Length {n}")))]
    TooLarge { limit: usize, declared: Option<u64> },
    #[error("HTTP {status} from {url}{}", if .snippet.is_empty() { String::new() } else { format!(": {}", .snippet) })]
    Status {
        status: u16,
        url: String,
        snippet: String,
    },
    #[error("the response is {0}, not text; webfetch returns text only")]
    Binary(String),
    #[error("redirect {status} from {url} has no usable Location")]
    BadRedirect { status: u16, url: String },
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    #[error("timed out after {0} s")]
    Timeout(u64),
    #[error("cannot convert the HTML: {0}")]
    Convert(String),
    #[error(transparent)]
    Http(#[from] HttpError),
}

/// Fetches `spec.url`.
pub async fn fetch(
    client: &HttpClient,
    spec: &FetchSpec,
    cancel: CancellationToken,
) -> Result<Fetched, WebFetchError> {
    let secs = spec.timeout.as_secs();
    match tokio::time::timeout(spec.timeout, fetch_inner(client, spec, cancel)).await {
        Ok(r) => r,
        Err(_) => Err(WebFetchError::Timeout(secs)),
    }
}

fn parse_url(s: &str) -> Result<reqwest::Url, WebFetchError> {
    let url = reqwest::Url::parse(s).map_err(|e| WebFetchError::BadUrl(s.into(), e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WebFetchError::Scheme(url.scheme().into()));
    }
    Ok(url)
}

async fn fetch_inner(
    client: &HttpClient,
    spec: &FetchSpec,
    cancel: CancellationToken,
) -> Result<Fetched, WebFetchError> {
    let mut url = parse_url(&spec.url)?;
    let mut redirects = Vec::new();
    loop {
        let req = HttpRequest::new("GET", url.as_str())
            .header(
                "accept",
                "text/markdown, text/html;q=0.9, text/plain;q=0.8, */*;q=0.5",
            )
            .no_redirects();
        client.warm_up_for(url.as_str(), false).await;
        let mut resp = client.request(req, cancel.clone()).await?;
        let status = resp.status();
        if (300..400).contains(&status) && status != 304 {
            let target = resp
                .header("location")
                .and_then(|l| url.join(l).ok())
                .filter(|t| matches!(t.scheme(), "http" | "https"))
                .ok_or_else(|| WebFetchError::BadRedirect {
                    status,
                    url: url.to_string(),
                })?;
            if target.host_str() != url.host_str() {
                return Ok(Fetched::CrossHost {
                    from: url.to_string(),
                    to: target.to_string(),
                    status,
                });
            }
            if redirects.len() >= MAX_REDIRECTS {
                return Err(WebFetchError::TooManyRedirects);
            }
            redirects.push(target.to_string());
            url = target;
            continue;
        }
        let declared = resp
            .header("content-length")
            .and_then(|v| v.trim().parse::<u64>().ok());
        if declared.is_some_and(|n| n > spec.max_bytes as u64) {
            return Err(WebFetchError::TooLarge {
                limit: spec.max_bytes,
                declared,
            });
        }
        let content_type = resp
            .header("content-type")
            .unwrap_or("")
            .to_ascii_lowercase();
        let mut body = Vec::new();
        while let Some(chunk) = resp.next_chunk().await? {
            if body.len() + chunk.len() > spec.max_bytes {
                return Err(WebFetchError::TooLarge {
                    limit: spec.max_bytes,
                    declared,
                });
            }
            body.extend_from_slice(&chunk);
        }
        let text = String::from_utf8_lossy(&body).into_owned();
        if !(200..300).contains(&status) {
            let snippet: String = html::to_text(&text).chars().take(300).collect();
            return Err(WebFetchError::Status {
                status,
                url: url.to_string(),
                snippet,
            });
        }
        let is_html = content_type.contains("html")
            || (content_type.is_empty()
                && text.trim_start().get(..15).is_some_and(|h| {
                    let h = h.to_ascii_lowercase();
                    h.starts_with("<!doctype html") || h.starts_with("<html")
                }));
        let texty = content_type.is_empty()
            || content_type.starts_with("text/")
            || ["json", "xml", "javascript", "yaml", "toml", "x-sh"]
                .iter()
                .any(|t| content_type.contains(t));
        if !is_html && !texty {
            return Err(WebFetchError::Binary(content_type));
        }
        let content = match (is_html, spec.format) {
            (true, Format::Markdown) => {
                html::to_markdown(&text).map_err(|e| WebFetchError::Convert(e.to_string()))?
            }
            (true, Format::Text) => html::to_text(&text),
            _ => text,
        };
        return Ok(Fetched::Page(Page {
            url: url.to_string(),
            status,
            content_type,
            content,
            bytes: body.len(),
            redirects,
        }));
    }
}
