//! `KeyTable`: the hash table behind every keyspace, with Redis's SCAN guarantee.
//!
//! Entries live in one dense, segmented vector ([`Dense`]: a uniformly random entry is one
//! index away, which RANDOMKEY, active expiry and eviction sampling need) and buckets chain
//! through it by index. The bucket count is a power of two and SCAN walks buckets in Redis's reverse-binary
//! cursor order, so a full iteration returns every key present throughout it even when the
//! table grows or shrinks between calls. Entries keep their hash, so resizing never rehashes
//! a key.
//!
//! The chaining, resizing and scanning live in [`RawTable`], which stores items that need not
//! contain their key: a sorted set's member index holds only skiplist node ids, and compares
//! members through the skiplist (one copy of each member, as in Redis).

use super::dense::Dense;
use super::key::Key;
use super::siphash::SipKey;

const NIL: u32 = u32::MAX;
const MIN_BUCKETS: usize = 4;

#[derive(Clone)]
struct Slot<T> {
    item: T,
    /// The low 32 bits of the item's hash: all a bucket index can use (indices are u32).
    hash: u32,
    next: u32,
}

/// Chained buckets over a dense vector of items; the caller says how an item's key compares
/// (`eq`) and hashes the key with [`RawTable::hash`].
#[derive(Clone)]
pub struct RawTable<T> {
    entries: Dense<Slot<T>>,
    buckets: Vec<u32>,
    hasher: SipKey,
}

impl<T> Default for RawTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RawTable<T> {
    pub fn new() -> Self {
        RawTable { entries: Dense::default(), buckets: vec![NIL; MIN_BUCKETS], hasher: SipKey::new() }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// The hash of a key, as this table's items must be found by (32 bits, as slots keep it).
    pub fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash(key) & u32::MAX as u64
    }

    fn mask(&self) -> u64 {
        (self.buckets.len() - 1) as u64
    }

    /// The dense position of the item with hash `hash` for which `eq` holds.
    pub fn find(&self, hash: u64, mut eq: impl FnMut(&T) -> bool) -> Option<usize> {
        let mut i = self.buckets[(hash & self.mask()) as usize];
        while i != NIL {
            let slot = &self.entries[i as usize];
            if slot.hash as u64 == hash && eq(&slot.item) {
                return Some(i as usize);
            }
            i = slot.next;
        }
        None
    }

    pub fn item(&self, index: usize) -> Option<&T> {
        self.entries.get(index).map(|s| &s.item)
    }

    pub fn item_mut(&mut self, index: usize) -> Option<&mut T> {
        self.entries.get_mut(index).map(|s| &mut s.item)
    }

    /// Adds an item whose key is not present (the caller checked with `find`).
    pub fn push(&mut self, hash: u64, item: T) {
        if self.entries.len() >= self.buckets.len() {
            self.resize(self.buckets.len() * 2);
        }
        let b = (hash & self.mask()) as usize;
        let idx = self.entries.len() as u32;
        self.entries.push(Slot { item, hash: hash as u32, next: self.buckets[b] });
        self.buckets[b] = idx;
    }

    /// Removes the item at dense position `i`; the last item takes its place.
    pub fn remove_at(&mut self, i: usize) -> T {
        self.unlink(i);
        let last = self.entries.len() - 1;
        if i != last {
            // The last slot moves into the hole: repoint whoever referred to it.
            let moved_hash = self.entries[last].hash as u64;
            self.relink(last as u32, i as u32, moved_hash);
        }
        let slot = self.entries.swap_remove(i);
        if self.buckets.len() > MIN_BUCKETS && self.entries.len() * 10 < self.buckets.len() {
            self.resize((self.entries.len().max(1) * 2).next_power_of_two().max(MIN_BUCKETS));
        }
        slot.item
    }

    /// Takes slot `i` out of its bucket chain.
    fn unlink(&mut self, i: usize) {
        let b = (self.entries[i].hash as u64 & self.mask()) as usize;
        let next = self.entries[i].next;
        if self.buckets[b] == i as u32 {
            self.buckets[b] = next;
            return;
        }
        let mut j = self.buckets[b];
        while j != NIL {
            if self.entries[j as usize].next == i as u32 {
                self.entries[j as usize].next = next;
                return;
            }
            j = self.entries[j as usize].next;
        }
    }

    /// Makes the chain that pointed at slot `from` point at slot `to` instead.
    fn relink(&mut self, from: u32, to: u32, hash: u64) {
        let b = (hash & self.mask()) as usize;
        if self.buckets[b] == from {
            self.buckets[b] = to;
            return;
        }
        let mut j = self.buckets[b];
        while j != NIL {
            if self.entries[j as usize].next == from {
                self.entries[j as usize].next = to;
                return;
            }
            j = self.entries[j as usize].next;
        }
    }

    fn resize(&mut self, n: usize) {
        self.buckets = vec![NIL; n];
        let mask = (n - 1) as u64;
        for (i, slot) in self.entries.iter_mut().enumerate() {
            let b = (slot.hash as u64 & mask) as usize;
            slot.next = self.buckets[b];
            self.buckets[b] = i as u32;
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|s| &s.item)
    }

