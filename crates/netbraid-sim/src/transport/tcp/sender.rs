//! The sending end of a TCP connection (sans-IO).
//!
//! The sender sends what its send buffer holds (`SendBuffer`: the
//! application, a scheduler or a relay fills it) and keeps the list of the
//! segments it actually sent, of any length, for retransmission and SACK
//! bookkeeping. Loss detection and recovery live here; window growth and
//! reduction are delegated to a `CongestionControl` handed in ready-made.
//! When the peer's window is closed and nothing is in flight, the persist
//! timer sends zero-window probes with exponential backoff (RFC 9293 §3.8.6.1).

use super::prr::Prr;
use super::rack::{tick_deadline, Rack, Tlp, LINUX_TIMER_SLACK};
use super::rate::{RateEstimator, RateSample, SendState};
use super::send_buffer::SendBuffer;
use super::{RangeSet, Recovery, RttEstimator, Semantics, TcpConfig};
use crate::cc::{AckEvent, CongestionControl, LossState, RateEvent, SubflowView};
use crate::endpoint::{Outbox, SenderState, Transmit};
use crate::engine::time::{as_secs_f64, deadline, to_f64};
use crate::engine::Time;
use crate::error::SimError;
use crate::net::packet::{tcp_flags, Body, TcpSegment};
use crate::trace::counters::{SendCounters, TransportCounters};
use serde::Serialize;
use std::sync::Arc;

/// One congestion event, for traces and tests.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CongestionRecord {
    pub time_s: f64,
    /// "fast_retransmit", "timeout" or "recovery_exit".
    pub kind: &'static str,
    /// Bytes outstanding (snd_max − snd_una) when it happened.
    pub flight_bytes: u64,
    pub cwnd_before: u64,
    pub cwnd_after: u64,
    pub ssthresh: u64,
}

/// A segment that was sent: its first byte and its length, and what RACK
/// needs (RFC 8985 §6.1): when it was last sent, whether it was sent more
/// than once, whether it is marked lost, whether a retransmission of it
/// is in flight (sent and not known lost) and whether it is SACKed. (What
/// delivery-rate estimation remembers of its last sending is kept beside,
/// in `SentList::rates`: 32 bytes here would double the list's footprint
/// for every controller but BBR.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sent {
    seq: u64,
    xmit_ts: Time,
    /// (a segment is at most one MSS: 32 bits keep the entry at 24 bytes,
    /// and a window holds many)
    len: u32,
    retransmitted: bool,
    lost: bool,
    rexmit_in_flight: bool,
    /// Its first byte is SACKed (the scoreboard's `is_sacked(seq)`, kept
    /// here when deliveries are tracked per segment: with RACK or rate
    /// sampling; false otherwise).
    sacked: bool,
}

impl Sent {
    fn bytes(&self) -> u64 {
        self.len as u64
    }
    /// One past its last byte.
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
    /// Marked lost and not sent again since, nor SACKed: a repair is due.
    fn awaits_repair(&self) -> bool {
        self.lost && !self.rexmit_in_flight && !self.sacked
    }
}

/// The last segment a cumulative ACK reached (`SentList::ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Newest {
    xmit_ts: Time,
    end: u64,
    retransmitted: bool,
    /// Acknowledged whole (not part-way).
    whole: bool,
}

/// The segments in [snd_una, snd_max), oldest first: a vector with a moving
/// head, so that acknowledging the oldest is an index step (space is
/// reclaimed in bulk) — cheaper on the per-ACK path than a ring buffer.
///
/// It also keeps totals of the per-segment marks, so that RACK's pipe and
/// the search for a segment to repair need no walk over the window on
/// every ACK and send (they ran on every one; each total is checked
/// against the walk in debug builds). Marks change only through the
/// methods below.
#[derive(Default)]
struct SentList {
    v: Vec<Sent>,
    head: usize,
    /// A rate-based sender's per-segment delivery-rate state, index for
    /// index with `v` (none for any other sender: boxed, 8 bytes a flow).
    #[allow(clippy::box_collection)] // (the box is the point: 8 bytes, not 24)
    rates: Option<Box<Vec<SendState>>>,
    /// Segments in the list marked lost, and sent more than once.
    lost: u32,
    retransmitted: u32,
    /// Segments awaiting repair (`Sent::awaits_repair`): with none, the
    /// search for one ends at once.
    awaiting: u32,
    /// Bytes of SACKed segments.
    sacked_bytes: u64,
    /// Of the segments not SACKed: bytes marked lost, and bytes with a
    /// retransmission in flight.
    lost_bytes: u64,
    rexmit_bytes: u64,
}

impl SentList {
    fn as_slice(&self) -> &[Sent] {
        &self.v[self.head..]
    }
    fn as_mut_slice(&mut self) -> &mut [Sent] {
        &mut self.v[self.head..]
    }
    fn push(&mut self, s: Sent, rate: Option<SendState>) {
        debug_assert!(!s.lost && !s.rexmit_in_flight && !s.sacked);
        self.v.push(s);
        if let Some(r) = rate {
            let rates = self.rates.get_or_insert_with(Box::default);
            rates.push(r);
            debug_assert_eq!(rates.len(), self.v.len());
        }
    }
    /// The delivery-rate state of the segment at index `i` (rate-based senders).
    fn rate_mut(&mut self, i: usize) -> &mut SendState {
        let rates = self.rates.as_deref_mut().expect("a rate-based sender's list");
        debug_assert_eq!(rates.len(), self.v.len());
        &mut rates[self.head + i]
    }
    fn rate(&self, i: usize) -> &SendState {
        let rates = self.rates.as_deref().expect("a rate-based sender's list");
        debug_assert_eq!(rates.len(), self.v.len());
        &rates[self.head + i]
    }
    /// No segment is marked lost, sent again or SACKed (the common case).
    fn unmarked(&self) -> bool {
        self.lost == 0 && self.retransmitted == 0 && self.sacked_bytes == 0
    }
    /// Linux's packets in flight (RFC 6675's pipe with RACK's marks) when
    /// `outstanding` bytes are unacknowledged: outstanding − SACKed − lost
    /// + retransmissions in flight.
    fn pipe(&self, outstanding: u64) -> u64 {
        outstanding - self.sacked_bytes - self.lost_bytes + self.rexmit_bytes
    }
    /// Take `len` bytes of segment `s` out of the totals (it leaves the
    /// list, or its acknowledged front does).
    fn uncount(&mut self, s: Sent, len: u64) {
        if s.sacked {
            self.sacked_bytes -= len;
        } else {
            self.lost_bytes -= if s.lost { len } else { 0 };
            self.rexmit_bytes -= if s.rexmit_in_flight { len } else { 0 };
        }
    }
    /// Everything below `ack` is acknowledged; a segment acknowledged
    /// part-way (not by our receivers, which ACK whole segments) keeps its
    /// rest. Returns the last segment starting below `ack`, as it was
    /// (`want_newest`; always when acknowledged part-way).
    fn ack(&mut self, ack: u64, want_newest: bool) -> Option<Newest> {
        let mut h = self.head;
        // (mostly no segment in the list is marked: nothing to undo)
        let marked = !self.unmarked();
        while let Some(s) = self.v.get(h).filter(|s| s.end() <= ack) {
            if marked && (s.lost || s.retransmitted || s.sacked) {
                let s = *s;
                self.lost -= s.lost as u32;
                self.retransmitted -= s.retransmitted as u32;
                self.awaiting -= s.awaits_repair() as u32;
                self.uncount(s, s.bytes());
            }
            h += 1;
        }
        let newest_of = |s: &Sent, whole| Newest {
            xmit_ts: s.xmit_ts,
            end: s.end(),
            retransmitted: s.retransmitted,
            whole,
        };
        let mut newest = None;
        if want_newest && h > self.head {
            newest = Some(newest_of(&self.v[h - 1], true));
        }
        if let Some(&s) = self.v.get(h).filter(|s| s.seq < ack) {
            newest = Some(newest_of(&s, false));
            self.uncount(s, ack - s.seq);
            let s = &mut self.v[h];
            s.len -= (ack - s.seq) as u32;
            s.seq = ack;
        }
        if h == self.v.len() {
            self.v.clear();
            if let Some(rates) = self.rates.as_deref_mut() {
                rates.clear();
            }
            h = 0;
        } else if h >= 64 && 2 * h >= self.v.len() {
            self.v.drain(..h);
            if let Some(rates) = self.rates.as_deref_mut() {
                rates.drain(..h);
            }
            h = 0;
        }
        self.head = h;
        newest
    }
    /// Mark the segment at index `i` (of `as_slice`, not SACKed) lost: a
    /// retransmission of it in flight is lost too. True if it was not
    /// marked before.
    fn mark_lost(&mut self, i: usize) -> bool {
        let s = &mut self.v[self.head + i];
        debug_assert!(!s.sacked);
        let (was_lost, was_awaiting, rexmit) = (s.lost, s.awaits_repair(), s.rexmit_in_flight);
        (s.lost, s.rexmit_in_flight) = (true, false);
        let len = s.bytes();
        self.lost += !was_lost as u32;
        self.awaiting += !was_awaiting as u32;
        self.lost_bytes += if was_lost { 0 } else { len };
        self.rexmit_bytes -= if rexmit { len } else { 0 };
        !was_lost
    }
    /// The segment at index `i` was sent again.
    fn mark_retransmitted(&mut self, i: usize) {
        let s = &mut self.v[self.head + i];
        let (was_awaiting, was_in_flight, was_retransmitted) = (s.awaits_repair(), s.rexmit_in_flight, s.retransmitted);
        (s.retransmitted, s.rexmit_in_flight) = (true, true);
        let (len, sacked) = (s.bytes(), s.sacked);
        self.retransmitted += !was_retransmitted as u32;
        self.awaiting -= was_awaiting as u32;
        self.rexmit_bytes += if was_in_flight || sacked { 0 } else { len };
    }
    /// The segment at index `i` was newly SACKed.
    fn mark_sacked(&mut self, i: usize) {
        let s = &mut self.v[self.head + i];
        if s.sacked {
            return;
        }
        let (was_awaiting, before) = (s.awaits_repair(), *s);
        s.sacked = true;
        self.awaiting -= was_awaiting as u32;
        self.uncount(before, before.bytes());
        self.sacked_bytes += before.bytes();
    }
    /// The totals, walked (what the debug assertions check them against).
    fn walked(&self) -> (u32, u32, u32, u64, u64, u64) {
        let l = self.as_slice();
        let sum = |f: &dyn Fn(&Sent) -> bool| l.iter().filter(|s| f(s)).map(|s| s.bytes()).sum::<u64>();
        let count = |f: &dyn Fn(&Sent) -> bool| l.iter().filter(|s| f(s)).count() as u32;
        (
            count(&|s| s.lost),
            count(&|s| s.retransmitted),
            count(&|s| s.awaits_repair()),
            sum(&|s| s.sacked),
            sum(&|s| !s.sacked && s.lost),
            sum(&|s| !s.sacked && s.rexmit_in_flight),
        )
    }
    fn check(&self) {
        let kept = (
            self.lost,
            self.retransmitted,
            self.awaiting,
            self.sacked_bytes,
            self.lost_bytes,
            self.rexmit_bytes,
        );
        let what = "(lost, retransmitted, awaiting, sacked, lost bytes, rexmit bytes)";
        debug_assert_eq!(kept, self.walked(), "{what}");
    }
}

