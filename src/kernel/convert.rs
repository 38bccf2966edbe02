//! Value conversion across the boundary: Lua values to JSON and back, value shapes for contract
//! validation, and readable messages out of Lua errors.

use crate::kernel::contracts::{Contract, Shape};
use crate::kernel::registry::Listed;
use mlua::{Lua, LuaSerdeExt, Table, Value};

/// Checks a table against a record contract. `Err` says what is wrong: every missing required
/// field at once when several are (`missing: description, parameters, execute`), so an author
/// fixes them in one go; else the first bad field (`field 'risk' expected ..., got ...`).
pub fn validate_table(contract: &Contract, table: &Table) -> Result<(), String> {
    let mut missing = Vec::new();
    let mut first_bad = None;
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
            if value.is_nil() {
                missing.push((field.name.as_str(), msg));
            } else if first_bad.is_none() {
                first_bad = Some(format!("field '{}' {msg}", field.name));
            }
        }
    }
    let missing_text = match missing.as_slice() {
        [] => None,
        [(name, msg)] => Some(format!("field '{name}' {msg}")),
        several => Some(format!(
            "missing: {} (all required)",
            several
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    match (first_bad, missing_text) {
        (None, None) => Ok(()),
        (Some(bad), None) => Err(bad),
        (None, Some(m)) => Err(m),
        (Some(bad), Some(m)) => Err(format!("{bad}; {m}")),
    }
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

/// Why a Lua value cannot become JSON: the path of the bad value (Lua indices, 1-based) and
/// what is wrong with it, e.g. `messages[3].content[1].text: invalid UTF-8 at byte 499`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct ConvertError {
    pub path: String,
    pub problem: String,
}

/// How deep a value may nest before it is refused (a guard against runaway structures).
const MAX_DEPTH: usize = 128;

/// A Lua value as JSON, keys sorted. Raises (never a silent `null`) on anything JSON cannot
/// hold: a string that is not UTF-8, a cycle, a function or other non-data value, a key that is
/// neither a string nor an integer, NaN or infinity. `native.json.null` becomes `null`.
pub fn lua_to_json(lua: &Lua, value: &Value) -> Result<serde_json::Value, ConvertError> {
    Walk::new(lua, false).value(value)
}

/// Like [`lua_to_json`], but functions (and other non-data values) inside tables are left out
/// instead of refused: the data fields of a register spec, for listings.
/// [`lua_to_json`] plus the number of string bytes in the value (a cheap size estimate).
pub fn lua_to_json_sized(
    lua: &Lua,
    value: &Value,
) -> Result<(serde_json::Value, usize), ConvertError> {
    let mut w = Walk::new(lua, false);
    let v = w.value(value)?;
    Ok((v, w.string_bytes))
}

pub fn lua_data_to_json(lua: &Lua, value: &Value) -> Result<serde_json::Value, ConvertError> {
    Walk::new(lua, true).value(value)
}

/// One conversion: where it is (`path`), the tables on the way there (cycle check), and how
/// an empty table meant as an array is recognised (mlua's array metatable).
struct Walk {
    path: String,
    seen: Vec<*const std::ffi::c_void>,
    skip_non_data: bool,
    array_mt: *const std::ffi::c_void,
    string_bytes: usize,
}

impl Walk {
    fn new(lua: &Lua, skip_non_data: bool) -> Walk {
        Walk {
            path: String::new(),
            seen: Vec::new(),
            skip_non_data,
            array_mt: lua.array_metatable().to_pointer(),
            string_bytes: 0,
        }
    }

    fn value(&mut self, v: &Value) -> Result<serde_json::Value, ConvertError> {
        to_json(v, self)
    }
}

fn fail(path: &str, problem: impl Into<String>) -> ConvertError {
    ConvertError {
        path: if path.is_empty() {
            "the value".into()
        } else {
            path.to_string()
        },
        problem: problem.into(),
    }
}

fn is_data(v: &Value) -> bool {
    !matches!(
        v,
        Value::Function(_) | Value::Thread(_) | Value::UserData(_) | Value::Error(_)
    )
}

fn to_json(value: &Value, w: &mut Walk) -> Result<serde_json::Value, ConvertError> {
    Ok(match value {
        Value::Nil => serde_json::Value::Null,
        Value::Boolean(b) => serde_json::Value::Bool(*b),
        Value::LightUserData(u) if u.0.is_null() => serde_json::Value::Null,
        Value::Integer(i) => serde_json::Value::from(*i),
        Value::Number(n) => match serde_json::Number::from_f64(*n) {
            Some(n) => serde_json::Value::Number(n),
            None => return Err(fail(&w.path, format!("the number {n} has no JSON form"))),
        },
        Value::String(s) => {
            let bytes = s.as_bytes();
            w.string_bytes += bytes.len();
            match simdutf8::compat::from_utf8(&bytes) {
                Ok(text) => serde_json::Value::String(text.to_owned()),
                Err(e) => {
                    return Err(fail(
                        &w.path,
                        format!("invalid UTF-8 at byte {}", e.valid_up_to()),
                    ))
                }
            }
        }
        Value::Table(t) => table_to_json(t, w)?,
        other => {
            return Err(fail(
                &w.path,
                format!("a {} cannot become JSON", other.type_name()),
            ))
        }
    })
}

fn table_to_json(t: &Table, w: &mut Walk) -> Result<serde_json::Value, ConvertError> {
    let ptr = t.to_pointer();
    if w.seen.contains(&ptr) {
        return Err(fail(&w.path, "the table contains itself (a cycle)"));
    }
    if w.seen.len() >= MAX_DEPTH {
        return Err(fail(
            &w.path,
            format!("nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    w.seen.push(ptr);
    let result = table_body(t, w);
    w.seen.pop();
    result
}

fn table_body(t: &Table, w: &mut Walk) -> Result<serde_json::Value, ConvertError> {
    let len = t.raw_len();
    let skip_non_data = w.skip_non_data;
    let marked_array = t.metatable().is_some_and(|m| m.to_pointer() == w.array_mt);
    let mut pairs = 0usize;
    for pair in t.pairs::<Value, Value>() {
        let (_, v) = pair.map_err(|e| fail(&w.path, e.to_string()))?;
        if skip_non_data && !is_data(&v) {
            continue;
        }
        pairs += 1;
    }
    if marked_array || (len > 0 && pairs == len) {
        let mut out = Vec::with_capacity(len);
        let base = w.path.len();
        for i in 1..=len {
            let v: Value = t.raw_get(i).map_err(|e| fail(&w.path, e.to_string()))?;
            if skip_non_data && !is_data(&v) {
                continue;
            }
            w.path.push_str(&format!("[{i}]"));
            let item = to_json(&v, w);
            w.path.truncate(base);
            out.push(item?);
        }
        return Ok(serde_json::Value::Array(out));
    }
    let mut map = serde_json::Map::new();
    let base = w.path.len();
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(|e| fail(&w.path, e.to_string()))?;
        if skip_non_data && !is_data(&v) {
            continue;
        }
        let key = match &k {
            Value::String(s) => match s.to_str() {
                Ok(k) => k.to_string(),
                Err(_) => return Err(fail(&w.path, "a key is not valid UTF-8")),
            },
            Value::Integer(i) => i.to_string(),
            Value::Number(n) if n.fract() == 0.0 && n.is_finite() => (*n as i64).to_string(),
            other => {
                return Err(fail(
                    &w.path,
                    format!(
                        "a {} key cannot become a JSON object key",
                        other.type_name()
                    ),
                ))
            }
        };
        if !w.path.is_empty() {
            w.path.push('.');
        }
        w.path.push_str(&key);
        let item = to_json(&v, w);
        w.path.truncate(base);
        map.insert(key, item?);
    }
    // serde_json's map keeps keys sorted (no preserve_order feature): the same text for the
    // same table, whatever Lua's iteration order.
    Ok(serde_json::Value::Object(map))
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
    let value = serde_transcode::transcode(&mut de, lua_serializer(lua)).map_err(|e| {
        // The transcoder wraps a syntax error twice ("serialize error: serialize error: ...");
        // serde_json's own error says what and where (line, column).
        match serde_json::from_slice::<serde::de::IgnoredAny>(text) {
            Err(syntax) => syntax.to_string(),
            Ok(_) => e.to_string(),
        }
    })?;
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
    let mut obj = match lua_data_to_json(lua, &Value::Table(c.spec.clone())) {
        Ok(serde_json::Value::Object(map)) => map,
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
