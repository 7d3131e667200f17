//! The stream value type: entries in nodes as Redis 7.0 keeps them (a radix tree of
//! listpacks), here a `BTreeMap` of packed nodes keyed by their master ID.
//!
//! A node holds up to `stream-node-max-entries` entries (live and deleted) and is cut where
//! Redis's listpack would pass `stream-node-max-bytes`: each node keeps the size Redis's
//! listpack would have (`lp_body`, [`lp_int`], [`lp_str`]), so nodes break where Redis's do
//! and approximate trimming (`~`, which removes whole nodes only) removes exactly what
//! Redis removes. The bytes themselves are our own, smaller, encoding (`stream_node.rs`).
//! As in Redis, a deleted entry stays in its node as a tombstone (flag DELETED) until the
//! node's last live entry goes, and the node with it.

use std::collections::BTreeMap;

use bytes::Bytes;

pub use super::stream_group::{Consumer, Group, Nack};
pub use super::stream_node::{lp_int, lp_str};
use super::stream_node::{Node, Share, DELETED};

/// A stream entry ID: milliseconds and sequence, ordered as a 128-bit number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId { ms: u64::MAX, seq: u64::MAX };

    pub fn new(ms: u64, seq: u64) -> Self {
        StreamId { ms, seq }
    }

    pub fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next ID (Redis's `streamIncrID`); `None` past the maximum.
    pub fn incr(self) -> Option<StreamId> {
        if self.seq == u64::MAX {
            if self.ms == u64::MAX {
                return None;
            }
            return Some(StreamId::new(self.ms + 1, 0));
        }
        Some(StreamId::new(self.ms, self.seq + 1))
    }

    /// The previous ID (Redis's `streamDecrID`); `None` before 0-0.
    pub fn decr(self) -> Option<StreamId> {
        if self.seq == 0 {
            if self.ms == 0 {
                return None;
            }
            return Some(StreamId::new(self.ms - 1, u64::MAX));
        }
        Some(StreamId::new(self.ms, self.seq - 1))
    }

    /// `ms-seq`, as replies show it.
    pub fn to_bytes(self) -> Bytes {
        let mut buf = [0u8; 41];
        let mut at = buf.len();
        for (i, mut n) in [self.seq, self.ms].into_iter().enumerate() {
            loop {
                at -= 1;
                buf[at] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            if i == 0 {
                at -= 1;
                buf[at] = b'-';
            }
        }
        Bytes::copy_from_slice(&buf[at..])
    }

    /// The 16-byte big-endian form (Redis's rax keys and RDB).
    pub fn encode(self) -> [u8; 16] {
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&self.ms.to_be_bytes());
        out[8..].copy_from_slice(&self.seq.to_be_bytes());
        out
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Parses an ID as clients give it (Redis's `streamGenericParseIDOrReply`): `-` and `+`
/// (unless `strict`), `ms` alone (the sequence is `missing_seq`), `ms-seq`, and with
/// `allow_auto_seq` `ms-*` (returned with `seq_given` false).
pub fn parse_id(arg: &[u8], missing_seq: u64, strict: bool, allow_auto_seq: bool) -> Option<(StreamId, bool)> {
    if arg.len() > 127 {
        return None;
    }
    // Redis reads the argument as a C string: it ends at a NUL.
    let arg = &arg[..arg.iter().position(|&b| b == 0).unwrap_or(arg.len())];
    match arg {
        b"-" if !strict => return Some((StreamId::MIN, true)),
        b"+" if !strict => return Some((StreamId::MAX, true)),
        b"-" | b"+" => return None,
        _ => {}
    }
    let (ms_part, seq_part) = match arg.iter().position(|&b| b == b'-') {
        Some(i) => (&arg[..i], Some(&arg[i + 1..])),
        None => (arg, None),
    };
    let ms = crate::util::parse_u64_strict(ms_part)?;
    match seq_part {
        None => Some((StreamId::new(ms, missing_seq), true)),
        Some(b"*") if allow_auto_seq => Some((StreamId::new(ms, 0), false)),
        Some(s) => Some((StreamId::new(ms, crate::util::parse_u64_strict(s)?), true)),
    }
}

/// A stream: its entries, its counters and its consumer groups.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamValue {
    nodes: BTreeMap<StreamId, Node>,
    length: u64,
    pub last_id: StreamId,
    /// The first live entry's ID (0-0 when empty), as Redis records it.
    pub first_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    /// By name, in byte order (Redis's rax of groups).
    pub groups: BTreeMap<Bytes, Group>,
    /// Bytes held by the nodes' buffers, for MEMORY USAGE and INFO.
    node_bytes: usize,
}

/// The node-size limits (`stream-node-max-bytes`, `stream-node-max-entries`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_bytes: u64,
    pub max_entries: u64,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits { max_bytes: 4096, max_entries: 100 }
    }
}

