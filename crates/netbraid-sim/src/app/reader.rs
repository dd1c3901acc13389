//! The receiving application of a stream flow (TCP, MPTCP). It reads either as data arrives
//! (an iperf server waiting in read()), or at a limited rate (a slow
//! consumer: a disk, a slower next hop), in which case the receive buffer
//! fills, the advertised window closes and the sender is held back.

use crate::endpoint::{Endpoint, Outbox, Received, Scope, Snapshot};
use crate::engine::time::{earliest, serialisation_time};
use crate::engine::Time;
use crate::transport::tcp::TcpReceiver;
use crate::transport::StreamReceiver;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadPolicy {
    /// In-order data is read the moment it arrives.
    Waiting,
    /// At most `rate_bps` on average, `chunk` bytes per read.
    Rate { rate_bps: u64, chunk: u64 },
    /// Nothing is read (the application is busy elsewhere).
    Paused,
}

/// The reader of a TCP connection.
pub type TcpReader = Reader<TcpReceiver>;

pub struct Reader<R: StreamReceiver> {
    socket: R,
    policy: ReadPolicy,
    /// Rate-limited reading: the earliest time of the next read.
    next_read: Time,
    /// A read is due at `next_read` (data is waiting for it).
    read_pending: bool,
}

impl<R: StreamReceiver> Reader<R> {
    pub fn new(mut socket: R, policy: ReadPolicy) -> Self {
        socket.set_reader_waiting(policy == ReadPolicy::Waiting);
        Self {
            socket,
            policy,
            next_read: 0,
            read_pending: false,
        }
    }

    pub fn socket(&self) -> &R {
        &self.socket
    }

    /// Change how fast the application reads (from `now` on).
    pub fn set_policy(&mut self, now: Time, policy: ReadPolicy, out: &mut Outbox) {
        self.policy = policy;
        self.socket.set_reader_waiting(policy == ReadPolicy::Waiting);
        self.next_read = now;
        if policy == ReadPolicy::Waiting {
            self.socket.read(u64::MAX, out);
        }
        self.schedule();
    }

    /// Rate-limited: a read is due when data waits for one.
    fn schedule(&mut self) {
        self.read_pending = matches!(self.policy, ReadPolicy::Rate { .. }) && self.socket.readable() > 0;
    }
}

impl<R: StreamReceiver> Endpoint for Reader<R> {
    fn kind(&self) -> &'static str {
        "tcp"
    }
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        self.socket.on_packet(now, rx, out);
        if matches!(self.policy, ReadPolicy::Rate { .. }) && !self.read_pending {
            self.next_read = self.next_read.max(now);
            self.schedule();
        }
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        self.socket.on_timer(now, out);
        if let ReadPolicy::Rate { rate_bps, chunk } = self.policy {
            if self.read_pending && now >= self.next_read {
                let n = self.socket.read(chunk, out);
                // The next read comes when this one's bytes have drained at the rate.
                self.next_read = now + serialisation_time(n.min(u32::MAX as u64) as u32, rate_bps);
                self.schedule();
            }
        }
    }
    fn poll_at(&self) -> Option<Time> {
        let read = self.read_pending.then_some(self.next_read);
        earliest(self.socket.poll_at(), read)
    }
    fn path_count(&self) -> usize {
        self.socket.path_count()
    }
    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot {
        self.socket.snapshot(now, scope)
    }
}
