//! The sending end of an SCTP association: the TSN space, per-destination
//! congestion control and timers, SACK processing (RFC 9260 §6.2.1, §7.2,
//! HTNA and fast retransmit from RFC 4960 §7.2.4), T3-rtx (§6.3.3),
//! heartbeats and path failure (§8.2–8.3), and CMT (SFR, CUC, DAC and the
//! retransmission policies).

use std::collections::BTreeSet;

use super::{inline_chunk, send_chunks, send_data, Fifo, Incoming, RtxPolicy, SctpConfig, IP_HEADER};
use crate::endpoint::{Outbox, Received, Report, Scope, SenderState, Snapshot};
use crate::engine::time::earliest;
use crate::engine::{RandomStream, Time};
use crate::net::ext::{data_chunk_bytes, SctpChunk, SCTP_COMMON_HEADER};
use crate::net::packet::SctpInline;
use crate::trace::counters::TransportCounters;
use crate::transport::tcp::{RangeSet, RttEstimator};
use crate::transport::StreamSender;
use smallvec::SmallVec;

/// The DATA chunks (TSN, length) of one packet being put together.
type DataChunks = SmallVec<[(u32, u32); 4]>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Sent and counted in its destination's flight.
    InFlight,
    /// Reported received in a gap-ack block (not yet cumulatively acked).
    Acked,
    /// Marked for retransmission (fast retransmit or T3), not in flight.
    Marked,
}

/// A DATA chunk not yet cumulatively acknowledged; its TSN is its place in
/// the queue.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    len: u32,
    /// The destination it was last sent to.
    dest: u8,
    /// Where it goes when marked.
    rtx_dest: u8,
    state: State,
    /// Miss indications since it was last sent.
    misses: u32,
    /// Fast-retransmitted once already (never again: RFC 4960 §7.2.4).
    fast_retransmitted: bool,
    transmissions: u32,
}

/// What one SACK newly acknowledged: the highest TSN (HTNA), the lowest,
/// and the destinations they were sent to (a bit each).
struct NewlyAcked {
    htna: u32,
    lowest: u32,
    dests: u64,
}

impl Default for NewlyAcked {
    fn default() -> Self {
        Self {
            htna: 0,
            lowest: u32::MAX,
            dests: 0,
        }
    }
}

/// One destination (one path): its congestion window, timers and state.
/// (Fields in this order — `repr(C)` — so that what every SACK and send
/// reads shares a few cache lines; the counters and the heartbeat state
/// come last.)
#[repr(C)]
struct Dest {
    cwnd: u64,
    ssthresh: u64,
    /// partial_bytes_acked (congestion avoidance).
    pba: u64,
    /// Data bytes and chunks in flight to it.
    flight: u64,
    flight_chunks: u64,
    /// Chunks last sent to it now marked for retransmission.
    marked: u64,
    /// T3-rtx deadline.
    t3: Option<Time>,
    /// The chunk timed for an RTT sample (one per round trip) and when it left.
    timing: Option<(u32, Time)>,
    /// In fast recovery until this TSN is acknowledged.
    fast_recovery: Option<u32>,
    highest_sent: u32,
    /// No chunk below these TSNs is in flight to it (sent once / sent
    /// again) or outstanding on it (where the searches for its oldest start:
    /// sending to it lowers them).
    in_flight_from: u32,
    rtx_in_flight_from: u32,
    outstanding_from: u32,
    /// Chunks in flight to it that were sent before (CUCv2's second tracker).
    rtx_flight_chunks: u64,
    /// Packets sent to it in this round of sending (Max.Burst).
    burst: u32,
    active: bool,
    // ---- per SACK
    /// This SACK newly acks a chunk sent to it, and the highest such (SFR).
    saw_newack: bool,
    new_pseudo_cumack: bool,
    oldest_acked: bool,
    highest_newack: u32,
    /// Bytes newly acknowledged on it by this SACK.
    net_ack: u64,
    /// Its flight before this SACK ("cwnd fully used").
    flight_before: u64,
    /// CUCv2: its oldest TSN in flight before this SACK among chunks sent
    /// once, and among chunks sent again; whether this SACK acknowledged
    /// either (`new_pseudo_cumack`).
    pseudo_cumack: Option<u32>,
    rtx_pseudo_cumack: Option<u32>,
    /// Its oldest outstanding TSN before this SACK, marked chunks included
    /// (§6.3.2 R3's "earliest outstanding"), and whether this SACK acked it
    /// (`oldest_acked`).
    oldest: Option<u32>,
    // ---- less often
    rtt: RttEstimator,
    /// Consecutive errors (T3 expiries, unanswered heartbeats).
    errors: u32,
    next_heartbeat: Option<Time>,
    /// When the heartbeat still unanswered was sent, and when it counts
    /// as lost (one RTO later).
    heartbeat_out: Option<Time>,
    heartbeat_deadline: Option<Time>,
    /// Chunks sent to it and chunks marked lost on it (RTX-LOSSRATE).
    sent_chunks: u64,
    lost_chunks: u64,
    cwnd_clock: Time,
    /// Up to when `stats.srtt_area` integrates the smoothed RTT (advanced at
    /// each RTT sample, which is when it changes).
    srtt_clock: Time,
    stats: TransportCounters,
}

impl Dest {
    fn has_room(&self) -> bool {
        self.flight < self.cwnd
    }
}

