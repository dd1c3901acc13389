//! Packets. A packet carries addressing, its size on the wire, and a protocol
//! body; the body is an enum so that later protocols (MPTCP options, SCTP
//! chunks) extend it without touching the network code.

use super::IfaceId;
use crate::engine::Time;

/// Most SACK blocks one ACK carries (RFC 2018: 4 without timestamps).
pub const MAX_SACK_BLOCKS: usize = 4;

pub mod tcp_flags {
    pub const ACK: u8 = 0x10;
    pub const FIN: u8 = 0x01;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// A TCP segment's header fields that the model uses. Sequence numbers are
/// 64-bit byte offsets from the start of the connection (no wrap-around);
/// pcap output folds them to 32 bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpSegment {
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    pub ack: u64,
    /// Advertised receive window in bytes (window scaling assumed).
    pub wnd: u32,
    pub flags: u8,
    pub sack: SackBlocks,
}

/// SACK blocks `[start, end)`, first block first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    pub n: u8,
    pub blocks: [(u64, u64); MAX_SACK_BLOCKS],
}

impl SackBlocks {
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.n as usize]
    }
    pub fn push(&mut self, block: (u64, u64)) -> bool {
        if (self.n as usize) < MAX_SACK_BLOCKS {
            self.blocks[self.n as usize] = block;
            self.n += 1;
            true
        } else {
            false
        }
    }
    /// Bytes the SACK option adds to a TCP header: kind, length and 8 bytes a
    /// block, padded to 4 bytes with two NOPs as stacks do.
    pub fn option_bytes(&self) -> u32 {
        if self.n == 0 {
            0
        } else {
            4 + 8 * self.n as u32
        }
    }
}

/// A UDP datagram: only a sequence number, for loss and reordering counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpDatagram {
    pub seq: u64,
    pub len: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    Tcp(TcpSegment),
    Udp(UdpDatagram),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub src: IfaceId,
    pub dst: IfaceId,
    /// The endpoint at the destination that consumes this packet: an index
    /// rather than a port lookup, so delivery needs no hashing.
    pub endpoint: u32,
    /// The flow this packet belongs to, for per-flow drop accounting.
    pub flow: u32,
    /// Bytes on the wire (IP header and everything above it).
    pub size: u32,
    /// When the packet entered the network (for one-way delay statistics).
    pub sent_at: Time,
    /// Hops left; a routing loop (possible with static overrides) ends here.
    pub ttl: u8,
    /// IP ECN field: NOT_ECT, ECT or CE (RFC 3168).
    pub ecn: u8,
    pub body: Body,
}

impl Packet {
    /// Payload bytes carried for the application.
    pub fn payload(&self) -> u32 {
        match &self.body {
            Body::Tcp(s) => s.len,
            Body::Udp(d) => d.len,
        }
    }
}

pub mod ecn {
    pub const NOT_ECT: u8 = 0;
    pub const ECT: u8 = 2;
    pub const CE: u8 = 3;
}

/// A slab of packets in flight, addressed by index so that events and queues
/// move 4-byte handles instead of whole packets, and freed slots are reused
/// (no allocation per packet in steady state).
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    alive: Vec<bool>,
    free: Vec<u32>,
    live: usize,
}

impl PacketPool {
    pub fn insert(&mut self, p: Packet) -> u32 {
        self.live += 1;
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = p;
            self.alive[i as usize] = true;
            i
        } else {
            self.slots.push(p);
            self.alive.push(true);
            (self.slots.len() - 1) as u32
        }
    }
    pub fn get(&self, i: u32) -> &Packet {
        &self.slots[i as usize]
    }
    pub fn get_mut(&mut self, i: u32) -> &mut Packet {
        &mut self.slots[i as usize]
    }
    pub fn remove(&mut self, i: u32) -> Packet {
        debug_assert!(self.alive[i as usize], "packet removed twice");
        self.live -= 1;
        self.alive[i as usize] = false;
        self.free.push(i);
        self.slots[i as usize]
    }
    /// Every packet still in the network.
    pub fn iter_live(&self) -> impl Iterator<Item = &Packet> {
        self.slots.iter().zip(&self.alive).filter(|(_, a)| **a).map(|(p, _)| p)
    }
    /// Packets currently in the network.
    pub fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_reuses_slots() {
        let mut pool = PacketPool::default();
        let p = Packet {
            src: 0,
            dst: 1,
            endpoint: 0,
            flow: 0,
            size: 100,
            sent_at: 0,
            ttl: 64,
            ecn: 0,
            body: Body::Udp(UdpDatagram { seq: 1, len: 72 }),
        };
        let a = pool.insert(p);
        let b = pool.insert(p);
        assert_ne!(a, b);
        pool.remove(a);
        assert_eq!(pool.insert(p), a);
        assert_eq!(pool.live(), 2);
    }

    #[test]
    fn sack_option_size() {
        let mut s = SackBlocks::default();
        assert_eq!(s.option_bytes(), 0);
        s.push((1, 2));
        assert_eq!(s.option_bytes(), 12);
        s.push((3, 4));
        s.push((5, 6));
        assert_eq!(s.option_bytes(), 28);
        assert!(s.push((7, 8)));
        assert!(!s.push((9, 10)));
    }
}
