//! The `redis` table scripts see: call, pcall, error_reply, status_reply, sha1hex, log,
//! setresp, replicate_commands, set_repl, breakpoint, debug, acl_check_cmd and the constants,
//! with Redis 7.0's argument checks and error texts.
//!
//! `redis.call` and `redis.pcall` hand the command to the executor through the run's
//! [`ScriptHost`](super::ScriptHost); the reply comes back converted by `convert.rs`.
//! `redis.call` raises an error reply as Redis's error table; `redis.pcall` returns it.

use bytes::Bytes;
use mlua::{Lua, Value, Variadic};

use super::convert::{error_table, reply_to_lua};
use super::shim::table_error_fn;
use super::RunState;
use crate::protocol::{ProtocolVersion, Reply};

pub const REPL_NONE: i64 = 0;
pub const REPL_AOF: i64 = 1;
pub const REPL_REPLICA: i64 = 2;
pub const REPL_ALL: i64 = 3;

pub fn install(lua: &Lua) -> mlua::Result<()> {
    let redis = lua.create_table()?;
    let raw_call = lua.create_function(|lua, args: Variadic<Value>| {
        let reply = run_command(lua, &args)?;
        match reply {
            Err(err) => Ok((false, err)),
            Ok(v) => Ok((true, v)),
        }
    })?;
    redis.raw_set("call", super::shim::raising(lua, raw_call)?)?;
    redis.raw_set(
        "pcall",
        lua.create_function(|lua, args: Variadic<Value>| match run_command(lua, &args)? {
            Ok(v) | Err(v) => Ok(v),
        })?,
    )?;
    redis.raw_set(
        "error_reply",
        lua.create_function(|lua, args: Variadic<Value>| match args.as_slice() {
            [Value::String(s)] => {
                let text = s.to_string_lossy();
                error_table(lua, &if text.starts_with('-') { text } else { format!("-{text}") })
            }
            _ => error_table(lua, "wrong number or type of arguments"),
        })?,
    )?;
    redis.raw_set(
        "status_reply",
        lua.create_function(|lua, args: Variadic<Value>| match args.as_slice() {
            [Value::String(s)] => {
                let t = lua.create_table()?;
                t.raw_set("ok", s.clone())?;
                Ok(Value::Table(t))
            }
            _ => error_table(lua, "wrong number or type of arguments"),
        })?,
    )?;
    redis.raw_set(
        "sha1hex",
        table_error_fn(lua, |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err("wrong number of arguments".to_string());
            }
            // lua_tolstring: strings and numbers (as Lua prints them); anything else hashes "".
            let bytes = lua_text(lua, &args[0]).unwrap_or_default();
            Ok(super::sha1_hex(&bytes))
        })?,
    )?;
    redis.raw_set("log", table_error_fn(lua, |lua, args: Variadic<Value>| log(lua, &args))?)?;
    redis.raw_set(
        "setresp",
        table_error_fn(lua, |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err("redis.setresp() requires one argument.".to_string());
            }
            let resp = match number(lua, &args[0]) {
                Some(n) if n as i64 == 2 => ProtocolVersion::Resp2,
                Some(n) if n as i64 == 3 => ProtocolVersion::Resp3,
                _ => return Err("RESP version must be 2 or 3.".to_string()),
            };
            if let Some(mut run) = lua.app_data_mut::<RunState>() {
                run.resp = resp;
            }
            Ok(())
        })?,
    )?;
    redis.raw_set("replicate_commands", lua.create_function(|_, _: Variadic<Value>| Ok(true))?)?;
    redis.raw_set(
        "set_repl",
        table_error_fn(lua, |lua, args: Variadic<Value>| {
            if args.len() != 1 {
                return Err("redis.set_repl() requires two arguments.".to_string());
            }
            let flags = number(lua, &args[0]).map(|n| n as i64).unwrap_or(-1);
            if flags & !(REPL_AOF | REPL_REPLICA) != 0 {
                return Err("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.".to_string());
            }
            if let Some(mut run) = lua.app_data_mut::<RunState>() {
                run.repl = flags as u8;
            }
            Ok(())
        })?,
    )?;
    // No debugging session exists (SCRIPT DEBUG is not offered): both are no-ops.
    redis.raw_set("breakpoint", lua.create_function(|_, _: Variadic<Value>| Ok(false))?)?;
    redis.raw_set("debug", lua.create_function(|_, _: Variadic<Value>| Ok(()))?)?;
    redis.raw_set(
        "acl_check_cmd",
        table_error_fn(lua, |lua, args: Variadic<Value>| {
            let argv = to_argv(&args).map_err(|e| e.to_string())?;
            if argv.is_empty() {
                return Err("Please specify at least one argument for this redis lib call".to_string());
            }
            let known = with_host(lua, |host| host.command_exists(&argv)).unwrap_or(false);
            if !known {
                return Err("Invalid command passed to redis.acl_check_cmd()".to_string());
            }
            Ok(true)
        })?,
    )?;
    for (name, value) in [("LOG_DEBUG", 0), ("LOG_VERBOSE", 1), ("LOG_NOTICE", 2), ("LOG_WARNING", 3)] {
        redis.raw_set(name, value)?;
    }
    for (name, value) in [("REPL_NONE", REPL_NONE), ("REPL_AOF", REPL_AOF), ("REPL_SLAVE", REPL_REPLICA), ("REPL_REPLICA", REPL_REPLICA)] {
        redis.raw_set(name, value)?;
    }
    redis.raw_set("REPL_ALL", REPL_ALL)?;
    redis.raw_set("REDIS_VERSION", crate::REDIS_VERSION)?;
    redis.raw_set("REDIS_VERSION_NUM", redis_version_num())?;
    lua.globals().raw_set("redis", redis)?;
    Ok(())
}

