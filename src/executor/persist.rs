//! The executor's side of the durable log: what each command contributes, in a form that
//! replays to the same state at any later time (loading it back is `load.rs`).
//!
//! Records of one top-level command (a command, a whole EXEC, a whole script) are collected
//! in `pending` and committed together when it ends: more than one record (a transaction,
//! a random-dirty script's effects, deletions by expiry before a command) is wrapped in
//! MULTI/EXEC. Nothing of a script reaches the log before it ends. The batch's records are
//! written (and synced, per `appendfsync`) by `flush_log` before any reply of the batch
//! leaves (`release_replies`).

use std::time::Instant;

use bytes::Bytes;

use super::Executor;
use crate::aof::{self, snapshot, Aof, AofDir, Fsync};
use crate::commands::scripting::ScriptCall;
use crate::commands::CommandSpec;
use crate::log;
use crate::protocol::Reply;
use crate::scripting::ScriptOutcome;
use crate::scripting::{REPL_AOF, REPL_REPLICA};
use crate::state::Client;

/// One record waiting for the end of its top-level command.
pub(super) struct Pending {
    db: usize,
    argv: Vec<Bytes>,
    /// A script's frozen time (the `#MS:` annotation before it).
    time_ms: Option<i64>,
}

/// A PUBLISH or SPUBLISH record.
fn is_publish(argv: &[Bytes]) -> bool {
    argv.first().is_some_and(|n| n.eq_ignore_ascii_case(b"publish") || n.eq_ignore_ascii_case(b"spublish"))
}

/// The commands whose messages go to replicas (PUBLISH, SPUBLISH).
pub(super) fn publishes(cmd: &CommandSpec) -> bool {
    matches!(cmd.name, "publish" | "spublish")
}

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn has_option(args: &[Bytes], names: &[&str]) -> bool {
    args.iter().any(|a| names.iter().any(|n| a.eq_ignore_ascii_case(n.as_bytes())))
}

fn bulk(r: &Reply) -> Option<&Bytes> {
    match r {
        Reply::Bulk(b) => Some(b),
        _ => None,
    }
}

fn items(r: &Reply) -> &[Reply] {
    match r {
        Reply::Array(v) | Reply::Set(v) => v,
        _ => &[],
    }
}

/// Commands whose logged form differs from what the client sent.
const REWRITTEN: &[&str] = &[
    "expire",
    "pexpire",
    "expireat",
    "pexpireat",
    "setex",
    "psetex",
    "set",
    "getex",
    "incrbyfloat",
    "hincrbyfloat",
    "spop",
    "blpop",
    "brpop",
    "bzpopmin",
    "bzpopmax",
    "brpoplpush",
    "blmove",
    "blmpop",
    "bzmpop",
    "restore",
    "migrate",
    "debug",
];

/// The deterministic form of a command that changed data: relative times made absolute
/// from the key's resulting expiry, random and blocking commands turned into what they did;
/// None when the command is logged as sent. `ks` is the keyspace after the command; `db` the
/// database it ran in.
pub(super) fn rewritten(cmd: &CommandSpec, args: &[Bytes], reply: &Reply, ks: &crate::db::Keyspace, db: usize) -> Option<Vec<Vec<Bytes>>> {
    if !REWRITTEN.contains(&cmd.name) {
        return None;
    }
    Some(rewrite(cmd, args, reply, ks, db))
}

fn key_at(args: &[Bytes], i: usize) -> Bytes {
    args.get(i).cloned().unwrap_or_default()
}

