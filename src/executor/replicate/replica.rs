//! Replication, the replica's half: REPLICAOF and promotion, installing the primary's
//! snapshot, applying its stream through the loader's path, acknowledgements, and the
//! refusals of a read-only or stale replica.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::super::load::Applying;
use super::super::Executor;
use crate::aof::{format, Aof};
use crate::config::P;
use crate::log;
use crate::protocol::Reply;
use crate::replication::{self, LinkShared, MasterLink, Resume, NO_REPLID};
use crate::state::Client;

pub(in crate::executor) const READONLY: &str = "READONLY You can't write against a read only replica.";
pub(in crate::executor) const MASTERDOWN: &str = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// A replica's side of its link to the primary.
#[derive(Default)]
pub(in crate::executor) struct ReplicaSide {
    /// The client the primary's stream runs as, and its database between segments.
    pub master_client: Option<Client>,
    pub master_db: usize,
    /// The primary asked for an acknowledgement (sent after the next flush).
    pub ack_wanted: bool,
}

impl Executor {
    /// Whether this server's log is a copy of its primary's stream, as received: a replica
    /// of a Vermilion primary (a redis-server primary's commands are records of its own).
    pub(in crate::executor) fn copies_stream(&self) -> bool {
        self.server.repl.master.as_ref().is_some_and(|m| m.upstream.is_none())
    }

    /// Whether this server is a replica refusing writes from clients.
    pub(in crate::executor) fn read_only_replica(&self) -> bool {
        self.server.repl.master.is_some() && self.server.settings.replica_read_only
    }

    /// A replica whose link is not synchronized, set not to serve stale data: only commands
    /// flagged `stale` run.
    pub(in crate::executor) fn stale_replica(&self) -> bool {
        !self.server.settings.replica_serve_stale && self.server.repl.master.as_ref().is_some_and(|m| !m.synced)
    }

    /// Why a client's write must be refused for replication reasons: a read-only replica, or
    /// too few good replicas (`min-replicas-to-write`). The stream and the log being loaded
    /// are never refused.
    pub(in crate::executor) fn replication_write_refusal(&self) -> Option<Reply> {
        if self.loading() {
            return None;
        }
        if self.read_only_replica() {
            return Some(Reply::error(READONLY));
        }
        let (needed, max_lag) = self.server.settings.min_replicas;
        if needed > 0 && max_lag > 0 && self.server.repl.master.is_none() && self.server.good_replicas(max_lag) < needed {
            return Some(Reply::error("NOREPLICAS Not enough good replicas to write."));
        }
        None
    }

    /// `replicaof host port` in the configuration: the link starts once the log is loaded.
    pub(in crate::executor) fn start_replication_from_config(&mut self) {
        let spec = self.server.config.get(P::Replicaof).to_string();
        let words: Vec<&str> = spec.split_whitespace().collect();
        // A former replica's log started as a primary: the stream it copied is history now
        // (its secondary id, as Redis does), and the log is this server's own from here.
        let saved = self.log.aof.as_ref().and_then(|a| a.dir.manifest.replid.clone());
        if let (Some(saved), true) = (saved, words.is_empty()) {
            let offset = self.log.aof.as_ref().map_or(0, |a| a.offset());
            let repl = &mut self.server.repl;
            repl.offset = offset;
            repl.replid2 = saved;
            repl.second_offset = Some(offset);
            if let Some(aof) = self.log.aof.as_mut() {
                if let Err(e) = aof.dir.set_replid(None) {
                    log::warning(&format!("Can't update the AOF manifest: {e}"));
                }
                // Replicas may continue through the secondary id: an empty epoch, as after a
                // promotion.
                aof.rec.epoch_scripts.clear();
            }
        }
        if let [host, port] = words[..] {
            match port.parse::<u16>() {
                Ok(port) => {
                    if let Err(e) = self.become_replica(host.to_string(), port, false) {
                        log::warning(&format!("Can't start replication from the configuration: {e}"));
                    }
                }
                Err(_) => log::warning(&format!("Invalid replicaof port '{port}'")),
            }
        }
    }

    /// REPLICAOF host port.
    pub(super) fn replicaof(&mut self, client: &Client, host: String, port: u16) -> Reply {
        if let Some(m) = &self.server.repl.master {
            if m.host.eq_ignore_ascii_case(&host) && m.port == port {
                log::notice(
                    "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.",
                );
                return Reply::status("OK Already connected to specified master");
            }
        }
        if let Err(e) = self.become_replica(host.clone(), port, false) {
            return Reply::Error(e.into());
        }
        log::notice(&format!("REPLICAOF {host}:{port} enabled (user request from 'id={} addr={}')", client.id, client.addr));
        Reply::OK
    }

