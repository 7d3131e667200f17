//! Eviction under `maxmemory`: choosing keys to delete by `maxmemory-policy`, with Redis's
//! approximate sampling (`maxmemory-samples`). Placeholder: evicts nothing yet.

use super::Keyspace;

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
}

impl Keyspace {
    /// Deletes keys chosen by `policy` until `used()` is at most `maxmemory` or nothing more
    /// can be evicted. Every deleted key is recorded in `self.evicted` (for propagation and
    /// notifications). Returns true when memory is now within the limit.
    pub fn evict(&mut self, policy: Policy, samples: usize, maxmemory: usize, now_ms: i64, used: &dyn Fn(&Keyspace) -> usize) -> bool {
        let _ = (policy, samples, now_ms);
        used(self) <= maxmemory
    }
}
