//! What follows every command, a client's or a script's (`Executor::run_command`): watched
//! keys and FLUSH/SWAPDB wipes, blocked clients on written keys, keys that expired meanwhile,
//! MONITOR lines, keyspace events, and the slow log.

use bytes::Bytes;

use super::Executor;
use crate::commands::{self, CommandSpec, Flag, Signals, Trait};
use crate::config::P;
use crate::protocol::{encode_reply, ProtocolVersion, Reply};
use crate::state::ClientId;
use crate::state::{Client, SlowLogEntry};

impl Executor {
    /// Redis's latencyAddSampleIfNeeded: `event` took `started.elapsed()`; recorded when
    /// the latency monitor is on and that reaches its threshold (`latency-monitor-threshold`).
    pub(super) fn latency_sample(&mut self, event: &'static str, started: std::time::Instant) {
        self.latency_ms(event, started.elapsed().as_millis() as u64);
    }

    /// [`Executor::latency_sample`] for a duration measured elsewhere.
    pub(super) fn latency_ms(&mut self, event: &'static str, ms: u64) {
        let threshold_ms = self.server.settings.latency_threshold_ms;
        if threshold_ms > 0 && ms >= threshold_ms {
            self.server.latency.add(event, crate::clock::now_ms() / 1000, ms);
        }
    }

    /// Sends a command line to every MONITOR client, with its sensitive arguments redacted
    /// (not admin commands, as Redis). The caller feeds a command after it ran, and a
    /// script's command (flagged skip-monitor) when the script is about to start, so its
    /// `[0 lua]` lines follow it, as Redis's evalCommand feeds it.
    pub(super) fn feed_monitors(&mut self, client: &Client, cmd: &CommandSpec, args: &[Bytes], redacted: &[usize]) {
        if self.server.monitors.is_empty() || cmd.has(Flag::Admin) {
            return;
        }
        let runs_script = cmd.is(Trait::ScriptBody) || cmd.is(Trait::ScriptSha) || cmd.is(Trait::ScriptFunction);
        if cmd.has(Flag::SkipMonitor) && !runs_script {
            return;
        }
        let addr = if client.in_script { "lua" } else { client.addr.as_str() };
        let args = redact(args, redacted);
        let line = commands::server_monitor_line(crate::clock::now_us(), client.db, addr, &args);
        for id in self.server.monitors.clone() {
            if let Some(m) = self.server.clients.get_mut(&id) {
                encode_reply(&line, m.proto, &mut m.out);
                self.touched.push(id);
            }
        }
    }

    /// What a command's handler signalled (`commands::Effects`): modified keys abort their
    /// watchers' transactions and tell trackers, created keys may wake blocked clients;
    /// FLUSHDB/FLUSHALL drop every tracked key; SWAPDB makes the waited-on keys of both
    /// databases ready (FLUSH and SWAPDB touched their watched keys themselves).
    pub(super) fn apply_signals(&mut self, client: &mut Client, effects: &Signals) {
        if self.server.tracking.clients > 0 {
            if effects.flushed {
                self.invalidate_all(client);
            }
            if !effects.modified.is_empty() {
                // One message per key, as Redis's tracking table forgets a key once told (a
                // set: MSET or DEBUG POPULATE may signal a million keys).
                let mut seen = std::collections::HashSet::with_capacity(effects.modified.len());
                let keys: Vec<Bytes> = effects.modified.iter().filter(|(_, k)| seen.insert(k)).map(|(_, k)| k.clone()).collect();
                self.invalidate_keys(Some(client), true, &keys);
            }
        }
        if !self.server.watchers.is_empty() {
            for (db, key) in &effects.modified {
                self.touch_watched(Some(client), *db, key);
            }
        }
        if !self.waiters.by_key.is_empty() {
            // Redis makes a key ready when it is created (`dbAdd`), and SWAPDB every waited
            // key present in either database; the type is checked when serving.
            for (db, key) in &effects.created {
                self.signal_key(*db, key.clone());
            }
            for db in &effects.rescan {
                let waited: Vec<Bytes> = self.waiters.by_key.keys().filter(|(d, _)| d == db).map(|(_, k)| k.clone()).collect();
                for key in waited {
                    // Present or not (a stream that went answers its XREADGROUP waiters);
                    // nothing is deleted (and logged) here, before the command's own record:
                    // serving expires a key if due.
                    self.signal_key(*db, key);
                }
            }
        }
    }