    /// Visits the bucket at `cursor` (and, like Redis, returns the next cursor; 0 = done).
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&T)) -> u64 {
        let mask = self.mask();
        let mut i = self.buckets[(cursor & mask) as usize];
        while i != NIL {
            let slot = &self.entries[i as usize];
            visit(&slot.item);
            i = slot.next;
        }
        // Increment the reversed cursor over the mask's bits (Redis's dictScan).
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }
}

/// A map from binary keys to `V`.
pub struct KeyTable<V> {
    raw: RawTable<(Key, V)>,
}

impl<V> Default for KeyTable<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> KeyTable<V> {
    pub fn new() -> Self {
        KeyTable { raw: RawTable::new() }
    }

    pub fn len(&self) -> usize {
        self.raw.len()
    }

    pub fn is_empty(&self) -> bool {
        self.raw.is_empty()
    }

    fn find(&self, key: &[u8]) -> Option<usize> {
        self.raw.find(self.raw.hash(key), |(k, _)| k[..] == *key)
    }

    /// The dense position of `key`, valid until the next insert or remove: lets a caller
    /// look at and then change an entry with one hash computation.
    pub fn position(&self, key: &[u8]) -> Option<usize> {
        self.find(key)
    }

    /// The value at a dense position (`index` < `len()`).
    pub fn value_at(&self, index: usize) -> &V {
        &self.raw.entries[index].item.1
    }

    pub fn value_at_mut(&mut self, index: usize) -> &mut V {
        &mut self.raw.entries[index].item.1
    }

    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.find(key).map(|i| self.value_at(i))
    }

    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let i = self.find(key)?;
        Some(self.value_at_mut(i))
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.find(key).is_some()
    }

    /// The hash of `key` and its dense position: a caller that may then add the key hashes
    /// it once (see [`KeyTable::push_absent`]).
    pub fn probe(&self, key: &[u8]) -> (u64, Option<usize>) {
        let hash = self.raw.hash(key);
        (hash, self.raw.find(hash, |(k, _)| k[..] == *key))
    }

    /// Adds a key that `probe` (with no change since) found absent, under the hash it gave.
    pub fn push_absent(&mut self, hash: u64, key: impl Into<Key>, value: V) {
        self.raw.push(hash, (key.into(), value));
    }

    /// The stored key at dense position `index` (`index` < `len()`).
    pub fn key_at(&self, index: usize) -> &Key {
        &self.raw.entries[index].item.0
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: impl Into<Key> + AsRef<[u8]>, value: V) -> Option<V> {
        let (hash, found) = self.probe(key.as_ref());
        if let Some(i) = found {
            return Some(std::mem::replace(self.value_at_mut(i), value));
        }
        self.raw.push(hash, (key.into(), value));
        None
    }

    /// Removes `key`, returning its stored key and value.
    pub fn remove(&mut self, key: &[u8]) -> Option<(Key, V)> {
        let i = self.find(key)?;
        Some(self.raw.remove_at(i))
    }

    pub fn clear(&mut self) {
        *self = KeyTable::new();
    }

    /// The entry at dense position `index` (for uniform random sampling).
    pub fn slot_at_mut(&mut self, index: usize) -> Option<(&Key, &mut V)> {
        self.raw.item_mut(index).map(|(k, v)| (&*k, v))
    }

    pub fn entry_at(&self, index: usize) -> Option<(&Key, &V)> {
        self.raw.item(index).map(|(k, v)| (k, v))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &V)> {
        self.raw.iter().map(|(k, v)| (k, v))
    }

    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.raw.iter().map(|(k, _)| k)
    }

    /// Visits the bucket at `cursor` (and, like Redis, returns the next cursor; 0 = done).
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&Key, &V)) -> u64 {
        self.raw.scan_step(cursor, |(k, v)| visit(k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::collections::HashSet;

    #[test]
    fn insert_get_remove() {
        let mut t = KeyTable::new();
        for i in 0..1000 {
            t.insert(Bytes::from(format!("k{i}")), i);
        }
        assert_eq!(t.len(), 1000);
        for i in (0..1000).step_by(2) {
            assert_eq!(t.remove(format!("k{i}").as_bytes()).map(|(_, v)| v), Some(i));
        }
        assert_eq!(t.len(), 500);
        for i in 0..1000 {
            assert_eq!(t.get(format!("k{i}").as_bytes()).copied(), if i % 2 == 1 { Some(i) } else { None });
        }
    }

    #[test]
    fn scan_survives_resizes() {
        let mut t = KeyTable::new();
        for i in 0..500 {
            t.insert(Bytes::from(format!("stay{i}")), ());
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut round = 0;
        loop {
            cursor = t.scan_step(cursor, |k, _| {
                seen.insert(k.clone());
            });
            round += 1;
            // Grow and shrink the table while the scan is in flight.
            if round % 7 == 0 {
                for j in 0..300 {
                    t.insert(Bytes::from(format!("tmp{round}-{j}")), ());
                }
            } else if round % 11 == 0 {
                let tmp: Vec<Key> = t.keys().filter(|k| k.starts_with(b"tmp")).cloned().collect();
                for k in tmp {
                    t.remove(&k);
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..500 {
            assert!(seen.contains(format!("stay{i}").as_bytes()), "missed stay{i}");
        }
    }
}
