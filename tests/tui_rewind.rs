//! `/rewind` in the full-screen TUI, driven through a pty: Esc Esc on an empty input opens the
//! list of turns, the choices restore code and conversation, the file is back and the turn's
//! prompt is in the input again.

use crate::common::Sandbox;
use crate::tui::start;
use std::time::Duration;

#[test]
fn esc_esc_opens_rewind_and_restores_code_and_conversation() {
    if std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: git is not installed");
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
