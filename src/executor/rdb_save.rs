//! Redis's RDB file, the executor's side: SAVE (the whole keyspace now), BGSAVE (a fork-less
//! [`Walk`] stepped between batches, as a log rewrite is, its bytes written by a thread),
//! `save` points, the save before shutting down, DEBUG RELOAD without the log, and loading
//! `dbfilename` at start. The file's format is `db/rdb_file.rs`'s.
//!
//! A save writes `temp-<pid>.rdb` in the working directory, fsyncs it, renames it over
//! `dbfilename` and fsyncs the directory, so a crash at any point leaves the previous file
//! whole. One walk runs at a time: BGSAVE during a log rewrite answers as Redis does while
//! its AOF child runs, and a rewrite asked for during a BGSAVE first finishes the BGSAVE's
//! walk (the writer thread goes on on its own).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::Executor;
use crate::bgwrite::{BgWriter, Checksum, Chunks};
use crate::config::P;
use crate::db::rdb_file::{self, Encoder, Hint, HintPolicy};
use crate::db::walk::Walk;
use crate::db::{Entry, Keyspace};
use crate::log;
use crate::protocol::Reply;
use crate::state::{SaveOnShutdown, ShutdownRequest};

/// Redis's CONFIG_BGSAVE_RETRY_DELAY: after a failed background save, save points wait
/// this long before trying again.
const RETRY_DELAY_SECS: i64 = 5;

/// The executor's RDB state.
#[derive(Default)]
pub(super) struct RdbSide {
    job: Option<BgSave>,
    /// BGSAVE SCHEDULE during a log rewrite: starts when the rewrite ends.
    pub(super) scheduled: bool,
    /// When the last background save was tried (unix seconds), for the retry delay.
    last_try: i64,
}

/// A background save under way.
struct BgSave {
    walk: Walk,
    out: Out,
    started: Instant,
    temp: PathBuf,
    /// The change count when the walk began: the changes since are not in the file.
    dirty_at_start: u64,
}

/// The file's bytes on their way to the writer, and how each key's eviction hint is taken.
struct Out {
    enc: Encoder,
    chunks: Chunks,
    keys: u64,
    hints: HintPolicy,
    /// `rdb-key-save-delay` (µs per key), Redis's test knob: a background save's walk then
    /// spans many batches, so a test can change keys while it runs.
    delay_us: u64,
}

impl Out {
    fn entry(&mut self, db: usize, key: &[u8], entry: &Entry, expire_at: Option<i64>) {
        if self.delay_us > 0 {
            std::thread::sleep(Duration::from_micros(self.delay_us));
        }
        let hint = self.hints.of(entry);
        self.enc.entry(&mut self.chunks.buf, db, key, entry, expire_at, hint);
        self.keys += 1;
        self.chunks.ship();
    }

    fn finish(&mut self) {
        self.chunks.finish(Encoder::end);
    }
}

impl Executor {
    /// `dbfilename` in the working directory (the server entered `dir` at start, and CONFIG
    /// SET dir enters the new one, as Redis does).
    pub(super) fn rdb_path(&self) -> PathBuf {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        cwd.join(self.server.config.get(P::Dbfilename))
    }

    /// A new file's header: Redis 7.0's auxiliary fields and every function library.
    fn rdb_start(&self, writer: BgWriter) -> Out {
        let now = crate::clock::now_ms();
        let aux = rdb_file::aux_fields(now, self.ks.used_memory());
        let (enc, buf) = Encoder::start(&aux, self.function_codes().iter().map(|l| &l[..]));
        let hints = HintPolicy::new(self.server.config.get(P::MaxmemoryPolicy), now, self.ks.lfu.decay_time);
        let delay_us = self.server.config.get_int(P::RdbKeySaveDelay).max(0) as u64;
        Out { enc, chunks: Chunks::new(writer, buf), keys: 0, hints, delay_us }
    }

    fn function_codes(&self) -> Vec<Bytes> {
        self.server.scripts.as_ref().map(|e| e.functions.libraries().map(|l| l.code.clone()).collect()).unwrap_or_default()
    }

    /// The temp file of a save (Redis's `temp-<pid>.rdb`; a background save has its own,
    /// as Redis's child has its own pid, so SHUTDOWN's save never writes over it).
    fn rdb_temp(&self, background: bool) -> PathBuf {
        let name = if background { format!("temp-bgsave-{}.rdb", std::process::id()) } else { format!("temp-{}.rdb", std::process::id()) };
        self.rdb_path().with_file_name(name)
    }

