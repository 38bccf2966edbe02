//! Terminal basics for line presenters: `native.term.read_line()` (async; nil at end of input)
//! and `native.term.isatty(fd)`.

use mlua::{Lua, Table, Value};
use std::io::IsTerminal;
use std::rc::Rc;
use tokio::io::{AsyncBufReadExt, BufReader, Stdin};
use tokio::sync::Mutex;

type SharedStdin = Rc<Mutex<BufReader<Stdin>>>;

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "read_line",
        lua.create_async_function(|lua, ()| async move {
            // One buffered reader per Lua state: a second one would lose what the first buffered.
            let reader: SharedStdin = match lua.app_data_ref::<SharedStdin>() {
                Some(r) => r.clone(),
                None => {
                    let r: SharedStdin = Rc::new(Mutex::new(BufReader::new(tokio::io::stdin())));
                    lua.set_app_data(r.clone());
                    r
                }
            };
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
    Ok(m)
}
