//! The durable log: the directory of files (manifest, base snapshot, incremental logs), the
//! record buffer of the current batch, and the writer.
//!
//! No keyspace logic lives here: the executor decides what a command contributes (see
//! `executor/persist.rs`) and hands records to [`Aof::command`]; this module frames them,
//! tracks the database the log is in (SELECT), and writes and syncs them at the end of each
//! batch ([`Aof::flush`]) before any reply of the batch leaves.

pub mod file;
pub mod format;
pub mod manifest;
pub mod rewrite;
pub mod snapshot;
pub mod stream;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

pub use file::{Fsync, LogFile};
use manifest::{FileEntry, Manifest};

/// The files of one AOF directory.
#[derive(Debug, Clone)]
pub struct AofDir {
    pub path: PathBuf,
    /// `appendfilename`: the prefix of every file name.
    pub prefix: String,
    pub manifest: Manifest,
}

impl AofDir {
    pub fn new(dir: &Path, dirname: &str, prefix: &str) -> AofDir {
        AofDir { path: dir.join(dirname), prefix: prefix.to_string(), manifest: Manifest::default() }
    }

    pub fn manifest_name(&self) -> String {
        format!("{}.manifest", self.prefix)
    }

    /// Reads the manifest; `Ok(false)` when there is none (a fresh start).
    pub fn read_manifest(&mut self) -> Result<bool, String> {
        let path = self.path.join(self.manifest_name());
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                self.manifest = Manifest::parse(&text).map_err(|e| format!("{e} in {}", path.display()))?;
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("Can't read the AOF manifest {}: {e}", path.display())),
        }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn next_seq(&self) -> u64 {
        let base = self.manifest.base.as_ref().map_or(0, |b| b.seq);
        let incr = self.manifest.incrs.last().map_or(0, |i| i.seq);
        base.max(incr) + 1
    }

    /// Starts a new generation: writes `snapshot` as the new base, creates an empty
    /// incremental log, switches the manifest atomically, then deletes the old files.
    /// A crash at any point leaves a directory that loads (old or new generation).
    pub fn new_generation(&mut self, snapshot: &[u8]) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.path)?;
        let tmp = self.file(&format!("temp-{}.{}.base.vsnap", self.prefix, self.next_seq()));
        {
            use std::io::Write;
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(snapshot)?;
            f.sync_all()?;
        }
        let replid = self.manifest.replid.clone();
        self.install_generation(&tmp, replid)
    }

    /// [`AofDir::new_generation`] with a snapshot already written (and synced) to `snapshot`
    /// in this directory, such as one a replica received from its primary; `replid` names
    /// the stream the new log copies (None: the server's own log).
    pub fn install_generation(&mut self, snapshot: &Path, replid: Option<String>) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(&self.path)?;
        let seq = self.next_seq();
        let base = FileEntry { name: format!("{}.{seq}.base.vsnap", self.prefix), seq };
        let incr = FileEntry { name: format!("{}.{seq}.incr.aof", self.prefix), seq };
        std::fs::rename(snapshot, self.file(&base.name))?;
        std::fs::File::create(self.file(&incr.name))?.sync_all()?;
        manifest::sync_dir(&self.path)?;
        let old = std::mem::replace(&mut self.manifest, Manifest { base: Some(base), incrs: vec![incr.clone()], replid });
        if let Err(e) = self.manifest.store(&self.path, &self.manifest_name()) {
            self.manifest = old;
            return Err(e);
        }
        for f in old.base.iter().chain(old.incrs.iter()) {
            let _ = std::fs::remove_file(self.file(&f.name));
        }
        Ok(self.file(&incr.name))
    }

    /// Records (or clears) the replication id the log copies; the manifest is stored again.
    pub fn set_replid(&mut self, replid: Option<String>) -> std::io::Result<()> {
        if self.manifest.replid == replid {
            return Ok(());
        }
        self.manifest.replid = replid;
        self.manifest.store(&self.path, &self.manifest_name())
    }

    /// Deletes what an interrupted rewrite left behind: temp files, and files of ours the
    /// manifest does not name (a base renamed just before a crash, old files not yet
    /// deleted). Returns the names removed.
    pub fn remove_strays(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.path) else { return Vec::new() };
        let m = &self.manifest;
        let named: HashSet<&str> = m.base.iter().chain(m.incrs.iter()).map(|f| f.name.as_str()).collect();
        let ours = |n: &str| {
            n.starts_with("temp-")
                || (n.starts_with(&format!("{}.", self.prefix))
                    && (n.ends_with(".incr.aof") || n.contains(".base."))
                    && !n.contains(".bak-"))
        };
        let mut removed = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if ours(&name) && !named.contains(name.as_str()) && std::fs::remove_file(e.path()).is_ok() {
                removed.push(name);
            }
        }
        removed
    }

    /// Total bytes of the files the manifest names.
    pub fn total_size(&self) -> u64 {
        let m = &self.manifest;
        m.base.iter().chain(m.incrs.iter()).filter_map(|f| std::fs::metadata(self.file(&f.name)).ok()).map(|md| md.len()).sum()
    }
}

