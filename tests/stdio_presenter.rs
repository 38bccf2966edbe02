//! The line REPL (`fen` with piped stdin): prefixes, slash commands, starting without a
//! provider, and quitting at end of input.

use crate::common;
use common::Sandbox;

fn repl(s: &Sandbox, args: &[&str], input: &str, env: &[(&str, &str)]) -> (String, i32) {
    let out = s.fen_stdin(args, input, env);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn the_repl_runs_turns_and_commands_with_prefixes() {
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    let script = s.write(
        "script.json",
        r#"[{"tool_calls":[{"name":"read","arguments":{"path":"a.txt"}}]},{"text":"It says alpha."},{"text":"Second answer."}]"#,
    );
    let (out, code) = repl(
        &s,
        &["--mock-script", script.to_str().unwrap()],
        "what is in a.txt?\n/help\n/nope\nand again\n",
        &[],
    );
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(&"tool> run read a.txt"), "{out}");
    assert!(
        lines.iter().any(|l| l.starts_with("tool> ok read a.txt")),
        "{out}"
    );
    assert!(lines.contains(&"ai> It says alpha."), "{out}");
    assert!(lines.iter().any(|l| l.contains("/reload")), "{out}");
    assert!(
        lines.contains(&"err> unknown command: /nope (try /help)"),
        "{out}"
    );
    assert!(lines.contains(&"ai> Second answer."), "{out}");
    // Order: the answer to the first line comes before /help's listing.
    let answer = out.find("It says alpha").unwrap();
    let help = out.find("/reload").unwrap();
    assert!(answer < help);
}

/// `/reload` re-registers the presenter's handlers while its loop goes on: the answers after it
/// are printed like those before (they were silently dropped).
#[test]
fn answers_after_reload_are_printed() {
    let s = Sandbox::new();
    let script = s.write(
        "script.json",
        r#"[{"text":"before reload"},{"tool_calls":[{"name":"read","arguments":{"path":"a.txt"}}]},{"text":"after reload"}]"#,
    );
    s.write("work/a.txt", "alpha\n");
    let (out, code) = repl(
        &s,
        &["--mock-script", script.to_str().unwrap()],
        "one\n/reload\ntwo\n",
        &[],
    );
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines.contains(&"ai> before reload"), "{out}");
    assert!(lines.contains(&"tool> run read a.txt"), "{out}");
    assert!(lines.contains(&"ai> after reload"), "{out}");
}

#[test]
fn the_repl_starts_without_a_provider_and_says_how_to_configure_one() {
    let s = Sandbox::new();
    let (out, code) = repl(&s, &[], "hello\n", &[]);
    assert_eq!(code, 0);
    assert!(
        out.contains("err> no provider is configured") && out.contains("--mock-script"),
        "{out}"
    );
}

#[test]
fn settings_json_picks_the_default_provider_and_models_are_listed() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"defaultProvider": "anthropic", "unknown": 1}"#,
    );
    let (out, _) = repl(&s, &[], "hi\n", &[]);
    assert!(
        out.contains("err> anthropic needs an API key: set ANTHROPIC_API_KEY"),
        "{out}"
    );
    s.write(
        "config/fen/settings.json",
        r#"{"provider": "openai", "model": "gpt-4.1"}"#,
    );
    let (out, _) = repl(&s, &[], "hi\n", &[]);
    assert!(
        out.contains("err> openai needs an API key: set OPENAI_API_KEY"),
        "{out}"
    );
    let models = s.fen_json(&["list", "models", "--json"]);
    assert!(models
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["provider"] == "anthropic" && m["id"].is_string()));
}