/// `0x00MMmmpp` of the Redis version we speak.
fn redis_version_num() -> i64 {
    let mut parts = crate::REDIS_VERSION.split('.').map(|p| p.parse::<i64>().unwrap_or(0));
    let (a, b, c) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a << 16) | (b << 8) | c
}

/// `lua_tonumber`: numbers, and strings Lua reads as numbers.
fn number(lua: &Lua, v: &Value) -> Option<f64> {
    lua.coerce_number(v.clone()).ok().flatten()
}

/// `lua_tolstring`: strings, and numbers as Lua prints them (`%.14g`); `None` for the rest.
fn lua_text(lua: &Lua, v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(_) | Value::Integer(_) | Value::Number(_) => {
            lua.coerce_string(v.clone()).ok().flatten().map(|s| s.as_bytes().to_vec())
        }
        _ => None,
    }
}

/// `redis.log(level, ...)`.
fn log(lua: &Lua, args: &[Value]) -> Result<(), String> {
    if args.len() < 2 {
        return Err("redis.log() requires two arguments or more.".to_string());
    }
    let Some(level) = (match &args[0] {
        Value::Integer(n) => Some(*n as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }) else {
        return Err("First argument must be a number (log level).".to_string());
    };
    let level = match level as i64 {
        0 => crate::log::Level::Debug,
        1 => crate::log::Level::Verbose,
        2 => crate::log::Level::Notice,
        3 => crate::log::Level::Warning,
        _ => return Err("Invalid debug level.".to_string()),
    };
    if !crate::log::enabled(level) {
        return Ok(());
    }
    let mut text = Vec::new();
    for (i, arg) in args[1..].iter().enumerate() {
        let Some(piece) = lua_text(lua, arg) else { continue };
        if i > 0 {
            text.push(b' ');
        }
        text.extend_from_slice(&piece);
    }
    crate::log::log(level, &String::from_utf8_lossy(&text));
    Ok(())
}

/// Why a `redis.call` argument list is unusable.
#[derive(Debug)]
enum ArgvError {
    Empty,
    BadType,
}

impl std::fmt::Display for ArgvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ArgvError::Empty => "Please specify at least one argument for this redis lib call",
            ArgvError::BadType => "Lua redis lib command arguments must be strings or integers",
        })
    }
}

/// Lua arguments to a command's argv: strings as they are, numbers as `%.17g`.
fn to_argv(args: &[Value]) -> Result<Vec<Bytes>, ArgvError> {
    if args.is_empty() {
        return Err(ArgvError::Empty);
    }
    args.iter()
        .map(|a| match a {
            Value::String(s) => Ok(Bytes::copy_from_slice(&s.as_bytes())),
            // Lua 5.1 numbers are doubles: Redis formats every one with %.17g (1e17 is
            // "1e+17"), including those mlua hands over as integers.
            Value::Integer(n) => Ok(Bytes::from(crate::util::format_double(*n as f64))),
            Value::Number(n) => Ok(Bytes::from(crate::util::format_double(*n))),
            _ => Err(ArgvError::BadType),
        })
        .collect()
}

/// Runs `f` with the run's host (`None` outside a run).
fn with_host<R>(lua: &Lua, f: impl FnOnce(&mut dyn super::ScriptHost) -> R) -> Option<R> {
    let host = lua.app_data_ref::<RunState>()?.host;
    // SAFETY: `host` is set by `ScriptEngine::run` from a live `&mut dyn ScriptHost` and
    // removed before that borrow ends; Lua runs on this thread only, and the RunState borrow
    // above is released before the host runs (it may call back into Lua app data).
    Some(f(unsafe { &mut *host }))
}

/// The shared body of `redis.call` and `redis.pcall`: `Ok(value)` or `Err(error table)`.
fn run_command(lua: &Lua, args: &[Value]) -> mlua::Result<Result<Value, Value>> {
    let argv = match to_argv(args) {
        Ok(argv) => argv,
        Err(e) => return Ok(Err(error_table(lua, &e.to_string())?)),
    };
    // One app-data lookup per call: this is the hot path of every script.
    let (host, resp, repl) = match lua.app_data_ref::<RunState>() {
        Some(run) => (run.host, run.resp, run.repl),
        None => return Ok(Err(error_table(lua, "redis.call() is only available while a script runs")?)),
    };
    // SAFETY: as in `with_host`: the pointer is valid for the whole run and the RunState
    // borrow is released.
    let reply = unsafe { &mut *host }.call(argv, resp, repl);
    if let Reply::Error(text) = &reply {
        return Ok(Err(error_table(lua, &format!("-{text}"))?));
    }
    Ok(Ok(reply_to_lua(lua, reply, resp)?))
}
