//! The ordered index of a sorted set: a skiplist with spans (Redis's `zskiplist`), kept in
//! arrays addressed by `u32` ids instead of pointers.
//!
//! Elements are ordered by score, then by member bytes (memcmp). Every level link carries the
//! number of level-0 steps it skips (its span), so the rank of an element and the element at
//! a rank are found in O(log n) expected time. Callers guarantee that a member is inserted at
//! most once and that scores are never NaN.
//!
//! Layout. A search's cost is its cache misses: a ZADD runs two searches of about thirty node
//! visits each on a 100,000-member set, and each visit loads a node it has not seen. So what a
//! search reads is kept dense, in two places:
//! - level 0 in `hot`, 16 bytes per node (score, next node, upper block);
//! - levels 1 and up in `upper`, one block per node of two levels or more (a quarter of them)
//!   holding a copy of the score, the node id and the links, which point to blocks. A search
//!   walks the upper levels without touching `hot` and drops to level 0 for its last steps.
//!
//! With every part of a node in one 88-byte record (the earlier layout), 100,000 members made
//! 8.8 MB for searches to walk; here they make 1.6 MB at level 0 and about 0.7 MB above it.
//! Members are read on score ties only.

use std::cmp::Ordering;

use crate::db::Key;

const MAX_LEVEL: usize = 32;
const NIL: u32 = u32::MAX;
/// The header's node id and its block in `upper`.
const HEAD: u32 = 0;

/// A node id, valid until the node is removed.
pub type NodeId = u32;

/// An upper link: the forward node's block and the number of level-0 steps it skips. Also
/// the slot type of `upper`'s block headers (see `Block`).
#[derive(Clone, Copy, Debug)]
struct Link {
    forward: u32,
    span: u32,
}

const EMPTY_LINK: Link = Link { forward: NIL, span: 0 };

/// What a level-0 step reads of a node. Level-0 spans are 1 (0 at the end), so not stored.
#[derive(Clone, Copy, Debug)]
struct Hot {
    score: f64,
    next: NodeId,
    /// The node's block in `upper`, NIL for a node of one level.
    up: u32,
}

const EMPTY_HOT: Hot = Hot { score: 0.0, next: NIL, up: NIL };

/// Slot offsets inside a block of `upper`: the score's bits (low and high halves), the node
/// id and the level, then the link of level `i` at `LINKS - 1 + i`.
const SCORE: usize = 0;
const ID: usize = 1;
const LINKS: usize = 2;

/// The skiplist. Node 0 is the header (its block is `upper[0..]`, of MAX_LEVEL levels).
#[derive(Clone, Debug)]
pub struct SkipList {
    hot: Vec<Hot>,
    back: Vec<NodeId>,
    members: Vec<Key>,
    upper: Vec<Link>,
    /// Freed blocks by level, for reuse.
    upper_free: Vec<Vec<u32>>,
    free: Vec<NodeId>,
    level: usize,
    len: usize,
    tail: NodeId,
    rng: u64,
}

impl Default for SkipList {
    fn default() -> Self {
        Self::new()
    }
}

/// Orders `(score, member)` pairs as Redis's skiplist does.
pub fn cmp_entry(s1: f64, m1: &[u8], s2: f64, m2: &[u8]) -> Ordering {
    if s1 < s2 {
        Ordering::Less
    } else if s1 > s2 {
        Ordering::Greater
    } else {
        m1.cmp(m2)
    }
}

