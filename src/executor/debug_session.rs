//! Lua debugging sessions (SCRIPT DEBUG YES|SYNC): the executor's side of
//! scripting/debugger/.
//!
//! - **SYNC** runs the EVAL on the server's own Lua state and data, as Redis does: the
//!   executor waits for the debugging client at every stop and serves nobody else (their
//!   requests wait in the inbox, in order). The writes stay; the script is logged as its
//!   effects (a replay could not stop where the user stopped it).
//! - **YES** runs it in a Lua state of its own on a [`PrivateView`] of the data: a key is
//!   copied from the keyspace the first time the session's commands name it (a whole
//!   database when a command reads or changes keys it does not name: KEYS, SCAN, DBSIZE,
//!   FLUSHDB...), and the session's writes stay in the copy, thrown away at the end. Nothing
//!   reaches the log, replicas, watchers, trackers or subscribers. While the script waits at
//!   a stop, and every [`HOOK_INSTRUCTIONS`](crate::scripting::HOOK_INSTRUCTIONS) while it
//!   runs, the executor serves the other clients as usual. Redis forks instead: its child
//!   sees the whole dataset as of the EVAL, where a key copied later here has the value of
//!   that later moment.
//!
//! Either way the session's lines go to the client's socket as they come, the EVAL's reply
//! follows `<endsession>`, and the connection is closed, as Redis ends a session.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::script::ScriptBridge;
use super::Executor;
use crate::commands::scripting::ScriptCall;
use crate::commands::{self, CommandSpec, Effects, Next, Trait};
use crate::conn::{Request, MAX_INFLIGHT};
use crate::db::Keyspace;
use crate::protocol::Reply;
use crate::scripting::debugger::{self, DebugInput};
use crate::scripting::{ScriptEngine, ScriptWatch};
use crate::state::{Client, LuaDebug};

/// A YES session's copy of the data it touched.
pub(super) struct PrivateView {
    ks: Keyspace,
    /// Keys copied (or found absent) so far: from then on the copy is the truth for them.
    copied: HashSet<(usize, Bytes)>,
    /// Databases copied whole.
    whole: Vec<bool>,
    /// The script's frozen time.
    now_ms: i64,
}

/// What the executor keeps of a running session.
pub(super) struct Session {
    pub mode: LuaDebug,
    /// The debugging client (out of the client table while its EVAL runs).
    id: crate::state::ClientId,
    /// The debugging client's Disconnect, handed back to the inbox when the session ends
    /// (the client is out of the table until then).
    gone: Option<Request>,
    /// The debugging client's commands that arrived while its script ran, for its next stop.
    pending: VecDeque<Request>,
    /// A YES session's own script watch: told of a shutdown, so that no `pcall` of the
    /// script catches the error that ends it.
    watch: Option<std::sync::Arc<ScriptWatch>>,
}

/// How much of a database a YES session's view copies whole (for KEYS, SCAN, DBSIZE...):
/// the copy is made on the executor thread, and a fork would share the pages instead.
const WHOLE_DB_MAX_BYTES: usize = 128 << 20;

/// The error another debugging client gets while a YES session runs (sessions share the
/// executor thread; Redis forks one child per session).
const ONE_AT_A_TIME: &str = "ERR another Lua debugging session is running: try again when it ends";

impl Executor {
    /// Starts a session for the client's EVAL of `body`; a refusal is the EVAL's reply.
    pub(super) fn begin_debug(&mut self, client: &mut Client, body: &[u8], mode: LuaDebug) -> Option<Reply> {
        if self.debugging.is_some() {
            client.refuse_debug_session();
            return Some(Reply::error(ONE_AT_A_TIME));
        }
        // What the client is owed leaves first (the session writes to it as it goes), once
        // the log holds what it answers, as for any reply.
        if self.logging() {
            self.flush_log();
            // Only under `appendfsync always` do replies wait for an fsync (under everysec
            // a written record is as durable as it gets): rare (a pipelined write before a
            // debugging EVAL), so the executor syncs itself rather than wait for the thread.
            if self.must_wait_for_log(client) {
                if let Some(aof) = self.log.aof.as_ref() {
                    let _ = aof.log.sync();
                }
            }
            if self.must_wait_for_log(client) {
                client.refuse_debug_session();
                return Some(Reply::error("ERR the log could not be made durable before the debugging session"));
            }
        }
        let limit = self.output_limit(client);
        Self::send_output(client, limit);
        crate::log::warning(if mode == LuaDebug::Sync {
            "Redis synchronous debugging eval session started"
        } else {
            "Lua debugging session started (private view)"
        });
        self.debugging = Some(Session { mode, id: client.id, gone: None, pending: VecDeque::new(), watch: None });
        if let Some(inbox) = &self.inbox {
            inbox.hold(Some(client.id));
        }
        debugger::start(body, self.server.settings.busy_threshold_ms);
        None
    }

