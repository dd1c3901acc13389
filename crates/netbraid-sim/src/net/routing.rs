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

use super::{ChannelId, IfaceId, NodeId};
use std::collections::VecDeque;

pub const NO_ROUTE: u32 = u32::MAX;
pub const LOCAL: u32 = u32::MAX - 1;
const NO_SLOT: u32 = u32::MAX;
/// Largest routing table (entries = destinations used × nodes), 1 GiB.
const MAX_ENTRIES: usize = 1 << 28;

/// The topology as routing sees it.
pub struct Graph<'a> {
    pub is_router: &'a [bool],
    /// (a, b) node pairs; link `l` has channels `2l` (a→b) and `2l+1` (b→a).
    pub links: &'a [(NodeId, NodeId)],
}

/// Next channel for every (node, destination interface in use).
pub struct RoutingTable {
    n_nodes: usize,
    is_router: Vec<bool>,
    links: Vec<(NodeId, NodeId)>,
    /// node → [(neighbour, channel from node to it)], in link order.
    adj: Vec<Vec<(NodeId, ChannelId)>>,
    /// Per interface: its row in `next`, or NO_SLOT if no traffic goes there.
    slot_of: Vec<u32>,
    /// Row `slot` holds the next channel from every node.
    next: Vec<ChannelId>,
    /// Next hop towards each node P, computed once per P when first needed.
    towards: Vec<Option<Vec<ChannelId>>>,
    /// Most entries `next` may hold.
    max_entries: usize,
}

impl RoutingTable {
    pub fn new(g: &Graph) -> Self {
        let n_nodes = g.is_router.len();
        let mut adj: Vec<Vec<(NodeId, ChannelId)>> = vec![Vec::new(); n_nodes];
        for (l, &(a, b)) in g.links.iter().enumerate() {
            adj[a as usize].push((b, 2 * l as u32));
            adj[b as usize].push((a, 2 * l as u32 + 1));
        }
        Self {
            n_nodes,
            is_router: g.is_router.to_vec(),
            links: g.links.to_vec(),
            adj,
            slot_of: vec![NO_SLOT; g.links.len() * 2],
            next: Vec::new(),
            towards: vec![None; n_nodes],
            max_entries: MAX_ENTRIES,
        }
    }

    /// Make `dst` routable from every node (idempotent).
    pub fn add_destination(&mut self, dst: IfaceId) -> Result<(), String> {
        if self.slot_of[dst as usize] != NO_SLOT {
            return Ok(());
        }
        let slots = self.next.len() / self.n_nodes.max(1) + 1;
        if slots * self.n_nodes > self.max_entries {
            return Err(format!(
                "routing: {slots} destinations × {} nodes exceed the routing table limit of {} entries",
                self.n_nodes, self.max_entries
            ));
        }
        let link = dst as usize / 2;
        let (a, b) = self.links[link];
        // interface 2l is on a (peer b); 2l+1 is on b (peer a)
        let (owner, peer, last_hop) =
            if dst.is_multiple_of(2) { (a, b, 2 * link as u32 + 1) } else { (b, a, 2 * link as u32) };
        if self.towards[peer as usize].is_none() {
            self.towards[peer as usize] = Some(next_hops_towards(peer, &self.is_router, &self.adj));
        }
        let to_peer = self.towards[peer as usize].as_ref().expect("just computed");
        let peer_forwards = self.is_router[peer as usize];
        self.slot_of[dst as usize] = (self.next.len() / self.n_nodes) as u32;
        self.next.extend((0..self.n_nodes).map(|node| {
            if node as NodeId == owner {
                LOCAL
            } else if node as NodeId == peer {
                last_hop
            } else if peer_forwards {
                to_peer[node]
            } else {
                NO_ROUTE // the peer is a host: it does not forward
            }
        }));
        Ok(())
    }

    #[inline]
    pub fn lookup(&self, node: NodeId, dst: IfaceId) -> u32 {
        match self.slot_of[dst as usize] {
            NO_SLOT => NO_ROUTE,
            slot => self.next[slot as usize * self.n_nodes + node as usize],
        }
    }

    /// Override one entry (a static route).
    pub fn set(&mut self, node: NodeId, dst: IfaceId, channel: ChannelId) -> Result<(), String> {
        self.add_destination(dst)?;
        let slot = self.slot_of[dst as usize] as usize;
        self.next[slot * self.n_nodes + node as usize] = channel;
        Ok(())
    }
}

/// Breadth-first search from `target`; forwarding only through routers.
fn next_hops_towards(target: NodeId, is_router: &[bool], adj: &[Vec<(NodeId, ChannelId)>]) -> Vec<ChannelId> {
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
                return NO_ROUTE;
            }
            adj[node]
                .iter()
                .find(|&&(v, _)| dist[v as usize] == d - 1 && (v == target || is_router[v as usize]))
                .map_or(NO_ROUTE, |&(_, ch)| ch)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(is_router: &[bool], links: &[(NodeId, NodeId)], dsts: &[IfaceId]) -> RoutingTable {
        let mut t = RoutingTable::new(&Graph { is_router, links });
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
        let n = 2_000;
        let is_router = vec![false; n];
        let links: Vec<(NodeId, NodeId)> = (1..n as u32).map(|h| (0, h)).collect();
        let mut t = RoutingTable::new(&Graph { is_router: &is_router, links: &links });
        t.max_entries = 100 * n;
        let result = (0..links.len() as u32 * 2).try_for_each(|d| t.add_destination(d));
        assert!(result.unwrap_err().contains("routing table limit"));
    }
}
