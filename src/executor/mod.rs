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
mod busy;
mod checks;
mod cluster;
mod cron;
mod debug_session;
mod flow;
mod inbox;
mod load;
mod log_life;
mod persist;
mod rdb_save;
mod readers;
mod replicate;
mod replies;
mod rollback;
mod script;
mod transaction;
mod walks;

use crate::clock::Stamp;
use std::collections::VecDeque;
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::commands::{self, CommandSpec, Ctx, Effects, Flag, Logged, Next, Resolved, Trait};
use crate::config::Config;
use crate::config::P;
use crate::conn::OUTPUT_CHECK;
pub use crate::conn::{busy_answers, ExecutorHandle, Request, RequestRx, RequestTx};
use crate::db::Keyspace;
use crate::log;
use crate::protocol::{encode_reply, Reply};
use crate::state::{Client, ClientId, ClientOutput, ConnFlags, ServerState};

/// All the state; lives on the executor thread.
pub struct Executor {
    pub ks: Keyspace,
    pub server: ServerState,
    touched: Vec<ClientId>,
    /// Clients parked in blocking commands (see blocking.rs).
    waiters: blocking::Waiters,
    /// The buffer every call's handler states its effects in (taken out after each call).
    effects: Effects,
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
    /// The durable log and the records on their way to it (see persist.rs).
    log: persist::LogPipeline,
    /// The running script's declared keys, while a client tracks keys: what its reads
    /// remember for the caller (see `remember_tracked_keys`).
    script_keys: Vec<Bytes>,
    /// The undo record of the running all-or-nothing script (rollback.rs).
    undo: Option<rollback::Undo>,
    /// The Lua debugging session under way (SCRIPT DEBUG), if any.
    debugging: Option<debug_session::Session>,
    /// The script just run was a YES debugging session (its time is its user's).
    private_session_ran: bool,
    /// A background RDB save and the save points' state (see rdb_save.rs).
    rdb: rdb_save::RdbSide,
    /// Depth of `execute` calls (EXEC runs its commands through it again).
    exec_depth: usize,
    /// How commands are applied now, and the loader's state (see load.rs).
    load: load::Loader,
    /// A replica's side of its link to the primary (see replicate/replica.rs).
    replica: replicate::ReplicaSide,
    /// A primary's side of its replicas (see replicate/primary.rs).
    feed: replicate::PrimaryFeed,
    /// Subscribers whose pushes wait for the batches that follow (see `release_batch`),
    /// and since when.
    later: Vec<ClientId>,
    later_since: Option<Instant>,
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
    /// Cluster mode's bus links (see `cluster.rs`).
    cluster: cluster::ClusterSide,
    /// CLUSTER SAVECONFIG's write, for its answer.
    cluster_save_result: Option<Result<(), String>>,
}

/// Output held by a disconnected client past which its memory is handed back at once.
const PURGE_AFTER_BYTES: u64 = 1024 * 1024;

/// Requests handled per turn before replies are released (bounds reply latency).
const MAX_BATCH: usize = 4096;

/// The executor thread's stack.
const EXECUTOR_STACK: usize = 64 << 20;

