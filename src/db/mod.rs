//! The keyspace: databases of binary keys to values, with expiry (lazy on access and an
//! active sampling cycle). Pure data structures: no I/O, no protocol.
//!
//! Every deletion caused by expiry is recorded in `expired` so the executor can propagate it
//! (to the log and replicas) as a `DEL`, the way Redis propagates expirations.

mod database;
mod dense;
pub mod digest;
mod entry;
pub mod evict;
pub mod hash;
mod key;
pub mod list;
mod list_chunks;
mod list_pack;
pub mod rdb;
pub mod rdb_file;
pub mod rdb_stream;
pub mod set;
mod siphash;
mod slot_index;
pub mod stream;
mod stream_group;
mod stream_node;
mod table;
mod value;
mod varint;
pub mod walk;
pub mod zset;

pub use database::{entry_mem, Db};
pub use entry::{lru_clock, Entry, LfuParams, LFU_INIT_VAL, LRU_CLOCK_MAX};
pub use key::Key;
pub use table::KeyTable;
pub use value::{StrEncoding, StrValue, Value};

/// Encoding limits that collections built in one go (from a snapshot, a DUMP payload) are
/// given: the server's configuration.
#[derive(Debug, Clone, Copy)]
pub struct BuildLimits {
    pub hash: hash::HashLimits,
    pub max_intset: u64,
    pub zset_entries: i64,
    pub zset_value: i64,
    pub stream: stream::NodeLimits,
}

impl Default for BuildLimits {
    fn default() -> Self {
        BuildLimits {
            hash: hash::HashLimits::default(),
            max_intset: 512,
            zset_entries: 128,
            zset_value: 64,
            stream: stream::NodeLimits::default(),
        }
    }
}

use bytes::Bytes;

/// All databases plus the bookkeeping that spans them.
pub struct Keyspace {
    pub dbs: Vec<Db>,
    /// Keys deleted by expiry since the executor last drained this: (db, key).
    pub expired: Vec<(usize, Bytes)>,
    /// Keys deleted by eviction since the executor last drained this: (db, key).
    pub evicted: Vec<(usize, Bytes)>,
    pub stats: KeyspaceStats,
    /// Replicas never expire keys themselves; they only hide them.
    pub passive_expiry: bool,
    /// Record read misses in `key_misses` (only while `keymiss` events are enabled).
    pub track_misses: bool,
    /// Keys a read lookup missed since the executor last drained this: (db, key).
    pub key_misses: Vec<(usize, Bytes)>,
    /// Whether deletions by expiry and eviction are queued in `deletions` for the log.
    pub log_deletions: bool,
    /// Keys expired or evicted since the log last drained this: each becomes a DEL record.
    pub deletions: Vec<(usize, Bytes)>,
    /// LFU tuning used when lookups touch a key (the owner of the configuration keeps it
    /// in step with `lfu-log-factor` and `lfu-decay-time`).
    pub lfu: LfuParams,
    rng: u64,
    /// Eviction candidates kept between `maxmemory` evictions.
    evict_pool: evict::EvictionPool,
    /// Time each eviction's deletion (the latency monitor is on), keeping the slowest.
    pub time_evictions: bool,
    pub slowest_eviction_us: u64,
}

#[derive(Debug, Default, Clone)]
pub struct KeyspaceStats {
    pub expired_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub expire_cycle_time_us: u64,
    /// Keys deleted by `maxmemory` eviction (INFO stats `evicted_keys`).
    pub evicted_keys: u64,
}

impl Keyspace {
    pub fn new(databases: usize) -> Self {
        Keyspace {
            dbs: (0..databases.max(1)).map(|_| Db::default()).collect(),
            expired: Vec::new(),
            evicted: Vec::new(),
            stats: KeyspaceStats::default(),
            passive_expiry: false,
            track_misses: false,
            key_misses: Vec::new(),
            log_deletions: false,
            deletions: Vec::new(),
            lfu: LfuParams::default(),
            rng: 0x2545_F491_4F6C_DD1D,
            evict_pool: evict::EvictionPool::default(),
            time_evictions: false,
            slowest_eviction_us: 0,
        }
    }

    fn next_rand(&mut self) -> u64 {
        self.rng = crate::util::xorshift(self.rng);
        self.rng
    }

    fn note_expired(&mut self, db: usize, key: Bytes) {
        if self.log_deletions {
            self.deletions.push((db, key.clone()));
        }
        self.expired.push((db, key));
    }

