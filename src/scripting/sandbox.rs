//! The Lua state scripts run in, closed the way Redis 7.0 closes it.
//!
//! - Libraries: base, table, string, math, coroutine, and Redis's cjson, cmsgpack, struct and
//!   bit. No io, os, package/require, debug (captured by the error handler, then removed),
//!   print, dofile, loadfile, getfenv, setfenv, newproxy.
//! - Strict globals: reading an undefined global raises `Script attempted to access
//!   nonexistent global variable 'x'`; the globals table, every library table, their
//!   metatables and the string metatable are read-only (the patched Lua in vendor/lua-src
//!   raises `Attempt to modify a readonly table`, rawset and setmetatable included).
//! - No bytecode: the patched parser never undumps binary chunks.
//! - `pcall` turns Redis's error tables into their text (`luaRedisPcall`), and neither
//!   `pcall`, `xpcall` nor `coroutine.resume` can swallow SCRIPT KILL or SHUTDOWN.
//! - `math.random`/`math.randomseed` are Redis's lrand48 generator (see `rand.rs`).

use std::cell::Cell;
use std::os::raw::{c_char, c_int};

use bytes::Bytes;
use mlua::ffi;
use mlua::{Function, Lua, LuaOptions, StdLib, Table, Value, Variadic};

use super::lib_bit::{arg_error, lua_error};
use super::shim::string_error_fn;
use super::RunState;

extern "C-unwind" {
    fn lua_enablereadonlytable(state: *mut mlua::ffi::lua_State, idx: c_int, enabled: c_int);
    fn lua_isreadonlytable(state: *mut mlua::ffi::lua_State, idx: c_int) -> c_int;
}

/// Lua's own memory ceiling: a memory bomb fails its script with "not enough memory" long
/// before it could hurt the server.
pub const MEMORY_LIMIT: usize = 256 * 1024 * 1024;

/// Redis's error handler (eval.c): the error's position is the calling Lua line (one C level
/// and our own Lua helpers are skipped); a non-table error becomes `{err='ERR ..'}`.
const ERROR_HANDLER: &str = r#"
local dbg = debug
local type, tostring = type, tostring
__redis__err__handler = function(err)
  local level = 2
  local i = dbg.getinfo(level, 'nSl')
  if i and i.what == 'C' then
    level = 3
    i = dbg.getinfo(level, 'nSl')
  end
  -- Vermilion's own Lua helpers (chunks named "=[...]") are not the user's code.
  while i and i.source and i.source:sub(1, 2) == '=[' and level < 10 do
    level = level + 1
    i = dbg.getinfo(level, 'nSl')
  end
  if type(err) ~= 'table' then
    err = {err = 'ERR ' .. tostring(err)}
  end
  if i then
    err['source'] = i.source
    err['line'] = i.currentline
  end
  return err
end
"#;

/// Redis's strict-globals metatable (a modified strict.lua).
const STRICT_GLOBALS: &str = r#"
local dbg = debug
local mt = {}
setmetatable(_G, mt)
mt.__newindex = function (t, n, v)
  if dbg.getinfo(2) then
    local w = dbg.getinfo(2, "S").what
    if w ~= "main" and w ~= "C" then
      error("Script attempted to create global variable '"..tostring(n).."'", 2)
    end
  end
  rawset(t, n, v)
end
mt.__index = function (t, n)
  if dbg.getinfo(2) and dbg.getinfo(2, "S").what ~= "C" then
    error("Script attempted to access nonexistent global variable '"..tostring(n).."'", 2)
  end
  return rawget(t, n)
end
"#;

/// `xpcall` and `coroutine.resume` keep an aborted script (SCRIPT KILL, SHUTDOWN) aborted
/// whatever catches the error; `pcall` does the same in [`redis_pcall`].
const PROTECTED_CALLS: &str = r#"
local must_abort, caught = ...
local rawxpcall, resume = xpcall, coroutine.resume
local type, error, select = type, error, select
local function rethrow_abort(...)
  if must_abort() then error((select(2, ...)), 0) elseif (...) == false then caught() end
  return ...
end
xpcall = function(...) return rethrow_abort(rawxpcall(...)) end
coroutine.resume = function(co, ...)
  if type(co) ~= 'thread' then error("bad argument #1 to 'resume' (coroutine expected)", 2) end
  return rethrow_abort(resume(co, ...))
end
"#;