    /// Starts (or moves) the link to a primary. The data stays until a full sync replaces it.
    /// `failover`: this primary hands its role to `host:port`, its caught-up replica, whose
    /// first PSYNC carries FAILOVER.
    pub(in crate::executor) fn become_replica(&mut self, host: String, port: u16, failover: bool) -> Result<(), String> {
        let Some(rt) = replication::runtime() else {
            return Err("ERR replication needs the server's network runtime".into());
        };
        // A FAILOVER to a redis-server replica continues its plain stream (its offsets).
        let plain_target = failover && self.server.find_replica(&host, port as i64).is_some_and(|(_, p)| p.plain);
        self.stop_link();
        // Sub-replicas resync against the new history.
        self.disconnect_replicas();
        let was_primary = self.server.repl.master.is_none();
        if let Some(aof) = self.log.aof.as_mut() {
            // This server's own records must be whole in the log before the primary's stream
            // follows them.
            aof.flush().map_err(|e| format!("ERR the log cannot be written: {e}"))?;
            if was_primary {
                // The stream continues from where this server's own log is.
                self.replica.master_db = aof.rec.selected_db.unwrap_or(self.load.loaded_db);
                self.server.repl.offset = aof.offset();
            }
            aof.rec.verbatim = true;
        }
        if let Some(m) = self.log.mem.as_mut() {
            m.flush();
            if was_primary {
                self.replica.master_db = m.rec.selected_db.unwrap_or(self.load.loaded_db);
                self.server.repl.offset = m.offset;
            }
            m.rec.verbatim = true;
        }
        self.feed_replicas();
        self.ks.log_deletions = false;
        self.ks.deletions.clear();
        self.ks.passive_expiry = true;
        let repl = &mut self.server.repl;
        let id = repl.next_link_id;
        repl.next_link_id += 1;
        let shared = Arc::new(LinkShared::default());
        // A server with a history asks to continue it (PSYNC2: a former primary, a restarted
        // replica); an empty one asks for a full sync.
        let has_history = repl.offset > 0 || self.log.aof.as_ref().is_some_and(|a| a.dir.manifest.replid.is_some());
        if let Some(saved) = self.log.aof.as_ref().and_then(|a| a.dir.manifest.replid.clone()) {
            if was_primary && repl.offset > 0 {
                repl.replid = saved;
            }
        }
        let resume = match &repl.plain {
            Some(feed) if plain_target => Some(Resume { replid: feed.replid.clone(), offset: feed.offset, plain: true }),
            _ => has_history.then(|| Resume { replid: repl.replid.clone(), offset: repl.offset, plain: false }),
        };
        shared.applied.store(resume.as_ref().map_or(repl.offset, |r| r.offset), Ordering::Release);
        let sync_file = match self.log.aof.as_ref() {
            Some(a) => a.dir.file(&format!("temp-{}.replica-sync-{id}.vsnap", a.dir.prefix)),
            None => PathBuf::from(format!("temp-replica-sync-{}-{id}.vsnap", std::process::id())),
        };
        let tls = self.server.config.get(P::TlsReplication) == "yes";
        let cfg = replication::link::LinkConfig {
            id,
            host: host.clone(),
            port,
            masterauth: self.server.config.get(P::Masterauth).to_string(),
            masteruser: self.server.config.get(P::Masteruser).to_string(),
            listening_port: self.server.config.get_int(if tls { P::TlsPort } else { P::Port }).clamp(0, 65535) as u16,
            sync_file,
            timeout: std::time::Duration::from_secs(self.server.config.get_int(P::ReplTimeout).max(1) as u64),
            resume: resume.clone(),
            failover,
            tls: tls.then(|| crate::tls::connector(&self.server.config).map(replication::link::LinkTls)),
        };
        let tx = self.log.wake_tx.clone().ok_or("ERR the executor has no request channel")?;
        rt.spawn(replication::link::run(cfg, shared.clone(), tx));
        // CONFIG GET replicaof and CONFIG REWRITE show the primary followed now, as in Redis.
        let _ = self.server.config.set("replicaof", &format!("{host} {port}"), true);
        repl.master =
            Some(MasterLink { host, port, id, shared, synced: false, resume, upstream: None, down_since_ms: crate::clock::now_ms() });
        log::set_role(b'S');
        Ok(())
    }

