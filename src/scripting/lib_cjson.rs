//! Redis 7.0's Lua `cjson` library (lua-cjson 2.1.0 as embedded by Redis 7.0.15), in Rust.
//!
//! `open(lua)` returns the `cjson` table: `encode`, `decode`, `null`, `new`, `_NAME`, `_VERSION`
//! and the config functions `encode_sparse_array`, `encode_max_depth`, `decode_max_depth`,
//! `encode_number_precision`, `encode_keep_buffer`, `encode_invalid_numbers`,
//! `decode_invalid_numbers`. Each table (and each `cjson.new()`) has its own config.
//!
//! Behaviours reproduced byte for byte (checked against redis-server 7.0.15, see
//! `cases/cjson.lua.txt`):
//! - numbers are written with `%.<precision>g` (14 by default); NaN/Inf are refused, or written
//!   as `nan`/`inf`/`-inf` (not JSON, as Redis does) or `null` (`encode_invalid_numbers`);
//! - strings escape `"`, `\`, `/` (as `\/`), control bytes and DEL (`\u007f`); other bytes,
//!   even invalid UTF-8, pass through;
//! - a table is an array when all its keys are positive integers (holes become `null`) unless
//!   it is "excessively sparse"; an empty table is `{}`; key order is Lua's `next` order;
//! - decoding uses strtod like the C code: `0x10`, `+1`, `01`, `inf`, `nan` are accepted by
//!   default; `\u` escapes and surrogate pairs become UTF-8; `null` is `cjson.null` (a NULL
//!   light userdata); a NUL byte ends the input;
//! - every error text, including the 1-based character position of parse errors and the
//!   `T_END`-style token names, and the depth limits (1000 by default, plus Lua's 8000-slot
//!   C stack limit, hit at the same depth as in Redis).
//!
//! Why the raw C API: the functions are Lua C functions like the original, so errors are plain
//! strings raised by `lua_error` with `luaL_where(L, 1)`'s position prefix ("user_script:1: ..."
//! when called from a script, nothing when called by `pcall` directly), argument errors come
//! from `luaL_argerror` itself (so the function name is the one Lua finds: `'encode'`, `'?'`),
//! and encode/decode use the calling function's Lua stack exactly as cjson does, so
//! `lua_checkstack` fails at the same depth. Tables are walked with explicit stacks, not Rust
//! recursion, so no input can overflow the Rust stack, and no mlua references are held.
//! Before raising, every Rust value owning memory is dropped (`lua_error` longjmps); only a Lua
//! out-of-memory error in the middle of encode/decode can skip (leak) the output buffer.

use mlua::ffi::{self, lua_State};
use mlua::{Lua, Table};
use std::ffi::{c_char, c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// A Lua C function, as registered by lua_cjson_new.
type CFn = unsafe extern "C-unwind" fn(*mut lua_State) -> c_int;

/// Per-table configuration, stored in a userdata that is upvalue 1 of every function.
#[derive(Clone, Copy)]
struct Config {
    sparse_convert: c_int,
    sparse_ratio: c_int,
    sparse_safe: c_int,
    encode_max_depth: c_int,
    decode_max_depth: c_int,
    encode_invalid_numbers: c_int, // 0 off, 1 on, 2 null
    decode_invalid_numbers: c_int,
    encode_keep_buffer: c_int,
    precision: c_int,
}

const DEFAULT_CONFIG: Config = Config {
    sparse_convert: 0,
    sparse_ratio: 2,
    sparse_safe: 10,
    encode_max_depth: 1000,
    decode_max_depth: 1000,
    encode_invalid_numbers: 0,
    decode_invalid_numbers: 1,
    encode_keep_buffer: 1,
    precision: 14,
};

const FUNCS: [(&CStr, CFn); 10] = [
    (c"encode", json_encode),
    (c"decode", json_decode),
    (c"encode_sparse_array", cfg_encode_sparse_array),
    (c"encode_max_depth", cfg_encode_max_depth),
    (c"decode_max_depth", cfg_decode_max_depth),
    (c"encode_number_precision", cfg_encode_number_precision),
    (c"encode_keep_buffer", cfg_encode_keep_buffer),
    (c"encode_invalid_numbers", cfg_encode_invalid_numbers),
    (c"decode_invalid_numbers", cfg_decode_invalid_numbers),
    (c"new", cjson_new),
];

/// Builds a `cjson` table with a fresh configuration.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    // SAFETY: cjson_new only pushes values (one table) on the protected stack exec_raw gives it.
    unsafe {
        lua.exec_raw::<Table>((), |l| {
            cjson_new(l);
        })
    }
}