/// A REPL on a real terminal (a pty): the first line is `you>`-prompted; Ctrl-C cancels the
/// running turn and the REPL goes on; Ctrl-C at the idle prompt says how to quit, and a second
/// press quits with 130.
#[test]
fn on_a_terminal_ctrl_c_cancels_the_turn_and_twice_at_the_prompt_quits() {
    use std::io::{Read, Write};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let s = Sandbox::new();
    let script = s.write(
        "script.json",
        r#"[{"text":"never shown","delay_ms":20000},{"text":"Second answer."}]"#,
    );
    // A pty pair from libc (no extra crate for a test).
    let (master, slave_path) = unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(m >= 0, "posix_openpt failed");
        assert_eq!(libc::grantpt(m), 0);
        assert_eq!(libc::unlockpt(m), 0);
        let mut buf = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(m, buf.as_mut_ptr(), buf.len()), 0);
        let path = std::ffi::CStr::from_ptr(buf.as_ptr())
            .to_string_lossy()
            .into_owned();
        (OwnedFd::from_raw_fd(m), path)
    };
    let slave = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&slave_path)
        .unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fen"));
    // On a terminal the TUI is the default; this test is about the line REPL.
    cmd.args([
        "--presenter",
        "stdio",
        "--mock-script",
        script.to_str().unwrap(),
    ])
    .current_dir(s.cwd())
    .env("HOME", s.root())
    .env("XDG_CONFIG_HOME", s.config())
    .env("XDG_STATE_HOME", s.state())
    .stdin(slave.try_clone().unwrap())
    .stdout(slave.try_clone().unwrap())
    .stderr(slave);
    // Its own session with the pty as controlling terminal, so ^C becomes SIGINT for it.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let mut writer = std::fs::File::from(master.try_clone().unwrap());
    let mut reader = std::fs::File::from(master);
    let screen = Arc::new(Mutex::new(String::new()));
    let sink = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let wait_for = |needle: &str, after: usize| -> usize {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = screen.lock().unwrap().clone();
            if let Some(i) = text[after.min(text.len())..].find(needle) {
                return after + i + needle.len();
            }
            assert!(
                Instant::now() < deadline,
                "no {needle:?} on the screen:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let at = wait_for("you> ", 0);
    writer.write_all(b"a slow task\r").unwrap();
    // The turn is running (the mock waits 20 s); give it a moment to start, then ^C.
    std::thread::sleep(Duration::from_millis(500));
    writer.write_all(b"\x03").unwrap();
    let cancelled_at = Instant::now();
    let at = wait_for("info> cancelled", at);
    assert!(
        cancelled_at.elapsed() < Duration::from_secs(10),
        "the cancel took too long"
    );
    let at = wait_for("you> ", at);
    writer.write_all(b"and now?\r").unwrap();
    let at = wait_for("ai> Second answer.", at);
    let at = wait_for("you> ", at);
    // Far enough from the first ^C that the next one counts as a fresh press.
    std::thread::sleep(Duration::from_millis(2200).saturating_sub(cancelled_at.elapsed()));
    writer.write_all(b"\x03").unwrap();
    wait_for("press Ctrl-C again to quit", at);
    assert!(
        child.try_wait().unwrap().is_none(),
        "one ^C at the prompt must not quit"
    );
    writer.write_all(b"\x03").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "a second ^C did not quit");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert!(!screen.lock().unwrap().contains("never shown"));
}

