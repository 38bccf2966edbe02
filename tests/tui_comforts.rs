//! Everyday comforts of the TUI in a real pty: the `/` and `@` menu as you type (full screen
//! and inline), the context gauge in the status row, notifications when the terminal is not
//! focused (each sequence, tmux and screen wrapping, an approval's notification through a real
//! tmux and GNU screen, the user's command), `/context`'s breakdown, and a long tool row's
//! elapsed time.

use crate::common::Sandbox;
use crate::tui::{script, Tui};
use std::time::{Duration, Instant};

fn spawn(s: &Sandbox, json: &str, extra: &[&str], env: &[(&str, &str)]) -> Tui {
    let path = script(s, json);
    let mut args = vec!["--mock-script", path.as_str()];
    args.extend_from_slice(extra);
    // COLORFGBG: no OSC 11 query, so every BEL in the output is one fen meant.
    let mut env = env.to_vec();
    env.push(("COLORFGBG", "15;0"));
    Tui::spawn(s, &args, 100, 30, &env)
}

fn files(s: &Sandbox) {
    s.write("work/src/main.rs", "fn main() {}\n");
    s.write("work/src/menu_target.rs", "// target\n");
    s.write("work/docs/guide.md", "# guide\n");
    s.write("work/secret_build/out.bin", "x");
    s.write("work/.gitignore", "secret_build/\n");
    // The walker honours .gitignore inside a git repository.
    std::fs::create_dir_all(s.cwd().join(".git")).expect("mkdir .git");
}

fn menu_flow(inline: bool) {
    let s = Sandbox::new();
    files(&s);
    let extra: &[&str] = if inline { &["--inline"] } else { &[] };
    let mut t = spawn(&s, r#"[{"text": "ok"}]"#, extra, &[]);
    t.wait_for("/ for commands");
    // `/` alone opens the menu: commands with their descriptions.
    t.send("/");
    let screen = t.wait("the command menu", |s| {
        s.contains("/compact") && s.contains("/cost")
    });
    assert!(screen.contains("tokens and cost"), "{screen}");
    // Typing narrows it, fuzzily: "cst" finds /cost first.
    t.send("cst");
    t.wait("narrowed to /cost", |s| {
        s.contains("/cost") && !s.contains("/help")
    });
    // Esc closes it; typing on in the same word keeps it closed.
    t.send("\x1b");
    t.wait("menu closed", |s| !s.contains("/cost  Show"));
    // Clear the input, then @: the files, the ignored directory left out.
    t.send("\x15");
    t.send("look at @");
    let screen = t.wait("the file menu", |s| {
        s.contains("@src/main.rs") && s.contains("@docs/guide.md")
    });
    assert!(!screen.contains("secret_build"), "{screen}");
    t.send("mtarg");
    t.wait("narrowed to the target", |s| {
        s.contains("@src/menu_target.rs") && !s.contains("@docs/guide.md")
    });
    // Enter takes the file into the input (and does not submit).
    t.send("\r");
    t.wait("the path in the input", |s| {
        s.contains("look at @src/menu_target.rs") && !s.contains("@docs/guide.md")
    });
    // A command chosen with Enter runs at once.
    t.send("\x15");
    t.send("/cos");
    t.wait("the cost menu", |s| s.contains("/cost"));
    t.send("\r");
    t.wait("the /cost output", |s| s.contains("no model calls yet"));
}

#[test]
fn slash_and_at_open_the_menu_as_you_type() {
    menu_flow(false);
}

#[test]
fn the_menu_works_in_inline_mode_too() {
    menu_flow(true);
}

#[test]
fn the_status_row_shows_context_use_coloured_by_level() {
    let s = Sandbox::new();
    s.write(
        "config/fen/models.json",
        r#"{"models": {"mock/mock": {"limit": {"context": 10000}, "cost": {"input": 3, "output": 15}}}}"#,
    );
    let turns = r#"[
        {"text": "one", "usage": {"input": 2000, "output": 200, "cache_read": 1000}},
        {"text": "two", "usage": {"input": 6000, "output": 1000}},
        {"text": "three", "usage": {"input": 9000, "output": 500}}
    ]"#;
    let mut t = spawn(&s, turns, &[], &[]);
    // Before any call: 0 of the window.
    t.wait("the empty gauge", |s| s.contains("ctx 0% 0/10k"));
    let colour = |t: &Tui, text: &str| {
        t.with_screen(|sc| {
            let row = sc.contents_between(0, 0, 0, 100);
            let col = row.find(text).map(|i| row[..i].chars().count() as u16)?;
            sc.cell(0, col).map(|c| c.fgcolor())
        })
    };
    t.send("a\r");
    t.wait("32%", |s| s.contains("ctx 32% 3.2k/10k"));
    let calm = colour(&t, "ctx 32%");
    t.send("b\r");
    t.wait("70%", |s| s.contains("ctx 70% 7k/10k"));
    let warn = colour(&t, "ctx 70%");
    t.send("c\r");
    t.wait("95%", |s| s.contains("ctx 95% 9.5k/10k"));
    let alarm = colour(&t, "ctx 95%");
    assert_ne!(calm, warn);
    assert_ne!(warn, alarm);
    assert_ne!(calm, alarm);
    // The turn's usage line carries its dollars (9000 in at $3/M, 500 out at $15/M).
    t.wait("the turn's cost", |s| s.contains("$0.0345"));
    // /cost adds the session up by model.
    t.send("/cost\r");
    let screen = t.wait("the /cost report", |s| s.contains("mock/mock  3 calls"));
    assert!(screen.contains("$0.0"), "{screen}");
}

