//! Packets. A packet carries addressing (interfaces and ports: the
//! five-tuple), its size on the wire, and a protocol body. Variable-length
//! parts (MPTCP handshake options, SCTP chunk lists) go in the pool's side
//! table (`net::ext`), so the packet itself stays small and `Copy`; MPTCP's
//! DSS, on every subflow packet, is a field of the TCP segment.

use super::ext::{Ext, ExtRef, ExtTable};
use super::IfaceId;
use crate::ids::{EndpointId, FlowId, PacketRef};

/// Most SACK blocks one ACK carries (RFC 2018: 4 without timestamps).
pub const MAX_SACK_BLOCKS: usize = 4;

pub mod tcp_flags {
    pub const ACK: u8 = 0x10;
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
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
    /// MPTCP's DSS option, if any: read and set through `dss()` and
    /// `set_dss()` (kind and value are two fields so that the kind packs
    /// beside `flags` and the segment grows by 8 bytes, not 16).
    pub dss_kind: DssKind,
    pub dss_value: u64,
}

/// What the segment's DSS fields hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum DssKind {
    #[default]
    None,
    DataAck,
    Mapping,
}

/// MPTCP's Data Sequence Signal on a subflow segment (RFC 8684 §3.3), as
/// Linux sends it (read from this kernel's captures): a DATA_ACK on every
/// segment, 8 bytes on a pure ACK and 4 beside a mapping on data, and the
/// mapping with an 8-byte data sequence number, no checksum. It travels in
/// the segment itself: every subflow packet has one, and a side-table entry
/// per packet costs the simulator more than the 8 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dss {
    /// A pure ACK: DATA_ACK, the next data byte the sender of the ACK expects.
    DataAck(u64),
    /// Data: this segment's bytes [seq, seq + len) carry data bytes
    /// [dsn, dsn + len). (Its DATA_ACK is on the wire and counted in the
    /// size; data flows one way, so the model has no value to put in it.)
    Mapping { dsn: u64 },
}

impl Dss {
    /// Option bytes on the wire, padded to 4: kind, length, subtype and
    /// flags (4), then on a pure ACK an 8-byte DATA_ACK (12 in all), on data
    /// a 4-byte DATA_ACK, DSN (8), subflow sequence number (4) and
    /// data-level length (2) (22, padded to `DSS_ON_DATA`).
    pub fn wire_bytes(&self) -> u32 {
        match self {
            Dss::DataAck(_) => 4 + 8,
            Dss::Mapping { .. } => DSS_ON_DATA,
        }
    }
}

/// The DSS option's bytes on an MPTCP data segment (`Dss::wire_bytes`),
/// which Linux takes from the segment's payload to keep the packet within
/// the MTU: a subflow carries MSS − 24 bytes a segment (1,424 at MTU 1500
/// with timestamps, as this kernel's captures show).
pub const DSS_ON_DATA: u32 = (4 + 4 + 8 + 4 + 2u32).div_ceil(4) * 4;

impl TcpSegment {
    pub fn dss(&self) -> Option<Dss> {
        match self.dss_kind {
            DssKind::None => None,
            DssKind::DataAck => Some(Dss::DataAck(self.dss_value)),
            DssKind::Mapping => Some(Dss::Mapping { dsn: self.dss_value }),
        }
    }
    pub fn set_dss(&mut self, dss: Option<Dss>) {
        (self.dss_kind, self.dss_value) = match dss {
            None => (DssKind::None, 0),
            Some(Dss::DataAck(a)) => (DssKind::DataAck, a),
            Some(Dss::Mapping { dsn }) => (DssKind::Mapping, dsn),
        };
    }
}

