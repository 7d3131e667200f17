//! A small sorted set in one packed buffer, as Redis keeps one in a listpack: a 4-byte
//! little-endian count, then entries in order of (score, member), found by scanning. An entry
//! is
//!
//! `varint(member length) member score backlen`
//!
//! where `score` is `varint(zigzag(n) << 1)` for an integer score `n` of at most 53 bits (one
//! byte for the usual small ones) or `0x01` and the double's 8 little-endian bytes, and
//! `backlen` is the entry's length so far written right to left (7 bits per byte, the high bit
//! set on every byte but the last one read), so the entry before any position is one step
//! away, as in Redis's listpack. A node id is an entry's byte offset.
//!
//! The buffer is a boxed slice of exactly its size: every change reallocates, as Redis
//! reallocates a listpack, and a set of 5 one-letter members with small integer scores takes
//! 24 bytes. Empty, it allocates nothing.

use super::skiplist::cmp_entry;
use crate::db::varint;

/// The largest integer kept as one: beyond 2^53 not every integer is a double.
const EXACT: f64 = 9_007_199_254_740_992.0;
/// The score tag of a double kept as its bits.
const DOUBLE: u8 = 0x01;

#[derive(Clone, Default)]
pub struct Packed {
    buf: Box<[u8]>,
}

/// The count's bytes, where the first entry starts.
const HEAD: usize = 4;

/// Where one entry lies.
struct Entry {
    member: std::ops::Range<usize>,
    score: f64,
    end: usize,
}

fn put_score(out: &mut Vec<u8>, score: f64) {
    if score.fract() == 0.0 && score.abs() < EXACT {
        let n = score as i64;
        varint::put(out, ((n << 1) ^ (n >> 63)) as u64 * 2);
    } else {
        out.push(DOUBLE);
        out.extend_from_slice(&score.to_le_bytes());
    }
}

/// The backlen of an entry of `n` bytes, in the order it is stored.
fn backlen(n: usize) -> ([u8; 10], usize) {
    let (fwd, len) = varint::encode(n as u64);
    let mut out = [0u8; 10];
    for i in 0..len {
        // Stored reversed: the first byte read (the last one stored) has the low bits.
        out[len - 1 - i] = fwd[i];
    }
    (out, len)
}

impl Packed {
    pub fn len(&self) -> usize {
        self.buf.get(..HEAD).map_or(0, |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize)
    }

    /// Rebuilds the buffer as the entries before offset `at`, `entry`, and the entries from
    /// offset `tail` on, with the count moved by `delta`.
    fn rebuild(&mut self, at: usize, entry: &[u8], tail: usize, delta: i64) {
        let count = (self.len() as i64 + delta) as u32;
        if count == 0 {
            self.buf = Box::default();
            return;
        }
        let before = self.buf.get(HEAD..at).unwrap_or(&[]);
        let rest = self.buf.get(tail..).unwrap_or(&[]);
        let mut buf = Vec::with_capacity(HEAD + before.len() + entry.len() + rest.len());
        buf.extend_from_slice(&count.to_le_bytes());
        buf.extend_from_slice(before);
        buf.extend_from_slice(entry);
        buf.extend_from_slice(rest);
        self.buf = buf.into_boxed_slice();
    }

    /// Heap bytes held: the buffer, rounded to the allocator's 16-byte classes.
    pub fn mem(&self) -> usize {
        self.buf.len().next_multiple_of(16)
    }

    fn entry(&self, at: usize) -> Entry {
        let buf = &self.buf[..];
        let mut p = at;
        let mlen = varint::get(buf, &mut p).unwrap_or(0) as usize;
        let member = p..p + mlen;
        p = member.end;
        let score = if buf.get(p) == Some(&DOUBLE) {
            let mut bits = [0u8; 8];
            bits.copy_from_slice(&buf[p + 1..p + 9]);
            p += 9;
            f64::from_le_bytes(bits)
        } else {
            let z = varint::get(buf, &mut p).unwrap_or(0) >> 1;
            ((z >> 1) as i64 ^ -((z & 1) as i64)) as f64
        };
        let end = p + backlen(p - at).1;
        Entry { member, score, end }
    }

    /// The member and score of the entry at `id`.
    pub fn get(&self, id: u32) -> (&[u8], f64) {
        let e = self.entry(id as usize);
        (&self.buf[e.member], e.score)
    }

    pub fn first(&self) -> Option<u32> {
        (self.buf.len() > HEAD).then_some(HEAD as u32)
    }

    pub fn last(&self) -> Option<u32> {
        self.prev(self.buf.len() as u32)
    }

    pub fn next(&self, id: u32) -> Option<u32> {
        let end = self.entry(id as usize).end;
        (end < self.buf.len()).then_some(end as u32)
    }

    /// The entry before offset `id` (also the last one, for `id` = the buffer's length).
    pub fn prev(&self, id: u32) -> Option<u32> {
        let mut p = id as usize;
        if p <= HEAD {
            return None;
        }
        let (mut n, mut shift) = (0usize, 0);
        loop {
            p -= 1;
            let b = self.buf[p];
            n |= ((b & 0x7f) as usize) << shift;
            shift += 7;
            if b & 0x80 == 0 || p <= HEAD {
                break;
            }
        }
        Some(p.saturating_sub(n).max(HEAD) as u32)
    }

