//! Cluster mode in the executor: starting it (nodes.conf, the bus port), the bus's events,
//! the cron, carrying out what the cluster state asks (`cluster::Action`, nodes.conf
//! writes, keys of lost slots, a role change), and the redirection of commands whose keys
//! this node does not serve (Redis's getNodeByQuery).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::mpsc::UnboundedSender;

use super::Executor;
use crate::cluster::bus;
use crate::cluster::slot::key_slot;
use crate::cluster::{self as cl, Action, Cluster, Name};
use crate::commands::{CommandSpec, Flag, Trait};
use crate::config::P;
use crate::conn::Request;
use crate::log;
use crate::protocol::Reply;
use crate::spec::keyspec;
use crate::state::Client;

/// The client id cluster mode's own writes run as (deleting a lost slot's keys, the flush of
/// CLUSTER RESET on a replica): never redirected nor refused, as Redis's delKeysInSlot and
/// emptyData cannot be (the loader and the primary's stream use `u64::MAX`).
pub(super) const INTERNAL_CLIENT: u64 = u64::MAX - 1;

/// The executor's side of the bus: each link's sender, and when the cluster cron last ran.
#[derive(Default)]
pub(super) struct ClusterSide {
    links: HashMap<u64, UnboundedSender<Vec<u8>>>,
    last_cron: Option<Instant>,
    /// The epochs and vote of the last nodes.conf write (a change is fsynced).
    saved_epochs: (u64, u64, u64),
    /// nodes.conf is behind the state (written by the next cron).
    conf_dirty: bool,
}

/// Why a command is not served here (getNodeByQuery's error codes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Redirect {
    CrossSlot,
    Unstable,
    DownState,
    DownRoState,
    DownUnbound,
    Moved(u16, String),
    Ask(u16, String),
}

impl Redirect {
    /// The client's error (clusterRedirectClient).
    fn reply(&self) -> Reply {
        Reply::Error(match self {
            Redirect::CrossSlot => "CROSSSLOT Keys in request don't hash to the same slot".into(),
            Redirect::Unstable => "TRYAGAIN Multiple keys request during rehashing of slot".into(),
            Redirect::DownState => "CLUSTERDOWN The cluster is down".into(),
            Redirect::DownRoState => "CLUSTERDOWN The cluster is down and only accepts read commands".into(),
            Redirect::DownUnbound => "CLUSTERDOWN Hash slot not served".into(),
            Redirect::Moved(slot, addr) => format!("MOVED {slot} {addr}").into(),
            Redirect::Ask(slot, addr) => format!("ASK {slot} {addr}").into(),
        })
    }

    /// A script's error (scriptVerifyClusterState).
    fn script_reply(&self) -> Reply {
        Reply::error(match self {
            Redirect::DownRoState => "ERR Script attempted to execute a write command while the cluster is down and readonly",
            Redirect::DownState => "ERR Script attempted to execute a command while the cluster is down",
            _ => "ERR Script attempted to access a non local key in a cluster node",
        })
    }
}

fn settings(config: &crate::config::Config) -> cl::Settings {
    let port = config.get_int(P::Port).clamp(0, 65535) as u16;
    let cport = match config.get_int(P::ClusterPort) {
        0 => port.wrapping_add(10000),
        p => p.clamp(0, 65535) as u16,
    };
    let announce_port = config.get_int(P::ClusterAnnouncePort).clamp(0, 65535) as u16;
    let announce_bus = config.get_int(P::ClusterAnnounceBusPort).clamp(0, 65535) as u16;
    cl::Settings {
        node_timeout: config.get_int(P::ClusterNodeTimeout).max(1),
        port: if announce_port != 0 { announce_port } else { port },
        cport: if announce_bus != 0 { announce_bus } else { cport },
        announce_ip: config.get(P::ClusterAnnounceIp).to_string(),
        announce_hostname: config.get(P::ClusterAnnounceHostname).to_string(),
        require_full_coverage: config.get(P::ClusterRequireFullCoverage) == "yes",
        allow_reads_when_down: config.get(P::ClusterAllowReadsWhenDown) == "yes",
        validity_factor: config.get_int(P::ClusterReplicaValidityFactor).max(0),
        ping_period_ms: config.get_int(P::ReplPingReplicaPeriod).max(1) * 1000,
        allow_pubsubshard_when_down: config.get(P::ClusterAllowPubsubshardWhenDown) == "yes",
        allow_replica_migration: config.get(P::ClusterAllowReplicaMigration) == "yes",
        migration_barrier: config.get_int(P::ClusterMigrationBarrier).max(0) as usize,
    }
}