/// Runs one turn with the terminal unfocused (or focused) and returns the bytes fen wrote
/// from the moment the prompt was submitted: once `want` is among them, or (expecting
/// nothing) a second after the answer showed.
fn turn_output(
    env: &[(&str, &str)],
    focus: &str,
    settings: Option<&str>,
    want: Option<&[u8]>,
) -> (Sandbox, Vec<u8>) {
    let s = Sandbox::new();
    if let Some(text) = settings {
        s.write("config/fen/settings.json", text);
    }
    let mut t = spawn(&s, r#"[{"text": "all done here"}]"#, &[], env);
    t.wait_for("/ for commands");
    t.send(focus);
    let from = t.raw.lock().expect("raw").len();
    t.send("go\r");
    t.wait_for("all done here");
    let start = Instant::now();
    loop {
        let raw = t.raw.lock().expect("raw")[from..].to_vec();
        let found = want.is_some_and(|w| contains(&raw, w));
        // A hang bound, not a speed claim.
        let waited = start.elapsed() > Duration::from_secs(if want.is_some() { 10 } else { 1 });
        if found || waited {
            return (s, raw);
        }
        std::thread::sleep(Duration::from_millis(30));
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

const FOCUS_OUT: &str = "\x1b[O";
const FOCUS_IN: &str = "\x1b[I";

#[test]
fn each_terminal_gets_its_notification_sequence() {
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a [u8]);
    let cases: &[Case] = &[
        (&[("TERM_PROGRAM", "WezTerm")], b"\x1b]9;fen: turn done: all done here\x07"),
        (&[("TERM_PROGRAM", "iTerm.app")], b"\x1b]9;fen: turn done: all done here\x07"),
        (&[("TERM_PROGRAM", "ghostty")], b"\x1b]9;fen: turn done"),
        (&[("TERM", "foot")], b"\x1b]777;notify;fen: turn done;all done here\x07"),
        (&[("TERM", "xterm-kitty")], b"\x1b]99;i=fen:d=0:p=title;fen: turn done\x07\x1b]99;i=fen:d=1:p=body;all done here\x07"),
        // tmux: DCS passthrough with the ESC doubled; screen: a plain DCS.
        (&[("TERM_PROGRAM", "WezTerm"), ("TMUX", "/tmp/tmux-0/default,1,0")], b"\x1bPtmux;\x1b\x1b]9;fen: turn done: all done here\x07\x1b\\"),
        (&[("TERM_PROGRAM", "WezTerm"), ("STY", "1.pts-0.host")], b"\x1bP\x1b]9;fen: turn done: all done here\x07\x1b\\"),
    ];
    for (env, want) in cases {
        let (_s, raw) = turn_output(env, FOCUS_OUT, None, Some(want));
        assert!(
            contains(&raw, want),
            "{env:?}: expected {:?} in {:?}",
            String::from_utf8_lossy(want),
            String::from_utf8_lossy(&raw)
        );
    }
}

#[test]
fn the_bell_is_the_fallback_and_a_focused_terminal_gets_nothing() {
    // An unknown terminal rings the bell.
    let (_s, raw) = turn_output(&[], FOCUS_OUT, None, Some(b"\x07"));
    assert!(
        raw.contains(&0x07),
        "no bell in {:?}",
        String::from_utf8_lossy(&raw)
    );
    // Focused: nothing at all.
    let (_s, raw) = turn_output(&[("TERM_PROGRAM", "WezTerm")], FOCUS_IN, None, None);
    assert!(!raw.contains(&0x07), "{:?}", String::from_utf8_lossy(&raw));
    // A method chosen in settings wins over the terminal's; `off` and an event left out of
    // `on` send nothing.
    let (_s, raw) = turn_output(
        &[("TERM_PROGRAM", "WezTerm")],
        FOCUS_OUT,
        Some(r#"{"notifications": {"method": "osc777"}}"#),
        Some(b"\x1b]777;notify;"),
    );
    assert!(
        contains(&raw, b"\x1b]777;notify;"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
    let (_s, raw) = turn_output(
        &[("TERM_PROGRAM", "WezTerm")],
        FOCUS_OUT,
        Some(r#"{"notifications": {"method": "off"}}"#),
        None,
    );
    assert!(!raw.contains(&0x07), "{:?}", String::from_utf8_lossy(&raw));
    let (_s, raw) = turn_output(
        &[("TERM_PROGRAM", "WezTerm")],
        FOCUS_OUT,
        Some(r#"{"notifications": {"on": ["approval"]}}"#),
        None,
    );
    assert!(!raw.contains(&0x07), "{:?}", String::from_utf8_lossy(&raw));
}

#[test]
fn the_notification_command_gets_the_event_as_json_without_secrets() {
    let probe = tempfile::tempdir().expect("tempdir");
    let out = probe.path().join("event.json");
    let cmd = format!(
        "cat > '{0}.tmp'; printf '%s' \"${{OPENAI_API_KEY:-no key}}\" > '{0}.env'; mv '{0}.tmp' '{0}'",
        out.display()
    );
    let settings =
        serde_json::json!({"notifications": {"method": "off", "command": cmd}}).to_string();
    let (_s, _raw) = turn_output(
        &[("OPENAI_API_KEY", "sk-secret-value")],
        FOCUS_OUT,
        Some(&settings),
        None,
    );
    let start = Instant::now();
    while !out.exists() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&out).expect("the command ran");
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON on stdin");
    assert_eq!(v["type"], "turn_end");
    assert_eq!(v["body"], "all done here");
    let env = std::fs::read_to_string(out.with_extension("json.env")).expect("env probe");
    assert_eq!(env, "no key");
}

#[test]
fn bad_notification_settings_are_named() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"notifications": {"method": "loud", "on": ["turn_end", "lunch"]}}"#,
    );
    let t = spawn(&s, r#"[{"text": "x"}]"#, &[], &[]);
    let screen = t.wait("the problems", |s| {
        s.contains("notifications.method") && s.contains("lunch")
    });
    assert!(screen.contains("osc9"), "{screen}");
}

#[test]
fn a_long_tool_row_shows_its_elapsed_time_and_last_output_line() {
    let s = Sandbox::new();
    let turns = r#"[
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo first; echo working-on-it; sleep 4; echo end"}}]},
        {"text": "finished"}
    ]"#;
    let mut t = spawn(&s, turns, &[], &[]);
    t.wait_for("/ for commands");
    t.send("run it\r");
    let screen = t.wait("elapsed time on the running row", |s| {
        s.contains("working-on-it") && (s.contains("  2s") || s.contains("  3s"))
    });
    assert!(screen.contains("tool> run $ echo first"), "{screen}");
    let screen = t.wait_for("finished");
    assert!(screen.contains("exit 0"), "{screen}");
}

#[test]
fn an_approval_waiting_notifies_an_unfocused_terminal() {
    let s = Sandbox::new();
    // The default mode asks before a shell command that writes.
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "default"}}"#,
    );
    let turns = r#"[
        {"tool_calls": [{"name": "bash", "arguments": {"command": "touch made.txt"}}]},
        {"text": "over"}
    ]"#;
    let mut t = spawn(&s, turns, &[], &[("TERM_PROGRAM", "WezTerm")]);
    t.wait_for("/ for commands");
    t.send(FOCUS_OUT);
    t.send("make it\r");
    t.wait("the approval overlay", |s| {
        s.contains("y  ") || s.contains("yes")
    });
    let want: &[u8] = b"\x1b]9;fen needs your approval";
    let start = Instant::now();
    while !contains(&t.raw.lock().expect("raw"), want) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "no approval notification"
        );
        std::thread::sleep(Duration::from_millis(30));
    }
    t.send("n");
    t.wait_for("over");
}

