//! Replication with redis-server, in both roles (the protocol is in `replication::plain`).
//!
//! - A redis-server replica of this server gets, at PSYNC, an RDB file of the data encoded
//!   now, then the plain feed: the log's segments as plain commands, with PINGs and
//!   `REPLCONF GETACK *` in the stream as Redis's primary sends them. Its acknowledgements
//!   are mapped back to log offsets, so WAIT, FAILOVER and min-replicas see one space.
//! - As a replica of redis-server, this server loads the RDB of a full sync, then runs the
//!   stream's commands as the primary's client and logs them as records of its own (its
//!   log is not a copy of the primary's stream, which has no checkpoints). It acknowledges
//!   the primary's offsets.

use bytes::Bytes;

use super::super::load::Applying;
use super::super::Executor;
use crate::aof::{format, snapshot, Aof};
use crate::config::P;
use crate::db::rdb_file;
use crate::log;
use crate::protocol::Reply;
use crate::replication::plain::{self, PlainFeed};
use crate::replication::{self, PeerState, Resume, NO_REPLID};
use crate::state::Client;

impl Executor {
    /// PSYNC/SYNC from a redis-server replica (or any peer that did not ask for the log's
    /// own stream): a partial resync from the plain feed's backlog, else a full sync with an
    /// RDB file encoded now. The log is flushed and fed already.
    pub(super) fn plain_psync(&mut self, client: &mut Client, replid: &str, offset: i64, legacy: bool) -> Reply {
        let log_end = self.server.repl.offset;
        let size = self.server.config.get_int(P::ReplBacklogSize).max(16 * 1024) as u64;
        let repl = &mut self.server.repl;
        let feed = repl.plain.get_or_insert_with(|| PlainFeed::new(log_end, log_end, size));
        let who = format!("{}:{}", replication::peer_ip(&client.addr), client.replconf_port);
        if !legacy && replid != "?" {
            let start = offset.saturating_sub(1);
            let known =
                replid == feed.replid || (replid == feed.replid2 && feed.second_offset.is_some_and(|s| start >= 0 && start as u64 <= s));
            match feed.backlog.since(start.max(0) as u64).filter(|_| known && start >= 0) {
                Some(bytes) => {
                    let at = feed.log_offset(start as u64);
                    repl.sync_partial_ok += 1;
                    log::notice(&format!(
                        "Partial resynchronization request from {who} accepted. Sending {} bytes of backlog starting from offset {offset}.",
                        bytes.len()
                    ));
                    client.out.extend_from_slice(format!("+CONTINUE {}\r\n", feed.replid).as_bytes());
                    client.out.extend_from_slice(&bytes);
                    self.attach_replica(client, PeerState::Online, at, legacy);
                    Self::mark_plain(client);
                    return Reply::NoReply;
                }
                None => {
                    log::notice(&format!(
                        "Partial resynchronization not accepted: Replication ID mismatch or lack of backlog (Replica asked for '{replid}' at {offset})"
                    ));
                    repl.sync_partial_err += 1;
                }
            }
        } else {
            log::notice(&format!("Replica {who} asks for synchronization"));
        }
        self.server.repl.sync_full += 1;
        // As Redis's disk-based sync: the file of a background save, with the stream since
        // its start held for the replica meanwhile. A replica joining a running save starts
        // where the first one did.
        let Some(now_at) = self.server.repl.plain.as_ref().map(|f| f.offset) else { return Reply::error("ERR no stream for the replica") };
        let (at, held) = match self.bgsave_for_sync(client.id, now_at) {
            Some((at, held)) => {
                log::notice(&format!("Starting BGSAVE for SYNC with target: disk, for {who} at offset {at}"));
                (at, Some(held))
            }
            None => (now_at, None),
        };
        if !legacy {
            let replid = self.server.repl.plain.as_ref().map_or("", |f| f.replid.as_str());
            client.out.extend_from_slice(format!("+FULLRESYNC {replid} {at}\r\n").as_bytes());
        }
        let waits = held.is_some();
        if !waits {
            // No background save can serve it (a log rewrite's walk, or a save started
            // before with no replica waiting on it): the file is encoded now.
            let started = std::time::Instant::now();
            let rdb = crate::commands::dataset_rdb(&self.ks, &self.server, true);
            log::notice(&format!(
                "Full resync of {who}: an RDB file of {} bytes encoded in {} ms, stream from offset {at}",
                rdb.len(),
                started.elapsed().as_millis()
            ));
            client.out.extend_from_slice(format!("${}\r\n", rdb.len()).as_bytes());
            client.out.extend_from_slice(&rdb);
        }
        let state = if waits { PeerState::WaitSnapshot } else { PeerState::Online };
        self.attach_replica(client, state, log_end, legacy);
        if let Some(peer) = client.replica.as_mut() {
            peer.plain = true;
            peer.held = held;
            peer.sync_offset = at;
            // Nothing is acknowledged until the replica has loaded the file and says so.
            peer.ack_offset = 0;
        }
        // The replica's client starts in database 0: the stream names the one it is in, to
        // every redis-server replica (it counts in the feed's offsets).
        let db = match self.log.stream() {
            Some(rec) if rec.verbatim => Some(self.replica.master_client.as_ref().map_or(self.replica.master_db, |c| c.db)),
            Some(rec) => rec.selected_db,
            None => None,
        };
        if let Some(db) = db {
            let mut select = Vec::new();
            format::encode_command(&mut select, &[b"SELECT".as_slice(), db.to_string().as_bytes()]);
            let select = Bytes::from(select);
            self.plain_to_replicas(select.clone());
            // This replica is not in the client table while its command runs.
            match client.replica.as_mut().and_then(|p| p.held.as_mut()) {
                Some(held) => held.extend_from_slice(&select),
                None => client.out.extend_from_slice(&select),
            }
        }
        Reply::NoReply
    }

