//! Replication, the executor's side: serving PSYNC (partial from the backlog or the log's
//! files, full from a log rewrite's base snapshot), feeding replicas the segments the log
//! writes, applying a primary's stream as a replica, REPLICAOF, WAIT and the periodic work.
//!
//! The stream is the log (see `replication`): what a replica receives for an offset range is
//! the primary's incremental log for that range, and a replica writes what it applied to
//! its own log unchanged. Bytes for a replica go through its `Client::out` like any reply
//! (so they stay in order with its other output and count towards its output limit), or,
//! for file ranges, as one `ClientOutput::Stream` job its connection task writes.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

use super::Executor;
use crate::aof::{format, Aof};
use crate::log;
use crate::protocol::Reply;
use crate::replication::{self, Backlog, LinkShared, MasterLink, Peer, PeerState, ReplRequest, NO_REPLID};
use crate::state::{Client, ClientId, ClientOutput};

pub(super) const READONLY: &str = "READONLY You can't write against a read only replica.";
pub(super) const MASTERDOWN: &str = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";

/// How long stream bytes may wait in a replica's output before they are written, and how
/// many make them go at once.
const REPL_FLUSH_DELAY: std::time::Duration = std::time::Duration::from_micros(1000);
const REPL_FLUSH_BYTES: usize = 64 * 1024;

impl Executor {
    /// Runs what a replication command asked for; returns its reply.
    pub(super) fn replication_request(&mut self, client: &mut Client, req: ReplRequest) -> Reply {
        match req {
            ReplRequest::Psync { replid, offset, legacy } => self.psync(client, &replid, offset, legacy),
            ReplRequest::ReplicaOf(Some((host, port))) => self.replicaof(client, host, port),
            ReplRequest::ReplicaOf(None) => self.promote(client),
        }
    }

    /// Whether this server is a replica refusing writes from clients.
    pub(super) fn read_only_replica(&self) -> bool {
        self.server.repl.master.is_some() && self.server.replica_read_only
    }

    /// A replica whose link is not synchronized, set not to serve stale data: only commands
    /// flagged `stale` run.
    pub(super) fn stale_replica(&self) -> bool {
        !self.server.replica_serve_stale && self.server.repl.master.as_ref().is_some_and(|m| !m.synced)
    }

    /// Why a client's write must be refused for replication reasons: a read-only replica, or
    /// too few good replicas (`min-replicas-to-write`). The stream and the log being loaded
    /// are never refused.
    pub(super) fn replication_write_refusal(&self) -> Option<Reply> {
        if self.loading {
            return None;
        }
        if self.read_only_replica() {
            return Some(Reply::error(READONLY));
        }
        let (needed, max_lag) = self.server.min_replicas;
        if needed > 0 && max_lag > 0 && self.server.repl.master.is_none() && self.server.good_replicas(max_lag) < needed {
            return Some(Reply::error("NOREPLICAS Not enough good replicas to write."));
        }
        None
    }