/// `name` on PATH.
fn on_path(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Ends a multiplexer's server (it outlives the client in the pty) when the test ends.
struct Stop(std::process::Command);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self
            .0
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// fen runs inside a real multiplexer (`program args…`, then fen's own arguments) in the
/// pty; a turn waits 5.5 s before asking an approval, so the terminal (which reports no
/// focus through the multiplexer) counts as unfocused. Returns when the plain OSC 9
/// notification reached the outer terminal, with the bytes it got.
fn approval_through(s: &Sandbox, program: &str, args: &[String], env: &[(&str, &str)]) -> Vec<u8> {
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "default"}}"#,
    );
    let turns = r#"[
        {"delay_ms": 5500, "tool_calls": [{"name": "bash", "arguments": {"command": "touch made.txt"}}]},
        {"text": "over"}
    ]"#;
    let path = script(s, turns);
    let fen = env!("CARGO_BIN_EXE_fen");
    let mut argv: Vec<&str> = args.iter().map(String::as_str).collect();
    argv.extend([fen, "--mock-script", path.as_str()]);
    // WEZTERM_PANE survives into the multiplexer (TERM_PROGRAM does not): `auto` picks OSC 9.
    let mut env = env.to_vec();
    env.extend([("WEZTERM_PANE", "0"), ("COLORFGBG", "15;0")]);
    let mut t = Tui::spawn_program(s, program, &argv, (100, 30, 0), &env);
    t.wait_for("/ for commands");
    t.send("make it\r");
    let want: &[u8] = b"\x1b]9;fen needs your approval: ";
    let start = Instant::now();
    while !contains(&t.raw.lock().expect("raw"), want) {
        // A hang bound, not a speed claim.
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no approval notification reached the outer terminal; screen:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    t.wait("the approval overlay", |s| s.contains("touch made.txt"));
    let raw = t.raw.lock().expect("raw").clone();
    t.send("n");
    raw
}

