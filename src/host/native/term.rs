//! `fen.native.term`: terminal basics for line presenters, `read_line()` (async; nil at end of
//! input) and `isatty(fd)`, and the full-screen layer the TUI presenter drives, a thin binding
//! over [`crate::native::term`]:
//!
//! | function | what it does |
//! | --- | --- |
//! | `open(opts)` | enter raw mode, the alternate screen (`opts.inline`: not, see inline mode), bracketed paste, alternate scroll, mouse reporting (`opts.mouse`); start painting |
//! | `close()` | stop painting and restore the terminal (also on drop, panic, SIGTERM, SIGHUP) |
//! | `next()` | (async) the next input: `{type="key", key="ctrl-j"}`, `{type="paste", text}`, `{type="wheel", up, n}`, `{type="resize", width, height}`, `{type="background", dark}`, `{type="focus", focused}`, `{type="copied", chars}` (mouse mode: a drag-selection was copied with OSC 52); nil when input ended |
//! | `layout(desc)` | the layout description (status, busy, panels, notices, menu, input, overlay) |
//! | `push(block) -> id`, `update(id, block)`, `append(id, delta)`, `fold(kind, folded)`, `clear()` | the transcript |
//! | `scroll(rows)`, `top()`, `bottom()`, `page()`, `scrolled()` | the transcript view (negative rows scroll up) |
//! | `jump(id) -> ok` | anchor the view at a block (Ctrl-G, `/jump`) |
//! | `find(text) -> n`, `find_step(forward) -> {i, n}?`, `find_clear()` | search every block's text (ASCII case-insensitive), highlight the matches on screen, step through them |
//! | `redraw()` | clear and repaint (Ctrl-L) |
//! | `suspend()` | restore, stop (Ctrl-Z), re-enter on `fg` |
//! | `copy(text)` | OSC 52 clipboard write (wrapped for tmux) |
//! | `notify(method, title, body)` | a desktop notification: `auto`, `osc9`, `osc777`, `osc99`, `bell` or `off` (wrapped for tmux and screen); the method used |
//! | `notify_command(cmd, json)` | (async) run settings' `notifications.command` (a list: argv; a string: `sh -c`) with `json` on stdin, secrets removed from its environment, killed after 10 s; true, or nil, message |
//! | `focused()` | whether the terminal has focus: its last focus report (`?1004h`), else input within the last 5 s |
//! | `edit(text)` | (async) edit `text` in `$VISUAL`/`$EDITOR` (default `vi`) on the real screen; the new text, or nil, message |
//! | `background()` | `"dark"` or `"light"` from `COLORFGBG`, else nil (`open` then asks the terminal with OSC 11; an answer within 50 ms arrives from `next()` as `{type="background", dark}`) |
//! | `mouse(on)` | mouse reporting on/off (drag-select copies, the wheel scrolls) |
//! | `size()` | columns, rows |
//! | `shell(command) -> spans` | the command as highlighted spans `{text, style}` (bash tool rows) |
//! | `screen()` | the rows on screen as last painted (tests) |
//! | `spawn(fn, ...)` | run `fn` as its own task on the Lua thread (a turn while keys are read) |
//! | `waiter() -> id`, `wait(id)` (async), `done(id)` | a one-shot wake-up: a coroutine waits for the person's answer without a timer |
//!
//! Block and layout fields are those of [`crate::native::term::transcript::BlockSpec`] and
//! [`crate::native::term::layout::Layout`]; unknown fields raise.

