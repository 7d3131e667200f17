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
    /// As sent, for replicas only and though it changed no data (PUBLISH, SPUBLISH: Redis
    /// propagates them to replicas and never to its AOF).
    ToReplicas,
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
    Block(Box<crate::state::BlockRequest>),
    /// EXEC: run the queued commands.
    Exec,
    /// REPLICAOF, PSYNC, SYNC: the replication side answers.
    Replication(Box<crate::replication::ReplRequest>),
    /// BGREWRITEAOF, SAVE, DEBUG RELOAD...: runs once the top-level command's records are
    /// committed.
    Persist(crate::state::PersistRequest),
    /// SHUTDOWN: after this batch's replies.
    Shutdown(crate::state::ShutdownRequest),
}

/// A change to the script cache the log must record so that every EVALSHA it holds finds its
/// body on replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScriptCacheChange {
    /// SCRIPT LOAD of the script with this SHA1 (logged if the log's epoch lacks it).
    Loaded(String),
    /// SCRIPT FLUSH.
    Flushed,
}

/// The keys and databases a call changed, for WATCH, tracking and blocked clients.
#[derive(Debug, Default)]
pub struct Signals {
    /// Keys changed, in order, with their database (Redis's `signalModifiedKey`).
    pub modified: Vec<(usize, Bytes)>,
    /// Keys created (Redis's `dbAdd`): clients blocked on them may be served. An
    /// overwrite does not make a key ready, as in Redis 7.0.
    pub created: Vec<(usize, Bytes)>,
    /// FLUSHDB/FLUSHALL: every tracking client drops everything.
    pub flushed: bool,
    /// Databases whose contents were replaced or emptied (SWAPDB, FLUSHDB, FLUSHALL): every
    /// key clients wait on there is ready (a stream that went answers its XREADGROUP waiters).
    pub rescan: Vec<usize>,
}

impl Signals {
    /// Whether some key or database was signalled.
    pub fn any(&self) -> bool {
        !self.modified.is_empty() || !self.created.is_empty() || self.flushed || !self.rescan.is_empty()
    }

    /// Empties the lists, keeping their allocations for the next call.
    pub fn clear(&mut self) {
        self.modified.clear();
        self.created.clear();
        self.flushed = false;
        self.rescan.clear();
    }
}

/// One call's effects: what the handler states besides its reply. The executor lends one
/// buffer to every call (`Ctx::effects`) and takes the call's effects out of it as soon as
/// the handler returns, so a call costs no allocation of its own for them.
#[derive(Debug)]
pub struct Effects {
    /// Whether anyone can hear of modified keys (a watcher, a tracking client, a blocked
    /// client): when nobody can, signalling costs nothing (the common case).
    pub listened: bool,
    pub signals: Signals,
    /// Keyspace events raised, published after the command (Redis's notifyKeyspaceEvent).
    pub notifications: Vec<crate::notify::Notification>,
    /// Clients whose output got a PUBLISH of this call (released with the batch).
    pub pushed: Vec<crate::state::ClientId>,
    /// How the call is logged, when it changed data.
    pub logged: Logged,
    /// SCRIPT LOAD and SCRIPT FLUSH: logged though they change no data.
    pub script_cache: Option<ScriptCacheChange>,
    /// What comes after the reply.
    pub next: Next,
    /// Arguments MONITOR and SLOWLOG show as `(redacted)`: secrets the handler read
    /// (Redis's `redactClientCommandArgument`).
    pub redacted: Vec<usize>,
    /// The call runs on a private view of the data (a debugging session's, SCRIPT DEBUG
    /// YES): what would reach other clients directly (the WATCHes a flush fails, PUBLISH's
    /// deliveries) does not; PUBLISH still counts its receivers.
    pub private: bool,
}

impl Default for Effects {
    fn default() -> Self {
        Effects {
            listened: true,
            signals: Signals::default(),
            notifications: Vec::new(),
            pushed: Vec::new(),
            private: false,
            logged: Logged::AsSent,
            script_cache: None,
            next: Next::Reply,
            redacted: Vec::new(),
        }
    }
}

