//! `Dense`: the vector behind a hash table's slots, in segments of a fixed size once past the
//! first. A `Vec` doubles, so a table of 600,000 keys held room for 1,048,576, and every
//! doubling copied the whole table (a pause of tens of milliseconds at a few million keys);
//! here only the last segment has spare room, and growing never moves a slot. A segment is
//! 256 KiB, a multiple of the allocator's 64 KiB page: no rounding waste.

use std::ops::{Index, IndexMut};

/// Bytes per full segment.
const SEGMENT_BYTES: usize = 256 * 1024;

/// Small tables (most hashes and sets) grow their only segment one slot at a time up to
/// this, then by doubling up to a full segment.
const EXACT_BELOW: usize = 16;

#[derive(Clone)]
pub struct Dense<T> {
    /// Every segment but the last holds exactly `Self::PER` items.
    segs: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Dense<T> {
    fn default() -> Self {
        Dense { segs: Vec::new(), len: 0 }
    }
}

impl<T> Dense<T> {
    /// Items per segment (at least one, whatever `T`'s size).
    const PER: usize = if std::mem::size_of::<T>() == 0 { SEGMENT_BYTES } else { max1(SEGMENT_BYTES / std::mem::size_of::<T>()) };

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn get(&self, i: usize) -> Option<&T> {
        (i < self.len).then(|| &self[i])
    }

    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        (i < self.len).then(|| &mut self[i])
    }

    pub fn push(&mut self, item: T) {
        match self.segs.last_mut() {
            Some(seg) if seg.len() < Self::PER => {
                if seg.len() == seg.capacity() {
                    let more = if seg.len() < EXACT_BELOW { 1 } else { seg.len().min(Self::PER - seg.len()) };
                    seg.reserve_exact(more);
                }
                seg.push(item);
            }
            _ => {
                if self.segs.capacity() == 0 {
                    self.segs.reserve_exact(1);
                }
                let mut seg = Vec::with_capacity(if self.segs.is_empty() { 1 } else { Self::PER });
                seg.push(item);
                self.segs.push(seg);
            }
        }
        self.len += 1;
    }

    /// Removes item `i` (< `len`); the last item takes its place.
    pub fn swap_remove(&mut self, i: usize) -> T {
        assert!(i < self.len, "swap_remove index {i} out of {}", self.len);
        let Some(last_seg) = self.segs.last_mut() else { unreachable!("a non-empty Dense has a segment") };
        let Some(last) = last_seg.pop() else { unreachable!("the last segment is never empty") };
        if last_seg.is_empty() {
            self.segs.pop();
        }
        self.len -= 1;
        if i == self.len {
            last
        } else {
            std::mem::replace(&mut self[i], last)
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.segs.iter().flatten()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.segs.iter_mut().flatten()
    }
}

const fn max1(n: usize) -> usize {
    if n == 0 {
        1
    } else {
        n
    }
}

impl<T> Index<usize> for Dense<T> {
    type Output = T;

    fn index(&self, i: usize) -> &T {
        &self.segs[i / Self::PER][i % Self::PER]
    }
}

impl<T> IndexMut<usize> for Dense<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.segs[i / Self::PER][i % Self::PER]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pushes and swap-removes across segment boundaries match a `Vec` doing the same, and
    /// no segment but the last has spare room.
    #[test]
    fn behaves_like_a_vec_across_segments() {
        let mut d = Dense::default();
        let mut v = Vec::new();
        let mut rng = 7u64;
        let per = Dense::<u64>::PER;
        for step in 0..(per as u64 * 7) {
            rng = crate::util::xorshift(rng);
            if rng.is_multiple_of(3) && !v.is_empty() {
                let i = (rng >> 8) as usize % v.len();
                assert_eq!(d.swap_remove(i), v.swap_remove(i), "step {step}");
            } else {
                d.push(step);
                v.push(step);
            }
            assert_eq!(d.len(), v.len());
        }
        assert!(d.iter().eq(v.iter()));
        assert!(v.len() > 2 * per, "the test crosses segments");
        for (i, x) in v.iter().enumerate() {
            assert_eq!(d.get(i), Some(x));
        }
        assert_eq!(d.get(v.len()), None);
        let n = d.segs.len();
        assert!(d.segs[..n - 1].iter().all(|s| s.len() == per && s.capacity() == per));
        assert!(d.segs.iter().all(|s| s.capacity() * 8 <= SEGMENT_BYTES));
        while !v.is_empty() {
            assert_eq!(d.swap_remove(0), v.swap_remove(0));
        }
        assert!(d.segs.is_empty());
    }

    #[test]
    fn a_small_table_holds_what_it_uses() {
        let mut d = Dense::default();
        for i in 0..EXACT_BELOW {
            d.push(i);
            assert_eq!(d.segs[0].capacity(), i + 1);
        }
        assert_eq!(d.segs.capacity(), 1);
    }
}
