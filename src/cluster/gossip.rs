//! The cluster bus's rules (Redis 7.0's clusterProcessPacket and clusterCron): handshakes,
//! PING/PONG with gossip, failure detection, slot ownership by config epoch, UPDATE and FAIL.
//! Everything here changes the [`Cluster`] and queues [`Action`]s; nothing does I/O.

use super::bus::{self, flag, kind, Body, Gossip, Header, Message, NAME_LEN};
use super::node::{LinkId, Name, Node, MIGRATE_TO};
use super::nodes_conf::NOFAILOVER;
use super::slot::SLOTS;
use super::state::{normalize_ip, Action, Cluster, Link, STATE_FAIL};

/// Extension type of a node's hostname (`CLUSTERMSG_EXT_TYPE_HOSTNAME`).
const EXT_HOSTNAME: u16 = 0;

/// `CLUSTERMSG_FLAG0_EXT_DATA`: the message carries extensions (receivers check it).
const MFLAG_EXT_DATA: u8 = 4;

/// Redis's verifyClusterNodeId: 40 characters of `[a-z0-9]`.
fn valid_name(name: &Name) -> bool {
    name.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

impl Cluster {
    /// A new link, connected (inbound: accepted by our bus port).
    pub fn link_up(&mut self, link: LinkId, node: Option<Name>, inbound: bool, peer_ip: String, local_ip: String, now: i64) {
        self.links.insert(link, Link { node, inbound, peer_ip, local_ip, ctime: now });
        let Some(name) = node else { return };
        let Some(n) = self.nodes.get(&name) else {
            self.free_link(link);
            return;
        };
        // A second connection made meanwhile (the address changed): the newest one stays.
        if let Some(old) = n.link.filter(|l| *l != link) {
            self.free_link(old);
        }
        let Some(n) = self.nodes.get_mut(&name) else { return };
        n.link = Some(link);
        n.connecting = false;
        // A handshake node is met; a known one pinged (Redis's clusterLinkConnectHandler).
        let meet = n.has(flag::MEET);
        if n.ping_sent == 0 {
            n.ping_sent = now;
        }
        n.flags &= !flag::MEET;
        let m = self.ping(if meet { kind::MEET } else { kind::PING });
        self.send(link, &m);
    }

    /// A link ended (or could not be made).
    pub fn link_down(&mut self, link: LinkId) {
        self.links.remove(&link);
        for n in self.nodes.values_mut() {
            if n.link == Some(link) {
                n.link = None;
                n.connecting = false;
            }
            if n.inbound == Some(link) {
                n.inbound = None;
            }
        }
    }

    /// An outbound connection to `node` failed before it was up.
    pub fn connect_failed(&mut self, node: &Name) {
        if let Some(n) = self.nodes.get_mut(node) {
            n.connecting = false;
        }
    }

    /// The header of every message this node sends (clusterBuildMessageHdr).
    pub fn header(&self, kind: u16) -> Header {
        let me = self.me();
        let master = self.my_master().and_then(|m| self.nodes.get(&m));
        let mut h = Header::new(kind, self.myself);
        h.port = self.settings.port;
        h.cport = self.settings.cport;
        h.pport = 0;
        h.current_epoch = self.current_epoch;
        h.config_epoch = master.map_or(me.config_epoch, |m| m.config_epoch);
        h.myslots = master.map_or_else(|| me.slots.clone(), |m| m.slots.clone());
        if let Some(m) = me.slaveof.filter(|_| !me.is_master()) {
            h.slaveof = m;
        }
        if !self.settings.announce_ip.is_empty() {
            h.myip = bus::text_field(&self.settings.announce_ip);
        }
        h.flags = me.flags & !(flag::MEET | flag::HANDSHAKE);
        h.state = self.state;
        h.offset = me.repl_offset;
        h
    }

    /// A PING, PONG or MEET with gossip about some nodes (clusterSendPing).
    pub fn ping(&mut self, kind: u16) -> Message {
        let fresh = self.nodes.len().saturating_sub(2);
        let wanted = (self.nodes.len() / 10).max(3).min(fresh);
        let candidates: Vec<Name> = self
            .nodes
            .values()
            .filter(|n| !(n.has(flag::MYSELF | flag::PFAIL | flag::HANDSHAKE | flag::NOADDR) || (n.link.is_none() && n.numslots == 0)))
            .map(|n| n.name)
            .collect();
        let mut chosen: Vec<Name> = Vec::new();
        let mut tries = wanted * 3;
        while chosen.len() < wanted && tries > 0 && !candidates.is_empty() {
            tries -= 1;
            let pick = candidates[(self.next_random() % candidates.len() as u64) as usize];
            if !chosen.contains(&pick) {
                chosen.push(pick);
            }
        }
        // Every node we suspect goes along, so that failure reports spread.
        chosen.extend(self.nodes.values().filter(|n| n.has(flag::PFAIL) && !n.has(flag::HANDSHAKE | flag::NOADDR)).map(|n| n.name));
        let gossip = chosen.iter().filter_map(|name| self.nodes.get(name)).map(gossip_entry).collect();
        let mut extensions = Vec::new();
        if !self.settings.announce_hostname.is_empty() {
            let mut data = self.settings.announce_hostname.as_bytes().to_vec();
            // NUL-terminated, padded to 8 bytes with the extension's 8-byte header.
            data.push(0);
            while !(data.len() + 8).is_multiple_of(8) {
                data.push(0);
            }
            extensions.push(bus::Extension { kind: EXT_HOSTNAME, data });
        }
        let mut header = self.header(kind);
        if !extensions.is_empty() {
            header.mflags[0] |= MFLAG_EXT_DATA;
        }
        Message { header, body: Body::Ping { gossip, extensions } }
    }

    /// One message from `link` (clusterProcessPacket).
    pub fn receive(&mut self, link: LinkId, m: Message, now: i64) {
        let Some(l) = self.links.get(&link).cloned() else { return };
        let h = &m.header;
        if let Some(c) = self.received.get_mut(h.kind as usize) {
            *c += 1;
        }
        let sender_name = h.sender;
        let known = self.nodes.get(&sender_name).is_some_and(|n| !n.in_handshake());
        if known {
            if h.current_epoch > self.current_epoch {
                self.current_epoch = h.current_epoch;
                self.save_pending = true;
            }
            let sender = self.nodes.get_mut(&sender_name).expect("known");
            sender.data_received = now;
            if h.config_epoch > sender.config_epoch {
                sender.config_epoch = h.config_epoch;
                self.save_pending = true;
            }
            sender.repl_offset = h.offset;
        }
        // An inbound link belongs to the sender once the sender is known.
        if l.inbound && l.node.is_none() && known {
            if let Some(n) = self.nodes.get_mut(&sender_name) {
                if let Some(old) = n.inbound.replace(link) {
                    if old != link {
                        self.free_link(old);
                    }
                }
            }
            if let Some(x) = self.links.get_mut(&link) {
                x.node = Some(sender_name);
            }
        }
        if known && self.my_master() == Some(sender_name) {
            self.mf_master_message(h.mflags[0], h.offset);
        }
        match h.kind {
            kind::PING | kind::PONG | kind::MEET => self.receive_ping(link, &l, m, known, now),
            kind::FAIL if known => {
                if let Body::Fail { about } = m.body {
                    if let Some(n) = self.nodes.get_mut(&about).filter(|n| !n.has(flag::MYSELF | flag::FAIL)) {
                        n.flags = (n.flags | flag::FAIL) & !flag::PFAIL;
                        n.fail_time = now;
                        self.save_pending = true;
                        self.update_state();
                    }
                }
            }
            kind::PUBLISH | kind::PUBLISHSHARD if known => {
                if let Body::Publish { channel, message } = m.body {
                    self.published.push((channel, message, h.kind == kind::PUBLISHSHARD));
                }
            }
            kind::FAILOVER_AUTH_REQUEST if known => {
                let force = Cluster::force_ack(h.mflags[0]);
                let (epoch, config_epoch, slots) = (h.current_epoch, h.config_epoch, h.myslots.clone());
                self.vote(&sender_name, epoch, config_epoch, &slots, force, now);
            }
            kind::FAILOVER_AUTH_ACK if known => self.vote_received(&sender_name, h.current_epoch),
            kind::MFSTART if known => self.mf_requested(&sender_name, now),
            kind::UPDATE if known => {
                if let Body::Update { config_epoch, nodename, slots } = m.body {
                    let Some(n) = self.nodes.get(&nodename) else { return };
                    if n.config_epoch >= config_epoch {
                        return;
                    }
                    if !n.is_master() {
                        self.set_as_master(&nodename);
                    }
                    if let Some(n) = self.nodes.get_mut(&nodename) {
                        n.config_epoch = config_epoch;
                    }
                    self.update_slots_with(nodename, config_epoch, &slots);
                    self.save_pending = true;
                }
            }
            _ => {}
        }
    }

    fn receive_ping(&mut self, link: LinkId, l: &Link, m: Message, known: bool, now: i64) {
        let h = m.header;
        let Body::Ping { gossip, extensions } = m.body else { return };
        let sender_name = h.sender;
        // Our own address, learnt from the first MEET when none is announced.
        let pinged = h.kind == kind::PING || h.kind == kind::MEET;
        if pinged && (h.kind == kind::MEET || self.me().ip.is_empty()) && self.settings.announce_ip.is_empty() && !l.local_ip.is_empty() {
            let ip = normalize_ip(&l.local_ip);
            if self.me().ip != ip {
                self.me_mut().ip = ip;
                self.save_pending = true;
            }
        }
        // A MEET from a node we do not know: it joins, in handshake until our PING to it is
        // answered.
        if h.kind == kind::MEET && !known && !self.nodes.contains_key(&sender_name) {
            let ip = match bus::field_text(&h.myip) {
                ip if !ip.is_empty() => ip,
                _ => l.peer_ip.clone(),
            };
            let mut n = Node::new(super::node::random_name(), flag::HANDSHAKE, now);
            n.ip = normalize_ip(&ip);
            n.port = h.port;
            n.cport = h.cport;
            n.pport = h.pport;
            self.add_node(n);
            self.save_pending = true;
            self.gossip_section(None, &gossip, now);
        }
        if h.kind == kind::PING || h.kind == kind::MEET {
            let pong = self.ping(kind::PONG);
            self.send(link, &pong);
        }
        // Our outbound link: the node behind it answered.
        if !l.inbound {
            let Some(node) = l.node else { return };
            let Some(n) = self.nodes.get(&node) else { return };
            if n.in_handshake() {
                if known {
                    // We knew it under its real name already: the handshake node goes.
                    self.update_address(&sender_name, l, &h);
                    self.del_node(&node);
                    self.save_pending = true;
                    return;
                }
                // Its first answer names it; the rest of this message is not read (Redis
                // looked the sender up before the rename).
                self.rename(&node, sender_name);
                let n = self.nodes.get_mut(&sender_name).expect("renamed");
                n.flags &= !flag::HANDSHAKE;
                n.flags |= h.flags & (flag::MASTER | flag::SLAVE);
                if h.kind == kind::PONG {
                    n.pong_received = now;
                    n.ping_sent = 0;
                }
                self.save_pending = true;
                return;
            } else if node != sender_name {
                // Another node answers at that address now.
                if let Some(n) = self.nodes.get_mut(&node) {
                    n.flags |= flag::NOADDR;
                    n.ip.clear();
                    n.port = 0;
                    n.cport = 0;
                }
                self.free_link(link);
                self.save_pending = true;
                return;
            }
        }
        let known = self.nodes.get(&sender_name).is_some_and(|n| !n.in_handshake());
        if !known {
            return;
        }
        // A message without the hostname extension clears the hostname, as in Redis.
        let host = extensions.iter().find(|e| e.kind == EXT_HOSTNAME).map(|e| bus::field_text(&e.data)).unwrap_or_default();
        if let Some(n) = self.nodes.get_mut(&sender_name) {
            if n.hostname != host {
                n.hostname = host;
                self.save_pending = true;
            }
        }
        if let Some(n) = self.nodes.get_mut(&sender_name) {
            n.flags = (n.flags & !NOFAILOVER) | (h.flags & NOFAILOVER);
        }
        if h.kind == kind::PING && l.inbound {
            self.update_address(&sender_name, l, &h);
        }
        if !l.inbound && h.kind == kind::PONG {
            if let Some(n) = self.nodes.get_mut(&sender_name) {
                n.pong_received = now;
                n.ping_sent = 0;
                if n.has(flag::PFAIL) {
                    n.flags &= !flag::PFAIL;
                    self.update_state();
                } else if n.has(flag::FAIL) {
                    self.clear_failure_if_needed(&sender_name, now);
                }
            }
        }
        // Role.
        if h.slaveof == [0; NAME_LEN] {
            self.set_as_master(&sender_name);
        } else {
            let master = h.slaveof;
            if let Some(n) = self.nodes.get_mut(&sender_name) {
                if n.is_master() || n.slaveof != Some(master) {
                    if n.is_master() {
                        // Its slots are its new master's now.
                        for s in 0..SLOTS as u16 {
                            if self.slots[s as usize] == Some(sender_name) {
                                self.set_owner(s, None);
                            }
                        }
                    }
                    let n = self.nodes.get_mut(&sender_name).expect("known");
                    n.flags = (n.flags & !(flag::MASTER | MIGRATE_TO)) | flag::SLAVE;
                    n.slaveof = Some(master);
                    if let Some(m) = self.nodes.get_mut(&master) {
                        m.flags |= MIGRATE_TO;
                    }
                    self.save_pending = true;
                }
            }
        }
        // Slots: a master's claim, judged by config epoch.
        let sender_master = self.nodes.get(&sender_name).is_some_and(|n| n.is_master());
        if sender_master {
            let differs = self.nodes.get(&sender_name).is_some_and(|n| *n.slots != *h.myslots);
            if differs {
                self.update_slots_with(sender_name, h.config_epoch, &h.myslots);
            }
            // A claim older than what we know: tell the sender (UPDATE) about the newer owner.
            let mut stale: Option<Name> = None;
            for s in 0..SLOTS as u16 {
                if !bit(&h.myslots, s) {
                    continue;
                }
                if let Some(owner) = self.slots[s as usize].filter(|o| *o != sender_name) {
                    if self.nodes.get(&owner).is_some_and(|o| o.config_epoch > h.config_epoch) {
                        stale = Some(owner);
                        break;
                    }
                }
            }
            let sender_link = self.nodes.get(&sender_name).and_then(|n| n.link);
            if let (Some(owner), Some(link)) = (stale, sender_link) {
                let o = &self.nodes[&owner];
                let mut hdr = self.header(kind::UPDATE);
                hdr.count = 0;
                let msg =
                    Message { header: hdr, body: Body::Update { config_epoch: o.config_epoch, nodename: owner, slots: o.slots.clone() } };
                self.send(link, &msg);
            }
            let me = self.me();
            if me.is_master() && h.config_epoch == me.config_epoch && sender_name != self.myself {
                self.config_epoch_collision(&sender_name);
            }
        }
        self.gossip_section(Some(sender_name), &gossip, now);
    }

    /// Redis's clusterHandleConfigEpochCollision: of two masters with one config epoch, the
    /// one with the smaller name takes a new one.
    fn config_epoch_collision(&mut self, sender: &Name) {
        if self.myself.as_slice() > sender.as_slice() {
            // The other node moves (it compares the same way).
            return;
        }
        self.current_epoch += 1;
        let epoch = self.current_epoch;
        self.me_mut().config_epoch = epoch;
        self.save_pending = true;
    }

    /// The sender's address as seen on its connection, if it moved (nodeUpdateAddressIfNeeded).
    fn update_address(&mut self, name: &Name, l: &Link, h: &Header) {
        if *name == self.myself {
            return;
        }
        let ip = match bus::field_text(&h.myip) {
            ip if !ip.is_empty() => normalize_ip(&ip),
            _ => normalize_ip(&l.peer_ip),
        };
        let Some(n) = self.nodes.get_mut(name) else { return };
        if n.ip == ip && n.port == h.port && n.cport == h.cport {
            return;
        }
        n.ip = ip;
        n.port = h.port;
        n.cport = h.cport;
        n.pport = h.pport;
        n.flags &= !flag::NOADDR;
        let old = n.link.take();
        n.connecting = false;
        if let Some(link) = old {
            self.free_link(link);
        }
        self.save_pending = true;
    }

    fn set_as_master(&mut self, name: &Name) {
        let Some(n) = self.nodes.get_mut(name) else { return };
        if n.is_master() {
            return;
        }
        // A promoted replica took over a master that had replicas.
        if n.slaveof.is_some() && !n.has(flag::MYSELF) {
            n.flags |= MIGRATE_TO;
        }
        n.flags = (n.flags & !flag::SLAVE) | flag::MASTER;
        n.slaveof = None;
        self.save_pending = true;
    }

    /// Redis's clusterUpdateSlotsConfigWith: the sender claims `slots` at `epoch`; it gets
    /// each one nobody owns or whose owner's epoch is older. This node loses those it owned
    /// (the keys there are deleted by the executor: `lost_slots`).
    pub fn update_slots_with(&mut self, sender: Name, epoch: u64, slots: &[u8; bus::SLOT_BYTES]) {
        if sender == self.myself {
            return;
        }
        // The master whose slots this node serves: itself, or its master.
        let curmaster = self.my_master().unwrap_or(self.myself);
        let (mut sender_slots, mut migrated_ours, mut newmaster) = (0, 0, false);
        let mut dirty = Vec::new();
        for s in 0..SLOTS as u16 {
            if !bit(slots, s) {
                continue;
            }
            sender_slots += 1;
            if self.slots[s as usize] == Some(sender) || self.importing.contains_key(&s) {
                continue;
            }
            let current = self.slots[s as usize];
            let older = current.and_then(|o| self.nodes.get(&o)).is_none_or(|o| o.config_epoch < epoch);
            if !older {
                continue;
            }
            if current == Some(self.myself) {
                dirty.push(s);
            }
            if current == Some(curmaster) {
                newmaster = true;
                migrated_ours += 1;
            }
            self.set_owner(s, Some(sender));
            self.save_pending = true;
        }
        let cur_empty = self.nodes.get(&curmaster).is_none_or(|n| n.numslots == 0);
        let grandmaster = self.my_master().and_then(|m| self.nodes.get(&m)).and_then(|m| m.slaveof.filter(|_| !m.is_master()));
        if newmaster && cur_empty && (self.settings.allow_replica_migration || sender_slots == migrated_ours) {
            // This node's master (or this master) lost its last slot to the sender: it
            // follows the sender (a failed-over master back, a sibling replica after a
            // failover). Its data comes from the new master's full sync: nothing is deleted.
            crate::log::notice(&format!(
                "Configuration change detected. Reconfiguring myself as a replica of {}",
                super::node::name_str(&sender)
            ));
            self.end_manual_failover();
            self.set_my_master(sender);
        } else if let Some(g) = grandmaster.filter(|g| *g != self.myself) {
            // A replica of a replica follows the master at the top.
            self.set_my_master(g);
        } else {
            // Slots this master lost while keeping others: their keys go.
            self.lost.extend(dirty);
        }
        self.update_state();
    }

    /// What gossip says about other nodes (clusterProcessGossipSection).
    fn gossip_section(&mut self, sender: Option<Name>, gossip: &[Gossip], now: i64) {
        let sender_is_master = sender.and_then(|s| self.nodes.get(&s)).is_some_and(|n| n.is_master());
        for g in gossip {
            if let Some(n) = self.nodes.get(&g.nodename) {
                if n.has(flag::MYSELF) {
                    continue;
                }
                if let (Some(by), true) = (sender, sender_is_master) {
                    let n = self.nodes.get_mut(&g.nodename).expect("known");
                    if g.flags & (flag::FAIL | flag::PFAIL) != 0 {
                        match n.fail_reports.iter_mut().find(|(who, _)| *who == by) {
                            Some(r) => r.1 = now,
                            None => n.fail_reports.push((by, now)),
                        }
                        self.mark_failing_if_needed(&g.nodename, now);
                    } else {
                        n.fail_reports.retain(|(who, _)| *who != by);
                    }
                }
                let n = self.nodes.get_mut(&g.nodename).expect("known");
                // A newer pong seen by someone else counts, when we wait for none.
                let pong = g.pong_received as i64 * 1000;
                if g.flags & (flag::FAIL | flag::PFAIL) == 0
                    && n.ping_sent == 0
                    && n.fail_reports.is_empty()
                    && pong > n.pong_received
                    && pong <= now + 500
                {
                    n.pong_received = pong;
                }
                // A node we cannot reach announced elsewhere at another address.
                let ip = normalize_ip(&bus::field_text(&g.ip));
                if n.has(flag::FAIL | flag::PFAIL)
                    && g.flags & (flag::NOADDR | flag::FAIL | flag::PFAIL) == 0
                    && (n.ip != ip || n.port != g.port || n.cport != g.cport)
                    && !ip.is_empty()
                {
                    if let Some(link) = n.link.take() {
                        self.free_link(link);
                    }
                    let Some(n) = self.nodes.get_mut(&g.nodename) else { continue };
                    n.connecting = false;
                    n.ip = ip;
                    n.port = g.port;
                    n.cport = g.cport;
                    n.flags &= !flag::NOADDR;
                }
            } else if sender.is_some()
                && g.flags & flag::NOADDR == 0
                && !self.blacklist.contains_key(&g.nodename)
                && valid_name(&g.nodename)
            {
                // Known to a known node: added under its name, with the flags it was told
                // with; the cron connects and pings it.
                let mut n = Node::new(g.nodename, g.flags & !(flag::MYSELF | flag::PFAIL | flag::FAIL | flag::HANDSHAKE | flag::MEET), now);
                n.ip = normalize_ip(&bus::field_text(&g.ip));
                n.port = g.port;
                n.cport = g.cport;
                n.pport = g.pport;
                self.add_node(n);
                self.save_pending = true;
            }
        }
    }

    /// PFAIL to FAIL when most masters agree (markNodeAsFailingIfNeeded).
    fn mark_failing_if_needed(&mut self, name: &Name, now: i64) {
        let quorum = self.size / 2 + 1;
        let Some(n) = self.nodes.get(name) else { return };
        if !n.has(flag::PFAIL) || n.has(flag::FAIL) {
            return;
        }
        let mut failures = self.valid_fail_reports(name, now);
        if self.me().is_master() {
            failures += 1;
        }
        if failures < quorum {
            return;
        }
        let n = self.nodes.get_mut(name).expect("known");
        n.flags = (n.flags & !flag::PFAIL) | flag::FAIL;
        n.fail_time = now;
        let mut hdr = self.header(kind::FAIL);
        hdr.count = 0;
        let msg = Message { header: hdr, body: Body::Fail { about: *name } };
        self.broadcast(&msg);
        self.update_state();
        self.save_pending = true;
    }

    /// FAIL is cleared for a replica, or a master without slots, or one that is back for
    /// long enough (clearNodeFailureIfNeeded).
    fn clear_failure_if_needed(&mut self, name: &Name, now: i64) {
        let timeout = self.settings.node_timeout;
        let Some(n) = self.nodes.get_mut(name) else { return };
        if !n.is_master() || n.numslots == 0 || now - n.fail_time > timeout * 2 {
            n.flags &= !flag::FAIL;
            self.save_pending = true;
            self.update_state();
        }
    }

    /// Sends `m` on every connected node's link.
    pub fn broadcast(&mut self, m: &Message) {
        let links: Vec<LinkId> = self.nodes.values().filter(|n| !n.has(flag::MYSELF | flag::HANDSHAKE)).filter_map(|n| n.link).collect();
        for link in links {
            self.send(link, m);
        }
    }

    /// Ten times a second (clusterCron): connections to make, pings to send, handshakes
    /// that took too long, nodes that stopped answering.
    pub fn cron(&mut self, now: i64, data_age_ms: i64) {
        self.cron_ticks += 1;
        self.manual_failover_cron(now);
        if !self.me().is_master() {
            self.handle_replica_failover(now, data_age_ms);
            self.handle_replica_migration(now);
        }
        let timeout = self.settings.node_timeout.max(1);
        let handshake_timeout = timeout.max(1000);
        self.blacklist.retain(|_, until| *until > now);
        let names: Vec<Name> = self.nodes.keys().copied().collect();
        for name in &names {
            let Some(n) = self.nodes.get(name) else { continue };
            if n.has(flag::MYSELF | flag::NOADDR) {
                continue;
            }
            if n.in_handshake() && now - n.ctime > handshake_timeout {
                self.del_node(name);
                continue;
            }
            if n.link.is_none() && !n.connecting {
                let (ip, cport) = (n.ip.clone(), n.cport);
                let n = self.nodes.get_mut(name).expect("known");
                n.connecting = true;
                // Redis queues a PING on a new link at once: a node that cannot be reached
                // counts as not answering from now on.
                if n.ping_sent == 0 {
                    n.ping_sent = now;
                }
                self.out.push(Action::Connect { node: *name, ip, cport });
            }
        }
        // Once a second, ping the node of five random ones heard from longest ago.
        if self.cron_ticks.is_multiple_of(10) {
            let mut best: Option<(Name, i64)> = None;
            for _ in 0..5 {
                if names.is_empty() {
                    break;
                }
                let name = names[(self.next_random() % names.len() as u64) as usize];
                let Some(n) = self.nodes.get(&name) else { continue };
                if n.link.is_none() || n.ping_sent != 0 || n.has(flag::MYSELF | flag::HANDSHAKE) {
                    continue;
                }
                if best.is_none_or(|(_, p)| n.pong_received < p) {
                    best = Some((name, n.pong_received));
                }
            }
            if let Some((name, _)) = best {
                self.ping_node(&name, now);
            }
        }
        let mut changed = false;
        for name in &names {
            let Some(n) = self.nodes.get(name) else { continue };
            if n.has(flag::MYSELF | flag::NOADDR | flag::HANDSHAKE) {
                continue;
            }
            // An unanswered ping for half the timeout: the link may be bad, make a new one.
            if let Some(link) = n.link {
                if n.ping_sent != 0 && now - n.ping_sent > timeout / 2 && now - n.data_received > timeout / 2 {
                    let ctime = self.links.get(&link).map_or(now, |l| l.ctime);
                    if now - ctime > timeout {
                        self.free_link(link);
                        continue;
                    }
                }
            }
            let n = &self.nodes[name];
            if n.link.is_some() && n.ping_sent == 0 && now - n.pong_received > timeout / 2 {
                self.ping_node(name, now);
                continue;
            }
            let n = &self.nodes[name];
            if n.ping_sent == 0 {
                continue;
            }
            let delay = (now - n.ping_sent).min(now - n.data_received);
            if delay > timeout && !n.has(flag::PFAIL | flag::FAIL) {
                self.nodes.get_mut(name).expect("known").flags |= flag::PFAIL;
                changed = true;
            }
        }
        if changed || self.state == STATE_FAIL || self.cron_ticks.is_multiple_of(10) {
            self.update_state();
        }
    }

    fn ping_node(&mut self, name: &Name, now: i64) {
        let Some(link) = self.nodes.get(name).and_then(|n| n.link) else { return };
        let m = self.ping(kind::PING);
        self.send(link, &m);
        if let Some(n) = self.nodes.get_mut(name) {
            if n.ping_sent == 0 {
                n.ping_sent = now;
            }
        }
    }
}

fn bit(slots: &[u8; bus::SLOT_BYTES], s: u16) -> bool {
    slots[s as usize / 8] & (1 << (s % 8)) != 0
}

fn gossip_entry(n: &Node) -> Gossip {
    Gossip {
        nodename: n.name,
        ping_sent: (n.ping_sent / 1000) as u32,
        pong_received: (n.pong_received / 1000) as u32,
        ip: bus::text_field(&n.ip),
        port: n.port,
        cport: n.cport,
        flags: n.flags,
        pport: n.pport,
    }
}

impl Cluster {
    /// A PUBLISH to pass on (clusterPropagatePublish): to every node, or for SPUBLISH to
    /// the nodes serving this node's slots (its master or replicas).
    pub fn propagate_publish(&mut self, channel: &[u8], message: &[u8], shard: bool) {
        let mut h = self.header(if shard { kind::PUBLISHSHARD } else { kind::PUBLISH });
        h.count = 0;
        let m = Message { header: h, body: Body::Publish { channel: channel.to_vec(), message: message.to_vec() } };
        if !shard {
            self.broadcast(&m);
            return;
        }
        let master = self.master_of(&self.myself).unwrap_or(self.myself);
        let links: Vec<LinkId> = self
            .nodes
            .values()
            .filter(|n| !n.has(flag::MYSELF | flag::HANDSHAKE))
            .filter(|n| n.name == master || (!n.is_master() && n.slaveof == Some(master)))
            .filter_map(|n| n.link)
            .collect();
        for link in links {
            self.send(link, &m);
        }
    }
}
