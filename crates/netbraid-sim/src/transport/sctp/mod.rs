//! SCTP (RFC 9260; RFC 4960 where they differ) with Concurrent Multipath
//! Transfer (Iyengar, Amer, Stewart, IEEE/ACM ToN 2006), as sans-IO sockets:
//! an association between two address sets, one path per pair of
//! addresses (path i of the sender is destination i).
//!
//! - `SctpSender`: one TSN space; per destination cwnd, ssthresh,
//!   partial_bytes_acked, flight, RTO and T3-rtx timer, error counter and
//!   state; SACK processing with gap-ack blocks, HTNA miss indications and
//!   fast retransmit (each TSN at most once), T3 expiries with
//!   retransmission to an alternate destination, heartbeats to idle
//!   destinations, path failure after Path.Max.Retrans and failover to an
//!   alternate and back; the peer's receive window (a_rwnd less what is in
//!   flight). With `cmt`, new data goes to every destination with room, and
//!   CMT's three fixes apply: Split Fast Retransmit, Cwnd Update for CMT and
//!   Delayed ACK for CMT, each selectable, with the retransmission policies
//!   of the paper.
//! - `SctpReceiver`: TSN tracking, gap-ack blocks, duplicate TSNs, delayed
//!   SACKs (every `sack_freq`-th packet or `sack_delay`), immediate SACKs
//!   while gaps exist (or, with DAC, still delayed), a_rwnd from the
//!   receive buffer.
//!
//! Wire sizes are exact (`net::ext`): IPv4 20 B, common header 12 B, DATA
//! chunk header 16 B, chunks padded to 4 B, SACK 16 B + 4 B per gap block
//! and per duplicate TSN.
//!
//! Simplified (stated so results are read correctly): no handshake (data
//! starts at the flow's start, on an established association), one
//! stream, the application's messages (of `message_bytes`, or far larger
//! than the MTU) cut into chunks of the largest size, TSNs from 1
//! without wrap-around, the receiver reads in order as data arrives (no
//! unordered delivery), no reneging, no PR-SCTP, no CMT-PF.

mod receiver;
mod sender;

pub use receiver::SctpReceiver;
pub use sender::SctpSender;

use crate::endpoint::{Outbox, Received, Transmit};
use crate::engine::time::{MILLISECOND, SECOND};
use crate::engine::Time;
use crate::error::SimError;
use crate::net::ext::{
    data_chunk_bytes, sack_chunk_bytes, Ext, SctpChunk, SctpChunks, SCTP_COMMON_HEADER, SCTP_DATA_HEADER,
};
use crate::net::packet::{Body, SctpInline, SctpPacket, SCTP_INLINE_GAPS};
use serde::{Deserialize, Serialize};

/// IPv4 header bytes in front of every SCTP packet.
pub const IP_HEADER: u32 = 20;

/// Where a chunk goes when it is sent again under CMT (the paper's
/// retransmission policies). Plain SCTP sends fast retransmissions to the
/// original destination and timeout retransmissions to an alternate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RtxPolicy {
    /// RTX-SAME: the destination the chunk was sent to.
    Same,
    /// RTX-ASAP: a destination with room in its cwnd now (else the one
    /// with the most room).
    Asap,
    /// RTX-CWND: the destination with the largest cwnd (what FreeBSD does).
    Cwnd,
    /// RTX-SSTHRESH: the destination with the largest ssthresh.
    Ssthresh,
    /// RTX-LOSSRATE: the destination with the lowest loss rate, measured by
    /// the sender as chunks marked lost over chunks sent (ns-2 reads an
    /// oracle's rate instead).
    Lossrate,
}