/// The largest a node's listpack may grow in Redis (`STREAM_LISTPACK_MAX_SIZE`).
pub const LISTPACK_MAX: u64 = 1 << 30;

/// How XADD/XTRIM trim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trim {
    MaxLen(u64),
    MinId(StreamId),
}

/// One entry as replies show it.
pub type Entry = (StreamId, Vec<(Bytes, Bytes)>);

impl StreamValue {
    pub fn new() -> Self {
        StreamValue::default()
    }

    pub fn len(&self) -> u64 {
        self.length
    }

    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// The number of nodes (XINFO's `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Approximate heap bytes held.
    pub fn mem_usage(&self) -> usize {
        let groups: usize = self.groups.values().map(|g| g.mem_usage()).sum();
        self.node_bytes + self.nodes.len() * 64 + groups + 64
    }

    /// Appends an entry with `id`, which the caller checked is above `last_id`; `pairs` is
    /// field, value, field, value...
    pub fn append(&mut self, id: StreamId, pairs: &[Bytes], limits: NodeLimits) {
        let total: u64 = pairs.iter().map(|p| p.len() as u64).sum();
        let max_bytes = if limits.max_bytes == 0 || limits.max_bytes > LISTPACK_MAX { LISTPACK_MAX } else { limits.max_bytes };
        let full = match self.nodes.last_key_value() {
            None => true,
            Some((_, node)) => {
                node.lp_bytes() + total >= max_bytes || (limits.max_entries != 0 && (node.live + node.deleted) as u64 >= limits.max_entries)
            }
        };
        if full {
            // The closed node gives back its growth room (Redis's lpShrinkToFit).
            if let Some(mut last) = self.nodes.last_entry() {
                let node = last.get_mut();
                let before = node.buf.capacity();
                node.buf.shrink_to_fit();
                self.node_bytes -= before - node.buf.capacity();
            }
            let fields: Vec<&[u8]> = pairs.iter().step_by(2).map(|f| &f[..]).collect();
            let node = Node::new(&fields);
            self.node_bytes += node.buf.capacity();
            self.nodes.insert(id, node);
        }
        let Some(mut last) = self.nodes.last_entry() else { return };
        let master = *last.key();
        let node = last.get_mut();
        let same = node.has_master_fields(pairs);
        let before = node.buf.capacity();
        if node.live + node.deleted == 1 {
            // A node taking its second entry gets room for a node's worth of small ones
            // (Redis preallocates every new listpack; a one-entry stream stays small here),
            // and gives back what it did not use when it closes.
            node.buf.reserve(1024);
        }
        node.push(master, id, pairs, same);
        self.node_bytes = self.node_bytes + node.buf.capacity() - before;
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// The node that may hold `id`: the last whose master ID is at most `id`.
    fn node_key_for(&self, id: StreamId) -> Option<StreamId> {
        self.nodes.range(..=id).next_back().map(|(k, _)| *k)
    }

    /// Live entries from `start` to `end` (inclusive), forward or reverse, at most `count`
    /// (0: all).
    pub fn range(&self, start: StreamId, end: StreamId, rev: bool, count: usize) -> Vec<Entry> {
        let mut out = Vec::new();
        if start > end {
            return out;
        }
        self.visit(start, end, rev, |id, fields| {
            out.push((id, fields));
            count == 0 || out.len() < count
        });
        out
    }

    /// The IDs of live entries from `start` to `end`, at most `count` (0: all).
    pub fn range_ids(&self, start: StreamId, end: StreamId, rev: bool, count: usize) -> Vec<StreamId> {
        self.range(start, end, rev, count).into_iter().map(|(id, _)| id).collect()
    }

    /// Calls `f` on each live entry in range until it returns false. Forward, a node is
    /// decoded only as far as needed (XRANGE ... COUNT 10 reads 10 entries, not the node).
    fn visit(&self, start: StreamId, end: StreamId, rev: bool, mut f: impl FnMut(StreamId, Vec<(Bytes, Bytes)>) -> bool) {
        let from = self.node_key_for(start).unwrap_or(start);
        if rev {
            for (&master, node) in self.nodes.range(from..=end).rev() {
                let fields = node.master_ranges();
                let mut share = Share::default();
                for at in node.entries(master).iter().rev() {
                    if at.flags & DELETED != 0 || at.id < start || at.id > end {
                        continue;
                    }
                    if !f(at.id, node.fields_of(at, &fields, &mut share)) {
                        return;
                    }
                }
            }
            return;
        }
        for (&master, node) in self.nodes.range(from..=end) {
            let fields = node.master_ranges();
            let mut share = Share::default();
            let mut pos = node.entries_at as usize;
            while pos < node.buf.len() {
                let at = node.entry_at(master, pos, fields.len());
                pos = at.end;
                if at.id > end {
                    return;
                }
                if at.flags & DELETED != 0 || at.id < start {
                    continue;
                }
                if !f(at.id, node.fields_of(&at, &fields, &mut share)) {
                    return;
                }
            }
        }
    }

    /// The entry with `id`, if live.
    pub fn get(&self, id: StreamId) -> Option<Vec<(Bytes, Bytes)>> {
        self.range(id, id, false, 1).pop().map(|(_, f)| f)
    }

    pub fn exists(&self, id: StreamId) -> bool {
        let Some(key) = self.node_key_for(id) else { return false };
        let Some(node) = self.nodes.get(&key) else { return false };
        node.entries(key).iter().any(|a| a.id == id && a.flags & DELETED == 0)
    }

    /// The first (or last) live entry's ID.
    pub fn edge_id(&self, first: bool) -> Option<StreamId> {
        self.range(StreamId::MIN, StreamId::MAX, !first, 1).pop().map(|(id, _)| id)
    }

    /// The first entry's ID, tombstones included (`streamGetEdgeID(s,1,0)`); the maximum ID
    /// when there is none, as Redis answers.
    pub fn first_id_with_tombstones(&self) -> StreamId {
        match self.nodes.first_key_value() {
            Some((&master, node)) => node.entries(master).first().map_or(StreamId::MAX, |a| a.id),
            None => StreamId::MAX,
        }
    }

    /// Marks the entry deleted (Redis's `streamIteratorRemoveEntry`); the node goes with
    /// its last live entry. The caller updates `first_id` and `max_deleted_id`.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some(key) = self.node_key_for(id) else { return false };
        let Some(node) = self.nodes.get_mut(&key) else { return false };
        let Some(at) = node.entries(key).into_iter().find(|a| a.id == id && a.flags & DELETED == 0) else {
            return false;
        };
        self.length -= 1;
        if node.live == 1 {
            self.node_bytes -= node.buf.capacity();
            self.nodes.remove(&key);
        } else {
            node.mark_deleted(&at);
        }
        true
    }

