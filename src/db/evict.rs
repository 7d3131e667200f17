//! Eviction under `maxmemory`: choosing keys to delete by `maxmemory-policy`, with Redis's
//! approximate sampling (`maxmemory-samples`).
//!
//! Like Redis's `evict.c`: the LRU, LFU and TTL policies sample `maxmemory-samples` keys in
//! every database (all keys, or only those with an expiry for the `volatile-*` policies) into
//! a pool of the [`POOL_SIZE`] best candidates seen so far, kept across calls, and evict the
//! best one; the random policies pick a uniformly random key, visiting the databases in
//! turn. A pool entry may be stale by the time it is chosen (the key deleted, touched, or its
//! expiry removed): it is looked at again before being evicted, so a `volatile-*` policy never
//! deletes a key without an expiry and a key read since it was sampled is ranked afresh.

use std::time::{Duration, Instant};

use bytes::Bytes;

use super::{Entry, Keyspace};

/// The eviction policies of `maxmemory-policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    NoEviction,
    AllKeysLru,
    VolatileLru,
    AllKeysLfu,
    VolatileLfu,
    AllKeysRandom,
    VolatileRandom,
    VolatileTtl,
}

impl Policy {
    pub fn parse(name: &str) -> Policy {
        match name {
            "allkeys-lru" => Policy::AllKeysLru,
            "volatile-lru" => Policy::VolatileLru,
            "allkeys-lfu" => Policy::AllKeysLfu,
            "volatile-lfu" => Policy::VolatileLfu,
            "allkeys-random" => Policy::AllKeysRandom,
            "volatile-random" => Policy::VolatileRandom,
            "volatile-ttl" => Policy::VolatileTtl,
            _ => Policy::NoEviction,
        }
    }

    /// True for the policies that only consider keys with an expiry.
    pub fn volatile_only(self) -> bool {
        matches!(self, Policy::VolatileLru | Policy::VolatileLfu | Policy::VolatileRandom | Policy::VolatileTtl)
    }

    /// How good a victim `entry` is under this (pool-based) policy: higher is evicted first.
    /// Redis's `idle` of `evictionPoolPopulate`: the idle time for LRU, 255 minus the decayed
    /// counter for LFU, and the complement of the expiry time for volatile-ttl.
    fn score(self, entry: &Entry, expire_at: Option<i64>, now_ms: i64, decay_minutes: u64) -> u64 {
        match self {
            Policy::AllKeysLfu | Policy::VolatileLfu => 255 - entry.lfu_counter(now_ms, decay_minutes) as u64,
            Policy::VolatileTtl => u64::MAX - expire_at.map_or(u64::MAX, |at| at.max(0) as u64),
            _ => entry.idle_ms(now_ms),
        }
    }
}

/// Redis's `EVPOOL_SIZE`.
pub const POOL_SIZE: usize = 16;

/// How long one call may keep evicting (Redis's `evictionTimeLimitUs` at the default
/// `maxmemory-eviction-tenacity` is 500 us; a little more here, there being no background
/// eviction timer to carry on). Checked every [`CHECK_EVERY`] evictions.
const TIME_LIMIT: Duration = Duration::from_millis(2);
const CHECK_EVERY: u64 = 16;

#[derive(Debug, Clone)]
struct Candidate {
    score: u64,
    db: usize,
    key: Bytes,
}

/// The eviction state kept between calls: the candidate pool (sorted by ascending score,
/// the best victim last), the policy its scores were computed for, and the next database
/// the random policies visit.
#[derive(Debug, Default)]
pub struct EvictionPool {
    candidates: Vec<Candidate>,
    policy: Option<Policy>,
    next_db: usize,
}

impl EvictionPool {
    /// Offers a sampled key: kept if the pool has room or it beats the worst candidate. A
    /// key already in the pool takes the new (fresher) score.
    fn offer(&mut self, db: usize, key: &[u8], score: u64) {
        if let Some(i) = self.candidates.iter().position(|c| c.db == db && c.key[..] == *key) {
            self.candidates.remove(i);
        }
        if self.candidates.len() >= POOL_SIZE {
            if score <= self.candidates[0].score {
                return;
            }
            self.candidates.remove(0);
        }
        let pos = self.candidates.partition_point(|c| c.score <= score);
        self.candidates.insert(pos, Candidate { score, db, key: Bytes::copy_from_slice(key) });
    }

    pub fn clear(&mut self) {
        self.candidates.clear();
    }

    pub fn len(&self) -> usize {
        self.candidates.len()
    }

    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }
}

