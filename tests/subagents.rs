//! Subagents end to end: a parent `fen --mode json` on the fake LLM calls `subagent`, which runs
//! a real child `fen` against the same fake server (the base URL is passed down).

use crate::common::Sandbox;
use crate::support::fake_llm::{Api, FakeLlm, Reply, Scenario, Turn};
use serde_json::{json, Value};
use std::io::BufRead;
use std::process::Output;
use std::time::{Duration, Instant};

fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The parent: `fen --mode json PROMPT` on the fake server (OpenAI chat), no session file.
fn parent_args(server: &FakeLlm, extra: &[&str], prompt: &str) -> Vec<String> {
    let mut args: Vec<String> = [
        "--mode",
        "json",
        "--no-session",
        "--provider",
        "openai",
        "--model",
        "m",
        "--base-url",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(server.base_url());
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.push(prompt.into());
    args
}

fn run_parent(s: &Sandbox, server: &FakeLlm, extra: &[&str]) -> Output {
    let args = parent_args(server, extra, "delegate");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    s.fen_env(&args, &[("OPENAI_API_KEY", "test-key")])
}

/// The model asks for `agent` to do `task`.
fn delegate(id: &str, agent: &str, task: &str) -> Reply {
    let args = json!({ "agent": agent, "task": task });
    Reply::stream(
        Api::OpenAiChat,
        Turn::default().with_tool_call(id, "subagent", &args.to_string()),
    )
}

/// The model asks to write "x" to `path`.
fn write_call(id: &str, path: &str) -> Reply {
    let args = json!({ "path": path, "content": "x" });
    Reply::stream(
        Api::OpenAiChat,
        Turn::default().with_tool_call(id, "write", &args.to_string()),
    )
}

/// An agent that may only write.
const WRITER: &str = "---\nname: writer\ndescription: writes\ntools: write\n---\nYou write.\n";

fn text(t: &str) -> Reply {
    Reply::stream(Api::OpenAiChat, Turn::text(t))
}

/// The `tool-result` events of the run, in order.
fn tool_results(evs: &[Value]) -> Vec<Value> {
    evs.iter()
        .filter(|e| e["type"] == "tool-result")
        .map(|e| e["result"].clone())
        .collect()
}

fn result_text(r: &Value) -> String {
    r["content"][0]["text"].as_str().unwrap_or("").to_string()
}

/// Every process whose command line holds `marker` (a unique task text), from /proc.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Zombies are gone for every purpose but their exit status.
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        if state.starts_with('Z') {
            continue;
        }
        if String::from_utf8_lossy(&cmd).contains(marker) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn a_childs_answer_comes_back_with_its_details() {
    let s = Sandbox::new();
    let server = FakeLlm::start(
        Scenario::new()
            .then(delegate("c1", "scout", "where is main?"))
            .then(text("main is in src/main.rs:1"))
            .then(text("the scout says src/main.rs")),
    );
    let out = run_parent(&s, &server, &[]);
    let evs = events(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = tool_results(&evs);
    assert_eq!(results.len(), 1, "{evs:?}");
    let r = &results[0];
    assert_eq!(r["is_error"], false, "{r}");
    assert_eq!(result_text(r), "main is in src/main.rs:1");
    let d = &r["details"];
    assert_eq!(d["status"], "ok");
    assert_eq!(d["agent"], "scout");
    assert_eq!(d["turns"], 1);
    let transcript = d["transcript"].as_str().unwrap();
    let lines = std::fs::read_to_string(transcript).unwrap();
    assert!(lines.contains("\"type\":\"result\""), "{lines}");
    // The child ran with the scout's prompt and read-only tools, against the same server.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let child = &reqs[1].body;
    let system = child["messages"][0]["content"].to_string();
    assert!(system.contains("You are scout"), "{system}");
    // The parent's prompt lists the agents; the child, without `subagent`, gets no such list.
    let parent_system = reqs[0].body["messages"][0]["content"].to_string();
    assert!(
        parent_system.contains("- reviewer: Reviews a change"),
        "{parent_system}"
    );
    assert!(
        !system.contains("Agents for the `subagent` tool"),
        "{system}"
    );
    let mut tools: Vec<String> = child["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    tools.sort();
    assert_eq!(tools, ["find", "grep", "ls", "read"]);
    assert_eq!(reqs[1].header("authorization"), Some("Bearer test-key"));
    // No session file for the child (nor for the parent, run with --no-session).
    let sessions = s.state().join("fen/sessions");
    assert!(!sessions.exists() || std::fs::read_dir(&sessions).unwrap().count() == 0);
}

/// A second server for children, as the custom provider `local` (models.json), and an agent
/// `slow` on it: children then never race the parent for the parent's scripted replies.
fn child_server(s: &Sandbox, replies: Vec<Reply>) -> FakeLlm {
    let mut sc = Scenario::new();
    for r in replies {
        sc = sc.then(r);
    }
    let server = FakeLlm::start(sc);
    let models = json!({"providers": {"local": {
        "api": "openai-completions", "baseUrl": server.base_url(), "apiKey": "LOCAL_KEY",
        "models": [{"id": "tiny"}]}}});
    s.write("config/fen/models.json", &models.to_string());
    s.write(
        "config/fen/agents/slow.md",
        "---\nname: slow\ndescription: a child on the second server\nprovider: local\nmodel: tiny\ntools: read\n---\nYou are slow.\n",
    );
    server
}

/// A reply that starts a stream, then stays silent for `ms`.
fn stall(ms: u64) -> Reply {
    Reply::Stall {
        api: Api::OpenAiChat,
        turn: Turn::text("late"),
        after_events: 1,
        stall_ms: ms,
        keepalive_ms: None,
    }
}

fn many_calls(calls: &[(&str, Value)]) -> Reply {
    let mut t = Turn::default();
    for (id, args) in calls {
        let name = args["__tool"].as_str().unwrap_or("subagent").to_string();
        let mut a = args.clone();
        a.as_object_mut().unwrap().remove("__tool");
        t = t.with_tool_call(id, &name, &a.to_string());
    }
    Reply::stream(Api::OpenAiChat, t)
}

/// Runs the parent, timestamping every stdout line; `on_line` sees each as it arrives.
fn run_streaming(
    s: &Sandbox,
    server: &FakeLlm,
    extra: &[&str],
    mut on_line: impl FnMut(&Value, u32),
) -> (Vec<(Instant, Value)>, std::process::ExitStatus, String) {
    let args = parent_args(server, extra, "delegate");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut cmd = s.command(&args);
    cmd.env("OPENAI_API_KEY", "test-key").env("LOCAL_KEY", "k2");
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let err = std::thread::spawn(move || {
        let mut e = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut e);
        e
    });
    let mut lines = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let Ok(line) = line else { break };
        if let Ok(v) = serde_json::from_str::<Value>(&line) {
            on_line(&v, pid);
            lines.push((Instant::now(), v));
        }
    }
    let status = child.wait().unwrap();
    (lines, status, err.join().unwrap_or_default())
}

#[test]
fn five_launches_in_one_turn_run_four_and_refuse_the_fifth() {
    let s = Sandbox::new();
    let child = child_server(
        &s,
        (0..4)
            .map(|_| Reply::Stall {
                api: Api::OpenAiChat,
                turn: Turn::text("child done"),
                after_events: 1,
                stall_ms: 1500,
                keepalive_ms: None,
            })
            .collect(),
    );
    let calls: Vec<(String, Value)> = (0..5)
        .map(|i| {
            (
                format!("c{i}"),
                json!({"agent": "slow", "task": format!("job {i}")}),
            )
        })
        .collect();
    let calls: Vec<(&str, Value)> = calls.iter().map(|(i, v)| (i.as_str(), v.clone())).collect();
    let server = FakeLlm::start(
        Scenario::new()
            .then(many_calls(&calls))
            .then(text("all done")),
    );
    let out = run_parent(&s, &server, &[]);
    let results = tool_results(&events(&out.stdout));
    assert_eq!(results.len(), 5, "{}", String::from_utf8_lossy(&out.stderr));
    let refused: Vec<&Value> = results.iter().filter(|r| r["is_error"] == true).collect();
    assert_eq!(refused.len(), 1, "{results:?}");
    assert!(
        result_text(refused[0]).contains("active run cap (4) reached"),
        "{:?}",
        refused[0]
    );
    let ok: Vec<String> = results
        .iter()
        .filter(|r| r["is_error"] == false)
        .map(result_text)
        .collect();
    assert_eq!(
        ok,
        ["late", "late", "late", "late"].map(|_| "child done".to_string())
    );
    assert_eq!(child.requests().len(), 4);
}

#[test]
fn cancelling_the_parent_kills_every_child_and_gives_one_cancelled_result_per_call() {
    let s = Sandbox::new();
    let _child = child_server(&s, vec![stall(60_000), stall(60_000)]);
    let marker = format!("cancel-marker-{}", std::process::id());
    let server = FakeLlm::start(Scenario::new().then(many_calls(&[
        (
            "c1",
            json!({"agent": "slow", "task": format!("{marker} one")}),
        ),
        (
            "c2",
            json!({"agent": "slow", "task": format!("{marker} two")}),
        ),
    ])));
    let mut signalled: Option<Instant> = None;
    let m = marker.clone();
    let (lines, status, stderr) = run_streaming(&s, &server, &[], |v, pid| {
        if signalled.is_none() && v["type"] == "tool-call" && v["tool_call"]["id"] == "c2" {
            // Both children are being started: wait until they run, then Ctrl-C the parent.
            let t = Instant::now();
            while processes_with(&m).len() < 2 && t.elapsed() < Duration::from_secs(20) {
                std::thread::sleep(Duration::from_millis(20));
            }
            assert_eq!(processes_with(&m).len(), 2, "both children run");
            std::thread::sleep(Duration::from_millis(300));
            nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGINT,
            )
            .unwrap();
            signalled = Some(Instant::now());
        }
    });
    let t0 = signalled.expect("the parent was interrupted");
    let evs: Vec<Value> = lines.iter().map(|(_, v)| v.clone()).collect();
    let results = tool_results(&evs);
    assert_eq!(results.len(), 2, "{evs:?}\n{stderr}");
    for r in &results {
        assert_eq!(r["is_error"], true);
        assert!(result_text(r).starts_with("[cancelled]"), "{r}");
    }
    let ids: Vec<&str> = results
        .iter()
        .map(|r| r["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c1", "c2"]);
    // The children were gone before the parent reported the cancelled calls.
    let (reported, _) = lines
        .iter()
        .find(|(_, v)| v["type"] == "tool-result")
        .unwrap();
    let took = reported.duration_since(t0);
    assert!(
        processes_with(&marker).is_empty(),
        "children left: {:?}",
        processes_with(&marker)
    );
    eprintln!("cancel: children gone and results reported {took:?} after SIGINT");
    assert!(took < Duration::from_millis(2500), "cancel took {took:?}");
    assert_eq!(status.code(), Some(130), "{stderr}");
}

