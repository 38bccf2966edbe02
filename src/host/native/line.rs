//! `fen.native.line`: reading the line REPL's input. On a terminal (stdin and stdout both
//! ttys) lines are read through rustyline: cursor keys edit the line, Up/Down walk a history
//! kept in `$XDG_STATE_HOME/fen/repl-history` (1000 lines). Without a terminal, lines are read
//! as they come and escape sequences are removed ([`crate::native::line::strip_escapes`]), so
//! an arrow key never reaches the model as `\x1b[A`.
//!
//! ```lua
//! ---@class fen.native.line
//! ---@field interactive fun(): boolean  -- stdin and stdout are terminals
//! ---@field read fun(prompt: string, initial?: string): string|nil, integer  -- async; nil at
//! ---        end of input; on a terminal `initial` is already in the line, for editing (a
//! ---        rewound turn's prompt); the second value counts removed escape sequences (0 on a
//! ---        terminal); Ctrl-C at the prompt raises SIGINT (as without line editing) and gives ""
//! ---@field pending fun(): boolean  -- input is already waiting (typed while a turn ran)
//! ```

use mlua::{Lua, Table, Value};
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncBufReadExt;

type Editor = rustyline::Editor<(), rustyline::history::FileHistory>;
/// The editor, shared with the blocking thread that runs `readline`.
type SharedEditor = Arc<Mutex<Option<Editor>>>;

const HISTORY_LINES: usize = 1000;

fn history_path(lua: &Lua) -> std::path::PathBuf {
    crate::host::run::run(lua)
        .paths
        .state_dir
        .join("repl-history")
}

fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "interactive",
        lua.create_function(|_, ()| Ok(interactive()))?,
    )?;
    m.set(
        "pending",
        lua.create_function(|_, ()| {
            let mut fd = libc::pollfd {
                fd: 0,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, zero timeout: returns at once.
            let n = unsafe { libc::poll(&mut fd, 1, 0) };
            Ok(n > 0 && fd.revents & libc::POLLIN != 0)
        })?,
    )?;
    m.set(
        "read",
        lua.create_async_function(
            |lua, (prompt, initial): (Option<String>, Option<String>)| async move {
                if interactive() {
                    read_edited(
                        &lua,
                        prompt.unwrap_or_default(),
                        initial.unwrap_or_default(),
                    )
                    .await
                } else {
                    read_plain(&lua).await
                }
            },
        )?,
    )?;
    Ok(m)
}

/// A line through rustyline, on a blocking thread (it waits for keys).
async fn read_edited(lua: &Lua, prompt: String, initial: String) -> mlua::Result<(Value, usize)> {
    let shared: SharedEditor = match lua.app_data_ref::<SharedEditor>() {
        Some(e) => e.clone(),
        None => {
            let e: SharedEditor = Arc::new(Mutex::new(None));
            lua.set_app_data(e.clone());
            e
        }
    };
    let history = history_path(lua);
    let outcome = tokio::task::spawn_blocking(move || -> Result<Option<String>, String> {
        let mut guard = shared
            .lock()
            .map_err(|_| "line editor poisoned".to_string())?;
        if guard.is_none() {
            let config = rustyline::Config::builder()
                .max_history_size(HISTORY_LINES)
                .map_err(|e| e.to_string())?
                .auto_add_history(false)
                .build();
            let mut editor = Editor::with_config(config).map_err(|e| e.to_string())?;
            // No history yet is the usual first run.
            let _ = editor.load_history(&history);
            *guard = Some(editor);
        }
        let Some(editor) = guard.as_mut() else {
            return Err("line editor missing".into());
        };
        match editor.readline_with_initial(&prompt, (&initial, "")) {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                    let path = &history;
                    if let Some(dir) = path.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    // Appends, so several fen sessions share one history.
                    let _ = editor.append_history(&path);
                }
                Ok(Some(line))
            }
            // Raw mode turned Ctrl-C into a key: make it the signal it would have been, so
            // the REPL's Ctrl-C rules (a hint, then quit) hold with line editing too.
            Err(rustyline::error::ReadlineError::Interrupted) => {
                // SAFETY: raising a signal at ourselves has no preconditions.
                unsafe { libc::raise(libc::SIGINT) };
                Ok(Some(String::new()))
            }
            Err(rustyline::error::ReadlineError::Eof) => Ok(None),
            Err(e) => Err(e.to_string()),
        }
    })
    .await
    .map_err(mlua::Error::external)?
    .map_err(mlua::Error::runtime)?;
    Ok(match outcome {
        Some(line) => (Value::String(lua.create_string(&line)?), 0),
        None => (Value::Nil, 0),
    })
}

/// A line as it comes, escape sequences removed.
async fn read_plain(lua: &Lua) -> mlua::Result<(Value, usize)> {
    // The run's one buffered reader (shared with `term.read_line`).
    let reader = crate::host::run::run(lua).stdin();
    let mut raw = Vec::new();
    let n = reader
        .lock()
        .await
        .read_until(b'\n', &mut raw)
        .await
        .map_err(mlua::Error::external)?;
    if n == 0 {
        return Ok((Value::Nil, 0));
    }
    let text = String::from_utf8_lossy(&raw);
    let text = text.trim_end_matches(['\n', '\r']);
    let (clean, removed) = crate::native::line::strip_escapes(text);
    Ok((Value::String(lua.create_string(&clean)?), removed))
}
