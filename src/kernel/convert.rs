//! Value conversion across the boundary: Lua values to JSON and back, value shapes for contract
//! validation, and readable messages out of Lua errors.

use crate::kernel::contracts::{Contract, Shape};
use crate::kernel::registry::Listed;
use mlua::{Lua, LuaSerdeExt, Table, Value};

/// Checks a table against a record contract. `Err((field, message))` for the first bad field.
pub fn validate_table(contract: &Contract, table: &Table) -> Result<(), (String, String)> {
    for field in &contract.fields {
        let value: Value = table.get(field.name.as_str()).unwrap_or(Value::Nil);
        let result = match &value {
            Value::String(s) => match s.to_str() {
                Ok(text) => field.check(Shape::String(&text)),
                Err(_) => field.check(Shape::String("")),
            },
            other => field.check(shape_of_non_string(other)),
        };
        if let Err(msg) = result {
            return Err((field.name.clone(), msg));
        }
    }
    Ok(())
}

fn shape_of_non_string(v: &Value) -> Shape<'static> {
    match v {
        Value::Nil => Shape::Nil,
        Value::Boolean(_) => Shape::Boolean,
        Value::Integer(_) | Value::Number(_) => Shape::Number,
        Value::Table(_) => Shape::Table,
        Value::Function(_) => Shape::Function,
        _ => Shape::Other,
    }
}

fn serde_options() -> mlua::serde::DeserializeOptions {
    mlua::serde::DeserializeOptions::new()
        .deny_unsupported_types(false)
        .deny_recursive_tables(false)
        .sort_keys(true)
}

/// A Lua value as JSON, functions and other non-data values left out, keys sorted.
pub fn lua_to_json(lua: &Lua, value: Value) -> serde_json::Value {
    lua.from_value_with::<serde_json::Value>(value, serde_options())
        .unwrap_or(serde_json::Value::Null)
}

fn lua_serializer(lua: &Lua) -> mlua::serde::Serializer<'_> {
    mlua::serde::Serializer::new_with_options(
        lua,
        mlua::serde::SerializeOptions::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false),
    )
}

/// JSON text straight to a Lua value, without an intermediate tree (the hot path of every
/// streamed provider event).
pub fn json_text_to_lua(lua: &Lua, text: &[u8]) -> Result<Value, String> {
    let mut de = serde_json::Deserializer::from_slice(text);
    let value =
        serde_transcode::transcode(&mut de, lua_serializer(lua)).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// JSON as a Lua value (null becomes nil inside tables, arrays keep the array marker).
pub fn json_to_lua(lua: &Lua, value: &serde_json::Value) -> mlua::Result<Value> {
    lua.to_value_with(
        value,
        mlua::serde::SerializeOptions::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false),
    )
}

/// A registry entry for `fen list KIND --json` and `api.list`: the spec's data fields plus
/// `name`, `kind`, `owner` and `shadowed_by`.
pub fn contribution_json(lua: &Lua, listed: &Listed<'_>) -> serde_json::Value {
    let c = listed.contribution;
    let mut obj = match lua_to_json(lua, Value::Table(c.spec.clone())) {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    obj.insert("kind".into(), c.kind.clone().into());
    obj.insert("owner".into(), c.owner.clone().into());
    if let Some(n) = &c.name {
        obj.insert("name".into(), n.clone().into());
    }
    obj.insert(
        "shadowed_by".into(),
        listed
            .shadowed_by
            .map(|s| serde_json::Value::String(s.to_string()))
            .unwrap_or(serde_json::Value::Null),
    );
    serde_json::Value::Object(obj)
}

/// Splits a Lua error into its message and traceback (when Lua supplied one).
pub fn error_parts(err: &mlua::Error) -> (String, Option<String>) {
    match err {
        mlua::Error::CallbackError { traceback, cause } => {
            let (msg, inner_tb) = error_parts(cause);
            (msg, inner_tb.or_else(|| Some(traceback.clone())))
        }
        mlua::Error::RuntimeError(s) => split_traceback(s),
        mlua::Error::SyntaxError { message, .. } => (message.clone(), None),
        mlua::Error::WithContext { context, cause } => {
            let (msg, tb) = error_parts(cause);
            (format!("{context}: {msg}"), tb)
        }
        other => split_traceback(&other.to_string()),
    }
}

fn split_traceback(s: &str) -> (String, Option<String>) {
    match s.split_once("\nstack traceback:") {
        Some((msg, tb)) => (msg.to_string(), Some(format!("stack traceback:{tb}"))),
        None => (s.to_string(), None),
    }
}
