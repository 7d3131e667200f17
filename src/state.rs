//! Server-wide state the executor owns and command handlers read and change: settings,
//! connected clients, counters, the slow log. No I/O here.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc::UnboundedSender;

use crate::config::Config;
use crate::protocol::ProtocolVersion;

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
            proto_max_bulk_len: AtomicI64::new(config.get_int("proto-max-bulk-len")),
            client_query_buffer_limit: AtomicU64::new(config.get_int("client-query-buffer-limit") as u64),
            maxclients: AtomicU64::new(config.get_int("maxclients") as u64),
            connected: AtomicU64::new(0),
            auth_required: AtomicBool::new(!config.get("requirepass").is_empty()),
            protected: AtomicBool::new(false),
            // Set from the start when there is a log to load: connections accepted before
            // the executor begins loading must already get LOADING, not wait behind it.
            loading: AtomicBool::new(config.get("appendonly") == "yes"),
            loading_start_secs: AtomicI64::new(0),
            loading_total_bytes: AtomicU64::new(0),
            loading_loaded_bytes: AtomicU64::new(0),
            net_input_bytes: AtomicU64::new(0),
            reads_processed: AtomicU64::new(0),
        }
    }

    pub fn refresh(&self, config: &Config) {
        self.proto_max_bulk_len.store(config.get_int("proto-max-bulk-len"), Ordering::Relaxed);
        self.client_query_buffer_limit.store(config.get_int("client-query-buffer-limit") as u64, Ordering::Relaxed);
        self.maxclients.store(config.get_int("maxclients") as u64, Ordering::Relaxed);
    }
}

/// One class of `client-output-buffer-limit`: bytes queued for a client's socket past
/// `hard` close it at once; past `soft` for longer than `soft_ms`, too (0: no limit).
#[derive(Debug, Clone, Copy, Default)]
pub struct OutputLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_ms: i64,
}

/// The limits of the three client classes.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutputLimits {
    pub normal: OutputLimit,
    pub pubsub: OutputLimit,
    pub replica: OutputLimit,
}

/// Per-connection flags the connection task reads (the executor writes them).
#[derive(Debug, Default)]
pub struct ConnFlags {
    /// False while a password is required and the client has not authenticated.
    pub authenticated: AtomicBool,
    /// Bytes waiting in the connection's query buffer (for CLIENT LIST `qbuf`).
    pub qbuf: AtomicU64,
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
}

/// The output buffer a client keeps between batches (a bigger one, a large reply, is let go),
/// and the most a client's pushes may hold while kept back for the batches that follow.
pub const OUT_KEEP_BYTES: usize = 16 * 1024;

