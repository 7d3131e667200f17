//! Replication without the log (`appendonly no`): the stream is framed and counted in memory
//! (`aof::stream::MemLog`) from the first PSYNC on, the backlog serves partial resyncs, and a
//! full sync gets a snapshot of the moment it was asked for, serialized by a walk between
//! batches (no fork) into a temp file, while the stream since that moment is held for the
//! replica and sent after the snapshot. The replica sees what a primary with the log sends.

use super::super::Executor;
use crate::aof::rewrite::SnapshotJob;
use crate::aof::stream::MemLog;
use crate::log;
use crate::protocol::Reply;
use crate::replication::PeerState;
use crate::state::{Client, ClientId};

impl Executor {
    /// Without the log, a stream in memory from the current offset (once: it lives on
    /// with the backlog).
    pub(super) fn start_memory_stream(&mut self) {
        if self.log.aof.is_some() || self.log.mem.is_some() {
            return;
        }
        let mut mem = MemLog::new(self.server.repl.offset);
        mem.rec.verbatim = self.copies_stream();
        // A full sync's snapshot carries every cached script: EVALSHA of them stays as is.
        mem.rec.epoch_scripts = self.script_table().into_iter().map(|(sha, _)| sha).collect();
        self.ks.log_deletions = self.server.repl.master.is_none();
        self.log.mem = Some(mem);
    }

    /// A full sync without the log: `+FULLRESYNC` at the current offset, then the snapshot
    /// when the walk ends (one walk serves every replica that asks meanwhile).
    pub(super) fn memory_full_sync(&mut self, client: &mut Client) -> Reply {
        // A job nobody waits on any more has no record of the stream since its origin: a
        // replica cannot join it, so it starts again.
        if self.feed.sync_job.is_some() && self.held_since_origin(client.id).is_none() {
            self.abandon_sync_job();
        }
        if self.feed.sync_job.is_none() {
            if let Err(e) = self.start_sync_job() {
                log::warning(&format!("Can't start the snapshot for a full sync: {e}"));
                return Reply::Error(format!("ERR the snapshot for the full sync could not be started: {e}").into());
            }
        }
        let Some(origin) = self.feed.sync_job.as_ref().map(|j| j.origin) else { return Reply::NoReply };
        self.server.repl.sync_full += 1;
        log::notice(&format!("Starting a snapshot for SYNC with target: memory, at offset {origin}"));
        client.out.extend_from_slice(format!("+FULLRESYNC {} {origin}\r\n", self.server.repl.replid).as_bytes());
        self.attach_replica(client, PeerState::WaitSnapshot, origin, false);
        // The stream since the job's origin: nothing yet if the job started now; a replica
        // that joins a running job copies what the others hold (they all hold since then).
        let since = self.held_since_origin(client.id).unwrap_or_default();
        if let Some(peer) = client.replica.as_mut() {
            peer.held = Some(since);
        }
        Reply::NoReply
    }

    /// What another replica waiting on the same job holds (the stream since its origin).
    fn held_since_origin(&self, except: ClientId) -> Option<Vec<u8>> {
        self.server.repl.replicas.iter().filter(|&&id| id != except).find_map(|id| {
            let p = self.server.clients.get(id)?.replica.as_ref()?;
            (p.state == PeerState::WaitSnapshot && !p.plain).then(|| p.held.clone()).flatten()
        })
    }

    fn start_sync_job(&mut self) -> std::io::Result<()> {
        // One walk at a time: a background RDB save's is finished first.
        self.complete_bgsave_walk();
        self.flush_log();
        self.feed_replicas();
        let origin = self.server.repl.offset;
        let verbatim = self.log.mem.as_ref().is_some_and(|m| m.rec.verbatim);
        let stream_db = if verbatim { self.replica.master_client.as_ref().map_or(self.replica.master_db, |c| c.db) as u32 } else { 0 };
        if let Some(m) = self.log.mem.as_mut() {
            if !verbatim {
                // The snapshot says database 0: the next record names its own.
                m.rec.selected_db = None;
            }
        }
        let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
        let temp = cwd.join(format!("temp-sync-{}-{origin}.vsnap", std::process::id()));
        let scripting = self.snapshot_scripting();
        self.feed.sync_job = Some(SnapshotJob::start(&mut self.ks, &scripting, (origin, stream_db), temp)?);
        Ok(())
    }

    /// Drops the full sync's job (nobody waits for it, or the stream it stands for was
    /// replaced); its temp file goes.
    pub(in crate::executor) fn abandon_sync_job(&mut self) {
        if let Some(job) = self.feed.sync_job.take() {
            let path = job.temp_path.clone();
            drop(job);
            let _ = std::fs::remove_file(path);
        }
    }

    /// Whether a full sync's snapshot is still walking (the main loop steps it at once).
    pub(in crate::executor) fn sync_walking(&self) -> bool {
        self.feed.sync_job.as_ref().is_some_and(|j| !j.walked())
    }

    pub(in crate::executor) fn syncing(&self) -> bool {
        self.feed.sync_job.is_some()
    }

    /// One slice of the full sync's walk, and the hand-over once the file is written.
    pub(in crate::executor) fn sync_tick(&mut self, budget: std::time::Duration) {
        let Some(job) = self.feed.sync_job.as_mut() else { return };
        if !job.walked() {
            job.step(&mut self.ks, budget);
            return;
        }
        let Some(result) = job.poll() else { return };
        self.complete_memory_syncs(result);
    }

    /// Serializes `key` for the full sync's snapshot before a write changes it.
    pub(in crate::executor) fn capture_for_sync(&mut self, db: usize, keys: Option<&[bytes::Bytes]>) {
        let Some(job) = self.feed.sync_job.as_mut() else { return };
        match keys {
            Some(keys) => keys.iter().for_each(|k| job.capture(&mut self.ks, db, k)),
            None => job.complete_walk(&mut self.ks),
        }
    }

    /// Finishes the full sync's walk now (another walk is about to start, or the keyspace
    /// is about to be replaced).
    pub(in crate::executor) fn complete_sync_walk(&mut self) {
        if let Some(job) = self.feed.sync_job.as_mut() {
            job.complete_walk(&mut self.ks);
        }
    }

    /// The log was turned off: replicas waiting for a full sync from its rewrite (which
    /// was abandoned) are disconnected, to ask again.
    pub(in crate::executor) fn drop_replicas_waiting_for_the_log(&mut self) {
        let waiting = self.waiting_for_snapshot(false);
        self.server.kill_list.extend(waiting);
    }

    /// The snapshot is written: each waiting replica gets it, then the stream it held.
    fn complete_memory_syncs(&mut self, result: Result<u64, String>) {
        let Some(job) = self.feed.sync_job.take() else { return };
        self.flush_log();
        self.feed_replicas();
        let waiting = self.waiting_for_snapshot(true);
        let len = result.as_ref().ok().copied();
        for id in waiting {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            let file = std::fs::File::open(&job.temp_path);
            let (Some(len), Ok(file), true) = (len, file, c.replica.is_some()) else {
                log::warning(&format!(
                    "SYNC failed for replica id={id}: {}",
                    result.as_ref().err().map_or("the snapshot could not be read", |e| e)
                ));
                self.server.kill_list.push(id);
                continue;
            };
            let held = Self::send_held_snapshot(c, file, len);
            log::notice(&format!("Synchronization with replica id={id} succeeded ({len} bytes of snapshot, {held} bytes of stream)"));
        }
        // The open files keep the data for the jobs; the name goes now.
        let _ = std::fs::remove_file(&job.temp_path);
        self.release_replies();
    }
}
