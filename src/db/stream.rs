//! The stream value type: entries in nodes as Redis 7.0 keeps them (a radix tree of
//! listpacks), here a `BTreeMap` of packed nodes keyed by their master ID.
//!
//! A node holds up to `stream-node-max-entries` entries (live and deleted) and is cut where
//! Redis's listpack would pass `stream-node-max-bytes`: each node keeps the size Redis's
//! listpack would have (`lp_body`, [`lp_int`], [`lp_str`]), so nodes break where Redis's do
//! and approximate trimming (`~`, which removes whole nodes only) removes exactly what
//! Redis removes. The bytes themselves are our own, smaller, encoding:
//!
//! ```text
//! node: varint(master field count) (varint(len) field)*  entry*
//! entry: flags u8 | varint(ms - master.ms) | varint(zigzag(seq - master.seq))
//!        | values (varint(len) value)*               when flags & SAMEFIELDS
//!        | varint(n) (varint(len) field varint(len) value){n}   otherwise
//! ```
//! As in Redis, a deleted entry stays in its node as a tombstone (flag DELETED) until the
//! node's last live entry goes, and the node with it.

use std::collections::BTreeMap;
use std::ops::Range;

use bytes::Bytes;

pub use super::stream_group::{Consumer, Group, Nack};

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

const DELETED: u8 = 1;
const SAMEFIELDS: u8 = 2;

/// Bytes of an integer element in a Redis listpack (encoding and back length).
pub fn lp_int(v: i64) -> u32 {
    match v {
        0..=127 => 2,
        -4096..=4095 => 3,
        -32768..=32767 => 4,
        -8388608..=8388607 => 5,
        -2147483648..=2147483647 => 6,
        _ => 10,
    }
}

/// Bytes of a string element in a Redis listpack: integers when the string is one.
pub fn lp_str(s: &[u8]) -> u32 {
    if s.len() <= 20 {
        if let Some(v) = crate::util::parse_i64(s) {
            return lp_int(v);
        }
    }
    let len = s.len() as u64;
    let head = if len < 64 {
        1
    } else if len < 4096 {
        2
    } else {
        5
    };
    let enc = head + len;
    (enc + super::rdb::lp_backlen_size(enc) as u64).min(u32::MAX as u64) as u32
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads a varint at `*pos` (our own bytes: always well formed).
fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = buf[*pos];
        *pos += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

fn put_bytes(out: &mut Vec<u8>, s: &[u8]) {
    put_varint(out, s.len() as u64);
    out.extend_from_slice(s);
}

fn get_bytes<'a>(buf: &'a [u8], pos: &mut usize) -> &'a [u8] {
    let n = get_varint(buf, pos) as usize;
    let s = &buf[*pos..*pos + n];
    *pos += n;
    s
}

/// Where the length-prefixed bytes at `*pos` lie.
fn bytes_range(buf: &[u8], pos: &mut usize) -> Range<usize> {
    let n = get_varint(buf, pos) as usize;
    let r = *pos..*pos + n;
    *pos += n;
    r
}

/// A node's bytes as replies take them: one copy of the node per read, handed out as slices
/// (a reference count each) rather than one allocation per field and value. A node past
/// `SHARE_MAX` (large `stream-node-max-bytes`) is copied piece by piece instead.
#[derive(Default)]
struct Share {
    copy: Option<Bytes>,
}

const SHARE_MAX: usize = 16 * 1024;