/// SACK blocks `[start, end)`, first block first, stored as 32-bit offsets
/// from a base (the segment's ACK number), as the wire's 32-bit sequence
/// numbers are: half the size of absolute 64-bit pairs, and every TCP
/// packet carries them. Blocks lie within the receive window above the ACK,
/// and buffers are at most 4 GiB − 1 (`TcpConfig::validate`), so every
/// block fits. The one exception is a D-SACK block (RFC 2883) reporting a
/// duplicate below the ACK: it can only be the first, and its offsets then
/// count down from the base (bit 8 of `meta`, `BELOW`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlocks {
    blocks: [(u32, u32); MAX_SACK_BLOCKS],
    /// The number of blocks, and `BELOW`: one 32-bit word with no padding
    /// beside it, always written whole. (As two bytes and two of padding, a
    /// segment's copy read them back at odd widths from a fresh store, which
    /// the CPU cannot forward: a stall on every ACK built.)
    meta: u32,
}

/// `SackBlocks::meta`'s flag: the first block lies below the base.
const BELOW: u32 = 1 << 8;

impl SackBlocks {
    pub fn len(&self) -> usize {
        (self.meta & 0xff) as usize
    }
    pub fn is_empty(&self) -> bool {
        self.meta == 0
    }
    /// The blocks as absolute sequence numbers, given the base they were pushed with.
    pub fn iter(&self, base: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        let below = self.meta & BELOW != 0;
        self.blocks[..self.len()].iter().enumerate().map(move |(i, &(s, e))| {
            if i == 0 && below {
                (base - s as u64, base - e as u64)
            } else {
                (base + s as u64, base + e as u64)
            }
        })
    }
    /// Add a block (absolute, at or above `base`); false when full or not
    /// representable.
    pub fn push(&mut self, base: u64, block: (u64, u64)) -> bool {
        let fits = block.0 >= base && block.1 >= block.0 && block.1 - base <= u32::MAX as u64;
        let n = self.len();
        if n < MAX_SACK_BLOCKS && fits {
            self.blocks[n] = ((block.0 - base) as u32, (block.1 - base) as u32);
            self.meta += 1;
            true
        } else {
            false
        }
    }
    /// Add the first block, which may lie below `base` (a D-SACK block for
    /// data already cumulatively acknowledged); false if a block is there
    /// already or it is not representable.
    pub fn push_first(&mut self, base: u64, block: (u64, u64)) -> bool {
        if self.meta != 0 {
            return false;
        }
        if block.0 >= base {
            return self.push(base, block);
        }
        let fits = block.1 <= base && block.1 >= block.0 && base - block.0 <= u32::MAX as u64;
        if fits {
            self.blocks[0] = ((base - block.0) as u32, (base - block.1) as u32);
            self.meta = 1 | BELOW;
        }
        fits
    }
    /// Bytes the SACK option adds to a TCP header: kind, length and 8 bytes a
    /// block, padded to 4 bytes with two NOPs as stacks do.
    pub fn option_bytes(&self) -> u32 {
        if self.meta == 0 {
            0
        } else {
            4 + 8 * self.len() as u32
        }
    }
}

/// A UDP datagram: only a sequence number, for loss and reordering counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UdpDatagram {
    pub seq: u64,
    pub len: u32,
}

/// An SCTP packet. The common packet — one DATA chunk, or a SACK with at
/// most `SCTP_INLINE_GAPS` gap blocks and no duplicates — carries its chunk
/// here, in the body; any other travels in the packet's extension
/// (`Ext::Sctp`), which costs an allocation per packet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SctpPacket {
    /// User data bytes in its DATA chunks.
    pub user_bytes: u32,
    pub inline: Option<SctpInline>,
}

/// Gap-ack blocks a SACK can carry in the packet body (CMT's SACKs mostly
/// report one or two: the other path's data in flight).
pub const SCTP_INLINE_GAPS: usize = 4;

