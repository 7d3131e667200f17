//! The executor: the one thread that owns all data and runs every command.
//!
//! Connection tasks send [`Request`]s over one channel. Each turn the executor drains every
//! pending request (a batch across clients), runs the commands in arrival order, then
//! releases each client's accumulated replies with one write, so a pipeline of N commands
//! costs one wake-up and one write. Between batches it runs the periodic `cron` (active
//! expiry). Atomicity of every command follows from there being one thread.
//!
//! Replies are encoded here, not in the connection task: the reply is then copied once, from
//! the value straight into the output buffer, and the client's protocol version (which HELLO
//! changes mid-pipeline) is known exactly where the reply is produced. They are written to
//! the socket from here too (a non-blocking duplicate of the connection's fd), which saves
//! the hop back to the connection task; only bytes that would block go through the task.

mod after_command;
mod blocking;
mod checks;
mod cron;
mod flow;
mod inbox;
mod load;
mod persist;
mod replicate;
mod replies;
mod script;
mod transaction;

use crate::clock::Stamp;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc::UnboundedSender;

use crate::commands::{self, CommandSpec, Ctx, Flag, Resolved};
use crate::config::Config;
use crate::db::Keyspace;
use crate::log;
use crate::protocol::{encode_reply, Reply};
use crate::state::{Client, ClientId, ClientOutput, ConnFlags, ServerState, SharedLimits};
pub use inbox::busy_answers;

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
        resume: tokio::sync::oneshot::Sender<Option<(String, u64)>>,
    },
    /// The primary wants an acknowledgement of what it sent so far.
    ReplAckWanted {
        link: u64,
    },
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
}

/// Unsent reply bytes past which a client's pipeline waits for its output to drain, and
/// below which it goes on; and the batch output size from which the check is made.
pub const OUTPUT_HIGH_WATER: u64 = 32 * 1024 * 1024;
pub const OUTPUT_LOW_WATER: u64 = 8 * 1024 * 1024;
const OUTPUT_CHECK: usize = 1024 * 1024;

