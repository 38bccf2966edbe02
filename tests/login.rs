//! Subscription logins end to end against local OAuth servers (no real OAuth host, no browser:
//! the test follows the authorize URL itself): ChatGPT sign-in (browser and device flows,
//! refresh under a lock, 401 handling), GitHub Copilot (device flow, token exchange, headers),
//! refused subscriptions, auth.json permissions, a drop-in auth backend from the docs, and
//! the token never showing up where it must not.

use crate::common::Sandbox;
use crate::support::fake_llm::{Api, FakeLlm, Reply, Scenario, Turn};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// ------------------------------------------------------------------------------------------
// A local OAuth server: authorize redirect, token (code + PKCE, refresh), revocation, OpenAI's
// device endpoints, GitHub's device flow, the Copilot token exchange, model lists and a
// Copilot chat endpoint.
// ------------------------------------------------------------------------------------------

/// A request as recorded: (method, path, headers, body).
type Recorded = (String, String, Vec<(String, String)>, String);

#[derive(Default)]
struct State {
    /// code -> PKCE challenge.
    codes: HashMap<String, String>,
    deny: bool,
    /// The MCP server refuses tool calls with 401 (a token revoked while connected).
    reject_calls: bool,
    /// Tokens the MCP server refuses for tool calls (expired while connected).
    expired: Vec<String>,
    /// The GitHub device flow stays pending until this is false.
    hold_device: bool,
    revoked: Vec<String>,
    refreshes: usize,
    refresh_delay_ms: u64,
    exchanges: usize,
    device_polls: usize,
    issued: usize,
    /// Requests as (method, path, headers, body).
    requests: Vec<Recorded>,
}

struct OAuth {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
}

struct Req {
    method: String,
    path: String,
    query: HashMap<String, String>,
    headers: Vec<(String, String)>,
    body: String,
}

