//! Language-server benchmarks: what fen adds to an edit's diagnostics over the server's own
//! latency, with a warm server, as a difference and a ratio against a baseline measured in the
//! same run on the same server program.
//!
//! Baseline: the file is written, then a bare client on a pipe sends `didChange` and
//! `didSave` (what any client sends for a saved change) and reads until the server's
//! `publishDiagnostics` for that version. fen: the file is written to disk and
//! `Manager::after_change` runs (reads it, sends `didChange` + `didSave`, waits for the
//! diagnostics, computes the delta against the previous version and formats it).
//! Servers: the test server (tests/support/lsp_server.py, always) and pyright when on PATH.
//! Target: fen ≤ the server's own latency + 5 ms.

use fen::native::lsp::{config, rpc, Manager};
use serde_json::{json, Value};
use std::io::BufReader;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FAKE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/support/lsp_server.py");

fn text(i: usize) -> String {
    // Alternates between a clean file and one with a fresh error, as edits do.
    if i.is_multiple_of(2) {
        format!("def f(x: int) -> int:\n    return x\n\n\nv{i}: int = f(1)\n")
    } else {
        format!("def f(x: int) -> int:\n    return x\n\n\nv{i}: str = f(1)  # ERR\n")
    }
}

/// The server's own latency: didChange to publishDiagnostics of that version, on a bare pipe.
fn bare(cmd: &[&str], file: &Path, lang: &str, edits: usize) -> Duration {
    let mut child = Command::new(cmd[0])
        .args(&cmd[1..])
        .current_dir(file.parent().unwrap())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("server");
    let mut w = child.stdin.take().expect("stdin");
    let mut r = BufReader::new(child.stdout.take().expect("stdout"));
    let root = fen::native::lsp::position::path_to_uri(file.parent().unwrap());
    let uri = fen::native::lsp::position::path_to_uri(file);
    let mut send = |m: Value| rpc::write_message(&mut w, &m).expect("write");
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": null, "rootUri": root, "workspaceFolders": [{"uri": root, "name": "b"}],
        "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": true}}}}}),
    );
    // Answers the server's own requests (configuration) and returns when `until` matches.
    let wait = |r: &mut BufReader<std::process::ChildStdout>,
                w: &mut dyn FnMut(Value),
                until: &dyn Fn(&Value) -> bool| loop {
        let m = rpc::read_message(r).expect("read").expect("message");
        if m.get("method").is_some() && m.get("id").is_some() {
            let n = m["params"]["items"].as_array().map_or(0, |a| a.len());
            let result = if m["method"] == "workspace/configuration" {
                json!(vec![Value::Null; n])
            } else {
                Value::Null
            };
            w(json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
            continue;
        }
        if until(&m) {
            return;
        }
    };
    wait(&mut r, &mut send, &|m| m["id"] == 1);
    send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    send(
        json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": lang, "version": 1, "text": text(0)}}}),
    );
    let published = |v: i64| {
        move |m: &Value| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["version"].as_i64().is_none_or(|x| x >= v)
        }
    };
    wait(&mut r, &mut send, &published(1));
    let mut total = Duration::ZERO;
    for i in 1..=edits {
        // The edit writes the file either way (servers may watch the disk).
        std::fs::write(file, text(i)).expect("write");
        let t = Instant::now();
        let v = i as i64 + 1;
        send(
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": text(i)}]}}),
        );
        send(json!({"jsonrpc": "2.0", "method": "textDocument/didSave",
                    "params": {"textDocument": {"uri": uri}}}));
        wait(&mut r, &mut send, &published(v));
        total += t.elapsed();
    }
    let _ = child.kill();
    let _ = child.wait();
    total / edits as u32
}

/// fen's path: write the file, then `after_change`.
fn through_fen(
    rt: &tokio::runtime::Runtime,
    name: &str,
    def: Value,
    file: &Path,
    edits: usize,
) -> Duration {
    let m = Manager::new();
    let settings = json!({"lsp": {name: def}});
    let loaded = config::load(&[("bench.json".into(), settings, false)], true);
    let logs = tempfile::tempdir().expect("temp dir");
    let dir = file.parent().unwrap().to_path_buf();
    m.configure(
        &loaded,
        true,
        dir.clone(),
        logs.path().to_path_buf(),
        Vec::new(),
    );
    std::fs::write(file, text(0)).expect("write");
    let paths = vec![file.to_path_buf()];
    rt.block_on(async {
        m.prepare(&paths).await;
        let mut total = Duration::ZERO;
        let wait = Duration::from_secs(30);
        for i in 1..=edits {
            std::fs::write(file, text(i)).expect("write");
            let t = Instant::now();
            let r = m.after_change(&paths, wait, &dir).await;
            total += t.elapsed();
            assert!(r[0].pending.is_none(), "{r:?}");
        }
        total / edits as u32
    })
}

fn report(label: &str, ours: Duration, base: Duration) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "lsp edit diagnostics ({label}): {:.2} ms via fen vs {:.2} ms the server alone: +{:.2} ms, ratio {:.2} (target ≤ +5 ms)",
        ms(ours),
        ms(base),
        ms(ours) - ms(base),
        ours.as_secs_f64() / base.as_secs_f64()
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");

    let fk = dir.path().join("x.fk");
    std::fs::write(&fk, text(0)).expect("write");
    let base = bare(&["python3", FAKE], &fk, "fk", 200);
    let ours = through_fen(
        &rt,
        "fake",
        json!({"command": "python3", "args": [FAKE], "extensions": ["fk"]}),
        &fk,
        200,
    );
    report("test server", ours, base);

    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("pyright-langserver").is_file()));
    if on_path {
        let py = dir.path().join("a.py");
        std::fs::write(&py, text(0)).expect("write");
        let base = bare(&["pyright-langserver", "--stdio"], &py, "python", 20);
        let ours = through_fen(&rt, "pyright", json!({}), &py, 20);
        report("pyright", ours, base);
    } else {
        println!("lsp edit diagnostics (pyright): skipped, pyright-langserver is not on PATH");
    }
    fen::native::lsp::shutdown_all();
}
