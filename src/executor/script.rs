//! Running scripts: the executor's side of the Lua bridge.
//!
//! `run_script` applies the checks Redis makes before a script starts (shebang flags against
//! EVAL_RO and maxmemory), freezes the clock, lends the caller's client to the script (its
//! database and protocol are restored afterwards) and hands the engine a [`ScriptBridge`].
//! The bridge is where `redis.call` lands: it applies the script rules (commands not allowed
//! from scripts, read-only scripts, OOM before the first write, the kill race), runs the
//! command through the same `run_command` as clients' commands, marks the script
//! random-dirty, records its write effects, and sorts the replies whose order is undefined.

use bytes::Bytes;

use super::replicate::{MASTERDOWN, READONLY};
use super::Executor;
use crate::commands::scripting::ScriptCall;
use crate::commands::{self, CommandSpec, Flag, Logged, Next, Resolved, Trait};
use crate::protocol::{ProtocolVersion, Reply};
use crate::scripting::debugger;
use crate::scripting::{Effect, RunEnd, ScriptHost, ScriptOutcome};
use crate::state::{Client, LuaDebug};

/// The `set_repl` targets of a deletion effect: the log and replicas, always.
const DELETION_REPL: u8 = 3;

/// Errors of `redis.call` that the script's text and the data alone decide (a replay of the
/// whole script meets them again). Any other error makes the script random-dirty.
const DETERMINISTIC_ERRORS: &[&str] = &[
    "WRONGTYPE ",
    "ERR Unknown Redis command called from script",
    "ERR Wrong number of args calling Redis command from script",
    "ERR This Redis command is not allowed from script",
    "ERR syntax error",
    "ERR value is not an integer or out of range",
    "ERR value is not a valid float",
];

/// What the script rules do with a command's call, worked out once per command.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ScriptClass {
    Plain,
    /// Its reply is sorted for the script (`Trait::ScriptSorted`).
    Sorted,
    /// HGETALL: its pairs are sorted by field.
    SortedPairs,
    /// Its result is not a function of the dataset and the script's frozen time: calling it
    /// makes the script random-dirty. TTL/PTTL are not (time is frozen and travels with the
    /// record). Besides the commands Redis tips as nondeterministic, those whose result
    /// comes from state the log does not replay: subscribers (PUBLISH and PUBSUB), memory
    /// figures, and DBSIZE (it counts expired keys that active expiry has not deleted yet).
    Random,
}

fn script_class(cmd: &CommandSpec) -> ScriptClass {
    static CLASSES: std::sync::OnceLock<Vec<ScriptClass>> = std::sync::OnceLock::new();
    let classes = CLASSES.get_or_init(|| {
        let mut classes = Vec::new();
        for c in commands::all_commands() {
            if c.id >= classes.len() {
                classes.resize(c.id + 1, ScriptClass::Plain);
            }
            classes[c.id] = if c.is(Trait::ScriptSorted) {
                ScriptClass::Sorted
            } else if c.is(Trait::ScriptSortedPairs) {
                ScriptClass::SortedPairs
            } else if (!c.is(Trait::ScriptDeterministic) && c.tips.iter().any(|t| t.starts_with("nondeterministic_output")))
                || c.is(Trait::ScriptRandom)
            {
                ScriptClass::Random
            } else {
                ScriptClass::Plain
            };
        }
        classes
    });
    classes.get(cmd.id).copied().unwrap_or(ScriptClass::Plain)
}

/// The bridge's per-run state.
pub(super) struct ScriptBridge<'a> {
    pub(super) exec: &'a mut Executor,
    pub(super) client: &'a mut Client,
    read_only: bool,
    allow_oom: bool,
    oom_at_start: bool,
    /// Whether the write effects are collected: the log needs them (a random-dirty script
    /// is logged as its effects); without one they would be built and dropped for nothing.
    effects: bool,
    /// The watch already agreed to this script's writes (one compare-and-swap per run).
    write_allowed: bool,
    pub outcome: ScriptOutcome,
    /// A debugging session runs (SCRIPT DEBUG): commands and replies may be shown.
    debugging: bool,
    /// A YES debugging session's data (see debug_session.rs).
    pub(super) private: Option<Box<super::debug_session::PrivateView>>,
    /// The last `redis.call` reached its command (else the script rules refused it).
    ran: bool,
    /// Cluster mode: the slot the script's keys are in so far (its declared keys' first),
    /// and whether it may use keys of other slots (`allow-cross-slot-keys`).
    pub(super) cluster_slot: Option<u16>,
    cross_slot_ok: bool,
}

