//! One numbered database: its keys, the side table of their expiry times (Redis's `expires`
//! dict), its memory account and, in cluster mode, its keys by hash slot. `mod.rs`'s
//! `Keyspace` holds the databases and does the lookups that expire, count and touch.

use bytes::Bytes;

use super::entry::lru_clock;
use super::{slot_index, Entry, Key, KeyTable, Value};

/// A key being written: owned by the caller already, or copied only if it is new.
enum NewKey<'a> {
    Owned(Bytes),
    Borrowed(&'a [u8]),
}

impl NewKey<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            NewKey::Owned(k) => k,
            NewKey::Borrowed(k) => k,
        }
    }
}

/// One numbered database.
#[derive(Default)]
pub struct Db {
    pub(super) keys: KeyTable<Entry>,
    /// The keys that have an expiry, with it (absolute, ms): Redis's `expires` dict. Their
    /// entries have [`Entry::has_expire`] set, so a key without one costs no second lookup.
    volatile: KeyTable<i64>,
    /// Approximate bytes held by keys and values, for INFO memory.
    mem: usize,
    /// The LRU clock as of the latest lookup in this database: [`Db::insert`] uses it for
    /// an entry created with `lru == 0` (callers that do not track access time).
    clock: u32,
    /// The mark new entries get (the running rewrite's epoch: they are not part of it).
    pub snap_epoch: u32,
    /// Cluster mode: the keys by hash slot (database 0 only; built when first asked for).
    slot_index: Option<Box<slot_index::SlotIndex>>,
}

/// What a key costs besides its value's own estimate and its bytes kept apart
/// ([`Key::heap_size`]): the table slot (the entry, the key, the 32-bit hash and chain link)
/// and its share of the bucket array (4-byte buckets, one per slot or two). Values round
/// their own allocations (mimalloc has no headers; its small size classes are 8 or 16 bytes
/// apart). Checked against the resident set by
/// `tests/maxmemory.rs::used_memory_tracks_rss` for 100-byte strings and one-field hashes.
const ENTRY_OVERHEAD: usize = std::mem::size_of::<Entry>() + std::mem::size_of::<Key>() + 8 + 6;

/// What a key's expiry costs in the side table: its own copy of the key, the expiry, the
/// slot's hash and chain link and a share of the buckets.
pub(super) const VOLATILE_OVERHEAD: usize = std::mem::size_of::<Key>() + 8 + 8 + 6;

fn volatile_mem(key: &[u8]) -> usize {
    Key::heap_size(key.len()) + VOLATILE_OVERHEAD
}

pub fn entry_mem(key: &[u8], entry: &Entry) -> usize {
    Key::heap_size(key.len()) + entry.value.mem_usage() + ENTRY_OVERHEAD
}

impl Db {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn volatile_len(&self) -> usize {
        self.volatile.len()
    }

    pub fn mem_usage(&self) -> usize {
        self.mem
    }

    /// The entry at a dense position (`index` < `len()`).
    pub fn entry_at(&self, index: usize) -> &Entry {
        self.keys.value_at(index)
    }

