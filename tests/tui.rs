//! The full-screen TUI in a real pty: `fen` runs with TERM=xterm-256color in a temp home with
//! the mock provider; its output is parsed by a terminal emulator (vt100) and the tests assert
//! what is on the screen.

use crate::common::Sandbox;
use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Tui {
    child: Box<dyn Child + Send + Sync>,
    master: Box<dyn MasterPty + Send>,
    writer: Box<dyn Write + Send>,
    parser: Arc<Mutex<vt100::Parser>>,
    pub raw: Arc<Mutex<Vec<u8>>>,
}

fn nz(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).expect("non-zero size")
}

impl Tui {
    pub fn spawn(s: &Sandbox, args: &[&str], cols: u16, rows: u16, env: &[(&str, &str)]) -> Tui {
        Tui::spawn_with(s, args, cols, rows, env, 0)
    }

    /// As [`Tui::spawn`], with an emulator that keeps `scrollback` rows (inline mode's tests
    /// read back what scrolled off; `history`).
    pub fn spawn_with(
        s: &Sandbox,
        args: &[&str],
        cols: u16,
        rows: u16,
        env: &[(&str, &str)],
        scrollback: usize,
    ) -> Tui {
        Tui::spawn_program(
            s,
            env!("CARGO_BIN_EXE_fen"),
            args,
            (cols, rows, scrollback),
            env,
        )
    }