impl SkipList {
    pub fn new() -> Self {
        let mut list = SkipList {
            hot: vec![Hot { up: HEAD, ..EMPTY_HOT }],
            back: vec![NIL],
            members: vec![Key::default()],
            upper: Vec::new(),
            upper_free: Vec::new(),
            free: Vec::new(),
            level: 1,
            len: 0,
            tail: NIL,
            rng: 0x9E37_79B9_7F4A_7C15,
        };
        list.alloc_block(HEAD, 0.0, MAX_LEVEL);
        list
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn random_level(&mut self) -> usize {
        let mut level = 1;
        loop {
            self.rng = crate::util::xorshift(self.rng);
            // Each further level with probability 1/4, as ZSKIPLIST_P.
            if level < MAX_LEVEL && self.rng & 3 == 0 {
                level += 1;
            } else {
                return level;
            }
        }
    }

    // --- blocks (levels 1 and up) ---

    #[inline]
    fn block_score(&self, b: u32) -> f64 {
        let s = self.upper[b as usize + SCORE];
        f64::from_bits(u64::from(s.forward) | (u64::from(s.span) << 32))
    }

    fn set_block_score(&mut self, b: u32, score: f64) {
        let bits = score.to_bits();
        self.upper[b as usize + SCORE] = Link { forward: bits as u32, span: (bits >> 32) as u32 };
    }

    #[inline]
    fn block_id(&self, b: u32) -> NodeId {
        self.upper[b as usize + ID].forward
    }

    fn block_level(&self, b: u32) -> usize {
        self.upper[b as usize + ID].span as usize
    }

    /// Block `b`'s link at level `i` (1 <= i < its level).
    #[inline]
    fn link(&self, b: u32, i: usize) -> Link {
        self.upper[b as usize + LINKS - 1 + i]
    }

    fn link_mut(&mut self, b: u32, i: usize) -> &mut Link {
        &mut self.upper[b as usize + LINKS - 1 + i]
    }

    #[inline]
    fn block_before(&self, b: u32, score: f64, member: &[u8]) -> bool {
        let s = self.block_score(b);
        s < score || (s == score && self.members[self.block_id(b) as usize][..] < *member)
    }

    fn alloc_block(&mut self, id: NodeId, score: f64, level: usize) -> u32 {
        let size = LINKS - 1 + level;
        let b = match self.upper_free.get_mut(level).and_then(Vec::pop) {
            Some(b) => {
                self.upper[b as usize..b as usize + size].fill(EMPTY_LINK);
                b
            }
            None => {
                let b = self.upper.len() as u32;
                self.upper.resize(self.upper.len() + size, EMPTY_LINK);
                b
            }
        };
        self.upper[b as usize + ID] = Link { forward: id, span: level as u32 };
        self.set_block_score(b, score);
        b
    }

    fn free_block(&mut self, b: u32) {
        let level = self.block_level(b);
        if self.upper_free.len() <= level {
            self.upper_free.resize_with(level + 1, Vec::new);
        }
        self.upper_free[level].push(b);
    }

    // --- nodes (level 0) ---

    #[inline]
    fn is_before(&self, id: NodeId, score: f64, member: &[u8]) -> bool {
        let s = self.hot[id as usize].score;
        s < score || (s == score && self.members[id as usize][..] < *member)
    }

    /// The member and score of a node.
    pub fn get(&self, id: NodeId) -> (&Key, f64) {
        (&self.members[id as usize], self.hot[id as usize].score)
    }

    pub fn first(&self) -> Option<NodeId> {
        self.next(HEAD)
    }

    pub fn last(&self) -> Option<NodeId> {
        (self.tail != NIL).then_some(self.tail)
    }

    pub fn next(&self, id: NodeId) -> Option<NodeId> {
        let f = self.hot[id as usize].next;
        (f != NIL).then_some(f)
    }

    pub fn prev(&self, id: NodeId) -> Option<NodeId> {
        let b = self.back[id as usize];
        (b != NIL).then_some(b)
    }

    fn alloc(&mut self, score: f64, member: Key, level: usize) -> NodeId {
        let id = match self.free.pop() {
            Some(id) => {
                self.back[id as usize] = NIL;
                self.members[id as usize] = member;
                id
            }
            None => {
                self.hot.push(EMPTY_HOT);
                self.back.push(NIL);
                self.members.push(member);
                (self.hot.len() - 1) as u32
            }
        };
        let up = if level > 1 { self.alloc_block(id, score, level) } else { NIL };
        self.hot[id as usize] = Hot { score, next: NIL, up };
        id
    }

    /// Inserts a member that is not present yet.
    pub fn insert(&mut self, score: f64, member: Key) -> NodeId {
        // update[0] is a node, update[i > 0] a block; rank[i] counts the steps to it.
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0u32; MAX_LEVEL];
        let mut xb = HEAD;
        for i in (1..self.level).rev() {
            rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
            loop {
                let l = self.link(xb, i);
                if l.forward != NIL && self.block_before(l.forward, score, &member) {
                    rank[i] += l.span;
                    xb = l.forward;
                } else {
                    break;
                }
            }
            update[i] = xb;
        }
        let mut x = self.block_id(xb);
        rank[0] = if self.level > 1 { rank[1] } else { 0 };
        loop {
            let f = self.hot[x as usize].next;
            if f != NIL && self.is_before(f, score, &member) {
                rank[0] += 1;
                x = f;
            } else {
                break;
            }
        }
        update[0] = x;
        let level = self.random_level();
        if level > self.level {
            for i in self.level..level {
                rank[i] = 0;
                update[i] = HEAD;
                self.link_mut(HEAD, i).span = self.len as u32;
            }
            self.level = level;
        }
        let id = self.alloc(score, member, level);
        let after = self.hot[x as usize].next;
        self.hot[id as usize].next = after;
        self.hot[x as usize].next = id;
        let nb = self.hot[id as usize].up;
        for i in 1..level {
            let ub = update[i];
            let ulink = self.link(ub, i);
            let moved = rank[0] - rank[i];
            *self.link_mut(nb, i) = Link { forward: ulink.forward, span: ulink.span - moved };
            *self.link_mut(ub, i) = Link { forward: nb, span: moved + 1 };
        }
        for (i, &ub) in update.iter().enumerate().take(self.level).skip(level.max(1)) {
            self.link_mut(ub, i).span += 1;
        }
        self.back[id as usize] = if x == HEAD { NIL } else { x };
        if after != NIL {
            self.back[after as usize] = id;
        } else {
            self.tail = id;
        }
        self.len += 1;
        id
    }