/// Everything configurable about one association (both ends read it).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct SctpConfig {
    /// Path MTU (IP packet bytes): a DATA chunk carries at most
    /// mtu − 20 − 12 − 16 bytes of user data.
    pub mtu: u32,
    /// The sending application writes messages of this many bytes, each cut
    /// into chunks of at most `max_data` (the last one short) and bundled
    /// with others while they fit in the MTU; None: messages far larger than
    /// the MTU (every chunk full).
    pub message_bytes: Option<u32>,
    /// Receive buffer (bytes): the largest a_rwnd.
    pub rcvbuf: u64,
    /// Send buffer (bytes): data written and not yet cumulatively acked.
    pub sndbuf: u64,
    pub rto_initial: Time,
    pub rto_min: Time,
    pub rto_max: Time,
    /// Path.Max.Retrans: a destination whose error count exceeds it is inactive.
    pub path_max_retrans: u32,
    /// Association.Max.Retrans: the association aborts beyond it.
    pub assoc_max_retrans: u32,
    /// HB.interval: idle destinations get a HEARTBEAT every interval + RTO (jittered).
    pub hb_interval: Time,
    /// Delayed SACK: at most this long, and at least every `sack_freq` packets.
    pub sack_delay: Time,
    pub sack_freq: u32,
    /// Most packets sent to one destination at a time; 0: no limit.
    pub max_burst: u32,
    /// Initial cwnd (bytes); None: RFC's min(4·MTU, max(2·MTU, 4380)).
    pub initial_cwnd: Option<u64>,
    /// Slow start grows cwnd by at most L·MTU per SACK (RFC 4960: 1).
    pub abc_limit: u32,
    /// Miss indications that trigger a fast retransmit.
    pub fast_rtx_threshold: u32,
    /// ssthresh after a fast retransmit is at least this many MTUs (RFC: 4; FreeBSD: 2).
    pub fr_min_mtus: u32,
    /// Bytes charged against the peer's window per chunk in flight (FreeBSD's
    /// `peer_chunk_oh`: 256), besides its data.
    pub sender_chunk_overhead: u32,
    /// Bytes the receiver charges per chunk it holds out of order (FreeBSD
    /// charges an mbuf, 256 B) when it computes a_rwnd.
    pub receiver_chunk_overhead: u32,
    /// Plain SCTP: a timeout's retransmissions go to an alternate active
    /// destination (RFC 9260 §6.4; ns-2 `rtxToAlt_`).
    pub rtx_to_alternate: bool,
    /// Concurrent Multipath Transfer: new data to every destination with room.
    pub cmt: bool,
    /// The primary path (index) for new data without CMT.
    pub primary: u8,
    /// Where CMT sends retransmissions (fast and timeout).
    pub rtx_policy: RtxPolicy,
    /// CMT's Split Fast Retransmit (off: plain HTNA across destinations).
    pub sfr: bool,
    /// CMT's Cwnd Update, v2: separate pseudo-cumacks for chunks sent once
    /// and chunks sent again (off: cwnd grows only when the cumulative TSN
    /// moves).
    pub cuc: bool,
    /// CMT's Delayed ACK: the receiver delays SACKs despite gaps and says how
    /// many packets it saw; the sender may count two misses for one SACK.
    pub dac: bool,
}

impl Default for SctpConfig {
    /// RFC 9260's constants and a 256 KiB buffer each way (FreeBSD's socket
    /// buffers).
    fn default() -> Self {
        Self {
            mtu: 1500,
            message_bytes: None,
            rcvbuf: 256 * 1024,
            sndbuf: 256 * 1024,
            rto_initial: SECOND,
            rto_min: SECOND,
            rto_max: 60 * SECOND,
            path_max_retrans: 5,
            assoc_max_retrans: 10,
            hb_interval: 30 * SECOND,
            sack_delay: 200 * MILLISECOND,
            sack_freq: 2,
            max_burst: 4,
            initial_cwnd: None,
            abc_limit: 1,
            fast_rtx_threshold: 3,
            fr_min_mtus: 4,
            sender_chunk_overhead: 0,
            receiver_chunk_overhead: 0,
            rtx_to_alternate: true,
            cmt: false,
            primary: 0,
            rtx_policy: RtxPolicy::Cwnd,
            sfr: true,
            cuc: true,
            dac: true,
        }
    }
}

impl SctpConfig {
    /// User data bytes a full DATA chunk carries (1452 at MTU 1500): what
    /// fits with the chunk padded to 4 bytes.
    pub fn max_data(&self) -> u32 {
        ((self.mtu - IP_HEADER - SCTP_COMMON_HEADER) & !3) - SCTP_DATA_HEADER
    }

    /// The initial cwnd: as set, else RFC 9260 §7.2.1's.
    pub fn initial_cwnd(&self) -> u64 {
        let mtu = self.mtu as u64;
        self.initial_cwnd.unwrap_or((4 * mtu).min((2 * mtu).max(4380)))
    }