#[test]
fn an_approval_notification_passes_through_a_real_tmux() {
    let Some(tmux) = on_path("tmux") else {
        eprintln!("notice: tmux is not installed; the tmux passthrough test is skipped");
        return;
    };
    let s = Sandbox::new();
    // Passthrough is off by default (tmux 3.3+): the person turns it on, as fen's docs say.
    let conf = s.write(
        "tmux.conf",
        "set -g allow-passthrough on\nset -g status off\n",
    );
    let sock = s.root().join("tmux.sock");
    let tmux = tmux.to_string_lossy().into_owned();
    let mut stop = std::process::Command::new(&tmux);
    stop.arg("-S").arg(&sock).arg("kill-server");
    let _stop = Stop(stop);
    let args: Vec<String> = [
        "-S",
        &sock.to_string_lossy(),
        "-f",
        &conf.to_string_lossy(),
        "new-session",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let raw = approval_through(&s, &tmux, &args, &[]);
    // tmux unwrapped fen's DCS passthrough: the outer terminal got the plain sequence (an
    // unwrapped OSC 9 from a pane is dropped by tmux, so this also proves fen wrapped it).
    assert!(
        !contains(&raw, b"\x1bPtmux;"),
        "the wrapper leaked: {:?}",
        String::from_utf8_lossy(&raw)
    );
}

#[test]
fn an_approval_notification_passes_through_a_real_screen() {
    let Some(screen) = on_path("screen") else {
        eprintln!("notice: GNU screen is not installed; the screen passthrough test is skipped");
        return;
    };
    let s = Sandbox::new();
    let conf = s.write("screenrc", "startup_message off\n");
    let dir = s.root().join("screens");
    std::fs::create_dir_all(&dir).expect("mkdir");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    let name = format!("fen-test-{}", std::process::id());
    let screen = screen.to_string_lossy().into_owned();
    let mut stop = std::process::Command::new(&screen);
    stop.env("SCREENDIR", &dir)
        .args(["-S", &name, "-X", "quit"]);
    let _stop = Stop(stop);
    let args: Vec<String> = ["-S", &name, "-c", &conf.to_string_lossy()]
        .iter()
        .map(|a| a.to_string())
        .collect();
    let dir = dir.to_string_lossy().into_owned();
    let raw = approval_through(&s, &screen, &args, &[("SCREENDIR", &dir)]);
    assert!(
        !contains(&raw, b"\x1bP\x1b]9;"),
        "the wrapper leaked: {:?}",
        String::from_utf8_lossy(&raw)
    );
}

#[test]
fn slash_context_breaks_the_context_down_by_part() {
    let s = Sandbox::new();
    s.write("work/AGENTS.md", "Answer in haiku.\n");
    s.write("work/big.txt", &"lorem ipsum dolor\n".repeat(1500));
    let path = script(
        &s,
        r#"[{"tool_calls": [{"name": "read", "arguments": {"path": "big.txt"}}]}, {"text": "read it"}]"#,
    );
    let mut t = Tui::spawn(
        &s,
        &["--mock-script", &path],
        120,
        70,
        &[("COLORFGBG", "15;0")],
    );
    t.wait_for("/ for commands");
    t.send("read the big file\r");
    t.wait_for("read it");
    t.send("/context\r");
    let screen = t.wait("the breakdown", |s| {
        s.contains("Largest items") && s.contains("read result big.txt")
    });
    for part in [
        "Context by part",
        "system prompt",
        "tools' schemas",
        "MCP tools",
        "AGENTS.md and context files",
        "skills",
        "messages",
    ] {
        assert!(screen.contains(part), "{part}: {screen}");
    }
    assert!(screen.contains("AGENTS.md ("), "the context file: {screen}");
}
