//! The executor's side of the durable log: what each command contributes, in a form that
//! replays to the same state at any later time (loading it back is `load.rs`).
//!
//! Records of one top-level command (a command, a whole EXEC, a whole script) are collected
//! in `pending` and committed together when it ends: more than one record (a transaction,
//! a random-dirty script's effects, deletions by expiry before a command) is wrapped in
//! MULTI/EXEC. Nothing of a script reaches the log before it ends. The batch's records are
//! written (and synced, per `appendfsync`) by `flush_log` before any reply of the batch
//! leaves (`release_replies`).

use bytes::Bytes;

use super::load::Applying;
use super::Executor;
use crate::aof::stream::{MemLog, Stream};
use crate::aof::{self, Aof};
use crate::commands::scripting::ScriptCall;
use crate::commands::{Logged, ScriptCacheChange};
use crate::protocol::Reply;
use crate::scripting::ScriptOutcome;
use crate::scripting::{REPL_AOF, REPL_REPLICA};
use crate::state::{Client, ClientId, PersistRequest};

/// The durable log and what is on its way to it.
#[derive(Default)]
pub(super) struct LogPipeline {
    /// The log (`appendonly yes`).
    pub aof: Option<Aof>,
    /// The stream without the log (`appendonly no` once a replica attached): records framed
    /// as the log frames them, handed to replicas and the backlog, not kept.
    pub mem: Option<MemLog>,
    /// Records of the running top-level command.
    pub pending: Vec<Pending>,
    /// A log operation asked for during the running top-level command, and whether its
    /// result is that command's reply (see `execute`).
    pub deferred: Option<(crate::state::PersistRequest, bool)>,
    /// Clients whose replies wait for a failed log write to succeed.
    pub held: Vec<ClientId>,
    /// The executor's own request channel, for the log's fsync thread to wake it.
    pub wake_tx: Option<crate::conn::RequestTx>,
    /// The running top-level command touches keys it does not name (SCAN, RANDOMKEY): the
    /// DELs of what it expired are not wrapped in MULTI/EXEC, as Redis propagates them.
    pub unwrapped: bool,
}

impl LogPipeline {
    /// The stream's records: the log's, or the in-memory stream's.
    pub fn stream(&self) -> Option<&Stream> {
        match (&self.aof, &self.mem) {
            (Some(a), _) => Some(&a.rec),
            (None, m) => m.as_ref().map(|m| &m.rec),
        }
    }

    pub fn stream_mut(&mut self) -> Option<&mut Stream> {
        match (&mut self.aof, &mut self.mem) {
            (Some(a), _) => Some(&mut a.rec),
            (None, m) => m.as_mut().map(|m| &mut m.rec),
        }
    }

    /// The stream offset at the end of the records buffered so far.
    pub fn buffered_end(&self) -> Option<u64> {
        match (&self.aof, &self.mem) {
            (Some(a), _) => Some(a.buffered_end()),
            (None, m) => m.as_ref().map(|m| m.buffered_end()),
        }
    }
}

/// One record waiting for the end of its top-level command.
pub(super) struct Pending {
    db: usize,
    argv: Vec<Bytes>,
    /// A script's frozen time (the `#MS:` annotation before it).
    time_ms: Option<i64>,
}

