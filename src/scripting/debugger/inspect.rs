//! What the debugger reads off the stopped script and shows: locals (`print`), frames
//! (`trace`), `eval` and `redis` run from a stop, `redis.debug`/`redis.breakpoint`, and
//! Redis's human forms of Lua values and of command replies.

use std::ffi::{c_int, CStr};
use std::time::Instant;

use bytes::Bytes;
use mlua::ffi::{self, lua_State};
use mlua::Lua;

use super::{with, MAX_VALUES_DEPTH};

/// The stack level of the stopped script's function inside [`with_stack`]'s protected call
/// (level 0 is that call's own C function).
const SCRIPT_LEVEL: c_int = 1;

/// Runs `f` on the raw state in a protected call (a Lua error inside is caught), from the
/// hook: the script's frames are below it.
pub(super) fn with_stack(lua: &Lua, f: impl FnOnce(*mut lua_State)) -> Option<()> {
    // SAFETY: `f` follows the Lua C API contract: it balances the stack it uses.
    let _ = unsafe { lua.exec_raw::<()>((), f) };
    Some(())
}

fn log(line: impl Into<Vec<u8>>) {
    with(|l| l.log(line));
}

fn log_value(state: *mut lua_State, prefix: &[u8]) {
    let mut s = prefix.to_vec();
    // SAFETY: the value is on top of the stack; a dump pushes two slots per nesting level.
    unsafe {
        if ffi::lua_checkstack(state, 2 * MAX_VALUES_DEPTH as c_int + 4) == 0 {
            return;
        }
        cat_value(state, -1, 0, &mut s);
    }
    with(|l| l.log_max_len(s));
}

/// Calls `f` with the name of each local of the frame `ar`, its value on top of the stack
/// (popped after); stops when `f` returns true, and says whether it did.
///
/// # Safety
/// `ar` must come from `lua_getstack` on `state`.
unsafe fn for_each_local(state: *mut lua_State, ar: &ffi::lua_Debug, mut f: impl FnMut(&[u8]) -> bool) -> bool {
    let mut i = 1;
    loop {
        let local = ffi::lua_getlocal(state, ar, i);
        if local.is_null() {
            return false;
        }
        i += 1;
        let stop = f(CStr::from_ptr(local).to_bytes());
        ffi::lua_pop(state, 1);
        if stop {
            return true;
        }
    }
}

/// `print <var>`: the first local of that name from the current frame outwards, else the
/// globals KEYS and ARGV.
pub(super) fn print_var(state: *mut lua_State, name: &[u8]) {
    // SAFETY: standard debug API use; every pushed value is popped.
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        let mut level = 0;
        while ffi::lua_getstack(state, level, &mut ar) != 0 {
            level += 1;
            // The script's frames only (Redis calls the script from C; here a Lua runner
            // calls it, whose locals are not the script's).
            ffi::lua_getinfo(state, c"S".as_ptr(), &mut ar);
            if !is_script_frame(&ar) {
                continue;
            }
            let found = for_each_local(state, &ar, |local| {
                let hit = local == name;
                if hit {
                    log_value(state, b"<value> ");
                }
                hit
            });
            if found {
                return;
            }
        }
        if name == b"ARGV" || name == b"KEYS" {
            let global = if name == b"ARGV" { c"ARGV" } else { c"KEYS" };
            ffi::lua_getfield(state, ffi::LUA_GLOBALSINDEX, global.as_ptr());
            log_value(state, b"<value> ");
            ffi::lua_pop(state, 1);
        } else {
            log("No such variable.");
        }
    }
}

/// `print`: every local of the current frame.
pub(super) fn print_all(state: *mut lua_State) {
    let mut vars = 0;
    // SAFETY: as in `print_var`.
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        if ffi::lua_getstack(state, SCRIPT_LEVEL, &mut ar) != 0 {
            for_each_local(state, &ar, |name| {
                if !name.windows(12).any(|w| w == b"(*temporary)") {
                    let mut prefix = b"<value> ".to_vec();
                    prefix.extend_from_slice(name);
                    prefix.extend_from_slice(b" = ");
                    log_value(state, &prefix);
                    vars += 1;
                }
                false
            });
        }
    }
    if vars == 0 {
        log("No local variables in the current context.");
    }
}

