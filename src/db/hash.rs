//! The hash value type, in the two encodings Redis 7.0 uses:
//! - `listpack` while small (at most `hash-max-listpack-entries` fields, none longer than
//!   `hash-max-listpack-value`): one packed buffer of entries in insertion order, scanned by
//!   lookups, as Redis's listpack is. A one-field hash costs one small allocation, held in `Value`
//!   itself (no box of its own).
//! - `hashtable` for good once past the limits: a [`RawTable`] (O(1) lookups, uniformly
//!   random fields for HRANDFIELD, and Redis's SCAN guarantee for HSCAN). A field is a
//!   [`Key`] (up to 22 bytes inside the slot: a lookup that finds its field compares bytes
//!   already loaded with the slot, instead of missing on an allocation of their own; perf put
//!   12% of HSET on a 100,000-field hash in that `memcmp`), its value a boxed byte string
//!   (16 bytes): a 48-byte slot, within one cache line.

use std::fmt;
use std::ops::Range;

use super::key::Key;
use super::table::RawTable;
use super::varint;

/// Estimated bytes of bookkeeping per field of a hashtable: the 48-byte slot (field, value
/// handle, hash, chain link), its bucket and the value allocation's rounding.
const ENTRY_OVERHEAD: usize = 56;

/// Estimated bytes of bookkeeping of a packed hash (its allocation's rounding).
const PACKED_OVERHEAD: usize = 8;

type Pair = (Key, Box<[u8]>);

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

/// A small hash: a 4-byte little-endian count, then entries `varint(field length) field
/// varint(value length) value` in the order the fields were added; a new value replaces the
/// old one in place (Redis's listpack order, which HGETALL shows). Held in a boxed slice of
/// exactly its size (every change reallocates, as Redis reallocates a listpack), so a
/// one-field hash costs one small allocation; empty, it allocates nothing.
#[derive(Clone, Default)]
struct Packed {
    buf: Box<[u8]>,
}

const COUNT: usize = 4;

/// Where one entry of a packed buffer lies.
struct Slot {
    start: usize,
    field: Range<usize>,
    /// The value's length prefix and bytes.
    value_at: usize,
    value: Range<usize>,
    end: usize,
}

fn get_varint(buf: &[u8], pos: &mut usize) -> Option<usize> {
    varint::get(buf, pos).map(|n| n as usize)
}

impl Packed {
    fn len(&self) -> usize {
        self.buf.get(..COUNT).map_or(0, |c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]) as usize)
    }

    fn slot(&self, start: usize) -> Option<Slot> {
        let mut p = start;
        let flen = get_varint(&self.buf, &mut p)?;
        let field = p..p.checked_add(flen)?;
        let value_at = field.end;
        p = value_at;
        let vlen = get_varint(&self.buf, &mut p)?;
        let value = p..p.checked_add(vlen)?;
        let end = value.end;
        (end <= self.buf.len()).then_some(Slot { start, field, value_at, value, end })
    }

    fn slots(&self) -> impl Iterator<Item = Slot> + '_ {
        let mut pos = COUNT;
        std::iter::from_fn(move || {
            let s = (pos < self.buf.len()).then(|| self.slot(pos)).flatten()?;
            pos = s.end;
            Some(s)
        })
    }

    fn pair(&self, s: &Slot) -> (&[u8], &[u8]) {
        (&self.buf[s.field.clone()], &self.buf[s.value.clone()])
    }

    fn find(&self, field: &[u8]) -> Option<Slot> {
        self.slots().find(|s| &self.buf[s.field.clone()] == field)
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.slots().map(move |s| self.pair(&s))
    }

    /// Rebuilds the buffer through `edit` (on a vector holding the count), at its new exact
    /// size, with the count moved by `delta`.
    fn edit(&mut self, delta: i64, edit: impl FnOnce(&mut Vec<u8>)) {
        let count = (self.len() as i64 + delta).max(0) as u32;
        let mut v = std::mem::take(&mut self.buf).into_vec();
        if v.len() < COUNT {
            v.resize(COUNT, 0);
        }
        edit(&mut v);
        v[..COUNT].copy_from_slice(&count.to_le_bytes());
        self.buf = if count == 0 { Box::default() } else { v.into_boxed_slice() };
    }

    /// True if `field` is new.
    fn set(&mut self, field: &[u8], value: &[u8]) -> bool {
        let (len, n) = varint::encode(value.len() as u64);
        match self.find(field) {
            Some(s) if s.end - s.value_at == n + value.len() => {
                self.buf[s.value_at..s.value_at + n].copy_from_slice(&len[..n]);
                self.buf[s.value.clone()].copy_from_slice(value);
                false
            }
            Some(s) => {
                self.edit(0, |v| {
                    v.splice(s.value_at..s.end, len[..n].iter().chain(value).copied());
                });
                false
            }
            None => {
                self.edit(1, |v| {
                    v.reserve_exact(varint::size(field.len() as u64) + field.len() + n + value.len());
                    varint::put(v, field.len() as u64);
                    v.extend_from_slice(field);
                    v.extend_from_slice(&len[..n]);
                    v.extend_from_slice(value);
                });
                true
            }
        }
    }

    fn remove(&mut self, field: &[u8]) -> bool {
        let Some(s) = self.find(field) else { return false };
        self.edit(-1, |v| {
            v.drain(s.start..s.end);
        });
        true
    }
}

