//! The ordered index of a sorted set: a skiplist with spans (Redis's `zskiplist`), kept in an
//! arena of nodes addressed by `u32` ids instead of pointers.
//!
//! Elements are ordered by score, then by member bytes (memcmp). Every level link carries the
//! number of level-0 steps it skips (its span), so the rank of an element and the element at
//! a rank are found in O(log n) expected time. Callers guarantee that a member is inserted at
//! most once and that scores are never NaN.

use std::cmp::Ordering;

use bytes::Bytes;

const MAX_LEVEL: usize = 32;
const NIL: u32 = u32::MAX;
const HEAD: u32 = 0;

/// A node id, valid until the node is removed.
pub type NodeId = u32;

#[derive(Clone, Copy, Debug)]
struct Link {
    forward: u32,
    span: u32,
}

/// In this order (`repr(C)`): a search reads a node's score and then its links, so both sit
/// at the front, in the same cache line most of the time; the member is read on score ties.
#[derive(Clone, Debug)]
#[repr(C)]
struct Node {
    score: f64,
    links: Links,
    backward: u32,
    member: Bytes,
}

/// A node's forward links. All but one node in 256 have at most four levels, so those live
/// inside the node: a search then touches one cache line per node visited, as in Redis's
/// node with its flexible level array. (With two inline levels, the taller nodes a search
/// visits first each cost a second cache miss, and ZADD ran at 0.72 of Redis.)
const INLINE_LEVELS: usize = 4;

#[derive(Clone, Debug)]
enum Links {
    Inline([Link; INLINE_LEVELS]),
    Heap(Vec<Link>),
}

impl Links {
    fn new(level: usize) -> Links {
        let empty = Link { forward: NIL, span: 0 };
        if level <= INLINE_LEVELS {
            Links::Inline([empty; INLINE_LEVELS])
        } else {
            Links::Heap(vec![empty; level])
        }
    }
}

impl std::ops::Index<usize> for Links {
    type Output = Link;

    fn index(&self, i: usize) -> &Link {
        match self {
            Links::Inline(a) => &a[i],
            Links::Heap(v) => &v[i],
        }
    }
}

impl std::ops::IndexMut<usize> for Links {
    fn index_mut(&mut self, i: usize) -> &mut Link {
        match self {
            Links::Inline(a) => &mut a[i],
            Links::Heap(v) => &mut v[i],
        }
    }
}

/// The skiplist. Node 0 is the header.
#[derive(Clone, Debug)]
pub struct SkipList {
    nodes: Vec<Node>,
    free: Vec<u32>,
    level: usize,
    len: usize,
    tail: u32,
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
        let head = Node { member: Bytes::new(), score: 0.0, backward: NIL, links: Links::new(MAX_LEVEL) };
        SkipList { nodes: vec![head], free: Vec::new(), level: 1, len: 0, tail: NIL, rng: 0x9E37_79B9_7F4A_7C15 }
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

    fn fwd(&self, x: u32, i: usize) -> u32 {
        self.nodes[x as usize].links[i].forward
    }

    fn is_before(&self, id: u32, score: f64, member: &[u8]) -> bool {
        let n = &self.nodes[id as usize];
        cmp_entry(n.score, &n.member, score, member) == Ordering::Less
    }

    /// The member and score of a node.
    pub fn get(&self, id: NodeId) -> (&Bytes, f64) {
        let n = &self.nodes[id as usize];
        (&n.member, n.score)
    }

    pub fn first(&self) -> Option<NodeId> {
        let f = self.fwd(HEAD, 0);
        (f != NIL).then_some(f)
    }

    pub fn last(&self) -> Option<NodeId> {
        (self.tail != NIL).then_some(self.tail)
    }

    pub fn next(&self, id: NodeId) -> Option<NodeId> {
        let f = self.fwd(id, 0);
        (f != NIL).then_some(f)
    }

    pub fn prev(&self, id: NodeId) -> Option<NodeId> {
        let b = self.nodes[id as usize].backward;
        (b != NIL).then_some(b)
    }