pub struct SctpSender {
    cfg: SctpConfig,
    mtu: u64,
    max_data: u32,
    dests: Vec<Dest>,
    /// Chunks from the cumulative ack point on: `chunks[i]` has TSN `front_tsn + i`.
    chunks: Fifo<Chunk>,
    front_tsn: u32,
    next_tsn: u32,
    /// TSNs marked for retransmission.
    marked: BTreeSet<u32>,
    /// TSNs gap blocks have reported, as ranges [first, last + 1) above the
    /// cumulative point.
    scoreboard: RangeSet,
    /// Send one packet of marked chunks now, whatever the cwnd (after a fast
    /// retransmit or a T3 expiry).
    force_retransmission: bool,
    /// Bytes in the send buffer (chunks not yet cumulatively acked, and data
    /// not yet cut into chunks), and of them not yet in chunks.
    buffered: u64,
    unchunked: u64,
    /// Bytes of the current message not yet in chunks (messages of
    /// `message_bytes`; 0: the next chunk starts a message).
    message_left: u64,
    /// What the application still wants to write (None: endlessly).
    to_write: Option<u64>,
    closed: bool,
    /// The peer's window as the sender reckons it (a_rwnd less the flight).
    peer_rwnd: u64,
    assoc_errors: u32,
    aborted: bool,
    /// CMT: the destination the next send pass starts with.
    rotate: usize,
    started: bool,
    completed_at: Option<Time>,
    rng: RandomStream,
}

impl SctpSender {
    /// An association over `paths` paths (destination i is path i).
    pub fn new(cfg: SctpConfig, paths: usize, seed: u64) -> Self {
        let mtu = cfg.mtu as u64;
        let dests = (0..paths.max(1))
            .map(|_| Dest {
                cwnd: cfg.initial_cwnd(),
                // RFC 9260 §7.2.1: initially the peer's a_rwnd
                ssthresh: cfg.rcvbuf,
                pba: 0,
                flight: 0,
                flight_chunks: 0,
                rtt: RttEstimator::new(cfg.rto_min, cfg.rto_max, cfg.rto_initial, 0),
                timing: None,
                t3: None,
                errors: 0,
                active: true,
                fast_recovery: None,
                highest_sent: 0,
                next_heartbeat: None,
                heartbeat_out: None,
                heartbeat_deadline: None,
                sent_chunks: 0,
                lost_chunks: 0,
                stats: TransportCounters::default(),
                cwnd_clock: 0,
                srtt_clock: 0,
                net_ack: 0,
                saw_newack: false,
                highest_newack: 0,
                pseudo_cumack: None,
                rtx_pseudo_cumack: None,
                new_pseudo_cumack: false,
                oldest: None,
                oldest_acked: false,
                marked: 0,
                in_flight_from: 0,
                rtx_in_flight_from: 0,
                outstanding_from: 0,
                rtx_flight_chunks: 0,
                flight_before: 0,
                burst: 0,
            })
            .collect();
        Self {
            mtu,
            max_data: cfg.max_data(),
            peer_rwnd: cfg.rcvbuf,
            cfg,
            dests,
            chunks: Fifo::default(),
            front_tsn: 1,
            next_tsn: 1,
            marked: BTreeSet::new(),
            scoreboard: RangeSet::default(),
            force_retransmission: false,
            buffered: 0,
            unchunked: 0,
            message_left: 0,
            to_write: Some(0),
            closed: false,
            assoc_errors: 0,
            aborted: false,
            rotate: 0,
            started: false,
            completed_at: None,
            rng: RandomStream::new(seed, "sctp"),
        }
    }

    // ---- accessors (for tests and results) ------------------------------

    pub fn cwnd(&self, d: usize) -> u64 {
        self.dests[d].cwnd
    }
    pub fn ssthresh(&self, d: usize) -> u64 {
        self.dests[d].ssthresh
    }
    pub fn is_active(&self, d: usize) -> bool {
        self.dests[d].active
    }
    /// The association gave up (Association.Max.Retrans exceeded).
    pub fn aborted(&self) -> bool {
        self.aborted
    }
    /// Where plain SCTP sends new data: the primary while it is active, else
    /// the first active alternate.
    pub fn data_destination(&self) -> usize {
        let p = self.cfg.primary as usize;
        if self.dests[p].active {
            return p;
        }
        (0..self.dests.len()).find(|&d| self.dests[d].active).unwrap_or(p)
    }

    fn total_flight(&self) -> (u64, u64) {
        self.dests
            .iter()
            .fold((0, 0), |(b, c), d| (b + d.flight, c + d.flight_chunks))
    }

    fn set_cwnd(&mut self, d: usize, now: Time, cwnd: u64) {
        let dest = &mut self.dests[d];
        dest.stats.cwnd_area += dest.cwnd as f64 * now.saturating_sub(dest.cwnd_clock) as f64;
        dest.cwnd_clock = now;
        dest.cwnd = cwnd;
    }

    // ---- the send buffer --------------------------------------------------

    /// Move what the application waits to write into the buffer's room.
    fn fill(&mut self) {
        let room = self.cfg.sndbuf.saturating_sub(self.buffered);
        let take = self.to_write.map_or(room, |w| w.min(room));
        self.buffered += take;
        self.unchunked += take;
        if let Some(w) = &mut self.to_write {
            *w -= take;
        }
    }

    fn done_writing(&self) -> bool {
        self.to_write == Some(0)
    }

    // ---- choosing destinations -------------------------------------------