    /// REPLICAOF NO ONE: a primary again, continuing the same data under a new replication
    /// id (the old one stays as the secondary id, so the old primary's other replicas can
    /// continue partially from here).
    /// `why`: the log's words for who asked (`user request from '...'`).
    pub(in crate::executor) fn promote(&mut self, why: &str) -> Reply {
        if self.server.repl.master.is_none() {
            return Reply::OK;
        }
        // The applied stream is written first, still as a copy (its own checkpoints): the
        // offset the old history ends at is then the log's end.
        if let Some(aof) = self.log.aof.as_mut() {
            if let Err(e) = aof.flush() {
                return Reply::Error(format!("ERR the log cannot be written: {e}").into());
            }
        }
        if let Some(m) = self.log.mem.as_mut() {
            m.flush();
        }
        self.feed_replicas();
        self.stop_link();
        let upstream = self.server.repl.master.take().and_then(|m| m.upstream);
        let _ = self.server.config.set("replicaof", "", true);
        let offset = self.stream_end();
        self.server.repl.offset = offset;
        self.server.repl.shift_replid(replication::new_replid(), offset);
        match upstream {
            // The redis-server primary's replicas continue its history in its offsets.
            Some(u) => self.continue_plain_history(Some(u)),
            None => {
                if let Some(feed) = self.server.repl.plain.as_mut() {
                    feed.shift_replid();
                }
            }
        }
        if let Some(aof) = self.log.aof.as_mut() {
            aof.rec.verbatim = false;
            aof.rec.selected_db = None;
            // An empty epoch: every script is logged as EVAL until its body is in this log
            // (sub-replicas continuing from here may not have every body this one loaded).
            aof.rec.epoch_scripts.clear();
            if let Err(e) = aof.dir.set_replid(None) {
                log::warning(&format!("Can't update the AOF manifest: {e}"));
            }
            self.ks.log_deletions = true;
        }
        if let Some(m) = self.log.mem.as_mut() {
            m.rec.verbatim = false;
            m.rec.selected_db = None;
            m.rec.epoch_scripts.clear();
            self.ks.log_deletions = true;
        }
        self.ks.passive_expiry = false;
        self.replica.master_client = None;
        self.disconnect_replicas();
        log::set_role(b'M');
        log::notice(&format!(
            "Setting secondary replication ID to {}, valid up to offset: {}. New replication ID is {}",
            self.server.repl.replid2,
            offset + 1,
            self.server.repl.replid
        ));
        log::notice(&format!("MASTER MODE enabled ({why})"));
        Reply::OK
    }

    pub(super) fn stop_link(&mut self) {
        if let Some(m) = &self.server.repl.master {
            m.shared.stop.store(true, Ordering::Release);
            m.shared.wake.notify_one();
        }
    }

    pub(super) fn current_link(&self, link: u64) -> bool {
        self.server.repl.master.as_ref().is_some_and(|m| m.id == link)
    }

    /// A full sync's snapshot arrived: it replaces the data (as the base of a new log
    /// generation when the log is on, loaded through the same path as at start).
    pub(in crate::executor) fn install_snapshot(&mut self, link: u64, replid: String, offset: u64, path: PathBuf) {
        if !self.current_link(link) {
            let _ = std::fs::remove_file(&path);
            return;
        }
        log::notice("MASTER <-> REPLICA sync: Flushing old data");
        // What clients are owed leaves before connections start answering LOADING.
        self.release_replies();
        let started = std::time::Instant::now();
        self.server.limits.loading.store(true, Ordering::Release);
        let rdb = std::fs::File::open(&path).and_then(|mut f| {
            let mut head = [0u8; 5];
            std::io::Read::read_exact(&mut f, &mut head).map(|_| crate::db::rdb_file::is_rdb(&head))
        });
        let result = match rdb {
            Ok(true) => self.load_rdb_sync(&replid, offset, &path),
            _ => self.load_snapshot(&replid, offset, &path),
        };
        self.server.limits.loading.store(false, Ordering::Release);
        self.now_ms = crate::clock::now_ms();
        if let Err(e) = result {
            log::warning(&format!("Failed trying to load the MASTER synchronization snapshot: {e}"));
            let _ = std::fs::remove_file(&path);
            if let Some(m) = self.server.repl.master.as_mut() {
                // The data may be anything now: the next connection asks for a full sync.
                m.resume = None;
                m.synced = false;
                m.shared.reconnect.store(true, Ordering::Release);
                m.shared.wake.notify_one();
            }
            return;
        }
        self.disconnect_replicas();
        if let Some(m) = self.server.repl.master.as_mut() {
            m.synced = true;
        }
        log::notice(&format!("MASTER <-> REPLICA sync: Finished with success ({} ms)", started.elapsed().as_millis()));
        self.replica.ack_wanted = true;
        self.ack_master();
    }