    fn alloc(&mut self, node: Node) -> u32 {
        match self.free.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    /// Inserts a member that is not present yet.
    pub fn insert(&mut self, score: f64, member: Bytes) -> NodeId {
        let mut update = [HEAD; MAX_LEVEL];
        let mut rank = [0u32; MAX_LEVEL];
        let mut x = HEAD;
        for i in (0..self.level).rev() {
            rank[i] = if i == self.level - 1 { 0 } else { rank[i + 1] };
            loop {
                let f = self.fwd(x, i);
                if f != NIL && self.is_before(f, score, &member) {
                    rank[i] += self.nodes[x as usize].links[i].span;
                    x = f;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        let level = self.random_level();
        if level > self.level {
            for i in self.level..level {
                rank[i] = 0;
                update[i] = HEAD;
                self.nodes[HEAD as usize].links[i].span = self.len as u32;
            }
            self.level = level;
        }
        let id = self.alloc(Node { member, score, backward: NIL, links: Links::new(level) });
        for i in 0..level {
            let u = update[i] as usize;
            let ulink = self.nodes[u].links[i];
            let moved = rank[0] - rank[i];
            self.nodes[id as usize].links[i] = Link { forward: ulink.forward, span: ulink.span - moved };
            self.nodes[u].links[i] = Link { forward: id, span: moved + 1 };
        }
        for (i, &u) in update.iter().enumerate().take(self.level).skip(level) {
            self.nodes[u as usize].links[i].span += 1;
        }
        self.nodes[id as usize].backward = if update[0] == HEAD { NIL } else { update[0] };
        let f = self.fwd(id, 0);
        if f != NIL {
            self.nodes[f as usize].backward = id;
        } else {
            self.tail = id;
        }
        self.len += 1;
        id
    }

    /// The predecessors of node `id` at every level, found by its own score and member (the
    /// search stops at the node itself, so no member is compared at the end); None when the
    /// id is not a linked node.
    fn path_to(&self, id: NodeId) -> Option<[u32; MAX_LEVEL]> {
        let mut update = [HEAD; MAX_LEVEL];
        let mut x = HEAD;
        let me = self.nodes.get(id as usize)?;
        for i in (0..self.level).rev() {
            loop {
                let f = self.fwd(x, i);
                if f == NIL || f == id {
                    break;
                }
                let n = &self.nodes[f as usize];
                if cmp_entry(n.score, &n.member, me.score, &me.member) == Ordering::Less {
                    x = f;
                } else {
                    break;
                }
            }
            update[i] = x;
        }
        (self.fwd(x, 0) == id).then_some(update)
    }

    /// Removes the node `id`; returns its member.
    pub fn remove_node(&mut self, id: NodeId) -> Option<Bytes> {
        let update = self.path_to(id)?;
        Some(self.unlink(id, &update))
    }

    /// Gives node `id` a new score, as Redis's `zslUpdateScore`: found by a search, it keeps
    /// its place when the new score still falls between its neighbours (read after the search,
    /// when the one behind is in cache), and is unlinked and inserted again otherwise. Returns
    /// the node's id afterwards.
    pub fn update_score(&mut self, id: NodeId, score: f64) -> Option<NodeId> {
        let update = self.path_to(id)?;
        let n = &self.nodes[id as usize];
        let (back, next) = (n.backward, n.links[0].forward);
        let fits = (back == NIL || self.nodes[back as usize].score < score) && (next == NIL || self.nodes[next as usize].score > score);
        if fits {
            self.nodes[id as usize].score = score;
            return Some(id);
        }
        let member = self.unlink(id, &update);
        Some(self.insert(score, member))
    }

    /// Unlinks `target`, whose predecessor at each level is in `update`.
    fn unlink(&mut self, target: u32, update: &[u32; MAX_LEVEL]) -> Bytes {
        for (i, &u) in update.iter().enumerate().take(self.level) {
            let u = u as usize;
            if self.nodes[u].links[i].forward == target {
                let t = self.nodes[target as usize].links[i];
                self.nodes[u].links[i] = Link { forward: t.forward, span: self.nodes[u].links[i].span + t.span - 1 };
            } else {
                self.nodes[u].links[i].span -= 1;
            }
        }
        let f = self.fwd(target, 0);
        let back = self.nodes[target as usize].backward;
        if f != NIL {
            self.nodes[f as usize].backward = back;
        } else {
            self.tail = back;
        }
        while self.level > 1 && self.fwd(HEAD, self.level - 1) == NIL {
            self.level -= 1;
        }
        self.len -= 1;
        let node = std::mem::replace(
            &mut self.nodes[target as usize],
            Node { member: Bytes::new(), score: 0.0, backward: NIL, links: Links::new(0) },
        );
        self.free.push(target);
        if self.len == 0 {
            // Give the arena back when the list empties.
            self.nodes.truncate(1);
            self.free.clear();
        }
        node.member
    }

    /// The 0-based rank of `(score, member)`, if present.
    pub fn rank(&self, score: f64, member: &[u8]) -> Option<usize> {
        let mut x = HEAD;
        let mut rank = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let f = self.fwd(x, i);
                if f == NIL {
                    break;
                }
                let n = &self.nodes[f as usize];
                if cmp_entry(n.score, &n.member, score, member) != Ordering::Greater {
                    rank += self.nodes[x as usize].links[i].span as usize;
                    x = f;
                } else {
                    break;
                }
            }
            if x != HEAD {
                let n = &self.nodes[x as usize];
                if n.score == score && n.member == member {
                    return Some(rank - 1);
                }
            }
        }
        None
    }

    /// The node at 0-based `rank`.
    pub fn at_rank(&self, rank: usize) -> Option<NodeId> {
        if rank >= self.len {
            return None;
        }
        let target = rank + 1;
        let mut x = HEAD;
        let mut traversed = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let link = self.nodes[x as usize].links[i];
                if link.forward != NIL && traversed + link.span as usize <= target {
                    traversed += link.span as usize;
                    x = link.forward;
                } else {
                    break;
                }
            }
            if traversed == target {
                return Some(x);
            }
        }
        None
    }