fn rewrite(cmd: &CommandSpec, args: &[Bytes], reply: &Reply, ks: &crate::db::Keyspace, db: usize) -> Vec<Vec<Bytes>> {
    let key = || args.get(1).cloned().unwrap_or_default();
    // The key's expiry as the command left it: PEXPIREAT, or DEL when it is gone already.
    let expiry_of = |key: Bytes| -> Vec<Bytes> {
        match ks.db(db).peek(&key).and_then(|e| e.expire_at()) {
            Some(at) => vec![b("PEXPIREAT"), key, b(&at.to_string())],
            None if ks.db(db).contains_key(&key) => vec![b("PERSIST"), key],
            None => vec![b("DEL"), key],
        }
    };
    let set_with_expiry = |key: Bytes, value: Bytes| -> Vec<Bytes> {
        match ks.db(db).peek(&key).and_then(|e| e.expire_at()) {
            Some(at) => vec![b("SET"), key, value, b("PXAT"), b(&at.to_string())],
            None => vec![b("DEL"), key],
        }
    };
    match cmd.name {
        "expire" | "pexpire" | "expireat" | "pexpireat" => vec![expiry_of(key())],
        "setex" | "psetex" if args.len() == 4 => vec![set_with_expiry(key(), args[3].clone())],
        "set" if args.len() > 3 && has_option(&args[3..], &["ex", "px", "exat", "pxat"]) => vec![set_with_expiry(key(), args[2].clone())],
        "getex" if args.len() > 2 => vec![expiry_of(key())],
        // What left for another server is deleted here (never run MIGRATE again on replay).
        "migrate" => {
            let keys: Vec<Bytes> = match args.iter().position(|a| a.eq_ignore_ascii_case(b"keys")) {
                Some(i) if args[3].is_empty() => args[i + 1..].to_vec(),
                _ => vec![key_at(args, 3)],
            };
            keys.into_iter().filter(|k| !ks.db(db).contains_key(k)).map(|k| vec![b("DEL"), k]).collect()
        }
        // The TTL made absolute; a key already expired (or replaced by nothing) is a DEL.
        "restore" => match ks.db(db).peek(&key()) {
            Some(e) => {
                let at = e.expire_at().unwrap_or(0).to_string();
                vec![vec![b("RESTORE"), key(), b(&at), args[3].clone(), b("REPLACE"), b("ABSTTL")]]
            }
            None => vec![vec![b("DEL"), key()]],
        },
        // The keys DEBUG POPULATE created (it leaves existing ones alone), as MSETs; no
        // other DEBUG subcommand changes data.
        "debug" if args.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"populate")) => populated(args, ks, db),
        "debug" => Vec::new(),
        "incrbyfloat" => match ks.db(db).peek(&key()).map(|e| &e.value) {
            Some(crate::db::Value::Str(s)) => vec![vec![b("SET"), key(), Bytes::copy_from_slice(&s.data), b("KEEPTTL")]],
            _ => vec![args.to_vec()],
        },
        "hincrbyfloat" if args.len() == 4 => match bulk(reply) {
            Some(v) => vec![vec![b("HSET"), key(), args[2].clone(), v.clone()]],
            None => vec![args.to_vec()],
        },
        "spop" => {
            let members: Vec<Bytes> = match reply {
                Reply::Bulk(m) => vec![m.clone()],
                r => items(r).iter().filter_map(bulk).cloned().collect(),
            };
            if members.is_empty() {
                return Vec::new();
            }
            let mut argv = vec![b("SREM"), key()];
            argv.extend(members);
            vec![argv]
        }
        "blpop" | "brpop" | "bzpopmin" | "bzpopmax" => match items(reply).first().and_then(bulk) {
            Some(k) => {
                let name = match cmd.name {
                    "blpop" => "LPOP",
                    "brpop" => "RPOP",
                    "bzpopmin" => "ZPOPMIN",
                    _ => "ZPOPMAX",
                };
                vec![vec![b(name), k.clone()]]
            }
            None => Vec::new(),
        },
        "brpoplpush" if args.len() == 4 => vec![vec![b("RPOPLPUSH"), args[1].clone(), args[2].clone()]],
        "blmove" if args.len() == 6 => vec![vec![b("LMOVE"), args[1].clone(), args[2].clone(), args[3].clone(), args[4].clone()]],
        "blmpop" | "bzmpop" => {
            let (Some(k), Some(popped)) = (items(reply).first().and_then(bulk), items(reply).get(1)) else {
                return Vec::new();
            };
            let numkeys = args.get(2).and_then(|n| crate::util::parse_i64(n)).unwrap_or(0).max(0) as usize;
            let Some(side) = args.get(3 + numkeys) else { return vec![args.to_vec()] };
            let name = if cmd.name == "blmpop" { "LMPOP" } else { "ZMPOP" };
            let count = items(popped).len().max(1);
            vec![vec![b(name), b("1"), k.clone(), side.clone(), b("COUNT"), b(&count.to_string())]]
        }
        _ => vec![args.to_vec()],
    }
}

