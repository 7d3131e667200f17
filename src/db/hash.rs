//! The hash value type: fields to values in a [`RawTable`] (O(1) lookups, uniformly random
//! fields for HRANDFIELD, and Redis's SCAN guarantee for HSCAN), plus the encoding Redis 7.0
//! would report (`listpack` while small, `hashtable` for good once past the limits).
//!
//! A field and its value are two boxed byte strings (16 bytes each in the slot, where a
//! `Bytes` handle takes 32): a slot is 48 bytes instead of 80, which is both memory per
//! field and the cache lines a lookup in a big hash touches.

use std::fmt;

use super::table::RawTable;

/// Estimated bytes of bookkeeping per field (slot with its hash and chain link, and the two
/// allocations' rounding).
const ENTRY_OVERHEAD: usize = 64;

type Pair = (Box<[u8]>, Box<[u8]>);

/// Redis's conversion thresholds (`hash-max-listpack-entries`, `hash-max-listpack-value`),
/// read from the configuration at write time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashLimits {
    pub max_entries: u64,
    pub max_value: u64,
}

impl Default for HashLimits {
    fn default() -> Self {
        HashLimits { max_entries: 512, max_value: 64 }
    }
}

/// A hash value. `mem` is kept up to date by every mutation so memory accounting is O(1).
pub struct HashValue {
    items: RawTable<Pair>,
    /// True while Redis would still hold this hash as a listpack (conversion is one-way).
    listpack: bool,
    mem: usize,
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue { items: RawTable::new(), listpack: true, mem: 0 }
    }
}

impl Clone for HashValue {
    fn clone(&self) -> Self {
        HashValue { items: self.items.clone(), listpack: self.listpack, mem: self.mem }
    }
}

impl PartialEq for HashValue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl fmt::Debug for HashValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashValue").field("encoding", &self.encoding()).field("items", &self.iter().collect::<Vec<_>>()).finish()
    }
}

fn entry_mem(field: &[u8], value: &[u8]) -> usize {
    field.len() + value.len() + ENTRY_OVERHEAD
}

impl HashValue {
    /// An empty hash, listpack-encoded (as Redis creates every hash).
    pub fn new() -> Self {
        Self::default()
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        if self.listpack {
            "listpack"
        } else {
            "hashtable"
        }
    }

    pub fn is_listpack(&self) -> bool {
        self.listpack
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

    fn find(&self, field: &[u8]) -> (u64, Option<usize>) {
        let hash = self.items.hash(field);
        (hash, self.items.find(hash, |(f, _)| **f == *field))
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        let i = self.find(field).1?;
        self.items.item(i).map(|(_, v)| &**v)
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.find(field).1.is_some()
    }

    /// Redis's `hashTypeTryConversion`: leaves listpack for good if any of the strings
    /// about to be written is longer than `hash-max-listpack-value`.
    pub fn check_lengths<'a>(&mut self, strings: impl IntoIterator<Item = &'a [u8]>, limits: HashLimits) {
        if self.listpack && strings.into_iter().any(|s| s.len() as u64 > limits.max_value) {
            self.listpack = false;
        }
    }

    /// Redis's `hashTypeSet`: sets `field` to `value` (both copied); true if the field is new.
    /// Converts to hashtable when a string is too long or the hash outgrows the listpack.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: HashLimits) -> bool {
        self.check_lengths([field, value], limits);
        let added = entry_mem(field, value);
        let (hash, pos) = self.find(field);
        let new = match pos.and_then(|i| self.items.item_mut(i)) {
            Some((_, old)) => {
                self.mem -= entry_mem(field, old);
                *old = value.into();
                false
            }
            None => {
                self.items.push(hash, (field.into(), value.into()));
                true
            }
        };
        self.mem += added;
        if self.listpack && self.items.len() as u64 > limits.max_entries {
            self.listpack = false;
        }
        new
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self.find(field).1 {
            Some(i) => {
                let (f, v) = self.items.remove_at(i);
                self.mem -= entry_mem(&f, &v);
                true
            }
            None => false,
        }
    }

    /// Every field and value (in an unspecified but stable order while the hash is unchanged).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.items.iter().map(|(f, v)| (&**f, &**v))
    }

    /// A uniformly random field and its value (`rand` is a uniform u64).
    pub fn random(&self, rand: u64) -> Option<(&[u8], &[u8])> {
        if self.items.is_empty() {
            return None;
        }
        self.entry_at((rand % self.items.len() as u64) as usize)
    }

    /// The entry at dense position `index` (`0..len()`).
    pub fn entry_at(&self, index: usize) -> Option<(&[u8], &[u8])> {
        self.items.item(index).map(|(f, v)| (&**f, &**v))
    }

    /// One SCAN step over the table (Redis's `dictScan` guarantee); returns the next cursor.
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        self.items.scan_step(cursor, |(f, v)| visit(f, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_and_memory() {
        let limits = HashLimits { max_entries: 3, max_value: 4 };
        let mut h = HashValue::new();
        assert!(h.set(b"a", b"1", limits));
        assert!(!h.set(b"a", b"22", limits));
        assert_eq!((h.len(), h.encoding(), h.mem_usage()), (1, "listpack", entry_mem(b"a", b"22")));
        h.set(b"b", b"1", limits);
        h.set(b"c", b"1", limits);
        assert_eq!(h.encoding(), "listpack");
        h.set(b"d", b"1", limits);
        assert_eq!(h.encoding(), "hashtable");
        for f in [&b"a"[..], b"b", b"c"] {
            assert!(h.remove(f));
        }
        assert!(!h.remove(b"zz"));
        assert_eq!((h.len(), h.encoding(), h.mem_usage()), (1, "hashtable", entry_mem(b"d", b"1")));
        let mut g = HashValue::new();
        g.set(b"f", b"12345", limits);
        assert_eq!(g.encoding(), "hashtable");
        assert_eq!(g.clone(), g);
        assert_ne!(g, h);
    }
}
