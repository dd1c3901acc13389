//! The simulation: owns the event queue, the network and the endpoints, and
//! moves packets between them, in one direction: an endpoint's outbox →
//! its path's first channel → (router → channel)* → the peer endpoint.
//! Protocol logic lives in the endpoints (`endpoint::Endpoint`), the link
//! model in `net::link`, forwarding in `net::routing`; measurement is in
//! `measure`, results in `results`, construction in `build`.

mod build;
mod flows;
mod measure;
mod results;
mod transit;

pub use build::{check_rate, check_time, MAX_RATE_BPS, MAX_SAMPLES, MAX_TIME_NS};
pub use flows::{builtin, EndpointFactory, EndpointPair, FlowSetup};
pub use results::{Accounting, FlowResult, LinkResult, RunResult, SubflowResult};

use crate::endpoint::{Endpoint, Path, Received};
use crate::engine::{EventQueue, Time};
use crate::error::SimError;
use crate::ids::{EndpointId, FlowId, PacketRef};
use crate::net::link::{Channel, Offer};
use crate::net::packet::{ecn, Packet, PacketPool};
use crate::net::routing::{five_tuple_hash, Next, RoutingTable};
use crate::net::{ChannelId, IfaceId, NodeId};
use crate::scenario::MeasureSpec;
use crate::trace::pcap::Captures;
use measure::Meter;

#[derive(Clone, Copy, Debug)]
enum Event {
    /// The first packet in a channel reached its far end (or, lost, would
    /// have): the only event a packet-hop costs (`net::link`).
    Arrive(ChannelId),
    /// The first packet held by a channel's jitter line reaches the far end.
    Release(ChannelId),
    /// An endpoint asked to be woken (timers).
    Wake(EndpointId),
    /// A flow's application starts.
    Start(FlowId),
    /// A flow's application stops producing data.
    Stop(FlowId),
    Sample,
    MeasureStart,
    MeasureStop,
}

/// An endpoint and what the simulation keeps about it.
struct Slot {
    endpoint: Box<dyn Endpoint>,
    flow: FlowId,
    /// Addressing of each path, stamped on every packet sent on it.
    paths: Vec<Path>,
    /// Earliest Wake event already scheduled for this endpoint.
    wake_at: Option<Time>,
}

crate::counters! {
    /// Network-level accounting of a flow's packets (both directions), kept by
    /// the simulator independently of the endpoints' own counters.
    struct FlowAccounting {
        sent_bytes: u64,
        delivered_bytes: u64,
        dropped_bytes: u64,
        data_packets_sent: u64,
        /// Packets the receiving end sent (ACKs).
        ack_packets_sent: u64,
        data_packets_dropped: u64,
        ack_packets_dropped: u64,
    }
}

/// What the network saw of every path of every flow, in flat arrays: a
/// flow's paths are the consecutive tracks `Flow::tracks`, and each packet
/// names its track, so the per-hop bookkeeping is one indexed write.
struct Tracks {
    acct: Vec<FlowAccounting>,
    /// Per track, the protocol number of its packets (0 before the first),
    /// for walking an ECMP path by the five-tuple hash.
    protocol: Vec<u8>,
    /// Per track, the channels its packets (both directions) were offered
    /// to, in first-use order: a few per path, so a list (a bitset over all
    /// channels would grow with flows × links).
    links: Vec<Vec<u32>>,
}

impl Tracks {
    fn new() -> Self {
        Self {
            acct: Vec::new(),
            protocol: Vec::new(),
            links: Vec::new(),
        }
    }
    /// Tracks for a new flow with `n` paths; returns their range.
    fn add(&mut self, n: usize) -> std::ops::Range<u32> {
        let first = self.acct.len() as u32;
        self.acct.resize(self.acct.len() + n, FlowAccounting::default());
        self.protocol.resize(self.protocol.len() + n, 0);
        self.links.resize(self.links.len() + n, Vec::new());
        first..first + n as u32
    }
    #[inline]
    fn mark(&mut self, track: u32, ch: ChannelId) {
        let used = &mut self.links[track as usize];
        if !used.contains(&ch.0) {
            used.push(ch.0);
        }
    }
    /// Channels used by any of `tracks`, in channel order.
    fn used(&self, tracks: std::ops::Range<u32>) -> Vec<ChannelId> {
        let mut all: Vec<u32> = tracks.flat_map(|t| self.links[t as usize].iter().copied()).collect();
        all.sort_unstable();
        all.dedup();
        all.into_iter().map(ChannelId).collect()
    }
    fn acct(&self, tracks: std::ops::Range<u32>) -> FlowAccounting {
        tracks.fold(FlowAccounting::default(), |a, t| a.plus(&self.acct[t as usize]))
    }
}