/// MSET records (1,000 keys each) for the keys of DEBUG POPULATE `args` that now hold the
/// value it gives them and no expiry: the ones it created, and possibly older ones equal to
/// them, which the MSET leaves as they are.
fn populated(args: &[Bytes], ks: &crate::db::Keyspace, db: usize) -> Vec<Vec<Bytes>> {
    use crate::commands::{populate_key, populate_value};
    let number = |i: usize| args.get(i).and_then(|a| crate::util::parse_i64(a)).unwrap_or(0).max(0) as u64;
    let (count, size) = (number(2), number(4) as usize);
    let mut records = Vec::new();
    let mut mset = vec![b("MSET")];
    for j in 0..count {
        let key = populate_key(args, j);
        let value = populate_value(j, size);
        let made = ks
            .db(db)
            .peek(&key)
            .is_some_and(|e| e.expire_at().is_none() && matches!(&e.value, crate::db::Value::Str(s) if s.data[..] == value[..]));
        if made {
            mset.push(Bytes::from(key));
            mset.push(Bytes::from(value));
        }
        if mset.len() > 2000 {
            records.push(std::mem::replace(&mut mset, vec![b("MSET")]));
        }
    }
    if mset.len() > 1 {
        records.push(mset);
    }
    records
}

impl Executor {
    /// Whether commands are being logged now.
    pub(super) fn logging(&self) -> bool {
        self.aof.is_some() && !self.loading
    }

    /// Whether commands produce records of their own now: not while loading, and not on a
    /// replica, whose log is its primary's stream copied as received.
    pub(super) fn recording(&self) -> bool {
        self.aof.as_ref().is_some_and(|a| !a.verbatim) && !self.loading
    }

    /// Queues what a client's command that changed data contributes (not a script's inner
    /// commands: the script's record covers them).
    pub(super) fn log_command(&mut self, client: &Client, cmd: &CommandSpec, args: &[Bytes], reply: &Reply) {
        self.log_deletions();
        let Some(records) = rewritten(cmd, args, reply, &self.ks, client.db) else {
            self.pending.push(Pending { db: client.db, argv: args.to_vec(), time_ms: None });
            return;
        };
        for argv in records {
            self.pending.push(Pending { db: client.db, argv, time_ms: None });
        }
    }

    /// SCRIPT LOAD (a body new to this log epoch) and SCRIPT FLUSH are logged, so that an
    /// EVALSHA in the log always finds its body on replay.
    pub(super) fn log_script_admin(&mut self, client: &Client, cmd: &CommandSpec, args: &[Bytes], reply: &Reply) {
        let Some(aof) = self.aof.as_mut() else { return };
        match cmd.name {
            "script|load" => {
                if let Reply::Bulk(sha) = reply {
                    let sha = String::from_utf8_lossy(sha).into_owned();
                    if aof.epoch_scripts.insert(sha) {
                        self.pending.push(Pending { db: client.db, argv: args.to_vec(), time_ms: None });
                    }
                }
            }
            "script|flush" if !reply.is_error() => {
                aof.epoch_scripts.clear();
                self.pending.push(Pending { db: client.db, argv: args.to_vec(), time_ms: None });
            }
            _ => {}
        }
    }

    /// Whether a PUBLISH goes in the log: only for replicas (Redis propagates it to them and
    /// not to its AOF), so only while one is connected, and not while the log cannot be
    /// written (a message must not wait for the disk: Redis's PUBLISH works then).
    pub(super) fn publishing_to_replicas(&self) -> bool {
        self.recording() && !self.server.repl.replicas.is_empty() && self.aof.as_ref().is_some_and(|a| a.write_error.is_none())
    }

    /// Queues a PUBLISH or SPUBLISH for the replicas' subscribers (loading skips it).
    pub(super) fn log_publish(&mut self, client: &Client, args: &[Bytes]) {
        self.log_deletions();
        self.pending.push(Pending { db: client.db, argv: args.to_vec(), time_ms: None });
    }

