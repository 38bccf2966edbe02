//! Checkpoints and `fen rewind` end to end: scripted sessions (mock provider) change files with
//! `edit`, `write`, `bash` (`sed -i`, `rm`, `mv`, `chmod`) and a background job in real git
//! repositories (and a plain directory) in temp dirs; `fen rewind` puts back every byte and
//! the executable bit, the user's `.git` is never touched, checkpoints survive kill -9, and
//! two sessions in one workspace keep their own.

use crate::common::{have_git, Sandbox, ECHO_PROMPTS};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file under `dir` (but `.git` unless `with_git`): bytes and whether it is executable.
fn tree(dir: &Path, with_git: bool) -> BTreeMap<String, (Vec<u8>, bool)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if !with_git && rel == ".git" {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                let exec = m.permissions().mode() & 0o111 != 0;
                out.insert(rel, (std::fs::read(&p).unwrap_or_default(), exec));
            }
        }
    }
    out
}

fn script(s: &Sandbox, name: &str, steps: Value) -> String {
    s.write(name, &steps.to_string())
        .to_string_lossy()
        .into_owned()
}

fn call(name: &str, args: Value) -> Value {
    json!({"name": name, "arguments": args})
}

fn bash(cmd: &str) -> Value {
    call("bash", json!({"command": cmd}))
}

fn sessions(s: &Sandbox) -> Vec<PathBuf> {
    let mut all = Vec::new();
    let root = s.state().join("fen/sessions");
    for d in std::fs::read_dir(&root)
        .map(|r| r.flatten().collect::<Vec<_>>())
        .unwrap_or_default()
    {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                all.push(f.path());
            }
        }
    }
    all.sort();
    all
}

