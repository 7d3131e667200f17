//! Algorithms over sorted sets that the commands share: range bound parsing with Redis's
//! rules, range collection (rank, score, lex; offset and limit), counting by ranks, random
//! sampling, and the ZINTER/ZUNION/ZDIFF algebra over sorted sets and plain sets.

use std::collections::HashMap;

use bytes::Bytes;

use super::skiplist::cmp_entry;
use super::{LexEdge, LexRange, NodeId, ScoreRange, ZSetValue};
use crate::db::set::SetValue;
use crate::util::cstr;
pub use crate::util::parse_scan_cursor as parse_cursor;

extern "C" {
    fn strtod(s: *const std::os::raw::c_char, end: *mut *mut std::os::raw::c_char) -> f64;
}

/// `strtod` over the C string of `arg`, which must be consumed entirely (range bounds:
/// leading spaces, hex and out-of-range values are accepted, NaN is not).
pub fn c_strtod(arg: &[u8]) -> Option<f64> {
    let mut buf = cstr(arg).to_vec();
    buf.push(0);
    let mut end: *mut std::os::raw::c_char = std::ptr::null_mut();
    // SAFETY: `buf` is NUL-terminated; strtod reads up to the NUL and sets `end` within it.
    let v = unsafe { strtod(buf.as_ptr() as *const _, &mut end) };
    // SAFETY: `end` points into `buf` (at worst at its terminator).
    let used = unsafe { end.offset_from(buf.as_ptr() as *const std::os::raw::c_char) } as usize;
    (used == buf.len() - 1 && !v.is_nan()).then_some(v)
}

/// Redis's `zslParseRange`: `(` makes a bound exclusive.
pub fn parse_score_range(min: &[u8], max: &[u8]) -> Option<ScoreRange> {
    let item = |a: &[u8]| match a.first() {
        Some(b'(') => c_strtod(&a[1..]).map(|v| (v, true)),
        _ => c_strtod(a).map(|v| (v, false)),
    };
    match (item(min), item(max)) {
        (Some((min, minex)), Some((max, maxex))) => Some(ScoreRange { min, max, minex, maxex }),
        _ => None,
    }
}

/// Redis's `zslParseLexRange`: `-`, `+`, `[value` or `(value`.
pub fn parse_lex_range(min: &[u8], max: &[u8]) -> Option<LexRange> {
    let item = |a: &[u8]| -> Option<(LexEdge, bool)> {
        let alone = a.len() == 1 || a.get(1) == Some(&0);
        match a.first() {
            Some(b'+') if alone => Some((LexEdge::Max, true)),
            Some(b'-') if alone => Some((LexEdge::Min, true)),
            Some(b'(') => Some((LexEdge::Val(Bytes::copy_from_slice(&a[1..])), true)),
            Some(b'[') => Some((LexEdge::Val(Bytes::copy_from_slice(&a[1..])), false)),
            _ => None,
        }
    };
    match (item(min), item(max)) {
        (Some((min, minex)), Some((max, maxex))) => Some(LexRange { min, minex, max, maxex }),
        _ => None,
    }
}

/// Counts with Redis's rank arithmetic (first and last element in range).
pub fn count_by_ranks(len: usize, first: Option<(usize, NodeId)>, last: Option<(usize, NodeId)>) -> i64 {
    let Some((k1, _)) = first else {
        return 0;
    };
    let mut count = len as i64 - k1 as i64;
    if let Some((k2, _)) = last {
        count -= len as i64 - (k2 as i64 + 1);
    }
    count
}