/// Where `redis_pcall` finds the abort check (a registry field).
const MUST_ABORT_KEY: &std::ffi::CStr = c"vermilion.must_abort";

/// `pcall` as Redis's `luaRedisPcall` (a C function, so the caller's frame stays visible):
/// an error table's `err` text becomes the error value; and an aborted script (SCRIPT KILL,
/// SHUTDOWN) stays aborted: the error is raised again.
unsafe extern "C-unwind" fn redis_pcall(state: *mut mlua::ffi::lua_State) -> c_int {
    use mlua::ffi;
    let argc = ffi::lua_gettop(state);
    if argc == 0 {
        // Redis's luaRedisPcall calls the slot below its placeholder, which is the
        // placeholder itself: false and this message.
        ffi::lua_pushboolean(state, 0);
        ffi::lua_pushstring(state, c"attempt to call a boolean value".as_ptr());
        return 2;
    }
    ffi::lua_pushboolean(state, 1);
    ffi::lua_insert(state, 1);
    if ffi::lua_pcall(state, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, MUST_ABORT_KEY.as_ptr());
        ffi::lua_call(state, 0, 1);
        let abort = ffi::lua_toboolean(state, -1) != 0;
        ffi::lua_settop(state, -2);
        if abort {
            // Nothing with a destructor lives in this frame.
            ffi::lua_error(state);
        }
        super::debugger::caught();
        ffi::lua_remove(state, 1);
        if ffi::lua_type(state, -1) == ffi::LUA_TTABLE {
            ffi::lua_getfield(state, -1, c"err".as_ptr());
            if ffi::lua_isstring(state, -1) != 0 {
                ffi::lua_replace(state, -2);
            } else {
                ffi::lua_settop(state, -2);
            }
        }
        ffi::lua_pushboolean(state, 0);
        ffi::lua_insert(state, 1);
    }
    ffi::lua_gettop(state)
}

/// Runs a compiled script under the error handler. Loaded before `PROTECTED_CALLS` wraps
/// `xpcall`: the runner's own call needs no abort check (the executor reads the watch when
/// the run ends), and the wrapper cost a Lua frame and a Rust callback per run.
const RUNNER: &str = r#"
local xpcall, handler, args = xpcall, __redis__err__handler, __redis__args
return function(f) args() return xpcall(f, handler) end
"#;

/// Runs a library's function with its keys and arguments under the error handler.
const FUNCTION_RUNNER: &str = r#"
local xpcall, handler, args = xpcall, __redis__err__handler, __redis__args
return function(f)
  local keys, argv = args()
  return xpcall(function() return f(keys, argv) end, handler)
end
"#;

/// Which engine a state serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// EVAL: KEYS and ARGV are globals.
    Eval,
    /// Functions: keys and arguments are the function's parameters; no KEYS/ARGV globals.
    Functions,
}

