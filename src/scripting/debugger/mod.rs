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
use std::time::Instant;

use bytes::Bytes;
use mlua::debug::DebugEvent;
use mlua::{HookTriggers, Lua, VmState};

use crate::protocol::{encode_reply, ProtocolVersion, Reply};

mod inspect;

use inspect::{eval, print_all, print_var, protocol_to_human, redis_command, trace, with_stack};
pub use inspect::{redis_breakpoint, redis_debug};

const BREAKPOINTS_MAX: usize = 64;
const MAX_LEN_DEFAULT: usize = 256;
/// LUA_MINSTACK / 2: how deep a table dump goes.
pub(super) const MAX_VALUES_DEPTH: usize = 10;

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

pub(super) struct Ldb {
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

pub(super) fn with<R>(f: impl FnOnce(&mut Ldb) -> R) -> Option<R> {
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
    pub(super) fn log(&mut self, line: impl Into<Vec<u8>>) {
        self.logs.push(line.into());
    }

    pub(super) fn log_max_len(&mut self, mut line: Vec<u8>) {
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

    pub(super) fn log_source_line(&mut self, line: i32) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