/// One connected client, as the executor sees it.
pub struct Client {
    pub id: ClientId,
    pub addr: String,
    pub laddr: String,
    pub name: Option<Bytes>,
    pub db: usize,
    pub proto: ProtocolVersion,
    /// While a script runs (its `redis.setresp` decides `proto`): the connection's own
    /// protocol, in which pushes to this client are encoded.
    pub caller_proto: Option<ProtocolVersion>,
    pub authenticated: bool,
    pub user: String,
    /// An internal client (the log loader, the replication stream): no ACL checks.
    pub superuser: bool,
    /// Its user was deleted (or lost a channel it listens to): it is closed after this
    /// batch and may run nothing more meanwhile.
    pub acl_revoked: bool,
    /// Since when (ms) the client's queued output has been over its class's soft limit.
    pub soft_limit_since_ms: Option<i64>,
    /// CLIENT TRACKING settings (None: off).
    pub tracking: Option<crate::tracking::TrackingMode>,
    /// Invalidations for this client raised by its own running command: they follow its
    /// reply, as in Redis.
    pub tracking_after_reply: Vec<u8>,
    pub created: Instant,
    /// Wall-clock ms of the last batch (the executor's batch clock: no extra clock read).
    pub last_interaction_ms: i64,
    /// The last command run, `container|sub` form, for CLIENT LIST `cmd=`.
    pub last_cmd: &'static str,
    /// Close the connection once this batch's replies are written (QUIT, protocol error).
    pub close_after_reply: bool,
    /// Replies accumulated during the current batch.
    pub out: Vec<u8>,
    /// Listed for release with this batch by a push (PUBLISH): further pushes before the
    /// release need not list it again, unless they take its output past `OUT_KEEP_BYTES`
    /// (the release then sends it rather than keeping it back). Cleared whenever its output
    /// is sent.
    pub release_due: bool,
    pub tx: UnboundedSender<ClientOutput>,
    pub flags: Arc<ConnFlags>,
    /// A second handle on the (non-blocking) socket: the executor writes replies directly,
    /// saving a hop through the connection task; `None` in benches without sockets.
    pub sock: Option<std::net::TcpStream>,
    /// Batches received and not finished (more than one while blocked).
    pub open_batches: u64,
    /// Batches finished since the last release (lowers `ConnFlags::inflight`).
    pub completed_batches: u64,
    /// Set by a blocking command's handler when it has nothing to serve yet.
    pub block_request: Option<crate::commands::BlockRequest>,
    /// While parked: the batch it was running and where it stopped.
    pub blocked: Option<Blocked>,
    /// Inside EXEC (or, later, a script): blocking commands answer as if timed out.
    pub deny_blocking: bool,
    /// Commands inside an EXEC that was already admitted under maxmemory (and, later,
    /// allow-oom scripts) are not refused one by one.
    pub deny_oom_exempt: bool,
    /// Between MULTI and EXEC: the queued commands.
    pub multi: Option<Vec<QueuedCommand>>,
    /// While EXEC runs this client's queue: how many commands it holds (the client still
    /// shows as in MULTI, as in Redis: CLIENT LIST `flags=x multi=<n>`, ACL LOG context
    /// `multi`). See [`Client::in_exec`].
    pub exec_queued: Option<usize>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub multi_dirty: bool,
    /// Set by EXEC's handler: the executor runs the queue.
    pub exec_requested: bool,
    /// Set by EVAL & co.: the executor runs the script.
    pub script_call: Option<crate::commands::scripting::ScriptCall>,
    /// While a script runs commands through this client (SORT sorts sets, MONITOR says `lua`).
    pub in_script: bool,
    /// The log offset this client's latest records end at: its replies leave once the log
    /// is durable (per appendfsync) that far (0: nothing to wait for).
    pub log_wait: u64,
    /// WATCHed (db, key) pairs.
    pub watched: Vec<(usize, Bytes)>,
    /// The watched keys that were already logically expired at WATCH (Redis 7's
    /// `watchedKey.expired`): their deletion is no change, and their expiry no abort.
    pub watched_expired: Vec<(usize, Bytes)>,
    /// A watched key changed: EXEC answers a null array.
    pub cas_dirty: bool,
    /// CLIENT REPLY OFF: nothing is sent back.
    pub reply_off: bool,
    /// CLIENT REPLY SKIP: the next command's reply is dropped (`skip_next` becomes `skip`).
    pub reply_skip_next: bool,
    pub reply_skip: bool,
    /// CLIENT NO-EVICT.
    pub no_evict: bool,
    /// MONITOR: receives every command run.
    pub monitor: bool,
    /// Subscriptions, in the order they were made.
    pub channels: Vec<Bytes>,
    pub patterns: Vec<Bytes>,
    pub shard_channels: Vec<Bytes>,
    /// REPLCONF listening-port: the port a replica says it serves on.
    pub replconf_port: u16,
    /// REPLCONF rdb-only 1: the peer wants an RDB file alone
    /// (redis-cli --rdb, --functions-rdb), which this server does not produce.
    pub rdb_only: bool,
    /// Set once the connection asked for the replication stream (PSYNC/SYNC).
    pub replica: Option<crate::replication::Peer>,
    /// WAIT: the offset replicas must acknowledge and how many (while parked in it).
    pub wait_target: Option<(u64, usize)>,
}

/// The connected clients by id (boxed: the running client is taken out and put back for
/// every batch, and a box moves as one pointer).
pub type ClientTable = HashMap<ClientId, Box<Client>, std::hash::BuildHasherDefault<IdHasher>>;