    /// The predecessors of node `id` at every level (as `insert`'s `update`), found by its own
    /// score and member (the search stops at the node itself, so no member is compared at the
    /// end); None when the id is not a linked node.
    fn path_to(&self, id: NodeId) -> Option<[u32; MAX_LEVEL]> {
        let mut update = [HEAD; MAX_LEVEL];
        let me = self.hot.get(id as usize).filter(|_| id != HEAD)?;
        let (score, target_block) = (me.score, me.up);
        let member = &self.members[id as usize];
        let mut xb = HEAD;
        for i in (1..self.level).rev() {
            loop {
                let f = self.link(xb, i).forward;
                if f == NIL || f == target_block || !self.block_before(f, score, member) {
                    break;
                }
                xb = f;
            }
            update[i] = xb;
        }
        let mut x = self.block_id(xb);
        loop {
            let f = self.hot[x as usize].next;
            if f == NIL || f == id || !self.is_before(f, score, member) {
                break;
            }
            x = f;
        }
        update[0] = x;
        (self.hot[x as usize].next == id).then_some(update)
    }

    /// Removes the node `id`; returns its member.
    pub fn remove_node(&mut self, id: NodeId) -> Option<Key> {
        let update = self.path_to(id)?;
        Some(self.unlink(id, &update))
    }

    /// Gives node `id` a new score, as Redis's `zslUpdateScore`: found by a search, it keeps
    /// its place when the new score still falls between its neighbours (read after the search,
    /// when the one behind is in cache), and is unlinked and inserted again otherwise. Returns
    /// the node's id afterwards.
    pub fn update_score(&mut self, id: NodeId, score: f64) -> Option<NodeId> {
        let update = self.path_to(id)?;
        let (back, next) = (self.back[id as usize], self.hot[id as usize].next);
        let fits = (back == NIL || self.hot[back as usize].score < score) && (next == NIL || self.hot[next as usize].score > score);
        if fits {
            self.hot[id as usize].score = score;
            let up = self.hot[id as usize].up;
            if up != NIL {
                self.set_block_score(up, score);
            }
            return Some(id);
        }
        let member = self.unlink(id, &update);
        Some(self.insert(score, member))
    }