impl Keyspace {
    /// Deletes keys chosen by `policy` until `used()` is at most `maxmemory` or nothing more
    /// can be evicted. Every deleted key is recorded in `self.evicted` (for propagation and
    /// notifications) and counted in `stats.evicted_keys`.
    ///
    /// Returns false when memory is over the limit and nothing (more) can be evicted:
    /// `noeviction`, or a `volatile-*` policy with no key with an expiry left. Like Redis's
    /// `performEvictions`, one call works for a bounded time: if that runs out while keys
    /// are still being freed it returns true (Redis's `EVICT_RUNNING`: the command may run)
    /// and the next call carries on.
    pub fn evict(&mut self, policy: Policy, samples: usize, maxmemory: usize, now_ms: i64, used: &dyn Fn(&Keyspace) -> usize) -> bool {
        if used(self) <= maxmemory {
            return true;
        }
        if policy == Policy::NoEviction {
            return false;
        }
        if self.evict_pool.policy != Some(policy) {
            // Scores of another policy do not compare with this one's.
            self.evict_pool.clear();
            self.evict_pool.policy = Some(policy);
        }
        let start = Instant::now();
        let mut evicted = 0u64;
        while used(self) > maxmemory {
            let victim = match policy {
                Policy::AllKeysRandom | Policy::VolatileRandom => self.random_victim(policy.volatile_only()),
                _ => self.pool_victim(policy, samples.max(1), now_ms),
            };
            let Some((db, key)) = victim else {
                return false;
            };
            // Timed only when the latency monitor is on (`eviction-del`).
            let del_started = self.time_evictions.then(Instant::now);
            self.dbs[db].remove(&key);
            if let Some(t) = del_started {
                self.slowest_eviction_us = self.slowest_eviction_us.max(t.elapsed().as_micros() as u64);
            }
            self.stats.evicted_keys += 1;
            self.note_evicted(db, key);
            evicted += 1;
            if evicted.is_multiple_of(CHECK_EVERY) && start.elapsed() > TIME_LIMIT {
                return true;
            }
        }
        true
    }

    /// A uniformly random key of the next database (in turn) that has candidates.
    fn random_victim(&mut self, volatile_only: bool) -> Option<(usize, Bytes)> {
        let n = self.dbs.len();
        for _ in 0..n {
            let db = self.evict_pool.next_db % n;
            self.evict_pool.next_db = (db + 1) % n;
            let rand = self.next_rand();
            let key = if volatile_only {
                self.dbs[db].random_volatile(rand).map(|(k, _)| k.to_bytes())
            } else {
                self.dbs[db].random_entry(rand).map(|(k, _)| k.to_bytes())
            };
            if let Some(key) = key {
                return Some((db, key));
            }
        }
        None
    }

