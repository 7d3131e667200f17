//! The list value type: elements packed back to back in chunks of up to 8 KB (Redis's
//! quicklist of listpacks, `list-max-listpack-size -2`), with a running memory estimate.
//! A `VecDeque` of `Bytes` cost 48.8 bytes of memory per 3-byte element (a 32-byte handle and
//! an allocation each) against Redis's 5.3; a chunk costs the element's bytes and a 2-byte end
//! offset, or sealed (see [`Chunk`]) a length byte and an eighth of a start. Push and pop at both ends are O(1): a chunk grown by pushes at the head stores its
//! elements in reverse, and a pop at a chunk's physical start only moves its `start`. Access
//! by index walks the chunks (O(n / chunk)), as Redis's does. Redis 7.0 reports every list as
//! `quicklist` (the `listpack` list encoding only arrived in 7.2), whatever its size.

use std::fmt;

use bytes::Bytes;

use super::list_chunks::Chunks;
use super::list_pack::{Chunk, CHUNK_BYTES};

/// Estimated bytes of bookkeeping per element (its end offset and the buffers' slack) and
/// per chunk (its buffers' headers and the deque's slot).
const ITEM_OVERHEAD: usize = 2;
const CHUNK_OVERHEAD: usize = 96;

/// A change to one chunk's elements (see `ListValue::rebuild_chunk`).
enum Edit<'a> {
    Set(usize, &'a [u8]),
    Insert(usize, &'a [u8]),
    Remove(usize),
}

/// A list value. `bytes` (the elements' total length) is kept up to date by every mutation so
/// memory accounting is O(1).
#[derive(Clone, Default)]
pub struct ListValue {
    chunks: Chunks<Chunk>,
    len: usize,
    bytes: usize,
}

impl PartialEq for ListValue {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl fmt::Debug for ListValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter().map(Bytes::copy_from_slice)).finish()
    }
}