impl Req {
    fn form(&self) -> HashMap<String, String> {
        url::form_urlencoded::parse(self.body.as_bytes())
            .into_owned()
            .collect()
    }
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn jwt(claims: Value) -> String {
    format!(
        "{}.{}.sig",
        URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

pub const EMAIL: &str = "ada@example.com";

fn id_token() -> String {
    jwt(json!({
        "email": EMAIL,
        "https://api.openai.com/auth": {"chatgpt_account_id": "acct-42", "chatgpt_plan_type": "pro"}
    }))
}

type Resp = (u16, Vec<(String, String)>, String);

fn ok(v: Value) -> Resp {
    (200, vec![], v.to_string())
}

fn status(code: u16, v: Value) -> Resp {
    (code, vec![], v.to_string())
}

impl OAuth {
    fn start() -> OAuth {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let st = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let st = st.clone();
                std::thread::spawn(move || serve(stream, st, addr));
            }
        });
        OAuth { addr, state }
    }
    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    fn st(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }
    fn requests_to(&self, path: &str) -> Vec<Recorded> {
        self.st()
            .requests
            .iter()
            .filter(|r| r.1.starts_with(path))
            .cloned()
            .collect()
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Req> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Req {
        method,
        path: path.to_string(),
        query: url::form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

fn serve(mut stream: TcpStream, st: Arc<Mutex<State>>, addr: std::net::SocketAddr) {
    let Some(req) = read_request(&mut stream) else {
        return;
    };
    st.lock().unwrap().requests.push((
        req.method.clone(),
        req.path.clone(),
        req.headers.clone(),
        req.body.clone(),
    ));
    let (code, headers, body) = route(&req, &st, addr);
    let reason = match code {
        200 => "OK",
        302 => "Found",
        _ => "Error",
    };
    let ctype = if body.starts_with("data:") {
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut out = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: {ctype}\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&body);
    let _ = stream.write_all(out.as_bytes());
}

fn route(req: &Req, st: &Mutex<State>, addr: std::net::SocketAddr) -> Resp {
    let path = req.path.as_str();
    match (req.method.as_str(), path) {
        ("GET", "/oauth/authorize") => {
            let q = &req.query;
            let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
            let state = q.get("state").cloned().unwrap_or_default();
            let mut s = st.lock().unwrap();
            let location = if s.deny {
                format!("{redirect}?error=access_denied&state={state}")
            } else {
                assert_eq!(q.get("code_challenge_method").map(String::as_str), Some("S256"));
                s.issued += 1;
                let code = format!("code-{}", s.issued);
                s.codes
                    .insert(code.clone(), q.get("code_challenge").cloned().unwrap_or_default());
                format!("{redirect}?code={code}&state={state}")
            };
            (302, vec![("location".into(), location)], String::new())
        }
        ("POST", "/oauth/token") => {
            let f = req.form();
            match f.get("grant_type").map(String::as_str) {
                Some("authorization_code") => {
                    let code = f.get("code").cloned().unwrap_or_default();
                    let verifier = f.get("code_verifier").cloned().unwrap_or_default();
                    let challenge = st.lock().unwrap().codes.remove(&code);
                    let expected = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
                    if challenge.as_deref() != Some(expected.as_str()) {
                        return status(400, json!({"error": "invalid_grant", "error_description": "PKCE mismatch"}));
                    }
                    ok(json!({"access_token": "at-secret-1", "refresh_token": "rt-1", "id_token": id_token(), "expires_in": 3600}))
                }
                Some("refresh_token") => {
                    let rt = f.get("refresh_token").cloned().unwrap_or_default();
                    let delay = {
                        let mut s = st.lock().unwrap();
                        if s.revoked.contains(&rt) {
                            return status(400, json!({"error": "invalid_grant", "error_description": "refresh token revoked"}));
                        }
                        s.refreshes += 1;
                        s.refresh_delay_ms
                    };
                    std::thread::sleep(Duration::from_millis(delay));
                    let n = st.lock().unwrap().refreshes;
                    ok(json!({"access_token": format!("at-secret-r{n}"), "refresh_token": format!("rt-r{n}"), "expires_in": 3600}))
                }
                _ => status(400, json!({"error": "unsupported_grant_type"})),
            }
        }
        ("POST", "/oauth/revoke") => {
            let f = req.form();
            if let Some(t) = f.get("token") {
                st.lock().unwrap().revoked.push(t.clone());
            }
            ok(json!({}))
        }
        ("POST", "/api/accounts/deviceauth/usercode") => {
            ok(json!({"device_auth_id": "dev-1", "user_code": "ABCD-1234", "interval": "0"}))
        }
        ("POST", "/api/accounts/deviceauth/token") => {
            let mut s = st.lock().unwrap();
            s.device_polls += 1;
            if s.device_polls < 2 {
                return status(403, json!({"error": "pending"}));
            }
            let verifier = "device-verifier-0123456789-0123456789-0123456789";
            let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
            s.codes.insert("dcode".into(), challenge);
            ok(json!({"authorization_code": "dcode", "code_verifier": verifier}))
        }
        ("GET", "/codex/models") => ok(json!({"models": [{"slug": "gpt-plan-special"}, {"slug": "gpt-plan-mini"}]})),
        // GitHub.
        ("POST", "/login/device/code") => ok(json!({
            "device_code": "gh-device", "user_code": "WXYZ-9876",
            "verification_uri": format!("http://{addr}/login/device"), "interval": 0, "expires_in": 900
        })),
        ("POST", "/login/oauth/access_token") => {
            let mut s = st.lock().unwrap();
            if s.deny {
                return ok(json!({"error": "access_denied"}));
            }
            s.device_polls += 1;
            if s.device_polls < 2 || s.hold_device {
                return ok(json!({"error": "authorization_pending"}));
            }
            ok(json!({"access_token": "ghu_secret", "token_type": "bearer"}))
        }
        ("GET", "/user") => {
            if req.header("authorization") != Some("token ghu_secret") {
                return status(401, json!({"message": "bad credentials"}));
            }
            ok(json!({"login": "ada-gh", "id": 42, "email": null}))
        }
        ("GET", "/copilot_internal/v2/token") => {
            if req.header("authorization") != Some("token ghu_secret") {
                return status(401, json!({"message": "bad credentials"}));
            }
            let mut s = st.lock().unwrap();
            s.exchanges += 1;
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            ok(json!({
                "token": format!("cop-secret-{}", s.exchanges), "expires_at": now + 1800,
                "endpoints": {"api": format!("http://{addr}/copilot")}, "sku": "copilot_pro"
            }))
        }
        ("GET", "/copilot/models") => ok(json!({"data": [
            {"id": "copilot-model-a", "model_picker_enabled": true, "capabilities": {"limits": {"max_context_window_tokens": 64000}}},
            {"id": "hidden", "model_picker_enabled": false}
        ]})),
        ("POST", "/copilot/chat/completions") => (
            200,
            vec![],
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"copilot says hi\"}}]}\n\ndata: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".into(),
        ),
        // An MCP server that requires OAuth, and its metadata.
        ("POST", "/mcp") => {
            let authorized = req
                .header("authorization")
                .is_some_and(|a| a.starts_with("Bearer at-secret"));
            if !authorized {
                let challenge = format!(
                    "Bearer resource_metadata=\"http://{addr}/.well-known/oauth-protected-resource/mcp\""
                );
                return (401, vec![("www-authenticate".into(), challenge)], json!({"error": "unauthorized"}).to_string());
            }
            let msg: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
            let Some(id) = msg.get("id").cloned() else {
                return (202, vec![], String::new());
            };
            let token = req.header("authorization").unwrap_or("").trim_start_matches("Bearer ");
            let refused = {
                let s = st.lock().unwrap();
                s.reject_calls || s.expired.iter().any(|t| t == token)
            };
            if msg["method"] == "tools/call" && refused {
                return (401, vec![("www-authenticate".into(), "Bearer error=\"invalid_token\"".into())], "{}".into());
            }
            let result = match msg["method"].as_str() {
                Some("initialize") => json!({
                    "protocolVersion": msg["params"]["protocolVersion"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "oauth-mcp", "version": "1"}
                }),
                Some("tools/list") => json!({"tools": [{
                    "name": "whoami", "description": "Says who you are.",
                    "inputSchema": {"type": "object", "properties": {}}
                }]}),
                Some("tools/call") => json!({"content": [{"type": "text", "text": "you are ada"}]}),
                _ => json!({}),
            };
            ok(json!({"jsonrpc": "2.0", "id": id, "result": result}))
        }
        ("GET", "/mcp") => status(405, json!({})),
        ("DELETE", "/mcp") => ok(json!({})),
        ("GET", "/.well-known/oauth-protected-resource/mcp") => ok(json!({
            "resource": format!("http://{addr}/mcp"),
            "authorization_servers": [format!("http://{addr}")],
            "scopes_supported": ["mcp:tools"]
        })),
        ("GET", "/.well-known/oauth-authorization-server") => ok(json!({
            "issuer": format!("http://{addr}"),
            "authorization_endpoint": format!("http://{addr}/oauth/authorize"),
            "token_endpoint": format!("http://{addr}/oauth/token"),
            "registration_endpoint": format!("http://{addr}/register"),
            "code_challenge_methods_supported": ["S256"]
        })),
        ("POST", "/register") => ok(json!({"client_id": "dyn-client"})),
        _ => status(404, json!({"error": "not_found"})),
    }
}

// ------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------

fn data_dir(s: &Sandbox) -> PathBuf {
    s.root().join("data")
}

fn auth_path(s: &Sandbox) -> PathBuf {
    data_dir(s).join("fen/auth.json")
}

/// `fen ARGS` in the sandbox with XDG_DATA_HOME inside it.
fn fen_cmd(s: &Sandbox, args: &[&str]) -> Command {
    let mut c = s.command(args);
    c.env("XDG_DATA_HOME", data_dir(s))
        .env_remove("OPENAI_API_KEY")
        .env_remove("FEN_MOCK_SCRIPT")
        .stdin(Stdio::null());
    c
}

fn fen(s: &Sandbox, args: &[&str]) -> Output {
    fen_cmd(s, args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// settings.json with every auth endpoint on the local server (and yolo permissions).
fn settings(s: &Sandbox, oauth: &OAuth, api_base: &str) {
    let v = json!({
        "permissions": {"mode": "yolo"},
        "auth": {
            "openai-chatgpt": {
                "authorize_url": oauth.url("/oauth/authorize"),
                "token_url": oauth.url("/oauth/token"),
                "device_code_url": oauth.url("/api/accounts/deviceauth/usercode"),
                "device_token_url": oauth.url("/api/accounts/deviceauth/token"),
                "api_base": api_base,
            },
            "github-copilot": {
                "api_url": oauth.url(""),
                "device_code_url": oauth.url("/login/device/code"),
                "access_token_url": oauth.url("/login/oauth/access_token"),
                "copilot_token_url": oauth.url("/copilot_internal/v2/token"),
            }
        }
    });
    s.write("config/fen/settings.json", &v.to_string());
}

/// A plain HTTP GET: (status, location header).
fn get(url: &str) -> (u16, Option<String>) {
    let u = url::Url::parse(url).unwrap();
    let host = match u.host_str() {
        Some("localhost") | None => "127.0.0.1".to_string(),
        Some(h) => h.to_string(),
    };
    let mut stream = TcpStream::connect((host.as_str(), u.port().unwrap_or(80))).unwrap();
    let target = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    let _ = stream.read_to_string(&mut resp);
    let code = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let location = resp
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("location:"))
        .map(|l| l[9..].trim().to_string());
    (code, location)
}

/// Runs `fen login openai-chatgpt --no-browser`, plays the browser (follows the printed URL
/// and its redirect), and returns fen's output.
fn browser_login(s: &Sandbox) -> Output {
    play_browser(s, &["login", "openai-chatgpt", "--no-browser"])
}

fn play_browser(s: &Sandbox, args: &[&str]) -> Output {
    let mut child = fen_cmd(s, args).spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = String::new();
    let url = loop {
        let Some(Ok(line)) = lines.next() else {
            let out = child.wait_with_output().unwrap();
            panic!("no URL printed: {seen} {}", text(&out.stdout));
        };
        seen.push_str(&line);
        seen.push('\n');
        if line.starts_with("http") {
            break line;
        }
    };
    let (code, location) = get(&url);
    assert_eq!(code, 302, "authorize answered {code}");
    let location = location.unwrap();
    assert!(location.contains("/callback"), "{location}");
    let (code, _) = get(&location);
    assert_eq!(code, 200, "the loopback answered {code}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let mut out = child.wait_with_output().unwrap();
    out.stderr = format!("{seen}{}", rest.join("\n")).into_bytes();
    out
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Writes auth.json (0600 in a 0700 directory) with a ChatGPT login expiring at `expires_at`.
fn stored_chatgpt(s: &Sandbox, access: &str, refresh: &str, expires_at: i64) {
    let dir = data_dir(s).join("fen");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let v = json!({"openai-chatgpt": {
        "type": "oauth", "access_token": access, "refresh_token": refresh, "id_token": id_token(),
        "expires_at": expires_at, "account_id": "acct-42", "plan": "pro", "email": EMAIL
    }});
    let p = auth_path(s);
    std::fs::write(&p, v.to_string()).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn chatgpt_run(s: &Sandbox, prompt: &str) -> Output {
    fen(
        s,
        &[
            "-p",
            prompt,
            "--provider",
            "openai-chatgpt",
            "--model",
            "gpt-5-codex",
        ],
    )
}

fn stored(s: &Sandbox) -> Value {
    serde_json::from_str(&std::fs::read_to_string(auth_path(s)).unwrap()).unwrap()
}

/// Every file under `dir` (except auth.json and its lock) that contains `needle`.
fn files_containing(dir: &std::path::Path, needle: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_containing(&p, needle));
        } else if p.file_name().is_some_and(|n| n != "auth.json") {
            if let Ok(bytes) = std::fs::read(&p) {
                if String::from_utf8_lossy(&bytes).contains(needle) {
                    out.push(p);
                }
            }
        }
    }
    out
}

// ------------------------------------------------------------------------------------------
// ChatGPT
// ------------------------------------------------------------------------------------------

#[test]
fn chatgpt_browser_login_stores_a_private_credential_and_model_calls_carry_it() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    let llm = FakeLlm::start(Scenario::new().then(Reply::stream(
        Api::OpenAiResponses,
        Turn::text("hello from the plan"),
    )));
    settings(&s, &oauth, &llm.base_url());
    let out = browser_login(&s);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(EMAIL) && stdout.contains("pro"), "{stdout}");
    assert!(!stdout.contains("at-secret"), "{stdout}");
    // The redirect went to a loopback URL on /auth/callback, PKCE S256 checked by the server.
    let authorize = oauth.requests_to("/oauth/authorize");
    assert_eq!(authorize.len(), 1);
    // auth.json: 0600 in a 0700 directory.
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&auth_path(&s)), 0o600);
    assert_eq!(mode(&data_dir(&s).join("fen")), 0o700);
    assert_eq!(stored(&s)["openai-chatgpt"]["account_id"], "acct-42");