/// `cjson.new()`, also used by `open`: same field order as lua_cjson_new, so `pairs` agrees.
unsafe extern "C-unwind" fn cjson_new(l: *mut lua_State) -> c_int {
    ffi::lua_newtable(l);
    let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
    cfg.write(DEFAULT_CONFIG);
    for (name, f) in FUNCS {
        ffi::lua_pushvalue(l, -1);
        ffi::lua_pushcclosure(l, f, 1);
        ffi::lua_setfield(l, -3, name.as_ptr());
    }
    ffi::lua_pop(l, 1);
    ffi::lua_pushlightuserdata(l, ptr::null_mut());
    ffi::lua_setfield(l, -2, c"null".as_ptr());
    ffi::lua_pushstring(l, c"cjson".as_ptr());
    ffi::lua_setfield(l, -2, c"_NAME".as_ptr());
    ffi::lua_pushstring(l, c"2.1.0".as_ptr());
    ffi::lua_setfield(l, -2, c"_VERSION".as_ptr());
    1
}

unsafe fn config<'a>(l: *mut lua_State) -> &'a mut Config {
    // Always set by cjson_new; the userdata lives as long as the closure.
    &mut *(ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Config)
}

/// Raises `msg` like `luaL_error`: prefixed with the caller's position, if it is Lua code.
unsafe fn raise(l: *mut lua_State, msg: String) -> ! {
    ffi::lua_settop(l, 0); // frees the stack, which may be full after a depth error
    ffi::luaL_where(l, 1);
    ffi::lua_pushlstring(l, msg.as_ptr() as *const c_char, msg.len());
    drop(msg);
    ffi::lua_concat(l, 2);
    ffi::lua_error(l)
}

/// `luaL_argerror` with a message built in Rust (kept alive on the Lua stack, not in Rust).
unsafe fn arg_error(l: *mut lua_State, narg: c_int, msg: String) -> c_int {
    ffi::lua_pushlstring(l, msg.as_ptr() as *const c_char, msg.len());
    drop(msg);
    ffi::luaL_argerror(l, narg, ffi::lua_tostring(l, -1))
}

/// Runs the Rust part of a function, turning a panic into an error instead of unwinding into C.
unsafe fn run(l: *mut lua_State, f: impl FnOnce() -> Result<Vec<u8>, String>) -> Vec<u8> {
    let msg = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(out)) => return out,
        Ok(Err(msg)) => msg,
        Err(_) => "cjson: internal error".to_string(),
    };
    raise(l, msg)
}

// ---------------------------------------------------------------- configuration functions

/// json_arg_init: at most `args` arguments, missing ones become nil.
unsafe fn arg_init<'a>(l: *mut lua_State, args: c_int) -> &'a mut Config {
    if ffi::lua_gettop(l) > args {
        ffi::luaL_argerror(l, args + 1, c"found too many arguments".as_ptr());
    }
    while ffi::lua_gettop(l) < args {
        ffi::lua_pushnil(l);
    }
    // A setting given changes the state later scripts run in (see `RunState::tainted`).
    if (1..=args).any(|i| ffi::lua_isnil(l, i) == 0) {
        super::taint(l);
    }
    config(l)
}

/// json_integer_option; note cjson reports a range error as argument #1 whatever `idx` is.
unsafe fn integer_option(l: *mut lua_State, idx: c_int, setting: &mut c_int, min: c_int, max: c_int) -> c_int {
    if ffi::lua_isnil(l, idx) == 0 {
        let value = ffi::luaL_checkinteger(l, idx) as c_int; // C assigns lua_Integer to int
        if value < min || value > max {
            arg_error(l, 1, format!("expected integer between {min} and {max}"));
        }
        *setting = value;
    }
    ffi::lua_pushinteger(l, *setting as ffi::lua_Integer);
    1
}

/// json_enum_option: a boolean or one of `options` (default "off"/"on"); returns a boolean for
/// settings 0 and 1, else the option's name (only encode_invalid_numbers' "null").
unsafe fn enum_option(l: *mut lua_State, idx: c_int, setting: &mut c_int, options: Option<&[&CStr]>) -> c_int {
    let names = options.unwrap_or(&[c"off", c"on"]);
    let mut list = [ptr::null::<c_char>(); 4];
    for (slot, name) in list.iter_mut().zip(names) {
        *slot = name.as_ptr();
    }
    if ffi::lua_isnil(l, idx) == 0 {
        *setting = if ffi::lua_isboolean(l, idx) != 0 {
            ffi::lua_toboolean(l, idx)
        } else {
            ffi::luaL_checkoption(l, idx, ptr::null(), list.as_ptr())
        };
    }
    if *setting == 0 || *setting == 1 {
        ffi::lua_pushboolean(l, *setting);
    } else {
        ffi::lua_pushstring(l, list[(*setting).clamp(0, 2) as usize]);
    }
    1
}

