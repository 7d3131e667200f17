//! One connected client as the executor sees it: identity and connection flags, its
//! transaction, subscriptions, reply mode, a blocking command it waits in, and what
//! replication knows of it.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::mpsc::UnboundedSender;

use super::{ClientId, ClientOutput, ConnFlags, IdHasher, ProtocolVersion};

/// One connected client, as the executor sees it.
/// The Lua debugger's mode (SCRIPT DEBUG): YES runs the session on a private view of the
/// data that is thrown away, SYNC on the data itself with the server held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LuaDebug {
    Yes,
    Sync,
}

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
    /// A blocking command that has nothing to serve yet (its handler's `Next::Block`): the
    /// pipeline runner parks the client on it.
    pub block_request: Option<BlockRequest>,
    /// While parked: the batch it was running and where it stopped.
    pub blocked: Option<Blocked>,
    /// While a woken client's blocking command runs again: the ready key it is served from
    /// (Redis serves from that key only, whatever the others hold).
    pub serving: Option<Bytes>,
    /// Inside EXEC (or, later, a script): blocking commands answer as if timed out.
    pub deny_blocking: bool,
    /// READONLY: reads of a replica's master's slots are served here (cluster mode).
    pub cluster_readonly: bool,
    /// ASKING: the next command may touch a slot this node is importing.
    pub asking: bool,
    /// Commands inside an EXEC that was already admitted under maxmemory (and, later,
    /// allow-oom scripts) are not refused one by one.
    pub deny_oom_exempt: bool,
    /// While a script runs commands through this client (SORT sorts sets, MONITOR says `lua`).
    pub in_script: bool,
    /// SCRIPT DEBUG YES|SYNC: the client's next EVAL runs under the Lua debugger.
    pub lua_debug: Option<LuaDebug>,
    /// The log offset this client's latest records end at: its replies leave once the log
    /// is durable (per appendfsync) that far (0: nothing to wait for).
    pub log_wait: u64,
    /// CLIENT NO-EVICT.
    pub no_evict: bool,
    /// MONITOR: receives every command run.
    pub monitor: bool,
    /// MULTI/EXEC and WATCH.
    pub txn: Transaction,
    /// Pub/Sub subscriptions.
    pub subs: Subscriptions,
    /// CLIENT REPLY.
    pub replies: ReplyMode,
    /// REPLCONF listening-port: the port a replica says it serves on.
    pub replconf_port: u16,
    /// REPLCONF rdb-only 1: the peer wants an RDB file alone
    /// (redis-cli --rdb, --functions-rdb), which this server does not produce.
    pub rdb_only: bool,
    /// `REPLCONF rdb-filter-only functions`: an RDB-only transfer holds the functions alone.
    pub rdb_functions_only: bool,
    /// `REPLCONF capa vermilion`: a Vermilion replica, which takes the log's own stream
    /// (any other gets Redis's: an RDB file and plain commands).
    pub capa_vermilion: bool,
    /// Set once the connection asked for the replication stream (PSYNC/SYNC).
    pub replica: Option<crate::replication::Peer>,
    /// WAIT: the offset replicas must acknowledge and how many (while parked in it).
    pub wait_target: Option<(u64, usize)>,
}

/// A client's transaction: the MULTI queue and what WATCH watches.
#[derive(Default)]
pub struct Transaction {
    /// Between MULTI and EXEC: the queued commands.
    pub multi: Option<Vec<QueuedCommand>>,
    /// While EXEC runs this client's queue: how many commands it holds (the client still
    /// shows as in MULTI, as in Redis: CLIENT LIST `flags=x multi=<n>`, ACL LOG context
    /// `multi`). See [`Client::in_exec`].
    pub exec_queued: Option<usize>,
    /// A command was refused while queueing: EXEC answers EXECABORT.
    pub multi_dirty: bool,
    /// WATCHed (db, key) pairs.
    pub watched: Vec<(usize, Bytes)>,
    /// The watched keys that were already logically expired at WATCH (Redis 7's
    /// `watchedKey.expired`): their deletion is no change, and their expiry no abort.
    pub watched_expired: Vec<(usize, Bytes)>,
    /// A watched key changed: EXEC answers a null array.
    pub cas_dirty: bool,
}

/// A client's subscriptions, in the order they were made.
#[derive(Debug, Default)]
pub struct Subscriptions {
    /// Subscriptions, in the order they were made.
    pub channels: Vec<Bytes>,
    pub patterns: Vec<Bytes>,
    pub shard_channels: Vec<Bytes>,
}

/// CLIENT REPLY's state.
#[derive(Debug, Default)]
pub struct ReplyMode {
    /// CLIENT REPLY OFF: nothing is sent back.
    pub reply_off: bool,
    /// CLIENT REPLY SKIP: the next command's reply is dropped (`skip_next` becomes `skip`).
    pub reply_skip_next: bool,
    pub reply_skip: bool,
}