    /// PSYNC / SYNC from a connection that becomes a replica.
    fn psync(&mut self, client: &mut Client, replid: &str, offset: i64, legacy: bool) -> Reply {
        if client.replica.is_some() {
            // Already a replica: a second PSYNC is ignored, as Redis does.
            return Reply::NoReply;
        }
        if self.aof.is_none() {
            return Reply::error("ERR Vermilion replicates its log: the primary needs appendonly yes");
        }
        if self.server.repl.master.as_ref().is_some_and(|m| !m.synced) {
            return Reply::error("NOMASTERLINK Can't SYNC while not connected with my master");
        }
        // Everything buffered is written first: the log's end is the stream's end.
        self.flush_log();
        self.feed_replicas();
        let Some(aof) = self.aof.as_ref() else { return Reply::NoReply };
        if let Some(err) = &aof.write_error {
            return Reply::Error(format!("ERR the log cannot be written: {err}").into());
        }
        let end = aof.offset();
        if self.server.repl.backlog.is_none() {
            let size = self.server.config.get_int("repl-backlog-size").max(16 * 1024) as u64;
            self.server.repl.backlog = Some(Backlog::new(end, size));
        }
        if let Some(aof) = self.aof.as_mut() {
            aof.tee = true;
        }
        let who = format!("{}:{}", replication::peer_ip(&client.addr), client.replconf_port);
        if !legacy && replid != "?" {
            match self.partial_source(replid, offset, end) {
                Ok(source) => {
                    let repl = &mut self.server.repl;
                    repl.sync_partial_ok += 1;
                    let start = offset.saturating_sub(1) as u64;
                    let head = format!("+CONTINUE {}\r\n", repl.replid).into_bytes();
                    log::notice(&format!(
                        "Partial resynchronization request from {who} accepted. Sending {} bytes of backlog starting from offset {offset}.",
                        end - start
                    ));
                    self.attach_replica(client, PeerState::Online, start, false);
                    match source {
                        PartialSource::Memory(bytes) => {
                            client.out.extend_from_slice(&head);
                            client.out.extend_from_slice(&bytes);
                        }
                        PartialSource::File(file, at) => Self::send_job(client, head, vec![(file, at, end - start)]),
                    }
                    return Reply::NoReply;
                }
                Err(why) => {
                    log::notice(&why);
                    self.server.repl.sync_partial_err += 1;
                }
            }
        } else {
            log::notice(&format!("Replica {who} asks for synchronization"));
            log::notice(&format!("Full resync requested by replica {who}"));
        }
        // Full sync: the base snapshot of a log rewrite (the running one, or a new one).
        if !self.rewriting() {
            if let Err(e) = self.rewrite_aof() {
                return Reply::Error(e.into());
            }
        }
        let Some(origin) = self.aof.as_ref().and_then(|a| a.rewrite.as_ref()).map(|r| r.origin) else {
            return Reply::error("ERR the snapshot for the full sync could not be started");
        };
        self.server.repl.sync_full += 1;
        log::notice(&format!("Starting a snapshot for SYNC with target: the log rewrite at offset {origin}"));
        if !legacy {
            client.out.extend_from_slice(format!("+FULLRESYNC {} {origin}\r\n", self.server.repl.replid).as_bytes());
        }
        self.attach_replica(client, PeerState::WaitSnapshot, origin, legacy);
        Reply::NoReply
    }

    /// Where a partial resync from `offset` (Redis's: the first byte wanted, our offset + 1)
    /// can be served from, or why it cannot.
    fn partial_source(&self, replid: &str, offset: i64, end: u64) -> Result<PartialSource, String> {
        let repl = &self.server.repl;
        let start = offset.saturating_sub(1);
        let known =
            replid == repl.replid || (replid == repl.replid2 && repl.second_offset.is_some_and(|s| start >= 0 && start as u64 <= s));
        if !known {
            return Err(format!(
                "Partial resynchronization not accepted: Replication ID mismatch (Replica asked for '{replid}', my replication IDs are '{}' and '{}')",
                repl.replid, repl.replid2
            ));
        }
        if start < 0 || start as u64 > end {
            return Err(format!("Unable to partial resync with replica for lack of backlog (Replica request was: {offset})."));
        }
        let start = start as u64;
        if let Some(bytes) = repl.backlog.as_ref().and_then(|b| b.since(start)) {
            return Ok(PartialSource::Memory(bytes));
        }
        // Older than the backlog: the current incremental file may still hold it.
        let aof = self.aof.as_ref().ok_or("no log")?;
        if start >= aof.incr_origin {
            if let Some(incr) = aof.dir.manifest.incrs.last() {
                if let Ok(file) = std::fs::File::open(aof.dir.file(&incr.name)) {
                    return Ok(PartialSource::File(file, start - aof.incr_origin));
                }
            }
        }
        Err(format!("Unable to partial resync with replica for lack of backlog (Replica request was: {offset})."))
    }