    /// Redis's pool loop of `performEvictions`: sample every database into the pool, then
    /// take the best candidate that still qualifies; None when no key qualifies at all.
    fn pool_victim(&mut self, policy: Policy, samples: usize, now_ms: i64) -> Option<(usize, Bytes)> {
        let volatile_only = policy.volatile_only();
        let decay = self.lfu.decay_time;
        loop {
            let mut total = 0;
            for db in 0..self.dbs.len() {
                let size = if volatile_only { self.dbs[db].volatile_len() } else { self.dbs[db].len() };
                if size == 0 {
                    continue;
                }
                total += size;
                // A database no bigger than the sample is looked at whole.
                let exhaustive = size <= samples;
                for n in 0..samples.min(size) {
                    let rand = if exhaustive { n as u64 } else { self.next_rand() };
                    let d = &self.dbs[db];
                    let sampled = if volatile_only {
                        d.random_volatile(rand).and_then(|(k, at)| d.peek(k).map(|e| (k, e, Some(at))))
                    } else {
                        d.random_entry(rand).map(|(k, e)| (k, e, d.expire_of(k, e)))
                    };
                    if let Some((key, entry, expire_at)) = sampled {
                        let score = policy.score(entry, expire_at, now_ms, decay);
                        self.evict_pool.offer(db, key, score);
                    }
                }
            }
            if total == 0 {
                return None;
            }
            while let Some(best) = self.evict_pool.candidates.pop() {
                let Some((entry, expire_at)) =
                    self.dbs.get(best.db).and_then(|d| d.peek(&best.key).map(|e| (e, d.expire_of(&best.key, e))))
                else {
                    continue; // deleted since it was sampled
                };
                if volatile_only && expire_at.is_none() {
                    continue; // made persistent since
                }
                let score = policy.score(entry, expire_at, now_ms, decay);
                if score < best.score {
                    // Accessed (or given a later expiry) since it was sampled: rank it again.
                    self.evict_pool.offer(best.db, &best.key, score);
                    continue;
                }
                return Some((best.db, best.key));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::{lru_clock, Value, LFU_INIT_VAL};

    const T0: i64 = 1_700_000_000_000;

    fn key(prefix: &str, i: usize) -> Bytes {
        Bytes::from(format!("{prefix}{i}"))
    }

    fn used(ks: &Keyspace) -> usize {
        ks.total_mem()
    }

    /// Fills db 0 with `n` keys built by `make(i) -> (expire_at, lru)`; returns the memory of
    /// one key (all keys have the same size).
    fn fill(ks: &mut Keyspace, n: usize, make: impl Fn(usize) -> (Option<i64>, u32)) -> usize {
        for i in 0..n {
            let (exp, lru) = make(i);
            ks.db_mut(0).insert(key("k", 100_000 + i), Value::string(vec![b'x'; 50]), exp, lru);
        }
        ks.total_mem() / n
    }

    /// Calls `evict` until it is done: one call stops after a couple of milliseconds.
    fn evict_fully(ks: &mut Keyspace, policy: Policy, samples: usize, maxmemory: usize, now_ms: i64) -> bool {
        for _ in 0..10_000 {
            if !ks.evict(policy, samples, maxmemory, now_ms, &used) {
                return false;
            }
            if used(ks) <= maxmemory {
                return true;
            }
        }
        panic!("eviction made no progress");
    }

    fn survivors(ks: &Keyspace, n: usize) -> Vec<usize> {
        (0..n).filter(|i| ks.db(0).contains_key(&key("k", 100_000 + i))).collect()
    }

    #[test]
    fn noeviction_and_within_limit() {
        let mut ks = Keyspace::new(1);
        let per = fill(&mut ks, 10, |_| (None, 0));
        assert!(ks.evict(Policy::NoEviction, 5, per * 10, T0, &used));
        assert!(ks.evict(Policy::AllKeysLru, 5, per * 10, T0, &used));
        assert!(!ks.evict(Policy::NoEviction, 5, per * 5, T0, &used));
        assert_eq!((ks.db(0).len(), ks.stats.evicted_keys), (10, 0));
    }

    #[test]
    fn lru_evicts_the_idlest() {
        let mut ks = Keyspace::new(1);
        // Key i was last used i seconds after T0: low i is idlest.
        let per = fill(&mut ks, 1000, |i| (None, lru_clock(T0 + i as i64 * 1000)));
        let now = T0 + 2000 * 1000;
        assert!(evict_fully(&mut ks, Policy::AllKeysLru, 5, per * 500, now));
        assert_eq!(ks.db(0).len(), 500);
        assert_eq!((ks.stats.evicted_keys, ks.evicted.len()), (500, 500));
        let left = survivors(&ks, 1000);
        let avg = left.iter().sum::<usize>() / left.len();
        assert!(avg > 650, "survivors should be the recently used keys, mean index {avg}");
        assert!(left.iter().filter(|&&i| i >= 900).count() >= 95, "the most recent keys survive");
    }

    #[test]
    fn lfu_evicts_the_least_frequent() {
        let mut ks = Keyspace::new(1);
        let hot = |i: usize| i.is_multiple_of(10);
        // Hot keys get counter 20, the others the initial 5.
        let per = fill(&mut ks, 1000, |i| (None, if hot(i) { ((20 ^ LFU_INIT_VAL as u32) << 24) | lru_clock(T0) } else { lru_clock(T0) }));
        assert!(evict_fully(&mut ks, Policy::AllKeysLfu, 5, per * 300, T0));
        let left = survivors(&ks, 1000);
        assert_eq!(left.len(), 300);
        assert_eq!(left.iter().filter(|&&i| hot(i)).count(), 100, "every frequently used key survives");
    }

    #[test]
    fn volatile_ttl_evicts_nearest_expiry_and_never_persistent_keys() {
        let mut ks = Keyspace::new(1);
        // Even keys persistent; odd keys expire later the higher their index.
        let per = fill(&mut ks, 1000, |i| (if i % 2 == 1 { Some(T0 + 10_000 + i as i64 * 1000) } else { None }, 0));
        // A key with an expiry costs its side-table slot more: room for 250 of them is left.
        let volatile = (ks.total_mem() - 500 * crate::db::database::VOLATILE_OVERHEAD) / 1000 + crate::db::database::VOLATILE_OVERHEAD;
        let target = ks.total_mem() - 250 * volatile;
        assert!(evict_fully(&mut ks, Policy::VolatileTtl, 5, target, T0));
        let left = survivors(&ks, 1000);
        assert_eq!(left.len(), 750);
        assert_eq!(left.iter().filter(|&&i| i % 2 == 0).count(), 500);
        let gone_early = (0..500).filter(|i| i % 2 == 1 && !left.contains(i)).count();
        assert!(gone_early >= 200, "the nearest expiries go first ({gone_early} of 250)");
        // Only persistent keys left: nothing more can be evicted.
        assert!(!evict_fully(&mut ks, Policy::VolatileTtl, 5, per * 100, T0));
        assert_eq!(ks.db(0).len(), 500);
        assert_eq!(ks.db(0).volatile_len(), 0);
        for p in [Policy::VolatileLru, Policy::VolatileLfu, Policy::VolatileRandom] {
            assert!(!evict_fully(&mut ks, p, 5, per * 100, T0));
        }
        assert_eq!(ks.db(0).len(), 500);
    }

    #[test]
    fn volatile_policies_skip_keys_made_persistent() {
        for policy in [Policy::VolatileLru, Policy::VolatileLfu, Policy::VolatileRandom, Policy::VolatileTtl] {
            let mut ks = Keyspace::new(2);
            let per = fill(&mut ks, 100, |i| (Some(T0 + 1_000_000 + i as i64), lru_clock(T0 - i as i64 * 1000)));
            // Fill the pool, then make every key but one persistent.
            assert!(evict_fully(&mut ks, policy, 5, per * 99, T0));
            let left = survivors(&ks, 100);
            assert_eq!(left.len(), 99);
            for &i in &left[1..] {
                ks.db_mut(0).set_expire(&key("k", 100_000 + i), None);
            }
            ks.db_mut(1).insert(key("other", 0), Value::string("v"), Some(T0 + 5), 0);
            assert!(!evict_fully(&mut ks, policy, 5, 0, T0), "{policy:?}");
            assert!(!ks.db(0).contains_key(&key("k", 100_000 + left[0])) && ks.db(1).is_empty(), "{policy:?}");
            assert_eq!(ks.db(0).len(), 98, "{policy:?}");
        }
    }

    #[test]
    fn random_policies_span_databases() {
        let mut ks = Keyspace::new(4);
        for db in 0..4 {
            for i in 0..100 {
                ks.db_mut(db).insert(key("k", i), Value::string("v"), if i % 2 == 0 { Some(T0 + 1000) } else { None }, 0);
            }
        }
        let total = ks.total_mem();
        assert!(evict_fully(&mut ks, Policy::VolatileRandom, 5, total * 3 / 4, T0));
        assert!((0..4).all(|db| ks.db(db).len() < 100));
        assert!(evict_fully(&mut ks, Policy::AllKeysRandom, 5, total / 4, T0));
        assert!(ks.total_mem() <= total / 4);
        assert!(evict_fully(&mut ks, Policy::AllKeysRandom, 5, 0, T0));
        assert_eq!(ks.total_mem(), 0);
        assert!(!ks.evict(Policy::AllKeysRandom, 5, 0, T0, &|_: &Keyspace| 1));
    }

    #[test]
    fn stale_pool_entries_are_ranked_again() {
        let mut ks = Keyspace::new(1);
        // k0 is the idlest, k19 the most recently used.
        let per = fill(&mut ks, 20, |i| (None, lru_clock(T0 - (100 - i as i64) * 1000)));
        // The whole database is sampled: the pool keeps the 16 idlest, k0 is evicted.
        assert!(evict_fully(&mut ks, Policy::AllKeysLru, 20, per * 19, T0));
        assert_eq!(survivors(&ks, 20), (1..20).collect::<Vec<_>>());
        assert_eq!(ks.evict_pool.len(), 15);
        // Read every key still in the pool: their sampled idle times are stale now.
        for i in 1..16 {
            assert!(ks.get(0, &key("k", 100_000 + i), T0 + 60_000).is_some());
        }
        assert!(evict_fully(&mut ks, Policy::AllKeysLru, 1, per * 18, T0 + 60_000));
        assert!(ks.db(0).contains_key(&key("k", 100_001)), "k1 looked idlest when sampled but was read since");
    }

    #[test]
    fn time_bound_keeps_calls_short() {
        let mut ks = Keyspace::new(1);
        for i in 0..100_000 {
            ks.db_mut(0).insert(key("k", i), Value::string("v"), None, 0);
        }
        let start = Instant::now();
        assert!(ks.evict(Policy::AllKeysLru, 5, 0, T0, &used));
        assert!(start.elapsed() < Duration::from_secs(1));
        assert!(!ks.db(0).is_empty(), "a single call stops early");
        let mut calls = 0;
        while ks.total_mem() > 0 {
            assert!(ks.evict(Policy::AllKeysLru, 5, 0, T0, &used));
            calls += 1;
        }
        assert!(calls > 1 && ks.stats.evicted_keys == 100_000);
    }
}