    /// The background save a redis-server replica's full sync waits on, as (the feed offset
    /// its stream starts at, the stream held since): a save started now (`now_at`, nothing
    /// held yet), or the running one a replica already waits on (its start and its held
    /// stream). None: no save can serve it.
    fn bgsave_for_sync(&mut self, except: u64, now_at: u64) -> Option<(u64, Vec<u8>)> {
        if self.bgsaving() {
            return self.server.repl.replicas.iter().filter(|&&id| id != except).find_map(|id| {
                let p = self.server.clients.get(id)?.replica.as_ref()?;
                (p.plain && p.state == PeerState::WaitSnapshot).then(|| p.held.clone().map(|h| (p.sync_offset, h))).flatten()
            });
        }
        if self.rewriting() {
            return None;
        }
        self.start_bgsave().ok().map(|_| (now_at, Vec::new()))
    }

    /// A background save ended (`file`: the RDB file it wrote, None if it failed): the
    /// redis-server replicas waiting on it get the file, then the stream held since.
    pub(in crate::executor) fn bgsave_done_for_syncs(&mut self, file: Option<&std::path::Path>) {
        let waiting: Vec<u64> = self
            .server
            .repl
            .replicas
            .iter()
            .copied()
            .filter(|id| {
                self.server.clients.get(id).and_then(|c| c.replica.as_ref()).is_some_and(|p| p.plain && p.state == PeerState::WaitSnapshot)
            })
            .collect();
        for id in waiting {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            let opened = file.ok_or_else(|| "the background save failed".to_string()).and_then(|f| {
                let file = std::fs::File::open(f).map_err(|e| e.to_string())?;
                let len = file.metadata().map_err(|e| e.to_string())?.len();
                Ok((file, len))
            });
            let (file, len) = match opened {
                Ok(f) => f,
                Err(e) => {
                    log::warning(&format!("SYNC failed for replica id={id}: {e}"));
                    self.server.kill_list.push(id);
                    continue;
                }
            };
            let held = Self::send_held_snapshot(c, file, len);
            log::notice(&format!("Synchronization with replica id={id} succeeded ({len} bytes of RDB, {held} bytes of stream)"));
        }
        self.release_replies();
    }

    fn mark_plain(client: &mut Client) {
        if let Some(peer) = client.replica.as_mut() {
            peer.plain = true;
        }
    }

    /// The segments the log wrote, for the redis-server replicas: plain commands, with every
    /// EVALSHA as EVAL. Returns the bytes to send (None: no plain feed).
    pub(super) fn feed_plain(&mut self, segments: &[Bytes], log_end: u64) -> Option<Bytes> {
        let scripts = self.server.scripts.as_ref();
        let stream_scripts = &self.load.stream_scripts;
        let body_of = |sha: &[u8]| {
            scripts.and_then(|e| e.get(sha)).map(|s| s.body.clone()).or_else(|| {
                let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
                stream_scripts.get(&sha).cloned()
            })
        };
        let feed = self.server.repl.plain.as_mut()?;
        let bytes: Vec<u8> = segments.iter().flat_map(|s| plain::plain_commands(s, body_of)).collect();
        let bytes = Bytes::from(bytes);
        feed.push(bytes.clone(), log_end);
        Some(bytes)
    }

