//! The variable-length parts of a packet: MPTCP handshake options and
//! SCTP chunk lists. They live in a side table of the `PacketPool` (a packet holds an
//! `ExtRef`, or nothing), so a plain TCP or UDP packet stays small and
//! `Copy`, and only the protocols that need a list pay for it.
//!
//! Each part knows its size on the wire, so header overhead is counted
//! exactly (RFC 8684 §3.1–3.2 for the handshakes, RFC 9260 §3 for SCTP
//! chunks).

/// A handle to a packet's extension in the pool's side table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtRef(pub(crate) std::num::NonZeroU32);

#[derive(Clone, Debug, PartialEq)]
pub enum Ext {
    /// An MPTCP handshake option on a subflow's TCP segment.
    MptcpHandshake(MptcpHandshake),
    /// The chunks of an SCTP packet, in order, after the common header.
    Sctp(SctpChunks),
}

impl Ext {
    /// Bytes this part adds to the packet on the wire.
    pub fn wire_bytes(&self) -> u32 {
        match self {
            Ext::MptcpHandshake(h) => h.wire_bytes(),
            Ext::Sctp(chunks) => SCTP_COMMON_HEADER + chunks.iter().map(SctpChunk::wire_bytes).sum::<u32>(),
        }
    }
}

// ---- MPTCP (RFC 8684) ------------------------------------------------------

/// Which handshake option a segment carries, and in which of the three
/// packets of the handshake (sizes from RFC 8684 §3.1 and §3.2). (DSS, on
/// every subflow packet, is a field of the segment: `packet::Dss`.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MptcpHandshake {
    /// MP_CAPABLE: SYN 4 B, SYN/ACK 12 B, third ACK 20 B.
    Capable { packet: u8 },
    /// MP_JOIN: SYN 12 B, SYN/ACK 16 B, third ACK 24 B.
    Join { packet: u8 },
}

impl MptcpHandshake {
    /// Bytes added to the TCP header, padded to a multiple of 4 (TCP's data
    /// offset counts 32-bit words).
    pub fn wire_bytes(&self) -> u32 {
        let raw: u32 = match *self {
            MptcpHandshake::Capable { packet } => [4, 12, 20][packet.clamp(1, 3) as usize - 1],
            MptcpHandshake::Join { packet } => [12, 16, 24][packet.clamp(1, 3) as usize - 1],
        };
        raw.div_ceil(4) * 4
    }
}

/// MP_CAPABLE on the initial subflow's first data segment (RFC 8684 §3.1,
/// the third ACK carrying data, as Linux's client sends it): kind, length,
/// subtype/version/flags (4), both keys (16), the data-level length (2), no
/// checksum; 24 bytes padded. It maps its data implicitly, so it stands in
/// for that segment's DSS. (netbraid models no SYN/SYN-ACK for the initial
/// subflow, so this is the one MP_CAPABLE on the wire.)
pub const MP_CAPABLE_WITH_DATA: u32 = 24;

// ---- SCTP (RFC 9260) -------------------------------------------------------

/// Source and destination ports, verification tag, CRC32c.
pub const SCTP_COMMON_HEADER: u32 = 12;
/// DATA chunk header: type, flags, length (4), TSN (4), stream id (2),
/// stream sequence (2), payload protocol id (4).
pub const SCTP_DATA_HEADER: u32 = 16;

/// Heartbeat information the sender puts in a HEARTBEAT and the peer echoes
/// (RFC 9260 §8.3: sender-specific; here the time sent and the destination,
/// padded as FreeBSD's, 40 bytes).
pub const SCTP_HEARTBEAT_INFO: u32 = 40;

/// An SCTP packet's chunks: nearly always one (a full DATA chunk, or a
/// SACK), held inline so that a packet costs one allocation, not two.
pub type SctpChunks = smallvec::SmallVec<[SctpChunk; 1]>;

#[derive(Clone, Debug, PartialEq)]
pub enum SctpChunk {
    /// User data (one stream: the stream id and sequence are on the wire,
    /// counted in the header, but not modelled).
    Data {
        tsn: u32,
        len: u32,
    },
    Sack {
        cum_tsn: u32,
        a_rwnd: u32,
        /// Gap-ack blocks as offsets from cum_tsn (start, end), inclusive.
        gaps: Vec<(u16, u16)>,
        duplicates: Vec<u32>,
        /// CMT's DAC flag: packets received since the last SACK (1 or 2).
        dac_packets: u8,
    },
    /// Its information: which destination it probed, and when.
    Heartbeat {
        dest: u8,
        sent_at: u64,
    },
    HeartbeatAck {
        dest: u8,
        sent_at: u64,
    },
}

/// Bytes on the wire of a DATA chunk carrying `len` bytes, padding included.
pub fn data_chunk_bytes(len: u32) -> u32 {
    (SCTP_DATA_HEADER + len).div_ceil(4) * 4
}