use crate::native::term::input::{Decoder, Input};
use crate::native::term::layout::Layout;
use crate::native::term::notify::{self, Focus, Method, TermEnv};
use crate::native::term::schedule::Next;
use crate::native::term::screen::Screen;
use crate::native::term::setup;
use crate::native::term::transcript::BlockSpec;
use mlua::{Function, Lua, LuaSerdeExt, MultiValue, Table, Value};
use std::cell::{Cell, RefCell};
use std::io::{IsTerminal, Write};
use std::rc::Rc;
use std::time::Instant;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{Mutex, Notify};
use tokio::task::JoinHandle;

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "read_line",
        lua.create_async_function(|lua, ()| async move {
            // The run's one buffered reader (shared with `line.read`).
            let reader = crate::host::run::run(&lua).stdin();
            // Bytes, not a String: a line that is not UTF-8 is taken lossily instead of ending
            // the session with a decoding error.
            let mut bytes = Vec::new();
            let n = reader
                .lock()
                .await
                .read_until(b'\n', &mut bytes)
                .await
                .map_err(mlua::Error::external)?;
            if n == 0 {
                return Ok(Value::Nil);
            }
            let line = String::from_utf8_lossy(&bytes);
            let trimmed = line.trim_end_matches(['\n', '\r']);
            Ok(Value::String(lua.create_string(trimmed)?))
        })?,
    )?;
    m.set(
        "isatty",
        lua.create_function(|_, fd: i32| {
            Ok(match fd {
                0 => std::io::stdin().is_terminal(),
                1 => std::io::stdout().is_terminal(),
                _ => std::io::stderr().is_terminal(),
            })
        })?,
    )?;
    full_screen(lua, &m)?;
    Ok(m)
}

/// The open full-screen UI of this Lua state.
struct Ui {
    screen: RefCell<Screen>,
    wake: Notify,
    decoder: Mutex<Decoder>,
    closed: Cell<bool>,
    /// Another program owns the terminal (`edit`): no painting.
    paused: Cell<bool>,
    tasks: RefCell<Vec<JoinHandle<()>>>,
    /// Focus reports and the time of the last input (`focused()`).
    focus: RefCell<Focus>,
}

impl Drop for Ui {
    fn drop(&mut self) {
        for t in self.tasks.borrow().iter() {
            t.abort();
        }
        setup::restore();
    }
}

type SharedUi = Rc<Ui>;

/// One-shot wake-ups by id (`waiter`, `wait`, `done`).
#[derive(Default)]
struct Waiters {
    next: Cell<u64>,
    map: RefCell<std::collections::HashMap<u64, Rc<Notify>>>,
}

fn waiters(lua: &Lua) -> Rc<Waiters> {
    if let Some(w) = lua.app_data_ref::<Rc<Waiters>>() {
        return w.clone();
    }
    let w = Rc::new(Waiters::default());
    lua.set_app_data(w.clone());
    w
}

/// A binding that changes the screen with `f(screen, args)`, then asks for a frame.
fn screen_fn<A: mlua::FromLuaMulti + 'static>(
    lua: &Lua,
    f: impl Fn(&mut Screen, A) + 'static,
) -> mlua::Result<mlua::Function> {
    lua.create_function(move |lua, args: A| {
        let u = ui(lua)?;
        f(&mut u.screen.borrow_mut(), args);
        u.changed();
        Ok(())
    })
}

fn ui(lua: &Lua) -> mlua::Result<SharedUi> {
    lua.app_data_ref::<SharedUi>()
        .map(|u| u.clone())
        .filter(|u| !u.closed.get())
        .ok_or_else(|| mlua::Error::runtime("native.term: the full-screen UI is not open"))
}

impl Ui {
    fn changed(&self) {
        self.screen.borrow_mut().changed();
        self.wake.notify_one();
    }
}

/// Paints whenever the scheduler says so; sleeps without a timer while idle.
async fn paint_loop(ui: std::rc::Weak<Ui>) {
    let mut out = tokio::io::stdout();
    loop {
        let Some(u) = ui.upgrade() else { return };
        if u.closed.get() {
            return;
        }
        let now = Instant::now();
        let next = if u.paused.get() {
            Next::Idle
        } else {
            u.screen.borrow().sched.next(now)
        };
        let mut bytes = Vec::new();
        match next {
            Next::Frame => u.screen.borrow_mut().paint(now, &mut bytes),
            Next::Tick => u.screen.borrow_mut().tick(now, &mut bytes),
            Next::At(deadline) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(deadline.into()) => {}
                    _ = u.wake.notified() => {}
                }
                continue;
            }
            Next::Idle => {
                u.wake.notified().await;
                continue;
            }
        }
        drop(u);
        if !bytes.is_empty() {
            // The terminal went away (SIGHUP follows): stop painting.
            if out.write_all(&bytes).await.is_err() || out.flush().await.is_err() {
                return;
            }
        }
    }
}

