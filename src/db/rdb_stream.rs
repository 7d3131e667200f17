//! Streams in Redis's RDB object encoding (DUMP/RESTORE payloads), independent of the
//! server's stream type: `RdbStream` is what a payload says, entries without tombstones.
//!
//! Read: types 15 (`RDB_TYPE_STREAM_LISTPACKS`, before 7.0) and 19 (`..._LISTPACKS_2`, 7.0)
//! as Redis 7.0's `rdbLoadObject` reads them, with the checks of its deep sanitizer
//! (`sanitize-dump-payload yes`) and a few more that keep the result consistent: node keys
//! strictly ascending, entry IDs strictly ascending and not before their node's key, the
//! live and deleted counts of every node as its entries' flags say, `length` equal to the
//! live entries, live entries not after `last_id`, `entries_added` not below `length`, no
//! pending entry owned by two consumers, no unknown entry flag, no `entries_read` below -1,
//! lengths in their plain forms. Any failure is `RdbError::BadFormat`.
//!
//! Written: type 19 as Redis 7.0 writes a stream built by XADD of the live entries (nodes of
//! at most 100 entries, cut before 4096 listpack bytes; groups, consumers and pending lists
//! in rax order). Node listpacks are written uncompressed (Redis compresses them with LZF
//! when that saves space; both forms load the same).

use std::collections::{HashMap, HashSet};

use bytes::Bytes;

use super::rdb::{put_len, put_string, seal, Len, LpEntry, LpIter, RdbError, Reader, BAD};

/// A stream entry ID: (milliseconds, sequence).
pub type StreamId = (u64, u64);

/// A stream as a DUMP payload describes it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RdbStream {
    /// Live entries in ID order, each with its field/value pairs.
    pub entries: Vec<(StreamId, Vec<(Bytes, Bytes)>)>,
    /// The stored length (equal to `entries.len()` in a payload that decodes).
    pub length: u64,
    pub last_id: StreamId,
    /// Redis 7.0's "recorded first entry id" (0-0 when empty). Derived for type 15 as Redis
    /// derives it: the first live entry, or u64::MAX-u64::MAX when there is none.
    pub first_id: StreamId,
    pub max_deleted_id: StreamId,
    pub entries_added: u64,
    /// Consumer groups, in payload order (Redis's: by name).
    pub groups: Vec<RdbGroup>,
}

impl RdbStream {
    /// Sorts groups and consumers by name and pending lists by ID: the order Redis keeps
    /// them in (its rax), and the one `encode_stream` writes.
    pub fn sort_as_redis(&mut self) {
        self.groups.sort_by(|a, b| a.name.cmp(&b.name));
        for g in &mut self.groups {
            g.pel.sort_by_key(|p| p.0);
            g.consumers.sort_by(|a, b| a.name.cmp(&b.name));
            for c in &mut g.consumers {
                c.pending.sort_unstable();
            }
        }
    }
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RdbGroup {
    pub name: Bytes,
    pub last_id: StreamId,
    /// The logical read counter; -1 is `SCG_INVALID_ENTRIES_READ` (unknown).
    pub entries_read: i64,
    /// The pending entries list: (ID, delivery time in ms, delivery count), in payload order
    /// (Redis writes ID order), as are consumers and their pending IDs.
    pub pel: Vec<(StreamId, i64, u64)>,
    pub consumers: Vec<RdbConsumer>,
}

/// A consumer of a group: its pending IDs are entries of the group's PEL.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RdbConsumer {
    pub name: Bytes,
    pub seen_time: i64,
    pub pending: Vec<StreamId>,
}

const T_STREAM_LISTPACKS_2: u8 = 19;
/// Entry flags in a node listpack (t_stream.c).
const FLAG_DELETED: i64 = 1;
const FLAG_SAMEFIELDS: i64 = 2;
/// Redis's defaults of stream-node-max-entries and stream-node-max-bytes.
const NODE_MAX_ENTRIES: usize = 100;
const NODE_MAX_BYTES: usize = 4096;

/// An ID as a rax key and a PEL entry store it: 128 bits, big endian.
fn id_bytes(id: StreamId) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&id.0.to_be_bytes());
    out[8..].copy_from_slice(&id.1.to_be_bytes());
    out
}