impl Ctx<'_> {
    /// Argument `j` is a secret: MONITOR and SLOWLOG show `(redacted)` in its place.
    pub fn redact_arg(&mut self, j: usize) {
        self.effects.redacted.push(j);
    }

    /// `key` of the client's database changed (Redis's `signalModifiedKey`): its watchers'
    /// transactions fail, trackers are told, clients blocked on it may be served.
    pub fn signal_modified(&mut self, key: &[u8]) {
        let db = self.client.db;
        self.signal_modified_db(db, key);
    }

    /// [`Ctx::signal_modified`] for a key of another database (MOVE, COPY DB).
    pub fn signal_modified_db(&mut self, db: usize, key: &[u8]) {
        if self.effects.listened {
            self.effects.signals.modified.push((db, Bytes::copy_from_slice(key)));
        }
    }

    /// States what the executor does after this handler (see [`Next`]).
    pub fn then(&mut self, next: Next) {
        self.effects.next = next;
    }

    /// `key` of the client's database was created (Redis's `dbAdd`): clients blocked on it
    /// may be served once the command is over.
    pub fn signal_created(&mut self, key: &[u8]) {
        let db = self.client.db;
        self.signal_created_db(db, key);
    }

    /// [`Ctx::signal_created`] for a key of another database (MOVE, COPY DB).
    pub fn signal_created_db(&mut self, db: usize, key: &[u8]) {
        if self.effects.listened {
            self.effects.signals.created.push((db, Bytes::copy_from_slice(key)));
        }
    }

    /// `key` may serve clients blocked on it though it was not created (Redis's
    /// `signalKeyAsReady`: XADD to a stream, XGROUP DESTROY, a stream deleted or
    /// overwritten, whose XREADGROUP waiters are then answered with an error).
    pub fn signal_ready(&mut self, key: &[u8]) {
        self.signal_created(key);
    }

    /// Signals `key` of `db` ready if `gone` (the value deleted or replaced) was a stream:
    /// its XREADGROUP waiters are answered (Redis's dbGenericDelete and dbOverwrite).
    fn signal_if_stream(&mut self, db: usize, key: &[u8], gone: &crate::db::Value) {
        if matches!(gone, crate::db::Value::Stream(_)) {
            self.signal_created_db(db, key);
        }
    }

    /// The call is logged as `records` instead of its argv (none: logged as nothing).
    pub fn log_as(&mut self, records: Vec<Vec<Bytes>>) {
        self.effects.logged = Logged::As(records);
    }

    /// The call is logged as this one command.
    pub fn log_as_one(&mut self, argv: Vec<Bytes>) {
        self.effects.logged = Logged::As(vec![argv]);
    }

    /// Writes `value` under `key` with `expire_at` (Redis's `dbAdd`/`dbOverwrite`): a new key
    /// gets a fresh access time and raises `new`, an overwritten one keeps its LFU counter
    /// under an LFU policy; the key is signalled. The caller has looked the key up for
    /// writing (expiring it if due). Whether the key was created.
    pub fn write_value(&mut self, key: &[u8], value: crate::db::Value, expire_at: Option<i64>) -> bool {
        let db = self.client.db;
        let lru = crate::db::lru_clock(self.now_ms);
        let keep_lru = self.server.settings.lfu_policy;
        // Only when someone could be waiting: it costs a lookup of its own.
        if self.effects.listened {
            let old = self.ks.db(db).peek(key).map(|e| matches!(e.value, crate::db::Value::Stream(_)));
            if old == Some(true) {
                self.signal_created_db(db, key);
            }
        }
        let created = self.ks.db_mut(db).upsert(key, value, expire_at, lru, keep_lru);
        if created {
            self.notify(crate::notify::NEW, "new", key);
            self.signal_created(key);
        }
        self.signal_modified(key);
        created
    }

    /// Deletes `key` from database `db` (Redis's `dbDelete`) and signals it; the entry it
    /// held, `None` when there was none (nothing signalled).
    pub fn remove_in(&mut self, db: usize, key: &[u8]) -> Option<(crate::db::Entry, Option<i64>)> {
        let removed = self.ks.db_mut(db).remove(key)?;
        self.signal_if_stream(db, key, &removed.0.value);
        self.signal_modified_db(db, key);
        Some(removed)
    }

    /// [`Ctx::remove_in`] in the client's database.
    pub fn remove(&mut self, key: &[u8]) -> Option<(crate::db::Entry, Option<i64>)> {
        let db = self.client.db;
        self.remove_in(db, key)
    }

    /// Sets (or, with `None`, clears) the expiry of an existing key and signals it.
    pub fn set_expiry(&mut self, key: &[u8], at: Option<i64>) {
        let db = self.client.db;
        self.ks.db_mut(db).set_expire(key, at);
        self.signal_modified(key);
    }

    /// Adds a whole entry under an absent key of database `db` (Redis's `dbAdd` of a moved,
    /// copied or restored value) and signals it, changed and created.
    pub fn add_entry_in(&mut self, db: usize, key: &Bytes, entry: crate::db::Entry, expire_at: Option<i64>) {
        self.ks.db_mut(db).insert_entry(key.clone(), entry, expire_at);
        self.signal_modified_db(db, key);
        self.signal_created_db(db, key);
    }

    /// Creates `key` with `value` (Redis's `dbAdd` where the command changes the new value
    /// next: SETBIT, BITFIELD, PFADD, PFMERGE): raises `new` and makes the key ready for
    /// blocked clients, but signals no change: the command does once it has changed
    /// something (a BITFIELD whose writes all fail changes nothing).
    pub fn add_value(&mut self, key: &[u8], value: crate::db::Value) {
        let (db, now) = (self.client.db, self.now_ms);
        self.notify(crate::notify::NEW, "new", key);
        self.ks.db_mut(db).insert(Bytes::copy_from_slice(key), value, None, crate::db::lru_clock(now));
        self.signal_created(key);
    }

    /// Changes the entry at `key` in place (its memory accounted) and signals it; `None`
    /// when the key is absent.
    pub fn change<R>(&mut self, key: &[u8], f: impl FnOnce(&mut crate::db::Entry) -> R) -> Option<R> {
        let db = self.client.db;
        let r = self.ks.db_mut(db).modify(key, f)?;
        self.signal_modified(key);
        Some(r)
    }

    /// [`Ctx::change`] at a dense position found by a write lookup (`Keyspace::write_position`).
    pub fn change_at<R>(&mut self, pos: usize, key: &[u8], f: impl FnOnce(&mut crate::db::Entry) -> R) -> R {
        let db = self.client.db;
        let r = self.ks.db_mut(db).modify_at(pos, f);
        self.signal_modified(key);
        r
    }

    /// Changes the entry at `key` in place without signalling: only for a change that is
    /// none to a client (SORT's conversion of a sorted set to the skiplist encoding), or one
    /// the caller signals itself when it turns out to be a change (`access::modify`, the
    /// in-place string writes of SETBIT, BITFIELD and the HLL commands).
    pub fn change_quietly<R>(&mut self, key: &[u8], f: impl FnOnce(&mut crate::db::Entry) -> R) -> Option<R> {
        let db = self.client.db;
        self.ks.db_mut(db).modify(key, f)
    }

    /// Empties database `db` (FLUSHDB): its watched keys' transactions fail and every
    /// tracking client is told, first. The number of keys it held.
    pub fn empty_db(&mut self, db: usize) -> usize {
        self.touch_all_watched_in(db, None);
        self.effects.signals.flushed = true;
        self.effects.signals.rescan.push(db);
        self.ks.db_mut(db).clear()
    }

    /// Empties every database (FLUSHALL), as [`Ctx::empty_db`] does one.
    pub fn empty_all(&mut self) -> usize {
        for db in 0..self.ks.dbs.len() {
            self.touch_all_watched_in(db, None);
            self.effects.signals.rescan.push(db);
        }
        self.effects.signals.flushed = true;
        self.ks.flush_all()
    }

    /// Swaps databases `a` and `b` (SWAPDB): the watched keys on either side are touched
    /// first, and the keys clients wait on in both become ready if present.
    pub fn swap_dbs(&mut self, a: usize, b: usize) {
        if a != b {
            self.touch_all_watched_in(a, Some(b));
            self.touch_all_watched_in(b, Some(a));
            self.effects.signals.rescan.extend([a, b]);
        }
        self.ks.swap_dbs(a, b);
    }

    /// Replaces `key` with `value` (Redis's `setKey` for the STORE commands): looked up for
    /// writing first (an expired key is deleted, a live one's access counted), then written
    /// without a TTL by [`Ctx::write_value`].
    pub fn set_key(&mut self, key: &[u8], value: crate::db::Value) {
        let (db, now) = (self.client.db, self.now_ms);
        self.ks.write_position(db, key, now);
        self.write_value(key, value, None);
    }

    /// Deletes `key` if it exists (Redis's `dbDelete` with its signal and `del` event, as a
    /// STORE with an empty result does); whether it existed. Counts one change.
    pub fn delete_key(&mut self, key: &[u8]) -> bool {
        let (db, now) = (self.client.db, self.now_ms);
        if !self.ks.exists(db, key, now) {
            return false;
        }
        let Some((entry, _)) = self.ks.db_mut(db).remove(key) else { return false };
        self.signal_if_stream(db, key, &entry.value);
        self.signal_modified(key);
        self.dirty(1);
        self.notify(crate::notify::GENERIC, "del", key);
        true
    }

    /// FLUSHDB, FLUSHALL and SWAPDB change every key of database `db` (for SWAPDB its
    /// contents become `replaced_with`'s): the watchers of the keys present on either side
    /// fail, at the point of change (Redis's `touchAllWatchedKeysInDb`).
    pub fn touch_all_watched_in(&mut self, db: usize, replaced_with: Option<usize>) {
        if self.effects.private {
            return;
        }
        touch_all_watched(self.ks, self.server, Some(&mut *self.client), db, replaced_with, self.now_ms);
    }
}

