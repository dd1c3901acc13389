//! TCP: the sending and the receiving half of a connection, as sans-IO
//! sockets that applications (`app`) own and write to or read from.
//!
//! Modelled: slow start and congestion avoidance (through `cc`), Reno,
//! NewReno (RFC 6582) and SACK (RFC 2018 / RFC 6675) loss recovery, RACK-TLP
//! loss detection and tail loss probes (RFC 8985, optional), proportional
//! rate reduction in recovery (RFC 6937, optional), limited
//! transmit (RFC 3042), RTO (RFC 6298) with Karn's rule and backoff, delayed
//! ACKs, send and receive socket buffers with back-pressure: the receive
//! window is the free space of the receiver's buffer, which fills until the
//! application reads; window updates when reading reopens it (receiver SWS
//! avoidance); a persist timer with zero-window probes; Nagle's rule for
//! short segments.
//!
//! Simplified (stated so results are read correctly): no handshake (data
//! starts at the flow's start time; connection set-up and teardown are not
//! modelled), no FIN, 64-bit sequence numbers without wrap-around, window
//! scaling always available, and RTT timed on one segment per round trip
//! (no timestamps option).

mod prr;
mod rack;
mod ranges;
pub mod rate;
mod receiver;
mod rtt;
mod send_buffer;
mod sender;

pub use ranges::RangeSet;
pub use receiver::TcpReceiver;
pub use rtt::RttEstimator;
pub use send_buffer::SendBuffer;
pub use sender::{CongestionRecord, TcpSender};