unsafe extern "C-unwind" fn cfg_encode_sparse_array(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 3);
    enum_option(l, 1, &mut cfg.sparse_convert, None);
    integer_option(l, 2, &mut cfg.sparse_ratio, 0, c_int::MAX);
    integer_option(l, 3, &mut cfg.sparse_safe, 0, c_int::MAX);
    3
}

unsafe extern "C-unwind" fn cfg_encode_max_depth(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    integer_option(l, 1, &mut cfg.encode_max_depth, 1, c_int::MAX)
}

unsafe extern "C-unwind" fn cfg_decode_max_depth(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    integer_option(l, 1, &mut cfg.decode_max_depth, 1, c_int::MAX)
}

unsafe extern "C-unwind" fn cfg_encode_number_precision(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    integer_option(l, 1, &mut cfg.precision, 1, 14)
}

/// Only changes whether the C code keeps its buffer between calls: nothing visible here.
unsafe extern "C-unwind" fn cfg_encode_keep_buffer(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    enum_option(l, 1, &mut cfg.encode_keep_buffer, None)
}

unsafe extern "C-unwind" fn cfg_encode_invalid_numbers(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    enum_option(l, 1, &mut cfg.encode_invalid_numbers, Some(&[c"off", c"on", c"null"]))
}

unsafe extern "C-unwind" fn cfg_decode_invalid_numbers(l: *mut lua_State) -> c_int {
    let cfg = arg_init(l, 1);
    enum_option(l, 1, &mut cfg.decode_invalid_numbers, None)
}

// ---------------------------------------------------------------- encoding

unsafe extern "C-unwind" fn json_encode(l: *mut lua_State) -> c_int {
    let cfg = *config(l);
    if ffi::lua_gettop(l) != 1 {
        return ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
    }
    let out = run(l, || encode(l, &cfg));
    push_bytes(l, &out);
    1
}

enum Frame {
    Array { next: i64, len: i64 },
    Object { first: bool },
}

unsafe fn type_name(l: *mut lua_State, idx: c_int) -> String {
    CStr::from_ptr(ffi::lua_typename(l, ffi::lua_type(l, idx))).to_string_lossy().into_owned()
}

/// Encodes the value on top of the stack. Arrays keep (table, value) on the stack and objects
/// (table, key, value), like the recursive C code, so `lua_checkstack` fails at the same depth.
unsafe fn encode(l: *mut lua_State, cfg: &Config) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    loop {
        let opened = ffi::lua_type(l, -1) == ffi::LUA_TTABLE;
        match ffi::lua_type(l, -1) {
            ffi::LUA_TSTRING => append_string(l, -1, &mut out),
            ffi::LUA_TNUMBER => append_number(l, cfg, -1, &mut out)?,
            ffi::LUA_TBOOLEAN => out.extend_from_slice(if ffi::lua_toboolean(l, -1) != 0 { b"true" } else { b"false" }),
            ffi::LUA_TNIL => out.extend_from_slice(b"null"),
            ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => out.extend_from_slice(b"null"),
            ffi::LUA_TTABLE => {
                let depth = frames.len() + 1;
                if depth > cfg.encode_max_depth as usize || ffi::lua_checkstack(l, 3) == 0 {
                    return Err(format!("Cannot serialise, excessive nesting ({depth})"));
                }
                let len = array_length(l, cfg)?;
                if len > 0 {
                    out.push(b'[');
                    frames.push(Frame::Array { next: 1, len: len as i64 });
                } else {
                    out.push(b'{');
                    ffi::lua_pushnil(l);
                    frames.push(Frame::Object { first: true });
                }
            }
            _ => return Err(format!("Cannot serialise {}: type not supported", type_name(l, -1))),
        }
        if !opened {
            ffi::lua_pop(l, 1); // a finished scalar; an opened table stays as its frame's table
        }
        // Move to the next value of the innermost open table, closing finished ones.
        loop {
            match frames.last_mut() {
                None => return Ok(out),
                Some(Frame::Array { next, len }) => {
                    if *next <= *len {
                        if *next > 1 {
                            out.push(b',');
                        }
                        ffi::lua_rawgeti(l, -1, *next);
                        *next += 1;
                        break;
                    }
                    out.push(b']');
                }
                Some(Frame::Object { first }) => {
                    if ffi::lua_next(l, -2) != 0 {
                        if !*first {
                            out.push(b',');
                        }
                        *first = false;
                        match ffi::lua_type(l, -2) {
                            ffi::LUA_TNUMBER => {
                                out.push(b'"');
                                append_number(l, cfg, -2, &mut out)?;
                                out.extend_from_slice(b"\":");
                            }
                            ffi::LUA_TSTRING => {
                                append_string(l, -2, &mut out);
                                out.push(b':');
                            }
                            _ => return Err(format!("Cannot serialise {}: table key must be a number or string", type_name(l, -2))),
                        }
                        break;
                    }
                    out.push(b'}');
                }
            }
            ffi::lua_pop(l, 1);
            frames.pop();
        }
    }
}

