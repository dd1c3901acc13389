//! Building a simulation from a resolved scenario, with every index and
//! value checked: a bad scenario is a `SimError` naming the field, never a
//! panic. One function per thing built: the links, the routing, the flows
//! (with their paths and endpoints), the captures.

use super::flows::{builtin, EndpointFactory, FlowSetup};
use super::measure::Meter;
use super::{Flow, Simulation, Slot, Tracks};
use crate::endpoint::Path;
use crate::engine::time::serialisation_time;
use crate::engine::{EventQueue, RandomStream, Time};
use crate::error::SimError;
use crate::ids::{EndpointId, FlowId};
use crate::net::link::{Channel, ChannelCounters};
use crate::net::loss::{LossModel, LossProcess};
use crate::net::packet::PacketPool;
use crate::net::queue::{DropTailQueue, QueueLimit};
use crate::net::red::Red;
use crate::net::routing::{Graph, RoutingTable};
use crate::net::{ChannelId, IfaceId, NodeId};
use crate::scenario::{DirectionSpec, FlowSpec, LossSpec, PathSpec, Scenario};
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
        let mut tracks = Tracks::new(net.channels.len());
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
        let mark_links = net.routes.has_multipath();
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
        let (s, r) = (
            EndpointId(endpoints.len() as u32),
            EndpointId(endpoints.len() as u32 + 1),
        );
        let mut sender_paths = Vec::new();
        let mut receiver_paths = Vec::new();
        for (k, p) in paths_of(f).iter().enumerate() {
            let where_ = if f.paths.is_empty() {
                field.clone()
            } else {
                format!("{field}.paths[{k}]")
            };
            let (out_channel, dst_iface, back_channel) = route_path(net, &name_of, &where_, f, p)?;
            let client_port = FIRST_CLIENT_PORT + (next_port % (u16::MAX - FIRST_CLIENT_PORT) as u32) as u16;
            next_port += 1;
            let src_iface = out_channel.from_iface();
            let track = tracks.add(1).start;
            sender_paths.push(Path {
                local: src_iface,
                remote: dst_iface,
                local_port: client_port,
                remote_port: SERVER_PORT,
                out_channel,
                peer: r,
                track,
                sends_data: true,
            });
            receiver_paths.push(Path {
                local: dst_iface,
                remote: src_iface,
                local_port: SERVER_PORT,
                remote_port: client_port,
                out_channel: back_channel,
                peer: s,
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
        if f.stop_ns.is_some_and(|stop| stop <= start) {
            return Err(SimError::invalid(format!("{field}.stop"), "must be after the start"));
        }
        let setup = FlowSetup {
            field: &field,
            seed: scn.seed,
            start,
            stop: f.stop_ns.unwrap_or(Time::MAX),
            paths: sender_paths.len(),
        };
        let (sender, receiver) = factory(f, &setup)?;
        let flow = FlowId(i as u32);
        let flow_tracks = sender_paths[0].track..sender_paths[sender_paths.len() - 1].track + 1;
        endpoints.push(Slot {
            endpoint: sender,
            flow,
            paths: sender_paths,
            wake_at: None,
        });
        endpoints.push(Slot {
            endpoint: receiver,
            flow,
            paths: receiver_paths,
            wake_at: None,
        });
        flows.push(Flow {
            name: f.name.clone(),
            src: NodeId(f.src),
            dst: NodeId(f.dst),
            sender: s,
            receiver: r,
            start,
            stop: f.stop_ns,
            tracks: flow_tracks,
        });
    }
    Ok((endpoints, flows))
}

/// One path of a flow: its first channel, the destination interface, and
/// the first channel back. Checks that both directions reach their target.
fn route_path(
    net: &mut Network,
    name_of: &dyn Fn(NodeId) -> String,
    field: &str,
    f: &FlowSpec,
    p: &PathSpec,
) -> Result<(ChannelId, IfaceId, ChannelId), SimError> {
    let (src, dst) = (NodeId(f.src), NodeId(f.dst));
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
    let unreachable = || SimError::invalid(field, format!("no route from '{}' to '{}'", name_of(src), name_of(dst)));
    let out_channel = match p.src_iface.map(IfaceId) {
        Some(x) if net.iface_node.get(x.idx()) == Some(&src) => x.out_channel(),
        Some(x) => {
            return Err(SimError::invalid(
                format!("{field}.from_iface"),
                format!("interface {} is not on '{}'", x.0, name_of(src)),
            ))
        }
        None => net.routes.lookup(src, dst_iface).channel().ok_or_else(unreachable)?,
    };
    let src_iface = out_channel.from_iface();
    net.routes
        .add_destination(src_iface)
        .map_err(|e| SimError::invalid("", e))?; // static routes set earlier are kept
    let back_channel = net.routes.lookup(dst, src_iface).channel().ok_or_else(unreachable)?;
    for (from_ch, target) in [(out_channel, dst_iface), (back_channel, src_iface)] {
        check_path(
            &net.channels,
            &net.routes,
            &net.iface_node,
            &net.is_router,
            from_ch,
            target,
        )
        .map_err(|n| match n {
            Some(n) => SimError::invalid(
                field,
                format!("no route onward from '{}' (check the static routes)", name_of(n)),
            ),
            None => SimError::invalid(field, "routing loop (check the static routes)"),
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
    let dst_node = iface_node[target.idx()];
    // Depth-first over (channel, hops so far); a path longer than the number
    // of channels must revisit one: a loop.
    let mut stack = vec![(first, 0usize)];
    let mut done = vec![false; channels.len()];
    while let Some((ch, hops)) = stack.pop() {
        if hops > channels.len() {
            return Err(None);
        }
        let node = channels[ch.idx()].to;
        if node == dst_node {
            continue;
        }
        let next = routes.alternatives(node, target);
        if !is_router[node.idx()] || next.is_empty() {
            return Err(Some(node));
        }
        for n in next {
            if !done[n.idx()] || hops + 1 > channels.len() {
                done[n.idx()] = true;
                stack.push((n, hops + 1));
            }
        }
    }
    Ok(())
}