    fn attach_replica(&mut self, client: &mut Client, state: PeerState, offset: u64, legacy: bool) {
        let now = crate::clock::now_ms();
        client.replica = Some(Peer { state, ack_offset: offset, ack_time_ms: now, last_sent_ms: now, sync_offset: offset, legacy });
        client.flags.replica.store(true, Ordering::Release);
        if !self.server.repl.replicas.contains(&client.id) {
            self.server.repl.replicas.push(client.id);
        }
    }

    /// Sends what the client's output holds, then a file job after it (nothing overtakes the
    /// job: one byte stands for it in `task_pending` until the task has written it).
    fn send_job(client: &mut Client, head: Vec<u8>, parts: Vec<(std::fs::File, u64, u64)>) {
        Self::send_output(client, crate::state::OutputLimit::default());
        client.flags.task_pending.fetch_add(1, Ordering::AcqRel);
        let _ = client.tx.send(ClientOutput::Stream { head, parts });
    }

    /// The segments the log wrote since the last call go to the backlog and to every online
    /// replica's output (released with the other replies).
    pub(super) fn feed_replicas(&mut self) {
        let Some(aof) = self.aof.as_mut() else { return };
        self.server.repl.offset = aof.offset();
        if aof.teed.is_empty() {
            return;
        }
        let segments = std::mem::take(&mut aof.teed);
        if let Some(backlog) = self.server.repl.backlog.as_mut() {
            for s in &segments {
                backlog.push(s.clone());
            }
        }
        let now = self.now_ms;
        let mut full = false;
        // A SYNC client (redis-cli --replica) gets the commands without annotations.
        let mut plain: Option<Vec<u8>> = None;
        for &id in &self.server.repl.replicas {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            let Some(peer) = c.replica.as_mut() else { continue };
            if peer.state != PeerState::Online {
                continue;
            }
            peer.last_sent_ms = now;
            if peer.legacy {
                let plain = plain.get_or_insert_with(|| segments.iter().flat_map(|s| format::plain_commands(s)).collect());
                c.out.extend_from_slice(plain);
            } else {
                for s in &segments {
                    c.out.extend_from_slice(s);
                }
            }
            full |= c.out.len() >= REPL_FLUSH_BYTES;
        }
        // Segments are as small as one command when clients come one at a time: written to
        // replicas within REPL_FLUSH_DELAY, many at once, they cost the primary one write and
        // the replica one wake-up for the lot.
        if full {
            self.flush_replica_output();
        } else if self.repl_flush_due.is_none() {
            self.repl_flush_due = Some(std::time::Instant::now() + REPL_FLUSH_DELAY);
        }
    }

    /// Writes what waits in replicas' outputs (the stream, keepalives, acknowledgement
    /// requests); a replica past its output limit is disconnected.
    pub(super) fn flush_replica_output(&mut self) {
        self.repl_flush_due = None;
        let limit = self.server.output_limits.replica;
        for &id in &self.server.repl.replicas {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            if c.out.is_empty() {
                continue;
            }
            self.server.stats.net_output_bytes += c.out.len() as u64;
            if Self::send_output(c, limit) {
                log::warning(&format!("Client id={id} scheduled to be closed ASAP for overcoming of output buffer limits."));
                self.server.kill_list.push(id);
            }
        }
        if !self.server.kill_list.is_empty() {
            self.release_replies();
        }
    }