/// A hash past the listpack limits.
#[derive(Clone)]
struct Table {
    items: RawTable<Pair>,
    /// Kept up to date by every mutation so memory accounting is O(1).
    mem: usize,
}

impl Table {
    fn find(&self, field: &[u8]) -> (u64, Option<usize>) {
        let hash = self.items.hash(field);
        (hash, self.items.find(hash, |(f, _)| **f == *field))
    }
}

/// Both forms in 16 bytes, so a hash fits in `Value` without a box of its own.
#[derive(Clone)]
enum Items {
    Packed(Packed),
    Table(Box<Table>),
}

/// A hash value.
#[derive(Clone)]
pub struct HashValue {
    items: Items,
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue { items: Items::Packed(Packed::default()) }
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
    Key::heap_size(field.len()) + value.len() + ENTRY_OVERHEAD
}

impl HashValue {
    /// An empty hash, listpack-encoded (as Redis creates every hash).
    pub fn new() -> Self {
        Self::default()
    }

    /// The name OBJECT ENCODING reports.
    pub fn encoding(&self) -> &'static str {
        if self.is_listpack() {
            "listpack"
        } else {
            "hashtable"
        }
    }

    pub fn is_listpack(&self) -> bool {
        matches!(self.items, Items::Packed(_))
    }

    /// Approximate heap bytes held (O(1)).
    pub fn mem_usage(&self) -> usize {
        match &self.items {
            Items::Packed(p) => p.buf.len() + PACKED_OVERHEAD,
            Items::Table(t) => t.mem,
        }
    }

    pub fn len(&self) -> usize {
        match &self.items {
            Items::Packed(p) => p.len(),
            Items::Table(t) => t.items.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.items {
            Items::Packed(p) => p.find(field).map(|s| &p.buf[s.value]),
            Items::Table(t) => t.items.item(t.find(field).1?).map(|(_, v)| &**v),
        }
    }

    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Redis's `hashTypeTryConversion`: leaves listpack for good if any of the strings
    /// about to be written is longer than `hash-max-listpack-value`.
    pub fn check_lengths<'a>(&mut self, strings: impl IntoIterator<Item = &'a [u8]>, limits: HashLimits) {
        if self.is_listpack() && strings.into_iter().any(|s| s.len() as u64 > limits.max_value) {
            self.convert();
        }
    }

    /// The one-way conversion to hashtable, keeping the fields' order.
    fn convert(&mut self) {
        let Items::Packed(p) = &self.items else { return };
        let mut t = Table { items: RawTable::new(), mem: 0 };
        for (f, v) in p.iter() {
            let hash = t.items.hash(f);
            t.items.push(hash, (Key::copy_from(f), v.into()));
            t.mem += entry_mem(f, v);
        }
        self.items = Items::Table(Box::new(t));
    }

    /// Redis's `hashTypeSet`: sets `field` to `value` (both copied); true if the field is new.
    /// Converts to hashtable when a string is too long or the hash outgrows the listpack.
    pub fn set(&mut self, field: &[u8], value: &[u8], limits: HashLimits) -> bool {
        self.check_lengths([field, value], limits);
        match &mut self.items {
            Items::Packed(p) => {
                let new = p.set(field, value);
                if p.len() as u64 > limits.max_entries {
                    self.convert();
                }
                new
            }
            Items::Table(t) => {
                let added = entry_mem(field, value);
                let (hash, pos) = t.find(field);
                let new = match pos.and_then(|i| t.items.item_mut(i)) {
                    Some((_, old)) => {
                        t.mem -= entry_mem(field, old);
                        // A value of the same length is overwritten in place (no free and
                        // allocation per update of a counter or a fixed-size record).
                        if old.len() == value.len() {
                            old.copy_from_slice(value);
                        } else {
                            *old = value.into();
                        }
                        false
                    }
                    None => {
                        t.items.push(hash, (Key::copy_from(field), value.into()));
                        true
                    }
                };
                t.mem += added;
                new
            }
        }
    }

    /// Removes `field`; true if it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match &mut self.items {
            Items::Packed(p) => p.remove(field),
            Items::Table(t) => match t.find(field).1 {
                Some(i) => {
                    let (f, v) = t.items.remove_at(i);
                    t.mem -= entry_mem(&f, &v);
                    true
                }
                None => false,
            },
        }
    }

    /// Every field and value (listpack: in Redis's order; hashtable: unspecified but stable
    /// while the hash is unchanged).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let (packed, table) = match &self.items {
            Items::Packed(p) => (Some(p.iter()), None),
            Items::Table(t) => (None, Some(t.items.iter().map(|(f, v)| (&**f, &**v)))),
        };
        packed.into_iter().flatten().chain(table.into_iter().flatten())
    }

    /// A uniformly random field and its value (`rand` is a uniform u64). O(n) for a
    /// listpack: callers drawing many take [`HashValue::iter`] once instead.
    pub fn random(&self, rand: u64) -> Option<(&[u8], &[u8])> {
        if self.is_empty() {
            return None;
        }
        self.entry_at((rand % self.len() as u64) as usize)
    }

    /// The entry at position `index` (`0..len()`).
    pub fn entry_at(&self, index: usize) -> Option<(&[u8], &[u8])> {
        match &self.items {
            Items::Packed(p) => p.iter().nth(index),
            Items::Table(t) => t.items.item(index).map(|(f, v)| (&**f, &**v)),
        }
    }

    /// One SCAN step (Redis's `dictScan` guarantee for a hashtable; a listpack is visited
    /// whole); returns the next cursor.
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        match &self.items {
            Items::Packed(p) => {
                p.iter().for_each(|(f, v)| visit(f, v));
                0
            }
            Items::Table(t) => t.items.scan_step(cursor, |(f, v)| visit(f, v)),
        }
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
        assert_eq!((h.len(), h.encoding(), h.get(b"a")), (1, "listpack", Some(&b"22"[..])));
        assert!((PACKED_OVERHEAD + 5..PACKED_OVERHEAD + 64).contains(&h.mem_usage()), "{}", h.mem_usage());
        h.set(b"b", b"1", limits);
        h.set(b"c", b"1", limits);
        assert_eq!(h.encoding(), "listpack");
        h.set(b"d", b"1", limits);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"a"), Some(&b"22"[..]));
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

    #[test]
    fn a_hash_fits_in_a_value_unboxed() {
        assert_eq!(std::mem::size_of::<HashValue>(), 16);
        assert_eq!(std::mem::size_of::<super::super::value::Value>(), 24);
        // A hashtable's slot (the pair, a 32-bit hash and chain link) fits one cache line.
        assert_eq!(std::mem::size_of::<Pair>() + 8, 48);
    }

    /// The packed form keeps Redis's listpack order (new fields at the end, a replaced value
    /// in place, whatever its new length), and lengths past one varint byte.
    #[test]
    fn packed_order_replace_remove_and_long_strings() {
        let limits = HashLimits { max_entries: 100, max_value: 100_000 };
        let mut h = HashValue::new();
        let long = vec![b'x'; 300];
        let huge = vec![b'y'; 20_000];
        for (f, v) in [(&b"f1"[..], &b"v1"[..]), (b"", b""), (b"f3", &long), (b"f4", b"v4")] {
            assert!(h.set(f, v, limits));
        }
        assert!(!h.set(b"f1", &huge, limits));
        assert!(!h.set(b"f3", b"short", limits));
        assert!(!h.set(b"f4", b"v5", limits));
        let all: Vec<(&[u8], &[u8])> = h.iter().collect();
        assert_eq!(all, vec![(&b"f1"[..], &huge[..]), (b"", b""), (b"f3", b"short"), (b"f4", b"v5")]);
        assert_eq!(h.entry_at(2), Some((&b"f3"[..], &b"short"[..])));
        assert_eq!(h.entry_at(4), None);
        assert!(h.remove(b""));
        assert!(!h.contains(b""));
        assert_eq!(h.get(b"f1"), Some(&huge[..]));
        let mut seen = Vec::new();
        assert_eq!(h.scan_step(0, |f, _| seen.push(f.to_vec())), 0);
        assert_eq!(seen, vec![b"f1".to_vec(), b"f3".to_vec(), b"f4".to_vec()]);
        assert!(h.remove(b"f1"));
        assert!(h.mem_usage() < PACKED_OVERHEAD + 200, "deleted space given back: {}", h.mem_usage());
        assert_eq!((h.len(), h.is_listpack()), (2, true));
        // Conversion keeps every pair.
        h.check_lengths([&long[..]], HashLimits { max_entries: 100, max_value: 10 });
        assert_eq!((h.encoding(), h.get(b"f3"), h.get(b"f4")), ("hashtable", Some(&b"short"[..]), Some(&b"v5"[..])));
    }
}
