//! Conversions between command replies and Lua values, both ways, as Redis 7.0 does them
//! (`redisProtocolToLuaType` and `luaReplyToRedisReply`).
//!
//! Reply → Lua: integers become numbers, bulk strings strings, nulls `false` (RESP2) or `nil`
//! (RESP3), arrays tables, status and error replies `{ok=...}` / `{err=...}`; after
//! `redis.setresp(3)` maps, sets, doubles, big numbers, verbatim strings and booleans keep
//! their RESP3 shapes (`{map=...}`, `{set=...}`, `{double=...}`...).
//!
//! Lua → reply: strings bulk, numbers integers truncated toward zero, `true` 1, `false` and
//! `nil` null, tables with a string `err` or `ok` field errors and statuses, other tables
//! arrays that stop at the first nil.

use std::ffi::{c_char, c_int, CStr};

use bytes::Bytes;
use mlua::ffi::{self, lua_State};
use mlua::{Lua, Table, Value};

use crate::commands::sanitize;
use crate::protocol::{ProtocolVersion, Reply};

/// Nesting beyond this is cut (a self-referencing table would otherwise recurse forever).
const MAX_DEPTH: usize = 1000;

/// Pushes a command's reply onto the Lua stack (one value). Errors become `{err=...}` tables
/// (the caller decides whether to raise them).
///
/// # Safety
/// `l` is a running Lua state. Only Lua API calls happen here, on borrowed data: a Lua error
/// (out of memory, or a reply nested past Lua's stack limit) longjmps over these frames,
/// which own nothing (see `api::call`).
pub unsafe fn push_reply(l: *mut lua_State, reply: &Reply, resp3: bool) {
    // A level takes at most four slots (a map's table, key and value, and a field's wrapper).
    if ffi::lua_checkstack(l, 4) == 0 {
        // Lua's stack limit (8000 slots, arguments included); Lua keeps spare slots for this.
        ffi::lua_pushstring(l, c"reached lua stack limit".as_ptr());
        ffi::lua_error(l);
    }
    match reply {
        Reply::Status(s) => push_single_field(l, c"ok", |l| push_bytes(l, s.as_bytes())),
        Reply::Error(e) => push_error(l, e),
        Reply::Int(n) => ffi::lua_pushnumber(l, *n as f64),
        Reply::Bulk(b) => push_bytes(l, b),
        Reply::Nil | Reply::NilArray | Reply::NoReply | Reply::Attribute(_) => {
            if resp3 {
                ffi::lua_pushnil(l)
            } else {
                ffi::lua_pushboolean(l, 0)
            }
        }
        Reply::Array(items) | Reply::Push(items) | Reply::Sequence(items) => push_array(l, items.iter(), items.len(), resp3),
        Reply::Map(pairs) => {
            if resp3 {
                push_single_field(l, c"map", |l| {
                    ffi::lua_createtable(l, 0, pairs.len() as c_int);
                    for (k, v) in pairs {
                        push_reply(l, k, resp3);
                        push_reply(l, v, resp3);
                        ffi::lua_rawset(l, -3);
                    }
                })
            } else {
                push_array(l, pairs.iter().flat_map(|(k, v)| [k, v]), pairs.len() * 2, resp3)
            }
        }
        Reply::Set(items) => {
            if resp3 {
                push_single_field(l, c"set", |l| {
                    ffi::lua_createtable(l, 0, items.len() as c_int);
                    for item in items {
                        push_reply(l, item, resp3);
                        ffi::lua_pushboolean(l, 1);
                        ffi::lua_rawset(l, -3);
                    }
                })
            } else {
                push_array(l, items.iter(), items.len(), resp3)
            }
        }
        Reply::Double(d) => {
            if resp3 {
                push_single_field(l, c"double", |l| ffi::lua_pushnumber(l, *d))
            } else {
                let mut buf = [0u8; 64];
                push_bytes(l, crate::util::format_double_into(*d, &mut buf))
            }
        }
        Reply::DoubleText(text) => {
            if resp3 {
                push_single_field(l, c"double", |l| ffi::lua_pushnumber(l, text.parse().unwrap_or(0.0)))
            } else {
                push_bytes(l, text.as_bytes())
            }
        }
        Reply::Bool(b) => {
            if resp3 {
                ffi::lua_pushboolean(l, *b as c_int)
            } else {
                ffi::lua_pushnumber(l, if *b { 1.0 } else { 0.0 })
            }
        }
        Reply::Verbatim(format, text) => {
            if resp3 {
                push_single_field(l, c"verbatim_string", |l| {
                    ffi::lua_createtable(l, 0, 2);
                    push_bytes(l, format.as_bytes());
                    ffi::lua_setfield(l, -2, c"format".as_ptr());
                    push_bytes(l, text);
                    ffi::lua_setfield(l, -2, c"string".as_ptr());
                })
            } else {
                push_bytes(l, text)
            }
        }
        Reply::BigNumber(n) => {
            if resp3 {
                push_single_field(l, c"big_number", |l| push_bytes(l, n.as_bytes()))
            } else {
                push_bytes(l, n.as_bytes())
            }
        }
    }
}