    /// SAVE (which first refuses while a BGSAVE runs), SHUTDOWN's and DEBUG RELOAD's save:
    /// the whole keyspace now. It reads without marks, so a walk may be under way.
    pub(super) fn rdb_save(&mut self) -> Result<(), String> {
        let temp = self.rdb_temp(false);
        let result = self.write_everything(&temp).and_then(|_| self.install_rdb(&temp));
        match &result {
            Ok(()) => {
                log::notice("DB saved on disk");
                self.saved(crate::clock::now_ms() / 1000);
            }
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                log::warning(&format!("Failed saving the DB: {e}"));
            }
        }
        result.map_err(|_| "ERR".to_string())
    }

    fn write_everything(&self, temp: &PathBuf) -> Result<(), String> {
        let writer = BgWriter::spawn("rdb-save", temp, Checksum::Redis).map_err(|e| e.to_string())?;
        let mut out = self.rdb_start(writer);
        let Out { enc, chunks, hints, .. } = &mut out;
        let Chunks { buf, writer, .. } = chunks;
        rdb_file::write_keyspace(enc, buf, &self.ks, hints, |b| writer.send(std::mem::take(b)));
        out.finish();
        out.chunks.writer.wait().map(|_| ())
    }

    /// Puts a written temp file in place of `dbfilename`, durably.
    fn install_rdb(&self, temp: &PathBuf) -> Result<(), String> {
        let path = self.rdb_path();
        std::fs::rename(temp, &path).map_err(|e| format!("Error moving temp DB file {} on the final destination: {e}", temp.display()))?;
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    fn saved(&mut self, at_secs: i64) {
        self.server.dirty = 0;
        self.server.lastsave = at_secs;
        self.server.rdb.saves += 1;
    }

    pub(super) fn bgsaving(&self) -> bool {
        self.rdb.job.is_some()
    }

    /// BGSAVE [SCHEDULE].
    pub(super) fn rdb_bgsave(&mut self, schedule: bool) -> Result<Reply, String> {
        if self.bgsaving() {
            return Err("ERR Background save already in progress".into());
        }
        // One walk at a time: a full sync's snapshot is finished first.
        self.complete_sync_walk();
        if self.rewriting() {
            if schedule {
                self.rdb.scheduled = true;
                return Ok(Reply::status("Background saving scheduled"));
            }
            return Err("ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.".into());
        }
        self.start_bgsave().map_err(|e| format!("ERR {e}"))?;
        Ok(Reply::status("Background saving started"))
    }

    pub(super) fn start_bgsave(&mut self) -> Result<(), String> {
        // One walk at a time (the marks are shared): a full sync's snapshot is finished first.
        self.complete_sync_walk();
        let now = crate::clock::now_ms() / 1000;
        self.rdb.last_try = now;
        let temp = self.rdb_temp(true);
        let writer = match BgWriter::spawn("rdb-bgsave", &temp, Checksum::Redis) {
            Ok(w) => w,
            Err(e) => {
                self.server.rdb.last_bgsave_failed = true;
                log::warning(&format!("Can't save in background: {e}"));
                return Err(format!("Can't save in background: {e}"));
            }
        };
        let out = self.rdb_start(writer);
        self.rdb.job =
            Some(BgSave { walk: Walk::start(&mut self.ks), out, started: Instant::now(), temp, dirty_at_start: self.server.dirty });
        self.rdb.scheduled = false;
        self.server.rdb.bgsave_since = Some(now);
        log::notice(&format!("Background saving started by pid {}", std::process::id()));
        Ok(())
    }

    /// One slice of the background save (about `budget`), and its end once the writer is done.
    pub(super) fn bgsave_tick(&mut self, budget: Duration) {
        let Some(job) = self.rdb.job.as_mut() else { return };
        if !job.walk.walked() {
            let out = &mut job.out;
            if job.walk.step(&mut self.ks, budget, |db, k, e, at| out.entry(db, k, e, at)) {
                out.finish();
            }
            return;
        }
        let Some(result) = job.out.chunks.writer.poll() else { return };
        self.end_bgsave(result);
    }

    /// Whether the background save still walks (the main loop then steps it at once).
    pub(super) fn bgsave_walking(&self) -> bool {
        self.rdb.job.as_ref().is_some_and(|j| !j.walk.walked())
    }

    fn end_bgsave(&mut self, result: Result<u64, String>) {
        let Some(job) = self.rdb.job.take() else { return };
        let job_dirty_since = self.server.dirty.saturating_sub(job.dirty_at_start);
        let result = result.and_then(|_| self.install_rdb(&job.temp));
        self.bgsave_done_for_syncs(result.is_ok().then(|| self.rdb_path()).as_deref());
        let secs = job.started.elapsed().as_secs() as i64;
        self.server.rdb.bgsave_since = None;
        self.server.rdb.last_bgsave_secs = Some(secs);
        match result {
            Ok(()) => {
                log::notice(&format!("Background saving terminated with success ({} keys)", job.out.keys));
                // The changes made since the walk began are not in the file (Redis counts
                // the dirty counter at fork time the same way).
                self.server.rdb.last_bgsave_failed = false;
                self.saved(self.rdb.last_try);
                // What changed during the walk still counts for the save points (Redis's
                // dirty - dirty_before_bgsave).
                self.server.dirty = job_dirty_since;
            }
            Err(e) => {
                let _ = std::fs::remove_file(&job.temp);
                self.server.rdb.last_bgsave_failed = true;
                log::warning(&format!("Background saving error: {e}"));
            }
        }
    }

    /// Before a write during a background save: the keys it may change are serialized
    /// first (or every remaining key when they are not known in advance).
    pub(super) fn capture_for_bgsave(&mut self, db: usize, keys: Option<&[Bytes]>) {
        let Some(job) = self.rdb.job.as_mut() else { return };
        let out = &mut job.out;
        match keys {
            Some(keys) => {
                for k in keys {
                    job.walk.capture(&mut self.ks, db, k, |db, k, e, at| out.entry(db, k, e, at));
                }
            }
            None => {
                job.walk.complete(&mut self.ks, |db, k, e, at| out.entry(db, k, e, at));
                out.finish();
            }
        }
    }

    /// Finishes the background save's walk now (a log rewrite is about to start its own).
    pub(super) fn complete_bgsave_walk(&mut self) {
        self.capture_for_bgsave(0, None);
    }

    /// The cron's part: a scheduled BGSAVE once no rewrite runs, `save` points, and the end
    /// of a save whose writer finished while the executor was idle.
    pub(super) fn rdb_cron(&mut self) {
        if self.bgsaving() {
            self.bgsave_tick(Duration::ZERO);
            return;
        }
        if self.rewriting() {
            return;
        }
        if self.rdb.scheduled {
            let _ = self.start_bgsave();
            return;
        }
        let now = crate::clock::now_ms() / 1000;
        let since = now - self.server.lastsave;
        let retry_ok = !self.server.rdb.last_bgsave_failed || now - self.rdb.last_try > RETRY_DELAY_SECS;
        let due = save_points(self.server.config.get(P::Save))
            .into_iter()
            .find(|&(secs, changes)| self.server.dirty >= changes && since > secs && retry_ok);
        if let Some((secs, changes)) = due {
            log::notice(&format!("{changes} changes in {secs} seconds. Saving..."));
            let _ = self.start_bgsave();
        }
    }

    /// What shutting down saves: the RDB file when asked or when save points are set. An
    /// error (without FORCE) keeps the server running.
    pub(super) fn shutdown_save(&mut self, request: ShutdownRequest) -> Result<(), String> {
        if let Some(job) = self.rdb.job.take() {
            log::warning("There is a background save in progress. Abandoning it!");
            job.out.chunks.writer.finish();
            let _ = job.out.chunks.writer.wait();
            let _ = std::fs::remove_file(&job.temp);
            self.server.rdb.bgsave_since = None;
        }
        let save = match request.save {
            SaveOnShutdown::Save => true,
            SaveOnShutdown::NoSave => false,
            SaveOnShutdown::Default => !save_points(self.server.config.get(P::Save)).is_empty(),
        };
        if !save {
            return Ok(());
        }
        log::notice("Saving the final RDB snapshot before exiting.");
        match self.rdb_save() {
            Err(_) if !request.force => {
                log::warning("Error trying to save the DB, can't exit.");
                Err("ERR Errors trying to SHUTDOWN. Check logs.".into())
            }
            _ => Ok(()),
        }
    }

    /// DEBUG RELOAD without the log: save, empty, load the file back.
    pub(super) fn rdb_reload(&mut self) -> Result<(), String> {
        self.rdb_save().map_err(|_| "ERR Error trying to save the DB".to_string())?;
        self.complete_walks();
        for db in self.ks.dbs.iter_mut() {
            db.clear();
        }
        if let Some(engine) = self.server.scripts.as_mut() {
            let _ = engine.reset();
        }
        self.load_rdb_file().map(|_| ()).map_err(|e| format!("ERR Error trying to load the RDB dump: {e}"))
    }

    /// Loads `dbfilename` if it exists: true when it did. Keys already expired are skipped
    /// on a primary and kept on a replica, as in Redis.
    pub(super) fn load_rdb_file(&mut self) -> Result<bool, String> {
        let path = self.rdb_path();
        let data = match std::fs::read(&path) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(format!("Can't read {}: {e}", path.display())),
        };
        let started = Instant::now();
        let (loaded, expired) = self.load_rdb_bytes(&data, false).map_err(|e| format!("{} in {}", e, path.display()))?;
        self.server.rdb.last_load_keys_loaded = loaded;
        self.server.rdb.last_load_keys_expired = expired;
        log::notice(&format!("Done loading RDB, keys loaded: {loaded}, keys expired: {expired}."));
        log::notice(&format!("DB loaded from disk: {:.3} seconds", started.elapsed().as_secs_f64()));
        Ok(true)
    }

    /// Loads an RDB file's keys and function libraries into the keyspace; returns the keys
    /// loaded and those skipped as expired. Expired keys are kept on a replica, and in a
    /// log's base (`in_log`: the log that follows holds what happened to them), as in Redis.
    pub(super) fn load_rdb_bytes(&mut self, data: &[u8], in_log: bool) -> Result<(u64, u64), rdb_file::FileError> {
        let limits = crate::state::build_limits(&self.server.config);
        let databases = self.ks.dbs.len();
        let now = crate::clock::now_ms();
        let mut sink = LoadSink {
            ks: &mut self.ks,
            engine: self.server.scripts.as_deref_mut(),
            limits,
            lfu_policy: self.server.settings.lfu_policy,
            keep_expired: in_log || self.server.repl.master.is_some(),
            now,
            loaded: 0,
            expired: 0,
        };
        rdb_file::parse(data, databases, &mut sink)?;
        Ok((sink.loaded, sink.expired))
    }
}

