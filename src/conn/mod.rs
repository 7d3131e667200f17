//! The contract between the connection tasks (`server.rs`, the replica's link) and the
//! executor: the messages they send it (`Request`), what it sends back (`ClientOutput`), the
//! per-connection flags and server-wide limits they share as atomics, and the answers a
//! connection gives by itself while the executor is busy (`busy.rs`). Both sides depend on
//! this module and not on each other.

mod busy;
pub mod read;

pub use busy::{busy_answers, busy_answers_outside_multi};

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;
use crate::config::P;

pub type ClientId = u64;

/// What the executor sends a connection task.
#[derive(Debug)]
pub enum ClientOutput {
    /// Encoded replies the executor could not write to the socket itself (it would have
    /// blocked): the connection task writes them, in order, then lowers `task_pending`.
    Replies(Vec<u8>),
    /// Write these bytes, then close the connection.
    Close(Vec<u8>),
    /// Replication: write `head`, then each (file, start, length) range of the log's files
    /// (a snapshot, a stretch of incremental log). The executor counts one byte in
    /// `task_pending` for it, so that nothing overtakes it; the task takes it off when done.
    Stream { head: Vec<u8>, parts: Vec<(std::fs::File, u64, u64)> },
}

/// Settings connection tasks need without asking the executor (atomics, updated by it).
#[derive(Debug)]
pub struct SharedLimits {
    pub proto_max_bulk_len: AtomicI64,
    pub client_query_buffer_limit: AtomicU64,
    pub maxclients: AtomicU64,
    pub connected: AtomicU64,
    /// Whether a password is set: a new connection starts unauthenticated only then, and the
    /// connection task must know before its first read (it picks the frame limits).
    pub auth_required: AtomicBool,
    /// Protected mode is on and the default user has no password: only loopback clients.
    pub protected: AtomicBool,
    /// The dataset is being loaded: connection tasks answer LOADING.
    pub loading: AtomicBool,
    /// Loading progress, for INFO during loading (answered by the connection tasks).
    pub loading_start_secs: AtomicI64,
    pub loading_total_bytes: AtomicU64,
    pub loading_loaded_bytes: AtomicU64,
    /// INFO's total_net_input_bytes and total_reads_processed: counted by the connection
    /// tasks, which do the reads.
    pub net_input_bytes: AtomicU64,
    pub reads_processed: AtomicU64,
}

impl SharedLimits {
    /// INFO's persistence section while loading (the executor is busy replaying; the
    /// connection task answers from these counters).
    pub fn loading_info(&self) -> String {
        let total = self.loading_total_bytes.load(Ordering::Relaxed);
        let loaded = self.loading_loaded_bytes.load(Ordering::Relaxed).min(total);
        let start = self.loading_start_secs.load(Ordering::Relaxed);
        let elapsed = (crate::clock::now_ms() / 1000 - start).max(0);
        let perc = if total > 0 { loaded as f64 * 100.0 / total as f64 } else { 0.0 };
        let eta = if loaded > 0 { ((total - loaded) as f64 * elapsed as f64 / loaded as f64) as i64 } else { 1 };
        format!(
            "# Persistence\r\nloading:1\r\nasync_loading:0\r\nloading_start_time:{start}\r\nloading_total_bytes:{total}\r\nloading_rdb_used_mem:0\r\nloading_loaded_bytes:{loaded}\r\nloading_loaded_perc:{perc:.2}\r\nloading_eta_seconds:{eta}\r\n"
        )
    }