fn id_from(raw: &[u8]) -> Result<StreamId, RdbError> {
    let ms: [u8; 8] = raw.get(..8).and_then(|b| b.try_into().ok()).ok_or(BAD)?;
    let seq: [u8; 8] = raw.get(8..16).and_then(|b| b.try_into().ok()).ok_or(BAD)?;
    Ok((u64::from_be_bytes(ms), u64::from_be_bytes(seq)))
}

/// An RDB length (an integer "encoded string" header is not one).
fn len(r: &mut Reader) -> Result<u64, RdbError> {
    match r.len_or_enc()? {
        Len::Plain(n) => Ok(n),
        Len::Encoded(_) => Err(BAD),
    }
}

fn read_id(r: &mut Reader) -> Result<StreamId, RdbError> {
    Ok((len(r)?, len(r)?))
}

/// rdbLoadMillisecondTime: 8 bytes, little endian.
fn ms_time(r: &mut Reader) -> Result<i64, RdbError> {
    Ok(i64::from_le_bytes(r.take(8)?.try_into().map_err(|_| BAD)?))
}

/// The body of a stream object (after its type byte); `v2` is type 19.
pub(super) fn read(r: &mut Reader, v2: bool) -> Result<RdbStream, RdbError> {
    let mut s = RdbStream::default();
    let nodes = r.count()?;
    let mut prev_key: Option<StreamId> = None;
    let mut prev_entry: Option<StreamId> = None;
    for _ in 0..nodes {
        let master = {
            let key = r.string()?;
            if key.len() != 16 {
                return Err(BAD);
            }
            id_from(&key)?
        };
        // Redis keeps nodes in a rax by key, and writes them in that order; a repeated
        // key is its "Listpack re-added with existing key".
        if prev_key.is_some_and(|p| p >= master) {
            return Err(BAD);
        }
        prev_key = Some(master);
        read_node(&r.string()?, master, &mut prev_entry, &mut s.entries)?;
    }
    s.length = len(r)?;
    s.last_id = read_id(r)?;
    if v2 {
        s.first_id = read_id(r)?;
        s.max_deleted_id = read_id(r)?;
        s.entries_added = len(r)?;
    } else {
        // What 7.0 derives for a stream written before it (rdb.c): no tombstone known, as
        // many added as there are, and the first live entry (streamGetEdgeID's "max" ID
        // when there is none).
        s.max_deleted_id = (0, 0);
        s.entries_added = s.length;
        s.first_id = s.entries.first().map_or((u64::MAX, u64::MAX), |e| e.0);
    }
    if s.length != s.entries.len() as u64 || s.entries_added < s.length || s.entries.last().is_some_and(|e| e.0 > s.last_id) {
        return Err(BAD);
    }
    let groups = r.count()?;
    let mut names = HashSet::new();
    for _ in 0..groups {
        let g = read_group(r, &s, v2)?;
        // streamCreateCG refuses a name twice.
        if !names.insert(g.name.clone()) {
            return Err(BAD);
        }
        s.groups.push(g);
    }
    Ok(s)
}

fn read_group(r: &mut Reader, s: &RdbStream, v2: bool) -> Result<RdbGroup, RdbError> {
    let name = r.bytes()?;
    let last_id = read_id(r)?;
    let entries_read = if v2 {
        // Written as a length: -1 becomes u64::MAX; Redis never writes other negatives.
        match len(r)? {
            u64::MAX => -1,
            n => i64::try_from(n).map_err(|_| BAD)?,
        }
    } else {
        estimate_entries_read(s, last_id)
    };
    let mut pel = Vec::new();
    // Each pending ID: whether a consumer owns it yet.
    let mut owned: HashMap<StreamId, bool> = HashMap::new();
    for _ in 0..r.count()? {
        let id = id_from(r.take(16)?)?;
        let delivery_time = ms_time(r)?;
        let delivery_count = len(r)?;
        if owned.insert(id, false).is_some() {
            return Err(BAD); // "Duplicated global PEL entry"
        }
        pel.push((id, delivery_time, delivery_count));
    }
    let mut consumers = Vec::new();
    let mut names = HashSet::new();
    for _ in 0..r.count()? {
        let name = r.bytes()?;
        if !names.insert(name.clone()) {
            return Err(BAD); // "Duplicate stream consumer detected"
        }
        let seen_time = ms_time(r)?;
        let mut pending = Vec::new();
        for _ in 0..r.count()? {
            let id = id_from(r.take(16)?)?;
            // Redis: "Consumer entry not found in group global PEL", or a duplicate in the
            // consumer's own PEL. An entry owned by two consumers Redis would load with a
            // dangling reference; it is refused here.
            match owned.get_mut(&id) {
                Some(o) if !*o => *o = true,
                _ => return Err(BAD),
            }
            pending.push(id);
        }
        consumers.push(RdbConsumer { name, seen_time, pending });
    }
    // The deep sanitizer's "Stream CG PEL entry without consumer".
    if owned.values().any(|o| !o) {
        return Err(BAD);
    }
    Ok(RdbGroup { name, last_id, entries_read, pel, consumers })
}