    /// Queues a DEL for every key expired or evicted since the last call: replay expires
    /// nothing by itself.
    pub(super) fn log_deletions(&mut self) {
        for (db, key) in std::mem::take(&mut self.ks.deletions) {
            self.pending.push(Pending { db, argv: vec![b("DEL"), key], time_ms: None });
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
            self.pending.push(Pending { db: e.db, argv: e.argv.clone(), time_ms: None });
        }
        if !outcome.wrote || outcome.random_dirty {
            return;
        }
        let Some(aof) = self.aof.as_mut() else { return };
        let mut argv = args.to_vec();
        let is_evalsha = args[0].len() >= 7 && args[0][..7].eq_ignore_ascii_case(b"evalsha");
        if !aof.epoch_scripts.contains(&*call.sha) {
            if is_evalsha {
                if let Some(script) = self.server.scripts.as_ref().and_then(|e| e.get(call.sha.as_bytes())) {
                    argv[0] = b("EVAL");
                    argv[1] = script.body.clone();
                }
            }
            aof.epoch_scripts.insert(call.sha.to_string());
        }
        self.pending.push(Pending { db: client.db, argv, time_ms: Some(outcome.time_ms) });
    }

    /// Moves the records of the finished top-level command into the log buffer; true if
    /// there were any.
    pub(super) fn commit_pending(&mut self) -> bool {
        self.log_deletions();
        let pending = std::mem::take(&mut self.pending);
        let Some(aof) = self.aof.as_mut() else { return false };
        if pending.is_empty() {
            return false;
        }
        let wrap = pending.len() > 1;
        if wrap {
            aof.command(pending[0].db, &[b"MULTI".as_slice()], None);
        }
        for p in &pending {
            aof.command(p.db, &p.argv, p.time_ms);
        }
        if wrap {
            let db = aof.selected_db.unwrap_or(0);
            aof.command(db, &[b"EXEC".as_slice()], None);
        }
        true
    }

    /// Writes the batch's records before its replies leave (under `always` the fsync thread
    /// syncs them). False when the write failed: the replies that depend on it must wait.
    /// A batch is written even while a sync runs: the fsync thread then starts the next sync
    /// as soon as the running one ends, with no round trip through the executor, so the disk
    /// never idles while records wait (the replies of one batch go out while the next syncs).
    pub(super) fn flush_log(&mut self) -> bool {
        let Some(aof) = self.aof.as_mut() else { return true };
        let ok = aof.flush().is_ok();
        self.server.aof_info = Some(aof.info());
        ok
    }

    /// What the fsync thread calls after a sync under `always`: a message that wakes the
    /// executor, which then releases the replies the sync covers.
    pub(super) fn log_waker(&self) -> Option<aof::Waker> {
        let tx = self.wake_tx.clone()?;
        Some(std::sync::Arc::new(move || {
            let _ = tx.send(super::Request::LogSynced);
        }))
    }

    /// Whether `client`'s replies must wait for the log: its records are not yet where the
    /// fsync policy wants them.
    pub(super) fn must_wait_for_log(&self, client: &Client) -> bool {
        client.log_wait > 0 && self.aof.as_ref().is_some_and(|a| a.durable_offset() < client.log_wait)
    }

    /// The MISCONF refusal while the log cannot be written.
    pub(super) fn log_write_refusal(&self) -> Option<Reply> {
        let err = self.aof.as_ref()?.write_error.as_ref()?;
        Some(Reply::Error(format!("MISCONF Errors writing to the AOF file: {err}").into()))
    }

    /// The log's directory: `appenddirname` under the working directory, which the server
    /// entered at start (`dir`); made absolute so a later CONFIG SET dir does not move it.
    fn aof_dir(&self) -> AofDir {
        let c = &self.server.config;
        let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
        AofDir::new(&cwd, c.get("appenddirname"), c.get("appendfilename"))
    }