fn list_json(s: &Sandbox, extra: &[&str]) -> Value {
    let mut args = vec!["rewind", "--list", "--mode", "json"];
    args.extend_from_slice(extra);
    let out = s.fen(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

fn seed_repo(dir: &Path, with_git: bool) {
    std::fs::write(dir.join("a.txt"), "alpha\nbeta\n").unwrap();
    std::fs::write(dir.join("notes.md"), "# notes\n").unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/lib.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.join("run.sh"), "#!/bin/sh\necho hi\n").unwrap();
    std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(dir.join("target")).unwrap();
    std::fs::write(dir.join("target/build.log"), "ignored\n").unwrap();
    if with_git {
        git(dir, &["init", "-q"]);
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", "init"]);
        // Something staged and a stash: the user's index and stash must stay as they are.
        std::fs::write(dir.join("notes.md"), "# notes\nstaged\n").unwrap();
        git(dir, &["add", "notes.md"]);
    }
}

/// The scripted session of the first test: two user turns.
fn edit_script(s: &Sandbox) -> String {
    script(
        s,
        "edits.json",
        json!([
            {"tool_calls": [call("read", json!({"path": "a.txt"}))]},
            {"tool_calls": [call("edit", json!({"path": "a.txt", "old_string": "beta", "new_string": "BETA"}))]},
            {"tool_calls": [bash("sed -i s/main/start/ src/lib.rs && rm notes.md && mv run.sh go.sh && chmod -x go.sh && mkdir -p new/dir && printf 'x\\n' > new/dir/file.txt")]},
            {"tool_calls": [call("bash", json!({"command": "sleep 0.2; printf 'from a job\\n' > job.txt; chmod +x job.txt", "background": true}))]},
            {"tool_calls": [call("job_output", json!({"id": "bg1", "wait_s": 10}))]},
            {"text": "turn one done"},
            {"tool_calls": [call("read", json!({"path": "a.txt"}))]},
            {"tool_calls": [call("write", json!({"path": "a.txt", "content": "rewritten\n"}))]},
            {"text": "turn two done"},
        ]),
    )
}

#[test]
fn a_scripted_session_is_rewound_byte_for_byte_and_the_users_git_is_untouched() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, true);
    let before = tree(&cwd, false);
    let git_before = tree(&cwd.join(".git"), true);
    let sc = edit_script(&s);
    let out = s.fen(&["-p", "change things", "--mock-script", &sc]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("job.txt")).unwrap(),
        "from a job\n"
    );
    let out = s.fen(&["-c", "-p", "more", "--mock-script", &sc]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(tree(&cwd, false), before);

    // The list: newest first, each turn with the files it changed.
    let list = list_json(&s, &[]);
    let turns = list["session"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{list}");
    assert_eq!(turns[0]["turn"], 2);
    assert_eq!(turns[0]["files"], json!(["a.txt"]));
    let files1: Vec<&str> = turns[1]["files"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for f in [
        "a.txt",
        "src/lib.rs",
        "notes.md",
        "run.sh",
        "go.sh",
        "new/dir/file.txt",
        "job.txt",
    ] {
        assert!(files1.contains(&f), "{f} missing from {files1:?}");
    }
    assert!(turns[1]["commit"].as_str().is_some_and(|c| c.len() == 40));

    // Rewinding to before turn 2 undoes only turn 2.
    let out = s.fen(&["rewind", "--to", "2", "--code"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
        "alpha\nBETA\n"
    );

    // Before turn 1: every byte and mode as it was; ignored files untouched.
    let out = s.fen(&["rewind", "--to", "1", "--code", "--mode", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ev: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ev["type"], "rewind");
    assert!(ev["restored"].as_array().unwrap().len() >= 7, "{ev}");
    assert_eq!(tree(&cwd, false), before);
    assert_eq!(
        tree(&cwd.join(".git"), true),
        git_before,
        "the user's .git changed"
    );
}

#[test]
fn a_file_changed_by_hand_is_named_and_needs_yes() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, false);
    // A .gitattributes asking for conversions changes no byte of a checkpoint.
    std::fs::write(cwd.join(".gitattributes"), "*.txt text eol=lf\n").unwrap();
    std::fs::write(cwd.join("crlf.txt"), "one\r\ntwo\r\n").unwrap();
    let before = tree(&cwd, false);
    let sc = script(
        &s,
        "s.json",
        json!([{"tool_calls": [bash("printf 'model\\n' > a.txt && printf 'x' > crlf.txt")]}, {"text": "ok"}]),
    );
    assert!(s.fen(&["-p", "go", "--mock-script", &sc]).status.success());
    std::fs::write(cwd.join("a.txt"), "by hand\n").unwrap();
    let out = s.fen(&["rewind", "--to", "1", "--code"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("changed by hand") && err.contains("a.txt") && err.contains("--yes"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
        "by hand\n"
    );
    let out = s.fen(&["rewind", "--to", "1", "--code", "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A plain directory (no git repository) works the same.
    assert!(!cwd.join(".git").exists());
    assert_eq!(tree(&cwd, false), before);
}

fn answer(out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn rewinding_the_conversation_branches_inside_the_session_file() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    seed_repo(&s.cwd(), true);
    let sc = s.write("echo.lua", ECHO_PROMPTS);
    let sc = sc.to_str().unwrap();
    assert!(answer(&s.fen(&["-p", "one", "--mock-script", sc])).contains("saw[one]"));
    assert!(answer(&s.fen(&["-c", "-p", "two", "--mock-script", sc])).contains("saw[one|two]"));
    assert!(
        answer(&s.fen(&["-c", "-p", "three", "--mock-script", sc])).contains("saw[one|two|three]")
    );
    let files = sessions(&s);
    assert_eq!(files.len(), 1);
    let path = files[0].clone();
    let before = std::fs::read(&path).unwrap();

    let out = s.fen(&["rewind", "--to", "2", "--conversation", "--mode", "json"]);
    let ev: Value = serde_json::from_slice(answer(&out).as_bytes()).unwrap();
    assert_eq!(ev["prompt"], "two");
    assert_eq!(PathBuf::from(ev["branch"].as_str().unwrap()), path);
    // Appended to, nothing rewritten: the old bytes are a prefix of the file, no new file.
    let after = std::fs::read(&path).unwrap();
    assert!(after.len() > before.len() && after.starts_with(&before));
    assert_eq!(sessions(&s), vec![path.clone()]);
    let appended = String::from_utf8_lossy(&after[before.len()..]).into_owned();
    assert!(appended.contains("\"type\":\"branch\""), "{appended}");
    // Only the turns of the branch in use are listed.
    let list = list_json(&s, &[]);
    let turns = turn_numbers(&list);
    assert_eq!(turns, vec![1]);

    // The resumed context no longer holds turns 2 and 3.
    assert!(answer(&s.fen(&["-c", "-p", "four", "--mock-script", sc])).contains("saw[one|four]"));
    let list = list_json(&s, &[]);
    let turns = turn_numbers(&list);
    // Numbered after every turn of the file (the snapshots are named by number).
    assert_eq!(turns, vec![4, 1]);
    let shown = answer(&s.fen(&["session", "show", &path.to_string_lossy()]));
    assert!(
        shown.contains("four") && !shown.contains("three"),
        "{shown}"
    );

    // The old branch is listed, and resuming it restores its context.
    let listed = answer(&s.fen(&["session", "list"]));
    let leaf = listed
        .lines()
        .filter(|l| l.contains(" msgs"))
        .find_map(|l| l.split("branch ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no branch listed: {listed}"))
        .to_string();
    assert!(listed.contains("three"), "{listed}");
    assert!(
        answer(&s.fen(&["--resume", &leaf, "-p", "five", "--mock-script", sc]))
            .contains("saw[one|two|three|five]")
    );
    // That switch was appended too; the branch of "four" is now the other one.
    let listed = answer(&s.fen(&["session", "list"]));
    assert!(
        listed.contains("branch ") && listed.contains("four"),
        "{listed}"
    );
    assert!(answer(&s.fen(&["-c", "-p", "six", "--mock-script", sc]))
        .contains("saw[one|two|three|five|six]"));
    let text = std::fs::read(&path).unwrap();
    assert!(text.starts_with(&after));
    // Code was left alone (conversation only).
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("a.txt")).unwrap(),
        "alpha\nbeta\n"
    );
}

/// A branch written by an earlier fen as a file of its own (header `branch_of`) still loads.
#[test]
fn an_older_branch_file_with_branch_of_still_loads() {
    let s = Sandbox::new();
    let sc = s.write("echo.lua", ECHO_PROMPTS);
    let lines = [
        json!({"type": "session", "version": 2, "id": "0190aaaa-0000-7000-8000-000000000001",
               "cwd": s.cwd().to_string_lossy(), "created": "2026-11-20T10:00:00.000Z",
               "fen_version": "0.1.0", "branch_of": "0190aaaa-0000-7000-8000-000000000000",
               "branch_turn": 2}),
        json!({"type": "message", "id": "m1", "parent_id": null, "timestamp": 1,
               "message": {"role": "user", "content": "old one", "timestamp": 1}}),
        json!({"type": "message", "id": "m2", "parent_id": "m1", "timestamp": 2,
               "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}],
                           "stop_reason": "stop", "model": "mock", "provider": "mock",
                           "usage": {"input": 0, "output": 0}, "timestamp": 2}}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let path = s.write("old-branch.jsonl", &text);
    let out = s.fen(&[
        "--resume",
        path.to_str().unwrap(),
        "-p",
        "two",
        "--mock-script",
        sc.to_str().unwrap(),
    ]);
    assert!(answer(&out).contains("saw[old one|two]"));
    assert!(std::fs::read_to_string(&path).unwrap().starts_with(&text));
}

#[test]
fn two_sessions_in_one_workspace_keep_separate_checkpoints() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, true);
    let one = script(
        &s,
        "one.json",
        json!([{"tool_calls": [bash("printf 'one\\n' > one.txt")]}, {"text": "ok"}]),
    );
    let two = script(
        &s,
        "two.json",
        json!([{"tool_calls": [bash("printf 'two\\n' > two.txt")]}, {"text": "ok"}]),
    );
    assert!(s
        .fen(&["-p", "first", "--mock-script", &one])
        .status
        .success());
    assert!(s
        .fen(&["-p", "second", "--mock-script", &two])
        .status
        .success());
    let all = sessions(&s);
    assert_eq!(all.len(), 2);
    let a = list_json(&s, &["--session", all[0].to_str().unwrap()]);
    let b = list_json(&s, &["--session", all[1].to_str().unwrap()]);
    let files = |v: &Value| v["session"]["turns"][0]["files"].clone();
    let (fa, fb) = (files(&a), files(&b));
    assert!(
        fa == json!(["one.txt"]) && fb == json!(["two.txt"])
            || fa == json!(["two.txt"]) && fb == json!(["one.txt"]),
        "{fa} {fb}"
    );
    // Each has its own refs in the one shadow repository.
    let refs = shadow_refs(&s);
    for v in [&a, &b] {
        let id = v["session"]["session_id"].as_str().unwrap();
        assert!(refs.contains(&format!("refs/fen/{id}/1")), "{refs}");
    }
    // Rewinding the session that wrote one.txt removes one.txt only.
    let which = if fa == json!(["one.txt"]) {
        &all[0]
    } else {
        &all[1]
    };
    let out = s.fen(&[
        "rewind",
        "--session",
        which.to_str().unwrap(),
        "--to",
        "1",
        "--code",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!cwd.join("one.txt").exists());
    assert!(cwd.join("two.txt").exists());
}

#[test]
fn checkpoints_survive_kill_9_and_resume() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, true);
    let before = tree(&cwd, false);
    let sc = script(
        &s,
        "slow.json",
        json!([
            {"tool_calls": [bash("printf 'changed\\n' > a.txt")]},
            {"text": "never finished", "delay_ms": 60000},
        ]),
    );
    let resumed = script(
        &s,
        "resumed.json",
        json!([{"text": "unused"}, {"text": "resumed"}]),
    );
    let mut child = s
        .command(&["-p", "slow", "--mock-script", &sc])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let done = std::fs::read_to_string(cwd.join("a.txt")).is_ok_and(|t| t == "changed\n");
        if done {
            break;
        }
        assert!(Instant::now() < deadline, "the turn never changed a.txt");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    let list = list_json(&s, &[]);
    let t = &list["session"]["turns"][0];
    assert_eq!(t["turn"], 1);
    assert!(t["commit"].as_str().is_some(), "{list}");
    // Resumed: the next turn is numbered 2 and rewinding to 1 restores the tree.
    let out = s.fen(&["-c", "-p", "go on", "--mock-script", &resumed]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = list_json(&s, &[]);
    assert_eq!(list["session"]["turns"][0]["turn"], 2, "{list}");
    let out = s.fen(&["rewind", "--to", "1", "--code", "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tree(&cwd, false), before);
}

#[test]
fn rewind_without_a_session_or_turn_says_what_to_do() {
    let s = Sandbox::new();
    let out = s.fen(&["rewind", "--list"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session in this directory"));
}

#[test]
fn size_cap_include_patterns_and_pruning_follow_the_settings() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, true);
    std::fs::write(cwd.join(".gitignore"), "target/\n.env\n").unwrap();
    std::fs::write(cwd.join(".env"), "KEY=old\n").unwrap();
    std::fs::write(
        s.config().join("fen/settings.json"),
        r#"{"permissions": {"mode": "yolo"}, "checkpoints": {"include": [".env"], "max_file_bytes": 1000}}"#,
    )
    .unwrap();
    let sc = script(
        &s,
        "s.json",
        json!([
            {"tool_calls": [bash("printf 'KEY=new\\n' > .env && head -c 5000 /dev/zero > big.bin && printf 'x\\n' > target/build.log")]},
            {"text": "ok"},
        ]),
    );
    assert!(s.fen(&["-p", "go", "--mock-script", &sc]).status.success());
    let list = list_json(&s, &[]);
    let t = &list["session"]["turns"][0];
    assert_eq!(t["skipped"], json!(["big.bin"]), "{list}");
    assert!(
        t["files"].as_array().unwrap().contains(&json!(".env")),
        "{list}"
    );
    let out = s.fen(&["rewind", "--to", "1", "--code"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The included ignored file is back; the ignored one not included and the one over the
    // cap are left as they are.
    assert_eq!(
        std::fs::read_to_string(cwd.join(".env")).unwrap(),
        "KEY=old\n"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("target/build.log")).unwrap(),
        "x\n"
    );
    assert_eq!(std::fs::metadata(cwd.join("big.bin")).unwrap().len(), 5000);

    // A deleted session's snapshots are pruned at the end of the next run's first turn.
    let first = sessions(&s)[0].clone();
    let id = list["session"]["session_id"].as_str().unwrap().to_string();
    std::fs::remove_file(&first).unwrap();
    let sc2 = script(
        &s,
        "s2.json",
        json!([{"tool_calls": [bash("printf 'y\\n' > y.txt")]}, {"text": "ok"}]),
    );
    assert!(s
        .fen(&["-p", "again", "--mock-script", &sc2])
        .status
        .success());
    let refs = shadow_refs(&s);
    assert!(!refs.contains(&id), "{refs}");
    assert!(refs.contains("/1"), "{refs}");
}

#[test]
fn a_worktree_session_is_removed_when_unchanged_and_kept_when_changed() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, true);
    git(&cwd, &["commit", "-qm", "notes"]);
    std::fs::write(cwd.join(".gitignore"), "target/\n.env\n").unwrap();
    std::fs::write(cwd.join(".env"), "SECRET=1\n").unwrap();
    std::fs::write(cwd.join(".worktreeinclude"), ".env\n").unwrap();
    let look = script(
        &s,
        "look.json",
        json!([{"tool_calls": [bash("pwd; cat .env")]}, {"text": "looked"}]),
    );
    let out = s.fen(&[
        "-w",
        "look",
        "--mode",
        "json",
        "look",
        "--mock-script",
        &look,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(".fen/worktrees/look\\nSECRET=1"),
        "{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("no changes and was removed"));
    assert!(!cwd.join(".fen/worktrees/look").exists());

    let change = script(
        &s,
        "change.json",
        json!([{"tool_calls": [bash("printf 'wt\\n' > wt.txt")]}, {"text": "wrote"}]),
    );
    let out = s.fen(&["-w", "change", "-p", "change", "--mock-script", &change]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("git merge fen/change") && err.contains("fen worktree remove change"),
        "{err}"
    );
    assert!(cwd.join(".fen/worktrees/change/wt.txt").exists());
    assert!(!cwd.join("wt.txt").exists());
    // The user's status does not show fen's worktrees.
    let status = Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&status.stdout).contains(".fen/worktrees"));
    let out = s.fen(&["worktree", "list"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("change  fen/change  changed"));
    let out = s.fen(&["worktree", "remove", "change"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!cwd.join(".fen/worktrees/change").exists());
    let branches = Command::new("git")
        .args(["branch"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&branches.stdout).contains("fen/change"));
}

#[test]
fn an_agent_with_isolation_worktree_works_in_its_own_worktree() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, true);
    git(&cwd, &["commit", "-qm", "notes"]);
    s.write(
        "config/fen/agents/isowriter.md",
        "---\nname: isowriter\ndescription: writes in a worktree\ntools: bash\nisolation: worktree\n---\nYou write.\n",
    );
    let sc = s.write(
        "iso.lua",
        r#"return function(n)
  if (os.getenv("FEN_SUBAGENT_DEPTH") or "0") ~= "0" then
    if n == 1 then return { tool_calls = { { name = "bash", arguments = { command = "printf 'sub\\n' > sub.txt" } } } } end
    return { text = "child done" }
  end
  if n == 1 then return { tool_calls = { { name = "subagent", arguments = { agent = "isowriter", task = "write sub.txt" } } } } end
  return { text = "parent done" }
end"#,
    );
    let out = s.fen(&[
        "--mode",
        "json",
        "--no-session",
        "delegate",
        "--mock-script",
        sc.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool-result")
        .expect("a tool result");
    let text = result["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(text.contains("child done"), "{text}");
    assert!(
        text.contains("[worktree: branch fen/sa-") && text.contains("sub.txt"),
        "{text}"
    );
    // The child wrote in its worktree, not in the parent's tree.
    assert!(!cwd.join("sub.txt").exists());
    let wt = std::fs::read_dir(cwd.join(".fen/worktrees"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    assert_eq!(
        std::fs::read_to_string(wt.join("sub.txt")).unwrap(),
        "sub\n"
    );
}

#[test]
fn rewind_in_the_line_repl_lists_turns_and_restores() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, true);
    let before = tree(&cwd, false);
    let sc = script(
        &s,
        "repl.json",
        json!([{"tool_calls": [bash("printf 'changed\\n' > a.txt && rm src/lib.rs")]}, {"text": "edited"}]),
    );
    let out = s.fen_stdin(
        &["--presenter", "stdio", "--mock-script", &sc],
        "change it\n/rewind\n1\n3\n1\n",
        &[],
    );
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("turn 1: change it  [2 files: a.txt, src/lib.rs]"),
        "{text}"
    );
    assert!(
        text.contains("recreate src/lib.rs")
            && text.contains("restored 2 file(s) to before turn 1"),
        "{text}"
    );
    assert_eq!(tree(&cwd, false), before);
}

/// A directory outside every writable root of the sandbox (the Sandbox's HOME and state are
/// under /tmp, a root): the target directory, or /var/tmp when the clone (so the target) is
/// under /tmp or $TMPDIR.
fn outside_dir(name: &str) -> PathBuf {
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let target = std::fs::canonicalize(&target).unwrap_or(target);
    let temps: Vec<PathBuf> = [PathBuf::from("/tmp"), std::env::temp_dir()]
        .iter()
        .filter_map(|t| std::fs::canonicalize(t).ok())
        .collect();
    let base = if temps.iter().any(|t| target.starts_with(t)) {
        PathBuf::from("/var/tmp")
    } else {
        target
    };
    let d = base.join(format!("cp-outside-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `fen -w NAME` in auto mode: the sandbox's writable root is the worktree, not the checkout
/// it lives in. A sandboxed command (a script, so only the sandbox can stop it) writes inside
/// the worktree and commits there (the common dir's objects and refs are granted), but cannot
/// write a file in the main checkout nor plant a hook in the common git dir. A session in the
/// main checkout can write in `.fen/worktrees/` but not fen's settings in `.fen/`.
#[test]
fn the_sandboxs_writable_roots_follow_the_worktree() {
    if !have_git() {
        return;
    }
    if fen::native::sandbox::detect().tier != fen::native::sandbox::Tier::Bubblewrap {
        eprintln!("NOTICE: bubblewrap tier unavailable; worktree sandbox test skipped");
        return;
    }
    let s = Sandbox::new();
    let repo = outside_dir("wt-sandbox");
    std::fs::write(repo.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(
        repo.join("w.sh"),
        "main=$(cd ../../.. && pwd)\n\
         printf 'in\\n' > inside.txt && echo wrote-inside\n\
         printf 'out\\n' > \"$main/escaped.txt\" 2>/dev/null && echo ESCAPED || echo blocked-main\n\
         printf 'x\\n' > \"$main/.git/hooks/pre-commit\" 2>/dev/null && echo HOOKED || echo blocked-hook\n\
         git add inside.txt && git commit -qm 'in the worktree' && echo committed\n",
    )
    .unwrap();
    git(&repo, &["init", "-q"]);
    git(&repo, &["config", "user.name", "t"]);
    git(&repo, &["config", "user.email", "t@t"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "init"]);
    let config_before = std::fs::read(repo.join(".git/config")).unwrap();
    let sc = script(
        &s,
        "wt.json",
        json!([{"tool_calls": [bash("sh w.sh")]}, {"text": "ran it"}]),
    );
    let out = s
        .command(&[
            "-w",
            "boxed",
            "--permission-mode",
            "auto",
            "--mode",
            "json",
            "go",
            "--mock-script",
            &sc,
        ])
        .current_dir(&repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let result = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool-result")
        .map(|e| e["result"].to_string())
        .unwrap_or_default();
    let wt = repo.join(".fen/worktrees/boxed");
    assert!(result.contains("wrote-inside"), "{result}\n{stderr}");
    assert_eq!(
        std::fs::read_to_string(wt.join("inside.txt")).unwrap(),
        "in\n"
    );
    assert!(result.contains("blocked-main"), "{result}");
    assert!(!repo.join("escaped.txt").exists(), "{result}");
    assert!(result.contains("blocked-hook"), "{result}");
    assert!(!repo.join(".git/hooks/pre-commit").exists(), "{result}");
    assert_eq!(
        std::fs::read(repo.join(".git/config")).unwrap(),
        config_before
    );
    // The commit landed on the worktree's branch; the main checkout is as it was.
    assert!(result.contains("committed"), "{result}");
    let log = Command::new("git")
        .args(["log", "--format=%s", "fen/boxed"])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&log.stdout).contains("in the worktree"));
    assert!(!repo.join("inside.txt").exists());

    // A session in the main checkout: its read-only `.fen/` keeps fen's settings out of reach,
    // not `.fen/worktrees/` (a worktree's files are writable, its `.git` pointer is not).
    std::fs::write(
        repo.join("m.sh"),
        "printf 'm\\n' > .fen/worktrees/boxed/from-main.txt && echo wrote-worktree\n\
         printf '{}' > .fen/settings.json 2>/dev/null && echo SETTINGS || echo blocked-settings\n\
         printf 'x' > .fen/worktrees/boxed/.git 2>/dev/null && echo POINTER || echo blocked-pointer\n",
    )
    .unwrap();
    let sc = script(
        &s,
        "main.json",
        json!([{"tool_calls": [bash("sh m.sh")]}, {"text": "ran it"}]),
    );
    let out = s
        .command(&[
            "--permission-mode",
            "auto",
            "--mode",
            "json",
            "--no-session",
            "go",
            "--mock-script",
            &sc,
        ])
        .current_dir(&repo)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("wrote-worktree"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(wt.join("from-main.txt")).unwrap(),
        "m\n"
    );
    assert!(stdout.contains("blocked-settings"), "{stdout}");
    assert!(!repo.join(".fen/settings.json").exists());
    assert!(stdout.contains("blocked-pointer"), "{stdout}");
    assert!(std::fs::read_to_string(wt.join(".git"))
        .unwrap()
        .starts_with("gitdir:"));
    let _ = std::fs::remove_dir_all(&repo);
}

/// A fork (`-c --fork`) carries the checkpoints: the copy lists the original's turns, numbers
/// its own next turn after them, and rewinds to before the first one; the original session
/// file is left as it was.
#[test]
fn a_fork_keeps_the_checkpoints() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    let cwd = s.cwd();
    seed_repo(&cwd, true);
    let before = tree(&cwd, false);
    let sc = script(
        &s,
        "first.json",
        json!([{"tool_calls": [bash("printf 'one\\n' > a.txt && rm notes.md")]}, {"text": "one"}]),
    );
    assert!(s
        .fen(&["-p", "change things", "--mock-script", &sc])
        .status
        .success());
    let original = sessions(&s);
    assert_eq!(original.len(), 1);
    let original_text = std::fs::read_to_string(&original[0]).unwrap();
    let more = script(
        &s,
        "more.json",
        // The mock plays its script by the number of answers so far: two are carried over.
        json!([{"text": "unused"}, {"text": "unused"}, {"tool_calls": [bash("printf 'fork\\n' > fork.txt")]}, {"text": "forked"}]),
    );
    let out = s.fen(&["-c", "--fork", "-p", "in the fork", "--mock-script", &more]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(sessions(&s).len(), 2);
    assert_eq!(
        std::fs::read_to_string(&original[0]).unwrap(),
        original_text
    );
    // The fork is the latest session: both turns, the carried one with its commit.
    let list = list_json(&s, &[]);
    let turns = list["session"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{list}");
    assert_eq!(turns[0]["turn"], 2);
    assert_eq!(turns[0]["files"], json!(["fork.txt"]));
    assert_eq!(turns[1]["turn"], 1);
    assert!(turns[1]["commit"].as_str().is_some_and(|c| c.len() == 40));
    let out = s.fen(&["rewind", "--to", "1", "--code", "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(tree(&cwd, false), before);
}

/// The checkpoint refs (`refs/fen/...`) of the one shadow repository in the sandbox's state.
fn shadow_refs(s: &Sandbox) -> String {
    let shadow = std::fs::read_dir(s.state().join("fen/checkpoints"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let refs = Command::new("git")
        .args([
            "--git-dir",
            shadow.to_str().unwrap(),
            "for-each-ref",
            "--format=%(refname)",
            "refs/fen/",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&refs.stdout).into_owned()
}

/// The turn numbers `fen rewind --list --mode json` shows, newest first.
fn turn_numbers(list: &Value) -> Vec<u64> {
    list["session"]["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["turn"].as_u64().unwrap())
        .collect()
}
