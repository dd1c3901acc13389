//! The simulation: owns the event queue, the network and the endpoints, and
//! moves packets between them. Everything protocol-specific is delegated to
//! the sans-IO endpoints; everything link-specific to `net::link`.

mod build;
mod results;

pub use results::{Accounting, FlowResult, LinkResult, RunResult};

use crate::app::{CbrSource, CbrStats, OnOffSource};
use crate::engine::{EventQueue, Time};
use crate::net::link::{Channel, ChannelCounters, Offer};
use crate::net::packet::{ecn, Body, Packet, PacketPool};
use crate::net::routing::{RoutingTable, LOCAL, NO_ROUTE};
use crate::net::{ChannelId, IfaceId, NodeId};
use crate::scenario::MeasureSpec;
use crate::trace::pcap::{flow_ports, PcapWriter};
use crate::trace::series::TimeSeries;
use crate::transport::tcp::{TcpReceiver, TcpReceiverStats, TcpSender, TcpSenderStats};
use crate::transport::udp::{UdpSink, UdpSinkStats};
use crate::transport::Transmit;

#[derive(Clone, Copy, Debug)]
enum Event {
    /// A channel finished serialising its current packet.
    TxDone(ChannelId),
    /// A packet reached the far end of a channel.
    Arrive(ChannelId, u32),
    /// An endpoint asked to be woken (timers).
    Wake(u32),
    /// A flow's application starts.
    Start(u32),
    /// A flow's application stops writing (TCP flows with a stop time).
    Stop(u32),
    Sample,
    MeasureStart,
    MeasureStop,
}

// Endpoints live in one Vec and are never moved, so the variants' size
// difference costs nothing worth a Box.
#[allow(clippy::large_enum_variant)]
enum Role {
    TcpSender(TcpSender),
    TcpReceiver(TcpReceiver),
    Cbr(CbrSource),
    OnOff(OnOffSource),
    UdpSink(UdpSink),
}

impl Role {
    fn poll_at(&self) -> Option<Time> {
        match self {
            Role::TcpSender(s) => s.poll_at(),
            Role::TcpReceiver(r) => r.poll_at(),
            Role::Cbr(c) => c.poll_at(),
            Role::OnOff(o) => o.poll_at(),
            Role::UdpSink(_) => None,
        }
    }
}

/// One end of a flow, attached to a node.
struct Endpoint {
    role: Role,
    flow: u32,
    iface: IfaceId,
    peer_iface: IfaceId,
    peer_endpoint: u32,
    /// First hop for everything this endpoint sends.
    out_channel: ChannelId,
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
        data_packets_dropped: u64,
        ack_packets_dropped: u64,
    }
}


struct Flow {
    name: String,
    src: NodeId,
    dst: NodeId,
    sender: u32,
    receiver: u32,
    bytes: Option<u64>,
    start: Time,
    stop: Option<Time>,
    acct: FlowAccounting,
}

/// All counters at one instant, for measurement windows and time series.
#[derive(Clone, Default)]
struct FlowSnapshot {
    tx: TcpSenderStats,
    rx: TcpReceiverStats,
    cbr: CbrStats,
    sink: UdpSinkStats,
    acct: FlowAccounting,
}

#[derive(Clone)]
struct Snapshot {
    time: Time,
    flows: Vec<FlowSnapshot>,
    channels: Vec<ChannelCounters>,
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
    endpoints: Vec<Endpoint>,
    flows: Vec<Flow>,
    outbox: Vec<Transmit>,
    duration: Time,
    measure: MeasureSpec,
    at_start: Option<Snapshot>,
    at_stop: Option<Snapshot>,
    series: Option<TimeSeries>,
    last_sample: Option<Snapshot>,
    /// Per channel: index into `pcaps`.
    pcap_of: Vec<Option<usize>>,
    pcaps: Vec<PcapWriter>,
    pcap_error: Option<String>,
    /// Packets dropped for want of a route or by TTL (should stay 0).
    unroutable: u64,
}