unsafe fn push_bytes(l: *mut lua_State, b: &[u8]) {
    ffi::lua_pushlstring(l, b.as_ptr() as *const c_char, b.len());
}

/// An array table of `items`.
unsafe fn push_array<'a>(l: *mut lua_State, items: impl Iterator<Item = &'a Reply>, len: usize, resp3: bool) {
    ffi::lua_createtable(l, len.min(c_int::MAX as usize) as c_int, 0);
    for (i, item) in items.enumerate() {
        push_reply(l, item, resp3);
        ffi::lua_rawseti(l, -2, (i + 1) as ffi::lua_Integer);
    }
}

/// `{name=value}`, `value` pushed by `push`.
unsafe fn push_single_field(l: *mut lua_State, name: &CStr, push: impl FnOnce(*mut lua_State)) {
    ffi::lua_createtable(l, 0, 1);
    push(l);
    ffi::lua_setfield(l, -2, name.as_ptr());
}

/// `{err=...}` for a command's error reply `text` (its code word first), normalised as
/// [`normalize_error`] does, from slices of `text` (nothing allocated in Rust).
unsafe fn push_error(l: *mut lua_State, text: &str) {
    let (code, msg) = text.split_once(' ').unwrap_or(("ERR", text));
    push_single_field(l, c"err", |l| {
        push_bytes(l, code.as_bytes());
        push_bytes(l, b" ");
        push_bytes(l, msg.trim_matches(['\r', '\n']).as_bytes());
        ffi::lua_concat(l, 3);
    });
}

fn single_field(lua: &Lua, name: &str, value: Value) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(0, 1)?;
    t.raw_set(name, value)?;
    Ok(Value::Table(t))
}

/// `{err=text}` with Redis's normalisation (`luaPushErrorBuff`): a leading `-` is dropped,
/// a missing code word becomes `ERR`, trailing CR/LF are trimmed.
pub fn error_table(lua: &Lua, text: &str) -> mlua::Result<Value> {
    single_field(lua, "err", Value::String(lua.create_string(normalize_error(text))?))
}

/// See [`error_table`].
pub fn normalize_error(text: &str) -> String {
    let (code, msg) = match text.strip_prefix('-') {
        Some(rest) => match rest.split_once(' ') {
            Some((code, msg)) => (code, msg),
            None => ("ERR", rest),
        },
        None => ("ERR", text),
    };
    format!("{code} {}", msg.trim_matches(['\r', '\n']))
}

/// Converts a script's return value to the reply its caller gets (`resp` is the script's
/// protocol, `redis.setresp`: booleans differ).
pub fn lua_to_reply(value: &Value, resp: ProtocolVersion) -> Reply {
    to_reply(value, resp, 0)
}

