//! The built-in bash tool through the real `fen tool` binary: status lines, errors, timeouts,
//! long output (head + tail + spill file), live `tool-update` events, cancellation.

use crate::common;
use crate::tools_support;

use common::Sandbox;
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tools_support::*;

fn bash(sb: &Sandbox, args: Value) -> Value {
    tool(sb, "bash", &args)
}

fn last_line(t: &str) -> &str {
    t.lines().last().unwrap_or("")
}

#[test]
fn bash_merges_stderr_and_ends_with_the_exit_status() {
    let sb = Sandbox::new();
    let v = bash(
        &sb,
        json!({"command": "echo out; echo err >&2; echo out2", "description": "print three lines"}),
    );
    assert_eq!(v["is_error"], false, "{v}");
    assert_eq!(text(&v), "out\nerr\nout2\n[exit 0]");
    assert_eq!(v["details"]["exit_code"], 0);
    assert_eq!(v["details"]["timed_out"], false);

    let v = bash(&sb, json!({"command": "true"}));
    assert_eq!(text(&v), "[exit 0]");
}

#[test]
fn bash_non_zero_exit_and_signals_are_errors() {
    let sb = Sandbox::new();
    let v = bash(&sb, json!({"command": "echo failing; exit 3"}));
    assert_eq!(v["is_error"], true, "{v}");
    assert_eq!(text(&v), "failing\n[exit 3]");
    assert_eq!(v["details"]["exit_code"], 3);

    let v = bash(&sb, json!({"command": "kill -9 $$"}));
    assert_eq!(v["is_error"], true, "{v}");
    assert_eq!(last_line(&text(&v)), "[signal 9]");
    assert_eq!(v["details"]["signal"], 9);
}

#[test]
fn bash_timeout_kills_the_command_and_says_so() {
    let sb = Sandbox::new();
    let start = Instant::now();
    let v = bash(
        &sb,
        json!({"command": "echo before; sleep 60; echo after", "timeout": 1}),
    );
    // Hang bound only: the 60 s sleep must not be waited out.
    assert!(
        start.elapsed() < Duration::from_secs(40),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(v["is_error"], true, "{v}");
    let t = text(&v);
    assert_eq!(last_line(&t), "[timed out after 1s]");
    assert!(
        t.starts_with("before\n") && !t.lines().any(|l| l == "after"),
        "{t}"
    );
    assert_eq!(v["details"]["timed_out"], true);
}

#[test]
fn bash_runs_in_the_working_directory_or_the_given_cwd() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.cwd().join("sub/dir")).unwrap();
    let v = bash(&sb, json!({"command": "pwd"}));
    let cwd = std::fs::canonicalize(sb.cwd()).unwrap();
    assert_eq!(text(&v), format!("{}\n[exit 0]", cwd.display()));
    let v = bash(&sb, json!({"command": "pwd", "cwd": "sub/dir"}));
    assert_eq!(
        text(&v),
        format!("{}\n[exit 0]", cwd.join("sub/dir").display())
    );
    let v = bash(&sb, json!({"command": "pwd", "cwd": "~"}));
    assert!(
        text(&v).starts_with(&sb.root().display().to_string()),
        "{v}"
    );
    let v = bash(&sb, json!({"command": "pwd", "cwd": "missing"}));
    assert_eq!(v["is_error"], true);
    assert!(
        text(&v).contains("cwd missing is not an existing directory"),
        "{v}"
    );
}

#[test]
fn bash_is_non_interactive_and_cleans_terminal_escapes() {
    let sb = Sandbox::new();
    // stdin is /dev/null: cat returns at once, read fails instead of waiting.
    let v = bash(&sb, json!({"command": "cat; read x || echo no-input"}));
    assert_eq!(text(&v), "no-input\n[exit 0]");
    let v = bash(
        &sb,
        json!({"command": "printf '\\033[31mred\\033[0m plain\\n'; printf '10%%\\r50%%\\r100%%\\n'"}),
    );
    let t = text(&v);
    assert!(t.starts_with("red plain\n"), "{t:?}");
    assert!(!t.contains('\u{1b}'), "{t:?}");
    assert!(t.contains("100%") && !t.contains("10%\r"), "{t:?}");
}

