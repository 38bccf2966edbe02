//! Helpers shared by the built-in tool tests: run `fen tool NAME ARGS` in a sandbox's working
//! directory with a generous hang bound, and pick results apart.
#![allow(dead_code)]

use crate::common::Sandbox;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Hang bound for one `fen tool` call (not a speed assertion: debug builds on a busy machine).
pub const HANG_BOUND: Duration = Duration::from_secs(120);

/// What one `fen tool` run produced.
#[derive(Debug)]
pub struct Run {
    pub code: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    /// stdout parsed as the result JSON; panics (with stderr) when it is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {:?}\nstderr: {}",
                String::from_utf8_lossy(&self.stdout),
                self.stderr
            )
        })
    }
}

/// The `fen` command with the sandbox's isolated HOME/XDG dirs, run in its working directory.
pub fn fen_command(sb: &Sandbox, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fen"));
    cmd.args(args)
        .current_dir(sb.cwd())
        .env("HOME", sb.root())
        .env("XDG_CONFIG_HOME", sb.config())
        .env("XDG_STATE_HOME", sb.state())
        .env_remove("FEN_EXTENSIONS_PATH")
        .env_remove("FEN_EXTENSION_ROOT")
        .env_remove("FEN_TOOL_RESULT_MAX_BYTES")
        .env_remove("FEN_LOG");
    cmd
}

/// Runs `cmd` to completion, killing it and panicking if it outlives [`HANG_BOUND`].
pub fn run_bounded(mut cmd: Command) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn fen");
    let mut out = child.stdout.take().expect("stdout pipe");
    let mut err = child.stderr.take().expect("stderr pipe");
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for fen") {
            break status;
        }
        if start.elapsed() > HANG_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            panic!("fen did not finish within {HANG_BOUND:?}: {cmd:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out_thread.join().unwrap_or_default(),
        stderr: String::from_utf8_lossy(&err_thread.join().unwrap_or_default()).into_owned(),
    }
}

/// `fen tool NAME RAW_ARGS`.
pub fn tool_raw(sb: &Sandbox, name: &str, args: &str) -> Run {
    run_bounded(fen_command(sb, &["tool", name, args]))
}

/// `fen tool NAME ARGS` with extra environment variables.
pub fn tool_env(sb: &Sandbox, name: &str, args: &Value, env: &[(&str, &str)]) -> Run {
    let args = args.to_string();
    let mut cmd = fen_command(sb, &["tool", name, &args]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_bounded(cmd)
}

/// `fen tool NAME ARGS`; asserts the tool ran (exit 0) and returns its result JSON.
pub fn tool(sb: &Sandbox, name: &str, args: &Value) -> Value {
    let run = tool_raw(sb, name, &args.to_string());
    assert_eq!(
        run.code, 0,
        "fen tool {name} {args} exited {}: {}",
        run.code, run.stderr
    );
    let v = run.json();
    assert!(v["is_error"].is_boolean(), "result without is_error: {v}");
    assert!(v["content"].is_array(), "result without content: {v}");
    v
}

/// Runs a tool that must succeed; returns (text of all blocks, details).
pub fn ok(sb: &Sandbox, name: &str, args: Value) -> (String, Value) {
    let v = tool(sb, name, &args);
    assert_eq!(v["is_error"], false, "{name} {args} failed: {v}");
    (text(&v), v["details"].clone())
}

/// Runs a tool that must fail with `is_error`; returns its text.
pub fn fails(sb: &Sandbox, name: &str, args: Value) -> String {
    let v = tool(sb, name, &args);
    assert_eq!(v["is_error"], true, "{name} {args} should have failed: {v}");
    text(&v)
}

/// Every text block of a result, joined by a blank line.
pub fn text(v: &Value) -> String {
    v["content"]
        .as_array()
        .expect("content array")
        .iter()
        .map(|b| {
            assert_eq!(b["type"], "text", "non-text block: {b}");
            b["text"].as_str().expect("text block").to_string()
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Writes bytes to `rel` under the sandbox's working directory (creating parents).
pub fn put(sb: &Sandbox, rel: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
    let p = sb.cwd().join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(&p, bytes).expect("write fixture");
    p
}

/// Reads a file of the sandbox's working directory.
pub fn get(sb: &Sandbox, rel: &str) -> Vec<u8> {
    std::fs::read(sb.cwd().join(rel)).expect("read back")
}

/// Lines of a tool text without the `[fen: ...]` notes.
pub fn body_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with("[fen:")).collect()
}

/// Whether the tests run as root (which bypasses permission bits).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Sets a path's permission bits.
pub fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
