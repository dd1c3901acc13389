//! Building a simulation from a resolved scenario, with every index and
//! value checked: a bad scenario is a `SimError` naming the field, never a
//! panic. One function per thing built: the links, the routing, the flows
//! (with their paths and endpoints), the captures.

use super::flows::{builtin, relay, EndpointFactory, FlowSetup};
use super::measure::Meter;
use super::{Flow, Leg, Simulation, Slot, Tracks};
use crate::endpoint::Path;
use crate::engine::time::serialisation_time;
use crate::engine::{EventQueue, RandomStream, Ring, Time};
use crate::error::SimError;
use crate::ids::{EndpointId, FlowId};
use crate::net::link::{Channel, ChannelCounters, JitterLine};
use crate::net::loss::{LossModel, LossProcess};
use crate::net::packet::PacketPool;
use crate::net::queue::{DropTailQueue, QueueLimit};
use crate::net::red::Red;
use crate::net::routing::{Graph, RoutingTable};
use crate::net::{ChannelId, IfaceId, NodeId};
use crate::scenario::{DirectionSpec, FlowSpec, LossSpec, PathSpec, ProxySpec, Scenario};
use crate::trace::pcap::Captures;

/// Largest time the engine accepts (about 115 days): every sum of times then
/// stays far inside u64 nanoseconds.
pub const MAX_TIME_NS: u64 = 10_u64.pow(16);
/// Largest rate (10 Tb/s).
pub const MAX_RATE_BPS: u64 = 10_u64.pow(13);
/// Most time-series samples in one run.
pub const MAX_SAMPLES: u64 = 1_000_000;
/// The port every flow's receiving end listens on (iperf3's).
pub const SERVER_PORT: u16 = 5201;
/// Ports of sending ends count up from here, one per path.
const FIRST_CLIENT_PORT: u16 = 10000;

fn check_probability(field: &str, p: f64) -> Result<(), SimError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(SimError::invalid(
            field,
            format!("{p} is not a probability (allowed: 0 to 1)"),
        ))
    }
}

/// A time anywhere in a scenario (ns): at most `MAX_TIME_NS`.
pub fn check_time(field: &str, t: u64) -> Result<(), SimError> {
    if t > MAX_TIME_NS {
        return Err(SimError::invalid(
            field,
            format!("{} s is too long (allowed: up to 10^7 s)", t as f64 / 1e9),
        ));
    }
    Ok(())
}