    /// A log rewrite ended: replicas waiting for a full sync get its base snapshot and the
    /// incremental log written since, then the live stream.
    pub(super) fn complete_full_syncs(&mut self, rewrite_ok: bool) {
        let waiting: Vec<ClientId> = self
            .server
            .repl
            .replicas
            .iter()
            .copied()
            .filter(|id| self.server.clients.get(id).and_then(|c| c.replica.as_ref()).is_some_and(|p| p.state == PeerState::WaitSnapshot))
            .collect();
        if waiting.is_empty() || self.rewriting() {
            return;
        }
        self.flush_log();
        self.feed_replicas();
        let Some(aof) = self.aof.as_ref() else { return };
        let (origin, end) = (aof.incr_origin, aof.offset());
        let base = aof.dir.manifest.base.as_ref().map(|b| aof.dir.file(&b.name));
        let incr = aof.dir.manifest.incrs.last().map(|i| aof.dir.file(&i.name));
        for id in waiting {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            let Some(peer) = c.replica.as_mut() else { continue };
            let files = match (&base, &incr) {
                (Some(b), Some(i)) if rewrite_ok && peer.sync_offset == origin => {
                    std::fs::File::open(b).and_then(|bf| Ok((bf, std::fs::File::open(i)?)))
                }
                _ => Err(std::io::Error::other("the rewrite for this sync failed")),
            };
            let (base_file, incr_file) = match files {
                Ok(f) => f,
                Err(e) => {
                    log::warning(&format!("SYNC failed for replica id={id}: {e}"));
                    self.server.kill_list.push(id);
                    continue;
                }
            };
            let len = base_file.metadata().map(|m| m.len()).unwrap_or(0);
            peer.state = PeerState::Online;
            // Nothing is acknowledged until the replica has loaded the snapshot and says so.
            peer.ack_offset = 0;
            peer.ack_time_ms = crate::clock::now_ms();
            peer.last_sent_ms = peer.ack_time_ms;
            let head = format!("${len}\r\n").into_bytes();
            if peer.legacy {
                // The snapshot (which a SYNC client skips), then the log since as plain commands.
                let mut since = vec![0u8; (end - origin) as usize];
                let read = std::os::unix::fs::FileExt::read_exact_at(&incr_file, &mut since, 0);
                Self::send_job(c, head, vec![(base_file, 0, len)]);
                if read.is_ok() {
                    c.out.extend_from_slice(&format::plain_commands(&since));
                }
            } else {
                Self::send_job(c, head, vec![(base_file, 0, len), (incr_file, 0, end - origin)]);
            }
            log::notice(&format!(
                "Synchronization with replica id={id} succeeded ({len} bytes of snapshot, {} bytes of log)",
                end - origin
            ));
        }
        self.release_replies();
    }

    /// REPLCONF ACK arrived: WAITing clients whose offset is acknowledged by enough
    /// replicas are answered.
    pub(super) fn serve_waits(&mut self) {
        self.server.repl.acked = false;
        let waiting = std::mem::take(&mut self.waiting_acks);
        for id in waiting {
            let target = self.server.clients.get(&id).and_then(|c| c.wait_target);
            let Some((offset, needed)) = target else { continue };
            let count = self.server.acked_replicas(offset);
            if count < needed {
                self.waiting_acks.push(id);
                continue;
            }
            self.wake_waiter(id, count);
        }
    }

    fn wake_waiter(&mut self, id: ClientId, count: usize) {
        let Some(mut client) = self.server.clients.remove(&id) else { return };
        client.wait_target = None;
        if let Some(blocked) = client.blocked.take() {
            self.unpark(id, &blocked);
            self.emit(&mut client, &Reply::Int(count as i64));
            self.resume_after_block(&mut client, blocked);
        }
        self.server.clients.insert(id, client);
    }