/// INFO persistence figures.
#[derive(Debug, Default, Clone)]
pub struct AofStats {
    pub rewrites: u64,
    pub last_rewrite_ms: Option<u64>,
    pub last_rewrite_ok: bool,
    /// Total size of the files right after the last rewrite or load (auto-rewrite's base).
    pub base_size: u64,
    /// The current incremental file's size when `base_size` was taken.
    pub incr_at_base: u64,
}

/// What INFO persistence shows of the log (kept in `ServerState` by the executor).
#[derive(Debug, Default, Clone)]
pub struct AofInfo {
    pub rewrite_in_progress: bool,
    pub current_rewrite_time_sec: i64,
    pub current_size: u64,
    pub base_size: u64,
    pub rewrites: u64,
    pub last_rewrite_time_sec: i64,
    pub last_rewrite_ok: bool,
    pub write_ok: bool,
    pub pending_fsync: bool,
    pub buffer_length: usize,
}

/// The open log.
pub struct Aof {
    pub dir: AofDir,
    pub log: LogFile,
    /// The records of the current batch and their framing (a replica's log copies its
    /// primary's stream: `rec.verbatim`).
    pub rec: stream::Stream,
    /// The last write or fsync error; writes are refused while it stands.
    pub write_error: Option<String>,
    pub stats: AofStats,
    /// Log offset of the start of the current incremental file.
    pub incr_origin: u64,
    pub policy: Fsync,
    /// The rewrite in progress.
    pub rewrite: Option<rewrite::Rewrite>,
    on_synced: Option<Waker>,
}

/// What the fsync thread calls after a sync under `always`.
pub type Waker = std::sync::Arc<dyn Fn() + Send + Sync>;

impl Aof {
    /// Opens the log on `incr`; `on_synced` is called from the fsync thread after each sync
    /// under `always` (the executor releases the replies that waited for it).
    pub fn open(dir: AofDir, incr: &Path, policy: Fsync, incr_origin: u64, on_synced: Option<Waker>) -> std::io::Result<Aof> {
        let log = LogFile::open(incr, policy, on_synced.clone().map(|w| Box::new(move || w()) as Box<dyn Fn() + Send + Sync>))?;
        let base_size = dir.total_size();
        let incr_size = log.size;
        Ok(Aof {
            dir,
            log,
            rec: stream::Stream::default(),
            write_error: None,
            stats: AofStats { base_size, incr_at_base: incr_size, last_rewrite_ok: true, ..AofStats::default() },
            incr_origin,
            policy,
            rewrite: None,
            on_synced,
        })
    }

    /// The log offset at the end of the records buffered so far: a reply to a command whose
    /// records end there may leave once [`Aof::durable_offset`] reaches it.
    pub fn buffered_end(&self) -> u64 {
        self.offset() + self.rec.buf.len() as u64
    }

    /// How far the log is where the fsync policy wants it before replies leave: on disk
    /// under `always`, written otherwise.
    pub fn durable_offset(&self) -> u64 {
        match self.policy {
            Fsync::Always => self.incr_origin + self.log.synced(),
            _ => self.offset(),
        }
    }

    /// The log offset after everything written (the replication offset).
    pub fn offset(&self) -> u64 {
        self.incr_origin + self.log.size
    }

    /// Writes the batch's records (closed by a checkpoint) and syncs per the policy. On
    /// failure the records stay buffered for the next attempt.
    pub fn flush(&mut self) -> Result<(), String> {
        if self.rec.buf.is_empty() {
            return match self.write_error.is_some() {
                true => self.retry_sync(),
                false => Ok(()),
            };
        }
        let records_end = self.rec.seal();
        match self.log.append(&self.rec.buf) {
            Ok(()) => {
                self.rec.written();
                if self.write_error.take().is_some() {
                    crate::log::warning("AOF write error looks solved, Vermilion can write again.");
                }
                Ok(())
            }
            Err(e) => {
                self.rec.buf.truncate(records_end);
                let text = e.to_string();
                if self.write_error.is_none() {
                    crate::log::warning(&format!("Error writing to the AOF file: {text}"));
                }
                self.write_error = Some(text.clone());
                Err(text)
            }
        }
    }

    fn retry_sync(&mut self) -> Result<(), String> {
        match self.log.sync() {
            Ok(()) => {
                self.write_error = None;
                crate::log::warning("AOF write error looks solved, Vermilion can write again.");
                Ok(())
            }
            Err(e) => Err(e.to_string()),
        }
    }