    /// Records a deletion by eviction (for events and for the log).
    pub fn note_evicted(&mut self, db: usize, key: Bytes) {
        if self.log_deletions {
            self.deletions.push((db, key.clone()));
        }
        self.evicted.push((db, key));
    }

    /// Up to `count` keys of database 0 in hash slot `slot` (cluster mode).
    pub fn slot_keys(&mut self, slot: u16, count: usize) -> Vec<Bytes> {
        self.dbs[0].keys_in_slot(slot).take(count).map(|k| Bytes::copy_from_slice(k)).collect()
    }

    /// How many keys of database 0 are in hash slot `slot`.
    pub fn slot_count(&mut self, slot: u16) -> usize {
        self.dbs[0].count_in_slot(slot)
    }

    pub fn db(&self, index: usize) -> &Db {
        &self.dbs[index]
    }

    pub fn db_mut(&mut self, index: usize) -> &mut Db {
        &mut self.dbs[index]
    }

    /// Deletes `key` if its time has come; true if it is (now) logically absent.
    pub fn expire_if_needed(&mut self, db: usize, key: &[u8], now_ms: i64) -> bool {
        self.dbs[db].set_clock(now_ms);
        let Some(entry) = self.dbs[db].keys.get(key) else {
            return true;
        };
        if !self.dbs[db].is_expired(key, entry, now_ms) {
            return false;
        }
        if !self.passive_expiry {
            self.dbs[db].remove(key);
            self.stats.expired_keys += 1;
            self.note_expired(db, Bytes::copy_from_slice(key));
        }
        true
    }

    /// Finds a live key with one hash computation: deletes (or, on a replica, hides) it when
    /// expired, and optionally updates its access time. Returns its dense position.
    fn lookup(&mut self, db: usize, key: &[u8], now_ms: i64, touch: bool) -> Option<usize> {
        self.dbs[db].set_clock(now_ms);
        let pos = self.dbs[db].keys.position(key)?;
        let d = &self.dbs[db];
        if d.is_expired(key, d.keys.value_at(pos), now_ms) {
            if !self.passive_expiry {
                self.dbs[db].remove(key);
                self.stats.expired_keys += 1;
                self.note_expired(db, Bytes::copy_from_slice(key));
            }
            return None;
        }
        if touch {
            let rand = self.next_rand();
            let lfu = self.lfu;
            self.dbs[db].keys.value_at_mut(pos).touch(now_ms, lfu, rand);
        }
        Some(pos)
    }

