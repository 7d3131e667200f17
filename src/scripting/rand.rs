//! The pseudo-random generator behind `math.random` in scripts: Redis's `redisLrand48`, the
//! classic 48-bit `lrand48` LCG (`x = 0x5DEECE66D·x + 0xB mod 2^48`, output `x >> 17`).
//!
//! Every script starts from `srand48(0)` (Redis 2.6–6.2 behaviour, which Vermilion keeps so
//! that a script logged whole replays with the same numbers): its first `math.random()` is
//! 0.17082803611217.

const A: u64 = 0x5_DEEC_E66D;
const C: u64 = 0xB;
const MASK: u64 = (1 << 48) - 1;

/// The generator's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lrand48(u64);

impl Default for Lrand48 {
    fn default() -> Self {
        Lrand48::seeded(0)
    }
}

impl Lrand48 {
    /// `srand48(seed)`: the high 32 bits of the state are the seed, the low 16 are 0x330E.
    pub fn seeded(seed: i32) -> Self {
        Lrand48((((seed as u32) as u64) << 16 | 0x330E) & MASK)
    }

    /// `lrand48()`: the next 31-bit value.
    pub fn next(&mut self) -> i32 {
        self.0 = (A.wrapping_mul(self.0).wrapping_add(C)) & MASK;
        (self.0 >> 17) as i32
    }

    /// `math.random()`'s base value in [0, 1), as Redis computes it.
    pub fn next_unit(&mut self) -> f64 {
        const INT32_MAX: i32 = i32::MAX;
        (self.next() % INT32_MAX) as f64 / INT32_MAX as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_value_after_seed_zero_is_redis_s() {
        let mut r = Lrand48::seeded(0);
        let v = r.next_unit();
        assert_eq!(format!("{v:.14}"), "0.17082803611217");
    }
}