/// Builds a closed Lua state; returns it with the function that runs a script.
pub fn new_state(kind: Kind) -> mlua::Result<(Lua, Function)> {
    let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::DEBUG;
    // SAFETY: the debug library is loaded only to be captured by the error handler and the
    // strict-globals chunk, then removed from the globals before any script runs.
    let lua = unsafe { Lua::unsafe_new_with(libs, LuaOptions::default()) };
    let globals = lua.globals();
    for name in ["print", "dofile", "loadfile", "getfenv", "setfenv", "newproxy", "module", "require", "package", "io", "os"] {
        globals.raw_set(name, Value::Nil)?;
    }
    install_random(&lua)?;
    // SAFETY: each wrapper follows the Lua C API contract (see their comments).
    unsafe {
        watch_global(&lua, "tostring", watched_tostring)?;
        watch_global(&lua, "collectgarbage", watched_collectgarbage)?;
        watch_global(&lua, "gcinfo", watched_gcinfo)?;
        // Lua 5.1's own, reimplemented: no original to call.
        lua.globals().raw_set("setmetatable", lua.create_c_function(watched_setmetatable)?)?;
        let next = watch_global(&lua, "next", watched_next)?;
        // `pairs` hands out `next`: the watched one.
        let pairs = lua.exec_raw::<Function>(next, |state| ffi::lua_pushcclosure(state, watched_pairs, 1))?;
        lua.globals().raw_set("pairs", pairs)?;
    }
    super::api::install(&lua)?;
    super::libs::install(&lua)?;
    lua.load(ERROR_HANDLER).set_name("=[error handler]").exec()?;
    let must_abort = lua.create_function(|lua, ()| Ok(lua.app_data_ref::<RunState>().is_some_and(|r| r.active && r.watch.must_abort())))?;
    lua.set_named_registry_value(MUST_ABORT_KEY.to_str().unwrap_or_default(), must_abort.clone())?;
    // SAFETY: all three follow the Lua C API contract (see `eval_args` and `refill`).
    let args = match kind {
        Kind::Eval => {
            let (keys, argv) = (lua.create_table()?, lua.create_table()?);
            globals.raw_set("KEYS", &keys)?;
            globals.raw_set("ARGV", &argv)?;
            unsafe { lua.create_c_function(eval_args_closure)? }.call::<Function>((keys, argv))?
        }
        Kind::Functions => unsafe { lua.create_c_function(function_args)? },
    };
    globals.raw_set("__redis__args", args)?;
    let runner: Function = lua.load(if kind == Kind::Eval { RUNNER } else { FUNCTION_RUNNER }).set_name("=[runner]").call(())?;
    globals.raw_set("__redis__args", Value::Nil)?;
    if kind == Kind::Functions {
        // Redis's function engine keeps its error handler in the registry and has no
        // debugger or effects-replication switch in its `redis` table.
        globals.raw_set("__redis__err__handler", Value::Nil)?;
        let redis: Table = globals.raw_get("redis")?;
        for name in ["breakpoint", "debug", "replicate_commands"] {
            redis.raw_set(name, Value::Nil)?;
        }
    }
    // SAFETY: redis_pcall follows the Lua C API contract (see its comments).
    globals.raw_set("pcall", unsafe { lua.create_c_function(redis_pcall)? })?;
    let caught = lua.create_function(|_, ()| {
        super::debugger::caught();
        Ok(())
    })?;
    lua.load(PROTECTED_CALLS).set_name("=[protected calls]").call::<()>((must_abort, caught))?;
    lua.load(STRICT_GLOBALS).set_name("=[strict]").exec()?;
    globals.raw_set("debug", Value::Nil)?;
    protect_everything(&lua)?;
    super::convert::install_reply_fields(&lua)?;
    lua.set_memory_limit(MEMORY_LIMIT)?;
    Ok((lua, runner))
}

/// Replaces the global `name` with `wrapper`, a C closure holding the original as upvalue 1.
///
/// # Safety
/// `wrapper` must leave the stack as a C function returning its results would.
unsafe fn watch_global(lua: &Lua, name: &str, wrapper: ffi::lua_CFunction) -> mlua::Result<Function> {
    let globals = lua.globals();
    let original: Function = globals.raw_get(name)?;
    // SAFETY: one value (the original) is on the stack; it becomes the closure's upvalue and
    // the closure is the one result.
    let wrapped = unsafe { lua.exec_raw::<Function>(original, |state| ffi::lua_pushcclosure(state, wrapper, 1)) }?;
    globals.raw_set(name, wrapped.clone())?;
    Ok(wrapped)
}

/// Whether the value at `idx` prints as (and hashes by) its address.
unsafe fn addressed(state: *mut ffi::lua_State, idx: c_int) -> bool {
    matches!(
        ffi::lua_type(state, idx),
        ffi::LUA_TTABLE | ffi::LUA_TFUNCTION | ffi::LUA_TUSERDATA | ffi::LUA_TLIGHTUSERDATA | ffi::LUA_TTHREAD
    )
}

/// `next` (and so `pairs`): a table's keys that are tables, functions... sit where their
/// addresses hash, so the order they come in is not the script's: the run is marked
/// nondeterministic when one comes out. The original is called for the work itself.
unsafe extern "C-unwind" fn watched_next(state: *mut ffi::lua_State) -> c_int {
    // Checked here so that the error names `next` (no Rust value with a destructor lives in
    // this frame: the longjmp is safe).
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    let n = call_original(state);
    if n >= 1 && addressed(state, 1) {
        super::api::with_host(|host| host.nondeterministic());
    }
    n
}

/// Lua 5.1's `pairs`, handing out the watched `next` (its upvalue).
unsafe extern "C-unwind" fn watched_pairs(state: *mut ffi::lua_State) -> c_int {
    // No Rust value with a destructor lives in this frame: an argument error's longjmp is safe.
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_pushvalue(state, 1);
    ffi::lua_pushnil(state);
    3
}

