//! The receiving end of an MPTCP connection: subflow receivers whose
//! in-order data moves up to one connection-level buffer, reordered by
//! data sequence; DATA_ACK and the connection's window on every ACK.

use std::collections::{BTreeMap, VecDeque};

use crate::endpoint::{Outbox, Received, Scope, Snapshot, Transmit};
use crate::engine::time::deadline;
use crate::engine::Time;
use crate::net::ext::{Ext, MptcpHandshake};
use crate::net::packet::{ecn, tcp_flags, Body, Dss, TcpSegment};
use crate::trace::counters::{ReceiveCounters, TransportCounters};
use crate::transport::tcp::{RangeSet, TcpConfig, TcpReceiver};
use crate::transport::StreamReceiver;

/// A data segment's DSS mapping: subflow bytes [ssn, ssn + len) carry data
/// bytes [dsn, dsn + len).
#[derive(Clone, Copy)]
struct Mapping {
    ssn: u64,
    dsn: u64,
    len: u32,
}

struct RxSubflow {
    tcp: TcpReceiver,
    /// Mappings of data received on this subflow above its rcv_nxt (out of
    /// order at subflow level), (ssn, dsn, len) in order of ssn. They move to
    /// the connection when the subflow's holes fill, as Linux moves only
    /// in-sequence subflow data to the MPTCP socket. (A sorted deque, not a
    /// map: segments above a hole arrive mostly in order and leave from the
    /// front, so both ends are one step.)
    pending: VecDeque<(u64, u64, u64)>,
    /// Data bytes this subflow brought to the connection first (its goodput:
    /// a byte that arrives on two subflows counts once).
    credited: u64,
}

pub struct MptcpReceiver {
    subflows: Vec<RxSubflow>,
    /// Everything above the subflows, kept apart from them so that one
    /// subflow and the connection can be borrowed mutably at once.
    conn: Connection,
}

/// The connection level: the data-sequence space and the one receive buffer.
struct Connection {
    header_bytes: u32,
    /// The connection's receive buffer: the one window all subflows share.
    rcvbuf: u64,
    /// The receiver's SWS step, min(rcvbuf / 2, MSS) (`window_edge`).
    sws: u64,
    /// DATA_ACK: next data byte expected in order.
    data_ack: u64,
    /// Next data byte the application will read.
    read: u64,
    reader_waiting: bool,
    /// Data above DATA_ACK held at connection level.
    out_of_order: RangeSet,
    /// Bytes in `out_of_order`.
    out_of_order_bytes: u64,
    /// Some pending subflow mapping holds data the connection now has out of
    /// order (a copy came on another subflow): `purge_pending` is due.
    pending_obsolete: bool,
    /// Per data sequence number, the subflows holding it pending and whether
    /// it counts against the buffer: a byte pending on two subflows is held
    /// once, and once a copy has reached the connection the others are
    /// duplicates waiting to be dropped.
    copies: BTreeMap<u64, (u32, bool)>,
    /// Data bytes pending on subflows, each counted once.
    pending_held: u64,
    /// Right edge of the advertised window; never moves left.
    right_edge: u64,
    /// Most bytes ever held after a packet (connection buffer plus subflow
    /// out-of-order data): for the tests that check it never exceeds the
    /// buffer; nothing in results reads it, so runs do not keep it.
    #[cfg(test)]
    max_held: u64,
    /// Data bytes that arrived twice (a reinjection and the original).
    duplicate_bytes: u64,
    /// Connection-level counters (delivered and read bytes).
    stats: TransportCounters,
}

impl MptcpReceiver {
    pub fn new(cfg: &TcpConfig, paths: usize) -> Self {
        let mut sub_cfg = super::subflow_config(cfg);
        // Subflows keep only their own out-of-order data, which the
        // connection counts against its buffer; they are never the limit.
        sub_cfg.rcvbuf = u32::MAX as u64;
        sub_cfg.linux_buffers = false;
        let sub_cfg = std::sync::Arc::new(sub_cfg);
        let subflows = (0..paths)
            .map(|_| {
                let mut tcp = TcpReceiver::new(sub_cfg.clone());
                tcp.set_reader_waiting(true);
                RxSubflow {
                    tcp,
                    pending: VecDeque::new(),
                    credited: 0,
                }
            })
            .collect();
        let conn = Connection {
            header_bytes: cfg.header_bytes,
            rcvbuf: cfg.receive_buffer(),
            sws: (cfg.receive_buffer() / 2).min(sub_cfg.mss as u64),
            data_ack: 0,
            read: 0,
            reader_waiting: false,
            out_of_order: RangeSet::default(),
            out_of_order_bytes: 0,
            pending_obsolete: false,
            copies: BTreeMap::new(),
            pending_held: 0,
            right_edge: cfg.receive_buffer(),
            #[cfg(test)]
            max_held: 0,
            duplicate_bytes: 0,
            stats: TransportCounters::default(),
        };
        Self { subflows, conn }
    }