    /// The active destination that maximises `key` (ties broken at random,
    /// as the paper and FreeBSD do); `fallback` when none is active.
    fn best_by(&mut self, fallback: usize, key: impl Fn(&Dest) -> f64) -> usize {
        let active: Vec<usize> = (0..self.dests.len()).filter(|&d| self.dests[d].active).collect();
        let Some(best) = active.iter().map(|&d| key(&self.dests[d])).max_by(f64::total_cmp) else {
            return fallback;
        };
        let ties: Vec<usize> = active.into_iter().filter(|&d| key(&self.dests[d]) == best).collect();
        if ties.len() == 1 {
            ties[0]
        } else {
            ties[(self.rng.uniform() * ties.len() as f64) as usize % ties.len()]
        }
    }

    /// Where a chunk last sent to `from` goes again; `timeout`: after a T3 expiry.
    #[cold]
    fn retransmission_destination(&mut self, from: usize, timeout: bool) -> usize {
        if !self.cfg.cmt {
            if !timeout || !self.cfg.rtx_to_alternate {
                return if self.dests[from].active {
                    from
                } else {
                    self.data_destination()
                };
            }
            let preferred = self.data_destination();
            if preferred != from && self.dests[preferred].active {
                return preferred;
            }
            return (0..self.dests.len())
                .find(|&d| d != from && self.dests[d].active)
                .unwrap_or(from);
        }
        match self.cfg.rtx_policy {
            RtxPolicy::Same if self.dests[from].active => from,
            RtxPolicy::Same | RtxPolicy::Cwnd => self.best_by(from, |d| d.cwnd as f64),
            RtxPolicy::Asap => self.best_by(from, |d| d.cwnd as f64 - d.flight as f64),
            RtxPolicy::Ssthresh => self.best_by(from, |d| d.ssthresh as f64),
            RtxPolicy::Lossrate => self.best_by(from, |d| -(d.lost_chunks as f64 / d.sent_chunks.max(1) as f64)),
        }
    }

    // ---- sending ---------------------------------------------------------

    fn chunk(&self, tsn: u32) -> &Chunk {
        &self.chunks[(tsn - self.front_tsn) as usize]
    }

    /// Account for chunk `tsn` leaving for destination `d` now.
    fn on_chunk_sent(&mut self, tsn: u32, d: usize, now: Time) {
        let i = (tsn - self.front_tsn) as usize;
        let overhead = self.cfg.sender_chunk_overhead as u64;
        if self.chunks[i].state == State::Marked {
            self.dests[self.chunks[i].dest as usize].marked -= 1;
        }
        let c = &mut self.chunks[i];
        c.state = State::InFlight;
        c.dest = d as u8;
        c.misses = 0;
        c.transmissions += 1;
        let (len, first) = (c.len as u64, c.transmissions == 1);
        self.peer_rwnd = self.peer_rwnd.saturating_sub(len + overhead);
        let dest = &mut self.dests[d];
        dest.flight += len;
        dest.flight_chunks += 1;
        if first {
            dest.in_flight_from = dest.in_flight_from.min(tsn);
        } else {
            dest.rtx_in_flight_from = dest.rtx_in_flight_from.min(tsn);
            dest.rtx_flight_chunks += 1;
        }
        dest.outstanding_from = dest.outstanding_from.min(tsn);
        dest.sent_chunks += 1;
        dest.highest_sent = dest.highest_sent.max(tsn);
        if first {
            if dest.timing.is_none() {
                dest.timing = Some((tsn, now));
            }
        } else {
            dest.stats.retransmits += 1;
            // Karn: a retransmitted chunk gives no RTT sample
            for other in &mut self.dests {
                if other.timing.is_some_and(|(t, _)| t == tsn) {
                    other.timing = None;
                }
            }
        }
        let dest = &mut self.dests[d];
        // R1: start the timer if it is not running; the first outstanding
        // chunk sent again restarts it (RFC 4960 §7.2.4 step 4)
        if dest.t3.is_none() || (!first && tsn == self.front_tsn) {
            dest.t3 = Some(now + dest.rtt.rto());
        }
    }

    fn emit(&mut self, d: usize, data: &[(u32, u32)], user_bytes: u32, out: &mut Outbox) {
        debug_assert!(!data.is_empty());
        send_data(d as u8, data, out);
        let stats = &mut self.dests[d].stats;
        stats.packets_sent += 1;
        stats.bytes_sent += user_bytes as u64;
    }

    /// One packet of marked chunks for destination `d`, from `first` on,
    /// bundled up to the MTU (chunks marked for elsewhere are skipped).
    fn send_marked_packet(&mut self, first: u32, d: usize, now: Time, out: &mut Outbox) {
        let mut size = IP_HEADER + SCTP_COMMON_HEADER;
        let mut chunks = DataChunks::new();
        let mut user = 0;
        let candidates: Vec<u32> = self.marked.range(first..).copied().collect();
        for tsn in candidates {
            let c = *self.chunk(tsn);
            if c.rtx_dest as usize != d {
                continue;
            }
            let bytes = data_chunk_bytes(c.len);
            if size + bytes > self.cfg.mtu && !chunks.is_empty() {
                break;
            }
            size += bytes;
            user += c.len;
            chunks.push((tsn, c.len));
            self.marked.remove(&tsn);
            self.on_chunk_sent(tsn, d, now);
        }
        if !chunks.is_empty() {
            self.emit(d, &chunks, user, out);
        }
    }