struct Flow {
    name: String,
    src: NodeId,
    dst: NodeId,
    sender: EndpointId,
    receiver: EndpointId,
    start: Time,
    stop: Option<Time>,
    /// Its paths' tracks.
    tracks: std::ops::Range<u32>,
    /// A relayed flow's connections, one per leg (track `tracks.start + k`);
    /// empty for a flow whose two ends are `sender` and `receiver`.
    legs: Vec<Leg>,
}

/// One connection of a relayed flow: which endpoints, on which of their paths.
#[derive(Clone, Copy, Debug)]
struct Leg {
    sender: EndpointId,
    sender_path: u8,
    receiver: EndpointId,
    receiver_path: u8,
}

pub struct Simulation {
    name: String,
    seed: u64,
    events: EventQueue<Event>,
    pool: PacketPool,
    node_names: Vec<String>,
    is_router: Vec<bool>,
    channels: Vec<Channel>,
    routes: RoutingTable,
    iface_node: Vec<NodeId>,
    endpoints: Vec<Slot>,
    flows: Vec<Flow>,
    tracks: Tracks,
    /// Record the channels each packet is offered to: needed only where
    /// per-packet multipath routing (round robin, weighted) makes a flow's
    /// links a matter of chance; otherwise they follow from the tables and,
    /// for ECMP, the five-tuple (`Simulation::links_of`) at no cost per hop.
    mark_links: bool,
    /// Some channel has delivery jitter (so arrivals must ask which).
    jitter: bool,
    /// Per channel, the channel it hands its packets on to when it admits
    /// them, the router at its far end only passing them along (`transit`).
    transit: Vec<Option<ChannelId>>,
    outbox: crate::endpoint::Outbox,
    duration: Time,
    measure: MeasureSpec,
    meter: Meter,
    captures: Captures,
    /// Packets dropped for want of a route or by TTL (should stay 0).
    unroutable: u64,
}

impl Simulation {
    /// The two ends of path (or leg) `k` of flow `f`: (endpoint, its path
    /// index) for the sending end, then for the receiving end.
    fn ends_of(&self, f: usize, k: usize) -> ((EndpointId, usize), (EndpointId, usize)) {
        let flow = &self.flows[f];
        match flow.legs.get(k) {
            Some(l) => (
                (l.sender, l.sender_path as usize),
                (l.receiver, l.receiver_path as usize),
            ),
            None => ((flow.sender, k), (flow.receiver, k)),
        }
    }

    /// The forwarding table as a real network needs it: for every node and
    /// every host interface (and every interface of the routers in
    /// `also_to`: the split-TCP proxies, which connections address), the
    /// equal-cost channels a packet for that interface leaves by (static
    /// routes included). The emu backend installs exactly these routes, so
    /// both backends forward alike.
    pub fn forwarding(&mut self, also_to: &[NodeId]) -> Result<Vec<(NodeId, IfaceId, Vec<ChannelId>)>, SimError> {
        let host_ifaces: Vec<IfaceId> = (0..self.iface_node.len() as u32)
            .map(IfaceId)
            .filter(|i| {
                let node = self.iface_node[i.idx()];
                !self.is_router[node.idx()] || also_to.contains(&node)
            })
            .collect();
        for &i in &host_ifaces {
            self.routes.add_destination(i).map_err(|e| SimError::invalid("", e))?;
        }
        let mut out = Vec::new();
        for node in (0..self.is_router.len() as u32).map(NodeId) {
            for &i in &host_ifaces {
                let alts = self.routes.alternatives(node, i);
                if !alts.is_empty() {
                    out.push((node, i, alts));
                }
            }
        }
        Ok(out)
    }