#[test]
fn bash_long_output_keeps_head_and_tail_and_the_status_and_spills_the_rest() {
    let sb = Sandbox::new();
    let v = bash(&sb, json!({"command": "seq 1 200000"}));
    assert_eq!(v["is_error"], false, "{v}");
    let t = text(&v);
    assert!(t.len() <= 65536, "{} bytes", t.len());
    assert!(
        !t.contains("[fen: output truncated"),
        "the sanitizer had to cut: {}",
        &t[t.len() - 300..]
    );
    assert!(t.starts_with("1\n2\n3\n"), "head kept");
    assert!(
        t.ends_with("199999\n200000\n[exit 0]"),
        "tail and status kept: {}",
        &t[t.len() - 100..]
    );
    let d = &v["details"];
    assert_eq!(d["truncated"], true);
    assert_eq!(d["bytes"], 1_288_895);
    let spill = d["spill_path"].as_str().expect("spill path");
    assert!(t.contains(spill), "the text names the spill file");
    assert!(
        spill.starts_with(&sb.state().display().to_string()),
        "{spill}"
    );
    let full = std::fs::read_to_string(spill).expect("spill file");
    assert_eq!(full.lines().count(), 200_000);
    assert!(full.ends_with("200000\n"));
}

#[test]
fn bash_long_output_fits_a_smaller_result_cap() {
    let sb = Sandbox::new();
    let run = tool_env(
        &sb,
        "bash",
        &json!({"command": "seq 1 100000; exit 4"}),
        &[("FEN_TOOL_RESULT_MAX_BYTES", "20000")],
    );
    let v = run.json();
    let t = text(&v);
    assert!(t.len() <= 20000, "{}", t.len());
    assert!(t.ends_with("100000\n[exit 4]"), "{}", &t[t.len() - 100..]);
    assert_eq!(v["is_error"], true);
}

#[test]
fn bash_lists_background_processes() {
    let sb = Sandbox::new();
    let v = bash(&sb, json!({"command": "sleep 30 & echo started"}));
    let t = text(&v);
    let pids = v["details"]["background_pids"]
        .as_array()
        .expect("pids")
        .clone();
    assert_eq!(pids.len(), 1, "{v}");
    assert!(
        t.contains(&format!(
            "still running in the background: pids {}",
            pids[0]
        )),
        "{t}"
    );
    assert_eq!(last_line(&t), "[exit 0]");
}

#[test]
fn bash_output_with_invalid_utf8_is_valid_json() {
    let sb = Sandbox::new();
    let run = tool_raw(&sb, "bash", r#"{"command": "printf 'a\\377\\376b\\n'"}"#);
    assert_eq!(run.code, 0);
    assert!(std::str::from_utf8(&run.stdout).is_ok());
    let t = text(&run.json());
    // The bytes stay visible as escapes, not as U+FFFD.
    assert!(t.starts_with("a\\xff\\xfeb\n"), "{t:?}");
    assert!(t.contains("[exit 0]"), "{t:?}");
}

/// Any tool's result is bytes from Lua: bytes that are not UTF-8 reach the model as `\xNN`
/// escapes with the sanitizer's marker, never as U+FFFD.
#[test]
fn a_lua_tool_returning_invalid_utf8_gets_escapes_and_the_marker() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.user_extensions().join("raw.lua"),
        r#"return function(api)
  api.register("tool", { name = "raw_bytes", description = "raw", parameters = {},
    execute = function() return { content = { { type = "text", text = "ok \xff\xfe end" } } } end })
end"#,
    )
    .unwrap();
    let run = tool_raw(&sb, "raw_bytes", "{}");
    assert_eq!(run.code, 0);
    let t = text(&run.json());
    assert!(t.starts_with("ok \\xff\\xfe end"), "{t:?}");
    assert!(
        t.contains("[fen: output sanitized: 2 bytes escaped]"),
        "{t:?}"
    );
    assert!(!t.contains('\u{FFFD}'), "{t:?}");
}

