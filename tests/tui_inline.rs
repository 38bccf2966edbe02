//! The TUI's inline mode, navigation, selection and themes in a real pty, parsed by a terminal
//! emulator (vt100) that keeps its scrollback, so rows that scrolled off can be read back.

use crate::common::Sandbox;
use crate::tui::{script, Tui};
use std::time::{Duration, Instant};

/// An answer of `n` short paragraphs, streamed one paragraph per delay.
fn slow_answer(n: usize, delay_ms: u64) -> (Vec<String>, String) {
    let body: Vec<String> = (1..=n).map(|i| format!("answer line {i:02}")).collect();
    // Each paragraph is 16 bytes with its blank line: one mock delta each.
    let json = serde_json::json!([{ "text": body.join("\n\n"), "chunk_delay_ms": delay_ms }]);
    (body, json.to_string())
}

fn count(rows: &[String], text: &str) -> usize {
    rows.iter().filter(|r| r.trim_end() == text).count()
}

/// Waits until no byte has arrived for `quiet`.
fn settle(t: &Tui, quiet: Duration) {
    let start = Instant::now();
    let mut len = t.raw.lock().unwrap().len();
    let mut since = Instant::now();
    while since.elapsed() < quiet && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
        let now = t.raw.lock().unwrap().len();
        if now != len {
            len = now;
            since = Instant::now();
        }
    }
}

/// Exits (Ctrl-D) and checks every line of `body` is in the terminal's history exactly once;
/// the history's rows and their text.
fn exit_with_each_once(t: &mut Tui, body: &[String]) -> (Vec<String>, String) {
    t.send("\x04");
    assert_eq!(t.wait_exit(), 0);
    settle(t, Duration::from_millis(200));
    let rows = t.history();
    let all = rows.join("\n");
    for l in body {
        assert_eq!(count(&rows, l), 1, "{l}\n{all}");
    }
    (rows, all)
}

fn inline_run(s: &Sandbox, env: &[(&str, &str)]) -> (Tui, Vec<String>) {
    let (body, json) = slow_answer(70, 60);
    let path = script(s, &json);
    let mut t = Tui::spawn_with(
        s,
        &["--inline", "--mock-script", &path],
        40,
        20,
        env,
        100_000,
    );
    t.wait_for("Ask anything");
    assert!(!t.with_screen(|s| s.alternate_screen()));
    t.send("go\r");
    t.wait_for("answer line 01");
    // 100 resizes while the answer streams. Widths only grow while output arrives (a frame
    // already on its way at the old width cannot then wrap in the emulator, a race every
    // terminal without reflow has); heights go up and down.
    let mut streaming_at_50 = false;
    for i in 0..100u16 {
        let cols = 40 + i * 6 / 10;
        let rows = 12 + (i * 7) % 19;
        t.resize(cols, rows);
        std::thread::sleep(Duration::from_millis(25));
        if i == 50 {
            streaming_at_50 = !t.history().iter().any(|r| r.contains("answer line 70"));
        }
    }
    assert!(streaming_at_50, "the answer ended before the resizes did");
    t.wait("the end of the answer, idle", |s| {
        s.contains("answer line 70") && !s.contains("working")
    });
    settle(&t, Duration::from_millis(300));
    (t, body)
}

#[test]
fn inline_mode_writes_each_finished_block_to_scrollback_once_across_resizes() {
    let s = Sandbox::new();
    let (mut t, body) = inline_run(&s, &[]);
    // Narrowing while idle re-wraps the band: its rule is exactly the new width.
    t.resize(30, 16);
    t.wait("the band re-wrapped", |_| {
        t.rows().iter().any(|r| r.trim_end() == "─".repeat(30))
    });
    let raw = t.raw.lock().unwrap().clone();
    assert!(
        !raw.windows(4).any(|w| w == b"\x1b[3J"),
        "scrollback cleared"
    );
    // After the resizes the band reached the bottom again: later finished rows went in
    // through a scroll region.
    assert!(
        raw.windows(4).any(|w| w == b"\x1b[1;"),
        "no scroll region used"
    );
    let (rows, all) = exit_with_each_once(&mut t, &body);
    assert_eq!(count(&rows, "› go"), 1, "{all}");
    // The band is gone: no status row, input or rule left anywhere.
    assert!(!all.contains("mock:mock"), "{all}");
    assert!(!all.contains("Ask anything"), "{all}");
    // The cursor is on the row below the last line written.
    let last = t.with_screen(|s| {
        let text = s.contents();
        let lines: Vec<&str> = text.lines().collect();
        let last = lines.iter().rposition(|l| !l.trim().is_empty());
        (last, s.cursor_position())
    });
    let (Some(last_row), (crow, ccol)) = last else {
        panic!("an empty screen:\n{all}")
    };
    assert_eq!((crow as usize, ccol), (last_row + 1, 0), "{}", t.screen());
    assert!(t.with_screen(|s| !s.hide_cursor() && !s.bracketed_paste()));
}