/// All the state; lives on the executor thread.
pub struct Executor {
    pub ks: Keyspace,
    pub server: ServerState,
    touched: Vec<ClientId>,
    /// Clients parked in blocking commands, per (db, key), in the order they blocked.
    blocking: HashMap<(usize, Bytes), VecDeque<ClientId>>,
    /// Keys written while someone waits on them, to serve after the current command.
    ready: VecDeque<(usize, Bytes)>,
    /// Deadlines of parked clients.
    timeouts: BTreeSet<(i64, ClientId)>,
    /// How much of `Keyspace::expired` has been signalled to watchers.
    expired_seen: usize,
    /// How much of `Keyspace::expired` has been published as `expired` events.
    expired_notified: usize,
    /// Clients held by CLIENT PAUSE, in the order they stopped.
    postponed: VecDeque<ClientId>,
    /// Clients whose pipelines wait for their output to drain (see `throttle`).
    throttled: Vec<ClientId>,
    /// Requests, readable from inside a busy script (`None` when driven without a channel,
    /// as benches do).
    inbox: Option<std::rc::Rc<inbox::Inbox>>,
    /// What a busy script calls to answer other clients (the inbox's pump), made once.
    busy_pump: Option<std::rc::Rc<dyn Fn()>>,
    /// What the last script did (the AOF builds on it).
    pub last_script_outcome: Option<crate::scripting::ScriptOutcome>,
    /// Collect a script's write effects even with no log to write them to (tests read them
    /// from `last_script_outcome`).
    pub keep_script_effects: bool,
    /// The durable log (`appendonly yes`).
    pub aof: Option<crate::aof::Aof>,
    /// Log records of the running top-level command (see persist.rs).
    pending: Vec<persist::Pending>,
    /// Depth of `execute` calls (EXEC runs its commands through it again).
    exec_depth: usize,
    /// Replaying the log: nothing is logged, nothing expires, no eviction.
    loading: bool,
    /// The frozen time of the script record being replayed.
    replay_time_ms: Option<i64>,
    /// The scripts the log (or the primary's stream) holds in its current epoch, by SHA1:
    /// an EVALSHA record runs the body kept here, whatever the script cache holds.
    stream_scripts: HashMap<String, Bytes>,
    /// The database the loader was in at the end of the last load.
    loaded_db: usize,
    /// A replica: the client the primary's stream runs as, and its database.
    master_client: Option<Client>,
    master_db: usize,
    /// A replica is applying its primary's live stream (not a load from disk): the
    /// PUBLISH records in it reach this server's subscribers.
    live_stream: bool,
    /// Clients whose pipelines wait to resume at the next `serve_ready`: those CLIENT
    /// UNBLOCK answered (see `unblock_now`), and those that wrote a key clients wait on (the
    /// waiters are served first, as Redis serves them after every command).
    unblocked: Vec<ClientId>,
    /// Clients parked in WAIT.
    waiting_acks: Vec<ClientId>,
    /// When the replication cron last ran (ms).
    repl_cron_ms: i64,
    /// A replica: the primary asked for an acknowledgement (sent after the next flush).
    ack_wanted: bool,
    /// A primary: a client parked in WAIT; replicas are asked to acknowledge after the next
    /// flush.
    want_acks: bool,
    /// Stream bytes wait in replicas' outputs until then (see `feed_replicas`).
    repl_flush_due: Option<Instant>,
    /// Clients whose replies wait for a failed log write to succeed.
    held: Vec<ClientId>,
    /// Subscribers whose pushes wait for the batches that follow (see `release_batch`),
    /// and since when.
    later: Vec<ClientId>,
    later_since: Option<Instant>,
    /// A log operation asked for during the running top-level command, and whether its
    /// result is that command's reply (see `execute`).
    deferred_persist: Option<(crate::state::PersistRequest, bool)>,
    /// The executor's own request channel, for the log's fsync thread to wake it.
    wake_tx: Option<RequestTx>,
    /// Bytes loaded so far and when progress was last logged.
    loading_progress: (u64, Instant),
    /// Wall-clock ms, read once per client batch: the commands of one pipeline run within
    /// microseconds of each other, and the clock read is not free on every machine.
    now_ms: i64,
    /// When the previous command of this batch ended: the next one starts there, so a
    /// command back to back with another costs one clock read, not two. Cleared wherever
    /// time passes between commands (a new batch, an early send).
    clock_mark: Option<Stamp>,
    /// Turns the instants commands start at into wall-clock ms (see `clock::Anchor`).
    anchor: crate::clock::Anchor,
    /// When the cron last ran the allocator's collection (see `util::release_memory`).
    memory_released_ms: i64,
    /// A large buffer was let go: the next cron forces the allocator's collection.
    purge_memory: bool,
}

/// Output held by a disconnected client past which its memory is handed back at once.
const PURGE_AFTER_BYTES: u64 = 1024 * 1024;

/// What `used_memory` counts besides the data (Redis reports about this much for an empty
/// server).
const USED_MEMORY_BASELINE: usize = 1024 * 1024;

/// How long one slice of a log rewrite may hold the executor.
const REWRITE_SLICE_US: u64 = 500;

/// Requests handled per turn before replies are released (bounds reply latency).
const MAX_BATCH: usize = 4096;

/// The executor thread's stack.
const EXECUTOR_STACK: usize = 64 << 20;

impl Executor {
    pub fn new(config: Config) -> Self {
        let databases = config.get_int("databases").max(1) as usize;
        let mut ks = Keyspace::new(databases);
        ks.lfu.log_factor = config.get_int("lfu-log-factor").max(0) as u64;
        ks.lfu.decay_time = config.get_int("lfu-decay-time").max(0) as u64;
        // The counter's rate is measured here (2 ms), not on the first command timed.
        Stamp::calibrate();
        Executor {
            ks,
            server: ServerState::new(config),
            touched: Vec::new(),
            blocking: HashMap::new(),
            ready: VecDeque::new(),
            timeouts: BTreeSet::new(),
            expired_seen: 0,
            postponed: VecDeque::new(),
            throttled: Vec::new(),
            expired_notified: 0,
            last_script_outcome: None,
            keep_script_effects: false,
            inbox: None,
            busy_pump: None,
            aof: None,
            pending: Vec::new(),
            exec_depth: 0,
            loading: false,
            replay_time_ms: None,
            stream_scripts: HashMap::new(),
            loaded_db: 0,
            master_client: None,
            master_db: 0,
            live_stream: false,
            unblocked: Vec::new(),
            waiting_acks: Vec::new(),
            repl_cron_ms: 0,
            ack_wanted: false,
            want_acks: false,
            repl_flush_due: None,
            held: Vec::new(),
            later: Vec::new(),
            later_since: None,
            loading_progress: (0, Instant::now()),
            deferred_persist: None,
            wake_tx: None,
            now_ms: crate::clock::now_ms(),
            clock_mark: None,
            anchor: crate::clock::Anchor::now(),
            memory_released_ms: 0,
            purge_memory: false,
        }
    }