#[test]
fn bash_emits_live_output_as_tool_update_events() {
    let sb = Sandbox::new();
    let log = sb.root().join("updates.log");
    std::fs::write(
        sb.user_extensions().join("spy.lua"),
        r#"return function(api)
  api.on("tool-update", function(e)
    local f = assert(io.open(os.getenv("SPY_LOG"), "a"))
    f:write(e.tool_name, "|", e.text, "\n")
    f:close()
  end)
end
"#,
    )
    .unwrap();
    let run = tool_env(
        &sb,
        "bash",
        &json!({"command": "echo first; sleep 0.5; echo second"}),
        &[("SPY_LOG", log.to_str().unwrap())],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(text(&run.json()), "first\nsecond\n[exit 0]");
    let updates = std::fs::read_to_string(&log).expect("tool-update events were emitted");
    assert!(updates.starts_with("bash|first"), "{updates:?}");
    assert!(updates.contains("second"), "{updates:?}");
    assert!(
        !updates.contains("[exit"),
        "live output is the command's, not the result: {updates:?}"
    );
}

#[test]
fn ctrl_c_cancels_a_running_command() {
    let sb = Sandbox::new();
    let marker = sb.root().join("started");
    let args = json!({"command": format!("touch {}; sleep 100; echo never", marker.display())})
        .to_string();
    let mut cmd = fen_command(&sb, &["tool", "bash", &args]);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !marker.exists() {
        assert!(start.elapsed() < HANG_BOUND, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: plain kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    while child.try_wait().unwrap().is_none() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Ctrl-C did not stop the tool"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).expect("a result is still printed");
    assert_eq!(v["is_error"], true, "{v}");
    let t = text(&v);
    assert!(t.contains("[cancelled]") && !t.contains("never"), "{t}");
}

/// Issue 11.4: escaped bytes came back with no marker saying output was sanitized.
#[test]
fn bash_escaped_output_without_a_marker() {
    let sb = Sandbox::new();
    let (t, d) = ok(&sb, "bash", json!({"command": "printf 'a\\0b\\377c\\1d'"}));
    assert!(t.contains("a\\x00b\\xffc\\x01d"), "{t}");
    assert!(t.contains("[fen: output sanitized: 3 bytes escaped"), "{t}");
    assert_eq!(d["escaped_bytes"], 3);
    // Clean output carries no such marker.
    let (t, _) = ok(&sb, "bash", json!({"command": "echo clean"}));
    assert!(!t.contains("sanitized"), "{t}");
}

/// Issue 11.6: spill files under `$XDG_STATE_HOME/fen/tool-output/` were never pruned. At
/// start-up the old ones go, then the oldest until the total fits settings.json `tool_output`.
#[test]
fn bash_spill_files_are_never_pruned() {
    let sb = Sandbox::new();
    let dir = sb.state().join("fen/tool-output");
    std::fs::create_dir_all(&dir).unwrap();
    let age = |p: &std::path::Path, secs: u64| {
        let t = std::time::SystemTime::now() - Duration::from_secs(secs);
        std::fs::File::options()
            .write(true)
            .open(p)
            .unwrap()
            .set_modified(t)
            .unwrap();
    };
    let old = dir.join("bash-old.log");
    std::fs::write(&old, b"old").unwrap();
    age(&old, 40 * 86_400);
    let big: Vec<_> = (0..3)
        .map(|i| {
            let p = dir.join(format!("bash-big-{i}.log"));
            std::fs::write(&p, vec![b'x'; 600 * 1024]).unwrap();
            age(&p, 3600 * (5 - i));
            p
        })
        .collect();
    // Default limits: only the 40-day-old file goes.
    let (t, _) = ok(&sb, "bash", json!({"command": "echo hi"}));
    assert!(t.contains("hi"), "{t}");
    assert!(!old.exists(), "a 40-day-old spill file survived start-up");
    assert!(big.iter().all(|p| p.exists()));
    // A 1 MB budget keeps only the newest of the three 600 KB files.
    sb.write(
        "config/fen/settings.json",
        r#"{"tool_output": {"max_age_days": 30, "max_mb": 1}}"#,
    );
    ok(&sb, "bash", json!({"command": "true"}));
    assert!(!big[0].exists() && !big[1].exists(), "oldest files kept");
    assert!(big[2].exists(), "the newest file went too");
}
