//! Lua scripting: EVAL/EVALSHA's engine, one Lua 5.1 state owned by the executor thread.
//!
//! ```text
//!  executor ── run(sha, KEYS, ARGV, &mut dyn ScriptHost) ──► ScriptEngine (Lua state)
//!      ▲                                                         │ redis.call(...)
//!      └──────────── ScriptHost::call(argv) ◄────────────────────┘
//! ```
//!
//! The engine knows nothing of the keyspace: a script's `redis.call` goes back to the executor
//! through [`ScriptHost`], which applies the script rules (no-script commands, read-only
//! scripts, OOM, random-dirty tracking, sorted output) and records the script's write
//! effects in a [`ScriptOutcome`]. Bodies are compiled once and cached by SHA1.
//!
//! Determinism (what makes logging a whole EVAL safe): every run starts with `math.random`
//! reseeded to 0, the host freezes time at the script's start, and the host sorts the output
//! of the commands whose order is undefined. Busy control: a count hook checks, every
//! [`HOOK_INSTRUCTIONS`] instructions, the run time against `busy-reply-threshold` and the
//! [`ScriptWatch`] for SCRIPT KILL and SHUTDOWN NOSAVE.

mod api;
pub mod convert;
pub mod debugger;
pub mod functions;
mod lib_bit;
mod lib_cjson;
mod lib_cmsgpack;
mod lib_struct;
mod libs;
mod names;
mod rand;
mod sandbox;
pub mod shim;
pub mod watch;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use mlua::{Function, HookTriggers, Lua, Value, VmState};
use sha1::{Digest, Sha1};

pub use api::{remember_command, REPL_AOF, REPL_REPLICA};
pub use watch::{KillOutcome, RunningFunction, ScriptWatch};

use crate::protocol::{ProtocolVersion, Reply};

/// The count hook's period: about a millisecond of Lua, so SCRIPT KILL acts within 100 ms.
pub const HOOK_INSTRUCTIONS: u32 = 100_000;

/// What a script runs its commands through (the executor implements it).
pub trait ScriptHost {
    /// Runs one `redis.call`/`redis.pcall` command with the script rules; an error is a
    /// `Reply::Error` with its code word. `argv` is the caller's reused vector: the host may
    /// take its contents (to keep them), and the caller empties it afterwards. `cached` is
    /// the command `argv[0]` resolved to when the host last passed it to `remember_command`.
    fn call(&mut self, argv: &mut Vec<Bytes>, cached: Option<&'static crate::spec::CommandSpec>, resp: ProtocolVersion, repl: u8) -> Reply;
    /// `redis.acl_check_cmd`: whether the script's user may run `argv`; `None` when it names
    /// no known command.
    fn acl_check_cmd(&mut self, argv: &[Bytes]) -> Option<bool>;
    /// The script is past `busy-reply-threshold` and other clients were just let in: what
    /// they are owed goes out now (Redis flushes pending replies while a script is busy).
    fn busy(&mut self) {}
    /// The script read something a replay of it would not read the same (an address from
    /// `tostring`, the collector's figures): it must be logged as its effects.
    fn nondeterministic(&mut self) {}
    /// A debugging session (SCRIPT DEBUG) stopped: sends `out` (the debugger's lines, already
    /// encoded) to the debugging client, then waits for its next command.
    fn debug_io(&mut self, _out: Vec<u8>) -> debugger::DebugInput {
        debugger::DebugInput::Gone
    }
    /// A debugged script is running (between stops): the host may serve others meanwhile.
    /// True when the script must end now (the server is shutting down).
    fn debug_poll(&mut self) -> bool {
        false
    }
}

/// The flags of a script's `#!lua flags=...` line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// No shebang: Redis's eval compatibility mode (writes allowed unless EVAL_RO, OOM checked
    /// per command).
    pub compat: bool,
    pub no_writes: bool,
    pub allow_oom: bool,
    pub allow_stale: bool,
    pub no_cluster: bool,
    pub allow_cross_slot_keys: bool,
    /// `rollback` (a Vermilion extension): a script that fails or is killed leaves none of
    /// its writes (docs/SCRIPTING.md, "All-or-nothing scripts").
    pub rollback: bool,
}

/// Where a shebang line ends (its `\n`), as Redis's `strchr(code, '\n')` finds it on a C
/// string: a zero byte before it means there is none (EVAL shebangs and function libraries).
pub(crate) fn shebang_end(code: &[u8]) -> Option<usize> {
    code.iter().position(|&b| b == b'\n' || b == 0).filter(|&i| code[i] == b'\n')
}