    /// Ends the session: what remains of it and `<endsession>` go out before the EVAL's
    /// reply, and the connection closes after that reply.
    pub(super) fn end_debug(&mut self, client: &mut Client) {
        let logs = debugger::finish();
        client.out.extend_from_slice(&logs);
        client.close_after_reply = true;
        client.lua_debug = None;
        let session = self.debugging.take();
        if let Some(inbox) = self.inbox.as_ref() {
            inbox.hold(None);
            // Its later requests (the connection closes after the reply) and its
            // disconnection go back to the inbox, for when the client is in the table again.
            if let Some(session) = session {
                for req in session.gone.into_iter().chain(session.pending.into_iter().rev()) {
                    inbox.keep_front(req);
                }
            }
        }
        crate::log::warning("Lua debugging session ended");
    }

    /// A YES session's run: a Lua state of its own, on a private view of the data.
    pub(super) fn run_private_script(&mut self, client: &mut Client, args: &[Bytes], call: &ScriptCall, started: Instant) -> Reply {
        let watch = std::sync::Arc::new(ScriptWatch::default());
        let mut engine = match ScriptEngine::new(watch.clone()) {
            Ok(engine) => engine,
            Err(e) => {
                client.refuse_debug_session();
                return Reply::Error(format!("ERR could not start a Lua state: {e}").into());
            }
        };
        if let Some(refusal) = self.begin_debug(client, &args[1], LuaDebug::Yes) {
            return refusal;
        }
        self.private_session_ran = true;
        if let Some(session) = self.debugging.as_mut() {
            session.watch = Some(watch);
        }
        let reply = match engine.load(&args[1]).map(|s| s.sha.to_string()) {
            Err(e) => Reply::Error(e.into()),
            Ok(sha) => {
                self.now_ms = self.anchor.ms_at(started);
                let (saved_db, saved_proto) = (client.db, client.proto);
                client.caller_proto = Some(saved_proto);
                client.in_script = true;
                client.deny_blocking = true;
                let view = PrivateView::new(self.ks.dbs.len(), self.now_ms);
                let mut bridge = ScriptBridge::new(self, client, call, false);
                bridge.private = Some(Box::new(view));
                let keys = &args[3..3 + call.numkeys];
                let (reply, _) = engine.run_debugged(&sha, keys, &args[3 + call.numkeys..], &mut bridge);
                client.in_script = false;
                client.deny_blocking = false;
                client.db = saved_db;
                client.proto = saved_proto;
                client.caller_proto = None;
                reply
            }
        };
        self.end_debug(client);
        self.last_script_outcome = None;
        reply
    }

    /// A stop: sends the debugger's lines, then waits for the client's next command.
    pub(super) fn debug_io(&mut self, client: &mut Client, out: Vec<u8>) -> DebugInput {
        client.out.extend_from_slice(&out);
        let limit = self.output_limit(client);
        Self::send_output(client, limit);
        let Some(inbox) = self.inbox.clone() else { return DebugInput::Gone };
        let Some(mode) = self.debugging.as_ref().map(|s| s.mode) else { return DebugInput::Gone };
        let id = client.id;
        let mut next_cron = Instant::now();
        loop {
            if self.stopping_session() {
                return DebugInput::Abort(debugger::SHUTTING_DOWN);
            }
            let Some(session) = self.debugging.as_mut() else { return DebugInput::Gone };
            // What the client sent before it left counts first.
            let pending = session.pending.pop_front();
            if pending.is_none() && session.gone.is_some() {
                return DebugInput::Gone;
            }
            let wait = Duration::from_millis(1000 / self.server.settings.hz.max(1));
            let req = match (pending, mode) {
                (Some(req), _) => Ok(req),
                (None, LuaDebug::Sync) => inbox.next_of(id, wait),
                (None, LuaDebug::Yes) => inbox.next(wait),
            };
            match req {
                Ok(Request::Commands { id: from, cmds, protocol_error }) if from == id => {
                    let before = client.flags.inflight.fetch_sub(1, Ordering::AcqRel);
                    if before >= MAX_INFLIGHT {
                        client.flags.resume.notify_one();
                    }
                    // One batch is one read of Redis's debugger: its first command counts,
                    // the rest of the buffer is dropped. Bad protocol (the connection stops
                    // reading after it) is the debugger's protocol error (an empty command).
                    let first = if protocol_error.is_some() { None } else { cmds.into_iter().next() };
                    return DebugInput::Command(first.unwrap_or_default());
                }
                Ok(req @ Request::Disconnect { id: from }) if from == id => {
                    if let Some(session) = self.debugging.as_mut() {
                        session.gone = Some(req);
                    }
                    return DebugInput::Gone;
                }
                Ok(req) => self.serve_beside_session(req, &inbox),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return DebugInput::Gone,
            }
            if mode == LuaDebug::Yes && Instant::now() >= next_cron {
                self.idle_beside_session();
                next_cron = Instant::now() + Duration::from_micros(1_000_000 / self.server.settings.hz.max(1));
            }
        }
    }