    /// Starts the executor thread; it stops after SHUTDOWN or a signal, or when every sender
    /// is gone. With `network`, a current-thread runtime holding the connections, the
    /// executor thread drives it whenever it waits for requests (see `inbox.rs`); without it,
    /// the connections run on threads of their own.
    pub fn spawn(
        config: Config,
        network: Option<tokio::runtime::Runtime>,
    ) -> std::io::Result<(ExecutorHandle, std::thread::JoinHandle<()>)> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        // The executor is built on its own thread: the Lua state may not cross threads.
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let wake_tx = tx.clone();
        // A script may return a table nested 7,995 levels deep (Redis's limit, see
        // `scripting::convert`): converting, encoding and dropping that reply recurse once per
        // level, past the default 2 MB. Only the pages used are committed.
        let join = std::thread::Builder::new().name("executor".into()).stack_size(EXECUTOR_STACK).spawn(move || {
            let mut exec = Executor::new(config);
            exec.wake_tx = Some(wake_tx);
            let _ = ready_tx.send((exec.server.limits.clone(), exec.server.script_watch.clone()));
            match inbox::Waiter::new(network) {
                Ok(waiter) => exec.run(rx, waiter),
                Err(e) => log::warning(&format!("Failed to start the executor's timer: {e}")),
            }
        })?;
        let (limits, script_watch) = ready_rx.recv().map_err(|_| std::io::Error::other("the executor did not start"))?;
        Ok((ExecutorHandle { tx, limits, script_watch }, join))
    }

    fn run(mut self, rx: RequestRx, waiter: inbox::Waiter) {
        let inbox = std::rc::Rc::new(inbox::Inbox::new(rx, waiter, self.server.script_watch.clone()));
        self.inbox = Some(inbox.clone());
        let pump = inbox.clone();
        self.busy_pump = Some(std::rc::Rc::new(move || pump.pump()));
        if let Err(e) = self.start_aof() {
            log::warning(&e);
            std::process::exit(1);
        }
        self.server.limits.loading.store(false, std::sync::atomic::Ordering::Release);
        log::notice("Ready to accept connections tcp");
        self.start_replication_from_config();
        let mut next_cron = Instant::now();
        loop {
            let hz = self.server.hz;
            let mut wait = next_cron.saturating_duration_since(Instant::now());
            if let Some((until, _)) = self.server.pause {
                wait = wait.min(until.saturating_duration_since(Instant::now()));
            }
            if let Some(&(deadline, _)) = self.timeouts.first() {
                let until = (deadline - crate::clock::now_ms()).max(0) as u64;
                wait = wait.min(Duration::from_millis(until));
            }
            if let Some(due) = self.repl_flush_due {
                wait = wait.min(due.saturating_duration_since(Instant::now()));
            }
            if self.rewriting() {
                // A rewrite in progress: serialize a slice, and come back at once if idle.
                self.release_later();
                self.rewrite_tick(Duration::from_micros(REWRITE_SLICE_US));
                if self.rewriting() {
                    wait = Duration::ZERO;
                }
            }
            match inbox.next(wait) {
                Ok(req) => {
                    self.handle(req);
                    for _ in 1..MAX_BATCH {
                        match inbox.try_next() {
                            Some(req) => self.handle(req),
                            None => break,
                        }
                    }
                    self.release_batch(&inbox);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            }
            if self.repl_flush_due.is_some_and(|due| Instant::now() >= due) {
                self.flush_replica_output();
            }
            if !self.timeouts.is_empty() {
                self.expire_blocked();
                self.release_replies();
            }
            if !self.postponed.is_empty() {
                self.resume_postponed();
                self.release_replies();
            }
            if !self.throttled.is_empty() {
                self.resume_throttled();
                self.release_replies();
            }
            if self.server.shutdown.is_some() {
                self.shutdown();
                // The connections write what they hold (the Close messages just sent).
                inbox.drive_network();
                return;
            }
            if Instant::now() >= next_cron {
                self.release_later();
                self.cron(hz);
                next_cron = Instant::now() + Duration::from_micros(1_000_000 / hz);
            }
        }
    }

    /// Connects a client without a socket (benches and tests drive the executor this way);
    /// its replies arrive on the returned receiver after `release_replies`.
    pub fn connect_detached(&mut self, id: ClientId) -> tokio::sync::mpsc::UnboundedReceiver<ClientOutput> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        self.handle(Request::Connect {
            id,
            addr: format!("127.0.0.1:{id}"),
            laddr: "127.0.0.1:6379".into(),
            tx,
            flags: Arc::new(ConnFlags::default()),
            sock: None,
        });
        rx
    }

    /// Handles one request (public so benches can drive the executor without sockets).
    pub fn handle(&mut self, req: Request) {
        self.clock_mark = None;
        match req {
            Request::Connect { id, addr, laddr, tx, flags, sock } => {
                let authed = self.server.acl.default_needs_no_auth();
                self.server.stats.total_connections_received += 1;
                if let Some(inbox) = &self.inbox {
                    inbox.connected(id, tx.clone(), flags.clone());
                }
                let mut client = Box::new(Client::new(id, addr, laddr, tx, flags, authed));
                client.sock = sock;
                self.server.clients.insert(id, client);
            }
            Request::Disconnect { id } => {
                self.remove_client(id);
            }
            // Handled by the loop's check of throttled clients after every request.
            Request::Drained { .. } => {}
            Request::Commands { id, cmds, protocol_error } => {
                let Some(mut client) = self.server.clients.remove(&id) else {
                    return;
                };
                // One clock read gives the batch its "now" (expiry); its commands are timed
                // with stamps (clock::Stamp).
                self.now_ms = self.anchor.ms_at(Instant::now());
                client.last_interaction_ms = self.now_ms;
                client.open_batches += 1;
                if let Some(blocked) = client.blocked.as_mut() {
                    // A pipeline that goes on behind a blocked command waits with it.
                    blocked.cmds.extend(cmds);
                    if blocked.protocol_error.is_none() {
                        blocked.protocol_error = protocol_error;
                    }
                    self.server.clients.insert(id, client);
                    return;
                }
                self.run_commands(&mut client, cmds, 0, protocol_error, Some(Stamp::now()));
                self.finish_step(&mut client);
                self.server.clients.insert(id, client);
                self.serve_ready();
                if !self.postponed.is_empty() && self.server.pause.is_none() {
                    self.resume_postponed();
                }
                if self.server.repl.acked {
                    self.serve_waits();
                }
                if self.server.repl.kill_master {
                    self.replication_cron();
                }
            }
            // release_replies, which follows every turn, lets go of what the sync covers.
            Request::LogSynced => {}
            Request::ReplSnapshot { link, replid, offset, path } => self.install_snapshot(link, replid, offset, path),
            Request::ReplContinue { link, replid } => self.continue_stream(link, replid),
            Request::ReplStream { link, offset, data } => self.apply_stream(link, offset, data),
            Request::ReplLinkDown { link, resume } => {
                let _ = resume.send(self.link_down(link));
            }
            Request::ReplAckWanted { link } => {
                self.ack_wanted = self.ack_wanted || self.server.repl.master.as_ref().is_some_and(|m| m.id == link)
            }
            Request::Signal { name } => {
                log::warning(&format!("Received {name} scheduling shutdown..."));
                self.server.shutdown = Some(crate::state::ShutdownRequest { save: true });
            }
        }
    }

    /// Runs `cmds[start..]` for `client`, encoding each reply, until the end of the batch or a
    /// command that blocks (the client is then parked with the rest of its batch).
    /// `now`: a clock read taken just before, if any (the first command starts there).
    fn run_commands(
        &mut self,
        client: &mut Client,
        cmds: Vec<Vec<Bytes>>,
        start: usize,
        protocol_error: Option<String>,
        now: Option<Stamp>,
    ) {
        self.clock_mark = now;
        self.run_batch(client, cmds, start, protocol_error);
        self.clock_mark = None;
    }

    fn run_batch(&mut self, client: &mut Client, mut cmds: Vec<Vec<Bytes>>, start: usize, protocol_error: Option<String>) {
        for i in start..cmds.len() {
            if client.close_after_reply {
                break;
            }
            if self.must_wait_for_pause(&cmds[i]) {
                self.postpone(client, cmds, i, protocol_error);
                return;
            }
            // A command MULTI queues takes its arguments (cmds[i] is left empty).
            let reply = self.execute_args(client, Args::Owned(&mut cmds[i]), None);
            if let Some(request) = client.block_request.take() {
                self.park(client, cmds, i, request, protocol_error);
                return;
            }
            self.emit(client, &reply);
            // CLIENT REPLY SKIP silences exactly the command after it.
            client.reply_skip = std::mem::take(&mut client.reply_skip_next);
            if client.tracking.is_some() {
                self.after_tracked_command(client, &cmds[i]);
            }
            // The command wrote a key clients wait on: Redis serves them before the next
            // command, so the rest of this pipeline waits until they are served (it resumes
            // in `serve_ready`, once this client is back in the table).
            if !self.ready.is_empty() && i + 1 < cmds.len() && client.multi.is_none() {
                // `index` is the command already answered: `resume_after_block` goes on after it.
                client.blocked = Some(crate::state::Blocked::held(cmds, i, client.db, protocol_error));
                self.unblocked.push(client.id);
                return;
            }
            // A client that pipelines without reading: once its unsent replies pass the high
            // water mark, the rest of its batch waits until they drain.
            if client.out.len() >= OUTPUT_CHECK && i + 1 < cmds.len() && self.output_backlogged(client) {
                self.throttle(client, cmds, i + 1, protocol_error);
                return;
            }
        }
        if let Some(err) = protocol_error {
            encode_reply(&Reply::Error(format!("ERR {err}").into()), client.proto, &mut client.out);
            client.close_after_reply = true;
        }
    }

    /// After running a client's commands: unless it is parked, every open batch is done and
    /// its replies are due.
    fn finish_step(&mut self, client: &mut Client) {
        if client.blocked.is_none() {
            client.completed_batches += std::mem::take(&mut client.open_batches);
            self.touched.push(client.id);
        }
    }

    /// Encodes a reply into the client's output, counting errors for INFO.
    fn emit(&mut self, client: &mut Client, reply: &Reply) {
        if let Reply::Error(text) = reply {
            self.server.stats.count_error(text);
        }
        // A replica reads only the stream: its REPLCONF ACKs and anything else it sends get
        // no reply, as in Redis. CLIENT REPLY OFF|SKIP silence replies but not pushes
        // ((un)subscribe confirmations), in RESP2 too, as in Redis.
        let push = |r: &Reply| matches!(r, Reply::Push(_));
        let pushing = push(reply) || matches!(reply, Reply::Sequence(r) if r.first().is_some_and(push));
        if client.replica.is_some() || ((client.reply_off || client.reply_skip) && !pushing) {
            return;
        }
        encode_reply(reply, client.proto, &mut client.out);
    }

    /// After a tracking client's command: invalidations its own command raised follow the
    /// reply, and CLIENT CACHING's choice lasts one command (outside MULTI, CLIENT excepted).
    fn after_tracked_command(&mut self, client: &mut Client, args: &[Bytes]) {
        if !client.tracking_after_reply.is_empty() {
            let pending = std::mem::take(&mut client.tracking_after_reply);
            client.out.extend_from_slice(&pending);
        }
        let is_client = args.first().is_some_and(|a| a.eq_ignore_ascii_case(b"client"));
        if let Some(m) = client.tracking.as_mut() {
            if client.multi.is_none() && !is_client {
                m.caching = None;
            }
        }
    }

    /// Forgets a client (disconnected or killed), including any place it holds in a queue.
    fn remove_client(&mut self, id: ClientId) -> Option<Client> {
        let mut client = *self.server.clients.remove(&id)?;
        if let Some(inbox) = &self.inbox {
            inbox.disconnected(id);
        }
        if let Some(blocked) = client.blocked.take() {
            self.unpark(id, &blocked);
        }
        let mut ctx = Ctx { ks: &mut self.ks, client: &mut client, server: &mut self.server, now_ms: self.now_ms };
        commands::transactions::discard_transaction(&mut ctx);
        commands::pubsub::unsubscribe_all(&mut ctx);
        self.server.monitors.retain(|m| *m != id);
        self.postponed.retain(|p| *p != id);
        self.throttled.retain(|p| *p != id);
        if client.tracking.take().is_some() {
            self.server.tracking.clients -= 1;
            self.server.tracking.bcast.retain(|c| *c != id);
        }
        self.forget_replica(id);
        // A client that held a large output (a subscriber cut off at its limit): what it held
        // goes back to the system at the next cron, not whenever the allocator gets to it.
        let held = client.out.capacity() as u64 + client.flags.task_pending.load(std::sync::atomic::Ordering::Acquire);
        if held >= PURGE_AFTER_BYTES {
            self.purge_memory = true;
        }
        Some(client)
    }

    /// Resolves, checks and runs one command: the one place where table flags drive the
    /// generic checks (existence, arity, authentication). When a top-level command ends,
    /// its log records are committed to the log buffer.
    pub fn execute(&mut self, client: &mut Client, args: &[Bytes]) -> Reply {
        self.execute_args(client, Args::Borrowed(args), None)
    }

    /// `execute` for arguments the batch owns (a command queued by MULTI takes them rather
    /// than a copy) or a command already resolved (EXEC's queue).
    fn execute_args(&mut self, client: &mut Client, args: Args<'_>, resolved: Option<&'static CommandSpec>) -> Reply {
        self.exec_depth += 1;
        let reply = self.execute_checked(client, args, resolved);
        self.exec_depth -= 1;
        if !self.server.unblock_list.is_empty() {
            self.unblock_now();
        }
        if self.exec_depth == 0 {
            if self.logging() && self.commit_pending() {
                client.log_wait = self.aof.as_ref().map_or(0, |a| a.buffered_end());
            }
            if let Some((request, own_reply)) = self.deferred_persist.take() {
                let result = self.persist_command(request);
                if matches!(request, crate::state::PersistRequest::Reload | crate::state::PersistRequest::LoadAof) {
                    // The log starts again from its files: no offset of before applies.
                    client.log_wait = 0;
                }
                if own_reply {
                    return result;
                }
            }
        }
        reply
    }

    fn execute_checked(&mut self, client: &mut Client, argv: Args<'_>, resolved: Option<&'static CommandSpec>) -> Reply {
        let args = argv.get();
        let resolution = match resolved {
            Some(cmd) => Resolved::Found(cmd),
            None => commands::resolve(args),
        };
        let cmd = match resolution {
            Resolved::Found(cmd) => cmd,
            Resolved::Unknown => return Self::reject(client, commands::unknown_command_error(args)),
            Resolved::UnknownSubcommand => return Self::reject(client, commands::unknown_subcommand_error(args)),
            Resolved::WrongArity(cmd) => return self.refuse(client, cmd, commands::wrong_arity_error(cmd)),
        };
        if !client.authenticated && !cmd.has(Flag::NoAuth) {
            return self.refuse(client, cmd, Reply::error("NOAUTH Authentication required."));
        }
        if let Err(refusal) = self.acl_check(client, cmd, args) {
            if client.multi.is_some() {
                client.multi_dirty = true;
            }
            return self.refuse(client, cmd, refusal);
        }
        if client.in_subscribed_mode()
            && !matches!(
                cmd.name,
                "subscribe" | "ssubscribe" | "unsubscribe" | "sunsubscribe" | "psubscribe" | "punsubscribe" | "ping" | "quit" | "reset"
            )
        {
            let why = format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                cmd.name
            );
            return self.refuse(client, cmd, Reply::Error(why.into()));
        }
        // Over maxmemory (after trying to evict): denyoom commands are refused, and inside
        // MULTI every command that would be queued, as Redis does.
        let queues = client.multi.is_some() && !matches!(cmd.name, "exec" | "discard" | "multi" | "watch" | "quit" | "reset");
        // Eviction runs before every command, as in Redis (a read too may find memory over).
        let oom = !self.loading && !self.within_maxmemory();
        // A script's declared flags decide for it (inside EXEC the script's own check does).
        let deny_oom = |c: &CommandSpec, a: &[Bytes]| match self.declared_flags(c, a).filter(|_| !client.in_exec()) {
            Some(f) => !(f.allow_oom || f.no_writes),
            None => c.has(Flag::DenyOom),
        };
        if oom && !client.deny_oom_exempt && (queues || Self::any_to_run(client, cmd, args, deny_oom)) {
            return self.refuse(client, cmd, Reply::error("OOM command not allowed when used memory > 'maxmemory'."));
        }
        // While the log cannot be written, writes are refused (reads go on); so are writes
        // to a read-only replica, and writes without enough good replicas. Queued commands
        // are checked as they arrive (a refusal dooms the transaction).
        if let Some(refusal) = self.log_write_refusal().or_else(|| self.replication_write_refusal()) {
            let writes = |c: &CommandSpec, a: &[Bytes]| self.declared_writes(c, a).unwrap_or(c.has(Flag::Write));
            if Self::any_to_run(client, cmd, args, writes) {
                return self.refuse(client, cmd, refusal);
            }
        }
        if !self.loading && self.stale_replica() && !self.allowed_when_stale(cmd, args) {
            return self.refuse(client, cmd, Reply::error(replicate::MASTERDOWN));
        }
        // Inside MULTI everything but the transaction commands themselves is queued.
        if let Some(queue) = client.multi.as_mut() {
            if queues {
                if cmd.has(Flag::NoMulti) {
                    client.multi_dirty = true;
                    return Reply::error("ERR Command not allowed inside a transaction");
                }
                queue.push((cmd, argv.take()));
                return Reply::status("QUEUED");
            }
        }

        let start = self.clock_mark.take().unwrap_or_else(Stamp::now);
        let (mut reply, call_end) = self.run_command(client, cmd, args, Some(start));
        // The command's end time serves for the slowlog too, unless more ran after it.
        let mut end = call_end;
        let mut scripted = false;
        if let Some(call) = client.script_call.take() {
            end = None;
            scripted = true;
            let recording = self.recording();
            reply = self.run_script(client, args, &call, Instant::now());
            if recording {
                if let Some(outcome) = self.last_script_outcome.take() {
                    self.log_script(client, args, &call, &outcome);
                    self.last_script_outcome = Some(outcome);
                }
            }
        }
        if let Some(request) = self.server.repl_request.take() {
            end = None;
            reply = self.replication_request(client, request);
        }
        if let Some(request) = self.server.persist_request.take() {
            // Runs once the top-level command's records are committed: inside EXEC, the
            // transaction's earlier records must not land on the wrong side of a rewrite.
            let nested = self.exec_depth > 1;
            self.deferred_persist = Some((request, !nested));
            if nested {
                reply = match request {
                    crate::state::PersistRequest::Rewrite => Reply::status("Background append only file rewriting scheduled"),
                    crate::state::PersistRequest::BgSave { .. } => Reply::status("Background saving scheduled"),
                    crate::state::PersistRequest::Reconfigure => reply,
                    _ => Reply::OK,
                };
            }
        }
        let end = end.unwrap_or_else(Stamp::now);
        self.clock_mark = Some(end);
        let elapsed = end.micros_since(start);
        if elapsed >= 1000 && !self.loading {
            // A slow command (DEBUG SLEEP, a big KEYS, a script): the batch clock is stale now.
            self.now_ms = crate::clock::now_ms();
        }
        if scripted {
            // INFO commandstats counts an EVAL's script in its time, and a script that
            // failed (an error raised or returned) as a failed call, as Redis does.
            let stat = self.server.stats.command(cmd.id);
            stat.usec += elapsed;
            if reply.is_error() {
                stat.failed_calls += 1;
            }
            if self.server.latency_tracking {
                self.server.stats.record_latency(cmd.id, elapsed);
            }
        }
        if !cmd.has(Flag::SkipSlowlog) {
            self.slowlog_record(client, args, elapsed);
        }
        let threshold_ms = self.server.latency_threshold_ms;
        if threshold_ms > 0 && elapsed / 1000 >= threshold_ms && !self.loading {
            let event = if cmd.has(Flag::Fast) { "fast-command" } else { "command" };
            self.server.latency.add(event, crate::clock::now_ms() / 1000, elapsed / 1000);
        }
        if std::mem::take(&mut client.exec_requested) {
            reply = self.exec_transaction(client);
            // EXECABORT: EXEC ran and failed.
            if reply.is_error() {
                self.server.stats.command(cmd.id).failed_calls += 1;
            }
        }
        reply
    }

    /// Runs a command that passed its checks, then does what follows every command: watched
    /// keys, blocked clients, expiry and keyspace events, MONITOR, command statistics. Shared
    /// by clients' commands and scripts' `redis.call`.
    /// `timer`: when the command started, for INFO commandstats; the end time is returned for
    /// the slowlog (a clock read costs about 50 ns on a VM: two per command, as in Redis).
    /// Scripts' commands are not timed: their time counts as their EVAL's.
    fn run_command(
        &mut self,
        client: &mut Client,
        cmd: &'static CommandSpec,
        args: &[Bytes],
        timer: Option<Stamp>,
    ) -> (Reply, Option<Stamp>) {
        client.last_cmd = cmd.name;
        if cmd.has(Flag::Write) && self.rewriting() {
            self.capture_before_write(client.db, cmd, args);
        }
        let wiped = self.watched_keys_wiped_by(cmd, args, client.db);
        let dirty_before = self.server.dirty;
        let mut ctx = Ctx { ks: &mut self.ks, client, server: &mut self.server, now_ms: self.now_ms };
        let reply = commands::call(cmd, &mut ctx, args);
        // A script's EVAL ends when the script does (the caller times it).
        let end = timer.filter(|_| client.script_call.is_none()).map(|_| Stamp::now());
        let elapsed = timer.zip(end).map_or(0, |(s, e)| e.micros_since(s));
        if self.server.tracking.clients > 0 {
            self.remember_tracked_keys(client, cmd, args);
            if matches!(cmd.name, "flushdb" | "flushall") {
                self.invalidate_all(client);
            }
        }
        if self.server.dirty != dirty_before {
            self.signal_modified(client, cmd, args);
            if !client.in_script && self.recording() {
                self.log_command(client, cmd, args, &reply);
            }
        } else if !self.server.also_modified.is_empty() {
            // A key signalled without a change (a no-op LTRIM): watchers and trackers only,
            // for the keys listed (the name alone passed: no key positions added again).
            self.signal_modified(client, cmd, &args[..1]);
        } else if cmd.name.starts_with("script|") && self.recording() {
            self.log_script_admin(client, cmd, args, &reply);
        } else if persist::publishes(cmd) && !client.in_script && self.publishing_to_replicas() {
            self.log_publish(client, args);
        }
        for (db, key) in wiped {
            self.touch_watched(Some(client), db, &key);
        }
        self.signal_expired(client);
        self.feed_monitors(client, cmd, args);
        self.publish_events(client);
        // Receivers of PUBLISH get their output released with this batch.
        self.touched.append(&mut self.server.pushed);
        self.server.stats.total_commands_processed += 1;
        let stat = self.server.stats.command(cmd.id);
        stat.calls += 1;
        stat.usec += elapsed;
        if reply.is_error() {
            stat.failed_calls += 1;
        }
        // A script's EVAL is recorded when it ends, with the script's time.
        if self.server.latency_tracking && end.is_some() {
            self.server.stats.record_latency(cmd.id, elapsed);
        }
        (reply, end)
    }

    /// The memory Vermilion reports as `used_memory`: the data estimate plus a fixed
    /// baseline for the server's own structures.
    pub fn used_memory(ks: &Keyspace) -> usize {
        ks.total_mem() + USED_MEMORY_BASELINE
    }
}

/// A command's arguments as the executor receives them.
enum Args<'a> {
    Borrowed(&'a [Bytes]),
    /// The batch's own: taken, not copied, when MULTI queues the command.
    Owned(&'a mut Vec<Bytes>),
}

impl Args<'_> {
    fn get(&self) -> &[Bytes] {
        match self {
            Args::Borrowed(a) => a,
            Args::Owned(v) => v,
        }
    }

    fn take(self) -> Vec<Bytes> {
        match self {
            Args::Borrowed(a) => a.to_vec(),
            Args::Owned(v) => std::mem::take(v),
        }
    }
}
