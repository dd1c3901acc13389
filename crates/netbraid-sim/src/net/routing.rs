//! Static shortest-path routing (hop count), per destination interface.
//!
//! A packet addressed to interface X of host H must arrive over X's link, as
//! in IP where each interface is its own subnet. So every node routes towards
//! P, the node on the far side of X's link, and P sends it over that link.
//! Only routers forward; hosts originate and sink. Ties go to the lowest link
//! index, so tables are deterministic.
//!
//! Tables exist only for destinations that traffic uses (flow endpoints):
//! a topology of 10^5 hosts needs 10^5 × (a few) entries, not 10^5 × 2·10^5.
//!
//! A router with a multipath policy spreads traffic over all its equal-cost
//! next hops (see `Multipath`); an entry then names a group of channels.

use super::packet::Packet;
use super::{ChannelId, IfaceId, NodeId};
use serde::Deserialize;
use std::collections::VecDeque;

/// SplitMix64 finaliser: a cheap, well-mixed hash of one word.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// ECMP's hash of a packet's five-tuple (addresses, ports, protocol), salted
/// by the router so that successive routers split independently, as real
/// ones do with per-router seeds. Packets of one connection (or subflow)
/// always hash alike; two subflows with other ports may not.
#[inline]
pub fn five_tuple_hash(p: &Packet, node: NodeId) -> u64 {
    five_tuple_hash_of(p.src, p.dst, p.src_port, p.dst_port, p.protocol(), node)
}

/// The same hash from the five-tuple's parts (for walking a flow's path
/// without a packet in hand).
#[inline]
pub fn five_tuple_hash_of(src: IfaceId, dst: IfaceId, src_port: u16, dst_port: u16, protocol: u8, node: NodeId) -> u64 {
    let addrs = (src.0 as u64) << 32 | dst.0 as u64;
    let ports = (src_port as u64) << 24 | (dst_port as u64) << 8 | protocol as u64;
    mix64(addrs ^ mix64(ports ^ (node.0 as u64) << 40))
}

/// Table entries: a channel index, or one of these, or a multipath group.
const NO_ROUTE: u32 = u32::MAX;
const LOCAL: u32 = u32::MAX - 1;
const NO_SLOT: u32 = u32::MAX;

/// Where a packet goes next from a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Out on this channel.
    Channel(ChannelId),
    /// The node owns the destination interface.
    Local,
    /// No route.
    None,
}

impl Next {
    fn from_entry(e: u32) -> Next {
        match e {
            NO_ROUTE => Next::None,
            LOCAL => Next::Local,
            c => Next::Channel(ChannelId(c)),
        }
    }
    /// The channel, if it is one.
    pub fn channel(self) -> Option<ChannelId> {
        match self {
            Next::Channel(c) => Some(c),
            _ => None,
        }
    }
}
/// Entries at or above this name a multipath group (index = entry − GROUP).
const GROUP: u32 = 1 << 31;

/// The multipath group an entry names, if it names one.
fn group_of(entry: u32) -> Option<usize> {
    (GROUP..LOCAL).contains(&entry).then(|| (entry - GROUP) as usize)
}

/// How a router uses several equal-cost next hops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Multipath {
    /// One next hop (the lowest link index).
    #[default]
    None,
    /// Per-packet round robin with ns-2's `multiPath_` semantics: one counter
    /// per node and destination, shared by every flow.
    RoundRobin,
    /// Per-flow hashing of the flow's addresses and ports: a flow never splits.
    Ecmp,
    /// Per-packet, in proportion to the next hops' link rates (smooth
    /// weighted round robin: deterministic, exact proportions).
    Weighted,
}

/// The equal-cost next hops of one (node, destination) entry.
struct Group {
    policy: Multipath,
    channels: Vec<u32>,
    weights: Vec<i64>,
    /// Round robin: next index. Weighted: current credits.
    counter: usize,
    credit: Vec<i64>,
}