#[test]
fn a_childs_tools_are_within_the_parents_and_an_empty_intersection_spawns_nothing() {
    let s = Sandbox::new();
    s.write(
        "config/fen/agents/lister.md",
        "---\nname: lister\ndescription: lists\ntools: [read, bash, ls]\n---\nYou list.\n",
    );
    s.write(
        "config/fen/agents/shell.md",
        "---\nname: shell\ndescription: runs commands\ntools: bash\n---\nYou run.\n",
    );
    let server = FakeLlm::start(
        Scenario::new()
            .then(many_calls(&[
                ("c1", json!({"agent": "lister", "task": "list"})),
                ("c2", json!({"agent": "shell", "task": "run"})),
            ]))
            .then(text("listed"))
            .then(text("parent done")),
    );
    let out = run_parent(&s, &server, &["--tools", "read,ls,subagent"]);
    let results = tool_results(&events(&out.stdout));
    assert_eq!(results.len(), 2, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(result_text(&results[0]), "listed");
    assert_eq!(results[1]["is_error"], true);
    assert!(
        result_text(&results[1]).contains("would have no tools"),
        "{}",
        results[1]
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "the shell agent spawned nothing");
    let mut tools: Vec<&str> = reqs[1].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        ["ls", "read"],
        "bash is not the parent's, subagent is not granted"
    );
}

