//! The sender's socket buffer: what the application has written and the
//! connection has not yet had acknowledged. The application (or an MPTCP
//! scheduler, or a relay) fills it; the sender sends from it.
//!
//! Two ways to write, as with a real socket:
//! - `write` (non-blocking): takes what fits now and returns how much;
//! - `write_all` (a blocked writer, like iperf's loop on a blocking socket):
//!   the bytes wait in the application and enter the buffer the moment
//!   acknowledgements free room, with no delay of their own. An endless
//!   writer is `write_all(None)`.
//!
//! Offsets are absolute sequence numbers of the connection's byte stream.

#[derive(Clone, Debug)]
pub struct SendBuffer {
    /// Bytes the buffer holds at most (SO_SNDBUF): unacknowledged + unsent.
    capacity: u64,
    /// One past the last byte written into the buffer.
    written: u64,
    /// Bytes a blocked writer still holds (u64::MAX: endless).
    blocked: u64,
    /// The application will write nothing after `blocked` (shutdown for
    /// writing): the last, short segment may go at once.
    closed: bool,
}

impl SendBuffer {
    pub fn new(capacity: u64) -> Self {
        Self {
            capacity,
            written: 0,
            blocked: 0,
            closed: false,
        }
    }

    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// One past the last byte available to send, given the oldest
    /// unacknowledged byte `snd_una`: what was written, plus what a blocked
    /// writer has put in as room opened.
    pub fn end(&self, snd_una: u64) -> u64 {
        let room_end = snd_una.saturating_add(self.capacity);
        self.written
            .max(self.written.saturating_add(self.blocked).min(room_end))
    }

    /// Bytes a blocked writer still holds beyond `end`.
    pub fn pending(&self, snd_una: u64) -> u64 {
        self.written.saturating_add(self.blocked) - self.end(snd_una)
    }

    /// Room for a non-blocking write now.
    pub fn space(&self, snd_una: u64) -> u64 {
        snd_una.saturating_add(self.capacity).saturating_sub(self.end(snd_una))
    }

    /// Non-blocking write: takes what fits (nothing while a blocked write is
    /// still pending, which keeps the byte order) and returns how much.
    pub fn write(&mut self, snd_una: u64, bytes: u64) -> u64 {
        if self.closed || self.pending(snd_una) > 0 {
            return 0;
        }
        self.settle(snd_una);
        let n = bytes.min(self.space(snd_una));
        self.written += n;
        n
    }

    /// A blocked writer hands over `bytes` (None: endlessly).
    pub fn write_all(&mut self, bytes: Option<u64>) {
        if self.closed {
            return;
        }
        self.blocked = match bytes {
            None => u64::MAX,
            Some(n) => self.blocked.saturating_add(n),
        };
    }

    /// Nothing more will be written after what is already handed over.
    pub fn close(&mut self) {
        self.closed = true;
    }

    /// The application stops at once: bytes not yet sent are discarded (the
    /// end of an iperf -t run, modelled as if the socket buffer held only
    /// what is in flight). `snd_max` is one past the highest byte sent.
    pub fn stop(&mut self, snd_max: u64) {
        self.written = snd_max;
        self.blocked = 0;
        self.closed = true;
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Every byte the application will ever write is in the buffer.
    pub fn all_written(&self, snd_una: u64) -> bool {
        self.pending(snd_una) == 0
    }

    /// Move what a blocked writer has put in into `written`.
    fn settle(&mut self, snd_una: u64) {
        let end = self.end(snd_una);
        if self.blocked != u64::MAX {
            self.blocked -= end - self.written;
        }
        self.written = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocked_writer_fills_as_room_opens() {
        let mut b = SendBuffer::new(10_000);
        b.write_all(Some(25_000));
        assert_eq!(b.end(0), 10_000);
        assert_eq!(b.pending(0), 15_000);
        assert_eq!(b.end(4_000), 14_000); // 4000 acknowledged: 4000 more enter
        assert_eq!(b.end(20_000), 25_000);
        assert!(b.all_written(20_000));
        assert_eq!(b.space(0), 0);
    }

    #[test]
    fn non_blocking_write_takes_what_fits() {
        let mut b = SendBuffer::new(1000);
        assert_eq!(b.write(0, 600), 600);
        assert_eq!(b.write(0, 600), 400);
        assert_eq!(b.write(0, 1), 0);
        assert_eq!(b.write(500, 800), 500);
        assert_eq!(b.end(500), 1500);
        // Nothing jumps a blocked writer's queue: while its bytes wait for
        // room, a non-blocking write takes nothing; once they are in, it
        // goes after them.
        b.write_all(Some(100));
        assert_eq!(b.write(500, 10), 0);
        assert_eq!(b.end(1500), 1600);
        assert_eq!(b.write(1500, 10), 10);
        assert_eq!(b.end(1500), 1610);
    }

    #[test]
    fn stop_discards_unsent_bytes() {
        let mut b = SendBuffer::new(1 << 30);
        b.write_all(None);
        b.stop(3000);
        assert_eq!(b.end(0), 3000);
        assert!(b.is_closed() && b.all_written(0));
        b.write_all(Some(10));
        assert_eq!(b.end(0), 3000);
    }
}