fn to_reply(value: &Value, resp: ProtocolVersion, depth: usize) -> Reply {
    let resp3 = resp == ProtocolVersion::Resp3;
    match value {
        Value::String(s) => Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Integer(n) => Reply::Int(*n),
        Value::Number(n) => Reply::Int(c_cast_i64(*n)),
        Value::Boolean(true) => {
            if resp3 {
                Reply::Bool(true)
            } else {
                Reply::Int(1)
            }
        }
        Value::Boolean(false) => {
            if resp3 {
                Reply::Bool(false)
            } else {
                Reply::Nil
            }
        }
        Value::Table(t) => {
            if depth >= MAX_DEPTH {
                return Reply::error("ERR reached lua stack limit");
            }
            table_to_reply(t, resp, depth)
        }
        _ => Reply::Nil,
    }
}

fn table_to_reply(t: &Table, resp: ProtocolVersion, depth: usize) -> Reply {
    let field = |name: &str| t.raw_get::<Value>(name).unwrap_or(Value::Nil);
    if let Value::String(e) = field("err") {
        return Reply::Error(sanitize(e.to_string_lossy()).into());
    }
    if let Value::String(s) = field("ok") {
        return Reply::Status(sanitize(s.to_string_lossy()).into());
    }
    if let Value::Number(d) = field("double") {
        return Reply::Double(d);
    }
    if let Value::Integer(d) = field("double") {
        return Reply::Double(d as f64);
    }
    if let Value::String(s) = field("big_number") {
        return Reply::BigNumber(sanitize(s.to_string_lossy()));
    }
    if let Value::Table(m) = field("map") {
        let pairs = m.pairs::<Value, Value>().filter_map(Result::ok);
        return Reply::Map(pairs.map(|(k, v)| (to_reply(&k, resp, depth + 1), to_reply(&v, resp, depth + 1))).collect());
    }
    if let Value::Table(s) = field("set") {
        let members = s.pairs::<Value, Value>().filter_map(Result::ok);
        return Reply::Set(members.map(|(k, _)| to_reply(&k, resp, depth + 1)).collect());
    }
    if let Value::Table(v) = field("verbatim_string") {
        if let (Ok(Value::String(format)), Ok(Value::String(text))) = (v.raw_get::<Value>("format"), v.raw_get::<Value>("string")) {
            let format: &'static str = match &*format.to_string_lossy() {
                "txt" => "txt",
                "mkd" => "mkd",
                _ => "txt",
            };
            return Reply::Verbatim(format, Bytes::copy_from_slice(&text.as_bytes()));
        }
    }
    let mut items = Vec::new();
    for i in 1.. {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => items.push(to_reply(&v, resp, depth + 1)),
        }
    }
    Reply::Array(items)
}

/// C's `(long long)` cast of a double as x86-64 does it: truncation toward zero, and
/// `LLONG_MIN` for NaN and out-of-range values.
pub fn c_cast_i64(n: f64) -> i64 {
    // 2^63 is exactly representable; every double below it (and >= -2^63) fits.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if n.is_nan() || !(-LIMIT..LIMIT).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_normalisation_follows_redis() {
        assert_eq!(normalize_error("-boom"), "ERR boom");
        assert_eq!(normalize_error("-MY boom"), "MY boom");
        assert_eq!(normalize_error("-WRONGTYPE Operation"), "WRONGTYPE Operation");
        assert_eq!(normalize_error("wrong number"), "ERR wrong number");
    }

    #[test]
    fn numbers_truncate_toward_zero() {
        assert_eq!(c_cast_i64(3.99), 3);
        assert_eq!(c_cast_i64(-3.99), -3);
        assert_eq!(c_cast_i64(f64::NAN), i64::MIN);
        assert_eq!(c_cast_i64(1e300), i64::MIN);
    }
}
