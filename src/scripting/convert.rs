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

use bytes::Bytes;
use mlua::{Lua, Table, Value};

use crate::commands::sanitize;
use crate::protocol::{ProtocolVersion, Reply};

/// Nesting beyond this is cut (a self-referencing table would otherwise recurse forever).
const MAX_DEPTH: usize = 1000;

/// Pushes a command's reply to Lua. Errors become `{err=...}` tables (the caller decides
/// whether to raise them).
pub fn reply_to_lua(lua: &Lua, reply: Reply, resp: ProtocolVersion) -> mlua::Result<Value> {
    let resp3 = resp == ProtocolVersion::Resp3;
    Ok(match reply {
        Reply::Status(s) => single_field(lua, "ok", Value::String(lua.create_string(s.as_bytes())?))?,
        // A command's error reply is `-CODE msg` on the wire: normalised as such.
        Reply::Error(e) => error_table(lua, &format!("-{e}"))?,
        Reply::Int(n) => Value::Number(n as f64),
        Reply::Bulk(b) => Value::String(lua.create_string(&b[..])?),
        Reply::Nil | Reply::NilArray | Reply::NoReply | Reply::Attribute(_) => {
            if resp3 {
                Value::Nil
            } else {
                Value::Boolean(false)
            }
        }
        Reply::Array(items) | Reply::Push(items) | Reply::Sequence(items) => array(lua, items, resp)?,
        Reply::Map(pairs) => {
            if resp3 {
                let map = lua.create_table_with_capacity(0, pairs.len())?;
                for (k, v) in pairs {
                    map.raw_set(reply_to_lua(lua, k, resp)?, reply_to_lua(lua, v, resp)?)?;
                }
                single_field(lua, "map", Value::Table(map))?
            } else {
                array(lua, pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(), resp)?
            }
        }
        Reply::Set(items) => {
            if resp3 {
                let set = lua.create_table_with_capacity(0, items.len())?;
                for item in items {
                    set.raw_set(reply_to_lua(lua, item, resp)?, true)?;
                }
                single_field(lua, "set", Value::Table(set))?
            } else {
                array(lua, items, resp)?
            }
        }
        Reply::Double(d) => {
            if resp3 {
                single_field(lua, "double", Value::Number(d))?
            } else {
                Value::String(lua.create_string(crate::util::format_double(d))?)
            }
        }
        Reply::DoubleText(text) => {
            if resp3 {
                single_field(lua, "double", Value::Number(text.parse().unwrap_or(0.0)))?
            } else {
                Value::String(lua.create_string(text)?)
            }
        }
        Reply::Bool(b) => {
            if resp3 {
                Value::Boolean(b)
            } else {
                Value::Number(if b { 1.0 } else { 0.0 })
            }
        }
        Reply::Verbatim(format, text) => {
            if resp3 {
                let t = lua.create_table_with_capacity(0, 2)?;
                t.raw_set("format", format)?;
                t.raw_set("string", lua.create_string(&text[..])?)?;
                single_field(lua, "verbatim_string", Value::Table(t))?
            } else {
                Value::String(lua.create_string(&text[..])?)
            }
        }
        Reply::BigNumber(n) => {
            if resp3 {
                single_field(lua, "big_number", Value::String(lua.create_string(n)?))?
            } else {
                Value::String(lua.create_string(n)?)
            }
        }
    })
}

fn array(lua: &Lua, items: Vec<Reply>, resp: ProtocolVersion) -> mlua::Result<Value> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.into_iter().enumerate() {
        t.raw_set(i + 1, reply_to_lua(lua, item, resp)?)?;
    }
    Ok(Value::Table(t))
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