impl<'a> ScriptBridge<'a> {
    /// A bridge for `call` run by `client`; `oom`: memory was over maxmemory at its start.
    pub(super) fn new(exec: &'a mut Executor, client: &'a mut Client, call: &ScriptCall, oom: bool) -> ScriptBridge<'a> {
        let debugging = client.lua_debug.is_some() && crate::scripting::debugger::active();
        ScriptBridge {
            exec,
            client,
            read_only: call.read_only || call.flags.no_writes,
            allow_oom: call.flags.allow_oom,
            oom_at_start: oom,
            effects: false,
            write_allowed: false,
            outcome: ScriptOutcome::default(),
            debugging,
            private: None,
            ran: false,
            cluster_slot: None,
            cross_slot_ok: call.flags.allow_cross_slot_keys,
        }
    }
}

impl Executor {
    /// Runs a script EVAL & co. asked for; returns the caller's reply.
    /// `started`: when the EVAL began (the script's frozen time and its busy clock).
    pub(super) fn run_script(&mut self, client: &mut Client, args: &[Bytes], call: &ScriptCall, started: std::time::Instant) -> Reply {
        // A script refused before it runs leaves no outcome (nothing to log).
        self.last_script_outcome = None;
        let Some(mut engine) = self.server.scripts.take() else {
            return Reply::error("ERR the scripting engine is not available");
        };
        let flags = call.flags;
        // Replaying the log: what ran then runs now, whatever memory says.
        let oom = !self.loading() && self.server.settings.maxmemory > 0 && !self.within_maxmemory();
        let refusal = if flags.compat {
            // A script without a shebang never runs on a stale replica (EVAL itself may).
            (!self.loading() && self.stale_replica()).then(|| Reply::error(MASTERDOWN))
        } else {
            self.script_refusal(client, flags, call.read_only, oom)
        };
        // SCRIPT DEBUG: YES runs apart (a Lua state and data of its own), SYNC here.
        let debug_mode = client.lua_debug.filter(|_| !call.function && !self.loading() && !client.in_exec());
        if let Some(refusal) = refusal {
            self.server.scripts = Some(engine);
            if debug_mode.is_some() {
                client.refuse_debug_session();
            }
            return refusal;
        }
        if debug_mode == Some(LuaDebug::Yes) {
            self.server.scripts = Some(engine);
            return self.run_private_script(client, args, call, started);
        }
        let debug = debug_mode.is_some();
        if debug {
            if let Some(refusal) = self.begin_debug(client, &args[1], LuaDebug::Sync) {
                self.server.scripts = Some(engine);
                return refusal;
            }
        }
        let keys = &args[3..3 + call.numkeys];
        let argv = &args[3 + call.numkeys..];
        let threshold = self.server.settings.busy_threshold_ms;
        // Time stands still for the whole script (a replayed script's is its record's).
        self.now_ms = self.load.replay_time_ms.take().unwrap_or_else(|| self.anchor.ms_at(started));
        let time_ms = self.now_ms;
        // Deletions so far belong before the script's record.
        if self.recording() {
            self.log_deletions();
        }
        let (saved_db, saved_proto) = (client.db, client.proto);
        client.caller_proto = Some(saved_proto);
        client.in_script = true;
        client.deny_blocking = true;
        let watch = engine.watch.clone();
        // A record of the stream or of the log being loaded: never killed.
        let running = call.function.then(|| {
            let name = engine.functions.get(call.sha.as_bytes()).map_or_else(|| call.sha.to_string(), |f| f.name.clone());
            crate::scripting::RunningFunction {
                name,
                argv: args.to_vec(),
                started,
                libraries: engine.functions.library_count(),
                functions: engine.functions.registered_count(),
            }
        });
        let rollback = self.wants_rollback(flags.rollback);
        if rollback {
            self.start_undo();
        }
        watch.start(self.loading(), running, rollback);
        if self.server.tracking.clients > 0 {
            self.script_keys = keys.to_vec();
        }
        let busy = crate::scripting::Busy { started, threshold_ms: threshold, pump: self.busy_pump.clone() };
        let effects = self.recording() || self.keep_script_effects;
        let mut bridge = ScriptBridge::new(self, client, call, oom);
        bridge.cluster_slot = args.get(3).filter(|_| call.numkeys > 0).map(|k| crate::cluster::slot::key_slot(k));
        bridge.effects = effects;
        // A function is always logged as its effects: a library keeps state between calls
        // (its upvalues) that calls the log does not hold (FCALL_RO, no-writes functions,
        // failures) move, so a replay would not start from the same state. So is a script
        // debugged in SYNC mode: a replay would not stop where its user stopped it.
        bridge.outcome = ScriptOutcome { time_ms, random_dirty: call.function || debug, ..ScriptOutcome::default() };
        let (reply, end) = if call.function {
            engine.run_function(call.sha.as_bytes(), keys, argv, &mut bridge, busy)
        } else if debug {
            engine.run_debugged(&call.sha, keys, argv, &mut bridge)
        } else {
            engine.run(&call.sha, keys, argv, &mut bridge, busy)
        };
        let mut outcome = std::mem::take(&mut bridge.outcome);
        let killed = watch.finish();
        let mut reply = reply;
        if rollback && end != RunEnd::Shutdown {
            // Killed after its last line ran: it was told +OK, so it ends as killed.
            if killed && !reply.is_error() {
                reply = Reply::error("ERR Script killed by user with SCRIPT KILL...");
            }
            let failed = reply.is_error() || end == RunEnd::Killed;
            let (undone, overflowed) = self.finish_undo(client, failed);
            if undone {
                // Nothing of the script is logged: only the deletions of keys that had
                // expired (they are gone for good).
                // Its PUBLISHes stay too: the local subscribers have the messages, so the
                // replicas' get them (logged as effects, never as the whole script).
                let deletions = std::mem::take(&mut outcome.deletions);
                let effects = std::mem::take(&mut outcome.effects);
                let kept: Vec<(bool, Effect)> = effects
                    .into_iter()
                    .enumerate()
                    .filter(|(i, e)| deletions.contains(i) || super::persist::is_publish(&e.argv))
                    .map(|(i, e)| (deletions.contains(&i), e))
                    .collect();
                outcome.deletions = kept.iter().enumerate().filter(|(_, (d, _))| *d).map(|(i, _)| i).collect();
                outcome.effects = kept.into_iter().map(|(_, e)| e).collect();
                outcome.wrote = false;
                outcome.random_dirty = true;
                if overflowed && !reply.is_error() {
                    reply = Reply::error(super::rollback::OVERFLOW);
                }
            }
        }
        self.undo = None;
        self.script_keys.clear();
        client.in_script = false;
        client.deny_blocking = false;
        client.db = saved_db;
        client.proto = saved_proto;
        client.caller_proto = None;
        self.server.scripts = Some(engine);
        self.last_script_outcome = Some(outcome);
        if debug {
            self.end_debug(client);
        }
        if end == RunEnd::Shutdown {
            // Nothing of this script (nor of the transaction around it) reaches the log.
            self.last_script_outcome = None;
            self.log.pending.clear();
            self.ks.deletions.clear();
            self.server.shutdown = Some(crate::state::ShutdownRequest { save: crate::state::SaveOnShutdown::NoSave, force: false });
            client.close_after_reply = true;
            return Reply::NoReply;
        }
        reply
    }
}