/// A command queued by MULTI: resolved when queued (EXEC runs it without a second lookup,
/// as Redis keeps the command pointer), with its arguments.
pub type QueuedCommand = (&'static crate::commands::CommandSpec, Vec<Bytes>);

/// A client waiting in a blocking command, with the rest of its pipeline.
#[derive(Debug)]
pub struct Blocked {
    pub cmds: Vec<Vec<Bytes>>,
    /// The blocking command is `cmds[index]`; the ones after it wait their turn.
    pub index: usize,
    pub db: usize,
    pub keys: Vec<Bytes>,
    pub deadline_ms: Option<i64>,
    pub timeout_reply: crate::protocol::Reply,
    pub protocol_error: Option<String>,
}

impl Blocked {
    /// A batch held at `cmds[index]` on no key and with no deadline (a pause, a full output;
    /// or, resumed after `index`, a writer waiting for the waiters it served).
    pub fn held(cmds: Vec<Vec<Bytes>>, index: usize, db: usize, protocol_error: Option<String>) -> Self {
        Blocked { cmds, index, db, keys: Vec::new(), deadline_ms: None, timeout_reply: crate::protocol::Reply::NoReply, protocol_error }
    }
}

impl Client {
    /// EXEC is running this client's queued commands.
    pub fn in_exec(&self) -> bool {
        self.exec_queued.is_some()
    }

    /// The protocol pushes to this client are encoded in: its connection's, even while a
    /// script of its own runs with another.
    pub fn push_proto(&self) -> ProtocolVersion {
        self.caller_proto.unwrap_or(self.proto)
    }

    pub fn new(
        id: ClientId,
        addr: String,
        laddr: String,
        tx: UnboundedSender<ClientOutput>,
        flags: Arc<ConnFlags>,
        authenticated: bool,
    ) -> Self {
        flags.authenticated.store(authenticated, Ordering::Relaxed);
        let now = Instant::now();
        Client {
            id,
            addr,
            laddr,
            name: None,
            db: 0,
            proto: ProtocolVersion::Resp2,
            caller_proto: None,
            authenticated,
            user: "default".into(),
            superuser: false,
            acl_revoked: false,
            soft_limit_since_ms: None,
            tracking: None,
            tracking_after_reply: Vec::new(),
            created: now,
            last_interaction_ms: crate::clock::now_ms(),
            last_cmd: "NULL",
            close_after_reply: false,
            out: Vec::new(),
            release_due: false,
            tx,
            flags,
            sock: None,
            open_batches: 0,
            completed_batches: 0,
            block_request: None,
            blocked: None,
            deny_blocking: false,
            deny_oom_exempt: false,
            exec_queued: None,
            multi: None,
            multi_dirty: false,
            exec_requested: false,
            script_call: None,
            in_script: false,
            log_wait: 0,
            watched: Vec::new(),
            watched_expired: Vec::new(),
            cas_dirty: false,
            reply_off: false,
            reply_skip_next: false,
            reply_skip: false,
            no_evict: false,
            monitor: false,
            channels: Vec::new(),
            patterns: Vec::new(),
            shard_channels: Vec::new(),
            replconf_port: 0,
            rdb_only: false,
            replica: None,
            wait_target: None,
        }
    }

    /// In RESP2 a client with subscriptions may only run the pub/sub commands.
    pub fn in_subscribed_mode(&self) -> bool {
        self.proto == ProtocolVersion::Resp2 && !(self.channels.is_empty() && self.patterns.is_empty() && self.shard_channels.is_empty())
    }

    pub fn set_authenticated(&mut self, yes: bool) {
        self.authenticated = yes;
        self.flags.authenticated.store(yes, Ordering::Relaxed);
    }

    /// HELLO and RESET: the protocol, also for replies the connection task writes itself.
    pub fn set_proto(&mut self, proto: ProtocolVersion) {
        self.proto = proto;
        self.flags.resp3.store(proto == ProtocolVersion::Resp3, Ordering::Relaxed);
    }
}

/// Client ids are assigned sequentially by the server, never chosen by a client: the id is
/// its own hash.
#[derive(Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// One slow log entry.
#[derive(Debug, Clone)]
pub struct SlowLogEntry {
    pub id: u64,
    pub time: i64,
    pub duration_us: u64,
    pub args: Vec<Bytes>,
    pub addr: String,
    pub name: Bytes,
}

/// Counters INFO stats reports.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub total_connections_received: u64,
    pub total_commands_processed: u64,
    pub rejected_connections: u64,
    pub net_output_bytes: u64,
    /// Reply writes the executor made (one per client per release).
    pub writes_processed: u64,
    pub total_error_replies: u64,
    /// Per command id (see `CommandSpec::id`): calls, time, failures.
    pub commands: Vec<CommandStat>,
    /// Per command id: its latency histogram, from its first call (`latency-tracking`).
    pub latency: Vec<Option<Box<crate::latency::Histogram>>>,
    /// Per error code word (`ERR`, `WRONGTYPE`...): count.
    pub errors: HashMap<String, u64>,
}