    /// One packet of new chunks for `d`, as many as fit in the MTU and the
    /// peer's window (one chunk when nothing is in flight anywhere: the
    /// zero-window probe); false when none could go.
    fn send_new_packet(&mut self, d: usize, now: Time, out: &mut Outbox) -> bool {
        let overhead = self.cfg.sender_chunk_overhead as u64;
        let mut size = IP_HEADER + SCTP_COMMON_HEADER;
        let mut chunks = DataChunks::new();
        let mut user = 0;
        loop {
            if self.unchunked < self.max_data as u64 {
                self.fill();
            }
            if self.message_left == 0 {
                self.message_left = self.cfg.message_bytes.map_or(u64::MAX, |m| m as u64);
            }
            let natural = self.message_left.min(self.max_data as u64);
            let len = self.unchunked.min(natural) as u32;
            if len == 0 {
                break;
            }
            // Nagle (on by default in SCTP stacks): a chunk cut short because
            // the application has not written the rest yet waits while data
            // is in flight and more is coming.
            let in_flight = |me: &Self| !chunks.is_empty() || me.total_flight().0 > 0;
            if (len as u64) < natural && !self.done_writing() && in_flight(self) {
                break;
            }
            let bytes = data_chunk_bytes(len);
            if size + bytes > self.cfg.mtu && !chunks.is_empty() {
                break;
            }
            // without room in the peer's window, only the zero-window probe
            if self.peer_rwnd < len as u64 + overhead && in_flight(self) {
                break;
            }
            let tsn = self.next_tsn;
            self.next_tsn += 1;
            self.unchunked -= len as u64;
            self.message_left -= len as u64;
            self.chunks.push_back(Chunk {
                len,
                dest: d as u8,
                rtx_dest: d as u8,
                state: State::InFlight,
                misses: 0,
                fast_retransmitted: false,
                transmissions: 0,
            });
            size += bytes;
            user += len;
            chunks.push((tsn, len));
            self.on_chunk_sent(tsn, d, now);
        }
        if chunks.is_empty() {
            return false;
        }
        self.emit(d, &chunks, user, out);
        true
    }

    /// Send what the windows allow: a forced retransmission first, then
    /// marked chunks, then new data (RFC 9260 §6.1 C).
    fn transmit(&mut self, now: Time, out: &mut Outbox) {
        if self.aborted || !self.started {
            return;
        }
        if std::mem::take(&mut self.force_retransmission) {
            if let Some(&first) = self.marked.first() {
                let d = self.target_of(first);
                self.send_marked_packet(first, d, now, out);
            }
        }
        let n = self.dests.len();
        for dest in &mut self.dests {
            dest.burst = 0;
        }
        let max_burst = self.cfg.max_burst;
        let burst_ok = |b: u32| max_burst == 0 || b < max_burst;
        // retransmissions, oldest first, each where it is marked to go
        let mut cursor = self.marked.first().copied();
        while let Some(tsn) = cursor {
            let d = self.target_of(tsn);
            if self.dests[d].has_room() && burst_ok(self.dests[d].burst) {
                self.send_marked_packet(tsn, d, now, out);
                self.dests[d].burst += 1;
            }
            cursor = self.marked.range(tsn + 1..).next().copied();
        }
        // new data: to the primary (or its alternate), or with CMT to every
        // destination with room, starting one further each time
        let targets = if self.cfg.cmt {
            self.rotate = if self.rotate + 1 < n { self.rotate + 1 } else { 0 };
            n
        } else {
            1
        };
        for k in 0..targets {
            let d = if self.cfg.cmt {
                let d = self.rotate + k;
                if d < n {
                    d
                } else {
                    d - n
                }
            } else {
                self.data_destination()
            };
            if !self.dests[d].active && self.cfg.cmt {
                continue;
            }
            while self.dests[d].has_room() && burst_ok(self.dests[d].burst) && self.send_new_packet(d, now, out) {
                self.dests[d].burst += 1;
            }
        }
        self.schedule_heartbeats(now);
    }

    /// Where marked chunk `tsn` goes (its choice, unless that destination
    /// has since failed).
    fn target_of(&mut self, tsn: u32) -> usize {
        let c = *self.chunk(tsn);
        let d = c.rtx_dest as usize;
        if self.dests[d].active {
            return d;
        }
        let alt = self.retransmission_destination(d, true);
        let i = (tsn - self.front_tsn) as usize;
        self.chunks[i].rtx_dest = alt as u8;
        alt
    }

    /// Mark chunk `tsn` for retransmission (no longer in flight).
    #[cold]
    fn mark(&mut self, tsn: u32, timeout: bool) {
        let i = (tsn - self.front_tsn) as usize;
        let c = self.chunks[i];
        debug_assert_eq!(c.state, State::InFlight);
        let d = c.dest as usize;
        let dest = &mut self.dests[d];
        dest.flight -= c.len as u64;
        dest.flight_chunks -= 1;
        dest.rtx_flight_chunks -= (c.transmissions > 1) as u64;
        dest.lost_chunks += 1;
        dest.marked += 1;
        let to = self.retransmission_destination(d, timeout);
        let c = &mut self.chunks[i];
        c.state = State::Marked;
        c.rtx_dest = to as u8;
        self.marked.insert(tsn);
    }

    // ---- heartbeats --------------------------------------------------------

