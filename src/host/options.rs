//! Option tables of the Lua bindings, read one way: [`options`] deserializes a table into a
//! `#[serde(deny_unknown_fields)]` struct declared with [`lua_options!`], which also lists each
//! field's Lua type and doc. The same list generates the LuaCATS classes of
//! `extensions/lib/annotations.gen.lua` (`fen docs`), so what a binding accepts and what editors
//! are told cannot drift apart: an unknown key is an error naming the function and the key.

use mlua::{Lua, Value};
use serde::de::{self, Deserializer, Visitor};

/// One field of an options class: its name, LuaCATS type (`integer?` when optional) and doc.
pub struct Field {
    pub name: &'static str,
    pub ty: &'static str,
    pub doc: &'static str,
}

/// A binding's options struct (see [`lua_options!`]).
pub trait LuaOptions: serde::de::DeserializeOwned {
    /// The binding as errors name it: `process.run`.
    const FUNCTION: &'static str;
    /// The LuaCATS class: `fen.opts.ProcessRun`.
    const CLASS: &'static str;
    const FIELDS: &'static [Field];
}

/// What the annotation generator needs of one options class.
pub struct Class {
    pub function: &'static str,
    pub class: &'static str,
    pub fields: &'static [Field],
}

pub fn class<T: LuaOptions>() -> Class {
    Class {
        function: T::FUNCTION,
        class: T::CLASS,
        fields: T::FIELDS,
    }
}

/// Declares a binding's options struct (serde, unknown keys denied) and its field list for the
/// generated annotations: `name: RustType => "lua type", "doc"`. Attributes on a field
/// (`#[serde(default)]`) are kept. A callback field is an `Option<LuaFunction>` (only its type
/// is checked; the binding takes the function from the table).
#[macro_export]
macro_rules! lua_options {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident as $class:literal for $function:literal {
            $(
                $(#[$fmeta:meta])*
                $field:ident : $ty:ty => $lua:literal, $doc:literal
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        $vis struct $name {
            $( $(#[$fmeta])* #[doc = $doc] pub $field: $ty, )*
        }
        impl $crate::host::options::LuaOptions for $name {
            const FUNCTION: &'static str = $function;
            const CLASS: &'static str = $class;
            const FIELDS: &'static [$crate::host::options::Field] = &[$(
                $crate::host::options::Field { name: stringify!($field), ty: $lua, doc: $doc },
            )*];
        }
    };
}

/// Reads a binding's options (`nil` is an empty table) into `T`: a misspelt or unknown option,
/// a missing required one or a wrong type raises, naming the function and the key
/// (`http.request: unknown option `hedaers` (did you mean `headers`?); unknown field ...`,
/// `search.find: limit: invalid type: floating point `1.5`, expected usize; limit is integer?`).
/// A whole number written as a float (`1.0`, what a model sends for an integer) is taken as
/// that integer, for every option of every binding.
pub fn options<T: LuaOptions>(lua: &Lua, value: Value) -> mlua::Result<T> {
    let what = T::FUNCTION;
    let value = match value {
        Value::Nil => Value::Table(lua.create_table()?),
        v @ Value::Table(_) => v,
        other => {
            return Err(mlua::Error::runtime(format!(
                "{what}: expected an options table, got {}",
                other.type_name()
            )))
        }
    };
    let value = prepare(lua, value, 0)?;
    let de = mlua::serde::Deserializer::new_with_options(
        value,
        mlua::serde::DeserializeOptions::new().deny_unsupported_types(true),
    );
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let inner = inner.strip_prefix("deserialize error: ").unwrap_or(&inner);
        mlua::Error::runtime(describe::<T>(&path, inner))
    })
}

/// The message of a failed read: the function, then the key and what was wrong with it.
fn describe<T: LuaOptions>(path: &str, inner: &str) -> String {
    let what = T::FUNCTION;
    let field = T::FIELDS.iter().find(|f| f.name == path);
    let unknown = inner
        .strip_prefix("unknown field `")
        .and_then(|r| r.split_once('`'))
        .map(|(k, _)| k);
    match (unknown, field) {
        // A top-level key (serde names it as the path).
        (Some(key), _) if path == key || path == "." => {
            let hint = crate::kernel::suggest::did_you_mean(key, T::FIELDS.iter().map(|f| f.name))
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            format!("{what}: unknown option `{key}`{hint}; {inner}")
        }
        (None, Some(f)) => format!("{what}: {path}: {inner}; {path} is {}", f.ty),
        _ if path == "." => format!("{what}: {inner}"),
        _ => format!("{what}: {path}: {inner}"),
    }
}

/// Stands for a function in the copy serde reads (serde cannot hold one): not valid UTF-8, so
/// no string a caller writes equals it.
const FUNCTION_MARK: &[u8] = b"\xff<lua function>";

/// `v` with every float that holds a whole number made an integer, and every function made
/// [`FUNCTION_MARK`] (a copy of the tables that contain one; others are shared). Floats that
/// are not whole stay, for serde to refuse where an integer is expected.
fn prepare(lua: &Lua, v: Value, depth: usize) -> mlua::Result<Value> {
    // Options are shallow; a deeper table is left for the deserializer to judge as it is.
    const MAX_DEPTH: usize = 16;
    match v {
        Value::Number(n) if n.fract() == 0.0 && n >= i64::MIN as f64 && n < i64::MAX as f64 => {
            Ok(Value::Integer(n as i64))
        }
        Value::Function(_) => Ok(Value::String(lua.create_string(FUNCTION_MARK)?)),
        Value::Table(t) if depth < MAX_DEPTH => {
            let mut changed = Vec::new();
            for pair in t.pairs::<Value, Value>() {
                let (k, old) = pair?;
                let is_candidate =
                    matches!(old, Value::Number(_) | Value::Table(_) | Value::Function(_));
                if !is_candidate {
                    continue;
                }
                let new = prepare(lua, old.clone(), depth + 1)?;
                let same = match (&old, &new) {
                    (Value::Table(a), Value::Table(b)) => a.to_pointer() == b.to_pointer(),
                    (Value::Number(_), Value::Number(_)) => true,
                    _ => false,
                };
                if !same {
                    changed.push((k, new));
                }
            }
            if changed.is_empty() {
                return Ok(Value::Table(t));
            }
            let copy = lua.create_table()?;
            for pair in t.pairs::<Value, Value>() {
                let (k, val) = pair?;
                copy.raw_set(k, val)?;
            }
            copy.set_metatable(t.metatable())?;
            for (k, val) in changed {
                copy.raw_set(k, val)?;
            }
            Ok(Value::Table(copy))
        }
        other => Ok(other),
    }
}

/// A callback option: checked to be a function (the binding reads it from the table).
pub struct LuaFunction;

impl<'de> serde::Deserialize<'de> for LuaFunction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LuaFunction;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a function")
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<LuaFunction, E> {
                if v == FUNCTION_MARK {
                    Ok(LuaFunction)
                } else {
                    Err(E::invalid_type(de::Unexpected::Bytes(v), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// A string option that may hold any bytes (a request body).
pub struct Bytes(pub Vec<u8>);

impl<'de> serde::Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bytes;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Bytes, E> {
                Ok(Bytes(v.as_bytes().to_vec()))
            }
            fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Bytes, E> {
                if v == FUNCTION_MARK {
                    return Err(E::invalid_type(de::Unexpected::Other("function"), &self));
                }
                Ok(Bytes(v.to_vec()))
            }
        }
        d.deserialize_any(V)
    }
}