/// The elements of a list from one position to another, in order (both ways).
pub struct Iter<'a> {
    inner: Box<dyn DoubleEndedIterator<Item = &'a [u8]> + 'a>,
    left: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        self.inner.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        self.inner.next_back()
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl ListValue {
    pub fn new() -> Self {
        Self::default()
    }

    /// The name OBJECT ENCODING reports (always `quicklist` in Redis 7.0).
    pub fn encoding(&self) -> &'static str {
        "quicklist"
    }

    /// Approximate heap bytes held (O(1)).
    pub fn mem_usage(&self) -> usize {
        self.bytes + self.len * ITEM_OVERHEAD + self.chunks.len() * CHUNK_OVERHEAD
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push_front(&mut self, item: Bytes) {
        self.push(true, &item);
    }

    pub fn push_back(&mut self, item: Bytes) {
        self.push(false, &item);
    }

    fn push(&mut self, front: bool, item: &[u8]) {
        let end = if front { self.chunks.front_mut() } else { self.chunks.back_mut() };
        match end {
            // A head chunk grows reversed, a tail chunk in order: either way by an append.
            Some(c) if c.reversed == front && c.fits(item) => c.push_phys(item),
            sealed => {
                // A chunk no longer pushed to gives back its buffers' growth slack: copied
                // to one buffer of its size (mimalloc keeps a block shrunk by less than half
                // where it is, slack included).
                // The next chunk is given the full one's sizes at once: grown by doubling,
                // its buffers left freed blocks of every size class behind, 2 bytes per
                // element of resident memory (1M elements of 14 bytes: 18.9 -> 16.8 B).
                let mut next = Chunk { reversed: front, ..Chunk::default() };
                // Only after a chunk of several elements filled by pushes at this same end: a
                // chunk of one large element, or the other end's, says nothing of what comes.
                if let Some(c) = sealed {
                    if c.reversed == front && c.count() > 1 && c.data_len() + 2 * c.count() > CHUNK_BYTES / 2 {
                        next.data = Vec::with_capacity(c.data_len().min(CHUNK_BYTES));
                        next.ends = Vec::with_capacity(c.count().min(CHUNK_BYTES));
                    }
                    c.seal();
                }
                let mut c = next;
                c.push_phys(item);
                if front {
                    self.chunks.push_front(c);
                } else {
                    self.chunks.push_back(c);
                }
            }
        }
        self.len += 1;
        self.bytes += item.len();
    }

    pub fn pop_front(&mut self) -> Option<Bytes> {
        let item = Bytes::copy_from_slice(self.chunks.front()?.get(0));
        self.drop_end(true);
        Some(item)
    }

    pub fn pop_back(&mut self) -> Option<Bytes> {
        let c = self.chunks.back()?;
        let item = Bytes::copy_from_slice(c.get(c.len() - 1));
        self.drop_end(false);
        Some(item)
    }

    /// Drops the first (`front`) or last element, if any.
    fn drop_end(&mut self, front: bool) {
        let end = if front { self.chunks.front_mut() } else { self.chunks.back_mut() };
        let Some(c) = end else { return };
        let n = c.drop_end(front);
        if c.len() == 0 {
            if front {
                self.chunks.pop_front();
            } else {
                self.chunks.pop_back();
            }
        }
        self.len -= 1;
        self.bytes -= n;
    }

    /// The chunk holding element `index` and the element's position in it; walks from the
    /// nearer end.
    fn locate(&self, index: usize) -> Option<(usize, usize)> {
        if index >= self.len {
            return None;
        }
        if index < self.len / 2 {
            let mut i = index;
            for (ci, c) in self.chunks.iter().enumerate() {
                if i < c.len() {
                    return Some((ci, i));
                }
                i -= c.len();
            }
        } else {
            let mut from_end = self.len - 1 - index;
            for (ci, c) in self.chunks.iter().enumerate().rev() {
                if from_end < c.len() {
                    return Some((ci, c.len() - 1 - from_end));
                }
                from_end -= c.len();
            }
        }
        None
    }

    pub fn get(&self, index: usize) -> Option<&[u8]> {
        let (ci, i) = self.locate(index)?;
        Some(self.chunks[ci].get(i))
    }

    /// Rebuilds chunk `ci` with `edit` applied (one chunk's work), split into half-full chunks
    /// when it outgrows one, dropped when it ends empty.
    fn rebuild_chunk(&mut self, ci: usize, edit: Edit<'_>) {
        let old = std::mem::take(&mut self.chunks[ci]);
        let mut items: Vec<&[u8]> = old.iter().collect();
        match edit {
            Edit::Set(i, item) => items[i] = item,
            Edit::Insert(i, item) => items.insert(i, item),
            Edit::Remove(i) => {
                items.remove(i);
            }
        }
        // The chunk keeps its orientation: a head chunk rebuilt in order would make the next
        // LPUSH start a chunk of its own (LPUSH then LSET 0, repeated, one chunk per element).
        let reversed = old.reversed;
        let blank = || Chunk { reversed, ..Chunk::default() };
        // A chunk that overflows is split into half-full ones, so that the next insertions
        // there find room instead of each pushing one element into a chunk of its own.
        let size: usize = items.iter().map(|i| i.len() + 4).sum();
        let limit = if size <= CHUNK_BYTES { CHUNK_BYTES } else { CHUNK_BYTES / 2 };
        let mut fresh = Vec::new();
        let mut c = blank();
        let physical: Box<dyn Iterator<Item = &[u8]>> =
            if reversed { Box::new(items.into_iter().rev()) } else { Box::new(items.into_iter()) };
        for item in physical {
            if !c.fits_within(item, limit) {
                fresh.push(std::mem::replace(&mut c, blank()));
            }
            c.push_phys(item);
        }
        if c.count() > 0 {
            fresh.push(c);
        }
        if reversed {
            fresh.reverse();
        }
        self.chunks.remove(ci);
        for (k, c) in fresh.into_iter().enumerate() {
            self.chunks.insert(ci + k, c);
        }
    }

    /// Replaces the element at `index`; false if out of range.
    pub fn set(&mut self, index: usize, item: Bytes) -> bool {
        let Some((ci, i)) = self.locate(index) else { return false };
        let old_len = self.chunks[ci].get(i).len();
        self.rebuild_chunk(ci, Edit::Set(i, &item));
        self.bytes = self.bytes - old_len + item.len();
        true
    }

    /// Inserts `item` before position `index` (`index == len` appends).
    pub fn insert(&mut self, index: usize, item: Bytes) {
        if index >= self.len {
            return self.push_back(item);
        }
        if index == 0 {
            return self.push_front(item);
        }
        let Some((ci, i)) = self.locate(index) else { return };
        self.rebuild_chunk(ci, Edit::Insert(i, &item));
        self.len += 1;
        self.bytes += item.len();
    }

    /// Removes the element at `index`.
    pub fn remove(&mut self, index: usize) -> Option<Bytes> {
        if index == 0 {
            return self.pop_front();
        }
        if index.saturating_add(1) == self.len {
            return self.pop_back();
        }
        let (ci, i) = self.locate(index)?;
        let item = Bytes::copy_from_slice(self.chunks[ci].get(i));
        self.rebuild_chunk(ci, Edit::Remove(i));
        self.len -= 1;
        self.bytes -= item.len();
        Some(item)
    }

    /// Keeps only the elements at `start..end` (clamped to the list): O(elements removed).
    pub fn keep_range(&mut self, start: usize, end: usize) {
        let end = end.min(self.len);
        let start = start.min(end);
        for _ in end..self.len {
            self.drop_end(false);
        }
        for _ in 0..start {
            self.drop_end(true);
        }
    }

    /// Keeps the elements for which `keep` is true (in order).
    pub fn retain(&mut self, mut keep: impl FnMut(usize, &[u8]) -> bool) {
        let mut kept = ListValue::new();
        for (i, item) in self.iter().enumerate() {
            if keep(i, item) {
                kept.push(false, item);
            }
        }
        *self = kept;
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter { inner: Box::new(self.chunks.iter().flat_map(Chunk::iter)), left: self.len }
    }

    /// Calls `f` on the elements at positions `start..=end` in order (both within the list),
    /// a plain loop over the chunks' offsets: LRANGE's path.
    fn for_each_in(&self, start: usize, end: usize, mut f: impl FnMut(&[u8])) {
        let Some((mut ci, mut i)) = self.locate(start) else { return };
        let mut left = end.saturating_add(1).saturating_sub(start).min(self.len - start);
        while left > 0 {
            let Some(c) = self.chunks.get(ci) else { return };
            let take = (c.len() - i).min(left);
            if c.reversed {
                let top = c.count() - i;
                c.visit_phys(top - take, top, false, &mut f);
            } else {
                let first = c.start as usize + i;
                c.visit_phys(first, first + take, true, &mut f);
            }
            left -= take;
            ci += 1;
            i = 0;
        }
    }

    /// Copies of the elements at positions `start..=end` for a reply: slices of one buffer
    /// (two allocations in all, where a copy each cost one per element).
    pub fn range_bytes(&self, start: usize, end: usize) -> impl ExactSizeIterator<Item = Bytes> {
        let mut buf = Vec::new();
        let mut lens = Vec::new();
        self.for_each_in(start, end, |item| {
            buf.extend_from_slice(item);
            lens.push(item.len());
        });
        let all = Bytes::from(buf);
        let mut at = 0;
        lens.into_iter().map(move |n| {
            at += n;
            all.slice(at - n..at)
        })
    }

    /// The elements at positions `start..=end` (both within the list; none otherwise).
    pub fn range(&self, start: usize, end: usize) -> Iter<'_> {
        let (Some((ci, i)), Some((cj, j))) = (self.locate(start), self.locate(end)) else {
            return Iter { inner: Box::new(std::iter::empty()), left: 0 };
        };
        if end < start {
            return Iter { inner: Box::new(std::iter::empty()), left: 0 };
        }
        let inner: Box<dyn DoubleEndedIterator<Item = &[u8]> + '_> = if ci == cj {
            Box::new(self.chunks[ci].iter_range(i, j + 1))
        } else {
            let first = self.chunks[ci].iter_range(i, self.chunks[ci].len());
            let middle = self.chunks.range(ci + 1..cj).flat_map(Chunk::iter);
            let last = self.chunks[cj].iter_range(0, j + 1);
            Box::new(first.chain(middle).chain(last))
        };
        Iter { inner, left: end - start + 1 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    fn items(l: &ListValue) -> Vec<Vec<u8>> {
        l.iter().map(|b| b.to_vec()).collect()
    }

    #[test]
    fn sealed_chunks_behave_as_open_ones() {
        // Random pushes, pops and edits at both ends and inside, against a VecDeque; enough
        // elements that many chunks are sealed, with large elements among them.
        let (mut l, mut model) = (ListValue::new(), VecDeque::<Vec<u8>>::new());
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            x = crate::util::xorshift(x);
            x
        };
        for round in 0..20_000 {
            let r = next();
            let len = match r % 97 {
                0 => 9000,
                1..=6 => 256 + (r >> 8) as usize % 300,
                _ => (r >> 8) as usize % 40,
            };
            let item: Vec<u8> = (0..len).map(|i| (i as u64 + r) as u8).collect();
            match r % 11 {
                0..=2 => {
                    l.push_back(Bytes::from(item.clone()));
                    model.push_back(item);
                }
                3..=5 => {
                    l.push_front(Bytes::from(item.clone()));
                    model.push_front(item);
                }
                6 => assert_eq!(l.pop_back().map(|b| b.to_vec()), model.pop_back()),
                7 => assert_eq!(l.pop_front().map(|b| b.to_vec()), model.pop_front()),
                8 if !model.is_empty() => {
                    let i = (r >> 16) as usize % model.len();
                    assert!(l.set(i, Bytes::from(item.clone())));
                    model[i] = item;
                }
                9 if !model.is_empty() => {
                    let i = (r >> 16) as usize % model.len();
                    l.insert(i, Bytes::from(item.clone()));
                    model.insert(i, item);
                }
                _ if !model.is_empty() => {
                    let i = (r >> 16) as usize % model.len();
                    assert_eq!(l.remove(i).map(|b| b.to_vec()), model.remove(i));
                }
                _ => {}
            }
            if round % 1000 == 0 {
                assert_eq!(items(&l), model.iter().cloned().collect::<Vec<_>>());
                let n = model.len();
                if n > 2 {
                    let got: Vec<Vec<u8>> = l.range(1, n - 2).map(|b| b.to_vec()).collect();
                    assert_eq!(got, model.iter().skip(1).take(n - 2).cloned().collect::<Vec<_>>());
                }
            }
        }
        assert!(l.chunks.iter().any(|c| c.sealed > 0 && c.narrow), "no chunk was sealed narrow");
        assert!(l.chunks.iter().any(|c| c.sealed > 0 && !c.narrow), "no chunk was sealed wide");
        assert_eq!(items(&l), model.into_iter().collect::<Vec<_>>());
    }

    /// The chunk after a full one is sized like it, never after a single large element or a
    /// chunk of the other end.
    #[test]
    fn a_new_chunk_is_presized_only_after_a_full_one() {
        let mut big = ListValue::new();
        big.push_back(Bytes::from(vec![b'x'; 100_000]));
        big.push_back(Bytes::from_static(b"a"));
        assert!(big.chunks.back().is_some_and(|c| c.data.capacity() < 1024), "sized after one large element");
        let mut other = ListValue::new();
        for _ in 0..500 {
            other.push_back(Bytes::from_static(b"0123456789"));
        }
        other.push_front(Bytes::from_static(b"x"));
        assert!(other.chunks.front().is_some_and(|c| c.data.capacity() < 1024), "sized after the other end's chunk");
        let mut full = ListValue::new();
        for _ in 0..2000 {
            full.push_back(Bytes::from_static(b"0123456789"));
        }
        assert!(full.chunks.back().is_some_and(|c| c.data.capacity() >= 4096), "not sized after a full chunk");
    }

    #[test]
    fn memory_follows_changes() {
        let mut l = ListValue::new();
        for s in [&b"a"[..], b"bb", b"ccc", b"dddd"] {
            l.push_back(Bytes::copy_from_slice(s));
        }
        l.push_front(Bytes::from_static(b"z"));
        assert_eq!(l.mem_usage(), 11 + 5 * ITEM_OVERHEAD + 2 * CHUNK_OVERHEAD);
        l.keep_range(1, 4);
        assert_eq!(l.iter().map(|b| b.len()).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(l.mem_usage(), 6 + 3 * ITEM_OVERHEAD + CHUNK_OVERHEAD);
        l.retain(|i, _| i != 1);
        l.set(0, Bytes::from_static(b"xyz"));
        l.insert(1, Bytes::from_static(b"q"));
        assert_eq!(l.remove(0).as_deref(), Some(&b"xyz"[..]));
        assert_eq!(l.pop_back().as_deref(), Some(&b"ccc"[..]));
        assert_eq!(l.pop_front().as_deref(), Some(&b"q"[..]));
        assert!(l.is_empty());
        assert_eq!(l.mem_usage(), 0);
    }

    /// Elements past 16 bits of offset (a chunk of their own) next to small ones, through
    /// pushes at both ends, SET, inserts and removals in the middle, against a model.
    #[test]
    fn elements_longer_than_a_chunk_keep_their_bytes() {
        let big = |n: usize, b: u8| Bytes::from(vec![b; n]);
        let mut l = ListValue::new();
        let mut model: VecDeque<Bytes> = VecDeque::new();
        let step = |l: &mut ListValue, model: &mut VecDeque<Bytes>, op: usize| match op % 6 {
            0 => {
                l.push_back(big(65_535, b'a'));
                model.push_back(big(65_535, b'a'));
            }
            1 => {
                l.push_front(big(70_000, b'b'));
                model.push_front(big(70_000, b'b'));
            }
            2 => {
                l.push_back(Bytes::from_static(b"s"));
                model.push_back(Bytes::from_static(b"s"));
            }
            3 => {
                let at = model.len() / 2;
                l.insert(at, big(66_000, b'c'));
                model.insert(at, big(66_000, b'c'));
            }
            4 => {
                let at = model.len() / 3;
                if l.set(at, Bytes::from_static(b"t")) {
                    model[at] = Bytes::from_static(b"t");
                }
            }
            _ => {
                let at = model.len() / 2;
                assert_eq!(l.remove(at), model.remove(at));
            }
        };
        for op in 0..60 {
            step(&mut l, &mut model, op * 7 + op / 6);
            assert_eq!(l.len(), model.len());
            assert!(l.iter().eq(model.iter().map(|b| &b[..])), "after op {op}");
            for (i, want) in model.iter().enumerate() {
                assert_eq!(l.get(i), Some(&want[..]));
            }
        }
    }

    /// Empty elements and inserts in the middle of full chunks stay within bounded chunks.
    #[test]
    fn chunks_stay_bounded() {
        let mut l = ListValue::new();
        for _ in 0..100_000 {
            l.push_back(Bytes::new());
        }
        assert!(l.chunks.iter().all(|c| c.count() <= CHUNK_BYTES), "a chunk of empty elements outgrew its bound");
        // A queue of one element: pushes at the tail, pops at the head.
        let mut q = ListValue::new();
        q.push_back(Bytes::new());
        for _ in 0..100_000 {
            q.push_back(Bytes::new());
            q.pop_front();
        }
        assert!(q.chunks.iter().map(|c| c.count()).sum::<usize>() <= CHUNK_BYTES);
        let mut m = ListValue::new();
        for i in 0..2048u32 {
            m.push_back(Bytes::from(format!("{i:08}")));
        }
        let before = m.chunks.len();
        for _ in 0..2000 {
            m.insert(1000, Bytes::from_static(b"inserted"));
        }
        // 16 KB more of elements: a handful of chunks more, not one per insertion.
        assert!(m.chunks.len() <= before + 12, "{} chunks after inserts (from {before})", m.chunks.len());
    }

    /// A rebuilt chunk keeps its orientation: pushes at the head after a change to the head
    /// element still fill one chunk.
    #[test]
    fn head_changes_do_not_split_chunks() {
        let mut l = ListValue::new();
        for i in 0..1000u32 {
            l.push_front(Bytes::from(i.to_string()));
            assert!(l.set(0, Bytes::from(format!("s{i}"))));
            l.insert(1, Bytes::from_static(b"x"));
            assert_eq!(l.remove(1).as_deref(), Some(&b"x"[..]));
        }
        assert!(l.chunks.len() <= 2, "{} chunks", l.chunks.len());
        assert_eq!(l.get(0), Some(&b"s999"[..]));
        assert_eq!(l.get(999), Some(&b"s0"[..]));
    }

    /// Every operation against a `VecDeque` model, over many chunks and both orientations.
    #[test]
    fn behaves_like_a_deque() {
        let mut l = ListValue::new();
        let mut m: VecDeque<Vec<u8>> = VecDeque::new();
        let mut most_chunks = 0;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rand = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n.max(1)
        };
        for step in 0..60_000u64 {
            // Element sizes from 0 to 3,000 bytes: several per chunk, or one.
            let size = if rand(50) == 0 { rand(3000) } else { rand(12) } as usize;
            let item: Vec<u8> = (0..size).map(|k| (step as usize + k) as u8).collect();
            let len = m.len() as u64;
            match rand(100) {
                0..=34 => {
                    l.push_back(Bytes::from(item.clone()));
                    m.push_back(item);
                }
                35..=64 => {
                    l.push_front(Bytes::from(item.clone()));
                    m.push_front(item);
                }
                65..=69 => assert_eq!(l.pop_back().map(|b| b.to_vec()), m.pop_back()),
                70..=74 => assert_eq!(l.pop_front().map(|b| b.to_vec()), m.pop_front()),
                75..=79 => {
                    let i = rand(len + 1) as usize;
                    l.insert(i, Bytes::from(item.clone()));
                    m.insert(i, item);
                }
                80..=83 if len > 0 => {
                    let i = rand(len) as usize;
                    assert_eq!(l.remove(i).map(|b| b.to_vec()), m.remove(i));
                }
                84..=87 if len > 0 => {
                    let i = rand(len) as usize;
                    assert!(l.set(i, Bytes::from(item.clone())));
                    m[i] = item;
                }
                88..=94 if len > 0 => {
                    let i = rand(len) as usize;
                    assert_eq!(l.get(i), Some(&m[i][..]));
                    let j = i + rand(len - i as u64) as usize;
                    let got: Vec<&[u8]> = l.range(i, j).collect();
                    let want: Vec<&[u8]> = m.range(i..=j).map(|v| &v[..]).collect();
                    assert_eq!(got, want);
                    let back: Vec<&[u8]> = l.range(i, j).rev().collect();
                    assert_eq!(back, want.into_iter().rev().collect::<Vec<_>>());
                    assert_eq!(l.range(i, j).len(), j - i + 1);
                    assert!(l.range_bytes(i, j).eq(m.range(i..=j).map(|v| Bytes::copy_from_slice(v))));
                }
                // Rare: they shrink the list, which must span many chunks.
                95 if len > 0 && rand(10) == 0 => {
                    let s = rand(len) as usize;
                    let e = s + rand(len - s as u64 + 1) as usize;
                    l.keep_range(s, e);
                    let kept: VecDeque<Vec<u8>> = m.range(s..e).cloned().collect();
                    m = kept;
                }
                96 if rand(10) == 0 => {
                    let k = rand(3);
                    l.retain(|i, _| i as u64 % 3 != k);
                    m = m.into_iter().enumerate().filter(|(i, _)| *i as u64 % 3 != k).map(|(_, v)| v).collect();
                }
                _ => assert_eq!(l.get(len as usize), None),
            }
            assert_eq!(l.len(), m.len());
            most_chunks = most_chunks.max(l.chunks.len());
            if step % 997 == 0 {
                assert_eq!(items(&l), m.iter().cloned().collect::<Vec<_>>());
                assert_eq!(l.iter().rev().map(|b| b.to_vec()).collect::<Vec<_>>(), m.iter().rev().cloned().collect::<Vec<_>>());
                assert_eq!(l.bytes, m.iter().map(|v| v.len()).sum::<usize>());
            }
        }
        assert_eq!(items(&l), m.iter().cloned().collect::<Vec<_>>());
        assert!(most_chunks > 8, "only {most_chunks} chunks at most");
    }
}