    /// Unlinks `target`, whose predecessors are in `update` (from `path_to`).
    fn unlink(&mut self, target: NodeId, update: &[u32; MAX_LEVEL]) -> Key {
        let Hot { next, up: tb, .. } = self.hot[target as usize];
        self.hot[update[0] as usize].next = next;
        for (i, &ub) in update.iter().enumerate().take(self.level).skip(1) {
            let ulink = self.link(ub, i);
            if tb != NIL && ulink.forward == tb {
                let t = self.link(tb, i);
                *self.link_mut(ub, i) = Link { forward: t.forward, span: ulink.span + t.span - 1 };
            } else {
                self.link_mut(ub, i).span -= 1;
            }
        }
        let back = self.back[target as usize];
        if next != NIL {
            self.back[next as usize] = back;
        } else {
            self.tail = back;
        }
        while self.level > 1 && self.link(HEAD, self.level - 1).forward == NIL {
            self.level -= 1;
        }
        self.len -= 1;
        if tb != NIL {
            self.free_block(tb);
        }
        self.hot[target as usize] = EMPTY_HOT;
        self.back[target as usize] = NIL;
        let member = std::mem::take(&mut self.members[target as usize]);
        self.free.push(target);
        if self.len == 0 {
            // Give the arrays back when the list empties; the header keeps its block.
            self.hot.truncate(1);
            self.back.truncate(1);
            self.members.truncate(1);
            self.upper.truncate(LINKS - 1 + MAX_LEVEL);
            self.upper_free.clear();
            self.free.clear();
        }
        member
    }

    /// The 0-based rank of `(score, member)`, if present.
    pub fn rank(&self, score: f64, member: &[u8]) -> Option<usize> {
        let (count, last) = self.prefix(|s, m| cmp_entry(s, m, score, member) != Ordering::Greater);
        let (m, s) = self.get(last?);
        (s == score && m[..] == *member).then(|| count - 1)
    }

    /// The node at 0-based `rank`.
    pub fn at_rank(&self, rank: usize) -> Option<NodeId> {
        if rank >= self.len {
            return None;
        }
        let target = rank + 1;
        let mut xb = HEAD;
        let mut traversed = 0usize;
        for i in (1..self.level).rev() {
            loop {
                let link = self.link(xb, i);
                if link.forward != NIL && traversed + link.span as usize <= target {
                    traversed += link.span as usize;
                    xb = link.forward;
                } else {
                    break;
                }
            }
            if traversed == target {
                return Some(self.block_id(xb));
            }
        }
        let mut x = self.block_id(xb);
        while traversed < target {
            x = self.hot[x as usize].next;
            if x == NIL {
                return None;
            }
            traversed += 1;
        }
        Some(x)
    }

    /// Descends like Redis's range searches: the number of leading elements for which
    /// `before(score, member)` holds, assuming it holds on a prefix of the list (on other
    /// inputs the answer depends on the list's shape, as in Redis), and the last of them.
    pub fn prefix(&self, mut before: impl FnMut(f64, &[u8]) -> bool) -> (usize, Option<NodeId>) {
        let mut xb = HEAD;
        let mut count = 0usize;
        for i in (1..self.level).rev() {
            loop {
                let link = self.link(xb, i);
                if link.forward == NIL || !before(self.block_score(link.forward), &self.members[self.block_id(link.forward) as usize]) {
                    break;
                }
                count += link.span as usize;
                xb = link.forward;
            }
        }
        let mut x = self.block_id(xb);
        while let Some(f) = self.next(x) {
            let (m, s) = self.get(f);
            if !before(s, m) {
                break;
            }
            count += 1;
            x = f;
        }
        (count, (x != HEAD).then_some(x))
    }