    /// Descends like Redis's range searches: the number of leading elements for which
    /// `before(score, member)` holds, assuming it holds on a prefix of the list (on other
    /// inputs the answer depends on the list's shape, as in Redis), and the last of them.
    pub fn prefix(&self, mut before: impl FnMut(f64, &[u8]) -> bool) -> (usize, Option<NodeId>) {
        let mut x = HEAD;
        let mut count = 0usize;
        for i in (0..self.level).rev() {
            loop {
                let link = self.nodes[x as usize].links[i];
                if link.forward == NIL {
                    break;
                }
                let n = &self.nodes[link.forward as usize];
                if before(n.score, &n.member) {
                    count += link.span as usize;
                    x = link.forward;
                } else {
                    break;
                }
            }
        }
        (count, (x != HEAD).then_some(x))
    }

    /// Every `(member, score)` in order.
    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, f64)> + '_ {
        let mut cur = self.first();
        std::iter::from_fn(move || {
            let id = cur?;
            cur = self.next(id);
            Some(self.get(id))
        })
    }

    /// Checks the structure's invariants (order, back links, tail, spans); for tests.
    pub fn check(&self) -> Result<(), String> {
        let mut ranks = std::collections::HashMap::new();
        let mut x = self.fwd(HEAD, 0);
        let mut prev = NIL;
        let mut r = 1usize;
        while x != NIL {
            let n = &self.nodes[x as usize];
            if n.backward != prev {
                return Err(format!("bad backward link at rank {r}"));
            }
            if prev != NIL {
                let p = &self.nodes[prev as usize];
                if cmp_entry(p.score, &p.member, n.score, &n.member) != Ordering::Less {
                    return Err(format!("out of order at rank {r}"));
                }
            }
            ranks.insert(x, r);
            prev = x;
            x = n.links[0].forward;
            r += 1;
        }
        if r - 1 != self.len || self.tail != prev {
            return Err("bad length or tail".into());
        }
        for i in 0..self.level {
            let mut x = HEAD;
            let mut at = 0usize;
            loop {
                let link = self.nodes[x as usize].links[i];
                if link.forward == NIL {
                    if link.span as usize != self.len - at {
                        return Err(format!("bad span to the end at level {i}"));
                    }
                    break;
                }
                let next_rank = ranks[&link.forward];
                if next_rank - at != link.span as usize {
                    return Err(format!("bad span at level {i}"));
                }
                at = next_rank;
                x = link.forward;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random inserts, removals and in-place rescoring against a sorted model, with enough
    /// nodes for some to be taller than the inline levels (one in 256) and an emptying in the
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
                        let id = list.insert(score, Bytes::from(member.clone()));
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
            assert!(list.level > INLINE_LEVELS, "no node taller than the inline levels was made");
            for (rank, (score, member)) in sorted.iter().enumerate().step_by(97) {
                assert_eq!(list.rank(*score, member), Some(rank));
                assert_eq!(list.at_rank(rank).map(|id| list.get(id).0.to_vec()), Some(member.clone()));
            }
            if round == 0 {
                for (_, (_, id)) in std::mem::take(&mut model) {
                    list.remove_node(id);
                }
                assert!(list.is_empty());
                assert_eq!(list.nodes.len(), 1);
                list.check().unwrap();
            }
        }
    }
}
