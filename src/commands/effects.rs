//! What a call did besides its reply, stated by the handler at the point of change: the keys
//! it changed (Redis's `signalModifiedKey`), the databases it emptied or swapped, and its
//! logged form when that differs from the argv (Redis's `rewriteClientCommandVector` /
//! `alsoPropagate`).
//!
//! The handler fills [`Effects`] through [`Ctx`]; the executor acts on it as soon as the
//! handler returns, before anything else runs (nothing can observe the gap): WATCH, tracking
//! invalidation and ready keys for blocked clients for every modified key, and the log record.
//! Nothing is reconstructed from the command's name or its key positions.

use bytes::Bytes;

use super::Ctx;

/// The log record(s) a write stands for.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Logged {
    /// The command as the client sent it.
    #[default]
    AsSent,
    /// These commands instead (absolute times, what a random or blocking command did);
    /// empty: nothing to log.
    As(Vec<Vec<Bytes>>),
}

/// What the executor does after the handler returns (Redis's handlers do these inline; here
/// the executor owns the parts they need, so the handler states them).
#[derive(Debug, Default)]
pub enum Next {
    /// Just the reply.
    #[default]
    Reply,
    /// Run a script (EVAL, EVALSHA, FCALL and their _RO forms): the handler checked the
    /// arguments and compiled or found the script.
    RunScript(super::scripting::ScriptCall),
    /// Park the client (a blocking command with nothing to serve yet); where it may not
    /// block (EXEC, a script) the command answers its timeout reply at once.
    Block(crate::state::BlockRequest),
    /// EXEC: run the queued commands.
    Exec,
    /// REPLICAOF, PSYNC, SYNC: the replication side answers.
    Replication(crate::replication::ReplRequest),
    /// BGREWRITEAOF, SAVE, DEBUG RELOAD...: runs once the top-level command's records are
    /// committed.
    Persist(crate::state::PersistRequest),
    /// SHUTDOWN: after this batch's replies.
    Shutdown(crate::state::ShutdownRequest),
}

/// One call's effects (a value of the call, not server state).
#[derive(Debug)]
pub struct Effects {
    /// Whether anyone can hear of modified keys (a watcher, a tracking client, a blocked
    /// client): when nobody can, signalling costs nothing (the common case).
    pub listened: bool,
    /// Keys changed, in order, with their database.
    pub modified: Vec<(usize, Bytes)>,
    /// Watched keys that FLUSHDB, FLUSHALL or SWAPDB touched (WATCH only: tracking is told by
    /// `flushed`, blocked clients by `rescan`).
    pub wiped: Vec<(usize, Bytes)>,
    /// FLUSHDB/FLUSHALL: every tracking client drops everything.
    pub flushed: bool,
    /// Databases whose contents were replaced (SWAPDB): their blocked clients may be served.
    pub rescan: Vec<usize>,
    /// How the call is logged, when it changed data.
    pub logged: Logged,
    /// What comes after the reply.
    pub next: Next,
}

impl Default for Effects {
    fn default() -> Self {
        Effects {
            listened: true,
            modified: Vec::new(),
            wiped: Vec::new(),
            flushed: false,
            rescan: Vec::new(),
            logged: Logged::AsSent,
            next: Next::Reply,
        }
    }
}

impl Effects {
    /// Whether some key or database was signalled.
    pub fn any_signal(&self) -> bool {
        !self.modified.is_empty() || !self.wiped.is_empty() || self.flushed || !self.rescan.is_empty()
    }
}

impl Ctx<'_> {
    /// `key` of the client's database changed (Redis's `signalModifiedKey`): its watchers'
    /// transactions fail, trackers are told, clients blocked on it may be served.
    pub fn signal_modified(&mut self, key: &[u8]) {
        let db = self.client.db;
        self.signal_modified_db(db, key);
    }

    /// [`Ctx::signal_modified`] for a key of another database (MOVE, COPY DB).
    pub fn signal_modified_db(&mut self, db: usize, key: &[u8]) {
        if self.effects.listened {
            self.effects.modified.push((db, Bytes::copy_from_slice(key)));
        }
    }

    /// States what the executor does after this handler (see [`Next`]).
    pub fn then(&mut self, next: Next) {
        self.effects.next = next;
    }

    /// The call is logged as `records` instead of its argv (none: logged as nothing).
    pub fn log_as(&mut self, records: Vec<Vec<Bytes>>) {
        self.effects.logged = Logged::As(records);
    }

    /// The call is logged as this one command.
    pub fn log_as_one(&mut self, argv: Vec<Bytes>) {
        self.effects.logged = Logged::As(vec![argv]);
    }

    /// Replaces `key` with `value` (Redis's `setKey` for the STORE commands): the TTL goes,
    /// under an LFU policy the old counter stays, `new` is raised for a key that did not
    /// exist (an expired one is deleted first), and the key is signalled.
    pub fn set_key(&mut self, key: &[u8], value: crate::db::Value) {
        let (db, now) = (self.client.db, self.now_ms);
        let mut lru = crate::db::lru_clock(now);
        let old_lru = self.ks.get_mut(db, key, now).map(|e| e.lru);
        if self.server.settings.lfu_policy {
            lru = old_lru.unwrap_or(lru);
        }
        if old_lru.is_none() {
            self.notify(crate::notify::NEW, "new", key);
        }
        self.ks.db_mut(db).insert(Bytes::copy_from_slice(key), value, None, lru);
        self.signal_modified(key);
    }

    /// Deletes `key` if it exists (Redis's `dbDelete` with its signal and `del` event, as a
    /// STORE with an empty result does); whether it existed. Counts one change.
    pub fn delete_key(&mut self, key: &[u8]) -> bool {
        let (db, now) = (self.client.db, self.now_ms);
        if !self.ks.exists(db, key, now) || self.ks.db_mut(db).remove(key).is_none() {
            return false;
        }
        self.signal_modified(key);
        self.dirty(1);
        self.notify(crate::notify::GENERIC, "del", key);
        true
    }

    /// Watched keys of database `db` that exist now (Redis's `touchAllWatchedKeysInDb`,
    /// before FLUSHDB/FLUSHALL empties it; for SWAPDB, a key on either side of the swap).
    pub fn touch_all_watched_in(&mut self, db: usize, other: Option<usize>) {
        if self.server.watchers.is_empty() {
            return;
        }
        let now = self.now_ms;
        let live = |ks: &crate::db::Keyspace, d: usize, key: &Bytes| {
            d < ks.dbs.len() && ks.db(d).peek(key).is_some_and(|e| e.expire_at().is_none_or(|at| at > now))
        };
        for (wdb, key) in self.server.watchers.keys() {
            if *wdb == db && (live(self.ks, db, key) || other.is_some_and(|o| live(self.ks, o, key))) {
                self.effects.wiped.push((*wdb, key.clone()));
            }
        }
    }
}

/// Shorthand for building a logged argv.
pub fn arg(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}