    /// Every `(member, score)` in order.
    pub fn iter(&self) -> impl Iterator<Item = (&Key, f64)> + '_ {
        let mut cur = self.first();
        std::iter::from_fn(move || {
            let id = cur?;
            cur = self.next(id);
            Some(self.get(id))
        })
    }

    /// Checks the structure's invariants (order, back links, tail, spans, the blocks' copies
    /// of scores and ids); for tests.
    pub fn check(&self) -> Result<(), String> {
        let mut ranks = std::collections::HashMap::new();
        ranks.insert(HEAD, 0usize);
        let mut x = self.hot[HEAD as usize].next;
        let mut prev = NIL;
        let mut r = 1usize;
        while x != NIL {
            let (m, s) = self.get(x);
            if self.back[x as usize] != prev {
                return Err(format!("bad backward link at rank {r}"));
            }
            if prev != NIL {
                let (pm, ps) = self.get(prev);
                if cmp_entry(ps, pm, s, m) != Ordering::Less {
                    return Err(format!("out of order at rank {r}"));
                }
            }
            let up = self.hot[x as usize].up;
            if up != NIL && (self.block_id(up) != x || self.block_score(up).to_bits() != s.to_bits()) {
                return Err(format!("block out of step with its node at rank {r}"));
            }
            ranks.insert(x, r);
            prev = x;
            x = self.hot[x as usize].next;
            r += 1;
        }
        if r - 1 != self.len || self.tail != prev {
            return Err("bad length or tail".into());
        }
        for i in 1..self.level {
            let mut xb = HEAD;
            let mut at = 0usize;
            loop {
                let link = self.link(xb, i);
                if link.forward == NIL {
                    if link.span as usize != self.len - at {
                        return Err(format!("bad span to the end at level {i}"));
                    }
                    break;
                }
                let node = self.block_id(link.forward);
                if self.block_level(link.forward) <= i || self.hot[node as usize].up != link.forward {
                    return Err(format!("link to a bad block at level {i}"));
                }
                let next_rank = ranks.get(&node).ok_or("link to an unlinked node")?;
                if next_rank - at != link.span as usize {
                    return Err(format!("bad span at level {i}"));
                }
                at = *next_rank;
                xb = link.forward;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random inserts, removals and in-place rescoring against a sorted model, with enough
    /// nodes for some to have more than four levels (one in 256) and an emptying in the
    /// middle (the arena is given back, the header keeps its upper links).
    #[test]
    fn matches_a_sorted_model_through_random_changes() {
        let mut list = SkipList::new();
        let mut model: std::collections::BTreeMap<Vec<u8>, (f64, NodeId)> = std::collections::BTreeMap::new();
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            rng = crate::util::xorshift(rng);
            rng
        };
        for round in 0..2 {
            for step in 0..20_000u32 {
                let member = format!("m{}", next() % 6000).into_bytes();
                // Few distinct scores, so ties are ordered by member.
                let score = (next() % 500) as f64;
                match model.get(&member).copied() {
                    None => {
                        let id = list.insert(score, Key::copy_from(&member));
                        model.insert(member, (score, id));
                    }
                    Some((_, id)) if step % 3 == 0 => {
                        assert_eq!(list.remove_node(id).as_deref(), Some(&member[..]));
                        model.remove(&member);
                    }
                    Some((_, id)) => {
                        let id = list.update_score(id, score).unwrap();
                        model.insert(member, (score, id));
                    }
                }
            }
            list.check().unwrap();
            let mut sorted: Vec<(f64, Vec<u8>)> = model.iter().map(|(m, (s, _))| (*s, m.clone())).collect();
            sorted.sort_by(|a, b| cmp_entry(a.0, &a.1, b.0, &b.1));
            let got: Vec<(f64, Vec<u8>)> = list.iter().map(|(m, s)| (s, m.to_vec())).collect();
            assert_eq!(got, sorted);
            assert!(list.level > 4, "no node of more than four levels was made");
            for (rank, (score, member)) in sorted.iter().enumerate().step_by(97) {
                assert_eq!(list.rank(*score, member), Some(rank));
                assert_eq!(list.at_rank(rank).map(|id| list.get(id).0.to_vec()), Some(member.clone()));
                assert_eq!(list.rank(*score, b"absent"), None);
            }
            // Range searches: the count of elements below a score, and the last of them.
            for limit in (0..=500).step_by(7) {
                let below = sorted.iter().filter(|(s, _)| *s < limit as f64).count();
                let (count, last) = list.prefix(|s, _| s < limit as f64);
                assert_eq!(count, below);
                assert_eq!(last.map(|id| list.get(id).0.to_vec()), below.checked_sub(1).map(|i| sorted[i].1.clone()));
            }
            assert_eq!(list.at_rank(sorted.len()), None);
            if round == 0 {
                for (_, (_, id)) in std::mem::take(&mut model) {
                    list.remove_node(id);
                }
                assert!(list.is_empty());
                assert_eq!((list.hot.len(), list.members.len(), list.upper.len()), (1, 1, LINKS - 1 + MAX_LEVEL));
                list.check().unwrap();
            }
        }
    }
}
