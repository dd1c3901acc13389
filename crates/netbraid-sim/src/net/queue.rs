//! A tail-drop FIFO limited in packets or in bytes. The limit counts packets
//! waiting, not the one being serialised (the packet on the transmitter has
//! left the queue, as in ns-2 and ns-3). ns-2's DropTail admits one fewer:
//! it drops when the waiting packets would reach `limit_`, so its `limit_ 50`
//! is a limit of 49 here.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u32),
    Bytes(u64),
}

/// The occupancy of a FIFO and its limit. The packets themselves are kept
/// in order by the link (`link::Channel::in_link`), which knows which of
/// them are still waiting; this only counts them.
pub struct DropTailQueue {
    limit: QueueLimit,
    len: u32,
    bytes: u64,
}

impl DropTailQueue {
    pub fn new(limit: QueueLimit) -> Self {
        Self {
            limit,
            len: 0,
            bytes: 0,
        }
    }

    /// Whether a packet of `size` bytes fits.
    #[inline]
    pub fn admits(&self, size: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => self.len < n,
            QueueLimit::Bytes(b) => self.bytes + size as u64 <= b,
        }
    }

    /// A packet joins the queue; the caller has checked `admits`.
    #[inline]
    pub fn push(&mut self, size: u32) {
        self.len += 1;
        self.bytes += size as u64;
    }

    /// The packet at the head (of `size` bytes) leaves for the transmitter.
    #[inline]
    pub fn pop(&mut self, size: u32) {
        debug_assert!(self.len > 0 && self.bytes >= size as u64);
        self.len -= 1;
        self.bytes -= size as u64;
    }

    /// Every packet left for the transmitter.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
        self.bytes = 0;
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_limit_is_exact() {
        let mut q = DropTailQueue::new(QueueLimit::Packets(3));
        for _ in 0..3 {
            assert!(q.admits(1500));
            q.push(1500);
        }
        assert!(!q.admits(40));
        q.pop(1500);
        assert!(q.admits(40));
    }

    #[test]
    fn byte_limit_counts_sizes() {
        let mut q = DropTailQueue::new(QueueLimit::Bytes(3000));
        q.push(1500);
        q.push(1460);
        assert_eq!(q.bytes(), 2960);
        assert!(q.admits(40));
        assert!(!q.admits(41));
    }
}