    /// Sends `bytes` (a PING, a GETACK, a SELECT) to every redis-server replica through
    /// the plain feed (they count in its offsets, as in Redis's stream); one waiting for its
    /// file holds them.
    pub(super) fn plain_to_replicas(&mut self, bytes: Bytes) {
        let log_end = self.server.repl.offset;
        let Some(feed) = self.server.repl.plain.as_mut() else { return };
        feed.push(bytes.clone(), log_end);
        let now = crate::clock::now_ms();
        for &id in &self.server.repl.replicas {
            let Some(c) = self.server.clients.get_mut(&id) else { continue };
            let Some(p) = c.replica.as_mut().filter(|p| p.plain) else { continue };
            match p.held.as_mut() {
                Some(held) => held.extend_from_slice(&bytes),
                None => {
                    p.last_sent_ms = now;
                    c.out.extend_from_slice(&bytes);
                    self.touched.push(id);
                }
            }
        }
    }

    /// A full sync from a redis-server primary: its RDB file replaces the data, and this
    /// server's log starts a new generation from it (records of its own follow).
    pub(super) fn load_rdb_sync(&mut self, replid: &str, offset: u64, path: &std::path::Path) -> Result<(), String> {
        let data = super::super::load::map_file(path)?;
        // Whole and intact (every value and the checksum) before anything is replaced: a bad
        // transfer leaves the data and the log as they were.
        rdb_file::parse(&data, self.ks.dbs.len(), &mut Check).map_err(|e| e.to_string())?;
        self.clear_for_sync();
        let loaded = self.load_rdb_bytes(&data, false);
        drop(data);
        let _ = std::fs::remove_file(path);
        let (keys, _) = loaded.map_err(|e| e.to_string())?;
        log::notice(&format!("MASTER <-> REPLICA sync: Loaded {keys} keys from the master's RDB file"));
        let log_end = self.stream_end();
        if let Some(old) = self.log.aof.take() {
            let (mut dir, policy) = (old.dir.clone(), old.policy);
            drop(old);
            // The data is the new primary's now: a server that cannot log it stops, as after
            // a Vermilion primary's snapshot (a restart loads the old log and syncs again).
            let fatal = |e: String| -> ! {
                log::warning(&format!("Failed to start the log from the MASTER's RDB file: {e}. Exiting."));
                std::process::exit(1)
            };
            let snap = snapshot::encode(&self.ks, &self.snapshot_scripting(), log_end, 0);
            let incr = dir.new_generation(&snap).unwrap_or_else(|e| fatal(format!("Can't write the log's new base: {e}")));
            let mut aof =
                Aof::open(dir, &incr, policy, log_end, self.log_waker()).unwrap_or_else(|e| fatal(format!("Can't open the log: {e}")));
            aof.rec.epoch_scripts = self.script_table().into_iter().map(|(sha, _)| sha).collect();
            if let Err(e) = aof.dir.set_replid(None) {
                log::warning(&format!("Can't update the AOF manifest: {e}"));
            }
            self.adopt_log(aof);
        }
        self.abandon_sync_job();
        if let Some(m) = self.log.mem.as_mut() {
            m.rec.buf.clear();
            m.rec.teed.clear();
        }
        self.follow_plain(true);
        // Sub-replicas resync: the data is another history now.
        let repl = &mut self.server.repl;
        repl.replid = replication::new_replid();
        repl.replid2 = NO_REPLID.to_string();
        repl.second_offset = None;
        repl.offset = log_end;
        repl.plain = None;
        if let Some(b) = repl.backlog.as_mut() {
            b.reset(log_end);
        }
        if let Some(m) = repl.master.as_mut() {
            m.upstream = Some((replid.to_string(), offset));
        }
        self.replica.master_db = 0;
        self.replica.master_client = None;
        Ok(())
    }