impl ScriptFlags {
    /// Parses the shebang line, if any (Redis's `evalExtractShebangFlags`).
    pub fn parse(body: &[u8]) -> Result<ScriptFlags, String> {
        if !body.starts_with(b"#!") {
            return Ok(ScriptFlags { compat: true, ..ScriptFlags::default() });
        }
        let end = shebang_end(body).ok_or("Invalid script shebang")?;
        let parts = crate::protocol::split_args(&body[..end]).filter(|p| !p.is_empty()).ok_or("Invalid engine in script shebang")?;
        let parts: Vec<String> = parts.iter().map(|p| String::from_utf8_lossy(p).into_owned()).collect();
        let Some(engine) = parts.first() else { return Err("Invalid engine in script shebang".into()) };
        if engine != "#!lua" {
            return Err(format!("Unexpected engine in script shebang: {engine}"));
        }
        let mut flags = ScriptFlags::default();
        for part in &parts[1..] {
            let Some(list) = part.strip_prefix("flags=") else {
                return Err(format!("Unknown lua shebang option: {part}"));
            };
            // `flags=` is no flag; an empty one between commas is an unknown flag.
            for flag in list.split(',').filter(|_| !list.is_empty()) {
                match flag {
                    "no-writes" => flags.no_writes = true,
                    "allow-oom" => flags.allow_oom = true,
                    "allow-stale" => flags.allow_stale = true,
                    "no-cluster" => flags.no_cluster = true,
                    "allow-cross-slot-keys" => flags.allow_cross_slot_keys = true,
                    "rollback" => flags.rollback = true,
                    _ => return Err(format!("Unexpected flag in script shebang: {flag}")),
                }
            }
        }
        Ok(flags)
    }
}

/// One cached script.
pub struct Script {
    func: Function,
    /// Its SHA1, lowercase hex (the cache key); shared with the calls that run it.
    pub sha: std::rc::Rc<str>,
    pub body: Bytes,
    pub flags: ScriptFlags,
}

/// What a script did, for the executor and (later) the log: whether it wrote, whether it
/// called a command whose result is not a function of the dataset, and its write effects in
/// execution order, each with the database it ran in and where it propagates.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ScriptOutcome {
    /// The script's frozen time (ms since the epoch): every expiry decision inside it used
    /// this, so a replay of the whole script must too.
    pub time_ms: i64,
    pub wrote: bool,
    /// It published to replicas' subscribers (its PUBLISH effects are logged, see
    /// `Executor::publishing_to_replicas`).
    pub published: bool,
    pub random_dirty: bool,
    pub effects: Vec<Effect>,
    /// Positions in `effects` of deletions by expiry or eviction during the script (DELs,
    /// logged whatever `redis.set_repl` says, in their place among the writes).
    pub deletions: Vec<usize>,
}

/// One write a script made: `argv` as it would be logged, run in `db`; `repl` is the
/// `redis.set_repl` target at that moment (REPL_AOF | REPL_REPLICA bits).
#[derive(Debug, Clone, PartialEq)]
pub struct Effect {
    pub db: usize,
    pub argv: Vec<Bytes>,
    pub repl: u8,
}

/// How a run ended besides its reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    Finished,
    /// SCRIPT KILL stopped it (nothing was written).
    Killed,
    /// SHUTDOWN NOSAVE arrived while it ran: the server must stop without a trace of it.
    Shutdown,
}

/// The state of the running script that Rust callbacks (redis.*, math.random, the hook) see.
pub(crate) struct RunState {
    /// A run is in progress (the state stays in the Lua state between runs: setting it up
    /// then costs no allocation).
    active: bool,
    rng: rand::Lrand48,
    watch: Arc<ScriptWatch>,
    started: Instant,
    busy_threshold_ms: u64,
    sha: String,
    timed_out: bool,
    /// Called from the hook while the script is busy: answers other clients (see
    /// executor/inbox.rs).
    busy_pump: Option<std::rc::Rc<dyn Fn()>>,
    /// A script changed state that outlives it (a `cjson` setting): every later run in this
    /// Lua state may depend on it, which a replay would not reproduce, so every run is
    /// nondeterministic until SCRIPT FLUSH builds a new state.
    pub(crate) tainted: bool,
}

