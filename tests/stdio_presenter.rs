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
    cmd.args(["--mock-script", script.to_str().unwrap()])
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
