//! The receiving end of a TCP connection (sans-IO): cumulative ACKs, SACK
//! blocks (RFC 2018), delayed ACKs, and a receive buffer that fills until the
//! application reads it. The advertised window is the buffer's free space;
//! reading reopens it, and a window update goes out when it has opened
//! enough (receiver SWS avoidance, RFC 9293 §3.8.6.2.2 / RFC 1122 §4.2.3.3).

use super::{RangeSet, Recovery, TcpConfig};
use crate::endpoint::{Outbox, Transmit};
use crate::engine::time::{deadline, earliest};
use crate::engine::Time;
use crate::net::packet::{tcp_flags, Body, SackBlocks, TcpSegment};
use crate::trace::counters::ReceiveCounters;
use std::sync::Arc;

/// An idle gap after which Linux's receiver ACKs quickly again: longer than
/// the receiver's RTO, which Linux sets from the handshake's RTT (m + max(2m,
/// 200 ms)); with no handshake modelled, the RTO before any sample (1 s).
const IDLE_QUICKACK: Time = crate::engine::time::SECOND;

pub struct TcpReceiver {
    /// The connection's settings, shared with every connection that has the
    /// same (thousands of flows in a datacenter run).
    cfg: Arc<TcpConfig>,
    /// Next in-order byte expected.
    rcv_nxt: u64,
    /// Next byte the application will read: [read, rcv_nxt) waits in the buffer.
    read: u64,
    /// The application waits in read() (an iperf server): in-order data is
    /// read the moment it arrives, before the ACK is built.
    reader_waiting: bool,
    /// A waiting reader takes at most this many bytes on arrival (a relay
    /// with that much room left); the rest waits in the buffer.
    arrival_budget: u64,
    /// Out-of-order data held above rcv_nxt.
    out_of_order: RangeSet,
    /// Payload bytes the buffer holds (`TcpConfig::receive_buffer`).
    rcvbuf: u64,
    /// Right edge of the last advertised window; never moves left (RFC 9293
    /// discourages shrinking), so the window stays fixed while a hole blocks
    /// rcv_nxt — the head-of-line blocking multipath transports suffer.
    right_edge: u64,
    /// In-order segments received since the last ACK.
    unacked_segments: u32,
    delack_deadline: Option<Time>,
    /// Quick-ACK mode: ACKs still to send at once, the most per episode, and
    /// when in-order data last arrived (an idle gap starts an episode).
    quick_acks_left: u32,
    quick_acks: u32,
    last_data_at: Option<Time>,
    /// SACK compression (Linux's tcp_comp_sack_*, `cfg.sack_compression`
    /// ACKs at most, for at most `cfg.sack_compression_delay`): ACKs held
    /// back since the last one sent; duplicate ACKs already sent at once
    /// for the hole at `compressed_for` (the first three always go, as
    /// dupthresh needs); when the held-back ACK goes.
    compressed: u32,
    dupacks_sent: u32,
    compressed_for: u64,
    compressed_deadline: Option<Time>,
    /// The earlier of the two deadlines, `Time::MAX` with neither: what
    /// `next_timer` answers with one load (an MPTCP connection asks each of
    /// its subflows after every packet).
    timer: Time,
    /// A CE mark arrived: set ECE on every ACK until the sender's CWR (RFC 3168 §6.1.3).
    echo_ce: bool,
    /// A duplicate to report in the next ACK's first SACK block (D-SACK,
    /// RFC 2883; `cfg.dsack`), once.
    dsack: Option<(u64, u64)>,
    /// Starts of recently received out-of-order segments, newest first: the
    /// first SACK block covers the newest, then the most recently reported.
    recent: Vec<u64>,
    stats: ReceiveCounters,
}