/// streamEstimateDistanceFromFirstEverEntry, which 7.0 uses for a type-15 group's counter.
fn estimate_entries_read(s: &RdbStream, id: StreamId) -> i64 {
    if s.entries_added == 0 {
        return 0;
    }
    if s.length == 0 && id <= s.last_id {
        return s.entries_added as i64;
    }
    if id == s.last_id {
        return s.entries_added as i64;
    } else if id > s.last_id {
        return -1;
    }
    if s.max_deleted_id == (0, 0) || s.max_deleted_id < s.first_id {
        if id < s.first_id {
            return s.entries_added.saturating_sub(s.length) as i64;
        } else if id == s.first_id {
            return s.entries_added.saturating_sub(s.length).saturating_add(1) as i64;
        }
    }
    -1
}

/// Reads listpack elements as a stream node needs them.
struct Node<'a>(LpIter<'a>);

impl<'a> Node<'a> {
    fn next(&mut self) -> Result<LpEntry<'a>, RdbError> {
        self.0.next_entry()?.ok_or(BAD)
    }

    /// An integer (lpGetIntegerIfValid: a string holding one counts).
    fn int(&mut self) -> Result<i64, RdbError> {
        match self.next()? {
            LpEntry::Int(v) => Ok(v),
            LpEntry::Str(s) => crate::util::parse_i64(s).ok_or(BAD),
        }
    }

    /// A count, never negative.
    fn count(&mut self) -> Result<u64, RdbError> {
        u64::try_from(self.int()?).map_err(|_| BAD)
    }

    fn bytes(&mut self) -> Result<Bytes, RdbError> {
        Ok(match self.next()? {
            LpEntry::Int(v) => Bytes::from(v.to_string()),
            LpEntry::Str(s) => Bytes::copy_from_slice(s),
        })
    }
}

/// One node listpack: the master entry, then entries whose IDs are deltas from `master`.
fn read_node(
    lp: &[u8],
    master: StreamId,
    prev: &mut Option<StreamId>,
    out: &mut Vec<(StreamId, Vec<(Bytes, Bytes)>)>,
) -> Result<(), RdbError> {
    let mut n = Node(LpIter::new(lp)?);
    // An empty listpack is "Empty listpack inside stream"; `count` fails on it.
    let live = n.count()?;
    let deleted = n.count()?;
    let nfields = n.count()?;
    // The loops below stop at the listpack's end, so no count here can make them long.
    let mut master_fields = Vec::new();
    for _ in 0..nfields {
        master_fields.push(n.bytes()?);
    }
    if n.int()? != 0 {
        return Err(BAD); // the master entry's terminator
    }
    let (mut seen_live, mut seen_deleted) = (0u64, 0u64);
    for _ in 0..live.checked_add(deleted).ok_or(BAD)? {
        let flags = n.int()?;
        if flags & !(FLAG_DELETED | FLAG_SAMEFIELDS) != 0 {
            return Err(BAD);
        }
        // The deltas are written as int64 of a u64 difference (a sequence below the
        // master's is a negative one): the sum wraps, as in streamIteratorGetID.
        let id = (master.0.wrapping_add(n.int()? as u64), master.1.wrapping_add(n.int()? as u64));
        if id < master || prev.is_some_and(|p| p >= id) {
            return Err(BAD);
        }
        *prev = Some(id);
        let mut pairs = Vec::new();
        let extra = if flags & FLAG_SAMEFIELDS != 0 {
            for f in &master_fields {
                pairs.push((f.clone(), n.bytes()?));
            }
            0
        } else {
            for _ in 0..n.count()? {
                pairs.push((n.bytes()?, n.bytes()?));
            }
            pairs.len() as u64 + 1
        };
        // lp-count: the elements of the entry before it (flags, two deltas, the values,
        // and without SAMEFIELDS the field count and the fields).
        if n.count()? != 3 + pairs.len() as u64 + extra {
            return Err(BAD);
        }
        if flags & FLAG_DELETED != 0 {
            seen_deleted += 1;
        } else {
            seen_live += 1;
            out.push((id, pairs));
        }
    }
    if n.0.next_entry()?.is_some() || seen_live != live || seen_deleted != deleted {
        return Err(BAD);
    }
    n.0.finish()
}

