//! `/rewind` in the full-screen TUI and in inline mode, driven through a pty: Esc Esc on an
//! empty input (or `/rewind`) opens the list of turns, the choices restore code and
//! conversation, the files are back and the turn's prompt is in the input again.

use crate::common::{have_git, Sandbox, ECHO_PROMPTS};
use crate::tui::{script, start, Tui};
use std::time::Duration;

#[test]
fn esc_esc_opens_rewind_and_restores_code_and_conversation() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"bash","arguments":{"command":"printf 'changed\\n' > a.txt && rm -f gone.txt"}}]},{"text":"edited it"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("change the file\r");
    t.wait_for("edited it");
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("a.txt")).unwrap(),
        "changed\n"
    );
    // The turn ends (its closing snapshot) a moment after the answer shows; Esc while busy
    // would cancel instead.
    std::thread::sleep(Duration::from_millis(1500));
    t.send("\x1b");
    std::thread::sleep(Duration::from_millis(150));
    t.send("\x1b");
    let screen = t.wait_for("rewind to before which turn?");
    assert!(
        screen.contains("turn 1: change the file") && screen.contains("a.txt"),
        "{screen}"
    );
    t.send("\r");
    let screen = t.wait_for("restore code and conversation");
    assert!(
        screen.contains("restore conversation only") && screen.contains("restore code only"),
        "{screen}"
    );
    t.send("\r");
    t.wait_for("yes, restore");
    t.send("\r");
    t.wait_for("conversation rewound to before turn 1");
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("a.txt")).unwrap(),
        "alpha\n"
    );
    // The turn's prompt is back in the input.
    t.wait("the prompt in the input", |screen| {
        screen.lines().any(|l| l.starts_with("› change the file"))
    });
}

/// Inline mode (no alternate screen): `/rewind` typed, the older of two turns picked, code and
/// conversation restored: both turns' changes are undone (a changed file back, a created one
/// gone), the first turn's prompt is back in the input, and the session file now in use is a
/// branch while the old one is kept.
#[test]
fn rewind_in_inline_mode_restores_both_turns_and_the_prompt() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    let path = script(
        &s,
        r#"[{"tool_calls":[{"name":"bash","arguments":{"command":"printf 'changed\\n' > a.txt"}}]},{"text":"first done"},
            {"tool_calls":[{"name":"bash","arguments":{"command":"printf 'new\\n' > b.txt"}}]},{"text":"second done"}]"#,
    );
    let mut t = Tui::spawn_with(
        &s,
        &["--inline", "--mock-script", &path],
        100,
        30,
        &[],
        1000,
    );
    t.wait_for("Ask anything");
    assert!(!t.with_screen(|s| s.alternate_screen()), "inline mode");
    t.send("change a\r");
    t.wait_for("first done");
    // Each turn ends (its closing snapshot) a moment after its answer shows.
    std::thread::sleep(Duration::from_millis(1500));
    t.send("add b\r");
    t.wait_for("second done");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("a.txt")).unwrap(),
        "changed\n"
    );
    assert!(s.cwd().join("b.txt").exists());

    t.send("/rewind\r");
    let screen = t.wait_for("rewind to before which turn?");
    // Newest first, each with the file it changed.
    let (two, one) = (
        screen.find("turn 2: add b").unwrap_or(usize::MAX),
        screen.find("turn 1: change a").unwrap_or(usize::MAX),
    );
    assert!(two < one && one != usize::MAX, "{screen}");
    assert!(
        screen.contains("b.txt") && screen.contains("a.txt"),
        "{screen}"
    );
    assert!(!t.with_screen(|s| s.alternate_screen()), "still inline");
    t.send("\x1b[B");
    std::thread::sleep(Duration::from_millis(150));
    t.send("\r");
    let screen = t.wait_for("restore code and conversation");
    assert!(
        screen.contains("restore conversation only") && screen.contains("restore code only"),
        "{screen}"
    );
    t.send("\r");
    // The diff summary comes before the confirmation.
    let screen = t.wait_for("yes, restore");
    assert!(
        screen.contains("restore 2 file(s) to before turn 1"),
        "{screen}"
    );
    t.send("\r");
    t.wait_for("conversation rewound to before turn 1");
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("a.txt")).unwrap(),
        "alpha\n"
    );
    assert!(
        !s.cwd().join("b.txt").exists(),
        "the created file is removed"
    );
    t.wait("the first prompt in the input", |screen| {
        screen.lines().any(|l| l.starts_with("› change a"))
    });
    // One session file, appended to: the branch is inside it, the old branch kept.
    let mut files = Vec::new();
    for d in std::fs::read_dir(s.state().join("fen/sessions"))
        .unwrap()
        .flatten()
    {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            if f.path().extension().is_some_and(|e| e == "jsonl") {
                files.push(std::fs::read_to_string(f.path()).unwrap());
            }
        }
    }
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].contains("\"type\":\"branch\""), "{files:?}");
    assert!(files[0].contains("second done"), "{files:?}");
    // /sessions lists the old branch; /resume takes its id and brings its 8 messages back.
    t.send("\x15");
    std::thread::sleep(Duration::from_millis(150));
    t.send("/sessions\r");
    let screen = t.wait("the old branch listed", |screen| {
        screen
            .lines()
            .any(|l| l.contains("branch ") && l.contains(" msgs"))
    });
    let leaf = screen
        .lines()
        .filter(|l| l.contains(" msgs"))
        .find_map(|l| l.split("branch ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("{screen}"))
        .to_string();
    assert!(screen.contains("add b"), "{screen}");
    t.send(&format!("/resume {leaf}\r"));
    t.wait_for("(8 messages)");
    // Killed now, the session resumes on the branch it switched to: the first two prompts.
    t.kill9();
    let echo = s.write("echo.lua", ECHO_PROMPTS);
    let out = s.fen(&["-c", "-p", "after", "--mock-script", echo.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("saw[change a|add b|after]"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The line REPL on a terminal: `/rewind`'s menus answered by number, the file is back, and the
/// next line starts with the rewound turn's prompt, ready to edit.
#[test]
fn rewind_in_the_line_repl_on_a_terminal_puts_the_prompt_back_in_the_line() {
    if !have_git() {
        return;
    }
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    let path = script(
        &s,
        r#"[{"tool_calls":[{"name":"bash","arguments":{"command":"printf 'changed\\n' > a.txt"}}]},{"text":"edited it"}]"#,
    );
    let mut t = Tui::spawn(
        &s,
        &["--presenter", "stdio", "--mock-script", &path],
        100,
        30,
        &[],
    );
    t.wait_for("you>");
    t.send("change the file\r");
    t.wait_for("edited it");
    t.wait("the next prompt", |screen| {
        screen.matches("you>").count() >= 2
    });
    t.send("/rewind\r");
    t.wait_for("1. turn 1: change the file  [1 file: a.txt]");
    t.send("1\r");
    t.wait_for("3. restore code only");
    t.send("1\r");
    t.wait_for("1. yes, restore");
    t.send("1\r");
    t.wait_for("conversation rewound to before turn 1");
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("a.txt")).unwrap(),
        "alpha\n"
    );
    t.wait("the prompt back in the line", |screen| {
        screen
            .lines()
            .any(|l| l.starts_with("you> change the file"))
    });
    // It is an editable line: what is typed goes after it and is sent with it.
    t.send(" again\r");
    t.wait_for("you> change the file again");
}
