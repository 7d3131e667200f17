//! Replication: the stream is the log.
//!
//! A primary's replication stream is its incremental log, byte for byte: the segments the
//! executor writes to the log (records closed by a `#C:` checkpoint) are what replicas
//! receive, and the replication offset is the log offset. A replica applies whole,
//! checksum-verified segments through the same path as AOF loading and appends them,
//! unchanged, to its own log, so its offsets are its primary's and its sub-replicas get the
//! same bytes.
//!
//! This module holds the state both roles keep ([`ReplState`], on the executor), the
//! in-memory backlog ([`Backlog`]) and, in [`link`], the replica's connection to its primary
//! (a tokio task at the edge). The executor side (PSYNC, feeding replicas, applying the
//! stream, WAIT) is `executor/replicate.rs`.

pub mod backlog;
pub mod link;
pub mod plain;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

pub use backlog::Backlog;

/// The tokio runtime replica links run on (set by the binary; without it REPLICAOF fails).
static RUNTIME: OnceLock<tokio::runtime::Handle> = OnceLock::new();

pub fn set_runtime(handle: tokio::runtime::Handle) {
    let _ = RUNTIME.set(handle);
}

pub fn runtime() -> Option<&'static tokio::runtime::Handle> {
    RUNTIME.get()
}

/// A fresh 40-hex-digit replication id.
pub fn new_replid() -> String {
    crate::util::random_hex(40)
}

pub const NO_REPLID: &str = "0000000000000000000000000000000000000000";

/// Where a replica connection of a primary stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeerState {
    /// Full sync asked for: waiting for the snapshot (a log rewrite) to be ready.
    WaitSnapshot,
    /// Receiving the stream (the snapshot or backlog may still be on its way).
    Online,
}

/// What a primary knows of one replica (on the replica's `Client`).
#[derive(Debug, Clone)]
pub struct Peer {
    pub state: PeerState,
    /// The offset the replica last acknowledged (REPLCONF ACK).
    pub ack_offset: u64,
    pub ack_time_ms: i64,
    /// When stream bytes (or a keepalive) last went to it.
    pub last_sent_ms: i64,
    /// The snapshot's offset during a full sync.
    pub sync_offset: u64,
    /// SYNC rather than PSYNC: no `+FULLRESYNC` line.
    pub legacy: bool,
    /// A full sync from a server without the log: the stream since the snapshot's offset,
    /// held until the snapshot has gone (None: the log's files serve the sync).
    pub held: Option<Vec<u8>>,
    /// A redis-server replica (it did not say `REPLCONF capa vermilion`): it gets an RDB
    /// file and the plain stream ([`plain::PlainFeed`]). `ack_offset` is still a log offset.
    pub plain: bool,
}

pub use crate::conn::Resume;

/// The replica link's state, as INFO and ROLE show it.
pub const LINK_CONNECT: u8 = 0;
pub const LINK_CONNECTING: u8 = 1;
pub const LINK_SYNC: u8 = 2;
pub const LINK_CONNECTED: u8 = 3;

/// What the executor and a replica's link task share.
#[derive(Debug, Default)]
pub struct LinkShared {
    pub state: AtomicU8,
    /// Stream bytes handed to the executor and not applied yet (the link's backpressure).
    pub queued: AtomicU64,
    /// The offset applied and written: acknowledged to the primary.
    pub applied: AtomicU64,
    /// Wall-clock ms of the last bytes from the primary.
    pub last_io_ms: AtomicI64,
    /// The link must end (REPLICAOF elsewhere or NO ONE).
    pub stop: AtomicBool,
    /// Drop the connection and reconnect (CLIENT KILL TYPE master).
    pub reconnect: AtomicBool,
    /// The primary asked for an acknowledgement (a newline between segments: a client waits
    /// in WAIT); the executor wakes the task once it applied what came before it.
    pub ack_wanted: AtomicBool,
    /// Wakes the task: an acknowledgement to send, or a stop.
    pub wake: tokio::sync::Notify,
}

impl LinkShared {
    pub fn state_name(&self) -> &'static str {
        match self.state.load(Ordering::Acquire) {
            LINK_CONNECTING => "connecting",
            LINK_SYNC => "sync",
            LINK_CONNECTED => "connected",
            _ => "connect",
        }
    }
}

/// This server's side of a primary it replicates.
#[derive(Debug)]
pub struct MasterLink {
    pub host: String,
    pub port: u16,
    /// Generation of the link: messages from an older task are ignored.
    pub id: u64,
    pub shared: Arc<LinkShared>,
    /// The stream is flowing (a full sync installed or a CONTINUE accepted).
    pub synced: bool,
    /// Where the next connection resumes before any sync succeeded on this link (after one,
    /// it is where the applied stream ends); None asks for a full sync.
    pub resume: Option<Resume>,
    /// The primary is a redis-server: its history and the offset applied in its stream
    /// (this server's log has offsets of its own).
    pub upstream: Option<(String, u64)>,
    /// When the link last went down (INFO master_link_down_since_seconds).
    pub down_since_ms: i64,
}