    /// The entry for `key` without any expiry check.
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.keys.get(key)
    }

    /// The expiry of `key` whose entry is `entry` (found by the caller).
    pub fn expire_of(&self, key: &[u8], entry: &Entry) -> Option<i64> {
        if entry.has_expire() {
            self.volatile.get(key).copied()
        } else {
            None
        }
    }

    pub(super) fn is_expired(&self, key: &[u8], entry: &Entry, now_ms: i64) -> bool {
        self.expire_of(key, entry).is_some_and(|at| at <= now_ms)
    }

    /// Records `key`'s expiry in the side table and its entry's bit (the entry at `index`).
    fn note_expire(&mut self, index: usize, expire_at: Option<i64>) {
        let entry = self.keys.value_at_mut(index);
        let had = entry.has_expire();
        entry.set_has_expire(expire_at.is_some());
        match expire_at {
            Some(at) => {
                let key = self.keys.key_at(index);
                match self.volatile.get_mut(key) {
                    Some(slot) => *slot = at,
                    None => {
                        let key = key.clone();
                        self.mem += volatile_mem(&key);
                        self.volatile.insert(key, at);
                    }
                }
            }
            None if had => {
                let key = self.keys.key_at(index).clone();
                self.mem -= volatile_mem(&key);
                self.volatile.remove(&key);
            }
            None => {}
        }
    }

    /// Inserts or replaces `key`, with the given expiry. `lru` is the access data of the
    /// new entry: normally `lru_clock(now)`; 0 means "the database's current clock".
    pub fn insert(&mut self, key: Bytes, value: Value, expire_at: Option<i64>, lru: u32) {
        self.put(NewKey::Owned(key), value, expire_at, lru, false);
    }

    /// [`Db::insert`] for a key the caller only borrows: it is copied only when it is new.
    /// `keep_lru`: a replaced entry keeps its access data (LFU counters). Returns whether
    /// the key was created.
    pub fn upsert(&mut self, key: &[u8], value: Value, expire_at: Option<i64>, lru: u32, keep_lru: bool) -> bool {
        self.put(NewKey::Borrowed(key), value, expire_at, lru, keep_lru)
    }

    /// One hash computation per write, whether the key is new or replaced.
    fn put(&mut self, key: NewKey<'_>, value: Value, expire_at: Option<i64>, lru: u32, keep_lru: bool) -> bool {
        let lru = if lru == 0 { self.clock } else { lru };
        let snap = self.snap_epoch;
        let (hash, pos) = self.keys.probe(key.bytes());
        let Some(i) = pos else {
            let key = match key {
                NewKey::Owned(k) => Key::from(k),
                NewKey::Borrowed(k) => Key::copy_from(k),
            };
            let entry = Entry::with_lru(value, lru, snap);
            self.add_absent(hash, key, entry, expire_at);
            return true;
        };
        let key = key.bytes();
        let old = self.keys.value_at_mut(i);
        let old_mem = entry_mem(key, old);
        let lru = if keep_lru { old.lru } else { lru };
        let has_expire = old.has_expire();
        *old = Entry::with_lru(value, lru, snap);
        old.set_has_expire(has_expire);
        self.mem = self.mem - old_mem + entry_mem(key, old);
        self.note_expire(i, expire_at);
        false
    }

    /// Adds an absent key (`hash` from [`KeyTable::probe`]) to the table, the side table of
    /// expiry times, the memory account and the slot index.
    fn add_absent(&mut self, hash: u64, key: Key, mut entry: Entry, expire_at: Option<i64>) {
        self.mem += entry_mem(&key, &entry);
        entry.set_has_expire(expire_at.is_some());
        if let Some(at) = expire_at {
            self.mem += volatile_mem(&key);
            self.volatile.insert(key.clone(), at);
        }
        if let Some(ix) = self.slot_index.as_mut() {
            ix.add(&key);
        }
        self.keys.push_absent(hash, key, entry);
    }

    /// Adds `key` with a whole entry if it is absent (one lookup: a loader's insert, for
    /// which a duplicate is the file's error); false if it was there.
    pub fn insert_new(&mut self, key: Bytes, mut entry: Entry, expire_at: Option<i64>) -> bool {
        let (hash, pos) = self.keys.probe(&key);
        if pos.is_some() {
            return false;
        }
        entry.set_snap(self.snap_epoch);
        self.add_absent(hash, Key::from(key), entry, expire_at);
        true
    }

    /// Inserts or replaces `key` with a whole entry (its access data kept) and an expiry, as
    /// RENAME and MOVE do with the object they carry over.
    pub fn insert_entry(&mut self, key: Bytes, entry: Entry, expire_at: Option<i64>) {
        self.insert(key, entry.value, expire_at, entry.lru);
    }

    /// The absolute expiry of `key` in ms, if it exists and has one (no expiry check).
    pub fn expire_at(&self, key: &[u8]) -> Option<i64> {
        self.keys.get(key).and_then(|e| self.expire_of(key, e))
    }

    pub fn contains_key(&self, key: &[u8]) -> bool {
        self.keys.contains_key(key)
    }

    /// Removes `key`: its entry and its expiry, if it had one.
    pub fn remove(&mut self, key: &[u8]) -> Option<(Entry, Option<i64>)> {
        let (k, entry) = self.keys.remove(key)?;
        self.mem -= entry_mem(&k, &entry);
        if let Some(ix) = self.slot_index.as_mut() {
            ix.remove(key);
        }
        let expire_at = if entry.has_expire() { self.volatile.remove(key).map(|(_, at)| at) } else { None };
        if expire_at.is_some() {
            self.mem -= volatile_mem(key);
        }
        Some((entry, expire_at))
    }

    /// Sets (or clears) the expiry of an existing key; false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], expire_at: Option<i64>) -> bool {
        let Some(i) = self.keys.position(key) else {
            return false;
        };
        self.note_expire(i, expire_at);
        true
    }

    /// Runs `f` on the entry of an existing key, keeping the memory account right (`f` may
    /// change the value; the expiry changes through [`Db::set_expire`] only).
    pub fn modify<R>(&mut self, key: &[u8], f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let i = self.keys.position(key)?;
        Some(self.modify_at(i, f))
    }

    /// [`Db::modify`] of the entry at a dense position (from [`Keyspace::write_position`],
    /// with no insert or removal since): no second hash computation.
    pub fn modify_at<R>(&mut self, index: usize, f: impl FnOnce(&mut Entry) -> R) -> R {
        let entry = self.keys.value_at_mut(index);
        let before = entry.value.mem_usage();
        let has_expire = entry.has_expire();
        let r = f(entry);
        debug_assert_eq!(entry.has_expire(), has_expire, "an expiry changes through Db::set_expire");
        let after = entry.value.mem_usage();
        self.mem = self.mem + after - before;
        r
    }

    /// Removes every key; returns how many there were.
    pub fn clear(&mut self) -> usize {
        let n = self.keys.len();
        let (clock, snap_epoch, indexed) = (self.clock, self.snap_epoch, self.slot_index.is_some());
        *self = Db::default();
        self.clock = clock;
        self.snap_epoch = snap_epoch;
        if indexed {
            self.slot_index = Some(Box::new(slot_index::SlotIndex::build(std::iter::empty())));
        }
        n
    }

    /// Advances the clock [`Db::insert`] falls back on.
    pub fn set_clock(&mut self, now_ms: i64) {
        self.clock = lru_clock(now_ms);
    }

    /// The key and entry at a dense position (a rewrite walks positions downwards: a removal
    /// moves the last entry into the hole, which is then never a position still to visit).
    /// The expiry comes with them: a walk serializes all three.
    pub fn slot_at_mut(&mut self, index: usize) -> Option<(&Key, &mut Entry, Option<i64>)> {
        let (key, entry) = self.keys.slot_at_mut(index)?;
        let expire_at = if entry.has_expire() { self.volatile.get(key).copied() } else { None };
        Some((key, entry, expire_at))
    }

    /// The dense position of `key`.
    pub fn position(&self, key: &[u8]) -> Option<usize> {
        self.keys.position(key)
    }

    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.keys.keys()
    }

    /// The keys by hash slot (cluster mode), built from the keys present on first use.
    fn slot_index(&mut self) -> &slot_index::SlotIndex {
        if self.slot_index.is_none() {
            self.slot_index = Some(Box::new(slot_index::SlotIndex::build(self.keys.keys())));
        }
        self.slot_index.as_deref().expect("just built")
    }

    /// The keys in hash slot `slot`.
    pub fn keys_in_slot(&mut self, slot: u16) -> impl Iterator<Item = &Key> {
        self.slot_index().keys(slot)
    }

    pub fn count_in_slot(&mut self, slot: u16) -> usize {
        self.slot_index().count(slot)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &Entry)> {
        self.keys.iter()
    }

    pub fn scan_step(&self, cursor: u64, visit: impl FnMut(&Key, &Entry)) -> u64 {
        self.keys.scan_step(cursor, visit)
    }

    /// A uniformly random key (possibly an expired one; callers check).
    pub fn random_entry(&self, rand: u64) -> Option<(&Key, &Entry)> {
        if self.keys.is_empty() {
            return None;
        }
        self.keys.entry_at((rand % self.keys.len() as u64) as usize)
    }

    /// INFO keyspace's `avg_ttl`: the mean time left (ms) of the keys with an expiry, over
    /// all of them up to 64, else over 64 taken at random (Redis keeps a running estimate
    /// from its expiry sampling; 0 when there is none).
    pub fn avg_ttl_ms(&self, now_ms: i64, rng: &mut impl FnMut() -> u64) -> i64 {
        let n = self.volatile.len();
        let ttl = |at: &i64| (at - now_ms).max(0);
        let ttls: Vec<i64> = if n <= 64 {
            self.volatile.iter().map(|(_, at)| ttl(at)).collect()
        } else {
            (0..64).filter_map(|_| self.volatile.entry_at((rng() % n as u64) as usize).map(|(_, at)| ttl(at))).collect()
        };
        if ttls.is_empty() {
            0
        } else {
            ttls.iter().sum::<i64>() / ttls.len() as i64
        }
    }

    /// A uniformly random key with an expiry, and its expiry.
    pub fn random_volatile(&self, rand: u64) -> Option<(&Key, i64)> {
        if self.volatile.is_empty() {
            return None;
        }
        self.volatile.entry_at((rand % self.volatile.len() as u64) as usize).map(|(k, at)| (k, *at))
    }
}