    pub(super) fn load_snapshot(&mut self, replid: &str, offset: u64, path: &std::path::Path) -> Result<(), String> {
        // Whole and intact (frame and CRC-64) before anything is replaced: a bad transfer
        // leaves the data and the log as they were.
        let data = super::super::load::map_file(path)?;
        let (log_offset, _, _) = crate::aof::snapshot::check_frame(&data).map_err(|e| format!("{} at offset {}", e.reason, e.offset))?;
        if log_offset != offset {
            return Err(format!("the snapshot stands for offset {log_offset}, not the announced {offset}"));
        }
        self.clear_for_sync();
        match self.log.aof.take() {
            Some(old) => {
                let (mut dir, policy) = (old.dir.clone(), old.policy);
                drop(old);
                drop(data);
                // From here the directory is the new generation: a failure leaves a server
                // without its log, so it stops (a restart loads the checked snapshot).
                let fatal = |e: String| -> ! {
                    log::warning(&format!("Failed to install the MASTER synchronization snapshot as the log's base: {e}. Exiting."));
                    std::process::exit(1)
                };
                if let Err(e) = dir.install_generation(path, Some(replid.to_string())) {
                    fatal(format!("Can't install the snapshot: {e}"));
                }
                let (incr, origin) = self.load_dir(&mut dir).unwrap_or_else(|e| fatal(e));
                let mut aof =
                    Aof::open(dir, &incr, policy, origin, self.log_waker()).unwrap_or_else(|e| fatal(format!("Can't open the log: {e}")));
                aof.rec.epoch_scripts = self.load.stream_scripts.keys().cloned().collect();
                self.adopt_log(aof);
            }
            None => {
                let loaded = self.decode_snapshot(&data).map_err(|e| format!("{} at offset {}", e.reason, e.offset));
                drop(data);
                let _ = std::fs::remove_file(path);
                self.load.loaded_db = loaded?.stream_db as usize;
                // The in-memory stream (kept for sub-replicas) restarts at the snapshot; a
                // sub-replica's snapshot of the old one is of no use.
                self.abandon_sync_job();
                if let Some(m) = self.log.mem.as_mut() {
                    m.rec.buf.clear();
                    m.rec.teed.clear();
                    m.offset = offset;
                }
            }
        }
        self.replica.master_db = self.load.loaded_db.min(self.ks.dbs.len() - 1);
        self.replica.master_client = None;
        // The primary's history and offsets are this server's now.
        self.follow_plain(false);
        let repl = &mut self.server.repl;
        repl.plain = None;
        repl.replid = replid.to_string();
        repl.replid2 = NO_REPLID.to_string();
        repl.second_offset = None;
        repl.offset = offset;
        if let Some(b) = repl.backlog.as_mut() {
            b.reset(offset);
        }
        Ok(())
    }

    /// What a full sync replaces goes first: the data, the scripts, a rewrite under way.
    pub(super) fn clear_for_sync(&mut self) {
        if let Some(aof) = self.log.aof.as_mut() {
            aof.abandon_rewrite();
            let _ = aof.flush();
        }
        // A background RDB save keeps the dataset of its start.
        self.complete_walks();
        for db in self.ks.dbs.iter_mut() {
            db.clear();
        }
        if let Some(engine) = self.server.scripts.as_mut() {
            let _ = engine.reset();
        }
        self.load.stream_scripts.clear();
    }

    /// The primary accepted a partial resync (`replid`: its id, which may be new).
    pub(in crate::executor) fn continue_stream(&mut self, link: u64, replid: String) {
        if !self.current_link(link) {
            return;
        }
        if let Some(r) = self.server.repl.master.as_ref().and_then(|m| m.resume.clone()).filter(|r| r.plain) {
            // A redis-server primary (a new id after its own promotion, perhaps).
            let id = if replid.is_empty() { r.replid } else { replid };
            self.follow_plain(true);
            if let Some(m) = self.server.repl.master.as_mut() {
                m.upstream = Some((id, r.offset));
                m.synced = true;
            }
            self.replica.ack_wanted = true;
            self.ack_master();
            return;
        }
        let offset = self.stream_end();
        let repl = &mut self.server.repl;
        if !replid.is_empty() && replid != repl.replid {
            repl.shift_replid(replid.clone(), offset);
            log::notice(&format!("Master replication ID changed to {replid}"));
            self.disconnect_replicas();
        }
        let id = self.server.repl.replid.clone();
        if let Some(aof) = self.log.aof.as_mut() {
            if let Err(e) = aof.dir.set_replid(Some(id)) {
                log::warning(&format!("Can't update the AOF manifest: {e}"));
            }
        }
        if let Some(m) = self.server.repl.master.as_mut() {
            m.synced = true;
        }
        self.replica.ack_wanted = true;
        self.ack_master();
    }