use crate::cc::CcConfig;
use crate::endpoint::{Outbox, Received, Report, Scope, Snapshot};
use crate::engine::Time;
use crate::error::SimError;
use crate::net::packet::{ecn, Body};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
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
    /// Congestion controller, by name (see `cc::CONTROLLERS`).
    pub cc: String,
    /// The controller's parameters (checked against its declaration).
    #[serde(default)]
    pub cc_params: BTreeMap<String, serde_json::Value>,
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
    /// Linux's quick-ACK mode: the first this-many in-order segments (at
    /// most rcvbuf / 2 MSS), and the first after an idle second, are ACKed
    /// at once (TCP_MAX_QUICKACKS = 16); 0: none (RFC 5681).
    #[serde(default)]
    pub quick_acks: u32,
    /// Linux's SACK compression (net.ipv4.tcp_comp_sack_nr): while data is
    /// out of order, the first three duplicate ACKs for a hole go at once
    /// and the next ones wait up to `sack_compression_delay`, one ACK
    /// standing for at most this many; 0: every one at once (RFC 5681 §4.2).
    #[serde(default)]
    pub sack_compression: u32,
    /// The longest a compressed SACK waits (tcp_comp_sack_delay_ns, 1 ms).
    #[serde(default = "one_millisecond")]
    pub sack_compression_delay: Time,
    /// RFC 3465 L: slow-start growth per ACK at most L·MSS (1 = RFC 5681).
    pub abc_limit: u32,
    /// Congestion avoidance counts bytes acknowledged (RFC 3465: one MSS
    /// per cwnd of bytes ACKed, as Linux counts ACKed segments) instead of
    /// RFC 5681's MSS²/cwnd per ACK (half the growth with delayed ACKs).
    #[serde(default)]
    pub byte_counting: bool,
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
    /// TCP_NODELAY: send short segments without waiting for ACKs (no Nagle).
    #[serde(default)]
    pub nodelay: bool,
    /// RACK (RFC 8985): a segment is lost when one sent after it has been
    /// delivered and a reordering window has passed, instead of after
    /// DupThresh duplicate ACKs; lost retransmissions are found the same
    /// way. Needs `recovery = Sack`.
    #[serde(default)]
    pub rack: bool,
    /// TLP (RFC 8985): a probe segment when the flight goes quiet for about
    /// two round trips, so a loss at the tail is recovered without a
    /// timeout. Needs `rack`.
    #[serde(default)]
    pub tlp: bool,
    /// Proportional Rate Reduction (RFC 6937, with the slow-start reduction
    /// bound, as Linux): in recovery, send in step with the deliveries so
    /// the window comes down to ssthresh smoothly. Needs `recovery = Sack`.
    #[serde(default)]
    pub prr: bool,
    /// Each reduction starts from the congestion window, as Linux's
    /// controllers compute ssthresh (`tcp_reno_ssthresh`,
    /// `bictcp_recalc_ssthresh`: from `snd_cwnd`) and PRR divides by the
    /// window at entry (`prior_cwnd`), instead of from FlightSize (RFC 5681,
    /// which leaves out what limited transmit sent: at a small window that
    /// is most of it).
    #[serde(default)]
    pub ssthresh_from_cwnd: bool,
    /// The kernel tick TCP's RACK and probe timers run on (0: exact, as
    /// RFC 8985). Linux counts them in jiffies (1/CONFIG_HZ; 4 ms on a
    /// kernel built with HZ = 250): the reordering timer waits what is left
    /// plus 2 ms, the probe timeout is 2·SRTT plus 2 ms (plus the minimum
    /// RTO with one segment in flight), each rounded up to whole ticks from
    /// the tick under way. At a 10 ms round trip that is most of an RTT.
    #[serde(default)]
    pub timer_tick: Time,
    /// Linux's RTO (tcp_rtt_estimator, tcp_set_rto: `rtt.rs`): a sample on
    /// every ACK of new data, the variation kept per round trip, RTO =
    /// SRTT + max(its largest deviation, rto_min), instead of RFC 6298's
    /// max(SRTT + 4·RTTVAR, rto_min) from one timed segment per round trip.
    #[serde(default)]
    pub linux_rto: bool,
    /// D-SACK (RFC 2883) and undo, as Linux: the receiver reports a
    /// duplicate segment in the first SACK block of the ACK it sends at
    /// once (and, with `quick_acks`, enters quick-ACK mode again, as
    /// `tcp_send_dupack`); the sender counts a D-SACKed retransmission as
    /// spurious and, when every retransmission of a recovery proves so,
    /// undoes its window reduction (`tcp_try_undo_dsack`). Needs
    /// `recovery = Sack`.
    #[serde(default)]
    pub dsack: bool,
    /// The socket buffers as this machine's Linux (6.18) sizes them
    /// (`receive_buffer`, `send_buffer`) instead of `rcvbuf` and `sndbuf`
    /// being the window and the send buffer themselves.
    #[serde(default)]
    pub linux_buffers: bool,
    /// With `linux_buffers`: the share of receive-buffer memory that is
    /// payload (Linux's tp->scaling_ratio / 256, skb->len / truesize as
    /// measured on the first full-sized segment); the window is this share
    /// of the buffer.
    #[serde(default = "veth_scaling_ratio")]
    pub scaling_ratio: f64,
}

/// Linux's scaling_ratio on this machine's veth links for 1448-byte
/// segments: 162/256 (measured 2026-12-06, tcp_measure_rcv_mss).
fn veth_scaling_ratio() -> f64 {
    162.0 / 256.0
}

/// This kernel's socket-buffer limits (sysctl, 2026-12-06): what
/// SO_RCVBUF / SO_SNDBUF may ask for (net.core.rmem_max, wmem_max), and
/// how far autotuning grows an unset buffer (net.ipv4.tcp_rmem[2],
/// tcp_wmem[2]).
pub const LINUX_RMEM_MAX: u64 = 4 << 20;
pub const LINUX_WMEM_MAX: u64 = 4 << 20;
pub const LINUX_TCP_RMEM_MAX: u64 = 32 << 20;
pub const LINUX_TCP_WMEM_MAX: u64 = 4 << 20;

