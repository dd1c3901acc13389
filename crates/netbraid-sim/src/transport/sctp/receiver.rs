//! The receiving end of an SCTP association: which TSNs arrived, the
//! receive buffer and a_rwnd, and when a SACK goes (RFC 9260 §6.2, §6.7;
//! CMT's DAC).

use super::{inline_chunk, send_chunks, send_sack, Fifo, Incoming, SctpConfig, IP_HEADER};
use crate::endpoint::{Outbox, Received, Scope, Snapshot};
use crate::engine::Time;
use crate::net::ext::{SctpChunk, SCTP_COMMON_HEADER};
use crate::net::packet::{SctpInline, SCTP_INLINE_GAPS};
use crate::trace::counters::TransportCounters;
use crate::transport::tcp::RangeSet;
use crate::transport::StreamReceiver;

pub struct SctpReceiver {
    cfg: SctpConfig,
    /// Highest TSN received in order (the cumulative TSN ack point).
    cum: u32,
    /// Lengths of the chunks held above `cum` (index 0: TSN cum + 1; 0: not here).
    held: Fifo<u32>,
    /// TSNs held above `cum`, as ranges [first, last + 1).
    gaps: RangeSet,
    highest: u32,
    /// Bytes held out of order, and chunks.
    held_bytes: u64,
    held_chunks: u64,
    /// In-order bytes the application has not read.
    readable: u64,
    reader_waiting: bool,
    /// Packets with data since the last SACK, and duplicate TSNs to report.
    packets_since_sack: u32,
    duplicates: Vec<u32>,
    sack_deadline: Option<Time>,
    /// A chunk of this packet was refused for want of room: SACK at once (§6.2).
    refused: bool,
    /// The path the latest DATA arrived on: SACKs go back that way.
    reply_path: u8,
    /// Per path, what arrived on it (read_bytes: its first arrivals).
    stats: Vec<TransportCounters>,
    /// Whole-association counters.
    total: TransportCounters,
}

impl SctpReceiver {
    pub fn new(cfg: &SctpConfig, paths: usize) -> Self {
        Self {
            cfg: cfg.clone(),
            cum: 0,
            held: Fifo::default(),
            gaps: RangeSet::default(),
            highest: 0,
            held_bytes: 0,
            held_chunks: 0,
            readable: 0,
            reader_waiting: false,
            packets_since_sack: 0,
            duplicates: Vec::new(),
            sack_deadline: None,
            refused: false,
            reply_path: 0,
            stats: vec![TransportCounters::default(); paths.max(1)],
            total: TransportCounters::default(),
        }
    }

    /// The receive window: the buffer less what it holds (FreeBSD also
    /// charges an overhead per chunk held).
    pub fn a_rwnd(&self) -> u64 {
        let used = self.readable + self.held_bytes + self.held_chunks * self.cfg.receiver_chunk_overhead as u64;
        self.cfg.rcvbuf.saturating_sub(used)
    }

    /// CMT's DAC applies: SACKs stay delayed while gaps exist.
    fn delays_despite_gaps(&self) -> bool {
        self.cfg.cmt && self.cfg.dac
    }

    /// Accept DATA chunk `tsn`; false for a duplicate or one refused for
    /// want of room.
    fn accept(&mut self, tsn: u32, len: u32, path: usize) -> bool {
        if tsn <= self.cum || self.gaps.is_sacked(tsn as u64) {
            self.duplicates.push(tsn);
            self.stats[path].duplicate_packets += 1;
            self.total.duplicate_packets += 1;
            return false;
        }
        // §6.2: without room, drop chunks above the highest received; one
        // that fills a hole below it is taken.
        if self.a_rwnd() < len as u64 && tsn > self.highest {
            self.refused = true;
            return false;
        }
        self.stats[path].read_bytes += len as u64;
        self.highest = self.highest.max(tsn);
        if tsn == self.cum + 1 {
            self.cum = tsn;
            let mut delivered = len as u64;
            self.held.pop_front();
            while let Some(&l) = self.held.front() {
                if l == 0 {
                    break;
                }
                self.held.pop_front();
                self.cum += 1;
                delivered += l as u64;
                self.held_bytes -= l as u64;
                self.held_chunks -= 1;
            }
            self.gaps.prune_below(self.cum as u64 + 1);
            self.readable += delivered;
            self.total.delivered_bytes += delivered;
        } else {
            let i = (tsn - self.cum - 1) as usize;
            if self.held.len() <= i {
                self.held.resize(i + 1, 0);
            }
            self.held[i] = len;
            self.held_bytes += len as u64;
            self.held_chunks += 1;
            self.gaps.add(tsn as u64, tsn as u64 + 1);
            self.stats[path].out_of_order_packets += 1;
            self.total.out_of_order_packets += 1;
        }
        true
    }

    /// A packet with DATA arrives: its counts, and what the SACK decision
    /// needs from before its chunks are taken (gaps, duplicates so far).
    fn begin_data(&mut self, path: usize, size: u32) -> (bool, usize) {
        for s in [&mut self.stats[path], &mut self.total] {
            s.packets_received += 1;
            s.wire_bytes_received += size as u64;
        }
        (!self.gaps.is_empty(), self.duplicates.len())
    }