    /// Idle destinations (nothing in flight to them) get a heartbeat every
    /// HB.interval + RTO, jittered by ±50 % of the RTO (RFC 9260 §8.3).
    fn schedule_heartbeats(&mut self, now: Time) {
        for d in 0..self.dests.len() {
            let idle = self.dests[d].flight == 0;
            if !idle {
                self.dests[d].next_heartbeat = None;
            } else if self.dests[d].next_heartbeat.is_none() {
                let jitter = 0.5 + self.rng.uniform();
                let dest = &mut self.dests[d];
                let wait = self.cfg.hb_interval + (dest.rtt.rto() as f64 * jitter) as Time;
                dest.next_heartbeat = Some(now + wait);
            }
        }
    }

    #[cold]
    fn send_heartbeat(&mut self, d: usize, now: Time, out: &mut Outbox) {
        let dest = &mut self.dests[d];
        dest.heartbeat_out = Some(now);
        dest.heartbeat_deadline = Some(now + dest.rtt.rto());
        self.dests[d].next_heartbeat = None;
        let heartbeat = SctpChunk::Heartbeat {
            dest: d as u8,
            sent_at: now,
        };
        send_chunks(d as u8, smallvec::smallvec![heartbeat], out);
    }

    /// An error on destination `d` (§8.2): beyond Path.Max.Retrans it is
    /// inactive; beyond Association.Max.Retrans the association aborts.
    #[cold]
    fn count_error(&mut self, d: usize) {
        let dest = &mut self.dests[d];
        dest.errors += 1;
        if dest.errors > self.cfg.path_max_retrans {
            dest.active = false;
        }
        self.assoc_errors += 1;
        if self.assoc_errors > self.cfg.assoc_max_retrans {
            self.aborted = true;
        }
    }

    fn heard_from(&mut self, d: usize) {
        let dest = &mut self.dests[d];
        dest.errors = 0;
        dest.active = true;
        dest.heartbeat_out = None;
        dest.heartbeat_deadline = None;
        self.assoc_errors = 0;
    }

    // ---- T3-rtx ------------------------------------------------------------

    /// §6.3.3: the window collapses to one MTU, the RTO doubles, everything
    /// in flight to `d` is marked, and one packet of it goes at once (to an
    /// alternate, if there is one).
    #[cold]
    fn on_t3_expiry(&mut self, d: usize, now: Time) {
        let mtu = self.mtu;
        let cwnd = self.dests[d].cwnd;
        self.dests[d].ssthresh = (cwnd / 2).max(4 * mtu);
        self.set_cwnd(d, now, mtu);
        let dest = &mut self.dests[d];
        dest.pba = 0;
        dest.fast_recovery = None;
        dest.rtt.back_off();
        dest.timing = None;
        dest.t3 = None;
        dest.stats.timeouts += 1;
        self.count_error(d);
        let lost: Vec<u32> = (0..self.chunks.len())
            .filter(|&i| self.chunks[i].state == State::InFlight && self.chunks[i].dest as usize == d)
            .map(|i| self.front_tsn + i as u32)
            .collect();
        for tsn in lost {
            self.mark(tsn, true);
        }
        self.force_retransmission = true;
    }

    // ---- SACKs -------------------------------------------------------------

    /// A SACK arrived on `path` (counted there; ignored once aborted).
    fn sack_arrived(&mut self, now: Time, path: usize, cum: u32, a_rwnd: u32, gaps: &[(u16, u16)], dac_packets: u8) {
        self.dests[path].stats.acks_received += 1;
        if !self.aborted {
            self.on_sack(now, cum, a_rwnd, gaps, dac_packets);
        }
    }