#[test]
fn wait_with_a_one_second_timeout_returns_running_and_the_child_lives_on() {
    let s = Sandbox::new();
    let _child = child_server(&s, vec![stall(60_000)]);
    let marker = format!("wait-marker-{}", std::process::id());
    let server = FakeLlm::start(
        Scenario::new()
            .then(many_calls(&[("c1", json!({"agent": "slow", "task": marker, "background": true}))]))
            .then(many_calls(&[("c2", json!({"__tool": "subagent_ctl", "action": "wait", "run_id": "sa1", "timeout_s": 1}))]))
            .then(many_calls(&[("c3", json!({"__tool": "subagent_ctl", "action": "show", "run_id": "sa1"}))]))
            .then(text("parent done")),
    );
    let mut alive_after_wait = false;
    let m = marker.clone();
    let (lines, status, stderr) = run_streaming(&s, &server, &[], |v, _| {
        if v["type"] == "tool-result" && v["result"]["tool_call_id"] == "c2" {
            alive_after_wait = processes_with(&m).len() == 1;
        }
    });
    assert_eq!(status.code(), Some(0), "{stderr}");
    let at = |id: &str, kind: &str| {
        lines
            .iter()
            .find(|(_, v)| {
                v["type"] == kind
                    && (v["tool_call"]["id"] == id || v["result"]["tool_call_id"] == id)
            })
            .map(|(t, v)| (*t, v.clone()))
            .unwrap()
    };
    let (called, _) = at("c2", "tool-call");
    let (answered, r) = at("c2", "tool-result");
    let took = answered.duration_since(called);
    eprintln!("wait(timeout_s = 1) on a busy child returned after {took:?}");
    assert!(result_text(&r["result"]).starts_with("running"), "{r}");
    assert_eq!(r["result"]["details"]["status"], "running");
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(1200),
        "wait took {took:?}"
    );
    assert!(alive_after_wait, "the child lives on after wait");
    let (_, show) = at("c3", "tool-result");
    assert_eq!(show["result"]["details"]["status"], "running", "{show}");
    // fen's exit reaps the background child.
    assert!(processes_with(&marker).is_empty());
}