impl Share {
    fn piece(&mut self, buf: &[u8], r: Range<usize>) -> Bytes {
        if buf.len() > SHARE_MAX {
            return Bytes::copy_from_slice(&buf[r]);
        }
        self.copy.get_or_insert_with(|| Bytes::copy_from_slice(buf)).slice(r)
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// One node: a master entry's fields, then entries in ID order.
#[derive(Debug, Clone, PartialEq, Default)]
struct Node {
    buf: Vec<u8>,
    /// Where the first entry starts (after the master fields).
    entries_at: u32,
    live: u32,
    deleted: u32,
    /// The size of Redis's listpack for this node, without the header, the end byte and
    /// the live/deleted counters (whose sizes change with their values).
    lp_body: u32,
}

/// Where an entry lies in its node.
#[derive(Debug, Clone, Copy)]
struct At {
    start: usize,
    id: StreamId,
    flags: u8,
    /// Where its fields (or values) start, and where the entry ends.
    body: usize,
    end: usize,
}

impl Node {
    fn new(fields: &[&[u8]]) -> Self {
        let mut buf = Vec::new();
        put_varint(&mut buf, fields.len() as u64);
        let mut lp_body = lp_int(fields.len() as i64) + lp_int(0);
        for f in fields {
            put_bytes(&mut buf, f);
            lp_body += lp_str(f);
        }
        Node { entries_at: buf.len() as u32, buf, live: 0, deleted: 0, lp_body }
    }

    /// The listpack's total bytes in Redis (header 6, end 1).
    fn lp_bytes(&self) -> u64 {
        7 + lp_int(self.live as i64) as u64 + lp_int(self.deleted as i64) as u64 + self.lp_body as u64
    }

    /// Whether `pairs` (field, value, ...) has exactly the master fields, in order.
    fn has_master_fields(&self, pairs: &[Bytes]) -> bool {
        let mut pos = 0;
        let n = get_varint(&self.buf, &mut pos) as usize;
        n * 2 == pairs.len() && pairs.iter().step_by(2).all(|f| get_bytes(&self.buf, &mut pos) == &f[..])
    }

    fn master_count(&self) -> usize {
        let mut pos = 0;
        get_varint(&self.buf, &mut pos) as usize
    }

    /// Reads the entry at `start`; `n_master` is the master field count.
    fn entry_at(&self, master: StreamId, start: usize, n_master: usize) -> At {
        let buf = &self.buf;
        let mut pos = start;
        let flags = buf[pos];
        pos += 1;
        let ms = master.ms.wrapping_add(get_varint(buf, &mut pos));
        let seq = master.seq.wrapping_add(unzigzag(get_varint(buf, &mut pos)) as u64);
        let body = pos;
        if flags & SAMEFIELDS != 0 {
            for _ in 0..n_master {
                get_bytes(buf, &mut pos);
            }
        } else {
            let n = get_varint(buf, &mut pos);
            for _ in 0..n * 2 {
                get_bytes(buf, &mut pos);
            }
        }
        At { start, id: StreamId::new(ms, seq), flags, body, end: pos }
    }

    /// Every entry (tombstones too) in order.
    fn entries(&self, master: StreamId) -> Vec<At> {
        let n_master = self.master_count();
        let mut out = Vec::with_capacity((self.live + self.deleted) as usize);
        let mut pos = self.entries_at as usize;
        while pos < self.buf.len() {
            let at = self.entry_at(master, pos, n_master);
            pos = at.end;
            out.push(at);
        }
        out
    }

    /// Where each master field lies in the buffer.
    fn master_ranges(&self) -> Vec<Range<usize>> {
        let mut pos = 0;
        let n = get_varint(&self.buf, &mut pos);
        (0..n).map(|_| bytes_range(&self.buf, &mut pos)).collect()
    }

    /// The fields and values of the entry at `at`; `master` is the node's master fields,
    /// `share` hands out the bytes.
    fn fields_of(&self, at: &At, master: &[Range<usize>], share: &mut Share) -> Vec<(Bytes, Bytes)> {
        let buf = &self.buf;
        let mut pos = at.body;
        if at.flags & SAMEFIELDS != 0 {
            master
                .iter()
                .map(|f| {
                    let v = bytes_range(buf, &mut pos);
                    (share.piece(buf, f.clone()), share.piece(buf, v))
                })
                .collect()
        } else {
            let n = get_varint(buf, &mut pos);
            (0..n)
                .map(|_| {
                    let f = bytes_range(buf, &mut pos);
                    let v = bytes_range(buf, &mut pos);
                    (share.piece(buf, f), share.piece(buf, v))
                })
                .collect()
        }
    }

    /// The last entry's ID, tombstone or not (Redis's `lpGetEdgeStreamID`).
    fn last_id(&self, master: StreamId) -> StreamId {
        self.entries(master).last().map_or(master, |a| a.id)
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
        let numfields = pairs.len() / 2;
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
        let ms_delta = id.ms.wrapping_sub(master.ms);
        let seq_delta = id.seq.wrapping_sub(master.seq) as i64;
        let flags = if same { SAMEFIELDS } else { 0 };
        node.buf.push(flags);
        put_varint(&mut node.buf, ms_delta);
        put_varint(&mut node.buf, zigzag(seq_delta));
        let mut lp = lp_int(flags as i64) + lp_int(ms_delta as i64) + lp_int(seq_delta);
        if same {
            for v in pairs.iter().skip(1).step_by(2) {
                put_bytes(&mut node.buf, v);
                lp += lp_str(v);
            }
        } else {
            put_varint(&mut node.buf, numfields as u64);
            lp += lp_int(numfields as i64);
            for p in pairs {
                put_bytes(&mut node.buf, p);
                lp += lp_str(p);
            }
        }
        let lp_count = if same { numfields + 3 } else { numfields * 2 + 4 };
        lp += lp_int(lp_count as i64);
        node.lp_body = node.lp_body.saturating_add(lp);
        node.live += 1;
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
            node.buf[at.start] |= DELETED;
            node.live -= 1;
            node.deleted += 1;
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
                    node.buf[at.start] |= DELETED;
                    from_node += 1;
                    self.length -= 1;
                }
            }
            node.live -= from_node;
            node.deleted += from_node;
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