/// A listpack being written (the header is filled in by `finish`).
struct LpWriter {
    buf: Vec<u8>,
    count: usize,
}

impl LpWriter {
    fn new() -> Self {
        LpWriter { buf: vec![0; 6], count: 0 }
    }

    /// The listpack's size if it were finished now.
    fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    /// lpAppendInteger: the smallest of the integer encodings.
    fn int(&mut self, v: i64) {
        let start = self.buf.len();
        match v {
            0..=127 => self.buf.push(v as u8),
            -4096..=4095 => {
                let u = (v as u16) & 0x1fff;
                self.buf.extend_from_slice(&[0xc0 | (u >> 8) as u8, u as u8]);
            }
            -32768..=32767 => {
                self.buf.push(0xf1);
                self.buf.extend_from_slice(&(v as i16).to_le_bytes());
            }
            -8388608..=8388607 => {
                self.buf.push(0xf2);
                self.buf.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
            }
            -2147483648..=2147483647 => {
                self.buf.push(0xf3);
                self.buf.extend_from_slice(&(v as i32).to_le_bytes());
            }
            _ => {
                self.buf.push(0xf4);
                self.buf.extend_from_slice(&v.to_le_bytes());
            }
        }
        self.close(start);
    }

    /// lpAppend: a string that is an int64's canonical text is stored as that integer.
    fn string(&mut self, s: &[u8]) {
        match crate::util::parse_i64(s) {
            Some(v) => self.int(v),
            None => self.raw_string(s),
        }
    }

