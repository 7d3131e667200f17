//! One node of a stream (`stream.rs`): a master entry's fields, then entries in ID order,
//! in our own packed encoding, with the byte size Redis's listpack for the same entries would
//! have (what decides where Redis cuts its nodes, and so what `~` trims remove):
//!
//! ```text
//! node: varint(master field count) (varint(len) field)*  entry*
//! entry: flags u8 | varint(ms - master.ms) | varint(zigzag(seq - master.seq))
//!        | values (varint(len) value)*               when flags & SAMEFIELDS
//!        | varint(n) (varint(len) field varint(len) value){n}   otherwise
//! ```

use std::ops::Range;

use bytes::Bytes;

use super::stream::StreamId;
use super::varint::put as put_varint;

pub(super) const DELETED: u8 = 1;
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

/// Reads a varint at `*pos` (our own bytes: always well formed).
fn get_varint(buf: &[u8], pos: &mut usize) -> u64 {
    super::varint::get(buf, pos).unwrap_or(0)
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
pub(super) struct Share {
    copy: Option<Bytes>,
}

const SHARE_MAX: usize = 16 * 1024;

impl Share {
    pub(super) fn piece(&mut self, buf: &[u8], r: Range<usize>) -> Bytes {
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
pub(super) struct Node {
    pub(super) buf: Vec<u8>,
    /// Where the first entry starts (after the master fields).
    pub(super) entries_at: u32,
    pub(super) live: u32,
    pub(super) deleted: u32,
    /// The size of Redis's listpack for this node, without the header, the end byte and
    /// the live/deleted counters (whose sizes change with their values).
    pub(super) lp_body: u32,
}

/// Where an entry lies in its node.
#[derive(Debug, Clone, Copy)]
pub(super) struct At {
    pub(super) start: usize,
    pub(super) id: StreamId,
    pub(super) flags: u8,
    /// Where its fields (or values) start, and where the entry ends.
    pub(super) body: usize,
    pub(super) end: usize,
}

impl Node {
    /// Marks the live entry at `at` deleted (a tombstone, as Redis flags it); the caller
    /// removes the node instead when it was the last live one.
    pub(super) fn mark_deleted(&mut self, at: &At) {
        self.buf[at.start] |= DELETED;
        self.live -= 1;
        self.deleted += 1;
    }

    /// Appends entry `id` (`pairs`: field, value, ...) to this node of master ID `master`,
    /// as values alone when `same` (the master fields), counting the bytes Redis's listpack
    /// would take for it (flags, ID deltas, [count, fields,] values, lp-count).
    pub(super) fn push(&mut self, master: StreamId, id: StreamId, pairs: &[Bytes], same: bool) {
        let numfields = pairs.len() / 2;
        let ms_delta = id.ms.wrapping_sub(master.ms);
        let seq_delta = id.seq.wrapping_sub(master.seq) as i64;
        let flags = if same { SAMEFIELDS } else { 0 };
        self.buf.push(flags);
        put_varint(&mut self.buf, ms_delta);
        put_varint(&mut self.buf, zigzag(seq_delta));
        let mut lp = lp_int(flags as i64) + lp_int(ms_delta as i64) + lp_int(seq_delta);
        if same {
            for v in pairs.iter().skip(1).step_by(2) {
                put_bytes(&mut self.buf, v);
                lp += lp_str(v);
            }
        } else {
            put_varint(&mut self.buf, numfields as u64);
            lp += lp_int(numfields as i64);
            for p in pairs {
                put_bytes(&mut self.buf, p);
                lp += lp_str(p);
            }
        }
        let lp_count = if same { numfields + 3 } else { numfields * 2 + 4 };
        lp += lp_int(lp_count as i64);
        self.lp_body = self.lp_body.saturating_add(lp);
        self.live += 1;
    }

    pub(super) fn new(fields: &[&[u8]]) -> Self {
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
    pub(super) fn lp_bytes(&self) -> u64 {
        7 + lp_int(self.live as i64) as u64 + lp_int(self.deleted as i64) as u64 + self.lp_body as u64
    }

    /// Whether `pairs` (field, value, ...) has exactly the master fields, in order.
    pub(super) fn has_master_fields(&self, pairs: &[Bytes]) -> bool {
        let mut pos = 0;
        let n = get_varint(&self.buf, &mut pos) as usize;
        n * 2 == pairs.len() && pairs.iter().step_by(2).all(|f| get_bytes(&self.buf, &mut pos) == &f[..])
    }

    pub(super) fn master_count(&self) -> usize {
        let mut pos = 0;
        get_varint(&self.buf, &mut pos) as usize
    }

    /// Reads the entry at `start`; `n_master` is the master field count.
    pub(super) fn entry_at(&self, master: StreamId, start: usize, n_master: usize) -> At {
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
    pub(super) fn entries(&self, master: StreamId) -> Vec<At> {
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
    pub(super) fn master_ranges(&self) -> Vec<Range<usize>> {
        let mut pos = 0;
        let n = get_varint(&self.buf, &mut pos);
        (0..n).map(|_| bytes_range(&self.buf, &mut pos)).collect()
    }

    /// The fields and values of the entry at `at`; `master` is the node's master fields,
    /// `share` hands out the bytes.
    pub(super) fn fields_of(&self, at: &At, master: &[Range<usize>], share: &mut Share) -> Vec<(Bytes, Bytes)> {
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
    pub(super) fn last_id(&self, master: StreamId) -> StreamId {
        self.entries(master).last().map_or(master, |a| a.id)
    }
}
