//! Value conversion across the boundary: Lua values to JSON and back, value shapes for contract
//! validation, and readable messages out of Lua errors.

use crate::kernel::contracts::{self, Contract, Shape};
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

/// Checks a value against a record or union contract of the types or protocols section (a
/// protocol message on arrival: `api.validate`). Like [`validate_table`], and deeper: a union
/// is told apart by its variants' discriminator (the field with a `value`), and a field whose
/// type names a record or union, or a list of them (`[RpcImage]`), is checked in turn. With
/// `strict`, a field the record does not name is refused. `Err` starts with the path of the
/// bad value (`images[1]: field 'mime_type' expected ...`).
pub fn validate_value(name: &str, value: &Value, strict: bool) -> Result<(), String> {
    let contract = contracts::contracts()
        .shape(name)
        .ok_or_else(|| format!("no contract named {name:?}"))?;
    check_contract(contract, value, strict, "")
}

fn check_contract(c: &Contract, value: &Value, strict: bool, path: &str) -> Result<(), String> {
    let Value::Table(t) = value else {
        return Err(format!(
            "{path}expected {} (an object), got {}",
            c.name,
            describe(value)
        ));
    };
    if !c.members.is_empty() {
        return check_union(c, t, strict, path);
    }
    if t.raw_len() > 0 {
        return Err(format!("{path}expected {} (an object), got a list", c.name));
    }
    validate_table(c, t).map_err(|e| format!("{path}{e}"))?;
    if strict {
        for pair in t.pairs::<Value, Value>() {
            let (key, _) = pair.map_err(|e| e.to_string())?;
            let known = match &key {
                Value::String(k) => c.fields.iter().any(|f| k.as_bytes() == f.name.as_bytes()),
                _ => false,
            };
            if !known {
                let names: Vec<&str> = c.fields.iter().map(|f| f.name.as_str()).collect();
                return Err(format!(
                    "{path}unknown field {}; {} takes {}",
                    key_text(&key),
                    c.name,
                    names.join(", ")
                ));
            }
        }
    }
    for field in &c.fields {
        let v: Value = t.get(field.name.as_str()).unwrap_or(Value::Nil);
        if is_nil(&v) {
            continue;
        }
        check_nested(&field.ty, &v, strict, &format!("{path}{}", field.name))?;
    }
    Ok(())
}

/// The variant of a union whose discriminator the table carries.
fn check_union(c: &Contract, t: &Table, strict: bool, path: &str) -> Result<(), String> {
    let mut wanted = Vec::new();
    let mut disc_name = "type";
    for m in c.members.iter().filter(|m| m.kind == "variant") {
        let Some(variant) = contracts::contracts().shape(&m.name) else {
            continue;
        };
        let Some(disc) = variant.fields.iter().find(|f| f.value.is_some()) else {
            continue;
        };
        disc_name = disc.name.as_str();
        let expected = disc.value.as_deref().unwrap_or_default();
        let got: Option<String> = t.get(disc.name.as_str()).ok().flatten();
        if got.as_deref() == Some(expected) {
            return check_contract(variant, &Value::Table(t.clone()), strict, path);
        }
        wanted.push(format!("{expected:?}"));
    }
    let got: Value = t.get(disc_name).unwrap_or(Value::Nil);
    Err(format!(
        "{path}field '{disc_name}' expected one of {}, got {}",
        wanted.join(", "),
        describe(&got)
    ))
}

/// A field's value against the record or union types its type names (others were checked by
/// [`validate_table`]): `Name`, `[Name]`, `[A|B]`, alternatives joined by `|`.
fn check_nested(ty: &str, v: &Value, strict: bool, path: &str) -> Result<(), String> {
    let Value::Table(t) = v else { return Ok(()) };
    let mut first_err = None;
    let mut any_shape = false;
    // Only capitalised names can be contracts (no look-up for `string`, `table`, ...).
    let named = |n: &&str| n.starts_with(|c: char| c.is_ascii_uppercase());
    for alt in split_alternatives(ty) {
        let result = if let Some(inner) = alt.strip_prefix('[').and_then(|a| a.strip_suffix(']')) {
            let elements: Vec<&str> = split_alternatives(inner)
                .into_iter()
                .filter(|e| named(e) && contracts::contracts().shape(e).is_some())
                .collect();
            if elements.is_empty() {
                continue;
            }
            any_shape = true;
            check_list(&elements, t, strict, path)
        } else if let Some(c) = Some(alt)
            .filter(named)
            .and_then(|a| contracts::contracts().shape(a))
        {
            any_shape = true;
            check_contract(c, v, strict, &format!("{path}."))
        } else {
            continue;
        };
        match result {
            Ok(()) => return Ok(()),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match (any_shape, first_err) {
        (true, Some(e)) => Err(e),
        _ => Ok(()),
    }
}

fn check_list(elements: &[&str], t: &Table, strict: bool, path: &str) -> Result<(), String> {
    let len = t.raw_len();
    if len == 0 && t.clone().pairs::<Value, Value>().next().is_some() {
        return Err(format!("{path}: expected a list, got an object"));
    }
    for i in 1..=len {
        let item: Value = t.raw_get(i).map_err(|e| e.to_string())?;
        let at = format!("{path}[{i}]: ");
        let mut first_err = None;
        for e in elements {
            let Some(c) = contracts::contracts().shape(e) else {
                continue;
            };
            match check_contract(c, &item, strict, &at) {
                Ok(()) => {
                    first_err = None;
                    break;
                }
                Err(err) => {
                    first_err.get_or_insert(err);
                }
            }
        }
        if let Some(err) = first_err {
            return Err(err);
        }
    }
    Ok(())
}

/// `A|[B|C]|D` as `A`, `[B|C]`, `D` (bars inside brackets stay).
fn split_alternatives(ty: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, ch) in ty.char_indices() {
        match ch {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            '|' if depth == 0 => {
                out.push(ty[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(ty[start..].trim());
    out
}

fn is_nil(v: &Value) -> bool {
    matches!(shape_of_non_string(v), Shape::Nil)
}

fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => format!("'{}'", s.to_string_lossy()),
        Value::Integer(i) => format!("[{i}]"),
        other => format!("<{}>", other.type_name()),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::String(s) => Shape::String(&s.to_string_lossy()).describe(),
        other => shape_of_non_string(other).describe(),
    }
}

fn shape_of_non_string(v: &Value) -> Shape<'static> {
    match v {
        Value::Nil => Shape::Nil,
        // JSON null (`native.json.null`): absent, as ACP and fen's RPC read it.
        Value::LightUserData(ud) if ud.0.is_null() => Shape::Nil,
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