/// The connected clients by id (boxed: the running client is taken out and put back for
/// every batch, and a box moves as one pointer).
pub type ClientTable = HashMap<ClientId, Box<Client>, std::hash::BuildHasherDefault<IdHasher>>;

/// A command queued by MULTI: resolved when queued (EXEC runs it without a second lookup,
/// as Redis keeps the command pointer), with its arguments.
pub type QueuedCommand = (&'static crate::spec::CommandSpec, Vec<Bytes>);

/// What a blocking command asks for when it finds nothing to serve: the executor parks the
/// client on `keys` and runs the command again when one of them is written, or answers
/// `timeout_reply` at the deadline. The handler states it as its next step
/// (`commands::Next::Block`) and returns [`Reply::NoReply`].
#[derive(Debug, Clone, PartialEq)]
pub struct BlockRequest {
    pub keys: Vec<Bytes>,
    /// The type a key must hold to serve the client: a ready key of another type leaves it
    /// blocked (Redis 7.0 serves list waiters from lists only, and so on).
    pub kind: BlockKind,
    /// Absolute ms; `None` blocks forever.
    pub deadline_ms: Option<i64>,
    pub timeout_reply: crate::protocol::Reply,
    /// The command to run again when a key is ready, if not the one sent (XREAD's `$`
    /// becomes the ID it stood for when the client blocked).
    pub rerun: Option<Vec<Bytes>>,
}

/// What a blocked client waits for (Redis's `btype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    List,
    ZSet,
    /// XREAD: new entries of a stream.
    Stream,
    /// XREADGROUP: new entries for a group, or an error when the stream or the group goes.
    StreamGroup,
    /// No key: WAIT, or a client held at a command (a pause, a full output).
    NoKey,
}

impl BlockKind {
    /// Whether a ready key holding `value` (`None`: gone) is for a client waiting for this
    /// kind: XREADGROUP waiters hear of a stream that went (Redis 7.0 answers them).
    pub fn served_by(self, value: Option<&crate::db::Value>) -> bool {
        use crate::db::Value;
        matches!(
            (self, value),
            (BlockKind::List, Some(Value::List(_)))
                | (BlockKind::ZSet, Some(Value::ZSet(_)))
                | (BlockKind::Stream, Some(Value::Stream(_)))
                | (BlockKind::StreamGroup, _)
        )
    }
}

/// A client waiting in a blocking command, with the rest of its pipeline.
#[derive(Debug)]
pub struct Blocked {
    pub cmds: Vec<Vec<Bytes>>,
    /// The blocking command is `cmds[index]`; the ones after it wait their turn.
    pub index: usize,
    pub db: usize,
    pub keys: Vec<Bytes>,
    /// The type a ready key must hold to serve it.
    pub kind: BlockKind,
    pub deadline_ms: Option<i64>,
    pub timeout_reply: crate::protocol::Reply,
    pub protocol_error: Option<String>,
}

impl Blocked {
    /// A batch held at `cmds[index]` on no key and with no deadline (a pause, a full output;
    /// or, resumed after `index`, a writer waiting for the waiters it served).
    pub fn held(cmds: Vec<Vec<Bytes>>, index: usize, db: usize, protocol_error: Option<String>) -> Self {
        Blocked {
            cmds,
            index,
            db,
            keys: Vec::new(),
            kind: BlockKind::NoKey,
            deadline_ms: None,
            timeout_reply: crate::protocol::Reply::NoReply,
            protocol_error,
        }
    }
}

impl Client {
    /// SCRIPT DEBUG's EVAL failed before its script ran (a bad key count, a compile error, a
    /// refusal): Redis had started the session, so `<endsession>` comes first, then the
    /// error, then the connection closes.
    pub fn refuse_debug_session(&mut self) {
        self.out.extend_from_slice(b"*1\r\n+<endsession>\r\n");
        self.close_after_reply = true;
        self.lua_debug = None;
    }

    /// EXEC is running this client's queued commands.
    pub fn in_exec(&self) -> bool {
        self.txn.exec_queued.is_some()
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
            cluster_readonly: false,
            asking: false,
            deny_oom_exempt: false,
            in_script: false,
            lua_debug: None,
            log_wait: 0,
            no_evict: false,
            monitor: false,
            replconf_port: 0,
            rdb_only: false,
            rdb_functions_only: false,
            capa_vermilion: false,
            replica: None,
            wait_target: None,
            serving: None,
            txn: Transaction::default(),
            subs: Subscriptions::default(),
            replies: ReplyMode::default(),
        }
    }

    /// In RESP2 a client with subscriptions may only run the pub/sub commands.
    pub fn in_subscribed_mode(&self) -> bool {
        self.proto == ProtocolVersion::Resp2
            && !(self.subs.channels.is_empty() && self.subs.patterns.is_empty() && self.subs.shard_channels.is_empty())
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
