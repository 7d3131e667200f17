//! The `redis` table scripts see: call, pcall, error_reply, status_reply, sha1hex, log,
//! setresp, replicate_commands, set_repl, breakpoint, debug, acl_check_cmd and the constants,
//! with Redis 7.0's argument checks and error texts.
//!
//! `redis.call` and `redis.pcall` hand the command to the executor through the run's
//! [`ScriptHost`](super::ScriptHost); the reply comes back converted by `convert.rs`.
//! `redis.call` raises an error reply as Redis's error table; `redis.pcall` returns it.

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::c_int;

use bytes::Bytes;
use mlua::ffi::{self, lua_State};
use mlua::{Lua, Value, Variadic};

use super::convert::error_table;
use super::names::NameCache;
use super::shim::table_error_fn;
use super::ScriptHost;
use crate::protocol::{ProtocolVersion, Reply};
use crate::spec::CommandSpec;

pub const REPL_NONE: i64 = 0;
pub const REPL_AOF: i64 = 1;
pub const REPL_REPLICA: i64 = 2;
pub const REPL_ALL: i64 = 3;

pub fn install(lua: &Lua) -> mlua::Result<()> {
    let redis = lua.create_table()?;
    // SAFETY: both follow the Lua C API contract (see `call`).
    redis.raw_set("call", unsafe { lua.create_c_function(redis_call)? })?;
    redis.raw_set("pcall", unsafe { lua.create_c_function(redis_pcall)? })?;
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
            update_active(|a| a.resp = resp);
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
            // lua_tonumber: what is not a number is 0 (REPL_NONE), as in Redis.
            let flags = number(lua, &args[0]).map(|n| n as i64).unwrap_or(0);
            if flags & !(REPL_AOF | REPL_REPLICA) != 0 {
                return Err("Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.".to_string());
            }
            update_active(|a| a.repl = flags as u8);
            Ok(())
        })?,
    )?;
    // Outside a debugging session both do nothing (breakpoint returns false).
    // SAFETY: both follow the Lua C API contract (see debugger/inspect.rs).
    redis.raw_set("breakpoint", unsafe { lua.create_c_function(super::debugger::redis_breakpoint)? })?;
    redis.raw_set("debug", unsafe { lua.create_c_function(super::debugger::redis_debug)? })?;
    redis.raw_set(
        "acl_check_cmd",
        table_error_fn(lua, |_, args: Variadic<Value>| {
            let argv = to_argv(&args).map_err(|e| e.to_string())?;
            if argv.is_empty() {
                return Err("Please specify at least one argument for this redis lib call".to_string());
            }
            with_host(|host| host.acl_check_cmd(&argv))
                .flatten()
                .ok_or_else(|| "Invalid command passed to redis.acl_check_cmd()".to_string())
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

/// The running script's side of the bridge: set by `Run::execute` for the whole run.
#[derive(Clone, Copy)]
pub(crate) struct Active {
    /// The executor's side; valid while this is installed (see [`activate`]).
    pub host: *mut dyn ScriptHost,
    /// `redis.setresp`: the protocol commands answer in.
    pub resp: ProtocolVersion,
    /// `redis.set_repl`: where the next writes' effects go.
    pub repl: u8,
}

// One Lua run at a time on the executor thread: EVAL and FCALL never nest, except another
// client's, run from a stop of a YES debugging session (in another Lua state): `activate`
// and `deactivate` set the outer run aside and back.
thread_local! {
    static ACTIVE: Cell<Option<Active>> = const { Cell::new(None) };
    /// The reply `redis.call` is pushing to Lua. It lives here rather than in a Rust frame:
    /// pushing can raise a Lua memory error, whose longjmp must skip only frames that own
    /// nothing. A reply left by such a jump is dropped by the next call or at the run's end.
    static PENDING: UnsafeCell<Option<Reply>> = const { UnsafeCell::new(None) };
    /// A panic inside a command: it resumes when the run ends, outside Lua.
    static PANIC: Cell<Option<Box<dyn std::any::Any + Send>>> = const { Cell::new(None) };
}

/// Installs `host` for a run (with RESP2 and REPL_ALL); the result goes to [`deactivate`].
///
/// # Safety
/// `host` must stay valid and otherwise unused until [`deactivate`] is called.
pub(crate) unsafe fn activate(host: *mut dyn ScriptHost) -> Option<Active> {
    ACTIVE.replace(Some(Active { host, resp: ProtocolVersion::Resp2, repl: REPL_ALL as u8 }))
}

/// Ends a run: restores what [`activate`] returned and gives back the run's final protocol.
/// A panic raised inside one of its commands resumes here, outside Lua.
pub(crate) fn deactivate(previous: Option<Active>) -> ProtocolVersion {
    let resp = ACTIVE.replace(previous).map_or(ProtocolVersion::Resp2, |a| a.resp);
    set_pending(None);
    if let Some(payload) = PANIC.take() {
        std::panic::resume_unwind(payload);
    }
    resp
}

fn update_active(f: impl FnOnce(&mut Active)) {
    if let Some(mut active) = ACTIVE.get() {
        f(&mut active);
        ACTIVE.set(Some(active));
    }
}

/// Runs `f` with the run's host (`None` outside a run).
pub(crate) fn with_host<R>(f: impl FnOnce(&mut dyn ScriptHost) -> R) -> Option<R> {
    let host = ACTIVE.get()?.host;
    // SAFETY: see `activate`; callers are Lua callbacks and the hook, which never run inside
    // another use of the host.
    Some(f(unsafe { &mut *host }))
}

unsafe extern "C-unwind" fn redis_call(l: *mut lua_State) -> c_int {
    call(l, true)
}

unsafe extern "C-unwind" fn redis_pcall(l: *mut lua_State) -> c_int {
    call(l, false)
}

/// `redis.call` (`raise`) and `redis.pcall`: the hot path of every script, so a Lua C
/// function reading its arguments off the stack and pushing the reply straight onto it.
/// Being a C function, it also keeps the caller's frame visible to the error handler even
/// when the script tail-calls it (`return redis.call(...)`), as Redis's own is.
unsafe fn call(l: *mut lua_State, raise: bool) -> c_int {
    // After a panic inside a command the executor's state is suspect: no more commands run
    // (the panic resumes when the script ends), even if the script caught the error.
    if panicked() {
        ffi::lua_pushstring(l, c"ERR internal error".as_ptr());
        ffi::lua_error(l);
    }
    // Everything that owns memory lives and dies inside `run_command`.
    let resp3 = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_command(l))) {
        Ok(resp3) => resp3,
        Err(payload) => {
            PANIC.set(Some(payload));
            ffi::lua_pushstring(l, c"ERR internal error".as_ptr());
            ffi::lua_error(l)
        }
    };
    // The arguments are copied: off the stack they go, as Redis pops them, so the reply has
    // Lua's 8,000 slots whatever the argument count (`unpack` of 7,999 values).
    ffi::lua_settop(l, 0);
    let slot = PENDING.with(|p| p.get());
    let failed = match &*slot {
        Some(reply) => {
            super::convert::push_reply(l, reply, resp3);
            reply.is_error()
        }
        None => {
            ffi::lua_pushnil(l);
            false
        }
    };
    set_pending(None);
    if failed && raise {
        ffi::lua_error(l);
    }
    1
}

/// Whether a command of this run panicked (the payload stays for `deactivate`).
fn panicked() -> bool {
    PANIC.with(|p| {
        let payload = p.take();
        let found = payload.is_some();
        p.set(payload);
        found
    })
}

fn set_pending(value: Option<Reply>) {
    // SAFETY: references into the slot live only inside `call`, between its own writes.
    PENDING.with(|p| *unsafe { &mut *p.get() } = value);
}

/// Runs the command whose argv is on the stack; leaves its reply (or the argument error) in
/// `PENDING`. Returns whether the reply converts by RESP3.
unsafe fn run_command(l: *mut lua_State) -> bool {
    let mut argv = ARGV.take();
    let (reply, resp3) = match command_argv(l, &mut argv) {
        Err(e) => {
            super::debugger::log_error(&e.text()[4..]);
            (Reply::Error(e.text().into()), false)
        }
        Ok(cached) => match ACTIVE.get() {
            None => (Reply::error("ERR redis.call() is only available while a script runs"), false),
            Some(active) => {
                // SAFETY: see `activate`.
                let reply = (*active.host).call(&mut argv, cached, active.resp, active.repl);
                (reply, active.resp == ProtocolVersion::Resp3)
            }
        },
    };
    argv.clear();
    ARGV.set(argv);
    set_pending(Some(reply));
    resp3
}

thread_local! {
    /// The argument vector of `redis.call`, kept between calls (its allocation, not its
    /// contents).
    static ARGV: Cell<Vec<Bytes>> = const { Cell::new(Vec::new()) };
    /// The last commands scripts resolved (those without subcommands), by the name as the
    /// script spelled it, with that name as the `Bytes` a later `argv[0]` clones instead of
    /// copying (an allocation and a free per call): static when spelled as the command table
    /// spells it (lowercase), shared otherwise ('INCR'), so a clone allocates nothing.
    static COMMANDS: RefCell<NameCache<(Bytes, &'static CommandSpec), 8>> = const { RefCell::new(NameCache::new()) };
}

/// Remembers that `spelled` (a script's `argv[0]`) resolves to `cmd`, a command without
/// subcommands (the caller's check: a subcommand depends on more than the name).
pub fn remember_command(cmd: &'static CommandSpec, spelled: &Bytes) {
    let name = if spelled[..] == *cmd.name.as_bytes() { Bytes::from_static(cmd.name.as_bytes()) } else { spelled.clone() };
    COMMANDS.with(|c| c.borrow_mut().insert(spelled, (name, cmd)));
}

/// `argv[0]` for the name `arg`, with the command it resolved to when remembered (then the
/// name is a clone of the remembered one), else a copy.
fn command_name_arg(arg: &[u8]) -> (Bytes, Option<&'static CommandSpec>) {
    match COMMANDS.with(|c| c.borrow().get(arg).map(|(name, cmd)| (name.clone(), *cmd))) {
        Some((name, cmd)) => (name, Some(cmd)),
        None => (Bytes::copy_from_slice(arg), None),
    }
}

/// Why a `redis.call` argument list is unusable.
#[derive(Debug)]
enum ArgvError {
    Empty,
    BadType,
}

impl ArgvError {
    fn text(&self) -> &'static str {
        match self {
            ArgvError::Empty => "ERR Please specify at least one argument for this redis lib call",
            ArgvError::BadType => "ERR Lua redis lib command arguments must be strings or integers",
        }
    }
}

impl std::fmt::Display for ArgvError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text()[4..])
    }
}