#[test]
fn a_crashing_child_gives_an_error_with_its_exit_status_and_output_tail() {
    let s = Sandbox::new();
    // Loaded by the parent and, passed down with --extension, by the child, where it prints
    // something that is not JSON and dies.
    let ext = s.write(
        "crash.lua",
        "return function(api)\n  if os.getenv('FEN_SUBAGENT_DEPTH') == '1' then\n    io.stdout:write('kaboom: not json ', tostring(os.getenv('ANTHROPIC_API_KEY')), ' ', tostring(os.getenv('OPENAI_API_KEY')), '\\n'); io.stdout:flush(); os.exit(3)\n  end\nend\n",
    );
    let server = FakeLlm::start(
        Scenario::new()
            .then(delegate("c1", "scout", "x"))
            .then(text("parent done")),
    );
    let args = parent_args(&server, &["--extension", ext.to_str().unwrap()], "delegate");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.fen_env(
        &args,
        &[
            ("OPENAI_API_KEY", "test-key"),
            ("ANTHROPIC_API_KEY", "other-secret"),
        ],
    );
    let results = tool_results(&events(&out.stdout));
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    let r = &results[0];
    assert_eq!(r["is_error"], true);
    let t = result_text(r);
    assert!(t.contains("exited 3"), "{t}");
    // Only the key of the child's provider reaches it; other secrets stay hidden.
    assert!(t.contains("kaboom: not json nil test-key"), "{t}");
    assert!(t.contains("not JSON"), "{t}");
    assert_eq!(r["details"]["exit_code"], 3);
    assert_eq!(
        server.requests().len(),
        2,
        "the child never called the model"
    );
}