impl TcpReceiver {
    pub fn new(cfg: impl Into<Arc<TcpConfig>>) -> Self {
        let cfg = cfg.into();
        let rcvbuf = cfg.receive_buffer();
        Self {
            rcv_nxt: 0,
            read: 0,
            reader_waiting: false,
            arrival_budget: u64::MAX,
            out_of_order: RangeSet::default(),
            rcvbuf,
            right_edge: rcvbuf,
            unacked_segments: 0,
            delack_deadline: None,
            quick_acks_left: 0,
            quick_acks: cfg.quick_acks.min((rcvbuf / (2 * cfg.mss.max(1) as u64)).max(2) as u32),
            last_data_at: None,
            compressed: 0,
            dupacks_sent: 0,
            compressed_for: 0,
            compressed_deadline: None,
            timer: Time::MAX,
            echo_ce: false,
            dsack: None,
            recent: Vec::new(), // allocated at the first out-of-order segment
            stats: ReceiveCounters::default(),
            cfg,
        }
    }

    fn sack(&self) -> bool {
        self.cfg.recovery == Recovery::Sack
    }
    fn mss(&self) -> u64 {
        self.cfg.mss as u64
    }
    /// The most ACKs a compressed one stands for (0: off; only with SACK).
    fn sack_compression(&self) -> u32 {
        if self.sack() {
            self.cfg.sack_compression
        } else {
            0
        }
    }

    /// Whether the application waits in read(), taking in-order data as it
    /// arrives (then the buffer only ever holds out-of-order data).
    pub fn set_reader_waiting(&mut self, waiting: bool) {
        self.reader_waiting = waiting;
    }

    /// A waiting reader takes at most `bytes` on arrival (before the ACK is
    /// built, so the window it advertises counts the read), until set again.
    pub fn set_arrival_budget(&mut self, bytes: u64) {
        self.arrival_budget = bytes;
    }

    pub fn stats(&self) -> &ReceiveCounters {
        &self.stats
    }
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// In-order bytes waiting for the application.
    pub fn readable(&self) -> u64 {
        self.rcv_nxt - self.read
    }
    /// Bytes held in the buffer: unread in-order data and out-of-order data.
    pub fn buffered(&self) -> u64 {
        self.readable() + self.held()
    }
    /// Out-of-order bytes held above rcv_nxt.
    fn held(&self) -> u64 {
        self.out_of_order.bytes()
    }
    /// The window the last ACK advertised, from rcv_nxt.
    pub fn advertised(&self) -> u64 {
        self.right_edge - self.rcv_nxt
    }
    pub fn poll_at(&self) -> Option<Time> {
        deadline(self.next_timer())
    }
    /// `poll_at` with `Time::MAX` for none: cheaper to take the earliest of.
    #[inline]
    pub fn next_timer(&self) -> Time {
        debug_assert_eq!(
            self.timer,
            earliest(self.delack_deadline, self.compressed_deadline).unwrap_or(Time::MAX)
        );
        self.timer
    }

    /// The application reads up to `max` bytes; returns how many. If that
    /// reopens the window enough, a window update goes out.
    pub fn read(&mut self, max: u64, out: &mut Outbox) -> u64 {
        let n = max.min(self.readable());
        if n == 0 {
            return 0;
        }
        self.read += n;
        self.stats.read_bytes += n;
        // Announce the reopened window when it has grown by the SWS
        // threshold and at least doubled (after Linux's __tcp_cleanup_rbuf):
        // a closed window always reopens with an update, a wide one does not
        // cost an ACK per read.
        let was = self.advertised();
        let could = self.window_edge() - self.rcv_nxt;
        if could >= was + self.sws_threshold() && could >= 2 * was {
            self.stats.window_updates += 1;
            self.send_ack(out);
        }
        n
    }

    /// Send a window update now (a connection above this subflow, whose
    /// window the ACKs carry, reopened it).
    pub fn send_window_update(&mut self, out: &mut Outbox) {
        self.stats.window_updates += 1;
        self.send_ack(out);
    }