    /// Run to the end and collect results.
    pub fn run(self) -> Result<RunResult, SimError> {
        self.run_with(&mut || false)
    }

    /// Run, asking `interrupted` every 2^20 events whether to stop (so that
    /// Ctrl-C reaches a long run); a stop is `Err(SimError::Interrupted)`.
    pub fn run_with(mut self, interrupted: &mut dyn FnMut() -> bool) -> Result<RunResult, SimError> {
        let wall = std::time::Instant::now();
        // Measurement boundaries first: at the same instant they come before
        // the flows' own events (a flow starting at the window's start is
        // counted from its first packet).
        // A window from time 0 starts before anything has happened: its
        // start is all zeros, which `results` builds, so no snapshot of
        // every flow is kept for the whole run (a third of an idle flow's
        // memory at the end).
        if self.measure.start_ns > 0 {
            self.events.schedule(self.measure.start_ns, Event::MeasureStart);
        }
        self.events
            .schedule(self.measure.stop_ns.min(self.duration), Event::MeasureStop);
        for (i, f) in self.flows.iter().enumerate() {
            self.events.schedule(f.start, Event::Start(FlowId(i as u32)));
            if let Some(stop) = f.stop {
                self.events.schedule(stop, Event::Stop(FlowId(i as u32)));
            }
        }
        if let Some(iv) = self.measure.interval_ns {
            self.meter.last_sample = Some(self.snapshot(0));
            self.events.schedule(iv, Event::Sample); // each sample schedules the next
        }
        while let Some((now, ev)) = self.events.pop_until(self.duration) {
            self.handle(now, ev);
            if self.events.executed() & 0xf_ffff == 0 && interrupted() {
                return Err(SimError::Interrupted);
            }
        }
        self.captures.finish()?;
        let wall_s = wall.elapsed().as_secs_f64();
        Ok(self.results(wall_s))
    }

    fn handle(&mut self, now: Time, ev: Event) {
        match ev {
            Event::Arrive(ch) => self.on_arrive(now, ch),
            Event::Release(ch) => self.release(now, ch),
            Event::Wake(ep) => {
                let slot = &mut self.endpoints[ep.idx()];
                if slot.wake_at == Some(now) {
                    slot.wake_at = None;
                }
                slot.endpoint.on_timer(now, &mut self.outbox);
                self.flush(now, ep);
            }
            Event::Start(f) => {
                let ep = self.flows[f.idx()].sender;
                self.endpoints[ep.idx()].endpoint.start(now, &mut self.outbox);
                self.flush(now, ep);
            }
            Event::Stop(f) => {
                let ep = self.flows[f.idx()].sender;
                self.endpoints[ep.idx()].endpoint.stop(now, &mut self.outbox);
                self.flush(now, ep);
            }
            Event::Sample => {
                self.sample(now);
                if let Some(iv) = self.measure.interval_ns {
                    self.events.schedule(now + iv, Event::Sample);
                }
            }
            Event::MeasureStart => self.meter.at_start = Some(self.snapshot(now)),
            Event::MeasureStop => {
                // A window that ends with the run, when nothing else happens
                // at this instant: the counters now are those at the end,
                // which `results` reads flow by flow, so no copy of every
                // flow's counters is held (a tenth of an idle flow's memory).
                let last = now == self.duration && self.events.peek_time().is_none_or(|t| t > now);
                if !last {
                    self.meter.at_stop = Some(self.snapshot(now));
                }
            }
        }
    }

    // ---- packet movement ---------------------------------------------------