    // --status: email, plan, expiry; never the token.
    let st = fen(&s, &["login", "--status"]);
    let st_out = text(&st.stdout);
    assert!(st.status.success(), "{}", text(&st.stderr));
    assert!(
        st_out.contains("openai-chatgpt")
            && st_out.contains(EMAIL)
            && st_out.contains("plan pro")
            && st_out.contains("token valid for"),
        "{st_out}"
    );
    assert!(!st_out.contains("secret"), "{st_out}");

    // A model call: bearer token and ChatGPT-Account-Id to the Codex backend, Responses wire.
    let run = chatgpt_run(&s, "hi");
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(text(&run.stdout).contains("hello from the plan"));
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 1);
    assert!(reqs[0].path.ends_with("/responses"), "{}", reqs[0].path);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer at-secret-1"));
    assert_eq!(reqs[0].header("chatgpt-account-id"), Some("acct-42"));
    assert!(reqs[0].body.get("max_output_tokens").is_none());
    assert_eq!(reqs[0].body["store"], false);
}

#[test]
fn chatgpt_denied_consent_stores_nothing() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    oauth.st().deny = true;
    settings(&s, &oauth, "http://127.0.0.1:9");
    let out = browser_login(&s);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("denied"),
        "{}",
        text(&out.stderr)
    );
    assert!(!auth_path(&s).exists() || stored(&s).get("openai-chatgpt").is_none());
    assert!(oauth.requests_to("/oauth/token").is_empty());
}

