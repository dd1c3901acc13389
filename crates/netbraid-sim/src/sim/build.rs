//! Building a simulation from a resolved scenario, with every index and
//! value checked: a bad scenario is an `Err` naming the field, never a panic.

use super::{Endpoint, Flow, FlowAccounting, Role, Simulation};
use crate::app::{CbrSource, OnOffDistribution, OnOffSource};
use crate::engine::{EventQueue, RandomStream};
use crate::net::link::{Channel, ChannelCounters};
use crate::net::loss::{LossModel, LossProcess};
use crate::net::packet::PacketPool;
use crate::net::queue::{DropTailQueue, QueueLimit};
use crate::net::red::Red;
use crate::engine::time::serialisation_time;
use crate::net::routing::{Graph, RoutingTable, LOCAL, NO_ROUTE};
use crate::net::{ChannelId, IfaceId, NodeId};
use crate::scenario::{DirectionSpec, FlowKind, LossSpec, Scenario};
use crate::trace::pcap::PcapWriter;
use crate::transport::tcp::{TcpReceiver, TcpSender};
use crate::transport::udp::UdpSink;

fn check_probability(path: &str, p: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(format!("{path}: {p} is not a probability (allowed: 0 to 1)"))
    }
}

/// Largest time the engine accepts (about 115 days): every sum of times then
/// stays far inside u64 nanoseconds.
pub const MAX_TIME_NS: u64 = 10_u64.pow(16);
/// Largest rate (10 Tb/s).
pub const MAX_RATE_BPS: u64 = 10_u64.pow(13);
/// Most time-series samples in one run.
pub const MAX_SAMPLES: u64 = 1_000_000;

fn check_time(path: &str, t: u64) -> Result<(), String> {
    if t > MAX_TIME_NS {
        return Err(format!("{path}: {} s is too long (allowed: up to 10^7 s)", t as f64 / 1e9));
    }
    Ok(())
}

fn check_direction(path: &str, d: &DirectionSpec) -> Result<QueueLimit, String> {
    if d.rate_bps == 0 || d.rate_bps > MAX_RATE_BPS {
        return Err(format!("{path}.rate: {} bit/s is not allowed (1 bit/s to 10 Tbit/s)", d.rate_bps));
    }
    check_time(&format!("{path}.delay"), d.delay_ns)?;
    match &d.loss {
        LossSpec::Bernoulli { p } => check_probability(&format!("{path}.loss.p"), *p)?,
        LossSpec::GilbertElliott { p_gb, p_bg, loss_good, loss_bad } => {
            for (k, v) in [("p_gb", p_gb), ("p_bg", p_bg), ("loss_good", loss_good), ("loss_bad", loss_bad)] {
                check_probability(&format!("{path}.loss.{k}"), *v)?;
            }
        }
        LossSpec::None | LossSpec::List { .. } => {}
    }
    if let Some(r) = &d.queue.red {
        let ok = r.min_th >= 0.0 && r.max_th > r.min_th && (0.0..=1.0).contains(&r.max_p) && r.w_q > 0.0 && r.w_q <= 1.0;
        if !ok {
            return Err(format!("{path}.red: need 0 ≤ min_th < max_th, 0 ≤ max_p ≤ 1, 0 < w_q ≤ 1"));
        }
    }
    match (d.queue.packets, d.queue.bytes) {
        (Some(p), None) => Ok(QueueLimit::Packets(p)),
        (None, Some(b)) => Ok(QueueLimit::Bytes(b)),
        _ => Err(format!("{path}.queue: give exactly one limit, in packets or in bytes")),
    }
}