/// A PUBLISH or SPUBLISH record.
pub(super) fn is_publish(argv: &[Bytes]) -> bool {
    argv.first().is_some_and(|n| n.eq_ignore_ascii_case(b"publish") || n.eq_ignore_ascii_case(b"spublish"))
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

impl Executor {
    /// Whether commands are being logged now.
    pub(super) fn logging(&self) -> bool {
        (self.log.aof.is_some() || self.log.mem.is_some()) && !self.loading()
    }

    /// Whether commands produce records of their own now: clients' commands on a primary, and
    /// the commands of a redis-server primary's stream on its replica (their forms as their
    /// handlers state them). Not while the log loads, not a Vermilion primary's stream (the
    /// log copies it as received), and not a replica's clients' writes (as Redis keeps a
    /// writable replica's own writes from its sub-replicas).
    pub(super) fn recording(&self) -> bool {
        let own = self.log.stream().is_some_and(|s| !s.verbatim);
        own && match self.load.applying {
            Applying::Clients => self.server.repl.master.is_none(),
            Applying::LiveStream => true,
            Applying::Load => false,
        }
    }

    /// Queues what a client's command that changed data contributes (not a script's inner
    /// commands: the script's record covers them), in the form its handler stated.
    pub(super) fn log_command(&mut self, client: &Client, args: &[Bytes], logged: Logged) {
        self.log_deletions();
        match logged {
            // A PUBLISH changes no data: it never comes here (see `log_publish`).
            Logged::AsSent | Logged::ToReplicas => self.log.pending.push(Pending { db: client.db, argv: args.to_vec(), time_ms: None }),
            Logged::As(records) => {
                for argv in records {
                    self.log.pending.push(Pending { db: client.db, argv, time_ms: None });
                }
            }
        }
    }

    /// SCRIPT LOAD (a body new to this log epoch) and SCRIPT FLUSH are logged, so that an
    /// EVALSHA in the log always finds its body on replay.
    pub(super) fn log_script_admin(&mut self, client: &Client, args: &[Bytes], change: ScriptCacheChange) {
        let Some(rec) = self.log.stream_mut() else { return };
        match change {
            ScriptCacheChange::Loaded(sha) => {
                if rec.epoch_scripts.insert(sha) {
                    self.log.pending.push(Pending { db: client.db, argv: args.to_vec(), time_ms: None });
                }
            }
            ScriptCacheChange::Flushed => {
                rec.epoch_scripts.clear();
                self.log.pending.push(Pending { db: client.db, argv: args.to_vec(), time_ms: None });
            }
        }
    }

    /// Whether a PUBLISH goes in the log: only for replicas (Redis propagates it to them and
    /// not to its AOF), so only while one is connected, and not while the log cannot be
    /// written (a message must not wait for the disk: Redis's PUBLISH works then).
    pub(super) fn publishing_to_replicas(&self) -> bool {
        self.recording() && !self.server.repl.replicas.is_empty() && self.log.aof.as_ref().is_none_or(|a| a.write_error.is_none())
    }

    /// Queues a PUBLISH or SPUBLISH for the replicas' subscribers (loading skips it).
    pub(super) fn log_publish(&mut self, client: &Client, args: &[Bytes]) {
        self.log_deletions();
        self.log.pending.push(Pending { db: client.db, argv: args.to_vec(), time_ms: None });
    }

    /// Queues a DEL for every key expired or evicted since the last call: replay expires
    /// nothing by itself.
    pub(super) fn log_deletions(&mut self) {
        for (db, key) in std::mem::take(&mut self.ks.deletions) {
            self.log.pending.push(Pending { db, argv: vec![b("DEL"), key], time_ms: None });
        }
    }

    /// Queues a script's record: the whole EVAL (with its frozen time) when it is
    /// deterministic, its write effects otherwise; nothing when it wrote nothing.
    pub(super) fn log_script(&mut self, client: &Client, args: &[Bytes], call: &ScriptCall, outcome: &ScriptOutcome) {
        self.log_deletions();
        let deletion = |i: usize| outcome.deletions.contains(&i);
        // Writes are logged per set_repl; deletions by expiry always, in their place (a
        // random-dirty script's effects) or first (before a whole EVAL, which expires the
        // same keys at the same frozen time on replay).
        let effects = outcome.effects.iter().enumerate().filter(|(i, e)| {
            if (outcome.wrote || outcome.published) && outcome.random_dirty {
                // A message is for the replicas: it follows the set_repl replica bit.
                let bit = if is_publish(&e.argv) { REPL_REPLICA } else { REPL_AOF };
                deletion(*i) || e.repl as i64 & bit != 0
            } else {
                deletion(*i)
            }
        });
        for (_, e) in effects {
            self.log.pending.push(Pending { db: e.db, argv: e.argv.clone(), time_ms: None });
        }
        if !outcome.wrote || outcome.random_dirty {
            return;
        }
        // redis-server replicas may not have the body (an RDB file holds no scripts), and a
        // SCRIPT FLUSH later in the batch would leave the plain feed none to put in: with
        // them attached, a script always goes out whole.
        let plain = self.server.repl.plain.is_some();
        let Some(rec) = self.log.stream_mut() else { return };
        let mut argv = args.to_vec();
        let is_evalsha = args[0].len() >= 7 && args[0][..7].eq_ignore_ascii_case(b"evalsha");
        if plain || !rec.epoch_scripts.contains(&*call.sha) {
            if is_evalsha {
                if let Some(script) = self.server.scripts.as_ref().and_then(|e| e.get(call.sha.as_bytes())) {
                    argv[0] = b("EVAL");
                    argv[1] = script.body.clone();
                }
            }
            rec.epoch_scripts.insert(call.sha.to_string());
        }
        self.log.pending.push(Pending { db: client.db, argv, time_ms: Some(outcome.time_ms) });
    }

    /// Moves the records of the finished top-level command into the log buffer; true if
    /// there were any.
    pub(super) fn commit_pending(&mut self) -> bool {
        self.log_deletions();
        let pending = std::mem::take(&mut self.log.pending);
        let unwrapped = std::mem::take(&mut self.log.unwrapped);
        let Some(rec) = self.log.stream_mut() else { return false };
        if pending.is_empty() {
            return false;
        }
        let wrap = pending.len() > 1 && !unwrapped;
        if wrap {
            rec.command(pending[0].db, &[b"MULTI".as_slice()], None);
        }
        for p in &pending {
            rec.command(p.db, &p.argv, p.time_ms);
        }
        if wrap {
            let db = rec.selected_db.unwrap_or(0);
            rec.command(db, &[b"EXEC".as_slice()], None);
        }
        true
    }

    /// Writes the batch's records before its replies leave (under `always` the fsync thread
    /// syncs them). False when the write failed: the replies that depend on it must wait.
    /// A batch is written even while a sync runs: the fsync thread then starts the next sync
    /// as soon as the running one ends, with no round trip through the executor, so the disk
    /// never idles while records wait (the replies of one batch go out while the next syncs).
    pub(super) fn flush_log(&mut self) -> bool {
        if let Some(m) = self.log.mem.as_mut() {
            m.flush();
        }
        let Some(aof) = self.log.aof.as_mut() else { return true };
        let started = std::time::Instant::now();
        let ok = aof.flush().is_ok();
        self.server.aof_info = Some(aof.info());
        self.latency_sample("aof-write", started);
        ok
    }

    /// What the fsync thread calls after a sync under `always`: a message that wakes the
    /// executor, which then releases the replies the sync covers.
    pub(super) fn log_waker(&self) -> Option<aof::Waker> {
        let tx = self.log.wake_tx.clone()?;
        Some(std::sync::Arc::new(move || {
            let _ = tx.send(super::Request::LogSynced);
        }))
    }

    /// Whether `client`'s replies must wait for the log: its records are not yet where the
    /// fsync policy wants them.
    pub(super) fn must_wait_for_log(&self, client: &Client) -> bool {
        client.log_wait > 0 && self.log.aof.as_ref().is_some_and(|a| a.durable_offset() < client.log_wait)
    }

    /// The MISCONF refusal while the log cannot be written.
    /// The log request a top-level command stated (`Next::Persist`), run once its records
    /// are committed; `Some` when the request's outcome is the command's reply.
    pub(super) fn run_deferred_persist(&mut self, client: &mut Client) -> Option<Reply> {
        let (request, own_reply) = self.log.deferred.take()?;
        let reload = matches!(request, PersistRequest::Reload | PersistRequest::LoadAof);
        if reload {
            // Every database is emptied and loaded again (Redis's emptyData signals the
            // flush): watchers of present keys fail, trackers drop everything.
            for db in 0..self.ks.dbs.len() {
                crate::commands::touch_all_watched(&self.ks, &mut self.server, Some(&mut *client), db, None, self.now_ms);
            }
            if self.server.tracking.clients > 0 {
                self.invalidate_all(client);
            }
        }
        let result = self.persist_command(request);
        if reload {
            // The log starts again from its files: no offset of before applies.
            client.log_wait = 0;
        }
        own_reply.then_some(result)
    }

    pub(super) fn log_write_refusal(&self) -> Option<Reply> {
        let err = self.log.aof.as_ref()?.write_error.as_ref()?;
        Some(Reply::Error(format!("MISCONF Errors writing to the AOF file: {err}").into()))
    }
}