/// A time as a scenario file would give it: "20ms", "150us", "7ns".
fn show_time(ns: u64) -> String {
    match ns {
        0 => "0".into(),
        _ if ns.is_multiple_of(1_000_000) => format!("{}ms", ns / 1_000_000),
        _ if ns.is_multiple_of(1_000) => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

/// A rate anywhere in a scenario (bit/s): 1 bit/s to `MAX_RATE_BPS`.
pub fn check_rate(field: &str, rate_bps: u64) -> Result<(), SimError> {
    if rate_bps == 0 || rate_bps > MAX_RATE_BPS {
        return Err(SimError::invalid(
            field,
            format!("{rate_bps} bit/s is not allowed (1 bit/s to 10 Tbit/s)"),
        ));
    }
    Ok(())
}

fn check_direction(field: &str, d: &DirectionSpec) -> Result<QueueLimit, SimError> {
    check_rate(&format!("{field}.rate"), d.rate_bps)?;
    check_time(&format!("{field}.delay"), d.delay_ns)?;
    if d.jitter_ns > d.delay_ns {
        return Err(SimError::invalid(
            format!("{field}.jitter"),
            format!(
                "{} is more than the delay ({}): the delay varies within ±jitter, so jitter must not exceed it",
                show_time(d.jitter_ns),
                show_time(d.delay_ns)
            ),
        ));
    }
    for (k, &(from, until)) in d.down.iter().enumerate() {
        check_time(&format!("{field}.down[{k}]"), until)?;
        if from >= until {
            return Err(SimError::invalid(
                format!("{field}.down[{k}]"),
                "an outage must end after it starts",
            ));
        }
    }
    if d.framing_bytes > 1000 {
        return Err(SimError::invalid(
            format!("{field}.framing"),
            format!(
                "{} B per packet is not allowed (0 to 1000; Ethernet: 38)",
                d.framing_bytes
            ),
        ));
    }
    match &d.loss {
        LossSpec::Bernoulli { p } => check_probability(&format!("{field}.loss.p"), *p)?,
        LossSpec::GilbertElliott {
            p_gb,
            p_bg,
            loss_good,
            loss_bad,
        } => {
            for (k, v) in [
                ("p_gb", p_gb),
                ("p_bg", p_bg),
                ("loss_good", loss_good),
                ("loss_bad", loss_bad),
            ] {
                check_probability(&format!("{field}.loss.{k}"), *v)?;
            }
        }
        LossSpec::None | LossSpec::List { .. } => {}
    }
    if let Some(r) = &d.queue.red {
        let ok =
            r.min_th >= 0.0 && r.max_th > r.min_th && (0.0..=1.0).contains(&r.max_p) && r.w_q > 0.0 && r.w_q <= 1.0;
        if !ok {
            return Err(SimError::invalid(
                format!("{field}.red"),
                "need 0 ≤ min_th < max_th, 0 ≤ max_p ≤ 1, 0 < w_q ≤ 1",
            ));
        }
    }
    match (d.queue.packets, d.queue.bytes) {
        (Some(p), None) => Ok(QueueLimit::Packets(p)),
        (None, Some(b)) => Ok(QueueLimit::Bytes(b)),
        _ => Err(SimError::invalid(
            format!("{field}.queue"),
            "give exactly one limit, in packets or in bytes",
        )),
    }
}

/// The network a scenario describes: link directions, interfaces, routes.
struct Network {
    channels: Vec<Channel>,
    /// Per interface: the node it belongs to.
    iface_node: Vec<NodeId>,
    is_router: Vec<bool>,
    routes: RoutingTable,
    /// Per node: its first interface (the default destination address).
    first_iface: Vec<Option<IfaceId>>,
}

impl Simulation {
    /// A simulation of `scn` with netbraid's own kinds of flow.
    pub fn new(scn: &Scenario) -> Result<Self, SimError> {
        Self::with_factory(scn, &builtin)
    }

    /// A simulation of `scn` whose flows' endpoints come from `factory`.
    pub fn with_factory(scn: &Scenario, factory: &EndpointFactory) -> Result<Self, SimError> {
        if scn.nodes.is_empty() {
            return Err(SimError::invalid("nodes", "the scenario has no nodes"));
        }
        if scn.duration_ns == 0 {
            return Err(SimError::invalid("duration", "must be positive"));
        }
        check_time("duration", scn.duration_ns)?;
        let mut net = build_network(scn)?;
        let mut tracks = Tracks::new();
        let (endpoints, flows) = build_flows(scn, &mut net, &mut tracks, factory)?;
        let m = &scn.measure;
        if m.start_ns >= m.stop_ns {
            return Err(SimError::invalid("measure", "start must be before stop"));
        }
        if let Some(iv) = m.interval_ns {
            if iv == 0 || scn.duration_ns / iv > MAX_SAMPLES {
                return Err(SimError::invalid(
                    "measure.interval",
                    format!("at most {MAX_SAMPLES} samples per run (interval ≥ duration / {MAX_SAMPLES})"),
                ));
            }
        }
        let captures = build_captures(scn, net.channels.len())?;
        let mark_links = net.routes.splits_flows();
        let jitter = net.channels.iter().any(|c| c.jitter.is_some());
        // Transit without an event shows drops downstream early: only for
        // runs read once, at the end, and routing by shortest paths.
        let read_at_end = m.start_ns == 0 && m.stop_ns >= scn.duration_ns && m.interval_ns.is_none();
        let transit = if read_at_end && scn.routes.is_empty() {
            super::transit::transit_links(
                &net.channels,
                &net.is_router,
                &net.iface_node,
                &net.routes,
                &endpoints,
                &captures,
            )
        } else {
            vec![None; net.channels.len()]
        };
        Ok(Self {
            name: scn.name.clone(),
            seed: scn.seed,
            events: EventQueue::new(),
            pool: PacketPool::default(),
            node_names: scn.nodes.iter().map(|n| n.name.clone()).collect(),
            is_router: net.is_router,
            channels: net.channels,
            routes: net.routes,
            iface_node: net.iface_node,
            endpoints,
            flows,
            tracks,
            mark_links,
            jitter,
            transit,
            outbox: Vec::with_capacity(64),
            duration: scn.duration_ns,
            measure: scn.measure.clone(),
            meter: Meter::default(),
            captures,
            unroutable: 0,
        })
    }
}

/// Link directions with their queues and loss processes, and routing
/// tables for the interfaces traffic is addressed to.
fn build_network(scn: &Scenario) -> Result<Network, SimError> {
    let n_nodes = scn.nodes.len();
    let name_of = |n: NodeId| scn.nodes[n.idx()].name.clone();
    let mut channels: Vec<Channel> = Vec::with_capacity(scn.links.len() * 2);
    let mut iface_node = Vec::with_capacity(scn.links.len() * 2);
    let mut pairs = Vec::with_capacity(scn.links.len());
    let mut seen_names = std::collections::HashMap::new();
    for (l, link) in scn.links.iter().enumerate() {
        for (k, n) in [("a", link.a), ("b", link.b)] {
            if n as usize >= n_nodes {
                return Err(SimError::invalid(
                    format!("links[{l}].{k}"),
                    format!("node index {n} does not exist"),
                ));
            }
        }
        let (a, b) = (NodeId(link.a), NodeId(link.b));
        if a == b {
            return Err(SimError::invalid(
                format!("links[{l}]"),
                format!("links '{}' to itself", name_of(a)),
            ));
        }
        pairs.push((a, b));
        iface_node.extend([a, b]);
        for (dir, from, to, spec) in [("ab", a, b, &link.ab), ("ba", b, a, &link.ba)] {
            let limit = check_direction(&format!("links[{l}].{dir}"), spec)?;
            let id = ChannelId(channels.len() as u32);
            let base = format!("{}->{}", name_of(from), name_of(to));
            let stream = RandomStream::new(scn.seed, &format!("loss:{base}#{l}"));
            // Parallel links get "#2", "#3", … so every direction has its own name.
            let nth = seen_names.entry(base.clone()).and_modify(|k| *k += 1).or_insert(1);
            let name = if *nth == 1 { base } else { format!("{base}#{nth}") };
            channels.push(Channel {
                id,
                name,
                from,
                to,
                // channel 2l (a→b) arrives on b's interface 2l+1, and vice versa
                to_iface: id.to_iface(),
                rate_bps: spec.rate_bps,
                framing_bytes: spec.framing_bytes,
                // the wire's delay; the jitter line adds [0, 2·jitter)
                delay: spec.delay_ns - spec.jitter_ns,
                queue: DropTailQueue::new(limit),
                red: spec.queue.red.map(|p| {
                    let stream = RandomStream::new(scn.seed, &format!("red:{}->{}#{l}", name_of(from), name_of(to)));
                    // typical packet: 1000 B, for the idle-time decay (ns-2 mean_pktsize_ 500–1000)
                    Box::new(Red::new(p, serialisation_time(1000, spec.rate_bps), stream))
                }),
                loss: LossProcess::with_outages(LossModel::from(&spec.loss), stream, spec.down.clone()),
                in_link: Ring::new(),
                busy_until: 0,
                lost_in_link: 0,
                counters: ChannelCounters::default(),
                ser_sizes: [u32::MAX; 4],
                ser_times: [0; 4],
                jitter: (spec.jitter_ns > 0).then(|| {
                    let stream = RandomStream::new(scn.seed, &format!("jitter:{}->{}#{l}", name_of(from), name_of(to)));
                    Box::new(JitterLine::new(spec.jitter_ns, stream))
                }),
            });
        }
    }
    let is_router: Vec<bool> = scn.nodes.iter().map(|n| n.router).collect();
    let multipath: Vec<_> = scn.nodes.iter().map(|n| n.multipath).collect();
    let channel_rates: Vec<u64> = channels.iter().map(|c| c.rate_bps).collect();
    let mut routes = RoutingTable::new(&Graph {
        is_router: &is_router,
        links: &pairs,
        multipath: &multipath,
        channel_rates: &channel_rates,
    });
    let mut first_iface: Vec<Option<IfaceId>> = vec![None; n_nodes];
    for (i, &n) in iface_node.iter().enumerate().rev() {
        first_iface[n.idx()] = Some(IfaceId(i as u32));
    }
    let routing_err = |e: String| SimError::invalid("", e);
    // Tables only for the interfaces traffic is addressed to: every flow's
    // destinations (for data) and, once known, its sources (for ACKs).
    for f in &scn.flows {
        for p in paths_of(f) {
            if let Some(d) = p
                .dst_iface
                .map(IfaceId)
                .or_else(|| first_iface.get(f.dst as usize).copied().flatten())
            {
                if d.idx() < iface_node.len() {
                    routes.add_destination(d).map_err(routing_err)?;
                }
            }
            if let Some(s) = p.src_iface.map(IfaceId).filter(|s| s.idx() < iface_node.len()) {
                routes.add_destination(s).map_err(routing_err)?;
            }
        }
    }
    for (i, r) in scn.routes.iter().enumerate() {
        if r.node as usize >= n_nodes {
            return Err(SimError::invalid(
                format!("routes[{i}].node"),
                format!("node index {} does not exist", r.node),
            ));
        }
        if r.dst_iface as usize >= iface_node.len() {
            return Err(SimError::invalid(
                format!("routes[{i}].to"),
                format!("interface {} does not exist", r.dst_iface),
            ));
        }
        match channels.get(r.channel as usize) {
            Some(c) if c.from == NodeId(r.node) => routes
                .set(NodeId(r.node), IfaceId(r.dst_iface), ChannelId(r.channel))
                .map_err(routing_err)?,
            Some(_) => {
                return Err(SimError::invalid(
                    format!("routes[{i}].via"),
                    format!("link does not start at '{}'", name_of(NodeId(r.node))),
                ))
            }
            None => {
                return Err(SimError::invalid(
                    format!("routes[{i}].via"),
                    format!("link {} does not exist", r.channel),
                ))
            }
        }
    }
    Ok(Network {
        channels,
        iface_node,
        is_router,
        routes,
        first_iface,
    })
}

/// A flow's paths: its `paths`, or the one its `src_iface` / `dst_iface` give.
fn paths_of(f: &FlowSpec) -> Vec<PathSpec> {
    if f.paths.is_empty() {
        vec![PathSpec {
            src_iface: f.src_iface,
            dst_iface: f.dst_iface,
        }]
    } else {
        f.paths.clone()
    }
}

/// Each flow's two endpoints, with one `Path` per path at each end.
fn build_flows(
    scn: &Scenario,
    net: &mut Network,
    tracks: &mut Tracks,
    factory: &EndpointFactory,
) -> Result<(Vec<Slot>, Vec<Flow>), SimError> {
    let n_nodes = scn.nodes.len();
    let name_of = |n: NodeId| scn.nodes[n.idx()].name.clone();
    let mut endpoints = Vec::with_capacity(scn.flows.len() * 2);
    let mut flows = Vec::with_capacity(scn.flows.len());
    let mut next_port = 0u32;
    for (i, p) in scn.proxies.iter().enumerate() {
        if p.node as usize >= n_nodes {
            return Err(SimError::invalid(
                format!("proxies[{i}].node"),
                format!("node index {} does not exist", p.node),
            ));
        }
    }
    for (i, f) in scn.flows.iter().enumerate() {
        let field = format!("flow '{}'", f.name);
        check_time(&format!("{field}.start"), f.start_ns)?;
        check_time(&format!("{field}.start_jitter"), f.start_jitter_ns)?;
        if let Some(stop) = f.stop_ns {
            check_time(&format!("{field}.stop"), stop)?;
        }
        for (k, n) in [("from", f.src), ("to", f.dst)] {
            if n as usize >= n_nodes {
                return Err(SimError::invalid(
                    format!("{field}.{k}"),
                    format!("node index {n} does not exist"),
                ));
            }
        }
        if f.src == f.dst {
            return Err(SimError::invalid(
                field,
                format!("source and destination are the same node '{}'", name_of(NodeId(f.src))),
            ));
        }
        if f.paths.len() > 64 {
            return Err(SimError::invalid(
                format!("{field}.paths"),
                format!("{} paths (allowed: up to 64)", f.paths.len()),
            ));
        }
        // Each leg: (sending end, receiving end, interfaces); one leg unless
        // the flow is relayed, and then one per connection between proxies.
        let legs: Vec<(NodeId, NodeId, PathSpec)> = if f.via.is_empty() {
            paths_of(f)
                .into_iter()
                .map(|p| (NodeId(f.src), NodeId(f.dst), p))
                .collect()
        } else {
            relay_legs(net, &name_of, &field, f, &scn.proxies)?
        };
        let relayed = !f.via.is_empty();
        let first = endpoints.len() as u32;
        // endpoints: the sender, one relay per proxy, the receiver
        let n_ends = if relayed { legs.len() + 1 } else { 2 };
        let (s, r) = (EndpointId(first), EndpointId(first + n_ends as u32 - 1));
        // Sized exactly (a relay has two paths, an end one per leg): a
        // vector grown by push would reserve four, for every endpoint.
        let per_end = if relayed { 2 } else { legs.len() };
        let mut paths: Vec<Vec<Path>> = (0..n_ends).map(|_| Vec::with_capacity(per_end)).collect();
        let mut flow_legs = Vec::new();
        for (k, (from, to, p)) in legs.iter().enumerate() {
            let where_ = if f.paths.is_empty() {
                field.clone()
            } else {
                format!("{field}.paths[{k}]")
            };
            let (tx_end, rx_end) = if relayed { (k, k + 1) } else { (0, 1) };
            if let Some(d) = p.dst_iface {
                net.routes
                    .add_destination(IfaceId(d))
                    .map_err(|e| SimError::invalid("", e))?;
            }
            let (out_channel, dst_iface, back_channel) = route_path(net, &name_of, &where_, (*from, *to), p)?;
            let client_port = FIRST_CLIENT_PORT + (next_port % (u16::MAX - FIRST_CLIENT_PORT) as u32) as u16;
            next_port += 1;
            let src_iface = out_channel.from_iface();
            let track = tracks.add(1).start;
            let (tx_id, rx_id) = (EndpointId(first + tx_end as u32), EndpointId(first + rx_end as u32));
            let (tx_path, rx_path) = (paths[tx_end].len() as u8, paths[rx_end].len() as u8);
            flow_legs.push(Leg {
                sender: tx_id,
                sender_path: tx_path,
                receiver: rx_id,
                receiver_path: rx_path,
            });
            paths[tx_end].push(Path {
                local: src_iface,
                remote: dst_iface,
                local_port: client_port,
                remote_port: SERVER_PORT,
                out_channel,
                peer: rx_id,
                peer_path: rx_path,
                track,
                sends_data: true,
            });
            paths[rx_end].push(Path {
                local: dst_iface,
                remote: src_iface,
                local_port: SERVER_PORT,
                remote_port: client_port,
                out_channel: back_channel,
                peer: tx_id,
                peer_path: tx_path,
                track,
                sends_data: false,
            });
        }
        let start = if f.start_jitter_ns > 0 {
            let mut rng = RandomStream::new(scn.seed, &format!("start:{}", f.name));
            f.start_ns + (rng.uniform() * f.start_jitter_ns as f64) as u64
        } else {
            f.start_ns
        };
        if let Some(stop) = f.stop_ns.filter(|&stop| stop <= start) {
            return Err(SimError::invalid(
                format!("{field}.stop"),
                format!(
                    "{} s is not after the flow's start ({} s{}): it must be later",
                    stop as f64 / 1e9,
                    start as f64 / 1e9,
                    if f.start_jitter_ns > 0 { ", with its jitter" } else { "" }
                ),
            ));
        }
        let setup = FlowSetup {
            field: &field,
            seed: scn.seed,
            start,
            stop: f.stop_ns.unwrap_or(Time::MAX),
            paths: if relayed { 1 } else { legs.len() },
        };
        let (sender, receiver) = factory(f, &setup)?;
        let mut ends = vec![sender];
        for (k, &p) in f.via.iter().enumerate() {
            let proxy = &scn.proxies[p as usize];
            let proxy_field = format!("proxies[{p}]");
            ends.push(relay(f, &setup, proxy, k, &proxy_field)?);
        }
        ends.push(receiver);
        let flow = FlowId(i as u32);
        let first_track = paths[0][0].track;
        for (endpoint, paths) in ends.into_iter().zip(paths) {
            endpoints.push(Slot {
                endpoint,
                flow,
                paths,
                wake_at: None,
            });
        }
        flows.push(Flow {
            name: f.name.clone(),
            src: NodeId(f.src),
            dst: NodeId(f.dst),
            sender: s,
            receiver: r,
            start,
            stop: f.stop_ns,
            tracks: first_track..first_track + legs.len() as u32,
            legs: if relayed { flow_legs } else { Vec::new() },
        });
    }
    for (i, p) in scn.proxies.iter().enumerate() {
        if !scn.flows.iter().any(|f| f.via.contains(&(i as u32))) {
            return Err(SimError::invalid(
                format!("proxies[{i}].node"),
                format!(
                    "no flow passes through the proxy on '{}' (name it in a flow's via, or remove the proxy)",
                    name_of(NodeId(p.node))
                ),
            ));
        }
    }
    Ok((endpoints, flows))
}

/// The legs of a flow relayed through proxies, along its end-to-end route:
/// leg k runs from the previous proxy (or the source) to the interface by
/// which the route enters the next proxy (or the destination), and leaves
/// that proxy by the route's next link. Each proxy must be on the route, in
/// the order `via` names them.
fn relay_legs(
    net: &mut Network,
    name_of: &dyn Fn(NodeId) -> String,
    field: &str,
    f: &FlowSpec,
    proxies: &[ProxySpec],
) -> Result<Vec<(NodeId, NodeId, PathSpec)>, SimError> {
    if !f.paths.is_empty() {
        return Err(SimError::invalid(
            format!("{field}.via"),
            "a relayed flow has one path (remove `paths`)",
        ));
    }
    let (src, dst) = (NodeId(f.src), NodeId(f.dst));
    let e2e = PathSpec {
        src_iface: f.src_iface,
        dst_iface: f.dst_iface,
    };
    let (first, dst_iface, _) = route_path(net, name_of, field, (src, dst), &e2e)?;
    // the route's links, hop by hop (checked loop-free by route_path)
    let mut hops = vec![first];
    while net.channels[hops[hops.len() - 1].idx()].to != dst && hops.len() <= net.channels.len() {
        let node = net.channels[hops[hops.len() - 1].idx()].to;
        match net.routes.lookup(node, dst_iface).channel() {
            Some(next) => hops.push(next),
            None => break,
        }
    }
    let route: Vec<String> = std::iter::once(name_of(src))
        .chain(hops.iter().map(|c| name_of(net.channels[c.idx()].to)))
        .collect();
    let mut legs = Vec::with_capacity(f.via.len() + 1);
    let (mut from, mut from_iface, mut pos) = (src, f.src_iface, 0);
    for (k, &p) in f.via.iter().enumerate() {
        let where_ = format!("{field}.via[{k}]");
        let proxy = proxies
            .get(p as usize)
            .ok_or_else(|| SimError::invalid(&where_, format!("proxy {p} does not exist")))?;
        let node = NodeId(proxy.node);
        if node == src || node == dst {
            return Err(SimError::invalid(
                where_,
                format!("'{}' is an end of the flow; a proxy sits between them", name_of(node)),
            ));
        }
        let at = |range: &[ChannelId]| range.iter().position(|c| net.channels[c.idx()].to == node);
        let Some(i) = at(&hops[pos..]).map(|i| i + pos) else {
            let why = if f.via[..k].contains(&p) {
                format!("'{}' is listed twice", name_of(node))
            } else if at(&hops[..pos]).is_some() {
                format!(
                    "'{}' comes before '{}' on the route (list proxies in path order: {})",
                    name_of(node),
                    name_of(from),
                    route.join(" → ")
                )
            } else {
                format!(
                    "'{}' is not on the route from '{}' to '{}' ({})",
                    name_of(node),
                    name_of(src),
                    name_of(dst),
                    route.join(" → ")
                )
            };
            return Err(SimError::invalid(where_, why));
        };
        legs.push((
            from,
            node,
            PathSpec {
                src_iface: from_iface,
                dst_iface: Some(hops[i].to_iface().0),
            },
        ));
        (from, from_iface, pos) = (node, Some(hops[i + 1].from_iface().0), i + 1);
    }
    legs.push((
        from,
        dst,
        PathSpec {
            src_iface: from_iface,
            dst_iface: Some(dst_iface.0),
        },
    ));
    Ok(legs)
}

/// One path of a flow: its first channel, the destination interface, and
/// the first channel back. Checks that both directions reach their target.
fn route_path(
    net: &mut Network,
    name_of: &dyn Fn(NodeId) -> String,
    field: &str,
    (src, dst): (NodeId, NodeId),
    p: &PathSpec,
) -> Result<(ChannelId, IfaceId, ChannelId), SimError> {
    let dst_iface = match p.dst_iface.map(IfaceId) {
        Some(x) if net.iface_node.get(x.idx()) == Some(&dst) => x,
        Some(x) => {
            return Err(SimError::invalid(
                format!("{field}.to_iface"),
                format!("interface {} is not on '{}'", x.0, name_of(dst)),
            ))
        }
        None => net.first_iface[dst.idx()]
            .ok_or_else(|| SimError::invalid(format!("{field}.to"), format!("'{}' has no links", name_of(dst))))?,
    };
    // (interfaces as the scenario numbers them: each node's own, from 0)
    let local = |x: IfaceId| {
        net.iface_node[..x.idx()]
            .iter()
            .filter(|&&n| n == net.iface_node[x.idx()])
            .count()
    };
    let chosen = p.src_iface.is_some() || p.dst_iface.is_some();
    let unreachable = |from: Option<IfaceId>| {
        let (from, to) = if chosen {
            (
                from.map_or(String::new(), |x| format!(" (its interface {})", local(x))),
                format!(" (its interface {})", local(dst_iface)),
            )
        } else {
            (String::new(), String::new())
        };
        let allowed = if chosen {
            "a pair of interfaces (the path's from_iface and to_iface)"
        } else {
            "hosts"
        };
        SimError::invalid(
            field,
            format!(
                "no route from '{}'{from} to '{}'{to} in both directions; allowed: {allowed} joined both \
                 ways by links (directly, or through routers with routes)",
                name_of(src),
                name_of(dst)
            ),
        )
    };
    let out_channel = match p.src_iface.map(IfaceId) {
        Some(x) if net.iface_node.get(x.idx()) == Some(&src) => x.out_channel(),
        Some(x) => {
            return Err(SimError::invalid(
                format!("{field}.from_iface"),
                format!("interface {} is not on '{}'", x.0, name_of(src)),
            ))
        }
        None => net
            .routes
            .lookup(src, dst_iface)
            .channel()
            .ok_or_else(|| unreachable(None))?,
    };
    let src_iface = out_channel.from_iface();
    net.routes
        .add_destination(src_iface)
        .map_err(|e| SimError::invalid("", e))?; // static routes set earlier are kept
    let back_channel = net
        .routes
        .lookup(dst, src_iface)
        .channel()
        .ok_or_else(|| unreachable(Some(src_iface)))?;
    for (from_ch, target) in [(out_channel, dst_iface), (back_channel, src_iface)] {
        check_path(
            &net.channels,
            &net.routes,
            &net.iface_node,
            &net.is_router,
            from_ch,
            target,
        )
        .map_err(|problem| match problem {
            PathProblem::DeadEnd(n) => SimError::invalid(
                field,
                format!("no route onward from '{}' (check the static routes)", name_of(n)),
            ),
            PathProblem::Loop(nodes) => {
                let names: Vec<String> = nodes.iter().map(|&n| name_of(n)).collect();
                SimError::invalid(
                    field,
                    format!("routing loop {} (check the static routes)", names.join(" -> ")),
                )
            }
        })?;
    }
    Ok((out_channel, dst_iface, back_channel))
}

fn build_captures(scn: &Scenario, n_channels: usize) -> Result<Captures, SimError> {
    let mut captures = Captures::new(n_channels);
    for (i, p) in scn.pcap.iter().enumerate() {
        if p.channel as usize >= n_channels {
            return Err(SimError::invalid(
                format!("pcap[{i}]"),
                format!("link direction {} does not exist", p.channel),
            ));
        }
        captures
            .add(ChannelId(p.channel), &p.path)
            .map_err(|e| SimError::invalid(format!("pcap[{i}]"), format!("cannot create '{}': {e}", p.path)))?;
    }
    Ok(captures)
}

/// Why the tables do not lead a packet to its target (static routes can
/// make either).
enum PathProblem {
    /// A host, or a router without a route for the target.
    DeadEnd(NodeId),
    /// The nodes of a loop, the first again at the end.
    Loop(Vec<NodeId>),
}

/// Follow the routing tables from `first` to interface `target`, along every
/// alternative of multipath entries.
fn check_path(
    channels: &[Channel],
    routes: &RoutingTable,
    iface_node: &[NodeId],
    is_router: &[bool],
    first: ChannelId,
    target: IfaceId,
) -> Result<(), PathProblem> {
    const UNSEEN: u8 = 0;
    const ON_PATH: u8 = 1;
    const DONE: u8 = 2;
    let dst_node = iface_node[target.idx()];
    // Depth-first over the channels the tables lead to. A channel met again
    // while it is on the path being followed is a loop; one met again after
    // everything beyond it was followed is where two multipath branches
    // join, which is fine (a plain "seen" mark would take a loop for that).
    let mut colour = vec![UNSEEN; channels.len()];
    // (channel, how many of its next hops were followed)
    let mut path = vec![(first, 0usize)];
    colour[first.idx()] = ON_PATH;
    while let Some((ch, followed)) = path.last().copied() {
        let node = channels[ch.idx()].to;
        let next = if node == dst_node {
            Vec::new()
        } else {
            let next = routes.alternatives(node, target);
            if !is_router[node.idx()] || next.is_empty() {
                return Err(PathProblem::DeadEnd(node));
            }
            next
        };
        match next.get(followed) {
            Some(&n) => {
                path.last_mut().expect("not empty").1 += 1;
                match colour[n.idx()] {
                    UNSEEN => {
                        colour[n.idx()] = ON_PATH;
                        path.push((n, 0));
                    }
                    ON_PATH => {
                        // the nodes the channels from n's place on the path lead to, n's sender first
                        let at = path.iter().position(|&(c, _)| c == n).expect("on the path");
                        let mut nodes = vec![channels[n.idx()].from];
                        nodes.extend(path[at..].iter().map(|&(c, _)| channels[c.idx()].to));
                        return Err(PathProblem::Loop(nodes));
                    }
                    _ => {} // followed already, from another branch
                }
            }
            None => {
                colour[ch.idx()] = DONE;
                path.pop();
            }
        }
    }
    Ok(())
}