pub struct TcpSender {
    /// Shared with every connection that has the same settings: thousands
    /// of flows hold one copy.
    cfg: Arc<TcpConfig>,
    mss: u64,
    cc: Box<dyn CongestionControl>,
    rtt: RttEstimator,
    buf: SendBuffer,
    /// Every segment in [snd_una, snd_max), oldest first, as it was sent
    /// (retransmissions reuse the boundaries).
    sent: SentList,
    /// Oldest unacknowledged byte.
    snd_una: u64,
    /// Next byte to send (below snd_max after a timeout: go-back-N).
    snd_nxt: u64,
    /// One past the highest byte ever sent.
    snd_max: u64,
    started: bool,
    /// The peer's advertised window is not this sender's limit (an MPTCP
    /// subflow: the connection enforces its own window above it).
    rwnd_unlimited: bool,
    /// Peer's advertised window.
    rwnd: u64,
    dupacks: u32,
    /// Bytes sent beyond cwnd by limited transmit since the last new ACK;
    /// excluded from FlightSize when ssthresh is set (RFC 5681 §3.2 step 2).
    limited_transmit_bytes: u64,
    in_recovery: bool,
    /// snd_max at the last recovery entry or timeout (NewReno `recover`,
    /// RFC 6675 RecoveryPoint): no new recovery until snd_una passes it.
    recover: Option<u64>,
    /// Reno/NewReno window inflation during fast recovery (may go negative
    /// through partial-ACK deflation).
    inflation: i64,
    partial_acks: u32,
    /// SACK scoreboard.
    sacked: RangeSet,
    /// One past the highest byte retransmitted in this recovery (RFC 6675 HighRxt).
    high_rxt: u64,
    /// RFC 6675 RescueRxt: one rescue retransmission per recovery when
    /// snd_una passes it, so a loss at the tail needs no timeout.
    rescue_rxt: u64,
    /// Segment being timed: (end sequence, send time). Cleared by any
    /// retransmission that covers it (Karn).
    timed: Option<(u64, Time)>,
    rto_deadline: Option<Time>,
    /// Persist timer: armed while the peer's window keeps data back and
    /// nothing is in flight to bring a window update.
    persist_deadline: Option<Time>,
    /// Probes sent since the window last opened (the persist backoff).
    persist_backoff: u32,
    /// snd_una at the last timeout, to apply the ssthresh reduction only on
    /// the first timeout of a segment.
    last_timeout_una: Option<u64>,
    /// snd_una at the last two loss events (fast retransmit, timeout, ECN),
    /// latest first: what coupled controllers learn of a subflow's losses.
    una_at_loss: [u64; 2],
    /// Rounds (round trips) so far, and snd_max when this one began.
    round: u64,
    round_end: u64,
    cwnd_clock: Time,
    /// snd_max at the last ECN reduction: one reduction per window.
    ecn_recover: u64,
    /// Set CWR on the next new segment.
    send_cwr: bool,
    stats: SendCounters,
    log: Vec<CongestionRecord>,
    completed_at: Option<Time>,
    // The optional machinery is boxed and present only when enabled: a
    // sender without it (RFC mode) is ~300 bytes smaller, which counts when
    // thousands of flows sit idle (bench/flow_memory.py).
    /// RACK's state: present iff `cfg.rack` (the code asks either).
    rack: Option<Box<Rack>>,
    /// TLP's state: present iff `cfg.tlp`.
    tlp: Option<Box<Tlp>>,
    /// PRR's state over the current recovery: present iff PRR decides the
    /// sending in recovery (`cfg.prr`, and a controller that is not rate-based).
    prr: Option<Box<Prr>>,
    /// D-SACK and undo's state: present iff `cfg.dsack`.
    undo: Option<Box<Undo>>,
    /// Newly SACKed ranges of the ACK being processed (kept for its allocation).
    newly_sacked: Vec<(u64, u64)>,
    /// Delivery-rate sampling: present iff the controller is rate-based
    /// (BBR), which is handed a sample after every ACK.
    rate: Option<Box<RateSampling>>,
    /// Pacing (when the controller gives a rate): the earliest time the next
    /// burst may leave, the timer that sends it, and the burst last sent
    /// (boxed when the first one leaves: most senders never pace).
    pacing_next: Time,
    pacing_deadline: Option<Time>,
    burst: Option<Box<Burst>>,
    /// The earliest deadline of the loss timers (retransmission, probes,
    /// persist) and of all timers (with pacing's), `Time::MAX` for none,
    /// worked out again as each call that may move a timer returns: the
    /// simulator, and an MPTCP connection for each of its subflows, ask
    /// after every packet, more often than the timers move.
    loss_timer: Time,
    timer: Time,
}

/// What undoing a spurious window reduction takes (Linux's undo_marker,
/// undo_retrans, prior_cwnd and prior_ssthresh; `cfg.dsack`).
#[derive(Debug, Default)]
struct Undo {
    /// snd_una when the reduction began: D-SACKs for data above it count
    /// (None: nothing to undo).
    marker: Option<u64>,
    /// Retransmissions since then not yet shown needless by a D-SACK; −1
    /// before the first (Linux's undo_retrans). At 0 the reduction undoes.
    retrans: i64,
    /// cwnd when the reduction began, and max(ssthresh, ¾·cwnd) then
    /// (tcp_current_ssthresh): what an undo restores. None when it began
    /// inside an ECN reduction's window: the undo restores nothing (Linux's
    /// prior_ssthresh = 0).
    prior_cwnd: u64,
    prior_ssthresh: Option<u64>,
    /// Segments D-SACKed so far (Linux's dsack_dups): more than were ever
    /// retransmitted makes a D-SACK dubious, and it is ignored.
    dsack_dups: u64,
}

/// The pacing burst last sent. Linux paces whole TSO/GSO packets: a burst
/// of up to `pacing_burst` segments leaves at one instant, and the next may
/// leave the burst's length / rate later (`tcp_update_skb_after_send`).
#[derive(Clone, Copy, Debug, Default)]
struct Burst {
    /// The instant it left.
    at: Time,
    /// When it was due, or `at` if that was later: the next is due its
    /// length / rate after this.
    base: Time,
    /// How late it left: up to half its interval is taken back.
    credit: Time,
    /// Bytes in it so far, and segments it may still take.
    bytes: u64,
    left: u64,
}

/// A rate-based sender's delivery-rate state (the Internet-Draft
/// draft-cheng-iccrg-delivery-rate-estimation, as Linux's tcp_rate.c does it).
#[derive(Default)]
struct RateSampling {
    est: RateEstimator,
    /// The ACK being processed: its rate sample, the bytes it had marked
    /// lost, and the send time of the newest once-sent segment it delivered.
    sample: RateSample,
    ack_lost: u64,
    ack_newest_sent: Option<Time>,
    /// Bytes marked lost so far, by ACKs, timers and timeouts (Linux's
    /// `tp->lost`).
    lost_total: u64,
    /// Smallest per-ACK RTT (the rate samples' floor, as Linux's tcp_min_rtt).
    min_ack_rtt: Option<Time>,
    /// Without RACK: how far RFC 6675's IsLost reaches (bytes below it and
    /// not SACKed are lost), so that losses can be told to the controller.
    lost_mark: u64,
}

impl TcpSender {
    /// A sender driving the controller `cc` (built for this connection's MSS
    /// and initial window; see `controller_config`).
    pub fn new(cfg: impl Into<Arc<TcpConfig>>, cc: Box<dyn CongestionControl>) -> Self {
        let cfg = cfg.into();
        let mss = cfg.mss as u64;
        let mut rtt = RttEstimator::new(cfg.rto_min, cfg.rto_max, cfg.rto_initial, cfg.clock_granularity);
        if cfg.linux_rto {
            rtt.use_linux();
        }
        Self {
            mss,
            rtt,
            buf: SendBuffer::new(cfg.send_buffer()),
            sent: SentList::default(),
            snd_una: 0,
            snd_nxt: 0,
            snd_max: 0,
            started: false,
            rwnd_unlimited: false,
            rwnd: cfg.receive_buffer(),
            dupacks: 0,
            limited_transmit_bytes: 0,
            in_recovery: false,
            recover: None,
            inflation: 0,
            partial_acks: 0,
            sacked: RangeSet::default(),
            high_rxt: 0,
            rescue_rxt: 0,
            timed: None,
            rto_deadline: None,
            persist_deadline: None,
            persist_backoff: 0,
            last_timeout_una: None,
            una_at_loss: [0, 0],
            round: 0,
            round_end: 0,
            cwnd_clock: 0,
            ecn_recover: 0,
            send_cwr: false,
            stats: SendCounters::default(),
            log: Vec::new(),
            completed_at: None,
            rack: cfg.rack.then(Box::default),
            tlp: cfg.tlp.then(Box::default),
            prr: (cfg.prr && !cc.rate_based()).then(Box::default),
            undo: cfg.dsack.then(Box::default),
            newly_sacked: Vec::new(),
            rate: cc.rate_based().then(Box::default),
            pacing_next: 0,
            pacing_deadline: None,
            burst: None,
            loss_timer: Time::MAX,
            timer: Time::MAX,
            cc,
            cfg,
        }
    }

    /// A sender with the controller its configuration names (`cfg.cc`).
    pub fn from_config(cfg: TcpConfig) -> Result<Self, SimError> {
        let cc = crate::cc::build("", &cfg.cc, &cfg.cc_params, cfg.controller_config())?;
        Ok(Self::new(cfg, cc))
    }

    // ---- the application's side ------------------------------------------

    /// A blocked writer hands over `bytes` (None: endlessly, iperf-style);
    /// they enter the send buffer as acknowledgements free room.
    pub fn write_all(&mut self, now: Time, bytes: Option<u64>, out: &mut Outbox) {
        self.begin(now);
        self.buf.write_all(bytes);
        self.send_available(now, out);
        self.refresh_timers();
    }

    /// Non-blocking write: takes what fits in the send buffer now, sends
    /// what the windows allow, and returns the bytes taken.
    pub fn write(&mut self, now: Time, bytes: u64, out: &mut Outbox) -> u64 {
        self.begin(now);
        self.integrate_to(now);
        // A whole segment already waiting means the windows hold data back
        // (not Nagle, not a lack of data): bytes behind it cannot go now.
        // (MPTCP tops up deep subflow queues on every ACK: this skips a
        // send pass that would find nothing.)
        // (held back by pacing, it may go now if the pacing time has come)
        let blocked = self.unsent() >= self.mss && self.pacing_deadline.is_none();
        let n = self.buf.write(self.snd_una, bytes);
        if !blocked || cfg!(debug_assertions) {
            let before = out.len();
            self.send_available(now, out);
            debug_assert!(!blocked || out.len() == before, "a blocked sender sent after a write");
            self.refresh_timers();
        }
        n
    }

    /// Room for a non-blocking write.
    pub fn write_space(&self) -> u64 {
        self.buf.space(self.snd_una)
    }

    /// The application will write nothing more (shutdown for writing): a
    /// last short segment goes without waiting.
    pub fn close(&mut self, now: Time, out: &mut Outbox) {
        self.buf.close();
        self.send_available(now, out);
        self.refresh_timers();
    }

    /// The application stops writing (iperf's -t ran out): data already
    /// sent is still delivered and acknowledged, nothing new is sent.
    pub fn stop(&mut self) {
        self.buf.stop(self.snd_max);
        self.persist_deadline = None;
        self.refresh_timers();
    }

    fn begin(&mut self, now: Time) {
        if !self.started {
            self.started = true;
            self.cwnd_clock = now;
        }
    }

    // ---- accessors -------------------------------------------------------