    /// Redis's `streamTrim`: removes entries from the head; `approx` removes whole nodes
    /// only; `limit` (0: none) bounds the entries removed.
    pub fn trim(&mut self, how: Trim, approx: bool, limit: u64) -> u64 {
        let mut deleted = 0u64;
        while let Some((&master, node)) = self.nodes.first_key_value() {
            if let Trim::MaxLen(max) = how {
                if self.length <= max {
                    break;
                }
            }
            let entries = node.live as u64;
            if limit != 0 && deleted + entries > limit {
                break;
            }
            let remove = match how {
                Trim::MaxLen(max) => self.length - entries >= max,
                Trim::MinId(min) => node.last_id(master) < min,
            };
            if remove {
                self.node_bytes -= node.buf.capacity();
                self.nodes.remove(&master);
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if approx {
                break;
            }
            // Mark entries of this node deleted until the target is met.
            let Some(node) = self.nodes.get_mut(&master) else { break };
            let mut from_node = 0u32;
            for at in node.entries(master) {
                let stop = match how {
                    Trim::MaxLen(max) => self.length <= max,
                    Trim::MinId(min) => at.id >= min,
                };
                if stop {
                    break;
                }
                if at.flags & DELETED == 0 {
                    node.mark_deleted(&at);
                    from_node += 1;
                    self.length -= 1;
                }
            }
            deleted += from_node as u64;
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.edge_id(true).unwrap_or(StreamId::MIN);
        }
        deleted
    }

    /// Every live entry, in order (DEBUG DIGEST, snapshots, DUMP).
    pub fn all(&self) -> Vec<Entry> {
        self.range(StreamId::MIN, StreamId::MAX, false, 0)
    }

    /// Whether the range from `start` (or the beginning) to the end may hold a tombstone
    /// (Redis's `streamRangeHasTombstones` with no end).
    pub fn range_has_tombstones(&self, start: StreamId) -> bool {
        if self.length == 0 || self.max_deleted_id.is_zero() {
            return false;
        }
        if self.first_id > self.max_deleted_id {
            return false;
        }
        start <= self.max_deleted_id
    }

    /// Redis's `streamEstimateDistanceFromFirstEverEntry`: the logical read counter of
    /// `id`, or `None` when it cannot be known.
    pub fn estimate_distance(&self, id: StreamId) -> Option<u64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if self.length == 0 && id <= self.last_id {
            return Some(self.entries_added);
        }
        if id == self.last_id {
            return Some(self.entries_added);
        }
        if id > self.last_id {
            return None;
        }
        if self.max_deleted_id.is_zero() || self.max_deleted_id < self.first_id {
            if id < self.first_id {
                return Some(self.entries_added - self.length);
            }
            if id == self.first_id {
                return Some(self.entries_added - self.length + 1);
            }
        }
        None
    }