    /// A data segment arrived; `wire_size` is its size on the wire and `ce`
    /// whether a router marked it Congestion Experienced.
    pub fn on_segment(&mut self, now: Time, seg: &TcpSegment, wire_size: u32, ce: bool, out: &mut Outbox) {
        if seg.flags & tcp_flags::CWR != 0 {
            self.echo_ce = false;
        }
        if ce {
            self.echo_ce = true;
        }
        if seg.len == 0 {
            // A zero-window probe (below the window) is answered with the
            // current window; any other segment without data is not
            // (RFC 9293 §3.10.7.4: ACK what cannot be accepted).
            if seg.seq < self.rcv_nxt {
                self.send_ack(out);
            }
            return;
        }
        self.stats.packets_received += 1;
        self.stats.wire_bytes_received += wire_size as u64;
        // (a D-SACK not yet sent is dropped by the next data segment, as
        // Linux's tcp_data_queue: it reports the latest duplicate only)
        self.dsack = None;
        // Never hold more than the buffer: bytes beyond the advertised right
        // edge are not accepted (our senders respect the window, so this
        // only trims what a shrunken window would have refused).
        let end = (seg.seq + seg.len as u64).min(self.right_edge.max(self.rcv_nxt));
        if end <= self.rcv_nxt {
            // Duplicate: ACK at once so the sender learns where we are
            // (Linux's tcp_send_dupack: with D-SACK, reporting it, and
            // quick-ACKing again, the sender having perhaps missed our ACKs).
            self.stats.duplicate_packets += 1;
            if self.cfg.dsack {
                self.report_duplicate(seg.seq, (seg.seq + seg.len as u64).min(self.rcv_nxt));
                self.quick_acks_left = self.quick_acks;
            }
            return self.send_ack(out);
        }
        if end <= seg.seq {
            // Entirely beyond the window: refused; the ACK restates the window.
            return self.send_ack(out);
        }
        let had_hole = !self.out_of_order.is_empty();
        if seg.seq <= self.rcv_nxt {
            let old = self.rcv_nxt;
            if seg.seq < old && self.cfg.dsack {
                self.report_duplicate(seg.seq, old); // its front was here already
            }
            self.rcv_nxt = end;
            // Pull in out-of-order data that is now contiguous.
            while let Some(&(s, e)) = self.out_of_order.first() {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.out_of_order.prune_below(self.rcv_nxt);
            }
            self.stats.delivered_bytes += self.rcv_nxt - old;
            if self.reader_waiting {
                let n = (self.rcv_nxt - self.read).min(self.arrival_budget);
                self.arrival_budget -= n;
                self.stats.read_bytes += n;
                self.read += n;
            }
            // Linux enters quick-ACK mode at the first data and after an idle
            // gap (`IDLE_QUICKACK`)
            if self.last_data_at.is_none_or(|t| now.saturating_sub(t) > IDLE_QUICKACK) {
                self.quick_acks_left = self.quick_acks;
            }
            self.last_data_at = Some(now);
            if had_hole || !self.cfg.delayed_ack || self.quick_acks_left > 0 {
                // Filling (part of) a hole is ACKed immediately (RFC 5681 §4.2).
                return self.send_ack(out);
            }
            self.unacked_segments += 1;
            if self.unacked_segments >= self.cfg.delack_count.max(1) {
                self.send_ack(out);
            } else if self.delack_deadline.is_none() {
                let at = now + self.cfg.delack_timeout;
                self.delack_deadline = Some(at);
                self.timer = self.timer.min(at);
            }
        } else {
            // Out of order: hold it and ACK immediately (RFC 5681 §4.2).
            self.stats.out_of_order_packets += 1;
            if self.out_of_order.add(seg.seq, end) == 0 {
                self.stats.duplicate_packets += 1; // held already
                if self.cfg.dsack {
                    self.report_duplicate(seg.seq, end);
                }
            }
            self.recent.retain(|&s| s != seg.seq);
            self.recent.insert(0, seg.seq);
            self.recent.truncate(8);
            if !self.hold_sack(now) {
                self.send_ack(out);
            }
        }
    }