    /// `replicaof host port` in the configuration: the link starts once the log is loaded.
    pub(super) fn start_replication_from_config(&mut self) {
        let spec = self.server.config.get("replicaof").to_string();
        let words: Vec<&str> = spec.split_whitespace().collect();
        // A former replica's log started as a primary: the stream it copied is history now
        // (its secondary id, as Redis does), and the log is this server's own from here.
        let saved = self.aof.as_ref().and_then(|a| a.dir.manifest.replid.clone());
        if let (Some(saved), true) = (saved, words.is_empty()) {
            let offset = self.aof.as_ref().map_or(0, |a| a.offset());
            let repl = &mut self.server.repl;
            repl.offset = offset;
            repl.replid2 = saved;
            repl.second_offset = Some(offset);
            if let Some(aof) = self.aof.as_mut() {
                if let Err(e) = aof.dir.set_replid(None) {
                    log::warning(&format!("Can't update the AOF manifest: {e}"));
                }
                // Replicas may continue through the secondary id: an empty epoch, as after a
                // promotion.
                aof.epoch_scripts.clear();
            }
        }
        if let [host, port] = words[..] {
            match port.parse::<u16>() {
                Ok(port) => {
                    if let Err(e) = self.become_replica(host.to_string(), port) {
                        log::warning(&format!("Can't start replication from the configuration: {e}"));
                    }
                }
                Err(_) => log::warning(&format!("Invalid replicaof port '{port}'")),
            }
        }
    }

    /// REPLICAOF host port.
    fn replicaof(&mut self, client: &Client, host: String, port: u16) -> Reply {
        if let Some(m) = &self.server.repl.master {
            if m.host.eq_ignore_ascii_case(&host) && m.port == port {
                log::notice(
                    "REPLICAOF would result into synchronization with the master we are already connected with. No operation performed.",
                );
                return Reply::status("OK Already connected to specified master");
            }
        }
        if let Err(e) = self.become_replica(host.clone(), port) {
            return Reply::Error(e.into());
        }
        log::notice(&format!("REPLICAOF {host}:{port} enabled (user request from 'id={} addr={}')", client.id, client.addr));
        Reply::OK
    }

