//! The TUI's code and diff views in a real pty (see tests/tui.rs for the harness): fenced code
//! highlighted (and not under NO_COLOR, nor past the size caps), edit/write results as diffs
//! folded under their rows and expanded by Ctrl-O (unified, side by side over 160 columns),
//! bash rows with the command highlighted and a failed exit in the error colour.

use crate::common::Sandbox;
use crate::tui::{script, start, Tui};
use vt100::Color;

const MAGENTA: Color = Color::Idx(5);
const CYAN: Color = Color::Idx(6);
const RED: Color = Color::Idx(1);
const GREEN: Color = Color::Idx(2);
const BLUE: Color = Color::Idx(4);

/// (row, column) of the first cell of `needle` on screen, searching rows top-down.
fn find(t: &Tui, needle: &str) -> Option<(u16, u16)> {
    find_in(t, needle, |_| true)
}

fn find_in(t: &Tui, needle: &str, row_ok: impl Fn(&str) -> bool) -> Option<(u16, u16)> {
    t.rows().iter().enumerate().find_map(|(r, line)| {
        if !row_ok(line) {
            return None;
        }
        let i = line.find(needle)?;
        Some((r as u16, line[..i].chars().count() as u16))
    })
}

fn fg(t: &Tui, at: (u16, u16)) -> Color {
    t.with_screen(|s| s.cell(at.0, at.1).map_or(Color::Default, |c| c.fgcolor()))
}

/// Waits until the cell starting `needle` (in a row passing `row_ok`) has foreground `want`.
fn wait_fg(t: &Tui, needle: &str, row_ok: impl Fn(&str) -> bool + Copy, want: Color) {
    t.wait(&format!("{needle:?} in {want:?}"), |_| {
        find_in(t, needle, row_ok).is_some_and(|at| fg(t, at) == want)
    });
}

fn answer(json_text: &str) -> String {
    format!(
        r#"[{{"text":{}}}]"#,
        serde_json::to_string(json_text).unwrap()
    )
}

#[test]
fn a_fenced_code_block_is_highlighted() {
    let s = Sandbox::new();
    let mut t = start(
        &s,
        &answer("Here:\n\n```rust\nfn main() {\n    let total = 1;\n}\n```\n\nend of answer"),
    );
    t.wait_for("Ask anything");
    t.send("show code\r");
    t.wait_for("end of answer");
    // The keyword takes the keyword colour once the worker is done; plain text stays default.
    wait_fg(&t, "let total", |_| true, MAGENTA);
    let ident = find(&t, "total").unwrap();
    assert_eq!(fg(&t, ident), Color::Default, "{}", t.screen());
    let name = find(&t, "main").unwrap();
    assert_eq!(fg(&t, name), BLUE, "{}", t.screen());
}

#[test]
fn no_color_leaves_code_uncoloured() {
    let s = Sandbox::new();
    let path = script(
        &s,
        &answer("```rust\nfn main() {\n    let total = 1;\n}\n```\n\n```python\ndef f():\n    return 2\n```\n\nend of answer"),
    );
    let mut t = Tui::spawn(&s, &["--mock-script", &path], 100, 30, &[("NO_COLOR", "1")]);
    t.wait_for("Ask anything");
    t.send("show code\r");
    t.wait_for("end of answer");
    // Give a worker, if one ran, time to land (it takes milliseconds).
    std::thread::sleep(std::time::Duration::from_millis(800));
    t.send("x");
    t.wait_for("› x");
    let coloured = t.with_screen(|sc| {
        (0..30u16)
            .flat_map(|r| (0..100u16).map(move |c| (r, c)))
            .filter(|&(r, c)| {
                sc.cell(r, c)
                    .is_some_and(|cell| cell.fgcolor() != Color::Default)
            })
            .count()
    });
    assert_eq!(coloured, 0, "{}", t.screen());
}

#[test]
fn a_block_over_ten_thousand_lines_stays_plain() {
    let s = Sandbox::new();
    let mut big = String::from("```rust\n");
    for i in 0..10_001 {
        big.push_str(&format!("let big_{i} = {i};\n"));
    }
    big.push_str("```\n\n```rust\nfn small() {}\n```\n\nend of answer");
    let mut t = start(&s, &answer(&big));
    t.wait_for("Ask anything");
    t.send("big\r");
    t.wait_for("end of answer");
    // Requests are served in order: once the small block after it is highlighted, the big one
    // would have been too.
    wait_fg(&t, "fn small", |_| true, MAGENTA);
    let at = find(&t, "let big_10000").expect("the big block's last line on screen");
    assert_eq!(fg(&t, at), CYAN, "{}", t.screen());
}