#[test]
fn a_childs_permission_ask_goes_to_the_parent() {
    for (answer, expect_file) in [("deny", false), ("allow", true)] {
        let s = Sandbox::new();
        s.write("config/fen/agents/writer.md", WRITER);
        let server = FakeLlm::start(
            Scenario::new()
                .then(delegate("c1", "writer", "write it"))
                .then(write_call("w1", "made.txt"))
                .then(text("child finished"))
                .then(text("parent done")),
        );
        let out = run_parent(
            &s,
            &server,
            &["--permission-mode", "default", "--on-ask", answer],
        );
        let results = tool_results(&events(&out.stdout));
        assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(result_text(&results[0]), "child finished");
        let reqs = server.requests();
        assert_eq!(reqs.len(), 4);
        let child_saw = reqs[2].body["messages"].to_string();
        assert_eq!(
            s.cwd().join("made.txt").exists(),
            expect_file,
            "{answer}: {child_saw}"
        );
        if !expect_file {
            assert!(
                child_saw.contains("parent fen runs headless"),
                "{child_saw}"
            );
        }
    }
}

#[test]
fn fen_list_agents_shows_builtin_user_and_untrusted_project_agents() {
    let s = Sandbox::new();
    s.write(
        "config/fen/agents/scout.md",
        "---\nname: scout\ndescription: my own scout\n---\nMine.\n",
    );
    s.write(
        "work/.fen/agents/proj.md",
        "---\nname: proj\ndescription: a project agent\n---\nP.\n",
    );
    s.write(
        "config/fen/agents/bad.md",
        "---\ndescription: no name\n---\n",
    );
    // The text listing says what each agent is for, under its name.
    let text = String::from_utf8_lossy(&s.fen(&["list", "agents"]).stdout).into_owned();
    assert!(text.contains("\n    my own scout\n"), "{text}");
    assert!(
        text.contains("\n    Writes an implementation plan"),
        "{text}"
    );
    let rows = s.fen_json(&["list", "agents", "--json"]);
    let rows = rows.as_array().unwrap();
    let find = |name: &str| {
        rows.iter()
            .filter(|r| r["name"] == name)
            .cloned()
            .collect::<Vec<_>>()
    };
    let scouts = find("scout");
    assert_eq!(scouts.len(), 2);
    assert_eq!(scouts[0]["scope"], "user");
    assert_eq!(scouts[1]["scope"], "builtin");
    assert!(scouts[1]["shadowed_by"]
        .as_str()
        .unwrap()
        .ends_with("scout.md"));
    assert_eq!(find("reviewer").len(), 1);
    assert_eq!(find("planner").len(), 1);
    assert!(
        find("proj").is_empty(),
        "untrusted project agents are not offered"
    );
    let invalid: Vec<&Value> = rows.iter().filter(|r| r["status"] == "invalid").collect();
    assert_eq!(invalid.len(), 2, "{rows:?}");
    let trusted = s.fen_json(&["list", "agents", "--json", "--trust"]);
    assert!(trusted
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["name"] == "proj" && r["scope"] == "project"));
}