    pub fn from_config(config: &Config) -> Self {
        SharedLimits {
            proto_max_bulk_len: AtomicI64::new(config.get_int(P::ProtoMaxBulkLen)),
            client_query_buffer_limit: AtomicU64::new(config.get_int(P::ClientQueryBufferLimit) as u64),
            maxclients: AtomicU64::new(config.get_int(P::Maxclients) as u64),
            connected: AtomicU64::new(0),
            auth_required: AtomicBool::new(!config.get(P::Requirepass).is_empty()),
            protected: AtomicBool::new(false),
            // Set from the start when there is a log to load: connections accepted before
            // the executor begins loading must already get LOADING, not wait behind it.
            loading: AtomicBool::new(config.get(P::Appendonly) == "yes"),
            loading_start_secs: AtomicI64::new(0),
            loading_total_bytes: AtomicU64::new(0),
            loading_loaded_bytes: AtomicU64::new(0),
            net_input_bytes: AtomicU64::new(0),
            reads_processed: AtomicU64::new(0),
        }
    }

    pub fn refresh(&self, config: &Config) {
        self.proto_max_bulk_len.store(config.get_int(P::ProtoMaxBulkLen), Ordering::Relaxed);
        self.client_query_buffer_limit.store(config.get_int(P::ClientQueryBufferLimit) as u64, Ordering::Relaxed);
        self.maxclients.store(config.get_int(P::Maxclients) as u64, Ordering::Relaxed);
    }
}

/// Per-connection flags the connection task reads (the executor writes them).
#[derive(Debug, Default)]
pub struct ConnFlags {
    /// False while a password is required and the client has not authenticated.
    pub authenticated: AtomicBool,
    /// Bytes waiting in the connection's query buffer (for CLIENT LIST `qbuf`).
    pub qbuf: AtomicU64,
    /// The query buffer's allocated size (CLIENT LIST `qbuf-free` is what is not used).
    pub qbuf_cap: AtomicU64,
    /// The arguments of a command read in part (CLIENT LIST `argv-mem` while it waits).
    pub argv_partial: AtomicU64,
    /// Batches sent to the executor and not yet answered; the task stops reading at
    /// `MAX_INFLIGHT` so a client that pipelines without reading cannot pile up work.
    pub inflight: AtomicU64,
    /// Reply bytes handed to the task and not yet written: while nonzero the executor must
    /// not write to the socket itself, or replies would overtake each other.
    pub task_pending: AtomicU64,
    /// Wakes a task waiting for `inflight` to drop below the limit.
    pub resume: tokio::sync::Notify,
    /// The connection is a replica's (after PSYNC): the task never answers it by itself,
    /// since its output is the replication stream.
    pub replica: AtomicBool,
    /// The executor holds this client's pipeline until its queued replies drain: the task
    /// sends `Request::Drained` when they fall below the low water mark.
    pub throttled: AtomicBool,
    /// The client speaks RESP3 (after HELLO 3): what a reply from the task is encoded in.
    pub resp3: AtomicBool,
    /// The client is inside MULTI: while a script is busy, a command it sends must doom
    /// the transaction, which only the executor can do (see `busy_answers`).
    pub in_multi: AtomicBool,
    /// The connection no longer counts toward `maxclients` (`release_slot`).
    pub released: AtomicBool,
}

