//! The MCP client through the real binary against a test server (tests/support/mcp_server.py,
//! stdlib Python) over stdio and streamable HTTP: tools listed and called, `isError`, names,
//! secrets, a server that never starts, a killed server and `/mcp reconnect`, the search tool,
//! and nothing of a server's output on the terminal.

use crate::common::Sandbox;
use crate::support::fake_llm::{Api, FakeLlm, Reply, Scenario, Turn};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/mcp_server.py");

fn stdio_server(extra: &[&str]) -> Value {
    let mut args = vec![SERVER.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    json!({"command": "python3", "args": args})
}

fn configure(s: &Sandbox, servers: Value) {
    s.write(
        "config/fen/mcp.json",
        &json!({ "mcpServers": servers }).to_string(),
    );
}

fn tool(s: &Sandbox, name: &str, args: &str) -> (Value, String) {
    tool_env(s, name, args, &[])
}

fn tool_env(s: &Sandbox, name: &str, args: &str, env: &[(&str, &str)]) -> (Value, String) {
    let out = s.fen_env(&["tool", name, args], env);
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (v, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn text(v: &Value) -> String {
    v["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn servers(s: &Sandbox) -> Value {
    s.fen_json(&["mcp", "list", "--json"])
}

fn server<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {list}"))
}

fn tool_names(server: &Value) -> Vec<String> {
    server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// Whether a process is gone (or a zombie nobody will run again).
fn dead(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

fn wait_dead(pid: i32) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if dead(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn read_pid(path: &std::path::Path) -> i32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(t) = std::fs::read_to_string(path) {
            if let Ok(p) = t.trim().parse() {
                return p;
            }
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn stdio_tools_are_listed_and_called_and_is_error_maps() {
    let s = Sandbox::new();
    let pidfile = s.root().join("srv.pid");
    configure(
        &s,
        json!({"fake": stdio_server(&["--pidfile", pidfile.to_str().unwrap()])}),
    );
    let list = servers(&s);
    let fake = server(&list, "fake");
    assert_eq!(fake["status"], "connected", "{list}");
    assert_eq!(fake["transport"], "stdio");
    let names = tool_names(fake);
    for n in ["mcp__fake__echo", "mcp__fake__fail", "mcp__fake__peek"] {
        assert!(names.contains(&n.to_string()), "{names:?}");
    }
    // The server ended with fen: nothing orphaned.
    assert!(wait_dead(read_pid(&pidfile)), "the server outlived fen");

    let (v, err) = tool(&s, "mcp__fake__echo", r#"{"text": "héllo"}"#);
    assert_eq!(text(&v), "echo: héllo", "{v} {err}");
    assert_eq!(v["is_error"], false);
    let (v, _) = tool(&s, "mcp__fake__fail", "{}");
    assert_eq!(v["is_error"], true, "{v}");
    assert_eq!(text(&v), "it broke");
    // Results pass through the sanitizer like every tool's: no raw escape sequences.
    let (v, _) = tool(
        &s,
        "mcp__fake__echo",
        r#"{"text": "\u001b[31mred\u001b[0m"}"#,
    );
    assert!(text(&v).contains("red"), "{v}");
    assert!(!text(&v).contains('\u{1b}'), "{v}");

    // `fen list tools` holds them, with their schema and risk: shell unless read-only.
    let tools = s.fen_json(&["list", "tools", "--json"]);
    let find = |n: &str| {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .cloned()
            .unwrap_or_else(|| panic!("{n} not listed"))
    };
    let echo = find("mcp__fake__echo");
    assert_eq!(echo["risk"], "shell");
    assert_eq!(echo["parameters"]["required"], json!(["text"]));
    assert_eq!(find("mcp__fake__peek")["risk"], "read");
}

#[test]
fn http_tools_are_listed_and_called() {
    let s = Sandbox::new();
    let portfile = s.root().join("port");
    let mut srv = std::process::Command::new("python3")
        .args([SERVER, "--http", portfile.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let port = read_pid(&portfile);
    configure(
        &s,
        json!({"web": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"X-Home": "${HOME}"}}}),
    );
    let list = servers(&s);
    let web = server(&list, "web");
    assert_eq!(web["status"], "connected", "{list}");
    assert_eq!(web["transport"], "http");
    assert!(tool_names(web).contains(&"mcp__web__echo".to_string()));
    let (v, err) = tool(&s, "mcp__web__echo", r#"{"text": "over http"}"#);
    assert_eq!(text(&v), "echo: over http", "{err}");
    let (v, _) = tool(&s, "mcp__web__fail", "{}");
    assert_eq!(v["is_error"], true, "{v}");
    let _ = srv.kill();
    let _ = srv.wait();
}

#[test]
fn long_names_are_shortened_stably_and_secrets_stay_home() {
    let s = Sandbox::new();
    let mut spec = stdio_server(&["--long"]);
    spec["env"] = json!({"GIVEN": "${MY_TOKEN:-no-token}", "CONF_API_KEY": "${CONF_API_KEY:-}"});
    configure(&s, json!({"fake": spec}));
    let long: Vec<String> = (0..2)
        .map(|_| {
            let list = servers(&s);
            tool_names(server(&list, "fake"))
                .into_iter()
                .find(|n| n.starts_with("mcp__fake__a_b"))
                .expect("the long tool")
        })
        .collect();
    assert_eq!(long[0], long[1]);
    assert!(long[0].len() <= 64, "{}", long[0]);
    let (v, err) = tool(&s, &long[0], "{}");
    assert!(text(&v).starts_with("ran a.ba.b"), "{v} {err}");
    // Provider keys are not inherited; what the config passes explicitly is.
    let env = [("OPENAI_API_KEY", "sk-secret"), ("MY_TOKEN", "given-token")];
    let (v, _) = tool_env(&s, "mcp__fake__env", r#"{"name": "OPENAI_API_KEY"}"#, &env);
    assert_eq!(text(&v), "<unset>");
    let (v, _) = tool_env(&s, "mcp__fake__env", r#"{"name": "GIVEN"}"#, &env);
    assert_eq!(text(&v), "given-token");
    // Any secret-looking variable is stripped (one plan for every child, `sandbox::plan`),
    // unless the server's config sets it; the server's log says where it runs and why.
    let env = [("SOME_API_KEY", "s3cret"), ("CONF_API_KEY", "conf-key")];
    let (v, _) = tool_env(&s, "mcp__fake__env", r#"{"name": "SOME_API_KEY"}"#, &env);
    assert_eq!(text(&v), "<unset>");
    let (v, _) = tool_env(&s, "mcp__fake__env", r#"{"name": "CONF_API_KEY"}"#, &env);
    assert_eq!(text(&v), "conf-key");
    let log = std::fs::read_to_string(s.state().join("fen/mcp/fake.log")).unwrap_or_default();
    assert!(
        log.contains("outside, in every mode: a server the user configured")
            && log.contains("hidden variables removed"),
        "{log}"
    );
}

#[test]
fn bad_config_and_untrusted_project_servers_are_reported_not_fatal() {
    let s = Sandbox::new();
    s.write(
        "config/fen/mcp.json",
        &json!({"mcpServers": {"ok": stdio_server(&[]), "broken": {"command": "x", "url": "http://y"}}})
            .to_string(),
    );
    s.write(
        "work/.mcp.json",
        &json!({"mcpServers": {"proj": stdio_server(&[])}}).to_string(),
    );
    let out = s.fen(&["mcp", "list", "--json"]);
    assert!(out.status.success());
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ok"], "{list}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("config/fen/mcp.json (server 'broken'): has both"),
        "{err}"
    );
    assert!(err.contains("proj (") && err.contains("--trust"), "{err}");
    let logs = std::fs::read_to_string(s.state().join("fen/logs.jsonl")).unwrap_or_default();
    assert!(logs.contains("server 'broken'"), "{logs}");
    assert!(logs.contains("proj"), "{logs}");
    // In a session the companion says so once, naming the server and its file.
    let script = s.write("answer.json", r#"[{"text":"done"}]"#);
    let out = s.fen(&["-p", "hi", "--mock-script", script.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mcp: project-defined servers stay off until this folder is trusted")
            && err.contains("proj (")
            && err.matches("stay off").count() == 1,
        "{err}"
    );
    // --trust: the project's server starts too.
    let out = s.fen(&["--trust", "mcp", "list", "--json"]);
    let list: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(server(&list, "proj")["status"], "connected", "{list}");
    // A file that is not JSON names itself; fen still runs.
    s.write("config/fen/mcp.json", "{oops");
    let out = s.fen(&["list", "tools"]);
    assert!(out.status.success());
}

/// A server that sleeps before `initialize` does not hold up the first model request, and is
/// marked failed at its start-up timeout; its process is gone when fen ends.
#[test]
fn a_server_that_never_starts_does_not_delay_the_first_request() {
    let s = Sandbox::new();
    let pidfile = s.root().join("slow.pid");
    let mut spec = stdio_server(&[
        "--sleep-before-init",
        "30",
        "--pidfile",
        pidfile.to_str().unwrap(),
    ]);
    spec["startup_timeout_ms"] = json!(1500);
    configure(&s, json!({"slow": spec}));
    // The answer comes late, so fen is still running when the start-up timeout passes.
    let llm = FakeLlm::start(Scenario::new().then(Reply::stream_chunked(
        Api::OpenAiChat,
        Turn::text("fine"),
        crate::support::fake_llm::Chunking::events().with_delay(1000),
    )));
    let url = llm.base_url();
    let started = Instant::now();
    let child = s
        .command(&[
            "--provider",
            "openai",
            "--model",
            "m",
            "--base-url",
            &url,
            "-p",
            "hello",
        ])
        .env("OPENAI_API_KEY", "k")
        .spawn()
        .unwrap();
    while llm.requests().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no model request at all"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let first = started.elapsed();
    assert!(
        first < Duration::from_secs(1),
        "the first request took {first:?}"
    );
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "fine\n");
    let log = std::fs::read_to_string(s.state().join("fen/mcp/slow.log")).unwrap();
    assert!(
        log.contains("failed: did not start within 1500 ms"),
        "{log}"
    );
    assert!(
        wait_dead(read_pid(&pidfile)),
        "the slow server outlived fen"
    );
    // `fen mcp list` reports it failed, at its timeout.
    let t = Instant::now();
    let list = servers(&s);
    assert_eq!(server(&list, "slow")["status"], "failed");
    assert!(t.elapsed() < Duration::from_secs(10));
}

/// A line REPL (the stdio presenter) on the mock provider: lines in, stdout collected.
struct Repl {
    child: Child,
    stdin: ChildStdin,
    out: Arc<Mutex<String>>,
}

/// The mock model: `call NAME {json}` calls that tool; after a tool result it answers
/// `RESULT[text]`; any other line gets `TOOLS[names offered]`.
const SCRIPT: &str = r#"local native = require("fen.native")
local function flat(c)
  if type(c) == "string" then return c end
  local t = {}
  for _, b in ipairs(c or {}) do if b.type == "text" then t[#t + 1] = b.text end end
  return table.concat(t)
end
return function(n, ctx)
  local names = {}
  for _, t in ipairs(ctx.tools or {}) do names[#names + 1] = t.name end
  table.sort(names)
  local last = ctx.messages[#ctx.messages]
  if last.role == "user" then
    local line = flat(last.content)
    local name, args = line:match("^call (%S+)%s*(.*)$")
    if name then
      return { tool_calls = { { name = name, arguments = args ~= "" and native.json.decode(args) or {} } } }
    end
    return { text = "TOOLS[" .. table.concat(names, ",") .. "]" }
  end
  return { text = "RESULT[" .. flat(last.content):gsub("\n", " ") .. "] TOOLS[" .. table.concat(names, ",") .. "]" }
end"#;

impl Repl {
    fn start(s: &Sandbox, env: &[(&str, &str)]) -> Repl {
        let script = s.write("mock.lua", SCRIPT);
        let mut cmd = s.command(&[
            "--provider",
            "mock",
            "--mock-script",
            script.to_str().unwrap(),
        ]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut o = sink.lock().unwrap();
                o.push_str(&line);
                o.push('\n');
            }
        });
        Repl { child, stdin, out }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Waits for `needle` in the output after byte `from`; returns the output from there.
    fn wait_for(&self, from: usize, needle: &str) -> String {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            {
                let o = self.out.lock().unwrap();
                if let Some(at) = o[from..].find(needle) {
                    let end = o[from + at..].find('\n').map_or(o.len(), |e| from + at + e);
                    return o[from..end].to_string();
                }
            }
            if Instant::now() > until {
                panic!("no {needle:?} in:\n{}", self.out.lock().unwrap());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn len(&self) -> usize {
        self.out.lock().unwrap().len()
    }

    fn quit(mut self) -> std::process::Output {
        self.send("/quit");
        drop(self.stdin);
        let status = self.child.wait().unwrap();
        std::process::Output {
            status,
            stdout: self.out.lock().unwrap().clone().into_bytes(),
            stderr: Vec::new(),
        }
    }
}

#[test]
fn a_killed_server_fails_fast_and_reconnect_restores_it() {
    let s = Sandbox::new();
    let pidfile = s.root().join("srv.pid");
    configure(
        &s,
        json!({"fake": stdio_server(&["--pidfile", pidfile.to_str().unwrap()])}),
    );
    let mut r = Repl::start(&s, &[]);
    // Reconnect waits until the server is up: a barrier for the test.
    r.send("/mcp reconnect fake");
    r.wait_for(0, "fake connected");
    let at = r.len();
    r.send("/mcp");
    let row = r.wait_for(at, "fake");
    assert!(row.contains("connected") && row.contains("tools"), "{row}");
    assert!(row.contains("fake.log"), "{row}");
    let at = r.len();
    r.send(r#"call mcp__fake__echo {"text": "one"}"#);
    r.wait_for(at, "RESULT[echo: one]");

    let pid = read_pid(&pidfile);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    assert!(wait_dead(pid));
    let at = r.len();
    let t = Instant::now();
    r.send(r#"call mcp__fake__echo {"text": "two"}"#);
    let line = r.wait_for(at, "RESULT[");
    let took = t.elapsed();
    assert!(line.contains("fake"), "{line}");
    assert!(line.contains("/mcp reconnect fake"), "{line}");
    assert!(
        took < Duration::from_secs(1),
        "the failed call took {took:?}"
    );

    std::fs::remove_file(&pidfile).unwrap();
    let at = r.len();
    r.send("/mcp reconnect fake");
    r.wait_for(at, "fake connected");
    let at = r.len();
    r.send(r#"call mcp__fake__echo {"text": "three"}"#);
    r.wait_for(at, "RESULT[echo: three]");
    let second = read_pid(&pidfile);
    assert_ne!(second, pid);
    let out = r.quit();
    assert!(out.status.success());
    assert!(wait_dead(second), "the server outlived fen");
}

#[test]
fn many_schemas_are_offered_through_mcp_search() {
    let s = Sandbox::new();
    configure(
        &s,
        json!({"big": stdio_server(&["--many", "40", "--pad", "400"])}),
    );
    // 20k tokens of context: 10% is 8 KB of schemas; the server has about 32 KB.
    let mut r = Repl::start(&s, &[("FEN_MOCK_CONTEXT_WINDOW", "20000")]);
    r.send("/mcp reconnect big");
    r.wait_for(0, "big connected");
    let at = r.len();
    r.send("what tools");
    let line = r.wait_for(at, "TOOLS[");
    assert!(line.contains("mcp_search"), "{line}");
    assert!(!line.contains("mcp__big__bulk_"), "{line}");
    assert!(!line.contains("mcp__big__echo"), "{line}");
    let at = r.len();
    r.send(r#"call mcp_search {"query": "widget number 17"}"#);
    let line = r.wait_for(at, "RESULT[");
    assert!(line.contains("## mcp__big__bulk_17"), "{line}");
    // Found tools are offered from then on, and callable.
    assert!(
        line.contains("mcp__big__bulk_17,") || line.contains("mcp__big__bulk_17]"),
        "{line}"
    );
    let at = r.len();
    r.send("call mcp__big__bulk_17");
    r.wait_for(at, "RESULT[ran bulk_17]");
    r.quit();
}

/// With few tools, each is offered directly and no search tool exists; and nothing the
/// server writes (stderr, /dev/tty) reaches fen's output: it is in the server's log.
#[test]
fn small_servers_are_offered_directly_and_stay_off_the_terminal() {
    let s = Sandbox::new();
    configure(&s, json!({"fake": stdio_server(&[])}));
    s.write(
        "config/fen/extensions/probe.lua",
        r#"return function(api)
  api.register("command", { name = "probe", description = "registered tools", handler = function()
    local n = {}
    for _, t in ipairs(api.list("tool")) do n[#n + 1] = t.name end
    return "PROBE[" .. table.concat(n, ",") .. "]"
  end })
end"#,
    );
    let mut r = Repl::start(&s, &[]);
    // No barrier: the server connects in the background; `/mcp` shows when it is there.
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let at = r.len();
        r.send("/mcp");
        let row = r.wait_for(at, "fake ");
        if row.contains("connected") {
            break;
        }
        assert!(Instant::now() < until, "never connected: {row}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let at = r.len();
    r.send("what tools");
    let line = r.wait_for(at, "TOOLS[");
    assert!(line.contains("mcp__fake__echo"), "{line}");
    assert!(!line.contains("mcp_search"), "{line}");
    // /reload re-runs the companion: the tools stay, and the server was not restarted.
    let at = r.len();
    r.send("/reload");
    r.wait_for(at, "reloaded");
    let at = r.len();
    r.send("/probe");
    let line = r.wait_for(at, "PROBE[");
    assert!(line.contains("mcp__fake__echo"), "{line}");
    let log = std::fs::read_to_string(s.state().join("fen/mcp/fake.log")).unwrap();
    assert_eq!(log.matches("[fen] starting").count(), 1, "{log}");
    let mut child = r.child;
    drop(r.stdin);
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut stderr);
    }
    child.wait().unwrap();
    let out = r.out.lock().unwrap().clone();
    assert!(
        !out.contains("NOISE") && !stderr.contains("NOISE"),
        "{out}\n{stderr}"
    );
    let log = std::fs::read_to_string(s.state().join("fen/mcp/fake.log")).unwrap();
    assert!(log.contains("STDERR-NOISE"), "{log}");
}

#[test]
fn calls_honour_the_tool_timeout_and_cancellation() {
    let s = Sandbox::new();
    let pidfile = s.root().join("srv.pid");
    let mut spec = stdio_server(&["--pidfile", pidfile.to_str().unwrap()]);
    spec["tool_timeout_ms"] = json!(700);
    configure(&s, json!({"fake": spec}));
    let t = Instant::now();
    let (v, err) = tool(&s, "mcp__fake__slow", r#"{"seconds": 30}"#);
    assert_eq!(v["is_error"], true, "{v} {err}");
    assert!(
        text(&v).contains("did not answer slow within 700 ms"),
        "{v}"
    );
    assert!(t.elapsed() < Duration::from_secs(10));
    assert!(wait_dead(read_pid(&pidfile)));

    // Ctrl-C on `fen tool`: the call ends cancelled, fen exits 130, the server goes with it.
    std::fs::remove_file(&pidfile).unwrap();
    configure(
        &s,
        json!({"fake": stdio_server(&["--pidfile", pidfile.to_str().unwrap()])}),
    );
    let child = s
        .command(&["tool", "mcp__fake__slow", r#"{"seconds": 30}"#])
        .spawn()
        .unwrap();
    let pid = read_pid(&pidfile);
    // The server is up; give the call a moment to be sent.
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(t.elapsed() < Duration::from_secs(5));
    assert!(wait_dead(pid), "the server outlived fen");
}

/// In the TUI on a real terminal: `/mcp` shows the server, and nothing it writes to stderr or
/// straight to /dev/tty reaches the screen (it has no controlling terminal; stderr is logged).
#[test]
fn in_the_tui_a_server_never_writes_to_the_terminal() {
    let s = Sandbox::new();
    configure(&s, json!({"fake": stdio_server(&[])}));
    let mut t = crate::tui::start(&s, r#"[{"text":"hi"}]"#);
    t.wait("the first paint", |s| s.contains("› "));
    let until = Instant::now() + Duration::from_secs(15);
    loop {
        t.send("/mcp\r");
        std::thread::sleep(Duration::from_millis(200));
        if t.screen().contains("connected") {
            break;
        }
        assert!(Instant::now() < until, "{}", t.screen());
    }
    let screen = t.wait_for("fake.log");
    assert!(screen.contains("fake"), "{screen}");
    let log = std::fs::read_to_string(s.state().join("fen/mcp/fake.log")).unwrap();
    assert!(log.contains("STDERR-NOISE"), "{log}");
    let raw = String::from_utf8_lossy(&t.raw.lock().unwrap()).into_owned();
    assert!(!raw.contains("NOISE"), "a server wrote to the terminal");
    t.send("\x04");
    t.wait_exit();
}

/// An HTTP server that goes away: the call errors at once (naming the server and the fix), and
/// `/mcp reconnect` brings it back once it is up again.
#[test]
fn a_vanished_http_server_errors_and_reconnects() {
    let s = Sandbox::new();
    let portfile = s.root().join("port");
    let spawn = |port: u16| {
        let _ = std::fs::remove_file(&portfile);
        let child = std::process::Command::new("python3")
            .args([
                SERVER,
                "--http",
                portfile.to_str().unwrap(),
                "--port",
                &port.to_string(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        (child, read_pid(&portfile) as u16)
    };
    let (mut srv, port) = spawn(0);
    configure(
        &s,
        json!({"web": {"url": format!("http://127.0.0.1:{port}/mcp")}}),
    );
    let mut r = Repl::start(&s, &[]);
    r.send("/mcp reconnect web");
    r.wait_for(0, "web connected");
    let at = r.len();
    r.send(r#"call mcp__web__echo {"text": "one"}"#);
    r.wait_for(at, "RESULT[echo: one]");
    srv.kill().unwrap();
    srv.wait().unwrap();
    let at = r.len();
    let t = Instant::now();
    r.send(r#"call mcp__web__echo {"text": "two"}"#);
    let line = r.wait_for(at, "RESULT[");
    let took = t.elapsed();
    assert!(
        line.contains("'web'") && line.contains("/mcp reconnect web"),
        "{line}"
    );
    assert!(
        took < Duration::from_secs(1),
        "the failed call took {took:?}"
    );
    let (mut again, _) = spawn(port);
    let at = r.len();
    r.send("/mcp reconnect web");
    r.wait_for(at, "web connected");
    let at = r.len();
    r.send(r#"call mcp__web__echo {"text": "three"}"#);
    r.wait_for(at, "RESULT[echo: three]");
    r.quit();
    let _ = again.kill();
    let _ = again.wait();
}

/// MCP tools carry risk `shell` unless read-only, so the default mode asks for them (and a
/// headless run, with no one to ask, refuses); a `readOnlyHint` tool runs.
#[test]
fn permissions_ask_for_mcp_tools_unless_read_only() {
    let s = Sandbox::new();
    s.write("config/fen/settings.json", "{}");
    configure(&s, json!({"fake": stdio_server(&[])}));
    // The first turn waits until the server has surely connected (it has a whole second).
    let script = s.write(
        "script.json",
        &json!([
            {"delay_ms": 1500, "tool_calls": [
                {"name": "mcp__fake__echo", "arguments": {"text": "x"}},
                {"name": "mcp__fake__peek", "arguments": {}}]},
            {"text": "done"}
        ])
        .to_string(),
    );
    let out = s.fen(&[
        "--provider",
        "mock",
        "--mock-script",
        script.to_str().unwrap(),
        "--mode",
        "json",
        "-p",
        "go",
    ]);
    let results: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool-result")
        .map(|e| e["result"].clone())
        .collect();
    assert_eq!(results.len(), 2, "{}", String::from_utf8_lossy(&out.stdout));
    let echo = results
        .iter()
        .find(|r| r["tool_name"] == "mcp__fake__echo")
        .unwrap();
    assert_eq!(echo["is_error"], true);
    assert!(text(echo).contains("permission denied"), "{echo}");
    let peek = results
        .iter()
        .find(|r| r["tool_name"] == "mcp__fake__peek")
        .unwrap();
    assert_eq!(text(peek), "peeked", "{peek}");
}

/// A run whose `--tools` cannot offer an MCP tool (how subagent children run) starts no
/// server; one whose patterns can (`mcp__*`) does.
#[test]
fn servers_start_only_when_tools_patterns_can_offer_their_tools() {
    let s = Sandbox::new();
    configure(&s, json!({"fake": stdio_server(&[])}));
    let script = s.write("script.json", r#"[{"text":"done"},{"text":"done"}]"#);
    let log = s.state().join("fen/mcp/fake.log");
    let run = |tools: &str| {
        let out = s.fen(&[
            "-p",
            "hi",
            "--tools",
            tools,
            "--mock-script",
            script.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{out:?}");
    };
    run("read,grep");
    assert!(
        !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("[fen] starting"),
        "a server started for a run that cannot offer its tools"
    );
    run("read,mcp__*");
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("[fen] starting"), "{text}");
}