    /// Starts (or moves) the link to a primary. The data stays until a full sync replaces it.
    pub(super) fn become_replica(&mut self, host: String, port: u16) -> Result<(), String> {
        let Some(rt) = replication::runtime() else {
            return Err("ERR replication needs the server's network runtime".into());
        };
        self.stop_link();
        // Sub-replicas resync against the new history.
        self.disconnect_replicas();
        let was_primary = self.server.repl.master.is_none();
        if let Some(aof) = self.aof.as_mut() {
            // This server's own records must be whole in the log before the primary's stream
            // follows them.
            aof.flush().map_err(|e| format!("ERR the log cannot be written: {e}"))?;
            if was_primary {
                // The stream continues from where this server's own log is.
                self.master_db = aof.selected_db.unwrap_or(self.loaded_db);
                self.server.repl.offset = aof.offset();
            }
            aof.verbatim = true;
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
        let has_history = repl.offset > 0 || self.aof.as_ref().is_some_and(|a| a.dir.manifest.replid.is_some());
        if let Some(saved) = self.aof.as_ref().and_then(|a| a.dir.manifest.replid.clone()) {
            if was_primary && repl.offset > 0 {
                repl.replid = saved;
            }
        }
        let resume = has_history.then(|| (repl.replid.clone(), repl.offset));
        shared.applied.store(repl.offset, Ordering::Release);
        let sync_file = match self.aof.as_ref() {
            Some(a) => a.dir.file(&format!("temp-{}.replica-sync-{id}.vsnap", a.dir.prefix)),
            None => PathBuf::from(format!("temp-replica-sync-{}-{id}.vsnap", std::process::id())),
        };
        let tls = self.server.config.get("tls-replication") == "yes";
        let cfg = replication::link::LinkConfig {
            id,
            host: host.clone(),
            port,
            masterauth: self.server.config.get("masterauth").to_string(),
            masteruser: self.server.config.get("masteruser").to_string(),
            listening_port: self.server.config.get_int(if tls { "tls-port" } else { "port" }).clamp(0, 65535) as u16,
            sync_file,
            timeout: std::time::Duration::from_secs(self.server.config.get_int("repl-timeout").max(1) as u64),
            resume: resume.clone(),
            tls: tls.then(|| crate::tls::connector(&self.server.config).map(replication::link::LinkTls)),
        };
        let tx = self.wake_tx.clone().ok_or("ERR the executor has no request channel")?;
        rt.spawn(replication::link::run(cfg, shared.clone(), tx));
        repl.master = Some(MasterLink { host, port, id, shared, synced: false, resume, down_since_ms: crate::clock::now_ms() });
        log::set_role(b'S');
        Ok(())
    }

    /// REPLICAOF NO ONE: a primary again, continuing the same data under a new replication
    /// id (the old one stays as the secondary id, so the old primary's other replicas can
    /// continue partially from here).
    fn promote(&mut self, client: &Client) -> Reply {
        if self.server.repl.master.is_none() {
            return Reply::OK;
        }
        // The applied stream is written first, still as a copy (its own checkpoints): the
        // offset the old history ends at is then the log's end.
        if let Some(aof) = self.aof.as_mut() {
            if let Err(e) = aof.flush() {
                return Reply::Error(format!("ERR the log cannot be written: {e}").into());
            }
        }
        self.feed_replicas();
        self.stop_link();
        self.server.repl.master = None;
        let offset = self.stream_end();
        self.server.repl.offset = offset;
        self.server.repl.shift_replid(replication::new_replid(), offset);
        if let Some(aof) = self.aof.as_mut() {
            aof.verbatim = false;
            aof.selected_db = None;
            // An empty epoch: every script is logged as EVAL until its body is in this log
            // (sub-replicas continuing from here may not have every body this one loaded).
            aof.epoch_scripts.clear();
            if let Err(e) = aof.dir.set_replid(None) {
                log::warning(&format!("Can't update the AOF manifest: {e}"));
            }
            self.ks.log_deletions = true;
        }
        self.ks.passive_expiry = false;
        self.master_client = None;
        self.disconnect_replicas();
        log::set_role(b'M');
        log::notice(&format!(
            "Setting secondary replication ID to {}, valid up to offset: {}. New replication ID is {}",
            self.server.repl.replid2,
            offset + 1,
            self.server.repl.replid
        ));
        log::notice(&format!("MASTER MODE enabled (user request from 'id={} addr={}')", client.id, client.addr));
        Reply::OK
    }

    fn stop_link(&mut self) {
        if let Some(m) = &self.server.repl.master {
            m.shared.stop.store(true, Ordering::Release);
            m.shared.wake.notify_one();
        }
    }

    pub(super) fn disconnect_replicas(&mut self) {
        for id in std::mem::take(&mut self.server.repl.replicas) {
            self.server.kill_list.push(id);
        }
    }

    fn current_link(&self, link: u64) -> bool {
        self.server.repl.master.as_ref().is_some_and(|m| m.id == link)
    }

    /// A full sync's snapshot arrived: it replaces the data (as the base of a new log
    /// generation when the log is on, loaded through the same path as at start).
    pub(super) fn install_snapshot(&mut self, link: u64, replid: String, offset: u64, path: PathBuf) {
        if !self.current_link(link) {
            let _ = std::fs::remove_file(&path);
            return;
        }
        log::notice("MASTER <-> REPLICA sync: Flushing old data");
        // What clients are owed leaves before connections start answering LOADING.
        self.release_replies();
        let started = std::time::Instant::now();
        self.server.limits.loading.store(true, Ordering::Release);
        let result = self.load_snapshot(&replid, offset, &path);
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
        let repl = &mut self.server.repl;
        repl.replid = replid;
        repl.replid2 = NO_REPLID.to_string();
        repl.second_offset = None;
        repl.offset = offset;
        if let Some(b) = repl.backlog.as_mut() {
            b.reset(offset);
        }
        if let Some(m) = repl.master.as_mut() {
            m.synced = true;
        }
        log::notice(&format!("MASTER <-> REPLICA sync: Finished with success ({} ms)", started.elapsed().as_millis()));
        self.ack_wanted = true;
        self.ack_master();
    }

    fn load_snapshot(&mut self, replid: &str, offset: u64, path: &std::path::Path) -> Result<(), String> {
        // Whole and intact (frame and CRC-64) before anything is replaced: a bad transfer
        // leaves the data and the log as they were.
        let data = super::load::map_file(path)?;
        let (log_offset, _, _) = crate::aof::snapshot::check_frame(&data).map_err(|e| format!("{} at offset {}", e.reason, e.offset))?;
        if log_offset != offset {
            return Err(format!("the snapshot stands for offset {log_offset}, not the announced {offset}"));
        }
        if let Some(aof) = self.aof.as_mut() {
            aof.abandon_rewrite();
            let _ = aof.flush();
        }
        for db in self.ks.dbs.iter_mut() {
            db.clear();
        }
        if let Some(engine) = self.server.scripts.as_mut() {
            let _ = engine.reset();
        }
        self.stream_scripts.clear();
        match self.aof.take() {
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
                aof.epoch_scripts = self.stream_scripts.keys().cloned().collect();
                self.adopt_log(aof);
            }
            None => {
                let loaded = self.decode_snapshot(&data).map_err(|e| format!("{} at offset {}", e.reason, e.offset));
                drop(data);
                let _ = std::fs::remove_file(path);
                self.loaded_db = loaded?.stream_db as usize;
            }
        }
        self.master_db = self.loaded_db.min(self.ks.dbs.len() - 1);
        self.master_client = None;
        Ok(())
    }

