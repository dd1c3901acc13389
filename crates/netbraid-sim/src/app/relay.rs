//! A split-connection TCP relay (a PEP, or one hop of an overlay): the
//! application a proxy node runs for one relayed flow. It terminates the
//! incoming leg (path 0: its TCP receiver acknowledges data as it arrives —
//! the early ACK), holds what it read in a relay buffer of bounded size, and
//! writes it into the outgoing leg (path 1: a TCP sender with its own
//! controller, windows and recovery).
//!
//! Back-pressure is end to end but leg by leg: the outgoing sender takes data
//! only as its send buffer frees (ACKs on the outgoing leg), the relay reads
//! only into free relay buffer, and unread data fills the incoming receive
//! buffer, closing the window the incoming sender sees.
//!
//! The incoming socket is read the moment data arrives while the relay
//! buffer has room for everything the socket could hold (as a proxy blocked
//! in recv()); with less room, it reads what fits after each packet and the
//! socket's window updates reopen the leg when it drains.

use crate::endpoint::{Endpoint, Outbox, Received, Report, Scope, Snapshot};
use crate::engine::time::earliest;
use crate::engine::Time;
use crate::transport::tcp::{TcpReceiver, TcpSender};
use crate::transport::{StreamReceiver, StreamSender};

/// The incoming leg's path and the outgoing one's.
const IN: u8 = 0;
const OUT: u8 = 1;

pub struct Relay {
    inbound: TcpReceiver,
    outbound: TcpSender,
    /// The relay buffer's bound, bytes.
    capacity: u64,
    /// Bytes read from the incoming leg and not yet taken by the outgoing one.
    held: u64,
    /// For a finite transfer: bytes the flow carries; the outgoing leg is
    /// closed (FIN relayed) once they have all been handed to it.
    total: Option<u64>,
    relayed: u64,
    closed: bool,
    /// Largest relay-buffer occupancy seen.
    peak: u64,
}

impl Relay {
    pub fn new(inbound: TcpReceiver, outbound: TcpSender, capacity: u64, total: Option<u64>) -> Self {
        let mut r = Self {
            inbound,
            outbound,
            capacity,
            held: 0,
            total,
            relayed: 0,
            closed: false,
            peak: 0,
        };
        r.inbound.set_reader_waiting(true);
        r.inbound.set_arrival_budget(capacity);
        r
    }

    /// `n` bytes read from the incoming socket enter the relay buffer.
    fn took(&mut self, n: u64) {
        self.held += n;
        self.peak = self.peak.max(self.held);
    }

    /// The outgoing sender's transmits leave on path 1.
    fn outgoing<R>(out: &mut Outbox, f: impl FnOnce(&mut Outbox) -> R) -> R {
        let before = out.len();
        let r = f(out);
        for tx in &mut out[before..] {
            tx.path = OUT;
        }
        r
    }

    /// Move data along: relay buffer → outgoing socket, incoming socket →
    /// relay buffer, until neither moves.
    fn pump(&mut self, now: Time, out: &mut Outbox) {
        loop {
            let mut moved = 0;
            if self.held > 0 {
                let (outbound, held) = (&mut self.outbound, self.held);
                let n = Self::outgoing(out, |out| outbound.write(now, held, out));
                self.held -= n;
                self.relayed += n;
                moved += n;
            }
            let room = self.capacity - self.held;
            let n = self.inbound.read(room, out);
            self.took(n);
            moved += n;
            if moved == 0 {
                break;
            }
        }
        if !self.closed && self.held == 0 && self.total.is_some_and(|t| self.relayed >= t) {
            self.closed = true;
            let outbound = &mut self.outbound;
            Self::outgoing(out, |out| outbound.close(now, out));
        }
        // What arrives next is read up to the room left.
        self.inbound.set_arrival_budget(self.capacity - self.held);
    }
}

impl Endpoint for Relay {
    fn kind(&self) -> &'static str {
        "relay"
    }
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        if rx.packet.path == IN {
            // data read on arrival lands in the relay buffer
            let before = self.inbound.stats().read_bytes;
            StreamReceiver::on_packet(&mut self.inbound, now, rx, out);
            self.took(self.inbound.stats().read_bytes - before);
        } else {
            let outbound = &mut self.outbound;
            Self::outgoing(out, |out| StreamSender::on_packet(outbound, now, rx, out));
        }
        self.pump(now, out);
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        StreamReceiver::on_timer(&mut self.inbound, now, out);
        let outbound = &mut self.outbound;
        Self::outgoing(out, |out| StreamSender::on_timer(outbound, now, out));
        self.pump(now, out);
    }
    fn poll_at(&self) -> Option<Time> {
        earliest(
            StreamReceiver::poll_at(&self.inbound),
            StreamSender::poll_at(&self.outbound),
        )
    }
    fn path_count(&self) -> usize {
        2
    }
    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot {
        let inbound = StreamReceiver::snapshot(&mut self.inbound, now, scope);
        let outbound = StreamSender::snapshot(&mut self.outbound, now, scope);
        match scope {
            Scope::Path(0) => inbound,
            Scope::Path(_) => outbound,
            Scope::All => Snapshot {
                counters: inbound.counters.plus(&outbound.counters),
                sender: outbound.sender,
            },
        }
    }
    fn report(&self) -> Report {
        StreamSender::report(&self.outbound)
    }
    fn relay_buffer(&self) -> Option<(u64, u64)> {
        Some((self.held, self.peak))
    }
}
