//! Replica promotion (Redis 7.0's clusterHandleSlaveFailover and its voters'
//! clusterSendFailoverAuthIfNeeded): when a master FAILs, its replicas wait by rank (the
//! best replicated goes first), ask the masters for votes in a new epoch, and the one that
//! gets a majority takes its master's slots under that epoch. CLUSTER FAILOVER starts the
//! same election without a failure: at once (TAKEOVER), without the master (FORCE), or after
//! the master paused its writes and the replica caught up (the default, MFSTART).

use super::bus::{flag, kind, Body, Message, SLOT_BYTES};
use super::node::Name;
use super::slot::SLOTS;
use super::state::Cluster;

/// How long a manual failover may take (`CLUSTER_MF_TIMEOUT`).
pub const MF_TIMEOUT_MS: i64 = 5000;

/// `CLUSTERMSG_FLAG0_PAUSED`: the master paused its writes for a manual failover.
const MFLAG_PAUSED: u8 = 1;
/// `CLUSTERMSG_FLAG0_FORCEACK`: vote even though the master is not failing.
const MFLAG_FORCEACK: u8 = 2;

/// The election and manual failover of this node (as a replica), and what a master
/// remembers of a manual failover it serves.
#[derive(Debug, Default, Clone)]
pub struct Election {
    pub auth_time: i64,
    pub auth_count: usize,
    pub auth_sent: bool,
    pub auth_rank: usize,
    pub auth_epoch: u64,
    /// A manual failover ends (fails) at this time; 0: none.
    pub mf_end: i64,
    /// On the master: the replica it fails over to.
    pub mf_slave: Option<Name>,
    /// On the replica: the master's offset once it paused (-1 until then).
    pub mf_master_offset: i64,
    pub mf_can_start: bool,
    /// When this node (as a master) last voted for a replica of each master.
    pub voted: Vec<(Name, i64)>,
}

impl Cluster {
    fn master_failing(&self) -> Option<Name> {
        let m = self.my_master()?;
        let n = self.nodes.get(&m)?;
        (n.failed() || self.election.mf_end != 0).then_some(m)
    }

    /// Replicas of the same master with more data than this one (clusterGetSlaveRank).
    fn rank(&self, master: &Name) -> usize {
        let mine = self.me().repl_offset;
        self.nodes
            .values()
            .filter(|n| !n.is_master() && n.slaveof == Some(*master) && n.name != self.myself && n.repl_offset > mine)
            .count()
    }

    /// Every cron tick on a replica: the election's next step.
    pub fn handle_replica_failover(&mut self, now: i64, data_age_ms: i64) {
        let manual = self.election.mf_end != 0 && self.election.mf_can_start;
        let Some(master) = self.master_failing() else { return };
        let numslots = self.nodes.get(&master).map_or(0, |n| n.numslots);
        if numslots == 0 || (self.me().has(super::nodes_conf::NOFAILOVER) && !manual) {
            return;
        }
        if self.election.mf_end != 0 && !manual {
            return;
        }
        let timeout = self.settings.node_timeout;
        let auth_timeout = (timeout * 2).max(2000);
        let auth_retry = auth_timeout * 2;
        // Too old a copy may not take over (cluster-replica-validity-factor).
        let age = (data_age_ms - timeout).max(0);
        if self.settings.validity_factor > 0 && !manual && age > self.settings.ping_period_ms + timeout * self.settings.validity_factor {
            return;
        }
        let e = &mut self.election;
        if now - e.auth_time > auth_retry {
            e.auth_time = now + 500 + (crate::util::xorshift(now as u64 | 1) % 500) as i64;
            e.auth_count = 0;
            e.auth_sent = false;
            let rank = self.rank(&master);
            self.election.auth_rank = rank;
            self.election.auth_time += rank as i64 * 1000;
            if manual {
                self.election.auth_time = now;
                self.election.auth_rank = 0;
            }
            // Tell the other replicas our offset, so that they rank themselves.
            self.broadcast_pong();
            return;
        }
        if !self.election.auth_sent && !manual {
            let rank = self.rank(&master);
            if rank > self.election.auth_rank {
                self.election.auth_time += (rank - self.election.auth_rank) as i64 * 1000;
                self.election.auth_rank = rank;
            }
        }
        if now < self.election.auth_time || now - self.election.auth_time > auth_timeout {
            return;
        }
        if !self.election.auth_sent {
            self.current_epoch += 1;
            self.election.auth_epoch = self.current_epoch;
            let mut h = self.header(kind::FAILOVER_AUTH_REQUEST);
            if manual {
                h.mflags[0] |= MFLAG_FORCEACK;
            }
            self.broadcast(&Message { header: h, body: Body::Other(Vec::new()) });
            self.election.auth_sent = true;
            self.save_pending = true;
            return;
        }
        // A majority of the masters with slots (needed_quorum = size / 2 + 1).
        if self.election.auth_count > self.size / 2 {
            self.replace_my_master(self.election.auth_epoch);
        }
    }

