//! The background walks over the keyspace: a log rewrite's base, a full sync's snapshot
//! without the log, a BGSAVE's file. None forks: each is stepped between batches, a write
//! first captures the keys it is about to change into every walk under way, and all are
//! finished before the keyspace is replaced. Their own state lives with their owners
//! (`log_life.rs`, `replicate/memory_sync.rs`, `rdb_save.rs`).

use std::time::Duration;

use bytes::Bytes;

use super::Executor;
use crate::commands::{CommandSpec, Trait};

/// How long one slice of a log rewrite may hold the executor.
const REWRITE_SLICE_US: u64 = 500;

impl Executor {
    /// A slice of each walk under way (a log rewrite, a full sync's snapshot without the
    /// log, a BGSAVE), between batches; then how soon to come back: at once while one still
    /// walks, within a millisecond while a writer thread finishes a file.
    pub(super) fn step_background(&mut self) -> Option<Duration> {
        if !(self.rewriting() || self.syncing() || self.bgsaving()) {
            return None;
        }
        self.release_later();
        let slice = Duration::from_micros(REWRITE_SLICE_US);
        self.rewrite_tick(slice);
        self.sync_tick(slice);
        self.bgsave_tick(slice);
        if self.rewriting() || self.sync_walking() || self.bgsave_walking() {
            Some(Duration::ZERO)
        } else {
            (self.syncing() || self.bgsaving()).then_some(Duration::from_millis(1))
        }
    }

    /// Before a write command runs during a rewrite: the keys it may change are serialized
    /// first (or, when they are not known in advance, every remaining key).
    pub(super) fn capture_before_write(&mut self, db: usize, cmd: &CommandSpec, args: &[Bytes]) {
        let keys: Option<Vec<Bytes>> = keys_written(cmd, args).map(|positions| positions.into_iter().map(|p| args[p].clone()).collect());
        // A background RDB save keeps the keys a flush removes (the log's rewrite needs
        // nothing of them: the flush is in its new incremental file).
        let flushes = cmd.is(Trait::EmptiesDatabases);
        self.capture_for_bgsave(db, if flushes { None } else { keys.as_deref() });
        self.capture_for_sync(db, if flushes { None } else { keys.as_deref() });
        let Some(rw) = self.log.aof.as_mut().and_then(|a| a.rewrite.as_mut()) else { return };
        match keys {
            Some(keys) => {
                for k in keys {
                    rw.capture(&mut self.ks, db, &k);
                }
            }
            None => rw.complete_walk(&mut self.ks),
        }
    }

    /// Finishes every walk under way: the keyspace is about to be replaced (a reload, a
    /// replica's new snapshot), and each file keeps the dataset of its start.
    pub(super) fn complete_walks(&mut self) {
        self.complete_bgsave_walk();
        self.complete_sync_walk();
    }
}

/// The argument positions of the keys a write command may change, or None when they are
/// not known before it runs (the caller then serializes everything first): from the key
/// specs, except for the commands whose traits say they empty databases (nothing to capture
/// key by key) or may write another database than the client's.
pub(super) fn keys_written(cmd: &CommandSpec, args: &[Bytes]) -> Option<Vec<usize>> {
    if cmd.is(Trait::EmptiesDatabases) {
        return Some(Vec::new());
    }
    // SWAPDB always; COPY when its DB option names a database (maybe another one).
    if cmd.is(Trait::OtherDatabase) && (cmd.keys.is_empty() || args.iter().skip(3).any(|a| crate::util::eq_ignore_case(a, "db"))) {
        return None;
    }
    // Every key the command names, not only those its specs mark written: XREADGROUP's spec
    // calls its stream read-only, yet it moves the group (capturing one too many is harmless).
    let mut keys = crate::spec::keyspec::written_keys(cmd, args)?;
    keys.extend(crate::spec::keyspec::command_keys(cmd, args).into_iter().map(|(p, _)| p));
    keys.sort_unstable();
    keys.dedup();
    Some(keys)
}