    /// Every cached script as (sha, body); on a replica also the stream's (its log's
    /// EVALSHA records need them even after a local SCRIPT FLUSH).
    fn script_table(&self) -> Vec<(String, Bytes)> {
        let mut v: Vec<(String, Bytes)> =
            self.server.scripts.as_ref().map(|e| e.scripts().map(|s| (s.sha.to_string(), s.body.clone())).collect()).unwrap_or_default();
        if self.aof.as_ref().is_some_and(|a| a.verbatim) {
            v.extend(self.stream_scripts.iter().map(|(sha, body)| (sha.clone(), body.clone())));
        }
        v.sort();
        v.dedup_by(|a, b| a.0 == b.0);
        v
    }

    /// What a new base snapshot carries besides the keys: the script bodies and the
    /// function libraries.
    pub(super) fn snapshot_scripting(&self) -> snapshot::Scripting {
        let libraries = self.server.scripts.as_ref().map(|e| e.functions.libraries().map(|l| l.code.clone()).collect()).unwrap_or_default();
        snapshot::Scripting { scripts: self.script_table().into_iter().map(|(_, body)| body).collect(), libraries }
    }

    /// Opens the log at start (`appendonly yes`): loads what the directory holds, or starts
    /// a fresh generation. An error means the server must not start.
    pub fn start_aof(&mut self) -> Result<(), String> {
        if self.server.config.get("appendonly") != "yes" {
            return Ok(());
        }
        let started = Instant::now();
        let mut dir = self.aof_dir();
        let policy = Fsync::parse(self.server.config.get("appendfsync"));
        let mut aof = if dir.read_manifest()? {
            for name in dir.remove_strays() {
                log::notice(&format!("Removed {name}, left behind by an interrupted rewrite"));
            }
            let (incr, origin) = self.load_dir(&mut dir)?;
            let mut aof = Aof::open(dir, &incr, policy, origin, self.log_waker())
                .map_err(|e| format!("Can't open the append-only file {}: {e}", incr.display()))?;
            aof.epoch_scripts = self.stream_scripts.keys().cloned().collect();
            let secs = started.elapsed().as_secs_f64();
            log::notice(&format!("DB loaded from append only file: {secs:.3} seconds"));
            aof
        } else {
            let snap = snapshot::encode(&self.ks, &self.snapshot_scripting(), 0, 0);
            let incr =
                dir.new_generation(&snap).map_err(|e| format!("Can't create the append-only directory {}: {e}", dir.path.display()))?;
            log::notice(&format!("Creating AOF base file {} on server start", dir.manifest.base.as_ref().map_or("", |b| b.name.as_str())));
            Aof::open(dir, &incr, policy, 0, self.log_waker()).map_err(|e| format!("Can't open the append-only file: {e}"))?
        };
        aof.stats.base_size = aof.dir.total_size();
        aof.stats.incr_at_base = aof.log.size;
        self.adopt_log(aof);
        Ok(())
    }

    /// Makes `aof` the open log, in the mode replication calls for: a replica's log copies
    /// its primary's stream (no records of its own, no deletions of its own); with replicas
    /// attached the segments written are kept for them.
    pub(super) fn adopt_log(&mut self, mut aof: Aof) {
        aof.verbatim = self.server.repl.master.is_some();
        aof.tee = self.server.repl.backlog.is_some();
        self.ks.deletions.clear();
        self.ks.log_deletions = !aof.verbatim;
        self.server.aof_info = Some(aof.info());
        self.aof = Some(aof);
    }

    /// BGREWRITEAOF: starts a rewrite (a new incremental file now, the new base snapshot
    /// serialized between batches by `rewrite_tick`).
    pub(super) fn rewrite_aof(&mut self) -> Result<(), String> {
        let scripting = self.snapshot_scripting();
        let Some(aof) = self.aof.as_mut() else { return Err("ERR the append only file is off".into()) };
        if aof.rewrite.is_some() {
            return Err("ERR Background append only file rewriting already in progress".into());
        }
        aof.flush()?;
        let started = Instant::now();
        let stream_db = if aof.verbatim { self.master_client.as_ref().map_or(self.master_db, |c| c.db) as u32 } else { 0 };
        if let Err(e) = aof.begin_rewrite(&mut self.ks, &scripting, stream_db) {
            aof.stats.last_rewrite_ok = false;
            log::warning(&format!("Can't rewrite append only file in background: {e}"));
            return Err(format!("ERR Background AOF rewrite failed: {e}"));
        }
        log::notice(&format!("Background append only file rewriting started (the executor paused {} us)", started.elapsed().as_micros()));
        self.server.aof_info = Some(aof.info());
        Ok(())
    }

