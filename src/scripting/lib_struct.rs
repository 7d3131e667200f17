//! Redis's Lua `struct` library: Roberto Ierusalimschy's struct.c (v1.7, as patched in Redis
//! 7.0's deps/lua/src/lua_struct.c), in Rust.
//!
//! `struct.pack(fmt, ...)`, `struct.unpack(fmt, data [, pos])` (values, then the next position)
//! and `struct.size(fmt)`. Format options: `<` `>` endianness (native is little), `!n` maximum
//! alignment (default 8), `x` pad byte, `b B h H l L T` (1 2 8 8 bytes), `i I` with an optional
//! size up to 32, `f d`, `s` (zero-terminated), `cN` (`c0`: whole string when packing, length
//! taken from the previous unpacked value when unpacking), `' '` ignored; any other character
//! is "invalid format option" (although `size` silently skips alphanumeric ones, as in C).
//! Redis-specific behaviours reproduced:
//! - the CVE-2018-11219 / CVE-2020-14147 fixes: numbers in formats are capped at `INT_MAX`
//!   ("integral size overflow") and every read is bounds-checked ("data string too short"), so
//!   no format can make us allocate or read more than the arguments provide;
//! - `unpack`'s position is a `size_t`: only 0 is "offset must be 1 or greater", anything else
//!   just fails the bounds check (and an empty format returns it unchanged);
//! - C's x86-64 double→integer casts (NaN/overflow give 0x8000000000000000), 64-bit
//!   accumulators for `i9`..`i32` and the masked shift in sign extension;
//! - the C stack limit: too many results is "stack overflow (too many results)" (Redis allows
//!   7997 results + position with 2 arguments; mlua's own needs lower that to 7965 here);
//! - the format string ends at its first NUL byte, like a C string.

use mlua::{Lua, Table, Value, Variadic};

use super::convert::c_cast_i64;
use super::lib_bit::{arg_error, lua_error, to_number, type_error};
use super::shim::string_error_fn;

/// Largest `iN` accepted.
const MAXINTSIZE: i32 = 32;
/// Default for a bare `!`: the alignment of `double` on x86-64.
const MAXALIGN: i32 = 8;
/// LUAI_MAXCSTACK: how many stack slots a C function may use.
const MAXCSTACK: usize = 8000;
/// Slots mlua and the shim need on top of ours to return the results (mlua's compat
/// `luaL_checkstack` reserves LUA_MINSTACK = 20 more). Without this margin ~7980..7997 results
/// fail with mlua's own "stack overflow"/"out of Lua stack" texts; with it we stop at 7965.
const MLUA_SLACK: usize = 32;

type Res<T> = Result<T, String>;

struct Header {
    little: bool,
    align: usize,
}

/// What gcc emits for `(size_t)double` on x86-64 (so 2^64, inf -> 0; NaN, -1 -> huge).
fn c_to_u64(x: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    if x >= TWO63 {
        (c_cast_i64(x - TWO63) as u64) ^ (1 << 63)
    } else {
        c_cast_i64(x) as u64
    }
}

/// `luaL_checklstring`: strings, or numbers converted as Lua does.
fn check_bytes(lua: &Lua, args: &[Value], idx: usize) -> Res<Vec<u8>> {
    let v = args.get(idx - 1);
    match v {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(n @ (Value::Number(_) | Value::Integer(_))) => match lua.coerce_string(n.clone()) {
            Ok(Some(s)) => Ok(s.as_bytes().to_vec()),
            _ => Err(type_error(lua, idx, "string", v)),
        },
        // Past the arguments `pack` finds the nil it pushed as a marker.
        _ => Err(type_error(lua, idx, "string", Some(v.unwrap_or(&Value::Nil)))),
    }
}

fn check_number(lua: &Lua, args: &[Value], idx: usize) -> Res<f64> {
    to_number(lua, args, idx).ok_or_else(|| type_error(lua, idx, "number", Some(args.get(idx - 1).unwrap_or(&Value::Nil))))
}

/// The format as a C string: everything up to the first NUL.
fn check_format(lua: &Lua, args: &[Value]) -> Res<Vec<u8>> {
    let v = args.first();
    let mut fmt = match v {
        Some(Value::String(_) | Value::Number(_) | Value::Integer(_)) => check_bytes(lua, args, 1)?,
        _ => return Err(type_error(lua, 1, "string", v)),
    };
    if let Some(end) = fmt.iter().position(|&c| c == 0) {
        fmt.truncate(end);
    }
    Ok(fmt)
}

/// `getnum`: decimal digits at `fmt[*at..]`, or `df`; the overflow check is the CVE fix.
fn getnum(lua: &Lua, fmt: &[u8], at: &mut usize, df: i32) -> Res<i32> {
    if !fmt.get(*at).is_some_and(u8::is_ascii_digit) {
        return Ok(df);
    }
    let mut a: i32 = 0;
    while let Some(&c) = fmt.get(*at).filter(|c| c.is_ascii_digit()) {
        let d = i32::from(c - b'0');
        if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
            return Err(lua_error(lua, "integral size overflow"));
        }
        a = a * 10 + d;
        *at += 1;
    }
    Ok(a)
}

