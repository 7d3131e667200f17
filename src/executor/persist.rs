//! The executor's side of the durable log: what each command contributes, in a form that
//! replays to the same state at any later time, and loading it back.
//!
//! Records of one top-level command (a command, a whole EXEC, a whole script) are collected
//! in `pending` and committed together when it ends: more than one record (a transaction,
//! a random-dirty script's effects, deletions by expiry before a command) is wrapped in
//! MULTI/EXEC. Nothing of a script reaches the log before it ends. The batch's records are
//! written (and synced, per `appendfsync`) by `flush_log` before any reply of the batch
//! leaves (`release_replies`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;

use super::Executor;
use crate::aof::{self, format, snapshot, Aof, AofDir, Fsync};
use crate::commands::scripting::ScriptCall;
use crate::commands::CommandSpec;
use crate::log;
use crate::protocol::Reply;
use crate::scripting::ScriptOutcome;
use crate::scripting::REPL_AOF;
use crate::state::Client;

/// One record waiting for the end of its top-level command.
pub(super) struct Pending {
    db: usize,
    argv: Vec<Bytes>,
    /// A script's frozen time (the `#MS:` annotation before it).
    time_ms: Option<i64>,
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

/// The deterministic form of a command that changed data: relative times made absolute
/// from the key's resulting expiry, random and blocking commands turned into what they did.
/// `ks` is the keyspace after the command; `db` the database it ran in.
pub(super) fn loggable(cmd: &CommandSpec, args: &[Bytes], reply: &Reply, ks: &crate::db::Keyspace, db: usize) -> Vec<Vec<Bytes>> {
    rewritten(cmd, args, reply, ks, db).unwrap_or_else(|| vec![args.to_vec()])
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
];

/// [`loggable`], or None when the command is logged as sent (no copy needed).
pub(super) fn rewritten(cmd: &CommandSpec, args: &[Bytes], reply: &Reply, ks: &crate::db::Keyspace, db: usize) -> Option<Vec<Vec<Bytes>>> {
    if !REWRITTEN.contains(&cmd.name) {
        return None;
    }
    Some(rewrite(cmd, args, reply, ks, db))
}

fn rewrite(cmd: &CommandSpec, args: &[Bytes], reply: &Reply, ks: &crate::db::Keyspace, db: usize) -> Vec<Vec<Bytes>> {
    let key = || args.get(1).cloned().unwrap_or_default();
    // The key's expiry as the command left it: PEXPIREAT, or DEL when it is gone already.
    let expiry_of = |key: Bytes| -> Vec<Bytes> {
        match ks.db(db).peek(&key).and_then(|e| e.expire_at) {
            Some(at) => vec![b("PEXPIREAT"), key, b(&at.to_string())],
            None if ks.db(db).contains_key(&key) => vec![b("PERSIST"), key],
            None => vec![b("DEL"), key],
        }
    };
    let set_with_expiry = |key: Bytes, value: Bytes| -> Vec<Bytes> {
        match ks.db(db).peek(&key).and_then(|e| e.expire_at) {
            Some(at) => vec![b("SET"), key, value, b("PXAT"), b(&at.to_string())],
            None => vec![b("DEL"), key],
        }
    };
    match cmd.name {
        "expire" | "pexpire" | "expireat" | "pexpireat" => vec![expiry_of(key())],
        "setex" | "psetex" if args.len() == 4 => vec![set_with_expiry(key(), args[3].clone())],
        "set" if args.len() > 3 && has_option(&args[3..], &["ex", "px", "exat", "pxat"]) => vec![set_with_expiry(key(), args[2].clone())],
        "getex" if args.len() > 2 => vec![expiry_of(key())],
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
        for argv in loggable(cmd, args, reply, &self.ks, client.db) {
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
            if outcome.wrote && outcome.random_dirty {
                deletion(*i) || e.repl as i64 & REPL_AOF != 0
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
        if is_evalsha && !aof.epoch_scripts.contains(&call.sha) {
            if let Some(script) = self.server.scripts.as_ref().and_then(|e| e.get(call.sha.as_bytes())) {
                argv[0] = b("EVAL");
                argv[1] = script.body.clone();
            }
        }
        aof.epoch_scripts.insert(call.sha.clone());
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

    /// Writes the batch's records before its replies leave. False when the write failed:
    /// the replies that depend on it must wait.
    /// Writes the buffered records (the fsync, under `always`, follows on the fsync thread).
    pub(super) fn flush_log(&mut self) -> bool {
        let Some(aof) = self.aof.as_mut() else { return true };
        // Under `always`, while a sync runs, batches gather in the buffer: it is written in
        // one go when the sync ends (LogSynced), and the next sync covers all of it.
        if aof.policy == Fsync::Always && aof.log.unsynced() > 0 && aof.write_error.is_none() && !aof.log.fsync_failed() {
            return true;
        }
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

    fn build_limits(&self) -> snapshot::BuildLimits {
        let c = &self.server.config;
        snapshot::BuildLimits {
            hash: crate::db::hash::HashLimits {
                max_entries: c.get_int("hash-max-listpack-entries").max(0) as u64,
                max_value: c.get_int("hash-max-listpack-value").max(0) as u64,
            },
            max_intset: c.get_int("set-max-intset-entries").max(0) as u64,
            zset_entries: c.get_int("zset-max-listpack-entries"),
            zset_value: c.get_int("zset-max-listpack-value"),
        }
    }

    /// Every cached script as (sha, body); on a replica also the stream's (its log's
    /// EVALSHA records need them even after a local SCRIPT FLUSH).
    fn script_table(&self) -> Vec<(String, Bytes)> {
        let mut v: Vec<(String, Bytes)> =
            self.server.scripts.as_ref().map(|e| e.scripts().map(|s| (s.sha.clone(), s.body.clone())).collect()).unwrap_or_default();
        if self.aof.as_ref().is_some_and(|a| a.verbatim) {
            v.extend(self.stream_scripts.iter().map(|(sha, body)| (sha.clone(), body.clone())));
        }
        v.sort();
        v.dedup_by(|a, b| a.0 == b.0);
        v
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
            let snap = snapshot::encode(&self.ks, &[], 0, 0);
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

    /// Loads the base and the incremental logs the manifest names; returns the last
    /// incremental file (created if the manifest names none) and its log origin.
    pub(super) fn load_dir(&mut self, dir: &mut AofDir) -> Result<(std::path::PathBuf, u64), String> {
        self.loading = true;
        self.server.limits.loading.store(true, Ordering::Release);
        let result = self.load_files(dir);
        self.loading = false;
        self.server.limits.loading.store(false, Ordering::Release);
        self.now_ms = crate::clock::now_ms();
        result
    }

    fn load_files(&mut self, dir: &mut AofDir) -> Result<(std::path::PathBuf, u64), String> {
        let mut origin = 0;
        let shared = self.server.limits.clone();
        shared.loading_start_secs.store(crate::clock::now_ms() / 1000, Ordering::Relaxed);
        shared.loading_total_bytes.store(dir.total_size(), Ordering::Relaxed);
        shared.loading_loaded_bytes.store(0, Ordering::Relaxed);
        self.loading_progress = (0, Instant::now());
        self.stream_scripts.clear();
        // One loader for every file: the database it is in flows from one file to the next
        // (a replica's file may start without a SELECT; the snapshot says where it is).
        let mut loader = self.loader_client();
        // A replica's log is its primary's stream: a torn tail is cut back to its last
        // checkpoint, never sealed with one of ours (that would shift its offsets).
        let stream_copy = dir.manifest.replid.is_some();
        if let Some(base) = dir.manifest.base.clone() {
            let path = dir.file(&base.name);
            let data = map_file(&path)?;
            if base.name.ends_with(".vsnap") {
                let loaded = self
                    .decode_snapshot(&data)
                    .map_err(|e| format!("Bad snapshot file {} at offset {}: {}", path.display(), e.offset, e.reason))?;
                for body in &loaded.scripts {
                    if let Some(engine) = self.server.scripts.as_mut() {
                        if let Ok(s) = engine.load(body) {
                            self.stream_scripts.insert(s.sha.clone(), body.clone());
                        }
                    }
                }
                log::notice(&format!("Loading base snapshot {}: {} keys, {} scripts", base.name, loaded.keys, loaded.scripts.len()));
                self.loading_progress.0 += data.len() as u64;
                shared.loading_loaded_bytes.store(self.loading_progress.0, Ordering::Relaxed);
                origin = loaded.log_offset;
                loader.db = (loaded.stream_db as usize).min(self.ks.dbs.len() - 1);
            } else {
                // A base of plain commands (Redis's .base.aof form without an RDB preamble).
                self.load_incr(&mut loader, &path, &base.name, false, false)?;
            }
        }
        let count = dir.manifest.incrs.len();
        for (i, incr) in dir.manifest.incrs.clone().iter().enumerate() {
            let last = i + 1 == count;
            let path = dir.file(&incr.name);
            let size = self.load_incr(&mut loader, &path, &incr.name, last, stream_copy)?;
            if !last {
                origin += size;
            }
        }
        self.loaded_db = loader.db;
        match dir.manifest.incrs.last() {
            Some(last) => Ok((dir.file(&last.name), origin)),
            None => {
                let seq = dir.manifest.base.as_ref().map_or(1, |b| b.seq);
                let entry = aof::manifest::FileEntry { name: format!("{}.{seq}.incr.aof", dir.prefix), seq };
                dir.manifest.incrs.push(entry.clone());
                std::fs::File::create(dir.file(&entry.name)).map_err(|e| e.to_string())?;
                dir.manifest.store(&dir.path, &dir.manifest_name()).map_err(|e| e.to_string())?;
                Ok((dir.file(&entry.name), origin))
            }
        }
    }

    /// Replays one incremental log; returns its (possibly truncated) size.
    fn load_incr(&mut self, loader: &mut Client, path: &std::path::Path, name: &str, last: bool, stream_copy: bool) -> Result<u64, String> {
        let data = match std::fs::metadata(path) {
            Ok(md) if md.len() == 0 => return Ok(0),
            Ok(_) => map_file(path)?,
            Err(e) => return Err(format!("Can't open the append-only file {name}: {e}")),
        };
        let mut verdict = format::check(&data);
        if stream_copy && last && verdict.valid_len > verdict.tail_start {
            verdict.valid_len = verdict.tail_start;
            verdict.problem.get_or_insert(format::Problem::Truncated { offset: verdict.tail_start });
        }
        match &verdict.problem {
            None => {}
            Some(format::Problem::Corrupt { offset, reason }) => {
                return Err(format!(
                    "Bad file format reading the append only file {name} at offset {offset}: {reason}. Make a backup of your AOF directory, then use vermilion-check-aof --fix {}",
                    path.display()
                ));
            }
            Some(format::Problem::Truncated { .. }) if !last => {
                return Err(format!("Fatal error: the truncated file {name} is not the last file"));
            }
            Some(format::Problem::Truncated { .. }) if self.server.config.get("aof-load-truncated") != "yes" => {
                return Err(format!(
                    "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF directory, then use vermilion-check-aof --fix <filename>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
                ));
            }
            Some(format::Problem::Truncated { .. }) => {}
        }
        let mut failure = None;
        let (file_start, mut count) = (self.loading_progress.0, 0u64);
        // Redis's test knob: microseconds to wait per record (tests watch a load this way).
        let delay = self.server.config.get_int("key-load-delay").max(0) as u64;
        format::replay_checked(&data[..verdict.valid_len], |rec| {
            if delay > 0 {
                std::thread::sleep(std::time::Duration::from_micros(delay));
            }
            count += 1;
            if count.is_multiple_of(4096) {
                self.report_loading(file_start + rec.offset as u64);
            }
            if failure.is_none() {
                failure = self.replay_record(loader, rec);
            }
        });
        self.report_loading(file_start + data.len() as u64);
        if let Some(err) = failure {
            return Err(format!("{err} reading the append only file {name}"));
        }
        let size = data.len() as u64;
        // The last file is appended to next: whole records after its last checkpoint (a
        // torn batch, a file from elsewhere) get a checkpoint of their own first.
        let seal = if last && !stream_copy { format::seal(&data, &verdict) } else { None };
        drop(data);
        if verdict.problem.is_some() {
            let cut = size - verdict.valid_len as u64;
            log::warning(&format!("!!! Warning: short read while loading the AOF file {name}!!!"));
            log::warning(&format!(
                "!!! Truncating the AOF {name} at offset {} (cutting {cut} bytes of a torn tail) !!!",
                verdict.valid_len
            ));
        }
        if verdict.problem.is_some() || seal.is_some() {
            aof::file::cut_and_seal(path, verdict.valid_len as u64, seal.as_deref())
                .map_err(|e| format!("Error truncating the AOF file {name}: {e}"))?;
        }
        if verdict.problem.is_some() {
            log::warning("AOF loaded anyway because aof-load-truncated is enabled");
        }
        Ok(verdict.valid_len as u64 + seal.map_or(0, |s| s.len() as u64))
    }

    /// Publishes loading progress (INFO) and logs it about once a second.
    fn report_loading(&mut self, loaded: u64) {
        let limits = &self.server.limits;
        self.loading_progress.0 = loaded;
        limits.loading_loaded_bytes.store(loaded, Ordering::Relaxed);
        if self.loading_progress.1.elapsed() >= std::time::Duration::from_secs(1) {
            self.loading_progress.1 = Instant::now();
            let total = limits.loading_total_bytes.load(Ordering::Relaxed).max(1);
            log::notice(&format!("Loading the append only file: {:.1}% ({loaded} of {total} bytes)", loaded as f64 * 100.0 / total as f64));
        }
    }

    /// Decodes a base snapshot into the keyspace (`key-load-delay`, Redis's test knob,
    /// applies per key, so a test can watch a load).
    pub(super) fn decode_snapshot(&mut self, data: &[u8]) -> Result<snapshot::Loaded, snapshot::SnapshotError> {
        let limits = self.build_limits();
        let delay = self.server.config.get_int("key-load-delay").max(0) as u64;
        let databases = self.ks.dbs.len();
        let ks = &mut self.ks;
        snapshot::decode_with(data, &limits, databases, |db, key, value, expire_at| {
            if delay > 0 {
                std::thread::sleep(std::time::Duration::from_micros(delay));
            }
            ks.db_mut(db).insert(key, value, expire_at, 0);
        })
    }

    /// The client records are replayed through: authenticated, never blocking.
    pub(super) fn loader_client(&self) -> Client {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let mut c =
            Client::new(u64::MAX, "aof-loader".into(), String::new(), tx, std::sync::Arc::new(crate::state::ConnFlags::default()), true);
        c.deny_blocking = true;
        c
    }

    /// Applies one record. MULTI/EXEC are skipped (the loader hands out whole blocks only,
    /// and nothing runs in between); a script record runs at its frozen time; plain records
    /// run with the clock at zero, so nothing expires during a replay (the log holds the
    /// DELs of what expired).
    pub(super) fn replay_record(&mut self, loader: &mut Client, rec: format::Record<'_>) -> Option<String> {
        let name = rec.argv[0];
        if name.eq_ignore_ascii_case(b"multi") || name.eq_ignore_ascii_case(b"exec") {
            return None;
        }
        let mut argv: Vec<Bytes> = rec.argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        self.now_ms = 0;
        self.replay_time_ms = rec.time_ms;
        if let crate::commands::Resolved::Unknown = crate::commands::resolve(&argv) {
            return Some(format!("Unknown command '{}'", String::from_utf8_lossy(&argv[0])));
        }
        // An EVALSHA of the epoch runs the body the log holds: the script cache may have been
        // flushed since (a replica's local SCRIPT FLUSH must not break the stream). Cached
        // (the usual case), it runs as is.
        let evalsha = name.eq_ignore_ascii_case(b"evalsha") || name.eq_ignore_ascii_case(b"evalsha_ro");
        if evalsha && argv.len() > 1 && !self.server.scripts.as_ref().is_some_and(|e| e.exists(&argv[1])) {
            let sha = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
            if let Some(body) = self.stream_scripts.get(&sha) {
                argv[0] = Bytes::from_static(if name.len() == 7 { b"EVAL" } else { b"EVAL_RO" });
                argv[1] = body.clone();
            }
        }
        self.execute(loader, &argv);
        // The bodies this epoch holds: EVAL and SCRIPT LOAD records add theirs, SCRIPT FLUSH
        // empties the table.
        let sub = rec.argv.get(1).copied().unwrap_or_default();
        let is_eval = name.eq_ignore_ascii_case(b"eval") || name.eq_ignore_ascii_case(b"eval_ro");
        if is_eval || (name.eq_ignore_ascii_case(b"script") && sub.eq_ignore_ascii_case(b"load")) {
            let body = rec.argv.get(if is_eval { 1 } else { 2 }).copied().unwrap_or_default();
            self.stream_scripts.insert(crate::scripting::sha1_hex(body), Bytes::copy_from_slice(body));
        } else if name.eq_ignore_ascii_case(b"script") && sub.eq_ignore_ascii_case(b"flush") {
            self.stream_scripts.clear();
        }
        self.release_replies();
        None
    }

    /// BGREWRITEAOF: starts a rewrite (a new incremental file now, the new base snapshot
    /// serialized between batches by `rewrite_tick`).
    pub(super) fn rewrite_aof(&mut self) -> Result<(), String> {
        let scripts = self.script_table();
        let Some(aof) = self.aof.as_mut() else { return Err("ERR the append only file is off".into()) };
        if aof.rewrite.is_some() {
            return Err("ERR Background append only file rewriting already in progress".into());
        }
        aof.flush()?;
        let started = Instant::now();
        let stream_db = if aof.verbatim { self.master_client.as_ref().map_or(self.master_db, |c| c.db) as u32 } else { 0 };
        if let Err(e) = aof.begin_rewrite(&mut self.ks, &scripts, stream_db) {
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
                let bodies: Vec<Bytes> = self.script_table().into_iter().map(|(_, body)| body).collect();
                // The log continues the replication stream's offsets (0 for a server that
                // never replicated).
                let offset = self.server.repl.offset;
                let stream_db = if self.server.repl.master.is_some() { self.master_db as u32 } else { 0 };
                let snap = snapshot::encode(&self.ks, &bodies, offset, stream_db);
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
        }
    }

    /// Runs BGREWRITEAOF, DEBUG RELOAD or DEBUG LOADAOF for a client; returns its reply.
    pub(super) fn persist_command(&mut self, request: crate::state::PersistRequest) -> Reply {
        use crate::state::PersistRequest;
        let result = match request {
            PersistRequest::Rewrite => self.rewrite_aof().map(|_| Reply::status("Background append only file rewriting started")),
            PersistRequest::Reload => self.reload_aof(true).map(|_| Reply::OK),
            PersistRequest::LoadAof => self.reload_aof(false).map(|_| Reply::OK),
            PersistRequest::Reconfigure => self.reconfigure_aof().map(|_| Reply::OK),
        };
        result.unwrap_or_else(|e| Reply::Error(e.into()))
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
            let _ = engine.flush();
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

/// Maps a file read-only (an empty file maps to nothing).
fn map_file(path: &std::path::Path) -> Result<memmap2::Mmap, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("Can't open {}: {e}", path.display()))?;
    // Safety: the file is ours and nothing truncates it while the map lives (truncation
    // of a torn tail happens after the map is dropped).
    unsafe { memmap2::Mmap::map(&f) }.map_err(|e| format!("Can't map {}: {e}", path.display()))
}