/// The buffer size that stands for "not set" (1 GiB: never the limit).
pub const UNSET_BUFFER: u64 = 1 << 30;

fn one_millisecond() -> Time {
    crate::engine::time::MILLISECOND
}

impl Default for TcpConfig {
    fn default() -> Self {
        use crate::engine::time::{MILLISECOND, SECOND};
        Self {
            mss: 1460,
            header_bytes: 40,
            initial_window: 3,
            initial_ssthresh: None,
            cc: "reno".into(),
            cc_params: BTreeMap::new(),
            recovery: Recovery::Sack,
            rcvbuf: UNSET_BUFFER,
            sndbuf: UNSET_BUFFER,
            rto_min: SECOND,
            rto_max: 60 * SECOND,
            rto_initial: SECOND,
            clock_granularity: MILLISECOND,
            delayed_ack: true,
            delack_timeout: 200 * MILLISECOND,
            delack_count: 2,
            quick_acks: 0,
            sack_compression: 0,
            sack_compression_delay: one_millisecond(),
            abc_limit: 1,
            byte_counting: false,
            dupthresh: 3,
            limited_transmit: true,
            max_sack_blocks: 4,
            log_congestion: false,
            ecn: false,
            semantics: Semantics::Rfc,
            nodelay: false,
            rack: false,
            tlp: false,
            prr: false,
            ssthresh_from_cwnd: false,
            timer_tick: 0,
            linux_rto: false,
            dsack: false,
            linux_buffers: false,
            scaling_ratio: veth_scaling_ratio(),
        }
    }
}

impl TcpConfig {
    /// Payload bytes the receive buffer holds, and so the largest window
    /// it advertises. `rcvbuf` itself, or with `linux_buffers`: SO_RCVBUF
    /// doubled (sk_setsockopt, capped at 2 × rmem_max) times the scaling
    /// ratio (tcp_win_from_space: Linux 6.6+ counts the buffer in memory,
    /// a segment costing its truesize); unset, the ceiling autotuning grows
    /// it to (tcp_rcv_space_adjust: at least twice what the reader took in
    /// the last round trip, so a reader that keeps up is never held back
    /// below it), tcp_rmem[2] times the ratio.
    pub fn receive_buffer(&self) -> u64 {
        if !self.linux_buffers {
            return self.rcvbuf;
        }
        let memory = if self.rcvbuf >= UNSET_BUFFER {
            LINUX_TCP_RMEM_MAX
        } else {
            2 * self.rcvbuf.min(LINUX_RMEM_MAX)
        };
        ((memory as f64 * self.scaling_ratio) as u64).max(self.mss as u64)
    }

    /// Payload bytes the send buffer holds (unacknowledged + unsent).
    /// `sndbuf` itself, or with `linux_buffers`: SO_SNDBUF doubled (capped at
    /// 2 × wmem_max); unset, the ceiling autotuning grows it to
    /// (tcp_sndbuf_expand: 2 or 3 × the window's segments at 2304 B of
    /// memory each, so it never holds back a sender below it),
    /// tcp_wmem[2]. (A bulk writer's 64 KB TSO packets are ~99 % payload:
    /// the memory is counted as payload.)
    pub fn send_buffer(&self) -> u64 {
        if !self.linux_buffers {
            return self.sndbuf;
        }
        if self.sndbuf >= UNSET_BUFFER {
            LINUX_TCP_WMEM_MAX
        } else {
            2 * self.sndbuf.min(LINUX_WMEM_MAX)
        }
    }

    /// Settings for this connection's controller.
    pub fn controller_config(&self) -> CcConfig {
        let mss = self.mss as u64;
        CcConfig {
            mss,
            initial_window: self.initial_window as u64 * mss,
            initial_ssthresh: self.initial_ssthresh.unwrap_or(u64::MAX),
            abc_limit: self.abc_limit as u64,
            byte_counting: self.byte_counting,
            seed: 0,
        }
    }