/// Marks the Lua state `state` as [`RunState::tainted`] and the running script as
/// nondeterministic.
///
/// # Safety
/// `state` must be the state of a `Lua` created by this crate (a callback's own).
pub(crate) unsafe fn taint(state: *mut mlua::ffi::lua_State) {
    // SAFETY: as the caller promises.
    let lua = unsafe { Lua::get_or_init_from_ptr(state) };
    if let Some(mut run) = lua.app_data_mut::<RunState>() {
        run.tainted = true;
    }
    api::with_host(|host| host.nondeterministic());
}

pub struct ScriptEngine {
    lua: Lua,
    runner: Function,
    /// The cached scripts, in load order (nothing leaves but by a flush of all).
    scripts: Vec<Script>,
    /// Position in `scripts` by SHA1.
    index: HashMap<String, usize>,
    /// The last script looked up, by its lowercase SHA1: an EVALSHA finds it twice (the
    /// command, then the run) and workloads call the same script over and over; a hit
    /// skips hashing the 40-byte key (SipHash, two per EVALSHA: 2-3% of its time).
    last: std::cell::Cell<Option<([u8; 40], usize)>>,
    bodies_bytes: usize,
    pub watch: Arc<ScriptWatch>,
    /// The function libraries, in their own Lua state.
    pub functions: functions::Functions,
}

/// The lowercase hex SHA1 of `data`.
pub fn sha1_hex(data: &[u8]) -> String {
    crate::util::hex(&Sha1::digest(data))
}

/// The SHA1 of `data` in lowercase hex, on the stack.
fn sha1_hex40(data: &[u8]) -> [u8; 40] {
    let mut out = [0u8; 40];
    crate::util::hex_into(&Sha1::digest(data), &mut out);
    out
}

impl ScriptEngine {
    pub fn new(watch: Arc<ScriptWatch>) -> mlua::Result<ScriptEngine> {
        let (lua, runner) = sandbox::new_state(sandbox::Kind::Eval)?;
        install_hook(&lua)?;
        Ok(ScriptEngine {
            lua,
            runner,
            scripts: Vec::new(),
            index: HashMap::new(),
            last: std::cell::Cell::new(None),
            bodies_bytes: 0,
            watch,
            functions: functions::Functions::new()?,
        })
    }

    /// Compiles and caches `body` (EVAL, SCRIPT LOAD); returns the cached script. Errors are
    /// Redis's reply texts.
    pub fn load(&mut self, body: &[u8]) -> Result<&Script, String> {
        let sha40 = sha1_hex40(body);
        if let Some(at) = self.find(&sha40) {
            return Ok(&self.scripts[at]);
        }
        let sha = String::from_utf8_lossy(&sha40).into_owned();
        let flags = ScriptFlags::parse(body).map_err(|e| format!("ERR {e}"))?;
        // The shebang line stays as a comment, so line numbers match the user's file.
        let source: std::borrow::Cow<[u8]> = if flags.compat { body.into() } else { [b"--", &body[2..]].concat().into() };
        let func = self
            .lua
            .load(&source[..])
            // Binary chunks reach the patched parser, which reads them as (invalid) text.
            .set_name("@user_script")
            .into_function()
            .map_err(|e| format!("ERR Error compiling script (new function): {}", compile_error_text(&e)))?;
        self.bodies_bytes += body.len();
        let at = self.scripts.len();
        self.scripts.push(Script { func, sha: sha.as_str().into(), body: Bytes::copy_from_slice(body), flags });
        self.index.insert(sha, at);
        Ok(&self.scripts[at])
    }

    /// The cached script of `sha` (any case).
    pub fn get(&self, sha: &[u8]) -> Option<&Script> {
        let mut lower = [0u8; 40];
        if sha.len() != 40 {
            return None;
        }
        lower.copy_from_slice(sha);
        lower.make_ascii_lowercase();
        self.scripts.get(self.find(&lower)?)
    }

    /// The position of the script whose lowercase SHA1 is `lower`; the last one found is
    /// remembered, so a client repeating one script costs no hash lookup.
    fn find(&self, lower: &[u8; 40]) -> Option<usize> {
        if let Some((last, at)) = self.last.get() {
            if last == *lower {
                return Some(at);
            }
        }
        let at = *self.index.get(std::str::from_utf8(lower).ok()?)?;
        self.last.set(Some((*lower, at)));
        Some(at)
    }

    pub fn exists(&self, sha: &[u8]) -> bool {
        self.get(sha).is_some()
    }