/// lua_array_length: the array size, or -1 for an object; errors on an excessively sparse array.
unsafe fn array_length(l: *mut lua_State, cfg: &Config) -> Result<c_int, String> {
    let (mut max, mut items): (c_int, c_int) = (0, 0);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER {
            let k = ffi::lua_tonumber(l, -2);
            if k != 0.0 && k.floor() == k && k >= 1.0 {
                if k > max as f64 {
                    // C's `max = k`: x86 cvttsd2si gives INT_MIN when k does not fit an int.
                    max = if k < 2147483648.0 { k as c_int } else { c_int::MIN };
                }
                items = items.wrapping_add(1);
                ffi::lua_pop(l, 1);
                continue;
            }
        }
        ffi::lua_pop(l, 2);
        return Ok(-1);
    }
    if cfg.sparse_ratio > 0 && max > items.wrapping_mul(cfg.sparse_ratio) && max > cfg.sparse_safe {
        if cfg.sparse_convert == 0 {
            return Err("Cannot serialise table: excessively sparse array".to_string());
        }
        return Ok(-1);
    }
    Ok(max)
}

unsafe fn append_string(l: *mut lua_State, idx: c_int, out: &mut Vec<u8>) {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    let bytes = std::slice::from_raw_parts(p as *const u8, len);
    out.reserve(len + 2);
    out.push(b'"');
    for &b in bytes {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\x08' => out.extend_from_slice(b"\\b"),
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\x0c' => out.extend_from_slice(b"\\f"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

unsafe fn append_number(l: *mut lua_State, cfg: &Config, idx: c_int, out: &mut Vec<u8>) -> Result<(), String> {
    let num = ffi::lua_tonumber(l, idx);
    if !num.is_finite() {
        // "on" prints what %g gives for Inf ("inf", "-inf") but NaN always as "nan".
        match cfg.encode_invalid_numbers {
            0 => return Err("Cannot serialise number: must not be NaN or Inf".to_string()),
            1 if num.is_nan() => out.extend_from_slice(b"nan"),
            1 if num < 0.0 => out.extend_from_slice(b"-inf"),
            1 => out.extend_from_slice(b"inf"),
            _ => out.extend_from_slice(b"null"),
        }
        return Ok(());
    }
    out.extend_from_slice(crate::util::format_g(num, cfg.precision).as_bytes());
    Ok(())
}

// ---------------------------------------------------------------- decoding

unsafe extern "C-unwind" fn json_decode(l: *mut lua_State) -> c_int {
    let cfg = *config(l);
    if ffi::lua_gettop(l) != 1 {
        return ffi::luaL_argerror(l, 1, c"expected 1 argument".as_ptr());
    }
    let mut len = 0usize;
    let p = ffi::luaL_checklstring(l, 1, &mut len);
    // The string stays at index 1 (never popped before success), so the slice stays valid.
    let data = std::slice::from_raw_parts(p as *const u8, len);
    run(l, || decode(l, &cfg, data).map(|_| Vec::new()));
    1
}

#[derive(PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str,
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

/// A token and its 0-based position (the position of the fault for errors).
struct Token {
    tok: Tok,
    index: usize,
}

struct Parser<'a> {
    data: &'a [u8],
    pos: usize,
    tmp: Vec<u8>, // the last string token
    invalid_numbers: bool,
}

fn parse_error(expected: &str, t: &Token) -> String {
    let found = match t.tok {
        Tok::ObjBegin => "T_OBJ_BEGIN",
        Tok::ObjEnd => "T_OBJ_END",
        Tok::ArrBegin => "T_ARR_BEGIN",
        Tok::ArrEnd => "T_ARR_END",
        Tok::Str => "T_STRING",
        Tok::Num(_) => "T_NUMBER",
        Tok::Bool(_) => "T_BOOLEAN",
        Tok::Null => "T_NULL",
        Tok::Colon => "T_COLON",
        Tok::Comma => "T_COMMA",
        Tok::End => "T_END",
        Tok::Error(msg) => msg,
    };
    format!("Expected {expected} but found {found} at character {}", t.index + 1)
}

enum Ctx {
    Array(c_int),
    Object,
}

/// Decodes `data`, leaving the value on the stack. Arrays use one stack slot per level and
/// objects two (table, key), as in the recursive C code.
unsafe fn decode(l: *mut lua_State, cfg: &Config, data: &[u8]) -> Result<(), String> {
    if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
        return Err("JSON parser does not support UTF-16 or UTF-32".to_string());
    }
    let mut p = Parser { data, pos: 0, tmp: Vec::new(), invalid_numbers: cfg.decode_invalid_numbers != 0 };
    let mut ctxs: Vec<Ctx> = Vec::new();
    let descend = |p: &Parser, depth: usize, slots: c_int| {
        if depth > cfg.decode_max_depth as usize || ffi::lua_checkstack(l, slots) == 0 {
            return Err(format!("Found too many nested data structures ({depth}) at character {}", p.pos));
        }
        Ok(())
    };
    let mut t = p.next_token();
    'value: loop {
        match t.tok {
            Tok::Str => push_bytes(l, &p.tmp),
            Tok::Num(n) => ffi::lua_pushnumber(l, n),
            Tok::Bool(b) => ffi::lua_pushboolean(l, b as c_int),
            Tok::Null => ffi::lua_pushlightuserdata(l, ptr::null_mut()),
            Tok::ObjBegin => {
                descend(&p, ctxs.len() + 1, 3)?;
                ffi::lua_newtable(l);
                t = p.next_token();
                if t.tok != Tok::ObjEnd {
                    ctxs.push(Ctx::Object);
                    t = p.object_key(l, t)?;
                    continue 'value;
                }
            }
            Tok::ArrBegin => {
                descend(&p, ctxs.len() + 1, 2)?;
                ffi::lua_newtable(l);
                t = p.next_token();
                if t.tok != Tok::ArrEnd {
                    ctxs.push(Ctx::Array(1));
                    continue 'value;
                }
            }
            _ => return Err(parse_error("value", &t)),
        }
        // A value is complete on top of the stack: store it in its container.
        loop {
            match ctxs.last_mut() {
                None => {
                    let t = p.next_token();
                    return if t.tok == Tok::End { Ok(()) } else { Err(parse_error("the end", &t)) };
                }
                Some(Ctx::Array(i)) => {
                    ffi::lua_rawseti(l, -2, *i as ffi::lua_Integer);
                    *i = i.wrapping_add(1);
                    t = p.next_token();
                    if t.tok != Tok::ArrEnd {
                        if t.tok != Tok::Comma {
                            return Err(parse_error("comma or array end", &t));
                        }
                        t = p.next_token();
                        continue 'value;
                    }
                }
                Some(Ctx::Object) => {
                    ffi::lua_rawset(l, -3);
                    t = p.next_token();
                    if t.tok != Tok::ObjEnd {
                        if t.tok != Tok::Comma {
                            return Err(parse_error("comma or object end", &t));
                        }
                        t = p.next_token();
                        t = p.object_key(l, t)?;
                        continue 'value;
                    }
                }
            }
            ctxs.pop();
        }
    }
}