/// Replication state of the server, in either role.
#[derive(Debug)]
pub struct ReplState {
    /// The history this server's data belongs to (a replica takes its primary's).
    pub replid: String,
    /// The previous history, continued by `replid` from `second_offset` (PSYNC2).
    pub replid2: String,
    pub second_offset: Option<u64>,
    /// The stream offset: the log offset of everything written (a primary) or applied (a
    /// replica).
    pub offset: u64,
    pub backlog: Option<Backlog>,
    /// Clients that asked for the stream (PSYNC/SYNC), in the order they did.
    pub replicas: Vec<crate::conn::ClientId>,
    pub master: Option<MasterLink>,
    pub next_link_id: u64,
    pub sync_full: u64,
    pub sync_partial_ok: u64,
    pub sync_partial_err: u64,
    /// A REPLCONF ACK arrived: WAITing clients may be answered.
    pub acked: bool,
    /// CLIENT KILL TYPE master was asked for.
    pub kill_master: bool,
    /// A FAILOVER in progress.
    pub failover: Option<Failover>,
    /// The stream redis-server replicas share (from the first one's PSYNC on).
    pub plain: Option<plain::PlainFeed>,
}

impl Default for ReplState {
    fn default() -> Self {
        ReplState {
            replid: new_replid(),
            replid2: NO_REPLID.to_string(),
            second_offset: None,
            offset: 0,
            backlog: None,
            replicas: Vec::new(),
            master: None,
            next_link_id: 1,
            sync_full: 0,
            sync_partial_ok: 0,
            sync_partial_err: 0,
            acked: false,
            kill_master: false,
            failover: None,
            plain: None,
        }
    }
}

impl ReplState {
    /// The history and offset INFO and ROLE show: a redis-server primary's (whose offsets
    /// Sentinel and the primary compare), else this server's own.
    pub fn shown(&self) -> (&str, u64) {
        match self.master.as_ref().and_then(|m| m.upstream.as_ref()) {
            Some((replid, offset)) => (replid, *offset),
            None => (&self.replid, self.offset),
        }
    }

    /// Starts a new history that continues the current one at `offset` (a promotion).
    pub fn shift_replid(&mut self, new_id: String, offset: u64) {
        self.replid2 = std::mem::replace(&mut self.replid, new_id);
        self.second_offset = Some(offset);
    }
}

/// The IP part of a client's `ip:port` address (INFO's and ROLE's replica lines).
pub fn peer_ip(addr: &str) -> &str {
    addr.rsplit_once(':').map_or(addr, |(ip, _)| ip)
}

/// Where a FAILOVER stands (INFO's `master_failover_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailoverState {
    /// Writes are paused; waiting for a replica to acknowledge the whole stream.
    WaitForSync,
    /// This server follows the target and asked it to take over (PSYNC ... FAILOVER).
    InProgress,
}

/// A FAILOVER in progress: the primary hands its role to one of its replicas (Redis 7.0's
/// coordinated failover). Writes wait while it lasts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failover {
    pub state: FailoverState,
    /// The replica named by `TO host port`, or the first to catch up.
    pub target: Option<(String, u16)>,
    /// Wall-clock ms after which the wait ends (TIMEOUT), by failing over anyway (FORCE) or
    /// by aborting.
    pub deadline_ms: Option<i64>,
    pub force: bool,
    /// The generation of the link to the target once in progress.
    pub link: Option<u64>,
}

impl Failover {
    pub fn state_name(f: Option<&Failover>) -> &'static str {
        match f.map(|f| f.state) {
            None => "no-failover",
            Some(FailoverState::WaitForSync) => "waiting-for-sync",
            Some(FailoverState::InProgress) => "failover-in-progress",
        }
    }
}

/// Work only the executor can do, asked for by a replication command's handler.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplRequest {
    /// PSYNC (`legacy`: SYNC). `offset` is the first byte wanted, as Redis counts (our
    /// offset + 1); -1 with replid "?" asks for a full sync. `failover`: the primary asks
    /// this replica to take over first (`PSYNC replid offset FAILOVER`).
    Psync { replid: String, offset: i64, legacy: bool, failover: bool },
    /// REPLICAOF host port, or NO ONE (None).
    ReplicaOf(Option<(String, u16)>),
    /// FAILOVER: the wait begins (the handler checked the arguments and set the state).
    FailoverStart,
    /// FAILOVER ABORT.
    FailoverAbort,
}
