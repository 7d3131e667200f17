//! The cluster as this node sees it (Redis's `clusterState`): the nodes, who owns each slot,
//! the epochs, the slots being moved, and what the bus must do next (`out`). Pure state: the
//! executor carries the actions out (`executor/cluster.rs`) and the bus protocol's rules are
//! in `gossip.rs`.

use std::collections::{BTreeMap, HashMap};

use super::bus::{self, flag};
use super::node::{name_of, name_str, random_name, LinkId, Name, Node};
use super::nodes_conf::{self, NodesConf};
use super::slot::SLOTS;

/// Settings read from the configuration (refreshed by the executor every cron).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    pub node_timeout: i64,
    pub port: u16,
    pub cport: u16,
    pub announce_ip: String,
    pub announce_hostname: String,
    pub require_full_coverage: bool,
    pub allow_reads_when_down: bool,
    /// `cluster-replica-validity-factor`.
    pub validity_factor: i64,
    pub allow_pubsubshard_when_down: bool,
    pub allow_replica_migration: bool,
    /// `repl-ping-replica-period` in ms (the validity factor's allowance).
    pub ping_period_ms: i64,
    /// `cluster-migration-barrier`.
    pub migration_barrier: usize,
}

/// What the bus side must do, collected as the state changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Open our link to `node` at `ip:cport`.
    Connect {
        node: Name,
        ip: String,
        cport: u16,
    },
    Send {
        link: LinkId,
        bytes: Vec<u8>,
    },
    Close {
        link: LinkId,
    },
}

/// A bus connection as the state knows it.
#[derive(Debug, Clone)]
pub struct Link {
    /// The node it belongs to: for an outbound link, the node we connected to (set at once);
    /// for an inbound one, the sender once its first message names a known node.
    pub node: Option<Name>,
    pub inbound: bool,
    pub peer_ip: String,
    pub local_ip: String,
    pub ctime: i64,
}

pub const STATE_OK: u8 = 0;
pub const STATE_FAIL: u8 = 1;

/// Message types counted in CLUSTER INFO (Redis's names, by type number).
pub const MESSAGE_NAMES: [&str; 11] =
    ["ping", "pong", "meet", "fail", "publish", "auth-req", "auth-ack", "update", "mfstart", "module", "publishshard"];

pub struct Cluster {
    pub myself: Name,
    pub nodes: BTreeMap<Name, Node>,
    /// The owner of every slot.
    pub slots: Vec<Option<Name>>,
    pub migrating: BTreeMap<u16, Name>,
    pub importing: BTreeMap<u16, Name>,
    pub current_epoch: u64,
    pub last_vote_epoch: u64,
    pub state: u8,
    pub size: usize,
    pub links: HashMap<LinkId, Link>,
    pub settings: Settings,
    pub out: Vec<Action>,
    /// nodes.conf must be written (the executor does it after the current step).
    pub save_pending: bool,
    /// Names CLUSTER FORGET put aside, until when (ms).
    pub blacklist: HashMap<Name, i64>,
    pub sent: [u64; 11],
    pub received: [u64; 11],
    pub cron_ticks: u64,
    /// xorshift state for gossip sampling.
    pub rng: u64,
    /// Slots this node (or its master) lost to another owner: their keys go (the executor
    /// deletes them).
    pub lost: Vec<u16>,
    /// Slots this node owned and lost to another owner: their shard channels' subscribers
    /// are unsubscribed (the executor does it, as Redis's removeChannelsInSlot).
    pub removed_slots: Vec<u16>,
    /// PUBLISH and SPUBLISH messages from the bus, for this node's subscribers (the
    /// executor delivers them): channel, message, shard.
    pub published: Vec<(Vec<u8>, Vec<u8>, bool)>,
    /// This node became a replica (of `me().slaveof`): the executor follows it.
    pub role_changed: bool,
    /// CLUSTER RESET of a replica: the data goes (the executor flushes it).
    pub flush_data: bool,
    /// This node's failover election, and a manual failover in progress (`failover.rs`).
    pub election: super::failover::Election,
    /// Writes pause until then (ms; 0: resume), for a manual failover this master serves:
    /// the executor applies it.
    pub pause_writes_until: Option<i64>,
    /// The first state update (see `update_state`).
    pub first_update: Option<i64>,
    pub among_minority_since: i64,
}

