//! Loading the durable log: the base snapshot, then each incremental file, replayed through
//! `execute` by one loader client (no logging, the clock at zero so nothing expires, script
//! records at their frozen time). A replica applies its primary's stream through the same
//! `replay_record`.

use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;

use super::Executor;
use crate::aof::{self, format, snapshot, AofDir};
use crate::config::P;
use crate::log;
use crate::state::Client;

/// How commands are being applied: what is checked, logged and expired depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Applying {
    /// Clients' commands: checked, logged, expiring and evicting.
    #[default]
    Clients,
    /// Replaying the log from disk (a restart, DEBUG RELOAD, a full sync's snapshot): no
    /// logging, the clock at zero, script records at their frozen time.
    Load,
    /// A replica applying its primary's live stream: as a load, but the PUBLISH records in
    /// it reach this server's subscribers.
    LiveStream,
}

/// The loader's state.
pub(super) struct Loader {
    pub applying: Applying,
    /// The frozen time of the script record being replayed.
    pub replay_time_ms: Option<i64>,
    /// The scripts the log (or the primary's stream) holds in its current epoch, by SHA1:
    /// an EVALSHA record runs the body kept here, whatever the script cache holds.
    pub stream_scripts: std::collections::HashMap<String, Bytes>,
    /// The database the loader was in at the end of the last load.
    pub loaded_db: usize,
    /// Bytes loaded so far and when progress was last logged.
    pub progress: (u64, Instant),
}

impl Default for Loader {
    fn default() -> Self {
        Loader {
            applying: Applying::Clients,
            replay_time_ms: None,
            stream_scripts: Default::default(),
            loaded_db: 0,
            progress: (0, Instant::now()),
        }
    }
}

impl Executor {
    /// Whether records are being replayed (from disk or a primary's stream) rather than
    /// clients' commands run.
    pub(super) fn loading(&self) -> bool {
        self.load.applying != Applying::Clients
    }

    /// How values built from a snapshot are encoded (the config's listpack and intset sizes).
    fn build_limits(&self) -> snapshot::BuildLimits {
        crate::commands::build_limits(&self.server.config)
    }

