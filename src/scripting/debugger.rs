//! The Lua debugger (SCRIPT DEBUG YES|SYNC, `redis-cli --ldb`), after Redis 7.0's LDB.
//!
//! A session lives as long as one EVAL. A line hook stops the script when it steps, at a
//! breakpoint, after `redis.breakpoint()`, or when it has run `busy-reply-threshold` (5 s if
//! 0) since the last stop; at a stop the debugger reads commands from the client until one
//! resumes the script. Everything shown goes to the client as an array of status replies,
//! one per line, exactly as Redis sends them. The session's I/O goes through the run's
//! [`ScriptHost::debug_io`](super::ScriptHost::debug_io): the executor decides what the
//! data looks like (the private view of YES mode, the real data in SYNC mode) and what
//! other clients get while the script waits.
//!
//! The state is a thread-local: one session runs at a time on the executor thread.

use std::cell::RefCell;
use std::ffi::{c_int, CStr};
use std::time::Instant;

use bytes::Bytes;
use mlua::debug::DebugEvent;
use mlua::ffi::{self, lua_State};
use mlua::{HookTriggers, Lua, VmState};

use crate::protocol::{encode_reply, ProtocolVersion, Reply};

const BREAKPOINTS_MAX: usize = 64;
const MAX_LEN_DEFAULT: usize = 256;
/// LUA_MINSTACK / 2: how deep a table dump goes.
const MAX_VALUES_DEPTH: usize = 10;

/// What the client sent at a stop.
pub enum DebugInput {
    Command(Vec<Bytes>),
    /// The client is gone: the script runs on without stops.
    Gone,
    /// The script must end now (the server is shutting down): the error it ends with.
    Abort(&'static str),
}

/// Why a YES session's script is stopped when the server shuts down meanwhile.
pub const SHUTTING_DOWN: &str = "script aborted: the server is shutting down";

struct Ldb {
    src: Vec<Vec<u8>>,
    logs: Vec<Vec<u8>>,
    bp: Vec<i32>,
    step: bool,
    luabp: bool,
    current: i32,
    maxlen: usize,
    maxlen_hint_sent: bool,
    /// When the script last stopped (or started): the infinite-loop stop counts from here.
    since: Instant,
    time_limit_ms: u64,
    /// The error the debugger raised in the script (abort, protocol error...), with its line.
    raised: Option<(String, i32)>,
}

thread_local! {
    static LDB: RefCell<Option<Ldb>> = const { RefCell::new(None) };
}

fn with<R>(f: impl FnOnce(&mut Ldb) -> R) -> Option<R> {
    LDB.with(|l| l.borrow_mut().as_mut().map(f))
}

/// Starts a session for the script `body`. `busy_ms` is `busy-reply-threshold`.
pub fn start(body: &[u8], busy_ms: u64) {
    let mut end = body.len();
    while end > 0 && matches!(body[end - 1], b'\n' | b'\r') {
        end -= 1;
    }
    let src = if end == 0 { Vec::new() } else { body[..end].split(|&b| b == b'\n').map(<[u8]>::to_vec).collect() };
    let ldb = Ldb {
        src,
        logs: Vec::new(),
        bp: Vec::new(),
        step: true,
        luabp: false,
        current: 0,
        maxlen: MAX_LEN_DEFAULT,
        maxlen_hint_sent: false,
        since: Instant::now(),
        time_limit_ms: if busy_ms > 0 { busy_ms } else { 5000 },
        raised: None,
    };
    LDB.with(|l| *l.borrow_mut() = Some(ldb));
}

/// Ends the session: the lines still to show and `<endsession>`, as the array to send
/// before the EVAL's reply.
pub fn finish() -> Vec<u8> {
    let mut logs = LDB.with(|l| l.borrow_mut().take()).map(|l| l.logs).unwrap_or_default();
    logs.push(b"<endsession>".to_vec());
    encode_logs(&logs)
}

/// Runs `f` with the session set aside (another client's script may run meanwhile: its
/// `redis.debug` and commands are not the session's).
pub fn suspended<R>(f: impl FnOnce() -> R) -> R {
    let saved = LDB.with(|l| l.borrow_mut().take());
    let result = f();
    LDB.with(|l| *l.borrow_mut() = saved);
    result
}

/// The script caught an error (pcall and the like): if the debugger raised it, the script
/// goes on, and its reply is its own again.
pub fn caught() {
    with(|l| l.raised = None);
}

/// Whether a session is running.
pub fn active() -> bool {
    LDB.with(|l| l.borrow().is_some())
}

/// The error the debugger raised in the script, if any (`abort` and the like): the run's
/// reply is built from it, as Redis's error carries it.
pub fn raised() -> Option<(String, i32)> {
    with(|l| l.raised.clone()).flatten()
}

/// Whether commands and their replies are shown now (stepping).
pub fn stepping() -> bool {
    with(|l| l.step).unwrap_or(false)
}

/// `<redis> argv...`, before a script's command runs while stepping.
pub fn log_command(argv: &[Bytes]) {
    with(|l| {
        if !l.step {
            return;
        }
        let mut line = b"<redis>".to_vec();
        for (j, arg) in argv.iter().enumerate() {
            if j == 10 {
                line.extend_from_slice(format!(" ... ({} more)", argv.len() - j - 1).as_bytes());
                break;
            }
            line.push(b' ');
            line.extend_from_slice(arg);
        }
        l.logs.push(line);
    });
}

/// `<error> text` for an error raised in the script while stepping (Redis logs it where
/// the error table is made: a refused command, bad arguments, an error reply).
pub fn log_error(text: &str) {
    with(|l| {
        if l.step {
            l.logs.push(format!("<error> {text}").into_bytes());
        }
    });
}

/// `<reply> ...` for a command's reply while stepping, in Redis's human form of the reply
/// as the script's protocol encodes it. An error reply is first logged as the error the
/// script meets.
pub fn log_reply(reply: &Reply, resp: ProtocolVersion) {
    if !stepping() {
        return;
    }
    if let Reply::Error(text) = reply {
        log_error(&format!("-{text}"));
    }
    let mut proto = Vec::new();
    encode_reply(reply, resp, &mut proto);
    let mut line = b"<reply> ".to_vec();
    protocol_to_human(&proto, &mut line);
    with(|l| l.log_max_len(line));
}

impl Ldb {
    fn log(&mut self, line: impl Into<Vec<u8>>) {
        self.logs.push(line.into());
    }