/// A master's wait after its start before it says the cluster is ok
/// (`CLUSTER_WRITABLE_DELAY`).
const WRITABLE_DELAY_MS: i64 = 2000;

impl Cluster {
    /// A new cluster of one node: this one, a master without slots.
    pub fn new(settings: Settings, now: i64) -> Cluster {
        let myself = random_name();
        let mut me = Node::new(myself, flag::MYSELF | flag::MASTER, now);
        me.port = settings.port;
        me.cport = settings.cport;
        me.ip = settings.announce_ip.clone();
        me.hostname = settings.announce_hostname.clone();
        let mut nodes = BTreeMap::new();
        nodes.insert(myself, me);
        Cluster {
            myself,
            nodes,
            slots: vec![None; SLOTS],
            migrating: BTreeMap::new(),
            importing: BTreeMap::new(),
            current_epoch: 0,
            last_vote_epoch: 0,
            state: STATE_FAIL,
            size: 1,
            links: HashMap::new(),
            settings,
            out: Vec::new(),
            save_pending: true,
            blacklist: HashMap::new(),
            sent: [0; 11],
            received: [0; 11],
            cron_ticks: 0,
            rng: (now as u64) ^ 0x9e37_79b9_7f4a_7c15 | 1,
            lost: Vec::new(),
            published: Vec::new(),
            removed_slots: Vec::new(),
            role_changed: false,
            flush_data: false,
            election: super::failover::Election { mf_master_offset: -1, ..Default::default() },
            pause_writes_until: None,
            first_update: None,
            among_minority_since: 0,
        }
    }

    /// The state a `nodes.conf` describes (the `myself` line names this node).
    pub fn load(text: &str, settings: Settings, now: i64) -> Result<Cluster, String> {
        let conf = nodes_conf::parse(text)?;
        let me_line = conf.nodes.iter().find(|n| n.flags & flag::MYSELF != 0).ok_or("no 'myself' line")?;
        let mut c = Cluster::new(settings, now);
        c.nodes.clear();
        c.myself = name_of(me_line.id.as_bytes()).ok_or("bad node name")?;
        for line in &conf.nodes {
            let name = name_of(line.id.as_bytes()).ok_or_else(|| format!("bad node name '{}'", line.id))?;
            let mut n = Node::new(name, line.flags & !(flag::PFAIL | flag::HANDSHAKE | flag::MEET), now);
            n.ip = line.ip.trim_start_matches('[').trim_end_matches(']').to_string();
            n.port = line.port;
            n.cport = line.cport;
            n.hostname = line.hostname.clone().unwrap_or_default();
            n.config_epoch = line.config_epoch;
            n.slaveof = match &line.primary {
                Some(p) => Some(name_of(p.as_bytes()).ok_or("bad primary name")?),
                None => None,
            };
            if n.has(flag::FAIL) {
                n.fail_time = now;
            }
            c.nodes.insert(name, n);
            for &(from, to) in &line.slots {
                for s in from..=to {
                    c.set_owner(s, Some(name));
                }
            }
            for (s, id) in &line.migrating {
                c.migrating.insert(*s, name_of(id.as_bytes()).ok_or("bad node name")?);
            }
            for (s, id) in &line.importing {
                c.importing.insert(*s, name_of(id.as_bytes()).ok_or("bad node name")?);
            }
        }
        c.current_epoch = conf.current_epoch;
        c.last_vote_epoch = conf.last_vote_epoch;
        let port = c.settings.port;
        let cport = c.settings.cport;
        let me = c.me_mut();
        // The ports are the configuration's (they may differ from the file's).
        me.port = port;
        me.cport = cport;
        c.save_pending = false;
        Ok(c)
    }