    /// Its chunks were taken: read, and SACK now or later.
    fn end_data(&mut self, now: Time, path: usize, (had_gaps, dups_before): (bool, usize), out: &mut Outbox) {
        if self.reader_waiting {
            self.read(u64::MAX, out);
        }
        self.reply_path = path as u8;
        self.packets_since_sack += 1;
        let gaps_now = !self.gaps.is_empty();
        // §6.7: at once on a duplicate, or while (or just as) a gap exists —
        // unless DAC keeps the SACK delayed; else every sack_freq-th packet
        // or after sack_delay.
        let immediate = std::mem::take(&mut self.refused)
            || self.duplicates.len() > dups_before
            || (!self.delays_despite_gaps() && (gaps_now || had_gaps))
            || self.packets_since_sack >= self.cfg.sack_freq;
        if immediate {
            self.send_sack(out);
        } else if self.sack_deadline.is_none() {
            self.sack_deadline = Some(now + self.cfg.sack_delay);
        }
    }

    /// The gap-ack blocks to report, as offsets from the cumulative TSN
    /// (inclusive; those beyond 16-bit offsets cannot be said).
    fn gap_blocks(&self) -> impl Iterator<Item = (u16, u16)> + '_ {
        let base = self.cum as u64;
        self.gaps
            .ranges()
            .iter()
            .filter(move |&&(_, e)| e - 1 - base <= u16::MAX as u64)
            .map(move |&(s, e)| ((s - base) as u16, (e - 1 - base) as u16))
    }

    fn send_sack(&mut self, out: &mut Outbox) {
        let a_rwnd = self.a_rwnd().min(u32::MAX as u64) as u32;
        let dac_packets = self.packets_since_sack.clamp(1, 2) as u8;
        self.packets_since_sack = 0;
        self.sack_deadline = None;
        let path = self.reply_path as usize;
        self.stats[path].acks_sent += 1;
        self.total.acks_sent += 1;
        // Gap blocks and duplicates while they fit in one packet.
        let room = (self.cfg.mtu - IP_HEADER - SCTP_COMMON_HEADER - 16) / 4;
        if self.duplicates.is_empty() && self.gaps.ranges().len() <= SCTP_INLINE_GAPS.min(room as usize) {
            // the common SACK: few blocks, in the packet body
            let mut gaps = [(0, 0); SCTP_INLINE_GAPS];
            let mut k = 0;
            for block in self.gap_blocks() {
                gaps[k] = block;
                k += 1;
            }
            send_sack(self.reply_path, self.cum, a_rwnd, &gaps[..k], dac_packets, out);
            return;
        }
        let dups: Vec<u32> = self.duplicates.drain(..).take(room as usize / 2).collect();
        let gaps: Vec<(u16, u16)> = self.gap_blocks().take(room as usize - dups.len()).collect();
        let sack = SctpChunk::Sack {
            cum_tsn: self.cum,
            a_rwnd,
            gaps,
            duplicates: dups,
            dac_packets,
        };
        send_chunks(self.reply_path, smallvec::smallvec![sack], out);
    }
}

impl StreamReceiver for SctpReceiver {
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        let path = (rx.packet.path as usize).min(self.stats.len() - 1);
        let size = rx.packet.size;
        // the common packet, one DATA chunk, needs no chunk list
        if let Some(SctpInline::Data { tsn, len }) = inline_chunk(&rx) {
            let before = self.begin_data(path, size);
            self.accept(tsn, len, path);
            self.end_data(now, path, before, out);
            return;
        }
        let Some(incoming) = Incoming::new(rx) else { return };
        let chunks = incoming.chunks();
        let data = chunks.iter().any(|c| matches!(c, SctpChunk::Data { .. }));
        let before = data.then(|| self.begin_data(path, size));
        for c in chunks {
            match *c {
                SctpChunk::Data { tsn, len } => {
                    self.accept(tsn, len, path);
                }
                SctpChunk::Heartbeat { dest, sent_at } => {
                    send_chunks(
                        path as u8,
                        smallvec::smallvec![SctpChunk::HeartbeatAck { dest, sent_at }],
                        out,
                    );
                }
                SctpChunk::Sack { .. } | SctpChunk::HeartbeatAck { .. } => {}
            }
        }
        if let Some(before) = before {
            self.end_data(now, path, before, out);
        }
    }

    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        if self.sack_deadline.is_some_and(|t| t <= now) {
            self.send_sack(out);
        }
    }

    fn poll_at(&self) -> Option<Time> {
        self.sack_deadline
    }

    fn set_reader_waiting(&mut self, waiting: bool) {
        self.reader_waiting = waiting;
    }

    fn readable(&self) -> u64 {
        self.readable
    }

    fn read(&mut self, max: u64, _out: &mut Outbox) -> u64 {
        let n = max.min(self.readable);
        self.readable -= n;
        self.total.read_bytes += n;
        n
    }

    fn path_count(&self) -> usize {
        self.stats.len()
    }

    fn snapshot(&mut self, _now: Time, scope: Scope) -> Snapshot {
        let counters = match scope {
            Scope::Path(i) => self.stats[i],
            Scope::All => self.total,
        };
        Snapshot { counters, sender: None }
    }
}