    /// Keys deleted by expiry during the last command abort their watchers' transactions.
    pub(super) fn signal_expired(&mut self, client: &mut Client) {
        // An expired stream answers its XREADGROUP waiters, as Redis's dbGenericDelete
        // signals it (the serve decides: list and sorted-set waiters of a gone key stay).
        if !self.waiters.by_key.is_empty() {
            let fresh: Vec<(usize, Bytes)> = self.ks.expired[self.expired_seen..].to_vec();
            for (db, key) in fresh {
                self.signal_key(db, key);
            }
        }
        let tracking = self.server.tracking.clients > 0;
        if !tracking && self.server.watchers.is_empty() {
            self.expired_seen = self.ks.expired.len();
            return;
        }
        let mut fresh: Vec<(usize, Bytes)> = self.ks.expired[self.expired_seen..].to_vec();
        self.expired_seen = self.ks.expired.len();
        // Evicted keys change under their watchers too (published and cleared just after).
        fresh.extend(self.ks.evicted.iter().cloned());
        if tracking && !fresh.is_empty() {
            let keys: Vec<Bytes> = fresh.iter().map(|(_, k)| k.clone()).collect();
            self.invalidate_keys(Some(client), false, &keys);
        }
        for (db, key) in fresh {
            self.touch_watched(Some(client), db, &key);
        }
    }

    /// Publishes the keyspace events of the last command (`own`, its handler's), and of keys
    /// that expired or were evicted meanwhile.
    pub(super) fn publish_events(&mut self, client: &mut Client, own: Vec<crate::notify::Notification>) {
        let flags = self.server.settings.notify_flags;
        self.ks.track_misses = flags & crate::notify::KEY_MISS != 0;
        if flags & (crate::notify::KEYSPACE | crate::notify::KEYEVENT) == 0 {
            self.ks.key_misses.clear();
            return;
        }
        // What happened before or during the command's lookups comes first, as in Redis:
        // evictions (before the command), then lazy expirations and misses, then the
        // command's own events.
        let mut events = Vec::new();
        if flags & crate::notify::EVICTED != 0 {
            for (db, key) in &self.ks.evicted {
                events.push(crate::notify::Notification { class: crate::notify::EVICTED, event: "evicted", db: *db, key: key.clone() });
            }
        }
        self.ks.evicted.clear();
        if flags & crate::notify::EXPIRED != 0 {
            for (db, key) in &self.ks.expired[self.expired_notified..] {
                events.push(crate::notify::Notification { class: crate::notify::EXPIRED, event: "expired", db: *db, key: key.clone() });
            }
        }
        self.expired_notified = self.ks.expired.len();
        for (db, key) in std::mem::take(&mut self.ks.key_misses) {
            events.push(crate::notify::Notification { class: crate::notify::KEY_MISS, event: "keymiss", db, key });
        }
        if events.is_empty() && own.is_empty() {
            return;
        }
        events.extend(own);
        commands::pubsub::publish_notifications(&mut self.server, Some(client), events, &mut self.touched);
    }

    /// Marks every client watching (db, key), the running one included (`current`: none
    /// for the cron's active expiry).
    pub(super) fn touch_watched(&mut self, mut current: Option<&mut Client>, db: usize, key: &Bytes) {
        let Some(ids) = self.server.watchers.get(&(db, key.clone())) else { return };
        let exists = self.ks.db(db).peek(key).is_some();
        for id in ids.clone() {
            let client = match current.as_deref_mut() {
                Some(c) if c.id == id => Some(c),
                _ => self.server.clients.get_mut(&id).map(|c| &mut **c),
            };
            if let Some(c) = client {
                // A key expired before WATCH and now deleted did not change (Redis 7).
                if let Some(pos) = c.txn.watched_expired.iter().position(|(d, k)| *d == db && k == key) {
                    if !exists {
                        c.txn.watched_expired.swap_remove(pos);
                        continue;
                    }
                }
                c.txn.cas_dirty = true;
            }
        }
    }

