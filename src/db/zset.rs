//! The sorted set value type, in Redis's two encodings: `listpack` while small (one packed
//! buffer in order, scanned: [`packed`]), then `skiplist` for good: a member -> node table
//! (O(1) ZSCORE, SCAN cursors, random members) plus an ordered skiplist with spans (O(log n)
//! ranks and ranges).

#[path = "zset_ops.rs"]
pub mod ops;
#[path = "zset_packed.rs"]
mod packed;
#[path = "zset_skiplist.rs"]
pub mod skiplist;

use std::fmt;

use bytes::Bytes;

use super::key::Key;
use super::table::RawTable;
use packed::Packed;
pub use skiplist::{NodeId, SkipList};

/// Heap bytes counted per element besides a long member's own allocation
/// ([`Key::heap_size`]; members of up to 22 bytes live in the 24-byte member slot): the
/// skiplist's 16-byte level-0 record, back link and member slot, a quarter of a block of
/// upper links, the index slot (12) and bucket, and the vectors' spare room. Measured:
/// 1,000,000 ZADDs of 8-to-14-byte members grow the resident set by 85 B each (100 B while
/// members were `Bytes` handles to allocations of their own, 128 B with 88-byte nodes).
const ENTRY_OVERHEAD: usize = 76;

/// A sorted set: packed while small (Redis's `listpack`), else the member table and the
/// skiplist (`skiplist`), one way. A node id is a byte offset of the packed form or a
/// skiplist node; either is valid until the set changes.
#[derive(Clone)]
pub struct ZSetValue {
    repr: Repr,
}

#[derive(Clone)]
enum Repr {
    Packed(Packed),
    Full(Box<Full>),
}

/// The large form. `mem` is kept up to date by every mutation so memory accounting is O(1).
#[derive(Clone)]
struct Full {
    /// Member -> its skiplist node. The member's bytes live in the node only; lookups
    /// compare through the skiplist. Node ids survive the skiplist's clone, so a clone of
    /// the index is right as is.
    dict: RawTable<NodeId>,
    list: SkipList,
    mem: usize,
}

impl Full {
    fn find(&self, member: &[u8]) -> Option<usize> {
        self.dict.find(self.dict.hash(member), |id| self.list.get(*id).0[..] == *member)
    }

    fn insert(&mut self, member: &[u8], score: f64) {
        let id = self.list.insert(score, Key::copy_from(member));
        self.dict.push(self.dict.hash(member), id);
        self.mem += Key::heap_size(member.len()) + ENTRY_OVERHEAD;
    }
}

/// A score interval (`zrangespec`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreRange {
    pub min: f64,
    pub max: f64,
    pub minex: bool,
    pub maxex: bool,
}

impl ScoreRange {
    pub fn gte_min(&self, v: f64) -> bool {
        if self.minex {
            v > self.min
        } else {
            v >= self.min
        }
    }

    pub fn lte_max(&self, v: f64) -> bool {
        if self.maxex {
            v < self.max
        } else {
            v <= self.max
        }
    }

    /// True for ranges that can never match anything.
    pub fn is_empty(&self) -> bool {
        self.min > self.max || (self.min == self.max && (self.minex || self.maxex))
    }
}

/// One end of a lex interval: `-`, `+`, or a string (`[` inclusive, `(` exclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LexEdge {
    Min,
    Max,
    Val(Bytes),
}

/// A lex interval (`zlexrangespec`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LexRange {
    pub min: LexEdge,
    pub minex: bool,
    pub max: LexEdge,
    pub maxex: bool,
}

/// Redis's `sdscmplex`: `-` sorts before everything, `+` after.
fn cmp_lex(a: &LexEdge, b: &LexEdge) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    match (a, b) {
        (LexEdge::Min, LexEdge::Min) | (LexEdge::Max, LexEdge::Max) => Equal,
        (LexEdge::Min, _) | (_, LexEdge::Max) => Less,
        (LexEdge::Max, _) | (_, LexEdge::Min) => Greater,
        (LexEdge::Val(x), LexEdge::Val(y)) => x.cmp(y),
    }
}

