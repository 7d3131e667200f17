//! Compaction without fork: the new base snapshot is serialized a few hundred microseconds
//! at a time between the executor's batches, while the executor keeps serving.
//!
//! The snapshot is the dataset at the moment the rewrite began (log offset `origin`); the
//! new incremental file, opened at that moment, holds everything after it. Consistency
//! comes from one rule: a key is serialized before anything changes it. Entries carry a
//! mark ([`crate::db::Entry::snap`]): the rewrite's epoch once serialized, and new entries
//! get the epoch at birth (they are not part of the snapshot). The walk visits each
//! database's dense positions downwards, so a removal (the last entry moves into the hole)
//! never moves an unvisited entry out of the walk's way. Deletions need no capture: their
//! DELs are in the new incremental file. The executor captures the keys a write command is
//! about to touch ([`Rewrite::capture`]), or completes the walk at once for the rare
//! commands whose keys are not known beforehand ([`Rewrite::complete_walk`]).
//!
//! Serialized bytes go to a writer thread in chunks: it writes the temp file, keeps the CRC,
//! appends it and fsyncs.

use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::time::{Duration, Instant};

use super::manifest::FileEntry;
use super::snapshot;
use crate::db::Keyspace;

/// Bytes buffered before a chunk goes to the writer thread.
const CHUNK: usize = 1 << 20;

enum Chunk {
    Data(Vec<u8>),
    Finish,
}

pub struct Rewrite {
    epoch: u32,
    /// Database being walked, and how many of its positions are still to visit.
    db: usize,
    cursor: usize,
    walked: bool,
    buf: Vec<u8>,
    tx: Sender<Chunk>,
    done: Receiver<Result<u64, String>>,
    pub started: Instant,
    /// Log offset the snapshot stands for (the new incremental file's origin).
    pub origin: u64,
    pub base: FileEntry,
    pub incr: FileEntry,
    pub temp_path: PathBuf,
    pub keys: u64,
}

impl Rewrite {
    /// Starts a rewrite of `ks` with `scripting` as of log offset `origin` (the log then
    /// in database `stream_db`), into
    /// `temp_path`. Marks every database with `epoch` (new entries then belong to it).
    pub fn start(
        ks: &mut Keyspace,
        scripting: &snapshot::Scripting,
        (origin, stream_db): (u64, u32),
        epoch: u32,
        temp_path: PathBuf,
        base: FileEntry,
        incr: FileEntry,
    ) -> std::io::Result<Rewrite> {
        let file = std::fs::File::create(&temp_path)?;
        let (tx, rx) = channel::<Chunk>();
        let (done_tx, done) = channel();
        std::thread::Builder::new().name("aof-rewrite".into()).spawn(move || {
            let _ = done_tx.send(write_chunks(file, rx));
        })?;
        for db in ks.dbs.iter_mut() {
            db.snap_epoch = epoch;
        }
        Ok(Rewrite {
            epoch,
            db: 0,
            cursor: ks.dbs.first().map_or(0, |d| d.len()),
            walked: false,
            buf: snapshot::encode_start(scripting, origin, stream_db),
            tx,
            done,
            started: Instant::now(),
            origin,
            base,
            incr,
            temp_path,
            keys: 0,
        })
    }

    fn ship(&mut self, force: bool) {
        if self.buf.len() >= CHUNK || (force && !self.buf.is_empty()) {
            let _ = self.tx.send(Chunk::Data(std::mem::take(&mut self.buf)));
        }
    }

    /// Serializes `key` of `db` now if the snapshot still needs it (it is about to change).
    pub fn capture(&mut self, ks: &mut Keyspace, db: usize, key: &[u8]) {
        if self.walked || db >= ks.dbs.len() {
            return;
        }
        let Some(pos) = ks.dbs[db].position(key) else { return };
        self.visit(ks, db, pos);
    }

    fn visit(&mut self, ks: &mut Keyspace, db: usize, pos: usize) {
        let Some((key, entry)) = ks.dbs[db].slot_at_mut(pos) else { return };
        if entry.snap == self.epoch {
            return;
        }
        entry.snap = self.epoch;
        snapshot::encode_entry(&mut self.buf, db, key, entry);
        self.keys += 1;
        self.ship(false);
    }

    /// Walks on for about `budget`; true once every key is serialized.
    pub fn step(&mut self, ks: &mut Keyspace, budget: Duration) -> bool {
        let start = Instant::now();
        let mut n = 0u32;
        while !self.walked {
            let len = ks.dbs[self.db].len();
            self.cursor = self.cursor.min(len);
            if self.cursor == 0 {
                self.db += 1;
                if self.db == ks.dbs.len() {
                    self.walked = true;
                    snapshot::encode_end(&mut self.buf);
                    self.ship(true);
                    let _ = self.tx.send(Chunk::Finish);
                    break;
                }
                self.cursor = ks.dbs[self.db].len();
                continue;
            }
            self.cursor -= 1;
            self.visit(ks, self.db, self.cursor);
            n += 1;
            if n.is_multiple_of(64) && start.elapsed() >= budget {
                break;
            }
        }
        self.walked
    }

    /// Serializes everything left at once (before a command whose keys are not known in
    /// advance, or when the caller needs the rewrite done).
    pub fn complete_walk(&mut self, ks: &mut Keyspace) {
        while !self.step(ks, Duration::from_secs(3600)) {}
    }

    pub fn walked(&self) -> bool {
        self.walked
    }

    /// The writer's result once it has finished (file size), or None while it works.
    pub fn poll(&self) -> Option<Result<u64, String>> {
        self.done.try_recv().ok()
    }

    /// Waits for the writer to finish.
    pub fn wait(&self) -> Result<u64, String> {
        self.done.recv().unwrap_or_else(|_| Err("the rewrite writer stopped".into()))
    }
}

fn write_chunks(file: std::fs::File, rx: Receiver<Chunk>) -> Result<u64, String> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut crc = crc64fast::Digest::new();
    let mut size = 0u64;
    for chunk in rx {
        match chunk {
            Chunk::Data(bytes) => {
                crc.write(&bytes);
                size += bytes.len() as u64;
                w.write_all(&bytes).map_err(|e| e.to_string())?;
            }
            Chunk::Finish => {
                w.write_all(&crc.sum64().to_le_bytes()).map_err(|e| e.to_string())?;
                let file = w.into_inner().map_err(|e| e.to_string())?;
                file.sync_all().map_err(|e| e.to_string())?;
                return Ok(size + 8);
            }
        }
    }
    Err("the rewrite was abandoned".into())
}