    pub(super) fn slowlog_record(&mut self, client: &Client, args: &[Bytes], redacted: &[usize], duration_us: u64) {
        let threshold = self.server.settings.slowlog_threshold_us;
        if threshold < 0 || (duration_us as i64) < threshold {
            return;
        }
        let args = redact(args, redacted);
        // Like Redis: at most 32 arguments, each cut to 128 bytes.
        let mut logged: Vec<Bytes> = Vec::with_capacity(args.len().min(32));
        for (i, a) in args.iter().enumerate() {
            if i == 31 && args.len() > 32 {
                logged.push(Bytes::from(format!("... ({} more arguments)", args.len() - 31)));
                break;
            }
            if a.len() > 128 {
                logged.push(Bytes::from([&a[..128], format!("... ({} more bytes)", a.len() - 128).as_bytes()].concat()));
            } else {
                logged.push(a.clone());
            }
        }
        let entry = SlowLogEntry {
            id: self.server.slowlog_next_id,
            time: self.now_ms / 1000,
            duration_us,
            args: logged,
            addr: client.addr.clone(),
            name: client.name.clone().unwrap_or_default(),
        };
        self.server.slowlog_next_id += 1;
        self.server.slowlog.push_front(entry);
        let max = self.server.config.get_int(P::SlowlogMaxLen).max(0) as usize;
        self.server.slowlog.truncate(max);
    }
}

impl Executor {
    /// CLIENT TRACKING (default mode): the keys a read-only command read are remembered for
    /// its client (a script's commands count for the script's caller).
    pub(super) fn remember_tracked_keys(&mut self, client: &Client, cmd: &CommandSpec, args: &[Bytes]) {
        if !cmd.has(Flag::ReadOnly) || cmd.is(Trait::NoKeyTracking) {
            return;
        }
        if !client.tracking.as_ref().is_some_and(|m| m.remembers()) {
            return;
        }
        // A read inside a script remembers the script's declared keys, as Redis remembers
        // the keys of the caller's EVAL/FCALL (its trackingRememberKeys of the caller).
        if client.in_script {
            for key in &self.script_keys {
                self.server.tracking.remember(key, client.id);
            }
            return;
        }
        for (pos, _) in commands::keyspec::command_keys(cmd, args) {
            self.server.tracking.remember(&args[pos], client.id);
        }
    }

    /// Keys that changed: every client that read them (and every BCAST client whose prefix
    /// they match) is told. `current`: the client whose command runs (its own invalidations
    /// follow its reply), and whether that command changed the keys (NOLOOP).
    pub(super) fn invalidate_keys(&mut self, mut current: Option<&mut Client>, by_current: bool, keys: &[Bytes]) {
        for key in keys {
            for id in self.server.tracking.take(key) {
                self.send_invalidation(current.as_deref_mut(), by_current, id, Some(std::slice::from_ref(key)));
            }
        }
        if !self.server.tracking.bcast.is_empty() {
            let by = current.as_deref().filter(|_| by_current).map(|c| c.id);
            for key in keys {
                self.server.tracking.bcast_pending.insert(key.clone(), by);
            }
        }
    }

    /// Sends BCAST clients the keys changed since the last call: per client, one message
    /// per prefix (prefixes and keys in order, Redis's radix trees), without the keys the
    /// client itself changed last when it asked for NOLOOP. Runs before a batch's replies
    /// leave, as Redis's broadcast runs before it sleeps.
    pub(super) fn broadcast_invalidations(&mut self) {
        if self.server.tracking.bcast_pending.is_empty() {
            return;
        }
        let pending = std::mem::take(&mut self.server.tracking.bcast_pending);
        for id in self.server.tracking.bcast.clone() {
            let groups: Vec<Vec<Bytes>> = {
                let Some(m) = self.server.clients.get(&id).and_then(|c| c.tracking.as_ref()).filter(|m| m.bcast) else { continue };
                let mut prefixes = m.prefixes.clone();
                if prefixes.is_empty() {
                    prefixes.push(Bytes::new());
                }
                prefixes.sort();
                let own = |who: &Option<ClientId>| m.noloop && *who == Some(id);
                prefixes
                    .iter()
                    .map(|p| {
                        pending
                            .range(p.clone()..)
                            .take_while(|(k, _)| k.starts_with(p))
                            .filter(|(_, who)| !own(who))
                            .map(|(k, _)| k.clone())
                            .collect()
                    })
                    .filter(|ks: &Vec<Bytes>| !ks.is_empty())
                    .collect()
            };
            for group in groups {
                self.send_invalidation(None, false, id, Some(&group));
            }
        }
    }