    /// Every rule a TCP configuration must meet, in one place: the Python
    /// layer calls this too (through `check_tcp_json`), so a mistake gets the
    /// same message whichever side finds it. `field` prefixes the names
    /// (e.g. "tcp." or "flow 'bulk'.").
    pub fn validate(&self, field: &str) -> Result<(), SimError> {
        self.validate_settings(field)?;
        crate::cc::check(field, &self.cc, &self.cc_params).map(|_| ())
    }

    /// Every rule but the controller's (the emu backend runs the kernel's
    /// controllers, which the simulator need not have).
    pub fn validate_settings(&self, field: &str) -> Result<(), SimError> {
        let bad = |k: &str, why: String| Err(SimError::invalid(format!("{field}{k}"), why));
        if self.mss == 0 || self.mss > 65495 {
            return bad("mss", format!("{} B is not allowed (1 to 65495 B)", self.mss));
        }
        if self.header_bytes < 40 || self.header_bytes > 120 {
            return bad(
                "header_bytes",
                format!(
                    "{} is not allowed (40 to 120; IPv4 20 + TCP 20 at least)",
                    self.header_bytes
                ),
            );
        }
        if self.mss as u64 + self.header_bytes as u64 > 65535 {
            return bad(
                "mss",
                format!(
                    "{} B + {} B of headers do not fit in an IPv4 packet (at most 65535 B)",
                    self.mss, self.header_bytes
                ),
            );
        }
        if self.initial_window == 0 {
            return bad("initial_window", "must be at least 1 segment".into());
        }
        for (k, v) in [
            ("dupthresh", self.dupthresh),
            ("delack_count", self.delack_count),
            ("abc_limit", self.abc_limit),
        ] {
            if v == 0 {
                return bad(k, "must be at least 1".into());
            }
        }
        if !(1..=4).contains(&self.max_sack_blocks) {
            return bad(
                "max_sack_blocks",
                format!("{} is not allowed (1 to 4)", self.max_sack_blocks),
            );
        }
        for (k, buf) in [("rcvbuf", self.rcvbuf), ("sndbuf", self.sndbuf)] {
            if buf > u32::MAX as u64 {
                return bad(k, format!("{buf} B (from window or {k}) is too large (allowed: up to 4 GiB − 1; TCP's window scaling reaches 1 GiB)"));
            }
            if buf < self.mss as u64 {
                return bad(k, format!(
                    "{buf} B (from window or {k}) is smaller than one segment (mss {} B); a sender could never send: allowed is at least the mss",
                    self.mss
                ));
            }
        }
        for (k, t) in [
            ("rto_min", self.rto_min),
            ("rto_max", self.rto_max),
            ("rto_initial", self.rto_initial),
            ("delack_timeout", self.delack_timeout),
            ("sack_compression_delay", self.sack_compression_delay),
            ("clock_granularity", self.clock_granularity),
            ("timer_tick", self.timer_tick),
        ] {
            crate::sim::check_time(&format!("{field}{k}"), t)?;
        }
        for (k, t) in [("rto_min", self.rto_min), ("rto_initial", self.rto_initial)] {
            if t == 0 {
                return bad(k, "must be longer than zero (e.g. \"200ms\", \"1s\")".into());
            }
        }
        if self.rto_initial > self.rto_max {
            return bad(
                "rto_initial",
                format!(
                    "{} s is larger than rto_max ({} s)",
                    secs(self.rto_initial),
                    secs(self.rto_max)
                ),
            );
        }
        if self.rto_min > self.rto_max {
            return bad(
                "rto_min",
                format!(
                    "{} s is larger than rto_max ({} s)",
                    secs(self.rto_min),
                    secs(self.rto_max)
                ),
            );
        }
        if self.rack && self.recovery != Recovery::Sack {
            return bad(
                "rack",
                "RACK works from SACK information and needs recovery = \"sack\" (allowed: rack = false with any recovery)".into(),
            );
        }
        if self.prr && self.recovery != Recovery::Sack {
            return bad(
                "prr",
                "PRR paces SACK-based recovery and needs recovery = \"sack\" (allowed: prr = false with any recovery)"
                    .into(),
            );
        }
        if self.dsack && self.recovery != Recovery::Sack {
            return bad(
                "dsack",
                "D-SACK is a SACK block and needs recovery = \"sack\" (allowed: dsack = false with any recovery)"
                    .into(),
            );
        }
        if !(self.scaling_ratio > 0.0 && self.scaling_ratio <= 1.0) {
            return bad(
                "scaling_ratio",
                format!(
                    "{} is not allowed (a share of the buffer: above 0, at most 1; Linux's is 0.5 to 0.95)",
                    self.scaling_ratio
                ),
            );
        }
        if self.tlp && !self.rack {
            return bad(
                "tlp",
                "tail loss probes are part of RACK-TLP and need rack = true (allowed: tlp = false, or rack = true and tlp = true)".into(),
            );
        }
        if self.semantics == Semantics::Ns2 && self.recovery != Recovery::Tahoe {
            return bad("semantics", format!(
                "\"ns2\" follows ns-2's Agent/TCP, which is Tahoe, and needs recovery = \"tahoe\" (got recovery = \"{}\"); allowed: semantics = \"rfc\" with any recovery",
                serde_json::to_value(self.recovery).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
            ));
        }
        Ok(())
    }
}