    /// nodes.conf's text.
    pub fn render_conf(&self) -> String {
        // Nodes in handshake are not saved (Redis's CLUSTER_NODE_HANDSHAKE filter): a
        // restart would keep them as nodes of no address.
        let nodes = self.lines().into_iter().filter(|l| l.flags & flag::HANDSHAKE == 0).collect();
        nodes_conf::render(&NodesConf { nodes, current_epoch: self.current_epoch, last_vote_epoch: self.last_vote_epoch })
    }

    /// Every node's line, this node's first (CLUSTER NODES' order is Redis's dict order,
    /// which clients do not rely on).
    pub fn lines(&self) -> Vec<nodes_conf::NodeLine> {
        std::iter::once(self.me()).chain(self.nodes.values().filter(|n| n.name != self.myself)).map(|n| self.line_of(n)).collect()
    }

    /// One node's line as Redis's clusterGenNodeDescription writes it.
    pub fn line_of(&self, n: &Node) -> nodes_conf::NodeLine {
        let mut line = n.line(n.has(flag::MYSELF) || n.link.is_some());
        // A replica shows its master's epoch.
        if let Some(m) = n.slaveof.filter(|_| !n.is_master()).and_then(|m| self.nodes.get(&m)) {
            line.config_epoch = m.config_epoch;
        }
        if n.has(flag::MYSELF) {
            line.ping_sent = 0;
            line.pong_received = 0;
            line.migrating = self.migrating.iter().map(|(s, to)| (*s, name_str(to).to_string())).collect();
            line.importing = self.importing.iter().map(|(s, from)| (*s, name_str(from).to_string())).collect();
        }
        line
    }

    /// Whether the executor has something to carry out (see `executor/cluster.rs`).
    pub fn has_work(&self) -> bool {
        !self.out.is_empty()
            || self.save_pending
            || !self.lost.is_empty()
            || self.role_changed
            || self.pause_writes_until.is_some()
            || !self.published.is_empty()
            || !self.removed_slots.is_empty()
            || self.flush_data
    }

    pub fn me(&self) -> &Node {
        &self.nodes[&self.myself]
    }

    pub fn me_mut(&mut self) -> &mut Node {
        self.nodes.get_mut(&self.myself).expect("myself is always known")
    }

    pub fn lookup(&self, text: &[u8]) -> Option<&Node> {
        name_of(text).and_then(|n| self.nodes.get(&n))
    }

    /// The master whose slots `node` serves (itself, or its master).
    pub fn master_of(&self, node: &Name) -> Option<Name> {
        let n = self.nodes.get(node)?;
        match n.slaveof {
            Some(m) if !n.is_master() => Some(m),
            _ => Some(n.name),
        }
    }

    /// This node's master when it is a replica.
    pub fn my_master(&self) -> Option<Name> {
        let me = self.me();
        if me.is_master() {
            None
        } else {
            me.slaveof
        }
    }

    /// Gives `slot` to `owner` (or to nobody), keeping the nodes' bitmaps in step.
    pub fn set_owner(&mut self, slot: u16, owner: Option<Name>) {
        let served = self.master_of(&self.myself);
        if let Some(old) = self.slots[slot as usize].take() {
            // Shard channels of a slot this node no longer serves lose their subscribers.
            if Some(old) == served && owner != Some(old) {
                self.removed_slots.push(slot);
            }
            if let Some(n) = self.nodes.get_mut(&old) {
                n.mark(slot, false);
            }
        }
        if let Some(new) = owner {
            if let Some(n) = self.nodes.get_mut(&new) {
                n.mark(slot, true);
                self.slots[slot as usize] = Some(new);
            }
        }
    }

    pub fn assigned_slots(&self) -> usize {
        self.nodes.values().map(|n| n.numslots).sum()
    }

