//! The network: packets, link directions (queue → transmitter → wire) and
//! routing tables. Nodes are plain indices; what a node *does* with a packet
//! addressed to it is the transport layer's business.

pub mod ext;
pub mod link;
#[cfg(test)]
mod link_reference;
pub mod loss;
pub mod packet;
pub mod queue;
pub mod red;
pub mod routing;

pub use crate::ids::{ChannelId, IfaceId, NodeId};

/// The IPv4 address of an interface: link `l` is the subnet 10.x.y.0/24 with
/// x.y = l + 1 in base 256; side a is .1 and side b is .2. Used for pcap and
/// display; routing works on interface indices.
pub fn iface_addr(iface: IfaceId) -> [u8; 4] {
    let link = iface.link() + 1;
    [10, (link >> 8) as u8, (link & 0xff) as u8, (iface.0 % 2 + 1) as u8]
}

pub fn format_addr(a: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3])
}