    fn log_max_len(&mut self, mut line: Vec<u8>) {
        let mut trimmed = false;
        if self.maxlen > 0 && line.len() > self.maxlen {
            line.truncate(self.maxlen);
            line.extend_from_slice(b" ...");
            trimmed = true;
        }
        self.logs.push(line);
        if trimmed && !self.maxlen_hint_sent {
            self.maxlen_hint_sent = true;
            self.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.");
        }
    }

    fn source_line(&self, line: i32) -> &[u8] {
        match usize::try_from(line - 1).ok().and_then(|i| self.src.get(i)) {
            Some(l) => l,
            None => b"<out of range source code line>",
        }
    }

    fn log_source_line(&mut self, line: i32) {
        let prefix = match (self.current == line, self.bp.contains(&line)) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut out = format!("{prefix}{line:<3} ").into_bytes();
        out.extend_from_slice(self.source_line(line));
        self.logs.push(out);
    }

    fn list(&mut self, around: i32, context: i32) {
        for j in 1..=self.src.len() as i32 {
            if around != 0 && (around - j).abs() > context {
                continue;
            }
            self.log_source_line(j);
        }
    }

    fn take_logs(&mut self) -> Vec<u8> {
        encode_logs(&std::mem::take(&mut self.logs))
    }

    fn breakpoints(&mut self, argv: &[Bytes]) {
        if argv.len() == 1 {
            if self.bp.is_empty() {
                self.log("No breakpoints set. Use 'b <line>' to add one.");
            } else {
                self.log(format!("{} breakpoints set:", self.bp.len()));
                for line in self.bp.clone() {
                    self.log_source_line(line);
                }
            }
            return;
        }
        for arg in &argv[1..] {
            let Some(line) = crate::util::parse_i64(arg) else {
                let mut msg = b"Invalid argument:'".to_vec();
                msg.extend_from_slice(arg);
                msg.push(b'\'');
                self.log(msg);
                continue;
            };
            if line == 0 {
                self.bp.clear();
                self.log("All breakpoints removed.");
            } else if line > 0 {
                let line = line.min(i32::MAX as i64) as i32;
                if self.bp.len() == BREAKPOINTS_MAX {
                    self.log("Too many breakpoints set.");
                } else if line as usize <= self.src.len() && !self.bp.contains(&line) {
                    self.bp.push(line);
                    self.list(line, 1);
                } else {
                    self.log("Wrong line number.");
                }
            } else {
                let line = line.unsigned_abs().min(i32::MAX as u64) as i32;
                match self.bp.iter().position(|&b| b == line) {
                    Some(i) => {
                        self.bp.remove(i);
                        self.log("Breakpoint removed.");
                    }
                    None => self.log("No breakpoint in the specified line."),
                }
            }
        }
    }

