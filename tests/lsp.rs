//! Language servers through the real binary: a small fake server (tests/support/lsp_server.py,
//! stdlib Python) for the protocol's corners (the delta, pull diagnostics, a hung server, a
//! crashing one, a stub that exits at once, secrets, trust), and real servers from the
//! registries when installed (pyright, pylsp, typescript-language-server), each test skipped
//! with a notice when its server is absent.

use crate::common::Sandbox;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/lsp_server.py");

fn on_path(cmd: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(cmd).is_file()))
}

/// Whether `cmd` is there; prints why the test is skipped when not.
fn have(cmd: &str, test: &str) -> bool {
    let ok = on_path(cmd);
    if !ok {
        eprintln!("note: {test} skipped: `{cmd}` is not on PATH (.ci/run installs it when it can)");
    }
    ok
}

fn settings(s: &Sandbox, lsp: Value) {
    s.write(
        "config/fen/settings.json",
        &json!({"permissions": {"mode": "yolo"}, "lsp": lsp}).to_string(),
    );
}

fn fake(extra: &[&str], ext: &str) -> Value {
    let mut args = vec![FAKE.to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    json!({"command": "python3", "args": args, "extensions": [ext]})
}

/// `fen tool lsp ARGS` as a user types it; the call must succeed: its text.
fn lsp_tool(s: &Sandbox, args: Value) -> String {
    let out = s.fen(&["tool", "lsp", &args.to_string()]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        v["is_error"],
        false,
        "{v} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    text(&v)
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

/// Runs one session whose model makes `calls` (`[name, arguments]`), one per turn; returns
/// the text of each tool result and fen's stderr.
fn session(s: &Sandbox, calls: &[(&str, Value)], env: &[(&str, &str)]) -> (Vec<String>, String) {
    let mut turns: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"tool_calls": [{"name": name, "arguments": args}]}))
        .collect();
    turns.push(json!({"text": "done"}));
    let script = s.write("script.json", &Value::Array(turns).to_string());
    let out = s.fen_env(
        &[
            "--provider",
            "mock",
            "--mock-script",
            script.to_str().unwrap(),
            "--mode",
            "json",
            "-p",
            "go",
        ],
        env,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Vec<String> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool-result")
        .map(|e| text(&e["result"]))
        .collect();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(results.len(), calls.len(), "{stdout}\n{stderr}");
    (results, stderr)
}

fn read(path: &str) -> (&'static str, Value) {
    ("read", json!({"path": path}))
}

fn edit(path: &str, old: &str, new: &str) -> (&'static str, Value) {
    (
        "edit",
        json!({"path": path, "old_string": old, "new_string": new}),
    )
}

fn write(path: &str, content: &str) -> (&'static str, Value) {
    ("write", json!({"path": path, "content": content}))
}

fn lsp_lines(result: &str) -> Vec<&str> {
    result
        .lines()
        .filter(|l| l.contains(" error ") || l.contains(" warning "))
        .collect()
}

/// The delta: an edit that adds an error gets exactly that one (not the one the file had);
/// one that only moves lines gets none; one that fixes its error gets none.
fn delta_cases(extra: &[&str]) {
    let s = Sandbox::new();
    settings(&s, json!({"fake": fake(extra, "fk")}));
    s.write("work/x.fk", "a\nERR old\nb\n");
    let (r, stderr) = session(
        &s,
        &[
            read("x.fk"),
            edit("x.fk", "b\n", "b\nERR new\n"),
            edit("x.fk", "a\n", "top1\ntop2\na\n"),
            edit("x.fk", "ERR new\n", "fixed\n"),
        ],
        &[],
    );
    assert_eq!(
        lsp_lines(&r[1]),
        ["x.fk:4:1 error found ERR: ERR new [fake]"],
        "{}\n{stderr}",
        r[1]
    );
    assert!(
        r[1].contains("lsp (fake): this edit introduced 1 diagnostic in x.fk"),
        "{}",
        r[1]
    );
    assert!(
        !r[2].contains("lsp"),
        "moving lines introduced nothing: {}",
        r[2]
    );
    assert!(!r[3].contains("lsp"), "a fix introduced nothing: {}", r[3]);
}

#[test]
fn an_edit_reports_only_the_diagnostics_it_introduced() {
    delta_cases(&[]);
}

#[test]
fn pull_diagnostics_give_the_same_delta() {
    delta_cases(&["--pull"]);
}

/// A server that never answers costs each edit at most the deadline, which then says
/// "diagnostics pending" (and nothing is attached to a later result).
#[test]
fn a_server_that_never_answers_costs_at_most_the_deadline() {
    for mode in ["--no-init", "--silent"] {
        let s = Sandbox::new();
        let mut lsp = json!({"fake": fake(&[mode], "fk")});
        lsp["diagnostics_wait_ms"] = json!(700);
        settings(&s, lsp);
        let t = Instant::now();
        let (r, _) = session(
            &s,
            &[
                write("x.fk", "ERR 1\n"),
                read("x.fk"),
                write("x.fk", "ERR 2\n"),
            ],
            &[],
        );
        let took = t.elapsed();
        assert!(
            r[0].contains("lsp: diagnostics pending for x.fk"),
            "{mode}: {}",
            r[0]
        );
        assert!(
            !r[1].contains("ERR 1") || !r[1].contains("lsp"),
            "{mode}: {}",
            r[1]
        );
        assert!(r[2].contains("diagnostics pending"), "{mode}: {}", r[2]);
        // Two waits of 0.7 s and the session's own start; a wait without a deadline never ends.
        assert!(took < Duration::from_secs(20), "{mode}: took {took:?}");
    }
}

fn starts(pidfile: &std::path::Path) -> usize {
    std::fs::read_to_string(pidfile)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// A server that crashes is restarted on next use (with backoff) and reports again; after
/// three restarts it is given up and said failed.
#[test]
fn a_crashed_server_restarts_then_gives_up() {
    let s = Sandbox::new();
    let pidfile = s.root().join("pids");
    settings(
        &s,
        json!({"fake": fake(&["--crash-on", "CRASH", "--pidfile", pidfile.to_str().unwrap()], "fk")}),
    );
    let (r, _) = session(
        &s,
        &[
            write("x.fk", "ok\n"),
            read("x.fk"),
            write("x.fk", "CRASH\n"),
            read("x.fk"),
            write("x.fk", "ERR back\n"),
        ],
        &[],
    );
    assert!(r[2].contains("diagnostics pending"), "{}", r[2]);
    assert_eq!(
        lsp_lines(&r[4]),
        ["x.fk:1:1 error found ERR: ERR back [fake]"],
        "{}",
        r[4]
    );
    assert_eq!(starts(&pidfile), 2);
    let log = std::fs::read_to_string(s.state().join("fen/lsp/fake.log")).unwrap();
    assert!(log.contains("restart 1 of 3"), "{log}");

    // Crashing every time: the first start and three restarts, then failed.
    let s = Sandbox::new();
    let pidfile = s.root().join("pids");
    settings(
        &s,
        json!({"fake": fake(&["--crash-on", "CRASH", "--pidfile", pidfile.to_str().unwrap()], "fk")}),
    );
    let mut calls = vec![write("x.fk", "ok\n")];
    let texts: Vec<String> = (1..=5).map(|n| format!("CRASH {n}\n")).collect();
    for t in &texts {
        calls.push(read("x.fk"));
        calls.push(write("x.fk", t));
    }
    session(&s, &calls, &[]);
    assert_eq!(starts(&pidfile), 4);
    let log = std::fs::read_to_string(s.state().join("fen/lsp/fake.log")).unwrap();
    assert!(
        log.contains("restart 3 of 3") && !log.contains("restart 4"),
        "{log}"
    );
}

/// A stub that exits at once (rustup's proxy for a missing component) is started once, marked
/// unavailable, and the next server for the language takes its files, diagnostics and all.
#[test]
fn a_stub_that_exits_at_once_is_unavailable_once() {
    let s = Sandbox::new();
    let count = s.root().join("stub-starts");
    let stub = format!("echo x >> '{}'; exit 1", count.display());
    settings(
        &s,
        json!({
            "astub": {"command": "sh", "args": ["-c", stub], "extensions": ["fk"]},
            "fake": fake(&[], "fk"),
        }),
    );
    s.write("work/x.fk", "ERR before\n");
    let (r, stderr) = session(
        &s,
        &[
            read("x.fk"),
            edit("x.fk", "ERR before\n", "ERR before\nERR after\n"),
            read("x.fk"),
            write("x.fk", "ok\n"),
        ],
        &[],
    );
    assert_eq!(
        lsp_lines(&r[1]),
        ["x.fk:2:1 error found ERR: ERR after [fake]"],
        "{}\n{stderr}",
        r[1]
    );
    assert_eq!(std::fs::read_to_string(&count).unwrap().lines().count(), 1);
    // `fen lsp status` says why.
    let status = s.fen_json(&["lsp", "status", "--json"]);
    let stub = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "astub")
        .unwrap();
    assert_eq!(stub["state"], "unavailable", "{status}");
    assert!(
        stub["error"]
            .as_str()
            .unwrap()
            .contains("exited before it started"),
        "{status}"
    );
    let fake = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "fake")
        .unwrap();
    assert_eq!(fake["state"], "running", "{status}");
}