/// Rows in scrollback are never rewritten, so a finished code block waits (briefly) for its
/// highlighting before it goes there: an answer arriving in one piece still leaves coloured
/// code in the terminal's scrollback.
#[test]
fn inline_mode_writes_code_blocks_to_scrollback_highlighted() {
    let s = Sandbox::new();
    let mut text = String::from("Code:\n\n```rust\nfn held_back() {\n    let total = 1;\n}\n```\n");
    for i in 1..=30 {
        text.push_str(&format!("\nfiller line {i:02}\n"));
    }
    let path = script(&s, &serde_json::json!([{ "text": text }]).to_string());
    let mut t = Tui::spawn_with(
        &s,
        &["--inline", "--mock-script", &path],
        60,
        12,
        &[],
        100_000,
    );
    t.wait_for("Ask anything");
    t.send("go\r");
    t.wait("the end of the answer, idle", |s| {
        s.contains("filler line 30") && !s.contains("working")
    });
    // The block is written once its colours are there (plain, it would stay plain).
    let start = Instant::now();
    while t.history_fg("fn held_back") != Some(vt100::Color::Idx(5)) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the code went to scrollback uncoloured:\n{}",
            t.history().join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(t.history_fg("1;"), Some(vt100::Color::Idx(3)));
    t.send("\x04");
    assert_eq!(t.wait_exit(), 0);
    settle(&t, Duration::from_millis(200));
    let rows = t.history();
    let code_rows = rows.iter().filter(|r| r.trim() == "fn held_back() {");
    assert_eq!(code_rows.count(), 1, "{}", rows.join("\n"));
    assert_eq!(count(&rows, "filler line 30"), 1);
}

#[test]
fn inline_mode_under_zellij_uses_plain_newlines() {
    let s = Sandbox::new();
    let (mut t, body) = inline_run(&s, &[("ZELLIJ", "0")]);
    let raw = t.raw.lock().unwrap().clone();
    assert!(
        !raw.windows(4).any(|w| w == b"\x1b[1;"),
        "a scroll region under Zellij"
    );
    let (_, all) = exit_with_each_once(&mut t, &body);
    assert!(!all.contains("mock:mock"), "{all}");
}

#[test]
fn inline_mode_from_settings_keeps_the_shell_above_and_suspends_below() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "yolo"}, "tui": {"mode": "inline"}}"#,
    );
    let path = script(&s, r#"[{"text":"first answer"}]"#);
    let mut t = Tui::spawn_with(&s, &["--mock-script", &path], 60, 20, &[], 100_000);
    t.wait_for("Ask anything");
    assert!(!t.with_screen(|s| s.alternate_screen()));
    t.send("hi\r");
    t.wait("the answer, idle", |s| {
        s.contains("first answer") && !s.contains("working")
    });
    // Ctrl-Z: the band goes, the transcript stays, then everything comes back below it.
    t.send("\x1a");
    t.wait_for("Ask anything");
    settle(&t, Duration::from_millis(200));
    let rows = t.history();
    assert_eq!(count(&rows, "first answer"), 1, "{}", rows.join("\n"));
    assert_eq!(count(&rows, "› hi"), 1, "{}", rows.join("\n"));
}