    /// Loads the base and the incremental logs the manifest names; returns the last
    /// incremental file (created if the manifest names none) and its log origin.
    pub(super) fn load_dir(&mut self, dir: &mut AofDir) -> Result<(std::path::PathBuf, u64), String> {
        self.load.applying = Applying::Load;
        self.server.limits.loading.store(true, Ordering::Release);
        let result = self.load_files(dir);
        self.load.applying = Applying::Clients;
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
        self.load.progress = (0, Instant::now());
        self.load.stream_scripts.clear();
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
                log::notice(&format!(
                    "Loading base snapshot {}: {} keys, {} scripts, {} function libraries",
                    base.name,
                    loaded.keys,
                    loaded.scripting.scripts.len(),
                    loaded.scripting.libraries.len()
                ));
                self.load.progress.0 += data.len() as u64;
                shared.loading_loaded_bytes.store(self.load.progress.0, Ordering::Relaxed);
                origin = loaded.log_offset;
                loader.db = (loaded.stream_db as usize).min(self.ks.dbs.len() - 1);
            } else if crate::db::rdb_file::is_rdb(&data) {
                // Redis 7's base in RDB form (`aof-use-rdb-preamble yes`): a Redis directory
                // being migrated, whose next rewrite gives it a base of ours.
                let (keys, _) = self.load_rdb_bytes(&data, true).map_err(|e| format!("Bad RDB base file {}: {e}", path.display()))?;
                log::notice(&format!("Loading RDB base file {}: {keys} keys", base.name));
                self.load.progress.0 += data.len() as u64;
                shared.loading_loaded_bytes.store(self.load.progress.0, Ordering::Relaxed);
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
        self.load.loaded_db = loader.db;
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
            Some(format::Problem::Truncated { .. }) if self.server.config.get(P::AofLoadTruncated) != "yes" => {
                return Err(format!(
                    "Unexpected end of file reading the append only file {name}. You can: 1) Make a backup of your AOF directory, then use vermilion-check-aof --fix <filename>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server."
                ));
            }
            Some(format::Problem::Truncated { .. }) => {}
        }
        let mut failure = None;
        let (file_start, mut count) = (self.load.progress.0, 0u64);
        // Redis's test knob: microseconds to wait per record (tests watch a load this way).
        let delay = self.server.config.get_int(P::KeyLoadDelay).max(0) as u64;
        let mut pump = super::inbox::LoadPump::new(self.inbox.clone());
        format::replay_checked(&data[..verdict.valid_len], |rec| {
            if delay > 0 {
                std::thread::sleep(std::time::Duration::from_micros(delay));
            }
            pump.tick(delay > 0);
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
        // Zeros the writer preallocated (a crash under `always` leaves them): the next
        // writer appends where the log ends, so they go.
        let zeros = size - format::logical_len(&data) as u64;
        drop(data);
        if zeros > 0 && verdict.problem.is_none() {
            log::notice(&format!("Cutting {zeros} bytes of preallocated space after the end of the AOF {name}"));
        }
        if verdict.problem.is_some() {
            let cut = size - verdict.valid_len as u64;
            log::warning(&format!("!!! Warning: short read while loading the AOF file {name}!!!"));
            log::warning(&format!(
                "!!! Truncating the AOF {name} at offset {} (cutting {cut} bytes of a torn tail) !!!",
                verdict.valid_len
            ));
        }
        if verdict.problem.is_some() || seal.is_some() || zeros > 0 {
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
        self.load.progress.0 = loaded;
        limits.loading_loaded_bytes.store(loaded, Ordering::Relaxed);
        if self.load.progress.1.elapsed() >= std::time::Duration::from_secs(1) {
            self.load.progress.1 = Instant::now();
            let total = limits.loading_total_bytes.load(Ordering::Relaxed).max(1);
            log::notice(&format!("Loading the append only file: {:.1}% ({loaded} of {total} bytes)", loaded as f64 * 100.0 / total as f64));
        }
    }

    /// Loads a base snapshot: its keys into the keyspace (`key-load-delay`, Redis's test knob,
    /// applies per key, so a test can watch a load), its scripts into the cache and the
    /// log's epoch (`stream_scripts`).
    pub(super) fn decode_snapshot(&mut self, data: &[u8]) -> Result<snapshot::Loaded, snapshot::SnapshotError> {
        let limits = self.build_limits();
        let delay = self.server.config.get_int(P::KeyLoadDelay).max(0) as u64;
        let databases = self.ks.dbs.len();
        let ks = &mut self.ks;
        let mut pump = super::inbox::LoadPump::new(self.inbox.clone());
        let loaded = snapshot::decode_with(data, &limits, databases, |db, key, value, expire_at| {
            if delay > 0 {
                std::thread::sleep(std::time::Duration::from_micros(delay));
            }
            pump.tick(delay > 0);
            ks.db_mut(db).insert(key, value, expire_at, 0);
        })?;
        if let Some(engine) = self.server.scripts.as_mut() {
            for body in &loaded.scripting.scripts {
                if let Ok(s) = engine.load(body) {
                    self.load.stream_scripts.insert(s.sha.to_string(), body.clone());
                }
            }
            // The snapshot's libraries are the whole set at its offset.
            engine.functions.flush();
            for code in &loaded.scripting.libraries {
                if let Err(e) = engine.functions.load(code, true, false) {
                    log::warning(&format!("A function library of the snapshot failed to load: {e}"));
                }
            }
        }
        Ok(loaded)
    }

    /// The client records are replayed through: authenticated, never blocking.
    pub(super) fn loader_client(&self) -> Client {
        let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
        let mut c =
            Client::new(u64::MAX, "aof-loader".into(), String::new(), tx, std::sync::Arc::new(crate::state::ConnFlags::default()), true);
        c.deny_blocking = true;
        c.superuser = true;
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
        // A message is for the subscribers of the moment: a replica's live stream delivers
        // it, a load from disk (a restart, DEBUG RELOAD) does not again.
        if self.load.applying != Applying::LiveStream && (name.eq_ignore_ascii_case(b"publish") || name.eq_ignore_ascii_case(b"spublish")) {
            return None;
        }
        let mut argv: Vec<Bytes> = rec.argv.iter().map(|a| Bytes::copy_from_slice(a)).collect();
        self.now_ms = 0;
        self.load.replay_time_ms = rec.time_ms;
        if let crate::commands::Resolved::Unknown = crate::commands::resolve(&argv) {
            return Some(format!("Unknown command '{}'", String::from_utf8_lossy(&argv[0])));
        }
        // An EVALSHA of the epoch runs the body the log holds: the script cache may have been
        // flushed since (a replica's local SCRIPT FLUSH must not break the stream). Cached
        // (the usual case), it runs as is.
        let evalsha = name.eq_ignore_ascii_case(b"evalsha") || name.eq_ignore_ascii_case(b"evalsha_ro");
        if evalsha && argv.len() > 1 && !self.server.scripts.as_ref().is_some_and(|e| e.exists(&argv[1])) {
            let sha = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
            if let Some(body) = self.load.stream_scripts.get(&sha) {
                argv[0] = Bytes::from_static(if name.len() == 7 { b"EVAL" } else { b"EVAL_RO" });
                argv[1] = body.clone();
            }
        }
        // A whole script runs in a Lua state no earlier local script changed (a replica's
        // clients run scripts in the same state).
        if name.len() >= 4 && name[..4].eq_ignore_ascii_case(b"eval") {
            if let Some(engine) = self.server.scripts.as_mut() {
                if let Err(e) = engine.untaint() {
                    crate::log::warning(&format!("Rebuilding the Lua state: {e}"));
                }
            }
        }
        self.execute(loader, &argv);
        // The bodies this epoch holds: EVAL and SCRIPT LOAD records add theirs, SCRIPT FLUSH
        // empties the table.
        let sub = rec.argv.get(1).copied().unwrap_or_default();
        let is_eval = name.eq_ignore_ascii_case(b"eval") || name.eq_ignore_ascii_case(b"eval_ro");
        if is_eval || (name.eq_ignore_ascii_case(b"script") && sub.eq_ignore_ascii_case(b"load")) {
            let body = rec.argv.get(if is_eval { 1 } else { 2 }).copied().unwrap_or_default();
            self.load.stream_scripts.insert(crate::scripting::sha1_hex(body), Bytes::copy_from_slice(body));
        } else if name.eq_ignore_ascii_case(b"script") && sub.eq_ignore_ascii_case(b"flush") {
            self.load.stream_scripts.clear();
        }
        self.release_replies();
        None
    }
}

/// Maps a file read-only (an empty file maps to nothing).
pub(super) fn map_file(path: &std::path::Path) -> Result<memmap2::Mmap, String> {
    let f = std::fs::File::open(path).map_err(|e| format!("Can't open {}: {e}", path.display()))?;
    // Safety: the file is ours and nothing truncates it while the map lives (truncation
    // of a torn tail happens after the map is dropped).
    unsafe { memmap2::Mmap::map(&f) }.map_err(|e| format!("Can't map {}: {e}", path.display()))
}