/// Writes nodes.conf whole, then renames it into place (a crash leaves the old or the new).
/// `fsync`: as Redis, only when an epoch or a vote changed (those must survive a crash: a
/// node must never vote twice in one epoch); a slot's move is written without it.
fn write_conf(path: &str, text: &str, fsync: bool) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = format!("{path}.tmp-{}", std::process::id());
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(text.as_bytes())?;
    if fsync {
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if fsync {
        // The rename itself is durable once the directory is.
        let dir = std::path::Path::new(path).parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

impl Executor {
    fn conf_path(&self) -> String {
        self.server.config.get(P::ClusterConfigFile).to_string()
    }

    /// `cluster-enabled yes`: loads nodes.conf (or starts a cluster of one) and opens the bus
    /// port. An error stops the server, as in Redis.
    pub(super) fn start_cluster(&mut self) -> Result<(), String> {
        if self.server.config.get(P::ClusterEnabled) != "yes" {
            return Ok(());
        }
        let s = settings(&self.server.config);
        let now = crate::clock::now_ms();
        let path = self.conf_path();
        let cluster = match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => Cluster::load(&text, s.clone(), now)
                .map_err(|e| format!("Unrecoverable error: corrupted cluster config file \"{path}\": {e}"))?,
            Ok(_) => Cluster::new(s.clone(), now),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Cluster::new(s.clone(), now),
            Err(e) => return Err(format!("Can't read the cluster config file {path}: {e}")),
        };
        log::notice(&format!("Node configuration loaded, I'm {}", cl::node::name_str(&cluster.myself)));
        write_conf(&path, &cluster.render_conf(), true).map_err(|e| format!("Fatal: can't update cluster config file {path}: {e}"))?;
        let binds: Vec<String> = self.server.config.get(P::Bind).split_whitespace().map(str::to_string).collect();
        let bus_port = match self.server.config.get_int(P::ClusterPort) {
            0 => self.server.config.get_int(P::Port) + 10000,
            p => p,
        };
        let bus_port = u16::try_from(bus_port).map_err(|_| format!("Invalid cluster bus port {bus_port}"))?;
        let listeners = crate::server::bind_all(&binds, bus_port, &[])?;
        let rt = crate::replication::runtime().ok_or("the network runtime is not running")?;
        let tx = self.log.wake_tx.clone().ok_or("the executor has no request channel")?;
        for l in listeners {
            let tx = tx.clone();
            rt.spawn(async move { cl::link::listen(l, tx).await });
        }
        let master = cluster.my_master().and_then(|m| cluster.nodes.get(&m)).map(|m| (m.ip.clone(), m.port));
        self.server.cluster = Some(Box::new(cluster));
        if let Some((ip, port)) = master {
            if let Err(e) = self.become_replica(ip, port, false) {
                log::warning(&format!("Can't start replication of my master: {e}"));
            }
        }
        Ok(())
    }

    /// A bus event from a link task.
    pub(super) fn cluster_event(&mut self, req: Request) {
        let now = crate::clock::now_ms();
        let offset = self.server.repl.shown().1;
        let Some(c) = self.server.cluster.as_deref_mut() else { return };
        // Headers carry the replication offset as of now (a manual failover compares it).
        c.me_mut().repl_offset = offset;
        match req {
            Request::ClusterLinkUp { link, node, inbound, peer_ip, local_ip, tx } => {
                self.cluster.links.insert(link, tx);
                c.link_up(link, node, inbound, peer_ip, local_ip, now);
            }
            Request::ClusterMessage { link, bytes } => match bus::decode(&bytes) {
                Ok(m) => c.receive(link, m, now),
                Err(e) => log::verbose(&format!("Cluster bus message ignored: {e}")),
            },
            Request::ClusterLinkDown { link } => {
                self.cluster.links.remove(&link);
                c.link_down(link);
            }
            Request::ClusterConnectFailed { node } => c.connect_failed(&node),
            _ => {}
        }
        self.cluster_flush();
    }

    /// Ten times a second: the cluster's cron, with the settings as configured now.
    pub(super) fn cluster_cron(&mut self) {
        let Some(c) = self.server.cluster.as_deref_mut() else { return };
        if self.cluster.last_cron.is_some_and(|t| t.elapsed() < Duration::from_millis(90)) {
            return;
        }
        self.cluster.last_cron = Some(Instant::now());
        c.settings = settings(&self.server.config);
        let now = crate::clock::now_ms();
        c.me_mut().repl_offset = self.server.repl.shown().1;
        // How old the copy of a replica is (its link's last traffic, or when it went down).
        let data_age = match &self.server.repl.master {
            Some(m) if m.synced => now - m.shared.last_io_ms.load(std::sync::atomic::Ordering::Acquire),
            Some(m) => now - m.down_since_ms,
            None => 0,
        };
        c.cron(now, data_age.max(0));
        self.cluster_flush();
        self.cluster_write_conf();
        self.redirect_blocked_clients();
    }

    /// Clients blocked on keys this node no longer serves (a failover, a reshard) get the
    /// redirection now instead of waiting forever (clusterRedirectBlockedClientIfNeeded).
    fn redirect_blocked_clients(&mut self) {
        let Some(c) = self.server.cluster.as_deref() else { return };
        let mut redirects = Vec::new();
        for client in self.server.clients.values() {
            let Some(b) = client.blocked.as_ref() else { continue };
            let Some(key) = b.keys.first() else { continue };
            if c.state != cl::state::STATE_OK {
                redirects.push((client.id, Redirect::DownState));
                continue;
            }
            let slot = key_slot(key);
            let mut owner = c.slots[slot as usize];
            let write = matches!(crate::commands::resolve(&b.cmds[b.index]), crate::commands::Resolved::Found(cmd) if cmd.has(Flag::Write));
            if client.cluster_readonly && !write && c.my_master().is_some() && owner == c.my_master() {
                owner = Some(c.myself);
            }
            if owner != Some(c.myself) && !c.importing.contains_key(&slot) {
                redirects.push((
                    client.id,
                    match owner.and_then(|o| c.nodes.get(&o)) {
                        Some(n) => Redirect::Moved(slot, endpoint(n)),
                        None => Redirect::DownUnbound,
                    },
                ));
            }
        }
        for (id, r) in redirects {
            self.unblock_one(id, Some(r.reply()));
        }
        if !self.waiters.unblocked.is_empty() {
            self.serve_ready();
        }
    }

    /// Writes nodes.conf if it is behind the state (the cron, and before the process ends).
    pub(super) fn cluster_write_conf(&mut self) {
        let Some(c) = self.server.cluster.as_deref() else { return };
        if std::mem::take(&mut self.cluster.conf_dirty) {
            let text = c.render_conf();
            if let Err(e) = write_conf(&self.conf_path(), &text, false) {
                log::warning(&format!("Can't update the cluster config file: {e}"));
            }
        }
    }

    /// Carries out what the cluster state queued: messages, connections, closes, a
    /// nodes.conf write, the keys of slots lost, a change of role.
    pub(super) fn cluster_flush(&mut self) {
        let Some(c) = self.server.cluster.as_deref_mut() else { return };
        if !c.has_work() && !self.server.cluster_save_reply {
            return;
        }
        let actions = std::mem::take(&mut c.out);
        let timeout = Duration::from_millis(c.settings.node_timeout.clamp(100, 60_000) as u64);
        let save = std::mem::take(&mut c.save_pending);
        let lost = std::mem::take(&mut c.lost);
        let role_changed = std::mem::take(&mut c.role_changed);
        let flush_data = std::mem::take(&mut c.flush_data);
        let pause = c.pause_writes_until.take();
        let published = std::mem::take(&mut c.published);
        let removed = std::mem::take(&mut c.removed_slots);
        let master = c.my_master().and_then(|m| c.nodes.get(&m)).map(|m| (m.ip.clone(), m.port));
        let conf = save.then(|| c.render_conf());
        let epochs = (c.current_epoch, c.me().config_epoch, c.last_vote_epoch);
        let fsync = save && self.cluster.saved_epochs != epochs;
        if save {
            self.cluster.saved_epochs = epochs;
        }
        // An epoch or a vote is on disk before any message that carries it leaves (a node
        // must never vote twice in one epoch, even across a crash); a node that cannot
        // record one stops, as Redis's clusterSaveConfigOrDie.
        let now_wanted = fsync || self.server.cluster_save_reply;
        let saved = match conf {
            Some(text) if now_wanted => {
                self.cluster.conf_dirty = false;
                let written = write_conf(&self.conf_path(), &text, fsync).map_err(|e| e.to_string());
                if let (Err(e), true) = (&written, fsync) {
                    log::warning(&format!("Fatal: can't update cluster config file: {e}"));
                    std::process::exit(1);
                }
                written
            }
            // Other changes (a slot moved, a node met) with the next cron, at most 100 ms
            // later: a reshard changes the file once per slot.
            Some(_) => {
                self.cluster.conf_dirty = true;
                Ok(())
            }
            None => Ok(()),
        };
        for a in actions {
            match a {
                Action::Send { link, bytes } => {
                    if let Some(tx) = self.cluster.links.get(&link) {
                        let _ = tx.send(bytes);
                    }
                }
                Action::Close { link } => {
                    self.cluster.links.remove(&link);
                }
                Action::Connect { node, ip, cport } => self.cluster_connect(node, ip, cport, timeout),
            }
        }
        if let Err(e) = &saved {
            log::warning(&format!("Can't update the cluster config file: {e}"));
        }
        if std::mem::take(&mut self.server.cluster_save_reply) {
            self.cluster_save_result = Some(saved);
        }
        if !removed.is_empty() {
            self.drop_channels_in_slots(&removed, None);
        }
        if !published.is_empty() {
            let mut pushed = Vec::new();
            for (channel, message, shard) in published {
                crate::commands::pubsub::publish_raw(&mut self.server, None, &channel.into(), &message.into(), shard, &mut pushed);
            }
            self.touched.append(&mut pushed);
        }
        match pause {
            // A manual failover's pause of writes, and its end.
            Some(0) => {
                self.server.pause = None;
                if !self.postponed.is_empty() {
                    self.resume_postponed();
                }
            }
            Some(until) => {
                let left = (until - crate::clock::now_ms()).max(0) as u64;
                self.server.pause = Some((Instant::now() + Duration::from_millis(left), false));
            }
            None => {}
        }
        if !lost.is_empty() {
            self.delete_slot_keys(&lost);
        }
        if role_changed {
            match master {
                Some((ip, port)) if !ip.is_empty() => {
                    if let Err(e) = self.become_replica(ip, port, false) {
                        log::warning(&format!("Can't replicate my new master: {e}"));
                    }
                }
                Some(_) => {}
                None => {
                    if self.server.repl.master.is_some() {
                        self.promote("cluster mode: now a master");
                    }
                }
            }
        }
        if flush_data {
            // CLUSTER RESET of a replica: an empty master (Redis's emptyData), logged so that
            // a restart does not bring the old data back.
            let mut client = self.loader_client();
            client.id = INTERNAL_CLIENT;
            self.execute(&mut client, &[Bytes::from_static(b"FLUSHALL")]);
        }
    }

    /// Shard channels of slots this node stopped serving lose their subscribers (`current`:
    /// the client whose command moved them, not in the server's map while it runs).
    fn drop_channels_in_slots(&mut self, slots: &[u16], current: Option<&mut Client>) {
        if self.server.pubsub.shard_channels.is_empty() {
            return;
        }
        let mut gone = vec![false; crate::cluster::slot::SLOTS];
        for &s in slots {
            gone[s as usize] = true;
        }
        let mut pushed = Vec::new();
        crate::commands::pubsub::drop_shard_channels(&mut self.server, current, |ch| gone[key_slot(ch) as usize], &mut pushed);
        self.touched.append(&mut pushed);
    }

    fn cluster_connect(&mut self, node: Name, ip: String, cport: u16, timeout: Duration) {
        let (Some(rt), Some(tx)) = (crate::replication::runtime(), self.log.wake_tx.clone()) else { return };
        rt.spawn(cl::link::connect(ip, cport, node, timeout, tx));
    }

    /// Deletes the keys of slots another master took (Redis's delKeysInSlot), logged and
    /// replicated as DELs.
    fn delete_slot_keys(&mut self, slots: &[u16]) {
        let mut keys: Vec<Bytes> = Vec::new();
        for &s in slots {
            keys.extend(self.ks.slot_keys(s, usize::MAX));
        }
        if keys.is_empty() {
            return;
        }
        let mut client = self.loader_client();
        client.id = INTERNAL_CLIENT;
        for key in keys {
            self.execute(&mut client, &[Bytes::from_static(b"DEL"), key]);
        }
    }

    /// Where the command's keys are served, when not here (getNodeByQuery). `Ok(slot)`: served
    /// here, with the slot of its keys if it has some.
    pub(super) fn cluster_route(&self, client: &Client, cmd: &CommandSpec, args: &[Bytes]) -> Result<Option<u16>, Redirect> {
        let Some(c) = self.server.cluster.as_deref() else { return Ok(None) };
        let exec = cmd.is(Trait::RunsQueue);
        // One command, or EXEC's queue (allocated only then: this runs before every command).
        let single = [(cmd, args)];
        let queue: Vec<(&CommandSpec, &[Bytes])>;
        let queued: &[(&CommandSpec, &[Bytes])] = if exec {
            match client.txn.multi.as_ref() {
                Some(q) => {
                    queue = q.iter().map(|(c, a)| (*c, a.as_slice())).collect();
                    &queue
                }
                None => return Ok(None),
            }
        } else {
            &single
        };
        let mut slot: Option<u16> = None;
        let mut first_key: Option<&[u8]> = None;
        let mut owner: Option<Name> = None;
        let (mut migrating, mut importing, mut multiple, mut missing, mut existing) = (false, false, false, 0, 0);
        let mut writes = false;
        // SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH: the pub/sub commands with a (channel) key.
        let shard_pubsub = cmd.has(Flag::PubSub) && cmd.first_key > 0;
        for &(qc, qa) in queued {
            writes |= qc.has(Flag::Write);
            for pos in route_keys(qc, qa) {
                let Some(key) = qa.get(pos) else { continue };
                let s = key_slot(key);
                match slot {
                    None => {
                        slot = Some(s);
                        first_key = Some(key);
                        owner = c.slots[s as usize];
                        let Some(o) = owner else { return Err(Redirect::DownUnbound) };
                        if o == c.myself && c.migrating.contains_key(&s) {
                            migrating = true;
                        } else if c.importing.contains_key(&s) {
                            importing = true;
                        }
                    }
                    Some(first) if first != s => return Err(Redirect::CrossSlot),
                    Some(_) => {
                        if first_key != Some(&key[..]) {
                            multiple = true;
                        }
                    }
                }
                if (migrating || importing) && !shard_pubsub {
                    if self.ks.db(0).position(key).is_some() {
                        existing += 1;
                    } else {
                        missing += 1;
                    }
                }
            }
        }
        let (Some(slot), Some(owner)) = (slot, owner) else { return Ok(None) };
        if c.state != cl::state::STATE_OK {
            if shard_pubsub {
                if !c.settings.allow_pubsubshard_when_down {
                    return Err(Redirect::DownState);
                }
            } else if !c.settings.allow_reads_when_down {
                return Err(Redirect::DownState);
            }
            if writes {
                return Err(Redirect::DownRoState);
            }
        }
        if (migrating || importing) && cmd.name == "migrate" {
            return Ok(Some(slot));
        }
        if migrating && missing > 0 {
            if existing > 0 {
                return Err(Redirect::Unstable);
            }
            let to = c.migrating.get(&slot).and_then(|n| c.nodes.get(n));
            return Err(Redirect::Ask(slot, to.map_or_else(String::new, endpoint)));
        }
        if importing && (client.asking || cmd.has(Flag::Asking)) {
            if multiple && missing > 0 {
                return Err(Redirect::Unstable);
            }
            return Ok(Some(slot));
        }
        if (client.cluster_readonly || shard_pubsub) && !writes && c.my_master() == Some(owner) {
            return Ok(Some(slot));
        }
        if owner != c.myself {
            let n = c.nodes.get(&owner);
            return Err(Redirect::Moved(slot, n.map_or_else(String::new, endpoint)));
        }
        Ok(Some(slot))
    }

    /// The redirection check before a client's command runs (processCommand's): `Some`
    /// error when the command goes elsewhere. The primary's stream and the log replay are
    /// never redirected.
    pub(super) fn cluster_refusal(&mut self, client: &mut Client, cmd: &'static CommandSpec, args: &[Bytes]) -> Option<Reply> {
        self.server.cluster.as_ref()?;
        // EXEC checked its whole queue already; the primary's stream and the log replay go
        // where they were sent.
        if client.id >= INTERNAL_CLIENT || client.in_exec() || client.serving.is_some() {
            return None;
        }
        if cmd.first_key <= 0 && !cmd.is(Trait::RunsQueue) && !keyspec::has_keys(cmd) {
            return None;
        }
        let redirect = self.cluster_route(client, cmd, args).err()?;
        self.server.stats.command(cmd.id).rejected_calls += 1;
        if cmd.is(Trait::RunsQueue) {
            let mut scratch = crate::commands::Effects::default();
            let mut ctx = crate::commands::Ctx::new(&mut self.ks, client, &mut self.server, self.now_ms, &mut scratch);
            crate::commands::transactions::discard_transaction(&mut ctx);
        } else if client.txn.multi.is_some() {
            client.txn.multi_dirty = true;
        }
        Some(redirect.reply())
    }

    /// A script's command checked as Redis's scriptVerifyClusterState does (`slot`: the slot
    /// the script's keys used so far).
    pub(super) fn script_cluster_refusal(
        &self,
        client: &Client,
        cmd: &CommandSpec,
        args: &[Bytes],
        slot: &mut Option<u16>,
        cross_slot_ok: bool,
    ) -> Option<Reply> {
        self.server.cluster.as_ref()?;
        if client.id >= INTERNAL_CLIENT {
            return None;
        }
        match self.cluster_route(client, cmd, args) {
            Err(r) => Some(r.script_reply()),
            Ok(Some(s)) if !cross_slot_ok => match *slot {
                None => {
                    *slot = Some(s);
                    None
                }
                Some(first) if first != s => Some(Reply::error("ERR Script attempted to access keys that do not hash to the same slot")),
                Some(_) => None,
            },
            Ok(_) => None,
        }
    }

    /// After every command in cluster mode: ASKING lasts one command (a whole transaction
    /// inside MULTI), and what the command changed reaches the bus and nodes.conf at once.
    pub(super) fn after_cluster_command(&mut self, client: &mut Client, reply: Reply) -> Reply {
        if self.exec_depth == 0 && client.asking && client.txn.multi.is_none() && client.last_cmd != "asking" {
            client.asking = false;
        }
        // The running client may be a subscriber of a channel its own command moved away.
        if let Some(removed) = self.server.cluster.as_deref_mut().map(|c| std::mem::take(&mut c.removed_slots)).filter(|r| !r.is_empty()) {
            self.drop_channels_in_slots(&removed, Some(client));
        }
        self.cluster_flush();
        match self.cluster_save_result.take() {
            Some(Err(e)) => Reply::Error(format!("ERR error saving the cluster node config: {e}").into()),
            _ => reply,
        }
    }
}

/// The keys a command is routed by, as Redis's getKeysFromCommand finds them: the legacy key
/// range of a command whose keys do not move (no allocation: this runs before every
/// command), else the key specs; for shard channels (SPUBLISH, SSUBSCRIBE: specs marked
/// not-key) the legacy range too.
fn route_keys(cmd: &CommandSpec, args: &[Bytes]) -> RouteKeys {
    if !cmd.has(Flag::MovableKeys) && cmd.first_key > 0 {
        let argc = args.len() as i64;
        let last = if cmd.last_key < 0 { argc + cmd.last_key as i64 } else { cmd.last_key as i64 };
        return RouteKeys::Range { next: cmd.first_key as i64, last: last.min(argc - 1), step: cmd.key_step.max(1) as i64 };
    }
    let keys = keyspec::getkeys(cmd, args);
    if keys.is_empty() && cmd.first_key > 0 {
        RouteKeys::List(cmd.key_positions(args.len()).into_iter())
    } else {
        RouteKeys::List(keys.into_iter())
    }
}

enum RouteKeys {
    Range { next: i64, last: i64, step: i64 },
    List(std::vec::IntoIter<usize>),
}

impl Iterator for RouteKeys {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        match self {
            RouteKeys::Range { next, last, step } => {
                if *next > *last {
                    return None;
                }
                let at = *next;
                *next += *step;
                Some(at as usize)
            }
            RouteKeys::List(it) => it.next(),
        }
    }
}

/// A node's address in MOVED and ASK (`cluster-preferred-endpoint-type ip`).
fn endpoint(n: &cl::node::Node) -> String {
    format!("{}:{}", n.ip, n.port)
}
