//! Compaction without fork: the new base snapshot is serialized a few hundred microseconds
//! at a time between the executor's batches, while the executor keeps serving.
//!
//! The snapshot is the dataset at the moment the rewrite began (log offset `origin`); the
//! new incremental file, opened at that moment, holds everything after it. The keys are
//! visited by a [`Walk`] (each key serialized before anything changes it; deletions need no
//! capture: their DELs are in the new incremental file), and the bytes go to a
//! [`BgWriter`], which writes the temp file, appends the CRC and fsyncs.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::manifest::FileEntry;
use super::snapshot;
use crate::bgwrite::{BgWriter, Checksum, Chunks};
use crate::db::walk::Walk;
use crate::db::Keyspace;

/// A base snapshot serialized by a walk into a file: a log rewrite's new base, or the
/// snapshot a replica's full sync gets from a server without the log.
pub struct SnapshotJob {
    walk: Walk,
    out: Out,
    pub started: Instant,
    /// Log offset the snapshot stands for (the new incremental file's origin).
    pub origin: u64,
    pub temp_path: PathBuf,
}

/// A log rewrite: the snapshot job of its new base, and the files it installs.
pub struct Rewrite {
    pub job: SnapshotJob,
    pub base: FileEntry,
    pub incr: FileEntry,
}

impl std::ops::Deref for Rewrite {
    type Target = SnapshotJob;
    fn deref(&self) -> &SnapshotJob {
        &self.job
    }
}

impl std::ops::DerefMut for Rewrite {
    fn deref_mut(&mut self) -> &mut SnapshotJob {
        &mut self.job
    }
}

/// The serialized bytes on their way to the writer.
struct Out {
    chunks: Chunks,
    keys: u64,
}

impl Out {
    fn entry(&mut self, db: usize, key: &[u8], entry: &crate::db::Entry, expire_at: Option<i64>) {
        snapshot::encode_entry(&mut self.chunks.buf, db, key, entry, expire_at);
        self.keys += 1;
        self.chunks.ship();
    }

    fn finish(&mut self) {
        self.chunks.finish(snapshot::encode_end);
    }
}

impl Rewrite {
    /// Starts a rewrite of `ks` with `scripting` as of log offset `origin` (the log then
    /// in database `stream_db`), into `temp_path`.
    pub fn start(
        ks: &mut Keyspace,
        scripting: &snapshot::Scripting,
        (origin, stream_db): (u64, u32),
        temp_path: PathBuf,
        base: FileEntry,
        incr: FileEntry,
    ) -> std::io::Result<Rewrite> {
        Ok(Rewrite { job: SnapshotJob::start(ks, scripting, (origin, stream_db), temp_path)?, base, incr })
    }
}

impl SnapshotJob {
    /// Starts serializing `ks` with `scripting` as the snapshot of stream offset `origin`
    /// (the stream then in database `stream_db`) into `temp_path`.
    pub fn start(
        ks: &mut Keyspace,
        scripting: &snapshot::Scripting,
        (origin, stream_db): (u64, u32),
        temp_path: PathBuf,
    ) -> std::io::Result<SnapshotJob> {
        let writer = BgWriter::spawn("snapshot-writer", &temp_path, Checksum::Xz)?;
        let buf = snapshot::encode_start(scripting, origin, stream_db);
        Ok(SnapshotJob {
            walk: Walk::start(ks),
            out: Out { chunks: Chunks::new(writer, buf), keys: 0 },
            started: Instant::now(),
            origin,
            temp_path,
        })
    }

    /// Serializes `key` of `db` now if the snapshot still needs it (it is about to change).
    pub fn capture(&mut self, ks: &mut Keyspace, db: usize, key: &[u8]) {
        let out = &mut self.out;
        self.walk.capture(ks, db, key, |db, k, e, at| out.entry(db, k, e, at));
    }

    /// Walks on for about `budget`; true once every key is serialized.
    pub fn step(&mut self, ks: &mut Keyspace, budget: Duration) -> bool {
        let out = &mut self.out;
        if self.walk.step(ks, budget, |db, k, e, at| out.entry(db, k, e, at)) {
            out.finish();
        }
        self.walk.walked()
    }

    /// Serializes everything left at once (before a command whose keys are not known in
    /// advance, or when the caller needs the rewrite done).
    pub fn complete_walk(&mut self, ks: &mut Keyspace) {
        let out = &mut self.out;
        self.walk.complete(ks, |db, k, e, at| out.entry(db, k, e, at));
        out.finish();
    }

    pub fn walked(&self) -> bool {
        self.walk.walked()
    }

    /// Keys serialized so far.
    pub fn keys(&self) -> u64 {
        self.out.keys
    }

    /// The writer's result once it has finished (file size), or None while it works.
    pub fn poll(&self) -> Option<Result<u64, String>> {
        self.out.chunks.writer.poll()
    }

    /// Waits for the writer to finish.
    pub fn wait(&self) -> Result<u64, String> {
        self.out.chunks.writer.wait()
    }
}