impl LexRange {
    fn cmp_value(v: &[u8], edge: &LexEdge) -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        match edge {
            LexEdge::Min => Greater,
            LexEdge::Max => Less,
            LexEdge::Val(e) => v.cmp(e),
        }
    }

    pub fn gte_min(&self, v: &[u8]) -> bool {
        let c = Self::cmp_value(v, &self.min);
        if self.minex {
            c.is_gt()
        } else {
            c.is_ge()
        }
    }

    pub fn lte_max(&self, v: &[u8]) -> bool {
        let c = Self::cmp_value(v, &self.max);
        if self.maxex {
            c.is_lt()
        } else {
            c.is_le()
        }
    }

    pub fn is_empty(&self) -> bool {
        let c = cmp_lex(&self.min, &self.max);
        c.is_gt() || (c.is_eq() && (self.minex || self.maxex))
    }
}

impl Default for ZSetValue {
    fn default() -> Self {
        Self::new()
    }
}

impl ZSetValue {
    /// An empty set in the small (listpack) encoding.
    pub fn new() -> Self {
        ZSetValue { repr: Repr::Packed(Packed::default()) }
    }

    /// An empty set already in the skiplist encoding.
    pub fn new_skiplist() -> Self {
        ZSetValue { repr: Repr::Full(Box::new(Full { dict: RawTable::new(), list: SkipList::new(), mem: 0 })) }
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        if self.is_listpack() {
            "listpack"
        } else {
            "skiplist"
        }
    }

    pub fn is_listpack(&self) -> bool {
        matches!(self.repr, Repr::Packed(_))
    }