impl Executor {
    /// Why a script with declared flags (a shebang or a function's registration) may not run.
    /// Redis turns those flags into the command's (write, deny-oom, stale) before its usual
    /// checks, so a client's call gets those checks' texts in their order; inside EXEC the
    /// script's own texts.
    fn script_refusal(&self, client: &Client, flags: crate::scripting::ScriptFlags, ro_command: bool, oom: bool) -> Option<Reply> {
        if self.loading() {
            return None;
        }
        let top = !client.in_exec();
        if flags.no_cluster && self.server.cluster.is_some() {
            return Some(Reply::error("ERR Can not run script on cluster, 'no-cluster' flag is set."));
        }
        if oom && !flags.allow_oom && !flags.no_writes {
            return Some(Reply::error(if top {
                "OOM command not allowed when used memory > 'maxmemory'."
            } else {
                "OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'"
            }));
        }
        if !flags.no_writes {
            if top {
                if let Some(refusal) = self.log_write_refusal().or_else(|| self.replication_write_refusal()) {
                    return Some(refusal);
                }
            } else if self.read_only_replica() {
                return Some(Reply::error(READONLY));
            }
        }
        if !flags.allow_stale && self.stale_replica() {
            return Some(Reply::error(if top {
                MASTERDOWN
            } else {
                "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to 'no' and 'allow-stale' flag is not set on the script."
            }));
        }
        if !flags.no_writes && ro_command {
            return Some(Reply::error("ERR Can not execute a script with write flag using *_ro command."));
        }
        None
    }
}

