//! The network: packets, link directions (queue → transmitter → wire) and
//! routing tables. Nodes are plain indices; what a node *does* with a packet
//! addressed to it is the transport layer's business.

pub mod link;
pub mod loss;
pub mod packet;
pub mod queue;
pub mod red;
pub mod routing;

/// Index of a node (host or router).
pub type NodeId = u32;
/// Index of an interface. Every link end is one interface: link `l` gives
/// interface `2l` on its `a` node and `2l + 1` on its `b` node.
pub type IfaceId = u32;
/// Index of one direction of a link (a "channel"): `2l` is a→b, `2l + 1` is b→a.
pub type ChannelId = u32;

/// The IPv4 address of an interface: link `l` is the subnet 10.x.y.0/24 with
/// x.y = l + 1 in base 256; side a is .1 and side b is .2. Used for pcap and
/// display; routing works on interface indices.
pub fn iface_addr(iface: IfaceId) -> [u8; 4] {
    let link = (iface / 2) + 1;
    [10, (link >> 8) as u8, (link & 0xff) as u8, (iface % 2 + 1) as u8]
}

pub fn format_addr(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}
