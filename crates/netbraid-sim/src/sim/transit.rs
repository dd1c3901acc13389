//! Transit through a router that only passes packets along, without an
//! event there.
//!
//! A router with two neighbours and nothing of its own (no endpoint, no
//! static route, no multipath choice) forwards what one neighbour sends to
//! the other, and the link towards the other carries nothing else: with
//! shortest-path routing a packet never turns back where it came from. That
//! link's queue then sees exactly the first link's packets, in the first
//! link's order, each at the instant it arrives — which the first link knows
//! when it admits the packet (`net::link`: a rate server knows a packet's
//! whole future). So the simulator offers the packet to the next link right
//! away, at that future instant, instead of scheduling its arrival at the
//! router and offering it then: the same queue, drops, marks, departures and
//! counters, one event fewer per packet and router. A chain of such routers
//! (a long WAN path) is crossed at once.
//!
//! What is done early must not be seen early: the packet's drop or loss
//! downstream is counted when it is decided. So forwarding applies only to
//! runs that read their counters once, at the end (a measurement window of
//! the whole run, no time series), to links no capture records and no jitter
//! delays, and to packets that reach the router before the run ends. Two
//! events at the same nanosecond may run in another order than without it
//! (their order is that of their scheduling, which is now earlier); a run is
//! as deterministic as before.

use super::Slot;
use crate::net::link::Channel;
use crate::net::routing::{Next, RoutingTable};
use crate::net::{ChannelId, IfaceId, NodeId};
use crate::trace::pcap::Captures;

/// Per channel, the channel its packets are handed on to when it admits
/// them (the far end is such a router), or None.
pub(super) fn transit_links(
    channels: &[Channel],
    is_router: &[bool],
    iface_node: &[NodeId],
    routes: &RoutingTable,
    endpoints: &[Slot],
    captures: &Captures,
) -> Vec<Option<ChannelId>> {
    let mut transit = vec![None; channels.len()];
    let n_nodes = is_router.len();
    let mut ins: Vec<Vec<ChannelId>> = vec![Vec::new(); n_nodes];
    let mut outs: Vec<Vec<ChannelId>> = vec![Vec::new(); n_nodes];
    for c in channels {
        ins[c.to.idx()].push(c.id);
        outs[c.from.idx()].push(c.id);
    }
    // nodes where an endpoint sends or receives
    let mut has_endpoint = vec![false; n_nodes];
    for path in endpoints.iter().flat_map(|s| &s.paths) {
        has_endpoint[iface_node[path.local.idx()].idx()] = true;
        has_endpoint[iface_node[path.remote.idx()].idx()] = true;
    }
    let plain = |ch: ChannelId| {
        let c = &channels[ch.idx()];
        c.jitter.is_none() && !captures.records(ch)
    };
    for r in (0..n_nodes).filter(|&r| is_router[r] && !has_endpoint[r]) {
        let (ins, outs) = (&ins[r], &outs[r]);
        if ins.len() != 2 || outs.len() != 2 || !ins.iter().chain(outs).all(|&c| plain(c)) {
            continue;
        }
        let node = NodeId(r as u32);
        // the out-channel towards the node an in-channel comes from
        let back = |into: ChannelId| {
            outs.iter()
                .copied()
                .find(|&o| channels[o.idx()].to == channels[into.idx()].from)
        };
        let (Some(back0), Some(back1)) = (back(ins[0]), back(ins[1])) else {
            continue;
        };
        if back0 == back1 {
            continue; // both in-channels from one neighbour
        }
        // one next hop per destination, never a choice among several
        let single = (0..iface_node.len() as u32).all(|d| routes.alternatives(node, IfaceId(d)).len() <= 1);
        // what the neighbours' endpoints send this way is routed on across
        // (a transit router forwards the rest by shortest paths: on across)
        let across = |into: ChannelId, onward: ChannelId| {
            endpoints
                .iter()
                .flat_map(|s| &s.paths)
                .filter(|p| p.out_channel == into)
                .all(|p| routes.lookup(node, p.remote) == Next::Channel(onward))
        };
        // ins[0] goes on by the channel that does not lead back to its sender
        let (on0, on1) = (back1, back0);
        if single && across(ins[0], on0) && across(ins[1], on1) {
            transit[ins[0].idx()] = Some(on0);
            transit[ins[1].idx()] = Some(on1);
        }
    }
    transit
}