/// The `save` parameter as (seconds, changes) pairs.
fn save_points(value: &str) -> Vec<(i64, u64)> {
    let n: Vec<i64> = value.split_whitespace().filter_map(|w| w.parse().ok()).collect();
    n.chunks_exact(2).map(|p| (p[0], p[1].max(0) as u64)).collect()
}

struct LoadSink<'a> {
    ks: &'a mut Keyspace,
    engine: Option<&'a mut crate::scripting::ScriptEngine>,
    limits: crate::db::BuildLimits,
    lfu_policy: bool,
    keep_expired: bool,
    now: i64,
    loaded: u64,
    expired: u64,
}

impl rdb_file::Sink for LoadSink<'_> {
    fn function(&mut self, code: Vec<u8>) -> Result<(), String> {
        let Some(engine) = self.engine.as_mut() else { return Ok(()) };
        engine.functions.load(&code, false, false).map(|_| ()).map_err(|e| format!("Failed loading library: {e}"))
    }

    fn key(&mut self, db: usize, key: Vec<u8>, value: crate::db::rdb::Decoded, expire_at: Option<i64>, hint: Hint) -> Result<(), String> {
        let value = value.into_value(&self.limits).map_err(|_| format!("Bad data format of key {:?}", String::from_utf8_lossy(&key)))?;
        if !self.keep_expired && expire_at.is_some_and(|at| at < self.now) {
            self.expired += 1;
            return Ok(());
        }
        let mut entry = Entry::new(value, self.now);
        let (idle, freq) = match hint {
            Hint::Idle(s) => (Some(s.min(i64::MAX as u64) as i64), None),
            Hint::Freq(f) => (None, Some(f)),
            Hint::None => (None, None),
        };
        entry.apply_access_hint(self.lfu_policy, idle, freq, self.now);
        let key = Bytes::from(key);
        if !self.ks.db_mut(db).insert_new(key.clone(), entry, expire_at) {
            return Err(format!("Duplicate key {:?} in the RDB file", String::from_utf8_lossy(&key)));
        }
        self.loaded += 1;
        Ok(())
    }
}
