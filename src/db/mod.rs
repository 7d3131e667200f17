//! The keyspace: databases of binary keys to values, with expiry (lazy on access and an
//! active sampling cycle). Pure data structures: no I/O, no protocol.
//!
//! Every deletion caused by expiry is recorded in `expired` so the executor can propagate it
//! (to the log and replicas) as a `DEL`, the way Redis propagates expirations.

mod table;
mod value;

pub use table::KeyTable;
pub use value::{StrValue, Value};

use bytes::Bytes;

/// One key's slot: its value, absolute expiry time in ms, and last access (LRU clock, s).
#[derive(Debug, Clone)]
pub struct Entry {
    pub value: Value,
    pub expire_at: Option<i64>,
    pub lru: u32,
}

/// One numbered database.
#[derive(Default)]
pub struct Db {
    keys: KeyTable<Entry>,
    /// The keys that have an expiry, for active-expiry sampling.
    volatile: KeyTable<()>,
    /// Approximate bytes held by keys and values, for INFO memory.
    mem: usize,
}

fn entry_mem(key: &[u8], entry: &Entry) -> usize {
    key.len() + entry.value.mem_usage() + 64
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

    /// The entry for `key` without any expiry check.
    pub fn peek(&self, key: &[u8]) -> Option<&Entry> {
        self.keys.get(key)
    }

    fn is_expired(entry: &Entry, now_ms: i64) -> bool {
        entry.expire_at.is_some_and(|at| at <= now_ms)
    }

    /// Inserts or replaces `key`, with the given expiry.
    pub fn insert(&mut self, key: Bytes, value: Value, expire_at: Option<i64>, lru: u32) {
        if let Some(old) = self.keys.get(&key) {
            self.mem -= entry_mem(&key, old);
        }
        let entry = Entry { value, expire_at, lru };
        self.mem += entry_mem(&key, &entry);
        if expire_at.is_some() {
            self.volatile.insert(key.clone(), ());
        } else if self.keys.get(&key).is_some_and(|e| e.expire_at.is_some()) {
            self.volatile.remove(&key);
        }
        self.keys.insert(key, entry);
    }

    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let (k, entry) = self.keys.remove(key)?;
        self.mem -= entry_mem(&k, &entry);
        if entry.expire_at.is_some() {
            self.volatile.remove(key);
        }
        Some(entry)
    }

    /// Sets (or clears) the expiry of an existing key; false if the key is absent.
    pub fn set_expire(&mut self, key: &[u8], expire_at: Option<i64>) -> bool {
        let Some(entry) = self.keys.get_mut(key) else {
            return false;
        };
        let had = entry.expire_at.is_some();
        entry.expire_at = expire_at;
        match (had, expire_at.is_some()) {
            (false, true) => {
                self.volatile.insert(Bytes::copy_from_slice(key), ());
            }
            (true, false) => {
                self.volatile.remove(key);
            }
            _ => {}
        }
        true
    }

    /// Runs `f` on the value of an existing key, keeping the memory account right.
    pub fn modify<R>(&mut self, key: &[u8], f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        let entry = self.keys.get_mut(key)?;
        let before = entry.value.mem_usage();
        let r = f(entry);
        let after = entry.value.mem_usage();
        self.mem = self.mem + after - before;
        Some(r)
    }

    pub fn clear(&mut self) {
        *self = Db::default();
    }

    pub fn keys(&self) -> impl Iterator<Item = &Bytes> {
        self.keys.keys()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Bytes, &Entry)> {
        self.keys.iter()
    }

    pub fn scan_step(&self, cursor: u64, visit: impl FnMut(&Bytes, &Entry)) -> u64 {
        self.keys.scan_step(cursor, visit)
    }

    /// A uniformly random key (possibly an expired one; callers check).
    pub fn random_entry(&self, rand: u64) -> Option<(&Bytes, &Entry)> {
        if self.keys.is_empty() {
            return None;
        }
        self.keys.entry_at((rand % self.keys.len() as u64) as usize)
    }

    pub fn random_volatile_key(&self, rand: u64) -> Option<&Bytes> {
        if self.volatile.is_empty() {
            return None;
        }
        self.volatile.entry_at((rand % self.volatile.len() as u64) as usize).map(|(k, _)| k)
    }
}

/// All databases plus the bookkeeping that spans them.
pub struct Keyspace {
    pub dbs: Vec<Db>,
    /// Keys deleted by expiry since the executor last drained this: (db, key).
    pub expired: Vec<(usize, Bytes)>,
    pub stats: KeyspaceStats,
    /// Replicas never expire keys themselves; they only hide them.
    pub passive_expiry: bool,
}

#[derive(Debug, Default, Clone)]
pub struct KeyspaceStats {
    pub expired_keys: u64,
    pub keyspace_hits: u64,
    pub keyspace_misses: u64,
    pub expire_cycle_time_us: u64,
}

impl Keyspace {
    pub fn new(databases: usize) -> Self {
        Keyspace {
            dbs: (0..databases.max(1)).map(|_| Db::default()).collect(),
            expired: Vec::new(),
            stats: KeyspaceStats::default(),
            passive_expiry: false,
        }
    }

    pub fn db(&self, index: usize) -> &Db {
        &self.dbs[index]
    }

    pub fn db_mut(&mut self, index: usize) -> &mut Db {
        &mut self.dbs[index]
    }

    /// Deletes `key` if its time has come; true if it is (now) logically absent.
    pub fn expire_if_needed(&mut self, db: usize, key: &[u8], now_ms: i64) -> bool {
        let Some(entry) = self.dbs[db].keys.get(key) else {
            return true;
        };
        if !Db::is_expired(entry, now_ms) {
            return false;
        }
        if !self.passive_expiry {
            self.dbs[db].remove(key);
            self.stats.expired_keys += 1;
            self.expired.push((db, Bytes::copy_from_slice(key)));
        }
        true
    }

    /// Looks a key up for reading: expired keys are deleted (or hidden) first.
    pub fn get(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&Entry> {
        if self.expire_if_needed(db, key, now_ms) {
            return None;
        }
        self.dbs[db].keys.get(key)
    }

    /// Looks a key up for writing (same expiry rule as [`Keyspace::get`]).
    pub fn get_mut(&mut self, db: usize, key: &[u8], now_ms: i64) -> Option<&mut Entry> {
        if self.expire_if_needed(db, key, now_ms) {
            return None;
        }
        self.dbs[db].keys.get_mut(key)
    }

    pub fn exists(&mut self, db: usize, key: &[u8], now_ms: i64) -> bool {
        !self.expire_if_needed(db, key, now_ms)
    }

    /// One active-expiry pass, Redis-style: sample up to 20 volatile keys per database,
    /// delete the expired ones, and repeat on a database while more than a quarter of the
    /// sample was expired, within `budget_us`. Returns the number of keys deleted.
    pub fn active_expire_cycle(&mut self, now_ms: i64, budget_us: u64, rng: &mut impl FnMut() -> u64) -> usize {
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
                    let Some(key) = self.dbs[db].random_volatile_key(rng()).cloned() else {
                        break;
                    };
                    if self.dbs[db].peek(&key).is_some_and(|e| Db::is_expired(e, now_ms)) {
                        self.dbs[db].remove(&key);
                        self.stats.expired_keys += 1;
                        self.expired.push((db, key));
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

    pub fn flush_all(&mut self) {
        for db in &mut self.dbs {
            db.clear();
        }
    }

    pub fn total_mem(&self) -> usize {
        self.dbs.iter().map(|d| d.mem_usage()).sum()
    }
}