    /// While a YES session's script runs: the other clients' waiting requests are served
    /// (the debugging client's wait for its next stop). True when the script must end now.
    pub(super) fn debug_poll(&mut self) -> bool {
        if self.debugging.as_ref().is_none_or(|s| s.mode != LuaDebug::Yes) {
            return false;
        }
        let Some(inbox) = self.inbox.clone() else { return false };
        inbox.drive_network();
        // A bounded turn (a steady stream of requests must not hold the script).
        for _ in 0..super::MAX_BATCH {
            if self.server.shutdown.is_some() {
                break;
            }
            let Some(req) = inbox.try_next() else { break };
            if !self.is_session_client(&req) {
                self.serve_beside_session(req, &inbox);
                continue;
            }
            if let Some(session) = self.debugging.as_mut() {
                match req {
                    Request::Disconnect { .. } => session.gone = Some(req),
                    req => session.pending.push_back(req),
                }
            }
        }
        self.stopping_session()
    }

    /// Whether the server is shutting down: the session's script must end (its watch is
    /// told, so the error that ends it cannot be caught).
    fn stopping_session(&self) -> bool {
        if self.server.shutdown.is_none() {
            return false;
        }
        if let Some(watch) = self.debugging.as_ref().and_then(|s| s.watch.as_ref()) {
            watch.request_shutdown();
        }
        true
    }

    /// Whether `req` comes from the client whose session runs (it is out of the table).
    fn is_session_client(&self, req: &Request) -> bool {
        match req {
            Request::Commands { id, .. } | Request::Disconnect { id } => self.debugging.as_ref().is_some_and(|s| s.id == *id),
            _ => false,
        }
    }

    /// Handles another client's request in the middle of a YES session, as the main loop
    /// would: the session's own state (the debugger's, the clock, the command depth) is set
    /// aside meanwhile, so that the request's commands commit their log records and see the
    /// time as any other command does.
    fn serve_beside_session(&mut self, req: Request, inbox: &super::inbox::Inbox) {
        let (depth, mark, now) = (self.exec_depth, self.clock_mark.take(), self.now_ms);
        self.exec_depth = 0;
        debugger::suspended(|| {
            self.handle(req);
            self.release_batch(inbox);
            self.between_batches();
        });
        (self.exec_depth, self.clock_mark, self.now_ms) = (depth, mark, now);
    }

    /// What the main loop does between batches (timeouts of blocked clients, the cron, the
    /// background walks) while a YES session waits for its client.
    fn idle_beside_session(&mut self) {
        let (depth, now) = (self.exec_depth, self.now_ms);
        self.exec_depth = 0;
        debugger::suspended(|| {
            self.release_later();
            self.between_batches();
            let hz = self.server.settings.hz;
            self.cron(hz);
            let _ = self.step_background();
            self.release_replies();
        });
        (self.exec_depth, self.now_ms) = (depth, now);
    }
}

impl PrivateView {
    pub(super) fn new(databases: usize, now_ms: i64) -> PrivateView {
        PrivateView { ks: Keyspace::new(databases), copied: HashSet::new(), whole: vec![false; databases.max(1)], now_ms }
    }