    /// Bytes held now: unread in-order data, connection-level out-of-order
    /// data, and subflow-level out-of-order data (for the tests, as
    /// `max_held`).
    #[cfg(test)]
    pub fn held(&self) -> u64 {
        self.conn.held()
    }
    /// The most bytes ever held (never more than the buffer).
    #[cfg(test)]
    pub fn max_held(&self) -> u64 {
        self.conn.max_held
    }
    pub fn duplicate_bytes(&self) -> u64 {
        self.conn.duplicate_bytes
    }
    /// Data bytes delivered in order (DATA_ACK).
    pub fn data_ack(&self) -> u64 {
        self.conn.data_ack
    }
}

impl Connection {
    /// In-order bytes the application has not read.
    fn readable(&self) -> u64 {
        self.data_ack - self.read
    }

    #[cfg(test)]
    fn held(&self) -> u64 {
        self.readable() + self.out_of_order_bytes()
    }

    fn out_of_order_bytes(&self) -> u64 {
        self.out_of_order_bytes + self.pending_held
    }

    /// Data bytes [dsn, dsn + len) reached the connection in some subflow's
    /// order; returns that subflow's credit: in order, the bytes from
    /// DATA_ACK to the end; out of order, the bytes not held before; none
    /// for a duplicate.
    fn deliver(&mut self, dsn: u64, len: u64) -> u64 {
        let end = dsn + len;
        // a copy of it still pending on another subflow is a duplicate now
        // (mostly none is: a map's search costs more than the test)
        if !self.copies.is_empty() {
            if let Some((_, counted)) = self.copies.get_mut(&dsn) {
                if *counted {
                    *counted = false;
                    self.pending_held -= len;
                }
            }
        }
        // (every out-of-order range starts above DATA_ACK, so data from
        // DATA_ACK on is new without a search)
        if end <= self.data_ack || (dsn > self.data_ack && self.out_of_order.is_sacked(dsn)) {
            self.duplicate_bytes += len;
            return 0;
        }
        if dsn <= self.data_ack {
            let old = self.data_ack;
            self.data_ack = end;
            while let Some(&(s, e)) = self.out_of_order.first() {
                if s > self.data_ack {
                    break;
                }
                self.data_ack = self.data_ack.max(e);
                self.out_of_order.prune_below(self.data_ack);
                self.out_of_order_bytes -= e - s;
            }
            self.stats.delivered_bytes += self.data_ack - old;
            if self.reader_waiting {
                self.stats.read_bytes += self.data_ack - self.read;
                self.read = self.data_ack;
            }
            end - old
        } else {
            let new = self.out_of_order.add(dsn, end);
            self.out_of_order_bytes += new;
            if !self.copies.is_empty() && self.copies.range(dsn..end).next().is_some() {
                self.pending_obsolete = true;
            }
            new
        }
    }

    /// Whether some pending subflow mapping holds data the connection already
    /// has: below DATA_ACK (the lowest pending data byte is the first key of
    /// `copies`), or out of order (marked when it arrived).
    fn purge_due(&self) -> bool {
        // (the emptiness test first: cheaper than the map's own, on every packet)
        self.pending_obsolete
            || (!self.copies.is_empty()
                && self
                    .copies
                    .first_key_value()
                    .is_some_and(|(&dsn, _)| dsn < self.data_ack))
    }

    /// Forget subflow mappings whose data the connection already has (a copy
    /// came on another subflow): they would only be dropped as duplicates
    /// when their subflow's hole fills — if it ever does (a dead path).
    #[cold]
    fn purge_pending(&mut self, subflows: &mut [RxSubflow]) {
        let (ack, ooo) = (self.data_ack, &self.out_of_order);
        let mut gone = Vec::new();
        for s in subflows {
            s.pending.retain(|&(_, dsn, len)| {
                let keep = dsn + len > ack && !ooo.is_sacked(dsn);
                if !keep {
                    gone.push((dsn, len));
                }
                keep
            });
        }
        for (dsn, len) in gone {
            self.unpend(dsn, len);
        }
        self.pending_obsolete = false;
    }