impl ScriptHost for ScriptBridge<'_> {
    fn call(&mut self, argv: &mut Vec<Bytes>, cached: Option<&'static CommandSpec>, resp: ProtocolVersion, repl: u8) -> Reply {
        if self.debugging {
            return self.debugged_call(argv, cached, resp, repl);
        }
        let reply = self.dispatch(argv, cached, resp, repl);
        // An error may come from what a replay of the whole script would not meet: the
        // caller's ACL rights, the settings of the moment (proto-max-bulk-len, maxmemory), a
        // replica's link. The script is then logged as its effects, what it did here; only
        // errors that the script and the data alone decide keep it one record.
        if let Reply::Error(text) = &reply {
            if !DETERMINISTIC_ERRORS.iter().any(|e| text.starts_with(e)) {
                self.outcome.random_dirty = true;
            }
        }
        reply
    }

    /// Replies of other clients produced earlier in this batch (and those the busy answers
    /// added) leave while the script is busy, not only after it; the log is written first,
    /// with nothing of the running script in it (its record comes when it ends).
    fn busy(&mut self) {
        self.exec.serve_while_busy();
        self.exec.release_replies();
    }

    fn debug_io(&mut self, out: Vec<u8>) -> debugger::DebugInput {
        self.exec.debug_io(self.client, out)
    }

    fn debug_poll(&mut self) -> bool {
        self.exec.debug_poll()
    }

    /// The answer depends on the caller's user, which a replay does not have.
    fn acl_check_cmd(&mut self, argv: &[Bytes]) -> Option<bool> {
        self.outcome.random_dirty = true;
        let cmd = match commands::resolve(argv) {
            Resolved::Found(cmd) | Resolved::WrongArity(cmd) => cmd,
            Resolved::Unknown | Resolved::UnknownSubcommand => return None,
        };
        Some(self.exec.acl_verdict(self.client, cmd, argv).is_ok())
    }

    /// The script read something of the Lua state (an address, the collector's figures).
    fn nondeterministic(&mut self) {
        self.outcome.random_dirty = true;
    }
}