impl Group {
    fn pick(&mut self, flow_hash: impl FnOnce() -> u64) -> u32 {
        let k = self.channels.len();
        match self.policy {
            Multipath::None => self.channels[0],
            Multipath::RoundRobin => {
                let ch = self.channels[self.counter];
                self.counter = (self.counter + 1) % k;
                ch
            }
            Multipath::Ecmp => self.channels[(flow_hash() % k as u64) as usize],
            Multipath::Weighted => {
                let total: i64 = self.weights.iter().sum();
                for (c, w) in self.credit.iter_mut().zip(&self.weights) {
                    *c += w;
                }
                let best = (0..k)
                    .max_by_key(|&i| (self.credit[i], std::cmp::Reverse(i)))
                    .expect("non-empty");
                self.credit[best] -= total;
                self.channels[best]
            }
        }
    }
}
/// Largest routing table (entries = destinations used × nodes that need a
/// column: routers and multi-homed hosts), 1 GiB.
const MAX_ENTRIES: usize = 1 << 28;

/// The topology as routing sees it.
pub struct Graph<'a> {
    pub is_router: &'a [bool],
    /// (a, b) node pairs; link `l` has channels `2l` (a→b) and `2l+1` (b→a).
    pub links: &'a [(NodeId, NodeId)],
    /// Per node: how it uses equal-cost next hops (empty = none anywhere).
    pub multipath: &'a [Multipath],
    /// Per channel: its rate (weights for `Multipath::Weighted`).
    pub channel_rates: &'a [u64],
}

/// Next channel for every (node, destination interface in use).
///
/// Only routers and hosts with several links have a column of their own: a
/// host with one link has one way out, so its entry follows from where the
/// destination is (`Dest`). The table then grows with destinations ×
/// routers, not destinations × hosts, which would be quadratic in flows.
pub struct RoutingTable {
    is_router: Vec<bool>,
    links: Vec<(NodeId, NodeId)>,
    /// node → [(neighbour, channel from node to it)], in link order.
    adj: Vec<Vec<(u32, u32)>>,
    /// Per node: its column in `next`, or NO_COLUMN for a host with one link.
    column_of: Vec<u32>,
    /// The nodes with a column, in column order.
    columns: Vec<u32>,
    n_columns: usize,
    /// Per interface: its row in `next`, or NO_SLOT if no traffic goes there.
    slot_of: Vec<u32>,
    /// Per row: where its destination is.
    dests: Vec<Dest>,
    /// Row `slot` holds the entry (channel, LOCAL, NO_ROUTE or group) of every
    /// node with a column.
    next: Vec<u32>,
    /// Static routes set on hosts without a column: (node, slot) → entry.
    host_routes: std::collections::HashMap<(u32, u32), u32>,
    /// All equal-cost next hops towards each node P, computed once per P.
    towards: Vec<Option<Vec<Vec<u32>>>>,
    multipath: Vec<Multipath>,
    channel_rates: Vec<u64>,
    groups: Vec<Group>,
    /// Most entries `next` may hold.
    max_entries: usize,
}

/// A destination interface: the node that owns it, the node at the other end
/// of its link (which every packet for it passes last), and that link's
/// channel towards the owner.
#[derive(Clone, Copy)]
struct Dest {
    owner: u32,
    peer: u32,
    last_hop: u32,
}

const NO_COLUMN: u32 = u32::MAX;

