//! The list value type: a `VecDeque` of elements (O(1) push/pop at both ends and O(1) access
//! by index), with a running memory estimate. Redis 7.0 reports every list as `quicklist`
//! (the `listpack` list encoding only arrived in 7.2), whatever its size.

use std::collections::VecDeque;

use bytes::Bytes;

/// Estimated bytes of bookkeeping per element (the `Bytes` handle and its allocation header).
const ITEM_OVERHEAD: usize = 40;

fn item_mem(item: &[u8]) -> usize {
    item.len() + ITEM_OVERHEAD
}

/// A list value. `mem` is kept up to date by every mutation so memory accounting is O(1).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ListValue {
    items: VecDeque<Bytes>,
    mem: usize,
}

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
        self.mem
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn push_front(&mut self, item: Bytes) {
        self.mem += item_mem(&item);
        self.items.push_front(item);
    }

    pub fn push_back(&mut self, item: Bytes) {
        self.mem += item_mem(&item);
        self.items.push_back(item);
    }

    pub fn pop_front(&mut self) -> Option<Bytes> {
        let item = self.items.pop_front()?;
        self.mem -= item_mem(&item);
        Some(item)
    }

    pub fn pop_back(&mut self) -> Option<Bytes> {
        let item = self.items.pop_back()?;
        self.mem -= item_mem(&item);
        Some(item)
    }

    pub fn get(&self, index: usize) -> Option<&Bytes> {
        self.items.get(index)
    }

    /// Replaces the element at `index`; false if out of range.
    pub fn set(&mut self, index: usize, item: Bytes) -> bool {
        match self.items.get_mut(index) {
            Some(slot) => {
                self.mem = self.mem - item_mem(slot) + item_mem(&item);
                *slot = item;
                true
            }
            None => false,
        }
    }

    /// Inserts `item` before position `index` (`index == len` appends).
    pub fn insert(&mut self, index: usize, item: Bytes) {
        self.mem += item_mem(&item);
        self.items.insert(index, item);
    }

    /// Removes the element at `index`.
    pub fn remove(&mut self, index: usize) -> Option<Bytes> {
        let item = self.items.remove(index)?;
        self.mem -= item_mem(&item);
        Some(item)
    }

    /// Keeps only the elements at `start..end` (clamped to the list).
    pub fn keep_range(&mut self, start: usize, end: usize) {
        let end = end.min(self.items.len());
        let start = start.min(end);
        let freed: usize =
            self.items.drain(end..).map(|i| item_mem(&i)).sum::<usize>() + self.items.drain(..start).map(|i| item_mem(&i)).sum::<usize>();
        self.mem -= freed;
    }

    /// Keeps the elements for which `keep` is true (in order).
    pub fn retain(&mut self, mut keep: impl FnMut(usize, &Bytes) -> bool) {
        let mut i = 0;
        let mut freed = 0;
        self.items.retain(|item| {
            let k = keep(i, item);
            i += 1;
            if !k {
                freed += item_mem(item);
            }
            k
        });
        self.mem -= freed;
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Bytes> + ExactSizeIterator {
        self.items.iter()
    }

    /// The elements at positions `start..=end` (both within the list).
    pub fn range(&self, start: usize, end: usize) -> impl DoubleEndedIterator<Item = &Bytes> {
        self.items.range(start..=end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_follows_changes() {
        let mut l = ListValue::new();
        for s in [&b"a"[..], b"bb", b"ccc", b"dddd"] {
            l.push_back(Bytes::copy_from_slice(s));
        }
        l.push_front(Bytes::from_static(b"z"));
        assert_eq!(l.mem_usage(), 11 + 5 * ITEM_OVERHEAD);
        l.keep_range(1, 4);
        assert_eq!(l.iter().map(|b| b.len()).collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(l.mem_usage(), 6 + 3 * ITEM_OVERHEAD);
        l.retain(|i, _| i != 1);
        l.set(0, Bytes::from_static(b"xyz"));
        l.insert(1, Bytes::from_static(b"q"));
        assert_eq!(l.remove(0).as_deref(), Some(&b"xyz"[..]));
        assert_eq!(l.pop_back().as_deref(), Some(&b"ccc"[..]));
        assert_eq!(l.pop_front().as_deref(), Some(&b"q"[..]));
        assert!(l.is_empty());
        assert_eq!(l.mem_usage(), 0);
    }
}