    /// Every rule, with `field` prefixing the names (e.g. "flow 'a'.");
    /// `paths`: how many paths the association has.
    pub fn validate(&self, field: &str, paths: usize) -> Result<(), SimError> {
        let bad = |k: &str, why: String| Err(SimError::invalid(format!("{field}{k}"), why));
        if !(IP_HEADER + SCTP_COMMON_HEADER + SCTP_DATA_HEADER + 4..=65535).contains(&self.mtu) {
            return bad("mtu", format!("{} B is not allowed (52 to 65535 B)", self.mtu));
        }
        if self.rcvbuf < self.max_data() as u64 || self.rcvbuf >= 1 << 32 {
            return bad(
                "rcvbuf",
                format!(
                    "{} B is not allowed (one chunk, {} B, to 4 GiB)",
                    self.rcvbuf,
                    self.max_data()
                ),
            );
        }
        if self.sndbuf < self.max_data() as u64 {
            return bad(
                "sndbuf",
                format!("{} B is smaller than one chunk ({} B)", self.sndbuf, self.max_data()),
            );
        }
        for (k, t) in [("rto_min", self.rto_min), ("rto_initial", self.rto_initial)] {
            if t == 0 {
                return bad(k, "must be longer than zero (e.g. \"1s\")".into());
            }
        }
        if self.rto_min > self.rto_max {
            return bad(
                "rto_min",
                format!(
                    "{} s is larger than rto_max ({} s)",
                    self.rto_min as f64 / 1e9,
                    self.rto_max as f64 / 1e9
                ),
            );
        }
        for (k, v) in [
            ("sack_freq", self.sack_freq),
            ("fast_rtx_threshold", self.fast_rtx_threshold),
            ("abc_limit", self.abc_limit),
        ] {
            if v == 0 || v > 1000 {
                return bad(k, format!("{v} is not allowed (1 to 1000)"));
            }
        }
        if self.sack_delay == 0 || self.sack_delay > 500 * MILLISECOND {
            return bad(
                "sack_delay",
                "must be above 0 and at most 500 ms (RFC 9260 §6.2)".into(),
            );
        }
        if self.hb_interval == 0 {
            return bad("hb_interval", "must be positive".into());
        }
        if self.message_bytes == Some(0) {
            return bad("message_size", "must be at least 1 byte".into());
        }
        if self.initial_cwnd == Some(0) {
            return bad("initial_cwnd", "must be at least 1 byte".into());
        }
        if (self.primary as usize) >= paths {
            return bad(
                "primary",
                format!(
                    "path {} does not exist (the association has {paths} path(s): 0 to {})",
                    self.primary,
                    paths.saturating_sub(1)
                ),
            );
        }
        if self.cmt && paths < 2 {
            return bad(
                "cmt",
                format!("CMT needs an association with two paths or more; this one has {paths} (give the flow `paths`, or set cmt = false)"),
            );
        }
        if paths > 64 {
            return bad("paths", format!("{paths} paths (allowed: up to 64)"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;

/// Send a packet of `chunks` on `path`: the common one (one DATA chunk, or
/// a SACK without blocks) in the packet body, any other with an extension.
/// Returns its size on the wire.
pub(crate) fn send_chunks(path: u8, chunks: SctpChunks, out: &mut Outbox) -> u32 {
    match chunks.as_slice() {
        [SctpChunk::Data { tsn, len }] => return send_data(path, &[(*tsn, *len)], out),
        [SctpChunk::Sack {
            cum_tsn,
            a_rwnd,
            gaps,
            duplicates,
            dac_packets,
        }] if gaps.len() <= SCTP_INLINE_GAPS && duplicates.is_empty() => {
            return send_sack(path, *cum_tsn, *a_rwnd, gaps, *dac_packets, out)
        }
        _ => {}
    }
    let user_bytes = chunks
        .iter()
        .map(|c| match c {
            SctpChunk::Data { len, .. } => *len,
            _ => 0,
        })
        .sum();
    let size = IP_HEADER + SCTP_COMMON_HEADER + chunks.iter().map(SctpChunk::wire_bytes).sum::<u32>();
    push(path, size, user_bytes, None, Some(Box::new(Ext::Sctp(chunks))), out)
}

/// Send a packet of DATA chunks (TSN, length): one travels in the packet
/// body, more with an extension (the sender's path: no chunk list is built
/// for the common packet). Returns its size on the wire.
pub(crate) fn send_data(path: u8, data: &[(u32, u32)], out: &mut Outbox) -> u32 {
    if let [(tsn, len)] = *data {
        let inline = SctpInline::Data { tsn, len };
        return push(path, inline_size(inline), len, Some(inline), None, out);
    }
    send_chunks(
        path,
        data.iter().map(|&(tsn, len)| SctpChunk::Data { tsn, len }).collect(),
        out,
    )
}

/// Send a SACK without duplicates and with at most `SCTP_INLINE_GAPS` gap
/// blocks (in the packet body).
pub(crate) fn send_sack(
    path: u8,
    cum_tsn: u32,
    a_rwnd: u32,
    gaps: &[(u16, u16)],
    dac_packets: u8,
    out: &mut Outbox,
) -> u32 {
    let mut blocks = [(0, 0); SCTP_INLINE_GAPS];
    blocks[..gaps.len()].copy_from_slice(gaps);
    let inline = SctpInline::Sack {
        cum_tsn,
        a_rwnd,
        dac_packets,
        gap_count: gaps.len() as u8,
        gaps: blocks,
    };
    push(path, inline_size(inline), 0, Some(inline), None, out)
}

/// Wire size of a packet holding just this chunk.
fn inline_size(c: SctpInline) -> u32 {
    let chunk = match c {
        SctpInline::Data { len, .. } => data_chunk_bytes(len),
        SctpInline::Sack { gap_count, .. } => sack_chunk_bytes(gap_count as usize, 0),
    };
    IP_HEADER + SCTP_COMMON_HEADER + chunk
}

fn push(
    path: u8,
    size: u32,
    user_bytes: u32,
    inline: Option<SctpInline>,
    ext: Option<Box<Ext>>,
    out: &mut Outbox,
) -> u32 {
    out.push(Transmit {
        path,
        body: Body::Sctp(SctpPacket { user_bytes, inline }),
        size,
        ect: false,
        ext,
    });
    size
}

/// The one chunk of a common packet (no extension), if it is one.
pub(crate) fn inline_chunk(rx: &Received<'_>) -> Option<SctpInline> {
    match (&rx.ext, rx.packet.body) {
        (None, Body::Sctp(SctpPacket { inline, .. })) => inline,
        _ => None,
    }
}

/// The chunks of an arriving SCTP packet, wherever they travelled.
pub(crate) enum Incoming {
    Inline(SctpChunk),
    Ext(Box<Ext>),
}

impl Incoming {
    pub fn new(rx: Received<'_>) -> Option<Self> {
        if let Some(ext) = rx.ext {
            return matches!(*ext, Ext::Sctp(_)).then_some(Incoming::Ext(ext));
        }
        let Body::Sctp(SctpPacket { inline: Some(c), .. }) = rx.packet.body else {
            return None;
        };
        Some(Incoming::Inline(match c {
            SctpInline::Data { tsn, len } => SctpChunk::Data { tsn, len },
            SctpInline::Sack {
                cum_tsn,
                a_rwnd,
                dac_packets,
                gap_count,
                gaps,
            } => SctpChunk::Sack {
                cum_tsn,
                a_rwnd,
                gaps: gaps[..gap_count as usize].to_vec(),
                duplicates: Vec::new(),
                dac_packets,
            },
        }))
    }

    pub fn chunks(&self) -> &[SctpChunk] {
        match self {
            Incoming::Inline(c) => std::slice::from_ref(c),
            Incoming::Ext(ext) => match &**ext {
                Ext::Sctp(chunks) => chunks,
                _ => &[],
            },
        }
    }
}

/// A queue taken from the front and read by position (the sender's chunks
/// not yet cumulatively acked, the receiver's chunks held above its
/// cumulative TSN): a vector read from `head` on, so that indexing — done
/// for every chunk a SACK or an arrival touches — is a plain offset;
/// compacted now and then.
pub(crate) struct Fifo<T> {
    items: Vec<T>,
    head: usize,
}

impl<T> Default for Fifo<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            head: 0,
        }
    }
}

impl<T: Copy> Fifo<T> {
    pub fn len(&self) -> usize {
        self.items.len() - self.head
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn as_slice(&self) -> &[T] {
        &self.items[self.head..]
    }

    pub fn front(&self) -> Option<&T> {
        self.items.get(self.head)
    }

    pub fn push_back(&mut self, x: T) {
        self.items.push(x);
    }

    /// Grow to `len` items, the new ones `x`.
    pub fn resize(&mut self, len: usize, x: T) {
        self.items.resize(self.head + len, x);
    }

    pub fn pop_front(&mut self) -> Option<T> {
        let x = *self.items.get(self.head)?;
        self.head += 1;
        if self.head >= 4096 && self.head * 2 >= self.items.len() {
            self.items.drain(..self.head);
            self.head = 0;
        }
        Some(x)
    }
}

impl<T> std::ops::Index<usize> for Fifo<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.items[self.head + i]
    }
}

impl<T> std::ops::IndexMut<usize> for Fifo<T> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.items[self.head + i]
    }
}