#[test]
fn chatgpt_device_login_and_the_plan_models() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    settings(&s, &oauth, &oauth.url("/codex"));
    let out = fen(&s, &["login", "openai-chatgpt", "--device"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("ABCD-1234"), "{err}");
    assert!(text(&out.stdout).contains(EMAIL));
    // The code exchange used the device callback and the server's verifier.
    let token = oauth.requests_to("/oauth/token");
    assert_eq!(token.len(), 1);
    assert!(
        token[0].3.contains("deviceauth%2Fcallback"),
        "{}",
        token[0].3
    );
    // `fen list models` shows what the plan offers.
    let models = fen(&s, &["list", "models"]);
    let list = text(&models.stdout);
    assert!(list.contains("openai-chatgpt/gpt-plan-special"), "{list}");
    assert!(!list.contains("openai-chatgpt/gpt-5-codex"), "{list}");
    // Logout forgets it.
    let out = fen(&s, &["logout", "openai-chatgpt"]);
    assert!(
        text(&out.stdout).contains("Logged out"),
        "{}",
        text(&out.stdout)
    );
    assert!(stored(&s).get("openai-chatgpt").is_none());
    let st = fen(&s, &["login", "--status"]);
    assert!(text(&st.stdout).contains("not logged in"));
}

#[test]
fn two_processes_needing_a_refresh_refresh_once() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    oauth.st().refresh_delay_ms = 600;
    let llm = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(Api::OpenAiResponses, Turn::text("one")))
            .then(Reply::stream(Api::OpenAiResponses, Turn::text("two"))),
    );
    settings(&s, &oauth, &llm.base_url());
    // Two minutes left: under the 5-minute margin.
    stored_chatgpt(&s, "at-old", "rt-1", now() + 120);
    let spawn = || {
        fen_cmd(
            &s,
            &[
                "-p",
                "hi",
                "--provider",
                "openai-chatgpt",
                "--model",
                "gpt-5-codex",
            ],
        )
        .spawn()
        .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert!(a.status.success(), "{}", text(&a.stderr));
    assert!(b.status.success(), "{}", text(&b.stderr));
    assert_eq!(oauth.st().refreshes, 1, "two processes refreshed");
    for r in llm.requests() {
        assert_eq!(r.header("authorization"), Some("Bearer at-secret-r1"));
    }
    assert_eq!(stored(&s)["openai-chatgpt"]["refresh_token"], "rt-r1");
}

#[test]
fn a_revoked_refresh_token_says_to_log_in_again() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    let llm = FakeLlm::start(Scenario::new());
    settings(&s, &oauth, &llm.base_url());
    stored_chatgpt(&s, "at-old", "rt-1", now() - 10);
    // Revoke it at the server (its revocation endpoint).
    let mut c = TcpStream::connect(oauth.addr).unwrap();
    let body = "token=rt-1&token_type_hint=refresh_token";
    write!(c, "POST /oauth/revoke HTTP/1.1\r\nhost: x\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).unwrap();
    let mut sink = String::new();
    let _ = c.read_to_string(&mut sink);
    let out = chatgpt_run(&s, "hi");
    assert!(!out.status.success());
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("fen login openai-chatgpt"), "{all}");
    assert!(
        all.contains("revoked") || all.contains("invalid_grant"),
        "{all}"
    );
    assert!(llm.requests().is_empty(), "no model call with a dead login");
}

#[test]
fn a_401_refreshes_once_and_retries_once() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    let llm = FakeLlm::start(
        Scenario::new()
            .then(Reply::status(
                401,
                r#"{"error":{"message":"token expired"}}"#,
            ))
            .then(Reply::stream(
                Api::OpenAiResponses,
                Turn::text("after refresh"),
            )),
    );
    settings(&s, &oauth, &llm.base_url());
    stored_chatgpt(&s, "at-old", "rt-1", now() + 3600);
    let out = chatgpt_run(&s, "hi");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("after refresh"));
    let reqs = llm.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].header("authorization"), Some("Bearer at-old"));
    assert_eq!(reqs[1].header("authorization"), Some("Bearer at-secret-r1"));
    assert_eq!(oauth.st().refreshes, 1);

    // A server that keeps refusing: one refresh, one retry, then the error (not forever).
    let s = Sandbox::new();
    let oauth = OAuth::start();
    let llm = FakeLlm::start(
        Scenario::new()
            .then(Reply::status(401, r#"{"error":{"message":"nope"}}"#))
            .repeating(),
    );
    settings(&s, &oauth, &llm.base_url());
    stored_chatgpt(&s, "at-old", "rt-1", now() + 3600);
    let out = chatgpt_run(&s, "hi");
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("401"), "{}", text(&out.stderr));
    assert_eq!(llm.requests().len(), 2);
    assert_eq!(oauth.st().refreshes, 1);
}