/// The one chunk of a common SCTP packet (see `SctpPacket`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SctpInline {
    Data {
        tsn: u32,
        len: u32,
    },
    /// A SACK: its first `gap_count` blocks (offsets from cum_tsn, inclusive).
    Sack {
        cum_tsn: u32,
        a_rwnd: u32,
        dac_packets: u8,
        gap_count: u8,
        gaps: [(u16, u16); SCTP_INLINE_GAPS],
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Body {
    Tcp(TcpSegment),
    Udp(UdpDatagram),
    Sctp(SctpPacket),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet {
    pub src: IfaceId,
    pub dst: IfaceId,
    pub src_port: u16,
    pub dst_port: u16,
    /// The endpoint at the destination that consumes this packet: resolved
    /// from the five-tuple when the connection was set up, so delivery needs
    /// no hashing.
    pub endpoint: EndpointId,
    /// Which of the receiving endpoint's paths the packet arrives on (path i
    /// of one end pairs with path i of the other, except at a relay, whose
    /// two legs are its paths 0 and 1).
    pub path: u8,
    /// The flow this packet belongs to.
    pub flow: FlowId,
    /// The simulation's record of this flow path (accounting, links used):
    /// an index, so the per-hop bookkeeping is one lookup.
    pub track: u32,
    /// It carries the flow's data (not an ACK).
    pub data: bool,
    /// Bytes on the wire (IP header and everything above it).
    pub size: u32,
    /// Hops left; a routing loop (possible with static overrides) ends here.
    pub ttl: u8,
    /// IP ECN field: NOT_ECT, ECT or CE (RFC 3168).
    pub ecn: u8,
    /// Variable-length part (MPTCP options, SCTP chunks), if any.
    pub ext: Option<ExtRef>,
    pub body: Body,
}

impl Packet {
    /// What a slot of the pool holds before its first packet (TTL 0: free).
    pub const FREE: Packet = Packet {
        src: IfaceId(0),
        dst: IfaceId(0),
        src_port: 0,
        dst_port: 0,
        endpoint: EndpointId(0),
        path: 0,
        flow: FlowId(0),
        track: 0,
        data: false,
        size: 0,
        ttl: 0,
        ecn: 0,
        ext: None,
        body: Body::Udp(UdpDatagram { seq: 0, len: 0 }),
    };

    /// IP protocol number of the body (for the five-tuple).
    pub fn protocol(&self) -> u8 {
        match self.body {
            Body::Tcp(_) => 6,
            Body::Udp(_) => 17,
            Body::Sctp(_) => 132,
        }
    }

    /// Payload bytes carried for the application.
    pub fn payload(&self) -> u32 {
        match &self.body {
            Body::Tcp(s) => s.len,
            Body::Udp(d) => d.len,
            Body::Sctp(p) => p.user_bytes,
        }
    }
}

pub mod ecn {
    pub const NOT_ECT: u8 = 0;
    pub const ECT: u8 = 2;
    pub const CE: u8 = 3;
}

/// A slab of packets in flight, addressed by `PacketRef` so that events and
/// queues move 4-byte handles instead of whole packets, and freed slots are
/// reused (no allocation per packet in steady state). Extensions live in a
/// side table beside it and are freed with their packet.
#[derive(Default)]
pub struct PacketPool {
    /// Packets, live and free: a free slot has TTL 0, which no live
    /// packet has (a router drops one whose TTL would reach 0).
    slots: Vec<Packet>,
    free: Vec<u32>,
    live: usize,
    exts: ExtTable,
}

/// Pool size above which arrivals prefetch the packets behind them: half a
/// core's L2 on the machine we measure on (2 MiB), where the slot an
/// arriving packet was written to a path's delay earlier has mostly been
/// displaced by the traffic since. (At 4 MiB, the 10 Gb/s HSTCP bench's
/// seed 3, a pool of 2.3 MB, did without: 3.3–3.6 % slower, two sittings of
/// 9 alternating runs, bench/RESULTS.md 2026-12-07; the dumbbells' and the
/// MPTCP cost cases' pools, 13–260 KB, are far below either.)
const PREFETCH_ABOVE_BYTES: usize = 1 << 20;

impl PacketPool {
    #[inline]
    pub fn insert(&mut self, p: Packet) -> PacketRef {
        self.insert_with(|slot| *slot = p)
    }
    /// Insert a packet written by `fill` straight into its slot (no copy
    /// of it through the stack): `fill` must write the whole packet.
    #[inline]
    pub fn insert_with(&mut self, fill: impl FnOnce(&mut Packet)) -> PacketRef {
        self.live += 1;
        let i = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.slots.push(Packet::FREE);
                self.slots.len() - 1
            }
        };
        let slot = &mut self.slots[i];
        fill(slot);
        debug_assert!(slot.ttl > 0, "a packet enters the network with hops left");
        PacketRef(i as u32)
    }
    /// Store a packet's extension; put the returned handle in `Packet::ext`.
    pub fn insert_ext(&mut self, e: Box<Ext>) -> ExtRef {
        self.exts.insert(e)
    }
    pub fn ext(&self, r: ExtRef) -> &Ext {
        self.exts.get(r)
    }
    pub fn get(&self, r: PacketRef) -> &Packet {
        &self.slots[r.idx()]
    }
    pub fn get_mut(&mut self, r: PacketRef) -> &mut Packet {
        &mut self.slots[r.idx()]
    }
    /// Take a packet's extension out of the side table (for its receiver).
    #[inline]
    pub fn take_ext(&mut self, r: PacketRef) -> Option<Box<Ext>> {
        let e = self.slots[r.idx()].ext.take();
        e.map(|e| self.exts.take(e))
    }
    /// The packet leaves the network: its slot (and extension, if still
    /// there) is freed. Read it before, through `get`: no copy is made.
    #[inline]
    pub fn free(&mut self, r: PacketRef) {
        debug_assert!(self.slots[r.idx()].ttl > 0, "packet freed twice");
        if let Some(e) = self.slots[r.idx()].ext.take() {
            self.exts.take(e);
        }
        self.live -= 1;
        self.slots[r.idx()].ttl = 0;
        self.free.push(r.0);
    }
    /// Whether the pool has outgrown the caches, so that prefetching packets
    /// pays: below this, packets are still cached when they arrive and the
    /// hints only cost instructions (measured: 11 % slower on the 100-flow
    /// dumbbell, whose pool fits in L2).
    #[inline]
    pub fn outgrows_cache(&self) -> bool {
        self.slots.len() * std::mem::size_of::<Packet>() > PREFETCH_ABOVE_BYTES
    }
    /// Ask the CPU to load a packet's slot into cache ahead of its use.
    /// Packets are read a link's delay after they were written: with many in
    /// flight (a 10 Gb/s, 100 ms path holds ~10^5) the slot has left the
    /// cache by then, and the first read of each arriving packet stalled on
    /// memory for half the run. A hint only: no effect on results.
    #[inline]
    pub fn prefetch(&self, r: PacketRef) {
        #[cfg(target_arch = "x86_64")]
        if let Some(slot) = self.slots.get(r.idx()) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // Every cache line the slot touches: a 112-byte slot not aligned
            // to 64 bytes spans three.
            let first = slot as *const Packet as *const i8;
            let size = std::mem::size_of::<Packet>();
            for offset in [0, 64, size - 1] {
                // SAFETY: a prefetch is a hint with no architectural effect
                // and never faults; every address lies within the slot.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(offset.min(size - 1))) }
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = r;
    }
    /// Every packet still in the network.
    pub fn iter_live(&self) -> impl Iterator<Item = &Packet> {
        self.slots.iter().filter(|p| p.ttl > 0)
    }
    /// Packets currently in the network.
    pub fn live(&self) -> usize {
        self.live
    }
    /// Extensions currently held (equal to the live packets that have one).
    pub fn live_exts(&self) -> usize {
        self.exts.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_reuses_slots() {
        let mut pool = PacketPool::default();
        let p = Packet {
            src: crate::ids::IfaceId(0),
            dst: crate::ids::IfaceId(1),
            src_port: 10000,
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
            body: Body::Udp(UdpDatagram { seq: 1, len: 72 }),
        };
        let a = pool.insert(p);
        let b = pool.insert(p);
        assert_ne!(a, b);
        pool.free(a);
        assert_eq!(pool.insert(p), a);
        assert_eq!(pool.live(), 2);
        // An extension is taken by the receiver, or freed with its packet.
        let ext = || Box::new(Ext::Sctp(smallvec::smallvec![]));
        let with_ext = Packet {
            ext: Some(pool.insert_ext(ext())),
            ..p
        };
        let c = pool.insert(with_ext);
        assert_eq!(pool.live_exts(), 1);
        assert_eq!(pool.take_ext(c), Some(ext()));
        pool.free(c);
        let e = pool.insert_ext(ext());
        let d = pool.insert(Packet { ext: Some(e), ..p });
        pool.free(d);
        assert_eq!(pool.live_exts(), 0);
    }

    /// RFC 8684 §3.3: DSS with an 8-byte DATA_ACK is 4 + 8 = 12 bytes; a
    /// 4-byte DATA_ACK and an 8-byte-DSN mapping, without checksum,
    /// 4 + 4 + 8 + 4 + 2 = 22, padded to 24 (the option lengths 12 and 22
    /// that this kernel's captures show).
    #[test]
    fn dss_sizes_and_round_trip() {
        assert_eq!(Dss::DataAck(7).wire_bytes(), 12);
        assert_eq!(Dss::Mapping { dsn: 7 }.wire_bytes(), 24);
        let mut seg = TcpSegment::default();
        assert_eq!(seg.dss(), None);
        for d in [Dss::DataAck(u64::MAX), Dss::Mapping { dsn: 1 << 40 }] {
            seg.set_dss(Some(d));
            assert_eq!(seg.dss(), Some(d));
        }
        seg.set_dss(None);
        assert_eq!(seg.dss(), None);
        // the kind packs into the segment's padding: 8 bytes more, not 16
        assert!(std::mem::size_of::<TcpSegment>() <= 72);
    }

    #[test]
    fn sack_option_size() {
        let mut s = SackBlocks::default();
        assert_eq!(s.option_bytes(), 0);
        s.push(0, (1, 2));
        assert_eq!(s.option_bytes(), 12);
        s.push(0, (3, 4));
        s.push(0, (5, 6));
        assert_eq!(s.option_bytes(), 28);
        assert!(s.push(0, (7, 8)));
        assert!(!s.push(0, (9, 10)));
    }

    #[test]
    fn sack_blocks_are_offsets_from_the_ack() {
        let base = 10_000_000_000u64; // beyond 32 bits
        let mut s = SackBlocks::default();
        assert!(s.push(base, (base + 1460, base + 4380)));
        assert!(!s.push(base, (base - 1, base + 10)), "below the base");
        assert!(!s.push(base, (base, base + (1 << 32))), "beyond 32 bits");
        assert_eq!(s.iter(base).collect::<Vec<_>>(), vec![(base + 1460, base + 4380)]);
        // a D-SACK block below the base goes first, and only first
        assert!(!s.push_first(base, (base - 2920, base - 1460)));
        let mut d = SackBlocks::default();
        assert!(d.push_first(base, (base - 2920, base - 1460)));
        assert!(d.push(base, (base + 1460, base + 2920)));
        assert!(!d.push(base, (base - 10, base - 5)));
        let got: Vec<_> = d.iter(base).collect();
        assert_eq!(got, vec![(base - 2920, base - 1460), (base + 1460, base + 2920)]);
        assert_eq!(d.option_bytes(), 20);
    }
}