impl Stats {
    /// An error reply for INFO (total_error_replies, errorstats by its first word).
    pub fn count_error(&mut self, text: &str) {
        self.total_error_replies += 1;
        let code = text.split(' ').next().unwrap_or("ERR");
        match self.errors.get_mut(code) {
            Some(n) => *n += 1,
            None => {
                self.errors.insert(code.to_string(), 1);
            }
        }
    }

    /// Records one call of command `id` that took `usec` (in ns, as Redis records it).
    pub fn record_latency(&mut self, id: usize, usec: u64) {
        if id >= self.latency.len() {
            self.latency.resize_with(id + 1, || None);
        }
        self.latency[id].get_or_insert_with(Default::default).record(usec.saturating_mul(1000));
    }

    /// The counters of command `id`.
    pub fn command(&mut self, id: usize) -> &mut CommandStat {
        if id >= self.commands.len() {
            self.commands.resize(id + 1, CommandStat::default());
        }
        &mut self.commands[id]
    }
}

/// INFO commandstats counters of one command.
#[derive(Debug, Default, Clone, Copy)]
pub struct CommandStat {
    pub calls: u64,
    pub usec: u64,
    pub rejected_calls: u64,
    pub failed_calls: u64,
}

/// Everything besides the keyspace that commands may look at or change.
pub struct ServerState {
    pub config: Config,
    pub limits: Arc<SharedLimits>,
    /// All clients but the one whose batch is running (it is taken out while it runs).
    pub clients: ClientTable,
    pub stats: Stats,
    pub slowlog: VecDeque<SlowLogEntry>,
    pub slowlog_next_id: u64,
    /// Changes since the last save (Redis's `server.dirty`).
    pub dirty: u64,
    pub lastsave: i64,
    /// The highest `used_memory` seen (at each cron tick and each INFO/MEMORY STATS).
    pub memory_peak: u64,
    pub started: Instant,
    pub start_time_ms: i64,
    pub run_id: String,
    pub executable: String,
    /// Set by SHUTDOWN: the executor finishes the batch, then stops.
    pub shutdown: Option<ShutdownRequest>,
    /// A log operation a handler asked the executor for (BGREWRITEAOF, DEBUG RELOAD...).
    pub persist_request: Option<PersistRequest>,
    /// Replication state (either role) and a request for the executor (PSYNC, REPLICAOF).
    pub repl: crate::replication::ReplState,
    pub repl_request: Option<crate::replication::ReplRequest>,
    /// The log's figures for INFO (None: `appendonly no`).
    pub aof_info: Option<crate::aof::AofInfo>,
    /// Clients to disconnect after this batch (CLIENT KILL).
    pub kill_list: Vec<ClientId>,
    /// Parked clients to answer after this command (CLIENT UNBLOCK): with the UNBLOCKED
    /// error when `true`, as at their deadline otherwise.
    pub unblock_list: Vec<(ClientId, bool)>,
    /// CLIENT PAUSE: until when, and whether all commands (or only writes) wait.
    pub pause: Option<(std::time::Instant, bool)>,
    /// Clients in MONITOR mode.
    pub monitors: Vec<ClientId>,
    /// Pub/Sub listeners per channel, pattern and shard channel.
    pub pubsub: PubSubRegistry,
    /// Clients whose output received pushes (PUBLISH) during the current command.
    pub pushed: Vec<ClientId>,
    /// Who WATCHes each (db, key).
    pub watchers: HashMap<(usize, Bytes), Vec<ClientId>>,
    /// Keys a command modified beyond its key positions (MOVE's and COPY's destination
    /// database), for the executor to signal after the command.
    pub also_modified: Vec<(usize, Bytes)>,
    pub rng_state: u64,
    /// Cached from the config: the slow log threshold in µs (-1: disabled).
    pub slowlog_threshold_us: i64,
    /// Cached from the config: the collections' encoding limits (read by every write).
    pub encoding_limits: crate::db::BuildLimits,
    /// Cached from the config: `notify-keyspace-events` as flags.
    pub notify_flags: u32,
    /// Cached from the config: `maxmemory` in bytes (0: no limit).
    pub maxmemory: usize,
    /// Cached from the config: whether `maxmemory-policy` is an LFU one (keys then keep
    /// their frequency counter when overwritten).
    pub lfu_policy: bool,
    /// Cached from the config: `hz`, clamped as Redis clamps it.
    pub hz: u64,
    /// Cached from the config: `busy-reply-threshold` (alias `lua-time-limit`) in ms.
    pub busy_threshold_ms: u64,
    /// Cached from `client-output-buffer-limit`: the hard limits of the normal, pubsub and
    /// replica classes (0: none).
    pub output_limits: OutputLimits,
    /// Cached from the config: `replica-read-only`, `replica-serve-stale-data`, and
    /// (`min-replicas-to-write`, `min-replicas-max-lag`).
    pub replica_read_only: bool,
    pub replica_serve_stale: bool,
    /// Users and permissions (ACL).
    pub acl: crate::acl::Acl,
    /// CLIENT TRACKING: who read which keys, and who listens by prefix.
    pub tracking: crate::tracking::TrackingTable,
    /// LATENCY's samples (`latency-monitor-threshold`).
    pub latency: crate::latency::LatencyMonitor,
    /// Cached from the config: `latency-monitor-threshold` in ms (0: off).
    pub latency_threshold_ms: u64,
    /// Cached from the config: `latency-tracking` (per-command histograms).
    pub latency_tracking: bool,
    pub min_replicas: (usize, i64),
    /// Events raised by the running command, published by the executor after it.
    pub notifications: Vec<crate::notify::Notification>,
    /// DEBUG SET-ACTIVE-EXPIRE: whether the cron expires keys.
    pub active_expire_enabled: bool,
    /// The Lua engine (taken out by the executor while a script runs).
    pub scripts: Option<Box<crate::scripting::ScriptEngine>>,
    /// The running script's state, shared with the connection tasks (busy answers, kills).
    pub script_watch: Arc<crate::scripting::ScriptWatch>,
}

