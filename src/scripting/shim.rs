//! Lua functions written in Rust whose errors reach Lua as plain Lua values.
//!
//! mlua raises a Rust callback's `Err` as a userdata, but scripts (and Redis's C libraries)
//! expect error values to be strings (`pcall(cjson.decode, '{')` gives the message itself) or
//! Redis's error tables (`redis.call`). So the Rust side returns `true, results...` or
//! `false, error value`, and a small C function in front of it (a closure holding the Rust
//! function as upvalue) returns the results or raises the value with `lua_error`. Being a C
//! function, it also keeps the caller's frame visible to the error handler even when the
//! script tail-calls it (`return redis.call(...)`), as Redis's own C functions do.

use std::os::raw::c_int;

use mlua::{ffi, FromLuaMulti, Function, IntoLuaMulti, Lua, MultiValue, Value};

/// Calls upvalue 1 with the arguments; it returns `ok, ...`.
unsafe extern "C-unwind" fn raise_on_failure(state: *mut ffi::lua_State) -> c_int {
    let nargs = ffi::lua_gettop(state);
    ffi::lua_pushvalue(state, ffi::lua_upvalueindex(1));
    ffi::lua_insert(state, 1);
    ffi::lua_call(state, nargs, ffi::LUA_MULTRET);
    let n = ffi::lua_gettop(state);
    if n == 0 {
        return 0;
    }
    if ffi::lua_toboolean(state, 1) == 0 {
        ffi::lua_settop(state, 2);
        // No Rust value with a destructor lives in this frame: the longjmp is safe.
        ffi::lua_error(state)
    }
    n - 1
}

/// Wraps `raw` (returning `ok, ...`) in [`raise_on_failure`].
pub fn raising(lua: &Lua, raw: Function) -> mlua::Result<Function> {
    // SAFETY: one value (the function) is on the stack; it becomes the closure's upvalue and
    // the closure is the one result.
    unsafe {
        lua.exec_raw::<Function>(raw, |state| {
            ffi::lua_pushcclosure(state, raise_on_failure, 1);
        })
    }
}

/// `luaL_typename` of an argument, with "no value" for a missing one (argument errors).
pub fn type_name(v: Option<&Value>) -> &'static str {
    match v {
        None => "no value",
        Some(Value::Nil) => "nil",
        Some(Value::Boolean(_)) => "boolean",
        Some(Value::Integer(_) | Value::Number(_)) => "number",
        Some(Value::String(_)) => "string",
        Some(Value::Table(_)) => "table",
        Some(Value::Function(_)) => "function",
        Some(Value::Thread(_)) => "thread",
        Some(_) => "userdata",
    }
}

fn ok_values<R: IntoLuaMulti>(lua: &Lua, r: R) -> mlua::Result<MultiValue> {
    let mut values = r.into_lua_multi(lua)?;
    values.push_front(Value::Boolean(true));
    Ok(values)
}

/// Makes a Lua function from `f`; an `Err(message)` raises `message` as a Lua string, with no
/// position (what `luaL_error` in a C library function gives).
pub fn string_error_fn<A, R, F>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    A: FromLuaMulti,
    R: IntoLuaMulti,
    F: Fn(&Lua, A) -> Result<R, String> + 'static,
{
    raising_fn(lua, f, |lua, msg| Ok(Value::String(lua.create_string(msg)?)))
}

/// Like [`string_error_fn`], but an `Err(message)` is raised as Redis's error table
/// `{err="ERR message"}` (what the `redis.*` functions raise: `pcall` turns it back into the
/// text, a script that lets it through fails with exactly that error).
pub fn table_error_fn<A, R, F>(lua: &Lua, f: F) -> mlua::Result<Function>
where
    A: FromLuaMulti,
    R: IntoLuaMulti,
    F: Fn(&Lua, A) -> Result<R, String> + 'static,
{
    raising_fn(lua, f, |lua, msg| super::convert::error_table(lua, &msg))
}

/// `f` behind [`raise_on_failure`], its `Err` turned into a Lua value by `error_value`.
fn raising_fn<A, R, F>(lua: &Lua, f: F, error_value: fn(&Lua, String) -> mlua::Result<Value>) -> mlua::Result<Function>
where
    A: FromLuaMulti,
    R: IntoLuaMulti,
    F: Fn(&Lua, A) -> Result<R, String> + 'static,
{
    let raw = lua.create_function(move |lua, args: A| match f(lua, args) {
        Ok(r) => ok_values(lua, r),
        Err(msg) => Ok(MultiValue::from_vec(vec![Value::Boolean(false), error_value(lua, msg)?])),
    })?;
    raising(lua, raw)
}