    /// Copies into the view what `cmd` may read or change that it does not hold yet; an
    /// error when that would copy a database past [`WHOLE_DB_MAX_BYTES`].
    fn prepare(&mut self, real: &Keyspace, db: usize, cmd: &CommandSpec, args: &[Bytes]) -> Result<(), Reply> {
        let named = crate::spec::keyspec::command_keys(cmd, args);
        // Commands over keys they do not name, as the table's traits and categories say:
        // flushes, SWAPDB and COPY ... DB copy every database; KEYS, SCAN, DBSIZE, RANDOMKEY
        // (keyspace commands naming no key) and SORT (its BY/GET patterns) the client's.
        let every_db = cmd.is(Trait::EmptiesDatabases) || cmd.is(Trait::OtherDatabase);
        let keyless = named.is_empty() && cmd.acl.contains(&"@keyspace");
        let patterns = cmd.is(Trait::PatternKeys);
        if every_db {
            let total: usize = (0..real.dbs.len()).filter(|&d| !self.whole[d]).map(|d| real.db(d).mem_usage()).sum();
            self.check_copy(total, "every database", cmd)?;
            for d in 0..real.dbs.len() {
                self.copy_db(real, d, cmd)?;
            }
        } else if keyless || patterns || cmd.is(Trait::ArbitraryKeys) {
            self.copy_db(real, db, cmd)?;
        }
        for &(p, _) in &named {
            self.copy_key(real, db, &args[p]);
        }
        // MOVE: the key in the target database too.
        if cmd.is(Trait::MovesKey) {
            let target = args.get(2).and_then(|a| crate::util::parse_i64(a)).and_then(|d| usize::try_from(d).ok());
            if let (Some(target), Some(&(p, _))) = (target, named.first()) {
                self.copy_key(real, target, &args[p]);
            }
        }
        Ok(())
    }

    fn copy_key(&mut self, real: &Keyspace, db: usize, key: &Bytes) {
        if db >= real.dbs.len() || self.whole[db] || !self.copied.insert((db, key.clone())) {
            return;
        }
        if let Some(entry) = real.db(db).peek(key) {
            self.ks.db_mut(db).insert_entry(key.clone(), entry.clone(), real.db(db).expire_of(key, entry));
        }
    }

    /// Refuses a whole-database copy of `bytes` past [`WHOLE_DB_MAX_BYTES`].
    fn check_copy(&self, bytes: usize, what: &str, cmd: &CommandSpec) -> Result<(), Reply> {
        if bytes <= WHOLE_DB_MAX_BYTES {
            return Ok(());
        }
        Err(Reply::Error(
            format!(
                "ERR '{}' would copy {what} ({} MB) into the debugging session's private view, past its {} MB bound",
                cmd.name,
                bytes >> 20,
                WHOLE_DB_MAX_BYTES >> 20
            )
            .into(),
        ))
    }

    fn copy_db(&mut self, real: &Keyspace, db: usize, cmd: &CommandSpec) -> Result<(), Reply> {
        if db >= real.dbs.len() || self.whole[db] {
            return Ok(());
        }
        self.check_copy(real.db(db).mem_usage(), &format!("database {db}"), cmd)?;
        let d = real.db(db);
        for (key, entry) in d.iter() {
            let expire_at = d.expire_of(key, entry);
            let key = Bytes::copy_from_slice(key);
            if !self.copied.contains(&(db, key.clone())) {
                self.ks.db_mut(db).insert_entry(key, entry.clone(), expire_at);
            }
        }
        self.whole[db] = true;
        Ok(())
    }
}

impl ScriptBridge<'_> {
    /// Runs a YES session's command on its private view: the handler only, its effects
    /// marked private (`Effects::private`: PUBLISH counts its receivers but delivers
    /// nothing, as Redis's forked session does; a flush fails no real WATCH), every signal,
    /// event and logged form dropped, and the dirty counter left as it was (no save point
    /// or replica sees it).
    pub(super) fn run_private(&mut self, cmd: &'static CommandSpec, argv: &[Bytes]) -> Reply {
        let Some(view) = self.private.as_mut() else { return Reply::error("ERR no private view") };
        let db = self.client.db;
        if let Err(refusal) = view.prepare(&self.exec.ks, db, cmd, argv) {
            return refusal;
        }
        std::mem::swap(&mut self.exec.ks, &mut view.ks);
        let dirty = self.exec.server.dirty;
        let mut scratch = Effects { private: true, ..Effects::default() };
        let mut ctx = commands::Ctx::new(&mut self.exec.ks, self.client, &mut self.exec.server, view.now_ms, &mut scratch);
        let mut reply = commands::call(cmd, &mut ctx, argv);
        if let Next::Block(request) = std::mem::take(&mut scratch.next) {
            reply = request.timeout_reply;
        }
        std::mem::swap(&mut self.exec.ks, &mut view.ks);
        view.ks.expired.clear();
        view.ks.evicted.clear();
        view.ks.deletions.clear();
        view.ks.key_misses.clear();
        self.exec.server.dirty = dirty;
        reply
    }
}
