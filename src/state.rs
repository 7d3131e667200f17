//! Server-wide state the executor owns and command handlers read and change: settings,
//! connected clients, counters, the slow log. No I/O here.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::config::Config;
use crate::config::P;
pub use crate::conn::{ClientId, ClientOutput, ConnFlags, SharedLimits};
use crate::protocol::ProtocolVersion;
pub use client::{BlockKind, BlockRequest, Blocked, Client, ClientTable, LuaDebug, QueuedCommand, ReplyMode, Subscriptions, Transaction};

mod client;

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

/// The output buffer a client keeps between batches (a bigger one, a large reply, is let go),
/// and the most a client's pushes may hold while kept back for the batches that follow.
pub const OUT_KEEP_BYTES: usize = 16 * 1024;

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
    /// Settings read on hot paths, kept typed (refreshed by `config_changed`).
    pub settings: Settings,
    pub limits: Arc<SharedLimits>,
    /// All clients but the one whose batch is running (it is taken out while it runs).
    pub clients: ClientTable,
    pub stats: Stats,
    pub slowlog: VecDeque<SlowLogEntry>,
    pub slowlog_next_id: u64,
    /// Changes since the last save (Redis's `server.dirty`).
    pub dirty: u64,
    pub lastsave: i64,
    /// The RDB file's figures for INFO persistence.
    pub rdb: RdbInfo,
    /// The highest `used_memory` seen (at each cron tick and each INFO/MEMORY STATS).
    pub memory_peak: u64,
    pub started: Instant,
    pub start_time_ms: i64,
    pub run_id: String,
    pub executable: String,
    /// Set by SHUTDOWN (its handler's `Next::Shutdown`) or a signal: the executor finishes
    /// the batch, then stops.
    pub shutdown: Option<ShutdownRequest>,
    /// Replication state (either role).
    pub repl: crate::replication::ReplState,
    /// Cluster mode (`cluster-enabled yes`): the cluster as this node sees it.
    pub cluster: Option<Box<crate::cluster::Cluster>>,
    /// CLUSTER SAVECONFIG ran: the executor answers with the outcome of the write.
    pub cluster_save_reply: bool,
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
    /// Who WATCHes each (db, key).
    pub watchers: HashMap<(usize, Bytes), Vec<ClientId>>,
    pub rng_state: u64,
    /// Users and permissions (ACL).
    pub acl: crate::acl::Acl,
    /// CLIENT TRACKING: who read which keys, and who listens by prefix.
    pub tracking: crate::tracking::TrackingTable,
    /// LATENCY's samples (`latency-monitor-threshold`).
    pub latency: crate::latency::LatencyMonitor,
    /// DEBUG SET-ACTIVE-EXPIRE: whether the cron expires keys.
    pub active_expire_enabled: bool,
    /// DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call commands flagged `noscript`.
    pub allow_noscript_in_scripts: bool,
    /// The Lua engine (taken out by the executor while a script runs).
    pub scripts: Option<Box<crate::scripting::ScriptEngine>>,
    /// The running script's state, shared with the connection tasks (busy answers, kills).
    pub script_watch: Arc<crate::scripting::ScriptWatch>,
}