    /// Whether a rewrite is serializing now (the executor then keeps stepping it).
    pub(super) fn rewriting(&self) -> bool {
        self.aof.as_ref().is_some_and(|a| a.rewrite.is_some())
    }

    /// One slice of the running rewrite (about `budget`), and its completion once the
    /// writer thread is done.
    pub(super) fn rewrite_tick(&mut self, budget: std::time::Duration) {
        let Some(aof) = self.aof.as_mut() else { return };
        let Some(rw) = aof.rewrite.as_mut() else { return };
        if !rw.walked() {
            rw.step(&mut self.ks, budget);
            return;
        }
        let Some(result) = rw.poll() else { return };
        self.end_rewrite(result);
    }

    fn end_rewrite(&mut self, result: Result<u64, String>) {
        let Some(aof) = self.aof.as_mut() else { return };
        let Some(rw) = aof.rewrite.take() else { return };
        let (ms, keys) = (rw.started.elapsed().as_millis() as u64, rw.keys);
        let temp = rw.temp_path.clone();
        let finishing = Instant::now();
        let result = result.and_then(|_| aof.finish_rewrite(rw).map_err(|e| e.to_string()));
        let pause = finishing.elapsed().as_micros();
        let ok = result.is_ok();
        aof.stats.last_rewrite_ok = ok;
        aof.stats.last_rewrite_ms = Some(ms);
        if ok {
            // A new base is this server's snapshot (LASTSAVE, INFO rdb_last_save_time).
            self.server.lastsave = crate::clock::now_ms() / 1000;
            self.server.dirty = 0;
        }
        match result {
            Ok(()) => log::notice(&format!(
                "Background AOF rewrite finished successfully ({keys} keys, {ms} ms; the switch paused the executor {pause} us)"
            )),
            Err(e) => {
                let _ = std::fs::remove_file(temp);
                log::warning(&format!("Background AOF rewrite failed: {e}"));
            }
        }
        self.server.aof_info = Some(aof.info());
        // Replicas waiting for a full sync get this base (or are dropped if it failed).
        self.complete_full_syncs(ok);
    }

    /// Runs a rewrite to its end now (DEBUG RELOAD).
    fn rewrite_now(&mut self) -> Result<(), String> {
        if !self.rewriting() {
            self.rewrite_aof()?;
        }
        let Some(rw) = self.aof.as_mut().and_then(|a| a.rewrite.as_mut()) else { return Ok(()) };
        rw.complete_walk(&mut self.ks);
        let result = rw.wait();
        self.end_rewrite(result.clone());
        result.map(|_| ()).map_err(|e| format!("ERR Background AOF rewrite failed: {e}"))
    }

    /// Before a write command runs during a rewrite: the keys it may change are serialized
    /// first (or, when they are not known in advance, every remaining key).
    pub(super) fn capture_before_write(&mut self, db: usize, cmd: &CommandSpec, args: &[Bytes]) {
        let Some(rw) = self.aof.as_mut().and_then(|a| a.rewrite.as_mut()) else { return };
        match keys_written(cmd, args) {
            Some(positions) => {
                for p in positions {
                    rw.capture(&mut self.ks, db, &args[p]);
                }
            }
            None => rw.complete_walk(&mut self.ks),
        }
    }