    pub fn stats(&self) -> &SendCounters {
        &self.stats
    }
    /// Stats with the cwnd integral brought up to `now`.
    pub fn stats_at(&mut self, now: Time) -> TransportCounters {
        self.integrate_to(now);
        self.stats.into()
    }
    /// Window, thresholds and timers now.
    pub fn state(&self) -> SenderState {
        SenderState {
            cwnd: self.cwnd(),
            ssthresh: (self.ssthresh() != u64::MAX).then(|| self.ssthresh()),
            srtt: self.srtt(),
            rto: self.rto(),
            min_rtt: self.min_rtt(),
            pacing_rate_bps: self.pacing_rate().map(|r| r * 8.0),
        }
    }
    /// What a coupled multipath controller sees of this subflow.
    pub fn view(&self) -> SubflowView {
        SubflowView {
            cwnd: self.cwnd(),
            ssthresh: self.ssthresh(),
            srtt: self.srtt(),
            mss: self.mss,
            bytes_acked: self.snd_una,
            bytes_since_loss: self.snd_una - self.una_at_loss[0],
            bytes_between_losses: self.una_at_loss[0] - self.una_at_loss[1],
            in_recovery: self.in_recovery,
        }
    }
    /// Effective congestion window (including fast-recovery inflation).
    pub fn cwnd(&self) -> u64 {
        (self.cc.window() as i64 + self.inflation).max(self.mss as i64) as u64
    }
    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }
    /// What a reduction starts from: FlightSize as the RFCs count it, or the
    /// window at the congestion event (`ssthresh_from_cwnd`, as Linux).
    fn reduction_base(&self, flight: u64, cwnd: u64) -> u64 {
        if self.cfg.ssthresh_from_cwnd {
            cwnd
        } else {
            flight
        }
    }
    pub fn srtt(&self) -> Option<Time> {
        self.rtt.srtt()
    }
    pub fn rto(&self) -> Time {
        self.rtt.rto()
    }
    pub fn min_rtt(&self) -> Option<Time> {
        self.rtt.min_rtt
    }
    pub fn flight_size(&self) -> u64 {
        self.snd_max - self.snd_una
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_max(&self) -> u64 {
        self.snd_max
    }
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }
    /// One past the last byte written (the next write's first sequence number).
    pub fn written_end(&self) -> u64 {
        self.buf.end(self.snd_una)
    }
    /// Bytes written but not yet sent.
    pub fn unsent(&self) -> u64 {
        self.buf.end(self.snd_una).saturating_sub(self.snd_max)
    }
    /// New bytes the congestion window would let go now, beyond those
    /// already waiting unsent: what a multipath scheduler may hand this
    /// subflow (the peer's window is the connection's business).
    pub fn send_room(&self) -> u64 {
        if self.in_recovery && self.cfg.recovery == Recovery::Sack {
            return self.cwnd().saturating_sub(self.pipe()).saturating_sub(self.unsent());
        }
        (self.cwnd() + self.limited_transmit_extra())
            .saturating_sub(self.snd_max - self.snd_una)
            .saturating_sub(self.unsent())
    }
    /// Limited transmit (RFC 3042): one extra new segment beyond the window
    /// on each of the first two duplicate ACKs.
    fn limited_transmit_extra(&self) -> u64 {
        if self.cfg.limited_transmit && !self.ns2() && !self.in_recovery && self.dupacks < self.cfg.dupthresh {
            self.dupacks.min(2) as u64 * self.mss
        } else {
            0
        }
    }
    /// MPTCP's penalisation (see `CongestionControl::penalise`), applied
    /// only in the Open state (not in recovery, no timeout pending).
    pub fn penalise(&mut self, now: Time) -> bool {
        if self.in_recovery || self.timed_out() {
            return false;
        }
        self.integrate_to(now);
        self.cc.penalise();
        true
    }
    /// An RTT measured outside the data (an MPTCP join's SYN → SYN/ACK, not
    /// retransmitted): the estimator starts from it, as Linux's does from
    /// the handshake.
    pub fn on_handshake_rtt(&mut self, sample: Time) {
        if self.rtt.srtt().is_none() {
            self.rtt.on_sample_linux(sample, self.snd_una, self.snd_max);
        }
    }
    /// A retransmission timeout fired and no new data has been acknowledged
    /// since (the subflow is in the Loss state, or its path has failed).
    pub fn timed_out(&self) -> bool {
        self.last_timeout_una.is_some()
    }
    pub fn congestion_log(&self) -> &[CongestionRecord] {
        &self.log
    }
    pub fn completed_at(&self) -> Option<Time> {
        self.completed_at
    }
    /// Take the peer's advertised window as unlimited (an MPTCP subflow,
    /// whose connection enforces the one window of all its subflows).
    pub fn ignore_peer_window(&mut self) {
        self.rwnd_unlimited = true;
    }
    pub fn controller_name(&self) -> &'static str {
        self.cc.name()
    }
    /// When the sender next needs `on_timer`.
    pub fn poll_at(&self) -> Option<Time> {
        deadline(self.next_timer())
    }
    /// `poll_at`, with `Time::MAX` for none.
    #[inline]
    pub fn next_timer(&self) -> Time {
        self.kept_timers().1
    }
    /// The earliest of the retransmission, probe and persist timers (not
    /// pacing's), `Time::MAX` for none: what MPTCP's connection-level timer
    /// follows.
    #[inline]
    pub fn next_loss_timer(&self) -> Time {
        self.kept_timers().0
    }
    #[inline]
    fn kept_timers(&self) -> (Time, Time) {
        debug_assert_eq!(
            (self.loss_timer, self.timer),
            self.timers(),
            "a timer moved unrefreshed"
        );
        (self.loss_timer, self.timer)
    }
    /// The loss timers' earliest deadline and every timer's, as kept in
    /// `loss_timer` and `timer`.
    fn timers(&self) -> (Time, Time) {
        let at = |d: Option<Time>| d.unwrap_or(Time::MAX);
        let rack = self.rack.as_ref().map_or(Time::MAX, |r| at(r.deadline));
        let tlp = self.tlp.as_ref().map_or(Time::MAX, |t| at(t.deadline));
        let loss = at(self.rto_deadline).min(at(self.persist_deadline)).min(rack).min(tlp);
        (loss, loss.min(at(self.pacing_deadline)))
    }
    /// Every call that may move a timer ends here.
    #[inline]
    fn refresh_timers(&mut self) {
        (self.loss_timer, self.timer) = self.timers();
    }
    /// The pacing rate now (payload bytes per second), if the sender paces.
    pub fn pacing_rate(&self) -> Option<f64> {
        self.cc.pacing_rate()
    }

    // ---- input -----------------------------------------------------------

    /// An ACK from the receiver.
    pub fn on_segment(&mut self, now: Time, seg: &TcpSegment, out: &mut Outbox) {
        self.on_segment_with(now, seg, &[], out)
    }

    /// An ACK from the receiver, with a read-only view of the other subflows
    /// of the same multipath connection (for coupled controllers).
    pub fn on_segment_with(&mut self, now: Time, seg: &TcpSegment, siblings: &[SubflowView], out: &mut Outbox) {
        self.on_ack(now, seg, siblings, out);
        self.refresh_timers();
    }

    fn on_ack(&mut self, now: Time, seg: &TcpSegment, siblings: &[SubflowView], out: &mut Outbox) {
        if seg.flags & tcp_flags::ACK == 0 {
            return;
        }
        self.integrate_to(now);
        self.stats.acks_received += 1;
        let ack = seg.ack.min(self.snd_max);
        if ack < self.snd_una {
            return; // older than what we know (reordered): neither its window nor its SACKs are current
        }
        let flight_before = self.snd_max - self.snd_una;
        let (delivered_before, prior_in_flight) = if self.rate.is_some() {
            let in_flight = self.in_flight();
            let r = self.rate_mut();
            (r.sample, r.ack_lost, r.ack_newest_sent) = (RateSample::default(), 0, None);
            (r.est.delivered, in_flight)
        } else {
            (0, 0)
        };
        let wnd = if self.rwnd_unlimited { u32::MAX } else { seg.wnd } as u64;
        let window_changed = wnd != self.rwnd;
        self.rwnd = wnd;

        // (PRR counts what each ACK delivers: the cumulative ACK's advance
        // and the change in SACKed bytes above it)
        let sacked_before = if self.prr_on() { self.sacked.bytes() } else { 0 };
        if let Some(rack) = self.rack.as_deref_mut() {
            rack.begin_ack();
        }
        let mut newly_sacked = 0;
        // (Linux's RTO also samples the first newly SACKed segment sent
        // once, when the cumulative ACK gives no sample: tcp_ack_update_rtt)
        let mut first_sackt = None;
        let dsack = if self.undo.is_some() { dsack_block(seg) } else { None };
        // (most ACKs carry no SACK block: nothing to walk, nothing newly SACKed)
        if self.cfg.recovery == Recovery::Sack && !(seg.sack.is_empty() && self.newly_sacked.is_empty()) {
            let mut parts = std::mem::take(&mut self.newly_sacked);
            parts.clear();
            let per_segment = self.rack.is_some() || self.rate.is_some();
            let linux_rtt = self.rtt.is_linux();
            for (s, e) in seg.sack.iter(seg.ack).skip(dsack.is_some() as usize) {
                let (s, e) = (s.max(ack), e.min(self.snd_max));
                if s < e && (per_segment || linux_rtt) {
                    newly_sacked += self.sacked.add_with(s, e, |a, b| parts.push((a, b)));
                } else if s < e {
                    newly_sacked += self.sacked.add(s, e);
                }
            }
            for &(a, b) in &parts {
                let first = if per_segment {
                    self.segments_delivered(now, a, b, false)
                } else {
                    self.first_once_sent_in(a, b)
                };
                first_sackt = first_sackt.or(first);
            }
            self.newly_sacked = parts;
        }
        // A D-SACK of the outstanding loss probe's copy (Linux's
        // FLAG_DSACK_TLP): the probe ends with no loss, and RACK's window
        // does not widen for it.
        let probe_dsack = dsack.is_some_and(|(s, e)| {
            let probe = self.tlp.as_ref().and_then(|t| t.outstanding);
            probe.is_some_and(|(end, resent)| resent && e == end && e - s <= self.mss)
        });
        if let Some(block) = dsack {
            // (RACK widens only for a D-SACK that passed the dubious test:
            // Linux's rack.dsack_seen)
            if self.on_dsack(block) && !probe_dsack {
                let (snd_una, snd_nxt) = (self.snd_una, self.snd_max);
                if let Some(rack) = self.rack.as_deref_mut() {
                    rack.on_dsack(snd_una, snd_nxt);
                }
            }
        }
        let una_before = self.snd_una;

        // RFC 3168 §6.1.2: an ECN echo halves the window once per window of
        // data, without retransmitting; the next new segment carries CWR.
        if self.cfg.ecn && seg.flags & tcp_flags::ECE != 0 && !self.in_recovery && ack > self.ecn_recover {
            let cwnd_before = self.cwnd();
            self.cc
                .on_congestion_event(now, self.reduction_base(flight_before, cwnd_before));
            self.mark_loss();
            if let Some(u) = self.undo.as_deref_mut() {
                u.marker = None; // (as Linux's tcp_enter_cwr: an ECN echo is no loss to undo)
            }
            self.ecn_recover = self.snd_max;
            self.send_cwr = true;
            self.stats.ecn_reductions += 1;
            self.record(now, "ecn_reduction", flight_before, cwnd_before);
        }
        if ack > self.snd_una {
            self.on_new_ack(now, ack, flight_before, first_sackt, siblings, out);
            // RFC 6675 §5 (4b): loss may be evident from SACK information on
            // a cumulative ACK too.
            if self.cfg.recovery == Recovery::Sack
                && !self.cfg.rack
                && !self.in_recovery
                && self.snd_una < self.snd_max
                && self.is_lost(self.snd_una)
            {
                self.enter_recovery(now, out);
            }
        } else if ack == self.snd_una && self.snd_max > self.snd_una {
            if let Some(t) = first_sackt.filter(|_| self.rtt.is_linux()) {
                self.rtt.on_sample_linux(now - t, self.snd_una, self.snd_max);
            }
            // RFC 5681 §2 dupack: no data (our ACKs carry none) and the same
            // window (a window update is not a dupack); with SACK, RFC 6675:
            // an ACK that SACKs new data.
            let duplicate = if self.cfg.recovery == Recovery::Sack {
                newly_sacked > 0
            } else {
                !window_changed
            };
            if duplicate {
                self.dupacks += 1;
                if self.ns2() && self.cfg.limited_transmit && !self.in_recovery && self.dupacks < self.cfg.dupthresh {
                    self.ns2_send_one(now, out);
                }
                if self.in_recovery {
                    if self.cfg.recovery != Recovery::Sack {
                        self.inflation += self.mss as i64;
                    }
                } else if self.cfg.rack {
                    // (RACK decides below, by time)
                } else if self.dupacks == self.cfg.dupthresh
                    || (self.cfg.recovery == Recovery::Sack
                        && (self.dupacks > self.cfg.dupthresh || self.is_lost(self.snd_una)))
                {
                    self.enter_recovery(now, out);
                }
            }
        }
        if self.cfg.tlp {
            self.tlp_on_ack(now, ack, una_before, newly_sacked, flight_before, probe_dsack);
        }
        // (Linux tries on ACKs that carry a D-SACK, and, while a timeout's
        // retransmissions go out, on those that move snd_una:
        // tcp_try_undo_loss)
        if self.undo.is_some() && (dsack.is_some() || self.snd_una > una_before) {
            self.try_undo(now);
        }
        if let Some(rack) = self.rack.as_deref_mut() {
            rack.end_ack();
            self.rack_detect_and_recover(now, out);
        }
        if self.prr_on() && self.in_recovery {
            let acked = self.snd_una - una_before;
            let delivered = (acked + self.sacked.bytes()).saturating_sub(sacked_before);
            self.prr_on_ack(delivered);
        }
        if self.rate.is_some() {
            self.feed_rate_sample(now, delivered_before, prior_in_flight);
        }
        self.send_available(now, out);
    }

    /// Hand the ACK's delivery-rate sample to a rate-based controller.
    fn feed_rate_sample(&mut self, now: Time, delivered_before: u64, prior_in_flight: u64) {
        if !self.cfg.rack && self.cfg.recovery == Recovery::Sack {
            let lost = self.newly_lost_rfc6675();
            let r = self.rate_mut();
            r.ack_lost += lost;
            r.lost_total += lost;
        }
        let r = self.rate_mut();
        let rtt = r.ack_newest_sent.map(|t| now - t);
        if let Some(t) = rtt {
            r.min_ack_rtt = Some(r.min_ack_rtt.map_or(t, |m| m.min(t)));
        }
        let mut sample = r.sample;
        r.est.finish(&mut sample, r.min_ack_rtt);
        let (delivered, losses, lost_total) = (r.est.delivered, r.ack_lost, r.lost_total);
        let state = if self.in_recovery {
            LossState::Recovery
        } else if self.in_loss_recovery() {
            LossState::Loss
        } else {
            LossState::Open
        };
        let in_flight = self.in_flight();
        self.cc.on_rate_sample(&RateEvent {
            now,
            sample,
            delivered,
            acked_sacked: delivered - delivered_before,
            losses,
            lost_total,
            prior_in_flight,
            in_flight,
            rtt,
            srtt: self.rtt.srtt(),
            state,
            pacing_wait: self.pacing_next.saturating_sub(now),
        });
        if self.cc.holds_flight_down() {
            self.rate_mut().est.set_app_limited(in_flight);
        }
    }

    /// The delivery-rate state (only called for a rate-based controller).
    fn rate_mut(&mut self) -> &mut RateSampling {
        self.rate
            .as_deref_mut()
            .expect("a rate-based controller samples delivery rates")
    }

    /// PRR's accounting of an ACK that delivered `delivered` bytes in recovery.
    fn prr_on_ack(&mut self, delivered: u64) {
        // (taken out for the call: pipe() reads the rest of the sender)
        if let Some(mut prr) = self.prr.take() {
            prr.on_ack(delivered, self.pipe(), self.cc.ssthresh(), self.mss);
            self.prr = Some(prr);
        }
    }

    /// Without RACK, the bytes RFC 6675's IsLost newly covers (unSACKed,
    /// below the point where enough SACKed data lies above): what Linux's
    /// scoreboard would mark lost on this ACK.
    fn newly_lost_rfc6675(&mut self) -> u64 {
        let below = self.lost_below();
        let from = self.rate_mut().lost_mark.max(self.snd_una);
        if below <= from {
            return 0;
        }
        self.rate_mut().lost_mark = below;
        self.unsacked_between(from, below)
    }

    /// Bytes in [a, b) not SACKed.
    fn unsacked_between(&self, a: u64, b: u64) -> u64 {
        if b <= a {
            0
        } else {
            (b - a) - self.sacked.overlap(a, b)
        }
    }

    /// Bytes in the network (Linux's packets in flight): sent, not
    /// delivered and not marked lost, plus retransmissions in flight.
    fn in_flight(&self) -> u64 {
        if (self.sacked.is_empty() && !self.in_loss_recovery()) || self.cfg.recovery != Recovery::Sack {
            self.snd_max - self.snd_una
        } else {
            self.pipe()
        }
    }

    /// PRR decides the sending in recovery (not with a rate-based
    /// controller, which sets the window itself, as in Linux).
    fn prr_on(&self) -> bool {
        self.prr.is_some()
    }

    /// `first_sackt`: when the first segment this ACK newly SACKs, sent
    /// once, was sent (Linux's RTO takes it when the cumulative ACK gives
    /// no sample).
    fn on_new_ack(
        &mut self,
        now: Time,
        ack: u64,
        flight_before: u64,
        first_sackt: Option<Time>,
        siblings: &[SubflowView],
        out: &mut Outbox,
    ) {
        let newly = ack - self.snd_una;
        let mut rtt_sample = None;
        if let Some((end, sent)) = self.timed {
            if ack >= end {
                let sample = now - sent;
                if !self.rtt.is_linux() {
                    self.rtt.on_sample(sample);
                }
                self.stats.rtt_samples += 1;
                self.stats.rtt_sum_ns += sample;
                self.timed = None;
                rtt_sample = Some(sample);
            }
        }
        // A round ends when data sent after it began is acknowledged.
        let round_start = ack > self.round_end;
        if round_start {
            self.round += 1;
            self.round_end = self.snd_max;
        }
        // The common cumulative ACK, for RACK alone: original sendings,
        // none SACKed, so sent in sequence order. RACK learns from the run
        // what it learns from its oldest (the smallest end: the reordering
        // test) and its newest (the most recently sent), which the list's
        // own walk finds; otherwise it is told segment by segment.
        let mut oldest = None;
        if self.rack.is_some() || self.rate.is_some() {
            if self.rate.is_none() && self.sent.unmarked() {
                oldest = self.sent.as_slice().first().map(|s| (s.xmit_ts, s.end()));
            } else {
                self.segments_delivered(now, self.snd_una, ack, true);
            }
        }
        // Linux's RTO samples every ACK of new data: the oldest segment it
        // covers (tcp_clean_rtx_queue's seq_rtt), unless it covers
        // retransmitted data (Karn: Linux then times the ACK by the
        // timestamp it echoes, which may be the original's or the
        // retransmission's; not modelled, so no sample).
        let linux_rtt = if self.rtt.is_linux() {
            let segs = self.sent.as_slice();
            let retransmitted =
                !self.sent.unmarked() && segs.iter().take_while(|s| s.seq < ack).any(|s| s.retransmitted);
            let cumulative = segs.first().filter(|_| !retransmitted).map(|s| now - s.xmit_ts);
            cumulative.or(first_sackt.map(|t| now - t))
        } else {
            None
        };
        self.snd_una = ack;
        if let Some(sample) = linux_rtt {
            self.rtt.on_sample_linux(sample, ack, self.snd_max);
        }
        let wants_ack_rtt = self.cc.wants_ack_rtt();
        let newest = self.sent.ack(ack, oldest.is_some() || wants_ack_rtt);
        if let (Some(rack), Some((sent, end)), Some(n)) = (self.rack.as_deref_mut(), oldest, newest) {
            rack.on_delivered(now, sent, end, false, None);
            if n.end != end {
                rack.on_delivered(now, n.xmit_ts, n.end, false, None);
            }
        }
        // (the newest segment the ACK covers, if sent once and acknowledged
        // whole: Linux's per-ACK RTT)
        let ack_rtt = if wants_ack_rtt {
            newest.filter(|n| n.whole && !n.retransmitted).map(|n| now - n.xmit_ts)
        } else {
            None
        };
        self.snd_nxt = self.snd_nxt.max(ack);
        self.high_rxt = self.high_rxt.max(ack);
        self.sacked.prune_below(ack);
        self.dupacks = 0;
        self.limited_transmit_bytes = 0;
        self.last_timeout_una = None;

        let mut restart_timer = true;
        let (srtt, min_rtt, round) = (self.rtt.srtt(), self.rtt.min_rtt, self.round);
        let event = |cwnd_limited| AckEvent {
            now,
            newly_acked: newly,
            rtt_sample,
            ack_rtt,
            srtt,
            min_rtt,
            flight: flight_before,
            round,
            round_start,
            cwnd_limited,
            siblings,
        };
        if self.in_recovery {
            let ev = event(true);
            if self.rate.is_none() {
                self.cc.on_ack_in_recovery(&ev);
            }
            let full = self.recover.is_some_and(|r| ack >= r);
            match self.cfg.recovery {
                // Tahoe never enters recovery; Reno leaves on any new ACK.
                Recovery::Reno | Recovery::Tahoe => self.exit_recovery(now),
                Recovery::NewReno | Recovery::Sack if full => self.exit_recovery(now),
                Recovery::NewReno => {
                    // Partial ACK (RFC 6582 §3.2 step 5): retransmit the next
                    // hole, deflate by the amount acked, re-add one MSS.
                    self.inflation -= newly as i64;
                    if newly >= self.mss {
                        self.inflation += self.mss as i64;
                    }
                    self.partial_acks += 1;
                    restart_timer = self.partial_acks == 1; // "impatient" variant
                    self.retransmit(now, self.snd_una, out);
                }
                Recovery::Sack => {}
            }
        } else {
            let cwnd = self.cc.window();
            let cwnd_limited = if self.ns2() {
                true
            } else if cwnd < self.cc.ssthresh() {
                2 * flight_before >= cwnd
            } else {
                flight_before + self.mss >= cwnd
            };
            if self.rate.is_none() {
                self.cc.on_ack(&event(cwnd_limited));
            }
        }

        if self.snd_una == self.snd_max {
            self.rto_deadline = None;
            let finished = self.buf.is_closed()
                && self.buf.end(self.snd_una) == self.snd_una
                && self.buf.all_written(self.snd_una);
            if finished && self.completed_at.is_none() {
                self.completed_at = Some(now);
                // Nothing more will be sent: give back the storage that
                // carried the transfer, so a finished flow stays small
                // (thousands of them sit idle in datacenter runs).
                self.sent.v.shrink_to_fit();
                self.sent.rates = None;
                self.newly_sacked.shrink_to_fit();
            }
        } else if restart_timer {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// Timer expiry (the simulator calls this at or after `poll_at`).
    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        self.fire_timers(now, out);
        self.refresh_timers();
    }

    fn fire_timers(&mut self, now: Time, out: &mut Outbox) {
        // (the window and the RTT as they were up to now: what fires below
        // may change them)
        self.integrate_to(now);
        if self.pacing_deadline.is_some_and(|d| now >= d) {
            self.pacing_deadline = None;
            self.send_available(now, out);
        }
        if self.persist_deadline.is_some_and(|d| now >= d) {
            self.probe(now, out);
        }
        if let Some(rack) = self
            .rack
            .as_deref_mut()
            .filter(|r| r.deadline.is_some_and(|d| now >= d))
        {
            rack.deadline = None;
            let was_in_recovery = self.in_recovery;
            self.rack_detect_and_recover(now, out);
            if self.in_recovery && !was_in_recovery {
                // a recovery the timer started: PRR as for one segment
                // delivered (Linux's tcp_rack_reo_timeout does the same)
                self.prr_on_ack(self.mss);
            }
            self.send_available(now, out);
        }
        if let Some(tlp) = self.tlp.as_deref_mut().filter(|t| t.deadline.is_some_and(|d| now >= d)) {
            tlp.deadline = None;
            self.send_loss_probe(now, out);
        }
        match self.rto_deadline {
            Some(d) if now >= d => {}
            _ => return,
        }
        if self.snd_una == self.snd_max {
            self.rto_deadline = None;
            return;
        }
        let cwnd_before = self.cwnd();
        let flight = self.snd_max - self.snd_una;
        // (the controller hears of the timeout once the flight is marked
        // lost below, as Linux's tcp_enter_loss marks it before the state
        // change a rate-based controller acts on)
        let (base, first) = if self.ns2() {
            (self.ns2_flight(), true)
        } else {
            // (Linux reduces once per window: a timeout in fast recovery
            // keeps the recovery's ssthresh, as tcp_enter_loss)
            let first =
                self.last_timeout_una != Some(self.snd_una) && !(self.cfg.ssthresh_from_cwnd && self.in_recovery);
            (self.reduction_base(flight, cwnd_before), first)
        };
        if first {
            self.init_undo(cwnd_before);
        }
        self.last_timeout_una = Some(self.snd_una);
        self.mark_loss();
        self.rtt.back_off();
        self.stats.timeouts += 1;
        // Leave any recovery; dupacks for data sent before the timeout must
        // not trigger a fast retransmit (RFC 6582 §3.2 step 1 after RTO).
        self.recover = Some(self.snd_max);
        self.in_recovery = false;
        self.inflation = 0;
        if !self.ns2() {
            self.dupacks = 0;
        }
        self.partial_acks = 0;
        self.timed = None;
        if let Some(rack) = self.rack.as_deref_mut() {
            // Every segment not SACKed is lost now (RFC 8985 §6.3; Linux's
            // tcp_timeout_mark_lost), and no probe is outstanding.
            let mut newly_bytes = 0;
            for i in 0..self.sent.as_slice().len() {
                let seg = self.sent.as_slice()[i];
                if !seg.sacked && self.sent.mark_lost(i) {
                    newly_bytes += seg.bytes();
                }
            }
            rack.deadline = None;
            if let Some(tlp) = self.tlp.as_deref_mut() {
                *tlp = Tlp::default();
            }
            if let Some(r) = self.rate.as_deref_mut() {
                r.lost_total += newly_bytes;
                self.cc.on_timeout_marked(r.lost_total);
            }
        }
        self.cc.on_timeout(now, base, first);
        // Go-back-N from snd_una; send_available skips SACKed segments.
        self.snd_nxt = self.snd_una;
        self.high_rxt = self.snd_una;
        self.rto_deadline = None;
        self.send_available(now, out);
        self.rto_deadline = Some(now + self.rtt.rto());
        self.record(now, "timeout", flight, cwnd_before);
    }

    // ---- persist timer (RFC 9293 §3.8.6.1, RFC 1122 §4.2.2.17) -----------

    /// Arm the persist timer when the peer's window holds data back and
    /// nothing in flight will bring a window update; disarm it otherwise.
    fn update_persist(&mut self, now: Time) {
        // (data in flight, the common case, decides at once: an ACK will come)
        let held_back = self.snd_una == self.snd_max
            && self.started
            && self.buf.end(self.snd_una) > self.snd_max
            && self.new_segment_len().is_none();
        if !held_back {
            self.persist_deadline = None;
            self.persist_backoff = 0;
        } else if self.persist_deadline.is_none() {
            self.persist_deadline = Some(now + self.persist_interval());
        }
    }

    /// RTO × 2^probes, at most RTO_max (Linux's `tcp_probe0_when`).
    fn persist_interval(&self) -> Time {
        self.rtt
            .rto()
            .saturating_mul(1 << self.persist_backoff.min(40))
            .min(self.cfg.rto_max)
    }

    /// The persist timer expired: a window probe. If the peer's window has
    /// room (less than a segment's worth, or the sender would have sent),
    /// the probe carries that much new data, as Linux's `tcp_write_wakeup`
    /// does, so a window stuck below one segment still moves; if it is
    /// closed, a segment below the window (snd_una − 1, no data), which the
    /// receiver answers with an ACK carrying its current window.
    fn probe(&mut self, now: Time, out: &mut Outbox) {
        self.stats.window_probes += 1;
        self.persist_backoff += 1;
        self.persist_deadline = Some(now + self.persist_interval());
        let room = (self.snd_una + self.rwnd).saturating_sub(self.snd_max);
        let data = self.buf.end(self.snd_una).saturating_sub(self.snd_max);
        let len = room.min(data).min(self.mss);
        if len > 0 {
            self.send_new(now, len, out);
            self.persist_deadline = None; // in flight now: the RTO covers it
            return;
        }
        let seg = TcpSegment {
            seq: self.snd_una.saturating_sub(1),
            len: 0,
            ack: 0,
            wnd: self.cfg.receive_buffer().min(u32::MAX as u64) as u32,
            flags: tcp_flags::ACK,
            sack: Default::default(),
            ..Default::default()
        };
        out.push(Transmit::new(Body::Tcp(seg), self.cfg.header_bytes, false));
    }

    // ---- loss recovery ---------------------------------------------------

    fn enter_recovery(&mut self, now: Time, out: &mut Outbox) {
        // One reduction per window of data. NewReno (RFC 6582 §3.2 step 2):
        // only if the ACK covers *more* than `recover`. SACK (RFC 6675 §5.1)
        // and Reno: once snd_una has reached it. For Reno `recover` is set
        // only by a timeout, so dupacks for data sent before it are ignored.
        let blocked = match (self.recover, self.cfg.recovery) {
            (None, _) => false,
            (Some(r), Recovery::NewReno | Recovery::Tahoe) => self.snd_una <= r,
            (Some(r), Recovery::Reno | Recovery::Sack) => self.snd_una < r,
        };
        if blocked {
            return;
        }
        if self.cfg.recovery == Recovery::Tahoe {
            // Fast retransmit only: the window closes to one segment and the
            // sender goes back to snd_una in slow start (no RTO backoff).
            let cwnd_before = self.cwnd();
            let flight = if self.ns2() {
                self.ns2_flight()
            } else {
                self.snd_max - self.snd_una - self.limited_transmit_bytes
            };
            self.cc.on_timeout(now, flight, true);
            self.mark_loss();
            self.recover = Some(self.snd_max);
            self.stats.fast_retransmits += 1;
            if self.ns2() {
                self.rto_deadline = Some(now + self.rtt.rto());
            } else {
                self.dupacks = 0;
            }
            self.timed = None;
            self.snd_nxt = self.snd_una;
            self.send_available(now, out);
            self.record(now, "fast_retransmit", flight, cwnd_before);
            return;
        }
        let cwnd_before = self.cwnd();
        // FlightSize (RFC 5681), but never above the window: right after a
        // long NewReno recovery, the data sent during it is outstanding (most
        // of it held at the receiver behind a hole the sender cannot see
        // without SACK) while cwnd is back at ssthresh; halving that flight
        // would set ssthresh far above what the path holds (BSD, Linux and
        // ns-2 halve the window).
        let flight = (self.snd_max - self.snd_una - self.limited_transmit_bytes).min(cwnd_before.max(2 * self.mss));
        self.init_undo(cwnd_before);
        self.cc
            .on_congestion_event(now, self.reduction_base(flight, cwnd_before));
        self.mark_loss();
        if self.cfg.recovery != Recovery::Reno {
            self.recover = Some(self.snd_max);
        }
        self.in_recovery = true;
        self.partial_acks = 0;
        if let Some(tlp) = self.tlp.as_deref_mut() {
            tlp.outstanding = None; // (recovery handles the loss now)
        }
        self.stats.fast_retransmits += 1;
        match self.cfg.recovery {
            Recovery::Reno | Recovery::NewReno | Recovery::Tahoe => {
                self.inflation = self.cfg.dupthresh as i64 * self.mss as i64;
            }
            Recovery::Sack => {
                self.inflation = 0;
                self.high_rxt = self.snd_una;
                self.snd_nxt = self.snd_max;
                let recover_fs = self.reduction_base(self.snd_max - self.snd_una, cwnd_before);
                if let Some(prr) = self.prr.as_deref_mut() {
                    *prr = Prr::start(recover_fs);
                }
            }
        }
        // The first segment to repair goes at once (RFC 6675's fast
        // retransmit; with RACK, the first segment marked lost) — except
        // with a rate-based controller, which sets the window for it first
        // (Linux: cong_control runs before tcp_xmit_recovery); the send
        // pass after the ACK sends it, paced.
        let first = if self.cfg.rack {
            self.first_lost()
        } else {
            Some(self.snd_una)
        };
        if let Some(seq) = first {
            let len = if self.rate.is_some() && self.cfg.recovery == Recovery::Sack {
                self.segment_len(seq)
            } else {
                self.retransmit(now, seq, out)
            };
            self.rescue_rxt = seq + len;
        }
        self.record(now, "fast_retransmit", flight, cwnd_before);
    }

    /// A loss event: remember where, for the sibling view.
    fn mark_loss(&mut self) {
        self.una_at_loss = [self.snd_una, self.una_at_loss[0]];
    }

    fn exit_recovery(&mut self, now: Time) {
        if let Some(rack) = self.rack.as_deref_mut().filter(|_| self.undo.is_some()) {
            rack.on_recovery_end(false);
        }
        let cwnd_before = self.cwnd();
        self.in_recovery = false;
        self.inflation = 0; // deflate: cwnd = ssthresh, no line-rate burst
        self.record(now, "recovery_exit", self.snd_max - self.snd_una, cwnd_before);
    }

    /// RFC 6675 IsLost: enough SACKed data above `seq`. (With RACK, a
    /// segment's loss is its mark: see `rack_detect`.)
    fn is_lost(&self, seq: u64) -> bool {
        let (bytes, blocks) = self.sacked.above(seq);
        blocks >= self.cfg.dupthresh as usize || bytes > (self.cfg.dupthresh as u64 - 1) * self.mss
    }

    /// RFC 6675 SetPipe: bytes believed to be in the network.
    ///
    /// Computed from the scoreboard's ranges, not segment by segment: IsLost
    /// holds for an unSACKed byte exactly when enough SACKed ranges lie above
    /// it, so the lost bytes are the unSACKed ones below the start of the
    /// range where, counting from the top, the ranges first make DupThresh
    /// blocks or more than (DupThresh − 1)·MSS bytes. Then pipe = unSACKed
    /// bytes at or above that point + unSACKed bytes below HighRxt (sent
    /// again). Segments and SACK blocks share boundaries, so this is the
    /// per-segment sum (checked against it in debug builds).
    fn pipe(&self) -> u64 {
        if self.cfg.rack {
            return self.rack_pipe();
        }
        if self.sacked.is_empty() && self.high_rxt <= self.snd_una {
            return self.snd_max - self.snd_una;
        }
        let lost_below = self.lost_below();
        // (nothing SACKed lies below snd_una: the scoreboard is pruned there)
        let high = self.high_rxt.min(self.snd_max).max(self.snd_una);
        let pipe = self.unsacked_between(lost_below, self.snd_max) + (high - self.snd_una) - self.sacked.below(high);
        debug_assert_eq!(pipe, self.pipe_by_segment());
        pipe
    }

    /// RFC 6675 IsLost by ranges: an unSACKed byte is lost when enough
    /// SACKed ranges lie above it, i.e. below the start of the range where,
    /// counting from the top, the ranges first make DupThresh blocks or more
    /// than (DupThresh − 1)·MSS bytes (snd_una if they never do).
    fn lost_below(&self) -> u64 {
        let dupthresh = self.cfg.dupthresh as usize;
        let ranges = self.sacked.ranges();
        let mut bytes = 0;
        for (k, &(s, e)) in ranges.iter().enumerate().rev() {
            bytes += e - s;
            if ranges.len() - k >= dupthresh || bytes > (dupthresh as u64 - 1) * self.mss {
                return s.max(self.snd_una);
            }
        }
        self.snd_una
    }

    /// SetPipe as RFC 6675 words it, segment by segment (the reference
    /// `pipe` is checked against).
    fn pipe_by_segment(&self) -> u64 {
        let mut pipe = 0;
        for s in self.sent.as_slice() {
            let (seq, len) = (s.seq, s.bytes());
            if !self.sacked.is_sacked(seq) {
                if !self.is_lost(seq) {
                    pipe += len;
                }
                if seq < self.high_rxt {
                    pipe += len;
                }
            }
        }
        pipe
    }

    /// RFC 6675 NextSeg: what to send next during SACK recovery, and whether
    /// it is the rescue retransmission (rule 4).
    fn next_segment(&self) -> Option<(u64, bool)> {
        if self.cfg.rack {
            // the first segment marked lost and not sent again since, else
            // new data (RACK-TLP needs no rules 3 and 4: a tail is probed)
            return self
                .first_lost()
                .or_else(|| self.new_segment_len().map(|_| self.snd_max))
                .map(|s| (s, false));
        }
        let highest = self.sacked.highest().unwrap_or(0);
        let from = self.high_rxt.max(self.snd_una);
        // The first unSACKed byte from HighRxt (segments and SACK blocks
        // share boundaries, so it starts a segment): found from the
        // scoreboard's ranges, not segment by segment, so the cost does not
        // grow with the window. IsLost only gets truer further down, so if
        // any unSACKed segment above HighRxt is lost, this one is.
        let gap = self.sacked.first_gap_from(from);
        let below_highest = (gap < highest).then_some(gap);
        let chosen = if let Some(s) = below_highest.filter(|&s| s < self.lost_below()) {
            // (1) the first lost, not yet retransmitted segment
            Some((s, false))
        } else if self.new_segment_len().is_some() {
            // (2) new data
            Some((self.snd_max, false))
        } else if let Some(s) = below_highest {
            // (3) any unSACKed segment below the highest SACK
            Some((s, false))
        } else if self.snd_una >= self.rescue_rxt {
            // (4) rescue: once per recovery, the highest unSACKed segment
            // (RFC: HighACK > RescueRxt, inclusive; rescue_rxt is an exclusive end)
            self.sacked
                .last_gap_below(self.snd_max, self.snd_una)
                .map(|byte| (self.segment_start(byte), true))
        } else {
            None
        };
        debug_assert_eq!(
            chosen,
            self.next_segment_by_scan(),
            "NextSeg by ranges and by segments differ"
        );
        chosen
    }

    /// The segment that holds byte `seq`.
    fn segment_start(&self, seq: u64) -> u64 {
        let sent = self.sent.as_slice();
        sent[sent.partition_point(|s| s.seq <= seq) - 1].seq
    }

    /// RFC 6675 NextSeg segment by segment (the rule as written), to check
    /// the scoreboard's shortcut in debug builds.
    fn next_segment_by_scan(&self) -> Option<(u64, bool)> {
        let highest = self.sacked.highest().unwrap_or(0);
        let from = self.high_rxt.max(self.snd_una);
        let sent = self.sent.as_slice();
        let first = sent.partition_point(|s| s.seq < from);
        let unsacked_below_highest = || {
            sent[first..]
                .iter()
                .map(|s| s.seq)
                .take_while(move |&s| s < highest)
                .filter(|&s| !self.sacked.is_sacked(s))
        };
        if let Some(s) = unsacked_below_highest().find(|&s| self.is_lost(s)) {
            return Some((s, false));
        }
        if self.new_segment_len().is_some() {
            return Some((self.snd_max, false));
        }
        if let Some(s) = unsacked_below_highest().next() {
            return Some((s, false));
        }
        if self.snd_una >= self.rescue_rxt {
            let last = sent.iter().rev().find(|s| !self.sacked.is_sacked(s.seq));
            return last.map(|s| (s.seq, true));
        }
        None
    }

    // ---- D-SACK and undo (RFC 2883; Linux's tcp_try_undo_dsack) ------------

    /// RACK's reordering window now, outside recovery (for tests).
    #[cfg(test)]
    pub(crate) fn rack_reordering_window(&self) -> Time {
        let rack = self.rack.as_deref().expect("a RACK sender");
        rack.reordering_window(false, false, self.rtt.min_rtt, self.rtt.srtt())
    }
    #[cfg(test)]
    pub(crate) fn rack_reordering_seen(&self) -> bool {
        self.rack.as_deref().is_some_and(|r| r.reordering_seen)
    }

    /// A reduction begins (recovery or a first timeout): remember what an
    /// undo would restore (Linux's tcp_init_undo with prior_cwnd and
    /// prior_ssthresh). Retransmissions already in flight may bring D-SACKs
    /// later, so they count.
    fn init_undo(&mut self, cwnd: u64) {
        if self.undo.is_none() {
            return;
        }
        let ssthresh = self.cc.ssthresh();
        let in_flight = if self.sent.rexmit_bytes > 0 {
            self.sent
                .as_slice()
                .iter()
                .filter(|s| s.rexmit_in_flight && !s.sacked)
                .count() as i64
        } else {
            0
        };
        let snd_una = self.snd_una;
        let in_ecn_reduction = self.cfg.ecn && self.snd_una < self.ecn_recover;
        if let Some(u) = self.undo.as_deref_mut() {
            u.marker = Some(snd_una);
            u.retrans = if in_flight > 0 { in_flight } else { -1 };
            u.prior_cwnd = cwnd;
            u.prior_ssthresh = (!in_ecn_reduction).then(|| ssthresh.max(cwnd / 2 + cwnd / 4));
        }
    }

    /// The ACK's first SACK block reports [s, e) received twice (read on
    /// the prior snd_una, as Linux's tcp_check_dsack): each retransmitted
    /// segment it covers since the reduction began was needless.
    /// False if it is dubious (ignored).
    fn on_dsack(&mut self, (s, e): (u64, u64)) -> bool {
        let mss = self.mss;
        let retransmits = self.stats.retransmits;
        let snd_una = self.snd_una;
        let Some(u) = self.undo.as_deref_mut() else {
            return false;
        };
        if e <= s {
            return false;
        }
        // (counted before the test, as Linux's tcp_dsack_seen counts
        // tcpi_dsack_dups)
        let dup_segs = (e - s).div_ceil(mss);
        u.dsack_dups += dup_segs;
        self.stats.dsack_dups += dup_segs;
        if u.dsack_dups > retransmits {
            return false; // dubious: more duplicates than retransmissions
        }
        let Some(marker) = u.marker.filter(|_| u.retrans > 0) else {
            return true;
        };
        let needless = if e <= snd_una {
            // acknowledged data, no longer listed: counted by size
            if e > marker {
                dup_segs
            } else {
                0
            }
        } else {
            let sent = self.sent.as_slice();
            let first = sent.partition_point(|x| x.end() <= s);
            sent[first..]
                .iter()
                .take_while(|x| x.seq < e)
                .filter(|x| x.retransmitted && x.end() > marker)
                .count() as u64
        };
        u.retrans = (u.retrans - needless as i64).max(0);
        true
    }

    /// Every retransmission since the reduction began proved needless:
    /// undo it (Linux's tcp_try_undo_dsack, then tcp_try_to_open: a
    /// recovery ends; RACK may find a loss and start another at once). Not
    /// while a timeout's retransmissions are still going out.
    fn try_undo(&mut self, now: Time) {
        let Some(u) = self.undo.as_deref_mut() else {
            return;
        };
        let loss_state = !self.in_recovery && self.recover.is_some_and(|r| self.snd_una < r);
        if u.marker.is_none() || u.retrans != 0 || loss_state {
            return;
        }
        u.marker = None;
        let (prior_cwnd, prior_ssthresh) = (u.prior_cwnd, u.prior_ssthresh);
        let cwnd_before = self.cwnd();
        if let Some(prior_ssthresh) = prior_ssthresh {
            self.cc.undo(prior_cwnd, prior_ssthresh);
        }
        self.stats.undos += 1;
        if self.in_recovery {
            self.in_recovery = false;
            self.inflation = 0;
            self.recover = None;
        }
        if let Some(rack) = self.rack.as_deref_mut() {
            rack.on_recovery_end(true);
        }
        self.record(now, "undo", self.snd_max - self.snd_una, cwnd_before);
    }

    // ---- RACK-TLP (RFC 8985; see rack.rs) ------------------------------------

    /// Segments starting in [from, to) were delivered (cumulatively ACKed,
    /// or newly SACKed): RACK learns the latest of them, and the delivery
    /// rate counts them. With `skip_sacked` (a cumulative ACK), segments
    /// SACKed before were counted then.
    ///
    /// Returns the send time of the first of them (in sequence) never sent
    /// twice: the SACK's RTT sample (Linux's first_sackt).
    fn segments_delivered(&mut self, now: Time, from: u64, to: u64, skip_sacked: bool) -> Option<Time> {
        let min_rtt = self.rtt.min_rtt;
        let mut first_once_sent = None;
        let sent = self.sent.as_slice();
        // (a cumulative ACK's segments start at the head)
        let first = if from <= sent.first().map_or(from, |s| s.seq) {
            0
        } else {
            sent.partition_point(|s| s.seq < from)
        };
        for i in first..sent.len() {
            let seg = self.sent.as_slice()[i];
            if seg.seq >= to {
                break;
            }
            if skip_sacked {
                if seg.sacked {
                    continue;
                }
            } else {
                self.sent.mark_sacked(i);
            }
            if first_once_sent.is_none() && !seg.retransmitted {
                first_once_sent = Some(seg.xmit_ts);
            }
            if let Some(rack) = self.rack.as_deref_mut() {
                rack.on_delivered(now, seg.xmit_ts, seg.end(), seg.retransmitted, min_rtt);
            }
            if let Some(r) = self.rate.as_deref_mut() {
                r.est
                    .on_delivered(now, seg.bytes(), seg.xmit_ts, self.sent.rate(i), &mut r.sample);
                if !seg.retransmitted && r.ack_newest_sent.is_none_or(|t| seg.xmit_ts > t) {
                    r.ack_newest_sent = Some(seg.xmit_ts);
                }
            }
        }
        first_once_sent
    }

    /// Without per-segment tracking: the send time of the first segment
    /// starting in [from, to) never sent twice.
    fn first_once_sent_in(&self, from: u64, to: u64) -> Option<Time> {
        let sent = self.sent.as_slice();
        let first = sent.partition_point(|s| s.seq < from);
        sent[first..]
            .iter()
            .take_while(|s| s.seq < to)
            .find(|s| !s.retransmitted)
            .map(|s| s.xmit_ts)
    }

    /// RACK's loss detection (RFC 8985 §6.2 step 5): mark lost every
    /// segment not delivered that was sent before the latest delivered one
    /// and has waited its RTT plus the reordering window; arm the reordering
    /// timer for the others. True if any segment is marked lost now.
    fn rack_detect(&mut self, now: Time) -> bool {
        if self.sent.unmarked() {
            // No marks: when the oldest segment out was
            // sent after the latest delivered one, so was every other, and
            // none can be judged yet.
            if let Some(rack) = self.rack.as_deref_mut() {
                let oldest = self.sent.as_slice().first();
                if oldest.is_none_or(|s| rack.remaining(now, s.xmit_ts, s.end(), 0).is_none()) {
                    rack.deadline = None;
                    return false;
                }
            }
        }
        // (DupThresh whole segments SACKed, without a division per ACK)
        let dupthresh_sacked = self.sacked.bytes() >= self.cfg.dupthresh as u64 * self.mss;
        let in_loss_recovery = self.in_loss_recovery();
        let Some(rack) = self.rack.as_deref_mut() else {
            return false;
        };
        let reo_wnd = rack.reordering_window(in_loss_recovery, dupthresh_sacked, self.rtt.min_rtt, self.rtt.srtt());
        let mut timeout: Option<Time> = None;
        let mut any_lost = false;
        let mut lost_bytes = 0;
        for i in 0..self.sent.as_slice().len() {
            let seg = self.sent.as_slice()[i];
            if (seg.lost && !seg.rexmit_in_flight) || seg.sacked {
                continue; // waiting to be sent again, or delivered
            }
            match rack.remaining(now, seg.xmit_ts, seg.end(), reo_wnd) {
                // Sent after the latest delivered segment: so is every later
                // original; a retransmission further on may still be judged.
                None if !seg.retransmitted => break,
                None => {}
                Some(0) => {
                    // (a lost retransmission, if one was in flight)
                    self.sent.mark_lost(i);
                    any_lost = true;
                    lost_bytes += seg.bytes();
                }
                Some(left) => timeout = Some(timeout.map_or(left, |t: Time| t.max(left))),
            }
        }
        rack.deadline = timeout.map(|t| match self.cfg.timer_tick {
            0 => now + t,
            tick => tick_deadline(now, t + LINUX_TIMER_SLACK, tick), // tcp_rack_mark_lost
        });
        if let Some(r) = self.rate.as_deref_mut() {
            r.ack_lost += lost_bytes;
            r.lost_total += lost_bytes;
        }
        any_lost || self.first_lost().is_some()
    }

    /// In fast recovery, or going back N after a timeout until the data
    /// outstanding then is acknowledged (RFC 8985's "loss recovery": `recover`
    /// is snd_max at the last recovery entry or timeout).
    fn in_loss_recovery(&self) -> bool {
        self.in_recovery || self.recover.is_some_and(|r| self.snd_una < r)
    }

    /// Run RACK and start recovery if it found a loss.
    fn rack_detect_and_recover(&mut self, now: Time, out: &mut Outbox) {
        if self.rack_detect(now) && !self.in_recovery && self.last_timeout_una.is_none() {
            self.enter_recovery(now, out);
        }
    }

    /// The first segment marked lost and not sent again since.
    fn first_lost(&self) -> Option<u64> {
        if cfg!(debug_assertions) {
            self.check_marks();
        }
        if self.sent.awaiting == 0 {
            return None;
        }
        self.sent.as_slice().iter().find(|s| s.awaits_repair()).map(|s| s.seq)
    }

    /// RFC 6675's pipe with RACK's marks for IsLost (Linux's packets in
    /// flight: sent − SACKed − lost + retransmissions in flight), from the
    /// list's totals.
    fn rack_pipe(&self) -> u64 {
        if cfg!(debug_assertions) {
            self.check_marks();
        }
        self.sent.pipe(self.snd_max - self.snd_una)
    }

    /// The segment list's totals agree with a walk over it, and (with RACK)
    /// its SACK marks with the scoreboard.
    fn check_marks(&self) {
        self.sent.check();
        if self.rack.is_some() {
            for s in self.sent.as_slice() {
                debug_assert_eq!(s.sacked, self.sacked.is_sacked(s.seq), "SACK mark of {}", s.seq);
            }
        }
    }

    /// Arm the probe timer (RFC 8985 §7.2) after sending or on an ACK, when
    /// data is in flight, no recovery or timeout is under way and no probe
    /// is outstanding; disarm it otherwise.
    fn schedule_loss_probe(&mut self, now: Time) {
        let flight = self.snd_max - self.snd_una;
        let (in_loss_recovery, srtt, rto_deadline, mss) =
            (self.in_loss_recovery(), self.rtt.srtt(), self.rto_deadline, self.mss);
        let (tick, rto_min) = (self.cfg.timer_tick, self.cfg.rto_min);
        let Some(tlp) = self.tlp.as_deref_mut() else {
            return;
        };
        let armed = flight > 0 && !in_loss_recovery && tlp.outstanding.is_none();
        tlp.deadline = armed.then(|| {
            let rto_left = rto_deadline.map(|d| d.saturating_sub(now));
            match tick {
                0 => now + Tlp::timeout(srtt, flight <= mss, rto_left),
                tick => tick_deadline(now, Tlp::linux_timeout(srtt, flight <= mss, rto_min, rto_left), tick),
            }
        });
    }

    /// The probe timer fired (RFC 8985 §7.3): one new segment if the
    /// application and the peer's window allow (the cwnd does not count),
    /// else the last segment sent, again; then the RTO timer runs anew.
    fn send_loss_probe(&mut self, now: Time, out: &mut Outbox) {
        if self.snd_max == self.snd_una || self.in_loss_recovery() {
            return;
        }
        let retransmission = if let Some(len) = self.new_segment_len() {
            self.send_new(now, len, out);
            false
        } else {
            let last = self
                .sent
                .as_slice()
                .iter()
                .rev()
                .find(|s| !self.sacked.is_sacked(s.seq));
            let Some(&Sent { seq, .. }) = last else {
                return;
            };
            self.resend(now, seq, out);
            true
        };
        self.stats.loss_probes += 1;
        let end = self.snd_max;
        if let Some(tlp) = self.tlp.as_deref_mut() {
            tlp.outstanding = Some((end, retransmission));
        }
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// An ACK while a probe is outstanding (RFC 8985 §7.4; the probe's end
    /// is snd_max when it went). Only an ACK at or beyond the end counts.
    /// A probe of new data: the episode ends. A resent segment: an ACK
    /// *beyond* the end means data sent after the probe was delivered with
    /// the hole filled, so the probe repaired a loss: the window is reduced
    /// once, as a fast recovery would have (Linux: a CWR episode). A
    /// duplicate ACK that SACKs nothing new says original and probe both
    /// arrived: no loss; so does a D-SACK of the probe (`probe_dsack`).
    /// An ACK exactly at the end with neither cannot tell: the episode waits.
    fn tlp_on_ack(
        &mut self,
        now: Time,
        ack: u64,
        una_before: u64,
        newly_sacked: u64,
        flight_before: u64,
        probe_dsack: bool,
    ) {
        let Some(tlp) = self.tlp.as_deref_mut() else {
            return;
        };
        let Some((end, retransmission)) = tlp.outstanding else {
            return;
        };
        if ack < end {
            return;
        }
        if probe_dsack {
            // the probe's copy arrived after the original: no loss
            tlp.outstanding = None;
            return;
        }
        if !retransmission || ack > end || (ack == una_before && newly_sacked == 0) {
            tlp.outstanding = None;
        }
        if retransmission && ack > end && !self.in_recovery {
            let cwnd_before = self.cwnd();
            self.cc
                .on_congestion_event(now, self.reduction_base(flight_before, cwnd_before));
            self.mark_loss();
            self.record(now, "tlp_recovery", flight_before, cwnd_before);
        }
    }

    // ---- transmission ----------------------------------------------------

    /// Where the already-sent segment starting at `seq` (< snd_max) is.
    fn segment_index(&self, seq: u64) -> usize {
        let sent = self.sent.as_slice();
        let i = sent.partition_point(|s| s.seq < seq);
        debug_assert!(sent.get(i).is_some_and(|s| s.seq == seq), "no segment starts at {seq}");
        i
    }

    /// Length of the already-sent segment starting at `seq` (< snd_max).
    fn segment_len(&self, seq: u64) -> u64 {
        let sent = self.sent.as_slice();
        let i = sent.partition_point(|s| s.seq < seq);
        debug_assert!(sent.get(i).is_some_and(|s| s.seq == seq), "no segment starts at {seq}");
        sent[i].bytes()
    }

    /// Length of the next new segment, if the send buffer has data for one
    /// and the receiver's window allows it. A short segment goes only when
    /// it holds the last of what the application has written and either the
    /// application closed, TCP_NODELAY is set or nothing is in flight
    /// (Nagle, RFC 1122 §4.2.3.4: sender-side SWS avoidance).
    fn new_segment_len(&self) -> Option<u64> {
        let end = self.buf.end(self.snd_una);
        if self.snd_max >= end {
            return None;
        }
        let len = self.mss.min(end - self.snd_max);
        let push = || {
            self.snd_max + len == end
                && self.buf.all_written(self.snd_una)
                && (self.buf.is_closed() || self.cfg.nodelay || self.snd_una == self.snd_max)
        };
        let fits_rwnd = self.snd_max + len <= self.snd_una + self.rwnd;
        (fits_rwnd && (len == self.mss || push())).then_some(len)
    }

    /// Send what the windows allow, then decide the persist timer (whether
    /// the peer's window now holds data back with nothing in flight).
    fn send_available(&mut self, now: Time, out: &mut Outbox) {
        self.send_within_windows(now, out);
        if self.rate.is_some() && self.unsent() < self.mss && self.started {
            // Linux's tcp_rate_check_app_limited: the application, not the
            // windows, leaves the network underused
            let in_flight = self.in_flight();
            if in_flight < self.cwnd() && self.first_lost().is_none() {
                self.rate_mut().est.set_app_limited(in_flight);
            }
        }
        self.update_persist(now);
        if self.cfg.tlp {
            self.schedule_loss_probe(now);
        }
    }

    fn send_within_windows(&mut self, now: Time, out: &mut Outbox) {
        if !self.started {
            return;
        }
        if self.in_recovery && self.cfg.recovery == Recovery::Sack {
            // RFC 6675: while cwnd ≥ pipe + MSS, with PRR's window for cwnd
            let cwnd = self.prr.as_ref().map_or_else(|| self.cwnd(), |prr| prr.cwnd);
            let mut pipe = self.pipe();
            while cwnd >= pipe + self.mss {
                let Some((seq, rescue)) = self.next_segment() else {
                    break;
                };
                if self.pacing_holds(now) {
                    break;
                }
                pipe += if seq >= self.snd_max {
                    let len = self.new_segment_len().expect("NextSeg chose new data");
                    self.send_new(now, len, out)
                } else if rescue {
                    // HighRxt is not moved by the rescue (RFC 6675 §4 rule 4).
                    self.rescue_rxt = self.recover.unwrap_or(self.snd_max);
                    let high_rxt = self.high_rxt;
                    let len = self.retransmit(now, seq, out);
                    self.high_rxt = high_rxt;
                    len
                } else {
                    self.retransmit(now, seq, out)
                };
            }
            return;
        }
        // Window-based sending (Reno/NewReno, and SACK outside recovery).
        let extra = self.limited_transmit_extra();
        // (pacing is checked only once a segment could go: no wake-up for a
        // sender the windows or the application hold back)
        loop {
            if self.cfg.rack {
                // A go-back-N resend that RACK found lost goes again first
                // (Linux retransmits lost-marked segments in its timeout
                // recovery too), within the window.
                if let Some(seq) = self.first_lost().filter(|&s| s < self.snd_nxt) {
                    let len = self.segment_len(seq);
                    if self.rack_pipe() + len > self.cwnd().min(self.rwnd) || self.pacing_holds(now) {
                        break;
                    }
                    self.retransmit(now, seq, out);
                    continue;
                }
            }
            while self.snd_nxt < self.snd_max && self.sacked.is_sacked(self.snd_nxt) {
                self.snd_nxt += self.segment_len(self.snd_nxt);
            }
            let window = self.cwnd().min(self.rwnd);
            if self.snd_nxt < self.snd_max {
                // go-back-N after a timeout
                // (the head segment goes whatever the window: RFC 6298 §5.4
                // retransmits the earliest unacknowledged segment)
                let len = self.segment_len(self.snd_nxt);
                if (self.snd_nxt + len > self.snd_una + window && self.snd_nxt != self.snd_una)
                    || self.pacing_holds(now)
                {
                    break;
                }
                self.retransmit(now, self.snd_nxt, out);
                self.snd_nxt += len;
            } else {
                let Some(len) = self.new_segment_len() else {
                    break;
                };
                let beyond_window = self.snd_max + len > self.snd_una + window;
                if (beyond_window && self.snd_max + len > self.snd_una + window + extra) || self.pacing_holds(now) {
                    break;
                }
                if beyond_window {
                    self.limited_transmit_bytes += len;
                }
                self.send_new(now, len, out);
            }
        }
    }

    fn ns2(&self) -> bool {
        self.cfg.semantics == Semantics::Ns2
    }

    /// ns-2 halves min(cwnd, window) in whole segments, not the flight; as
    /// the controllers halve the flight they are given, pass twice that.
    fn ns2_flight(&self) -> u64 {
        let segments = self.cc.window().min(self.rwnd) / self.mss;
        2 * (segments / 2) * self.mss
    }

    /// ns-2's limited transmit (`send_one`): on each of the first dupacks,
    /// the segment at snd_nxt — new data, or a resend while going back N —
    /// if it fits in cwnd + one segment per dupack and in the window.
    fn ns2_send_one(&mut self, now: Time, out: &mut Outbox) {
        let limit = self.snd_una + (self.cc.window() + self.dupacks as u64 * self.mss).min(self.rwnd);
        if self.snd_nxt < self.snd_max {
            let len = self.segment_len(self.snd_nxt);
            if self.snd_nxt + len <= limit {
                self.retransmit(now, self.snd_nxt, out);
                self.snd_nxt += len;
            }
        } else if let Some(len) = self.new_segment_len().filter(|len| self.snd_max + len <= limit) {
            self.send_new(now, len, out);
        }
    }

    /// Send `len` new bytes (what `new_segment_len` allowed).
    fn send_new(&mut self, now: Time, len: u64, out: &mut Outbox) -> u64 {
        let seq = self.snd_max;
        debug_assert!(len <= u32::MAX as u64, "a segment is at most one MSS");
        let rate = self.rate_send_state(now, self.snd_una == self.snd_max);
        self.sent.push(
            Sent {
                seq,
                len: len as u32,
                xmit_ts: now,
                retransmitted: false,
                lost: false,
                rexmit_in_flight: false,
                sacked: false,
            },
            rate,
        );
        if self.timed.is_none() {
            self.timed = Some((seq + len, now));
        }
        self.snd_max += len;
        self.snd_nxt = self.snd_max;
        let cwr = std::mem::take(&mut self.send_cwr);
        self.emit(now, seq, len, out);
        if cwr {
            if let Some(Transmit {
                body: Body::Tcp(seg), ..
            }) = out.last_mut()
            {
                seg.flags |= tcp_flags::CWR;
            }
        }
        len
    }

    /// Send the segment at `seq` again, a repair (a probe is not: `resend`).
    fn retransmit(&mut self, now: Time, seq: u64, out: &mut Outbox) -> u64 {
        if let Some(u) = self.undo.as_deref_mut() {
            u.retrans = u.retrans.max(0) + 1;
        }
        self.resend(now, seq, out)
    }

    /// Send the segment at `seq` again. (A loss probe does not count toward
    /// an undo: Linux's tcp_send_loss_probe sends it without
    /// tcp_retransmit_skb's accounting.)
    fn resend(&mut self, now: Time, seq: u64, out: &mut Outbox) -> u64 {
        let rate = self.rate_send_state(now, false);
        let i = self.segment_index(seq);
        self.sent.mark_retransmitted(i);
        if let Some(rate) = rate {
            *self.sent.rate_mut(i) = rate;
        }
        let seg = &mut self.sent.as_mut_slice()[i];
        seg.xmit_ts = now;
        let len = seg.bytes();
        if self.timed.is_some_and(|(end, _)| seq < end) {
            self.timed = None; // Karn: an ambiguous sample would follow
        }
        self.stats.retransmits += 1;
        self.high_rxt = self.high_rxt.max(seq + len);
        self.emit(now, seq, len, out);
        len
    }

    /// What a segment sent now remembers for delivery-rate estimation
    /// (only a rate-based controller reads it: None for any other).
    fn rate_send_state(&mut self, now: Time, idle: bool) -> Option<SendState> {
        self.rate.as_deref_mut().map(|r| r.est.on_send(now, idle))
    }

    /// Pacing holds the next segment back: the pacing timer will send it.
    /// A segment goes when the next burst is due, or in the burst that left
    /// at this instant while it has room (the rest of the TSO packet).
    /// (An unpaced sender's `pacing_next` stays 0: the first test ends it.)
    fn pacing_holds(&mut self, now: Time) -> bool {
        if self.pacing_next <= now || self.burst.as_ref().is_some_and(|b| b.at == now && b.left > 0) {
            return false;
        }
        self.pacing_deadline = Some(self.pacing_next);
        true
    }

    /// Account a segment of `len` bytes sent now to its burst and set when
    /// the next burst may leave (Linux's tcp_update_skb_after_send: not for
    /// the first 10 segments; the burst's length / rate after it was due,
    /// less up to half of that if it left late).
    fn pace(&mut self, now: Time, len: u64) {
        let Some(rate) = self.cc.pacing_rate().filter(|r| *r > 0.0) else {
            return;
        };
        if self.stats.packets_sent < 10 {
            // (the first nine go at once; the tenth is paced, as data_segs_out
            // ≥ 10; the pacing clock keeps up with them, as Linux's
            // tcp_wstamp_ns does, so the tenth is not taken for late)
            self.pacing_next = self.pacing_next.max(now);
            return;
        }
        let (next, size) = (self.pacing_next, self.cc.pacing_burst().max(1));
        let b = self.burst.get_or_insert_with(Box::default);
        if b.at == now && b.left > 0 {
            b.left -= 1;
            b.bytes += len;
        } else {
            let base = next.max(now);
            **b = Burst {
                at: now,
                base,
                credit: base - next,
                bytes: len,
                left: size - 1,
            };
        }
        let span = (b.bytes as f64 * 1e9 / rate) as Time;
        self.pacing_next = b.base + span - b.credit.min(span / 2);
    }

    fn emit(&mut self, now: Time, seq: u64, len: u64, out: &mut Outbox) {
        if self.in_recovery {
            if let Some(prr) = self.prr.as_deref_mut() {
                prr.on_send(len);
            }
        }
        self.stats.packets_sent += 1;
        self.pace(now, len);
        self.stats.bytes_sent += len;
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
        // Data flows one way; the window field carries what this end's own
        // (unused) receive buffer would advertise, as a real stack's would.
        let wnd = self.cfg.receive_buffer().min(u32::MAX as u64) as u32;
        let seg = TcpSegment {
            seq,
            len: len as u32,
            ack: 0,
            wnd,
            flags: tcp_flags::ACK,
            sack: Default::default(),
            ..Default::default()
        };
        out.push(Transmit::new(
            Body::Tcp(seg),
            len as u32 + self.cfg.header_bytes,
            self.cfg.ecn,
        ));
    }

    /// Integrate the window and the smoothed RTT up to `now`, for their
    /// time-weighted means (`cwnd_mean_bytes`, `srtt_mean_s`).
    fn integrate_to(&mut self, now: Time) {
        if self.started && now > self.cwnd_clock {
            let dt = now - self.cwnd_clock;
            self.stats.cwnd_area += to_f64(self.cwnd()) * to_f64(dt);
            // (while data is out: a finished transfer's last srtt does not
            // weigh on for the rest of the window)
            if let Some(srtt) = self.rtt.srtt().filter(|_| self.snd_una < self.snd_max) {
                self.stats.srtt_area += to_f64(srtt) * to_f64(dt);
                self.stats.srtt_time_ns += dt;
            }
            self.cwnd_clock = now;
        }
    }

    fn record(&mut self, now: Time, kind: &'static str, flight: u64, cwnd_before: u64) {
        if self.cfg.log_congestion {
            self.log.push(CongestionRecord {
                time_s: as_secs_f64(now),
                kind,
                flight_bytes: flight,
                cwnd_before,
                cwnd_after: self.cwnd(),
                ssthresh: self.cc.ssthresh(),
            });
        }
    }
}

/// The ACK's D-SACK block, if its first block is one (RFC 2883 §4): below
/// the cumulative ACK, or inside the second block.
fn dsack_block(seg: &TcpSegment) -> Option<(u64, u64)> {
    let mut blocks = seg.sack.iter(seg.ack);
    let (s, e) = blocks.next()?;
    if s < seg.ack {
        return Some((s, e));
    }
    blocks.next().filter(|&(s2, e2)| s2 <= s && e <= e2).map(|_| (s, e))
}

#[cfg(test)]
mod sent_list_tests {
    use super::{Newest, Sent, SentList};

    /// Five 1000-byte segments [0, 5000) sent once, unmarked.
    fn five() -> SentList {
        let mut l = SentList::default();
        for k in 0..5 {
            l.push(
                Sent {
                    seq: k * 1000,
                    len: 1000,
                    xmit_ts: k,
                    retransmitted: false,
                    lost: false,
                    rexmit_in_flight: false,
                    sacked: false,
                },
                None,
            );
        }
        l
    }

    #[test]
    fn totals_follow_the_marks_through_recovery() {
        let mut l = five();
        // segments 2 and 3 SACKed, 0 and 1 lost: only segment 4 is in flight
        l.mark_sacked(2);
        l.mark_sacked(3);
        assert!(l.mark_lost(0) && l.mark_lost(1));
        assert_eq!((l.pipe(5000), l.awaiting, l.lost), (1000, 2, 2));
        // segment 0 sent again: in flight twice over (original lost, copy sent)
        l.mark_retransmitted(0);
        assert_eq!((l.pipe(5000), l.awaiting, l.retransmitted), (2000, 1, 1));
        // the retransmission is lost too: marked again, not counted twice
        assert!(!l.mark_lost(0));
        assert_eq!((l.pipe(5000), l.awaiting, l.lost), (1000, 2, 2));
        l.check();
        // the cumulative ACK passes both lost segments
        let newest = |xmit_ts, end, retransmitted, whole| {
            Some(Newest {
                xmit_ts,
                end,
                retransmitted,
                whole,
            })
        };
        assert_eq!(l.ack(2000, true), newest(1, 2000, false, true));
        assert_eq!((l.pipe(3000), l.awaiting, l.lost, l.retransmitted), (1000, 0, 0, 0));
        // part of a SACKed segment acknowledged: its rest stays SACKed
        assert_eq!(l.ack(2500, false), newest(2, 3000, false, false));
        assert_eq!((l.sacked_bytes, l.pipe(2500)), (1500, 1000));
        l.check();
    }

    #[test]
    fn a_sacked_segment_sent_again_is_not_in_flight() {
        let mut l = five();
        l.mark_sacked(4);
        // (a go-back-N resend skips SACKed data; a probe might not)
        l.mark_retransmitted(4);
        assert_eq!(l.pipe(5000), 4000);
        l.check();
        let newest = l.ack(5000, true).expect("a segment was acknowledged");
        assert_eq!((newest.xmit_ts, newest.end, newest.retransmitted), (4, 5000, true));
        assert_eq!((l.sacked_bytes, l.rexmit_bytes, l.retransmitted), (0, 0, 0));
    }
}