pub enum Spec {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// Redis's rank sanitizing: the inclusive 0-based rank interval, if not empty.
pub fn rank_bounds(len: usize, mut start: i64, mut end: i64) -> Option<(usize, usize)> {
    let llen = len as i64;
    if start < 0 {
        start += llen;
    }
    if end < 0 {
        end += llen;
    }
    start = start.max(0);
    if start > end || start >= llen {
        return None;
    }
    Some((start as usize, end.min(llen - 1) as usize))
}

/// The elements of a range, in reply order (`genericZrangeby*Command`).
pub fn collect_range(z: &ZSetValue, spec: &Spec, rev: bool, offset: i64, mut limit: i64) -> Vec<(Bytes, f64)> {
    let mut out = Vec::new();
    let step = |id| if rev { z.prev(id) } else { z.next(id) };
    let start = match spec {
        Spec::Rank(s, e) => {
            let Some((s, e)) = rank_bounds(z.len(), *s, *e) else {
                return out;
            };
            let first = if rev { z.len() - 1 - s } else { s };
            let mut cur = z.at_rank(first);
            for _ in s..=e {
                let Some(id) = cur else { break };
                let (m, sc) = z.get(id);
                out.push((Bytes::copy_from_slice(m), sc));
                cur = step(id);
            }
            return out;
        }
        Spec::Score(r) if rev => z.last_in_score(r),
        Spec::Score(r) => z.first_in_score(r),
        Spec::Lex(r) if rev => z.last_in_lex(r),
        Spec::Lex(r) => z.first_in_lex(r),
    };
    // Walking on while the far end of the range holds.
    let in_range = |id: NodeId| {
        let (m, sc) = z.get(id);
        match spec {
            Spec::Rank(..) => true,
            Spec::Score(r) if rev => r.gte_min(sc),
            Spec::Score(r) => r.lte_max(sc),
            Spec::Lex(r) if rev => r.gte_min(m),
            Spec::Lex(r) => r.lte_max(m),
        }
    };
    let Some((rank, id)) = start else {
        return out;
    };
    // Skipping `offset` elements; a negative offset skips past the end, as in Redis.
    let mut cur = match offset {
        0 => Some(id),
        o if o < 0 => None,
        o if rev => (rank as u64).checked_sub(o as u64).and_then(|r| z.at_rank(r as usize)),
        o => z.at_rank(rank.saturating_add(o as usize)),
    };
    while let Some(id) = cur {
        if limit == 0 || !in_range(id) {
            break;
        }
        limit -= 1;
        let (m, sc) = z.get(id);
        out.push((Bytes::copy_from_slice(m), sc));
        cur = step(id);
    }
    out
}

/// ZRANDMEMBER's picks (`zrandmemberWithCountCommand`): `count` with repetitions unless
/// `uniq`; the whole set (from its tail, as Redis walks it) when `count` covers it; else a
/// sample, in set order for a listpack as Redis's `lpRandomPairsUnique` gives it.
pub fn random_members(z: &ZSetValue, count: usize, uniq: bool, rng: &mut impl FnMut() -> u64) -> Vec<(Bytes, f64)> {
    let size = z.len();
    if count == 0 || size == 0 {
        Vec::new()
    } else if !uniq || count == 1 {
        (0..count).filter_map(|_| z.entry_at((rng() % size as u64) as usize).map(|(m, s)| (Bytes::copy_from_slice(m), s))).collect()
    } else if count >= size {
        // Redis walks a whole sorted set from its tail.
        let mut v: Vec<(Bytes, f64)> = z.iter().map(|(m, s)| (Bytes::copy_from_slice(m), s)).collect();
        v.reverse();
        v
    } else {
        let mut v: Vec<(Bytes, f64)> = sample_distinct(size, count, rng)
            .into_iter()
            .filter_map(|i| z.entry_at(i).map(|(m, s)| (Bytes::copy_from_slice(m), s)))
            .collect();
        if z.is_listpack() {
            // Redis samples a listpack in its order.
            sort_pairs(&mut v);
        }
        v
    }
}

/// `k` distinct indices out of `0..n`, in random order (a sparse partial Fisher-Yates).
pub fn sample_distinct(n: usize, k: usize, rng: &mut impl FnMut() -> u64) -> Vec<usize> {
    let mut swapped: HashMap<usize, usize> = HashMap::new();
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let j = i + (rng() % (n - i) as u64) as usize;
        let vj = *swapped.get(&j).unwrap_or(&j);
        let vi = *swapped.get(&i).unwrap_or(&i);
        swapped.insert(j, vi);
        out.push(vj);
    }
    out
}

// The ZADD option flags (Redis's ZADD_IN_*).
pub const NX: u8 = 1;
pub const XX: u8 = 2;
pub const GT: u8 = 4;
pub const LT: u8 = 8;
pub const CH: u8 = 16;
pub const INCR: u8 = 32;

/// What `zsetAdd` did with one element.
pub enum AddOut {
    Nan,
    Nop,
    Added(f64),
    Updated(f64),
    Unchanged(f64),
}