    /// Send everything the endpoint put in the outbox, each packet on the
    /// path it names, then make sure its next timer is scheduled.
    fn flush(&mut self, now: Time, ep: EndpointId) {
        let mut outbox = std::mem::take(&mut self.outbox);
        // Each packet is written once, from the outbox straight into its
        // pool slot, not built on the stack and copied in (112 bytes).
        for tx in outbox.iter_mut() {
            let slot = &self.endpoints[ep.idx()];
            let path = &slot.paths[tx.path as usize];
            let (track, sends_data, out_channel) = (path.track, path.sends_data, path.out_channel);
            let ext = tx.ext.take().map(|e| self.pool.insert_ext(e));
            let p = self.pool.insert_with(|pkt| {
                *pkt = Packet {
                    src: path.local,
                    dst: path.remote,
                    src_port: path.local_port,
                    dst_port: path.remote_port,
                    endpoint: path.peer,
                    path: path.peer_path,
                    flow: slot.flow,
                    track,
                    data: sends_data,
                    size: tx.size,
                    ttl: 64,
                    ecn: if tx.ect { ecn::ECT } else { ecn::NOT_ECT },
                    ext,
                    body: tx.body,
                }
            });
            let acct = &mut self.tracks.acct[track as usize];
            acct.sent_bytes += tx.size as u64;
            if sends_data {
                acct.data_packets_sent += 1;
            } else {
                acct.ack_packets_sent += 1;
            }
            // (a track's packets are all of one protocol: the first says it)
            let protocol = &mut self.tracks.protocol[track as usize];
            if *protocol == 0 {
                *protocol = self.pool.get(p).protocol();
            }
            debug_assert_eq!(*protocol, self.pool.get(p).protocol(), "one protocol per track");
            self.forward(now, out_channel, p);
        }
        outbox.clear();
        self.outbox = outbox;
        let slot = &mut self.endpoints[ep.idx()];
        if let Some(want) = slot.endpoint.poll_at() {
            let want = want.max(now); // a timer already due runs now
            if slot.wake_at.is_none_or(|w| want < w) {
                slot.wake_at = Some(want);
                self.events.schedule(want, Event::Wake(ep));
            }
        }
    }

    fn forward(&mut self, now: Time, ch: ChannelId, p: PacketRef) {
        let pkt = self.pool.get(p);
        // (what each hop reads: a transit hop keeps it, but for the TTL)
        let (size, ect, track) = (pkt.size, pkt.ecn != ecn::NOT_ECT, pkt.track);
        let (mut now, mut ch) = (now, ch);
        loop {
            if self.mark_links {
                self.tracks.mark(track, ch);
            }
            // (forwarded only if it reaches the router before the run ends)
            let next = self.transit[ch.idx()];
            let forward_before = if next.is_some() { self.duration } else { 0 };
            let events = &mut self.events;
            match self.channels[ch.idx()].offer(now, p, size, ect, forward_before, |at| events.reserve(at)) {
                Offer::Dropped => return self.drop_packet(p),
                Offer::Admitted {
                    marked,
                    schedule,
                    start,
                    depart,
                    transit,
                } => {
                    if marked {
                        self.pool.get_mut(p).ecn = ecn::CE;
                    }
                    if let Some(key) = schedule {
                        self.events.schedule_reserved(key, Event::Arrive(ch));
                    }
                    // Recorded when serialisation starts, as tcpdump on the sender
                    // sees it; nothing that would leave after the run's end.
                    if self.captures.records(ch) && depart <= self.duration {
                        self.captures.capture(ch, start, self.pool.get(p));
                    }
                    // On to the next link at the instant it reaches the
                    // router, which forwards it as `reach` would.
                    let Some((at, lost)) = transit else {
                        return;
                    };
                    let next = next.expect("forwarded by a transit router");
                    if lost {
                        return self.drop_packet(p);
                    }
                    let pkt = self.pool.get_mut(p);
                    debug_assert_eq!(
                        self.routes.lookup(self.channels[ch.idx()].to, pkt.dst),
                        Next::Channel(next),
                        "a transit router forwards on across"
                    );
                    if pkt.ttl <= 1 {
                        self.unroutable += 1;
                        return self.drop_packet(p);
                    }
                    pkt.ttl -= 1;
                    (now, ch) = (at, next);
                }
            }
        }
    }