impl RoutingTable {
    pub fn new(g: &Graph) -> Self {
        let n_nodes = g.is_router.len();
        let mut adj: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n_nodes];
        for (l, &(a, b)) in g.links.iter().enumerate() {
            adj[a.idx()].push((b.0, 2 * l as u32));
            adj[b.idx()].push((a.0, 2 * l as u32 + 1));
        }
        let columns: Vec<u32> = (0..n_nodes as u32)
            .filter(|&n| g.is_router[n as usize] || adj[n as usize].len() > 1)
            .collect();
        let mut column_of = vec![NO_COLUMN; n_nodes];
        for (c, &n) in columns.iter().enumerate() {
            column_of[n as usize] = c as u32;
        }
        let n_columns = columns.len();
        Self {
            is_router: g.is_router.to_vec(),
            links: g.links.to_vec(),
            adj,
            column_of,
            columns,
            n_columns,
            slot_of: vec![NO_SLOT; g.links.len() * 2],
            dests: Vec::new(),
            next: Vec::new(),
            host_routes: Default::default(),
            towards: vec![None; n_nodes],
            multipath: if g.multipath.is_empty() {
                vec![Multipath::None; n_nodes]
            } else {
                g.multipath.to_vec()
            },
            channel_rates: g.channel_rates.to_vec(),
            groups: Vec::new(),
            max_entries: MAX_ENTRIES,
        }
    }

    /// Make `dst` routable from every node (idempotent).
    pub fn add_destination(&mut self, dst: IfaceId) -> Result<(), String> {
        if self.slot_of[dst.idx()] != NO_SLOT {
            return Ok(());
        }
        let slots = self.dests.len() + 1;
        if slots * self.n_columns > self.max_entries {
            return Err(format!(
                "routing: {slots} destinations × {} routers and multi-homed hosts exceed the routing table \
                 limit of {} entries",
                self.n_columns, self.max_entries
            ));
        }
        let link = dst.link();
        let (a, b) = self.links[link];
        // interface 2l is on a (peer b); 2l+1 is on b (peer a)
        let (owner, peer, last_hop) = if dst.0.is_multiple_of(2) {
            (a.0, b.0, 2 * link as u32 + 1)
        } else {
            (b.0, a.0, 2 * link as u32)
        };
        if self.towards[peer as usize].is_none() {
            self.towards[peer as usize] = Some(next_hops_towards(peer, &self.is_router, &self.adj));
        }
        let peer_forwards = self.is_router[peer as usize];
        self.slot_of[dst.idx()] = self.dests.len() as u32;
        self.dests.push(Dest { owner, peer, last_hop });
        // (the nodes with a column, in order: not every node, which would
        // make adding destinations cost destinations × hosts)
        for &node in &self.columns {
            let node = node as usize;
            let entry = if node as u32 == owner {
                LOCAL
            } else if node as u32 == peer {
                last_hop
            } else if !peer_forwards {
                NO_ROUTE // the peer is a host: it does not forward
            } else {
                let hops = &self.towards[peer as usize].as_ref().expect("just computed")[node];
                let policy = self.multipath[node];
                match hops.len() {
                    0 => NO_ROUTE,
                    1 => hops[0],
                    _ if policy == Multipath::None => hops[0],
                    _ => {
                        let weights: Vec<i64> = hops
                            .iter()
                            .map(|&c| (self.channel_rates[c as usize] / 1000).max(1) as i64)
                            .collect();
                        self.groups.push(Group {
                            policy,
                            channels: hops.clone(),
                            credit: vec![0; hops.len()],
                            weights,
                            counter: 0,
                        });
                        GROUP + (self.groups.len() - 1) as u32
                    }
                }
            };
            self.next.push(entry);
        }
        Ok(())
    }

    /// Whether any entry spreads one flow's packets over several next hops
    /// (round robin, weighted): then which channels a flow uses is known
    /// only by watching its packets. ECMP keeps a flow on one path, which
    /// `lookup_flow` finds from its five-tuple.
    pub fn splits_flows(&self) -> bool {
        self.groups.iter().any(|g| g.policy != Multipath::Ecmp)
    }

    /// The next channel from `node` towards `dst`. Multipath groups pick one
    /// (and advance their round-robin state); `flow_hash` identifies the
    /// packet's flow for ECMP and is only computed when ECMP needs it.
    #[inline]
    pub fn route(&mut self, node: NodeId, dst: IfaceId, flow_hash: impl FnOnce() -> u64) -> Next {
        let e = self.entry(node, dst);
        Next::from_entry(match group_of(e) {
            Some(g) => self.groups[g].pick(flow_hash),
            None => e,
        })
    }

    /// The entry without choosing: a channel, LOCAL, NO_ROUTE, or (for a
    /// multipath group) its first channel.
    #[inline]
    fn entry(&self, node: NodeId, dst: IfaceId) -> u32 {
        match (self.slot_of[dst.idx()], self.column_of[node.idx()]) {
            (NO_SLOT, _) => NO_ROUTE,
            (slot, NO_COLUMN) => self.host_entry(node.0, slot),
            (slot, column) => self.next[slot as usize * self.n_columns + column as usize],
        }
    }

    /// The entry of a host with one link (or none), as `add_destination`
    /// would have written it: its destination's owner is local, its peer is
    /// across the link, a peer that is a host forwards for nobody, and
    /// otherwise the way out is the one link if it leads anywhere.
    fn host_entry(&self, node: u32, slot: u32) -> u32 {
        if !self.host_routes.is_empty() {
            if let Some(&e) = self.host_routes.get(&(node, slot)) {
                return e;
            }
        }
        let d = self.dests[slot as usize];
        if node == d.owner {
            LOCAL
        } else if node == d.peer {
            d.last_hop
        } else if !self.is_router[d.peer as usize] {
            NO_ROUTE
        } else {
            let towards = self.towards[d.peer as usize]
                .as_ref()
                .expect("computed with the destination");
            towards[node as usize].first().copied().unwrap_or(NO_ROUTE)
        }
    }

    /// The next hop without choosing (a multipath group's first channel).
    #[inline]
    pub fn lookup(&self, node: NodeId, dst: IfaceId) -> Next {
        let e = self.entry(node, dst);
        Next::from_entry(match group_of(e) {
            Some(g) => self.groups[g].channels[0],
            None => e,
        })
    }

    /// The next hop of a flow whose five-tuple hashes to `flow_hash` here:
    /// what `route` picks, for ECMP without a packet and without changing
    /// any state (a round-robin or weighted group gives its first channel).
    pub fn lookup_flow(&self, node: NodeId, dst: IfaceId, flow_hash: impl FnOnce() -> u64) -> Next {
        let e = self.entry(node, dst);
        Next::from_entry(match group_of(e) {
            Some(g) if self.groups[g].policy == Multipath::Ecmp => {
                let channels = &self.groups[g].channels;
                channels[(flow_hash() % channels.len() as u64) as usize]
            }
            Some(g) => self.groups[g].channels[0],
            None => e,
        })
    }

    /// All channels an entry may use (one, unless it is a multipath group).
    pub fn alternatives(&self, node: NodeId, dst: IfaceId) -> Vec<ChannelId> {
        let e = self.entry(node, dst);
        match group_of(e) {
            Some(g) => self.groups[g].channels.iter().map(|&c| ChannelId(c)).collect(),
            None if e == NO_ROUTE || e == LOCAL => Vec::new(),
            None => vec![ChannelId(e)],
        }
    }

    /// Override one entry (a static route).
    pub fn set(&mut self, node: NodeId, dst: IfaceId, channel: ChannelId) -> Result<(), String> {
        self.add_destination(dst)?;
        let slot = self.slot_of[dst.idx()];
        match self.column_of[node.idx()] {
            NO_COLUMN => {
                self.host_routes.insert((node.0, slot), channel.0);
            }
            column => self.next[slot as usize * self.n_columns + column as usize] = channel.0,
        }
        Ok(())
    }
}

