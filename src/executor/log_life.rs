//! The durable log's lifecycle, the executor's side: opening it (`start_aof`, `adopt_log`),
//! fork-less rewrites stepped between batches and the captures of keys a write is about to
//! change, CONFIG SET appendonly/appendfsync, BGREWRITEAOF, SAVE/BGSAVE, DEBUG RELOAD and
//! LOADAOF, and closing it at shutdown.

use std::time::Instant;

use bytes::Bytes;

use super::Executor;
use crate::aof::{snapshot, Aof, AofDir, Fsync};

use crate::config::P;
use crate::log;
use crate::protocol::Reply;

impl Executor {
    /// The log's directory: `appenddirname` under the working directory, which the server
    /// entered at start (`dir`); made absolute so a later CONFIG SET dir does not move it.
    fn aof_dir(&self) -> AofDir {
        let c = &self.server.config;
        let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
        AofDir::new(&cwd, c.get(P::Appenddirname), c.get(P::Appendfilename))
    }

    /// Every cached script as (sha, body); on a replica also the stream's (its log's
    /// EVALSHA records need them even after a local SCRIPT FLUSH).
    pub(super) fn script_table(&self) -> Vec<(String, Bytes)> {
        let mut v: Vec<(String, Bytes)> =
            self.server.scripts.as_ref().map(|e| e.scripts().map(|s| (s.sha.to_string(), s.body.clone())).collect()).unwrap_or_default();
        if self.log.aof.as_ref().is_some_and(|a| a.rec.verbatim) {
            v.extend(self.load.stream_scripts.iter().map(|(sha, body)| (sha.clone(), body.clone())));
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

    /// What the server loads at start: the log with `appendonly yes`, else the RDB file.
    /// An error means the server must not start.
    pub(super) fn load_at_start(&mut self) -> Result<(), String> {
        if self.server.config.get(P::Appendonly) == "yes" {
            return self.start_aof();
        }
        self.load_rdb_file().map(|_| ()).map_err(|e| format!("Fatal error loading the DB: {e}. Exiting."))
    }

    /// Opens the log at start (`appendonly yes`): loads what the directory holds, or starts
    /// a fresh generation. An error means the server must not start.
    pub fn start_aof(&mut self) -> Result<(), String> {
        if self.server.config.get(P::Appendonly) != "yes" {
            return Ok(());
        }
        let started = Instant::now();
        let mut dir = self.aof_dir();
        let policy = Fsync::parse(self.server.config.get(P::Appendfsync));
        let mut aof = if dir.read_manifest()? {
            for name in dir.remove_strays() {
                log::notice(&format!("Removed {name}, left behind by an interrupted rewrite"));
            }
            let (incr, origin) = self.load_dir(&mut dir)?;
            let mut aof = Aof::open(dir, &incr, policy, origin, self.log_waker())
                .map_err(|e| format!("Can't open the append-only file {}: {e}", incr.display()))?;
            aof.rec.epoch_scripts = self.load.stream_scripts.keys().cloned().collect();
            let secs = started.elapsed().as_secs_f64();
            log::notice(&format!("DB loaded from append only file: {secs:.3} seconds"));
            aof
        } else {
            // No log yet: a Redis (or our) RDB file in the directory is the data to start
            // from, the way to migrate from a Redis that ran without its AOF.
            if self.load_rdb_file()? {
                log::notice("The append only file starts from the RDB file's data");
            }
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
        aof.rec.verbatim = self.copies_stream();
        aof.rec.tee = self.server.repl.backlog.is_some();
        self.ks.deletions.clear();
        self.ks.log_deletions = self.server.repl.master.is_none();
        self.server.aof_info = Some(aof.info());
        self.log.aof = Some(aof);
    }

    /// BGREWRITEAOF: starts a rewrite (a new incremental file now, the new base snapshot
    /// serialized between batches by `rewrite_tick`).
    pub(super) fn rewrite_aof(&mut self) -> Result<(), String> {
        let scripting = self.snapshot_scripting();
        let Some(aof) = self.log.aof.as_mut() else { return Err("ERR the append only file is off".into()) };
        if aof.rewrite.is_some() {
            return Err("ERR Background append only file rewriting already in progress".into());
        }
        aof.flush()?;
        // One walk at a time: a background RDB save's and a full sync's are finished first.
        self.complete_bgsave_walk();
        self.complete_sync_walk();
        let Some(aof) = self.log.aof.as_mut() else { return Err("ERR the append only file is off".into()) };
        let started = Instant::now();
        let stream_db =
            if aof.rec.verbatim { self.replica.master_client.as_ref().map_or(self.replica.master_db, |c| c.db) as u32 } else { 0 };
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
        self.log.aof.as_ref().is_some_and(|a| a.rewrite.is_some())
    }

    /// One slice of the running rewrite (about `budget`), and its completion once the
    /// writer thread is done.
    pub(super) fn rewrite_tick(&mut self, budget: std::time::Duration) {
        let Some(aof) = self.log.aof.as_mut() else { return };
        let Some(rw) = aof.rewrite.as_mut() else { return };
        if !rw.walked() {
            rw.step(&mut self.ks, budget);
            return;
        }
        let Some(result) = rw.poll() else { return };
        self.end_rewrite(result);
    }

    fn end_rewrite(&mut self, result: Result<u64, String>) {
        let Some(aof) = self.log.aof.as_mut() else { return };
        let Some(rw) = aof.rewrite.take() else { return };
        let (ms, keys) = (rw.started.elapsed().as_millis() as u64, rw.keys());
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
        let Some(rw) = self.log.aof.as_mut().and_then(|a| a.rewrite.as_mut()) else { return Ok(()) };
        rw.complete_walk(&mut self.ks);
        let result = rw.wait();
        self.end_rewrite(result.clone());
        result.map(|_| ()).map_err(|e| format!("ERR Background AOF rewrite failed: {e}"))
    }

    /// CONFIG SET appendonly / appendfsync. Turning the log on writes a new generation from
    /// the data in memory (as Redis rewrites then).
    fn reconfigure_aof(&mut self) -> Result<(), String> {
        let on = self.server.config.get(P::Appendonly) == "yes";
        let policy = Fsync::parse(self.server.config.get(P::Appendfsync));
        match (on, self.log.aof.is_some()) {
            (true, false) => {
                // The in-memory stream ends here; the log continues it at the same offset.
                self.flush_log();
                self.feed_replicas();
                let mut dir = self.aof_dir();
                let _ = dir.read_manifest();
                // The log continues the replication stream's offsets (0 for a server that
                // never replicated).
                let offset = self.server.repl.offset;
                let stream_db = if self.server.repl.master.is_some() { self.replica.master_db as u32 } else { 0 };
                let snap = snapshot::encode(&self.ks, &self.snapshot_scripting(), offset, stream_db);
                let incr = dir.new_generation(&snap).map_err(|e| format!("ERR Can't create the append-only files: {e}"))?;
                let mut aof = Aof::open(dir, &incr, policy, offset, self.log_waker()).map_err(|e| format!("ERR {e}"))?;
                aof.rec.epoch_scripts = self.script_table().into_iter().map(|(sha, _)| sha).collect();
                // A replica's log copies a stream; a primary's is its own.
                let replid = self.copies_stream().then(|| self.server.repl.replid.clone());
                if let Err(e) = aof.dir.set_replid(replid) {
                    log::warning(&format!("Can't update the AOF manifest: {e}"));
                }
                self.adopt_log(aof);
                self.log.mem = None;
            }
            (false, true) => {
                self.close_aof();
                self.feed_replicas();
                // Without a log the stream's end is counted in memory from here.
                self.server.repl.offset = self.log.aof.as_ref().map_or(self.server.repl.offset, |a| a.buffered_end());
                let old = self.log.aof.take();
                match old {
                    Some(mut aof) if self.server.repl.backlog.is_some() => {
                        // Replicas and the backlog follow the stream on, in memory. Those
                        // waiting for a full sync from a log rewrite ask again.
                        self.drop_replicas_waiting_for_the_log();
                        let mut mem = crate::aof::stream::MemLog::new(self.server.repl.offset);
                        mem.rec = std::mem::take(&mut aof.rec);
                        mem.rec.tee = true;
                        self.log.mem = Some(mem);
                    }
                    _ => {
                        // Nobody follows the stream: the writes from now on are in none, so
                        // a new history begins (a replica of the old one resyncs in full).
                        self.disconnect_replicas();
                        self.server.repl.backlog = None;
                        if self.server.repl.master.is_none() {
                            let repl = &mut self.server.repl;
                            repl.replid = crate::replication::new_replid();
                            repl.replid2 = crate::replication::NO_REPLID.to_string();
                            repl.second_offset = None;
                        }
                        self.ks.log_deletions = false;
                    }
                }
                // Replies held for a failing log go now: there is no log to wait for.
                self.touched.append(&mut self.log.held);
                self.server.aof_info = None;
            }
            (true, true) => {
                if let Some(aof) = self.log.aof.as_mut() {
                    aof.set_policy(policy);
                }
            }
            (false, false) => {}
        }
        Ok(())
    }

    /// Auto-rewrite (`auto-aof-rewrite-percentage` over `auto-aof-rewrite-min-size`).
    pub(super) fn maybe_auto_rewrite(&mut self) {
        let Some(aof) = self.log.aof.as_ref() else { return };
        let pct = self.server.config.get_int(P::AutoAofRewritePercentage);
        let min = self.server.config.get_int(P::AutoAofRewriteMinSize).max(0) as u64;
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
        if let Some(aof) = self.log.aof.as_mut() {
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
            PersistRequest::Save if self.bgsaving() => Err("ERR Background save already in progress".into()),
            PersistRequest::Save => self.rdb_save().map(|_| Reply::OK),
            PersistRequest::BgSave { schedule } => self.rdb_bgsave(schedule),
            PersistRequest::Reload if self.log.aof.is_none() => self.rdb_reload().map(|_| Reply::OK),
            PersistRequest::Reload => self.reload_aof(true).map(|_| Reply::OK),
            PersistRequest::LoadAof => self.reload_aof(false).map(|_| Reply::OK),
            PersistRequest::Reconfigure => self.reconfigure_aof().map(|_| Reply::OK),
        };
        result.unwrap_or_else(|e| Reply::Error(e.into()))
    }

    /// DEBUG LOADAOF / DEBUG RELOAD: empties the keyspace and loads the directory again.
    pub(super) fn reload_aof(&mut self, rewrite_first: bool) -> Result<(), String> {
        if self.log.aof.is_none() {
            return Err("ERR the append only file is off".into());
        }
        if rewrite_first {
            self.rewrite_now()?;
        }
        self.close_aof();
        // What the close wrote is the stream too; the epoch of scripts stays this log's (the
        // reloaded base holds scripts the stream never carried).
        self.feed_replicas();
        let epoch = self.log.aof.as_ref().map(|a| a.rec.epoch_scripts.clone());
        let stats = self.log.aof.take().map(|a| a.stats);
        self.ks.log_deletions = false;
        self.complete_walks();
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
        if let (Some(aof), Some(old)) = (self.log.aof.as_mut(), stats) {
            aof.stats.rewrites = old.rewrites;
            aof.stats.last_rewrite_ms = old.last_rewrite_ms;
        }
        if let (Some(aof), Some(epoch)) = (self.log.aof.as_mut(), epoch) {
            aof.rec.epoch_scripts = epoch;
        }
        Ok(())
    }
}