/// Whether the frame `ar` (after `lua_getinfo` "S") runs the script's code.
fn is_script_frame(ar: &ffi::lua_Debug) -> bool {
    // SAFETY: lua_getinfo filled short_src with a NUL-terminated string.
    let short_src = unsafe { CStr::from_ptr(ar.short_src.as_ptr()) }.to_bytes();
    short_src.windows(11).any(|w| w == b"user_script")
}

/// `trace`: the script's frames, innermost first.
pub(super) fn trace(state: *mut lua_State) {
    // SAFETY: standard debug API use.
    unsafe {
        let mut ar: ffi::lua_Debug = std::mem::zeroed();
        let mut level = SCRIPT_LEVEL;
        while ffi::lua_getstack(state, level, &mut ar) != 0 {
            ffi::lua_getinfo(state, c"Snl".as_ptr(), &mut ar);
            if is_script_frame(&ar) {
                let name = if ar.name.is_null() { "top level".to_string() } else { CStr::from_ptr(ar.name).to_string_lossy().into_owned() };
                let place = if level == SCRIPT_LEVEL { "In" } else { "From" };
                log(format!("{place} {name}:"));
                let line = ar.currentline;
                with(|l| l.log_source_line(line));
            }
            level += 1;
        }
        if level == SCRIPT_LEVEL {
            log("<error> Can't retrieve Lua stack.");
        }
    }
}

/// `eval <code>`: the code as an expression (`return ...`), else as a statement, in a frame
/// of its own. It runs in a Lua thread of its own with a count hook: hooks are off inside
/// the debugger's hook, and an endless `eval` would hold the executor (Redis's would hold
/// only its forked child, or the server in SYNC mode).
pub(super) fn eval(state: *mut lua_State, argv: &[Bytes]) {
    let code = argv[1..].join(&b' ');
    let expr = [b"return ".as_slice(), &code].concat();
    let limit = with(|l| l.time_limit_ms).unwrap_or(5000);
    // SAFETY: standard API use; each stack is balanced on every path.
    unsafe {
        let thread = ffi::lua_newthread(state);
        ffi::lua_sethook(thread, Some(eval_hook), ffi::LUA_MASKCOUNT, 10_000);
        let name = c"@ldb_eval".as_ptr();
        let loaded = ffi::luaL_loadbuffer(thread, expr.as_ptr() as *const _, expr.len(), name) == 0 || {
            ffi::lua_pop(thread, 1);
            ffi::luaL_loadbuffer(thread, code.as_ptr() as *const _, code.len(), name) == 0
        };
        if loaded {
            EVAL_DEADLINE.set(Some(Instant::now() + std::time::Duration::from_millis(limit)));
            let status = ffi::lua_pcall(thread, 0, 1, 0);
            EVAL_DEADLINE.set(None);
            if status == 0 {
                log_value(thread, b"<retval> ");
                ffi::lua_pop(thread, 1);
            } else {
                log_error_on_top(thread);
            }
        } else {
            log_error_on_top(thread);
        }
        ffi::lua_pop(state, 1);
    }
}

