//! SipHash-1-3 over a byte string in one call: the keyed hash of every table in `db`.
//!
//! The same function as std's `RandomState` (SipHash-1-3, random keys per table, so a client
//! cannot choose keys that collide), without its `Hasher` plumbing: std hashes a `&[u8]` as
//! its length and then its bytes, through a buffered streaming writer. Done at once, a 7-byte
//! key takes four rounds and no buffering (hash_one was 193 instructions per keyspace lookup,
//! 2.7% of a script's redis.call).

use std::cell::Cell;
use std::hash::{BuildHasher, RandomState};

/// A table's hash key.
#[derive(Clone, Copy, Debug)]
pub struct SipKey {
    k0: u64,
    k1: u64,
}

impl SipKey {
    /// A fresh key: random per thread, then different for every table, as std's `RandomState`
    /// (which adds one to the first half for each new state).
    pub fn new() -> SipKey {
        thread_local! {
            static NEXT: Cell<(u64, u64)> = Cell::new({
                let seed = RandomState::new();
                (seed.hash_one(0u8), seed.hash_one(1u8))
            });
        }
        NEXT.with(|next| {
            let (k0, k1) = next.get();
            next.set((k0.wrapping_add(1), k1));
            SipKey { k0, k1 }
        })
    }

    #[inline]
    pub fn hash(&self, data: &[u8]) -> u64 {
        siphash::<1, 3>(self.k0, self.k1, data)
    }
}

impl Default for SipKey {
    fn default() -> Self {
        Self::new()
    }
}

#[inline(always)]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13) ^ v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16) ^ v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21) ^ v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17) ^ v[2];
    v[2] = v[2].rotate_left(32);
}

/// The last 0 to 7 bytes as a little-endian word, in at most three loads (a copy into a
/// zeroed buffer is a call to memcpy).
#[inline(always)]
fn tail_word(t: &[u8]) -> u64 {
    let mut word = 0u64;
    let mut i = 0;
    if t.len() >= 4 {
        word = u64::from(u32::from_le_bytes([t[0], t[1], t[2], t[3]]));
        i = 4;
    }
    if t.len() >= i + 2 {
        word |= u64::from(u16::from_le_bytes([t[i], t[i + 1]])) << (8 * i);
        i += 2;
    }
    if let Some(&b) = t.get(i) {
        word |= u64::from(b) << (8 * i);
    }
    word
}

/// SipHash-C-D of `data` under the key `(k0, k1)`.
#[inline]
fn siphash<const C: usize, const D: usize>(k0: u64, k1: u64, data: &[u8]) -> u64 {
    let mut v = [k0 ^ 0x736f_6d65_7073_6575, k1 ^ 0x646f_7261_6e64_6f6d, k0 ^ 0x6c79_6765_6e65_7261, k1 ^ 0x7465_6462_7974_6573];
    let mut compress = |m: u64| {
        v[3] ^= m;
        for _ in 0..C {
            round(&mut v);
        }
        v[0] ^= m;
    };
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        compress(u64::from_le_bytes(b));
    }
    compress(tail_word(words.remainder()) | ((data.len() as u64) << 56));
    v[2] ^= 0xff;
    for _ in 0..D {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rounds are SipHash's: with 2 and 4 of them the function equals std's SipHash-2-4
    /// (the deprecated `SipHasher`, fed the bytes directly) at every length around the word
    /// boundaries.
    #[test]
    #[allow(deprecated)]
    fn equals_siphash_2_4_at_every_tail_length() {
        use std::hash::Hasher;
        let data: Vec<u8> = (0u8..64).map(|i| i.wrapping_mul(37).wrapping_add(11)).collect();
        for (k0, k1) in [(0, 0), (0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908), (u64::MAX, 12345)] {
            for len in 0..=data.len() {
                let mut std = std::hash::SipHasher::new_with_keys(k0, k1);
                std.write(&data[..len]);
                assert_eq!(siphash::<2, 4>(k0, k1, &data[..len]), std.finish(), "len {len}");
            }
        }
        // The reference vector of the SipHash paper (key 00..0f, message 00..0e).
        let msg: Vec<u8> = (0u8..15).collect();
        assert_eq!(siphash::<2, 4>(0x0706_0504_0302_0100, 0x0f0e_0d0c_0b0a_0908, &msg), 0xa129_ca61_49be_45e5);
    }

    #[test]
    fn tables_get_different_keys() {
        let (a, b) = (SipKey::new(), SipKey::new());
        assert_ne!(a.hash(b"key"), b.hash(b"key"));
        assert_eq!(a.hash(b"key"), a.hash(b"key"));
    }
}