/// `setmetatable` (Lua 5.1's own, checks and errors included) that marks the run
/// nondeterministic when the metatable has a `__mode`: what the collector clears from a weak
/// table depends on when it runs, not on the script.
unsafe extern "C-unwind" fn watched_setmetatable(state: *mut ffi::lua_State) -> c_int {
    // No Rust value with a destructor lives in this frame: the errors' longjmps are safe.
    let t = ffi::lua_type(state, 2);
    ffi::luaL_checktype(state, 1, ffi::LUA_TTABLE);
    if t != ffi::LUA_TNIL && t != ffi::LUA_TTABLE {
        ffi::luaL_argerror(state, 2, c"nil or table expected".as_ptr());
    }
    if ffi::luaL_getmetafield(state, 1, c"__metatable".as_ptr()) != ffi::LUA_TNIL {
        ffi::luaL_error(state, c"cannot change a protected metatable".as_ptr());
    }
    if t == ffi::LUA_TTABLE {
        ffi::lua_pushstring(state, c"__mode".as_ptr());
        ffi::lua_rawget(state, 2);
        let weak = ffi::lua_isnil(state, -1) == 0;
        ffi::lua_settop(state, -2);
        if weak {
            super::api::with_host(|host| host.nondeterministic());
        }
    }
    ffi::lua_settop(state, 2);
    ffi::lua_setmetatable(state, 1);
    1
}

/// Calls upvalue 1 (the original function) with this call's arguments, all results kept.
unsafe fn call_original(state: *mut ffi::lua_State) -> c_int {
    let nargs = ffi::lua_gettop(state);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, nargs, ffi::LUA_MULTRET);
    ffi::lua_gettop(state)
}

/// `tostring`: a table, function, thread or userdata without `__tostring` prints as its
/// address, which a replay of the script would not see again: the run is marked
/// nondeterministic (logged as its effects). The argument check comes first, here, so its
/// error names `tostring` as Lua's own does.
unsafe extern "C-unwind" fn watched_tostring(state: *mut ffi::lua_State) -> c_int {
    // No Rust value with a destructor lives in this frame: an argument error's longjmp is safe.
    ffi::luaL_checkany(state, 1);
    if addressed(state, 1) {
        if ffi::luaL_getmetafield(state, 1, c"__tostring".as_ptr()) != ffi::LUA_TNIL {
            ffi::lua_settop(state, -2);
        } else {
            super::api::with_host(|host| host.nondeterministic());
        }
    }
    call_original(state)
}

/// `collectgarbage`: its figures (and whether a step finished a cycle) depend on the Lua
/// state's history, not on the script: the run is marked nondeterministic. The options are
/// checked here first, so errors name `collectgarbage`.
unsafe extern "C-unwind" fn watched_collectgarbage(state: *mut ffi::lua_State) -> c_int {
    const OPTIONS: [*const c_char; 8] = [
        c"stop".as_ptr(),
        c"restart".as_ptr(),
        c"collect".as_ptr(),
        c"count".as_ptr(),
        c"step".as_ptr(),
        c"setpause".as_ptr(),
        c"setstepmul".as_ptr(),
        std::ptr::null(),
    ];
    ffi::luaL_checkoption(state, 1, c"collect".as_ptr(), OPTIONS.as_ptr());
    ffi::luaL_optinteger(state, 2, 0);
    super::api::with_host(|host| host.nondeterministic());
    call_original(state)
}

/// `gcinfo`: the Lua state's memory in KB (see `watched_collectgarbage`).
unsafe extern "C-unwind" fn watched_gcinfo(state: *mut ffi::lua_State) -> c_int {
    super::api::with_host(|host| host.nondeterministic());
    call_original(state)
}