    /// The plain feed costs a conversion of every segment (and scripts logged whole): once
    /// no redis-server replica has been attached for `repl-backlog-ttl` seconds, it goes, as
    /// Redis frees its backlog (0 keeps it).
    pub(super) fn expire_plain_feed(&mut self, now_ms: i64) {
        let attached = self.server.replica_peers().any(|(_, p)| p.plain);
        let ttl_ms = self.server.config.get_int(P::ReplBacklogTtl).max(0) * 1000;
        let Some(feed) = self.server.repl.plain.as_mut() else { return };
        match feed.idle_since_ms {
            _ if attached => feed.idle_since_ms = None,
            None => feed.idle_since_ms = Some(now_ms),
            Some(since) if ttl_ms > 0 && now_ms - since >= ttl_ms => {
                log::notice("Dropping the plain replication stream: no redis-server replica for repl-backlog-ttl");
                self.server.repl.plain = None;
            }
            Some(_) => {}
        }
    }

    /// Whether this replica's log copies its primary's stream (a Vermilion primary) or holds
    /// records of its own (a redis-server primary's plain commands).
    pub(super) fn follow_plain(&mut self, plain: bool) {
        if let Some(aof) = self.log.aof.as_mut() {
            aof.rec.verbatim = !plain;
            aof.rec.selected_db = None;
        }
        if let Some(m) = self.log.mem.as_mut() {
            m.rec.verbatim = !plain;
            m.rec.selected_db = None;
        }
    }

    /// Whole commands of a redis-server primary's stream: run as its client, as the loader
    /// runs records, and logged as this server's own records (a MULTI block as one).
    pub(in crate::executor) fn apply_commands(&mut self, link: u64, offset: u64, len: u64, commands: Vec<Vec<Bytes>>) {
        let at = self.plain_resume().map(|r| r.offset);
        if !self.accept_stream(link, offset, len, at) {
            return;
        }
        let mut master = self.master_client();
        self.load.applying = Applying::LiveStream;
        let mut in_multi = false;
        for argv in commands {
            let name = &argv[0];
            if name.eq_ignore_ascii_case(b"multi") {
                in_multi = true;
                continue;
            }
            if name.eq_ignore_ascii_case(b"exec") {
                in_multi = false;
                self.commit_pending();
                continue;
            }
            // The stream's acknowledgement request (the link answers it once this is written).
            if name.eq_ignore_ascii_case(b"replconf") {
                if argv.get(1).is_some_and(|a| a.eq_ignore_ascii_case(b"getack")) {
                    self.replica.ack_wanted = true;
                }
                continue;
            }
            // Run as any command: what changed data is logged in the form its handler states
            // (`recording` holds for a redis-server primary's stream); PING and SELECT log
            // nothing.
            let rec = format::Record { argv: argv.iter().map(|a| &a[..]).collect(), time_ms: None, offset: 0 };
            if let Some(err) = self.replay_record(&mut master, rec) {
                log::warning(&format!(
                    "== CRITICAL == This replica could not apply '{}' from its master: {err}",
                    String::from_utf8_lossy(name)
                ));
            }
            if !in_multi {
                self.commit_pending();
            }
        }
        self.commit_pending();
        self.load.applying = Applying::Clients;
        self.now_ms = crate::clock::now_ms();
        self.replica.master_db = master.db;
        self.replica.master_client = Some(master);
        if let Some(u) = self.server.repl.master.as_mut().and_then(|m| m.upstream.as_mut()) {
            u.1 += len;
        }
    }

    /// A promotion of a replica of redis-server: redis-server replicas of the old primary
    /// (the old primary itself, after a FAILOVER) continue from its offset under its id.
    pub(super) fn continue_plain_history(&mut self, upstream: Option<(String, u64)>) {
        let Some((replid, offset)) = upstream else { return };
        let size = self.server.config.get_int(P::ReplBacklogSize).max(16 * 1024) as u64;
        let mut feed = PlainFeed::new(self.server.repl.offset, offset, size);
        feed.replid2 = replid;
        feed.second_offset = Some(offset);
        self.server.repl.plain = Some(feed);
    }

    /// Where a redis-server primary's stream resumes (None: this link follows a Vermilion
    /// primary).
    pub(super) fn plain_resume(&self) -> Option<Resume> {
        let (replid, offset) = self.server.repl.master.as_ref()?.upstream.clone()?;
        Some(Resume { replid, offset, plain: true })
    }
}

/// An RDB file's dry run: parsed whole, kept nowhere.
struct Check;

impl rdb_file::Sink for Check {
    fn function(&mut self, _code: Vec<u8>) -> Result<(), String> {
        Ok(())
    }

    fn key(&mut self, _: usize, _: Vec<u8>, _: crate::db::rdb::Decoded, _: Option<i64>, _: rdb_file::Hint) -> Result<(), String> {
        Ok(())
    }
}