impl Executor {
    pub fn new(config: Config) -> Self {
        let databases = config.get_int(P::Databases).max(1) as usize;
        let mut ks = Keyspace::new(databases);
        ks.lfu.log_factor = config.get_int(P::LfuLogFactor).max(0) as u64;
        ks.lfu.decay_time = config.get_int(P::LfuDecayTime).max(0) as u64;
        // The counter's rate is measured here (2 ms), not on the first command timed.
        Stamp::calibrate();
        Executor {
            ks,
            server: ServerState::new(config),
            touched: Vec::new(),
            waiters: blocking::Waiters::default(),
            effects: Effects::default(),
            expired_seen: 0,
            postponed: VecDeque::new(),
            throttled: Vec::new(),
            expired_notified: 0,
            last_script_outcome: None,
            keep_script_effects: false,
            inbox: None,
            busy_pump: None,
            log: persist::LogPipeline::default(),
            script_keys: Vec::new(),
            undo: None,
            debugging: None,
            private_session_ran: false,
            rdb: rdb_save::RdbSide::default(),
            exec_depth: 0,
            load: load::Loader::default(),
            replica: replicate::ReplicaSide::default(),
            feed: replicate::PrimaryFeed::default(),
            later: Vec::new(),
            later_since: None,
            now_ms: crate::clock::now_ms(),
            clock_mark: None,
            anchor: crate::clock::Anchor::now(),
            memory_released_ms: 0,
            purge_memory: false,
            cluster: cluster::ClusterSide::default(),
            cluster_save_result: None,
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
        let inline_reads = network.is_some();
        // The executor is built on its own thread: the Lua state may not cross threads.
        let (ready_tx, ready_rx) = std::sync::mpsc::sync_channel(1);
        let wake_tx = tx.clone();
        // A script may return a table nested 7,995 levels deep (Redis's limit, see
        // `scripting::convert`): converting, encoding and dropping that reply recurse once per
        // level, past the default 2 MB. Only the pages used are committed.
        let join = std::thread::Builder::new().name("executor".into()).stack_size(EXECUTOR_STACK).spawn(move || {
            let mut exec = Executor::new(config);
            exec.log.wake_tx = Some(wake_tx);
            let _ = ready_tx.send((exec.server.limits.clone(), exec.server.script_watch.clone()));
            match inbox::Waiter::new(network) {
                Ok(waiter) => exec.run(rx, waiter),
                Err(e) => log::warning(&format!("Failed to start the executor's timer: {e}")),
            }
        })?;
        let (limits, script_watch) = ready_rx.recv().map_err(|_| std::io::Error::other("the executor did not start"))?;
        Ok((ExecutorHandle { tx, limits, script_watch, inline_reads }, join))
    }

    fn run(mut self, rx: RequestRx, waiter: inbox::Waiter) {
        let inbox = std::rc::Rc::new(inbox::Inbox::new(rx, waiter, self.server.script_watch.clone(), self.server.limits.clone()));
        self.inbox = Some(inbox.clone());
        let pump = inbox.clone();
        self.busy_pump = Some(std::rc::Rc::new(move || pump.pump()));
        if let Err(e) = self.start_cluster().and_then(|()| self.load_at_start()) {
            log::warning(&e);
            std::process::exit(1);
        }
        self.server.limits.loading.store(false, std::sync::atomic::Ordering::Release);
        log::notice("Ready to accept connections tcp");
        self.start_replication_from_config();
        let mut next_cron = Instant::now();
        loop {
            let hz = self.server.settings.hz;
            let mut wait = next_cron.saturating_duration_since(Instant::now());
            if let Some((until, _)) = self.server.pause {
                wait = wait.min(until.saturating_duration_since(Instant::now()));
            }
            if let Some(&(deadline, _)) = self.waiters.timeouts.first() {
                let until = (deadline - crate::clock::now_ms()).max(0) as u64;
                wait = wait.min(Duration::from_millis(until));
            }
            if let Some(due) = self.feed.flush_due {
                wait = wait.min(due.saturating_duration_since(Instant::now()));
            }
            if let Some(next) = self.step_background() {
                wait = wait.min(next);
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
            self.between_batches();
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
            reader: None,
        });
        rx
    }

    /// Handles one request (public so benches can drive the executor without sockets).
    pub fn handle(&mut self, req: Request) {
        self.clock_mark = None;
        match req {
            Request::Connect { id, addr, laddr, tx, flags, sock, .. } => {
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
                    self.failover_progress();
                }
                if self.server.repl.kill_master {
                    self.replication_cron();
                }
            }
            // release_replies, which follows every turn, lets go of what the sync covers.
            Request::LogSynced => {}
            req @ (Request::ReplSnapshot { .. }
            | Request::ReplContinue { .. }
            | Request::ReplStream { .. }
            | Request::ReplCommands { .. }
            | Request::ReplLinkDown { .. }
            | Request::ReplAckWanted { .. }) => self.link_message(req),
            Request::Signal { name } => self.signalled(name),
            req @ (Request::ClusterLinkUp { .. }
            | Request::ClusterMessage { .. }
            | Request::ClusterLinkDown { .. }
            | Request::ClusterConnectFailed { .. }) => self.cluster_event(req),
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
            if self.must_wait_for_pause(client, &cmds[i]) {
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
            client.replies.reply_skip = std::mem::take(&mut client.replies.reply_skip_next);
            if client.tracking.is_some() {
                self.after_tracked_command(client, &cmds[i]);
            }
            // The command wrote a key clients wait on: Redis serves them before the next
            // command, so the rest of this pipeline waits until they are served (it resumes
            // in `serve_ready`, once this client is back in the table).
            if !self.waiters.ready.is_empty() && i + 1 < cmds.len() && client.txn.multi.is_none() {
                // `index` is the command already answered: `resume_after_block` goes on after it.
                client.blocked = Some(crate::state::Blocked::held(cmds, i, client.db, protocol_error));
                self.waiters.unblocked.push(client.id);
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
        // What the connection task reads while a script is busy (conn::busy_answers).
        let in_multi = client.txn.multi.is_some();
        if client.flags.in_multi.load(std::sync::atomic::Ordering::Relaxed) != in_multi {
            client.flags.in_multi.store(in_multi, std::sync::atomic::Ordering::Release);
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
        if client.replica.is_some() || ((client.replies.reply_off || client.replies.reply_skip) && !pushing) {
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
            if client.txn.multi.is_none() && !is_client {
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
        let mut scratch = Effects::default();
        let mut ctx = Ctx::new(&mut self.ks, &mut client, &mut self.server, self.now_ms, &mut scratch);
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
        let mut reply = self.execute_checked(client, args, resolved);
        self.exec_depth -= 1;
        if self.server.cluster.is_some() {
            reply = self.after_cluster_command(client, reply);
        }
        if !self.server.unblock_list.is_empty() {
            self.unblock_now();
        }
        if self.exec_depth == 0 {
            if self.logging() && self.commit_pending() {
                client.log_wait = self.log.buffered_end().unwrap_or(0);
            }
            if let Some(result) = self.run_deferred_persist(client) {
                return result;
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
        // CLIENT LIST's `cmd=` (and the ACL LOG's client info) is the command looked up last,
        // refused or queued ones included (`NULL` for an unknown one), as Redis's lastcmd.
        let cmd = match resolution {
            Resolved::Found(cmd) => cmd,
            Resolved::Unknown | Resolved::UnknownSubcommand => {
                client.last_cmd = "NULL";
                let error = match resolution {
                    Resolved::Unknown => commands::unknown_command_error(args),
                    _ => commands::unknown_subcommand_error(args),
                };
                return Self::reject(client, error);
            }
            Resolved::WrongArity(cmd) => {
                client.last_cmd = cmd.name;
                return self.refuse(client, cmd, commands::wrong_arity_error(cmd));
            }
        };
        client.last_cmd = cmd.name;
        if !client.authenticated && !cmd.has(Flag::NoAuth) {
            return self.refuse(client, cmd, Reply::error("NOAUTH Authentication required."));
        }
        if let Err(refusal) = self.acl_check(client, cmd, args) {
            if client.txn.multi.is_some() {
                client.txn.multi_dirty = true;
            }
            return self.refuse(client, cmd, refusal);
        }
        // Keys this node does not serve: MOVED, ASK, CROSSSLOT... (cluster mode).
        if let Some(redirect) = self.cluster_refusal(client, cmd, args) {
            return redirect;
        }
        if client.in_subscribed_mode() && !cmd.is(Trait::Subscribed) {
            let why = format!(
                "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
                cmd.name
            );
            return self.refuse(client, cmd, Reply::Error(why.into()));
        }
        // Over maxmemory (after trying to evict): denyoom commands are refused, and inside
        // MULTI every command that would be queued, as Redis does.
        let queues = client.txn.multi.is_some() && !cmd.is(Trait::NotQueued);
        // Eviction runs before every command, as in Redis (a read too may find memory over),
        // except for a command served while a script is busy: Redis neither evicts nor
        // refuses then (a script's undo record must not lose a key under it).
        let oom = !self.loading() && !self.server.script_watch.running() && !self.within_maxmemory();
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
        let internal = client.id == cluster::INTERNAL_CLIENT;
        if let Some(refusal) = self.log_write_refusal().or_else(|| self.replication_write_refusal()).filter(|_| !internal) {
            let writes = |c: &CommandSpec, a: &[Bytes]| self.declared_writes(c, a).unwrap_or(c.has(Flag::Write));
            if Self::any_to_run(client, cmd, args, writes) {
                return self.refuse(client, cmd, refusal);
            }
        }
        if !self.loading() && self.stale_replica() && !self.allowed_when_stale(cmd, args) {
            return self.refuse(client, cmd, Reply::error(replicate::MASTERDOWN));
        }
        // Inside MULTI everything but the transaction commands themselves is queued.
        if let Some(queue) = client.txn.multi.as_mut() {
            if queues {
                if cmd.has(Flag::NoMulti) {
                    client.txn.multi_dirty = true;
                    return Reply::error("ERR Command not allowed inside a transaction");
                }
                queue.push((cmd, argv.take()));
                return Reply::status("QUEUED");
            }
        }

        let start = self.clock_mark.take().unwrap_or_else(Stamp::now);
        let Ran { mut reply, end: call_end, next, redacted, .. } = self.run_command(client, cmd, args, Some(start));
        // The command's end time serves for the slowlog too, unless more ran after it.
        let mut end = call_end;
        let mut scripted = false;
        let mut exec = false;
        // A YES debugging session's time is its user's: Redis's parent only forks for it.
        let mut untimed = false;
        match next {
            Next::Reply => {}
            Next::RunScript(call) => {
                end = None;
                scripted = true;
                let recording = self.recording();
                reply = self.run_script(client, args, &call, Instant::now());
                untimed = std::mem::take(&mut self.private_session_ran);
                if recording {
                    if let Some(outcome) = self.last_script_outcome.take() {
                        self.log_script(client, args, &call, &outcome);
                        self.last_script_outcome = Some(outcome);
                    }
                }
            }
            // Where a client may not block (EXEC, the loader) the command times out at once.
            Next::Block(request) if client.deny_blocking => reply = request.timeout_reply,
            Next::Block(request) => client.block_request = Some(*request),
            Next::Exec => exec = true,
            Next::Replication(request) => {
                end = None;
                reply = self.replication_request(client, *request);
            }
            Next::Persist(request) => {
                // Runs once the top-level command's records are committed: inside EXEC, the
                // transaction's earlier records must not land on the wrong side of a rewrite.
                let nested = self.exec_depth > 1;
                self.log.deferred = Some((request, !nested));
                if nested {
                    reply = match request {
                        crate::state::PersistRequest::Rewrite => Reply::status("Background append only file rewriting scheduled"),
                        crate::state::PersistRequest::BgSave { .. } => Reply::status("Background saving scheduled"),
                        crate::state::PersistRequest::Reconfigure => reply,
                        _ => Reply::OK,
                    };
                }
            }
            Next::Shutdown(request) => match self.shutdown_save(request) {
                Ok(()) => self.server.shutdown = Some(request),
                Err(e) => {
                    client.close_after_reply = false;
                    reply = Reply::Error(e.into());
                }
            },
        }
        let end = end.unwrap_or_else(Stamp::now);
        self.clock_mark = Some(end);
        let elapsed = end.micros_since(start);
        if elapsed >= 1000 && !self.loading() {
            // A slow command (DEBUG SLEEP, a big KEYS, a script): the batch clock is stale now.
            self.now_ms = crate::clock::now_ms();
        }
        if scripted {
            // INFO commandstats counts an EVAL's script in its time, and a script that
            // failed (an error raised or returned) as a failed call, as Redis does.
            let stat = self.server.stats.command(cmd.id);
            if !untimed {
                stat.usec += elapsed;
            }
            if reply.is_error() {
                stat.failed_calls += 1;
            }
            if self.server.settings.latency_tracking && !untimed {
                self.server.stats.record_latency(cmd.id, elapsed);
            }
        }
        if !cmd.has(Flag::SkipSlowlog) && !untimed {
            self.slowlog_record(client, args, &redacted, elapsed);
        }
        let threshold_ms = self.server.settings.latency_threshold_ms;
        if threshold_ms > 0 && elapsed / 1000 >= threshold_ms && !self.loading() && !untimed {
            let event = if cmd.has(Flag::Fast) { "fast-command" } else { "command" };
            self.server.latency.add(event, crate::clock::now_ms() / 1000, elapsed / 1000);
        }
        if exec {
            reply = self.exec_transaction(client);
            client.last_cmd = cmd.name;
            self.feed_monitors(client, cmd, args, &[]);
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
    fn run_command(&mut self, client: &mut Client, cmd: &'static CommandSpec, args: &[Bytes], timer: Option<Stamp>) -> Ran {
        if cmd.is(Trait::ArbitraryKeys) && self.exec_depth == 1 && !client.in_script {
            self.log.unwrapped = true;
        }
        if cmd.has(Flag::Write) && (self.rewriting() || self.bgsave_walking() || self.sync_walking()) {
            self.capture_before_write(client.db, cmd, args);
        }
        let dirty_before = self.server.dirty;
        let listened = self.server.tracking.clients > 0 || !self.server.watchers.is_empty() || !self.waiters.by_key.is_empty();
        self.effects.listened = listened;
        let mut ctx = Ctx::new(&mut self.ks, client, &mut self.server, self.now_ms, &mut self.effects);
        let reply = commands::call(cmd, &mut ctx, args);
        // The call's effects leave the shared buffer now (a script's commands use it next).
        let next = std::mem::take(&mut self.effects.next);
        let mut logged = std::mem::take(&mut self.effects.logged);
        let script_cache = self.effects.script_cache.take();
        let redacted = std::mem::take(&mut self.effects.redacted);
        // A script's EVAL ends when the script does (the caller times it).
        let end = timer.filter(|_| !matches!(next, Next::RunScript(_))).map(|_| Stamp::now());
        let elapsed = timer.zip(end).map_or(0, |(s, e)| e.micros_since(s));
        if self.server.tracking.clients > 0 {
            self.remember_tracked_keys(client, cmd, args);
        }
        if self.effects.signals.any() {
            let mut signals = std::mem::take(&mut self.effects.signals);
            self.apply_signals(client, &signals);
            // Emptied, its allocations go back for the next call.
            signals.clear();
            self.effects.signals = signals;
        }
        if self.server.dirty != dirty_before {
            if !client.in_script && self.recording() {
                self.log_command(client, args, std::mem::take(&mut logged));
            }
        } else if let Some(change) = script_cache.filter(|_| self.recording()) {
            self.log_script_admin(client, args, change);
        } else if logged == Logged::ToReplicas && !client.in_script && self.publishing_to_replicas() {
            self.log_publish(client, args);
        }
        self.signal_expired(client);
        // EXEC goes to MONITOR after the commands it runs, as Redis feeds it when it ends.
        if !matches!(next, Next::Exec) {
            self.feed_monitors(client, cmd, args, &redacted);
        }
        let notifications = std::mem::take(&mut self.effects.notifications);
        match self.undo.as_mut().filter(|_| client.in_script) {
            // An all-or-nothing script's events wait for its end (dropped if it is undone).
            Some(undo) => undo.notifications.extend(notifications),
            None => self.publish_events(client, notifications),
        }
        // Receivers of PUBLISH get their output released with this batch.
        self.touched.append(&mut self.effects.pushed);
        self.server.stats.total_commands_processed += 1;
        let stat = self.server.stats.command(cmd.id);
        stat.calls += 1;
        stat.usec += elapsed;
        if reply.is_error() {
            stat.failed_calls += 1;
        }
        // A script's EVAL is recorded when it ends, with the script's time.
        if self.server.settings.latency_tracking && end.is_some() {
            self.server.stats.record_latency(cmd.id, elapsed);
        }
        Ran { reply, end, next, logged, redacted }
    }
}

/// What running one command leaves its caller: the reply, when it ended (timed commands),
/// what comes next, its logged form, and the arguments its handler called secret.
pub(super) struct Ran {
    pub reply: Reply,
    pub end: Option<Stamp>,
    pub next: Next,
    pub logged: Logged,
    pub redacted: Vec<usize>,
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