    fn on_sack(&mut self, now: Time, cum: u32, a_rwnd: u32, gaps: &[(u16, u16)], dac_packets: u8) {
        if cum < self.front_tsn - 1 || cum >= self.next_tsn {
            return; // older than one already processed, or acks unsent data
        }
        let cum_advanced = cum >= self.front_tsn;
        let n = self.dests.len();
        for d in &mut self.dests {
            d.net_ack = 0;
            d.saw_newack = false;
            d.highest_newack = 0;
            d.pseudo_cumack = None;
            d.rtx_pseudo_cumack = None;
            d.new_pseudo_cumack = false;
            d.oldest = None;
            d.oldest_acked = false;
            d.flight_before = d.flight;
        }
        // Each destination's oldest TSN in flight before this SACK (its
        // pseudo-cumack, CUC's trigger) and oldest outstanding, marked
        // chunks included (the T3 restart's, §6.3.2 R3).
        for d in 0..n {
            // (only CMT reads it: CUC, and the end of fast recovery)
            if self.cfg.cmt && self.dests[d].flight_chunks > self.dests[d].rtx_flight_chunks {
                self.dests[d].pseudo_cumack = self.oldest_in_flight::<false>(d);
            }
            if self.cfg.cmt && self.dests[d].rtx_flight_chunks > 0 {
                self.dests[d].rtx_pseudo_cumack = self.oldest_in_flight::<true>(d);
            }
            if self.dests[d].flight_chunks + self.dests[d].marked > 0 {
                self.dests[d].oldest = self.oldest_outstanding(d);
            }
        }
        // Pass 1: what this SACK newly acknowledges, cumulatively or in a
        // gap block (the scoreboard keeps what blocks reported before, so
        // only new TSNs are visited: blocks repeat in every SACK).
        let highest_in_sack = gaps
            .iter()
            .map(|&(_, e)| cum + e as u32)
            .filter(|&e| e < self.next_tsn)
            .max()
            .unwrap_or(cum)
            .max(cum);
        let mut fresh: SmallVec<[(u32, u32); 4]> = SmallVec::new();
        if cum_advanced {
            fresh.push((self.front_tsn, cum + 1));
        }
        for &(s, e) in gaps {
            let (s, e) = (cum + s as u32, cum + e as u32);
            if s <= e && e < self.next_tsn && s > cum {
                self.scoreboard
                    .add_with(s as u64, e as u64 + 1, |a, b| fresh.push((a as u32, b as u32)));
            }
        }
        let mut news = NewlyAcked::default();
        for &(a, b) in &fresh {
            for tsn in a..b {
                self.newly_acked(now, tsn, &mut news);
            }
        }
        let NewlyAcked {
            htna,
            lowest: lowest_new,
            dests: dests_newly,
        } = news;
        // The cumulative point moves: those chunks leave the buffer.
        while self.front_tsn <= cum {
            let c = self.chunks.pop_front().expect("cum is below next_tsn");
            self.buffered -= c.len as u64;
            self.front_tsn += 1;
        }
        self.scoreboard.prune_below(self.front_tsn as u64);
        // Fast recovery ends once its point is acknowledged (per destination
        // under CMT: its own oldest outstanding TSN passes the point).
        for d in 0..n {
            if let Some(point) = self.dests[d].fast_recovery {
                let over = if self.cfg.cmt {
                    self.dests[d].new_pseudo_cumack && self.oldest_outstanding(d).is_none_or(|t| t > point)
                } else {
                    cum >= point
                };
                if over {
                    self.dests[d].fast_recovery = None;
                }
            }
        }
        // Pass 2: miss indications for the chunks still missing below the
        // highest TSN this SACK reports, and fast retransmit at the threshold.
        let mixed = dests_newly.count_ones() > 1;
        let in_recovery = self.dests.iter().any(|d| d.fast_recovery.is_some());
        let mut entering = 0u64;
        // The holes: from the cumulative point up to the highest TSN
        // reported, less what the blocks cover.
        let mut holes: SmallVec<[(u32, u32); 8]> = SmallVec::new();
        if highest_in_sack >= self.front_tsn && htna > 0 {
            let mut from = self.front_tsn;
            for &(s, e) in self.scoreboard.ranges() {
                if s as u32 >= highest_in_sack {
                    break;
                }
                if s as u32 > from {
                    holes.push((from, s as u32));
                }
                from = e as u32;
            }
            if from < highest_in_sack {
                holes.push((from, highest_in_sack));
            }
        }
        for tsn in holes.iter().flat_map(|&(a, b)| a..b) {
            let i = (tsn - self.front_tsn) as usize;
            let c = self.chunks[i];
            if c.state != State::InFlight || c.fast_retransmitted {
                continue;
            }
            let d = c.dest as usize;
            // DAC: a SACK for two packets, all newly acked on one path,
            // counts twice for a chunk below everything it newly acks.
            let dac_twice = self.cfg.cmt && self.cfg.dac && dac_packets >= 2 && !mixed && tsn < lowest_new;
            let strikes = if self.cfg.cmt && self.cfg.sfr {
                let dest = &self.dests[d];
                if !dest.saw_newack || tsn >= dest.highest_newack {
                    0
                } else if dac_twice {
                    2
                } else {
                    1
                }
            } else if tsn < htna || (!self.cfg.cmt && in_recovery && cum_advanced) {
                1 + dac_twice as u32
            } else {
                0
            };
            if strikes == 0 {
                continue;
            }
            self.chunks[i].misses += strikes;
            if self.chunks[i].misses >= self.cfg.fast_rtx_threshold {
                self.chunks[i].fast_retransmitted = true;
                self.mark(tsn, false);
                entering |= 1 << d;
            }
        }
        // Then per destination: window growth, or fast retransmit's halving,
        // and its T3 timer.
        let mtu = self.mtu;
        let (mut flight, mut flight_chunks) = (0, 0);
        for d in 0..n {
            if entering & (1 << d) == 0 {
                self.grow(d, now, cum_advanced);
            } else if self.dests[d].fast_recovery.is_none() {
                // Fast retransmit (§7.2.4): halve a destination with newly
                // marked data that is not already recovering (one packet of
                // marked chunks goes whatever the windows say).
                self.dests[d].stats.fast_retransmits += 1;
                let cwnd = self.dests[d].cwnd;
                let ssthresh = (cwnd / 2).max(self.cfg.fr_min_mtus as u64 * mtu);
                self.dests[d].ssthresh = ssthresh;
                self.set_cwnd(d, now, ssthresh);
                let point = if self.cfg.cmt {
                    self.dests[d].highest_sent
                } else {
                    self.next_tsn - 1
                };
                let dest = &mut self.dests[d];
                dest.pba = 0;
                dest.fast_recovery = Some(point);
            }
            // Timers (§6.3.2 R2, R3: restarted only when the destination's
            // earliest outstanding chunk is acknowledged — acks of later
            // chunks, or of chunks SACKs could not report before, must not
            // keep a timer from expiring over a lost one), and
            // partial_bytes_acked of idle destinations.
            let dest = &mut self.dests[d];
            if dest.flight == 0 {
                dest.t3 = None;
                dest.pba = 0;
            } else if dest.oldest_acked {
                dest.t3 = Some(now + dest.rtt.rto());
            }
            flight += dest.flight;
            flight_chunks += dest.flight_chunks;
        }
        if entering != 0 {
            self.force_retransmission = true;
        }
        let outstanding = flight + flight_chunks * self.cfg.sender_chunk_overhead as u64;
        self.peer_rwnd = (a_rwnd as u64).saturating_sub(outstanding);
    }