    /// A group's lag (`streamReplyWithCGLag`): `None` when it cannot be known.
    pub fn lag(&self, group: &Group) -> Option<i64> {
        if self.entries_added == 0 {
            return Some(0);
        }
        if group.entries_read >= 0 && !self.range_has_tombstones(group.last_id) {
            return Some(self.entries_added as i64 - group.entries_read);
        }
        self.estimate_distance(group.last_id).map(|read| self.entries_added as i64 - read as i64)
    }

    /// Marks entries of `group` read up to `id` (XREADGROUP delivering `id`).
    pub fn advance_group(&mut self, name: &[u8], id: StreamId) {
        let has_tombstones = self.range_has_tombstones(id);
        let estimate = self.estimate_distance(id);
        let entries_added = self.entries_added;
        let Some(group) = self.groups.get_mut(name) else { return };
        if id <= group.last_id {
            return;
        }
        if group.entries_read >= 0 && !has_tombstones {
            group.entries_read += 1;
        } else if entries_added != 0 {
            group.entries_read = estimate.map_or(-1, |n| n as i64);
        }
        group.last_id = id;
    }

    /// The stream of a DUMP payload (`rdb_stream`, which checked its structure), its entries
    /// cut into nodes under `limits`; `None` if a pending entry's consumer is unknown.
    pub fn from_rdb(r: super::rdb_stream::RdbStream, limits: NodeLimits) -> Option<StreamValue> {
        let id = |(ms, seq): (u64, u64)| StreamId::new(ms, seq);
        let mut s = StreamValue::new();
        let mut pairs = Vec::new();
        for (eid, fields) in r.entries {
            pairs.clear();
            for (f, v) in fields {
                pairs.push(f);
                pairs.push(v);
            }
            s.append(id(eid), &pairs, limits);
        }
        s.last_id = id(r.last_id);
        s.first_id = id(r.first_id);
        s.max_deleted_id = id(r.max_deleted_id);
        s.entries_added = r.entries_added;
        for g in r.groups {
            let mut group = Group::new(id(g.last_id), g.entries_read);
            let mut owner = BTreeMap::new();
            for c in g.consumers {
                let pel = c.pending.iter().map(|p| id(*p)).collect();
                for p in &c.pending {
                    owner.insert(id(*p), c.name.clone());
                }
                group.consumers.insert(c.name, Consumer { seen_time: c.seen_time, pel });
            }
            for (pid, delivery_time, delivery_count) in g.pel {
                let consumer = owner.get(&id(pid))?.clone();
                group.pel.insert(id(pid), Nack { delivery_time, delivery_count, consumer });
            }
            s.groups.insert(g.name, group);
        }
        Some(s)
    }