    /// CONFIG SET appendonly / appendfsync. Turning the log on writes a new generation from
    /// the data in memory (as Redis rewrites then).
    fn reconfigure_aof(&mut self) -> Result<(), String> {
        let on = self.server.config.get("appendonly") == "yes";
        let policy = Fsync::parse(self.server.config.get("appendfsync"));
        match (on, self.aof.is_some()) {
            (true, false) => {
                let mut dir = self.aof_dir();
                let _ = dir.read_manifest();
                // The log continues the replication stream's offsets (0 for a server that
                // never replicated).
                let offset = self.server.repl.offset;
                let stream_db = if self.server.repl.master.is_some() { self.master_db as u32 } else { 0 };
                let snap = snapshot::encode(&self.ks, &self.snapshot_scripting(), offset, stream_db);
                let incr = dir.new_generation(&snap).map_err(|e| format!("ERR Can't create the append-only files: {e}"))?;
                let mut aof = Aof::open(dir, &incr, policy, offset, self.log_waker()).map_err(|e| format!("ERR {e}"))?;
                aof.epoch_scripts = self.script_table().into_iter().map(|(sha, _)| sha).collect();
                // A replica's log copies a stream; a primary's is its own.
                let replid = self.server.repl.master.is_some().then(|| self.server.repl.replid.clone());
                if let Err(e) = aof.dir.set_replid(replid) {
                    log::warning(&format!("Can't update the AOF manifest: {e}"));
                }
                self.adopt_log(aof);
            }
            (false, true) => {
                self.close_aof();
                // Without a log the stream's end is counted in memory from here.
                self.server.repl.offset = self.aof.as_ref().map_or(self.server.repl.offset, |a| a.buffered_end());
                self.aof = None;
                // The log is the replication stream: without it replicas cannot follow, and
                // the writes from now on are in no stream, so a new history begins.
                self.disconnect_replicas();
                self.server.repl.backlog = None;
                if self.server.repl.master.is_none() {
                    let repl = &mut self.server.repl;
                    repl.replid = crate::replication::new_replid();
                    repl.replid2 = crate::replication::NO_REPLID.to_string();
                    repl.second_offset = None;
                }
                // Replies held for a failing log go now: there is no log to wait for.
                self.touched.append(&mut self.held);
                self.server.aof_info = None;
                self.ks.log_deletions = false;
            }
            (true, true) => {
                if let Some(aof) = self.aof.as_mut() {
                    aof.set_policy(policy);
                }
            }
            (false, false) => {}
        }
        Ok(())
    }

    /// Auto-rewrite (`auto-aof-rewrite-percentage` over `auto-aof-rewrite-min-size`).
    pub(super) fn maybe_auto_rewrite(&mut self) {
        let Some(aof) = self.aof.as_ref() else { return };
        let pct = self.server.config.get_int("auto-aof-rewrite-percentage");
        let min = self.server.config.get_int("auto-aof-rewrite-min-size").max(0) as u64;
        // Sizes known in memory: no file-system call on the executor every cron tick.
        let size = aof.info().current_size;
        let base = aof.stats.base_size.max(1);
        if aof.rewrite.is_none() && pct > 0 && size > min && (size - base.min(size)) * 100 / base >= pct as u64 {
            log::notice(&format!("Starting automatic rewriting of AOF on {}% growth", (size - base.min(size)) * 100 / base));
            let _ = self.rewrite_aof();
        }
    }

    /// Shutdown: everything buffered is written and fsynced.
    pub(super) fn close_aof(&mut self) {
        self.commit_pending();
        if let Some(aof) = self.aof.as_mut() {
            aof.abandon_rewrite();
            if let Err(e) = aof.flush() {
                log::warning(&format!("Error writing the AOF on shutdown: {e}"));
            }
            if let Err(e) = aof.log.sync() {
                log::warning(&format!("Error fsyncing the AOF on shutdown: {e}"));
            }
            // The file at rest ends with its last record (the next start cuts zeros left
            // by a failure here).
            if let Err(e) = aof.log.trim() {
                log::warning(&format!("Error cutting the AOF's preallocated space on shutdown: {e}"));
            }
        }
    }

    /// Runs BGREWRITEAOF, DEBUG RELOAD or DEBUG LOADAOF for a client; returns its reply.
    pub(super) fn persist_command(&mut self, request: crate::state::PersistRequest) -> Reply {
        use crate::state::PersistRequest;
        let result = match request {
            PersistRequest::Rewrite => self.rewrite_aof().map(|_| Reply::status("Background append only file rewriting started")),
            // SAVE and BGSAVE: the snapshot is a compaction of the log (a new base).
            PersistRequest::Save => self.save_snapshot(),
            PersistRequest::BgSave { schedule } => self.bgsave(schedule),
            PersistRequest::Reload => self.reload_aof(true).map(|_| Reply::OK),
            PersistRequest::LoadAof => self.reload_aof(false).map(|_| Reply::OK),
            PersistRequest::Reconfigure => self.reconfigure_aof().map(|_| Reply::OK),
        };
        result.unwrap_or_else(|e| Reply::Error(e.into()))
    }