fn edit_session(s: &Sandbox) -> String {
    let body: String = (1..=20)
        .map(|i| format!("line {i}: the value is {i}\n"))
        .collect();
    s.write("work/notes.txt", &body);
    script(
        s,
        r#"[{"tool_calls":[{"name":"read","arguments":{"path":"notes.txt"}}]},
            {"tool_calls":[{"name":"edit","arguments":{"path":"notes.txt","old_string":"line 12: the value is 12","new_string":"line 12: the value is twelve"}}]},
            {"tool_calls":[{"name":"write","arguments":{"path":"new.txt","content":"first new line\nsecond new line\n"}}]},
            {"text":"all edited"}]"#,
    )
}

#[test]
fn an_edit_diff_folds_and_expands_with_ctrl_o() {
    let s = Sandbox::new();
    let path = edit_session(&s);
    let mut t = Tui::spawn(&s, &["--mock-script", &path], 100, 40, &[]);
    t.wait_for("Ask anything");
    t.send("edit it\r");
    let screen = t.wait_for("all edited");
    assert!(screen.contains("tool> ok edit notes.txt"), "{screen}");
    assert!(screen.contains("+1 -1"), "{screen}");
    assert!(!screen.contains("@@"), "{screen}");
    t.send("\x0f");
    let screen = t.wait_for("@@ -9,7 +9,7 @@");
    assert!(screen.contains("12 - line 12: the value is 12"), "{screen}");
    assert!(
        screen.contains("12 + line 12: the value is twelve"),
        "{screen}"
    );
    assert!(screen.contains("11   line 11: the value is 11"), "{screen}");
    // The new file's diff: every line added.
    assert!(screen.contains("1 + first new line"), "{screen}");
    // Colours: the sign and text of changed lines, the changed word reversed.
    let minus = find(&t, "12 - line").unwrap();
    assert_eq!(fg(&t, (minus.0, minus.1 + 3)), RED);
    let plus = find(&t, "12 + line").unwrap();
    assert_eq!(fg(&t, (plus.0, plus.1 + 5)), GREEN);
    let word = find(&t, "twelve").unwrap();
    let (wfg, inv) = t.with_screen(|sc| {
        let c = sc.cell(word.0, word.1).unwrap();
        (c.fgcolor(), c.inverse())
    });
    assert_eq!((wfg, inv), (GREEN, true), "{}", t.screen());
    let unchanged = find(&t, "the value is 12").unwrap();
    assert!(!t.with_screen(|sc| sc.cell(unchanged.0, unchanged.1).unwrap().inverse()));
    let hunk = find(&t, "@@ -9,7").unwrap();
    assert_eq!(fg(&t, hunk), CYAN);
    t.send("\x0f");
    t.wait("collapsed again", |s| !s.contains("@@"));
}

#[test]
fn a_diff_is_side_by_side_over_160_columns() {
    let s = Sandbox::new();
    let path = edit_session(&s);
    let mut t = Tui::spawn(&s, &["--mock-script", &path], 170, 40, &[]);
    t.wait_for("Ask anything");
    t.send("edit it\r");
    t.wait_for("all edited");
    t.send("\x0f");
    t.wait_for("@@ -9,7 +9,7 @@");
    let rows = t.rows();
    let row = rows
        .iter()
        .find(|r| r.contains("12 - line 12"))
        .unwrap_or_else(|| panic!("{}", t.screen()));
    let bar = row.find('│').expect("a separator");
    assert!(
        row[bar..].contains("12 + line 12: the value is twelve"),
        "{row}"
    );
    assert!(row.starts_with("12 - line 12: the value is 12 "), "{row}");
    let ctx = rows.iter().find(|r| r.starts_with("11   line 11")).unwrap();
    assert!(ctx.contains("│11   line 11"), "{ctx}");
}

#[test]
fn a_bash_row_highlights_its_command_and_colours_a_failed_exit() {
    let s = Sandbox::new();
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"bash","arguments":{"command":"echo \"hi there\" && false"}}]},{"text":"ran it"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("run\r");
    let screen = t.wait_for("ran it");
    assert!(
        screen.contains("tool> err bash $ echo \"hi there\" && false (2 lines,"),
        "{screen}"
    );
    assert!(screen.contains("exit 1"), "{screen}");
    let row = |l: &str| l.contains("tool> err bash");
    let echo = find_in(&t, "echo", row).unwrap();
    assert_eq!(fg(&t, echo), BLUE, "{screen}");
    let string = find_in(&t, "\"hi there\"", row).unwrap();
    assert_eq!(fg(&t, string), GREEN, "{screen}");
    let and = find_in(&t, "&&", row).unwrap();
    assert_eq!(fg(&t, and), MAGENTA, "{screen}");
    let exit = find_in(&t, "exit 1", row).unwrap();
    assert_eq!(fg(&t, exit), RED, "{screen}");
    let prompt = find_in(&t, "$ echo", row).unwrap();
    assert_eq!(fg(&t, prompt), RED, "{screen}");
}
