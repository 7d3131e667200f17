//! Redis's Lua `bit` library: LuaBitOp 1.0.2 (lua_bit.c) as Redis 7.0 embeds it, in Rust.
//!
//! Members: `tobit tohex bnot band bor bxor lshift rshift arshift rol ror bswap`.
//! Behaviours reproduced from the C code:
//! - arguments go through `lua_tonumber` (numeric strings are accepted), then the
//!   2^52+2^51 trick: the low 32 bits of the double `n + 6755399441055744.0`, so values wrap
//!   modulo 2^32 and fractions round half to even; a result of 0 from a non-number raises
//!   "number expected, got <type>";
//! - results are signed 32-bit numbers; shift counts are masked with `& 31`;
//! - `tohex(x, n)`: default 8 digits, negative `n` gives upper case, `|n|` is capped at 8 and
//!   `n = -2^31` is clamped first (the CVE-2024-31449 fix) instead of overflowing.
//!
//! This module also holds the error helpers shared with `struct_lib`: they rebuild the texts of
//! `luaL_error` / `luaL_argerror` (caller position prefix, function name from the call site).

use mlua::{Lua, Table, Value, Variadic};

use super::shim::{string_error_fn, type_name};

/// `luaL_error`: the message prefixed with `luaL_where(L, 1)`, the position of whoever called
/// the library function. Stack levels seen from the Rust callback: 0 = this callback,
/// 1 = the shim's Lua wrapper (stands for the C function), 2 = the caller.
pub(crate) fn lua_error(lua: &Lua, msg: &str) -> String {
    let prefix = lua.inspect_stack(2, |d| {
        let line = d.current_line().filter(|&l| l > 0)?;
        Some(format!("{}:{}: ", d.source().short_src.unwrap_or_default(), line))
    });
    format!("{}{msg}", prefix.flatten().unwrap_or_default())
}

/// `luaL_argerror`: names the function as the call site does (`'?'` under `pcall(f, ...)`),
/// and discounts `self` for method calls.
pub(crate) fn arg_error(lua: &Lua, narg: usize, extra: &str) -> String {
    let (name, what) = lua
        .inspect_stack(1, |d| {
            let n = d.names();
            (n.name.map(|s| s.into_owned()), n.name_what.unwrap_or(""))
        })
        .unwrap_or((None, ""));
    let mut narg = narg;
    if what == "method" {
        narg -= 1;
        if narg == 0 {
            let name = name.as_deref().unwrap_or("(null)");
            return lua_error(lua, &format!("calling '{name}' on bad self ({extra})"));
        }
    }
    lua_error(lua, &format!("bad argument #{narg} to '{}' ({extra})", name.as_deref().unwrap_or("?")))
}

/// `luaL_typerror`.
pub(crate) fn type_error(lua: &Lua, narg: usize, expected: &str, got: Option<&Value>) -> String {
    arg_error(lua, narg, &format!("{expected} expected, got {}", type_name(got)))
}

/// `lua_tonumber` of argument `idx` (1-based): numbers and numeric strings, else `None`.
pub(crate) fn to_number(lua: &Lua, args: &[Value], idx: usize) -> Option<f64> {
    match args.get(idx - 1)? {
        Value::Number(n) => Some(*n),
        Value::Integer(i) => Some(*i as f64),
        v @ Value::String(_) => lua.coerce_number(v.clone()).ok().flatten(),
        _ => None,
    }
}

/// `barg`: the 2^52+2^51 normalisation; only a 0 result is checked for being a real number,
/// exactly like LuaBitOp under Lua 5.1.
fn barg(lua: &Lua, args: &[Value], idx: usize) -> Result<u32, String> {
    let n = to_number(lua, args, idx);
    let b = (n.unwrap_or(0.0) + 6_755_399_441_055_744.0).to_bits() as u32;
    if b == 0 && n.is_none() {
        return Err(type_error(lua, idx, "number", args.get(idx - 1)));
    }
    Ok(b)
}

/// `BRET`: results are signed 32-bit.
fn bret(b: u32) -> f64 {
    b as i32 as f64
}

fn tohex(lua: &Lua, args: &[Value]) -> Result<mlua::LuaString, String> {
    let mut b = barg(lua, args, 1)?;
    let mut n = if args.len() < 2 { 8 } else { barg(lua, args, 2)? as i32 };
    // CVE-2024-31449: -INT32_MIN overflows, so Redis clamps it before negating.
    n = n.max(i32::MIN + 1);
    let digits: &[u8; 16] = if n < 0 { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let n = n.unsigned_abs().min(8) as usize;
    let mut buf = [0u8; 8];
    for slot in buf[..n].iter_mut().rev() {
        *slot = digits[(b & 15) as usize];
        b >>= 4;
    }
    lua.create_string(&buf[..n]).map_err(|e| e.to_string())
}

type BitFn = fn(&Lua, &[Value]) -> Result<f64, String>;

/// Folds every argument with `op`, starting from argument 1 (the C loop walks from the top
/// down, which only matters for which bad argument is reported first).
fn fold(lua: &Lua, args: &[Value], op: fn(u32, u32) -> u32) -> Result<f64, String> {
    let mut b = barg(lua, args, 1)?;
    for i in (2..=args.len()).rev() {
        b = op(b, barg(lua, args, i)?);
    }
    Ok(bret(b))
}

/// Two-argument shifts/rotations: `(value, count & 31)`.
fn shift(lua: &Lua, args: &[Value], op: fn(u32, u32) -> u32) -> Result<f64, String> {
    let b = barg(lua, args, 1)?;
    let n = barg(lua, args, 2)? & 31;
    Ok(bret(op(b, n)))
}

/// Builds the `bit` table.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let numeric: [(&str, BitFn); 11] = [
        ("tobit", |l, a| Ok(bret(barg(l, a, 1)?))),
        ("bnot", |l, a| Ok(bret(!barg(l, a, 1)?))),
        ("band", |l, a| fold(l, a, |x, y| x & y)),
        ("bor", |l, a| fold(l, a, |x, y| x | y)),
        ("bxor", |l, a| fold(l, a, |x, y| x ^ y)),
        ("lshift", |l, a| shift(l, a, |b, n| b << n)),
        ("rshift", |l, a| shift(l, a, |b, n| b >> n)),
        ("arshift", |l, a| shift(l, a, |b, n| ((b as i32) >> n) as u32)),
        ("rol", |l, a| shift(l, a, u32::rotate_left)),
        ("ror", |l, a| shift(l, a, u32::rotate_right)),
        ("bswap", |l, a| Ok(bret(barg(l, a, 1)?.swap_bytes()))),
    ];
    for (name, f) in numeric {
        t.set(name, string_error_fn(lua, move |lua, args: Variadic<Value>| f(lua, &args))?)?;
    }
    t.set("tohex", string_error_fn(lua, |lua, args: Variadic<Value>| tohex(lua, &args))?)?;
    Ok(t)
}