unsafe fn push_bytes(l: *mut lua_State, b: &[u8]) {
    ffi::lua_pushlstring(l, b.as_ptr() as *const c_char, b.len());
}

impl Parser<'_> {
    /// The byte at `i`; the end of the data reads as the C string's terminating NUL.
    fn at(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn starts_with(&self, s: &[u8]) -> bool {
        self.data.get(self.pos..).is_some_and(|d| d.starts_with(s))
    }

    fn error(&self, msg: &'static str) -> Token {
        Token { tok: Tok::Error(msg), index: self.pos }
    }

    /// Pushes the key of an object member and returns the token after its colon.
    unsafe fn object_key(&mut self, l: *mut lua_State, t: Token) -> Result<Token, String> {
        if t.tok != Tok::Str {
            return Err(parse_error("object key string", &t));
        }
        push_bytes(l, &self.tmp);
        let t = self.next_token();
        if t.tok != Tok::Colon {
            return Err(parse_error("colon", &t));
        }
        Ok(self.next_token())
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.at(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let index = self.pos;
        let single = match self.at(self.pos) {
            b'{' => Tok::ObjBegin,
            b'}' => Tok::ObjEnd,
            b'[' => Tok::ArrBegin,
            b']' => Tok::ArrEnd,
            b',' => Tok::Comma,
            b':' => Tok::Colon,
            0 => return Token { tok: Tok::End, index },
            b'"' => return self.string(),
            b'-' | b'0'..=b'9' => {
                if !self.invalid_numbers && self.is_invalid_number() {
                    return self.error("invalid number");
                }
                return self.number();
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                for (word, tok) in [(&b"true"[..], Tok::Bool(true)), (b"false", Tok::Bool(false)), (b"null", Tok::Null)] {
                    if self.starts_with(word) {
                        self.pos += word.len();
                        return Token { tok, index };
                    }
                }
                if self.invalid_numbers && self.is_invalid_number() {
                    return self.number();
                }
                return self.error("invalid token");
            }
            _ => return self.error("invalid token"),
        };
        self.pos += 1;
        Token { tok: single, index }
    }

    /// json_is_invalid_number: forms strtod takes but strict JSON does not.
    fn is_invalid_number(&self) -> bool {
        let mut i = self.pos;
        match self.at(i) {
            b'+' => return true,
            b'-' => i += 1,
            _ => {}
        }
        let c = self.at(i);
        if c == b'0' {
            let c2 = self.at(i + 1);
            return c2 | 0x20 == b'x' || c2.is_ascii_digit();
        }
        if (c as i8) <= b'9' as i8 {
            return false; // C compares a signed char: bytes >= 0x80 count as ordinary numbers
        }
        let rest = self.data.get(i..).unwrap_or_default();
        rest.len() >= 3 && (rest[..3].eq_ignore_ascii_case(b"inf") || rest[..3].eq_ignore_ascii_case(b"nan"))
    }

    fn number(&mut self) -> Token {
        let index = self.pos;
        match crate::util::strtod_prefix(self.data.get(self.pos..).unwrap_or_default()) {
            Some((n, used)) => {
                self.pos += used;
                Token { tok: Tok::Num(n), index }
            }
            None => self.error("invalid number"),
        }
    }

    fn string(&mut self) -> Token {
        let index = self.pos;
        self.pos += 1;
        self.tmp.clear();
        loop {
            let mut ch = self.at(self.pos);
            match ch {
                b'"' => break,
                0 => return self.error("unexpected end of string"),
                b'\\' => {
                    ch = match self.at(self.pos + 1) {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'f' => 12,
                        b'r' => b'\r',
                        b'u' => {
                            if self.unicode_escape() {
                                continue;
                            }
                            return self.error("invalid unicode escape code");
                        }
                        _ => return self.error("invalid escape code"),
                    };
                    self.pos += 1;
                }
                _ => {}
            }
            self.tmp.push(ch);
            self.pos += 1;
        }
        self.pos += 1;
        Token { tok: Tok::Str, index }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |acc, i| Some(acc << 4 | (self.at(at + i) as char).to_digit(16)?))
    }

    /// json_append_unicode_escape: `\uXXXX`, or a high+low surrogate pair, appended as UTF-8.
    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else { return false };
        let mut escape_len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 || self.at(self.pos + 6) != b'\\' || self.at(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else { return false };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            escape_len = 12;
        }
        // Encoded by hand: lone low surrogates are accepted and written as 3 bytes, as in C.
        let t = &mut self.tmp;
        match cp {
            0..=0x7F => t.push(cp as u8),
            0x80..=0x7FF => t.extend_from_slice(&[(cp >> 6) as u8 | 0xC0, (cp & 0x3F) as u8 | 0x80]),
            0x800..=0xFFFF => t.extend_from_slice(&[(cp >> 12) as u8 | 0xE0, ((cp >> 6) & 0x3F) as u8 | 0x80, (cp & 0x3F) as u8 | 0x80]),
            _ => t.extend_from_slice(&[
                (cp >> 18) as u8 | 0xF0,
                ((cp >> 12) & 0x3F) as u8 | 0x80,
                ((cp >> 6) & 0x3F) as u8 | 0x80,
                (cp & 0x3F) as u8 | 0x80,
            ]),
        }
        self.pos += escape_len;
        true
    }
}