/// Bytes on the wire of a SACK chunk: header (4), cumulative TSN ack (4),
/// a_rwnd (4), #gaps (2), #dups (2), then 4 per gap block and per duplicate.
pub fn sack_chunk_bytes(gaps: usize, duplicates: usize) -> u32 {
    16 + 4 * gaps as u32 + 4 * duplicates as u32
}

impl SctpChunk {
    /// Bytes on the wire, padding included.
    pub fn wire_bytes(&self) -> u32 {
        match self {
            SctpChunk::Data { len, .. } => data_chunk_bytes(*len),
            SctpChunk::Sack { gaps, duplicates, .. } => sack_chunk_bytes(gaps.len(), duplicates.len()),
            // chunk header + heartbeat-info parameter (type, length, info)
            SctpChunk::Heartbeat { .. } | SctpChunk::HeartbeatAck { .. } => {
                (4 + 4 + SCTP_HEARTBEAT_INFO).div_ceil(4) * 4
            }
        }
    }
}

/// Extensions in flight, addressed by `ExtRef`; slots are reused.
#[derive(Default)]
pub struct ExtTable {
    slots: Vec<Option<Box<Ext>>>,
    free: Vec<u32>,
}

impl ExtTable {
    pub fn insert(&mut self, e: Box<Ext>) -> ExtRef {
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = Some(e);
                i
            }
            None => {
                self.slots.push(Some(e));
                self.slots.len() as u32 - 1
            }
        };
        ExtRef(std::num::NonZeroU32::new(i + 1).expect("index + 1 is never 0"))
    }

    pub fn get(&self, r: ExtRef) -> &Ext {
        self.slots[r.0.get() as usize - 1]
            .as_ref()
            .expect("extension taken twice")
    }

    pub fn take(&mut self, r: ExtRef) -> Box<Ext> {
        let i = r.0.get() - 1;
        self.free.push(i);
        self.slots[i as usize].take().expect("extension taken twice")
    }

    /// Extensions held (for leak checks in tests).
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 9260 §3.3.4: a SACK chunk is 16 bytes plus 4 per gap block and 4
    /// per duplicate TSN; with the common header and IPv4, an SACK-only
    /// packet with k gap blocks is 20 + 12 + 16 + 4k bytes (protocols.md §6).
    #[test]
    fn sctp_sack_sizes() {
        for k in 0..5u16 {
            let sack = SctpChunk::Sack {
                cum_tsn: 1,
                a_rwnd: 0,
                gaps: (0..k).map(|i| (2 * i + 2, 2 * i + 2)).collect(),
                duplicates: vec![],
                dac_packets: 1,
            };
            assert_eq!(
                20 + Ext::Sctp(smallvec::smallvec![sack]).wire_bytes(),
                20 + 12 + 16 + 4 * k as u32
            );
        }
        let dups = SctpChunk::Sack {
            cum_tsn: 1,
            a_rwnd: 0,
            gaps: vec![],
            duplicates: vec![7, 8],
            dac_packets: 1,
        };
        assert_eq!(dups.wire_bytes(), 24);
    }

    /// At MTU 1500 over IPv4 one DATA chunk carries 1500 − 20 − 12 − 16 = 1452
    /// payload bytes (payload efficiency 96.8 %, protocols.md §6).
    #[test]
    fn sctp_data_payload_at_mtu_1500() {
        let data = SctpChunk::Data { tsn: 0, len: 1452 };
        assert_eq!(20 + Ext::Sctp(smallvec::smallvec![data]).wire_bytes(), 1500);
        // A chunk is padded to 4 bytes.
        assert_eq!(SctpChunk::Data { tsn: 0, len: 1 }.wire_bytes(), 20);
    }

    /// RFC 8684 §3.2: MP_JOIN's third ACK carries a 24-byte option.
    #[test]
    fn mptcp_join_sizes() {
        let sizes: Vec<u32> = (1..=3)
            .map(|packet| Ext::MptcpHandshake(MptcpHandshake::Join { packet }).wire_bytes())
            .collect();
        assert_eq!(sizes, [12, 16, 24]);
    }

    #[test]
    fn table_reuses_slots() {
        let mut t = ExtTable::default();
        let a = t.insert(Box::new(Ext::Sctp(smallvec::smallvec![])));
        let b = t.insert(Box::new(Ext::MptcpHandshake(MptcpHandshake::Join { packet: 1 })));
        assert_ne!(a, b);
        assert_eq!(*t.take(a), Ext::Sctp(smallvec::smallvec![]));
        let c = t.insert(Box::new(Ext::Sctp(smallvec::smallvec![])));
        assert_eq!(a, c);
        assert_eq!(t.len(), 2);
    }
}
