//! A FIFO in a power-of-two ring: `VecDeque`'s operations that a link's
//! packets use, with the wrap-around a mask instead of a compare. A packet
//! enters and leaves one of these on every hop (`net::link::Channel`), where
//! `VecDeque`'s index arithmetic was a measurable share of the hop
//! (bench/RESULTS.md, 2026-12-06, late night).

use std::ops::{Index, IndexMut};

pub struct Ring<T> {
    /// The slots, a power of two of them (or none); those outside the
    /// `len` entries from `head` hold stale copies.
    slots: Box<[T]>,
    /// Slot of the first entry.
    head: usize,
    len: usize,
}

impl<T> Default for Ring<T> {
    fn default() -> Self {
        Self {
            slots: Box::new([]),
            head: 0,
            len: 0,
        }
    }
}

impl<T: Copy> Ring<T> {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slot of the `i`-th entry (for `i` up to the number of slots).
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        (self.head + i) & (self.slots.len().wrapping_sub(1))
    }

    #[inline]
    pub fn push_back(&mut self, value: T) {
        if self.len == self.slots.len() {
            self.grow(value);
        }
        let at = self.slot(self.len);
        self.slots[at] = value;
        self.len += 1;
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let value = self.slots[self.head];
        self.head = self.slot(1);
        self.len -= 1;
        Some(value)
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    pub fn back(&self) -> Option<&T> {
        self.len.checked_sub(1).and_then(|i| self.get(i))
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        (i < self.len).then(|| &self.slots[self.slot(i)])
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + '_ {
        (0..self.len).map(move |i| &self.slots[self.slot(i)])
    }

    /// Double the slots (at least 8), the entries moved to the front in
    /// order; the new slots hold copies of `fill` until used.
    #[cold]
    fn grow(&mut self, fill: T) {
        let cap = (2 * self.slots.len()).max(8);
        let mut slots = Vec::with_capacity(cap);
        slots.extend(self.iter().copied());
        slots.resize(cap, fill);
        self.slots = slots.into_boxed_slice();
        self.head = 0;
    }
}

impl<T: Copy> Index<usize> for Ring<T> {
    type Output = T;
    #[inline]
    fn index(&self, i: usize) -> &T {
        self.get(i).expect("ring index out of range")
    }
}

impl<T: Copy> IndexMut<usize> for Ring<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        assert!(i < self.len, "ring index out of range");
        let at = self.slot(i);
        &mut self.slots[at]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    /// Against `VecDeque` as the oracle: random pushes and pops across
    /// several growths and many wrap-arounds.
    #[test]
    fn behaves_as_a_vecdeque() {
        let (mut ring, mut oracle) = (Ring::new(), VecDeque::new());
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for i in 0..100_000u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // more pushes than pops early (growth), balanced later (wraps)
            if x % 100 < if i < 2_000 { 70 } else { 50 } {
                ring.push_back(i);
                oracle.push_back(i);
            } else {
                assert_eq!(ring.pop_front(), oracle.pop_front());
            }
            assert_eq!(ring.len(), oracle.len());
            assert_eq!(ring.front(), oracle.front());
            assert_eq!(ring.back(), oracle.back());
            let k = (x >> 32) as usize % (oracle.len() + 2);
            assert_eq!(ring.get(k), oracle.get(k));
        }
        assert!(ring.len() > 100, "grew past several doublings");
        assert!(ring.iter().eq(oracle.iter()));
        assert!(ring.iter().rev().eq(oracle.iter().rev()));
        ring[3] += 1;
        oracle[3] += 1;
        assert_eq!(ring[3], oracle[3]);
    }
}
