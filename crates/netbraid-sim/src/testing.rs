//! Test harness: two endpoints back to back over one simple link (a rate,
//! a delay and an unbounded FIFO per direction), driven by a minimal event
//! loop. Protocol tests use it to exercise a sender and a receiver together
//! without the whole simulation; a filter can drop chosen packets.

use crate::endpoint::{Endpoint, Outbox, Received, Scope, Snapshot, Transmit};
use crate::engine::time::serialisation_time;
use crate::engine::Time;
use crate::ids::{EndpointId, FlowId, IfaceId};
use crate::net::packet::{ecn, Body, Packet};
use crate::scenario::{DirectionSpec, FlowSpec, LinkSpec, LossSpec, MeasureSpec, NodeSpec, QueueSpec, Scenario};
use crate::transport::{StreamReceiver, StreamSender};
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

// ---- multipath -------------------------------------------------------------

/// (path, towards the receiver, now, packet) -> dropped?
pub type DropRule = Box<dyn FnMut(usize, bool, Time, &Transmit) -> bool>;

/// A minimal two-ended network with several paths for driving a multipath
/// stream sender and receiver (MPTCP, SCTP) directly: per-path delay and
/// rate, a drop-tail queue (`max_queue` of waiting), and a drop rule of time
/// and path (outages, cut cables) that scenarios cannot state.
pub struct PathNet<S: StreamSender, R: StreamReceiver> {
    pub tx: S,
    pub rx: R,
    pub delay: Vec<Time>,
    pub rate_bps: Vec<u64>,
    busy: Vec<[Time; 2]>,
    pub drop: DropRule,
    heap: BinaryHeap<(Reverse<Time>, Reverse<u64>, usize)>,
    slots: Vec<Option<(bool, Transmit)>>,
    n: u64,
    pub now: Time,
    pub max_queue: Time,
}

impl<S: StreamSender, R: StreamReceiver> PathNet<S, R> {
    /// The receiving application reads as data arrives.
    pub fn new(tx: S, mut rx: R, delay: Vec<Time>, rate_bps: Vec<u64>) -> Self {
        rx.set_reader_waiting(true);
        Self {
            tx,
            rx,
            busy: vec![[0, 0]; delay.len()],
            delay,
            rate_bps,
            drop: Box::new(|_, _, _, _| false),
            heap: BinaryHeap::new(),
            slots: vec![],
            n: 0,
            now: 0,
            max_queue: 50 * crate::engine::time::MILLISECOND,
        }
    }

    fn send(&mut self, to_rx: bool, out: &mut Outbox) {
        for t in out.drain(..) {
            let p = t.path as usize;
            if (self.drop)(p, to_rx, self.now, &t) {
                continue;
            }
            let d = to_rx as usize;
            let ser = serialisation_time(t.size, self.rate_bps[p]);
            let start = self.busy[p][d].max(self.now);
            if start - self.now > self.max_queue {
                continue; // drop-tail
            }
            self.busy[p][d] = start + ser;
            let at = start + ser + self.delay[p];
            self.n += 1;
            self.slots.push(Some((to_rx, t)));
            self.heap.push((Reverse(at), Reverse(self.n), self.slots.len() - 1));
        }
    }

    /// The application writes `bytes` (None: endlessly) at time 0.
    pub fn start(&mut self, bytes: Option<u64>) {
        let mut out = Vec::new();
        self.tx.write_all(0, bytes, &mut out);
        if bytes.is_some() {
            self.tx.close(0, &mut out);
        }
        self.send(true, &mut out);
    }

    /// Run until `until`.
    pub fn run(&mut self, until: Time) {
        let mut out = Vec::new();
        loop {
            let next_pkt = self.heap.peek().map(|(Reverse(t), _, _)| *t);
            let cands = [next_pkt, self.tx.poll_at(), self.rx.poll_at()];
            let Some(t) = cands.iter().flatten().copied().min() else {
                break;
            };
            if t > until {
                break;
            }
            self.now = t.max(self.now);
            let now = self.now;
            if next_pkt == Some(t) {
                let (_, _, k) = self.heap.pop().expect("peeked");
                let (to_rx, tx) = self.slots[k].take().expect("each packet arrives once");
                let pkt = Packet {
                    src: IfaceId(0),
                    dst: IfaceId(0),
                    src_port: 0,
                    dst_port: 0,
                    endpoint: EndpointId(0),
                    path: tx.path,
                    flow: FlowId(0),
                    track: 0,
                    data: to_rx,
                    size: tx.size,
                    ttl: 64,
                    ecn: 0,
                    ext: None,
                    body: tx.body,
                };
                let rxd = Received {
                    packet: &pkt,
                    ext: tx.ext,
                };
                if to_rx {
                    self.rx.on_packet(now, rxd, &mut out);
                    self.send(false, &mut out);
                } else {
                    self.tx.on_packet(now, rxd, &mut out);
                    self.send(true, &mut out);
                }
            } else if self.tx.poll_at() == Some(t) {
                self.tx.on_timer(now, &mut out);
                self.send(true, &mut out);
            } else {
                self.rx.on_timer(now, &mut out);
                self.send(false, &mut out);
            }
        }
        self.now = self.now.max(until);
    }
}

/// A link direction of `rate_bps` and one-way `delay_ns`, a queue of
/// `packets`, no loss.
pub fn direction(rate_bps: u64, delay_ns: u64, packets: u32) -> DirectionSpec {
    DirectionSpec {
        rate_bps,
        framing_bytes: 0,
        down: vec![],
        delay_ns,
        jitter_ns: 0,
        queue: QueueSpec {
            packets: Some(packets),
            bytes: None,
            red: None,
        },
        loss: LossSpec::None,
    }
}

/// client ⇉ server over two direct links (client interfaces 0 and 2,
/// server 1 and 3), each `rate` with one-way `delay` and `loss` towards the
/// server, and a 100-packet queue.
pub fn two_links(
    paths: [(u64, Time, LossSpec); 2],
    flows: Vec<FlowSpec>,
    duration: Time,
    measure_from: Time,
) -> Scenario {
    let dir = |rate_bps, delay_ns, loss: LossSpec| DirectionSpec {
        loss,
        ..direction(rate_bps, delay_ns, 100)
    };
    Scenario {
        name: "mptcp".into(),
        seed: 1,
        duration_ns: duration,
        nodes: ["client", "server"]
            .iter()
            .map(|n| NodeSpec {
                name: n.to_string(),
                router: false,
                multipath: Default::default(),
            })
            .collect(),
        links: paths
            .into_iter()
            .map(|(rate, delay, loss)| LinkSpec {
                name: None,
                a: 0,
                b: 1,
                ab: dir(rate, delay, loss),
                ba: dir(rate, delay, LossSpec::None),
            })
            .collect(),
        routes: vec![],
        flows,
        proxies: vec![],
        measure: MeasureSpec {
            start_ns: measure_from,
            stop_ns: duration,
            interval_ns: None,
        },
        pcap: vec![],
    }
}