    /// This replica takes its master's slots (clusterFailoverReplaceYourMaster).
    pub fn replace_my_master(&mut self, epoch: u64) {
        let Some(old) = self.my_master() else { return };
        let me = self.myself;
        // A master first (Redis's order): the slots taken below stay served by this node,
        // so their shard channels keep their subscribers.
        let n = self.me_mut();
        n.flags = (n.flags & !flag::SLAVE) | flag::MASTER;
        n.slaveof = None;
        n.config_epoch = epoch;
        for s in 0..SLOTS as u16 {
            if self.slots[s as usize] == Some(old) {
                self.set_owner(s, Some(me));
            }
        }
        self.current_epoch = self.current_epoch.max(epoch);
        self.election = Election { voted: std::mem::take(&mut self.election.voted), ..Election::default() };
        self.role_changed = true;
        self.save_pending = true;
        self.update_state();
        crate::log::notice("Failover election won: I'm the new master.");
        let links: Vec<u64> = self.nodes.values().filter(|n| !n.has(flag::MYSELF | flag::HANDSHAKE)).filter_map(|n| n.link).collect();
        for link in links {
            let m = self.ping(kind::PONG);
            self.send(link, &m);
        }
    }

    /// A master's vote (clusterSendFailoverAuthIfNeeded).
    pub(super) fn vote(
        &mut self,
        sender: &Name,
        request_epoch: u64,
        request_config_epoch: u64,
        slots: &[u8; SLOT_BYTES],
        force: bool,
        now: i64,
    ) {
        let me = self.me();
        if !me.is_master() || me.numslots == 0 || request_epoch < self.current_epoch || self.last_vote_epoch == self.current_epoch {
            return;
        }
        let Some(node) = self.nodes.get(sender) else { return };
        let Some(master) = node.slaveof.filter(|_| !node.is_master()) else { return };
        let Some(m) = self.nodes.get(&master) else { return };
        if !m.failed() && !force {
            return;
        }
        let timeout = self.settings.node_timeout;
        if self.election.voted.iter().any(|(n, at)| *n == master && now - at < timeout * 2) {
            return;
        }
        for s in 0..SLOTS as u16 {
            if slots[s as usize / 8] & (1 << (s % 8)) == 0 {
                continue;
            }
            if self.slots[s as usize].and_then(|o| self.nodes.get(&o)).is_some_and(|o| o.config_epoch > request_config_epoch) {
                return;
            }
        }
        self.last_vote_epoch = self.current_epoch;
        self.election.voted.retain(|(n, _)| *n != master);
        self.election.voted.push((master, now));
        self.save_pending = true;
        if let Some(link) = self.nodes.get(sender).and_then(|n| n.link) {
            let h = self.header(kind::FAILOVER_AUTH_ACK);
            self.send(link, &Message { header: h, body: Body::Other(Vec::new()) });
        }
    }

    /// A vote for this replica.
    pub(super) fn vote_received(&mut self, sender: &Name, sender_epoch: u64) {
        let Some(n) = self.nodes.get(sender) else { return };
        if n.is_master() && n.numslots > 0 && sender_epoch >= self.election.auth_epoch {
            self.election.auth_count += 1;
        }
    }

    /// CLUSTER FAILOVER on this replica (`force`: without the master; TAKEOVER is
    /// `takeover_now`).
    pub fn start_manual_failover(&mut self, force: bool, now: i64) {
        self.election.mf_end = now + MF_TIMEOUT_MS;
        self.election.mf_master_offset = -1;
        self.election.mf_can_start = force;
        self.election.auth_time = 0;
        if !force {
            if let Some(link) = self.my_master().and_then(|m| self.nodes.get(&m)).and_then(|n| n.link) {
                let h = self.header(kind::MFSTART);
                self.send(link, &Message { header: h, body: Body::Other(Vec::new()) });
            }
        }
    }

    /// TAKEOVER: a new epoch without votes, and the slots at once.
    pub fn takeover_now(&mut self) {
        super::state::bump_epoch_without_consensus(self);
        let epoch = self.me().config_epoch;
        self.replace_my_master(epoch);
    }

    /// MFSTART from one of this master's replicas: writes pause, and the replica is told
    /// our offset until it catches up.
    pub(super) fn mf_requested(&mut self, sender: &Name, now: i64) {
        let ours = self.nodes.get(sender).is_some_and(|n| n.slaveof == Some(self.myself) && !n.is_master());
        if !ours || !self.me().is_master() {
            return;
        }
        self.election.mf_end = now + MF_TIMEOUT_MS;
        self.election.mf_slave = Some(*sender);
        self.pause_writes_until = Some(now + MF_TIMEOUT_MS * 2);
        self.ping_mf_slave();
    }