    /// A string in a string encoding, whatever it holds.
    fn raw_string(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let n = s.len();
        if n < 64 {
            self.buf.push(0x80 | n as u8);
        } else if n < 4096 {
            self.buf.extend_from_slice(&[0xe0 | (n >> 8) as u8, n as u8]);
        } else {
            self.buf.push(0xf0);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        self.close(start);
    }

    /// Appends the back-length of the element written from `start`.
    fn close(&mut self, start: usize) {
        let mut back = [0u8; 5];
        let n = super::rdb::lp_backlen(&mut back, (self.buf.len() - start) as u64);
        self.buf.extend_from_slice(&back[..n]);
        self.count += 1;
    }

    fn finish(mut self) -> Vec<u8> {
        self.buf.push(0xff);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        // 65535 means "unknown": Redis stops counting there.
        self.buf[4..6].copy_from_slice(&(self.count.min(u16::MAX as usize) as u16).to_le_bytes());
        self.buf
    }
}

/// The node listpacks Redis 7.0 builds by XADD of `entries` (streamAppendItem with the
/// default node limits), each with its master ID.
fn nodes(entries: &[(StreamId, Vec<(Bytes, Bytes)>)]) -> Vec<(StreamId, Vec<u8>)> {
    struct Open<'e> {
        master: StreamId,
        fields: Vec<&'e [u8]>,
        lp: LpWriter,
        entries: usize,
    }
    fn close(open: Open, out: &mut Vec<(StreamId, Vec<u8>)>) {
        let mut lp = open.lp.finish();
        // The live count, first element of the master entry, was written as 1; any count up
        // to NODE_MAX_ENTRIES takes the same one-byte encoding.
        lp[6] = open.entries as u8;
        out.push((open.master, lp));
    }
    let mut out = Vec::new();
    let mut open: Option<Open> = None;
    for (id, pairs) in entries {
        let elements: usize = pairs.iter().map(|(f, v)| f.len() + v.len()).sum();
        if let Some(o) = open.take_if(|o| o.lp.bytes() + elements >= NODE_MAX_BYTES || o.entries >= NODE_MAX_ENTRIES) {
            close(o, &mut out);
        }
        let o = open.get_or_insert_with(|| {
            let mut lp = LpWriter::new();
            lp.int(1);
            lp.int(0);
            lp.int(pairs.len() as i64);
            for (f, _) in pairs {
                lp.string(f);
            }
            lp.int(0);
            Open { master: *id, fields: pairs.iter().map(|(f, _)| &f[..]).collect(), lp, entries: 0 }
        });
        let same = o.fields.len() == pairs.len() && o.fields.iter().zip(pairs).all(|(m, (f, _))| *m == &f[..]);
        o.lp.int(if same { FLAG_SAMEFIELDS } else { 0 });
        o.lp.int(id.0.wrapping_sub(o.master.0) as i64);
        o.lp.int(id.1.wrapping_sub(o.master.1) as i64);
        if !same {
            o.lp.int(pairs.len() as i64);
        }
        for (f, v) in pairs {
            if !same {
                o.lp.string(f);
            }
            o.lp.string(v);
        }
        o.lp.int(3 + pairs.len() as i64 + if same { 0 } else { pairs.len() as i64 + 1 });
        o.entries += 1;
    }
    if let Some(o) = open {
        close(o, &mut out);
    }
    out
}

/// A DUMP payload of type 19 for a stream, as Redis 7.0 writes it (see the module's notes).
/// Groups, consumers and pending lists are written sorted, whatever order `s` has them in.
pub fn encode_stream(s: &RdbStream) -> Vec<u8> {
    let mut out = vec![T_STREAM_LISTPACKS_2];
    put_stream(&mut out, s);
    seal(out)
}

/// The object of a type-19 stream (after its type byte and, in an RDB file, its key).
pub(super) fn put_stream(out: &mut Vec<u8>, s: &RdbStream) {
    let nodes = nodes(&s.entries);
    put_len(out, nodes.len() as u64);
    for (master, lp) in &nodes {
        put_string(out, &id_bytes(*master));
        put_string(out, lp);
    }
    put_len(out, s.length);
    for id in [s.last_id, s.first_id, s.max_deleted_id] {
        put_len(out, id.0);
        put_len(out, id.1);
    }
    put_len(out, s.entries_added);
    put_len(out, s.groups.len() as u64);
    let mut groups: Vec<&RdbGroup> = s.groups.iter().collect();
    groups.sort_by(|a, b| a.name.cmp(&b.name));
    for g in groups {
        put_string(out, &g.name);
        put_len(out, g.last_id.0);
        put_len(out, g.last_id.1);
        // -1 (unknown) is written as the length u64::MAX, as rdbSaveLen of a long long.
        put_len(out, g.entries_read as u64);
        let mut pel: Vec<&(StreamId, i64, u64)> = g.pel.iter().collect();
        pel.sort_by_key(|p| p.0);
        put_len(out, pel.len() as u64);
        for (id, time, count) in pel {
            out.extend_from_slice(&id_bytes(*id));
            out.extend_from_slice(&time.to_le_bytes());
            put_len(out, *count);
        }
        let mut consumers: Vec<&RdbConsumer> = g.consumers.iter().collect();
        consumers.sort_by(|a, b| a.name.cmp(&b.name));
        put_len(out, consumers.len() as u64);
        for c in consumers {
            put_string(out, &c.name);
            out.extend_from_slice(&c.seen_time.to_le_bytes());
            let mut pending = c.pending.clone();
            pending.sort_unstable();
            put_len(out, pending.len() as u64);
            for id in pending {
                out.extend_from_slice(&id_bytes(id));
            }
        }
    }
}

#[cfg(test)]
mod tests;