impl ScriptBridge<'_> {
    /// `redis.call` in a debugging session: while stepping, the command and its reply (or
    /// the script rules' refusal) are shown.
    fn debugged_call(&mut self, argv: &mut Vec<Bytes>, cached: Option<&'static CommandSpec>, resp: ProtocolVersion, repl: u8) -> Reply {
        debugger::log_command(argv);
        self.ran = false;
        let reply = self.dispatch(argv, cached, resp, repl);
        match &reply {
            // Redis's texts: a generic error without its code, another with its dash.
            Reply::Error(text) if !self.ran => match text.strip_prefix("ERR ") {
                Some(plain) => debugger::log_error(plain),
                None => debugger::log_error(&format!("-{text}")),
            },
            _ => debugger::log_reply(&reply, resp),
        }
        reply
    }

    /// `redis.call`/`redis.pcall`: the command resolved, checked against the script rules,
    /// then run.
    fn dispatch(&mut self, argv: &mut Vec<Bytes>, cached: Option<&'static CommandSpec>, resp: ProtocolVersion, repl: u8) -> Reply {
        if self.exec.server.script_watch.must_abort() {
            return Reply::error("ERR Script killed by user with SCRIPT KILL...");
        }
        let cmd = match cached.filter(|cmd| cmd.arity_ok(argv.len())) {
            Some(cmd) => cmd,
            None => match commands::resolve(argv) {
                Resolved::Found(cmd) => {
                    // A subcommand depends on more than the name: not cached.
                    if cmd.subcommands.is_empty() && !cmd.name.contains('|') {
                        crate::scripting::remember_command(cmd, &argv[0]);
                    }
                    cmd
                }
                Resolved::Unknown | Resolved::UnknownSubcommand => return Reply::error("ERR Unknown Redis command called from script"),
                Resolved::WrongArity(cmd) => {
                    self.exec.server.stats.command(cmd.id).rejected_calls += 1;
                    return Reply::error("ERR Wrong number of args calling Redis command from script");
                }
            },
        };
        if let Some(refusal) = self.refusal(cmd, argv) {
            // A command refused here counts as rejected, as Redis's scriptCall does.
            self.exec.server.stats.command(cmd.id).rejected_calls += 1;
            return refusal;
        }
        self.run(cmd, argv, resp, repl)
    }

    /// Why a script may not run `cmd` now (Redis's checks in scriptCall, in its order). A
    /// write that passes the write checks marks the script as writing here, before the
    /// stale-replica check, as Redis sets SCRIPT_WRITE_DIRTY.
    fn refusal(&mut self, cmd: &'static CommandSpec, argv: &[Bytes]) -> Option<Reply> {
        if cmd.has(Flag::NoScript) && !self.exec.server.allow_noscript_in_scripts {
            return Some(Reply::error("ERR This Redis command is not allowed from script"));
        }
        if let Err(refusal) = self.exec.acl_check(self.client, cmd, argv) {
            return Some(refusal);
        }
        let write = cmd.has(Flag::Write);
        // PUBLISH, PFCOUNT and the like may replicate: not for read-only scripts either.
        if (write || cmd.has(Flag::MayReplicate)) && self.read_only {
            return Some(Reply::error("ERR Write commands are not allowed from read-only scripts."));
        }
        // Before the first write command (one that changed nothing counts, as in Redis).
        if self.oom_at_start && !self.allow_oom && !self.write_allowed && cmd.has(Flag::DenyOom) {
            return Some(Reply::error("OOM command not allowed when used memory > 'maxmemory'."));
        }
        // A SCRIPT KILL accepted before the first write wins: nothing is written after it.
        if write && !self.write_allowed && self.private.is_none() && !self.exec.server.script_watch.may_write() {
            return Some(Reply::error("ERR Script killed by user with SCRIPT KILL..."));
        }
        if write {
            if let Some(refusal) = self.exec.log_write_refusal().or_else(|| self.exec.replication_write_refusal()) {
                return Some(refusal);
            }
            self.write_allowed = true;
        }
        // An allow-stale script on a stale replica runs only the commands allowed there.
        if !cmd.has(Flag::Stale) && !self.exec.loading() && self.exec.stale_replica() {
            return Some(Reply::error("ERR Can not execute the command on a stale replica"));
        }
        self.exec.script_cluster_refusal(self.client, cmd, argv, &mut self.cluster_slot, self.cross_slot_ok)
    }

    /// Runs a command the script may run, and records what it did (effects, random-dirty).
    fn run(&mut self, cmd: &'static CommandSpec, argv: &mut Vec<Bytes>, resp: ProtocolVersion, repl: u8) -> Reply {
        let class = script_class(cmd);
        if class == ScriptClass::Random {
            self.outcome.random_dirty = true;
        }
        let db = self.client.db;
        if let Some(refused) = self.exec.undo_capture(db, cmd, argv) {
            return refused;
        }
        self.client.proto = resp;
        self.ran = true;
        if self.private.is_some() {
            let mut reply = self.run_private(cmd, argv);
            match class {
                ScriptClass::Sorted => sort_reply(&mut reply),
                ScriptClass::SortedPairs => sort_pairs(&mut reply),
                ScriptClass::Plain | ScriptClass::Random => {}
            }
            return reply;
        }
        let dirty_before = self.exec.server.dirty;
        // Timed for the slow log only: a script's commands are recorded there on their own,
        // as Redis's are (their time also counts as the script's).
        let started = (self.exec.server.settings.slowlog_threshold_us >= 0 && !cmd.has(Flag::SkipSlowlog)).then(crate::clock::Stamp::now);
        let super::Ran { mut reply, next, logged, redacted, .. } = self.exec.run_command(self.client, cmd, argv, None);
        if let Some(started) = started {
            let us = crate::clock::Stamp::now().micros_since(started);
            self.exec.slowlog_record(self.client, argv, &redacted, us);
        }
        // Keys the command expired (or memory evicted) go before its write, in order.
        for (db, key) in std::mem::take(&mut self.exec.ks.deletions) {
            self.outcome.deletions.push(self.outcome.effects.len());
            self.outcome.effects.push(Effect { db, argv: vec![Bytes::from_static(b"DEL"), key], repl: DELETION_REPL });
        }
        match next {
            Next::Reply => {}
            // A blocking command in a script acts as its non-blocking form: it times out at once.
            Next::Block(request) => reply = request.timeout_reply,
            // Flagged noscript: refused before they run.
            Next::RunScript(_) | Next::Exec | Next::Replication(_) | Next::Persist(_) | Next::Shutdown(_) => {}
        }
        if logged == Logged::ToReplicas && self.effects && !reply.is_error() && self.exec.publishing_to_replicas() {
            self.outcome.published = true;
            self.outcome.effects.push(Effect { db, argv: argv.clone(), repl });
        }
        if self.exec.server.dirty != dirty_before {
            self.outcome.wrote = true;
            // Effects are kept in their logged form (absolute times, SPOP as SREM...).
            if self.effects {
                match logged {
                    Logged::As(forms) => self.outcome.effects.extend(forms.into_iter().map(|argv| Effect { db, argv, repl })),
                    Logged::AsSent | Logged::ToReplicas => self.outcome.effects.push(Effect { db, argv: std::mem::take(argv), repl }),
                }
            }
        }
        match class {
            ScriptClass::Sorted => sort_reply(&mut reply),
            ScriptClass::SortedPairs => sort_pairs(&mut reply),
            ScriptClass::Plain | ScriptClass::Random => {}
        }
        reply
    }
}

fn bytes_of(r: &Reply) -> &[u8] {
    match r {
        Reply::Bulk(b) => b,
        _ => &[],
    }
}

/// Sorts an array (or set) reply's elements by their bytes.
fn sort_reply(reply: &mut Reply) {
    if let Reply::Array(items) | Reply::Set(items) = reply {
        items.sort_by(|a, b| bytes_of(a).cmp(bytes_of(b)));
    }
}

/// Sorts a field/value reply by field.
fn sort_pairs(reply: &mut Reply) {
    match reply {
        Reply::Map(pairs) => pairs.sort_by(|a, b| bytes_of(&a.0).cmp(bytes_of(&b.0))),
        Reply::Array(items) if items.len() % 2 == 0 => {
            let mut pairs: Vec<(Reply, Reply)> = Vec::with_capacity(items.len() / 2);
            let mut it = std::mem::take(items).into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((k, v));
            }
            pairs.sort_by(|a, b| bytes_of(&a.0).cmp(bytes_of(&b.0)));
            *items = pairs.into_iter().flat_map(|(k, v)| [k, v]).collect();
        }
        _ => {}
    }
}