impl ConnFlags {
    /// Stops counting the connection toward `maxclients`, once: when its peer is gone (read
    /// by the executor or the task) or when its task ends, whichever comes first.
    pub fn release_slot(&self, limits: &SharedLimits) {
        if !self.released.swap(true, Ordering::AcqRel) {
            limits.connected.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A message from a connection task (or a signal handler) to the executor.
pub enum Request {
    Connect {
        id: ClientId,
        addr: String,
        laddr: String,
        tx: UnboundedSender<ClientOutput>,
        flags: Arc<ConnFlags>,
        /// A duplicate of the socket for direct reply writes (`None`: always through `tx`).
        sock: Option<std::net::TcpStream>,
        /// The socket's read side when the executor thread reads the connection itself
        /// (`ExecutorHandle::inline_reads`); `None`: the task reads and sends `Commands`.
        reader: Option<tokio::net::tcp::OwnedReadHalf>,
    },
    /// Every complete command read in one go, plus the protocol error that ended the read, if
    /// any (answered after the commands, then the connection closes, as Redis does).
    Commands {
        id: ClientId,
        cmds: Vec<Vec<Bytes>>,
        protocol_error: Option<String>,
    },
    Disconnect {
        id: ClientId,
    },
    /// A throttled client's queued replies drained below the low water mark.
    Drained {
        id: ClientId,
    },
    /// SIGTERM/SIGINT.
    Signal {
        name: &'static str,
    },
    /// The log's fsync thread synced more records (`appendfsync always`): replies that
    /// waited for them can go.
    LogSynced,
    /// From a replica's link (`link`: its generation): a full sync's snapshot is in `path`.
    ReplSnapshot {
        link: u64,
        replid: String,
        offset: u64,
        path: std::path::PathBuf,
    },
    /// The primary accepted a partial resync under `replid`.
    ReplContinue {
        link: u64,
        replid: String,
    },
    /// Whole, checksum-verified segments of the primary's stream, starting at stream
    /// offset `offset`.
    ReplStream {
        link: u64,
        offset: u64,
        data: Bytes,
    },
    /// The connection to the primary ended; the executor answers where the next one resumes
    /// (None: a full sync).
    ReplLinkDown {
        link: u64,
        resume: tokio::sync::oneshot::Sender<Option<Resume>>,
    },
    /// Whole commands of a redis-server primary's stream, starting at its offset `offset`
    /// and spanning `len` bytes of it.
    ReplCommands {
        link: u64,
        offset: u64,
        len: u64,
        commands: Vec<Vec<Bytes>>,
    },
    /// The primary wants an acknowledgement of what it sent so far.
    ReplAckWanted {
        link: u64,
    },
    /// A cluster bus connection is up (`node`: the node we connected to; none for one
    /// accepted on the bus port); what the executor sends it goes through `tx`.
    ClusterLinkUp {
        link: u64,
        node: Option<[u8; 40]>,
        inbound: bool,
        peer_ip: String,
        local_ip: String,
        tx: UnboundedSender<Vec<u8>>,
    },
    /// One whole bus message (its frame checked, not decoded).
    ClusterMessage {
        link: u64,
        bytes: Vec<u8>,
    },
    ClusterLinkDown {
        link: u64,
    },
    /// The connection the executor asked for to node `node` could not be made.
    ClusterConnectFailed {
        node: [u8; 40],
    },
}

/// Where a replica's next PSYNC resumes (the link's question to the executor when a
/// connection ends): a replication id and the offset of the last byte it has, in the
/// primary's space. `plain`: the primary is a redis-server, whose stream is plain commands
/// (see `replication::plain`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    pub replid: String,
    pub offset: u64,
    pub plain: bool,
}

/// The executor's request channel (tokio's: the executor waits on it while it drives the
/// network runtime, see `inbox.rs`).
pub type RequestTx = tokio::sync::mpsc::UnboundedSender<Request>;
pub type RequestRx = tokio::sync::mpsc::UnboundedReceiver<Request>;

/// The handle the network side keeps.
#[derive(Clone)]
pub struct ExecutorHandle {
    pub tx: RequestTx,
    pub limits: Arc<SharedLimits>,
    /// The running script's state: connection tasks answer BUSY and SCRIPT KILL from it.
    pub script_watch: Arc<crate::scripting::ScriptWatch>,
    /// The connections' runtime runs on the executor thread (`io-threads 1`): a plain
    /// connection hands its read side to the executor, which reads it in the same turn of
    /// the runtime's poll that found it ready (`executor/readers.rs`), instead of a task
    /// reading and waking the executor, which costs the runtime two more polls per batch.
    pub inline_reads: bool,
}

/// Unsent reply bytes past which a client's pipeline waits for its output to drain, and
/// below which it goes on; and the batch output size from which the check is made.
pub const OUTPUT_HIGH_WATER: u64 = 32 * 1024 * 1024;
pub const OUTPUT_LOW_WATER: u64 = 8 * 1024 * 1024;
pub const OUTPUT_CHECK: usize = 1024 * 1024;

/// Batches a connection may have in flight before it stops reading (backpressure for
/// clients that pipeline without reading their replies).
pub const MAX_INFLIGHT: u64 = 16;