/// `math.random` and `math.randomseed` on the per-run lrand48 state.
fn install_random(lua: &Lua) -> mlua::Result<()> {
    let math: Table = lua.globals().raw_get("math")?;
    let random = string_error_fn(lua, |lua, args: Variadic<Value>| {
        let r = match lua.app_data_mut::<RunState>().filter(|r| r.active) {
            Some(mut run) => run.rng.next_unit(),
            None => super::rand::Lrand48::default().next_unit(),
        };
        match args.len() {
            0 => Ok(r),
            1 => {
                let u = check_int(lua, &args, 0)?;
                if u < 1 {
                    return Err(arg_error(lua, 1, "interval is empty"));
                }
                Ok((r * u as f64).floor() + 1.0)
            }
            2 => {
                let l = check_int(lua, &args, 0)?;
                let u = check_int(lua, &args, 1)?;
                if l > u {
                    return Err(arg_error(lua, 2, "interval is empty"));
                }
                Ok((r * (u as f64 - l as f64 + 1.0)).floor() + l as f64)
            }
            _ => Err(lua_error(lua, "wrong number of arguments")),
        }
    })?;
    let randomseed = string_error_fn(lua, |lua, args: Variadic<Value>| {
        let seed = check_int(lua, &args, 0)?;
        if let Some(mut run) = lua.app_data_mut::<RunState>().filter(|r| r.active) {
            run.rng = super::rand::Lrand48::seeded(seed);
        }
        Ok(())
    })?;
    math.raw_set("random", random)?;
    math.raw_set("randomseed", randomseed)?;
    Ok(())
}

/// `luaL_checkint`: a number (or a numeric string), cast to int; errors as `luaL_argerror`
/// words them (the caller's position, the name the call site uses).
fn check_int(lua: &Lua, args: &[Value], i: usize) -> Result<i32, String> {
    match args.get(i).and_then(|v| lua.coerce_number(v.clone()).ok().flatten()) {
        Some(n) => Ok(n as i64 as i32),
        None => Err(arg_error(lua, i + 1, &format!("number expected, got {}", super::shim::type_name(args.get(i))))),
    }
}

/// Makes the globals, every table reachable from them and their metatables, and the string
/// metatable read-only (Redis's `luaSetTableProtectionRecursively`).
fn protect_everything(lua: &Lua) -> mlua::Result<()> {
    let string_mt = lua.load("return getmetatable('')").set_name("=[init]").call::<Value>(())?;
    // SAFETY: the closure only walks tables with the Lua C API, keeping the stack balanced.
    unsafe {
        lua.exec_raw::<()>((lua.globals(), string_mt), |state| {
            protect_recursively(state);
            mlua::ffi::lua_pop(state, 1);
            protect_recursively(state);
        })
    }
}

/// Makes `table`, everything under it and its metatables read-only.
pub fn protect(lua: &Lua, table: &Table) -> mlua::Result<()> {
    // SAFETY: as in `protect_everything`: one table pushed, walked, popped.
    unsafe {
        lua.exec_raw::<()>(table.clone(), |state| {
            protect_recursively(state);
            mlua::ffi::lua_pop(state, 1);
        })
    }
}

/// Switches the read-only mark of the table at `idx`.
///
/// # Safety
/// `idx` must be a valid index of a table on `state`'s stack.
pub unsafe fn set_readonly(state: *mut mlua::ffi::lua_State, idx: c_int, on: bool) {
    lua_enablereadonlytable(state, idx, on as c_int);
}

/// Protects the table on top of the stack and everything under it.
unsafe fn protect_recursively(state: *mut mlua::ffi::lua_State) {
    use mlua::ffi;
    if ffi::lua_type(state, -1) != ffi::LUA_TTABLE || lua_isreadonlytable(state, -1) != 0 {
        return;
    }
    lua_enablereadonlytable(state, -1, 1);
    if ffi::lua_checkstack(state, 3) == 0 {
        return;
    }
    ffi::lua_pushnil(state);
    while ffi::lua_next(state, -2) != 0 {
        if ffi::lua_type(state, -1) == ffi::LUA_TTABLE {
            protect_recursively(state);
        }
        ffi::lua_pop(state, 1);
    }
    if ffi::lua_getmetatable(state, -1) != 0 {
        protect_recursively(state);
        ffi::lua_pop(state, 1);
    }
}

thread_local! {
    /// The keys and arguments of the run being started (see [`with_run_args`]).
    static RUN_ARGS: Cell<(*const [Bytes], *const [Bytes])> = const { Cell::new((&[] as &[Bytes], &[] as &[Bytes])) };
}

/// Runs `f` (a call of the runner) with `keys` and `argv` as the run's arguments: the runner
/// turns them into Lua tables itself (`__redis__args`), inside its own protected call.
pub fn with_run_args<R>(keys: &[Bytes], argv: &[Bytes], f: impl FnOnce() -> R) -> R {
    RUN_ARGS.set((keys as *const [Bytes], argv as *const [Bytes]));
    let result = f();
    RUN_ARGS.set((&[] as &[Bytes], &[] as &[Bytes]));
    result
}

