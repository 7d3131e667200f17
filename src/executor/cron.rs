//! What the executor does on its own rather than for a request: the periodic `cron`
//! (idle timeouts, active expiry, the log's retries and automatic rewrite, replication's
//! keepalives) and the orderly shutdown.

use std::time::{Duration, Instant};

use super::Executor;
use crate::commands;
use crate::config::P;
use crate::log;
use crate::state::{ClientId, ClientOutput};

/// How often the allocator's collection runs (see `util::release_memory`): often enough that a
/// dropped burst (a disconnected subscriber's output) leaves the resident set within a fraction
/// of a second; one collection walks the heap's pages, microseconds for a large heap.
const MEMORY_RELEASE_MS: i64 = 100;

impl Executor {
    /// Periodic work, `hz` times a second: active expiry within a quarter of the period.
    pub(super) fn cron(&mut self, hz: u64) {
        self.anchor = crate::clock::Anchor::now();
        self.replication_cron();
        self.failover_progress();
        self.cluster_cron();
        let used = self.ks.used_memory() as u64;
        self.server.memory_peak = self.server.memory_peak.max(used);
        let now_ms = crate::clock::now_ms();
        if now_ms - self.memory_released_ms >= MEMORY_RELEASE_MS {
            self.memory_released_ms = now_ms;
            crate::util::release_memory(std::mem::take(&mut self.purge_memory));
        }
        // `timeout`: idle normal clients are closed (not blocked, subscribed or MONITOR ones).
        let idle_limit = self.server.config.get_int(P::Timeout);
        if idle_limit > 0 {
            let limit = Duration::from_secs(idle_limit as u64);
            let idle: Vec<ClientId> = self
                .server
                .clients
                .values()
                .filter(|c| {
                    c.blocked.is_none()
                        && !c.monitor
                        && c.subs.channels.is_empty()
                        && c.subs.patterns.is_empty()
                        && c.subs.shard_channels.is_empty()
                })
                .filter(|c| crate::clock::now_ms() - c.last_interaction_ms > limit.as_millis() as i64)
                .map(|c| c.id)
                .collect();
            for id in idle {
                log::verbose(&format!("Closing idle client id={id}"));
                self.server.kill_list.push(id);
            }
            if !self.server.kill_list.is_empty() {
                self.release_replies();
            }
        }
        let budget_us = 250_000 / hz;
        let now = crate::clock::now_ms();
        let server = &mut self.server;
        // A FAILOVER waits for the stream to stop growing: expiry waits with the writes, as
        // Redis pauses it while writes are paused.
        if server.active_expire_enabled && server.repl.failover.is_none() {
            let started = Instant::now();
            self.ks.active_expire_cycle(now, budget_us, &mut || server.random());
            self.latency_sample("expire-cycle", started);
        }
        // Active expiry aborts watchers' transactions too; then the records can go (nothing
        // else consumes them yet).
        let expired = std::mem::take(&mut self.ks.expired);
        let evicted = std::mem::take(&mut self.ks.evicted);
        if self.server.tracking.clients > 0 && !(expired.is_empty() && evicted.is_empty()) {
            let keys: Vec<bytes::Bytes> = expired.iter().chain(evicted.iter()).map(|(_, k)| k.clone()).collect();
            self.invalidate_keys(None, false, &keys);
            self.release_replies();
        }
        let flags = self.server.settings.notify_flags;
        if flags & (crate::notify::KEYSPACE | crate::notify::KEYEVENT) != 0 {
            let events = expired
                .iter()
                .filter(|_| flags & crate::notify::EXPIRED != 0)
                .map(|(db, key)| (crate::notify::EXPIRED, "expired", *db, key.clone()));
            let events = events.chain(
                evicted
                    .iter()
                    .filter(|_| flags & crate::notify::EVICTED != 0)
                    .map(|(db, key)| (crate::notify::EVICTED, "evicted", *db, key.clone())),
            );
            let events = events.map(|(class, event, db, key)| crate::notify::Notification { class, event, db, key }).collect();
            commands::pubsub::publish_notifications(&mut self.server, None, events, &mut self.touched);
            self.release_replies();
        }
        let waited = !self.waiters.by_key.is_empty();
        for (db, key) in expired {
            self.touch_watched(None, db, &key);
            if waited {
                self.signal_key(db, key);
            }
        }
        self.expired_seen = 0;
        if waited {
            self.serve_ready();
            self.release_replies();
        }
        // The fsync thread's slowest sync under `always` since the last tick.
        if let Some(ms) = self.log.aof.as_ref().map(|a| a.log.take_slowest_always_ms()) {
            self.latency_ms("aof-fsync-always", ms);
        }
        if self.logging() {
            // DELs of actively expired keys; a write that failed is retried; growth may
            // call for a rewrite.
            self.commit_pending();
            if !self.log.held.is_empty()
                || self.log.aof.as_ref().is_some_and(|a| !a.rec.buf.is_empty() || a.write_error.is_some())
                || self.log.mem.as_ref().is_some_and(|m| !m.rec.buf.is_empty())
            {
                self.release_replies();
            }
            self.maybe_auto_rewrite();
        }
        self.rdb_cron();
    }

    /// SIGTERM/SIGINT: a shutdown as `shutdown-on-sigterm`/`-sigint` says, unless its save
    /// fails (the server then stays up, as Redis's does).
    pub(super) fn signalled(&mut self, name: &str) {
        log::warning(&format!("Received {name} scheduling shutdown..."));
        let flags = if name == "SIGINT" { P::ShutdownOnSigint } else { P::ShutdownOnSigterm };
        let request = crate::state::ShutdownRequest::from_flags(self.server.config.get(flags));
        match self.shutdown_save(request) {
            Ok(()) => self.server.shutdown = Some(request),
            Err(_) => {
                log::warning(&format!("{name} received but errors trying to shut down the server, check the logs for more information"))
            }
        }
    }

    pub(super) fn shutdown(&mut self) {
        self.cluster_write_conf();
        log::warning("User requested shutdown...");
        if self.log.aof.is_some() {
            log::notice("Calling fsync() on the AOF file.");
            self.close_aof();
            // Everything is on disk now: replies that waited for it go before the close.
            self.touched.append(&mut self.log.held);
        }
        // Pushes kept back go too: their publishers were told they were delivered.
        self.release_replies();
        for client in self.server.clients.values() {
            let _ = client.tx.send(ClientOutput::Close(Vec::new()));
        }
        log::warning("Vermilion is now ready to exit, bye bye...");
    }
}