#[test]
fn base_url_cannot_send_a_subscription_token_elsewhere() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    let api = FakeLlm::start(Scenario::new().then(Reply::stream(
        Api::OpenAiResponses,
        Turn::text("from the plan"),
    )));
    let other = FakeLlm::start(Scenario::new());
    settings(&s, &oauth, &api.base_url());
    stored_chatgpt(&s, "at-secret-pinned", "rt-1", now() + 3600);
    let out = fen(
        &s,
        &[
            "-p",
            "hi",
            "--provider",
            "openai-chatgpt",
            "--model",
            "gpt-5-codex",
            "--base-url",
            &other.base_url(),
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(other.requests().is_empty(), "the token went to --base-url");
    assert_eq!(
        api.requests()[0].header("openai-beta"),
        Some("responses=experimental")
    );
}

#[test]
fn an_auth_json_readable_by_others_is_refused_with_the_chmod() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    settings(&s, &oauth, "http://127.0.0.1:9");
    stored_chatgpt(&s, "at-old", "rt-1", now() + 3600);
    std::fs::set_permissions(auth_path(&s), std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = fen(&s, &["login", "--status"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("chmod 600 {}", auth_path(&s).display())),
        "{err}"
    );
    let run = chatgpt_run(&s, "hi");
    assert!(!run.status.success());
    assert!(
        text(&run.stderr).contains("chmod 600"),
        "{}",
        text(&run.stderr)
    );
}

#[test]
fn the_token_never_reaches_sessions_logs_json_output_or_a_bash_child() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    let llm = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(
                Api::OpenAiResponses,
                Turn::text("").with_tool_call(
                    "c1",
                    "bash",
                    r#"{"command": "env > child-env.txt; echo done"}"#,
                ),
            ))
            .then(Reply::stream(Api::OpenAiResponses, Turn::text("all done"))),
    );
    settings(&s, &oauth, &llm.base_url());
    stored_chatgpt(&s, "at-secret-zz9", "rt-secret-zz9", now() + 3600);
    let out = fen_cmd(
        &s,
        &[
            "--mode",
            "json",
            "-p",
            "run env",
            "--provider",
            "openai-chatgpt",
            "--model",
            "gpt-5-codex",
        ],
    )
    .env("FEN_LOG", "debug")
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        llm.requests()[0].header("authorization"),
        Some("Bearer at-secret-zz9")
    );
    let env = std::fs::read_to_string(s.cwd().join("child-env.txt")).expect("the bash child ran");
    assert!(!env.contains("zz9"), "the child saw the token");
    assert!(
        !text(&out.stdout).contains("zz9"),
        "--mode json printed the token"
    );
    assert!(
        !text(&out.stderr).contains("zz9"),
        "stderr carried the token"
    );
    let leaks = files_containing(s.root(), "zz9");
    assert!(leaks.is_empty(), "the token was written to {leaks:?}");
    // A session file was written (the check above looked at something).
    assert!(!files_containing(&s.state(), "run env").is_empty());
}

// ------------------------------------------------------------------------------------------
// GitHub Copilot
// ------------------------------------------------------------------------------------------

