//! All-or-nothing scripts (a Vermilion extension, off by default: the `rollback` shebang
//! flag, or `script-rollback yes` for every script). Before a write command of such a script
//! runs, the entries of the keys it may change are copied, once per key: the undo record.
//! A script that raises an error, is stopped by SCRIPT KILL or outgrows
//! `script-rollback-max-memory` gets them back, newest first. Its keyspace events are held
//! until it ends and dropped with its writes; nothing of it is logged (only the deletions of
//! keys that had expired), so neither the log nor a replica sees it.
//!
//! The key positions come from the command table (`walks::keys_written`, as a background walk
//! captures them). A command whose keys are not known in advance (FLUSHDB, FLUSHALL, SWAPDB,
//! MOVE, COPY ... DB) is refused in such a script.

use std::collections::HashSet;

use bytes::Bytes;

use super::Executor;
use crate::commands::{CommandSpec, Flag, Trait};
use crate::config::P;
use crate::db::Entry;
use crate::protocol::Reply;

/// A key's entry and expiry as they were before the script's first write to it.
type Saved = (Entry, Option<i64>);

/// The undo record of the running all-or-nothing script.
#[derive(Default)]
pub(super) struct Undo {
    /// (database, key, its entry and expiry before the script's first write to it), oldest first.
    saved: Vec<(usize, Bytes, Option<Saved>)>,
    seen: HashSet<(usize, Bytes)>,
    /// The record's size (entries as the keyspace counts them) and its bound.
    bytes: usize,
    limit: usize,
    /// The record outgrew its bound: the script is rolled back whatever it returns.
    overflowed: bool,
    /// Keyspace events of the script, delivered when it succeeds.
    pub notifications: Vec<crate::notify::Notification>,
}

pub(super) const OVERFLOW: &str = "ERR the script's undo record exceeds script-rollback-max-memory: its writes are rolled back";

impl Executor {
    /// Whether a script with these flags runs all-or-nothing: its `rollback` flag, or the
    /// server's `script-rollback`. Never for a record being replayed (it ran whole already).
    pub(super) fn wants_rollback(&self, flag: bool) -> bool {
        !self.loading() && (flag || self.server.config.get(P::ScriptRollback) == "yes")
    }

    pub(super) fn start_undo(&mut self) {
        let limit = self.server.config.get_int(P::ScriptRollbackMaxMemory).max(0) as usize;
        self.undo = Some(Undo { limit: if limit == 0 { usize::MAX } else { limit }, ..Undo::default() });
    }

    /// Before a command of an all-or-nothing script runs: the entries it may change are
    /// saved. An error reply refuses the command (its keys are not known in advance, or the
    /// record is full).
    pub(super) fn undo_capture(&mut self, db: usize, cmd: &CommandSpec, args: &[Bytes]) -> Option<Reply> {
        let undo = self.undo.as_mut()?;
        // MayReplicate: PFCOUNT may rewrite its keys' cached counts (PUBLISH, also flagged,
        // names no key: nothing to copy).
        let copies = cmd.has(Flag::Write) || (cmd.has(Flag::MayReplicate) && !cmd.keys.is_empty());
        if !copies {
            return None;
        }
        let positions = match super::walks::keys_written(cmd, args) {
            // Every key the command names (see `keys_written`).
            Some(keys) if !cmd.is(Trait::EmptiesDatabases) && !cmd.is(Trait::MovesKey) => keys,
            _ => {
                return Some(Reply::Error(
                    format!("ERR '{}' is not allowed in a script with rollback (its keys are not known before it runs)", cmd.name).into(),
                ))
            }
        };
        if undo.overflowed {
            return Some(Reply::error(OVERFLOW));
        }
        for p in positions {
            let key = &args[p];
            if !undo.seen.insert((db, key.clone())) {
                continue;
            }
            // Measured before it is copied: a copy past the bound is never made.
            let current = self.ks.db(db).peek(key);
            let size = current.map_or(key.len() + 64, |e| crate::db::entry_mem(key, e));
            if undo.bytes + size > undo.limit {
                undo.overflowed = true;
                return Some(Reply::error(OVERFLOW));
            }
            undo.bytes += size;
            let saved = current.map(|e| (e.clone(), self.ks.db(db).expire_of(key, e)));
            undo.saved.push((db, key.clone(), saved));
        }
        None
    }

    /// The all-or-nothing script ended: its writes stay (`failed` false: its events are
    /// delivered now) or are undone. Returns (whether they were undone, whether the record
    /// had overflowed).
    pub(super) fn finish_undo(&mut self, client: &mut crate::state::Client, failed: bool) -> (bool, bool) {
        let Some(undo) = self.undo.take() else { return (false, false) };
        let overflowed = undo.overflowed;
        if !(failed || overflowed) {
            self.publish_events(client, undo.notifications);
            return (false, false);
        }
        // A walk marks what it has serialized in the entries; restored ones carry old marks.
        // Finishing the walks first keeps each file whole (this happens only on a rollback
        // during a BGSAVE, a log rewrite or a full sync's snapshot).
        self.complete_walks();
        if let Some(rw) = self.log.aof.as_mut().and_then(|a| a.rewrite.as_mut()) {
            rw.complete_walk(&mut self.ks);
        }
        for (db, key, entry) in undo.saved.into_iter().rev() {
            let d = self.ks.db_mut(db);
            d.remove(&key);
            if let Some((entry, expire_at)) = entry {
                d.insert_entry(key, entry, expire_at);
            }
        }
        (true, overflowed)
    }
}
