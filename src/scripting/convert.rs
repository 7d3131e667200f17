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
use mlua::{Lua, Value};

use crate::protocol::{ProtocolVersion, Reply};
use crate::spec::sanitize;

/// Lua 5.1's limit on a C function's stack slots (`LUAI_MAXCSTACK`). Redis converts a
/// returned table with one slot per level of nesting above the two its caller holds (the
/// error handler and the value) and checks for four more at each value, so a table nested
/// deeper than 7,995 levels (a self-referencing one) ends in `reached lua stack limit`
/// there; the same depth is cut here, whatever this stack holds (counted one level per
/// nesting for RESP3 maps and sets too, where Redis holds a slot or two more per level).
const MAX_C_STACK: usize = 8000;
const MAX_DEPTH: usize = MAX_C_STACK - 6;

/// Pushes a command's reply onto the Lua stack (one value). Errors become `{err=...}` tables
/// (the caller decides whether to raise them).
///
/// # Safety
/// `l` is a running Lua state. Only Lua API calls happen here, on borrowed data: a Lua error
/// (out of memory, or a reply nested past Lua's stack limit) longjmps over these frames,
/// which own nothing (see `api::call`).
pub unsafe fn push_reply(l: *mut lua_State, reply: &Reply, resp3: bool) {
    // The slots Redis's redisProtocolToLuaType_* check for each kind (a scalar one, an
    // array its table and index, a wrapped or keyed value three).
    let need = match reply {
        Reply::Int(_) | Reply::Bulk(_) | Reply::Nil | Reply::NilArray | Reply::NoReply | Reply::Attribute(_) | Reply::Bool(_) => 1,
        Reply::Array(_) | Reply::Push(_) | Reply::Sequence(_) => 2,
        _ => 3,
    };
    if ffi::lua_checkstack(l, need) == 0 {
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
        Reply::Array(items) | Reply::Push(items) | Reply::Sequence(items) => {
            // RESP3 nulls leave holes, and then `#t` depends on how the table grew: grown from
            // empty, as Redis does. A table without holes is the same either way (presized).
            let holes = resp3 && items.iter().any(|r| matches!(r, Reply::Nil | Reply::NilArray | Reply::NoReply | Reply::Attribute(_)));
            push_array(l, items.iter(), if holes { 0 } else { items.len() }, resp3)
        }
        Reply::Map(pairs) => {
            if resp3 {
                // Not presized: Redis grows the table from empty, and the order `pairs`
                // visits a hash in depends on how it grew.
                push_single_field(l, c"map", |l| {
                    ffi::lua_createtable(l, 0, 0);
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
                    ffi::lua_createtable(l, 0, 0);
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
                // Built as Redis builds it (an empty table, then string and format), so that
                // `pairs` visits the fields in Redis's order.
                push_single_field(l, c"verbatim_string", |l| {
                    ffi::lua_createtable(l, 0, 0);
                    push_bytes(l, text);
                    ffi::lua_setfield(l, -2, c"string".as_ptr());
                    push_bytes(l, format);
                    ffi::lua_setfield(l, -2, c"format".as_ptr());
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
/// `presize`: the array part's size to allocate up front.
unsafe fn push_array<'a>(l: *mut lua_State, items: impl Iterator<Item = &'a Reply>, presize: usize, resp3: bool) {
    ffi::lua_createtable(l, presize.min(c_int::MAX as usize) as c_int, 0);
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

/// The field names a returned table is looked up by, in a registry table made once per Lua
/// state (`install_reply_fields`), so that reading a field creates no string: through mlua,
/// each `raw_get("err")` made its key string under a protected call that allocated two C
/// closures, 14% of a ticket-hold run's CPU for its three-number reply.
const REPLY_FIELDS: [&str; 9] = ["err", "ok", "double", "big_number", "map", "set", "verbatim_string", "format", "string"];
const ERR: c_int = 1;
const OK: c_int = 2;
const DOUBLE: c_int = 3;
const BIG_NUMBER: c_int = 4;
const MAP: c_int = 5;
const SET: c_int = 6;
const VERBATIM: c_int = 7;
const FORMAT: c_int = 8;
const STRING: c_int = 9;

/// The registry key of the field-name table (its address).
static REPLY_FIELDS_KEY: u8 = 0;

fn reply_fields_key() -> *mut std::ffi::c_void {
    &REPLY_FIELDS_KEY as *const u8 as *mut std::ffi::c_void
}

/// Stores the field-name table in `lua`'s registry (at state creation).
pub fn install_reply_fields(lua: &Lua) -> mlua::Result<()> {
    let fields = lua.create_sequence_from(REPLY_FIELDS)?;
    // SAFETY: a protected call that stores its one argument in the registry.
    unsafe {
        lua.exec_raw::<()>(fields, |l| {
            ffi::lua_pushlightuserdata(l, reply_fields_key());
            ffi::lua_insert(l, -2);
            ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
        })
    }
}

/// Converts a script's return value to the reply its caller gets (`resp` is the script's
/// protocol, `redis.setresp`: booleans differ).
pub fn lua_to_reply(lua: &Lua, value: &Value, resp: ProtocolVersion) -> Reply {
    let resp3 = resp == ProtocolVersion::Resp3;
    // Scalars (most scripts' replies) convert from the value mlua already read; only a table
    // needs the stack walk below.
    match value {
        Value::String(s) => return Reply::Bulk(Bytes::copy_from_slice(&s.as_bytes())),
        Value::Integer(n) => return Reply::Int(*n),
        Value::Number(n) => return Reply::Int(c_cast_i64(*n)),
        Value::Boolean(b) => return bool_reply(*b, resp3),
        Value::Table(_) => {}
        _ => return Reply::Nil,
    }
    // Growing the stack allocates: with the script's memory limit lifted meanwhile, only a
    // real allocation failure could raise a Lua error here (outside any protected call).
    let limit = lua.set_memory_limit(0).ok();
    let reply = lua.exec_raw_lua(|raw| {
        // SAFETY: unprotected stack work on the main state between a saved top and its
        // restoration; the calls below raise no error when the stack has room (checked) and
        // touch no metamethod (raw access only).
        unsafe {
            let l = raw.state();
            let top = ffi::lua_gettop(l);
            let reply = if ffi::lua_checkstack(l, 2) == 0 || raw.push_value(value).is_err() {
                stack_limit()
            } else {
                ffi::lua_pushlightuserdata(l, reply_fields_key());
                ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
                reply_at(l, top + 1, top + 2, resp3, 0)
            };
            ffi::lua_settop(l, top);
            reply
        }
    });
    if let Some(limit) = limit {
        let _ = lua.set_memory_limit(limit);
    }
    reply
}

fn stack_limit() -> Reply {
    Reply::error("ERR reached lua stack limit")
}

fn bool_reply(b: bool, resp3: bool) -> Reply {
    match (b, resp3) {
        (b, true) => Reply::Bool(b),
        (true, false) => Reply::Int(1),
        (false, false) => Reply::Nil,
    }
}

/// The bytes of the string at `idx` (its type checked by the caller: `lua_tolstring` on a
/// number would turn it into a string in place).
unsafe fn bytes_at<'a>(l: *mut lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    if p.is_null() {
        &[]
    } else {
        std::slice::from_raw_parts(p as *const u8, len)
    }
}

/// The reply for the value at stack index `idx` (absolute); `fields` is the index of the
/// field-name table.
unsafe fn reply_at(l: *mut lua_State, idx: c_int, fields: c_int, resp3: bool, depth: usize) -> Reply {
    if depth > MAX_DEPTH || ffi::lua_checkstack(l, 4) == 0 {
        return stack_limit();
    }
    match ffi::lua_type(l, idx) {
        ffi::LUA_TSTRING => Reply::Bulk(Bytes::copy_from_slice(bytes_at(l, idx))),
        ffi::LUA_TNUMBER => Reply::Int(c_cast_i64(ffi::lua_tonumber(l, idx))),
        ffi::LUA_TBOOLEAN => bool_reply(ffi::lua_toboolean(l, idx) != 0, resp3),
        ffi::LUA_TTABLE => table_reply(l, idx, fields, resp3, depth),
        _ => Reply::Nil,
    }
}

/// Calls `each(key, value)` (stack indices) for every pair of the table on top of the stack;
/// `each` must leave the stack as it found it.
unsafe fn for_each_pair(l: *mut lua_State, mut each: impl FnMut(c_int, c_int)) {
    let t = ffi::lua_gettop(l);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, t) != 0 {
        each(t + 1, t + 2);
        ffi::lua_settop(l, t + 1);
    }
}

/// Pushes `t[name]`, `name` being the field-name table's entry `field`; returns its type.
unsafe fn push_field(l: *mut lua_State, t: c_int, fields: c_int, field: c_int) -> c_int {
    ffi::lua_rawgeti(l, fields, field as ffi::lua_Integer);
    ffi::lua_rawget(l, t);
    ffi::lua_type(l, -1)
}

/// A table's reply (Redis's `luaReplyToRedisReply`): `err`, `ok`, then the RESP3 shapes,
/// else an array up to the first nil. Leaves the stack as it found it.
unsafe fn table_reply(l: *mut lua_State, t: c_int, fields: c_int, resp3: bool, depth: usize) -> Reply {
    let base = ffi::lua_gettop(l);
    let text = |l| String::from_utf8_lossy(bytes_at(l, -1)).into_owned();
    let reply = 'found: {
        if push_field(l, t, fields, ERR) == ffi::LUA_TSTRING {
            // Redis's addReplyErrorFormatEx("-%s"): CR/LF trimmed at the end (the dash
            // protects the start), then the rest made spaces.
            let t = text(l);
            break 'found Some(Reply::Error(sanitize(t.trim_end_matches(['\r', '\n']).to_string()).into()));
        }
        if push_field(l, t, fields, OK) == ffi::LUA_TSTRING {
            break 'found Some(Reply::Status(sanitize(text(l)).into()));
        }
        if push_field(l, t, fields, DOUBLE) == ffi::LUA_TNUMBER {
            break 'found Some(Reply::Double(ffi::lua_tonumber(l, -1)));
        }
        if push_field(l, t, fields, BIG_NUMBER) == ffi::LUA_TSTRING {
            break 'found Some(Reply::BigNumber(sanitize(text(l))));
        }
        if push_field(l, t, fields, MAP) == ffi::LUA_TTABLE {
            let mut pairs = Vec::new();
            for_each_pair(l, |k, v| pairs.push((reply_at(l, k, fields, resp3, depth + 1), reply_at(l, v, fields, resp3, depth + 1))));
            break 'found Some(Reply::Map(pairs));
        }
        if push_field(l, t, fields, SET) == ffi::LUA_TTABLE {
            let mut members = Vec::new();
            for_each_pair(l, |k, _| members.push(reply_at(l, k, fields, resp3, depth + 1)));
            break 'found Some(Reply::Set(members));
        }
        if push_field(l, t, fields, VERBATIM) == ffi::LUA_TTABLE {
            let v = ffi::lua_gettop(l);
            if push_field(l, v, fields, FORMAT) == ffi::LUA_TSTRING && push_field(l, v, fields, STRING) == ffi::LUA_TSTRING {
                // Redis sends the format's first three bytes (up to a NUL), space-padded.
                let mut format = *b"   ";
                for (slot, &b) in format.iter_mut().zip(bytes_at(l, -2).iter().take_while(|&&b| b != 0)) {
                    *slot = b;
                }
                break 'found Some(Reply::Verbatim(format, Bytes::copy_from_slice(bytes_at(l, -1))));
            }
        }
        None
    };
    ffi::lua_settop(l, base);
    if let Some(reply) = reply {
        return reply;
    }
    let mut items = Vec::new();
    for i in 1.. {
        ffi::lua_rawgeti(l, t, i);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            break;
        }
        items.push(reply_at(l, base + 1, fields, resp3, depth + 1));
        ffi::lua_settop(l, base);
    }
    ffi::lua_settop(l, base);
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
