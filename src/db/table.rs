//! `KeyTable`: the hash table behind every keyspace, with Redis's SCAN guarantee.
//!
//! Entries live in one dense vector (so a uniformly random entry is one index away, which
//! RANDOMKEY, active expiry and eviction sampling need) and buckets chain through it by
//! index. The bucket count is a power of two and SCAN walks buckets in Redis's reverse-binary
//! cursor order, so a full iteration returns every key present throughout it even when the
//! table grows or shrinks between calls. Entries keep their hash, so resizing never rehashes
//! a key.

use std::hash::{BuildHasher, RandomState};

use bytes::Bytes;

const NIL: u32 = u32::MAX;
const MIN_BUCKETS: usize = 4;

struct Slot<V> {
    key: Bytes,
    value: V,
    hash: u64,
    next: u32,
}

/// A map from binary keys to `V`.
pub struct KeyTable<V> {
    entries: Vec<Slot<V>>,
    buckets: Vec<u32>,
    hasher: RandomState,
}

impl<V> Default for KeyTable<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V> KeyTable<V> {
    pub fn new() -> Self {
        KeyTable { entries: Vec::new(), buckets: vec![NIL; MIN_BUCKETS], hasher: RandomState::new() }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    fn mask(&self) -> u64 {
        (self.buckets.len() - 1) as u64
    }

    fn find(&self, key: &[u8], hash: u64) -> Option<usize> {
        let mut i = self.buckets[(hash & self.mask()) as usize];
        while i != NIL {
            let slot = &self.entries[i as usize];
            if slot.hash == hash && slot.key[..] == *key {
                return Some(i as usize);
            }
            i = slot.next;
        }
        None
    }

    /// The dense position of `key`, valid until the next insert or remove: lets a caller
    /// look at and then change an entry with one hash computation.
    pub fn position(&self, key: &[u8]) -> Option<usize> {
        self.find(key, self.hash(key))
    }

    pub fn value_at(&self, index: usize) -> &V {
        &self.entries[index].value
    }

    pub fn value_at_mut(&mut self, index: usize) -> &mut V {
        &mut self.entries[index].value
    }

    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.find(key, self.hash(key)).map(|i| &self.entries[i].value)
    }

    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let i = self.find(key, self.hash(key))?;
        Some(&mut self.entries[i].value)
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.find(key, self.hash(key)).is_some()
    }

    /// Inserts or replaces; returns the previous value.
    pub fn insert(&mut self, key: Bytes, value: V) -> Option<V> {
        let hash = self.hash(&key);
        if let Some(i) = self.find(&key, hash) {
            return Some(std::mem::replace(&mut self.entries[i].value, value));
        }
        if self.entries.len() >= self.buckets.len() {
            self.resize(self.buckets.len() * 2);
        }
        let b = (hash & self.mask()) as usize;
        let idx = self.entries.len() as u32;
        // Small tables (most hashes and sets are tiny) grow one slot at a time instead of
        // doubling from 4: a one-field hash then holds one slot, not four.
        if self.entries.len() == self.entries.capacity() && self.entries.len() < 16 {
            self.entries.reserve_exact(1);
        }
        self.entries.push(Slot { key, value, hash, next: self.buckets[b] });
        self.buckets[b] = idx;
        None
    }

    /// Removes `key`, returning its stored key and value.
    pub fn remove(&mut self, key: &[u8]) -> Option<(Bytes, V)> {
        let hash = self.hash(key);
        let i = self.find(key, hash)?;
        self.unlink(i);
        let last = self.entries.len() - 1;
        if i != last {
            // The last slot moves into the hole: repoint whoever referred to it.
            let moved_hash = self.entries[last].hash;
            self.relink(last as u32, i as u32, moved_hash);
        }
        let slot = self.entries.swap_remove(i);
        if self.buckets.len() > MIN_BUCKETS && self.entries.len() * 10 < self.buckets.len() {
            self.resize((self.entries.len().max(1) * 2).next_power_of_two().max(MIN_BUCKETS));
        }
        Some((slot.key, slot.value))
    }

    /// Takes slot `i` out of its bucket chain.
    fn unlink(&mut self, i: usize) {
        let b = (self.entries[i].hash & self.mask()) as usize;
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
            let b = (slot.hash & mask) as usize;
            slot.next = self.buckets[b];
            self.buckets[b] = i as u32;
        }
    }

    pub fn clear(&mut self) {
        *self = KeyTable::new();
    }

    /// The entry at dense position `index` (for uniform random sampling).
    pub fn slot_at_mut(&mut self, index: usize) -> Option<(&Bytes, &mut V)> {
        self.entries.get_mut(index).map(|s| (&s.key, &mut s.value))
    }

    pub fn entry_at(&self, index: usize) -> Option<(&Bytes, &V)> {
        self.entries.get(index).map(|s| (&s.key, &s.value))
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &V)> {
        self.entries.iter().map(|s| (&s.key, &s.value))
    }

    pub fn keys(&self) -> impl Iterator<Item = &Bytes> {
        self.entries.iter().map(|s| &s.key)
    }

    /// Visits the bucket at `cursor` (and, like Redis, returns the next cursor; 0 = done).
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&Bytes, &V)) -> u64 {
        let mask = self.mask();
        let mut i = self.buckets[(cursor & mask) as usize];
        while i != NIL {
            let slot = &self.entries[i as usize];
            visit(&slot.key, &slot.value);
            i = slot.next;
        }
        // Increment the reversed cursor over the mask's bits (Redis's dictScan).
        let mut v = cursor | !mask;
        v = v.reverse_bits();
        v = v.wrapping_add(1);
        v.reverse_bits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
                let tmp: Vec<Bytes> = t.keys().filter(|k| k.starts_with(b"tmp")).cloned().collect();
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