/// SplitMix64 finaliser: a cheap, well-mixed hash of one word.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Simulation {
    /// The forwarding table as a real network needs it: for every node and
    /// every host interface, the equal-cost channels a packet for that
    /// interface leaves by (static routes included). The emu backend installs
    /// exactly these routes, so both backends forward alike.
    pub fn forwarding(&mut self) -> Result<Vec<(NodeId, u32, Vec<u32>)>, String> {
        let host_ifaces: Vec<u32> =
            (0..self.iface_node.len() as u32).filter(|&i| !self.is_router[self.iface_node[i as usize] as usize]).collect();
        for &i in &host_ifaces {
            self.routes.add_destination(i)?;
        }
        let mut out = Vec::new();
        for node in 0..self.is_router.len() as NodeId {
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
    pub fn run(self) -> Result<RunResult, String> {
        self.run_with(&mut || false)
    }

    /// Run, asking `interrupted` every 2^20 events whether to stop (so that
    /// Ctrl-C reaches a long run); a stop is `Err("interrupted")`.
    pub fn run_with(mut self, interrupted: &mut dyn FnMut() -> bool) -> Result<RunResult, String> {
        let wall = std::time::Instant::now();
        // Measurement boundaries first: at the same instant they come before
        // the flows' own events (a flow starting at the window's start is
        // counted from its first packet).
        self.events.schedule(self.measure.start_ns, Event::MeasureStart);
        self.events.schedule(self.measure.stop_ns.min(self.duration), Event::MeasureStop);
        for i in 0..self.flows.len() {
            let f = &self.flows[i];
            self.events.schedule(f.start, Event::Start(i as u32));
            if let Some(stop) = f.stop {
                self.events.schedule(stop, Event::Stop(i as u32));
            }
        }
        if let Some(iv) = self.measure.interval_ns {
            self.last_sample = Some(self.snapshot(0));
            self.events.schedule(iv, Event::Sample); // each sample schedules the next
        }
        while let Some(t) = self.events.peek_time() {
            if t > self.duration {
                break;
            }
            let (now, ev) = self.events.pop().expect("peeked");
            self.handle(now, ev);
            if self.events.executed() & 0xf_ffff == 0 && interrupted() {
                return Err("interrupted".into());
            }
        }
        for w in std::mem::take(&mut self.pcaps) {
            if let Err(e) = w.finish() {
                self.pcap_error.get_or_insert(e.to_string());
            }
        }
        if let Some(e) = &self.pcap_error {
            return Err(format!("pcap: could not write capture: {e}"));
        }
        let wall_s = wall.elapsed().as_secs_f64();
        Ok(self.results(wall_s))
    }

    fn handle(&mut self, now: Time, ev: Event) {
        match ev {
            Event::TxDone(ch) => self.on_tx_done(now, ch),
            Event::Arrive(ch, h) => self.on_arrive(now, ch, h),
            Event::Wake(ep) => {
                let e = &mut self.endpoints[ep as usize];
                if e.wake_at == Some(now) {
                    e.wake_at = None;
                }
                match &mut e.role {
                    Role::TcpSender(s) => s.on_timer(now, &mut self.outbox),
                    Role::TcpReceiver(r) => r.on_timer(now, &mut self.outbox),
                    Role::Cbr(c) => c.on_timer(now, &mut self.outbox),
                    Role::OnOff(o) => o.on_timer(now, &mut self.outbox),
                    Role::UdpSink(_) => {}
                }
                self.flush(now, ep);
            }
            Event::Start(f) => {
                let flow = &self.flows[f as usize];
                let (ep, bytes) = (flow.sender, flow.bytes);
                if let Role::TcpSender(s) = &mut self.endpoints[ep as usize].role {
                    s.write(now, bytes, &mut self.outbox);
                }
                self.flush(now, ep);
            }
            Event::Stop(f) => {
                if let Role::TcpSender(s) = &mut self.endpoints[self.flows[f as usize].sender as usize].role {
                    s.close();
                }
            }
            Event::Sample => {
                self.sample(now);
                if let Some(iv) = self.measure.interval_ns {
                    self.events.schedule(now + iv, Event::Sample);
                }
            }
            Event::MeasureStart => self.at_start = Some(self.snapshot(now)),
            Event::MeasureStop => self.at_stop = Some(self.snapshot(now)),
        }
    }

    // ---- packet movement ---------------------------------------------------

    /// Send everything the endpoint put in the outbox, then make sure its
    /// next timer is scheduled.
    fn flush(&mut self, now: Time, ep: u32) {
        let mut outbox = std::mem::take(&mut self.outbox);
        for tx in outbox.drain(..) {
            let e = &self.endpoints[ep as usize];
            let pkt = Packet {
                src: e.iface,
                dst: e.peer_iface,
                endpoint: e.peer_endpoint,
                flow: e.flow,
                size: tx.size,
                sent_at: now,
                ttl: 64,
                ecn: if tx.ect { ecn::ECT } else { ecn::NOT_ECT },
                body: tx.body,
            };
            let channel = e.out_channel;
            let flow = &mut self.flows[e.flow as usize];
            flow.acct.sent_bytes += tx.size as u64;
            if pkt.endpoint == flow.receiver {
                flow.acct.data_packets_sent += 1;
            }
            let h = self.pool.insert(pkt);
            self.forward(now, channel, h);
        }
        self.outbox = outbox;
        let e = &mut self.endpoints[ep as usize];
        if let Some(want) = e.role.poll_at() {
            if e.wake_at.is_none_or(|w| want < w) {
                e.wake_at = Some(want);
                self.events.schedule(want.max(now), Event::Wake(ep));
            }
        }
    }

    fn forward(&mut self, now: Time, ch: ChannelId, h: u32) {
        let p = self.pool.get(h);
        let (size, ect) = (p.size, p.ecn != ecn::NOT_ECT);
        match self.channels[ch as usize].offer(now, h, size, ect) {
            Offer::Transmit(d) => self.events.schedule(now + d, Event::TxDone(ch)),
            Offer::Queued => {}
            Offer::QueuedMarked => self.pool.get_mut(h).ecn = ecn::CE,
            Offer::Dropped => self.drop_packet(h),
        }
    }

    fn on_tx_done(&mut self, now: Time, ch: ChannelId) {
        let c = &mut self.channels[ch as usize];
        let h = c.transmitting.take().expect("TxDone without a packet");
        let size = self.pool.get(h).size;
        c.counters.tx_packets += 1;
        c.counters.tx_bytes += size as u64;
        let lost = c.loss.lose_next();
        if lost {
            c.counters.loss_drops += 1;
        } else {
            c.on_wire += 1;
            self.events.schedule(now + c.delay, Event::Arrive(ch, h));
        }
        if let Some(next) = c.queue.pop() {
            c.transmitting = Some(next);
            let d = c.serialisation_time(self.pool.get(next).size);
            self.events.schedule(now + d, Event::TxDone(ch));
        } else if let Some(red) = &mut c.red {
            red.on_empty(now);
        }
        if let Some(w) = self.pcap_of[ch as usize] {
            self.capture(w, now - self.channels[ch as usize].serialisation_time(size), h);
        }
        if lost {
            self.drop_packet(h);
        }
    }

    fn on_arrive(&mut self, now: Time, ch: ChannelId, h: u32) {
        let c = &mut self.channels[ch as usize];
        c.on_wire -= 1;
        let node = c.to;
        let pkt = self.pool.get(h);
        if self.iface_node[pkt.dst as usize] == node {
            return self.deliver(now, h);
        }
        // For ECMP: the 5-tuple of a flow direction (and the router), hashed.
        let flow_hash = || mix64(((pkt.src as u64) << 32 | pkt.dst as u64) ^ (pkt.flow as u64).rotate_left(17) ^ node as u64);
        let next = self.routes.route(node, pkt.dst, flow_hash);
        if !self.is_router[node as usize] || next == NO_ROUTE || next == LOCAL || pkt.ttl <= 1 {
            self.unroutable += 1;
            return self.drop_packet(h);
        }
        self.pool.get_mut(h).ttl -= 1;
        self.forward(now, next, h);
    }

    fn deliver(&mut self, now: Time, h: u32) {
        let pkt = self.pool.remove(h);
        self.flows[pkt.flow as usize].acct.delivered_bytes += pkt.size as u64;
        let ep = pkt.endpoint;
        match (&mut self.endpoints[ep as usize].role, &pkt.body) {
            (Role::TcpSender(s), Body::Tcp(seg)) => s.on_segment(now, seg, &mut self.outbox),
            (Role::TcpReceiver(r), Body::Tcp(seg)) => r.on_segment(now, seg, pkt.size, pkt.ecn == ecn::CE, &mut self.outbox),
            (Role::UdpSink(u), Body::Udp(d)) => u.on_datagram(d, pkt.size),
            _ => {}
        }
        self.flush(now, ep);
    }

    fn drop_packet(&mut self, h: u32) {
        let pkt = self.pool.remove(h);
        let flow = &mut self.flows[pkt.flow as usize];
        flow.acct.dropped_bytes += pkt.size as u64;
        if pkt.endpoint == flow.receiver {
            flow.acct.data_packets_dropped += 1;
        } else {
            flow.acct.ack_packets_dropped += 1;
        }
    }

    fn capture(&mut self, writer: usize, at: Time, h: u32) {
        let pkt = self.pool.get(h);
        let to_receiver = pkt.endpoint == self.flows[pkt.flow as usize].receiver;
        let ports = flow_ports(pkt.flow, to_receiver);
        if let Err(e) = self.pcaps[writer].write(at, pkt, ports) {
            self.pcap_error.get_or_insert(e.to_string());
        }
    }

    // ---- measurement ---------------------------------------------------------

    fn snapshot(&mut self, now: Time) -> Snapshot {
        let flows = self
            .flows
            .iter()
            .map(|f| {
                let mut s = FlowSnapshot { acct: f.acct, ..Default::default() };
                for ep in [f.sender, f.receiver] {
                    match &mut self.endpoints[ep as usize].role {
                        Role::TcpSender(t) => s.tx = t.stats_at(now),
                        Role::TcpReceiver(r) => s.rx = *r.stats(),
                        Role::Cbr(c) => s.cbr = *c.stats(),
                        Role::OnOff(o) => s.cbr = *o.stats(),
                        Role::UdpSink(u) => s.sink = *u.stats(),
                    }
                }
                s
            })
            .collect();
        Snapshot { time: now, flows, channels: self.channels.iter().map(|c| c.counters).collect() }
    }

    fn sample(&mut self, now: Time) {
        let snap = self.snapshot(now);
        let prev = self.last_sample.replace(snap.clone()).expect("first sample taken at start");
        let dt = (now - prev.time) as f64 / 1e9;
        let series = self.series.get_or_insert_with(|| TimeSeries {
            flows: self.flows.iter().map(|f| crate::trace::series::FlowSeries { name: f.name.clone(), ..Default::default() }).collect(),
            links: self.channels.iter().map(|c| crate::trace::series::LinkSeries { name: c.name.clone(), ..Default::default() }).collect(),
            ..Default::default()
        });
        series.time_s.push(now as f64 / 1e9);
        for (i, f) in self.flows.iter().enumerate() {
            let (a, b) = (&snap.flows[i], &prev.flows[i]);
            let fs = &mut series.flows[i];
            let (wire, good) = (
                a.rx.wire_bytes_received - b.rx.wire_bytes_received + a.sink.wire_bytes_received - b.sink.wire_bytes_received,
                a.rx.goodput_bytes - b.rx.goodput_bytes + a.sink.payload_bytes_received - b.sink.payload_bytes_received,
            );
            fs.throughput_bps.push(wire as f64 * 8.0 / dt);
            fs.goodput_bps.push(good as f64 * 8.0 / dt);
            match &self.endpoints[f.sender as usize].role {
                Role::TcpSender(s) => {
                    fs.cwnd_bytes.push(Some(s.cwnd()));
                    fs.srtt_s.push(s.srtt().map(|t| t as f64 / 1e9));
                }
                _ => {
                    fs.cwnd_bytes.push(None);
                    fs.srtt_s.push(None);
                }
            }
        }
        for (i, c) in self.channels.iter().enumerate() {
            let ls = &mut series.links[i];
            ls.queue_packets.push(c.queue.len() as u64);
            ls.queue_bytes.push(c.queue.bytes());
        }
    }
}