    /// Window growth (§7.2.1–7.2.2) of destination `d` on this SACK: on one
    /// that moves the cumulative point, or under CUC one that acks the
    /// destination's oldest outstanding chunk; never in fast recovery.
    fn grow(&mut self, d: usize, now: Time, cum_advanced: bool) {
        let mtu = self.mtu;
        let dest = &self.dests[d];
        let may_grow = if self.cfg.cmt && self.cfg.cuc {
            dest.new_pseudo_cumack
        } else {
            cum_advanced
        };
        if dest.net_ack == 0 || !may_grow || dest.fast_recovery.is_some() {
            return;
        }
        let full = dest.flight_before >= dest.cwnd;
        if dest.cwnd <= dest.ssthresh {
            if full {
                let grow = dest.net_ack.min(self.cfg.abc_limit as u64 * mtu);
                let cwnd = dest.cwnd + grow;
                self.set_cwnd(d, now, cwnd);
            }
        } else {
            let dest = &mut self.dests[d];
            dest.pba += dest.net_ack;
            if dest.pba >= dest.cwnd && full {
                dest.pba -= dest.cwnd;
                let cwnd = dest.cwnd + mtu;
                self.set_cwnd(d, now, cwnd);
            }
        }
    }

    /// Chunk `tsn` (not acknowledged before) is acknowledged by this SACK:
    /// its destination's flight, newly acked bytes, SFR and CUC marks, RTT
    /// sample and error count.
    fn newly_acked(&mut self, now: Time, tsn: u32, news: &mut NewlyAcked) {
        let i = (tsn - self.front_tsn) as usize;
        let c = self.chunks[i];
        if c.state == State::Acked {
            return;
        }
        let d = c.dest as usize;
        self.chunks[i].state = State::Acked;
        news.htna = news.htna.max(tsn);
        news.lowest = news.lowest.min(tsn);
        if self.dests[d].oldest == Some(tsn) {
            self.dests[d].oldest_acked = true;
        }
        // Any newly acknowledged data shows the peer is there (§8.1).
        self.assoc_errors = 0;
        if c.state == State::Marked {
            // Arrived after all (before a timeout marked it): it leaves
            // the retransmission queue, but it was not in flight, so it
            // grows no window and says nothing about its path now; if it
            // was the chunk being timed, the next one sent is.
            self.marked.remove(&tsn);
            let dest = &mut self.dests[d];
            dest.marked -= 1;
            if dest.timing.is_some_and(|(t, _)| t == tsn) {
                dest.timing = None;
            }
            return;
        }
        let dest = &mut self.dests[d];
        dest.flight -= c.len as u64;
        dest.flight_chunks -= 1;
        dest.rtx_flight_chunks -= (c.transmissions > 1) as u64;
        dest.net_ack += c.len as u64;
        dest.saw_newack = true;
        dest.highest_newack = dest.highest_newack.max(tsn);
        if dest.pseudo_cumack == Some(tsn) || dest.rtx_pseudo_cumack == Some(tsn) {
            dest.new_pseudo_cumack = true;
        }
        if let Some((t, sent)) = dest.timing {
            if t == tsn {
                if let Some(srtt) = dest.rtt.srtt() {
                    let dt = now.saturating_sub(dest.srtt_clock);
                    dest.stats.srtt_area += srtt as f64 * dt as f64;
                    dest.stats.srtt_time_ns += dt;
                }
                dest.srtt_clock = now;
                dest.rtt.on_sample(now - sent);
                dest.stats.rtt_samples += 1;
                dest.stats.rtt_sum_ns += now - sent;
                dest.timing = None;
            }
        }
        news.dests |= 1 << d;
        // The path works (an ack of a chunk sent once: FreeBSD applies
        // Karn's rule to clearing the error count).
        if c.transmissions == 1 {
            self.heard_from(d);
        }
    }

    /// The oldest TSN not yet acknowledged that was last sent to `d`.
    fn oldest_outstanding(&mut self, d: usize) -> Option<u32> {
        let from = self.dests[d].outstanding_from;
        let found = self.first_from(from, |c| c.state != State::Acked && c.dest as usize == d);
        self.dests[d].outstanding_from = found.unwrap_or(self.next_tsn);
        found
    }

    /// The oldest TSN in flight to `d` among chunks sent once, or (`again`)
    /// among chunks sent more than once.
    fn oldest_in_flight<const AGAIN: bool>(&mut self, d: usize) -> Option<u32> {
        let dest = &self.dests[d];
        let from = if AGAIN {
            dest.rtx_in_flight_from
        } else {
            dest.in_flight_from
        };
        let found = self.first_from(from, |c| {
            c.state == State::InFlight && c.dest as usize == d && (c.transmissions > 1) == AGAIN
        });
        let cursor = found.unwrap_or(self.next_tsn);
        let dest = &mut self.dests[d];
        if AGAIN {
            dest.rtx_in_flight_from = cursor;
        } else {
            dest.in_flight_from = cursor;
        }
        found
    }