impl crate::transport::StreamSender for TcpSender {
    fn kind(&self) -> &'static str {
        "tcp"
    }
    fn write_all(&mut self, now: Time, bytes: Option<u64>, out: &mut Outbox) {
        TcpSender::write_all(self, now, bytes, out)
    }
    fn close(&mut self, now: Time, out: &mut Outbox) {
        TcpSender::close(self, now, out)
    }
    fn stop(&mut self) {
        TcpSender::stop(self)
    }
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        if let Body::Tcp(seg) = &rx.packet.body {
            self.on_segment(now, seg, out);
        }
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        TcpSender::on_timer(self, now, out)
    }
    fn poll_at(&self) -> Option<Time> {
        TcpSender::poll_at(self)
    }
    fn snapshot(&mut self, now: Time, _scope: Scope) -> Snapshot {
        Snapshot {
            counters: self.stats_at(now),
            sender: Some(self.state()),
        }
    }
    fn report(&self) -> Report {
        Report {
            congestion_control: Some(self.controller_name()),
            completed_at: self.completed_at(),
            congestion_log: self.congestion_log().to_vec(),
        }
    }
}

impl crate::transport::StreamReceiver for TcpReceiver {
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        if let Body::Tcp(seg) = &rx.packet.body {
            self.on_segment(now, seg, rx.packet.size, rx.packet.ecn == ecn::CE, out);
        }
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        TcpReceiver::on_timer(self, now, out)
    }
    fn poll_at(&self) -> Option<Time> {
        TcpReceiver::poll_at(self)
    }
    fn set_reader_waiting(&mut self, waiting: bool) {
        TcpReceiver::set_reader_waiting(self, waiting)
    }
    fn readable(&self) -> u64 {
        TcpReceiver::readable(self)
    }
    fn read(&mut self, max: u64, out: &mut Outbox) -> u64 {
        TcpReceiver::read(self, max, out)
    }
    fn snapshot(&mut self, _now: Time, _scope: Scope) -> Snapshot {
        Snapshot {
            counters: (*self.stats()).into(),
            sender: None,
        }
    }
}

/// Seconds, shortest form (for messages): 0.2, 1, 60.
fn secs(t: Time) -> f64 {
    t as f64 / 1e9
}

#[cfg(test)]
mod back_to_back;
#[cfg(test)]
mod dsack_tests;
#[cfg(test)]
mod rack_tests;
#[cfg(test)]
mod tests;
