//! Replication, the primary's half: serving PSYNC (partial from the backlog or the log's
//! files, full from a log rewrite's base snapshot), feeding replicas the segments the log
//! writes, WAIT, and the keepalives and timeouts of the replication cron.

use std::sync::atomic::Ordering;

use super::super::Executor;
use crate::config::P;
use crate::log;
use crate::protocol::Reply;
use crate::replication::{self, Backlog, Peer, PeerState};
use crate::state::{Client, ClientId, ClientOutput};

/// How long stream bytes may wait in a replica's output before they are written, and how
/// many make them go at once.
const REPL_FLUSH_DELAY: std::time::Duration = std::time::Duration::from_micros(1000);
const REPL_FLUSH_BYTES: usize = 64 * 1024;

/// A primary's side of its replicas.
#[derive(Default)]
pub(in crate::executor) struct PrimaryFeed {
    /// Clients parked in WAIT.
    pub waiting_acks: Vec<ClientId>,
    /// A client parked in WAIT: replicas are asked to acknowledge after the next flush.
    pub want_acks: bool,
    /// Stream bytes wait in replicas' outputs until then (see `feed_replicas`).
    pub flush_due: Option<std::time::Instant>,
    /// When the replication cron last ran (ms).
    pub cron_ms: i64,
    /// The snapshot a full sync gets from a server without the log (see memory_sync.rs).
    pub sync_job: Option<crate::aof::rewrite::SnapshotJob>,
}