    fn on_arrive(&mut self, now: Time, ch: ChannelId) {
        let c = &mut self.channels[ch.idx()];
        let (head, next) = c.arrive();
        if let Some(next) = next {
            self.events.schedule_reserved(next, Event::Arrive(ch));
        }
        // Load what the next arrivals on this link will read while this one
        // is handled: on long fat paths the packets and link entries have
        // left the cache by the time they arrive (distances measured on the
        // 10 Gb/s HSTCP bench: 2 packets, 8 entries ahead).
        if self.pool.outgrows_cache() {
            if let Some(ahead) = c.behind_head(PREFETCH_PACKETS_AHEAD) {
                self.pool.prefetch(ahead);
            }
            c.prefetch_entry(PREFETCH_ENTRIES_AHEAD);
        }
        let (node, p) = (c.to, head.packet);
        if head.lost() {
            if !head.counted() {
                self.count_drop(p);
            }
            return self.pool.free(p);
        }
        if self.jitter && self.channels[ch.idx()].jitter.is_some() {
            return self.hold(now, ch, p);
        }
        self.reach(now, node, p);
    }

    /// A packet off the wire of a link with jitter waits in its jitter line.
    #[cold]
    #[inline(never)]
    fn hold(&mut self, now: Time, ch: ChannelId, p: PacketRef) {
        let line = self.channels[ch.idx()].jitter.as_mut().expect("a link with jitter");
        if let Some(at) = line.hold(now, p) {
            self.events.schedule(at, Event::Release(ch));
        }
    }

    /// The first packet in a link's jitter line reaches the far end.
    #[cold]
    #[inline(never)]
    fn release(&mut self, now: Time, ch: ChannelId) {
        let c = &mut self.channels[ch.idx()];
        let node = c.to;
        let (p, next) = c.jitter.as_mut().expect("a release on a link with jitter").release();
        if let Some(at) = next {
            self.events.schedule(at, Event::Release(ch));
        }
        self.reach(now, node, p);
    }

    /// A packet reached `node` (the far end of a link): deliver it there or
    /// forward it.
    #[inline(always)]
    fn reach(&mut self, now: Time, node: NodeId, p: PacketRef) {
        let pkt = self.pool.get(p);
        if self.iface_node[pkt.dst.idx()] == node {
            return self.deliver(now, p);
        }
        match self.routes.route(node, pkt.dst, || five_tuple_hash(pkt, node)) {
            Next::Channel(next) if self.is_router[node.idx()] && pkt.ttl > 1 => {
                self.pool.get_mut(p).ttl -= 1;
                self.forward(now, next, p);
            }
            _ => {
                self.unroutable += 1;
                self.drop_packet(p);
            }
        }
    }

    fn deliver(&mut self, now: Time, p: PacketRef) {
        let ext = self.pool.take_ext(p);
        let pkt = self.pool.get(p);
        self.tracks.acct[pkt.track as usize].delivered_bytes += pkt.size as u64;
        let ep = pkt.endpoint;
        self.endpoints[ep.idx()]
            .endpoint
            .on_packet(now, Received { packet: pkt, ext }, &mut self.outbox);
        self.pool.free(p);
        self.flush(now, ep);
    }

    fn drop_packet(&mut self, p: PacketRef) {
        self.count_drop(p);
        self.pool.free(p);
    }

    /// A packet lost on the wire is dropped as of its departure, though it
    /// stays in its link until it would have arrived: before counters are
    /// read at `now`, count the drops of those that have departed.
    fn count_wire_losses(&mut self, now: Time) {
        for ch in 0..self.channels.len() {
            if self.channels[ch].lost_in_link == 0 {
                continue;
            }
            for i in 0..self.channels[ch].in_link.len() {
                let c = &mut self.channels[ch];
                let p = c.in_link[i];
                if c.departure(&p) > now {
                    break;
                }
                if p.lost() && !p.counted() && !p.forwarded() {
                    c.in_link[i].set_counted();
                    self.count_drop(p.packet);
                }
            }
        }
    }

    fn count_drop(&mut self, p: PacketRef) {
        let pkt = self.pool.get(p);
        let acct = &mut self.tracks.acct[pkt.track as usize];
        acct.dropped_bytes += pkt.size as u64;
        if pkt.data {
            acct.data_packets_dropped += 1;
        } else {
            acct.ack_packets_dropped += 1;
        }
    }
}

/// How far behind a link's head the packet prefetched on each arrival lies.
const PREFETCH_PACKETS_AHEAD: usize = 2;
/// How far behind a link's head the link entry prefetched on each arrival lies.
const PREFETCH_ENTRIES_AHEAD: usize = 8;

#[cfg(test)]
mod tests;