/// Redis's `zsetAdd`.
pub fn zset_add(z: &mut ZSetValue, mut score: f64, member: &[u8], flags: u8, lim: (i64, i64)) -> AddOut {
    if score.is_nan() {
        return AddOut::Nan;
    }
    match z.lookup(member) {
        Some((at, cur)) => {
            if flags & NX != 0 {
                return AddOut::Nop;
            }
            if flags & INCR != 0 {
                score += cur;
                if score.is_nan() {
                    return AddOut::Nan;
                }
            }
            if (flags & LT != 0 && score >= cur) || (flags & GT != 0 && score <= cur) {
                return AddOut::Nop;
            }
            if score != cur {
                z.update_at(at, score);
                AddOut::Updated(score)
            } else {
                AddOut::Unchanged(score)
            }
        }
        None if flags & XX == 0 => {
            z.insert(member, score, lim.0, lim.1);
            AddOut::Added(score)
        }
        None => AddOut::Nop,
    }
}

/// One input of ZINTER/ZUNION/ZDIFF: a sorted set, a plain set (every score 1) or nothing.
pub enum Src<'a> {
    Missing,
    Z(&'a ZSetValue),
    S(&'a SetValue),
}

impl Src<'_> {
    pub fn len(&self) -> usize {
        match self {
            Src::Missing => 0,
            Src::Z(z) => z.len(),
            Src::S(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn score(&self, m: &[u8]) -> Option<f64> {
        match self {
            Src::Missing => None,
            Src::Z(z) => z.score(m),
            Src::S(s) => s.contains(m).then_some(1.0),
        }
    }

    fn for_each(&self, mut f: impl FnMut(&[u8], f64)) {
        match self {
            Src::Missing => {}
            Src::Z(z) => z.iter().for_each(|(m, s)| f(m, s)),
            Src::S(s) => s.iter().for_each(|m| f(m, 1.0)),
        }
    }
}

/// How ZINTER/ZUNION combine the scores of one member.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Aggregate {
    Sum,
    Min,
    Max,
}

/// Redis's `zunionInterAggregate` (a NaN sum, from inf + -inf, becomes 0).
fn aggregate(target: &mut f64, val: f64, agg: Aggregate) {
    match agg {
        Aggregate::Sum => {
            *target += val;
            if target.is_nan() {
                *target = 0.0;
            }
        }
        Aggregate::Min => *target = if val < *target { val } else { *target },
        Aggregate::Max => *target = if val > *target { val } else { *target },
    }
}

/// The weighted score of an input element (NaN, from inf * 0, becomes 0).
fn weighted(score: f64, weight: f64) -> f64 {
    let s = weight * score;
    if s.is_nan() {
        0.0
    } else {
        s
    }
}

/// ZINTER over inputs already ordered by size, with their weights (unsorted result).
pub fn inter(srcs: &[(Src<'_>, f64)], agg: Aggregate) -> Vec<(Bytes, f64)> {
    let mut out = Vec::new();
    let Some((first, w0)) = srcs.first() else {
        return out;
    };
    first.for_each(|m, s| {
        let mut score = weighted(s, *w0);
        for (src, w) in &srcs[1..] {
            match src.score(m) {
                Some(v) => aggregate(&mut score, v * w, agg),
                None => return,
            }
        }
        out.push((Bytes::copy_from_slice(m), score));
    });
    out
}

/// ZUNION over inputs ordered by size, with their weights (unsorted result).
pub fn union(srcs: &[(Src<'_>, f64)], agg: Aggregate) -> Vec<(Bytes, f64)> {
    let mut acc: HashMap<Bytes, usize> = HashMap::new();
    let mut out: Vec<(Bytes, f64)> = Vec::new();
    for (src, w) in srcs {
        src.for_each(|m, s| {
            let score = weighted(s, *w);
            match acc.get(m) {
                Some(&i) => aggregate(&mut out[i].1, score, agg),
                None => {
                    let m = Bytes::copy_from_slice(m);
                    acc.insert(m.clone(), out.len());
                    out.push((m, score));
                }
            }
        });
    }
    out
}

/// ZDIFF: the members of the first input found in no other, with their scores.
pub fn diff(srcs: &[(Src<'_>, f64)]) -> Vec<(Bytes, f64)> {
    let mut out = Vec::new();
    let Some((first, _)) = srcs.first() else {
        return out;
    };
    first.for_each(|m, s| {
        if srcs[1..].iter().all(|(src, _)| src.score(m).is_none()) {
            out.push((Bytes::copy_from_slice(m), s));
        }
    });
    out
}

/// Sorts `(member, score)` pairs in sorted-set order.
pub fn sort_pairs(v: &mut [(Bytes, f64)]) {
    v.sort_by(|a, b| cmp_entry(a.1, &a.0, b.1, &b.0));
}