/// Redis 7.0's `touchAllWatchedKeysInDb`: a watched key present (expired or not) in `emptied`
/// or in `replaced_with` marks its watchers dirty, except that a key already expired at WATCH
/// and now gone (or still expired) changed nothing, and a missing key replaced by an expired
/// one becomes such a key. `current`: the running client, out of the client table.
pub fn touch_all_watched(
    ks: &crate::db::Keyspace,
    server: &mut crate::state::ServerState,
    mut current: Option<&mut crate::state::Client>,
    emptied: usize,
    replaced_with: Option<usize>,
    now_ms: i64,
) {
    if server.watchers.is_empty() {
        return;
    }
    let present = |d: usize, key: &Bytes| d < ks.dbs.len() && ks.db(d).peek(key).is_some();
    let expired = |d: usize, key: &Bytes| ks.db(d).expire_at(key).is_some_and(|at| at <= now_ms);
    let touched: Vec<((usize, Bytes), Vec<crate::state::ClientId>)> = server
        .watchers
        .iter()
        .filter(|((wdb, key), _)| *wdb == emptied && (present(emptied, key) || replaced_with.is_some_and(|r| present(r, key))))
        .map(|(slot, ids)| (slot.clone(), ids.clone()))
        .collect();
    for ((db, key), ids) in touched {
        let in_emptied = present(emptied, &key);
        let in_replacement = replaced_with.is_some_and(|r| present(r, &key));
        let replacement_expired = replaced_with.is_some_and(|r| in_replacement && expired(r, &key));
        for id in ids {
            let client = match current.as_deref_mut() {
                Some(c) if c.id == id => Some(c),
                _ => server.clients.get_mut(&id).map(|c| &mut **c),
            };
            let Some(c) = client else { continue };
            let slot = (db, key.clone());
            let flagged = c.txn.watched_expired.iter().position(|w| *w == slot);
            match flagged {
                // Expired at WATCH and now deleted: no logical change; the flag goes.
                Some(pos) if !in_replacement => {
                    c.txn.watched_expired.swap_remove(pos);
                    continue;
                }
                // Expired at WATCH and still expired.
                Some(_) if replacement_expired => continue,
                Some(_) => {}
                // A missing key replaced by an expired one.
                None if !in_emptied && replacement_expired => {
                    c.txn.watched_expired.push(slot);
                    continue;
                }
                None => {}
            }
            c.txn.cas_dirty = true;
        }
    }
}

/// Shorthand for building a logged argv.
pub fn arg(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}