    /// FLUSHDB/FLUSHALL: every tracking client is told to drop everything (a null key list).
    pub(super) fn invalidate_all(&mut self, current: &mut Client) {
        self.server.tracking.keys.clear();
        let mut ids: Vec<u64> = self.server.clients.values().filter(|c| c.tracking.is_some()).map(|c| c.id).collect();
        if current.tracking.is_some() {
            ids.push(current.id);
        }
        for id in ids {
            self.send_invalidation(Some(&mut *current), false, id, None);
        }
    }

    /// One invalidation message from tracking client `id` (to it, or to its redirect).
    fn send_invalidation(&mut self, mut current: Option<&mut Client>, by_current: bool, id: u64, keys: Option<&[Bytes]>) {
        let current_id = current.as_deref().map(|c| c.id);
        let (redirect, noloop, proto) = {
            let c = if current_id == Some(id) { current.as_deref() } else { self.server.clients.get(&id).map(|c| &**c) };
            let Some(c) = c else { return };
            let Some(m) = &c.tracking else { return };
            (m.redirect, m.noloop, c.proto)
        };
        if noloop && by_current && current_id == Some(id) {
            return;
        }
        let target = if redirect == 0 { id } else { redirect };
        if current_id != Some(target) && !self.server.clients.contains_key(&target) {
            // The redirect is gone: the tracking client hears of it (in RESP3).
            let broken = Reply::Push(vec![Reply::bulk(b"tracking-redir-broken"), Reply::Int(redirect as i64)]);
            let c = if current_id == Some(id) { current.as_deref_mut() } else { self.server.clients.get_mut(&id).map(|c| &mut **c) };
            if let Some(c) = c {
                if let Some(m) = c.tracking.as_mut() {
                    m.broken_redirect = true;
                }
                if proto == ProtocolVersion::Resp3 {
                    encode_reply(&broken, proto, &mut c.out);
                    self.touched.push(id);
                }
            }
            return;
        }
        let keys_reply = match keys {
            Some(keys) => Reply::Array(keys.iter().map(|k| Reply::Bulk(k.clone())).collect()),
            None => Reply::Nil,
        };
        let to_current = current_id == Some(target);
        let t = match current {
            Some(c) if to_current => c,
            _ => match self.server.clients.get_mut(&target) {
                Some(t) => t,
                None => return,
            },
        };
        let proto = t.push_proto();
        let message = if proto == ProtocolVersion::Resp3 {
            Reply::Push(vec![Reply::bulk(b"invalidate"), keys_reply])
        } else if redirect != 0 && !(t.subs.channels.is_empty() && t.subs.patterns.is_empty() && t.subs.shard_channels.is_empty()) {
            Reply::Array(vec![Reply::bulk(b"message"), Reply::bulk(b"__redis__:invalidate"), keys_reply])
        } else {
            // A RESP2 connection of its own cannot take pushes: nothing is sent.
            return;
        };
        if to_current {
            let mut bytes = Vec::new();
            encode_reply(&message, proto, &mut bytes);
            t.tracking_after_reply.extend_from_slice(&bytes);
        } else {
            encode_reply(&message, proto, &mut t.out);
            self.touched.push(target);
        }
    }
}

/// `args` with the arguments its handler called secret (`Ctx::redact_arg`) shown as
/// `(redacted)`; no copy when there are none.
fn redact<'a>(args: &'a [Bytes], redacted: &[usize]) -> std::borrow::Cow<'a, [Bytes]> {
    if redacted.is_empty() {
        return std::borrow::Cow::Borrowed(args);
    }
    let mut out = args.to_vec();
    for &j in redacted {
        if let Some(a) = out.get_mut(j) {
            *a = Bytes::from_static(b"(redacted)");
        }
    }
    std::borrow::Cow::Owned(out)
}
