//! Test harness: two endpoints back to back over one simple link (a rate,
//! a delay and an unbounded FIFO per direction), driven by a minimal event
//! loop. Protocol tests use it to exercise a sender and a receiver together
//! without the whole simulation; a filter can drop chosen packets.

use crate::endpoint::{Endpoint, Outbox, Received, Scope, Snapshot, Transmit};
use crate::engine::time::serialisation_time;
use crate::engine::Time;
use crate::ids::{EndpointId, FlowId, IfaceId};
use crate::net::packet::{ecn, Body, Packet};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Which way a packet goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From `a` (the sender) to `b`.
    AtoB,
    BtoA,
}

/// What the harness saw of one packet.
#[derive(Clone, Debug)]
pub struct Sent {
    pub at: Time,
    pub dir: Dir,
    pub body: Body,
    pub dropped: bool,
}

pub struct BackToBack<A: Endpoint, B: Endpoint> {
    pub a: A,
    pub b: B,
    pub rate_bps: u64,
    pub delay: Time,
    pub now: Time,
    /// Decides whether to drop a packet (after serialisation, like a lossy wire).
    pub drop: Box<dyn FnMut(&Sent) -> bool>,
    /// Every packet sent, in order.
    pub log: Vec<Sent>,
    /// Arrivals: (time, order, direction index, packet).
    arrivals: BinaryHeap<Reverse<(Time, u64, u8, PacketKey)>>,
    packets: Vec<Option<Packet>>,
    seq: u64,
    /// When each direction's transmitter is next free.
    free_at: [Time; 2],
}

/// Index into `packets` (the heap needs an ordered key, not the packet).
type PacketKey = usize;

impl<A: Endpoint, B: Endpoint> BackToBack<A, B> {
    pub fn new(a: A, b: B, rate_bps: u64, delay: Time) -> Self {
        Self {
            a,
            b,
            rate_bps,
            delay,
            now: 0,
            drop: Box::new(|_| false),
            log: Vec::new(),
            arrivals: BinaryHeap::new(),
            packets: Vec::new(),
            seq: 0,
            free_at: [0, 0],
        }
    }

    /// Start `a`'s application (and `b`'s, which most ignore).
    pub fn start(&mut self) {
        let mut out = Outbox::new();
        self.a.start(self.now, &mut out);
        self.send(Dir::AtoB, &mut out);
        self.b.start(self.now, &mut out);
        self.send(Dir::BtoA, &mut out);
    }

    /// Put what an end pushed into `out` on the link, in direction `dir`.
    pub fn send(&mut self, dir: Dir, out: &mut Outbox) {
        let d = (dir == Dir::BtoA) as usize;
        for Transmit { body, size, ect, .. } in out.drain(..) {
            let begin = self.now.max(self.free_at[d]);
            let done = begin + serialisation_time(size, self.rate_bps);
            self.free_at[d] = done;
            let mut rec = Sent {
                at: begin,
                dir,
                body,
                dropped: false,
            };
            rec.dropped = (self.drop)(&rec);
            let dropped = rec.dropped;
            self.log.push(rec);
            if dropped {
                continue;
            }
            let pkt = Packet {
                src: IfaceId(d as u32),
                dst: IfaceId(1 - d as u32),
                src_port: 0,
                dst_port: 0,
                endpoint: EndpointId(1 - d as u32),
                path: 0,
                flow: FlowId(0),
                track: 0,
                data: d == 0,
                size,
                ttl: 64,
                ecn: if ect { ecn::ECT } else { ecn::NOT_ECT },
                ext: None,
                body,
            };
            self.packets.push(Some(pkt));
            self.seq += 1;
            self.arrivals
                .push(Reverse((done + self.delay, self.seq, d as u8, self.packets.len() - 1)));
        }
    }

    /// Run every event up to and including `until`.
    pub fn run_until(&mut self, until: Time) {
        let mut out = Outbox::new();
        loop {
            let arrival = self.arrivals.peek().map(|Reverse((t, ..))| *t);
            let next = [arrival, self.a.poll_at(), self.b.poll_at()]
                .into_iter()
                .flatten()
                .min();
            let Some(t) = next.filter(|&t| t <= until) else { break };
            self.now = self.now.max(t);
            if arrival == Some(t) {
                let Reverse((_, _, d, key)) = self.arrivals.pop().expect("peeked");
                let pkt = self.packets[key].take().expect("delivered once");
                if d == 0 {
                    self.b.on_packet(
                        self.now,
                        Received {
                            packet: &pkt,
                            ext: None,
                        },
                        &mut out,
                    );
                    self.send(Dir::BtoA, &mut out);
                } else {
                    self.a.on_packet(
                        self.now,
                        Received {
                            packet: &pkt,
                            ext: None,
                        },
                        &mut out,
                    );
                    self.send(Dir::AtoB, &mut out);
                }
            } else if self.a.poll_at() == Some(t) {
                self.a.on_timer(self.now, &mut out);
                self.send(Dir::AtoB, &mut out);
            } else {
                self.b.on_timer(self.now, &mut out);
                self.send(Dir::BtoA, &mut out);
            }
        }
        self.now = self.now.max(until);
    }

    pub fn a_stats(&mut self) -> Snapshot {
        self.a.snapshot(self.now, Scope::All)
    }
    pub fn b_stats(&mut self) -> Snapshot {
        self.b.snapshot(self.now, Scope::All)
    }
}
