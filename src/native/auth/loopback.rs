//! The loopback redirect listener of the authorization-code flow: a one-purpose HTTP server on
//! 127.0.0.1 that waits for `GET PATH?code=...&state=...`, answers the browser with a short
//! page, and hands the code back. Requests for other paths get a 404 and the wait goes on; a
//! wrong `state` is refused (a page from elsewhere cannot inject a code).

use super::AuthError;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// How long a login waits for the browser.
pub const WAIT: Duration = Duration::from_secs(600);

pub struct Listener {
    listener: TcpListener,
    pub port: u16,
    path: String,
}

/// Listens on `preferred` (the port the provider registered), or any free port when it is
/// taken.
pub async fn bind(preferred: u16, path: &str) -> Result<Listener, AuthError> {
    let listener = match TcpListener::bind(("127.0.0.1", preferred)).await {
        Ok(l) => l,
        Err(_) => TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| AuthError::Other(format!("cannot listen on 127.0.0.1: {e}")))?,
    };
    let port = listener
        .local_addr()
        .map_err(|e| AuthError::Other(e.to_string()))?
        .port();
    Ok(Listener {
        listener,
        port,
        path: path.to_string(),
    })
}

enum Outcome {
    Code(String),
    Denied(String),
    Ignore,
}

impl Listener {
    /// `http://localhost:PORT/PATH`.
    pub fn redirect_uri(&self) -> String {
        format!("http://localhost:{}{}", self.port, self.path)
    }

    /// Waits for the redirect carrying `state`; returns its code.
    pub async fn wait(&self, state: &str, cancel: &CancellationToken) -> Result<String, AuthError> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let (stream, _) = tokio::select! {
                _ = cancel.cancelled() => return Err(AuthError::Cancelled),
                _ = tokio::time::sleep_until(deadline) => {
                    return Err(AuthError::Denied("no answer from the browser within 10 minutes; run the login again".into()))
                }
                r = self.listener.accept() => match r {
                    Ok(s) => s,
                    Err(_) => continue,
                },
            };
            match self.serve(stream, state).await {
                Outcome::Code(code) => return Ok(code),
                Outcome::Denied(why) => return Err(AuthError::Denied(why)),
                Outcome::Ignore => continue,
            }
        }
    }

    async fn serve(&self, mut stream: TcpStream, state: &str) -> Outcome {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        })
        .await;
        if read.is_err() {
            return Outcome::Ignore;
        }
        let head = String::from_utf8_lossy(&buf);
        let target = head
            .lines()
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or("/");
        let (outcome, status, page) = judge(target, &self.path, state);
        let body = format!("<!doctype html><title>fen</title><p>{page}</p>");
        let reply = format!(
            "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(reply.as_bytes()).await;
        let _ = stream.shutdown().await;
        outcome
    }
}

/// What a request target means: the code, a denial, or nothing of ours.
fn judge(target: &str, path: &str, state: &str) -> (Outcome, &'static str, &'static str) {
    let Ok(url) = url::Url::parse(&format!("http://localhost{target}")) else {
        return (Outcome::Ignore, "400 Bad Request", "Bad request.");
    };
    if url.path() != path {
        return (Outcome::Ignore, "404 Not Found", "Not found.");
    }
    let q = |k: &str| {
        url.query_pairs()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.into_owned())
    };
    if q("state").as_deref() != Some(state) {
        return (
            Outcome::Ignore,
            "400 Bad Request",
            "This sign-in link does not belong to the running fen login.",
        );
    }
    if let Some(err) = q("error") {
        let desc = q("error_description").unwrap_or_default();
        let why = if err == "access_denied" {
            "the login was denied in the browser".to_string()
        } else if desc.is_empty() {
            format!("the sign-in failed: {err}")
        } else {
            format!("the sign-in failed: {err}: {desc}")
        };
        return (
            Outcome::Denied(why),
            "200 OK",
            "Sign-in was not completed. You can close this tab.",
        );
    }
    match q("code") {
        Some(code) if !code.is_empty() => (
            Outcome::Code(code),
            "200 OK",
            "Signed in to fen. You can close this tab and return to the terminal.",
        ),
        _ => (
            Outcome::Ignore,
            "400 Bad Request",
            "No code in the request.",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn judges_callbacks() {
        let p = "/auth/callback";
        assert!(
            matches!(judge("/auth/callback?code=abc&state=s", p, "s").0, Outcome::Code(c) if c == "abc")
        );
        assert!(matches!(
            judge("/auth/callback?code=abc&state=x", p, "s").0,
            Outcome::Ignore
        ));
        assert!(matches!(judge("/favicon.ico", p, "s").0, Outcome::Ignore));
        assert!(matches!(
            judge("/auth/callback?error=access_denied&state=s", p, "s").0,
            Outcome::Denied(_)
        ));
    }
}