#[test]
fn copilot_device_login_exchange_headers_and_models() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    settings(&s, &oauth, "http://127.0.0.1:9");
    let out = fen(&s, &["login", "github-copilot"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("WXYZ-9876"), "{err}");
    assert!(
        text(&out.stdout).contains("copilot_pro"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(oauth.st().exchanges, 1);
    let entry = &stored(&s)["github-copilot"];
    assert_eq!(entry["host"], "github.com");
    assert_eq!(entry["api_base"], oauth.url("/copilot"));
    // The account, from the GitHub API's /user (the configured API base), in --status.
    assert_eq!(oauth.requests_to("/user").len(), 1);
    let st = fen(&s, &["login", "--status"]);
    let st_out = text(&st.stdout);
    assert!(
        st_out.contains("github-copilot") && st_out.contains("user ada-gh"),
        "{st_out}"
    );
    let js = fen(&s, &["login", "--status", "--json"]);
    let rows: Value = serde_json::from_slice(&js.stdout).unwrap();
    assert_eq!(rows[0]["user"], "ada-gh", "{rows}");
    for out in [&st_out, &text(&js.stdout)] {
        assert!(
            !out.contains("ghu_secret") && !out.contains("cop-secret"),
            "{out}"
        );
    }

    let run = fen_cmd(
        &s,
        &[
            "-p",
            "say hi to copilot",
            "--provider",
            "github-copilot",
            "--model",
            "gpt-4.1",
        ],
    )
    .env("FEN_LOG", "debug")
    .output()
    .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert!(text(&run.stdout).contains("copilot says hi"));
    // Neither the GitHub token nor the Copilot token reaches the output, a log or a session.
    for secret in ["ghu_secret", "cop-secret"] {
        let all = format!("{}{}", text(&run.stdout), text(&run.stderr));
        assert!(!all.contains(secret), "{all}");
        let leaks = files_containing(s.root(), secret);
        assert!(leaks.is_empty(), "{secret} was written to {leaks:?}");
    }
    assert!(
        !files_containing(&s.state(), "say hi to copilot").is_empty(),
        "no session was written"
    );
    let chat = oauth.requests_to("/copilot/chat/completions");
    assert_eq!(chat.len(), 1);
    let h = |n: &str| {
        chat[0]
            .2
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(h("authorization").as_deref(), Some("Bearer cop-secret-1"));
    for name in [
        "editor-version",
        "editor-plugin-version",
        "copilot-integration-id",
        "user-agent",
    ] {
        assert!(h(name).is_some(), "missing {name}");
    }
    assert_eq!(h("copilot-integration-id").as_deref(), Some("vscode-chat"));

    let models = text(&fen(&s, &["list", "models"]).stdout);
    assert!(
        models.contains("github-copilot/copilot-model-a"),
        "{models}"
    );
    assert!(!models.contains("github-copilot/hidden"), "{models}");
}

#[test]
fn an_expired_copilot_token_is_exchanged_again() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    settings(&s, &oauth, "http://127.0.0.1:9");
    let out = fen(&s, &["login", "github-copilot"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut v = stored(&s);
    v["github-copilot"]["expires_at"] = json!(now() - 5);
    std::fs::write(auth_path(&s), v.to_string()).unwrap();
    let run = fen(
        &s,
        &[
            "-p",
            "hi",
            "--provider",
            "github-copilot",
            "--model",
            "gpt-4.1",
        ],
    );
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(oauth.st().exchanges, 2);
    let chat = oauth.requests_to("/copilot/chat/completions");
    let auth = chat[0]
        .2
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    assert_eq!(auth.as_deref(), Some("Bearer cop-secret-2"));
}

#[test]
fn copilot_denied_device_login() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    oauth.st().deny = true;
    settings(&s, &oauth, "http://127.0.0.1:9");
    let out = fen(&s, &["login", "github-copilot"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("denied"),
        "{}",
        text(&out.stderr)
    );
    assert!(!auth_path(&s).exists() || stored(&s).get("github-copilot").is_none());
}

// ------------------------------------------------------------------------------------------
// Refusals, commands, drop-in backends
// ------------------------------------------------------------------------------------------

#[test]
fn subscription_logins_fen_refuses_exit_2_and_point_at_api_keys() {
    let s = Sandbox::new();
    for name in ["anthropic", "google", "gemini"] {
        let out = fen(&s, &["login", name]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = text(&out.stderr);
        assert!(err.contains("terms") && err.contains("API key"), "{err}");
    }
    assert!(!auth_path(&s).exists());
    // No name and no terminal: the choices, exit 2.
    let out = fen(&s, &["login"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("openai-chatgpt"));
}

#[test]
fn contracts_and_docs_name_the_login_commands() {
    let kinds = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/contracts/register-kinds.toml"
    ))
    .unwrap();
    assert!(kinds.contains("fen login NAME") && !kinds.contains("fen --login"));
}

/// The example backend in docs/extensions.md, between its markers.
fn docs_example() -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/extensions.md"))
        .unwrap();
    let start = doc.find("<!-- auth-backend example -->").expect("marker");
    let rest = &doc[start..];
    let code = rest.split("```lua\n").nth(1).unwrap();
    code.split("```").next().unwrap().to_string()
}

#[test]
fn the_documented_drop_in_backend_supplies_the_token() {
    let example = docs_example();
    assert!(
        example.lines().count() <= 20,
        "the docs example is longer than 20 lines"
    );
    let s = Sandbox::new();
    let llm = FakeLlm::start(
        Scenario::new().then(Reply::stream(Api::OpenAiChat, Turn::text("via pass"))),
    );
    s.write("config/fen/extensions/pass-auth.lua", &example);
    // A `pass` that prints a token.
    let bin = s.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let pass = bin.join("pass");
    std::fs::write(&pass, "#!/bin/sh\necho \"tok-from-pass\"\n").unwrap();
    std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o755)).unwrap();
    let models = json!({"providers": {"work": {"api": "openai-completions", "base_url": llm.base_url(), "auth": "pass", "models": [{"id": "m"}]}}});
    s.write("config/fen/models.json", &models.to_string());
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = fen_cmd(&s, &["-p", "hi", "--provider", "work", "--model", "m"])
        .env("PATH", path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("via pass"));
    assert_eq!(
        llm.requests()[0].header("authorization"),
        Some("Bearer tok-from-pass")
    );
}

// ------------------------------------------------------------------------------------------
// MCP servers that require OAuth
// ------------------------------------------------------------------------------------------

#[test]
fn an_mcp_server_requiring_oauth_needs_login_then_works_after_fen_mcp_login() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    settings(&s, &oauth, "http://127.0.0.1:9");
    let mcp =
        json!({"mcpServers": {"web": {"url": oauth.url("/mcp"), "startup_timeout_ms": 5000}}});
    s.write("config/fen/mcp.json", &mcp.to_string());

    // Before: the 401 says which command logs in.
    let list = fen(&s, &["mcp", "list"]);
    let out = text(&list.stdout);
    assert!(
        out.contains("failed") && out.contains("fen mcp login web"),
        "{out}"
    );

    // The login: protected-resource metadata, server metadata, registration, PKCE, resource.
    let login = play_browser(&s, &["mcp", "login", "web", "--no-browser"]);
    assert!(login.status.success(), "{}", text(&login.stderr));
    assert_eq!(oauth.requests_to("/register").len(), 1);
    let authorize = oauth.requests_to("/oauth/authorize");
    assert_eq!(authorize.len(), 1);
    let token = oauth.requests_to("/oauth/token");
    assert!(
        token[0].3.contains("client_id=dyn-client") && token[0].3.contains("resource="),
        "{}",
        token[0].3
    );
    let key = oauth.url("/mcp");
    assert_eq!(stored(&s)[key.as_str()]["access_token"], "at-secret-1");

    // After: connected, its tool runs with the token.
    let list = text(&fen(&s, &["mcp", "list"]).stdout);
    assert!(
        list.contains("connected") && list.contains("mcp__web__whoami"),
        "{list}"
    );
    let out = fen(&s, &["tool", "mcp__web__whoami", "{}"]);
    assert!(
        text(&out.stdout).contains("you are ada"),
        "{}",
        text(&out.stderr)
    );
    let calls = oauth.requests_to("/mcp");
    let last_auth = calls
        .last()
        .unwrap()
        .2
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    assert_eq!(last_auth.as_deref(), Some("Bearer at-secret-1"));

    // A token refused mid-session even after a refresh: the call says how to log in again.
    oauth.st().reject_calls = true;
    let out = fen(&s, &["tool", "mcp__web__whoami", "{}"]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(
        all.contains("needs login") && all.contains("fen mcp login web"),
        "{all}"
    );
    assert!(!all.contains("at-secret"), "{all}");
    oauth.st().reject_calls = false;

    // An expiring token is refreshed at connect.
    let before = oauth.st().refreshes;
    let mut v = stored(&s);
    v[key.as_str()]["expires_at"] = json!(now() + 30);
    std::fs::write(auth_path(&s), v.to_string()).unwrap();
    let list = text(&fen(&s, &["mcp", "list"]).stdout);
    assert!(list.contains("connected"), "{list}");
    let after = oauth.st().refreshes;
    assert_eq!(after, before + 1);
    assert_eq!(
        stored(&s)[key.as_str()]["access_token"],
        format!("at-secret-r{after}")
    );

    // Logout: needs login again.
    let out = fen(&s, &["mcp", "logout", "web"]);
    assert!(
        text(&out.stdout).contains("Logged out"),
        "{}",
        text(&out.stdout)
    );
    let list = text(&fen(&s, &["mcp", "list"]).stdout);
    assert!(list.contains("fen mcp login web"), "{list}");
}

/// Reads lines from `lines` until one satisfies `f`; returns everything read.
fn read_until(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    seen: &mut String,
    f: impl Fn(&str) -> bool,
) -> Option<String> {
    for line in lines.by_ref() {
        let line = line.ok()?;
        seen.push_str(&line);
        seen.push('\n');
        if f(&line) {
            return Some(line);
        }
    }
    None
}

/// Reads lines until a URL and follows it like a browser would; returns it.
fn follow_printed(lines: &mut Lines, seen: &mut String) -> String {
    let url = read_until(lines, seen, |l| l.trim_start().starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL: {seen}"));
    follow(url.trim());
    url
}

/// Follows a printed authorize URL like a browser would.
fn follow(url: &str) {
    let (code, location) = get(url);
    assert_eq!(code, 302, "authorize answered {code}");
    let (code, _) = get(&location.unwrap());
    assert_eq!(code, 200);
}

type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;

/// The line REPL (`--presenter stdio`, yolo) on `script`, with `path` as PATH when given; it
/// is killed after 30 s so that a hang fails the test instead of wedging it.
fn repl(
    s: &Sandbox,
    script: &std::path::Path,
    path: Option<&str>,
) -> (std::process::Child, std::process::ChildStdin, Lines) {
    let mut cmd = fen_cmd(
        s,
        &[
            "--presenter",
            "stdio",
            "--mock-script",
            script.to_str().unwrap(),
            "--yolo",
        ],
    );
    if let Some(p) = path {
        cmd.env("PATH", p);
    }
    let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
    let pid = child.id() as i32;
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(30));
        unsafe { libc::kill(pid, libc::SIGKILL) };
    });
    let stdin = child.stdin.take().unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, lines)
}