/// Breadth-first search from `target`, forwarding only through routers:
/// for every node, all its neighbours one hop closer (lowest link first).
fn next_hops_towards(target: u32, is_router: &[bool], adj: &[Vec<(u32, u32)>]) -> Vec<Vec<u32>> {
    let n = is_router.len();
    let mut dist = vec![u32::MAX; n];
    dist[target as usize] = 0;
    let mut queue = VecDeque::from([target]);
    while let Some(u) = queue.pop_front() {
        if u != target && !is_router[u as usize] {
            continue; // a host is reachable but does not forward
        }
        for &(v, _) in &adj[u as usize] {
            if dist[v as usize] == u32::MAX {
                dist[v as usize] = dist[u as usize] + 1;
                queue.push_back(v);
            }
        }
    }
    (0..n)
        .map(|node| {
            let d = dist[node];
            if d == u32::MAX || d == 0 {
                return Vec::new();
            }
            adj[node]
                .iter()
                .filter(|&&(v, _)| dist[v as usize] == d - 1 && (v == target || is_router[v as usize]))
                .map(|&(_, ch)| ch)
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table with plain indices in and out (entries as the table stores
    /// them: a channel, LOCAL or NO_ROUTE), so the cases read as numbers.
    struct Raw(RoutingTable);

    fn typed(links: &[(u32, u32)]) -> Vec<(NodeId, NodeId)> {
        links.iter().map(|&(a, b)| (NodeId(a), NodeId(b))).collect()
    }

    fn raw(n: Next) -> u32 {
        match n {
            Next::Channel(c) => c.0,
            Next::Local => LOCAL,
            Next::None => NO_ROUTE,
        }
    }

    impl Raw {
        fn lookup(&self, node: u32, dst: u32) -> u32 {
            raw(self.0.lookup(NodeId(node), IfaceId(dst)))
        }
        fn route(&mut self, node: u32, dst: u32, hash: impl FnOnce() -> u64) -> u32 {
            raw(self.0.route(NodeId(node), IfaceId(dst), hash))
        }
        fn add_destination(&mut self, dst: u32) -> Result<(), String> {
            self.0.add_destination(IfaceId(dst))
        }
    }

    fn table(is_router: &[bool], links: &[(u32, u32)], dsts: &[u32]) -> Raw {
        let mut t = Raw(RoutingTable::new(&Graph {
            is_router,
            links: &typed(links),
            multipath: &[],
            channel_rates: &[],
        }));
        for &d in dsts {
            t.add_destination(d).unwrap();
        }
        t
    }

    #[test]
    fn dumbbell_routes() {
        // h0 - r1 - r2 - h3
        let t = table(&[false, true, true, false], &[(0, 1), (1, 2), (2, 3)], &[5, 0]);
        let h3_iface = 5; // link 2, side b
        assert_eq!(t.lookup(0, h3_iface), 0); // h0 -> r1 (channel 0 = link0 a->b)
        assert_eq!(t.lookup(1, h3_iface), 2); // r1 -> r2
        assert_eq!(t.lookup(2, h3_iface), 4); // r2 -> h3
        assert_eq!(t.lookup(3, h3_iface), LOCAL);
        assert_eq!(t.lookup(3, 0), 5);
        assert_eq!(t.lookup(2, 0), 3);
        assert_eq!(t.lookup(2, 1), NO_ROUTE); // no traffic for interface 1: no table
    }

    #[test]
    fn hosts_do_not_forward() {
        // h0 - h1 - h2: h0 cannot reach h2 through host h1
        let t = table(&[false, false, false], &[(0, 1), (1, 2)], &[3, 1]);
        assert_eq!(t.lookup(0, 3), NO_ROUTE); // h2's interface on link 1
        assert_eq!(t.lookup(0, 1), 0); // h1's interface on link 0: direct
    }

    #[test]
    fn multihomed_destination_uses_that_interfaces_path() {
        // h0 - r1 - h3 and h0 - r2 - h3 (two disjoint paths)
        let t = table(&[false, true, true, false], &[(0, 1), (1, 3), (0, 2), (2, 3)], &[3, 7]);
        assert_eq!(t.lookup(0, 3), 0);
        assert_eq!(t.lookup(0, 7), 4);
    }

    #[test]
    fn oversized_tables_are_an_error_not_an_abort() {
        // a star of routers: every node needs a column
        let n = 2_000;
        let is_router = vec![true; n];
        let links: Vec<(u32, u32)> = (1..n as u32).map(|h| (0, h)).collect();
        let mut t = Raw(RoutingTable::new(&Graph {
            is_router: &is_router,
            links: &typed(&links),
            multipath: &[],
            channel_rates: &[],
        }));
        t.0.max_entries = 100 * n;
        let result = (0..links.len() as u32 * 2).try_for_each(|d| t.add_destination(d));
        assert!(result.unwrap_err().contains("routing table limit"));
    }

    #[test]
    fn hosts_with_one_link_take_no_room() {
        // a dumbbell of 2 × 5000 hosts: 10,000 destinations, but only the two
        // routers have columns
        let n = 5_000u32;
        let (r1, r2) = (2 * n, 2 * n + 1);
        let mut is_router = vec![false; 2 * n as usize];
        is_router.extend([true, true]);
        let mut links: Vec<(u32, u32)> = (0..n).map(|h| (h, r1)).collect();
        links.push((r1, r2));
        links.extend((n..2 * n).map(|h| (h, r2)));
        let mut t = table(&is_router, &links, &[]);
        for l in (0..links.len() as u32).filter(|&l| l != n) {
            t.add_destination(2 * l).unwrap(); // the host's side of each access link
        }
        assert_eq!(t.0.next.len(), 2 * 2 * n as usize);
        // host 0 reaches host n across both routers, and the reverse
        assert_eq!(t.lookup(0, 2 * (n + 1)), 0);
        assert_eq!(t.lookup(r1, 2 * (n + 1)), 2 * n);
        assert_eq!(t.lookup(r2, 2 * (n + 1)), 2 * (n + 1) + 1);
        assert_eq!(t.lookup(n, 0), 2 * (n + 1));
    }

    /// The oracle for the compact table: the same table with a column for
    /// every node gives every lookup alike, on random topologies of routers
    /// and single- and multi-homed hosts, with static routes on hosts.
    #[test]
    fn compact_table_answers_as_a_full_one() {
        let mut rng = 0x2545f4914f6cdd1du64;
        let mut next = move |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for _ in 0..200 {
            let n = 2 + next(12) as u32;
            let is_router: Vec<bool> = (0..n).map(|_| next(2) == 0).collect();
            let links: Vec<(u32, u32)> = (0..next(20))
                .map(|_| (next(n as u64) as u32, next(n as u64) as u32))
                .filter(|(a, b)| a != b)
                .collect();
            if links.is_empty() {
                continue;
            }
            let mut compact = table(&is_router, &links, &[]);
            let mut full = table(&is_router, &links, &[]);
            full.0.column_of = (0..n).collect();
            full.0.columns = (0..n).collect();
            full.0.n_columns = n as usize;
            let ifaces = 2 * links.len() as u32;
            for _ in 0..ifaces {
                let d = next(ifaces as u64) as u32;
                compact.add_destination(d).unwrap();
                full.add_destination(d).unwrap();
            }
            for _ in 0..3 {
                let (node, d, ch) = (
                    next(n as u64) as u32,
                    next(ifaces as u64) as u32,
                    next(ifaces as u64) as u32,
                );
                compact.0.set(NodeId(node), IfaceId(d), ChannelId(ch)).unwrap();
                full.0.set(NodeId(node), IfaceId(d), ChannelId(ch)).unwrap();
            }
            for node in 0..n {
                for d in 0..ifaces {
                    assert_eq!(
                        compact.lookup(node, d),
                        full.lookup(node, d),
                        "node {node}, dst {d}: {links:?}"
                    );
                }
            }
        }
    }

    /// h0 - r1 =(k parallel links)= r2 - h1, with policy at r1.
    fn parallel(k: u32, policy: Multipath, rates: &[u64]) -> (Raw, u32) {
        let mut links = vec![(0, 1)];
        links.extend((0..k).map(|_| (1, 2)));
        links.push((2, 3));
        let mut channel_rates = vec![1_000_000; links.len() * 2];
        for (i, &r) in rates.iter().enumerate() {
            channel_rates[2 * (i + 1)] = r; // r1 -> r2 on parallel link i
        }
        let multipath = [Multipath::None, policy, Multipath::None, Multipath::None];
        let is_router = [false, true, true, false];
        let mut t = Raw(RoutingTable::new(&Graph {
            is_router: &is_router,
            links: &typed(&links),
            multipath: &multipath,
            channel_rates: &channel_rates,
        }));
        let dst = 2 * (links.len() as u32 - 1) + 1; // h1's interface
        t.add_destination(dst).unwrap();
        (t, dst)
    }

    /// protocols.md §9: round robin sends exactly ⌊n/k⌋ or ⌈n/k⌉ packets to
    /// each next hop, whatever the mix of flows (one shared counter).
    #[test]
    fn round_robin_splits_evenly_across_flows() {
        for k in 2..=4 {
            let (mut t, dst) = parallel(k, Multipath::RoundRobin, &[]);
            for n in [1u64, 7, 10, 101] {
                let mut counts = vec![0u64; k as usize];
                for i in 0..n {
                    let ch = t.route(1, dst, || i % 3); // three flows interleaved
                    counts[(ch / 2 - 1) as usize] += 1;
                }
                let total: u64 = counts.iter().sum();
                assert_eq!(total, n);
                for c in &counts {
                    assert!(
                        *c == n / k as u64 || *c == n.div_ceil(k as u64),
                        "k={k} n={n}: {counts:?}"
                    );
                }
                // reset by draining to a multiple of k for the next n
                while counts.iter().any(|&c| c != counts[0]) {
                    let ch = t.route(1, dst, || 0);
                    counts[(ch / 2 - 1) as usize] += 1;
                }
            }
        }
    }

    #[test]
    fn ecmp_never_splits_a_flow_and_spreads_flows() {
        let (mut t, dst) = parallel(4, Multipath::Ecmp, &[]);
        let mut used = std::collections::HashSet::new();
        for flow in 0..64u64 {
            let hash = flow.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let first = t.route(1, dst, || hash);
            for _ in 0..50 {
                assert_eq!(t.route(1, dst, || hash), first);
            }
            used.insert(first);
        }
        assert_eq!(used.len(), 4);
    }

    #[test]
    fn weighted_splits_in_proportion_to_rates() {
        let (mut t, dst) = parallel(3, Multipath::Weighted, &[15_000_000, 10_000_000, 5_000_000]);
        let mut counts = [0u32; 3];
        for _ in 0..600 {
            counts[(t.route(1, dst, || 0) / 2 - 1) as usize] += 1;
        }
        assert_eq!(counts, [300, 200, 100]);
    }

    /// The hash covers the whole five-tuple: the same tuple always gives the
    /// same value; other ports (another connection or subflow between the
    /// same addresses) give others, spread over the next hops.
    #[test]
    fn five_tuple_hash_uses_ports() {
        use crate::ids::{EndpointId, FlowId};
        use crate::net::packet::{Body, UdpDatagram};
        let pkt = |src_port: u16| Packet {
            src: IfaceId(0),
            dst: IfaceId(9),
            src_port,
            dst_port: 5201,
            endpoint: EndpointId(0),
            path: 0,
            flow: FlowId(0),
            track: 0,
            data: true,
            size: 100,
            ttl: 64,
            ecn: 0,
            ext: None,
            body: Body::Udp(UdpDatagram { seq: 0, len: 72 }),
        };
        assert_eq!(
            five_tuple_hash(&pkt(10000), NodeId(3)),
            five_tuple_hash(&pkt(10000), NodeId(3))
        );
        let picks: std::collections::HashSet<u64> = (10000..10016)
            .map(|p| five_tuple_hash(&pkt(p), NodeId(3)) % 2)
            .collect();
        assert_eq!(picks.len(), 2, "16 connections all hashed to one of two paths");
        // another router splits independently
        assert_ne!(
            five_tuple_hash(&pkt(10000), NodeId(3)),
            five_tuple_hash(&pkt(10000), NodeId(4))
        );
    }
}