/// `__redis__args` of an EVAL state: sets the KEYS and ARGV globals for the run (the globals
/// table is opened just for that, as Redis does). The tables of the previous run are
/// refilled when they hold nothing but the new items (nothing survives a run: the globals
/// are read-only), so reuse is invisible, and a run allocates nothing for its arguments.
/// Both tables are ready before the globals open: making them can fail (out of memory),
/// and nothing may fail while the globals are writable.
///
/// The two tables are the closure's upvalues, the same as the globals (looking the globals
/// up by name hashed "KEYS" and "ARGV" on every run); a fresh table replaces both.
unsafe extern "C-unwind" fn eval_args(l: *mut ffi::lua_State) -> c_int {
    let (keys, argv) = RUN_ARGS.get();
    let mut fresh = [false; 2];
    for (i, items) in [&*keys, &*argv].into_iter().enumerate() {
        ffi::lua_pushvalue(l, ffi::lua_upvalueindex(i as c_int + 1));
        if !refill(l, items) {
            ffi::lua_pop(l, 1);
            push_strings(l, items);
            fresh[i] = true;
        }
    }
    // The stack holds KEYS's table, then ARGV's. Both names exist in the globals with
    // non-nil values, so these stores allocate nothing and meet no metamethod.
    if fresh[0] || fresh[1] {
        lua_enablereadonlytable(l, ffi::LUA_GLOBALSINDEX, 0);
    }
    for (upvalue, name, replace) in [(2, c"ARGV", fresh[1]), (1, c"KEYS", fresh[0])] {
        if replace {
            ffi::lua_pushvalue(l, -1);
            ffi::lua_replace(l, ffi::lua_upvalueindex(upvalue));
            ffi::lua_setfield(l, ffi::LUA_GLOBALSINDEX, name.as_ptr());
        } else {
            ffi::lua_pop(l, 1);
        }
    }
    if fresh[0] || fresh[1] {
        lua_enablereadonlytable(l, ffi::LUA_GLOBALSINDEX, 1);
    }
    0
}

/// Makes `eval_args` with the KEYS and ARGV tables (its two arguments) as its upvalues.
unsafe extern "C-unwind" fn eval_args_closure(l: *mut ffi::lua_State) -> c_int {
    ffi::lua_settop(l, 2);
    ffi::lua_pushcclosure(l, eval_args, 2);
    1
}

/// Refills the table on top of the stack with `items` when it is a writable table without
/// a metatable; false (the table left as it was found, or partly written) when it is not
/// that, or when it holds anything besides the new items (an earlier run's extra arguments,
/// keys a script added): every entry is counted, wherever it sits in the table.
///
/// # Safety
/// Called by Lua (a C function's guaranteed stack); a memory error longjmps over this frame,
/// which owns nothing.
unsafe fn refill(l: *mut ffi::lua_State, items: &[Bytes]) -> bool {
    if ffi::lua_type(l, -1) != ffi::LUA_TTABLE || lua_isreadonlytable(l, -1) != 0 {
        return false;
    }
    if ffi::lua_getmetatable(l, -1) != 0 {
        ffi::lua_pop(l, 1);
        return false;
    }
    fill(l, items);
    let mut entries = 0usize;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_pop(l, 1);
        entries += 1;
        if entries > items.len() {
            ffi::lua_pop(l, 1);
            return false;
        }
    }
    entries == items.len()
}

/// Pushes `items` as a new array of strings.
///
/// # Safety
/// As [`refill`].
unsafe fn push_strings(l: *mut ffi::lua_State, items: &[Bytes]) {
    ffi::lua_createtable(l, items.len().min(c_int::MAX as usize) as c_int, 0);
    fill(l, items);
}

/// Stores `items` at 1..n of the table on top of the stack.
///
/// # Safety
/// As [`refill`].
unsafe fn fill(l: *mut ffi::lua_State, items: &[Bytes]) {
    for (i, item) in items.iter().enumerate() {
        ffi::lua_pushlstring(l, item.as_ptr() as *const c_char, item.len());
        ffi::lua_rawseti(l, -2, (i + 1) as ffi::lua_Integer);
    }
}

/// `__redis__args` of a functions state: returns the keys and arguments tables.
unsafe extern "C-unwind" fn function_args(l: *mut ffi::lua_State) -> c_int {
    let (keys, argv) = RUN_ARGS.get();
    push_strings(l, &*keys);
    push_strings(l, &*argv);
    2
}