    /// Whole segments of the primary's stream: their records are applied as the log loader
    /// applies them (frozen script time, no expiry), then the bytes go to this server's own
    /// log unchanged.
    pub(in crate::executor) fn apply_stream(&mut self, link: u64, offset: u64, data: Bytes) {
        if !self.accept_stream(link, offset, data.len() as u64, Some(self.stream_end())) {
            return;
        }
        let mut master = self.master_client();
        self.load.applying = Applying::LiveStream;
        format::replay_checked(&data, |rec| {
            let name = rec.argv[0];
            if let Some(err) = self.replay_record(&mut master, rec) {
                let name = String::from_utf8_lossy(name);
                log::warning(&format!("== CRITICAL == This replica could not apply '{name}' from its master: {err}"));
            }
        });
        self.load.applying = Applying::Clients;
        self.now_ms = crate::clock::now_ms();
        self.replica.master_db = master.db;
        self.replica.master_client = Some(master);
        match (self.log.aof.as_mut(), self.log.mem.as_mut()) {
            (Some(aof), _) => aof.rec.append_stream(&data),
            (None, Some(m)) => m.rec.append_stream(&data),
            (None, None) => self.server.repl.offset += data.len() as u64,
        }
    }

    /// Whether `len` stream bytes from `link` that start at `offset` are applied: they come
    /// from the current link, which is synced, and start where the applied stream ends
    /// (`end`). Applied exactly once, in order: otherwise they are dropped and the link
    /// starts again from the right place.
    pub(super) fn accept_stream(&self, link: u64, offset: u64, len: u64, end: Option<u64>) -> bool {
        // An older link's bytes: its counter went with it.
        let Some(m) = self.server.repl.master.as_ref().filter(|m| m.id == link) else { return false };
        m.shared.queued.fetch_sub(len, Ordering::AcqRel);
        if !m.synced {
            return false;
        }
        if end != Some(offset) {
            log::warning(&format!("Replication stream at offset {offset}, expected {end:?}: reconnecting"));
            m.shared.reconnect.store(true, Ordering::Release);
            m.shared.wake.notify_one();
            return false;
        }
        true
    }

    /// The client the primary's stream runs as (kept between deliveries: its database).
    pub(super) fn master_client(&mut self) -> Client {
        self.replica.master_client.take().unwrap_or_else(|| {
            let mut c = self.loader_client();
            c.db = self.replica.master_db;
            c
        })
    }

    /// The link to the primary went down: the data stays. Returns where the next connection
    /// resumes: everything the old one handed over is applied by now (the request came
    /// through the same channel, after it).
    pub(in crate::executor) fn link_down(&mut self, link: u64) -> Option<Resume> {
        let end = self.stream_end();
        let replid = self.server.repl.replid.clone();
        let plain = self.plain_resume();
        let m = self.server.repl.master.as_mut().filter(|m| m.id == link)?;
        if m.synced {
            m.synced = false;
            m.down_since_ms = crate::clock::now_ms();
            m.resume = Some(plain.unwrap_or(Resume { replid, offset: end, plain: false }));
        }
        m.resume.clone()
    }

    /// Where the applied stream ends: written, or buffered for the log's next write.
    pub(super) fn stream_end(&self) -> u64 {
        self.log.buffered_end().unwrap_or(self.server.repl.offset)
    }

    /// After the log's flush: records how far the stream is applied and written (what the
    /// link acknowledges), and wakes the link when the primary asked for an acknowledgement.
    pub(in crate::executor) fn ack_master(&mut self) {
        let repl = &self.server.repl;
        let Some(m) = repl.master.as_ref() else { return };
        // A redis-server's offset counts commands applied: acknowledged only once the log
        // holds them (a Vermilion primary's is the log's own offset).
        let written = m.upstream.is_none() || self.log.aof.as_ref().is_none_or(|a| a.write_error.is_none());
        if m.synced && written {
            m.shared.applied.store(repl.shown().1, Ordering::Release);
        }
        if std::mem::take(&mut self.replica.ack_wanted) && m.synced {
            m.shared.ack_wanted.store(true, Ordering::Release);
            m.shared.wake.notify_one();
        }
    }
}
