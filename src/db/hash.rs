//! The hash value type: fields to values in a [`KeyTable`] (O(1) lookups, uniformly random
//! fields for HRANDFIELD, and Redis's SCAN guarantee for HSCAN), plus the encoding Redis 7.0
//! would report (`listpack` while small, `hashtable` for good once past the limits).

use std::fmt;

use bytes::Bytes;

use super::KeyTable;

/// Estimated bytes of bookkeeping per field (slot, chain link, two `Bytes` handles).
const ENTRY_OVERHEAD: usize = 80;

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
    items: KeyTable<Bytes>,
    /// True while Redis would still hold this hash as a listpack (conversion is one-way).
    listpack: bool,
    mem: usize,
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue { items: KeyTable::new(), listpack: true, mem: 0 }
    }
}

impl Clone for HashValue {
    fn clone(&self) -> Self {
        let mut items = KeyTable::new();
        for (f, v) in self.items.iter() {
            items.insert(f.clone(), v.clone());
        }
        HashValue { items, listpack: self.listpack, mem: self.mem }
    }
}

impl PartialEq for HashValue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.items.iter().all(|(f, v)| other.get(f) == Some(v))
    }
}

impl fmt::Debug for HashValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HashValue").field("encoding", &self.encoding()).field("items", &self.items.iter().collect::<Vec<_>>()).finish()
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

    pub fn get(&self, field: &[u8]) -> Option<&Bytes> {
        self.items.get(field)
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.items.contains_key(field)
    }

    /// Redis's `hashTypeTryConversion`: leaves listpack for good if any of the strings
    /// about to be written is longer than `hash-max-listpack-value`.
    pub fn check_lengths<'a>(&mut self, strings: impl IntoIterator<Item = &'a [u8]>, limits: HashLimits) {
        if self.listpack && strings.into_iter().any(|s| s.len() as u64 > limits.max_value) {
            self.listpack = false;
        }
    }

    /// Redis's `hashTypeSet`: sets `field` (copied) to `value`; true if the field is new.
    /// Converts to hashtable when a string is too long or the hash outgrows the listpack.
    pub fn set(&mut self, field: &[u8], value: Bytes, limits: HashLimits) -> bool {
        self.check_lengths([field, &value[..]], limits);
        let added = entry_mem(field, &value);
        let new = match self.items.get_mut(field) {
            Some(old) => {
                self.mem -= entry_mem(field, old);
                *old = value;
                false
            }
            None => {
                self.items.insert(Bytes::copy_from_slice(field), value);
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
        match self.items.remove(field) {
            Some((f, v)) => {
                self.mem -= entry_mem(&f, &v);
                true
            }
            None => false,
        }
    }

    /// Every field and value (in an unspecified but stable order while the hash is unchanged).
    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &Bytes)> {
        self.items.iter()
    }

    /// A uniformly random field and its value (`rand` is a uniform u64).
    pub fn random(&self, rand: u64) -> Option<(&Bytes, &Bytes)> {
        if self.items.is_empty() {
            return None;
        }
        self.items.entry_at((rand % self.items.len() as u64) as usize)
    }

    /// The entry at dense position `index` (`0..len()`).
    pub fn entry_at(&self, index: usize) -> Option<(&Bytes, &Bytes)> {
        self.items.entry_at(index)
    }

    /// One SCAN step over the table (Redis's `dictScan` guarantee); returns the next cursor.
    pub fn scan_step(&self, cursor: u64, visit: impl FnMut(&Bytes, &Bytes)) -> u64 {
        self.items.scan_step(cursor, visit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_and_memory() {
        let limits = HashLimits { max_entries: 3, max_value: 4 };
        let mut h = HashValue::new();
        assert!(h.set(b"a", Bytes::from_static(b"1"), limits));
        assert!(!h.set(b"a", Bytes::from_static(b"22"), limits));
        assert_eq!((h.len(), h.encoding(), h.mem_usage()), (1, "listpack", entry_mem(b"a", b"22")));
        h.set(b"b", Bytes::from_static(b"1"), limits);
        h.set(b"c", Bytes::from_static(b"1"), limits);
        assert_eq!(h.encoding(), "listpack");
        h.set(b"d", Bytes::from_static(b"1"), limits);
        assert_eq!(h.encoding(), "hashtable");
        for f in [&b"a"[..], b"b", b"c"] {
            assert!(h.remove(f));
        }
        assert!(!h.remove(b"zz"));
        assert_eq!((h.len(), h.encoding(), h.mem_usage()), (1, "hashtable", entry_mem(b"d", b"1")));
        let mut g = HashValue::new();
        g.set(b"f", Bytes::from_static(b"12345"), limits);
        assert_eq!(g.encoding(), "hashtable");
        assert_eq!(g.clone(), g);
        assert_ne!(g, h);
    }
}