thread_local! {
    /// When the running `eval` must stop.
    static EVAL_DEADLINE: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// The count hook of `eval`'s thread: past the deadline it raises (nothing is owned here
/// for the error's jump to skip).
unsafe extern "C-unwind" fn eval_hook(state: *mut lua_State, _ar: *mut ffi::lua_Debug) {
    if EVAL_DEADLINE.get().is_some_and(|d| Instant::now() >= d) {
        // From now on every instruction raises: a `pcall` in the code cannot keep it going.
        ffi::lua_sethook(state, Some(eval_hook), ffi::LUA_MASKCOUNT, 1);
        ffi::lua_pushstring(state, c"eval ran past busy-reply-threshold and was stopped".as_ptr());
        ffi::lua_error(state);
    }
}

/// Logs the error message on top of the stack and pops it.
///
/// # Safety
/// A value must be on top of the stack.
unsafe fn log_error_on_top(state: *mut lua_State) {
    let mut len = 0;
    let p = ffi::lua_tolstring(state, -1, &mut len);
    let mut line = b"<error> ".to_vec();
    if !p.is_null() {
        line.extend_from_slice(std::slice::from_raw_parts(p as *const u8, len));
    }
    log(line);
    ffi::lua_pop(state, 1);
}

/// `redis <command>`: runs it through `redis.call` with stepping on, so the command and its
/// reply are shown.
pub(super) fn redis_command(state: *mut lua_State, argv: &[Bytes]) {
    // SAFETY: standard API use; the stack is balanced.
    unsafe {
        if ffi::lua_checkstack(state, argv.len() as c_int + 1) == 0 {
            log("<reply> \"max lua stack reached\"");
            return;
        }
        ffi::lua_getfield(state, ffi::LUA_GLOBALSINDEX, c"redis".as_ptr());
        ffi::lua_getfield(state, -1, c"call".as_ptr());
        for arg in &argv[1..] {
            ffi::lua_pushlstring(state, arg.as_ptr() as *const _, arg.len());
        }
        with(|l| l.step = true);
        ffi::lua_pcall(state, argv.len() as c_int - 1, 1, 0);
        with(|l| l.step = false);
        ffi::lua_pop(state, 2);
    }
}

/// Appends Redis's human form of the value at `idx` (`ldbCatStackValue`): strings quoted,
/// tables as `{1; 2}` (arrays) or `{[k]=v; ...}`, functions and the like by address.
///
/// # Safety
/// `idx` must be a valid negative (top-relative) index.
unsafe fn cat_value(state: *mut lua_State, idx: c_int, level: usize, s: &mut Vec<u8>) {
    if level == MAX_VALUES_DEPTH {
        s.extend_from_slice(b"<max recursion level reached! Nested table?>");
        return;
    }
    let level = level + 1;
    let t = ffi::lua_type(state, idx);
    match t {
        ffi::LUA_TSTRING => {
            let mut len = 0;
            let p = ffi::lua_tolstring(state, idx, &mut len);
            s.extend_from_slice(crate::util::sds_repr(std::slice::from_raw_parts(p as *const u8, len)).as_bytes());
        }
        ffi::LUA_TBOOLEAN => s.extend_from_slice(if ffi::lua_toboolean(state, idx) != 0 { b"true" } else { b"false" }),
        ffi::LUA_TNUMBER => s.extend_from_slice(crate::util::format_g(ffi::lua_tonumber(state, idx), 6).as_bytes()),
        ffi::LUA_TNIL => s.extend_from_slice(b"nil"),
        ffi::LUA_TTABLE => {
            let mut expected = 1.0;
            let mut is_array = true;
            let (mut array, mut full) = (Vec::new(), Vec::new());
            ffi::lua_pushnil(state);
            while ffi::lua_next(state, idx - 1) != 0 {
                if is_array && (ffi::lua_type(state, -2) != ffi::LUA_TNUMBER || ffi::lua_tonumber(state, -2) != expected) {
                    is_array = false;
                }
                cat_value(state, -1, level, &mut array);
                array.extend_from_slice(b"; ");
                full.push(b'[');
                cat_value(state, -2, level, &mut full);
                full.extend_from_slice(b"]=");
                cat_value(state, -1, level, &mut full);
                full.extend_from_slice(b"; ");
                ffi::lua_pop(state, 1);
                expected += 1.0;
            }
            let chosen = if is_array { &mut array } else { &mut full };
            if !chosen.is_empty() {
                chosen.truncate(chosen.len() - 2);
            }
            s.push(b'{');
            s.extend_from_slice(chosen);
            s.push(b'}');
        }
        ffi::LUA_TFUNCTION | ffi::LUA_TUSERDATA | ffi::LUA_TTHREAD | ffi::LUA_TLIGHTUSERDATA => {
            let p = ffi::lua_topointer(state, idx);
            let name = match t {
                ffi::LUA_TFUNCTION => "function",
                ffi::LUA_TUSERDATA => "userdata",
                ffi::LUA_TTHREAD => "thread",
                _ => "light-userdata",
            };
            s.extend_from_slice(format!("\"{name}@{p:p}\"").as_bytes());
        }
        _ => s.extend_from_slice(b"\"<unknown-lua-type>\""),
    }
}

/// `redis.debug(...)`: logs its arguments (`<debug> line N: a, b`) during a session.
///
/// # Safety
/// A Lua C function.
pub unsafe extern "C-unwind" fn redis_debug(state: *mut lua_State) -> c_int {
    let Some(line) = with(|l| l.current) else { return 0 };
    let argc = ffi::lua_gettop(state);
    let mut s = format!("<debug> line {line}: ").into_bytes();
    for i in 0..argc {
        cat_value(state, -argc + i, 0, &mut s);
        if i + 1 != argc {
            s.extend_from_slice(b", ");
        }
    }
    with(|l| l.log(s));
    0
}

/// `redis.breakpoint()`: during a session, stops at the next line (true); else false.
///
/// # Safety
/// A Lua C function.
pub unsafe extern "C-unwind" fn redis_breakpoint(state: *mut lua_State) -> c_int {
    let on = with(|l| l.luabp = true).is_some();
    ffi::lua_pushboolean(state, c_int::from(on));
    1
}

/// Appends Redis's human form of the RESP reply `p` (`ldbRedisProtocolToHuman`); returns
/// the bytes it used.
pub(super) fn protocol_to_human(p: &[u8], o: &mut Vec<u8>) -> usize {
    let line_end = |from: usize| p[from..].windows(2).position(|w| w == b"\r\n").map_or(p.len(), |i| from + i);
    let Some(&kind) = p.first() else { return 0 };
    let end = line_end(1);
    let header = &p[1.min(p.len())..end];
    let number = || std::str::from_utf8(header).ok().and_then(|s| s.parse::<i64>().ok()).unwrap_or(0);
    let after = (end + 2).min(p.len());
    match kind {
        b':' => {
            o.extend_from_slice(header);
            after
        }
        b'$' => {
            let len = number();
            if len < 0 {
                o.extend_from_slice(b"NULL");
                return after;
            }
            let body_end = (after + len as usize).min(p.len());
            o.extend_from_slice(crate::util::sds_repr(&p[after..body_end]).as_bytes());
            (body_end + 2).min(p.len())
        }
        b'+' | b'-' => {
            o.extend_from_slice(crate::util::sds_repr(&p[..end]).as_bytes());
            after
        }
        b'*' | b'~' | b'%' => {
            let n = number();
            if kind == b'*' && n < 0 {
                o.extend_from_slice(b"NULL");
                return after;
            }
            let (open, close) = match kind {
                b'*' => (&b"["[..], b"]"),
                b'~' => (&b"~("[..], b")"),
                _ => (&b"{"[..], b"}"),
            };
            o.extend_from_slice(open);
            let mut at = after;
            for j in 0..n.max(0) {
                at += protocol_to_human(&p[at..], o);
                if kind == b'%' {
                    o.extend_from_slice(b" => ");
                    at += protocol_to_human(&p[at..], o);
                }
                if j != n - 1 {
                    o.push(b',');
                }
            }
            o.extend_from_slice(close);
            at
        }
        b'_' => {
            o.extend_from_slice(b"(null)");
            after
        }
        b'#' => {
            o.extend_from_slice(if header.first() == Some(&b't') { b"#true" } else { b"#false" });
            after
        }
        b',' => {
            o.extend_from_slice(b"(double) ");
            o.extend_from_slice(header);
            after
        }
        _ => after,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{encode_reply, ProtocolVersion, Reply};

    fn human(reply: &Reply, resp: ProtocolVersion) -> String {
        let mut proto = Vec::new();
        encode_reply(reply, resp, &mut proto);
        let mut out = Vec::new();
        protocol_to_human(&proto, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn replies_read_as_redis_shows_them() {
        let arr = Reply::Array(vec![Reply::Int(1), Reply::bulk_string("a\nb".to_string()), Reply::Nil]);
        assert_eq!(human(&arr, ProtocolVersion::Resp2), r#"[1,"a\nb",NULL]"#);
        assert_eq!(human(&Reply::OK, ProtocolVersion::Resp2), r#""+OK""#);
        assert_eq!(human(&Reply::error("ERR x"), ProtocolVersion::Resp2), r#""-ERR x""#);
        assert_eq!(human(&Reply::Nil, ProtocolVersion::Resp3), "(null)");
    }
}