impl Executor {
    /// PSYNC / SYNC from a connection that becomes a replica.
    pub(super) fn psync(&mut self, client: &mut Client, replid: &str, offset: i64, legacy: bool) -> Reply {
        if client.replica.is_some() {
            // Already a replica: a second PSYNC is ignored, as Redis does.
            return Reply::NoReply;
        }
        if self.server.repl.failover.is_some() {
            return Reply::error("NOMASTERLINK Can't SYNC while failing over");
        }
        if self.server.repl.master.as_ref().is_some_and(|m| !m.synced) {
            return Reply::error("NOMASTERLINK Can't SYNC while not connected with my master");
        }
        // Without the log the stream starts now, in memory.
        self.start_memory_stream();
        // Everything buffered is written first: the log's end is the stream's end.
        self.flush_log();
        self.feed_replicas();
        if let Some(err) = self.log.aof.as_ref().and_then(|a| a.write_error.as_ref()) {
            return Reply::Error(format!("ERR the log cannot be written: {err}").into());
        }
        let end = self.server.repl.offset;
        if self.server.repl.backlog.is_none() {
            let size = self.server.config.get_int(P::ReplBacklogSize).max(16 * 1024) as u64;
            self.server.repl.backlog = Some(Backlog::new(end, size));
        }
        if let Some(rec) = self.log.stream_mut() {
            rec.tee = true;
        }
        if legacy || !client.capa_vermilion {
            return self.plain_psync(client, replid, offset, legacy);
        }
        let who = format!("{}:{}", replication::peer_ip(&client.addr), client.replconf_port);
        if !replid.is_empty() && replid != "?" {
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
        if self.log.aof.is_none() {
            return self.memory_full_sync(client);
        }
        // Full sync: the base snapshot of a log rewrite (the running one, or a new one).
        if !self.rewriting() {
            if let Err(e) = self.rewrite_aof() {
                return Reply::Error(e.into());
            }
        }
        let Some(origin) = self.log.aof.as_ref().and_then(|a| a.rewrite.as_ref()).map(|r| r.origin) else {
            return Reply::error("ERR the snapshot for the full sync could not be started");
        };
        self.server.repl.sync_full += 1;
        log::notice(&format!("Starting a snapshot for SYNC with target: the log rewrite at offset {origin}"));
        client.out.extend_from_slice(format!("+FULLRESYNC {} {origin}\r\n", self.server.repl.replid).as_bytes());
        self.attach_replica(client, PeerState::WaitSnapshot, origin, false);
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
        let aof = self.log.aof.as_ref().ok_or("no log")?;
        if start >= aof.incr_origin {
            if let Some(incr) = aof.dir.manifest.incrs.last() {
                if let Ok(file) = std::fs::File::open(aof.dir.file(&incr.name)) {
                    return Ok(PartialSource::File(file, start - aof.incr_origin));
                }
            }
        }
        Err(format!("Unable to partial resync with replica for lack of backlog (Replica request was: {offset})."))
    }

    pub(super) fn attach_replica(&mut self, client: &mut Client, state: PeerState, offset: u64, legacy: bool) {
        let now = crate::clock::now_ms();
        client.replica = Some(Peer {
            state,
            ack_offset: offset,
            ack_time_ms: now,
            last_sent_ms: now,
            sync_offset: offset,
            legacy,
            held: None,
            plain: false,
        });
        client.flags.replica.store(true, Ordering::Release);
        if !self.server.repl.replicas.contains(&client.id) {
            self.server.repl.replicas.push(client.id);
        }
    }

    /// Sends what the client's output holds, then a file job after it (nothing overtakes the
    /// job: one byte stands for it in `task_pending` until the task has written it).
    pub(super) fn send_job(client: &mut Client, head: Vec<u8>, parts: Vec<(std::fs::File, u64, u64)>) {
        Self::send_output(client, crate::state::OutputLimit::default());
        client.flags.task_pending.fetch_add(1, Ordering::AcqRel);
        let _ = client.tx.send(ClientOutput::Stream { head, parts });
    }

    /// A replica that waited for its snapshot gets it (`len` bytes of `file`), then the
    /// stream held for it since; returns the held stream's length.
    pub(super) fn send_held_snapshot(c: &mut Client, file: std::fs::File, len: u64) -> usize {
        let Some(peer) = c.replica.as_mut() else { return 0 };
        let held = peer.held.take().unwrap_or_default();
        peer.state = PeerState::Online;
        // Nothing is acknowledged until the replica has loaded the snapshot and says so.
        peer.ack_offset = 0;
        peer.ack_time_ms = crate::clock::now_ms();
        peer.last_sent_ms = peer.ack_time_ms;
        Self::send_job(c, format!("${len}\r\n").into_bytes(), vec![(file, 0, len)]);
        c.out.extend_from_slice(&held);
        held.len()
    }

    /// The segments the log wrote since the last call go to the backlog and to every online
    /// replica's output (released with the other replies).
    pub(in crate::executor) fn feed_replicas(&mut self) {
        let (offset, rec) = match (self.log.aof.as_mut(), self.log.mem.as_mut()) {
            (Some(aof), _) => (aof.offset(), &mut aof.rec),
            (None, Some(m)) => (m.offset, &mut m.rec),
            (None, None) => return,
        };
        self.server.repl.offset = offset;
        if rec.teed.is_empty() {
            return;
        }
        let segments = std::mem::take(&mut rec.teed);
        if let Some(backlog) = self.server.repl.backlog.as_mut() {
            for s in &segments {
                backlog.push(s.clone());
            }
        }
        let now = self.now_ms;
        let mut full = false;
        // redis-server replicas (and SYNC clients: redis-cli --replica) get plain commands.
        let plain = self.feed_plain(&segments, offset);
        for &id in &self.server.repl.replicas {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            let Some(peer) = c.replica.as_mut() else { continue };
            if let Some(held) = peer.held.as_mut() {
                // Waiting for its snapshot: the stream since goes after it, within the
                // replica class's hard output limit (as Redis counts a syncing replica's).
                match &plain {
                    Some(plain) if peer.plain => held.extend_from_slice(plain),
                    _ => segments.iter().for_each(|s| held.extend_from_slice(s)),
                }
                let hard = self.server.settings.output_limits.replica.hard;
                if hard > 0 && held.len() as u64 > hard {
                    log::warning(&format!("Client id={id} scheduled to be closed ASAP for overcoming of output buffer limits."));
                    held.clear();
                    self.server.kill_list.push(id);
                }
                continue;
            }
            if peer.state != PeerState::Online {
                continue;
            }
            peer.last_sent_ms = now;
            if peer.plain {
                c.out.extend_from_slice(plain.as_deref().unwrap_or_default());
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
        } else if self.feed.flush_due.is_none() {
            self.feed.flush_due = Some(std::time::Instant::now() + REPL_FLUSH_DELAY);
        }
    }

    /// Writes what waits in replicas' outputs (the stream, keepalives, acknowledgement
    /// requests); a replica past its output limit is disconnected.
    pub(in crate::executor) fn flush_replica_output(&mut self) {
        self.feed.flush_due = None;
        let limit = self.server.settings.output_limits.replica;
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
    pub(in crate::executor) fn complete_full_syncs(&mut self, rewrite_ok: bool) {
        let waiting = self.waiting_for_snapshot(false);
        if waiting.is_empty() || self.rewriting() {
            return;
        }
        self.flush_log();
        self.feed_replicas();
        let Some(aof) = self.log.aof.as_ref() else { return };
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
            Self::send_job(c, head, vec![(base_file, 0, len), (incr_file, 0, end - origin)]);
            log::notice(&format!(
                "Synchronization with replica id={id} succeeded ({len} bytes of snapshot, {} bytes of log)",
                end - origin
            ));
        }
        self.release_replies();
    }

    /// The replicas waiting for a full sync's snapshot: from the log's rewrite, or (`held`)
    /// from a walk without the log.
    pub(super) fn waiting_for_snapshot(&self, held: bool) -> Vec<ClientId> {
        let waits = |id: &ClientId| {
            let peer = self.server.clients.get(id).and_then(|c| c.replica.as_ref());
            peer.is_some_and(|p| p.state == PeerState::WaitSnapshot && p.held.is_some() == held && !p.plain)
        };
        self.server.repl.replicas.iter().copied().filter(waits).collect()
    }

    /// REPLCONF ACK arrived: WAITing clients whose offset is acknowledged by enough
    /// replicas are answered.
    pub(in crate::executor) fn serve_waits(&mut self) {
        self.server.repl.acked = false;
        let waiting = std::mem::take(&mut self.feed.waiting_acks);
        for id in waiting {
            let target = self.server.clients.get(&id).and_then(|c| c.wait_target);
            let Some((offset, needed)) = target else { continue };
            let count = self.server.acked_replicas(offset);
            if count < needed {
                self.feed.waiting_acks.push(id);
                continue;
            }
            self.wake_waiter(id, count);
        }
    }

    pub(super) fn wake_waiter(&mut self, id: ClientId, count: usize) {
        let Some(mut client) = self.server.clients.remove(&id) else { return };
        client.wait_target = None;
        if let Some(blocked) = client.blocked.take() {
            self.unpark(id, &blocked);
            self.emit(&mut client, &Reply::Int(count as i64));
            self.resume_after_block(&mut client, blocked);
        }
        self.server.clients.insert(id, client);
    }

    pub(in crate::executor) fn disconnect_replicas(&mut self) {
        for id in std::mem::take(&mut self.server.repl.replicas) {
            self.server.kill_list.push(id);
        }
    }

    /// A primary with a client in WAIT: each online replica gets a newline after the
    /// segments fed so far, which asks it to acknowledge them at once (a newline is not part
    /// of the stream: replicas skip it, offsets do not count it).
    pub(in crate::executor) fn ask_for_acks(&mut self) {
        if !std::mem::take(&mut self.feed.want_acks) {
            return;
        }
        for &id in &self.server.repl.replicas {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            if c.replica.as_ref().is_some_and(|p| p.state == PeerState::Online && !p.plain) {
                c.out.push(b'\n');
            }
        }
        self.plain_to_replicas(bytes::Bytes::from_static(crate::replication::plain::GETACK));
        // A client waits for these acknowledgements: no delay.
        self.flush_replica_output();
    }

    /// Once a second: keepalives to idle replicas, replicas that stopped acknowledging, a
    /// CLIENT KILL TYPE master.
    pub(in crate::executor) fn replication_cron(&mut self) {
        let now = crate::clock::now_ms();
        if self.server.repl.kill_master {
            self.server.repl.kill_master = false;
            if let Some(m) = &self.server.repl.master {
                m.shared.reconnect.store(true, Ordering::Release);
                m.shared.wake.notify_one();
            }
        }
        self.expire_plain_feed(now);
        if now - self.feed.cron_ms < 1000 || self.server.repl.replicas.is_empty() {
            return;
        }
        self.feed.cron_ms = now;
        let period = self.server.config.get_int(P::ReplPingReplicaPeriod).max(1) * 1000;
        let timeout = self.server.config.get_int(P::ReplTimeout).max(1) * 1000;
        let mut any = false;
        let mut plain_idle = false;
        for &id in &self.server.repl.replicas {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            let Some(peer) = c.replica.as_mut() else { continue };
            if peer.plain && peer.held.is_some() {
                // Waiting for its RDB file: a newline, which a redis-server replica reads as
                // a keepalive before the file (not part of the stream).
                if now - peer.last_sent_ms >= period {
                    c.out.push(b'\n');
                    peer.last_sent_ms = now;
                    self.touched.push(id);
                    any = true;
                }
                continue;
            }
            if peer.plain {
                // A redis-server replica gets PING in the stream (it counts in the offsets).
                plain_idle |= !peer.legacy && now - peer.last_sent_ms >= period;
                if !peer.legacy && now - peer.ack_time_ms > timeout {
                    log::warning(&format!("Disconnecting timedout replica (streaming sync): id={id}"));
                    self.server.kill_list.push(id);
                    any = true;
                }
                continue;
            }
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
        if plain_idle {
            self.plain_to_replicas(bytes::Bytes::from_static(crate::replication::plain::PING));
            any = true;
        }
        if any {
            self.release_replies();
        }
    }

    /// A replica connection went away.
    pub(in crate::executor) fn forget_replica(&mut self, id: ClientId) {
        self.server.repl.replicas.retain(|r| *r != id);
        self.feed.waiting_acks.retain(|w| *w != id);
    }
}

enum PartialSource {
    Memory(Vec<u8>),
    /// The current incremental file and the position of the first byte wanted in it.
    File(std::fs::File, u64),
}
