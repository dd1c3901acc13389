//! The receiving end of a TCP connection (sans-IO): cumulative ACKs, SACK
//! blocks (RFC 2018), delayed ACKs, and a receive window from the socket
//! buffer. The application reads in-order data as soon as it arrives.

use super::{RangeSet, Recovery, TcpConfig};
use crate::engine::Time;
use crate::net::packet::{tcp_flags, Body, SackBlocks, TcpSegment};
use crate::transport::Transmit;

crate::counters! {
    pub struct TcpReceiverStats {
        pub segments_received: u64,
        /// Bytes on the wire of every data segment that arrived (duplicates too).
        pub wire_bytes_received: u64,
        /// New in-order bytes handed to the application.
        pub goodput_bytes: u64,
        pub duplicate_segments: u64,
        pub out_of_order_segments: u64,
        pub acks_sent: u64,
    }
}


pub struct TcpReceiver {
    header_bytes: u32,
    rcvbuf: u64,
    sack: bool,
    delayed_ack: bool,
    delack_timeout: Time,
    delack_count: u32,
    max_sack_blocks: usize,
    /// Next in-order byte expected.
    rcv_nxt: u64,
    /// Out-of-order data held above rcv_nxt.
    out_of_order: RangeSet,
    /// Right edge of the last advertised window; never moves left (RFC 9293
    /// discourages shrinking), so the window stays fixed while a hole blocks
    /// rcv_nxt — the head-of-line blocking multipath transports suffer.
    right_edge: u64,
    /// In-order segments received since the last ACK.
    unacked_segments: u32,
    delack_deadline: Option<Time>,
    /// A CE mark arrived: set ECE on every ACK until the sender's CWR (RFC 3168 §6.1.3).
    echo_ce: bool,
    /// Starts of recently received out-of-order segments, newest first: the
    /// first SACK block covers the newest, then the most recently reported.
    recent: Vec<u64>,
    stats: TcpReceiverStats,
}

impl TcpReceiver {
    pub fn new(cfg: &TcpConfig) -> Self {
        Self {
            header_bytes: cfg.header_bytes,
            rcvbuf: cfg.rcvbuf,
            sack: cfg.recovery == Recovery::Sack,
            delayed_ack: cfg.delayed_ack,
            delack_timeout: cfg.delack_timeout,
            delack_count: cfg.delack_count.max(1),
            max_sack_blocks: cfg.max_sack_blocks as usize,
            rcv_nxt: 0,
            out_of_order: RangeSet::default(),
            right_edge: cfg.rcvbuf,
            unacked_segments: 0,
            delack_deadline: None,
            echo_ce: false,
            recent: Vec::with_capacity(8),
            stats: TcpReceiverStats::default(),
        }
    }

    pub fn stats(&self) -> &TcpReceiverStats {
        &self.stats
    }
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn poll_at(&self) -> Option<Time> {
        self.delack_deadline
    }

    /// A data segment arrived; `wire_size` is its size on the wire and `ce`
    /// whether a router marked it Congestion Experienced.
    pub fn on_segment(&mut self, now: Time, seg: &TcpSegment, wire_size: u32, ce: bool, out: &mut Vec<Transmit>) {
        if seg.flags & tcp_flags::CWR != 0 {
            self.echo_ce = false;
        }
        if ce {
            self.echo_ce = true;
        }
        self.stats.segments_received += 1;
        self.stats.wire_bytes_received += wire_size as u64;
        let end = seg.seq + seg.len as u64;
        if end <= self.rcv_nxt {
            // Duplicate: ACK at once so the sender learns where we are.
            self.stats.duplicate_segments += 1;
            return self.send_ack(out);
        }
        let had_hole = !self.out_of_order.is_empty();
        if seg.seq <= self.rcv_nxt {
            let old = self.rcv_nxt;
            self.rcv_nxt = end;
            // Pull in out-of-order data that is now contiguous.
            while let Some(&(s, e)) = self.out_of_order.ranges().first() {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.out_of_order.prune_below(self.rcv_nxt);
            }
            self.stats.goodput_bytes += self.rcv_nxt - old;
            if had_hole || !self.delayed_ack {
                // Filling (part of) a hole is ACKed immediately (RFC 5681 §4.2).
                return self.send_ack(out);
            }
            self.unacked_segments += 1;
            if self.unacked_segments >= self.delack_count {
                self.send_ack(out);
            } else if self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.delack_timeout);
            }
        } else {
            // Out of order: hold it and ACK immediately (RFC 5681 §4.2).
            self.stats.out_of_order_segments += 1;
            self.out_of_order.add(seg.seq, end);
            self.recent.retain(|&s| s != seg.seq);
            self.recent.insert(0, seg.seq);
            self.recent.truncate(8);
            self.send_ack(out);
        }
    }

    pub fn on_timer(&mut self, now: Time, out: &mut Vec<Transmit>) {
        if self.delack_deadline.is_some_and(|d| now >= d) {
            self.send_ack(out);
        }
    }

    fn advertised_window(&mut self) -> u32 {
        let held: u64 = self.out_of_order.ranges().iter().map(|(s, e)| e - s).sum();
        let edge = self.rcv_nxt + self.rcvbuf.saturating_sub(held);
        self.right_edge = self.right_edge.max(edge);
        (self.right_edge - self.rcv_nxt).min(u32::MAX as u64) as u32
    }

    fn sack_blocks(&mut self) -> SackBlocks {
        let mut blocks = SackBlocks::default();
        if !self.sack || self.out_of_order.is_empty() {
            return blocks;
        }
        let limit = self.max_sack_blocks.min(crate::net::packet::MAX_SACK_BLOCKS);
        let ranges = self.out_of_order.ranges();
        let containing = |seq: u64| ranges.iter().copied().find(|&(s, e)| s <= seq && seq < e);
        // Newest first, then the most recently reported, then the rest from the top.
        let recent = self.recent.iter().filter_map(|&s| containing(s));
        for block in recent.chain(ranges.iter().rev().copied()) {
            if blocks.n as usize >= limit {
                break;
            }
            if !blocks.as_slice().contains(&block) {
                blocks.push(block);
            }
        }
        let rcv_nxt = self.rcv_nxt;
        self.recent.retain(|&s| s >= rcv_nxt);
        blocks
    }

    fn send_ack(&mut self, out: &mut Vec<Transmit>) {
        self.unacked_segments = 0;
        self.delack_deadline = None;
        self.stats.acks_sent += 1;
        let sack = self.sack_blocks();
        let flags = tcp_flags::ACK | if self.echo_ce { tcp_flags::ECE } else { 0 };
        let seg = TcpSegment { seq: 0, len: 0, ack: self.rcv_nxt, wnd: self.advertised_window(), flags, sack };
        out.push(Transmit { body: Body::Tcp(seg), size: self.header_bytes + sack.option_bytes(), ect: false });
    }
}