    /// A subflow holds mapping `m` above a hole in its sequence: into its
    /// queue `pending`, in subflow order.
    /// (Out of line, as `release`: rare beside the in-order path, which is
    /// kept small — MPTCP's per-packet code is about the size of the L1
    /// instruction cache, bench/RESULTS.md.)
    #[inline(never)]
    fn hold(&mut self, pending: &mut VecDeque<(u64, u64, u64)>, m: Mapping) {
        let entry = (m.ssn, m.dsn, m.len as u64);
        match pending.back() {
            Some(&(last, ..)) if last >= m.ssn => match pending.binary_search_by_key(&m.ssn, |e| e.0) {
                Ok(k) => {
                    let (_, dsn, len) = std::mem::replace(&mut pending[k], entry);
                    self.unpend(dsn, len); // the same segment again
                }
                Err(k) => pending.insert(k, entry),
            },
            _ => pending.push_back(entry),
        }
        self.pend(m.dsn, m.len as u64);
    }

    /// Subflow `sub`'s hole filled up to `after`: its pending mappings below
    /// move to the connection.
    #[inline(never)]
    fn release(&mut self, sub: &mut RxSubflow, after: u64) {
        while let Some(&(ssn, dsn, len)) = sub.pending.front() {
            if ssn >= after {
                break;
            }
            sub.pending.pop_front();
            self.unpend(dsn, len);
            sub.credited += self.deliver(dsn, len);
        }
    }

    /// A subflow holds data [dsn, dsn + len) pending.
    fn pend(&mut self, dsn: u64, len: u64) {
        let (count, counted) = self.copies.entry(dsn).or_insert((0, false));
        *count += 1;
        if !*counted {
            *counted = true;
            self.pending_held += len;
        }
    }

    /// A subflow no longer holds [dsn, dsn + len) pending: it moved to the
    /// connection or was dropped; the other copies, if any, no longer count.
    fn unpend(&mut self, dsn: u64, len: u64) {
        if let Some((count, counted)) = self.copies.get_mut(&dsn) {
            if *counted {
                *counted = false;
                self.pending_held -= len;
            }
            *count -= 1;
            if *count == 0 {
                self.copies.remove(&dsn);
            }
        }
    }

    /// Receiver SWS avoidance, as TCP's: the edge moves in steps of at least
    /// min(rcvbuf / 2, MSS), and only as far as the free space allows.
    fn window_edge(&self) -> u64 {
        let edge = self.read + self.rcvbuf.saturating_sub(self.out_of_order_bytes());
        if edge >= self.right_edge + self.sws {
            edge
        } else {
            self.right_edge
        }
    }

    /// Whether the window could now be announced at least twice as wide as
    /// the last ACK left it, by at least the SWS step (TCP's rule for a
    /// window update after a read, Linux's __tcp_cleanup_rbuf).
    fn window_opened(&self) -> bool {
        let was = self.right_edge.saturating_sub(self.data_ack);
        // (the window can never be wider than the buffer, the application
        // having read at most up to DATA_ACK: a window still more than half
        // open cannot double, which most segments learn without the edge)
        if 2 * was > self.rcvbuf {
            return false;
        }
        let could = self.window_edge() - self.data_ack;
        could >= was + self.sws && could >= 2 * was
    }

    /// Give the ACKs subflow `i` has just put in `out` (from index `from`)
    /// DATA_ACK and the connection's window.
    fn flush_subflow(&mut self, i: usize, out: &mut Outbox, from: usize) {
        if out.len() == from {
            return;
        }
        self.right_edge = self.window_edge();
        let wnd = (self.right_edge - self.data_ack).min(u32::MAX as u64) as u32;
        let dss = Dss::DataAck(self.data_ack);
        for tx in &mut out[from..] {
            tx.path = i as u8;
            if let Body::Tcp(seg) = &mut tx.body {
                seg.wnd = wnd;
                seg.set_dss(Some(dss));
                tx.size += dss.wire_bytes();
            }
        }
    }

    #[cold]
    fn answer_join(&mut self, i: usize, packet: u8, out: &mut Outbox) {
        let (flags, join) = if packet == 1 {
            (
                tcp_flags::SYN | tcp_flags::ACK,
                Some(MptcpHandshake::Join { packet: 2 }),
            )
        } else {
            (tcp_flags::ACK, None) // the fourth ACK: a plain ACK
        };
        let seg = TcpSegment {
            seq: 0,
            len: 0,
            ack: 0,
            wnd: 0,
            flags,
            sack: Default::default(),
            ..Default::default()
        };
        let size = self.header_bytes + join.map_or(0, |h| h.wire_bytes());
        out.push(Transmit {
            path: i as u8,
            body: Body::Tcp(seg),
            size,
            ect: false,
            ext: join.map(|h| Box::new(Ext::MptcpHandshake(h))),
        });
    }
}