    /// Adds a node (a name not known yet).
    pub fn add_node(&mut self, node: Node) {
        self.nodes.insert(node.name, node);
    }

    /// Forgets a node: its slots go to nobody, its links close, its failure reports go.
    pub fn del_node(&mut self, name: &Name) {
        for s in 0..SLOTS as u16 {
            if self.slots[s as usize] == Some(*name) {
                self.set_owner(s, None);
            }
        }
        self.migrating.retain(|_, n| n != name);
        self.importing.retain(|_, n| n != name);
        if let Some(node) = self.nodes.remove(name) {
            for link in [node.link, node.inbound].into_iter().flatten() {
                self.free_link(link);
            }
        }
        for n in self.nodes.values_mut() {
            n.fail_reports.retain(|(by, _)| by != name);
            if n.slaveof == Some(*name) {
                n.slaveof = None;
            }
        }
    }

    /// Gives a node (one in handshake) the name its first answer carried.
    pub fn rename(&mut self, old: &Name, new: Name) {
        let Some(mut node) = self.nodes.remove(old) else { return };
        node.name = new;
        for link in [node.link, node.inbound].into_iter().flatten() {
            if let Some(l) = self.links.get_mut(&link) {
                l.node = Some(new);
            }
        }
        self.nodes.insert(new, node);
    }

    /// Starts a handshake with `ip:port@cport` (CLUSTER MEET, or a node gossip told about),
    /// unless one with that address is under way. False for an address that cannot be used.
    pub fn start_handshake(&mut self, ip: &str, port: u16, cport: u16, now: i64) -> bool {
        if ip.parse::<std::net::IpAddr>().is_err() || port == 0 || cport == 0 {
            return false;
        }
        let ip = normalize_ip(ip);
        if self.nodes.values().any(|n| n.in_handshake() && n.ip == ip && n.port == port && n.cport == cport) {
            return true;
        }
        let mut n = Node::new(random_name(), flag::HANDSHAKE | flag::MEET, now);
        n.ip = ip;
        n.port = port;
        n.cport = cport;
        self.add_node(n);
        true
    }

    /// Drops a link from the state (and asks the bus to close it).
    pub fn free_link(&mut self, link: LinkId) {
        if let Some(l) = self.links.remove(&link) {
            if let Some(n) = l.node.and_then(|n| self.nodes.get_mut(&n)) {
                if n.link == Some(link) {
                    n.link = None;
                    n.connecting = false;
                }
                if n.inbound == Some(link) {
                    n.inbound = None;
                }
            }
            self.out.push(Action::Close { link });
        }
    }

    /// Queues `m` on `link`, counting it.
    pub fn send(&mut self, link: LinkId, m: &bus::Message) {
        if let Some(c) = self.sent.get_mut(m.header.kind as usize) {
            *c += 1;
        }
        self.out.push(Action::Send { link, bytes: bus::encode(m) });
    }

    /// Recomputes `state` and `size` (Redis's clusterUpdateState): a master waits 2 s
    /// after its start before it first says ok, and after being among a minority waits the
    /// rejoin delay before it says ok again.
    pub fn update_state(&mut self) {
        let now = crate::clock::now_ms();
        let first = *self.first_update.get_or_insert(now);
        if self.me().is_master() && self.state == STATE_FAIL && now - first < WRITABLE_DELAY_MS {
            return;
        }
        let mut ok = true;
        if self.settings.require_full_coverage {
            // Every slot has one owner: the slots of the nodes not failing cover them all.
            ok = self.nodes.values().filter(|n| !n.failed()).map(|n| n.numslots).sum::<usize>() == SLOTS;
        }
        let masters: Vec<&Node> = self.nodes.values().filter(|n| n.is_master() && n.numslots > 0).collect();
        self.size = masters.len();
        let reachable = masters.iter().filter(|n| !n.has(flag::FAIL | flag::PFAIL)).count();
        if reachable < self.size / 2 + 1 {
            ok = false;
            self.among_minority_since = now;
        }
        let new = if ok { STATE_OK } else { STATE_FAIL };
        if new == self.state {
            return;
        }
        let rejoin_delay = self.settings.node_timeout.clamp(500, 5000);
        if new == STATE_OK && self.me().is_master() && now - self.among_minority_since < rejoin_delay {
            return;
        }
        crate::log::notice(&format!("Cluster state changed: {}", if ok { "ok" } else { "fail" }));
        self.state = new;
    }