/// `fen ARGS` on a pty of its own (stdin, stdout and stderr), and what it has printed so far.
struct Pty {
    child: std::process::Child,
    writer: std::fs::File,
    screen: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Pty {
    fn spawn(s: &Sandbox, args: &[&str]) -> Pty {
        use std::io::Read;
        use std::os::fd::{FromRawFd, OwnedFd};
        use std::os::unix::process::CommandExt;
        // SAFETY: plain libc pty calls on a descriptor we own; checked results.
        let (master, slave_path) = unsafe {
            let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
            assert!(m >= 0, "posix_openpt failed");
            assert_eq!(libc::grantpt(m), 0);
            assert_eq!(libc::unlockpt(m), 0);
            let mut buf = [0 as libc::c_char; 128];
            assert_eq!(libc::ptsname_r(m, buf.as_mut_ptr(), buf.len()), 0);
            let path = std::ffi::CStr::from_ptr(buf.as_ptr())
                .to_string_lossy()
                .into_owned();
            (OwnedFd::from_raw_fd(m), path)
        };
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&slave_path)
            .unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fen"));
        // On a terminal the TUI is the default; these tests are about the line REPL.
        cmd.args(["--presenter", "stdio"])
            .args(args)
            .current_dir(s.cwd())
            .env("HOME", s.root())
            .env("XDG_CONFIG_HOME", s.config())
            .env("XDG_STATE_HOME", s.state())
            .env("TERM", "xterm")
            .stdin(slave.try_clone().unwrap())
            .stdout(slave.try_clone().unwrap())
            .stderr(slave);
        // SAFETY: setsid and TIOCSCTTY in the child before exec, as a terminal emulator does.
        unsafe {
            cmd.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY, 0) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = cmd.spawn().unwrap();
        let writer = std::fs::File::from(master.try_clone().unwrap());
        let mut reader = std::fs::File::from(master);
        let screen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = screen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Pty {
            child,
            writer,
            screen,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        self.writer.write_all(bytes).unwrap();
    }

    fn text(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits for `needle` after byte `after` of the screen; returns where it ends.
    fn wait_for(&self, needle: &str, after: usize) -> usize {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let text = self.text();
            if let Some(i) = text[after.min(text.len())..].find(needle) {
                return after + i + needle.len();
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no {needle:?} on the screen:\n{text}"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    fn wait_exit(&mut self) -> i32 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st.code().unwrap_or(-1);
            }
            assert!(
                std::time::Instant::now() < deadline,
                "fen did not exit:\n{}",
                self.text()
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The user messages of the sandbox's only session.
fn user_lines(s: &Sandbox) -> Vec<String> {
    let root = s.state().join("fen/sessions");
    let mut out = Vec::new();
    for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
        for f in std::fs::read_dir(dir.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            let text = std::fs::read_to_string(f.path()).unwrap_or_default();
            for line in text.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
                if v["message"]["role"] == "user" {
                    out.push(v["message"]["content"].as_str().unwrap_or("").to_string());
                }
            }
        }
    }
    out
}

/// Issue 11.14: arrow keys reached the model as `\x1b[A\x1b[D` (and became the session title).
/// Without a terminal they are dropped, and said so.
#[test]
fn arrow_keys_reach_the_model_as_escape_sequences_without_a_terminal() {
    let s = Sandbox::new();
    let script = s.write("script.json", r#"[{"text":"ok"}]"#);
    let (out, code) = repl(
        &s,
        &["--mock-script", script.to_str().unwrap()],
        "\u{1b}[A\u{1b}[Dhello\n",
        &[],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("info> 2 escape sequence(s) removed"), "{out}");
    assert_eq!(user_lines(&s), vec!["hello".to_string()]);
}

/// Issue 11.14: on a terminal the line REPL edits the line with the cursor keys and keeps a
/// history (Up recalls the last line).
#[test]
fn arrow_keys_reach_the_model_as_escape_sequences_on_a_terminal() {
    let s = Sandbox::new();
    let script = s.write("script.json", r#"[{"text":"one"},{"text":"two"}]"#);
    let mut pty = Pty::spawn(&s, &["--mock-script", script.to_str().unwrap()]);
    let at = pty.wait_for("you> ", 0);
    // "helo", Left, "l": the cursor edits the line into "hello".
    pty.send(b"helo\x1b[Dl\r");
    let at = pty.wait_for("ai> one", at);
    let at = pty.wait_for("you> ", at);
    // Up: the history brings "hello" back.
    pty.send(b"\x1b[A\r");
    let at = pty.wait_for("ai> two", at);
    pty.wait_for("you> ", at);
    pty.send(b"/quit\r");
    assert_eq!(pty.wait_exit(), 0);
    assert_eq!(
        user_lines(&s),
        vec!["hello".to_string(), "hello".to_string()]
    );
    let history = std::fs::read_to_string(s.state().join("fen/repl-history")).unwrap();
    assert!(history.contains("hello"), "{history}");
}

/// Issue 11.15: a line typed during a turn was queued silently, and its answer started after a
/// bare `you> `; Ctrl-D left no newline.
#[test]
fn a_line_typed_during_a_turn_is_queued_silently() {
    let s = Sandbox::new();
    let script = s.write(
        "script.json",
        r#"[{"text":"slow one","delay_ms":1500},{"text":"second"}]"#,
    );
    let mut pty = Pty::spawn(&s, &["--mock-script", script.to_str().unwrap()]);
    let at = pty.wait_for("you> ", 0);
    pty.send(b"first\r");
    // Typed while the first turn runs (a delay to be inside the turn, not a speed check).
    std::thread::sleep(std::time::Duration::from_millis(400));
    pty.send(b"typed ahead\r");
    let at = pty.wait_for("ai> slow one", at);
    let at = pty.wait_for("info> a line typed during the turn was queued", at);
    let at = pty.wait_for("ai> second", at);
    pty.wait_for("you> ", at);
    pty.send(b"\x04");
    assert_eq!(pty.wait_exit(), 0);
    let screen = pty.text();
    let after_prompt = &screen[screen.rfind("you> ").unwrap()..];
    assert!(
        after_prompt.contains("\r\n"),
        "Ctrl-D left no newline: {screen:?}"
    );
    assert_eq!(
        user_lines(&s),
        vec!["first".to_string(), "typed ahead".to_string()]
    );
}

/// Issue 11.15: `/quit` and `/exit` did not quit.
#[test]
fn quit_and_exit_do_not_quit() {
    for cmd in ["/quit", "/exit"] {
        let s = Sandbox::new();
        let script = s.write("script.json", r#"[{"text":"never"}]"#);
        let (out, code) = repl(
            &s,
            &["--mock-script", script.to_str().unwrap()],
            &format!("{cmd}\nnot sent\n"),
            &[],
        );
        assert_eq!(code, 0, "{out}");
        assert!(
            !out.contains("never") && !out.contains("unknown command"),
            "{out}"
        );
    }
}

/// Issue 11.15: a failed tool row showed only `tool> err bash (1 line, 46B)`.
#[test]
fn a_failed_tool_row_shows_only_its_size() {
    let s = Sandbox::new();
    let script = s.write(
        "script.json",
        r#"[{"tool_calls":[{"name":"bash","arguments":{"command":"echo boom-reason; exit 3"}}]},{"text":"done"}]"#,
    );
    let (out, code) = repl(
        &s,
        &["--mock-script", script.to_str().unwrap()],
        "go\n",
        &[],
    );
    assert_eq!(code, 0, "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("tool> err bash"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.ends_with(": boom-reason"), "{row}");
}

/// `--on-ask parent` speaks a protocol with the parent fen over stdin; typed at a terminal it
/// would wait for answers nobody can see, so it is refused with what to use instead.
#[test]
fn on_ask_parent_at_a_terminal_is_refused() {
    let s = Sandbox::new();
    let mut pty = Pty::spawn(&s, &["-p", "hello", "--on-ask", "parent"]);
    pty.wait_for("--on-ask parent is for subagent children", 0);
    assert_eq!(pty.wait_exit(), 2, "{}", pty.text());
}