    /// SCRIPT FLUSH: a new Lua state, as Redis does (the scripts, their garbage and any
    /// library setting are gone).
    pub fn flush(&mut self) -> mlua::Result<()> {
        let (lua, runner) = sandbox::new_state(sandbox::Kind::Eval)?;
        install_hook(&lua)?;
        (self.lua, self.runner) = (lua, runner);
        self.scripts.clear();
        self.index.clear();
        self.last.set(None);
        self.bodies_bytes = 0;
        Ok(())
    }

    /// Rebuilds the Lua state when a script changed it for those after it (`RunState::tainted`),
    /// keeping the cached scripts: a script of the log or of a primary's stream must run as
    /// it ran where it was recorded, not under a replica's or a past run's cjson settings.
    pub fn untaint(&mut self) -> mlua::Result<()> {
        if !self.lua.app_data_ref::<RunState>().is_some_and(|r| r.tainted) {
            return Ok(());
        }
        let bodies: Vec<Bytes> = self.scripts.iter().map(|s| s.body.clone()).collect();
        self.flush()?;
        for body in bodies {
            // They compiled before: they compile again.
            let _ = self.load(&body);
        }
        Ok(())
    }

    /// The script cache and every function library: the state a reload or a full
    /// synchronization replaces.
    pub fn reset(&mut self) -> mlua::Result<()> {
        self.functions.flush();
        self.flush()
    }

    /// Every cached script (the base snapshot's script table).
    pub fn scripts(&self) -> impl Iterator<Item = &Script> {
        self.scripts.iter()
    }

    pub fn count(&self) -> usize {
        self.scripts.len()
    }

    /// INFO `used_memory_scripts`: the cached bodies and their entries.
    pub fn scripts_memory(&self) -> usize {
        self.bodies_bytes + self.scripts.len() * (std::mem::size_of::<Script>() + 64)
    }

    /// INFO `used_memory_lua`.
    pub fn lua_memory(&self) -> usize {
        self.lua.used_memory()
    }

    /// Runs the cached script `sha` with `keys` and `argv`.
    pub fn run(&mut self, sha: &str, keys: &[Bytes], argv: &[Bytes], host: &mut dyn ScriptHost, busy: Busy) -> (Reply, RunEnd) {
        let Some(script) = self.get(sha.as_bytes()) else {
            return (Reply::error("NOSCRIPT No matching script. Please use EVAL."), RunEnd::Finished);
        };
        let func = script.func.clone();
        let run = Run { name: sha, source: "@user_script", busy, watch: self.watch.clone() };
        run.execute(&self.lua, host, || sandbox::with_run_args(keys, argv, || self.runner.call::<(bool, Value)>(func)))
    }

    /// Runs the cached script `sha` under the debugger (SCRIPT DEBUG): its hook in place of
    /// the busy one for this run. The session itself is [`debugger::start`]ed by the caller.
    pub fn run_debugged(&mut self, sha: &str, keys: &[Bytes], argv: &[Bytes], host: &mut dyn ScriptHost) -> (Reply, RunEnd) {
        if let Err(e) = debugger::install_hook(&self.lua) {
            return (Reply::Error(format!("ERR {e}").into()), RunEnd::Finished);
        }
        let busy = Busy { started: Instant::now(), threshold_ms: 0, pump: None };
        let result = self.run(sha, keys, argv, host, busy);
        if let Err(e) = install_hook(&self.lua) {
            crate::log::warning(&format!("Could not restore the script hook: {e}"));
        }
        result
    }

    /// Runs the library function `name` (FCALL) with `keys` and `argv` as its arguments.
    pub fn run_function(&mut self, name: &[u8], keys: &[Bytes], argv: &[Bytes], host: &mut dyn ScriptHost, busy: Busy) -> (Reply, RunEnd) {
        let fns = &self.functions;
        let Some(def) = fns.get(name) else {
            return (Reply::error("ERR Function not found"), RunEnd::Finished);
        };
        let (func, fname) = (def.func.clone(), def.name.clone());
        let run = Run { name: &fname, source: "@user_function", busy, watch: self.watch.clone() };
        run.execute(&fns.lua, host, || sandbox::with_run_args(keys, argv, || fns.runner.call::<(bool, Value)>(func)))
    }
}

/// One run of a script or function: its name (in errors and the slow-script warning), its
/// chunk's name and the busy control.
struct Run<'a> {
    name: &'a str,
    source: &'static str,
    busy: Busy,
    watch: Arc<ScriptWatch>,
}