    /// This node follows master `m` (CLUSTER REPLICATE, or a master that lost its slots).
    pub fn set_my_master(&mut self, m: Name) {
        let me = self.myself;
        for s in 0..SLOTS as u16 {
            if self.slots[s as usize] == Some(me) {
                self.set_owner(s, None);
            }
        }
        self.migrating.clear();
        self.importing.clear();
        let n = self.me_mut();
        n.flags = (n.flags & !(flag::MASTER | super::node::MIGRATE_TO)) | flag::SLAVE;
        n.slaveof = Some(m);
        // A manual failover against the previous master is over (Redis's clusterSetMaster).
        self.end_manual_failover();
        self.role_changed = true;
        self.save_pending = true;
    }

    /// CLUSTER RESET: alone again, a master without slots; HARD also takes a new name and
    /// zeroes the epochs.
    pub fn reset(&mut self, hard: bool) {
        let others: Vec<Name> = self.nodes.keys().filter(|n| **n != self.myself).copied().collect();
        for n in others {
            self.del_node(&n);
        }
        for s in 0..SLOTS as u16 {
            self.set_owner(s, None);
        }
        self.migrating.clear();
        self.importing.clear();
        let me = self.me_mut();
        me.flags = (me.flags & !flag::SLAVE) | flag::MASTER;
        me.slaveof = None;
        if hard {
            self.current_epoch = 0;
            self.last_vote_epoch = 0;
            self.me_mut().config_epoch = 0;
            let new = random_name();
            let old = self.myself;
            self.rename(&old, new);
            self.myself = new;
        }
        self.save_pending = true;
    }

    /// A PONG to every node we have a link to (after this node's slots changed).
    pub fn broadcast_pong(&mut self) {
        let links: Vec<LinkId> = self.nodes.values().filter(|n| !n.has(flag::MYSELF | flag::HANDSHAKE)).filter_map(|n| n.link).collect();
        for link in links {
            let m = self.ping(bus::kind::PONG);
            self.send(link, &m);
        }
    }

    pub fn next_random(&mut self) -> u64 {
        self.rng = crate::util::xorshift(self.rng);
        self.rng
    }

    /// The failure reports on `node` still valid (Redis keeps them for twice the node timeout).
    pub fn valid_fail_reports(&mut self, node: &Name, now: i64) -> usize {
        let max_age = self.settings.node_timeout * 2;
        match self.nodes.get_mut(node) {
            Some(n) => {
                n.fail_reports.retain(|(_, at)| now - at <= max_age);
                n.fail_reports.len()
            }
            None => 0,
        }
    }
}

/// An IP as Redis prints it (no brackets, IPv4-mapped IPv6 unwrapped).
pub fn normalize_ip(ip: &str) -> String {
    let bare = ip.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.to_string(),
        },
        Ok(addr) => addr.to_string(),
        Err(_) => bare.to_string(),
    }
}

/// Redis's clusterBumpConfigEpochWithoutConsensus: a new epoch unless this node's is already
/// the largest one (and non-zero). True if it moved.
pub fn bump_epoch_without_consensus(c: &mut Cluster) -> bool {
    let max = c.nodes.values().map(|n| n.config_epoch).max().unwrap_or(0).max(c.current_epoch);
    let mine = c.me().config_epoch;
    if mine == 0 || mine != max {
        c.current_epoch = max + 1;
        let e = c.current_epoch;
        c.me_mut().config_epoch = e;
        c.save_pending = true;
        true
    } else {
        false
    }
}