/// The Lua arguments on the stack as a command's argv: strings as they are, numbers as
/// `%.17g` (Lua 5.1 numbers are doubles: 1e17 is "1e+17", as Redis formats every one).
/// Returns the command a remembered name resolves to (see `COMMANDS`).
unsafe fn command_argv(l: *mut lua_State, argv: &mut Vec<Bytes>) -> Result<Option<&'static CommandSpec>, ArgvError> {
    let n = ffi::lua_gettop(l);
    if n == 0 {
        return Err(ArgvError::Empty);
    }
    argv.reserve(n as usize);
    let mut cached = None;
    for i in 1..=n {
        match ffi::lua_type(l, i) {
            ffi::LUA_TSTRING => {
                let mut len = 0;
                // A string argument: no conversion, so nothing allocated or raised.
                let p = ffi::lua_tolstring(l, i, &mut len);
                let arg = std::slice::from_raw_parts(p as *const u8, len);
                if i == 1 {
                    let (name, cmd) = command_name_arg(arg);
                    argv.push(name);
                    cached = cmd;
                } else {
                    argv.push(Bytes::copy_from_slice(arg));
                }
            }
            ffi::LUA_TNUMBER => {
                let mut buf = [0u8; 64];
                argv.push(Bytes::copy_from_slice(crate::util::format_double_into(ffi::lua_tonumber(l, i), &mut buf)));
            }
            _ => return Err(ArgvError::BadType),
        }
    }
    Ok(cached)
}

/// `redis.acl_check_cmd`'s arguments (same rules as `redis.call`'s).
fn to_argv(args: &[Value]) -> Result<Vec<Bytes>, ArgvError> {
    if args.is_empty() {
        return Err(ArgvError::Empty);
    }
    args.iter()
        .map(|a| match a {
            Value::String(s) => Ok(Bytes::copy_from_slice(&s.as_bytes())),
            Value::Integer(n) => Ok(Bytes::from(crate::util::format_double(*n as f64))),
            Value::Number(n) => Ok(Bytes::from(crate::util::format_double(*n))),
            _ => Err(ArgvError::BadType),
        })
        .collect()
}
