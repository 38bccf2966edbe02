//! The companions through the real binary and the mock provider: todo (limits, replay across
//! --continue, /reload and /compact), skills, background jobs, webfetch and completions.

use crate::common;
use common::Sandbox;
use serde_json::{json, Value};

// ---------------------------------------------------------------- todo

/// A mock that calls todo_write with $MOCK_TODO on a user line starting with "plan", writes
/// summaries for the compactor, and otherwise answers with padding (so /compact has work).
const TODO_SCRIPT: &str = r#"local native = require("fen.native")
return function(n, ctx)
  if ctx.system_prompt and ctx.system_prompt:find("You compact", 1, true) then
    return { text = "SUMMARY" }
  end
  local last = ctx.messages[#ctx.messages]
  if last.role == "user" and type(last.content) == "string" and last.content:find("^plan") then
    return { tool_calls = { { name = "todo_write", arguments = { items = native.json.decode(os.getenv("MOCK_TODO")) } } } }
  end
  return { text = "ok " .. string.rep("x", 400) }
end"#;

fn todo_items(spec: &[(&str, &str)]) -> String {
    let items: Vec<Value> = spec
        .iter()
        .map(|(text, status)| json!({"text": text, "status": status}))
        .collect();
    serde_json::to_string(&items).unwrap()
}

fn todo_repl(s: &Sandbox, input: &str, items: &str, args: &[&str]) -> String {
    let script = s.write("todo.lua", TODO_SCRIPT);
    let mut all = vec!["--mock-script", script.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = s.fen_stdin(&all, input, &[("MOCK_TODO", items)]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn tool_json(s: &Sandbox, name: &str, args: &Value) -> Value {
    let out = s.fen(&["tool", name, &args.to_string()]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn result_text(v: &Value) -> String {
    v["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

#[test]
fn todo_write_enforces_its_limits() {
    let s = Sandbox::new();
    let many: Vec<Value> = (0..51)
        .map(|i| json!({"text": format!("t{i}"), "status": "pending"}))
        .collect();
    let r = tool_json(&s, "todo_write", &json!({ "items": many }));
    assert_eq!(r["is_error"], true);
    assert_eq!(
        result_text(&r),
        "error: items must contain at most 50 entries"
    );
    let r = tool_json(
        &s,
        "todo_write",
        &json!({"items": [{"text": "a", "status": "in_progress"}, {"text": "b", "status": "in_progress"}]}),
    );
    assert_eq!(r["is_error"], true);
    assert!(result_text(&r).contains("only one todo item may be in_progress"));
    // 240 bytes after trimming pass, 241 do not.
    let ok = format!("  {}  ", "é".repeat(120));
    let r = tool_json(
        &s,
        "todo_write",
        &json!({"items": [{"text": ok, "status": "pending"}]}),
    );
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(r["details"]["version"], 1);
    assert_eq!(r["details"]["items"][0]["text"], "é".repeat(120));
    let r = tool_json(
        &s,
        "todo_write",
        &json!({"items": [{"text": format!("{}x", "é".repeat(120)), "status": "pending"}]}),
    );
    assert_eq!(r["is_error"], true);
    assert!(result_text(&r).contains("at most 240 bytes"), "{r}");
    let r = tool_json(
        &s,
        "todo_write",
        &json!({"items": [{"text": "a", "status": "done"}]}),
    );
    assert_eq!(r["is_error"], true);
}

#[test]
fn a_rejected_list_leaves_the_previous_one_and_the_json_result_carries_it() {
    let s = Sandbox::new();
    let script = s.write(
        "s.json",
        &json!([
            {"tool_calls": [{"name": "todo_write", "arguments": {"items": [
                {"text": "a", "status": "completed"}, {"text": "b", "status": "in_progress"},
                {"text": "c", "status": "pending"}]}}]},
            {"tool_calls": [{"name": "todo_write", "arguments": {"items": [
                {"text": "x", "status": "in_progress"}, {"text": "y", "status": "in_progress"}]}}]},
            {"text": "done"}
        ])
        .to_string(),
    );
    let out = s.fen(&[
        "--mock-script",
        script.to_str().unwrap(),
        "--mode",
        "json",
        "go",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "result");
    assert_eq!(last["todos"]["version"], 1, "{last}");
    assert_eq!(last["todos"]["items"][1]["text"], "b");
    assert_eq!(last["todos"]["items"].as_array().unwrap().len(), 3);
    // The status item and the panel are registered.
    let statuses = s.fen_json(&["list", "statuses", "--json"]);
    assert_eq!(common::find(&statuses, "name", "todo").len(), 1);
    let panels = s.fen_json(&["list", "panels", "--json"]);
    assert_eq!(common::find(&panels, "name", "todos").len(), 1);
}

#[test]
fn the_status_item_counts_and_hides_when_empty() {
    let s = Sandbox::new();
    std::fs::write(
        s.user_extensions().join("probe.lua"),
        r#"return function(api)
  api.register("command", { name = "probe", handler = function()
    return "status=" .. tostring(require("fen.lib.todos").status_text())
  end })
end"#,
    )
    .unwrap();
    let items = todo_items(&[("a", "completed"), ("b", "in_progress"), ("c", "pending")]);
    let out = todo_repl(&s, "/probe\nplan it\n/probe\n", &items, &[]);
    assert!(out.contains("status=nil"), "{out}");
    assert!(out.contains("status=todo:1/3"), "{out}");
    let out = todo_repl(&s, "plan clear\n/probe\n", "[]", &["-c"]);
    assert!(out.contains("status=nil"), "{out}");
}

#[test]
fn the_list_is_replayed_on_continue_and_survives_reload() {
    let s = Sandbox::new();
    let items = todo_items(&[("first", "completed"), ("second", "pending")]);
    let out = todo_repl(&s, "plan it\n", &items, &[]);
    assert!(out.contains("ai> "), "{out}");
    // A new process: no model call is needed to show it (the script would answer "ok ...").
    let out = todo_repl(&s, "/todos show\n/reload\n/todos\n", "[]", &["-c"]);
    let shown = out.matches("[x] first\n[ ] second").count();
    assert_eq!(shown, 2, "{out}");
    assert!(!out.contains("ok xxx"), "{out}");
}

fn compaction_summary(s: &Sandbox) -> String {
    let root = s.state().join("fen/sessions");
    let mut summary = String::new();
    for dir in std::fs::read_dir(root).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap_or_default();
            for line in text.lines() {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    if v["type"] == "compaction" {
                        summary = v["summary"].as_str().unwrap_or("").to_string();
                    }
                }
            }
        }
    }
    summary
}

fn chatter(n: usize) -> String {
    (1..=n)
        .map(|i| format!("message {i} {}\n", "y".repeat(300)))
        .collect()
}

#[test]
fn compaction_keeps_an_open_list_verbatim_and_drops_a_finished_one() {
    let s = Sandbox::new();
    let items = todo_items(&[
        ("done one", "completed"),
        ("next", "in_progress"),
        ("later", "pending"),
    ]);
    let input = format!("plan it\n{}/compact\n/todos\n", chatter(6));
    let out = todo_repl(&s, &input, &items, &[]);
    assert!(out.contains("compacted "), "{out}");
    let summary = compaction_summary(&s);
    assert!(
        summary.contains("[x] done one\n[~] next\n[ ] later"),
        "{summary}"
    );
    // Resumed after the compaction (the todo_write call was summarised away): still there.
    let out = todo_repl(&s, "/todos\n", &items, &["-c"]);
    assert!(out.contains("[~] next\n[ ] later"), "{out}");

    let s = Sandbox::new();
    let items = todo_items(&[("a", "completed"), ("b", "completed")]);
    let input = format!("plan it\n{}/compact\n", chatter(6));
    let out = todo_repl(&s, &input, &items, &[]);
    assert!(out.contains("compacted "), "{out}");
    let summary = compaction_summary(&s);
    assert!(summary.starts_with("SUMMARY"), "{summary}");
    assert!(!summary.contains("[x]"), "{summary}");
}

// ---------------------------------------------------------------- skills

fn skill(s: &Sandbox, root: &str, name: &str, front: &str, body: &str) -> std::path::PathBuf {
    s.write(
        &format!("{root}/{name}/SKILL.md"),
        &format!("---\n{front}\n---\n{body}"),
    )
}

/// A mock that reports what the system prompt offers: the `<available_skills>` block's size,
/// its skill names and its omission note; and the last user message's first line.
const PROMPT_PROBE: &str = r#"return function(n, ctx)
  local sp = ctx.system_prompt or ""
  local block = sp:match("Skills hold instructions.-</available_skills>") or ""
  local names = {}
  for name in block:gmatch("<name>(.-)</name>") do names[#names + 1] = name end
  local omitted = block:match("<!%-%- (%d+) more skill") or "0"
  local last = ctx.messages[#ctx.messages]
  local first = type(last.content) == "string" and last.content:match("^[^\n]*") or "?"
  local args = type(last.content) == "string" and last.content:match("Arguments: ([^\n]*)") or ""
  return { text = string.format("block=%d names=%s omitted=%s first=%s args=%s", #block, table.concat(names, ","), omitted, first, args) }
end"#;

fn probe(s: &Sandbox, input: &str) -> String {
    let script = s.write("probe.lua", PROMPT_PROBE);
    let out = s.fen_stdin(&["--mock-script", script.to_str().unwrap()], input, &[]);
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn skills_precedence_validation_and_listing() {
    let s = Sandbox::new();
    // The sandbox's work dir is a repository root; the project copy wins over the user's.
    std::fs::create_dir_all(s.cwd().join(".git")).unwrap();
    s.write(
        "work/.fen/skills/pdf/SKILL.md",
        "\u{feff}---\r\nname: pdf\r\ndescription: Fill PDF forms.\r\n---\r\n# PDF\r\nUse pdftk.\r\n",
    );
    skill(
        &s,
        ".claude/skills",
        "pdf",
        "name: pdf\ndescription: other",
        "x\n",
    );
    skill(&s, ".claude/skills", "nodesc", "name: nodesc", "x\n");
    skill(
        &s,
        ".agents/skills",
        "wrong",
        "name: other\ndescription: d",
        "x\n",
    );
    skill(
        &s,
        ".codex/skills",
        "Caps",
        "name: Caps\ndescription: d",
        "x\n",
    );
    skill(
        &s,
        "config/fen/skills",
        "deploy",
        "name: deploy\ndescription: Ship it.\ndisable-model-invocation: true",
        "Deploy now.\n",
    );
    let rows = s.fen_json(&["list", "skills", "--json"]);
    let pdf = common::find(&rows, "name", "pdf");
    assert_eq!(pdf.len(), 2, "{rows}");
    assert_eq!(pdf[0]["status"], "ok");
    assert!(pdf[0]["location"]
        .as_str()
        .unwrap()
        .contains("/work/.fen/skills/pdf"));
    assert_eq!(pdf[1]["status"], "shadowed");
    assert_eq!(pdf[1]["shadowed_by"], pdf[0]["location"]);
    let invalid: Vec<&Value> = rows
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["status"] == "invalid")
        .collect();
    assert_eq!(invalid.len(), 3, "{rows}");
    let text = String::from_utf8_lossy(&s.fen(&["list", "skills"]).stdout).into_owned();
    assert!(
        text.contains("nodesc/SKILL.md: front matter has no `description`"),
        "{text}"
    );
    assert!(text.contains("differs from the directory name"), "{text}");
    assert!(text.contains("[shadowed by "), "{text}");

    // The tool: header, then the body byte for byte (CRLF kept).
    let r = tool_json(&s, "skill", &json!({"name": "pdf"}));
    let dir = s.cwd().join(".fen/skills/pdf");
    assert_eq!(
        result_text(&r),
        format!(
            "Skill: pdf\nDirectory: {}\n\n# PDF\r\nUse pdftk.\r\n",
            dir.display()
        )
    );
    let r = tool_json(&s, "skill", &json!({"name": "deploy"}));
    assert_eq!(r["is_error"], true);
    assert!(result_text(&r).contains("/skill:deploy"), "{r}");
    let r = tool_json(&s, "skill", &json!({"name": "nope"}));
    assert_eq!(r["is_error"], true);

    // The prompt lists the model-invocable winners; /skills shows the warnings; /skill:NAME
    // runs a turn whose user message is the skill.
    let out = probe(&s, "hello\n/skills\n/skill:deploy to prod\n");
    assert!(out.contains("names=pdf omitted=0"), "{out}");
    assert!(!out.contains("names=pdf,deploy"), "{out}");
    assert!(out.contains("warning: skipped "), "{out}");
    assert!(out.contains("first=Skill: deploy args=to prod"), "{out}");
}

#[test]
fn three_hundred_long_skills_fit_the_budget_and_the_rest_are_counted() {
    let s = Sandbox::new();
    for i in 0..300 {
        let desc = format!("skill {i} {}", "d".repeat(990));
        skill(
            &s,
            ".claude/skills",
            &format!("s{i:03}"),
            &format!("name: s{i:03}\ndescription: {desc}"),
            "body\n",
        );
    }
    let out = probe(&s, "hello\n/skills\n");
    let line = out
        .lines()
        .find(|l| l.contains("block="))
        .unwrap_or_else(|| panic!("{out}"));
    let size: usize = line["ai> block=".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(size <= 8000, "{line}");
    let names = line
        .split("names=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let listed = names.split(',').filter(|n| !n.is_empty()).count();
    let omitted: usize = line
        .split("omitted=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(listed > 0 && omitted > 0, "{line}");
    assert_eq!(listed + omitted, 300, "{line}");
    assert!(
        out.contains(&format!(
            "{omitted} skill(s) omitted from the system prompt"
        )),
        "{out}"
    );
}

// ---------------------------------------------------------------- background jobs

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Every tool-result event of a `--mode json` run.
fn tool_results(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool-result")
        .map(|e| e["result"].clone())
        .collect()
}

fn alive(pid: i64) -> bool {
    fen::native::process::proc_stat(pid as i32).is_some_and(|(s, _)| s != 'Z' && s != 'X')
}

#[test]
fn a_background_server_answers_later_calls_and_job_kill_stops_it() {
    let s = Sandbox::new();
    let port = free_port();
    // A script file: inline interpreter code (`python3 -c`) is opaque to the policy and asks
    // in every mode.
    s.write(
        "work/fetch.py",
        &format!(
            "import urllib.request\nprint(urllib.request.urlopen('http://127.0.0.1:{port}/').status)\n"
        ),
    );
    let fetch = "for i in $(seq 50); do python3 fetch.py 2>/dev/null && break; sleep 0.1; done";
    let script = s.write(
        "jobs.json",
        &json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": format!("exec python3 -m http.server {port} --bind 127.0.0.1"), "background": true}}]},
            {"tool_calls": [{"name": "bash", "arguments": {"command": fetch}}]},
            {"tool_calls": [{"name": "job_output", "arguments": {"id": "bg1", "wait_s": 5}}]},
            {"tool_calls": [{"name": "job_kill", "arguments": {"id": "bg1"}}]},
            {"tool_calls": [{"name": "job_output", "arguments": {"id": "bg1"}}]},
            {"text": "done"}
        ])
        .to_string(),
    );
    let out = s.fen(&[
        "--mock-script",
        script.to_str().unwrap(),
        "--mode",
        "json",
        "go",
    ]);
    let results = tool_results(&out.stdout);
    assert_eq!(results.len(), 5, "{}", String::from_utf8_lossy(&out.stdout));
    let started: Value =
        serde_json::from_str(result_text(&results[0]).lines().next().unwrap()).unwrap();
    assert_eq!(started["job"], "bg1");
    let log = started["log"].as_str().unwrap().to_string();
    assert!(
        log.starts_with(s.state().join("fen/jobs").to_str().unwrap()),
        "{log}"
    );
    let pid = started["pid"].as_i64().unwrap();
    assert!(
        result_text(&results[1]).starts_with("200"),
        "{}",
        result_text(&results[1])
    );
    let output = result_text(&results[2]);
    assert!(output.contains("Serving HTTP"), "{output}");
    assert!(output.contains("\"GET / HTTP/1.1\" 200"), "{output}");
    assert!(output.ends_with("[job bg1 running]"), "{output}");
    assert_eq!(result_text(&results[3]), "job bg1 stopped (signal 15)");
    assert!(result_text(&results[4]).ends_with("[job bg1 signal 15]"));
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port still open"
    );
    assert!(!alive(pid), "the server survived job_kill");
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains("Serving HTTP"));
}

#[test]
fn a_job_exit_is_announced_once_before_the_next_model_call() {
    let s = Sandbox::new();
    let script = s.write(
        "announce.lua",
        r#"return function(n, ctx)
  if n == 1 then return { tool_calls = { { name = "bash", arguments = { command = "echo hi; exit 3", background = true } } } } end
  if n == 2 then return { tool_calls = { { name = "bash", arguments = { command = "sleep 0.5" } } } } end
  if n == 3 then return { tool_calls = { { name = "bash", arguments = { command = "true" } } } } end
  local seen = 0
  for _, m in ipairs(ctx.messages) do
    if m.role == "user" and type(m.content) == "string" and m.content:find("background job bg1", 1, true) then
      seen = seen + 1
      if m.content:find("exited 3", 1, true) then seen = seen + 100 end
    end
  end
  return { text = "announced=" .. seen }
end"#,
    );
    let out = s.fen(&["--mock-script", script.to_str().unwrap(), "-p", "go"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("announced=101"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Starts `fen --mode json` with a script that starts 17 `sleep` jobs then waits 60 s; returns
/// the child and the pids of the jobs that started (read from its output).
fn fen_with_jobs(
    s: &Sandbox,
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStdout>,
    Vec<i64>,
) {
    use std::io::BufRead;
    let calls: Vec<Value> = (0..17)
        .map(|_| json!({"name": "bash", "arguments": {"command": "sh -c 'sleep 999 & wait'", "background": true}}))
        .collect();
    let script = s.write(
        "many.json",
        &json!([{"tool_calls": calls}, {"text": "waiting", "delay_ms": 60000}]).to_string(),
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_fen"))
        .args([
            "--mock-script",
            script.to_str().unwrap(),
            "--mode",
            "json",
            "go",
        ])
        .current_dir(s.cwd())
        .env("HOME", s.root())
        .env("XDG_CONFIG_HOME", s.config())
        .env("XDG_STATE_HOME", s.state())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut reader = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut pids = Vec::new();
    let mut errors = Vec::new();
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 {
        if let Ok(e) = serde_json::from_str::<Value>(&line) {
            if e["type"] == "tool-result" {
                match e["result"]["details"]["pid"].as_i64() {
                    Some(pid) => pids.push(pid),
                    None => errors.push(result_text(&e["result"])),
                }
            }
            if e["type"] == "llm-start" && pids.len() + errors.len() == 17 {
                break;
            }
        }
        line.clear();
    }
    assert_eq!(pids.len(), 16, "{errors:?}");
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0].contains("16 jobs are already running"),
        "{errors:?}"
    );
    assert!(pids.iter().all(|&p| alive(p)));
    (child, reader, pids)
}

fn wait_gone(pids: &[i64]) -> bool {
    for _ in 0..100 {
        if pids.iter().all(|&p| !alive(p)) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

#[test]
fn no_job_outlives_fen_ended_by_ctrl_c_or_sigterm() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    for sig in [Signal::SIGINT, Signal::SIGTERM] {
        let s = Sandbox::new();
        let (mut child, _reader, pids) = fen_with_jobs(&s);
        kill(Pid::from_raw(child.id() as i32), sig).unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "{sig}: {status:?}");
        assert!(wait_gone(&pids), "{sig}: jobs survived fen");
    }
}

#[test]
fn no_job_outlives_the_end_of_a_print_run() {
    let s = Sandbox::new();
    let script = s.write(
        "one.json",
        &json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 999", "background": true}}]},
            {"text": "bye"}
        ])
        .to_string(),
    );
    let out = s.fen(&[
        "--mock-script",
        script.to_str().unwrap(),
        "--mode",
        "json",
        "go",
    ]);
    let results = tool_results(&out.stdout);
    let pid = results[0]["details"]["pid"].as_i64().unwrap();
    assert!(wait_gone(&[pid]), "the job survived the end of the run");
    // And `fen tool bash` with background: the job ends with the process too.
    let r = tool_json(
        &s,
        "bash",
        &json!({"command": "sleep 999", "background": true}),
    );
    let pid = r["details"]["pid"].as_i64().unwrap();
    assert!(wait_gone(&[pid]));
}

// ---------------------------------------------------------------- webfetch

/// A tiny HTTP/1.1 server on 127.0.0.1 answering by path, one request per connection.
fn web_server() -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            let _ = reader.read_line(&mut request);
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
            }
            let path = request.split(' ').nth(1).unwrap_or("/").to_string();
            let (status, headers, body): (&str, String, Vec<u8>) = match path.as_str() {
                "/page" => (
                    "200 OK",
                    "Content-Type: text/html; charset=utf-8\r\n".into(),
                    b"<html><head><style>p{color:red}</style><script>x()</script></head><body><h1>Title</h1><p>Some <b>bold</b> text and a <a href=\"/next\">link</a>.</p></body></html>".to_vec(),
                ),
                "/big" => (
                    "200 OK",
                    "Content-Type: text/plain\r\n".into(),
                    vec![b'a'; 6 * 1024 * 1024],
                ),
                "/same" => ("302 Found", "Location: /page\r\n".into(), Vec::new()),
                "/other" => (
                    "301 Moved Permanently",
                    format!("Location: http://localhost:{port}/page\r\n"),
                    Vec::new(),
                ),
                _ => ("404 Not Found", "Content-Type: text/plain\r\n".into(), b"nothing here".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    port
}

#[test]
fn webfetch_converts_refuses_big_bodies_and_reports_cross_host_redirects() {
    let s = Sandbox::new();
    let port = web_server();
    let base = format!("http://127.0.0.1:{port}");
    let r = tool_json(&s, "webfetch", &json!({"url": format!("{base}/page")}));
    let text = result_text(&r);
    assert_eq!(r["is_error"], false, "{r}");
    assert!(text.contains("# Title"), "{text}");
    assert!(text.contains("**bold**"), "{text}");
    assert!(text.contains("[link](/next)"), "{text}");
    assert!(!text.contains("x()"), "{text}");
    assert!(!text.contains("color:red"), "{text}");

    let r = tool_json(
        &s,
        "webfetch",
        &json!({"url": format!("{base}/page"), "format": "text"}),
    );
    let text = result_text(&r);
    assert!(text.contains("Some bold text and a link."), "{text}");
    assert!(!text.contains("x()"), "{text}");

    let r = tool_json(
        &s,
        "webfetch",
        &json!({"url": format!("{base}/page"), "format": "html"}),
    );
    assert!(result_text(&r).contains("<script>x()</script>"));

    // A same-host redirect is followed.
    let r = tool_json(&s, "webfetch", &json!({"url": format!("{base}/same")}));
    assert!(
        result_text(&r).contains(&format!("URL: {base}/page")),
        "{r}"
    );
    assert!(result_text(&r).contains("# Title"));

    // A redirect to another host is reported with its target, not followed.
    let r = tool_json(&s, "webfetch", &json!({"url": format!("{base}/other")}));
    let text = result_text(&r);
    assert!(
        text.contains(&format!("to another host: http://localhost:{port}/page")),
        "{text}"
    );
    assert!(!text.contains("# Title"), "{text}");

    let r = tool_json(&s, "webfetch", &json!({"url": format!("{base}/big")}));
    assert_eq!(r["is_error"], true, "{r}");
    assert!(
        result_text(&r).contains("larger than the 5242880 byte limit"),
        "{r}"
    );

    let r = tool_json(&s, "webfetch", &json!({"url": format!("{base}/missing")}));
    assert_eq!(r["is_error"], true);
    assert!(result_text(&r).contains("HTTP 404"), "{r}");

    let r = tool_json(&s, "webfetch", &json!({"url": "file:///etc/passwd"}));
    assert_eq!(r["is_error"], true);
}

// ---------------------------------------------------------------- completions

#[test]
fn completion_scripts_are_valid_shell() {
    let s = Sandbox::new();
    for (shell, check) in [
        ("bash", vec!["-n"]),
        ("zsh", vec!["-n"]),
        ("fish", vec!["--no-execute"]),
    ] {
        let out = s.fen(&["completion", shell]);
        assert!(out.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(script.contains("completion"), "{shell}: {script:.200}");
        if shell != "fish" {
            // The positional values of `fen list` are offered too.
            assert!(script.contains("skills"), "{shell}: {script:.200}");
        }
        let path = s.write(&format!("fen.{shell}"), &script);
        let mut cmd = std::process::Command::new(shell);
        cmd.args(&check).arg(&path);
        match cmd.output() {
            Ok(o) => assert!(
                o.status.success(),
                "{shell} rejects the script: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(_) => eprintln!("{shell} is not installed; only generated its script"),
        }
    }
    let out = s.fen(&["completion", "powershell"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn slash_jobs_lists_them_and_the_status_item_is_registered() {
    let s = Sandbox::new();
    let script = s.write(
        "bg.json",
        &json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo started; sleep 999", "background": true}}]},
            {"text": "ok"}
        ])
        .to_string(),
    );
    let out = s.fen_stdin(
        &["--mock-script", script.to_str().unwrap()],
        "/jobs\ngo\n/jobs\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no background jobs"), "{text}");
    assert!(text.contains("bg1   running"), "{text}");
    assert!(text.contains("echo started; sleep 999"), "{text}");
    let statuses = s.fen_json(&["list", "statuses", "--json"]);
    assert_eq!(common::find(&statuses, "name", "jobs").len(), 1);
}

#[test]
fn provider_keys_do_not_reach_a_background_job() {
    let s = Sandbox::new();
    let script = s.write(
        "key.json",
        &json!([
            {"tool_calls": [{"name": "bash", "arguments": {"command": "echo key=${OPENAI_API_KEY:-none}", "background": true}}]},
            {"tool_calls": [{"name": "job_output", "arguments": {"id": "bg1", "wait_s": 5}}]},
            {"text": "ok"}
        ])
        .to_string(),
    );
    let out = s.fen_env(
        &[
            "--mock-script",
            script.to_str().unwrap(),
            "--mode",
            "json",
            "go",
        ],
        &[("OPENAI_API_KEY", "sk-secret")],
    );
    let results = tool_results(&out.stdout);
    let text = result_text(&results[1]);
    assert!(text.contains("key=none"), "{text}");
    assert!(!text.contains("sk-secret"));
}