    /// The DUMP form (`rdb_stream::encode_stream` writes it as Redis 7.0 does).
    pub fn to_rdb(&self) -> super::rdb_stream::RdbStream {
        use super::rdb_stream::{RdbConsumer, RdbGroup, RdbStream};
        let pair = |i: StreamId| (i.ms, i.seq);
        let entries: Vec<_> = self.all().into_iter().map(|(i, f)| (pair(i), f)).collect();
        RdbStream {
            length: entries.len() as u64,
            entries,
            last_id: pair(self.last_id),
            first_id: pair(self.first_id),
            max_deleted_id: pair(self.max_deleted_id),
            entries_added: self.entries_added,
            groups: self
                .groups
                .iter()
                .map(|(name, g)| RdbGroup {
                    name: name.clone(),
                    last_id: pair(g.last_id),
                    entries_read: g.entries_read,
                    pel: g.pel.iter().map(|(i, n)| (pair(*i), n.delivery_time, n.delivery_count)).collect(),
                    consumers: g
                        .consumers
                        .iter()
                        .map(|(cname, c)| RdbConsumer {
                            name: cname.clone(),
                            seen_time: c.seen_time,
                            pending: c.pel.iter().map(|i| pair(*i)).collect(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// The node layout, for tests: (master ID, live, deleted) per node.
    pub fn layout(&self) -> Vec<(StreamId, u32, u32)> {
        self.nodes.iter().map(|(k, n)| (*k, n.live, n.deleted)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn ids_parse_as_redis_reads_them() {
        assert_eq!(parse_id(b"5", 0, true, false), Some((StreamId::new(5, 0), true)));
        assert_eq!(parse_id(b"5", u64::MAX, true, false), Some((StreamId::new(5, u64::MAX), true)));
        assert_eq!(parse_id(b"5-3", 0, true, false), Some((StreamId::new(5, 3), true)));
        assert_eq!(parse_id(b"5-*", 0, true, true), Some((StreamId::new(5, 0), false)));
        assert_eq!(parse_id(b"5-*", 0, true, false), None);
        assert_eq!(parse_id(b"-", 0, false, false), Some((StreamId::MIN, true)));
        assert_eq!(parse_id(b"+", 0, false, false), Some((StreamId::MAX, true)));
        assert_eq!(parse_id(b"+", 0, true, false), None);
        assert_eq!(parse_id(b"-1", 0, false, false), None);
        assert_eq!(parse_id(b"1-", 0, false, false), None);
        assert_eq!(parse_id(b"18446744073709551616", 0, false, false), None);
        assert_eq!(parse_id(b"18446744073709551615-18446744073709551615", 0, false, false), Some((StreamId::MAX, true)));
    }

    #[test]
    fn entries_come_back_with_their_fields_across_nodes_and_tombstones() {
        let mut s = StreamValue::new();
        let limits = NodeLimits { max_bytes: 4096, max_entries: 3 };
        for i in 1..=10u64 {
            let pairs = if i % 4 == 0 { vec![b("other"), b(&i.to_string())] } else { vec![b("f"), b(&i.to_string()), b("g"), b("x")] };
            s.append(StreamId::new(i, if i == 5 { 0 } else { 7 }), &pairs, limits);
        }
        assert_eq!(s.len(), 10);
        assert_eq!(s.node_count(), 4);
        let all = s.all();
        assert_eq!(all.len(), 10);
        assert_eq!(all[3], (StreamId::new(4, 7), vec![(b("other"), b("4"))]));
        assert_eq!(all[4].0, StreamId::new(5, 0));
        assert!(s.delete(StreamId::new(2, 7)));
        assert!(!s.delete(StreamId::new(2, 7)));
        assert_eq!(s.range(StreamId::new(2, 0), StreamId::new(3, u64::MAX), false, 0).len(), 1);
        let rev = s.range(StreamId::MIN, StreamId::MAX, true, 3);
        assert_eq!(rev.iter().map(|e| e.0.ms).collect::<Vec<_>>(), vec![10, 9, 8]);
        assert_eq!(s.trim(Trim::MaxLen(5), true, 0), 2);
        assert_eq!(s.len(), 7);
        assert_eq!(s.trim(Trim::MaxLen(5), false, 0), 2);
        assert_eq!(s.first_id, StreamId::new(6, 7));
        assert_eq!(s.trim(Trim::MinId(StreamId::new(8, 0)), false, 0), 2);
        assert_eq!(s.edge_id(true), Some(StreamId::new(8, 7)));
    }

    #[test]
    fn listpack_sizes_follow_redis_encodings() {
        assert_eq!(lp_str(b"127"), 2);
        assert_eq!(lp_str(b"128"), 3);
        assert_eq!(lp_str(b"007"), 5);
        assert_eq!(lp_str(b"abc"), 5);
        assert_eq!(lp_str(&[b'a'; 64]), 67);
        assert_eq!(lp_str(&[b'a'; 200]), 204);
    }
}