/// `optsize`: bytes taken by option `opt` (0 for control options and `s`).
fn optsize(lua: &Lua, opt: u8, fmt: &[u8], at: &mut usize) -> Res<usize> {
    Ok(match opt {
        b'B' | b'b' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'x' => 1,
        b'c' => getnum(lua, fmt, at, 1)? as usize,
        b'i' | b'I' => {
            let sz = getnum(lua, fmt, at, 4)?;
            if sz > MAXINTSIZE {
                return Err(lua_error(lua, &format!("integral size {sz} is larger than limit of {MAXINTSIZE}")));
            }
            sz as usize
        }
        _ => 0,
    })
}

/// `gettoalign`: padding before an item of `size` at offset `len`. Like C, this assumes a
/// power-of-2 size; other sizes (`i3`) give the same odd padding as Redis.
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    (size - (len & (size - 1))) & (size - 1)
}

/// `controloptions`: endianness, alignment and the invalid-option error.
fn controloptions(lua: &Lua, opt: u8, fmt: &[u8], at: &mut usize, h: &mut Header) -> Res<()> {
    match opt {
        b' ' => {}
        b'>' => h.little = false,
        b'<' => h.little = true,
        b'!' => {
            let a = getnum(lua, fmt, at, MAXALIGN)?;
            if a <= 0 || a & (a - 1) != 0 {
                return Err(lua_error(lua, &format!("alignment {a} is not a power of 2")));
            }
            h.align = a as usize;
        }
        // A byte >= 0x80 shows up as its Latin-1 char here (C puts the raw byte).
        _ => return Err(arg_error(lua, 1, &format!("invalid format option '{}'", char::from(opt)))),
    }
    Ok(())
}

/// `putinteger`: C converts negatives through `long`, the rest straight to `unsigned long`.
fn putinteger(out: &mut Vec<u8>, n: f64, little: bool, size: usize) {
    let mut value = if n < 0.0 { c_cast_i64(n) as u64 } else { c_to_u64(n) };
    let mut buf = [0u8; MAXINTSIZE as usize];
    for i in 0..size {
        let slot = if little { i } else { size - 1 - i };
        buf[slot] = value as u8;
        value >>= 8;
    }
    out.extend_from_slice(&buf[..size]);
}

/// `getinteger`: a 64-bit accumulator (bytes beyond 8 fall off) and C's sign-extension mask,
/// whose shift count x86 reduces modulo 64.
fn getinteger(bytes: &[u8], little: bool, signed: bool) -> f64 {
    let mut l: u64 = 0;
    let mut add = |b: &u8| l = (l << 8) | u64::from(*b);
    if little {
        bytes.iter().rev().for_each(&mut add);
    } else {
        bytes.iter().for_each(&mut add);
    }
    if !signed {
        return l as f64;
    }
    let mask = u64::MAX.wrapping_shl((bytes.len() as i32 * 8 - 1) as u32);
    if l & mask != 0 {
        l |= mask;
    }
    l as i64 as f64
}

/// Native little-endian bytes turned to the requested order (`correctbytes`).
fn ordered<const N: usize>(mut b: [u8; N], little: bool) -> [u8; N] {
    if !little {
        b.reverse();
    }
    b
}

fn pack(lua: &Lua, args: &[Value]) -> Res<mlua::LuaString> {
    let fmt = check_format(lua, args)?;
    let mut h = Header { little: true, align: 1 };
    let (mut at, mut arg, mut total) = (0, 2, 0usize);
    let mut out = Vec::new();
    while let Some(&opt) = fmt.get(at) {
        at += 1;
        let mut size = optsize(lua, opt, &fmt, &mut at)?;
        let pad = gettoalign(total, &h, opt, size);
        total += pad;
        out.resize(out.len() + pad, 0);
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                putinteger(&mut out, check_number(lua, args, arg)?, h.little, size);
                arg += 1;
            }
            b'x' => out.push(0),
            b'f' => {
                let f = check_number(lua, args, arg)? as f32;
                arg += 1;
                out.extend_from_slice(&ordered(f.to_le_bytes(), h.little));
            }
            b'd' => {
                let d = check_number(lua, args, arg)?;
                arg += 1;
                out.extend_from_slice(&ordered(d.to_le_bytes(), h.little));
            }
            b'c' | b's' => {
                let s = check_bytes(lua, args, arg)?;
                arg += 1;
                if size == 0 {
                    size = s.len();
                }
                if s.len() < size {
                    // C reports the already-incremented argument number.
                    return Err(arg_error(lua, arg, "string too short"));
                }
                out.extend_from_slice(&s[..size]);
                if opt == b's' {
                    out.push(0);
                    size += 1;
                }
            }
            _ => controloptions(lua, opt, &fmt, &mut at, &mut h)?,
        }
        total += size;
    }
    lua.create_string(&out).map_err(|e| e.to_string())
}