#[test]
fn login_commands_inside_a_session() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    mcp_web(&s, &oauth);
    let script = s.write("script.json", r#"[{"text":"ok"}]"#);
    let (mut child, mut stdin, mut lines) = repl(&s, &script, None);
    let mut seen = String::new();
    // The server answered 401: the session offers a login; not now.
    read_until(&mut lines, &mut seen, |l| {
        l.contains("needs login") && l.contains("Log in now?")
    })
    .unwrap_or_else(|| panic!("no login offer: {seen}"));
    writeln!(stdin, "2").unwrap();
    read_until(&mut lines, &mut seen, |l| l.contains("type /mcp login web"))
        .unwrap_or_else(|| panic!("no notice: {seen}"));
    writeln!(stdin, "/mcp login web --no-browser").unwrap();
    follow_printed(&mut lines, &mut seen);
    read_until(&mut lines, &mut seen, |l| l.contains("web connected"))
        .unwrap_or_else(|| panic!("no connection: {seen}"));
    writeln!(stdin, "/login openai-chatgpt --no-browser").unwrap();
    follow_printed(&mut lines, &mut seen);
    read_until(&mut lines, &mut seen, |l| l.contains("Logged in"))
        .unwrap_or_else(|| panic!("no login: {seen}"));
    writeln!(stdin, "/logout openai-chatgpt").unwrap();
    read_until(&mut lines, &mut seen, |l| {
        l.contains("Logged out of openai-chatgpt")
    })
    .unwrap_or_else(|| panic!("no logout: {seen}"));
    drop(stdin);
    let _ = child.wait();
    assert!(seen.contains("needs login: type /mcp login web"), "{seen}");
    assert!(seen.contains(EMAIL), "{seen}");
    assert!(!seen.contains("at-secret"), "{seen}");
    assert!(stored(&s).get("openai-chatgpt").is_none());
}

/// settings and an mcp.json naming the OAuth-protected server `web`.
fn mcp_web(s: &Sandbox, oauth: &OAuth) {
    settings(s, oauth, "http://127.0.0.1:9");
    let mcp =
        json!({"mcpServers": {"web": {"url": oauth.url("/mcp"), "startup_timeout_ms": 5000}}});
    s.write("config/fen/mcp.json", &mcp.to_string());
}

/// The "browser": an `xdg-open` that records the URL it was asked to open. Returns that
/// record's path and a PATH that finds it first.
fn fake_browser(s: &Sandbox) -> (PathBuf, String) {
    let bin = s.root().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let opened = s.root().join("opened.txt");
    let opener = bin.join("xdg-open");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\necho \"$1\" > '{}'\n", opened.display()),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    (opened, path)
}

/// `mcp_web`, and its login done.
fn mcp_logged_in(s: &Sandbox, oauth: &OAuth) -> String {
    mcp_web(s, oauth);
    let login = play_browser(s, &["mcp", "login", "web", "--no-browser"]);
    assert!(login.status.success(), "{}", text(&login.stderr));
    oauth.url("/mcp")
}

/// The bearer tokens of the MCP tool calls the server saw, in order.
fn tool_call_tokens(oauth: &OAuth) -> Vec<String> {
    oauth
        .requests_to("/mcp")
        .into_iter()
        .filter(|r| r.3.contains("\"tools/call\""))
        .map(|r| {
            r.2.iter()
                .find(|(k, _)| k == "authorization")
                .map(|(_, v)| v.trim_start_matches("Bearer ").to_string())
                .unwrap_or_default()
        })
        .collect()
}