/// Standard base64 (padded), as OSC 52 carries it.
fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            out.push(if i <= c.len() {
                A[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

fn osc52_sent(t: &Tui, text: &str) -> bool {
    let raw = String::from_utf8_lossy(&t.raw.lock().unwrap()).into_owned();
    raw.contains(&format!("\x1b]52;c;{}\x07", b64(text.as_bytes())))
}

fn idle(t: &Tui, what: &str) {
    t.wait(what, |s| s.contains(what) && !s.contains("working"));
}

#[test]
fn copy_takes_the_nth_last_answer_or_the_last_code_block() {
    let s = Sandbox::new();
    let first = "first answer\n\n```rust\nfn a() {}\n```\n\nafter the code";
    let json = serde_json::json!([{ "text": first }, { "text": "second answer" }]).to_string();
    let mut t = crate::tui::start(&s, &json);
    t.wait_for("Ask anything");
    t.send("one\r");
    idle(&t, "after the code");
    t.send("two\r");
    idle(&t, "second answer");
    t.send("/copy 2\r");
    t.wait_for(&format!("copied {} characters", first.chars().count()));
    assert!(osc52_sent(&t, first));
    t.send("/copy code\r");
    t.wait_for("copied 9 characters");
    assert!(osc52_sent(&t, "fn a() {}"));
    t.send("/copy 3\r");
    t.wait_for("there are 2 answers");
}

/// Two long answers, each starting with a line that scrolls off.
fn two_long_answers(s: &Sandbox) -> Tui {
    let long = |head: &str, tag: &str| {
        let mut rows = vec![head.to_string()];
        rows.extend((1..=40).map(|i| format!("{tag} row {i:02}")));
        rows.join("\n\n")
    };
    let json = serde_json::json!([{ "text": long("magic one", "first") }, { "text": long("Magic two", "second") }])
        .to_string();
    let mut t = crate::tui::start(s, &json);
    t.wait_for("Ask anything");
    t.send("first question\r");
    idle(&t, "first row 40");
    t.send("second question\r");
    idle(&t, "second row 40");
    t
}

#[test]
fn find_highlights_a_match_and_n_jumps_to_the_next() {
    let s = Sandbox::new();
    let mut t = two_long_answers(&s);
    assert!(!t.screen().contains("magic"));
    t.send("\x06");
    t.wait("the find command in the input", |_| {
        t.rows()[29].starts_with("› /find")
    });
    t.send("MAGIC\r");
    let screen = t.wait_for("Magic two");
    assert!(!screen.contains("magic one"), "{screen}");
    assert!(screen.contains("find \"MAGIC\": 2 of 2"), "{screen}");
    // The match is highlighted (reversed), the rest of the row is not.
    let (hit, rest) = t.with_screen(|sc| {
        let row = (0..30)
            .find(|r| sc.contents_between(*r, 0, *r, 100).contains("Magic two"))
            .unwrap();
        (
            sc.cell(row, 0).map(|c| c.inverse()),
            sc.cell(row, 7).map(|c| c.inverse()),
        )
    });
    assert_eq!((hit, rest), (Some(true), Some(false)), "{screen}");
    t.send("n");
    let screen = t.wait_for("magic one");
    assert!(screen.contains("find \"MAGIC\": 1 of 2"), "{screen}");
    t.send("\x1b");
    t.wait("the search ended", |s| !s.contains("find \"MAGIC\""));
}

#[test]
fn ctrl_g_jumps_to_the_last_message_and_jump_lists_them() {
    let s = Sandbox::new();
    let mut t = two_long_answers(&s);
    t.send("\x07");
    let screen = t.wait_for("› second question");
    assert!(screen.contains("Magic two"), "{screen}");
    t.send("\x1b[F");
    t.wait("back at the bottom", |s| !s.contains("› second question"));
    t.send("/jump\r");
    let screen = t.wait_for("Jump to");
    assert!(screen.contains("› second question"), "{screen}");
    t.send("\x1b[B\r");
    t.wait_for("› first question");
}

/// The colour of the first cell of the row holding `text`.
fn fg_of(t: &Tui, text: &str) -> Option<vt100::Color> {
    t.with_screen(|sc| {
        let (rows, cols) = sc.size();
        let (rows, cols) = (rows.get(), cols.get());
        let row = (0..rows).find(|r| sc.contents_between(*r, 0, *r, cols).contains(text))?;
        let col = sc.contents_between(row, 0, row, cols).find(text)?;
        let col = sc.contents_between(row, 0, row, cols)[..col]
            .chars()
            .count() as u16;
        sc.cell(row, col).map(|c| c.fgcolor())
    })
}

/// A full-screen TUI that was asked "go" and has shown `answer` (a mock script ending in
/// "end of answer").
fn answered(s: &Sandbox, answer: &serde_json::Value) -> Tui {
    let path = script(s, &answer.to_string());
    let mut t = Tui::spawn(s, &["--mock-script", &path], 100, 30, &[]);
    t.wait_for("Ask anything");
    t.send("go\r");
    t.wait("the answer, idle", |s| {
        s.contains("end of answer") && !s.contains("working")
    });
    t
}

/// Waits (10 s at most) until the row holding `text` starts in colour `want`.
fn wait_fg_of(t: &Tui, text: &str, want: vt100::Color) {
    let start = Instant::now();
    while fg_of(t, text) != Some(want) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fg_of(t, text), Some(want), "{}", t.screen());
}

#[test]
fn a_user_theme_from_settings_colours_the_rows() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r##"{"permissions": {"mode": "yolo"}, "tui": {"theme": {"user": {"fg": "#ff8800", "bold": true}, "tool.ok": 208}}}"##,
    );
    s.write("work/a.txt", "alpha\n");
    let mut t = crate::tui::start(
        &s,
        r#"[{"tool_calls":[{"name":"read","arguments":{"path":"a.txt"}}]},{"text":"done"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("themed question\r");
    t.wait("the answer, idle", |s| {
        s.contains("done") && !s.contains("working")
    });
    assert_eq!(
        fg_of(&t, "themed question"),
        Some(vt100::Color::Rgb(255, 136, 0))
    );
    assert_eq!(fg_of(&t, "ok read"), Some(vt100::Color::Idx(208)));
}

/// The theme reaches what native draws itself: markdown headings and highlighted code; a
/// misspelt name or a bad colour is a notice naming it, and the defaults stay.
#[test]
fn a_user_theme_restyles_markdown_and_code_and_a_bad_entry_is_a_notice() {
    let s = Sandbox::new();
    let answer = serde_json::json!([{ "text": "# Big title\n\n```rust\nfn themed() {}\n```\n\nend of answer" }]);
    for (theme, heading, keyword) in [
        (
            r##"{"markdown.heading": "green", "code.keyword": {"fg": "#102030"}}"##,
            vt100::Color::Idx(2),
            vt100::Color::Rgb(16, 32, 48),
        ),
        (
            r##"{"code.keywrd": "red"}"##,
            vt100::Color::Idx(5),
            vt100::Color::Idx(5),
        ),
        (
            r##"{"code.keyword": "reddish", "markdown.heading": "green"}"##,
            vt100::Color::Idx(5),
            vt100::Color::Idx(5),
        ),
    ] {
        s.write(
            "config/fen/settings.json",
            &format!(r#"{{"tui": {{"theme": {theme}}}}}"#),
        );
        let mut t = answered(&s, &answer);
        wait_fg_of(&t, "fn themed", keyword);
        assert_eq!(fg_of(&t, "Big title"), Some(heading), "{theme}");
        // A bad entry is named; the whole theme's markdown and code styles stay the defaults.
        let notice = if theme.contains("keywrd") {
            Some("tui.theme: unknown style \"code.keywrd\"")
        } else if theme.contains("reddish") {
            Some("tui.theme: code.keyword: unknown colour \"reddish\"")
        } else {
            None
        };
        let screen = t.screen();
        match notice {
            Some(n) => assert_eq!(screen.matches(n).count(), 1, "{n}\n{screen}"),
            None => assert!(!screen.contains("tui.theme:"), "{screen}"),
        }
        t.send("\x04");
        t.wait_exit();
    }
}

/// A theme changed mid-session (an extension restyling code, then /reload) draws what is
/// already on screen again in it.
#[test]
fn restyling_code_and_reloading_redraws_the_transcript() {
    let s = Sandbox::new();
    let answer = serde_json::json!([{ "text": "```rust\nfn redrawn() {}\n```\n\nend of answer" }]);
    let mut t = answered(&s, &answer);
    wait_fg_of(&t, "fn redrawn", vt100::Color::Idx(5));
    s.write(
        "config/fen/extensions/restyle.lua",
        r#"return function(api) require("fen.lib.theme")["code.keyword"] = { fg = "red" } end"#,
    );
    t.send("/reload\r");
    wait_fg_of(&t, "fn redrawn", vt100::Color::Idx(1));
}

#[test]
fn a_light_background_from_colorfgbg_picks_the_light_palette() {
    let s = Sandbox::new();
    let path = script(&s, r#"[{"text":"x"}]"#);
    for (bg, colour) in [("0;15", 5u8), ("15;0", 11)] {
        let mut t = Tui::spawn(&s, &["--mock-script", &path], 100, 30, &[("COLORFGBG", bg)]);
        t.wait_for("Ask anything");
        t.send("\x03");
        t.wait_for("press Ctrl-C again");
        assert_eq!(
            fg_of(&t, "press Ctrl-C again"),
            Some(vt100::Color::Idx(colour)),
            "COLORFGBG={bg}"
        );
        // No background query was sent: COLORFGBG answered.
        let raw = t.raw.lock().unwrap().clone();
        assert!(!raw.windows(5).any(|w| w == b"\x1b]11;"));
    }
}

/// Drags with the left button from (col, row) to (col, row), 0-based screen cells.
fn drag(t: &mut Tui, from: (u16, u16), to: (u16, u16)) {
    t.send(&format!("\x1b[<0;{};{}M", from.0 + 1, from.1 + 1));
    t.send(&format!("\x1b[<32;{};{}M", to.0 + 1, to.1 + 1));
    t.send(&format!("\x1b[<0;{};{}m", to.0 + 1, to.1 + 1));
}

#[test]
fn mouse_mode_drag_select_copies_the_logical_text() {
    let s = Sandbox::new();
    s.write(
        "config/fen/settings.json",
        r#"{"permissions": {"mode": "yolo"}, "tui": {"mouse": true}}"#,
    );
    let item = "the quick brown fox jumps over the lazy dog and keeps running far beyond the edge of this narrow window";
    let json = serde_json::json!([{ "text": format!("- {item}\n\nsecond para") }]).to_string();
    let path = script(&s, &json);
    let mut t = Tui::spawn(&s, &["--mock-script", &path], 60, 20, &[]);
    t.wait_for("Ask anything");
    // Mouse reporting is on (press, drag and release; SGR encoding).
    t.wait("mouse reporting", |_| {
        t.with_screen(|sc| sc.mouse_protocol_mode() == vt100::MouseProtocolMode::ButtonMotion)
    });
    t.send("go\r");
    idle(&t, "second para");
    let rows = t.rows();
    let r = rows
        .iter()
        .position(|l| l.starts_with("• the quick"))
        .unwrap() as u16;
    assert!(!rows[r as usize + 1].contains('•'), "{rows:?}");
    // From the first word (after the bullet) to the end of the wrapped row below.
    drag(&mut t, (2, r), (59, r + 1));
    let n = item.chars().count();
    t.wait_for(&format!("copied {n} characters"));
    assert!(osc52_sent(&t, item), "{}", t.screen());
    // Down to the next paragraph: lines joined with newlines, still no bullet.
    let p = t
        .rows()
        .iter()
        .position(|l| l.starts_with("second para"))
        .unwrap() as u16;
    drag(&mut t, (2, r), (5, p));
    let want = format!("{item}\n\nsecond");
    t.wait_for(&format!("copied {} characters", want.chars().count()));
    assert!(osc52_sent(&t, &want), "{}", t.screen());
    // /mouse turns it off: the terminal's own selection again.
    t.send("/mouse\r");
    t.wait_for("mouse mode off");
    t.wait("mouse reporting off", |_| {
        t.with_screen(|sc| sc.mouse_protocol_mode() == vt100::MouseProtocolMode::None)
    });
}
