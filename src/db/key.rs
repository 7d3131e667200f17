//! `Key`: a stored key or set member in 16 bytes, its bytes inside the table's slot when short.
//!
//! A lookup that finds its entry compares the stored bytes; kept behind a `Bytes` they are a
//! separate allocation, one more cache miss per lookup of a large table (perf: 11% of a SADD
//! on a 100,000-member set). Keys of up to 15 bytes (`key:1000000`, `member:1000000`) live
//! in the key itself and need no allocation at all; longer ones in one allocation holding
//! their length and bytes, behind a thin pointer. Every key, field and member slot pays for
//! the larger of the two forms, so both fit in 16 bytes: a 16-byte `Box<[u8]>` or `Bytes`
//! handle would make it 24 or 32.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::ops::Deref;
use std::ptr::NonNull;

use bytes::Bytes;

/// The longest key kept inline.
const INLINE: usize = 15;

/// The length of an inline key. A type with exactly 16 values, so the enum of [`Key`] keeps
/// its tag in this byte's other 240 values and the heap pointer beside it: 16 bytes in all.
#[repr(u8)]
#[derive(Clone, Copy)]
#[rustfmt::skip]
enum InlineLen { L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15 }

#[rustfmt::skip]
const LENS: [InlineLen; INLINE + 1] = {
    use InlineLen::*;
    [L0, L1, L2, L3, L4, L5, L6, L7, L8, L9, L10, L11, L12, L13, L14, L15]
};

#[derive(Clone)]
pub struct Key(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: InlineLen, buf: [u8; INLINE] },
    Heap(HeapBytes),
}

/// An owned byte string behind one thin pointer: an allocation of `[len][bytes]`, where
/// `len` is 4 bytes little-endian, or `u32::MAX` and then 8 bytes for a length past it
/// (a key of 4 GiB is possible with a large `proto-max-bulk-len`, if absurd).
struct HeapBytes(NonNull<u8>);

// SAFETY: `HeapBytes` owns its allocation alone, as a `Box<[u8]>` does; nothing else points
// into it, so moving it to or sharing it with another thread is as safe as for a Box.
unsafe impl Send for HeapBytes {}
// SAFETY: as above; `&HeapBytes` only reads.
unsafe impl Sync for HeapBytes {}

const SHORT_HEADER: usize = 4;
const LONG_HEADER: usize = 12;

impl HeapBytes {
    fn header_len(len: usize) -> usize {
        if len < u32::MAX as usize {
            SHORT_HEADER
        } else {
            LONG_HEADER
        }
    }

    fn layout(len: usize) -> Layout {
        // A size past isize::MAX could not have been received in the first place.
        Layout::from_size_align(Self::header_len(len) + len, 1).expect("a key fits in memory")
    }

    fn new(bytes: &[u8]) -> HeapBytes {
        let len = bytes.len();
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size (a header at least).
        let ptr = unsafe { alloc(layout) };
        let Some(ptr) = NonNull::new(ptr) else { handle_alloc_error(layout) };
        let header = Self::header_len(len);
        let mut head = [0u8; LONG_HEADER];
        if header == SHORT_HEADER {
            head[..4].copy_from_slice(&(len as u32).to_le_bytes());
        } else {
            head[..4].copy_from_slice(&u32::MAX.to_le_bytes());
            head[4..].copy_from_slice(&(len as u64).to_le_bytes());
        }
        // SAFETY: the allocation is `header + len` bytes long, freshly made, and does not
        // overlap `head` or `bytes`.
        unsafe {
            std::ptr::copy_nonoverlapping(head.as_ptr(), ptr.as_ptr(), header);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.as_ptr().add(header), len);
        }
        HeapBytes(ptr)
    }

    fn len(&self) -> usize {
        let mut head = [0u8; 4];
        // SAFETY: every allocation starts with at least the 4-byte header.
        unsafe { std::ptr::copy_nonoverlapping(self.0.as_ptr(), head.as_mut_ptr(), 4) };
        let short = u32::from_le_bytes(head);
        if short != u32::MAX {
            return short as usize;
        }
        let mut long = [0u8; 8];
        // SAFETY: a header of `u32::MAX` is followed by the 8-byte length.
        unsafe { std::ptr::copy_nonoverlapping(self.0.as_ptr().add(4), long.as_mut_ptr(), 8) };
        u64::from_le_bytes(long) as usize
    }

    fn as_slice(&self) -> &[u8] {
        let len = self.len();
        // SAFETY: the `len` bytes after the header were initialized by `new` and live as long
        // as `self`.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(Self::header_len(len)), len) }
    }
}