    /// Whether the ACK for an out-of-order segment waits, compressed with
    /// the next ones (Linux's __tcp_ack_snd_check): not in quick-ACK mode,
    /// not among the first three duplicate ACKs for this hole, and only
    /// until `sack_compression` are held or the delay has passed.
    fn hold_sack(&mut self, now: Time) -> bool {
        let most = self.sack_compression();
        if most == 0 || self.quick_acks_left > 0 || self.compressed >= most {
            return false;
        }
        if self.compressed_for != self.rcv_nxt {
            self.compressed_for = self.rcv_nxt;
            self.dupacks_sent = 0;
        }
        if self.dupacks_sent < 3 {
            self.dupacks_sent += 1;
            return false;
        }
        self.compressed += 1;
        let at = *self
            .compressed_deadline
            .get_or_insert(now + self.cfg.sack_compression_delay);
        self.timer = self.timer.min(at);
        true
    }

    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        let due = |d: Option<Time>| d.is_some_and(|d| now >= d);
        if due(self.delack_deadline) || due(self.compressed_deadline) {
            self.send_ack(out);
        }
    }

    /// Receiver SWS avoidance: the right edge moves only in steps of at
    /// least min(RcvBuf / 2, MSS).
    fn sws_threshold(&self) -> u64 {
        (self.rcvbuf / 2).min(self.mss())
    }

    /// The right edge the buffer's free space allows now.
    fn window_edge(&self) -> u64 {
        let edge = self.read + self.rcvbuf.saturating_sub(self.held());
        if edge >= self.right_edge + self.sws_threshold() {
            edge
        } else {
            self.right_edge
        }
    }

    fn advertised_window(&mut self) -> u32 {
        self.right_edge = self.window_edge();
        (self.right_edge.saturating_sub(self.rcv_nxt)).min(u32::MAX as u64) as u32
    }

    /// Report [start, end) as received twice in the next ACK (the latest
    /// duplicate wins, as Linux's tcp_dsack_set).
    fn report_duplicate(&mut self, start: u64, end: u64) {
        if start < end {
            self.dsack = Some((start, end));
        }
    }

    fn sack_blocks(&mut self) -> SackBlocks {
        let mut blocks = SackBlocks::default();
        // RFC 2883 §4: the D-SACK block first, then the usual blocks, which
        // start with the one holding the newest segment (for a duplicate of
        // held data: the block it lies in)
        if let Some(d) = self.dsack.take() {
            blocks.push_first(self.rcv_nxt, d);
        }
        if !self.sack() || self.out_of_order.is_empty() {
            return blocks;
        }
        let limit = (self.cfg.max_sack_blocks as usize).min(crate::net::packet::MAX_SACK_BLOCKS);
        let ranges = self.out_of_order.ranges();
        let containing = |seq: u64| {
            let i = ranges.partition_point(|r| r.1 <= seq);
            ranges.get(i).copied().filter(|&(s, _)| s <= seq)
        };
        // (a D-SACK block may equal a usual one: both are sent)
        let d_sack_blocks = blocks.len();
        // Newest first, then the most recently reported, then the rest from the top.
        let recent = self.recent.iter().filter_map(|&s| containing(s));
        for block in recent.chain(ranges.iter().rev().copied()) {
            if blocks.len() >= limit {
                break;
            }
            if !blocks.iter(self.rcv_nxt).skip(d_sack_blocks).any(|b| b == block) {
                blocks.push(self.rcv_nxt, block);
            }
        }
        let rcv_nxt = self.rcv_nxt;
        self.recent.retain(|&s| s >= rcv_nxt);
        blocks
    }

    fn send_ack(&mut self, out: &mut Outbox) {
        self.quick_acks_left = self.quick_acks_left.saturating_sub(1);
        self.unacked_segments = 0;
        self.delack_deadline = None;
        self.compressed = 0;
        self.compressed_deadline = None;
        self.timer = Time::MAX;
        self.stats.acks_sent += 1;
        let sack = self.sack_blocks();
        let flags = tcp_flags::ACK | if self.echo_ce { tcp_flags::ECE } else { 0 };
        let seg = TcpSegment {
            seq: 0,
            len: 0,
            ack: self.rcv_nxt,
            wnd: self.advertised_window(),
            flags,
            sack,
            ..Default::default()
        };
        out.push(Transmit::new(
            Body::Tcp(seg),
            self.cfg.header_bytes + sack.option_bytes(),
            false,
        ));
    }
}