impl StreamReceiver for MptcpReceiver {
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        let (wire_size, ce) = (rx.packet.size, rx.packet.ecn == ecn::CE);
        let Some((seg, i, handshake)) = super::open_segment(rx, self.subflows.len()) else {
            return;
        };
        let Self { subflows, conn } = self;
        if let Some(MptcpHandshake::Join { packet }) = handshake {
            if packet == 1 || packet == 3 {
                conn.answer_join(i, packet, out);
            }
            return;
        }
        let sub = &mut subflows[i];
        let before = sub.tcp.rcv_nxt();
        let mapping = match seg.dss() {
            Some(Dss::Mapping { dsn }) if seg.len > 0 && seg.seq >= before => Some(Mapping {
                ssn: seg.seq,
                dsn,
                len: seg.len,
            }),
            _ => None,
        };
        // The common case, in order with nothing waiting, skips the map.
        let direct = mapping.filter(|_| seg.seq == before && sub.pending.is_empty());
        // Data held above a hole in its subflow waits there, unless the
        // connection already has it (a copy came on another subflow): then it
        // is a duplicate now, and holding it would count it twice.
        if let Some(m) = mapping.filter(|_| direct.is_none()) {
            if m.dsn + m.len as u64 <= conn.data_ack || conn.out_of_order.is_sacked(m.dsn) {
                conn.duplicate_bytes += m.len as u64;
            } else {
                conn.hold(&mut sub.pending, m);
            }
        }
        let from = out.len();
        sub.tcp.on_segment(now, seg, wire_size, ce, out);
        let after = sub.tcp.rcv_nxt();
        if after > before {
            if let Some(m) = direct {
                sub.credited += conn.deliver(m.dsn, m.len as u64);
            } else if !sub.pending.is_empty() {
                conn.release(sub, after);
            }
            if conn.purge_due() {
                conn.purge_pending(subflows);
            }
            // The application read what arrived: if that opened the
            // connection's window enough, say so now rather than when the
            // subflow's delayed ACK fires (Linux: mptcp_cleanup_rbuf, by
            // TCP's rule: the window at least doubles).
            if out.len() == from && conn.reader_waiting && conn.window_opened() {
                subflows[i].tcp.send_window_update(out);
            }
        }
        #[cfg(test)]
        {
            conn.max_held = conn.max_held.max(conn.held());
        }
        conn.flush_subflow(i, out, from);
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        for i in 0..self.subflows.len() {
            if self.subflows[i].tcp.next_timer() <= now {
                let from = out.len();
                self.subflows[i].tcp.on_timer(now, out);
                self.conn.flush_subflow(i, out, from);
            }
        }
    }
    fn poll_at(&self) -> Option<Time> {
        deadline(self.subflows.iter().fold(Time::MAX, |t, s| t.min(s.tcp.next_timer())))
    }
    fn set_reader_waiting(&mut self, waiting: bool) {
        self.conn.reader_waiting = waiting;
    }
    fn readable(&self) -> u64 {
        self.conn.readable()
    }
    fn read(&mut self, max: u64, out: &mut Outbox) -> u64 {
        let n = max.min(self.readable());
        if n == 0 {
            return 0;
        }
        self.conn.read += n;
        self.conn.stats.read_bytes += n;
        // A reopened window is announced on the initial subflow.
        if self.conn.window_opened() {
            let from = out.len();
            self.subflows[0].tcp.send_window_update(out);
            self.conn.flush_subflow(0, out, from);
        }
        n
    }
    fn path_count(&self) -> usize {
        self.subflows.len()
    }
    fn snapshot(&mut self, _now: Time, scope: Scope) -> Snapshot {
        let counters = match scope {
            Scope::Path(i) => {
                let mut c = *self.subflows[i].tcp.stats();
                c.read_bytes = self.subflows[i].credited;
                c.into()
            }
            Scope::All => {
                let mut c = self
                    .subflows
                    .iter()
                    .fold(ReceiveCounters::default(), |c, s| c.plus(s.tcp.stats()));
                c.delivered_bytes = self.conn.stats.delivered_bytes;
                c.read_bytes = self.conn.stats.read_bytes;
                c.into()
            }
        };
        Snapshot { counters, sender: None }
    }
}

#[cfg(test)]
impl MptcpReceiver {
    pub fn debug_state(&self) -> String {
        let mut s = format!(
            "data_ack {} read {} ooo {:?} ooo_bytes {} pending_held {} right_edge {} copies {}\n",
            self.conn.data_ack,
            self.conn.read,
            self.conn.out_of_order.ranges(),
            self.conn.out_of_order_bytes,
            self.conn.pending_held,
            self.conn.right_edge,
            self.conn.copies.len()
        );
        for (i, sf) in self.subflows.iter().enumerate() {
            s += &format!(
                "  rsf{i}: rcv_nxt {} pending {:?} credited {}\n",
                sf.tcp.rcv_nxt(),
                sf.pending,
                sf.credited
            );
        }
        s
    }
}
