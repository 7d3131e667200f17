//! `Key`: a stored key or set member, its bytes inside the table's slot when short.
//!
//! A lookup that finds its entry compares the stored bytes; kept behind a `Bytes` they are a
//! separate allocation, one more cache miss per lookup of a large table (perf: 11% of a SADD
//! on a 100,000-member set). Keys of up to 22 bytes (`key:000000012345`, `element:...`) live
//! in the key's 24 bytes and need no allocation at all; longer ones are a boxed slice of
//! their own (16 bytes, not a 32-byte `Bytes` handle: every key, field and member slot pays
//! for the larger of the two forms).

use std::ops::Deref;

use bytes::Bytes;

/// The longest key kept inline.
const INLINE: usize = 22;

#[derive(Clone)]
pub enum Key {
    Inline { len: u8, buf: [u8; INLINE] },
    Heap(Box<[u8]>),
}

impl Key {
    /// A copy of `bytes` (inline when short, else one allocation of its own).
    pub fn copy_from(bytes: &[u8]) -> Key {
        match Self::inline(bytes) {
            Some(key) => key,
            None => Key::Heap(Box::from(bytes)),
        }
    }

    fn inline(bytes: &[u8]) -> Option<Key> {
        if bytes.len() > INLINE {
            return None;
        }
        let mut buf = [0; INLINE];
        buf[..bytes.len()].copy_from_slice(bytes);
        Some(Key::Inline { len: bytes.len() as u8, buf })
    }

    /// The bytes a key of `len` bytes takes outside its slot: none when inline, else its
    /// allocation rounded up to the allocator's 16-byte classes.
    pub fn heap_size(len: usize) -> usize {
        if len <= INLINE {
            0
        } else {
            len.next_multiple_of(16)
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match self {
            Key::Inline { len, buf } => &buf[..*len as usize],
            Key::Heap(b) => b,
        }
    }

    /// A copy of the key as `Bytes`, for a reply or a message.
    pub fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.as_slice())
    }

    /// The key as `Bytes`: a long key's allocation is handed over, not copied.
    pub fn into_bytes(self) -> Bytes {
        match self {
            Key::Heap(b) => Bytes::from(b),
            inline => inline.to_bytes(),
        }
    }
}

impl Default for Key {
    fn default() -> Key {
        Key::Inline { len: 0, buf: [0; INLINE] }
    }
}

impl From<Bytes> for Key {
    /// A copy of the bytes (a handle perhaps on a request's buffer is not kept: it would pin
    /// the whole buffer).
    fn from(bytes: Bytes) -> Key {
        Key::copy_from(&bytes)
    }
}

impl Deref for Key {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl AsRef<[u8]> for Key {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl std::borrow::Borrow<[u8]> for Key {
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for Key {}

impl std::hash::Hash for Key {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state)
    }
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&Bytes::copy_from_slice(self.as_slice()), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_keys_are_inline_and_long_ones_boxed() {
        assert_eq!(std::mem::size_of::<Key>(), 24);
        for len in [0, 1, 22, 23, 24, 100] {
            let bytes: Vec<u8> = (0..len as u8).collect();
            let key = Key::copy_from(&bytes);
            assert_eq!(matches!(key, Key::Inline { .. }), len <= INLINE);
            assert_eq!(&key[..], &bytes[..]);
            assert_eq!(key.to_bytes(), Bytes::from(bytes.clone()));
            assert_eq!(Key::from(Bytes::from(bytes.clone())), key);
        }
    }
}