fn unpack(lua: &Lua, args: &[Value]) -> Res<Variadic<Value>> {
    let fmt = check_format(lua, args)?;
    let data = match args.get(1) {
        Some(Value::String(_) | Value::Number(_) | Value::Integer(_)) => check_bytes(lua, args, 2)?,
        v => return Err(type_error(lua, 2, "string", v)),
    };
    let ld = data.len();
    // luaL_optinteger, then stored in a size_t.
    let mut pos = match args.get(2) {
        None | Some(Value::Nil) => 1,
        Some(v) => c_cast_i64(to_number(lua, args, 3).ok_or_else(|| type_error(lua, 3, "number", Some(v)))?) as usize,
    };
    if pos == 0 {
        return Err(arg_error(lua, 3, "offset must be 1 or greater"));
    }
    pos -= 1;
    let too_short = || arg_error(lua, 2, "data string too short");
    let mut h = Header { little: true, align: 1 };
    let mut at = 0;
    let mut res: Vec<Value> = Vec::new();
    while let Some(&opt) = fmt.get(at) {
        at += 1;
        let mut size = optsize(lua, opt, &fmt, &mut at)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if size > ld || pos > ld - size {
            return Err(too_short());
        }
        if args.len() + res.len() + 2 > MAXCSTACK - MLUA_SLACK {
            return Err(lua_error(lua, "stack overflow (too many results)"));
        }
        let item = &data[pos..pos + size];
        match opt {
            b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I' => {
                res.push(Value::Number(getinteger(item, h.little, opt.is_ascii_lowercase())));
            }
            b'x' => {}
            b'f' => {
                let b: [u8; 4] = item.try_into().map_err(|_| too_short())?;
                res.push(Value::Number(f64::from(f32::from_le_bytes(ordered(b, h.little)))));
            }
            b'd' => {
                let b: [u8; 8] = item.try_into().map_err(|_| too_short())?;
                res.push(Value::Number(f64::from_le_bytes(ordered(b, h.little))));
            }
            b'c' => {
                if size == 0 {
                    // `c0`: the previous result (a number or numeric string) is the length.
                    let prev = match res.last() {
                        Some(v) => lua.coerce_number(v.clone()).ok().flatten(),
                        None => None,
                    };
                    let Some(n) = prev else {
                        return Err(lua_error(lua, "format 'c0' needs a previous size"));
                    };
                    size = c_to_u64(n) as usize;
                    res.pop();
                    if size > ld || pos > ld - size {
                        return Err(too_short());
                    }
                }
                res.push(Value::String(lua.create_string(&data[pos..pos + size]).map_err(|e| e.to_string())?));
            }
            b's' => {
                let Some(len) = data[pos..].iter().position(|&c| c == 0) else {
                    return Err(lua_error(lua, "unfinished string in data"));
                };
                res.push(Value::String(lua.create_string(&data[pos..pos + len]).map_err(|e| e.to_string())?));
                size = len + 1;
            }
            _ => controloptions(lua, opt, &fmt, &mut at, &mut h)?,
        }
        pos = pos.wrapping_add(size);
    }
    // lua_pushinteger of a size_t: positions past 2^63 come back negative, as in Redis.
    res.push(Value::Number(pos.wrapping_add(1) as i64 as f64));
    Ok(Variadic::from_iter(res))
}

fn size(lua: &Lua, args: &[Value]) -> Res<f64> {
    let fmt = check_format(lua, args)?;
    let mut h = Header { little: true, align: 1 };
    let (mut at, mut pos) = (0, 0usize);
    while let Some(&opt) = fmt.get(at) {
        at += 1;
        let size = optsize(lua, opt, &fmt, &mut at)?;
        pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
        if opt == b's' {
            return Err(arg_error(lua, 1, "option 's' has no fixed size"));
        } else if opt == b'c' && size == 0 {
            return Err(arg_error(lua, 1, "option 'c0' has no fixed size"));
        }
        if !opt.is_ascii_alphanumeric() {
            controloptions(lua, opt, &fmt, &mut at, &mut h)?;
        }
        pos = pos.wrapping_add(size);
    }
    Ok(pos as i64 as f64)
}

/// Builds the `struct` table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("pack", string_error_fn(lua, |lua, args: Variadic<Value>| pack(lua, &args))?)?;
    t.set("unpack", string_error_fn(lua, |lua, args: Variadic<Value>| unpack(lua, &args))?)?;
    t.set("size", string_error_fn(lua, |lua, args: Variadic<Value>| size(lua, &args))?)?;
    Ok(t)
}