/// Settings read on hot paths (every write, every command), kept in typed form: refreshed
/// from the config at startup and after every CONFIG SET.
#[derive(Debug, Default)]
pub struct Settings {
    /// the slow log threshold in µs (-1: disabled).
    pub slowlog_threshold_us: i64,
    /// the collections' encoding limits (read by every write).
    pub encoding_limits: crate::db::BuildLimits,
    /// `notify-keyspace-events` as flags.
    pub notify_flags: u32,
    /// `maxmemory` in bytes (0: no limit).
    pub maxmemory: usize,
    /// whether `maxmemory-policy` is an LFU one (keys then keep
    /// their frequency counter when overwritten).
    pub lfu_policy: bool,
    /// `hz`, clamped as Redis clamps it.
    pub hz: u64,
    /// `busy-reply-threshold` (alias `lua-time-limit`) in ms.
    pub busy_threshold_ms: u64,
    /// From `client-output-buffer-limit`: the hard limits of the normal, pubsub and
    /// replica classes (0: none).
    pub output_limits: OutputLimits,
    /// `replica-read-only`, `replica-serve-stale-data`, and
    /// (`min-replicas-to-write`, `min-replicas-max-lag`).
    pub replica_read_only: bool,
    pub replica_serve_stale: bool,
    /// `latency-monitor-threshold` in ms (0: off).
    pub latency_threshold_ms: u64,
    /// `latency-tracking` (per-command histograms).
    pub latency_tracking: bool,
    pub min_replicas: (usize, i64),
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

/// INFO persistence's `rdb_*` fields.
#[derive(Debug, Clone, Default)]
pub struct RdbInfo {
    /// When the background save under way began (unix seconds).
    pub bgsave_since: Option<i64>,
    pub last_bgsave_failed: bool,
    /// How long the last background save took, in seconds (-1: none yet).
    pub last_bgsave_secs: Option<i64>,
    pub saves: u64,
    pub last_load_keys_loaded: u64,
    pub last_load_keys_expired: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownRequest {
    pub save: SaveOnShutdown,
    /// FORCE: exit even if the save fails.
    pub force: bool,
}

/// Whether shutting down writes the RDB file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SaveOnShutdown {
    /// When save points are configured (Redis's default).
    Default,
    Save,
    NoSave,
}

impl ShutdownRequest {
    /// The request `shutdown-on-sigterm`/`-sigint` describes (`default`, or flags such as
    /// `save now`, `nosave force`).
    pub fn from_flags(flags: &str) -> ShutdownRequest {
        let has = |w: &str| flags.split_whitespace().any(|f| f.eq_ignore_ascii_case(w));
        let save = if has("nosave") {
            SaveOnShutdown::NoSave
        } else if has("save") {
            SaveOnShutdown::Save
        } else {
            SaveOnShutdown::Default
        };
        ShutdownRequest { save, force: has("force") }
    }
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
        let slowlog_threshold_us = config.get_int(P::SlowlogLogSlowerThan);
        let notify_flags = config.notify_flags;
        let script_watch = Arc::new(crate::scripting::ScriptWatch::default());
        // The engine is built from constants only; failing here is a build defect.
        let scripts = crate::scripting::ScriptEngine::new(script_watch.clone()).expect("the Lua state could not be created");
        let mut state = ServerState {
            config,
            limits,
            // All filled by `config_changed` below.
            settings: Settings { slowlog_threshold_us, notify_flags, hz: 10, ..Settings::default() },
            clients: HashMap::default(),
            stats: Stats::default(),
            slowlog: VecDeque::new(),
            slowlog_next_id: 0,
            dirty: 0,
            lastsave: now_ms / 1000,
            rdb: RdbInfo::default(),
            memory_peak: 0,
            started: Instant::now(),
            start_time_ms: now_ms,
            run_id,
            executable: std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            shutdown: None,
            repl: crate::replication::ReplState::default(),
            cluster: None,
            cluster_save_reply: false,
            aof_info: None,
            kill_list: Vec::new(),
            unblock_list: Vec::new(),
            watchers: HashMap::new(),
            pause: None,
            monitors: Vec::new(),
            pubsub: PubSubRegistry::default(),
            rng_state: seed | 1,
            acl: crate::acl::Acl::default(),
            latency: crate::latency::LatencyMonitor::default(),
            tracking: crate::tracking::TrackingTable::default(),
            active_expire_enabled: true,
            allow_noscript_in_scripts: false,
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
        let requirepass = self.config.get(P::Requirepass).to_string();
        self.acl.set_requirepass(&requirepass);
        let all_channels = self.config.get(P::AclPubsubDefault) == "allchannels";
        let aclfile = self.config.get(P::Aclfile).to_string();
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
        self.limits.protected.store(self.config.get(P::ProtectedMode) == "yes" && nopass, Ordering::Relaxed);
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
                let channels: Vec<bytes::Bytes> = c.subs.channels.iter().chain(c.subs.shard_channels.iter()).cloned().collect();
                !u.channels_allowed(&channels, &c.subs.patterns)
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
        self.settings.slowlog_threshold_us = self.config.get_int(P::SlowlogLogSlowerThan);
        self.settings.encoding_limits = build_limits(&self.config);
        self.settings.latency_threshold_ms = self.config.get_int(P::LatencyMonitorThreshold).max(0) as u64;
        self.settings.latency_tracking = self.config.get_bool(P::LatencyTracking);
        self.settings.notify_flags = self.config.notify_flags;
        self.settings.maxmemory = self.config.get_int(P::Maxmemory).max(0) as usize;
        self.settings.lfu_policy = self.config.get(P::MaxmemoryPolicy).contains("lfu");
        self.settings.hz = self.config.get_int(P::Hz).clamp(1, 500) as u64;
        self.settings.busy_threshold_ms = self.config.get_int(P::BusyReplyThreshold).max(0) as u64;
        let spec = self.config.get(P::ClientOutputBufferLimit);
        let words: Vec<&str> = spec.split_whitespace().collect();
        let class = |names: &[&str]| {
            let Some(c) = words.chunks(4).rfind(|c| c.len() == 4 && names.contains(&c[0])) else {
                return OutputLimit::default();
            };
            let mem = |w: &str| crate::config::parse_memory(w).unwrap_or(0);
            OutputLimit { hard: mem(c[1]), soft: mem(c[2]), soft_ms: c[3].parse::<i64>().unwrap_or(0).max(0) * 1000 }
        };
        self.settings.output_limits =
            OutputLimits { normal: class(&["normal"]), pubsub: class(&["pubsub"]), replica: class(&["slave", "replica"]) };
        if let Some(b) = self.repl.backlog.as_mut() {
            b.capacity = self.config.get_int(P::ReplBacklogSize).max(16 * 1024) as u64;
        }
        self.settings.replica_read_only = self.config.get(P::ReplicaReadOnly) == "yes";
        self.settings.replica_serve_stale = self.config.get(P::ReplicaServeStaleData) == "yes";
        self.settings.min_replicas =
            (self.config.get_int(P::MinReplicasToWrite).max(0) as usize, self.config.get_int(P::MinReplicasMaxLag).max(0));
    }
}

impl ServerState {
    /// The replicas (connections that asked for the stream) and what is known of each.
    pub fn replica_peers(&self) -> impl Iterator<Item = (&Client, &crate::replication::Peer)> {
        self.repl.replicas.iter().filter_map(|id| self.clients.get(id)).filter_map(|c| c.replica.as_ref().map(|p| (&**c, p)))
    }