    /// SAVE: a compaction run to its end before the reply.
    fn save_snapshot(&mut self) -> Result<Reply, String> {
        if self.aof.is_none() {
            return Err(NO_LOG_TO_SAVE.into());
        }
        if self.rewriting() {
            return Err("ERR Background save already in progress".into());
        }
        self.rewrite_now()?;
        Ok(Reply::OK)
    }

    /// BGSAVE [SCHEDULE]: a compaction in the background.
    fn bgsave(&mut self, schedule: bool) -> Result<Reply, String> {
        if self.aof.is_none() {
            return Err(NO_LOG_TO_SAVE.into());
        }
        if self.rewriting() {
            // The compaction under way is the snapshot asked for.
            return if schedule {
                Ok(Reply::status("Background saving scheduled"))
            } else {
                Err("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.".into())
            };
        }
        self.rewrite_aof()?;
        Ok(Reply::status("Background saving started"))
    }

    /// DEBUG LOADAOF / DEBUG RELOAD: empties the keyspace and loads the directory again.
    pub(super) fn reload_aof(&mut self, rewrite_first: bool) -> Result<(), String> {
        if self.aof.is_none() {
            return Err("ERR the append only file is off".into());
        }
        if rewrite_first {
            self.rewrite_now()?;
        }
        self.close_aof();
        // What the close wrote is the stream too; the epoch of scripts stays this log's (the
        // reloaded base holds scripts the stream never carried).
        self.feed_replicas();
        let epoch = self.aof.as_ref().map(|a| a.epoch_scripts.clone());
        let stats = self.aof.take().map(|a| a.stats);
        self.ks.log_deletions = false;
        for db in self.ks.dbs.iter_mut() {
            db.clear();
        }
        if let Some(engine) = self.server.scripts.as_mut() {
            let _ = engine.reset();
        }
        // Offsets start again from the files: nothing waits on the old ones (all written).
        for c in self.server.clients.values_mut() {
            c.log_wait = 0;
        }
        self.start_aof().map_err(|e| format!("ERR Error trying to load the AOF files: {e}"))?;
        if let (Some(aof), Some(old)) = (self.aof.as_mut(), stats) {
            aof.stats.rewrites = old.rewrites;
            aof.stats.last_rewrite_ms = old.last_rewrite_ms;
        }
        if let (Some(aof), Some(epoch)) = (self.aof.as_mut(), epoch) {
            aof.epoch_scripts = epoch;
        }
        Ok(())
    }
}

/// SAVE/BGSAVE without a log: Vermilion's only snapshot is the log's base.
const NO_LOG_TO_SAVE: &str = "ERR the append only file is off: Vermilion snapshots by compacting its log (CONFIG SET appendonly yes first)";

/// The argument positions of the keys a write command may change, or None when they are
/// not known before it runs (the caller then serializes everything first).
fn keys_written(cmd: &CommandSpec, args: &[Bytes]) -> Option<Vec<usize>> {
    let numkeys_at = |at: usize| -> Option<Vec<usize>> {
        let n = args.get(at).and_then(|n| crate::util::parse_i64(n))?.max(0) as usize;
        Some((at + 1..(at + 1 + n).min(args.len())).collect())
    };
    match cmd.name {
        "lmpop" | "zmpop" => numkeys_at(1),
        "blmpop" | "bzmpop" => numkeys_at(2),
        // Destinations outside the legacy key positions, or a whole database.
        "sort" | "georadius" | "georadiusbymember" | "swapdb" => None,
        "copy" if args.len() > 3 => None,
        "flushall" | "flushdb" => Some(Vec::new()),
        _ if cmd.first_key <= 0 => None,
        _ => Some(cmd.key_positions(args.len())),
    }
}