    /// Looks a key up for writing (as [`Keyspace::get_mut`]) and returns its dense position,
    /// valid in `db_mut(db)` until the next insert or removal.
    pub fn write_position(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<usize> {
        self.lookup(db, key, now_ms, true)
    }

    /// Looks a key up for reading (Redis's `lookupKeyRead`): expired keys are deleted (or
    /// hidden) first, a hit or miss is counted, and the key's access time is updated.
    pub fn get(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&Entry> {
        let pos = self.read_lookup(db, key, now_ms, true)?;
        Some(self.dbs[db].keys.value_at(pos))
    }

    /// [`Keyspace::get_mut`]'s lookup for the key's expiry alone: `None` for a missing key,
    /// `Some(None)` for a live key without one (one hash computation unless it has one).
    pub fn write_expiry(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<Option<i64>> {
        let pos = self.lookup(db, key, now_ms, true)?;
        let d = &self.dbs[db];
        Some(d.expire_of(key, d.keys.value_at(pos)))
    }

    /// [`Keyspace::write_expiry`] with [`Keyspace::get_no_touch`]'s lookup (TTL and friends).
    pub fn read_expiry(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<Option<i64>> {
        let pos = self.read_lookup(db, key, now_ms, false)?;
        let d = &self.dbs[db];
        Some(d.expire_of(key, d.keys.value_at(pos)))
    }

    /// [`Keyspace::get`] with the key's expiry.
    pub fn get_with_expiry(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<(&Entry, Option<i64>)> {
        let pos = self.read_lookup(db, key, now_ms, true)?;
        let d = &self.dbs[db];
        let entry = d.keys.value_at(pos);
        Some((entry, d.expire_of(key, entry)))
    }

    /// Like [`Keyspace::get`] but leaves the access time alone (Redis's `LOOKUP_NOTOUCH`,
    /// used by TYPE, TTL, EXISTS, OBJECT...).
    pub fn get_no_touch(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&Entry> {
        let pos = self.read_lookup(db, key, now_ms, false)?;
        Some(self.dbs[db].keys.value_at(pos))
    }

    /// A read lookup: counts the hit or miss (and records misses for `keymiss` events).
    fn read_lookup(&mut self, db: usize, key: &[u8], now_ms: i64, touch: bool) -> Option<usize> {
        match self.lookup(db, key, now_ms, touch) {
            Some(pos) => {
                self.stats.keyspace_hits += 1;
                Some(pos)
            }
            None => {
                self.stats.keyspace_misses += 1;
                if self.track_misses {
                    self.key_misses.push((db, Bytes::copy_from_slice(key)));
                }
                None
            }
        }
    }

    /// Looks a key up for writing (Redis's `lookupKeyWrite`): same expiry rule as
    /// [`Keyspace::get`], updates the access time, counts no hit or miss.
    /// Changing the value through it bypasses memory accounting: use [`Db::modify`] for that.
    pub fn get_mut(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        let pos = self.lookup(db, key, now_ms, true)?;
        Some(self.dbs[db].keys.value_at_mut(pos))
    }

    pub fn exists(&mut self, db: usize, key: &[u8], now_ms: i64) -> bool {
        !self.expire_if_needed(db, key, now_ms)
    }

    /// One active-expiry pass, Redis-style: sample up to 20 volatile keys per database,
    /// delete the expired ones, and repeat on a database while more than a quarter of the
    /// sample was expired, within `budget_us`. Returns the number of keys deleted.
    pub fn active_expire_cycle(&mut self, now_ms: i64, budget_us: u64, rng: &mut impl FnMut() -> u64) -> usize {
        for db in &mut self.dbs {
            db.set_clock(now_ms);
        }
        if self.passive_expiry {
            return 0;
        }
        let start = std::time::Instant::now();
        let mut deleted = 0;
        for db in 0..self.dbs.len() {
            loop {
                let sample = self.dbs[db].volatile_len().min(20);
                if sample == 0 {
                    break;
                }
                let mut expired_here = 0;
                for _ in 0..sample {
                    let Some((key, at)) = self.dbs[db].random_volatile(rng()) else {
                        break;
                    };
                    if at <= now_ms {
                        let key = key.to_bytes();
                        self.dbs[db].remove(&key);
                        self.stats.expired_keys += 1;
                        self.note_expired(db, key);
                        expired_here += 1;
                    }
                }
                deleted += expired_here;
                if expired_here * 4 <= sample || start.elapsed().as_micros() as u64 > budget_us {
                    break;
                }
            }
            if start.elapsed().as_micros() as u64 > budget_us {
                break;
            }
        }
        self.stats.expire_cycle_time_us += start.elapsed().as_micros() as u64;
        deleted
    }

    /// Empties every database; returns how many keys there were.
    pub fn flush_all(&mut self) -> usize {
        self.dbs.iter_mut().map(|db| db.clear()).sum()
    }

    /// Exchanges the contents of two databases (SWAPDB); false if an index is out of range.
    pub fn swap_dbs(&mut self, a: usize, b: usize) -> bool {
        if a >= self.dbs.len() || b >= self.dbs.len() {
            return false;
        }
        self.dbs.swap(a, b);
        true
    }

    /// A random key that is not expired (Redis's `dbRandomKey`): expired keys met on the
    /// way are deleted. On a replica, where expired keys are only hidden, gives up after 100
    /// tries when every key is volatile and returns a possibly expired key, as Redis does.
    pub fn random_key(&mut self, db: usize, now_ms: i64, rng: &mut impl FnMut() -> u64) -> Option<Bytes> {
        let all_volatile = self.dbs[db].len() == self.dbs[db].volatile_len();
        let mut tries = 100;
        loop {
            let (key, volatile) = {
                let (k, e) = self.dbs[db].random_entry(rng())?;
                (k.to_bytes(), e.has_expire())
            };
            if volatile {
                if all_volatile && self.passive_expiry {
                    tries -= 1;
                    if tries == 0 {
                        return Some(key);
                    }
                }
                if self.expire_if_needed(db, &key, now_ms) {
                    continue;
                }
            }
            return Some(key);
        }
    }

    pub fn total_mem(&self) -> usize {
        self.dbs.iter().map(|d| d.mem_usage()).sum()
    }

    /// The memory reported as `used_memory`: the data estimate plus a fixed baseline for the
    /// server's own structures.
    pub fn used_memory(&self) -> usize {
        self.total_mem() + USED_MEMORY_BASELINE
    }
}

/// What `used_memory` counts besides the data (Redis reports about this much for an empty
/// server).
const USED_MEMORY_BASELINE: usize = 1024 * 1024;

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000;

    fn b(s: &str) -> Bytes {
        Bytes::copy_from_slice(s.as_bytes())
    }

    #[test]
    fn memory_and_volatile_accounting() {
        let mut db = Db::default();
        db.insert(b("a"), Value::string("hello"), None, 0);
        // An expiry is counted for its side-table slot, and uncounted with it.
        let plain = db.mem_usage();
        db.set_expire(b"a", Some(T0));
        assert_eq!(db.mem_usage(), plain + database::VOLATILE_OVERHEAD);
        db.set_expire(b"a", None);
        assert_eq!(db.mem_usage(), plain);
        db.insert(b("b"), Value::string("world"), Some(T0 + 1000), 0);
        assert_eq!(db.volatile_len(), 1);
        // Replacing a volatile key with a persistent one drops it from the index.
        db.insert(b("b"), Value::string("again"), None, 0);
        assert_eq!(db.volatile_len(), 0);
        assert!(db.set_expire(b"a", Some(T0)));
        assert_eq!((db.volatile_len(), db.expire_at(b"a")), (1, Some(T0)));
        assert!(db.set_expire(b"a", Some(T0 + 5)), "a new expiry replaces the old one");
        assert_eq!((db.volatile_len(), db.expire_at(b"a")), (1, Some(T0 + 5)));
        assert!(db.set_expire(b"a", None));
        assert_eq!((db.volatile_len(), db.expire_at(b"a")), (0, None));
        assert!(!db.set_expire(b"nope", Some(T0)));
        db.set_expire(b"b", Some(T0));
        db.modify(b"b", |e| e.value = Value::string(vec![b'x'; 1000]));
        // Replacing a value keeps the expiry it is given, and the entry's bit with it.
        db.insert(b("b"), Value::string(vec![b'y'; 1000]), Some(T0), 0);
        assert_eq!((db.volatile_len(), db.expire_at(b"b")), (1, Some(T0)));
        let (entry, expire_at) = db.remove(b"b").unwrap();
        assert_eq!((db.volatile_len(), expire_at), (0, Some(T0)));
        db.insert_entry(b("c"), entry, expire_at);
        assert_eq!((db.volatile_len(), db.expire_at(b"c")), (1, Some(T0)));
        assert!(db.peek(b"c").unwrap().has_expire() && !db.peek(b"a").unwrap().has_expire());
        db.remove(b"a");
        db.remove(b"c");
        assert_eq!((db.mem_usage(), db.len(), db.volatile_len()), (0, 0, 0));
        db.insert(b("d"), Value::string("v"), Some(T0), 0);
        assert_eq!(db.clear(), 1);
        assert_eq!((db.mem_usage(), db.len(), db.volatile_len()), (0, 0, 0));
    }

    #[test]
    fn an_entry_is_32_bytes() {
        // Every key pays for it: the value (24), the LRU/LFU word and the rewrite epoch with
        // the has-an-expiry bit (4 + 4).
        assert_eq!(std::mem::size_of::<Entry>(), 32);
        let mut e = Entry::new(Value::string("v"), T0);
        e.set_snap(entry::SNAP_EPOCH_MAX);
        e.set_has_expire(true);
        assert_eq!((e.snap(), e.has_expire()), (entry::SNAP_EPOCH_MAX, true));
        e.set_snap(3);
        e.set_has_expire(false);
        assert_eq!((e.snap(), e.has_expire()), (3, false));
        let mut db = Db::default();
        db.insert(b("min"), Value::string("v"), Some(i64::MIN), 0);
        assert_eq!(db.expire_at(b"min"), Some(i64::MIN), "any expiry is kept as given");
    }

    #[test]
    fn idle_time_and_lfu_counter() {
        let mut e = Entry::new(Value::string("v"), T0);
        assert_eq!(e.idle_ms(T0 + 999), 0);
        assert_eq!(e.idle_ms(T0 + 5_000), 5_000);
        assert_eq!(e.lfu_counter(T0, 1), LFU_INIT_VAL);
        // The first access always counts; the counter then grows logarithmically.
        e.touch(T0 + 5_000, LfuParams::default(), u64::MAX);
        assert_eq!((e.idle_ms(T0 + 5_000), e.lfu_counter(T0 + 5_000, 1)), (0, 6));
        e.touch(T0 + 5_000, LfuParams::default(), u64::MAX);
        assert_eq!(e.lfu_counter(T0 + 5_000, 1), 6, "p = 1/11 and r ~ 1: no increment");
        e.touch(T0 + 5_000, LfuParams::default(), 0);
        assert_eq!(e.lfu_counter(T0 + 5_000, 1), 7);
        // One decrement per decay period (minutes) since the last access.
        assert_eq!(e.lfu_counter(T0 + 5_000 + 3 * 60_000, 1), 4);
        assert_eq!(e.lfu_counter(T0 + 5_000 + 3 * 60_000, 0), 7);
        assert_eq!(e.lfu_counter(T0 + 5_000 + 600 * 60_000, 1), 0);
        // The 24-bit clock wraps like Redis's.
        let wrap = Entry::with_lru(Value::string("v"), LRU_CLOCK_MAX - 1, 0);
        let now = ((LRU_CLOCK_MAX as i64 + 1) * 7 + 3) * 1000;
        assert_eq!(wrap.idle_ms(now), 4_000);
    }

    #[test]
    fn lookups_touch_or_not() {
        let mut ks = Keyspace::new(2);
        ks.db_mut(0).insert(b("k"), Value::string("v"), None, lru_clock(T0));
        ks.get_no_touch(0, b"k", T0 + 10_000);
        assert_eq!(ks.db(0).peek(b"k").unwrap().idle_ms(T0 + 10_000), 10_000);
        ks.get(0, b"k", T0 + 10_000);
        assert_eq!(ks.db(0).peek(b"k").unwrap().idle_ms(T0 + 10_000), 0);
        ks.get_mut(0, b"k", T0 + 20_000);
        assert_eq!(ks.db(0).peek(b"k").unwrap().idle_ms(T0 + 20_000), 0);
        assert_eq!((ks.stats.keyspace_hits, ks.stats.keyspace_misses), (2, 0));
        assert!(ks.get(0, b"nope", T0).is_none());
        assert_eq!(ks.stats.keyspace_misses, 1);
        // An entry created with lru 0 takes the clock of the latest lookup.
        ks.db_mut(0).insert(b("fresh"), Value::string("v"), None, 0);
        assert_eq!(ks.db(0).peek(b"fresh").unwrap().idle_ms(T0 + 5_000), 5_000);
    }

    #[test]
    fn expiry_swap_and_random_keys() {
        let mut ks = Keyspace::new(3);
        ks.db_mut(0).insert(b("old"), Value::string("v"), Some(T0 - 1), 0);
        ks.db_mut(0).insert(b("live"), Value::string("v"), Some(T0 + 1000), 0);
        ks.db_mut(0).insert(b("plain"), Value::string("v"), None, 0);
        assert!(ks.get(0, b"old", T0).is_none());
        assert_eq!(ks.expired, vec![(0, b("old"))]);
        assert_eq!(ks.stats.expired_keys, 1);
        let mut x = 1u64;
        let mut rng = || {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            x
        };
        for _ in 0..50 {
            let k = ks.random_key(0, T0 + 2000, &mut rng).unwrap();
            assert_eq!(k, b("plain"), "an expired key was returned");
        }
        assert_eq!(ks.db(0).len(), 1);
        assert!(ks.swap_dbs(0, 2));
        assert!(ks.db(0).is_empty() && ks.db(2).len() == 1);
        assert!(!ks.swap_dbs(0, 3));
        assert!(ks.random_key(0, T0, &mut rng).is_none());
        assert_eq!(ks.flush_all(), 1);
    }

    #[test]
    fn active_expiry_empties_volatile_keys() {
        let mut ks = Keyspace::new(1);
        for i in 0..2000 {
            ks.db_mut(0).insert(Bytes::from(format!("k{i}")), Value::string("v"), Some(T0), 0);
        }
        ks.db_mut(0).insert(b("keep"), Value::string("v"), None, 0);
        let mut x = 7u64;
        let mut rng = || {
            x = crate::util::xorshift(x);
            x
        };
        let mut rounds = 0;
        while ks.db(0).volatile_len() > 0 {
            ks.active_expire_cycle(T0 + 1, 1_000_000, &mut rng);
            rounds += 1;
            assert!(rounds < 10);
        }
        assert_eq!((ks.db(0).len(), ks.db(0).mem_usage() > 0), (1, true));
    }
}