/// A run's busy control: `pump` is called from the hook once the run is `threshold_ms` past
/// `started` (when the EVAL began).
pub struct Busy {
    pub started: Instant,
    pub threshold_ms: u64,
    pub pump: Option<std::rc::Rc<dyn Fn()>>,
}

impl Run<'_> {
    /// Calls `call` (the runner) with the run's state installed in `lua`; turns its result
    /// into the caller's reply.
    fn execute(self, lua: &Lua, host: &mut dyn ScriptHost, call: impl FnOnce() -> mlua::Result<(bool, Value)>) -> (Reply, RunEnd) {
        let name = self.name;
        // SAFETY (lifetime erasure): the pointer is installed only until `deactivate` below,
        // while `host` is still mutably borrowed by this call.
        let host: *mut (dyn ScriptHost + '_) = host;
        let host: *mut (dyn ScriptHost + 'static) = unsafe { std::mem::transmute(host) };
        // SAFETY: `host` stays valid until `deactivate` below, and every Lua call that reaches
        // redis.call happens inside `call()`, between the two.
        let previous = unsafe { api::activate(host) };
        if lua.app_data_ref::<RunState>().is_none() {
            lua.set_app_data(RunState {
                active: false,
                rng: rand::Lrand48::seeded(0),
                watch: self.watch.clone(),
                started: self.busy.started,
                busy_threshold_ms: 0,
                sha: String::new(),
                timed_out: false,
                busy_pump: None,
                tainted: false,
            });
        }
        if let Some(mut run) = lua.app_data_mut::<RunState>() {
            run.active = true;
            run.rng = rand::Lrand48::seeded(0);
            if !Arc::ptr_eq(&run.watch, &self.watch) {
                run.watch = self.watch.clone();
            }
            run.started = self.busy.started;
            run.busy_threshold_ms = self.busy.threshold_ms;
            run.sha.clear();
            run.sha.push_str(name);
            run.timed_out = false;
            run.busy_pump = self.busy.pump;
        }
        if lua.app_data_ref::<RunState>().is_some_and(|r| r.tainted) {
            api::with_host(|host| host.nondeterministic());
        }
        let result = call();
        if let Some(mut run) = lua.app_data_mut::<RunState>() {
            run.active = false;
            run.busy_pump = None;
        }
        // Booleans convert by the script's protocol (redis.setresp), nulls by the caller's.
        let script_resp = api::deactivate(previous);
        let end = if self.watch.shutdown_requested() {
            RunEnd::Shutdown
        } else if self.watch.killed() {
            RunEnd::Killed
        } else {
            RunEnd::Finished
        };
        let raised = debugger::raised();
        let reply = match result {
            // `abort` and the debugger's other errors, as Redis's luaError builds them.
            _ if raised.is_some() => {
                let (msg, line) = raised.unwrap_or_default();
                Reply::Error(format!("ERR {msg} script: {name}, on {}:{line}.", self.source).into())
            }
            _ if end == RunEnd::Killed => {
                let line = lua.app_data_ref::<KilledAt>().map(|k| k.0).unwrap_or(1);
                Reply::Error(format!("ERR Script killed by user with SCRIPT KILL... script: {name}, on {}:{line}.", self.source).into())
            }
            Ok((true, value)) => convert::lua_to_reply(lua, &value, script_resp),
            Ok((false, err)) => error_reply(name, &err),
            Err(e) => Reply::Error(format!("ERR Error running script {name}, {}", first_line(&e.to_string())).into()),
        };
        lua.remove_app_data::<KilledAt>();
        // Garbage of this run goes now rather than during the next one.
        if lua.used_memory() > 32 * 1024 * 1024 {
            let _ = lua.gc_collect();
        }
        (reply, end)
    }
}

/// The line a killed script was at (for its error reply).
struct KilledAt(i32);

/// The count hook: busy detection (and, once busy, answering other clients), SCRIPT KILL,
/// SHUTDOWN NOSAVE.
pub(crate) fn install_hook(lua: &Lua) -> mlua::Result<()> {
    lua.set_hook(HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS), |lua, debug| {
        // A library's code at FUNCTION LOAD: only its time limit applies.
        if let Some(mut loading) = lua.app_data_mut::<functions::Loading>() {
            if loading.check_timeout() {
                return Err(mlua::Error::RuntimeError("FUNCTION LOAD timeout".into()));
            }
            return Ok(VmState::Continue);
        }
        let (pump, now_busy) = {
            let Some(mut run) = lua.app_data_mut::<RunState>().filter(|r| r.active) else { return Ok(VmState::Continue) };
            let elapsed = run.started.elapsed().as_millis() as u64;
            let mut now_busy = None;
            if !run.timed_out && run.busy_threshold_ms > 0 && elapsed >= run.busy_threshold_ms {
                run.timed_out = true;
                now_busy = Some(run.watch.clone());
                crate::log::warning(&format!(
                    "Slow script detected: still in execution after {elapsed} milliseconds. You can try killing the script using the SCRIPT KILL command. Script name is: {}.",
                    run.sha
                ));
            }
            (if run.timed_out { run.busy_pump.clone() } else { None }, now_busy)
        };
        // The RunState borrow is released: the pump and the host do not touch Lua.
        if let Some(watch) = now_busy {
            // What other clients are owed (replies and pushes of earlier batches) leaves
            // before any BUSY answer: connection tasks answer BUSY themselves once the watch
            // says the script is busy.
            api::with_host(|host| host.busy());
            watch.set_timed_out();
        }
        if let Some(pump) = pump {
            pump();
            // No `redis.call` (the other user of the host) is in progress inside a hook.
            api::with_host(|host| host.busy());
        }
        let (abort, shutdown) = match lua.app_data_ref::<RunState>().filter(|r| r.active) {
            Some(run) => (run.watch.must_abort(), run.watch.shutdown_requested()),
            None => (false, false),
        };
        if !abort {
            return Ok(VmState::Continue);
        }
        if lua.app_data_ref::<KilledAt>().is_none() {
            lua.set_app_data(KilledAt(debug.current_line().unwrap_or(1) as i32));
            if !shutdown {
                crate::log::warning("Lua script killed by user with SCRIPT KILL.");
            }
        }
        Err(mlua::Error::RuntimeError("Script killed by user with SCRIPT KILL...".into()))
    })
}