impl Clone for HeapBytes {
    fn clone(&self) -> Self {
        HeapBytes::new(self.as_slice())
    }
}

impl Drop for HeapBytes {
    fn drop(&mut self) {
        // SAFETY: allocated by `new` with this very layout (the length is read back from it).
        unsafe { dealloc(self.0.as_ptr(), Self::layout(self.len())) }
    }
}

impl Key {
    /// A copy of `bytes` (inline when short, else one allocation of its own).
    pub fn copy_from(bytes: &[u8]) -> Key {
        if bytes.len() > INLINE {
            return Key(Repr::Heap(HeapBytes::new(bytes)));
        }
        let mut buf = [0; INLINE];
        buf[..bytes.len()].copy_from_slice(bytes);
        Key(Repr::Inline { len: LENS[bytes.len()], buf })
    }

    /// The bytes a key of `len` bytes takes outside its slot: none when inline, else its
    /// allocation (the length header and the bytes) rounded up to the allocator's 16-byte
    /// classes.
    pub fn heap_size(len: usize) -> usize {
        if len <= INLINE {
            0
        } else {
            (HeapBytes::header_len(len) + len).next_multiple_of(16)
        }
    }

    pub fn as_slice(&self) -> &[u8] {
        match &self.0 {
            Repr::Inline { len, buf } => &buf[..*len as usize],
            Repr::Heap(h) => h.as_slice(),
        }
    }

    /// A copy of the key as `Bytes`, for a reply or a message.
    pub fn to_bytes(&self) -> Bytes {
        Bytes::copy_from_slice(self.as_slice())
    }

    /// The key as `Bytes` (a copy: the heap form's allocation holds its length too).
    pub fn into_bytes(self) -> Bytes {
        self.to_bytes()
    }
}

impl Default for Key {
    fn default() -> Key {
        Key::copy_from(&[])
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
    fn short_keys_are_inline_and_long_ones_behind_a_thin_pointer() {
        assert_eq!(std::mem::size_of::<Key>(), 16);
        assert_eq!(std::mem::size_of::<Option<Key>>(), 16);
        for len in [0, 1, 14, 15, 16, 17, 22, 100, 70_000] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let key = Key::copy_from(&bytes);
            assert_eq!(matches!(key.0, Repr::Inline { .. }), len <= INLINE);
            assert_eq!(&key[..], &bytes[..]);
            assert_eq!(key.to_bytes(), Bytes::from(bytes.clone()));
            assert_eq!(Key::from(Bytes::from(bytes.clone())), key);
            let copy = key.clone();
            drop(key);
            assert_eq!(copy.into_bytes(), Bytes::from(bytes));
        }
        assert_eq!(Key::heap_size(15), 0);
        assert_eq!(Key::heap_size(16), 32);
        assert_eq!(Key::heap_size(28), 32);
    }

    #[test]
    fn long_length_header_round_trips() {
        // The 12-byte header's encoding, without allocating 4 GiB.
        assert_eq!(HeapBytes::header_len(u32::MAX as usize - 1), SHORT_HEADER);
        assert_eq!(HeapBytes::header_len(u32::MAX as usize), LONG_HEADER);
    }
}