    /// Ids in order.
    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let mut cur = self.first();
        std::iter::from_fn(move || {
            let id = cur?;
            cur = self.next(id);
            Some(id)
        })
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        self.ids().map(move |id| self.get(id))
    }

    /// The member's entry and score, with its rank.
    pub fn find(&self, member: &[u8]) -> Option<(usize, u32, f64)> {
        self.ids().enumerate().find_map(|(rank, id)| {
            let (m, s) = self.get(id);
            (m == member).then_some((rank, id, s))
        })
    }

    /// The entry of rank `rank`, walked to from the nearer end.
    pub fn at_rank(&self, rank: usize) -> Option<u32> {
        let len = self.len();
        if rank >= len {
            return None;
        }
        if rank <= len / 2 {
            return self.ids().nth(rank);
        }
        let mut id = self.last()?;
        for _ in rank + 1..len {
            id = self.prev(id)?;
        }
        Some(id)
    }

    /// The set of `entries`, given in order of (score, member) and distinct, built at once
    /// (a loader's: inserting one by one walks and copies the buffer each time).
    pub fn from_sorted<'a>(entries: impl Iterator<Item = (&'a [u8], f64)>) -> Packed {
        let mut buf = vec![0u8; HEAD];
        let mut count = 0u32;
        for (member, score) in entries {
            let start = buf.len();
            varint::put(&mut buf, member.len() as u64);
            buf.extend_from_slice(member);
            put_score(&mut buf, score);
            let (back, n) = backlen(buf.len() - start);
            buf.extend_from_slice(&back[..n]);
            count += 1;
        }
        if count == 0 {
            return Packed::default();
        }
        buf[..HEAD].copy_from_slice(&count.to_le_bytes());
        Packed { buf: buf.into_boxed_slice() }
    }

    /// Adds a member that is not present, in order.
    pub fn insert(&mut self, member: &[u8], score: f64) {
        let at = self.ids().find(|&id| {
            let (m, s) = self.get(id);
            cmp_entry(score, member, s, m).is_lt()
        });
        let at = at.map_or(self.buf.len().max(HEAD), |id| id as usize);
        let mut entry = Vec::with_capacity(member.len() + 16);
        varint::put(&mut entry, member.len() as u64);
        entry.extend_from_slice(member);
        put_score(&mut entry, score);
        let (back, n) = backlen(entry.len());
        entry.extend_from_slice(&back[..n]);
        self.rebuild(at, &entry, at, 1);
    }

    /// Removes the entry at `id`.
    pub fn remove_at(&mut self, id: u32) {
        let at = id as usize;
        let end = self.entry(at).end;
        self.rebuild(at, &[], end, -1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random inserts and removals against a sorted model: order, scores (integers, doubles,
    /// infinities, long members that need two-byte lengths and backlens), both directions of
    /// travel and ranks agree after every step.
    #[test]
    fn follows_a_sorted_model_both_ways() {
        let mut p = Packed::default();
        let mut model: Vec<(Vec<u8>, f64)> = Vec::new();
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            rng = crate::util::xorshift(rng);
            rng
        };
        let scores = [0.0, 1.0, -1.0, 2.5, -7e300, f64::INFINITY, f64::NEG_INFINITY, 1e17, 123456789.0, -0.125];
        for step in 0..3000 {
            let r = next();
            let member: Vec<u8> = if r % 7 == 0 { vec![b'x'; 100 + (r % 200) as usize] } else { format!("m{}", r % 40).into_bytes() };
            match model.iter().position(|(m, _)| *m == member) {
                Some(i) => {
                    let (rank, id, s) = p.find(&member).expect("present");
                    assert_eq!((rank, s), (i, model[i].1), "step {step}");
                    p.remove_at(id);
                    model.remove(i);
                }
                None => {
                    let score = scores[(next() % scores.len() as u64) as usize];
                    p.insert(&member, score);
                    model.push((member, score));
                    model.sort_by(|a, b| cmp_entry(a.1, &a.0, b.1, &b.0));
                }
            }
            assert_eq!(p.len(), model.len());
            let fwd: Vec<(Vec<u8>, f64)> = p.iter().map(|(m, s)| (m.to_vec(), s)).collect();
            assert_eq!(fwd, model, "step {step}");
            let mut back = Vec::new();
            let mut cur = p.last();
            while let Some(id) = cur {
                back.push(p.get(id).0.to_vec());
                cur = p.prev(id);
            }
            back.reverse();
            assert_eq!(back, model.iter().map(|(m, _)| m.clone()).collect::<Vec<_>>());
            for (rank, (m, _)) in model.iter().enumerate() {
                assert_eq!(p.get(p.at_rank(rank).expect("ranked")).0, &m[..]);
            }
            assert_eq!(p.at_rank(model.len()), None);
        }
    }

    #[test]
    fn small_members_and_integer_scores_take_four_bytes_each() {
        let mut p = Packed::default();
        for (i, m) in ["a", "b", "c", "d", "e"].iter().enumerate() {
            p.insert(m.as_bytes(), (i + 1) as f64);
        }
        assert_eq!(p.buf.len(), 24);
        assert_eq!(p.get(p.last().unwrap()), (&b"e"[..], 5.0));
        assert_eq!(std::mem::size_of::<Packed>(), 16);
        for m in ["a", "b", "c", "d", "e"] {
            let (_, id, _) = p.find(m.as_bytes()).unwrap();
            p.remove_at(id);
        }
        assert_eq!((p.len(), p.buf.len()), (0, 0), "an empty set allocates nothing");
    }
}