impl Simulation {
    pub fn new(scn: &Scenario) -> Result<Self, String> {
        let n_nodes = scn.nodes.len();
        if n_nodes == 0 {
            return Err("nodes: the scenario has no nodes".into());
        }
        if scn.duration_ns == 0 {
            return Err("duration: must be positive".into());
        }
        check_time("duration", scn.duration_ns)?;
        let name_of = |n: NodeId| scn.nodes[n as usize].name.clone();
        let mut channels = Vec::with_capacity(scn.links.len() * 2);
        let mut iface_node = Vec::with_capacity(scn.links.len() * 2);
        let mut pairs = Vec::with_capacity(scn.links.len());
        for (l, link) in scn.links.iter().enumerate() {
            for (k, n) in [("a", link.a), ("b", link.b)] {
                if n as usize >= n_nodes {
                    return Err(format!("links[{l}].{k}: node index {n} does not exist"));
                }
            }
            if link.a == link.b {
                return Err(format!("links[{l}]: links '{}' to itself", name_of(link.a)));
            }
            pairs.push((link.a, link.b));
            iface_node.extend([link.a, link.b]);
            for (dir, from, to, spec) in [("ab", link.a, link.b, &link.ab), ("ba", link.b, link.a, &link.ba)] {
                let limit = check_direction(&format!("links[{l}].{dir}"), spec)?;
                let id = channels.len() as ChannelId;
                let name = format!("{}->{}", name_of(from), name_of(to));
                let stream = RandomStream::new(scn.seed, &format!("loss:{name}#{l}"));
                channels.push(Channel {
                    id,
                    name,
                    from,
                    to,
                    // channel 2l (a→b) arrives on b's interface 2l+1, and vice versa
                    to_iface: id ^ 1,
                    rate_bps: spec.rate_bps,
                    delay: spec.delay_ns,
                    queue: DropTailQueue::new(limit),
                    red: spec.queue.red.map(|p| {
                        let stream = RandomStream::new(scn.seed, &format!("red:{}->{}#{l}", name_of(from), name_of(to)));
                        // typical packet: 1000 B, for the idle-time decay (ns-2 mean_pktsize_ 500–1000)
                        Red::new(p, serialisation_time(1000, spec.rate_bps), stream)
                    }),
                    loss: LossProcess::new(LossModel::from(&spec.loss), stream),
                    transmitting: None,
                    on_wire: 0,
                    counters: ChannelCounters::default(),
                });
            }
        }
        let is_router: Vec<bool> = scn.nodes.iter().map(|n| n.router).collect();
        let multipath: Vec<_> = scn.nodes.iter().map(|n| n.multipath).collect();
        let channel_rates: Vec<u64> = channels.iter().map(|c| c.rate_bps).collect();
        let mut routes = RoutingTable::new(&Graph { is_router: &is_router, links: &pairs, multipath: &multipath, channel_rates: &channel_rates });
        // Tables only for the interfaces traffic is addressed to: every flow's
        // destination (for data) and, once known, its source (for ACKs).
        let mut first_iface_of: Vec<Option<IfaceId>> = vec![None; n_nodes];
        for (i, &n) in iface_node.iter().enumerate().rev() {
            first_iface_of[n as usize] = Some(i as IfaceId);
        }
        let first_iface = |n: NodeId| first_iface_of[n as usize];
        for f in &scn.flows {
            if let Some(d) = f.dst_iface.or_else(|| first_iface(f.dst)) {
                if (d as usize) < iface_node.len() {
                    routes.add_destination(d)?;
                }
            }
            if let Some(s) = f.src_iface.filter(|&s| (s as usize) < iface_node.len()) {
                routes.add_destination(s)?;
            }
        }
        for (i, r) in scn.routes.iter().enumerate() {
            if r.node as usize >= n_nodes {
                return Err(format!("routes[{i}].node: node index {} does not exist", r.node));
            }
            if r.dst_iface as usize >= iface_node.len() {
                return Err(format!("routes[{i}].to: interface {} does not exist", r.dst_iface));
            }
            match channels.get(r.channel as usize) {
                Some(c) if c.from == r.node => routes.set(r.node, r.dst_iface, r.channel)?,
                Some(_) => {
                    return Err(format!("routes[{i}].via: link does not start at '{}'", name_of(r.node)))
                }
                None => return Err(format!("routes[{i}].via: link {} does not exist", r.channel)),
            }
        }

        let mut endpoints = Vec::new();
        let mut flows = Vec::new();
        for (i, f) in scn.flows.iter().enumerate() {
            let path = format!("flow '{}'", f.name);
            check_time(&format!("{path}.start"), f.start_ns)?;
            check_time(&format!("{path}.start_jitter"), f.start_jitter_ns)?;
            if let Some(stop) = f.stop_ns {
                check_time(&format!("{path}.stop"), stop)?;
            }
            for (k, n) in [("from", f.src), ("to", f.dst)] {
                if n as usize >= n_nodes {
                    return Err(format!("{path}.{k}: node index {n} does not exist"));
                }
            }
            if f.src == f.dst {
                return Err(format!("{path}: source and destination are the same node '{}'", name_of(f.src)));
            }
            let dst_iface = match f.dst_iface {
                Some(x) if iface_node.get(x as usize) == Some(&f.dst) => x,
                Some(x) => return Err(format!("{path}.to_iface: interface {x} is not on '{}'", name_of(f.dst))),
                None => first_iface(f.dst)
                    .ok_or_else(|| format!("{path}.to: '{}' has no links", name_of(f.dst)))?,
            };
            let out_channel = match f.src_iface {
                Some(x) if iface_node.get(x as usize) == Some(&f.src) => x, // interface id = its outgoing channel
                Some(x) => return Err(format!("{path}.from_iface: interface {x} is not on '{}'", name_of(f.src))),
                None => routes.lookup(f.src, dst_iface),
            };
            let unreachable = || format!("{path}: no route from '{}' to '{}'", name_of(f.src), name_of(f.dst));
            if out_channel == NO_ROUTE || out_channel == LOCAL {
                return Err(unreachable());
            }
            let src_iface = out_channel;
            routes.add_destination(src_iface)?; // static routes set earlier are kept
            let back_channel = routes.lookup(f.dst, src_iface);
            if back_channel == NO_ROUTE || back_channel == LOCAL {
                return Err(unreachable());
            }
            for (from_ch, target) in [(out_channel, dst_iface), (back_channel, src_iface)] {
                check_path(&channels, &routes, &iface_node, &is_router, from_ch, target)
                    .map_err(|n| match n {
                        Some(n) => format!("{path}: no route onward from '{}' (check the static routes)", name_of(n)),
                        None => format!("{path}: routing loop (check the static routes)"),
                    })?;
            }
            let start = if f.start_jitter_ns > 0 {
                let mut rng = RandomStream::new(scn.seed, &format!("start:{}", f.name));
                f.start_ns + (rng.uniform() * f.start_jitter_ns as f64) as u64
            } else {
                f.start_ns
            };
            if f.stop_ns.is_some_and(|stop| stop <= start) {
                return Err(format!("{path}.stop: must be after the start"));
            }
            let (sender_role, receiver_role) = match &f.kind {
                FlowKind::Tcp { tcp, .. } => {
                    if tcp.mss == 0 {
                        return Err(format!("{path}.mss: must be positive"));
                    }
                    if tcp.dupthresh == 0 {
                        return Err(format!("{path}.dupthresh: must be positive"));
                    }
                    if tcp.rcvbuf < tcp.mss as u64 || tcp.sndbuf < tcp.mss as u64 {
                        return Err(format!("{path}: socket buffers must hold at least one segment (mss {} B)", tcp.mss));
                    }
                    if tcp.mss as u64 + tcp.header_bytes as u64 + 40 > 65535 {
                        return Err(format!("{path}.mss: a segment must fit in an IPv4 packet (mss + headers ≤ 65535 B)"));
                    }
                    if tcp.rto_min == 0 || tcp.rto_initial == 0 || tcp.rto_min > tcp.rto_max || tcp.rto_initial > tcp.rto_max {
                        return Err(format!("{path}: RTO settings need 0 < rto_min ≤ rto_max and 0 < rto_initial ≤ rto_max"));
                    }
                    for (k, t) in [("rto_max", tcp.rto_max), ("delack_timeout", tcp.delack_timeout), ("clock_granularity", tcp.clock_granularity)] {
                        check_time(&format!("{path}.{k}"), t)?;
                    }
                    (Role::TcpSender(TcpSender::new(tcp.clone())), Role::TcpReceiver(TcpReceiver::new(tcp)))
                }
                FlowKind::Cbr { rate_bps, packet_bytes, header_bytes }
                | FlowKind::OnOff { rate_bps, packet_bytes, header_bytes, .. } => {
                    if *rate_bps == 0 || *rate_bps > MAX_RATE_BPS || *packet_bytes == 0 || *packet_bytes > 65507 || *header_bytes > 120 {
                        return Err(format!("{path}: rate must be 1 bit/s to 10 Tbit/s, packet size 1 to 65507 B, headers up to 120 B"));
                    }
                    let stop = f.stop_ns.unwrap_or(u64::MAX);
                    let source = match &f.kind {
                        FlowKind::OnOff { burst_ns, idle_ns, distribution, shape, .. } => {
                            check_time(&format!("{path}.burst_time"), *burst_ns)?;
                            check_time(&format!("{path}.idle_time"), *idle_ns)?;
                            let dist = match distribution.as_str() {
                                "exponential" => OnOffDistribution::Exponential,
                                "pareto" if *shape > 1.0 && shape.is_finite() => OnOffDistribution::Pareto { shape: *shape },
                                "pareto" => return Err(format!("{path}.shape: must be above 1 (ns-2's default is 1.5)")),
                                other => return Err(format!("{path}.distribution: '{other}' is not allowed (exponential, pareto)")),
                            };
                            let rng = RandomStream::new(scn.seed, &format!("onoff:{}", f.name));
                            Role::OnOff(OnOffSource::new(*rate_bps, *packet_bytes, *header_bytes, *burst_ns, *idle_ns, dist, rng, start, stop))
                        }
                        _ => Role::Cbr(CbrSource::new(*rate_bps, *packet_bytes, *header_bytes, start, stop)),
                    };
                    (source, Role::UdpSink(UdpSink::default()))
                }
            };
            let (s, r) = (endpoints.len() as u32, endpoints.len() as u32 + 1);
            let flow = i as u32;
            endpoints.push(Endpoint {
                role: sender_role,
                flow,
                iface: src_iface,
                peer_iface: dst_iface,
                peer_endpoint: r,
                out_channel,
                wake_at: None,
            });
            endpoints.push(Endpoint {
                role: receiver_role,
                flow,
                iface: dst_iface,
                peer_iface: src_iface,
                peer_endpoint: s,
                out_channel: back_channel,
                wake_at: None,
            });
            let bytes = match &f.kind {
                FlowKind::Tcp { bytes, .. } => *bytes,
                _ => None,
            };
            flows.push(Flow {
                name: f.name.clone(),
                src: f.src,
                dst: f.dst,
                sender: s,
                receiver: r,
                bytes,
                start,
                stop: f.stop_ns,
                acct: FlowAccounting::default(),
            });
        }

        let m = &scn.measure;
        if m.start_ns >= m.stop_ns {
            return Err("measure: start must be before stop".into());
        }
        if let Some(iv) = m.interval_ns {
            if iv == 0 || scn.duration_ns / iv > MAX_SAMPLES {
                return Err(format!("measure.interval: at most {MAX_SAMPLES} samples per run (interval ≥ duration / {MAX_SAMPLES})"));
            }
        }
        let mut pcap_of = vec![None; channels.len()];
        let mut pcaps = Vec::new();
        for (i, p) in scn.pcap.iter().enumerate() {
            if p.channel as usize >= channels.len() {
                return Err(format!("pcap[{i}]: link direction {} does not exist", p.channel));
            }
            let w = PcapWriter::create(&p.path).map_err(|e| format!("pcap[{i}]: cannot create '{}': {e}", p.path))?;
            pcap_of[p.channel as usize] = Some(pcaps.len());
            pcaps.push(w);
        }

        Ok(Self {
            name: scn.name.clone(),
            seed: scn.seed,
            events: EventQueue::new(),
            pool: PacketPool::default(),
            node_names: scn.nodes.iter().map(|n| n.name.clone()).collect(),
            is_router,
            channels,
            routes,
            iface_node,
            endpoints,
            flows,
            outbox: Vec::with_capacity(64),
            duration: scn.duration_ns,
            measure: scn.measure.clone(),
            at_start: None,
            at_stop: None,
            series: None,
            last_sample: None,
            pcap_of,
            pcaps,
            pcap_error: None,
            unroutable: 0,
        })
    }
}

/// Follow the routing tables from `first` to interface `target`, along every
/// alternative of multipath entries. A dead end is `Err(Some(node))`, a loop
/// `Err(None)` (both possible with static routes).
fn check_path(
    channels: &[Channel],
    routes: &RoutingTable,
    iface_node: &[NodeId],
    is_router: &[bool],
    first: ChannelId,
    target: IfaceId,
) -> Result<(), Option<NodeId>> {
    let dst_node = iface_node[target as usize];
    // Depth-first over (channel, hops so far); a path longer than the number
    // of channels must revisit one: a loop.
    let mut stack = vec![(first, 0usize)];
    let mut done = vec![false; channels.len()];
    while let Some((ch, hops)) = stack.pop() {
        if hops > channels.len() {
            return Err(None);
        }
        let node = channels[ch as usize].to;
        if node == dst_node {
            continue;
        }
        let next = routes.alternatives(node, target);
        if !is_router[node as usize] || next.is_empty() {
            return Err(Some(node));
        }
        for n in next {
            if !done[n as usize] || hops + 1 > channels.len() {
                done[n as usize] = true;
                stack.push((n, hops + 1));
            }
        }
    }
    Ok(())
}