    /// Begins a rewrite: opens a new incremental file (named by an intermediate manifest
    /// after the current ones, so a crash from here on loads old base + old logs + new log)
    /// and starts serializing the snapshot as of now. The caller has flushed the buffer.
    /// `stream_db`: the database the log is in at this offset (a verbatim log's next segment
    /// may start without a SELECT).
    pub fn begin_rewrite(&mut self, ks: &mut crate::db::Keyspace, scripting: &snapshot::Scripting, stream_db: u32) -> std::io::Result<()> {
        let seq = self.dir.next_seq();
        let base = FileEntry { name: format!("{}.{seq}.base.vsnap", self.dir.prefix), seq };
        let incr = FileEntry { name: format!("{}.{seq}.incr.aof", self.dir.prefix), seq };
        std::fs::File::create(self.dir.file(&incr.name))?.sync_all()?;
        manifest::sync_dir(&self.dir.path)?;
        // The current file becomes a non-last one: it must end whole on disk first, with
        // no preallocated zeros after its records.
        self.log.sync()?;
        self.log.trim()?;
        let mut next = self.dir.manifest.clone();
        next.incrs.push(incr.clone());
        next.store(&self.dir.path, &self.dir.manifest_name())?;
        self.dir.manifest = next;
        let origin = self.offset();
        let waker = self.on_synced.clone().map(|w| Box::new(move || w()) as Box<dyn Fn() + Send + Sync>);
        self.log = LogFile::open(&self.dir.file(&incr.name), self.policy, waker)?;
        self.incr_origin = origin;
        self.rec.selected_db = None;
        let temp = self.dir.file(&format!("temp-{}", base.name));
        self.rewrite = Some(rewrite::Rewrite::start(ks, scripting, (origin, stream_db), temp, base, incr)?);
        Ok(())
    }

    /// Completes a rewrite whose snapshot is written: the manifest switches to the new base
    /// and the new incremental file, then the old files go.
    pub fn finish_rewrite(&mut self, rw: rewrite::Rewrite) -> std::io::Result<()> {
        std::fs::rename(&rw.temp_path, self.dir.file(&rw.base.name))?;
        manifest::sync_dir(&self.dir.path)?;
        let replid = self.dir.manifest.replid.clone();
        let old = std::mem::replace(&mut self.dir.manifest, Manifest { base: Some(rw.base.clone()), incrs: vec![rw.incr.clone()], replid });
        if let Err(e) = self.dir.manifest.store(&self.dir.path, &self.dir.manifest_name()) {
            self.dir.manifest = old;
            return Err(e);
        }
        // Freeing a large file's blocks can take many ms: done off the executor thread (the
        // manifest no longer names these files, so a crash meanwhile only leaves strays).
        let doomed: Vec<PathBuf> =
            old.base.iter().chain(old.incrs.iter()).filter(|f| f.name != rw.incr.name).map(|f| self.dir.file(&f.name)).collect();
        let _ = std::thread::Builder::new().name("aof-unlink".into()).spawn(move || {
            for path in doomed {
                let _ = std::fs::remove_file(path);
            }
        });
        // The epoch's scripts stay those the log itself brought (EVAL, SCRIPT LOAD records):
        // the new base holds them too, and a replica, which never reads this base, saw them
        // in the stream. A script only cached (an EVAL that wrote nothing) is not among them.
        self.stats.base_size = self.dir.total_size();
        self.stats.incr_at_base = self.log.size;
        self.stats.rewrites += 1;
        Ok(())
    }

    /// Gives a rewrite up (write error, shutdown): the intermediate manifest stays valid.
    pub fn abandon_rewrite(&mut self) {
        if let Some(rw) = self.rewrite.take() {
            let path = rw.temp_path.clone();
            drop(rw);
            let _ = std::fs::remove_file(path);
        }
    }

    pub fn info(&self) -> AofInfo {
        AofInfo {
            rewrite_in_progress: self.rewrite.is_some(),
            current_rewrite_time_sec: self.rewrite.as_ref().map_or(-1, |r| r.started.elapsed().as_secs() as i64),
            current_size: self.stats.base_size.saturating_sub(self.stats.incr_at_base) + self.log.size,
            base_size: self.stats.base_size,
            rewrites: self.stats.rewrites,
            last_rewrite_time_sec: self.stats.last_rewrite_ms.map_or(-1, |ms| (ms / 1000) as i64),
            last_rewrite_ok: self.stats.last_rewrite_ok,
            write_ok: self.write_error.is_none(),
            pending_fsync: self.log.fsync_in_progress(),
            buffer_length: self.rec.buf.len(),
        }
    }

    pub fn set_policy(&mut self, policy: Fsync) {
        self.policy = policy;
        self.log.set_policy(policy);
    }
}
