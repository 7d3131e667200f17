//! Redis's Lua `cmsgpack` library (antirez's lua-cmsgpack 0.4.0, as embedded in Redis 7.0) in Rust.
//!
//! `open` builds the `cmsgpack` table: `pack(...)`, `unpack(s)`, `unpack_one(s [, offset])`,
//! `unpack_limit(s, limit [, offset])` and the `_NAME`/`_VERSION`/`_COPYRIGHT`/`_DESCRIPTION` strings.
//! Behaviours reproduced from the C code, checked byte for byte against redis-server 7.0.15:
//! - Numbers (all doubles in Lua 5.1) that are exact int64 values pack as the smallest msgpack int;
//!   other numbers pack as float32 when that is exact, else float64. Strings use fixstr/str8/16/32
//!   (never bin). Tables are arrays when their keys are exactly 1..N (`table_is_an_array`), else
//!   maps in `lua_next` order. Tables nested deeper than `LUACMSGPACK_MAX_NESTING` (16) and
//!   functions/userdata/threads pack as nil.
//! - Unpacking knows nil, bool, ints, float32/64, str8/16/32 and arrays/maps; bin, ext and 0xc1 are
//!   "Bad data format in input.". uint64 values wrap to negative like `lua_pushinteger` does.
//! - `unpack_limit(s, 0, 0)` decodes everything and returns no offset (C's `decode_all`); the
//!   offset returned is absolute, or -1 once the input is consumed.
//! - The C code guards the Lua C stack (LUAI_MAXCSTACK = 8000 slots) with `luaL_checkstack`; we count
//!   the slots the C code would use and raise the same "stack overflow (...)" errors at the same
//!   points. That count also bounds our work: decoding uses an explicit frame stack (no recursion)
//!   and encoding recursion stops at 16 levels, so hostile input (CVE-2018-11218 shapes) cannot
//!   overflow the Rust stack. A huge declared length only costs a check against the bytes left.
//! - Error texts, including `luaL_argerror` naming (`bad argument #1 to 'unpack'`, `'?'` under
//!   `pcall`, `calling 'x' on bad self`) and `luaL_error`'s "chunk:line: " prefix of the caller.

use super::convert::c_cast_i64;
use super::shim::{string_error_fn, type_name};
use mlua::{Lua, MultiValue, Table, Value};

const MAX_NESTING: usize = 16;
/// Lua 5.1's LUAI_MAXCSTACK: the most slots a C function may use (`lua_checkstack` fails beyond).
const MAX_C_STACK: usize = 8000;
/// mlua's callback glue cannot return quite LUAI_MAXCSTACK values (it needs spare slots, and each
/// table result holds a slot of its auxiliary stack); past this many results we fail with the same
/// error Redis gives a little later, at 8000 slots.
const MAX_RESULTS: usize = 7900;
const TOO_MANY: &str = "too many return values at once; use unpack_one or unpack_limit instead.";

/// A failure, before the Lua-visible text is decided.
enum Fail {
    /// `luaL_error`: prefixed with the position of the calling Lua code.
    Located(String),
    /// `luaL_argerror(narg, msg)`: needs the name the function was called by.
    Arg(i64, String),
    /// A raw Lua runtime error raised inside the C function ("table index is nil"): no prefix.
    Plain(String),
}

impl From<mlua::Error> for Fail {
    fn from(e: mlua::Error) -> Self {
        match e {
            // mlua's own stack limits sit a little below the C library's: report them like it.
            mlua::Error::StackError => Fail::Located(format!("stack overflow ({TOO_MANY})")),
            e => Fail::Plain(e.to_string()),
        }
    }
}

type Res<T> = Result<T, Fail>;

/// `luaL_checkstack(L, extra, what)` with `top` slots in use.
fn check_stack(top: usize, extra: usize, what: &str) -> Res<()> {
    if top + extra > MAX_C_STACK {
        return Err(Fail::Located(format!("stack overflow ({what})")));
    }
    Ok(())
}