/// A failed run's reply, from the error handler's table (Redis 7's `luaCallFunction`).
fn error_reply(sha: &str, err: &Value) -> Reply {
    let Value::Table(t) = err else {
        let msg = match err {
            Value::String(s) => s.to_string_lossy(),
            _ => "execution failure".to_string(),
        };
        return Reply::Error(crate::spec::sanitize(format!("ERR Error running script {sha}, {}", truncate(&msg, 100))).into());
    };
    let text = |name: &str| match t.raw_get::<Value>(name) {
        Ok(Value::String(s)) => Some(s.to_string_lossy()),
        Ok(Value::Integer(n)) => Some(n.to_string()),
        Ok(Value::Number(n)) => Some(if n.fract() == 0.0 { format!("{}", n as i64) } else { format!("{n}") }),
        _ => None,
    };
    // Redis 7.0.15 crashes on `error({})`; an error without text reads as a failure.
    let msg = text("err").unwrap_or_else(|| "ERR execution failure".to_string());
    let mut reply = msg;
    if let (Some(source), Some(line)) = (text("source"), text("line")) {
        reply.push_str(&format!(" script: {sha}, on {source}:{line}."));
    }
    Reply::Error(crate::spec::sanitize(reply).into())
}

fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

pub(crate) fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// The Lua message of a compile error (`user_script:1: unexpected symbol near '<eof>'`).
pub(crate) fn compile_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        other => first_line(&other.to_string()).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_flags_parse_like_redis() {
        assert!(ScriptFlags::parse(b"return 1").unwrap().compat);
        let f = ScriptFlags::parse(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert!(f.no_writes && f.allow_oom && !f.compat);
        assert_eq!(ScriptFlags::parse(b"#!lua flags=bad\n").unwrap_err(), "Unexpected flag in script shebang: bad");
        assert_eq!(ScriptFlags::parse(b"#!perl\n").unwrap_err(), "Unexpected engine in script shebang: #!perl");
        assert_eq!(ScriptFlags::parse(b"#!lua name=x\n").unwrap_err(), "Unknown lua shebang option: name=x");
        assert_eq!(ScriptFlags::parse(b"#!lua").unwrap_err(), "Invalid script shebang");
        assert_eq!(ScriptFlags::parse(b"#!lua flags=no-writes,\n").unwrap_err(), "Unexpected flag in script shebang: ");
        assert_eq!(ScriptFlags::parse(b"#!lua 'x\n").unwrap_err(), "Invalid engine in script shebang");
        assert!(ScriptFlags::parse(b"#!lua flags=\n").is_ok_and(|f| !f.no_writes && !f.compat));
    }

    #[test]
    fn sha1hex_is_lowercase_hex() {
        assert_eq!(sha1_hex(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }
}