/// Listeners of each channel, pattern and shard channel, in subscription order.
#[derive(Debug, Default)]
pub struct PubSubRegistry {
    pub channels: HashMap<Bytes, Vec<ClientId>>,
    pub patterns: HashMap<Bytes, Vec<ClientId>>,
    pub shard_channels: HashMap<Bytes, Vec<ClientId>>,
}

/// Work on the log that only the executor can do; the handler leaves it here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersistRequest {
    /// BGREWRITEAOF.
    Rewrite,
    /// DEBUG RELOAD: rewrite, then load the files again.
    Reload,
    /// DEBUG LOADAOF: flush the log, then load the files again.
    LoadAof,
    /// CONFIG SET appendonly/appendfsync: open, close or retune the log.
    Reconfigure,
    /// SAVE: a compaction to its end.
    Save,
    /// BGSAVE [SCHEDULE]: a compaction in the background.
    BgSave { schedule: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownRequest {
    pub save: bool,
}

impl ServerState {
    pub fn new(config: Config) -> Self {
        let limits = Arc::new(SharedLimits::from_config(&config));
        let now_ms = crate::clock::now_ms();
        let mut seed = (now_ms as u64) ^ ((std::process::id() as u64) << 32) ^ 0x9E37_79B9_7F4A_7C15;
        let run_id: String = (0..40)
            .map(|_| {
                seed = crate::util::xorshift(seed);
                b"0123456789abcdef"[(seed % 16) as usize] as char
            })
            .collect();
        let slowlog_threshold_us = config.get_int("slowlog-log-slower-than");
        let notify_flags = config.notify_flags;
        let script_watch = Arc::new(crate::scripting::ScriptWatch::default());
        // The engine is built from constants only; failing here is a build defect.
        let scripts = crate::scripting::ScriptEngine::new(script_watch.clone()).expect("the Lua state could not be created");
        let mut state = ServerState {
            config,
            limits,
            clients: HashMap::default(),
            stats: Stats::default(),
            slowlog: VecDeque::new(),
            slowlog_next_id: 0,
            dirty: 0,
            lastsave: now_ms / 1000,
            memory_peak: 0,
            started: Instant::now(),
            start_time_ms: now_ms,
            run_id,
            executable: std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            shutdown: None,
            persist_request: None,
            repl: crate::replication::ReplState::default(),
            repl_request: None,
            aof_info: None,
            kill_list: Vec::new(),
            unblock_list: Vec::new(),
            watchers: HashMap::new(),
            pause: None,
            monitors: Vec::new(),
            pubsub: PubSubRegistry::default(),
            pushed: Vec::new(),
            also_modified: Vec::new(),
            rng_state: seed | 1,
            slowlog_threshold_us,
            encoding_limits: crate::db::BuildLimits::default(),
            notify_flags,
            maxmemory: 0,
            lfu_policy: false,
            hz: 10,
            busy_threshold_ms: 5000,
            output_limits: OutputLimits::default(),
            replica_read_only: true,
            replica_serve_stale: true,
            acl: crate::acl::Acl::default(),
            latency: crate::latency::LatencyMonitor::default(),
            tracking: crate::tracking::TrackingTable::default(),
            latency_threshold_ms: 0,
            latency_tracking: true,
            min_replicas: (0, 10),
            notifications: Vec::new(),
            active_expire_enabled: true,
            scripts: Some(Box::new(scripts)),
            script_watch,
        };
        state.config_changed();
        state.load_acl_at_startup();
        state
    }

    /// Users from `requirepass`, the config file's `user` lines and the ACL file; a bad one
    /// stops the server, as in Redis.
    fn load_acl_at_startup(&mut self) {
        let requirepass = self.config.get("requirepass").to_string();
        self.acl.set_requirepass(&requirepass);
        let all_channels = self.config.get("acl-pubsub-default") == "allchannels";
        let aclfile = self.config.get("aclfile").to_string();
        let result = if !aclfile.is_empty() {
            if !self.config.users.is_empty() {
                Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".to_string())
            } else {
                match std::fs::read_to_string(&aclfile) {
                    Ok(text) => self.acl.load_file_text(&aclfile, &text, all_channels),
                    Err(e) => Err(format!("Error loading ACLs, opening file '{aclfile}': {e}")),
                }
            }
        } else if !self.config.users.is_empty() {
            let text: String = self.config.users.iter().map(|u| format!("user {u}\n")).collect();
            let mut acl = crate::acl::Acl::default();
            acl.set_requirepass(&requirepass);
            let r = acl.load_file_text("redis.conf", &text, all_channels);
            if r.is_ok() {
                // The config's default user, when given, wins over requirepass.
                if !self.config.users.iter().any(|u| u.split_whitespace().next() == Some("default")) {
                    let default = self.acl.users.get("default").cloned();
                    acl.users.extend(default.map(|d| ("default".to_string(), d)));
                }
                self.acl = acl;
            }
            r
        } else {
            Ok(())
        };
        if let Err(e) = result {
            crate::log::warning(&format!("Aborting Redis startup because of ACL errors: {e}"));
            std::process::exit(1);
        }
        self.acl_changed();
    }

    /// After any change of users: whether new connections must AUTH, and the clients of
    /// deleted users are disconnected (after this batch).
    pub fn acl_changed(&mut self) {
        self.acl.all_unrestricted = self.acl.users.values().all(|u| u.unrestricted);
        let open = self.acl.default_needs_no_auth();
        let nopass = self.acl.users.get("default").is_some_and(|u| u.nopass);
        self.limits.protected.store(self.config.get("protected-mode") == "yes" && nopass, Ordering::Relaxed);
        self.limits.auth_required.store(!open, Ordering::Relaxed);
        // Clients of deleted users go; so do subscribers whose user may no longer listen to
        // one of their channels or patterns (Redis's ACLKillPubsubClientsIfNeeded).
        // (The client whose command made the change is not in the table: see
        // `Ctx::acl_changed`.)
        let gone: Vec<ClientId> = self.clients.values().filter(|c| self.lost_access(c)).map(|c| c.id).collect();
        for id in &gone {
            if let Some(c) = self.clients.get_mut(id) {
                c.acl_revoked = true;
            }
        }
        self.kill_list.extend(gone);
    }

    /// Whether a client must go after a change of users: its user was deleted, or may no
    /// longer listen to one of its channels or patterns.
    pub fn lost_access(&self, c: &Client) -> bool {
        if c.superuser {
            return false;
        }
        match self.acl.users.get(&c.user) {
            None => true,
            Some(u) => {
                let channels: Vec<bytes::Bytes> = c.channels.iter().chain(c.shard_channels.iter()).cloned().collect();
                !u.channels_allowed(&channels, &c.patterns)
            }
        }
    }

    /// A pseudo-random u64 (xorshift; for sampling, not for secrets).
    pub fn random(&mut self) -> u64 {
        self.rng_state = crate::util::xorshift(self.rng_state);
        self.rng_state
    }

    /// Re-reads the settings that are cached in typed form after a CONFIG SET.
    pub fn config_changed(&mut self) {
        self.limits.refresh(&self.config);
        self.slowlog_threshold_us = self.config.get_int("slowlog-log-slower-than");
        self.encoding_limits = crate::commands::build_limits(&self.config);
        self.latency_threshold_ms = self.config.get_int("latency-monitor-threshold").max(0) as u64;
        self.latency_tracking = self.config.get_bool("latency-tracking");
        self.notify_flags = self.config.notify_flags;
        self.maxmemory = self.config.get_int("maxmemory").max(0) as usize;
        self.lfu_policy = self.config.get("maxmemory-policy").contains("lfu");
        self.hz = self.config.get_int("hz").clamp(1, 500) as u64;
        self.busy_threshold_ms = self.config.get_int("busy-reply-threshold").max(0) as u64;
        let spec = self.config.get("client-output-buffer-limit");
        let words: Vec<&str> = spec.split_whitespace().collect();
        let class = |names: &[&str]| {
            let Some(c) = words.chunks(4).rfind(|c| c.len() == 4 && names.contains(&c[0])) else {
                return OutputLimit::default();
            };
            let mem = |w: &str| crate::config::parse_memory(w).unwrap_or(0);
            OutputLimit { hard: mem(c[1]), soft: mem(c[2]), soft_ms: c[3].parse::<i64>().unwrap_or(0).max(0) * 1000 }
        };
        self.output_limits = OutputLimits { normal: class(&["normal"]), pubsub: class(&["pubsub"]), replica: class(&["slave", "replica"]) };
        if let Some(b) = self.repl.backlog.as_mut() {
            b.capacity = self.config.get_int("repl-backlog-size").max(16 * 1024) as u64;
        }
        self.replica_read_only = self.config.get("replica-read-only") == "yes";
        self.replica_serve_stale = self.config.get("replica-serve-stale-data") == "yes";
        self.min_replicas =
            (self.config.get_int("min-replicas-to-write").max(0) as usize, self.config.get_int("min-replicas-max-lag").max(0));
    }
}