/// Turns a `Fail` into the string the C library would raise. We run inside the shim: stack level 1
/// is the shim's Lua wrapper (called the way the script called `cmsgpack.x`), level 2 its caller.
fn render(lua: &Lua, fail: Fail) -> String {
    match fail {
        Fail::Plain(msg) => msg,
        Fail::Located(msg) => {
            // luaL_where(L, 1): "src:line: " when the caller is Lua code with line info.
            let prefix = lua.inspect_stack(2, |d| match d.current_line() {
                Some(line) if line > 0 => format!("{}:{}: ", d.source().short_src.unwrap_or_default(), line),
                _ => String::new(),
            });
            prefix.unwrap_or_default() + &msg
        }
        Fail::Arg(mut narg, extra) => {
            let (name, what) = lua
                .inspect_stack(1, |d| {
                    let n = d.names();
                    (n.name.map(|s| s.into_owned()), n.name_what)
                })
                .unwrap_or((None, None));
            let name = name.unwrap_or_else(|| "?".to_string());
            if what == Some("method") {
                narg -= 1;
                if narg == 0 {
                    return render(lua, Fail::Located(format!("calling '{name}' on bad self ({extra})")));
                }
            }
            render(lua, Fail::Located(format!("bad argument #{narg} to '{name}' ({extra})")))
        }
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

/// `luaL_checkinteger` / `luaL_optinteger` (Redis keeps the full lua_Integer).
fn int_arg(lua: &Lua, args: &[Value], narg: usize, default: Option<i64>) -> Res<i64> {
    let v = args.get(narg - 1);
    if let (Some(d), None | Some(Value::Nil)) = (default, v) {
        return Ok(d);
    }
    let n = match v {
        Some(v) => lua.coerce_number(v.clone())?,
        None => None,
    };
    match n {
        Some(n) => Ok(c_cast_i64(n)),
        None => Err(Fail::Arg(narg as i64, format!("number expected, got {}", type_name(v)))),
    }
}

// ------------------------------- Encoding -------------------------------

fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | len as u8);
    } else if len <= 0xff {
        buf.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend_from_slice(&(len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

fn encode_int(buf: &mut Vec<u8>, n: i64) {
    match n {
        0..=127 => buf.push(n as u8),
        128..=0xff => buf.extend_from_slice(&[0xcc, n as u8]),
        0x100..=0xffff => buf.extend_from_slice(&[&[0xcd][..], &(n as u16).to_be_bytes()].concat()),
        0x1_0000..=0xffff_ffff => buf.extend_from_slice(&[&[0xce][..], &(n as u32).to_be_bytes()].concat()),
        0x1_0000_0000.. => buf.extend_from_slice(&[&[0xcf][..], &(n as u64).to_be_bytes()].concat()),
        -32..=-1 => buf.push(n as u8),
        -128..=-33 => buf.extend_from_slice(&[0xd0, n as u8]),
        -32768..=-129 => buf.extend_from_slice(&[&[0xd1][..], &(n as i16).to_be_bytes()].concat()),
        -2147483648..=-32769 => buf.extend_from_slice(&[&[0xd2][..], &(n as i32).to_be_bytes()].concat()),
        _ => buf.extend_from_slice(&[&[0xd3][..], &n.to_be_bytes()].concat()),
    }
}

fn encode_number(buf: &mut Vec<u8>, d: f64) {
    // IS_INT64_EQUIVALENT: !isinf(d) && (int64_t)d == d (NaN and out-of-range fail the compare).
    if !d.is_infinite() && c_cast_i64(d) as f64 == d {
        encode_int(buf, c_cast_i64(d));
    } else if (d as f32) as f64 == d {
        buf.push(0xca);
        buf.extend_from_slice(&(d as f32).to_be_bytes());
    } else {
        buf.push(0xcb);
        buf.extend_from_slice(&d.to_be_bytes());
    }
}

/// Array (0x90/0xdc/0xdd) or map (0x80/0xde/0xdf) header.
fn encode_len(buf: &mut Vec<u8>, fix: u8, n: usize) {
    if n <= 15 {
        buf.push(fix | n as u8);
    } else if n <= 0xffff {
        buf.push(if fix == 0x90 { 0xdc } else { 0xde });
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(if fix == 0x90 { 0xdd } else { 0xdf });
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// `table_is_an_array`: every key is a number that is a positive C int, and max key == count.
fn table_is_an_array(t: &Table) -> Res<bool> {
    let (mut count, mut max) = (0i64, 0i64);
    for pair in t.pairs::<Value, Value>() {
        let (k, _) = pair?;
        match number(&k) {
            Some(n) if n > 0.0 && n <= i32::MAX as f64 && n.trunc() == n => {
                max = max.max(n as i64);
                count += 1;
            }
            _ => return Ok(false),
        }
    }
    Ok(max == count)
}

/// `mp_encode_lua_type`: `v` is on top of a simulated C stack holding `top` slots.
fn encode(buf: &mut Vec<u8>, v: &Value, level: usize, top: usize) -> Res<()> {
    match v {
        Value::String(s) => encode_bytes(buf, &s.as_bytes()),
        Value::Boolean(b) => buf.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(_) | Value::Number(_) => encode_number(buf, number(v).unwrap_or_default()),
        // Past the nesting limit a table is nil: this is what makes cyclic tables packable.
        Value::Table(t) if level < MAX_NESTING => {
            check_stack(top, 2, "in function table_is_an_array")?;
            if table_is_an_array(t)? {
                let len = t.raw_len();
                encode_len(buf, 0x90, len);
                check_stack(top, 1, "in function mp_encode_lua_table_as_array")?;
                for j in 1..=len {
                    encode(buf, &t.raw_get::<Value>(j)?, level + 1, top + 1)?;
                }
            } else {
                check_stack(top, 3, "in function mp_encode_lua_table_as_map")?;
                encode_len(buf, 0x80, t.pairs::<Value, Value>().count());
                for pair in t.pairs::<Value, Value>() {
                    let (k, v) = pair?;
                    // C stack: table, key, value, copy of key.
                    encode(buf, &k, level + 1, top + 3)?;
                    encode(buf, &v, level + 1, top + 2)?;
                }
            }
        }
        _ => buf.push(0xc0),
    }
    Ok(())
}

fn pack(lua: &Lua, args: MultiValue) -> Res<MultiValue> {
    let nargs = args.len();
    if nargs == 0 {
        return Err(Fail::Arg(0, "MessagePack pack needs input.".into()));
    }
    // lua_checkstack(L, nargs) with the nargs arguments already on the stack.
    if nargs > MAX_C_STACK || 2 * nargs > MAX_C_STACK {
        return Err(Fail::Arg(0, "Too many arguments for MessagePack pack.".into()));
    }
    let mut buf = Vec::new();
    for (i, v) in args.iter().enumerate() {
        // Each packed argument stays on the stack as a string until the final lua_concat.
        check_stack(nargs + i, 1, "in function mp_check")?;
        encode(&mut buf, v, 0, nargs + i + 1)?;
    }
    Ok(MultiValue::from_vec(vec![Value::String(lua.create_string(&buf)?)]))
}

// ------------------------------- Decoding -------------------------------

/// What went wrong in the input (`mp_cur.err`).
enum Bad {
    Eof,
    Format,
    Lua(Fail),
}

impl From<Fail> for Bad {
    fn from(f: Fail) -> Self {
        Bad::Lua(f)
    }
}

impl From<mlua::Error> for Bad {
    fn from(e: mlua::Error) -> Self {
        Bad::Lua(e.into())
    }
}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Cursor<'_> {
    fn left(&self) -> usize {
        self.data.len() - self.pos
    }
    /// `mp_cur_need` then consume: checks the bytes exist before anything is built from them.
    fn take(&mut self, n: usize) -> Result<&[u8], Bad> {
        if self.left() < n {
            return Err(Bad::Eof);
        }
        self.pos += n;
        Ok(&self.data[self.pos - n..self.pos])
    }
    /// Big-endian unsigned of `n` bytes located after the type byte (which is consumed too).
    fn be(&mut self, n: usize) -> Result<u64, Bad> {
        Ok(self.take(1 + n)?[1..].iter().fold(0u64, |acc, b| acc << 8 | u64::from(*b)))
    }
}

/// A container being filled; the C code's recursion turned into an explicit stack. The tables and
/// pending map keys live in a Lua table (`hold`), not in Rust handles: mlua keeps each live handle on
/// an auxiliary Lua stack that is itself limited to about 8000 slots, which deep input would exhaust.
struct Frame {
    array: bool,
    next: usize,
    left: u64,
    has_key: bool,
}

/// What the next byte starts: a finished value, or a container of `len` elements.
enum Item {
    Scalar(Value),
    Array(u64),
    Map(u64),
}

fn read_item(lua: &Lua, c: &mut Cursor) -> Result<Item, Bad> {
    let b = c.data[c.pos];
    let int = |i: i64| Ok(Item::Scalar(Value::Number(i as f64)));
    match b {
        0xc0 => c.take(1).map(|_| Item::Scalar(Value::Nil)),
        0xc2 | 0xc3 => c.take(1).map(|_| Item::Scalar(Value::Boolean(b == 0xc3))),
        0xcc => int(c.be(1)? as i64),
        0xcd => int(c.be(2)? as i64),
        0xce => int(c.be(4)? as i64),
        0xcf => int(c.be(8)? as i64), // lua_pushinteger of a uint64: wraps above 2^63
        0xd0 => int(c.be(1)? as u8 as i8 as i64),
        0xd1 => int(c.be(2)? as u16 as i16 as i64),
        0xd2 => int(c.be(4)? as u32 as i32 as i64),
        0xd3 => int(c.be(8)? as i64),
        0xca => Ok(Item::Scalar(Value::Number(f32::from_bits(c.be(4)? as u32) as f64))),
        0xcb => Ok(Item::Scalar(Value::Number(f64::from_bits(c.be(8)?)))),
        0xd9 | 0xda | 0xdb | 0xa0..=0xbf => {
            let len = match b {
                0xd9 => c.be(1)?,
                0xda => c.be(2)?,
                0xdb => c.be(4)?,
                _ => c.take(1).map(|_| u64::from(b & 0x1f))?,
            };
            let s = c.take(usize::try_from(len).map_err(|_| Bad::Eof)?)?;
            Ok(Item::Scalar(Value::String(lua.create_string(s)?)))
        }
        0xdc => Ok(Item::Array(c.be(2)?)),
        0xdd => Ok(Item::Array(c.be(4)?)),
        0xde => Ok(Item::Map(c.be(2)?)),
        0xdf => Ok(Item::Map(c.be(4)?)),
        0x00..=0x7f | 0xe0..=0xff => c.take(1).and_then(|_| int(i64::from(b as i8))),
        0x90..=0x9f => c.take(1).map(|_| Item::Array(u64::from(b & 0xf))),
        0x80..=0x8f => c.take(1).map(|_| Item::Map(u64::from(b & 0xf))),
        _ => Err(Bad::Format),
    }
}

/// `mp_decode_to_lua_type` for one top-level value; `top` counts simulated C stack slots and ends
/// one higher (the value stays on the stack until returned).
fn decode(lua: &Lua, c: &mut Cursor, top: &mut usize, hold: &Table) -> Result<Value, Bad> {
    let mut frames: Vec<Frame> = Vec::new();
    loop {
        // Start a value.
        if c.left() == 0 {
            return Err(Bad::Eof);
        }
        check_stack(*top, 1, TOO_MANY)?;
        let mut done = match read_item(lua, c)? {
            Item::Scalar(v) => {
                *top += 1;
                v
            }
            Item::Array(len) => match open_container(lua, top, hold, &mut frames, true, len)? {
                Some(t) => Value::Table(t),
                None => continue,
            },
            Item::Map(len) => match open_container(lua, top, hold, &mut frames, false, len)? {
                Some(t) => Value::Table(t),
                None => continue,
            },
        };
        // Store finished values into their containers, closing the containers that fill up.
        loop {
            let d = frames.len();
            let Some(f) = frames.last_mut() else { return Ok(done) };
            if !f.array && !f.has_key {
                hold.raw_set(2 * d, done)?;
                f.has_key = true;
                break;
            }
            let t: Table = hold.raw_get(2 * d - 1)?;
            if f.array {
                t.raw_set(f.next, done)?;
                f.next += 1;
            } else {
                match hold.raw_get::<Value>(2 * d)? {
                    Value::Nil => return Err(Bad::Lua(Fail::Plain("table index is nil".into()))),
                    Value::Number(n) if n.is_nan() => return Err(Bad::Lua(Fail::Plain("table index is NaN".into()))),
                    k => t.raw_set(k, done)?,
                }
                hold.raw_set(2 * d, Value::Nil)?;
                f.has_key = false;
            }
            *top -= 2; // lua_settable pops key and value
            f.left -= 1;
            if f.left > 0 {
                if f.array {
                    *top += 1;
                }
                break;
            }
            frames.pop();
            hold.raw_set(2 * d - 1, Value::Nil)?;
            done = Value::Table(t);
        }
    }
}

/// `lua_newtable` for a container: returns it if empty (already complete), else opens a frame.
fn open_container(lua: &Lua, top: &mut usize, hold: &Table, frames: &mut Vec<Frame>, array: bool, left: u64) -> Result<Option<Table>, Bad> {
    *top += 1;
    if array {
        check_stack(*top, 1, "in function mp_decode_to_lua_array")?;
    }
    let t = lua.create_table()?;
    if left == 0 {
        return Ok(Some(t));
    }
    hold.raw_set(2 * frames.len() + 1, t)?;
    frames.push(Frame { array, next: 1, left, has_key: false });
    if array {
        *top += 1; // the index pushed before each element
    }
    Ok(None)
}

/// `mp_unpack_full`. `base` is the number of stack slots the C function holds before decoding.
fn unpack_full(lua: &Lua, args: &[Value], limit: i64, offset: i64, base: usize) -> Res<MultiValue> {
    let s = match args.first() {
        Some(v @ (Value::String(_) | Value::Integer(_) | Value::Number(_))) => lua.coerce_string(v.clone())?,
        _ => None,
    };
    let Some(s) = s else {
        return Err(Fail::Arg(1, format!("string expected, got {}", type_name(args.first()))));
    };
    let data = s.as_bytes();
    let len = data.len();
    let decode_all = limit == 0 && offset == 0;
    if offset < 0 || limit < 0 {
        // The C code prints the length where it means the limit.
        return Err(Fail::Located(format!("Invalid request to unpack with offset of {} and limit of {}.", offset as i32, len as i32)));
    } else if offset as usize > len {
        return Err(Fail::Located(format!("Start offset {} greater than input length {}.", offset as i32, len as i32)));
    }
    let limit = if decode_all { i64::from(i32::MAX) } else { limit };
    let mut c = Cursor { data: &data, pos: offset as usize };
    let mut top = base;
    let mut out = Vec::new();
    let hold = lua.create_table()?;
    while c.left() > 0 && (out.len() as i64) < limit {
        if out.len() + usize::from(!decode_all) >= MAX_RESULTS {
            return Err(Fail::Located(format!("stack overflow ({TOO_MANY})")));
        }
        match decode(lua, &mut c, &mut top, &hold) {
            Ok(v) => out.push(v),
            Err(Bad::Eof) => return Err(Fail::Located("Missing bytes in input.".into())),
            Err(Bad::Format) => return Err(Fail::Located("Bad data format in input.".into())),
            Err(Bad::Lua(f)) => return Err(f),
        }
    }
    if !decode_all {
        check_stack(top, 1, "in function mp_unpack_full")?;
        let next = if c.left() == 0 { -1 } else { c.pos as i32 };
        out.insert(0, Value::Integer(next.into()));
    }
    Ok(MultiValue::from_vec(out))
}

/// Registers `f` through the shim, rendering failures the way the C library words them.
fn function(lua: &Lua, f: fn(&Lua, Vec<Value>) -> Res<MultiValue>) -> mlua::Result<mlua::Function> {
    string_error_fn(lua, move |lua, args: MultiValue| f(lua, args.into_vec()).map_err(|e| render(lua, e)))
}

/// Builds the `cmsgpack` table (fields set in the C library's order, so `pairs` order matches).
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("pack", function(lua, |lua, args| pack(lua, MultiValue::from_vec(args)))?)?;
    // unpack keeps all its arguments on the C stack while decoding.
    t.set("unpack", function(lua, |lua, args| unpack_full(lua, &args, 0, 0, args.len()))?)?;
    t.set(
        "unpack_one",
        function(lua, |lua, args| {
            let offset = int_arg(lua, &args, 2, Some(0))?;
            unpack_full(lua, &args, 1, offset, args.len().min(1))
        })?,
    )?;
    t.set(
        "unpack_limit",
        function(lua, |lua, args| {
            let limit = int_arg(lua, &args, 2, None)?;
            let offset = int_arg(lua, &args, 3, Some(0))?;
            unpack_full(lua, &args, limit, offset, args.len().min(1))
        })?,
    )?;
    t.set("_NAME", "cmsgpack")?;
    t.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    t.set("_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo")?;
    t.set("_DESCRIPTION", "MessagePack C implementation for Lua")?;
    Ok(t)
}