    /// The primary accepted a partial resync (`replid`: its id, which may be new).
    pub(super) fn continue_stream(&mut self, link: u64, replid: String) {
        if !self.current_link(link) {
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
        if let Some(aof) = self.aof.as_mut() {
            if let Err(e) = aof.dir.set_replid(Some(id)) {
                log::warning(&format!("Can't update the AOF manifest: {e}"));
            }
        }
        if let Some(m) = self.server.repl.master.as_mut() {
            m.synced = true;
        }
        self.ack_wanted = true;
        self.ack_master();
    }

    /// Whole segments of the primary's stream: their records are applied as the log loader
    /// applies them (frozen script time, no expiry), then the bytes go to this server's own
    /// log unchanged.
    pub(super) fn apply_stream(&mut self, link: u64, offset: u64, data: Bytes) {
        let Some(m) = self.server.repl.master.as_ref() else { return };
        if m.id != link {
            // An older link's segment (its counter went with it).
            return;
        }
        m.shared.queued.fetch_sub(data.len() as u64, Ordering::AcqRel);
        if !m.synced {
            return;
        }
        // Applied exactly once, in order: a segment that does not start where the applied
        // stream ends is dropped, and the link starts again from the right place.
        let end = self.stream_end();
        if offset != end {
            log::warning(&format!("Replication stream segment at offset {offset}, expected {end}: reconnecting"));
            m.shared.reconnect.store(true, Ordering::Release);
            m.shared.wake.notify_one();
            return;
        }
        let mut master = self.master_client.take().unwrap_or_else(|| {
            let mut c = self.loader_client();
            c.db = self.master_db;
            c
        });
        self.loading = true;
        self.live_stream = true;
        format::replay_checked(&data, |rec| {
            let name = rec.argv[0];
            if let Some(err) = self.replay_record(&mut master, rec) {
                let name = String::from_utf8_lossy(name);
                log::warning(&format!("== CRITICAL == This replica could not apply '{name}' from its master: {err}"));
            }
        });
        self.loading = false;
        self.live_stream = false;
        self.now_ms = crate::clock::now_ms();
        self.master_db = master.db;
        self.master_client = Some(master);
        match self.aof.as_mut() {
            Some(aof) => aof.append_stream(&data),
            None => self.server.repl.offset += data.len() as u64,
        }
    }

    /// The link to the primary went down: the data stays. Returns where the next connection
    /// resumes: everything the old one handed over is applied by now (the request came
    /// through the same channel, after it).
    pub(super) fn link_down(&mut self, link: u64) -> Option<(String, u64)> {
        let end = self.stream_end();
        let replid = self.server.repl.replid.clone();
        let m = self.server.repl.master.as_mut().filter(|m| m.id == link)?;
        if m.synced {
            m.synced = false;
            m.down_since_ms = crate::clock::now_ms();
            m.resume = Some((replid, end));
        }
        m.resume.clone()
    }

    /// Where the applied stream ends: written, or buffered for the log's next write.
    fn stream_end(&self) -> u64 {
        self.aof.as_ref().map_or(self.server.repl.offset, |a| a.buffered_end())
    }

    /// After the log's flush: records how far the stream is applied and written (what the
    /// link acknowledges), and wakes the link when the primary asked for an acknowledgement.
    pub(super) fn ack_master(&mut self) {
        let repl = &self.server.repl;
        let Some(m) = repl.master.as_ref() else { return };
        if m.synced {
            m.shared.applied.store(repl.offset, Ordering::Release);
        }
        if std::mem::take(&mut self.ack_wanted) && m.synced {
            m.shared.ack_wanted.store(true, Ordering::Release);
            m.shared.wake.notify_one();
        }
    }

    /// A primary with a client in WAIT: each online replica gets a newline after the
    /// segments fed so far, which asks it to acknowledge them at once (a newline is not part
    /// of the stream: replicas skip it, offsets do not count it).
    pub(super) fn ask_for_acks(&mut self) {
        if !std::mem::take(&mut self.want_acks) {
            return;
        }
        for &id in &self.server.repl.replicas {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            if c.replica.as_ref().is_some_and(|p| p.state == PeerState::Online) {
                c.out.push(b'\n');
            }
        }
        // A client waits for these acknowledgements: no delay.
        self.flush_replica_output();
    }

    /// Once a second: keepalives to idle replicas, replicas that stopped acknowledging, a
    /// CLIENT KILL TYPE master.
    pub(super) fn replication_cron(&mut self) {
        let now = crate::clock::now_ms();
        if self.server.repl.kill_master {
            self.server.repl.kill_master = false;
            if let Some(m) = &self.server.repl.master {
                m.shared.reconnect.store(true, Ordering::Release);
                m.shared.wake.notify_one();
            }
        }
        if now - self.repl_cron_ms < 1000 || self.server.repl.replicas.is_empty() {
            return;
        }
        self.repl_cron_ms = now;
        let period = self.server.config.get_int("repl-ping-replica-period").max(1) * 1000;
        let timeout = self.server.config.get_int("repl-timeout").max(1) * 1000;
        let mut any = false;
        for &id in &self.server.repl.replicas {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            let Some(peer) = c.replica.as_mut() else { continue };
            // Waiting for its snapshot: keepalives only (its link reads them as such).
            let waiting = peer.state != PeerState::Online;
            if !waiting && !peer.legacy && now - peer.ack_time_ms > timeout {
                log::warning(&format!("Disconnecting timedout replica (streaming sync): id={id}"));
                self.server.kill_list.push(id);
                any = true;
                continue;
            }
            if now - peer.last_sent_ms >= period {
                // A bare newline: the replica skips it between segments (and acknowledges);
                // offsets do not count it.
                c.out.push(b'\n');
                peer.last_sent_ms = now;
                self.touched.push(id);
                any = true;
            }
        }
        if any {
            self.release_replies();
        }
    }

    /// A replica connection went away.
    pub(super) fn forget_replica(&mut self, id: ClientId) {
        self.server.repl.replicas.retain(|r| *r != id);
        self.waiting_acks.retain(|w| *w != id);
    }
}

enum PartialSource {
    Memory(Vec<u8>),
    /// The current incremental file and the position of the first byte wanted in it.
    File(std::fs::File, u64),
}