#[test]
fn a_background_childs_end_is_announced_once_before_the_next_model_call() {
    let s = Sandbox::new();
    let child = child_server(&s, vec![text("the background answer")]);
    let server = FakeLlm::start(
        Scenario::new()
            .then(many_calls(&[(
                "c1",
                json!({"agent": "slow", "task": "in the background", "background": true}),
            )]))
            .then(many_calls(&[(
                "c2",
                json!({"__tool": "bash", "command": "sleep 3"}),
            )]))
            .then(many_calls(&[(
                "c3",
                json!({"__tool": "bash", "command": "true"}),
            )]))
            .then(text("parent done")),
    );
    let out = run_parent(&s, &server, &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(child.requests().len(), 1);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let count = |i: usize| {
        reqs[i].body["messages"]
            .to_string()
            .matches("the background answer")
            .count()
    };
    assert_eq!(count(1), 0, "not finished before the sleep");
    assert_eq!(count(2), 1, "announced before the next model call");
    assert_eq!(count(3), 1, "announced once");
    assert!(reqs[2].body["messages"]
        .to_string()
        .contains("background subagent sa1 (slow) has finished"));
}

#[test]
fn in_the_tui_a_childs_ask_names_the_child_and_the_answer_reaches_it() {
    use crate::tui::{script, Tui};
    let s = Sandbox::new();
    let _child = child_server(&s, vec![write_call("w1", "made.txt"), text("child ok")]);
    s.write(
        "config/fen/agents/scribe.md",
        "---\nname: scribe\ndescription: writes\nprovider: local\nmodel: tiny\ntools: write\n---\nYou write.\n",
    );
    let path = script(
        &s,
        r#"[{"tool_calls":[{"name":"subagent","arguments":{"agent":"scribe","task":"write made.txt"}}]},{"text":"parent done"}]"#,
    );
    let mut t = Tui::spawn(
        &s,
        &["--mock-script", &path, "--permission-mode", "default"],
        100,
        30,
        &[],
    );
    t.wait_for("mock");
    t.send("go\r");
    let screen = t.wait_for("[subagent scribe]");
    assert!(screen.contains("write"), "{screen}");
    assert!(!s.cwd().join("made.txt").exists());
    t.send("y");
    t.wait_for("parent done");
    assert!(
        s.cwd().join("made.txt").exists(),
        "the person's yes reached the child"
    );
}

#[test]
fn in_the_tui_the_panel_lists_a_running_child() {
    use crate::tui::{script, Tui};
    let s = Sandbox::new();
    let _child = child_server(&s, vec![stall(60_000)]);
    let path = script(
        &s,
        r#"[{"tool_calls":[{"name":"subagent","arguments":{"agent":"slow","task":"panel task"}}]},{"text":"parent done"}]"#,
    );
    let mut t = Tui::spawn(&s, &["--mock-script", &path], 100, 30, &[]);
    t.wait_for("mock");
    t.send("go\r");
    let screen = t.wait("the subagents panel", |sc| {
        sc.contains("Subagents") && sc.contains("sa1") && sc.contains("panel task")
    });
    assert!(screen.contains("agents:1"), "{screen}");
}

#[test]
fn a_granted_grandchilds_ask_is_forwarded_up_to_the_parent() {
    let s = Sandbox::new();
    s.write(
        "config/fen/agents/boss.md",
        "---\nname: boss\ndescription: delegates\ntools: [subagent, write]\n---\nYou delegate.\n",
    );
    s.write("config/fen/agents/writer.md", WRITER);
    let server = FakeLlm::start(
        Scenario::new()
            .then(delegate("c1", "boss", "get it written"))
            .then(delegate("b1", "writer", "write it"))
            .then(write_call("w1", "deep.txt"))
            .then(text("writer done"))
            .then(text("boss done"))
            .then(text("parent done")),
    );
    let out = run_parent(
        &s,
        &server,
        &["--permission-mode", "default", "--on-ask", "allow"],
    );
    let results = tool_results(&events(&out.stdout));
    assert_eq!(results.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(result_text(&results[0]), "boss done");
    assert_eq!(server.requests().len(), 6);
    assert!(
        s.cwd().join("deep.txt").exists(),
        "the parent's allow reached the grandchild"
    );
}

#[test]
fn a_definition_may_keep_the_childs_session_file() {
    let s = Sandbox::new();
    s.write(
        "config/fen/agents/keeper.md",
        "---\nname: keeper\ndescription: keeps its session\nsession: true\ntools: read\n---\nYou keep.\n",
    );
    let server = FakeLlm::start(
        Scenario::new()
            .then(delegate("c1", "keeper", "kept task"))
            .then(text("kept"))
            .then(delegate("c2", "scout", "unkept task"))
            .then(text("not kept"))
            .then(text("parent done")),
    );
    let out = run_parent(&s, &server, &[]);
    let results = tool_results(&events(&out.stdout));
    assert_eq!(results.len(), 2, "{}", String::from_utf8_lossy(&out.stderr));
    let mut files = Vec::new();
    let mut stack = vec![s.state()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.components().any(|c| c.as_os_str() == "sessions") {
                files.push(std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    assert_eq!(files.len(), 1, "one session file: the keeper's");
    assert!(files[0].contains("kept task") && !files[0].contains("unkept task"));
}

#[test]
fn ctl_cancel_stops_a_background_run_and_a_foreground_run_stops_at_its_timeout() {
    let s = Sandbox::new();
    let _child = child_server(&s, vec![stall(60_000), stall(60_000)]);
    let marker = format!("stop-marker-{}", std::process::id());
    let server = FakeLlm::start(
        Scenario::new()
            .then(many_calls(&[(
                "c1",
                json!({"agent": "slow", "task": format!("{marker} bg"), "background": true}),
            )]))
            .then(many_calls(&[(
                "c2",
                json!({"__tool": "subagent_ctl", "action": "cancel", "run_id": "sa1"}),
            )]))
            .then(many_calls(&[(
                "c3",
                json!({"agent": "slow", "task": format!("{marker} fg"), "timeout_s": 1}),
            )]))
            .then(many_calls(&[(
                "c4",
                json!({"__tool": "subagent_ctl", "action": "list"}),
            )]))
            .then(text("parent done")),
    );
    let m = marker.clone();
    let mut left_after_cancel = usize::MAX;
    let (lines, status, stderr) = run_streaming(&s, &server, &[], |v, _| {
        if v["type"] == "tool-result" && v["result"]["tool_call_id"] == "c2" {
            left_after_cancel = processes_with(&m).len();
        }
    });
    assert_eq!(status.code(), Some(0), "{stderr}");
    let evs: Vec<Value> = lines.into_iter().map(|(_, v)| v).collect();
    let results = tool_results(&evs);
    assert_eq!(results.len(), 4, "{evs:?}");
    assert!(
        result_text(&results[1]).starts_with("subagent sa1 (slow) stopped"),
        "{}",
        results[1]
    );
    assert_eq!(left_after_cancel, 0, "the cancelled child is gone");
    assert_eq!(results[2]["is_error"], true);
    assert!(
        result_text(&results[2]).contains("timed out after 1 s"),
        "{}",
        results[2]
    );
    assert_eq!(results[2]["details"]["status"], "timeout");
    let list = result_text(&results[3]);
    assert!(list.contains("sa1") && list.contains("cancelled"), "{list}");
    assert!(list.contains("sa2"), "{list}");
    assert!(processes_with(&marker).is_empty());
}

#[test]
fn a_settings_permission_request_hook_answers_a_childs_ask_in_the_parent() {
    let s = Sandbox::new();
    let _child = child_server(&s, vec![write_call("w1", "made.txt"), text("child ok")]);
    s.write(
        "config/fen/agents/scribe.md",
        "---\nname: scribe\ndescription: writes\nprovider: local\nmodel: tiny\ntools: write\n---\nYou write.\n",
    );
    let log = s.root().join("asked.jsonl");
    let settings = json!({"permissions": {"mode": "default"}, "hooks": {"PermissionRequest": [
        {"matcher": "Write", "hooks": [{"type": "command", "command": format!(
            "cat >> {}; echo '{{\"hookSpecificOutput\": {{\"decision\": {{\"behavior\": \"allow\"}}}}}}'",
            log.display())}]}]}});
    s.write("config/fen/settings.json", &settings.to_string());
    let path = crate::tui::script(
        &s,
        r#"[{"tool_calls":[{"name":"subagent","arguments":{"agent":"scribe","task":"write made.txt"}}]},{"text":"parent done"}]"#,
    );
    // Nobody answers on stdin: the file is written only if the hook approved the child's call.
    let out = s.fen_stdin(
        &[
            "--presenter",
            "stdio",
            "--no-session",
            "--mock-script",
            &path,
        ],
        "go\n",
        &[],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.cwd().join("made.txt").exists(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        seen.contains("\"hook_event_name\":\"PermissionRequest\"")
            && seen.contains("\"tool_name\":\"Write\"")
            && seen.contains("made.txt"),
        "{seen}"
    );
}

/// A directory the OS sandbox does not let commands write (not under the temp dirs it keeps
/// writable).
fn outside_dir(name: &str) -> std::path::PathBuf {
    let target = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let target = std::fs::canonicalize(&target).unwrap_or(target);
    let temps: Vec<std::path::PathBuf> = ["/tmp".into(), std::env::temp_dir()]
        .iter()
        .filter_map(|t| std::fs::canonicalize(t).ok())
        .collect();
    let base = if temps.iter().any(|t| target.starts_with(t)) {
        std::path::PathBuf::from("/var/tmp")
    } else {
        target
    };
    let d = base.join(format!("sa-outside-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A subagent's `fen` runs outside the sandbox and plans its own tool commands with the
/// parent's plan inputs (`sandbox::plan`): working in another folder, whose settings say
/// nothing, its `make out` still leaves the sandbox by the parent's `sandbox.unsandboxed`
/// rule, and neither the child nor its command sees the parent's secrets.
#[test]
fn a_subagent_child_plans_with_the_parents_sandbox_settings_and_hidden_env() {
    if fen::native::sandbox::detect().tier == fen::native::sandbox::Tier::None {
        eprintln!("NOTICE: no sandbox tier on this machine; subagent plan test skipped");
        return;
    }
    let s = Sandbox::new();
    let out = outside_dir("plan");
    s.write(
        "config/fen/agents/runner.md",
        "---\nname: runner\ndescription: runs make\ntools: bash\n---\nYou run make.\n",
    );
    // The parent's project says `make out` runs outside the sandbox; the child's folder
    // (elsewhere) has no settings of its own.
    s.write(
        "work/.fen/settings.json",
        r#"{"sandbox": {"unsandboxed": ["Bash(make out *)"]}}"#,
    );
    s.write(
        "elsewhere/Makefile",
        &format!(
            "out:\n\techo \"made:$$SOME_API_KEY:$$OPENAI_API_KEY\" >> {o}/made.txt\n",
            o = out.display()
        ),
    );
    let elsewhere = s.root().join("elsewhere");
    let args = json!({ "agent": "runner", "task": "make it", "cwd": elsewhere });
    let bash = json!({ "command": "make out" });
    let server = FakeLlm::start(
        Scenario::new()
            .then(Reply::stream(
                Api::OpenAiChat,
                Turn::default().with_tool_call("c1", "subagent", &args.to_string()),
            ))
            .then(Reply::stream(
                Api::OpenAiChat,
                Turn::default().with_tool_call("b1", "bash", &bash.to_string()),
            ))
            .then(text("child finished"))
            .then(text("parent done")),
    );
    let pargs = parent_args(
        &server,
        &["--trust", "--permission-mode", "auto", "--on-ask", "allow"],
        "delegate",
    );
    let pargs: Vec<&str> = pargs.iter().map(String::as_str).collect();
    let o = s.fen_env(
        &pargs,
        &[("OPENAI_API_KEY", "test-key"), ("SOME_API_KEY", "s3cret")],
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{}", String::from_utf8_lossy(&o.stderr));
    let child_saw = reqs[2].body["messages"].to_string();
    assert!(
        child_saw.contains("ran outside the sandbox: sandbox.unsandboxed rule Bash(make out *)"),
        "the child planned `make out` with the parent's rule: {child_saw}"
    );
    let made = std::fs::read_to_string(out.join("made.txt")).unwrap_or_default();
    assert_eq!(made, "made::\n", "{child_saw}");
    // The parent's log says why the child runs where it runs.
    let logs = std::fs::read_to_string(s.state().join("fen/logs.jsonl")).unwrap_or_default();
    assert!(
        logs.contains("(runner): outside: a subagent is fen"),
        "{logs}"
    );
    let _ = std::fs::remove_dir_all(&out);
}