/// SIGCONT after an outside stop re-enters the modes and repaints. (SIGTERM and SIGHUP are
/// the run command's: it restores the terminal with [`setup::restore`] before it exits.)
fn signal_tasks(ui: &SharedUi) -> Vec<JoinHandle<()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut tasks = Vec::new();
    if let Ok(mut s) = signal(SignalKind::from_raw(libc::SIGCONT)) {
        let weak = Rc::downgrade(ui);
        tasks.push(tokio::task::spawn_local(async move {
            while s.recv().await.is_some() {
                let Some(u) = weak.upgrade() else { return };
                if u.closed.get() {
                    return;
                }
                if !setup::active() {
                    let _ = setup::enter();
                }
                u.screen.borrow_mut().invalidate();
                u.wake.notify_one();
            }
        }));
    }
    tasks
}

/// Code highlighting (off under NO_COLOR) repaints when highlighted lines land; the worker
/// thread wakes this task, which asks for a frame.
fn highlight_task(ui: &SharedUi, color: bool) -> JoinHandle<()> {
    use crate::native::term::highlight;
    highlight::set_enabled(color);
    let ready = std::sync::Arc::new(Notify::new());
    let r = ready.clone();
    highlight::set_waker(Some(std::sync::Arc::new(move || r.notify_one())));
    let weak = Rc::downgrade(ui);
    tokio::task::spawn_local(async move {
        loop {
            ready.notified().await;
            let Some(u) = weak.upgrade() else { return };
            if u.closed.get() {
                return;
            }
            u.changed();
        }
    })
}

/// The terminal's background from `COLORFGBG`: "dark", "light" or None.
fn background_env() -> Option<&'static str> {
    let v = std::env::var("COLORFGBG").ok()?;
    crate::native::term::input::colorfgbg(&v).map(|dark| if dark { "dark" } else { "light" })
}

/// Inline mode: erases the band (writing every remaining row to scrollback first when `all`)
/// so the shell, an editor or the next program starts below the transcript.
fn leave_inline(u: &Ui, all: bool) {
    let mut s = u.screen.borrow_mut();
    if !s.is_inline() || !setup::active() {
        return;
    }
    let mut bytes = Vec::new();
    s.finish_inline(all, &mut bytes);
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&bytes).and_then(|_| out.flush());
}

fn input_table(lua: &Lua, input: Input) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    match input {
        Input::Key(k) => {
            t.set("type", "key")?;
            t.set("key", k)?;
        }
        Input::Paste(text) => {
            t.set("type", "paste")?;
            t.set("text", text)?;
        }
        Input::Wheel { up, n } => {
            t.set("type", "wheel")?;
            t.set("up", up)?;
            t.set("n", n)?;
        }
        Input::Resize(w, h) => {
            t.set("type", "resize")?;
            t.set("width", w)?;
            t.set("height", h)?;
        }
        Input::FocusGained => {
            t.set("type", "focus")?;
            t.set("focused", true)?;
        }
        Input::FocusLost => {
            t.set("type", "focus")?;
            t.set("focused", false)?;
        }
        Input::Mouse { .. } => t.set("type", "mouse")?,
        Input::Background { dark } => {
            t.set("type", "background")?;
            t.set("dark", dark)?;
        }
    }
    Ok(t)
}

fn spec(lua: &Lua, v: Value) -> mlua::Result<BlockSpec> {
    lua.from_value(v)
        .map_err(|e| mlua::Error::runtime(format!("native.term: bad block: {e}")))
}

/// Base64 (standard alphabet, padded) for OSC 52.
fn base64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The OSC 52 sequence that puts `text` on the clipboard; inside tmux it is wrapped in a DCS
/// passthrough so it reaches the outer terminal.
pub fn osc52(text: &str, tmux: bool) -> String {
    let seq = format!("\x1b]52;c;{}\x07", base64(text.as_bytes()));
    if tmux {
        format!("\x1bPtmux;{}\x1b\\", seq.replace('\x1b', "\x1b\x1b"))
    } else {
        seq
    }
}

crate::lua_options! {
    pub(crate) struct OpenOpts as "fen.opts.TermOpen" for "term.open" {
        inline: Option<bool> => "boolean?", "Stay on the main screen (its scrollback keeps the transcript).",
        mouse: Option<bool> => "boolean?", "Mouse reporting (drag-select copies, the wheel scrolls).",
    }
}

