//! A tail-drop FIFO limited in packets or in bytes. The limit counts packets
//! waiting, not the one being serialised (the packet on the transmitter has
//! left the queue, as in ns-2 and ns-3). ns-2's DropTail admits one fewer:
//! it drops when the waiting packets would reach `limit_`, so its `limit_ 50`
//! is a limit of 49 here.

use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

pub struct DropTailQueue {
    limit: QueueLimit,
    items: VecDeque<(u32, u32)>, // (packet handle, size)
    bytes: u64,
}

impl DropTailQueue {
    pub fn new(limit: QueueLimit) -> Self {
        Self {
            limit,
            items: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Whether a packet of `size` bytes fits.
    #[inline]
    pub fn admits(&self, size: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => (self.items.len() as u64) < n as u64,
            QueueLimit::Bytes(b) => self.bytes + size as u64 <= b,
        }
    }

    /// Append; the caller has checked `admits`.
    #[inline]
    pub fn push(&mut self, handle: u32, size: u32) {
        self.bytes += size as u64;
        self.items.push_back((handle, size));
    }

    #[inline]
    pub fn pop(&mut self) -> Option<u32> {
        let (h, size) = self.items.pop_front()?;
        self.bytes -= size as u64;
        Some(h)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn handles(&self) -> impl Iterator<Item = u32> + '_ {
        self.items.iter().map(|(h, _)| *h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_limit_is_exact() {
        let mut q = DropTailQueue::new(QueueLimit::Packets(3));
        for i in 0..3 {
            assert!(q.admits(1500));
            q.push(i, 1500);
        }
        assert!(!q.admits(40));
        assert_eq!(q.pop(), Some(0));
        assert!(q.admits(40));
    }

    #[test]
    fn byte_limit_counts_sizes() {
        let mut q = DropTailQueue::new(QueueLimit::Bytes(3000));
        q.push(0, 1500);
        q.push(1, 1460);
        assert_eq!(q.bytes(), 2960);
        assert!(q.admits(40));
        assert!(!q.admits(41));
    }
}
