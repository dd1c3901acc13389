//! Static shortest-path routing (hop count), per destination interface.
//!
//! A packet addressed to interface X of host H must arrive over X's link, as
//! in IP where each interface is its own subnet. So every node routes towards
//! P, the node on the far side of X's link, and P sends it over that link.
//! Only routers forward; hosts originate and sink. Ties go to the lowest link
//! index, so tables are deterministic.

use super::{ChannelId, IfaceId, NodeId};
use std::collections::VecDeque;

pub const NO_ROUTE: u32 = u32::MAX;
pub const LOCAL: u32 = u32::MAX - 1;

/// Next channel for every (node, destination interface).
pub struct RoutingTable {
    n_ifaces: usize,
    next: Vec<ChannelId>,
}

/// The topology as routing sees it.
pub struct Graph<'a> {
    pub is_router: &'a [bool],
    /// (a, b) node pairs; link `l` has channels `2l` (a→b) and `2l+1` (b→a).
    pub links: &'a [(NodeId, NodeId)],
}

impl RoutingTable {
    pub fn shortest_paths(g: &Graph) -> Self {
        let n_nodes = g.is_router.len();
        let n_ifaces = g.links.len() * 2;
        // adjacency: node -> [(neighbor, channel from node to neighbor)], by link index
        let mut adj: Vec<Vec<(NodeId, ChannelId)>> = vec![Vec::new(); n_nodes];
        for (l, &(a, b)) in g.links.iter().enumerate() {
            adj[a as usize].push((b, 2 * l as u32));
            adj[b as usize].push((a, 2 * l as u32 + 1));
        }
        // next hop towards each node P, computed lazily once per P
        let mut towards: Vec<Option<Vec<ChannelId>>> = vec![None; n_nodes];
        let mut next = vec![NO_ROUTE; n_nodes * n_ifaces];
        for iface in 0..n_ifaces {
            let link = iface / 2;
            let (a, b) = g.links[link];
            // interface 2l is on a (peer b); 2l+1 is on b (peer a)
            let (owner, peer, last_hop) =
                if iface % 2 == 0 { (a, b, 2 * link as u32 + 1) } else { (b, a, 2 * link as u32) };
            let to_peer = towards[peer as usize]
                .get_or_insert_with(|| next_hops_towards(peer, g.is_router, &adj));
            for node in 0..n_nodes {
                next[node * n_ifaces + iface] = if node as NodeId == owner {
                    LOCAL
                } else if node as NodeId == peer {
                    last_hop
                } else if g.is_router[peer as usize] {
                    to_peer[node]
                } else {
                    NO_ROUTE // the peer is a host: it does not forward
                };
            }
        }
        Self { n_ifaces, next }
    }

    #[inline]
    pub fn lookup(&self, node: NodeId, dst: IfaceId) -> u32 {
        self.next[node as usize * self.n_ifaces + dst as usize]
    }

    pub fn set(&mut self, node: NodeId, dst: IfaceId, channel: ChannelId) {
        self.next[node as usize * self.n_ifaces + dst as usize] = channel;
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
                .find(|&&(v, _)| {
                    dist[v as usize] == d - 1 && (v == target || is_router[v as usize])
                })
                .map_or(NO_ROUTE, |&(_, ch)| ch)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dumbbell_routes() {
        // h0 - r1 - r2 - h3
        let is_router = [false, true, true, false];
        let links = [(0, 1), (1, 2), (2, 3)];
        let t = RoutingTable::shortest_paths(&Graph { is_router: &is_router, links: &links });
        let h3_iface = 5; // link 2, side b
        assert_eq!(t.lookup(0, h3_iface), 0); // h0 -> r1 (channel 0 = link0 a->b)
        assert_eq!(t.lookup(1, h3_iface), 2); // r1 -> r2
        assert_eq!(t.lookup(2, h3_iface), 4); // r2 -> h3
        assert_eq!(t.lookup(3, h3_iface), LOCAL);
        let h0_iface = 0;
        assert_eq!(t.lookup(3, h0_iface), 5);
        assert_eq!(t.lookup(2, h0_iface), 3);
    }

    #[test]
    fn hosts_do_not_forward() {
        // h0 - h1 - h2: h0 cannot reach h2 through host h1
        let is_router = [false, false, false];
        let links = [(0, 1), (1, 2)];
        let t = RoutingTable::shortest_paths(&Graph { is_router: &is_router, links: &links });
        assert_eq!(t.lookup(0, 3), NO_ROUTE); // h2's interface on link 1
        assert_eq!(t.lookup(0, 1), 0); // h1's interface on link 0: direct
    }

    #[test]
    fn multihomed_destination_uses_that_interfaces_path() {
        // h0 - r1 - h3 and h0 - r2 - h3 (two disjoint paths)
        let is_router = [false, true, true, false];
        let links = [(0, 1), (1, 3), (0, 2), (2, 3)];
        let t = RoutingTable::shortest_paths(&Graph { is_router: &is_router, links: &links });
        // h3's interface on link 1 (via r1) and on link 3 (via r2)
        assert_eq!(t.lookup(0, 3), 0);
        assert_eq!(t.lookup(0, 7), 4);
    }
}
