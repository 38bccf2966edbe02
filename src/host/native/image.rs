//! `native.image`: `prepare(data, mime_type)` (async) checks an image a client sent in a prompt
//! (base64 and its declared type) and makes it ready for a model (scaled to fit 2000x2000 and
//! 3.75 MB), over [`crate::native::image::from_base64`]. Returns the canonical image block
//! `{type = "image", data, mime_type, width, height, bytes}` or `nil, message`.

use super::{blocking, failure};
use mlua::{Lua, Table, Value};

pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let m = lua.create_table()?;
    m.set(
        "prepare",
        lua.create_async_function(
            |lua, (data, mime_type): (mlua::LuaString, mlua::LuaString)| async move {
                let data = data.to_str()?.to_string();
                let mime = mime_type.to_str()?.to_string();
                // Decoding a large image takes milliseconds to seconds: off the Lua thread.
                let prepared =
                    blocking(move || crate::native::image::from_base64(&data, &mime)).await?;
                let img = match prepared {
                    Ok(img) => img,
                    Err(e) => return failure(&lua, e.to_string()),
                };
                let t = lua.create_table()?;
                t.set("type", "image")?;
                t.set("data", img.data)?;
                t.set("mime_type", img.mime_type)?;
                t.set("width", img.width)?;
                t.set("height", img.height)?;
                t.set("bytes", img.bytes)?;
                Ok((Value::Table(t), Value::Nil))
            },
        )?,
    )?;
    Ok(m)
}