    fn maxlen_command(&mut self, argv: &[Bytes]) {
        if argv.len() == 2 {
            let mut len = atoi(&argv[1]);
            self.maxlen_hint_sent = true;
            if len != 0 && len <= 60 {
                len = 60;
            }
            self.maxlen = len.max(0) as usize;
        }
        if self.maxlen > 0 {
            self.log(format!("<value> replies are truncated at {} bytes.", self.maxlen));
        } else {
            self.log("<value> replies are unlimited.");
        }
    }
}

/// The lines as Redis's `ldbSendLogs` sends them: an array of status replies, newlines in a
/// line turned into spaces.
fn encode_logs(logs: &[Vec<u8>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", logs.len()).into_bytes();
    for line in logs {
        out.push(b'+');
        out.extend(line.iter().map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// C's `atoi`: the leading integer, 0 when there is none.
fn atoi(arg: &[u8]) -> i64 {
    let s = std::str::from_utf8(arg).unwrap_or("").trim_start();
    let (sign, digits) = match s.as_bytes().first() {
        Some(b'-') => (-1, &s[1..]),
        Some(b'+') => (1, &s[1..]),
        _ => (1, s),
    };
    let end = digits.bytes().position(|b| !b.is_ascii_digit()).unwrap_or(digits.len());
    sign * digits[..end].parse::<i64>().unwrap_or(0).min(i32::MAX as i64)
}

/// Installs the debugger's hook on `lua` (in place of the busy hook, as Redis does).
pub fn install_hook(lua: &Lua) -> mlua::Result<()> {
    lua.set_hook(HookTriggers::new().every_line().every_nth_instruction(super::HOOK_INSTRUCTIONS), |lua, debug| {
        let source = debug.source();
        let in_script = source.short_src.as_deref().is_some_and(|s| s.contains("user_script"));
        let line = debug.current_line().unwrap_or(0) as i32;
        let count_event = matches!(debug.event(), DebugEvent::Count);
        drop(source);
        line_hook(lua, line, in_script, count_event)
    })
}

fn line_hook(lua: &Lua, line: i32, in_script: bool, count_event: bool) -> mlua::Result<VmState> {
    let stop = with(|l| {
        l.current = line;
        let bp = l.bp.contains(&line) || l.luabp;
        if !in_script {
            return None;
        }
        // The script goes on: an error the debugger raised was caught (pcall).
        l.raised = None;
        let mut timeout = false;
        if count_event && !l.step && !bp {
            if l.since.elapsed().as_millis() as u64 >= l.time_limit_ms {
                timeout = true;
                l.step = true;
            } else {
                return None;
            }
        }
        if !(l.step || bp) {
            return None;
        }
        let reason = if bp {
            if l.luabp {
                "redis.breakpoint() called"
            } else {
                "break point"
            }
        } else if timeout {
            "timeout reached, infinite loop?"
        } else {
            "step over"
        };
        l.step = false;
        l.luabp = false;
        l.log(format!("* Stopped at {line}, stop reason = {reason}"));
        l.log_source_line(line);
        Some((l.take_logs(), timeout))
    })
    .flatten();
    let Some((logs, timeout)) = stop else {
        // Between stops the others are served (YES mode; see executor/debug_session.rs).
        if count_event && super::api::with_host(|h| h.debug_poll()).unwrap_or(false) {
            return Err(raise(line, SHUTTING_DOWN));
        }
        return Ok(VmState::Continue);
    };
    let gone = repl(lua, logs)?;
    if gone && timeout {
        // Nobody will ever resume a script stuck in a loop: it ends here.
        return Err(raise(line, "timeout during Lua debugging with client closing connection"));
    }
    with(|l| l.since = Instant::now());
    Ok(VmState::Continue)
}

/// Records the error the debugger raises in the script (see [`raised`]).
fn raise(line: i32, msg: &str) -> mlua::Error {
    with(|l| l.raised = Some((msg.to_string(), line)));
    mlua::Error::RuntimeError(msg.to_string())
}

/// Sends `logs`, then serves debugger commands until one resumes the script. Returns whether
/// the client is gone.
fn repl(lua: &Lua, logs: Vec<u8>) -> mlua::Result<bool> {
    let mut out = logs;
    loop {
        let input = super::api::with_host(|h| h.debug_io(std::mem::take(&mut out))).unwrap_or(DebugInput::Gone);
        let argv = match input {
            DebugInput::Gone => {
                with(|l| {
                    l.step = false;
                    l.bp.clear();
                });
                return Ok(true);
            }
            DebugInput::Abort(msg) => return Err(raise(with(|l| l.current).unwrap_or(0), msg)),
            DebugInput::Command(argv) => argv,
        };
        let line = with(|l| l.current).unwrap_or(0);
        // Redis's debugger reads its own, strict, protocol: at most 1024 arguments of 1 to
        // 1024 bytes.
        if argv.is_empty() || argv.len() > 1024 || argv.iter().any(|a| a.is_empty() || a.len() > 1024) {
            return Err(raise(line, "protocol error"));
        }
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        match name.as_str() {
            "h" | "help" => with(|l| {
                for text in HELP {
                    l.log(*text);
                }
            }),
            "s" | "step" | "n" | "next" => {
                with(|l| l.step = true);
                return Ok(false);
            }
            "c" | "continue" => return Ok(false),
            "t" | "trace" => with_stack(lua, trace),
            "m" | "maxlen" => with(|l| l.maxlen_command(&argv)),
            "b" | "break" => with(|l| l.breakpoints(&argv)),
            "e" | "eval" => with_stack(lua, |state| eval(state, &argv)),
            "a" | "abort" => return Err(raise(line, "script aborted for user request")),
            "r" | "redis" if argv.len() > 1 => with_stack(lua, |state| redis_command(state, &argv)),
            "p" | "print" => with_stack(lua, |state| {
                if argv.len() == 2 {
                    print_var(state, &argv[1]);
                } else {
                    print_all(state);
                }
            }),
            "l" | "list" => with(|l| {
                let mut around = l.current;
                if argv.len() > 1 {
                    let n = atoi(&argv[1]) as i32;
                    if n > 0 {
                        around = n;
                    }
                }
                let context = if argv.len() > 2 { atoi(&argv[2]) as i32 } else { 5 };
                l.list(around, context);
            }),
            "w" | "whole" => with(|l| l.list(1, 1_000_000)),
            _ => with(|l| l.log("<error> Unknown Redis Lua debugger command or wrong number of arguments.")),
        };
        out = with(|l| l.take_logs()).unwrap_or_default();
    }
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

/// The stack level of the stopped script's function inside [`with_stack`]'s protected call
/// (level 0 is that call's own C function).
const SCRIPT_LEVEL: c_int = 1;

/// Runs `f` on the raw state in a protected call (a Lua error inside is caught), from the
/// hook: the script's frames are below it.
fn with_stack(lua: &Lua, f: impl FnOnce(*mut lua_State)) -> Option<()> {
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
fn print_var(state: *mut lua_State, name: &[u8]) {
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
fn print_all(state: *mut lua_State) {
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
fn trace(state: *mut lua_State) {
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
fn eval(state: *mut lua_State, argv: &[Bytes]) {
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
fn redis_command(state: *mut lua_State, argv: &[Bytes]) {
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
fn protocol_to_human(p: &[u8], o: &mut Vec<u8>) -> usize {
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

    #[test]
    fn logs_are_status_lines() {
        assert_eq!(encode_logs(&[b"a\r\nb".to_vec(), b"".to_vec()]), b"*2\r\n+a  b\r\n+\r\n");
    }

    #[test]
    fn atoi_reads_a_prefix() {
        assert_eq!(atoi(b"12x"), 12);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b"-3"), -3);
    }
}