    /// Approximate heap bytes held (O(1)).
    pub fn mem_usage(&self) -> usize {
        match &self.repr {
            Repr::Packed(p) => p.mem(),
            Repr::Full(f) => f.mem,
        }
    }

    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Packed(p) => p.len(),
            Repr::Full(f) => f.list.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.lookup(member).map(|(_, score)| score)
    }

    /// The member's place (for [`ZSetValue::update_at`]) and its score.
    pub fn lookup(&self, member: &[u8]) -> Option<(usize, f64)> {
        match &self.repr {
            Repr::Packed(p) => p.find(member).map(|(_, id, s)| (id as usize, s)),
            Repr::Full(f) => {
                let i = f.find(member)?;
                Some((i, f.list.get(*f.dict.item(i)?).1))
            }
        }
    }

    /// The set of `members` (a loaded value), in the encoding its size calls for; None if a
    /// member repeats or a score is NaN (bad data). Built in order at once.
    pub fn from_members(mut members: Vec<(Bytes, f64)>, max_entries: i64, max_value: i64) -> Option<ZSetValue> {
        if members.iter().any(|(_, s)| s.is_nan()) {
            return None;
        }
        let mut names: Vec<&[u8]> = members.iter().map(|(m, _)| &m[..]).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        members.sort_by(|a, b| skiplist::cmp_entry(a.1, &a.0, b.1, &b.0));
        let small = members.len() as i64 <= max_entries && members.iter().all(|(m, _)| m.len() as i64 <= max_value);
        if small {
            // A listpack keeps scores as text, where -0 reads back as 0 (as `insert` does).
            return Some(ZSetValue { repr: Repr::Packed(Packed::from_sorted(members.iter().map(|(m, s)| (&m[..], *s + 0.0)))) });
        }
        let mut z = ZSetValue::new_skiplist();
        for (m, s) in &members {
            z.insert(m, *s, max_entries, max_value);
        }
        Some(z)
    }

    /// Adds a member that is not present, converting to the skiplist encoding first when
    /// the set would outgrow the listpack limits (`zset-max-listpack-entries/value`).
    pub fn insert(&mut self, member: &[u8], score: f64, max_entries: i64, max_value: i64) {
        if self.is_listpack() && (self.len() as i64 + 1 > max_entries || member.len() as i64 > max_value) {
            self.convert_to_skiplist();
        }
        match &mut self.repr {
            // A listpack keeps scores as text, where -0 reads back as 0 (so does the packed
            // form's integer encoding).
            Repr::Packed(p) => p.insert(member, score),
            Repr::Full(f) => f.insert(member, score),
        }
    }

    /// To the skiplist encoding, for good (a no-op when already there).
    pub fn convert_to_skiplist(&mut self) {
        let Repr::Packed(p) = &self.repr else { return };
        let mut full = Full { dict: RawTable::new(), list: SkipList::new(), mem: 0 };
        for (m, s) in p.iter() {
            full.insert(m, s);
        }
        self.repr = Repr::Full(Box::new(full));
    }

    /// Changes the score of a present member.
    pub fn update(&mut self, member: &[u8], score: f64) {
        if let Some((i, _)) = self.lookup(member) {
            self.update_at(i, score);
        }
    }

    /// Changes the score of the member at place `i` (from `lookup`), so that ZADD finds the
    /// member once.
    pub fn update_at(&mut self, i: usize, score: f64) {
        match &mut self.repr {
            Repr::Packed(p) => {
                let (member, prev) = p.get(i as u32);
                // Same score (0 == -0 included, as C compares them): nothing moves, like Redis.
                if prev == score {
                    return;
                }
                let member = member.to_vec();
                p.remove_at(i as u32);
                p.insert(&member, score);
            }
            Repr::Full(f) => {
                let Some(&id) = f.dict.item(i) else { return };
                if f.list.get(id).1 == score {
                    return;
                }
                if let Some(new_id) = f.list.update_score(id, score) {
                    if let Some(slot) = f.dict.item_mut(i) {
                        *slot = new_id;
                    }
                }
            }
        }
    }

    /// Removes a member; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Packed(p) => {
                let (_, id, score) = p.find(member)?;
                p.remove_at(id);
                Some(score)
            }
            Repr::Full(f) => {
                let i = f.find(member)?;
                let id = f.dict.remove_at(i);
                let score = f.list.get(id).1;
                f.list.remove_node(id);
                f.mem -= Key::heap_size(member.len()) + ENTRY_OVERHEAD;
                Some(score)
            }
        }
    }

    /// The 0-based rank of a member.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::Packed(p) => p.find(member).map(|(rank, _, _)| rank),
            Repr::Full(f) => f.list.rank(self.score(member)?, member),
        }
    }

    pub fn at_rank(&self, rank: usize) -> Option<NodeId> {
        match &self.repr {
            Repr::Packed(p) => p.at_rank(rank),
            Repr::Full(f) => f.list.at_rank(rank),
        }
    }

    pub fn get(&self, id: NodeId) -> (&[u8], f64) {
        match &self.repr {
            Repr::Packed(p) => p.get(id),
            Repr::Full(f) => {
                let (m, s) = f.list.get(id);
                (m, s)
            }
        }
    }

    pub fn next(&self, id: NodeId) -> Option<NodeId> {
        match &self.repr {
            Repr::Packed(p) => p.next(id),
            Repr::Full(f) => f.list.next(id),
        }
    }

    pub fn prev(&self, id: NodeId) -> Option<NodeId> {
        match &self.repr {
            Repr::Packed(p) => p.prev(id),
            Repr::Full(f) => f.list.prev(id),
        }
    }

    pub fn first(&self) -> Option<NodeId> {
        match &self.repr {
            Repr::Packed(p) => p.first(),
            Repr::Full(f) => f.list.first(),
        }
    }

    pub fn last(&self) -> Option<NodeId> {
        match &self.repr {
            Repr::Packed(p) => p.last(),
            Repr::Full(f) => f.list.last(),
        }
    }

    /// `(member, score)` in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], f64)> + '_ {
        let mut cur = self.first();
        std::iter::from_fn(move || {
            let id = cur?;
            cur = self.next(id);
            Some(self.get(id))
        })
    }

    /// The element at a dense position (for uniform random picks): its rank when packed, a
    /// place in the member table else.
    pub fn entry_at(&self, index: usize) -> Option<(&[u8], f64)> {
        match &self.repr {
            Repr::Packed(p) => p.at_rank(index).map(|id| p.get(id)),
            Repr::Full(f) => f.dict.item(index).map(|id| {
                let (m, s) = f.list.get(*id);
                (&m[..], s)
            }),
        }
    }

    /// One step of a SCAN (Redis's cursor semantics): all of a packed set at once.
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&[u8], f64)) -> u64 {
        match &self.repr {
            Repr::Packed(p) => {
                p.iter().for_each(|(m, s)| visit(m, s));
                0
            }
            Repr::Full(f) => f.dict.scan_step(cursor, |id| {
                let (m, s) = f.list.get(*id);
                visit(m, s)
            }),
        }
    }

    /// The skiplist of the large form, for structural checks.
    pub fn index(&self) -> Option<&SkipList> {
        match &self.repr {
            Repr::Packed(_) => None,
            Repr::Full(f) => Some(&f.list),
        }
    }

    /// The node after `before`, or the first when None (a prefix search's last node and the
    /// one a range starts at: one step, not a second search by rank).
    fn after(&self, before: Option<NodeId>) -> Option<NodeId> {
        match before {
            Some(id) => self.next(id),
            None => self.first(),
        }
    }

    fn score_in_range(&self, r: &ScoreRange) -> bool {
        if r.is_empty() {
            return false;
        }
        match (self.last(), self.first()) {
            (Some(l), Some(f)) => r.gte_min(self.get(l).1) && r.lte_max(self.get(f).1),
            _ => false,
        }
    }

    /// The first element in the score range, with its rank.
    pub fn first_in_score(&self, r: &ScoreRange) -> Option<(usize, NodeId)> {
        if !self.score_in_range(r) {
            return None;
        }
        let (k, id) = match &self.repr {
            Repr::Packed(_) => self.scan_forward(|_, s| r.gte_min(s))?,
            Repr::Full(f) => {
                let (k, before) = f.list.prefix(|s, _| !r.gte_min(s));
                (k, self.after(before)?)
            }
        };
        r.lte_max(self.get(id).1).then_some((k, id))
    }

    /// The last element in the score range, with its rank.
    pub fn last_in_score(&self, r: &ScoreRange) -> Option<(usize, NodeId)> {
        if !self.score_in_range(r) {
            return None;
        }
        let (k, id) = match &self.repr {
            Repr::Packed(_) => self.scan_backward(|_, s| r.lte_max(s))?,
            Repr::Full(f) => {
                let (k, id) = f.list.prefix(|s, _| r.lte_max(s));
                (k.checked_sub(1)?, id?)
            }
        };
        r.gte_min(self.get(id).1).then_some((k, id))
    }

    /// The first element from the start that satisfies `stop`, with its rank.
    fn scan_forward(&self, stop: impl Fn(&[u8], f64) -> bool) -> Option<(usize, NodeId)> {
        let mut k = 0;
        let mut cur = self.first();
        while let Some(id) = cur {
            let (m, s) = self.get(id);
            if stop(m, s) {
                return Some((k, id));
            }
            k += 1;
            cur = self.next(id);
        }
        None
    }

    /// The first element from the end that satisfies `stop`, with its rank.
    fn scan_backward(&self, stop: impl Fn(&[u8], f64) -> bool) -> Option<(usize, NodeId)> {
        let mut k = self.len();
        let mut cur = self.last();
        while let Some(id) = cur {
            k -= 1;
            let (m, s) = self.get(id);
            if stop(m, s) {
                return Some((k, id));
            }
            cur = self.prev(id);
        }
        None
    }

    fn lex_in_range(&self, r: &LexRange) -> bool {
        if r.is_empty() {
            return false;
        }
        match (self.last(), self.first()) {
            (Some(l), Some(f)) => r.gte_min(self.get(l).0) && r.lte_max(self.get(f).0),
            _ => false,
        }
    }

    /// The first element in the lex range, with its rank. A packed set is scanned from an
    /// end, as Redis's listpack code does, so even sets whose members have different scores
    /// (where Redis leaves BYLEX results unspecified) answer exactly as Redis does.
    pub fn first_in_lex(&self, r: &LexRange) -> Option<(usize, NodeId)> {
        if !self.lex_in_range(r) {
            return None;
        }
        let (k, id) = match &self.repr {
            Repr::Packed(_) => self.scan_forward(|m, _| r.gte_min(m))?,
            Repr::Full(f) => {
                let (k, before) = f.list.prefix(|_, m| !r.gte_min(m));
                (k, self.after(before)?)
            }
        };
        r.lte_max(self.get(id).0).then_some((k, id))
    }

    /// The last element in the lex range, with its rank.
    pub fn last_in_lex(&self, r: &LexRange) -> Option<(usize, NodeId)> {
        if !self.lex_in_range(r) {
            return None;
        }
        let (k, id) = match &self.repr {
            Repr::Packed(_) => self.scan_backward(|m, _| r.lte_max(m))?,
            Repr::Full(f) => {
                let (k, id) = f.list.prefix(|_, m| r.lte_max(m));
                (k.checked_sub(1)?, id?)
            }
        };
        r.gte_min(self.get(id).0).then_some((k, id))
    }
}

