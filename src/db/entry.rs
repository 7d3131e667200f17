//! One key's slot in a database: its value and access clock (LRU and LFU), packed into as
//! few bytes as every key pays for.

use super::Value;

/// Redis's LRU clock: seconds since the epoch, wrapping at 24 bits.
pub const LRU_CLOCK_MAX: u32 = (1 << 24) - 1;

/// The initial LFU counter of a new key (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT_VAL: u8 = 5;

/// The LRU clock at `now_ms`: what to pass as `lru` when creating an entry.
pub fn lru_clock(now_ms: i64) -> u32 {
    (now_ms.div_euclid(1000) as u64 & LRU_CLOCK_MAX as u64) as u32
}

/// One key's slot: its value and last access, in 32 bytes (every key pays for them).
///
/// `lru` packs two things, like Redis's 24-bit `robj.lru` does one or the other: the low 24
/// bits are the LRU clock of the last access ([`lru_clock`]), the high 8 bits the LFU
/// counter XOR [`LFU_INIT_VAL`] (so a fresh `lru_clock(now)` means "counter 5", as a new
/// Redis object has). Both are kept up to date on every touching lookup, whatever the
/// maxmemory policy, so switching policies at runtime gives sensible values.
///
/// The expiry time is not here: like Redis's `expires` dict, the database keeps it in a side
/// table of the keys that have one, and the entry only a bit saying it does (most keys have
/// none, and 8 bytes in every slot was a tenth of a small key's memory).
#[derive(Debug, Clone)]
pub struct Entry {
    pub value: Value,
    pub lru: u32,
    /// The snapshot epoch this entry belongs to (low 31 bits): during a log rewrite, an entry
    /// whose mark differs from the rewrite's epoch existed when it began and is not
    /// serialized yet (its value is then still the one of that moment). The top bit: the key
    /// has an expiry in its database's side table.
    mark: u32,
}

/// `Entry::mark`'s bit for "has an expiry".
const VOLATILE: u32 = 1 << 31;

/// The largest snapshot epoch (epochs wrap below the volatile bit).
pub const SNAP_EPOCH_MAX: u32 = VOLATILE - 1;

impl Entry {
    /// A new entry, last accessed at `now_ms`, with the initial LFU counter.
    pub fn new(value: Value, now_ms: i64) -> Entry {
        Entry::with_lru(value, lru_clock(now_ms), 0)
    }

    pub(super) fn with_lru(value: Value, lru: u32, snap: u32) -> Entry {
        Entry { value, lru, mark: snap & SNAP_EPOCH_MAX }
    }

    /// Whether the key has an expiry ([`super::Db::expire_of`] says which).
    pub fn has_expire(&self) -> bool {
        self.mark & VOLATILE != 0
    }

    /// Set by the database only, which keeps the side table of expiry times with it.
    pub(super) fn set_has_expire(&mut self, has: bool) {
        self.mark = if has { self.mark | VOLATILE } else { self.mark & !VOLATILE };
    }

    /// The snapshot epoch of the entry.
    pub fn snap(&self) -> u32 {
        self.mark & SNAP_EPOCH_MAX
    }

    pub fn set_snap(&mut self, epoch: u32) {
        self.mark = (self.mark & VOLATILE) | (epoch & SNAP_EPOCH_MAX);
    }

    /// Applies an LRU idle time (seconds) or an LFU counter that came with a value (RESTORE's
    /// IDLETIME/FREQ, an RDB file's hints), whichever the eviction policy uses, as Redis's
    /// `objectSetLRUOrLFU` does.
    pub fn apply_access_hint(&mut self, lfu_policy: bool, idle_secs: Option<i64>, freq: Option<u8>, now_ms: i64) {
        if lfu_policy {
            if let Some(f) = freq {
                self.lru = (((f ^ LFU_INIT_VAL) as u32) << 24) | lru_clock(now_ms);
            }
        } else if let Some(secs) = idle_secs {
            self.lru = (self.lru & !LRU_CLOCK_MAX) | lru_clock(now_ms.saturating_sub(secs.saturating_mul(1000)));
        }
    }

    /// The LRU clock of the last access.
    pub fn lru_secs(&self) -> u32 {
        self.lru & LRU_CLOCK_MAX
    }

    /// Redis's `estimateObjectIdleTime`, in ms (second resolution).
    pub fn idle_ms(&self, now_ms: i64) -> u64 {
        let clock = lru_clock(now_ms) as u64;
        let lru = self.lru_secs() as u64;
        let secs = if clock >= lru { clock - lru } else { clock + (LRU_CLOCK_MAX as u64 - lru) };
        secs * 1000
    }

    fn raw_counter(&self) -> u8 {
        ((self.lru >> 24) as u8) ^ LFU_INIT_VAL
    }

    /// Redis's `LFUDecrAndReturn`: the LFU counter, decayed by one per `decay_minutes`
    /// elapsed since the last access (no decay when `decay_minutes` is 0).
    pub fn lfu_counter(&self, now_ms: i64, decay_minutes: u64) -> u8 {
        let counter = self.raw_counter();
        if decay_minutes == 0 {
            return counter;
        }
        let now_s = now_ms.div_euclid(1000);
        let last_s = now_s - (self.idle_ms(now_ms) / 1000) as i64;
        let elapsed_min = (now_s.div_euclid(60) - last_s.div_euclid(60)).max(0) as u64;
        let periods = elapsed_min / decay_minutes;
        counter.saturating_sub(periods.min(255) as u8)
    }

    /// Records an access: the LRU clock, and the LFU counter decayed then incremented
    /// logarithmically (Redis's `updateLFU` with `LFULogIncr`). `rand` is a uniform u64.
    pub fn touch(&mut self, now_ms: i64, lfu: LfuParams, rand: u64) {
        let mut counter = self.lfu_counter(now_ms, lfu.decay_time);
        if counter < 255 {
            let base = counter.saturating_sub(LFU_INIT_VAL) as f64;
            let p = 1.0 / (base * lfu.log_factor as f64 + 1.0);
            let r = (rand >> 11) as f64 / (1u64 << 53) as f64;
            if r < p {
                counter += 1;
            }
        }
        self.lru = (((counter ^ LFU_INIT_VAL) as u32) << 24) | lru_clock(now_ms);
    }
}

/// The LFU tuning Redis takes from `lfu-log-factor` and `lfu-decay-time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LfuParams {
    pub log_factor: u64,
    pub decay_time: u64,
}

impl Default for LfuParams {
    fn default() -> Self {
        LfuParams { log_factor: 10, decay_time: 1 }
    }
}