/// A file a shell command changed is sent to its server after the command (the stat scan of
/// open documents), before any edit of it.
#[test]
fn files_a_shell_command_changed_are_sent_again() {
    let s = Sandbox::new();
    let texts = s.root().join("texts");
    settings(
        &s,
        json!({"fake": fake(&["--texts", texts.to_str().unwrap()], "fk")}),
    );
    session(
        &s,
        &[
            write("x.fk", "one\n"),
            ("bash", json!({"command": "printf 'two\\n' > x.fk"})),
        ],
        &[],
    );
    let seen: Vec<String> = std::fs::read_to_string(&texts)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // fen asked the server to shut down when it exited.
    assert_eq!(seen, ["one\n", "two\n", "<shutdown>"]);
}

/// When fen exits, every server it started is gone.
#[test]
fn servers_end_with_fen() {
    let s = Sandbox::new();
    let pidfile = s.root().join("pids");
    settings(
        &s,
        json!({"fake": fake(&["--pidfile", pidfile.to_str().unwrap()], "fk")}),
    );
    session(&s, &[write("x.fk", "ERR\n")], &[]);
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |st| {
            st.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
    };
    assert!(gone(pid), "the server outlived fen");
}

/// Secrets never reach a server's environment; its stderr goes to its log.
#[test]
fn servers_get_no_secrets() {
    let s = Sandbox::new();
    let env_out = s.root().join("env.json");
    let mut def = fake(&["--env-out", env_out.to_str().unwrap()], "fk");
    def["env"] = json!({"CONF_API_KEY": "from-config"});
    settings(&s, json!({ "fake": def }));
    session(
        &s,
        &[write("x.fk", "ERR\n")],
        &[
            ("OPENAI_API_KEY", "sk-secret"),
            ("SOME_API_KEY", "s3cret"),
            ("CONF_API_KEY", "from-env"),
            ("PLAIN", "kept"),
        ],
    );
    let env: Value = serde_json::from_str(&std::fs::read_to_string(&env_out).unwrap()).unwrap();
    assert_eq!(env["PLAIN"], "kept");
    assert!(
        env.get("OPENAI_API_KEY").is_none() && env.get("SOME_API_KEY").is_none(),
        "{env}"
    );
    // What the server's config sets is the server's.
    assert_eq!(env["CONF_API_KEY"], "from-config", "{env}");
    // The server's log says where it runs and why (`sandbox::plan`).
    let log = std::fs::read_to_string(s.state().join("fen/lsp/fake.log")).unwrap();
    assert!(
        log.contains("outside, in every mode: a server the user configured")
            && log.contains("hidden variables removed"),
        "{log}"
    );
}

