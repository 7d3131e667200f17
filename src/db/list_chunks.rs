//! A list's chunks: most lists fit in one chunk, held in place; more go to a deque. A deque
//! of one chunk cost a small list its buffer (a 64-byte allocation) on top of the list's own.

use std::collections::VecDeque;
use std::ops::{Index, IndexMut, Range};

/// The deque's subset `ListValue` uses, over one chunk in place or a deque of others.
#[derive(Clone)]
pub(super) enum Chunks<C> {
    One(C),
    /// None, or two and more (a deque that drops to one goes back to `One`).
    Many(VecDeque<C>),
}

impl<C> Default for Chunks<C> {
    fn default() -> Self {
        Chunks::Many(VecDeque::new())
    }
}

impl<C> Chunks<C> {
    pub fn len(&self) -> usize {
        match self {
            Chunks::One(_) => 1,
            Chunks::Many(d) => d.len(),
        }
    }

    pub fn get(&self, i: usize) -> Option<&C> {
        match self {
            Chunks::One(c) => (i == 0).then_some(c),
            Chunks::Many(d) => d.get(i),
        }
    }

    pub fn front(&self) -> Option<&C> {
        self.get(0)
    }

    pub fn back(&self) -> Option<&C> {
        self.get(self.len().checked_sub(1)?)
    }

    pub fn front_mut(&mut self) -> Option<&mut C> {
        match self {
            Chunks::One(c) => Some(c),
            Chunks::Many(d) => d.front_mut(),
        }
    }

    pub fn back_mut(&mut self) -> Option<&mut C> {
        match self {
            Chunks::One(c) => Some(c),
            Chunks::Many(d) => d.back_mut(),
        }
    }

    /// The deque, with the chunk in place moved into it (before a change of the count).
    fn deque(&mut self) -> &mut VecDeque<C> {
        if let Chunks::One(_) = self {
            let Chunks::One(c) = std::mem::take(self) else { unreachable!("matched One") };
            *self = Chunks::Many(VecDeque::from([c]));
        }
        match self {
            Chunks::Many(d) => d,
            Chunks::One(_) => unreachable!("made a deque above"),
        }
    }

    /// Back to a chunk in place when one is left.
    fn settle(&mut self) {
        if let Chunks::Many(d) = self {
            if d.len() == 1 {
                if let Some(c) = d.pop_front() {
                    *self = Chunks::One(c);
                }
            }
        }
    }

    pub fn push_front(&mut self, c: C) {
        if self.len() == 0 {
            *self = Chunks::One(c);
        } else {
            self.deque().push_front(c);
        }
    }

    pub fn push_back(&mut self, c: C) {
        if self.len() == 0 {
            *self = Chunks::One(c);
        } else {
            self.deque().push_back(c);
        }
    }

    pub fn pop_front(&mut self) -> Option<C> {
        let c = self.deque().pop_front();
        self.settle();
        c
    }

    pub fn pop_back(&mut self) -> Option<C> {
        let c = self.deque().pop_back();
        self.settle();
        c
    }

    pub fn insert(&mut self, i: usize, c: C) {
        if self.len() == 0 {
            *self = Chunks::One(c);
        } else {
            self.deque().insert(i, c);
        }
    }

    pub fn remove(&mut self, i: usize) -> Option<C> {
        let c = self.deque().remove(i);
        self.settle();
        c
    }

    pub fn iter(&self) -> Iter<'_, C> {
        self.range(0..self.len())
    }

    pub fn range(&self, r: Range<usize>) -> Iter<'_, C> {
        match self {
            Chunks::One(c) => Iter::One(std::slice::from_ref(c)[r].iter()),
            Chunks::Many(d) => Iter::Many(d.range(r)),
        }
    }
}

impl<C> Index<usize> for Chunks<C> {
    type Output = C;
    fn index(&self, i: usize) -> &C {
        match self {
            Chunks::One(c) if i == 0 => c,
            Chunks::One(_) => panic!("chunk {i} of 1"),
            Chunks::Many(d) => &d[i],
        }
    }
}

impl<C> IndexMut<usize> for Chunks<C> {
    fn index_mut(&mut self, i: usize) -> &mut C {
        match self {
            Chunks::One(c) if i == 0 => c,
            Chunks::One(_) => panic!("chunk {i} of 1"),
            Chunks::Many(d) => &mut d[i],
        }
    }
}

/// The chunks in order, from either end.
pub(super) enum Iter<'a, C> {
    One(std::slice::Iter<'a, C>),
    Many(std::collections::vec_deque::Iter<'a, C>),
}

impl<'a, C> Iterator for Iter<'a, C> {
    type Item = &'a C;
    fn next(&mut self) -> Option<&'a C> {
        match self {
            Iter::One(i) => i.next(),
            Iter::Many(i) => i.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::One(i) => i.size_hint(),
            Iter::Many(i) => i.size_hint(),
        }
    }
}

impl<C> DoubleEndedIterator for Iter<'_, C> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::One(i) => i.next_back(),
            Iter::Many(i) => i.next_back(),
        }
    }
}

impl<C> ExactSizeIterator for Iter<'_, C> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_chunk_stays_in_place() {
        let mut c: Chunks<u8> = Chunks::default();
        assert_eq!(c.len(), 0);
        c.push_back(1);
        assert!(matches!(c, Chunks::One(1)));
        c.push_front(0);
        c.push_back(2);
        assert_eq!(c.iter().copied().collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(c.iter().rev().copied().collect::<Vec<_>>(), [2, 1, 0]);
        assert_eq!(c.pop_front(), Some(0));
        assert_eq!(c.remove(1), Some(2));
        assert!(matches!(c, Chunks::One(1)), "back in place");
        c.insert(0, 9);
        assert_eq!(c[0], 9);
        assert_eq!(c.range(1..2).copied().collect::<Vec<_>>(), [1]);
        assert_eq!(c.pop_back(), Some(1));
        assert_eq!(c.pop_back(), Some(9));
        assert_eq!(c.len(), 0);
        assert_eq!(c.pop_back(), None);
    }
}
