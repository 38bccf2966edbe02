//! Language-server benchmarks: what fen adds to an edit's diagnostics over the server's own
//! latency, with a warm server, as a difference and a ratio against a baseline measured in the
//! same run on the same server program.
//!
//! Baseline: the file is written, then a bare client on a pipe sends `didChange` and
//! `didSave` (what any client sends for a saved change) and reads until the server's
//! `publishDiagnostics` for that version. fen: the file is written to disk and
//! `Manager::after_change` runs (reads it, sends `didChange` + `didSave`, waits for the
//! diagnostics, computes the delta against the previous version and formats it).
//! Both servers are warm before the first timed edit (each has published the diagnostics of
//! the opened file: a cold start is not an edit's cost), each has its own directory, and the
//! edits alternate between the two so a change in the machine's load hits both alike.
//! Servers: the test server (tests/support/lsp_server.py, always) and pyright when on PATH.
//! Target: fen ≤ the server's own latency + 5 ms.

use fen::native::lsp::{config, rpc, Manager};
use serde_json::{json, Value};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
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

/// A bare client: the server's own latency, didChange to publishDiagnostics of that version.
struct Bare {
    child: Child,
    w: ChildStdin,
    r: BufReader<ChildStdout>,
    uri: String,
    file: PathBuf,
}

impl Bare {
    fn start(cmd: &[&str], file: &Path, lang: &str) -> Bare {
        let mut child = Command::new(cmd[0])
            .args(&cmd[1..])
            .current_dir(file.parent().unwrap())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server");
        let w = child.stdin.take().expect("stdin");
        let r = BufReader::new(child.stdout.take().expect("stdout"));
        let root = fen::native::lsp::position::path_to_uri(file.parent().unwrap());
        let uri = fen::native::lsp::position::path_to_uri(file);
        let mut b = Bare {
            child,
            w,
            r,
            uri,
            file: file.to_path_buf(),
        };
        b.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": null, "rootUri": root, "workspaceFolders": [{"uri": root, "name": "b"}],
            "capabilities": {"textDocument": {"publishDiagnostics": {"versionSupport": true}}}}}),
        );
        b.wait(&|m| m["id"] == 1);
        b.send(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        let uri = b.uri.clone();
        b.send(
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": lang, "version": 1, "text": text(0)}}}),
        );
        b.wait(&published(1));
        b
    }

    fn send(&mut self, m: Value) {
        rpc::write_message(&mut self.w, &m).expect("write");
    }

    /// Answers the server's own requests (configuration) and returns when `until` matches.
    fn wait(&mut self, until: &dyn Fn(&Value) -> bool) {
        loop {
            let m = rpc::read_message(&mut self.r)
                .expect("read")
                .expect("message");
            if m.get("method").is_some() && m.get("id").is_some() {
                let n = m["params"]["items"].as_array().map_or(0, |a| a.len());
                let result = if m["method"] == "workspace/configuration" {
                    json!(vec![Value::Null; n])
                } else {
                    Value::Null
                };
                self.send(json!({"jsonrpc": "2.0", "id": m["id"], "result": result}));
                continue;
            }
            if until(&m) {
                return;
            }
        }
    }

    fn edit(&mut self, i: usize) -> Duration {
        // The edit writes the file either way (servers may watch the disk).
        std::fs::write(&self.file, text(i)).expect("write");
        let t = Instant::now();
        let v = i as i64 + 1;
        let uri = self.uri.clone();
        self.send(
            json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": text(i)}]}}),
        );
        self.send(json!({"jsonrpc": "2.0", "method": "textDocument/didSave",
                    "params": {"textDocument": {"uri": uri}}}));
        self.wait(&published(v));
        t.elapsed()
    }
}

impl Drop for Bare {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn published(v: i64) -> impl Fn(&Value) -> bool {
    move |m: &Value| {
        m["method"] == "textDocument/publishDiagnostics"
            && m["params"]["version"].as_i64().is_none_or(|x| x >= v)
    }
}

/// fen's path: write the file, then `after_change`.
struct ViaFen {
    m: Manager,
    paths: Vec<PathBuf>,
    dir: PathBuf,
    _logs: tempfile::TempDir,
}

impl ViaFen {
    fn start(rt: &tokio::runtime::Runtime, name: &str, def: Value, file: &Path) -> ViaFen {
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
            Default::default(),
        );
        std::fs::write(file, text(0)).expect("write");
        let paths = vec![file.to_path_buf()];
        rt.block_on(async {
            m.prepare(&paths).await;
            // Warm: the opened file's first diagnostics are in (an unchanged file waits for
            // them and reports nothing).
            let r = m.after_change(&paths, Duration::from_secs(60), &dir).await;
            assert!(r[0].pending.is_none(), "{r:?}");
        });
        ViaFen {
            m,
            paths,
            dir,
            _logs: logs,
        }
    }

    fn edit(&self, rt: &tokio::runtime::Runtime, i: usize) -> Duration {
        std::fs::write(&self.paths[0], text(i)).expect("write");
        let t = Instant::now();
        let r = rt.block_on(
            self.m
                .after_change(&self.paths, Duration::from_secs(30), &self.dir),
        );
        let took = t.elapsed();
        assert!(r[0].pending.is_none(), "{r:?}");
        took
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let mean = v.iter().sum::<Duration>() / v.len() as u32;
    (ms(mean), ms(v[v.len() / 2]))
}

/// Both clients on the same server program, edits alternating; prints mean and median.
#[allow(clippy::too_many_arguments)]
fn compare(
    rt: &tokio::runtime::Runtime,
    label: &str,
    cmd: &[&str],
    name: &str,
    def: Value,
    root: &Path,
    ext: &str,
    lang: &str,
    edits: usize,
) {
    let file = |sub: &str| {
        let d = root.join(format!("{name}-{sub}"));
        std::fs::create_dir_all(&d).expect("mkdir");
        let f = d.join(format!("a.{ext}"));
        std::fs::write(&f, text(0)).expect("write");
        f
    };
    let mut bare = Bare::start(cmd, &file("bare"), lang);
    let fen = ViaFen::start(rt, name, def, &file("fen"));
    let (mut b, mut f) = (Vec::new(), Vec::new());
    for i in 1..=edits {
        b.push(bare.edit(i));
        f.push(fen.edit(rt, i));
    }
    let (bm, bmed) = stats(b);
    let (fm, fmed) = stats(f);
    println!(
        "lsp edit diagnostics ({label}, {edits} edits): {fm:.2} ms via fen vs {bm:.2} ms the server alone: +{:.2} ms, ratio {:.2} (medians {fmed:.2} vs {bmed:.2}: +{:.2} ms; target ≤ +5 ms)",
        fm - bm,
        fm / bm,
        fmed - bmed
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    compare(
        &rt,
        "test server",
        &["python3", FAKE],
        "fake",
        json!({"command": "python3", "args": [FAKE], "extensions": ["fk"]}),
        dir.path(),
        "fk",
        "fk",
        200,
    );
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("pyright-langserver").is_file()));
    if on_path {
        compare(
            &rt,
            "pyright",
            &["pyright-langserver", "--stdio"],
            "pyright",
            json!({}),
            dir.path(),
            "py",
            "python",
            30,
        );
    } else {
        println!("lsp edit diagnostics (pyright): skipped, pyright-langserver is not on PATH");
    }
    fen::native::lsp::shutdown_all();
}