fn full_screen(lua: &Lua, m: &Table) -> mlua::Result<()> {
    m.set(
        "open",
        lua.create_function(|lua, opts: Value| {
            let opts: OpenOpts = super::options(lua, opts)?;
            if let Some(u) = lua.app_data_ref::<SharedUi>() {
                if !u.closed.get() {
                    return Ok(());
                }
            }
            let (inline, mouse) = (opts.inline.unwrap_or(false), opts.mouse.unwrap_or(false));
            setup::install_panic_hook();
            let (w, h) = setup::size().unwrap_or((80, 24));
            setup::set_inline(inline);
            setup::set_mouse(mouse).map_err(mlua::Error::external)?;
            setup::enter().map_err(mlua::Error::external)?;
            let color = std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
            let mut screen = Screen::new(w, h, color);
            if inline {
                // Zellij's scroll regions do not feed its scrollback: plain newlines there.
                screen.set_inline(std::env::var_os("ZELLIJ").is_none());
            }
            let ui: SharedUi = Rc::new(Ui {
                screen: RefCell::new(screen),
                wake: Notify::new(),
                decoder: Mutex::new(Decoder::default()),
                closed: Cell::new(false),
                paused: Cell::new(false),
                tasks: RefCell::new(Vec::new()),
                focus: RefCell::new(Focus::new(Instant::now())),
            });
            // The background colour, when COLORFGBG does not tell: ask (OSC 11) without
            // waiting; the answer comes through the input as a `background` event.
            if background_env().is_none() {
                if let Ok(mut d) = ui.decoder.try_lock() {
                    let mut out = std::io::stdout().lock();
                    if out
                        .write_all(b"\x1b]11;?\x07")
                        .and_then(|_| out.flush())
                        .is_ok()
                    {
                        d.asked_background();
                    }
                }
            }
            let mut tasks = signal_tasks(&ui);
            tasks.push(highlight_task(&ui, color));
            tasks.push(tokio::task::spawn_local(paint_loop(Rc::downgrade(&ui))));
            *ui.tasks.borrow_mut() = tasks;
            ui.changed();
            lua.set_app_data(ui);
            Ok(())
        })?,
    )?;
    m.set(
        "close",
        lua.create_function(|lua, ()| {
            if let Some(u) = lua.remove_app_data::<SharedUi>() {
                crate::native::term::highlight::set_waker(None);
                u.closed.set(true);
                for t in u.tasks.borrow().iter() {
                    t.abort();
                }
                // Inline: what is left of the transcript goes to scrollback, the band goes,
                // the cursor ends below the last row.
                leave_inline(&u, true);
                setup::restore();
            }
            Ok(())
        })?,
    )?;
    m.set(
        "next",
        lua.create_async_function(|lua, ()| async move {
            let u = ui(&lua)?;
            let input = loop {
                let input = {
                    let mut d = u.decoder.lock().await;
                    d.next().await
                };
                let Some(input) = input else {
                    return Ok(Value::Nil);
                };
                // Mouse mode: selections are native; only a copy is reported.
                let Input::Mouse { kind, col, row } = input else {
                    break input;
                };
                let text = u.screen.borrow_mut().mouse(kind, col, row);
                u.wake.notify_one();
                if let Some(text) = text {
                    let seq = osc52(&text, std::env::var_os("TMUX").is_some());
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(seq.as_bytes()).and_then(|_| out.flush());
                    let t = lua.create_table()?;
                    t.set("type", "copied")?;
                    t.set("chars", text.chars().count())?;
                    return Ok(Value::Table(t));
                }
            };
            if let Input::Resize(w, h) = input {
                u.screen.borrow_mut().resize(w, h);
                u.wake.notify_one();
            }
            match &input {
                Input::FocusGained => u.focus.borrow_mut().report(true),
                Input::FocusLost => u.focus.borrow_mut().report(false),
                Input::Key(_) | Input::Paste(_) | Input::Wheel { .. } => {
                    u.focus.borrow_mut().input(Instant::now())
                }
                _ => {}
            }
            Ok(Value::Table(input_table(&lua, input)?))
        })?,
    )?;
    m.set(
        "layout",
        lua.create_function(|lua, desc: Value| {
            let u = ui(lua)?;
            let layout: Layout = lua
                .from_value(desc)
                .map_err(|e| mlua::Error::runtime(format!("native.term: bad layout: {e}")))?;
            u.screen.borrow_mut().set_layout(layout, Instant::now());
            u.wake.notify_one();
            Ok(())
        })?,
    )?;
    m.set(
        "push",
        lua.create_function(|lua, block: Value| {
            let u = ui(lua)?;
            let id = u.screen.borrow_mut().transcript.push(spec(lua, block)?);
            u.changed();
            Ok(id)
        })?,
    )?;
    m.set(
        "update",
        lua.create_function(|lua, (id, block): (u64, Value)| {
            let u = ui(lua)?;
            let s = spec(lua, block)?;
            u.screen
                .borrow_mut()
                .transcript
                .update(id, s)
                .map_err(mlua::Error::external)?;
            u.changed();
            Ok(())
        })?,
    )?;
    m.set(
        "append",
        lua.create_function(|lua, (id, delta): (u64, mlua::LuaString)| {
            let u = ui(lua)?;
            u.screen
                .borrow_mut()
                .transcript
                .append(id, &delta.to_str()?)
                .map_err(mlua::Error::external)?;
            u.changed();
            Ok(())
        })?,
    )?;
    m.set(
        "fold",
        screen_fn(lua, |s, (kind, folded): (String, bool)| {
            s.transcript.fold_kind(&kind, folded)
        })?,
    )?;
    m.set("clear", screen_fn(lua, |s, ()| s.transcript.clear())?)?;
    m.set(
        "scroll",
        lua.create_function(|lua, rows: isize| {
            let u = ui(lua)?;
            u.screen.borrow_mut().scroll(rows);
            u.wake.notify_one();
            Ok(())
        })?,
    )?;
    m.set("top", screen_fn(lua, |s, ()| s.transcript.top())?)?;
    m.set(
        "jump",
        lua.create_function(|lua, id: u64| {
            let u = ui(lua)?;
            let ok = {
                let mut s = u.screen.borrow_mut();
                let (w, h) = (s.size().0 as usize, s.page());
                s.transcript.jump(id, w, h)
            };
            u.changed();
            Ok(ok)
        })?,
    )?;
    m.set(
        "find",
        lua.create_function(|lua, needle: String| {
            let u = ui(lua)?;
            let n = u.screen.borrow_mut().transcript.find(&needle);
            u.changed();
            Ok(n)
        })?,
    )?;
    m.set(
        "find_step",
        lua.create_function(|lua, forward: bool| {
            let u = ui(lua)?;
            let at = {
                let mut s = u.screen.borrow_mut();
                let (w, h) = (s.size().0 as usize, s.page());
                s.transcript.find_step(forward, w, h)
            };
            u.changed();
            Ok(at.map(|(i, n)| vec![i, n]))
        })?,
    )?;
    m.set(
        "find_clear",
        screen_fn(lua, |s, ()| s.transcript.search = None)?,
    )?;
    m.set("bottom", screen_fn(lua, |s, ()| s.transcript.follow())?)?;
    m.set(
        "page",
        lua.create_function(|lua, ()| Ok(ui(lua)?.screen.borrow().page()))?,
    )?;
    m.set(
        "scrolled",
        lua.create_function(|lua, ()| {
            let u = ui(lua)?;
            let s = u.screen.borrow();
            Ok((
                s.transcript.view != crate::native::term::transcript::View::Follow,
                s.transcript.new_below,
            ))
        })?,
    )?;
    m.set(
        "redraw",
        lua.create_function(|lua, ()| {
            let u = ui(lua)?;
            u.screen.borrow_mut().invalidate();
            u.wake.notify_one();
            Ok(())
        })?,
    )?;
    m.set(
        "suspend",
        lua.create_function(|lua, ()| {
            let u = ui(lua)?;
            leave_inline(&u, false);
            setup::suspend().map_err(mlua::Error::external)?;
            if let Ok((w, h)) = setup::size() {
                u.screen.borrow_mut().resize(w, h);
            }
            u.screen.borrow_mut().invalidate();
            u.wake.notify_one();
            Ok(())
        })?,
    )?;
    m.set(
        "focused",
        lua.create_function(|lua, ()| {
            Ok(match lua.app_data_ref::<SharedUi>() {
                Some(u) if !u.closed.get() => u.focus.borrow().focused(Instant::now()),
                _ => true,
            })
        })?,
    )?;
    m.set(
        "notify",
        lua.create_function(|_, (method, title, body): (String, String, Option<String>)| {
            let env = TermEnv::from_env();
            let chosen = if method == "auto" {
                notify::auto(&env)
            } else {
                Method::parse(&method).ok_or_else(|| {
                    mlua::Error::runtime(format!(
                        "native.term.notify: unknown method '{method}' (auto, osc9, osc777, osc99, bell, off)"
                    ))
                })?
            };
            let seq = notify::wrap(
                &notify::sequence(chosen, &title, body.as_deref().unwrap_or("")),
                &env,
            );
            if !seq.is_empty() {
                let mut out = std::io::stdout().lock();
                out.write_all(&seq)
                    .and_then(|_| out.flush())
                    .map_err(mlua::Error::external)?;
            }
            Ok(chosen.name())
        })?,
    )?;
    m.set(
        "notify_command",
        lua.create_async_function(|lua, (command, input): (Value, String)| async move {
            let argv: Vec<String> = match &command {
                Value::String(s) => vec!["sh".into(), "-c".into(), s.to_str()?.to_string()],
                Value::Table(t) => t.sequence_values::<String>().collect::<mlua::Result<_>>()?,
                other => {
                    return super::failure(
                        &lua,
                        format!(
                            "notifications.command must be a list of strings or a string, not a {}",
                            other.type_name()
                        ),
                    )
                }
            };
            // Secrets never reach the notifier (`sandbox::plan`).
            let plan = crate::host::run::run(&lua)
                .plan(crate::native::sandbox::Child::Notifier)
                .await?;
            match notify::run_command(argv, input, &plan.env_remove).await {
                Ok(None) => Ok((Value::Boolean(true), Value::Nil)),
                Ok(Some(msg)) => super::failure(&lua, msg),
                Err(e) => super::failure(&lua, format!("notifications.command: {e}")),
            }
        })?,
    )?;
    m.set(
        "copy",
        lua.create_function(|_, text: mlua::LuaString| {
            let seq = osc52(&text.to_str()?, std::env::var_os("TMUX").is_some());
            let mut out = std::io::stdout().lock();
            out.write_all(seq.as_bytes())
                .and_then(|_| out.flush())
                .map_err(mlua::Error::external)
        })?,
    )?;
    m.set(
        "edit",
        lua.create_async_function(|lua, text: mlua::LuaString| async move {
            let u = ui(&lua)?;
            let text = text.to_str()?.to_string();
            let editor = std::env::var("VISUAL")
                .ok()
                .filter(|v| !v.trim().is_empty())
                .or_else(|| {
                    std::env::var("EDITOR")
                        .ok()
                        .filter(|v| !v.trim().is_empty())
                })
                .unwrap_or_else(|| "vi".into());
            let file = match tempfile::Builder::new().suffix(".md").tempfile() {
                Ok(f) => f,
                Err(e) => return Ok((None, Some(format!("cannot make a temp file: {e}")))),
            };
            if let Err(e) = std::fs::write(file.path(), &text) {
                return Ok((None, Some(format!("cannot write the temp file: {e}"))));
            }
            // The person's editor sees their environment (`sandbox::plan`).
            let plan = crate::host::run::run(&lua)
                .plan(crate::native::sandbox::Child::Editor)
                .await?;
            u.paused.set(true);
            leave_inline(&u, false);
            setup::restore();
            // Through the shell, so EDITOR="code --wait" works; the terminal is the editor's.
            let mut cmd = tokio::process::Command::new("/bin/sh");
            for k in &plan.env_remove {
                cmd.env_remove(k);
            }
            let status = cmd
                .arg("-c")
                .arg(format!("{editor} \"$1\""))
                .arg("fen-edit")
                .arg(file.path())
                .status()
                .await;
            let _ = setup::enter();
            u.paused.set(false);
            if let Ok((w, h)) = setup::size() {
                u.screen.borrow_mut().resize(w, h);
            }
            u.screen.borrow_mut().invalidate();
            u.wake.notify_one();
            match status {
                Ok(st) if st.success() => match std::fs::read_to_string(file.path()) {
                    Ok(t) => Ok((Some(t), None)),
                    Err(e) => Ok((None, Some(format!("cannot read the edited text: {e}")))),
                },
                Ok(st) => Ok((None, Some(format!("{editor} exited with {st}")))),
                Err(e) => Ok((None, Some(format!("cannot run {editor}: {e}")))),
            }
        })?,
    )?;
    m.set(
        "background",
        lua.create_function(|_, ()| Ok(background_env()))?,
    )?;
    m.set(
        "palette",
        lua.create_function(|lua, styles: Value| {
            use crate::native::term::{palette, style::Style};
            let mut map = std::collections::HashMap::new();
            match styles {
                Value::Nil => {}
                Value::Table(t) => {
                    for pair in t.pairs::<String, Value>() {
                        let (name, v) = pair?;
                        let style: Style = lua.from_value(v).map_err(|e| {
                            let why = match e {
                                mlua::Error::DeserializeError(why) => why,
                                e => e.to_string(),
                            };
                            mlua::Error::runtime(format!("native.term.palette: {name}: {why}"))
                        })?;
                        map.insert(name, style);
                    }
                }
                other => {
                    return Err(mlua::Error::runtime(format!(
                        "native.term.palette: expected a table of styles, got {}",
                        other.type_name()
                    )))
                }
            }
            palette::set(&map)
                .map_err(|e| mlua::Error::runtime(format!("native.term.palette: {e}")))?;
            if let Ok(u) = ui(lua) {
                u.changed();
            }
            Ok(())
        })?,
    )?;
    m.set(
        "mouse",
        lua.create_function(|lua, on: bool| {
            let _ = ui(lua)?;
            setup::set_mouse(on).map_err(mlua::Error::external)
        })?,
    )?;
    m.set(
        "size",
        lua.create_function(|lua, ()| {
            if let Ok(u) = ui(lua) {
                return Ok(u.screen.borrow().size());
            }
            Ok(setup::size().unwrap_or((80, 24)))
        })?,
    )?;
    m.set(
        "shell",
        lua.create_function(|lua, command: mlua::LuaString| {
            let spans = crate::native::term::shell::highlight(&command.to_str()?);
            lua.to_value_with(
                &spans,
                mlua::serde::SerializeOptions::new().serialize_none_to_null(false),
            )
        })?,
    )?;
    m.set(
        "screen",
        lua.create_function(|lua, ()| Ok(ui(lua)?.screen.borrow().text()))?,
    )?;
    m.set(
        "waiter",
        lua.create_function(|lua, ()| {
            let w = waiters(lua);
            let id = w.next.get() + 1;
            w.next.set(id);
            w.map.borrow_mut().insert(id, Rc::new(Notify::new()));
            Ok(id)
        })?,
    )?;
    m.set(
        "wait",
        lua.create_async_function(|lua, id: u64| async move {
            let n = waiters(&lua).map.borrow().get(&id).cloned();
            if let Some(n) = n {
                n.notified().await;
                waiters(&lua).map.borrow_mut().remove(&id);
            }
            Ok(())
        })?,
    )?;
    m.set(
        "done",
        lua.create_function(|lua, id: u64| {
            if let Some(n) = waiters(lua).map.borrow().get(&id) {
                // A permit is stored when nobody waits yet.
                n.notify_one();
            }
            Ok(())
        })?,
    )?;
    m.set(
        "spawn",
        lua.create_function(|_, (f, args): (Function, MultiValue)| {
            tokio::task::spawn_local(async move {
                // The caller wraps its body in pcall; an error here has nowhere to go.
                let _ = f.call_async::<()>(args).await;
            });
            Ok(())
        })?,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn osc52_plain_and_in_tmux() {
        assert_eq!(super::osc52("hi!", false), "\x1b]52;c;aGkh\x07");
        assert_eq!(super::base64(b"ab"), "YWI=");
        assert_eq!(super::base64(b"a"), "YQ==");
        assert_eq!(
            super::osc52("hi!", true),
            "\x1bPtmux;\x1b\x1b]52;c;aGkh\x07\x1b\\"
        );
    }
}