    fn ping_mf_slave(&mut self) {
        let Some(link) = self.election.mf_slave.and_then(|s| self.nodes.get(&s)).and_then(|n| n.link) else { return };
        let mut m = self.ping(kind::PING);
        m.header.mflags[0] |= MFLAG_PAUSED;
        self.send(link, &m);
    }

    /// Every message from our master during a manual failover: its offset once paused.
    pub(super) fn mf_master_message(&mut self, mflags: u8, offset: u64) {
        if self.election.mf_end != 0 && self.election.mf_master_offset == -1 && mflags & MFLAG_PAUSED != 0 {
            self.election.mf_master_offset = offset as i64;
        }
    }

    /// A manual failover this node served or ran is over: writes resume.
    pub fn end_manual_failover(&mut self) {
        if self.election.mf_slave.take().is_some() {
            self.pause_writes_until = Some(0);
        }
        self.election.mf_end = 0;
        self.election.mf_master_offset = -1;
        self.election.mf_can_start = false;
    }

    /// Every cron tick: a manual failover in progress goes on or times out.
    pub fn manual_failover_cron(&mut self, now: i64) {
        if self.election.mf_end == 0 {
            return;
        }
        if now > self.election.mf_end {
            crate::log::warning("Manual failover timed out.");
            self.election.mf_end = 0;
            self.election.mf_slave = None;
            self.election.mf_master_offset = -1;
            self.election.mf_can_start = false;
            self.pause_writes_until = Some(0);
            return;
        }
        if self.me().is_master() {
            self.ping_mf_slave();
        } else if !self.election.mf_can_start
            && self.election.mf_master_offset >= 0
            && self.election.mf_master_offset as u64 == self.me().repl_offset
        {
            self.election.mf_can_start = true;
            crate::log::notice("All master replication stream processed, manual failover can start.");
        }
    }

    /// Whether `mflags` asks for a vote regardless of the master's state.
    pub(super) fn force_ack(mflags: u8) -> bool {
        mflags & MFLAG_FORCEACK != 0
    }
}

/// How long a master must stay orphaned before a replica moves to it
/// (`CLUSTER_SLAVE_MIGRATION_DELAY`).
const MIGRATION_DELAY_MS: i64 = 5000;

impl Cluster {
    /// Working replicas of master `m` (not failing, not suspected).
    fn ok_replicas(&self, m: &Name) -> usize {
        self.nodes.values().filter(|n| !n.is_master() && n.slaveof == Some(*m) && !n.has(flag::FAIL | flag::PFAIL)).count()
    }

    /// Replica migration (clusterHandleSlaveMigration): a master left without a working
    /// replica gets one from the master with the most, once it stayed so for 5 s; of that
    /// master's replicas the one with the smallest name moves (`cluster-migration-barrier`
    /// replicas stay behind at least).
    pub fn handle_replica_migration(&mut self, now: i64) {
        if !self.settings.allow_replica_migration || self.state != super::state::STATE_OK {
            return;
        }
        let Some(mine) = self.my_master() else { return };
        let masters: Vec<(Name, usize, bool)> = self
            .nodes
            .values()
            .filter(|n| n.is_master() && !n.failed())
            .map(|n| (n.name, self.ok_replicas(&n.name), n.numslots > 0 && n.has(super::node::MIGRATE_TO)))
            .collect();
        let max = masters.iter().map(|m| m.1).max().unwrap_or(0);
        let orphans = masters.iter().filter(|m| m.1 == 0 && m.2).count();
        let this = self.ok_replicas(&mine);
        // Orphaned since when, for every master (reset once it has a replica).
        for (name, ok, migrate_to) in &masters {
            if let Some(n) = self.nodes.get_mut(name) {
                if *ok == 0 && *migrate_to {
                    if n.orphaned_time == 0 {
                        n.orphaned_time = now;
                    }
                } else {
                    n.orphaned_time = 0;
                }
            }
        }
        if orphans == 0 || max < 2 || this != max || this <= self.settings.migration_barrier {
            return;
        }
        let target = masters.iter().find(|m| m.1 == 0 && m.2).map(|m| m.0);
        // The candidate: the smallest name among the replicas of the masters with the most.
        let mut candidate = self.myself;
        for (name, ok, _) in &masters {
            if *ok != max {
                continue;
            }
            for r in self.nodes.values().filter(|n| !n.is_master() && n.slaveof == Some(*name)) {
                if r.name < candidate {
                    candidate = r.name;
                }
            }
        }
        let Some(target) = target else { return };
        let since = self.nodes.get(&target).map_or(now, |n| n.orphaned_time);
        if candidate == self.myself && now - since > MIGRATION_DELAY_MS {
            crate::log::notice(&format!("Migrating to orphaned master {}", super::node::name_str(&target)));
            self.set_my_master(target);
        }
    }
}
