//! TCP: a bulk-data sender and a receiver, as separate sans-IO endpoints.
//!
//! Modelled: slow start and congestion avoidance (through `cc`), Reno,
//! NewReno (RFC 6582) and SACK (RFC 2018 / RFC 6675) loss recovery, limited
//! transmit (RFC 3042), RTO (RFC 6298) with Karn's rule and backoff, delayed
//! ACKs, a receive window from the receiver's buffer and a send-buffer limit.
//!
//! Simplified (stated so results are read correctly): no handshake (data
//! starts at the flow's start time; connection set-up and teardown are not
//! modelled), no FIN, 64-bit sequence numbers without wrap-around, window
//! scaling always available, an application that reads instantly, and RTT
//! timed on one segment per round trip (no timestamps option).

mod ranges;
mod receiver;
mod rtt;
mod sender;

pub use receiver::{TcpReceiver, TcpReceiverStats};
pub use rtt::RttEstimator;
pub use ranges::RangeSet;
pub use sender::{CongestionRecord, TcpSender, TcpSenderStats};

use crate::cc::ControllerKind;
use crate::engine::Time;
use serde::{Deserialize, Serialize};

/// Loss-recovery algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// Tahoe (ns-2's default `Agent/TCP`): fast retransmit, then slow start
    /// from one segment (ssthresh = FlightSize/2, go-back-N), no fast recovery.
    Tahoe,
    /// RFC 5681 fast retransmit / fast recovery: leaves recovery on the first
    /// new ACK, even a partial one.
    Reno,
    /// RFC 6582: stays in recovery until all data outstanding at entry is acked.
    NewReno,
    /// RFC 6675 with an RFC 2018 receiver.
    Sack,
}

/// Whose rules the sender follows where implementations differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Semantics {
    /// The RFCs (5681, 3042, 6298).
    #[default]
    Rfc,
    /// ns-2's one-way `Agent/TCP` (Tahoe: the Python layer allows it only
    /// with `Recovery::Tahoe`), for reproducing ns-2 studies. Where it
    /// departs from the RFCs: limited transmit sends the segment at snd_nxt
    /// even when it is a resend after go-back-N (`singledup_`); fast
    /// retransmit and timeouts leave the duplicate-ACK count alone; ssthresh
    /// is half of min(cwnd, window) in whole segments (at least 2) at every
    /// fast retransmit and every timeout, even a repeated one; a fast
    /// retransmit restarts the retransmission timer; cwnd grows on every
    /// new ACK, window-limited or not.
    Ns2,
}

/// Everything configurable about one TCP connection (both ends).
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TcpConfig {
    /// Payload bytes per full segment.
    pub mss: u32,
    /// IP + TCP header bytes on every segment (40 = IPv4 + TCP, no options).
    pub header_bytes: u32,
    /// Initial congestion window, in segments.
    pub initial_window: u32,
    /// Initial ssthresh in bytes; `None` = unlimited.
    pub initial_ssthresh: Option<u64>,
    pub cc: ControllerKind,
    pub recovery: Recovery,
    /// Receiver socket buffer (bytes): the receive window.
    pub rcvbuf: u64,
    /// Sender socket buffer (bytes): unacked + unsent data.
    pub sndbuf: u64,
    pub rto_min: Time,
    pub rto_max: Time,
    pub rto_initial: Time,
    /// Clock granularity G in the RTO formula.
    pub clock_granularity: Time,
    pub delayed_ack: bool,
    /// Delayed-ACK timer.
    pub delack_timeout: Time,
    /// ACK at least every `delack_count` full-sized segments.
    pub delack_count: u32,
    /// RFC 3465 L: slow-start growth per ACK at most L·MSS (1 = RFC 5681).
    pub abc_limit: u32,
    pub dupthresh: u32,
    pub limited_transmit: bool,
    /// Most SACK blocks the receiver puts in one ACK (3 with timestamps, 4 without).
    pub max_sack_blocks: u32,
    /// Keep a record of every congestion event (fast retransmit, timeout, exit).
    pub log_congestion: bool,
    /// ECN (RFC 3168): data is ECN-capable; the receiver echoes CE marks.
    #[serde(default)]
    pub ecn: bool,
    #[serde(default)]
    pub semantics: Semantics,
}

impl Default for TcpConfig {
    fn default() -> Self {
        use crate::engine::time::{MILLISECOND, SECOND};
        Self {
            mss: 1460,
            header_bytes: 40,
            initial_window: 3,
            initial_ssthresh: None,
            cc: ControllerKind::Reno,
            recovery: Recovery::Sack,
            rcvbuf: 1 << 30,
            sndbuf: 1 << 30,
            rto_min: SECOND,
            rto_max: 60 * SECOND,
            rto_initial: SECOND,
            clock_granularity: MILLISECOND,
            delayed_ack: true,
            delack_timeout: 200 * MILLISECOND,
            delack_count: 2,
            abc_limit: 1,
            dupthresh: 3,
            limited_transmit: true,
            max_sack_blocks: 4,
            log_congestion: false,
            ecn: false,
            semantics: Semantics::Rfc,
        }
    }
}

#[cfg(test)]
mod tests;