/// A project's own server definition does not start until the folder is trusted; it may
/// still disable servers.
#[test]
fn project_servers_need_a_trusted_folder() {
    let s = Sandbox::new();
    s.write(
        "work/.fen/settings.json",
        &json!({"lsp": {"proj": fake(&[], "fk"), "pylsp": {"disabled": true}}}).to_string(),
    );
    let status = s.fen_json(&["lsp", "status", "--json", "--no-start"]);
    let names: Vec<&str> = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"proj"), "{status}");
    assert_eq!(status["untrusted"][0]["name"], "proj", "{status}");
    let pylsp = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "pylsp")
        .unwrap();
    assert_eq!(pylsp["state"], "disabled");
    let status = s.fen_json(&["--trust", "lsp", "status", "--json", "--no-start"]);
    let names: Vec<&str> = status["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"proj"), "{status}");
}

/// Bad settings are named, not fatal.
#[test]
fn bad_settings_are_reported() {
    let s = Sandbox::new();
    settings(&s, json!({"x": {"comand": "x", "extensions": ["x"]}}));
    let out = s.fen(&["lsp", "status", "--no-start"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("unknown key `comand`"), "{stdout}");
}

// ----- real servers -------------------------------------------------------------------------

const PY_BEFORE: &str = "def f(x: int) -> int:\n    return x\n\n\nold: str = 1\n";

/// pyright: a type error the edit adds is reported, the one the file had is not, a fix
/// reports nothing.
#[test]
fn pyright_reports_the_type_error_an_edit_introduces() {
    if !have(
        "pyright-langserver",
        "pyright_reports_the_type_error_an_edit_introduces",
    ) {
        return;
    }
    let s = Sandbox::new();
    settings(&s, json!({"diagnostics_wait_ms": 20000}));
    s.write("work/a.py", PY_BEFORE);
    let (r, stderr) = session(
        &s,
        &[
            read("a.py"),
            edit(
                "a.py",
                "    return x\n",
                "    return x\n\n\ny: str = f(1)\n",
            ),
            edit("a.py", "y: str = f(1)", "y: int = f(1)"),
        ],
        &[],
    );
    let lines = lsp_lines(&r[1]);
    assert_eq!(lines.len(), 1, "{}\n{stderr}", r[1]);
    assert!(
        lines[0]
            .starts_with("a.py:5:10 error Type \"int\" is not assignable to declared type \"str\""),
        "{}",
        r[1]
    );
    assert!(r[1].contains("lsp (pyright)"), "{}", r[1]);
    assert!(!r[2].contains("lsp"), "{}", r[2]);
}

/// pylsp (pyflakes): an undefined name the edit adds.
#[test]
fn pylsp_reports_an_undefined_name_an_edit_introduces() {
    if !have(
        "pylsp",
        "pylsp_reports_an_undefined_name_an_edit_introduces",
    ) {
        return;
    }
    let s = Sandbox::new();
    settings(
        &s,
        json!({"diagnostics_wait_ms": 20000, "pyright": {"disabled": true}}),
    );
    s.write(
        "work/b.py",
        "import os\n\nprint(os.sep)\nprint(missing_a)\n",
    );
    let (r, stderr) = session(
        &s,
        &[
            read("b.py"),
            edit(
                "b.py",
                "print(os.sep)\n",
                "print(os.sep)\nprint(missing_b)\n",
            ),
            read("b.py"),
            edit("b.py", "print(missing_b)\n", ""),
        ],
        &[],
    );
    let lines = lsp_lines(&r[1]);
    assert_eq!(lines.len(), 1, "{}\n{stderr}", r[1]);
    assert!(
        lines[0].starts_with("b.py:4:7 error undefined name 'missing_b'"),
        "{}",
        r[1]
    );
    assert!(!r[3].contains("lsp"), "{}", r[3]);
}

/// typescript-language-server (tsserver): a type error.
#[test]
fn typescript_reports_the_type_error_an_edit_introduces() {
    if !have(
        "typescript-language-server",
        "typescript_reports_the_type_error_an_edit_introduces",
    ) {
        return;
    }
    let s = Sandbox::new();
    settings(&s, json!({"diagnostics_wait_ms": 20000}));
    s.write(
        "work/tsconfig.json",
        r#"{"compilerOptions": {"strict": true, "noEmit": true}}"#,
    );
    s.write(
        "work/m.ts",
        "export const a: number = 1;\nexport const old: string = 2;\n",
    );
    let (r, stderr) = session(
        &s,
        &[
            read("m.ts"),
            edit(
                "m.ts",
                "export const a: number = 1;\n",
                "export const a: number = 1;\nexport const b: number = \"x\";\n",
            ),
        ],
        &[],
    );
    let lines = lsp_lines(&r[1]);
    assert_eq!(lines.len(), 1, "{}\n{stderr}", r[1]);
    assert!(
        lines[0].starts_with("m.ts:2:14 error Type 'string' is not assignable to type 'number'."),
        "{}",
        r[1]
    );
}

/// Definition and references on a two-file project (pyright).
#[test]
fn definition_and_references_on_a_small_project() {
    if !have(
        "pyright-langserver",
        "definition_and_references_on_a_small_project",
    ) {
        return;
    }
    let s = Sandbox::new();
    settings(&s, json!({}));
    s.write(
        "work/helpers.py",
        "def helper(x: int) -> int:\n    return x + 1\n",
    );
    s.write(
        "work/main.py",
        "from helpers import helper\n\nprint(helper(1))\nprint(helper(2))\n",
    );
    let tool = |args: Value| lsp_tool(&s, args);
    let def = tool(json!({"operation": "definition", "path": "main.py", "line": 3, "column": 8}));
    assert_eq!(def, "helpers.py:1:5: def helper(x: int) -> int:");
    let refs = tool(json!({"operation": "references", "path": "main.py", "line": 3, "column": 7}));
    for want in [
        "helpers.py:1:5: def helper(x: int) -> int:",
        "main.py:1:21: from helpers import helper",
        "main.py:3:7: print(helper(1))",
        "main.py:4:7: print(helper(2))",
    ] {
        assert!(refs.lines().any(|l| l == want), "{want} not in\n{refs}");
    }
    let syms = tool(json!({"operation": "document_symbols", "path": "helpers.py"}));
    assert!(syms.contains("function helper  helpers.py:1:5"), "{syms}");
    let hover = tool(json!({"operation": "hover", "path": "main.py", "line": 3, "column": 8}));
    assert!(hover.contains("def helper(x: int) -> int"), "{hover}");
    // A position without its line and column is a clear error.
    let out = s.fen(&[
        "tool",
        "lsp",
        r#"{"operation": "definition", "path": "main.py"}"#,
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["is_error"], true);
    assert!(text(&v).contains("needs line and column"), "{v}");
}

/// `/lsp` in a session lists the servers with their state: the one that ran (with its root
/// and log), one that is not on PATH, one disabled.
#[test]
fn slash_lsp_lists_the_servers_and_their_state() {
    let s = Sandbox::new();
    settings(
        &s,
        json!({"fake": fake(&[], "fk"), "nowhere": {"command": "no-such-server-xyz", "extensions": ["nw"]},
               "gopls": {"disabled": true}}),
    );
    let script = s.write(
        "script.json",
        &json!([
            {"tool_calls": [{"name": "write", "arguments": {"path": "x.fk", "content": "ERR\n"}}]},
            {"text": "ok"}
        ])
        .to_string(),
    );
    let out = s.fen_stdin(
        &[
            "--provider",
            "mock",
            "--mock-script",
            script.to_str().unwrap(),
        ],
        "go\n/lsp\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .to_string()
    };
    assert!(line("fake ").contains("running"), "{text}");
    assert!(text.contains("fen/lsp/fake.log"), "{text}");
    assert!(line("nowhere ").contains("unavailable"), "{text}");
    assert!(
        text.contains("`no-such-server-xyz` is not on PATH"),
        "{text}"
    );
    assert!(line("gopls ").contains("disabled"), "{text}");
}

/// Workspace symbols and the call hierarchy on a small project (pyright). A one-shot `fen
/// tool lsp` meets a server that is still indexing: its first empty answers are asked again.
#[test]
fn workspace_symbols_and_calls_on_a_small_project() {
    if !have(
        "pyright-langserver",
        "workspace_symbols_and_calls_on_a_small_project",
    ) {
        return;
    }
    let s = Sandbox::new();
    settings(&s, json!({}));
    s.write(
        "work/helpers.py",
        "def helper(x: int) -> int:\n    return x + 1\n",
    );
    s.write(
        "work/main.py",
        "from helpers import helper\n\n\ndef run() -> int:\n    return helper(1)\n",
    );
    let tool = |args: Value| lsp_tool(&s, args);
    let ws = tool(json!({"operation": "workspace_symbols", "path": "main.py", "query": "helper"}));
    assert!(
        ws.lines()
            .any(|l| l.contains("helpers.py:1:5: def helper(x: int) -> int:")),
        "{ws}"
    );
    let inc =
        tool(json!({"operation": "incoming_calls", "path": "helpers.py", "line": 1, "column": 5}));
    assert!(
        inc.lines()
            .any(|l| l.contains("run") && l.contains("main.py:4:5: def run() -> int:")),
        "{inc}"
    );
    let out =
        tool(json!({"operation": "outgoing_calls", "path": "main.py", "line": 4, "column": 5}));
    assert!(
        out.lines()
            .any(|l| l.contains("helper") && l.contains("helpers.py:1:5:")),
        "{out}"
    );
}