    /// Any `program` in the pty, with fen's environment (a multiplexer running fen, say);
    /// `size` is (cols, rows, scrollback).
    pub fn spawn_program(
        s: &Sandbox,
        program: &str,
        args: &[&str],
        size: (u16, u16, usize),
        env: &[(&str, &str)],
    ) -> Tui {
        let (cols, rows, scrollback) = size;
        let pty = native_pty_system();
        let pair = pty
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("open a pty");
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.cwd(s.cwd());
        cmd.env_clear();
        cmd.env("PATH", std::env::var("PATH").unwrap_or_default());
        cmd.env("TERM", "xterm-256color");
        cmd.env("HOME", s.root());
        cmd.env("PWD", s.cwd());
        cmd.env("XDG_CONFIG_HOME", s.config());
        cmd.env("XDG_STATE_HOME", s.state());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair
            .slave
            .spawn_command(cmd)
            .expect("spawn the program in the pty");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = pair.master.take_writer().expect("pty writer");
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            nz(rows),
            nz(cols),
            scrollback,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        let (p, r) = (parser.clone(), raw.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p.lock().unwrap().process(&buf[..n]);
                r.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Tui {
            child,
            master: pair.master,
            writer,
            parser,
            raw,
        }
    }

    /// Kills fen with SIGKILL (no shutdown of its own) and waits for it.
    pub fn kill9(&mut self) {
        if let Some(pid) = self.child.process_id() {
            // SAFETY: kill(2) with a pid this test spawned.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
        let _ = self.child.wait();
    }

    pub fn send(&mut self, bytes: &str) {
        self.writer
            .write_all(bytes.as_bytes())
            .expect("write to the pty");
        self.writer.flush().ok();
    }

    /// A bracketed paste.
    pub fn paste(&mut self, text: &str) {
        self.send(&format!("\x1b[200~{text}\x1b[201~"));
    }

    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    pub fn rows(&self) -> Vec<String> {
        let p = self.parser.lock().unwrap();
        let (_, cols) = p.screen().size();
        p.screen().rows(0, cols.get()).collect()
    }

    /// Every row the emulator holds, oldest first: the scrollback, then the screen.
    pub fn history(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.pages(|sc, take| {
            out.extend(sc.rows(0, sc.size().1.get()).take(take));
            None::<()>
        });
        out
    }

    /// The colour of the first cell of `text` in the scrollback or on the screen (the
    /// first place it is found, oldest first).
    pub fn history_fg(&self, text: &str) -> Option<vt100::Color> {
        self.pages(|sc, take| {
            let cols = sc.size().1.get();
            (0..take as u16).find_map(|r| {
                let row = sc.contents_between(r, 0, r, cols);
                let col = row[..row.find(text)?].chars().count() as u16;
                sc.cell(r, col).map(|c| c.fgcolor())
            })
        })
    }

    /// Shows the scrollback page by page, oldest first, then the screen: `f` gets the screen
    /// and how many of its top rows are new on this page; the first answer ends the walk.
    fn pages<T>(&self, mut f: impl FnMut(&vt100::Screen, usize) -> Option<T>) -> Option<T> {
        let mut p = self.parser.lock().unwrap();
        let rows = p.screen().size().0.get() as usize;
        p.screen_mut().set_scrollback(usize::MAX);
        let mut off = p.screen().scrollback();
        let mut found = None;
        while off > 0 && found.is_none() {
            p.screen_mut().set_scrollback(off);
            let take = off.min(rows);
            found = f(p.screen(), take);
            off -= take;
        }
        p.screen_mut().set_scrollback(0);
        found.or_else(|| f(p.screen(), rows))
    }

    pub fn with_screen<T>(&self, f: impl FnOnce(&vt100::Screen) -> T) -> T {
        f(self.parser.lock().unwrap().screen())
    }

    /// Waits until the screen satisfies `pred` (10 s at most); returns the screen.
    pub fn wait(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if pred(&s) {
                return s;
            }
            // A hang bound, not a speed claim: the whole suite runs beside this on 2 cores.
            if start.elapsed() > Duration::from_secs(30) {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(15));
        }
    }

    pub fn wait_for(&self, text: &str) -> String {
        self.wait(text, |s| s.contains(text))
    }

    pub fn resize(&mut self, cols: u16, rows: u16) {
        // The emulator first: fen may paint at the new size before this thread gets to run
        // again, and that frame must not be parsed at the old size (a wider frame would wrap).
        self.parser.lock().unwrap().set_size(nz(rows), nz(cols));
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize the pty");
    }

    /// Waits for the process to exit; returns its exit code.
    pub fn wait_exit(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.exit_code();
            }
            // Generous: on a loaded 2-core machine an exit that shuts servers and writers
            // down has taken more than 10 s.
            if start.elapsed() > Duration::from_secs(30) {
                let _ = self.child.kill();
                panic!("fen did not exit; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(15));
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// A mock script file in the sandbox.
pub fn script(s: &Sandbox, json: &str) -> String {
    s.write("script.json", json).to_string_lossy().into_owned()
}

pub fn start(s: &Sandbox, json: &str) -> Tui {
    let path = script(s, json);
    Tui::spawn(s, &["--mock-script", &path], 100, 30, &[])
}

#[test]
fn first_paint_shows_status_and_input() {
    let s = Sandbox::new();
    let t = start(&s, r#"[{"text":"hi"}]"#);
    let screen = t.wait("the first paint", |s| {
        s.contains("mock:mock") && s.contains("› ")
    });
    let rows = t.rows();
    assert!(rows[0].starts_with("mock:mock"), "{screen}");
    assert!(rows[29].starts_with("› Ask anything"), "{screen}");
    assert!(t.with_screen(|s| s.alternate_screen()));
}

#[test]
fn a_prompt_streams_as_markdown_and_ctrl_d_restores_the_terminal() {
    let s = Sandbox::new();
    let mut t = start(
        &s,
        r###"[{"text":"# Title\n\nSome **bold** text and `code`.\n\n- one\n- two\n"}]"###,
    );
    t.wait_for("Ask anything");
    t.send("hello there\r");
    let screen = t.wait_for("• two");
    assert!(screen.contains("› hello there"), "{screen}");
    assert!(screen.contains("# Title"), "{screen}");
    assert!(screen.contains("Some bold text and code."), "{screen}");
    assert!(!screen.contains("**bold**"), "{screen}");
    let bold = t.with_screen(|sc| {
        let row = (0..30)
            .find(|r| sc.contents_between(*r, 0, *r, 100).contains("Some bold"))
            .unwrap();
        sc.cell(row, 5).map(|c| c.bold())
    });
    assert_eq!(bold, Some(true));
    t.send("\x04");
    assert_eq!(t.wait_exit(), 0);
    t.wait("the terminal restored", |_| {
        t.with_screen(|sc| !sc.alternate_screen() && !sc.bracketed_paste() && !sc.hide_cursor())
    });
}

#[test]
fn tool_rows_fold_and_ctrl_o_expands_them() {
    let s = Sandbox::new();
    s.write("work/README.md", "line one\nline two\n");
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"read","arguments":{"path":"README.md"}},{"name":"read","arguments":{"path":"missing.txt"}}]},{"text":"done"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("read it\r");
    let screen = t.wait_for("done");
    assert!(
        screen.contains("tool> ok read README.md (2 lines,"),
        "{screen}"
    );
    assert!(screen.contains("tool> err read missing.txt"), "{screen}");
    assert!(!screen.contains("tool> run"), "{screen}");
    assert!(!screen.contains("line two"), "{screen}");
    t.send("\x0f");
    let screen = t.wait_for("line two");
    assert!(screen.contains("line one"), "{screen}");
    t.send("\x0f");
    t.wait("collapsed again", |s| !s.contains("line two"));
}

#[test]
fn ctrl_c_cancels_a_slow_turn_then_arms_quit() {
    let s = Sandbox::new();
    let mut t = start(
        &s,
        r#"[{"text":"never shown","delay_ms":20000},{"text":"second"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("slow one\r");
    t.wait_for("working");
    t.send("\x03");
    let screen = t.wait_for("cancelled");
    assert!(!screen.contains("never shown"), "{screen}");
    t.wait("idle", |s| !s.contains("working"));
    t.send("\x03");
    t.wait_for("press Ctrl-C again to quit");
    t.send("\x03");
    assert_eq!(t.wait_exit(), 0);
}

#[test]
fn steering_typed_while_busy_is_queued() {
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"read","arguments":{"path":"a.txt"}}],"delay_ms":1500},{"text":"after steering"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("start\r");
    t.wait_for("working");
    t.send("also this\r");
    let screen = t.wait_for("steer:1");
    assert!(screen.contains("» also this"), "{screen}");
    let screen = t.wait_for("after steering");
    assert!(!screen.contains("steer:1"), "{screen}");
}

#[test]
fn paste_collapses_and_expands_on_submit() {
    let s = Sandbox::new();
    let mut t = start(&s, r#"[{"text":"got it"}]"#);
    t.wait_for("Ask anything");
    let big: Vec<String> = (1..=12).map(|i| format!("pasted line {i}")).collect();
    t.paste(&big.join("\n"));
    t.wait_for("[paste #1 +12 lines]");
    t.send("\r");
    let screen = t.wait_for("got it");
    assert!(screen.contains("pasted line 12"), "{screen}");
}

#[test]
fn history_walks_earlier_lines_and_persists() {
    let s = Sandbox::new();
    let mut t = start(&s, r#"[{"text":"a1"},{"text":"a2"},{"text":"a3"}]"#);
    t.wait_for("Ask anything");
    t.send("first line\r");
    t.wait("a1 and idle", |s| {
        s.contains("a1") && !s.contains("working")
    });
    t.send("second line\r");
    t.wait("a2 and idle", |s| {
        s.contains("a2") && !s.contains("working")
    });
    t.send("\x1b[A");
    t.wait("second in the input", |_| {
        t.rows()[29].starts_with("› second line")
    });
    t.send("\x1b[A");
    t.wait("first in the input", |_| {
        t.rows()[29].starts_with("› first line")
    });
    t.send("\x04\x04");
    drop(t);
    let dir = s.state().join("fen/history");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().collect())
        .unwrap_or_default();
    assert_eq!(files.len(), 1, "{dir:?}");
    let text = std::fs::read_to_string(files[0].path()).unwrap();
    assert!(
        text.contains("first line") && text.contains("second line"),
        "{text}"
    );
}

#[test]
fn slash_completion_opens_a_menu_and_completes() {
    let s = Sandbox::new();
    let mut t = start(&s, r#"[{"text":"x"}]"#);
    t.wait_for("Ask anything");
    // The menu opens as `/` is typed (tui_comforts has the rest of its behaviour).
    t.send("/");
    let screen = t.wait_for("/compact");
    assert!(screen.contains("/context"), "{screen}");
    t.send("rel\t");
    t.wait("completed", |_| t.rows()[29].starts_with("› /reload"));
}

#[test]
fn panels_and_status_items_from_a_user_extension_reload() {
    let s = Sandbox::new();
    let ext = s.user_extensions().join("mine.lua");
    let write = |label: &str| {
        std::fs::write(
            &ext,
            format!(
                r#"return function(api)
  api.register("panel", {{ name = "mine", title = "My panel", render = function() return {{ "panel says {label}" }} end }})
  api.register("panel", {{ name = "broken", render = function() error("boom") end }})
  api.register("status", {{ name = "mine", render = function() return "st:{label}" end }})
end"#
            ),
        )
        .unwrap();
    };
    write("one");
    let mut t = start(&s, r#"[{"text":"x"}]"#);
    let screen = t.wait_for("panel says one");
    assert!(screen.contains("My panel"), "{screen}");
    assert!(screen.contains("panel-error:broken"), "{screen}");
    assert!(t.rows()[0].contains("st:one"), "{screen}");
    write("two");
    t.send("/reload\r");
    let screen = t.wait_for("panel says two");
    assert!(t.rows()[0].contains("st:two"), "{screen}");
}

#[test]
fn resize_during_streaming_loses_and_doubles_no_line() {
    let s = Sandbox::new();
    let body: Vec<String> = (1..=20).map(|i| format!("answer line {i:02}")).collect();
    let json = serde_json::json!([{ "text": body.join("\n\n") }]).to_string();
    let mut t = start(&s, &json);
    t.wait_for("Ask anything");
    t.send("go\r");
    for (c, r) in [(60, 40), (100, 60), (50, 70)] {
        t.resize(c, r);
        std::thread::sleep(Duration::from_millis(40));
    }
    let screen = t.wait_for("answer line 20");
    for l in &body {
        assert_eq!(screen.matches(l.as_str()).count(), 1, "{l}\n{screen}");
    }
}

#[test]
fn ctrl_z_restores_the_terminal_and_comes_back() {
    // The pty's session has no job control (an orphaned process group ignores SIGTSTP), so
    // fen continues at once: the bytes show the modes left and entered again.
    let s = Sandbox::new();
    let mut t = start(&s, r#"[{"text":"x"}]"#);
    t.wait_for("Ask anything");
    t.send("abc");
    t.wait_for("› abc");
    let before = t.raw.lock().unwrap().len();
    t.send("\x1a");
    t.wait("a repaint after resuming", |_| {
        let raw = t.raw.lock().unwrap();
        let after = &raw[before..];
        let leave = after.windows(8).position(|w| w == b"\x1b[?1049l");
        let enter = after.windows(8).rposition(|w| w == b"\x1b[?1049h");
        matches!((leave, enter), (Some(l), Some(e)) if l < e)
    });
    t.wait("the input again", |s| s.contains("› abc"));
    assert!(t.with_screen(|s| s.alternate_screen()));
}

#[test]
fn api_ui_select_and_hook_ask_show_an_overlay() {
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    std::fs::write(
        s.user_extensions().join("asker.lua"),
        r#"return function(api)
  api.register("command", { name = "pick", description = "pick one", handler = function()
    local i = api.ui.select("Choose one", { "alpha", "beta" })
    return "picked " .. tostring(i)
  end })
  api.register("hook", { name = "gate", before_tool = function(tool, args, ctx)
    local a = ctx.ask("allow " .. tool .. "?")
    if a ~= "yes" then return { block = true, reason = "the user said no" } end
  end })
end"#,
    )
    .unwrap();
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"read","arguments":{"path":"a.txt"}}]},{"text":"finished"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("/pick\r");
    let screen = t.wait_for("Choose one");
    assert!(screen.contains("› alpha"), "{screen}");
    t.send("\x1b[B");
    t.wait_for("› beta");
    t.send("\r");
    t.wait_for("picked 2");
    t.send("read a.txt\r");
    let screen = t.wait_for("allow read?");
    assert!(screen.contains("yes") && screen.contains("no"), "{screen}");
    t.send("2");
    let screen = t.wait_for("finished");
    assert!(screen.contains("tool> err read a.txt"), "{screen}");
}

#[test]
fn sigterm_and_sighup_restore_the_terminal() {
    use nix::sys::signal::Signal;
    for (sig, code) in [(Signal::SIGTERM, 143), (Signal::SIGHUP, 129)] {
        let s = Sandbox::new();
        let mut t = start(&s, r#"[{"text":"x"}]"#);
        t.wait_for("Ask anything");
        let pid = t.child.process_id().expect("pid") as i32;
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).expect("signal");
        assert_eq!(t.wait_exit(), code, "{sig}");
        // The last bytes may still be on their way through the reader thread.
        t.wait("the main screen", |_| {
            t.with_screen(|sc| !sc.alternate_screen() && !sc.bracketed_paste())
        });
    }
}

#[test]
fn at_completion_offers_project_files() {
    let s = Sandbox::new();
    s.write("work/src/main.rs", "fn main() {}\n");
    s.write("work/notes.txt", "n\n");
    let mut t = start(&s, r#"[{"text":"x"}]"#);
    t.wait_for("Ask anything");
    t.send("look at @mai\t");
    t.wait("completed", |_| {
        t.rows()[29].starts_with("› look at @src/main.rs")
    });
}

#[test]
fn an_at_mention_attaches_the_file_as_a_read() {
    let s = Sandbox::new();
    s.write("work/notes.txt", "alpha line\nbeta line\n");
    // The mock answers with what reached it: the attached file's numbered lines.
    let lua = s.write(
        "script.lua",
        r#"return function(n, ctx)
  local last = ctx.messages[#ctx.messages].content
  local attached = last:match('<file path="notes.txt">%s*(.-)</file>')
  return { text = "SEEN[" .. (attached and attached:gsub("%s+", " ") or "nothing") .. "]" }
end"#,
    );
    let mut t = Tui::spawn(&s, &["--mock-script", lua.to_str().unwrap()], 100, 30, &[]);
    t.wait_for("Ask anything");
    t.send("summarise @notes.txt please\r");
    t.wait_for("SEEN[1 alpha line 2 beta line ]");
}

#[test]
fn scrolled_up_view_stays_put_and_counts_new_output() {
    let s = Sandbox::new();
    let body: Vec<String> = (1..=60).map(|i| format!("row {i:02}")).collect();
    let json = serde_json::json!([{ "text": body.join("\n\n") }, { "text": "the second answer" }])
        .to_string();
    let mut t = start(&s, &json);
    t.wait_for("Ask anything");
    t.send("first\r");
    t.wait("the end of the answer, idle", |s| {
        s.contains("row 60") && !s.contains("working")
    });
    t.send("\x1b[5~");
    let up = t.wait("scrolled up", |s| !s.contains("row 60"));
    let top = t.rows()[1].clone();
    t.send("second\r");
    let screen = t.wait_for("new");
    assert!(screen.contains("↓"), "{screen}");
    assert!(!screen.contains("the second answer"), "{screen}");
    assert_eq!(t.rows()[1], top, "{up}\n---\n{screen}");
    t.send("\x1b[F");
    t.wait_for("the second answer");
}

/// Golden frames of a few stories at 80x24 and 40x12.
#[test]
fn golden_frames() {
    for (cols, rows) in [(80u16, 24u16), (40, 12)] {
        let s = Sandbox::new();
        s.write("work/README.md", "hello\nworld\n");
        std::fs::write(
            s.user_extensions().join("todo.lua"),
            r#"return function(api)
  api.register("panel", { name = "todo", title = "todo", render = function() return { "[x] read the README", "[ ] answer" } end })
  api.register("status", { name = "todo", render = function() return "todo:1/2" end })
end"#,
        )
        .unwrap();
        let path = script(
            &s,
            r###"[{"tool_calls":[{"name":"read","arguments":{"path":"README.md"}}]},{"text":"## Summary\n\nThe README says **hello** and then `world`.\n\n| key | value |\n|---|---|\n| a | 1 |"}]"###,
        );
        let mut t = Tui::spawn(&s, &["--mock-script", &path], cols, rows, &[]);
        t.wait_for("todo:1/2");
        std::thread::sleep(std::time::Duration::from_millis(200));
        insta::assert_snapshot!(format!("first_paint_{cols}x{rows}"), trimmed(&t.rows()));
        t.send("what does the README say?\r");
        t.wait("the answer, idle", |s| {
            s.contains("value") && !s.contains("working")
        });
        // The last rows (tokens of the turn, the status) may land a frame later on a busy
        // machine: take the frame once it stopped changing.
        let mut frame = t.rows();
        for _ in 0..50 {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let next = t.rows();
            if next == frame {
                break;
            }
            frame = next;
        }
        insta::assert_snapshot!(format!("answer_{cols}x{rows}"), trimmed(&frame));
    }
}

/// Rows without trailing spaces: a cell blanked by a later frame holds a written space in the
/// emulator, one never written holds nothing; both look the same.
fn trimmed(rows: &[String]) -> String {
    rows.iter()
        .map(|r| r.trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn continue_shows_the_earlier_transcript() {
    let s = Sandbox::new();
    let path = script(&s, r#"[{"text":"the **earlier** answer"},{"text":"x"}]"#);
    let out = s.fen(&["-p", "an earlier question", "--mock-script", &path]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let t = Tui::spawn(&s, &["-c", "--mock-script", &path], 100, 30, &[]);
    let screen = t.wait_for("the earlier answer");
    assert!(screen.contains("› an earlier question"), "{screen}");
}

#[test]
fn alt_e_edits_the_input_in_the_editor() {
    let s = Sandbox::new();
    // An "editor" that appends a line to the file it is given.
    let ed = s.write(
        "editor.sh",
        "#!/bin/sh\nprintf ' and more from the editor' >> \"$1\"\n",
    );
    std::fs::set_permissions(&ed, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = script(&s, r#"[{"text":"x"}]"#);
    let mut t = Tui::spawn(
        &s,
        &["--mock-script", &path],
        100,
        30,
        &[("VISUAL", ed.to_str().unwrap())],
    );
    t.wait_for("Ask anything");
    t.send("draft");
    t.wait_for("› draft");
    t.send("\x1be");
    t.wait("the edited input", |_| {
        t.rows()[29].starts_with("› draft and more from the editor")
    });
    assert!(t.with_screen(|s| s.alternate_screen()));
}

#[test]
fn no_color_drops_colours() {
    let s = Sandbox::new();
    s.write("work/a.txt", "alpha\n");
    let path = script(
        &s,
        r#"[{"tool_calls":[{"name":"read","arguments":{"path":"a.txt"}}]},{"text":"done"}]"#,
    );
    let mut t = Tui::spawn(&s, &["--mock-script", &path], 100, 30, &[("NO_COLOR", "1")]);
    t.wait_for("Ask anything");
    t.send("go\r");
    t.wait_for("done");
    let colours = t.with_screen(|sc| {
        let mut n = 0;
        for r in 0..30 {
            for c in 0..100 {
                if let Some(cell) = sc.cell(r, c) {
                    if cell.fgcolor() != vt100::Color::Default
                        || cell.bgcolor() != vt100::Color::Default
                    {
                        n += 1;
                    }
                }
            }
        }
        n
    });
    assert_eq!(colours, 0, "{}", t.screen());
}

#[test]
fn copy_sends_the_last_answer_by_osc_52() {
    let s = Sandbox::new();
    let mut t = start(&s, r#"[{"text":"hi!"}]"#);
    t.wait_for("Ask anything");
    t.send("say hi\r");
    t.wait("the answer, idle", |s| {
        s.contains("hi!") && !s.contains("working")
    });
    t.send("/copy\r");
    t.wait_for("copied 3 characters");
    let raw = String::from_utf8_lossy(&t.raw.lock().unwrap()).into_owned();
    // base64("hi!") = aGkh
    assert!(
        raw.contains("\x1b]52;c;aGkh\x07"),
        "no OSC 52 in the output"
    );
}

#[test]
fn a_panel_with_a_bad_style_does_not_freeze_the_screen() {
    let s = Sandbox::new();
    std::fs::write(
        s.user_extensions().join("bad.lua"),
        r#"return function(api)
  api.register("panel", { name = "bad", render = function() return { { { text = "x", style = { colour = "red" } } } } end })
end"#,
    )
    .unwrap();
    let mut t = start(&s, r#"[{"text":"x"}]"#);
    t.wait_for("layout-error");
    t.send("still typing");
    t.wait_for("› still typing");
}

#[test]
fn a_running_bash_row_shows_its_output_live_then_folds() {
    let s = Sandbox::new();
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"bash","arguments":{"command":"printf 'out%s\\n' A B; sleep 2; echo end"}}]},{"text":"all done"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("run it\r");
    let screen = t.wait_for("outB");
    assert!(screen.contains("tool> run $ printf"), "{screen}");
    let screen = t.wait_for("all done");
    assert!(screen.contains("tool> ok bash $ printf"), "{screen}");
    assert!(!screen.contains("outB"), "{screen}");
}

/// The todo companion's panel returns one span per row (`{text = ...}`); the TUI shows those
/// rows, not a layout error.
#[test]
fn the_todo_panel_shows_the_model_s_list() {
    let s = Sandbox::new();
    let path = script(
        &s,
        r###"[{"tool_calls":[{"name":"todo_write","arguments":{"items":[{"text":"read the README","status":"completed"},{"text":"write the answer","status":"in_progress"}]}}]},{"text":"planned"}]"###,
    );
    let mut t = Tui::spawn(&s, &["--mock-script", &path], 80, 24, &[]);
    t.wait_for("Ask anything");
    t.send("plan it\r");
    let screen = t.wait("the todo panel", |s| {
        s.contains("Todos") && s.contains("write the answer") && s.contains("planned")
    });
    assert!(!screen.contains("panel-error"), "{screen}");
    assert!(!screen.contains("layout"), "{screen}");
}

#[test]
fn plan_mode_refuses_a_write_until_the_plan_is_approved_in_auto_mode() {
    let s = Sandbox::new();
    let path = script(
        &s,
        r#"[{"tool_calls":[{"name":"write","arguments":{"path":"made.txt","content":"x"}}]},
            {"tool_calls":[{"name":"exit_plan","arguments":{"plan":"1. write made.txt"}}]},
            {"tool_calls":[{"name":"write","arguments":{"path":"made.txt","content":"x"}}]},
            {"text":"finished"}]"#,
    );
    let mut t = Tui::spawn(
        &s,
        &["--mock-script", &path, "--permission-mode", "plan"],
        100,
        30,
        &[],
    );
    let screen = t.wait_for("Ask anything");
    assert!(screen.contains("plan mode"), "{screen}");
    t.send("go\r");
    let screen = t.wait_for("Approve this plan?");
    assert!(screen.contains("approve and run in auto mode"), "{screen}");
    assert!(!s.cwd().join("made.txt").exists());
    t.send("\x1b[B");
    t.send("\r");
    t.wait_for("finished");
    assert!(s.cwd().join("made.txt").exists());
}

#[test]
fn shift_tab_cycles_the_permission_mode_into_plan() {
    let s = Sandbox::new();
    // The test settings say yolo (Shift+Tab would go to default first): start in default.
    let path = script(&s, r#"[{"text":"hi"}]"#);
    let mut t = Tui::spawn(
        &s,
        &["--mock-script", &path, "--permission-mode", "default"],
        100,
        30,
        &[],
    );
    t.wait_for("Ask anything");
    t.send("\x1b[Z");
    t.send("\x1b[Z");
    let screen = t.wait_for("plan mode");
    assert!(screen.contains("plan mode"), "{screen}");
}

#[test]
fn the_question_tool_is_answered_in_the_tui() {
    let s = Sandbox::new();
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"question","arguments":{"questions":[{"question":"Which database?","options":[{"label":"sqlite"},{"label":"postgres"}]}]}}]},{"text":"finished"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("go\r");
    let screen = t.wait_for("Which database?");
    assert!(
        screen.contains("1  sqlite") && screen.contains("3  other"),
        "{screen}"
    );
    t.send("\x1b[B");
    t.send("\r");
    t.wait_for("finished");
    assert!(
        state_holds(&s, "Which database?\\n→ postgres"),
        "the answer did not reach the model"
    );
}

#[test]
fn a_multi_select_question_toggles_with_space_and_digits_and_enter_confirms() {
    let s = Sandbox::new();
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"question","arguments":{"questions":[{"question":"Which targets?","multi_select":true,"options":[{"label":"linux"},{"label":"mac"},{"label":"windows"}]}]}}]},{"text":"finished"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("go\r");
    let screen = t.wait_for("Which targets?");
    assert!(
        screen.contains("[ ] 1  linux") && screen.contains("[ ] 4  other"),
        "{screen}"
    );
    // Space toggles the highlighted option; a digit toggles its option (twice: off again).
    t.send(" ");
    t.wait_for("[x] 1  linux");
    // One arrow at a time: a burst of them reads as the mouse wheel.
    t.send("\x1b[B");
    t.wait_for("› [ ] 2  mac");
    t.send("\x1b[B");
    t.wait_for("› [ ] 3  windows");
    t.send(" ");
    t.wait_for("[x] 3  windows");
    t.send("2");
    let screen = t.wait_for("[x] 2  mac");
    assert!(screen.contains("[x] 3  windows"), "{screen}");
    t.send("2");
    let screen = t.wait("mac unchecked", |s| s.contains("[ ] 2  mac"));
    assert!(
        screen.contains("[x] 1  linux") && screen.contains("space"),
        "{screen}"
    );
    t.send("\r");
    t.wait_for("finished");
    assert!(
        state_holds(&s, "Which targets?\\n→ linux, windows"),
        "the answers did not reach the model"
    );
}

#[test]
fn esc_stops_the_turn_and_pauses_the_goal_shown_in_the_status_row() {
    let s = Sandbox::new();
    let mut t = start(
        &s,
        r#"[{"tool_calls":[{"name":"bash","arguments":{"command":"ls"}}]},{"text":"never shown","delay_ms":20000},{"text":"later"}]"#,
    );
    t.wait_for("Ask anything");
    t.send("/goal tidy the repo\r");
    let screen = t.wait_for("goal active");
    assert!(!screen.contains("never shown"), "{screen}");
    t.wait_for("ok bash $ ls");
    std::thread::sleep(Duration::from_millis(300));
    t.send("\x1b");
    t.wait_for("goal paused");
    t.wait("idle", |s| !s.contains("working"));
    t.send("/goal\r");
    let screen = t.wait_for("the turn was stopped");
    assert!(screen.contains("goal paused: tidy the repo"), "{screen}");
}

/// Whether some file under fen's state directory (the session files) holds `needle`.
fn state_holds(s: &Sandbox, needle: &str) -> bool {
    let mut stack = vec![s.state()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read_to_string(&p)
                .unwrap_or_default()
                .contains(needle)
            {
                return true;
            }
        }
    }
    false
}
