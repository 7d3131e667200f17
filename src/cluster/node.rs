//! One node of the cluster as this node knows it (Redis's `clusterNode`).

use super::bus::{flag, NAME_LEN, SLOT_BYTES};
use super::nodes_conf::NodeLine;
use super::slot::SLOTS;

/// A node's 40-character name.
pub type Name = [u8; NAME_LEN];

/// A bus connection, numbered by the executor.
pub type LinkId = u64;

/// The name as text.
pub fn name_str(name: &Name) -> &str {
    std::str::from_utf8(name).unwrap_or("")
}

/// A name from text, if it is 40 bytes.
pub fn name_of(text: &[u8]) -> Option<Name> {
    text.try_into().ok()
}

/// A fresh random name (40 hex digits).
pub fn random_name() -> Name {
    let mut out = [b'0'; NAME_LEN];
    out.copy_from_slice(crate::util::random_hex(NAME_LEN).as_bytes());
    out
}

#[derive(Debug, Clone)]
pub struct Node {
    pub name: Name,
    /// `bus::flag` bits, plus `nodes_conf::NOFAILOVER`.
    pub flags: u16,
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub pport: u16,
    pub hostname: String,
    pub config_epoch: u64,
    pub slaveof: Option<Name>,
    /// When this node was created here (ms): a handshake that does not end in time is dropped.
    pub ctime: i64,
    /// When the ping now unanswered was sent (0: none).
    pub ping_sent: i64,
    pub pong_received: i64,
    pub data_received: i64,
    pub fail_time: i64,
    pub repl_offset: u64,
    /// Our connection to it (we send PING/MEET there) and its connection to us.
    pub link: Option<LinkId>,
    pub inbound: Option<LinkId>,
    /// A connection is being made.
    pub connecting: bool,
    /// Masters that reported it as failing, and when.
    pub fail_reports: Vec<(Name, i64)>,
    pub slots: Box<[u8; SLOT_BYTES]>,
    pub numslots: usize,
    /// Since when this master has no working replica (replica migration; 0: it has one).
    pub orphaned_time: i64,
}

/// `CLUSTER_NODE_MIGRATE_TO`: a master that had replicas, which an orphaned one may get back
/// by replica migration (never shown in CLUSTER NODES).
pub const MIGRATE_TO: u16 = 256;

impl Node {
    pub fn new(name: Name, flags: u16, now: i64) -> Node {
        Node {
            name,
            flags,
            ip: String::new(),
            port: 0,
            cport: 0,
            pport: 0,
            hostname: String::new(),
            config_epoch: 0,
            slaveof: None,
            ctime: now,
            ping_sent: 0,
            pong_received: 0,
            data_received: 0,
            fail_time: 0,
            repl_offset: 0,
            link: None,
            inbound: None,
            connecting: false,
            fail_reports: Vec::new(),
            slots: Box::new([0; SLOT_BYTES]),
            numslots: 0,
            orphaned_time: 0,
        }
    }

    pub fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }

    pub fn is_master(&self) -> bool {
        self.has(flag::MASTER)
    }

    pub fn in_handshake(&self) -> bool {
        self.has(flag::HANDSHAKE)
    }

    pub fn failed(&self) -> bool {
        self.has(flag::FAIL)
    }

    pub fn owns(&self, slot: u16) -> bool {
        self.slots[slot as usize / 8] & (1 << (slot % 8)) != 0
    }

    /// Sets or clears `slot` in the node's bitmap; true if it changed.
    pub fn mark(&mut self, slot: u16, owned: bool) -> bool {
        let (byte, bit) = (slot as usize / 8, 1u8 << (slot % 8));
        if (self.slots[byte] & bit != 0) == owned {
            return false;
        }
        self.slots[byte] ^= bit;
        if owned {
            self.numslots += 1;
        } else {
            self.numslots -= 1;
        }
        true
    }

    /// The node's slots as inclusive ranges.
    pub fn ranges(&self) -> Vec<(u16, u16)> {
        // Whole bytes at a time: a node's slots are mostly long runs.
        let mut out: Vec<(u16, u16)> = Vec::new();
        let mut open: Option<u16> = None;
        for (i, &byte) in self.slots.iter().enumerate() {
            let base = (i * 8) as u16;
            if (byte == 0xff && open.is_some()) || (byte == 0 && open.is_none()) {
                continue;
            }
            for bit in 0..8u16 {
                let on = byte & (1 << bit) != 0;
                match (on, open) {
                    (true, None) => open = Some(base + bit),
                    (false, Some(start)) => {
                        out.push((start, base + bit - 1));
                        open = None;
                    }
                    _ => {}
                }
            }
        }
        if let Some(start) = open {
            out.push((start, SLOTS as u16 - 1));
        }
        out
    }

    /// The node's line (CLUSTER NODES, nodes.conf), `primary` being what its `slaveof` names.
    pub fn line(&self, connected: bool) -> NodeLine {
        NodeLine {
            id: name_str(&self.name).to_string(),
            ip: if self.ip.contains(':') { format!("[{}]", self.ip) } else { self.ip.clone() },
            port: self.port,
            cport: self.cport,
            hostname: (!self.hostname.is_empty()).then(|| self.hostname.clone()),
            flags: self.flags & !flag::MEET,
            primary: self.slaveof.map(|m| name_str(&m).to_string()),
            ping_sent: self.ping_sent.max(0) as u64,
            pong_received: self.pong_received.max(0) as u64,
            config_epoch: self.config_epoch,
            connected,
            slots: self.ranges(),
            migrating: Vec::new(),
            importing: Vec::new(),
        }
    }
}

/// Sorted slots as inclusive ranges.
pub fn slot_ranges(slots: impl Iterator<Item = u16>) -> Vec<(u16, u16)> {
    let mut out: Vec<(u16, u16)> = Vec::new();
    for s in slots {
        match out.last_mut() {
            Some((_, end)) if *end + 1 == s => *end = s,
            _ => out.push((s, s)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_the_bitmap() {
        let mut n = Node::new([b'a'; NAME_LEN], 0, 0);
        let owned: Vec<u16> = (0..100).chain(101..200).chain([7000]).chain(16380..16384).collect();
        for &s in &owned {
            n.mark(s, true);
        }
        assert_eq!(n.ranges(), vec![(0, 99), (101, 199), (7000, 7000), (16380, 16383)]);
        assert_eq!(n.ranges(), slot_ranges(owned.iter().copied()));
        assert_eq!(n.numslots, owned.len());
        let mut all = Node::new([b'b'; NAME_LEN], 0, 0);
        for s in 0..SLOTS as u16 {
            all.mark(s, true);
        }
        assert_eq!(all.ranges(), vec![(0, 16383)]);
        assert!(Node::new([b'c'; NAME_LEN], 0, 0).ranges().is_empty());
        assert_eq!(random_name().len(), NAME_LEN);
        assert_ne!(random_name(), random_name());
    }
}