impl PartialEq for ZSetValue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a.0 == b.0 && a.1.to_bits() == b.1.to_bits())
    }
}

impl fmt::Debug for ZSetValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter().map(|(m, s)| (String::from_utf8_lossy(m), s))).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    /// A loaded set built at once equals the same members inserted one by one, in both
    /// encodings; a repeated member or a NaN is refused.
    #[test]
    fn from_members_equals_inserting_one_by_one() {
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        for n in [0usize, 1, 5, 128, 129, 300] {
            let mut members = Vec::new();
            for i in 0..n {
                rng = crate::util::xorshift(rng);
                let score = match rng % 4 {
                    0 => (rng % 7) as f64,
                    1 => -0.0,
                    2 => (rng % 1000) as f64 / 7.0,
                    _ => f64::INFINITY,
                };
                members.push((Bytes::from(format!("m{}", (rng >> 8) % 1000 + i as u64 * 1000)), score));
            }
            let built = ZSetValue::from_members(members.clone(), 128, 64).expect("distinct members");
            let mut one_by_one = ZSetValue::new();
            for (m, s) in &members {
                one_by_one.insert(m, *s, 128, 64);
            }
            assert_eq!(built.encoding(), one_by_one.encoding(), "{n} members");
            let (a, b): (Vec<_>, Vec<_>) = (built.iter().collect(), one_by_one.iter().collect());
            assert_eq!(a, b, "{n} members");
        }
        let dup = vec![(Bytes::from("a"), 1.0), (Bytes::from("b"), 2.0), (Bytes::from("a"), 3.0)];
        assert!(ZSetValue::from_members(dup, 128, 64).is_none());
        assert!(ZSetValue::from_members(vec![(Bytes::from("a"), f64::NAN)], 128, 64).is_none());
    }

    /// Random inserts, score updates and removals against a map: scores, ranks, the index's
    /// dense positions and SCAN agree with the model after every step, and a clone is equal.
    #[test]
    fn the_member_index_follows_the_skiplist_through_updates_and_removals() {
        let mut z = ZSetValue::new_skiplist();
        let mut model: HashMap<Vec<u8>, f64> = HashMap::new();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            rng = crate::util::xorshift(rng);
            rng
        };
        for step in 0..4000 {
            let member = format!("m{}", next() % 300).into_bytes();
            let score = (next() % 50) as f64;
            match (next() % 3, model.get(&member)) {
                (0, Some(_)) => {
                    assert_eq!(z.remove(&member), model.remove(&member), "step {step}");
                }
                (1, Some(_)) => {
                    z.update(&member, score);
                    model.insert(member.clone(), score);
                }
                (_, None) => {
                    z.insert(&member, score, 128, 64);
                    model.insert(member.clone(), score);
                }
                _ => {}
            }
            assert_eq!(z.len(), model.len());
            if step % 97 == 0 {
                z.index().expect("skiplist").check().expect("skiplist invariants");
                for (m, s) in &model {
                    assert_eq!(z.score(m), Some(*s));
                    let rank = z.rank(m).expect("ranked");
                    assert_eq!(z.get(z.at_rank(rank).expect("at rank")).0[..], m[..]);
                }
                let dense: BTreeSet<Vec<u8>> = (0..z.len()).map(|i| z.entry_at(i).expect("dense").0.to_vec()).collect();
                let mut scanned = BTreeSet::new();
                let mut cursor = 0;
                loop {
                    cursor = z.scan_step(cursor, |m, s| {
                        assert_eq!(model.get(m), Some(&s));
                        scanned.insert(m.to_vec());
                    });
                    if cursor == 0 {
                        break;
                    }
                }
                let want: BTreeSet<Vec<u8>> = model.keys().cloned().collect();
                assert_eq!(dense, want);
                assert_eq!(scanned, want);
                let copy = z.clone();
                assert_eq!(copy, z);
                assert_eq!(copy.score(b"m1"), z.score(b"m1"));
            }
        }
    }
}