#[test]
fn an_mcp_token_expiring_mid_session_is_refreshed_once_and_the_call_retried() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    let key = mcp_logged_in(&s, &oauth);
    // The token still opens the session but has expired by the time of the call.
    oauth.st().expired.push("at-secret-1".into());
    let out = fen(&s, &["tool", "mcp__web__whoami", "{}"]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(text(&out.stdout).contains("you are ada"), "{all}");
    assert_eq!(oauth.st().refreshes, 1);
    assert_eq!(tool_call_tokens(&oauth), ["at-secret-1", "at-secret-r1"]);
    assert_eq!(stored(&s)[key.as_str()]["access_token"], "at-secret-r1");
    assert!(!all.contains("at-secret"), "{all}");

    // Expired again, and the refresh token revoked: one refresh attempt, no retry, and the
    // error names the command that logs in again.
    oauth.st().expired.push("at-secret-r1".into());
    oauth.st().revoked.push("rt-r1".into());
    let calls = tool_call_tokens(&oauth).len();
    let out = fen(&s, &["tool", "mcp__web__whoami", "{}"]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(all.contains("fen mcp login web"), "{all}");
    assert_eq!(
        tool_call_tokens(&oauth).len(),
        calls + 1,
        "retried without a new token"
    );
    assert_eq!(oauth.st().refreshes, 1);
    assert!(
        !all.contains("at-secret") && !all.contains("rt-r1"),
        "{all}"
    );
    let leaks = files_containing(s.root(), "at-secret");
    assert!(leaks.is_empty(), "the token was written to {leaks:?}");
}

#[test]
fn an_mcp_server_answering_401_offers_a_login_in_a_session() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    mcp_web(&s, &oauth);
    let (opened, path) = fake_browser(&s);

    // Headless (-p): a notice naming the command, and the run goes on.
    let script = s.write(
        "slow.json",
        r#"[{"text":"answered anyway","delay_ms":1500}]"#,
    );
    let out = fen_cmd(&s, &["-p", "hi", "--mock-script", script.to_str().unwrap()])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("answered anyway"));
    let err = text(&out.stderr);
    assert!(
        err.contains("needs login") && err.contains("fen mcp login web"),
        "{err}"
    );
    assert!(!opened.exists(), "a headless run opened a browser");

    // The line REPL: asked at once; yes opens the browser, and the server connects.
    let script = s.write(
        "script.json",
        r#"[{"tool_calls":[{"name":"mcp__web__whoami","arguments":{}}]},{"text":"all done"}]"#,
    );
    let (mut child, mut stdin, mut lines) = repl(&s, &script, Some(&path));
    let mut seen = String::new();
    read_until(&mut lines, &mut seen, |l| {
        l.contains("web needs login") && l.contains("Log in now?")
    })
    .unwrap_or_else(|| panic!("no login offer: {seen}"));
    writeln!(stdin, "1").unwrap();
    let url = follow_printed(&mut lines, &mut seen);
    read_until(&mut lines, &mut seen, |l| l.contains("web connected"))
        .unwrap_or_else(|| panic!("no connection: {seen}"));
    assert_eq!(
        std::fs::read_to_string(&opened).unwrap_or_default().trim(),
        url.trim(),
        "the browser was not opened on the authorize URL"
    );
    // Its tool now runs in this session with the new token.
    writeln!(stdin, "who am i").unwrap();
    read_until(&mut lines, &mut seen, |l| l.contains("all done"))
        .unwrap_or_else(|| panic!("no answer: {seen}"));
    drop(stdin);
    let _ = child.wait();
    assert_eq!(tool_call_tokens(&oauth), ["at-secret-1"], "{seen}");
    assert!(!seen.contains("at-secret"), "{seen}");
    let leaks = files_containing(s.root(), "at-secret");
    assert!(leaks.is_empty(), "the token was written to {leaks:?}");
}

#[test]
fn login_in_the_tui_shows_the_device_code_until_the_server_approves() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    settings(&s, &oauth, "http://127.0.0.1:9");
    oauth.st().hold_device = true;
    let script = crate::tui::script(&s, r#"[{"text":"hi"}]"#);
    let data = data_dir(&s);
    let mut t = crate::tui::Tui::spawn(
        &s,
        &["--mock-script", &script],
        100,
        30,
        &[("XDG_DATA_HOME", data.to_str().unwrap())],
    );
    t.wait_for("Ask anything");
    t.send("/login github-copilot\r");
    let screen = t.wait_for("WXYZ-9876");
    assert!(screen.contains("/login/device"), "{screen}");
    assert!(!screen.contains("Logged in"), "{screen}");
    // Still pending after a few polls.
    t.wait("a few polls", |_| oauth.st().device_polls >= 3);
    assert!(!t.screen().contains("Logged in"));
    oauth.st().hold_device = false;
    let screen = t.wait_for("Logged in: github-copilot");
    assert!(screen.contains("user ada-gh"), "{screen}");
    assert_eq!(stored(&s)["github-copilot"]["user"], "ada-gh");
    let raw = String::from_utf8_lossy(&t.raw.lock().unwrap()).into_owned();
    assert!(
        !raw.contains("ghu_secret") && !raw.contains("cop-secret"),
        "a token reached the screen"
    );
}

#[test]
fn the_tui_offers_the_login_of_an_mcp_server_that_answers_401() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    mcp_web(&s, &oauth);
    let (opened, path) = fake_browser(&s);
    let script = crate::tui::script(&s, r#"[{"text":"hi"}]"#);
    let data = data_dir(&s);
    let mut t = crate::tui::Tui::spawn(
        &s,
        &["--mock-script", &script],
        120,
        30,
        &[("XDG_DATA_HOME", data.to_str().unwrap()), ("PATH", &path)],
    );
    let screen = t.wait_for("Log in now?");
    assert!(screen.contains("web needs login"), "{screen}");
    t.send("\r");
    t.wait("the browser", |_| {
        std::fs::read_to_string(&opened).is_ok_and(|u| u.ends_with('\n'))
    });
    let url = std::fs::read_to_string(&opened).unwrap();
    follow(url.trim());
    let screen = t.wait_for("web connected");
    assert!(!screen.contains("at-secret"), "{screen}");
    assert_eq!(
        stored(&s)[oauth.url("/mcp").as_str()]["access_token"],
        "at-secret-1"
    );
}

#[test]
fn an_mcp_entry_s_own_client_id_is_used_instead_of_registration() {
    let s = Sandbox::new();
    let oauth = OAuth::start();
    settings(&s, &oauth, "http://127.0.0.1:9");
    let mcp = json!({"mcpServers": {"web": {"url": oauth.url("/mcp"),
        "oauth": {"client_id": "pre-registered", "scopes": ["mcp:read", "mcp:write"]}}}});
    s.write("config/fen/mcp.json", &mcp.to_string());
    let login = play_browser(&s, &["mcp", "login", "web", "--no-browser"]);
    let err = text(&login.stderr);
    assert!(login.status.success(), "{err}");
    assert!(
        oauth.requests_to("/register").is_empty(),
        "registered anyway"
    );
    assert!(
        err.contains("client_id=pre-registered") && err.contains("scope=mcp%3Aread+mcp%3Awrite"),
        "{err}"
    );
    let token = oauth.requests_to("/oauth/token");
    assert!(
        token[0].3.contains("client_id=pre-registered"),
        "{}",
        token[0].3
    );
    assert!(!text(&login.stdout).contains("at-secret") && !err.contains("at-secret"));
}
