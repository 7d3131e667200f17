//! The set value type: members in a [`KeyTable`] (O(1) membership, uniformly random members
//! for SPOP/SRANDMEMBER, and Redis's SCAN guarantee for SSCAN), plus the encoding Redis 7.0
//! would report (`intset` while every member is an integer and the set is small, `hashtable`
//! for good afterwards; 7.0 has no listpack sets).

use std::fmt;

use bytes::Bytes;

use super::{Key, KeyTable};

/// Estimated bytes of bookkeeping per member (slot, chain link, the `Key`), besides its
/// bytes kept apart when long ([`Key::heap_size`]).
const ENTRY_OVERHEAD: usize = 32;

/// A set value. `mem` is kept up to date by every mutation so memory accounting is O(1).
pub struct SetValue {
    items: KeyTable<()>,
    /// True while Redis would still hold this set as an intset (conversion is one-way).
    intset: bool,
    mem: usize,
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue { items: KeyTable::new(), intset: true, mem: 0 }
    }
}

impl Clone for SetValue {
    fn clone(&self) -> Self {
        let mut items = KeyTable::new();
        for m in self.items.keys() {
            items.insert(m.clone(), ());
        }
        SetValue { items, intset: self.intset, mem: self.mem }
    }
}

impl PartialEq for SetValue {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.items.keys().all(|m| other.contains(m))
    }
}

impl fmt::Debug for SetValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SetValue").field("encoding", &self.encoding()).field("items", &self.items.keys().collect::<Vec<_>>()).finish()
    }
}

/// Redis's `isSdsRepresentableAsLongLong`: the member could live in an intset.
fn is_int(member: &[u8]) -> bool {
    crate::util::parse_i64(member).is_some()
}

impl SetValue {
    /// An empty set, encoded as Redis's `createIntsetObject` (SINTERSTORE & co.).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set encoded as Redis's `setTypeCreate(first)` would (SADD, SMOVE): an intset
    /// if the first member is an integer, else a hashtable.
    pub fn for_member(first: &[u8]) -> Self {
        SetValue { intset: is_int(first), ..Self::default() }
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        if self.intset {
            "intset"
        } else {
            "hashtable"
        }
    }

    pub fn is_intset(&self) -> bool {
        self.intset
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

    pub fn contains(&self, member: &[u8]) -> bool {
        self.items.contains_key(member)
    }

    /// Redis's `setTypeAdd`: adds `member` (copied, only when new: most adds of a busy set
    /// find the member there); true if it was new. `max_intset` is `set-max-intset-entries`.
    pub fn add(&mut self, member: &[u8], max_intset: u64) -> bool {
        match self.items.probe(member) {
            (_, Some(_)) => false,
            (hash, None) => self.push_new(hash, Key::copy_from(member), max_intset),
        }
    }

    /// Like [`SetValue::add`] with an owned member (already copied out of any request, or
    /// another set's).
    pub fn add_owned(&mut self, member: impl Into<Key> + AsRef<[u8]>, max_intset: u64) -> bool {
        match self.items.probe(member.as_ref()) {
            (_, Some(_)) => false,
            (hash, None) => self.push_new(hash, member, max_intset),
        }
    }

    /// Adds a member `probe` found absent, under the hash it gave.
    fn push_new(&mut self, hash: u64, member: impl Into<Key> + AsRef<[u8]>, max_intset: u64) -> bool {
        if self.intset && !is_int(member.as_ref()) {
            self.intset = false;
        }
        self.mem += Key::heap_size(member.as_ref().len()) + ENTRY_OVERHEAD;
        self.items.push_absent(hash, member, ());
        // Redis caps the intset at 2^30 entries whatever the configuration says.
        if self.intset && self.items.len() as u64 > max_intset.min(1 << 30) {
            self.intset = false;
        }
        true
    }

    /// Removes `member`; true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self.items.remove(member) {
            Some((m, ())) => {
                self.mem -= Key::heap_size(m.len()) + ENTRY_OVERHEAD;
                true
            }
            None => false,
        }
    }

    /// Removes and returns the member at dense position `index`.
    pub fn remove_at(&mut self, index: usize) -> Option<Bytes> {
        let member = self.items.entry_at(index)?.0.clone();
        self.remove(&member);
        Some(member.into_bytes())
    }

    /// Every member: in ascending numeric order while Redis would hold the set as an intset
    /// (its order, which SMEMBERS, SSCAN and the set algebra show), else in an unspecified
    /// but stable order while the set is unchanged.
    pub fn iter(&self) -> impl Iterator<Item = &Key> {
        let mut sorted: Vec<(i64, &Key)> = Vec::new();
        if self.intset {
            sorted.extend(self.items.keys().map(|k| (crate::util::parse_i64(k.as_ref()).unwrap_or(0), k)));
            sorted.sort_unstable_by_key(|(n, _)| *n);
        }
        let plain = (!self.intset).then(|| self.items.keys());
        sorted.into_iter().map(|(_, k)| k).chain(plain.into_iter().flatten())
    }

    /// The member at dense position `index` (`0..len()`), for uniform random picks.
    pub fn member_at(&self, index: usize) -> Option<&Key> {
        self.items.entry_at(index).map(|(m, _)| m)
    }

    /// A uniformly random member (`rand` is a uniform u64).
    pub fn random(&self, rand: u64) -> Option<&Key> {
        if self.items.is_empty() {
            return None;
        }
        self.member_at((rand % self.items.len() as u64) as usize)
    }

    /// One SCAN step over the table (Redis's `dictScan` guarantee); returns the next cursor.
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&Key)) -> u64 {
        self.items.scan_step(cursor, |m, _| visit(m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_and_memory() {
        let mut s = SetValue::for_member(b"1");
        assert!(s.add(b"1", 2));
        assert!(!s.add(b"1", 2));
        assert!(s.add(b"-5", 2));
        assert_eq!((s.len(), s.encoding()), (2, "intset"));
        // An intset iterates in ascending order, as Redis's does.
        assert_eq!(s.iter().map(|k| k.as_ref().to_vec()).collect::<Vec<_>>(), vec![b"-5".to_vec(), b"1".to_vec()]);
        assert!(s.add(b"7", 2));
        assert_eq!(s.encoding(), "hashtable");
        let mut t = SetValue::new();
        t.add(b"1", 512);
        t.add(b"01", 512);
        assert_eq!(t.encoding(), "hashtable");
        assert!(t.remove(b"01") && !t.remove(b"01"));
        assert_eq!((t.encoding(), t.mem_usage()), ("hashtable", ENTRY_OVERHEAD));
        assert_eq!(SetValue::for_member(b"x").encoding(), "hashtable");
        assert_eq!(t.remove_at(0).as_deref(), Some(&b"1"[..]));
        assert_eq!((t.len(), t.mem_usage()), (0, 0));
        assert_eq!(s.clone(), s);
    }
}
