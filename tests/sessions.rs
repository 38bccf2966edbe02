//! Sessions through the CLI: every run is saved as JSONL, continued, resumed, forked, guarded
//! by a lease, survives kill -9, and can be listed, shown, checked and repaired.

use crate::common;
use common::Sandbox;
use serde_json::{json, Value};
use std::process::{Command, Stdio};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn session_files(s: &Sandbox) -> Vec<std::path::PathBuf> {
    let root = s.state().join("fen/sessions");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "jsonl")
                && !p.to_string_lossy().contains(".repaired.")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn records(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        // The checkpoints companion's records (docs/checkpoints.md) are counted there.
        .filter(|v| v["type"] != "checkpoint")
        .collect()
}

fn script(s: &Sandbox, turns: Value) -> String {
    s.write("script.json", &turns.to_string())
        .to_string_lossy()
        .into_owned()
}

#[test]
fn a_run_is_saved_and_continue_appends_to_the_same_session() {
    let s = Sandbox::new();
    let sc = script(&s, json!([{"text": "one"}, {"text": "two"}]));
    let out = s.fen(&["-p", "first", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let files = session_files(&s);
    assert_eq!(files.len(), 1);
    let recs = records(&files[0]);
    assert_eq!(recs[0]["type"], "session");
    assert_eq!(recs[0]["cwd"], s.cwd().to_string_lossy().as_ref());
    assert_eq!(recs[1]["message"]["content"], "first");
    assert_eq!(recs[2]["message"]["role"], "assistant");
    assert_eq!(recs[2]["parent_id"], recs[1]["id"]);

    // The mock plays turn 2 only if the history (one assistant message) was loaded.
    let out = s.fen(&["-c", "-p", "second", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "two\n");
    assert_eq!(session_files(&s).len(), 1);
    assert_eq!(records(&files[0]).len(), 5);

    let listed = s.fen_json(&["session", "list", "--json"]);
    assert_eq!(listed[0]["message_count"], 4);
    assert_eq!(listed[0]["title"], "first");
    let shown = text(
        &s.fen(&[
            "session",
            "show",
            listed[0]["id"].as_str().unwrap(),
            "--tail",
            "2",
        ])
        .stdout,
    );
    assert!(
        shown.contains("you> second") && shown.contains("ai> two") && !shown.contains("you> first"),
        "{shown}"
    );
}

#[test]
fn resume_by_prefix_no_session_and_unknown_ids() {
    let s = Sandbox::new();
    let sc = script(&s, json!([{"text": "one"}, {"text": "two"}]));
    assert!(s.fen(&["-p", "a", "--mock-script", &sc]).status.success());
    let id = records(&session_files(&s)[0])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = s.fen(&["--resume", &id[..8], "-p", "b", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "two\n");
    let out = s.fen(&["--no-session", "-p", "c", "--mock-script", &sc]);
    assert!(out.status.success());
    assert_eq!(session_files(&s).len(), 1, "--no-session wrote a file");
    let out = s.fen(&["--resume", "zzzz", "-p", "d", "--mock-script", &sc]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no session matches 'zzzz'"));
}

#[test]
fn a_second_writer_is_refused_and_fork_continues_in_a_copy() {
    let s = Sandbox::new();
    let sc = script(
        &s,
        json!([{"text": "one"}, {"text": "two"}, {"text": "three"}]),
    );
    assert!(s.fen(&["-p", "a", "--mock-script", &sc]).status.success());
    // A REPL continuing the session holds its lease while it waits for input.
    let mut holder = Command::new(env!("CARGO_BIN_EXE_fen"))
        .args(["-c", "--mock-script", &sc])
        .current_dir(s.cwd())
        .env("HOME", s.root())
        .env("XDG_CONFIG_HOME", s.config())
        .env("XDG_STATE_HOME", s.state())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lock = session_files(&s)[0].with_extension("jsonl.lock");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !lock.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the REPL never took the lease"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = s.fen(&["-c", "-p", "b", "--mock-script", &sc]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("session in use by pid {}", holder.id())) && err.contains("--fork"),
        "{err}"
    );
    let out = s.fen(&["-c", "--fork", "-p", "b", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "two\n");
    let files = session_files(&s);
    assert_eq!(files.len(), 2);
    drop(holder.stdin.take());
    let _ = holder.wait();
    // The fork holds the history and the new turn; the original is unchanged.
    let sizes: Vec<usize> = files.iter().map(|f| records(f).len()).collect();
    assert!(sizes.contains(&3) && sizes.contains(&5), "{sizes:?}");
}

#[test]
fn kill_9_mid_turn_loses_nothing_written_and_the_session_resumes() {
    let s = Sandbox::new();
    let marker = s.root().join("started");
    let sc = script(
        &s,
        json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": format!("touch {}; sleep 60", marker.display())}}]},
            {"text": "after resume"}
        ]),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_fen"))
        .args(["-p", "long task", "--mock-script", &sc])
        .current_dir(s.cwd())
        .env("HOME", s.root())
        .env("XDG_CONFIG_HOME", s.config())
        .env("XDG_STATE_HOME", s.state())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !marker.exists() {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let file = session_files(&s)[0].clone();
    let recs = records(&file);
    assert_eq!(recs.len(), 3, "header, user, assistant with the tool call");
    let doctor = s.fen(&["session", "doctor", file.to_str().unwrap(), "--json"]);
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    assert!(report["issues"]
        .as_array()
        .unwrap()
        .iter()
        .any(|i| i["code"] == "missing_tool_result"));
    // Resuming repairs the context (a synthetic result) and goes on; the dead lease is recovered.
    let out = s.fen(&["-c", "-p", "go on", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "after resume\n");
}

#[test]
fn doctor_reports_each_problem_and_repair_writes_a_healthy_copy() {
    let s = Sandbox::new();
    let header = json!({"type": "session", "version": 2, "id": "x", "cwd": "/", "created": "2026-01-01T00:00:00Z"});
    let user = json!({"type": "message", "id": "1", "message": {"role": "user", "content": "hi", "timestamp": 1}});
    let call = json!({"type": "message", "id": "2", "parent_id": "1", "message": {"role": "assistant", "timestamp": 2, "stop_reason": "tool-use",
        "content": [{"type": "tool-call", "id": "c1", "name": "ls", "arguments": {}}, {"type": "tool-call", "id": "c2", "name": "ls", "arguments": {}}]}});
    let dirty = json!({"type": "message", "id": "3", "parent_id": "2", "message": {"role": "tool-result", "tool_call_id": "c1", "tool_name": "ls",
        "content": [{"type": "text", "text": "bad\u{0}byte"}], "is_error": false, "timestamp": 3}});
    let orphan = json!({"type": "message", "id": "4", "parent_id": "3", "message": {"role": "tool-result", "tool_call_id": "nope", "tool_name": "ls",
        "content": [{"type": "text", "text": "fine"}], "is_error": false, "timestamp": 4}});
    let lines = [
        header.to_string(),
        user.to_string(),
        call.to_string(),
        dirty.to_string(),
        "{not json".to_string(),
        orphan.to_string(),
    ];
    let path = s.write("broken.jsonl", &(lines.join("\n") + "\n{\"type\":\"mess"));
    let out = s.fen(&["session", "doctor", path.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes: Vec<&str> = report["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["code"].as_str().unwrap())
        .collect();
    for code in [
        "malformed_json",
        "torn_line",
        "missing_tool_result",
        "orphan_tool_result",
        "unsanitized_tool_result",
    ] {
        assert!(codes.contains(&code), "{code} not in {codes:?}");
    }
    let before = std::fs::read(&path).unwrap();
    let out = s.fen(&["session", "doctor", path.to_str().unwrap(), "--repair"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the original must not change"
    );
    let repaired = s.root().join("broken.repaired.jsonl");
    let out = s.fen(&["session", "doctor", repaired.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stdout));
}

#[test]
fn session_dir_flag_and_env_choose_where_files_go() {
    let s = Sandbox::new();
    let sc = script(&s, json!([{"text": "one"}]));
    let dir = s.root().join("elsewhere");
    assert!(s
        .fen(&[
            "--session-dir",
            dir.to_str().unwrap(),
            "-p",
            "a",
            "--mock-script",
            &sc
        ])
        .status
        .success());
    let n = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "jsonl")
        })
        .count();
    assert_eq!(n, 1);
    let out = s.fen_stdin(
        &["session", "list", "--json"],
        "",
        &[("FEN_SESSION_DIR", dir.to_str().unwrap())],
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
}

#[test]
fn session_commands_switch_list_and_resume_and_extension_state_persists() {
    let s = Sandbox::new();
    s.write(
        "config/fen/extensions/memo.lua",
        r#"return function(api)
  api.register("command", { name = "remember", handler = function(args)
    api.session.append_state({ note = args })
    return "ok"
  end })
  api.register("command", { name = "recall", handler = function()
    local st = api.session.latest_state()
    return "recalled " .. tostring(st and st.note)
  end })
end"#,
    );
    let sc = script(
        &s,
        json!([{"text": "one"}, {"text": "two"}, {"text": "three"}]),
    );
    let run = |input: &str, args: &[&str]| -> String {
        let mut all = args.to_vec();
        all.extend(["--mock-script", sc.as_str()]);
        text(&s.fen_stdin(&all, input, &[]).stdout)
    };
    let out = run(
        "first task\n/remember blue\n/new\n/sessions\nsecond task\n/sessions\n",
        &[],
    );
    assert!(
        out.contains("ai> one") && out.contains("new session started"),
        "{out}"
    );
    // After /new the conversation is empty again: the mock plays turn 1 for the second task.
    assert_eq!(out.matches("ai> one").count(), 2, "{out}");
    assert!(
        out.contains("second task") && out.contains("first task"),
        "{out}"
    );
    assert_eq!(session_files(&s).len(), 2);
    // Resume the first session by id prefix; its extension state comes back.
    let first = session_files(&s)
        .into_iter()
        .find(|f| std::fs::read_to_string(f).unwrap().contains("first task"))
        .unwrap();
    let id = records(&first)[0]["id"].as_str().unwrap().to_string();
    let out = run(&format!("/resume {}\n/recall\nnext\n", &id[..18]), &[]);
    assert!(
        out.contains("resumed") && out.contains("(2 messages)"),
        "{out}"
    );
    assert!(out.contains("recalled blue"), "{out}");
    assert!(out.contains("ai> two"), "{out}");
}

/// Issue 16, images in read: an image read by a tool is stored once in the session file (the
/// tool-result message), not repeated, and a continued session sends it again from there.
#[test]
fn an_image_block_is_stored_once_and_resumes() {
    use base64::Engine as _;
    let s = Sandbox::new();
    let img = image::RgbaImage::from_pixel(1, 1, image::Rgba([0, 0, 255, 255]));
    let mut png = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgba8(img)
        .write_to(&mut png, image::ImageFormat::Png)
        .unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(png.get_ref());
    std::fs::write(s.cwd().join("pixel.dat"), png.get_ref()).unwrap();
    // Turn 3 counts the image blocks the resumed context hands the provider.
    let sc = s
        .write(
            "script.lua",
            r#"return function(n, ctx)
  if n == 1 then return { tool_calls = { { name = "read", arguments = { path = "pixel.dat" } } } } end
  if n == 2 then return { text = "blue" } end
  local found = 0
  for _, m in ipairs(ctx.messages) do
    if type(m.content) == "table" then
      for _, b in ipairs(m.content) do
        if b.type == "image" and b.mime_type == "image/png" and #(b.data or "") > 20 then found = found + 1 end
      end
    end
  end
  return { text = "images: " .. found }
end"#,
        )
        .to_string_lossy()
        .into_owned();
    let out = s.fen(&["-p", "look", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let files = session_files(&s);
    assert_eq!(files.len(), 1);
    let raw = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(raw.matches(&b64).count(), 1, "{raw}");
    let result = records(&files[0])
        .into_iter()
        .find(|r| r["message"]["role"] == "tool-result")
        .expect("a tool result");
    assert_eq!(
        result["message"]["content"][1],
        json!({"type": "image", "data": b64, "mime_type": "image/png"})
    );
    // Continued: the third turn is played, and the file still holds the image once.
    let out = s.fen(&["-p", "again", "-c", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "images: 1\n");
    let raw = std::fs::read_to_string(&files[0]).unwrap();
    assert_eq!(raw.matches(&b64).count(), 1);
}

/// Issue 11.12: `session list --all` had no directory column, its ids did not work from another
/// directory, `doctor` took only a path and its error repeated the OS message.
#[test]
fn session_list_all_has_no_directory_column_and_ids_work_only_here() {
    let s = Sandbox::new();
    let sc = script(&s, json!([{"text": "one"}]));
    let out = s.fen(&["-p", "first", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = records(&session_files(&s)[0])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // From another directory.
    let elsewhere = s.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let fen_in = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_fen"))
            .args(args)
            .current_dir(&elsewhere)
            .env("HOME", s.root())
            .env("XDG_CONFIG_HOME", s.config())
            .env("XDG_STATE_HOME", s.state())
            .env_remove("FEN_SESSION_DIR")
            .output()
            .unwrap()
    };
    let out = fen_in(&["session", "list", "--all"]);
    let listing = text(&out.stdout);
    assert!(listing.contains(&id[..13]), "{listing}");
    assert!(
        listing.contains(s.cwd().to_string_lossy().as_ref()),
        "{listing}"
    );
    let out = fen_in(&["session", "show", &id[..13]]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("you> first"),
        "{}",
        text(&out.stdout)
    );
    let out = fen_in(&["session", "doctor", &id[..13]]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("healthy"),
        "{}",
        text(&out.stdout)
    );
    let out = fen_in(&["session", "doctor", "/nonexistent/x.jsonl"]);
    let err = text(&out.stderr);
    assert_eq!(err.matches("No such file").count(), 1, "{err}");
}

/// Issue 11.13: `/resume` printed "resumed ? (N messages)" without the id.
#[test]
fn resume_prints_a_question_mark_instead_of_the_id() {
    let s = Sandbox::new();
    let sc = script(&s, json!([{"text": "one"}, {"text": "two"}]));
    let out = s.fen(&["-p", "first", "--mock-script", &sc]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let id = records(&session_files(&s)[0])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let out = s.fen_stdin(&["--mock-script", &sc], "/resume\n", &[]);
    let shown = text(&out.stdout);
    assert!(
        shown.contains(&format!("resumed {id} (2 messages)")),
        "{shown}"
    );
}