    /// The first chunk at or above TSN `from` that `is` holds for.
    fn first_from(&self, from: u32, is: impl Fn(&Chunk) -> bool) -> Option<u32> {
        let live = self.chunks.as_slice();
        let start = (from.saturating_sub(self.front_tsn) as usize).min(live.len());
        live[start..]
            .iter()
            .position(is)
            .map(|i| self.front_tsn + (start + i) as u32)
    }

    fn check_complete(&mut self, now: Time) {
        if self.closed
            && self.completed_at.is_none()
            && self.done_writing()
            && self.unchunked == 0
            && self.chunks.is_empty()
        {
            self.completed_at = Some(now);
        }
    }
}

impl StreamSender for SctpSender {
    fn kind(&self) -> &'static str {
        "sctp"
    }

    fn write_all(&mut self, now: Time, bytes: Option<u64>, out: &mut Outbox) {
        if !self.started {
            self.started = true;
            for d in &mut self.dests {
                d.cwnd_clock = now;
            }
        }
        self.to_write = match (self.to_write, bytes) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        self.transmit(now, out);
    }

    fn close(&mut self, now: Time, _out: &mut Outbox) {
        self.closed = true;
        self.check_complete(now);
    }

    fn stop(&mut self) {
        self.to_write = Some(0);
    }

    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        let path = (rx.packet.path as usize).min(self.dests.len() - 1);
        // the common packet, a SACK with few blocks, needs no chunk list
        if let Some(SctpInline::Sack {
            cum_tsn,
            a_rwnd,
            dac_packets,
            gap_count,
            gaps,
        }) = inline_chunk(&rx)
        {
            self.sack_arrived(now, path, cum_tsn, a_rwnd, &gaps[..gap_count as usize], dac_packets);
        } else {
            let Some(incoming) = Incoming::new(rx) else { return };
            for chunk in incoming.chunks() {
                match *chunk {
                    SctpChunk::Sack {
                        cum_tsn,
                        a_rwnd,
                        ref gaps,
                        dac_packets,
                        ..
                    } => self.sack_arrived(now, path, cum_tsn, a_rwnd, gaps, dac_packets),
                    SctpChunk::HeartbeatAck { dest, sent_at } => {
                        let d = dest as usize;
                        if d < self.dests.len() {
                            // a late answer still shows the path works; only
                            // the one awaited gives an RTT sample
                            if self.dests[d].heartbeat_out == Some(sent_at) {
                                self.dests[d].rtt.on_sample(now - sent_at);
                            }
                            self.heard_from(d);
                        }
                    }
                    SctpChunk::Data { .. } | SctpChunk::Heartbeat { .. } => {}
                }
            }
        }
        self.transmit(now, out);
        self.check_complete(now);
    }

    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        // Data goes out after a timer that fired, not on every wake-up: the
        // simulator may wake an endpoint when nothing is due (a timer that
        // was stopped or moved later), and a sending round there would
        // start a new Max.Burst and move CMT's rotation at moments no
        // stack would send.
        if self.aborted || self.poll_at().is_none_or(|t| t > now) {
            return;
        }
        for d in 0..self.dests.len() {
            if self.dests[d].t3.is_some_and(|t| t <= now) {
                self.on_t3_expiry(d, now);
            }
        }
        for d in 0..self.dests.len() {
            // §8.3: a heartbeat not answered within an RTO is an error
            if self.dests[d].heartbeat_deadline.is_some_and(|t| t <= now) {
                let dest = &mut self.dests[d];
                dest.heartbeat_out = None;
                dest.heartbeat_deadline = None;
                dest.rtt.back_off();
                self.count_error(d);
            }
            if self.dests[d].next_heartbeat.is_some_and(|t| t <= now) {
                self.send_heartbeat(d, now, out);
            }
        }
        self.transmit(now, out);
    }

    fn poll_at(&self) -> Option<Time> {
        if self.aborted {
            return None;
        }
        let mut next: Option<Time> = None;
        for d in &self.dests {
            next = earliest(earliest(earliest(next, d.t3), d.next_heartbeat), d.heartbeat_deadline);
        }
        next
    }

    fn path_count(&self) -> usize {
        self.dests.len()
    }

    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot {
        for d in 0..self.dests.len() {
            let cwnd = self.dests[d].cwnd;
            self.set_cwnd(d, now, cwnd);
        }
        let state = |d: &Dest| SenderState {
            cwnd: d.cwnd,
            ssthresh: Some(d.ssthresh),
            srtt: d.rtt.srtt(),
            rto: d.rtt.rto(),
            min_rtt: d.rtt.min_rtt,
            pacing_rate_bps: None,
        };
        match scope {
            Scope::Path(i) => Snapshot {
                counters: self.dests[i].stats,
                sender: Some(state(&self.dests[i])),
            },
            Scope::All => {
                let counters = self
                    .dests
                    .iter()
                    .fold(TransportCounters::default(), |c, d| c.plus(&d.stats));
                let main = &self.dests[self.data_destination()];
                let cwnd = self.dests.iter().filter(|d| d.active).map(|d| d.cwnd).sum();
                Snapshot {
                    counters,
                    sender: Some(SenderState {
                        cwnd,
                        ssthresh: None,
                        ..state(main)
                    }),
                }
            }
        }
    }

    fn report(&self) -> Report {
        Report {
            congestion_control: Some(if self.cfg.cmt { "sctp-cmt" } else { "sctp" }),
            completed_at: self.completed_at,
            congestion_log: Vec::new(),
        }
    }
}