    /// The replica listening on `host:port` (its address as the primary sees it, and its
    /// REPLCONF listening-port), as Redis's `findReplica` matches FAILOVER TO.
    pub fn find_replica(&self, host: &str, port: i64) -> Option<(&Client, &crate::replication::Peer)> {
        self.replica_peers()
            .find(|(c, _)| crate::replication::peer_ip(&c.addr).eq_ignore_ascii_case(host) && c.replconf_port as i64 == port)
    }

    /// Online replicas that acknowledged `offset` (WAIT).
    pub fn acked_replicas(&self, offset: u64) -> usize {
        self.replica_peers().filter(|(_, p)| p.state == crate::replication::PeerState::Online && p.ack_offset >= offset).count()
    }

    /// Online replicas that acknowledged within `max_lag` seconds (min-replicas-to-write).
    pub fn good_replicas(&self, max_lag: i64) -> usize {
        let now = crate::clock::now_ms();
        self.replica_peers()
            .filter(|(_, p)| p.state == crate::replication::PeerState::Online && now - p.ack_time_ms <= max_lag * 1000)
            .count()
    }
}

/// The encoding limits of collections built in one go (snapshot loading, RESTORE).
pub fn build_limits(c: &crate::config::Config) -> crate::db::BuildLimits {
    crate::db::BuildLimits {
        hash: crate::db::hash::HashLimits {
            max_entries: c.get_int(P::HashMaxListpackEntries).max(0) as u64,
            max_value: c.get_int(P::HashMaxListpackValue).max(0) as u64,
        },
        max_intset: c.get_int(P::SetMaxIntsetEntries).max(0) as u64,
        zset_entries: c.get_int(P::ZsetMaxListpackEntries),
        zset_value: c.get_int(P::ZsetMaxListpackValue),
        stream: crate::db::stream::NodeLimits {
            max_bytes: c.get_int(P::StreamNodeMaxBytes).max(0) as u64,
            max_entries: c.get_int(P::StreamNodeMaxEntries).max(0) as u64,
        },
    }
}
