//! The sending end of an MPTCP connection: the data-sequence space, the
//! scheduler that hands chunks to subflows, DATA_ACK and the connection's
//! window, reinjection, and the joins of the extra subflows.

use std::collections::VecDeque;

use super::scheduler::{can_queue, pacing_ratio, Candidate, Scheduler};
use super::{MptcpConfig, Reinjection as Policy, RETRANSMIT_FRAGMENT, STALE_LOSS_COUNT};
use crate::cc::{CongestionControl, SubflowView};
use crate::endpoint::{Outbox, Received, Report, Scope, SenderState, Snapshot, Transmit};
use crate::engine::time::deadline;
use crate::engine::Time;
use crate::net::ext::{Ext, MptcpHandshake, MP_CAPABLE_WITH_DATA};
use crate::net::packet::{tcp_flags, Body, Dss, TcpSegment};
use crate::trace::counters::TransportCounters;
use crate::transport::tcp::{RangeSet, TcpConfig, TcpSender, UNSET_BUFFER};
use crate::transport::StreamSender;

/// Subflow bytes [ssn, ssn + len) carry data bytes [dsn, dsn + len): one
/// write to the subflow, one or more whole segments (only the application's
/// last segment is short), as a Linux DSS mapping may cover many segments.
#[derive(Clone, Copy, Debug, Default)]
struct Map {
    ssn: u64,
    dsn: u64,
    len: u64,
}

/// A subflow's maps, in subflow order, from its oldest unacknowledged byte.
struct Maps {
    maps: VecDeque<Map>,
    /// Where the first map ends (`u64::MAX` with none): an ACK below it
    /// drops nothing, which most ACKs learn from this one test.
    front_end: u64,
    /// A copy of the map the last lookup hit (maps never change, so the copy
    /// stays true after its map is dropped): segments go out in order, so
    /// most lookups end here, most others at the map after it, and only a
    /// retransmission searches the queue (hundreds of maps deep, written
    /// round trips ago: a cache miss per step). Empty (`len` 0) before the
    /// first lookup.
    last: Map,
    /// The ordinal of `last` among all maps ever pushed, and how many have
    /// been dropped: `last` sits at index `last_no - dropped` while kept.
    last_no: u64,
    dropped: u64,
}

impl Default for Maps {
    fn default() -> Self {
        Self {
            maps: VecDeque::new(),
            front_end: u64::MAX,
            last: Map::default(),
            last_no: 0,
            dropped: 0,
        }
    }
}

impl Maps {
    fn push(&mut self, m: Map) {
        if self.maps.is_empty() {
            self.front_end = m.ssn + m.len;
        }
        self.maps.push_back(m);
    }
    /// Forget the maps the subflow has had acknowledged (below `una`).
    fn drop_acked(&mut self, una: u64) {
        if una < self.front_end {
            return;
        }
        while self.maps.front().is_some_and(|m| m.ssn + m.len <= una) {
            self.maps.pop_front();
            self.dropped += 1;
        }
        self.front_end = self.maps.front().map_or(u64::MAX, |m| m.ssn + m.len);
    }
    /// The data sequence number of subflow byte `seq`.
    fn dsn(&mut self, seq: u64) -> u64 {
        // (one test: below the map, the difference wraps far above its length)
        let holds = |m: &Map| seq.wrapping_sub(m.ssn) < m.len;
        if holds(&self.last) {
            return self.last.dsn + (seq - self.last.ssn);
        }
        let k = (self.last_no + 1)
            .checked_sub(self.dropped)
            .map(|i| i as usize)
            .filter(|&i| self.last.len > 0 && self.maps.get(i).is_some_and(holds))
            .unwrap_or_else(|| self.position(seq));
        debug_assert_eq!(k, self.position(seq), "the map after the last one holds seq");
        let m = self.maps[k];
        (self.last, self.last_no) = (m, self.dropped + k as u64);
        m.dsn + (seq - m.ssn)
    }
    /// Index of the map holding subflow byte `seq`.
    fn position(&self, seq: u64) -> usize {
        self.maps.partition_point(|m| m.ssn + m.len <= seq)
    }
    /// The map holding subflow byte `seq`.
    fn find(&self, seq: u64) -> Map {
        self.maps[self.position(seq)]
    }
    fn iter(&self) -> impl Iterator<Item = &Map> {
        self.maps.iter()
    }
}

/// A chunk to send again on another subflow: data [dsn, dsn + len), which
/// subflow `had` carried as its bytes from `ssn`.
#[derive(Clone, Copy, Debug)]
struct Reinjection {
    dsn: u64,
    len: u64,
    had: usize,
    ssn: u64,
}

/// Where an extra subflow is in its MP_JOIN handshake (RFC 8684 §3.2).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Join {
    /// Waits for the connection to be established.
    Waiting,
    /// SYN (packet 1) or third ACK (packet 3) sent at `sent_at`; re-sent at
    /// `deadline`; `resent` once it was (no RTT sample then: Karn).
    Sent {
        packet: u8,
        deadline: Time,
        rto: Time,
        sent_at: Time,
        resent: bool,
    },
    /// The fourth ACK arrived: the subflow may carry data.
    Active,
}

struct Subflow {
    tcp: TcpSender,
    /// Mappings of the data written to this subflow and not yet acknowledged
    /// on it, in subflow order.
    maps: Maps,
    join: Join,
    backup: bool,
    /// Upstream's stale subflow: skipped by the scheduler until an ACK.
    stale: bool,
    /// Connection-level timer firings, in a row, with data outstanding on
    /// this subflow and no ACK heard on it.
    stale_count: u32,
    /// When it last heard an ACK, and what that was at the last firing.
    last_ack: Option<Time>,
    last_ack_at_check: Option<Time>,
}

impl Subflow {
    /// Data in flight or waiting unsent on it.
    fn holds_data(&self) -> bool {
        self.tcp.flight_size() + self.tcp.unsent() > 0
    }
}

pub struct MptcpSender {
    cfg: TcpConfig,
    mss: u64,
    /// A page fragment of the connection's data in whole segments (data
    /// sequence is cut into them from 0, so DATA_ACK stays a boundary).
    /// Fixed by the MSS, as `gso_segments`: both are worked out once rather
    /// than by a division on every chunk.
    page_fragment: u64,
    /// The most segments one MPTCP GSO packet holds (`tso_size_goal`).
    gso_segments: u64,
    /// `cfg.send_buffer()`, and whether the subflows' controllers are
    /// coupled (they need the sibling view): fixed, and asked on every ACK.
    send_buffer: u64,
    coupled: bool,
    scheduler: Scheduler,
    subflows: Vec<Subflow>,
    /// DATA_ACK: every data byte below it is at the receiver's connection.
    data_una: u64,
    /// Next new data byte to schedule.
    data_nxt: u64,
    /// The receiver's window right edge (DATA_ACK + window, the largest seen).
    window_edge: u64,
    /// Where the application's data ends (None: endless).
    app_end: Option<u64>,
    closed: bool,
    started: bool,
    /// The connection is established (first ACK on the initial subflow).
    established: bool,
    /// Chunks to send again on another subflow, oldest first.
    reinject: VecDeque<Reinjection>,
    reinjection: Policy,
    /// Upstream's connection-level retransmission timer.
    rtx_deadline: Option<Time>,
    opportunistic_retransmission: bool,
    penalisation: bool,
    /// Per subflow: when it last triggered the receive-buffer optimisations.
    last_optimisation: Vec<Option<Time>>,
    /// Redundant scheduler: per subflow, the next data byte it is to carry.
    redundant_next: Vec<u64>,
    /// Scheduler state: the last subflow picked (round-robin's position).
    last_pick: usize,
    completed_at: Option<Time>,
    views: Vec<SubflowView>,
    /// The scheduler's view of the subflows, kept between pushes: an ACK or
    /// a write changes one subflow, so only the ones marked in `refresh` are
    /// looked at again (a subflow's room costs a walk of its scoreboard in
    /// SACK recovery).
    cands: Vec<Candidate>,
    /// Per-subflow flags here are bit masks, a bit per subflow (a flow has
    /// at most 64 paths); `all` has every subflow's bit.
    refresh: u64,
    all: u64,
    /// Per subflow: found with no send memory free, and unchanged since
    /// (`mark` undoes it). The scheduler asks whether some subflow has send
    /// memory free after every ACK, and between two asks one subflow
    /// changes, so only that one is looked at again.
    full: u64,
}

impl MptcpSender {
    /// One subflow per controller (path i gets `controllers[i]`). `cfg` is
    /// the TCP configuration: its buffers are the connection's, the rest
    /// applies to each subflow.
    pub fn new(cfg: TcpConfig, mptcp: &MptcpConfig, controllers: Vec<Box<dyn CongestionControl>>) -> Self {
        // The connection decides what to send and when; a subflow sends what
        // it is handed at once (no Nagle) and is never limited by its own
        // buffers: the connection's are the real ones.
        let mut sub_cfg = super::subflow_config(&cfg);
        sub_cfg.nodelay = true;
        sub_cfg.sndbuf = u32::MAX as u64;
        sub_cfg.rcvbuf = u32::MAX as u64;
        sub_cfg.linux_buffers = false;
        let sub_cfg = std::sync::Arc::new(sub_cfg); // one copy for every subflow
        let n = controllers.len();
        // (the scheduler keeps a bit per subflow; `sim::build` checks a
        // flow's paths against the same bound)
        assert!(n <= 64, "an MPTCP connection has at most 64 subflows, not {n}");
        let coupled = controllers.iter().any(|cc| cc.coupled());
        let subflows = controllers
            .into_iter()
            .enumerate()
            .map(|(i, cc)| Subflow {
                tcp: {
                    // (the connection's window is enforced above the subflows)
                    let mut tcp = TcpSender::new(sub_cfg.clone(), cc);
                    tcp.ignore_peer_window();
                    tcp
                },
                maps: Maps::default(),
                join: if i == 0 { Join::Active } else { Join::Waiting },
                backup: mptcp.is_backup(i),
                stale: false,
                stale_count: 0,
                last_ack: None,
                last_ack_at_check: None,
            })
            .collect();
        Self {
            mss: sub_cfg.mss as u64,
            page_fragment: RETRANSMIT_FRAGMENT / sub_cfg.mss as u64 * sub_cfg.mss as u64,
            gso_segments: (MAX_GSO / sub_cfg.mss as u64).max(2),
            send_buffer: cfg.send_buffer(),
            coupled,
            window_edge: cfg.receive_buffer(),
            cfg,
            scheduler: mptcp.scheduler,
            subflows,
            data_una: 0,
            data_nxt: 0,
            app_end: Some(0),
            closed: false,
            started: false,
            established: false,
            reinject: VecDeque::new(),
            reinjection: mptcp.reinjection(),
            rtx_deadline: None,
            opportunistic_retransmission: mptcp.opportunistic_retransmission,
            penalisation: mptcp.penalisation,
            last_optimisation: vec![None; n],
            redundant_next: vec![0; n],
            last_pick: 0,
            completed_at: None,
            views: Vec::new(),
            cands: Vec::new(),
            refresh: every(n),
            all: every(n),
            full: 0,
        }
    }

    pub fn data_acked(&self) -> u64 {
        self.data_una
    }
    /// Data bytes handed to subflows at least once (the next new one's number).
    pub fn data_sent(&self) -> u64 {
        self.data_nxt
    }
    pub fn subflow(&self, i: usize) -> &TcpSender {
        &self.subflows[i].tcp
    }
    /// Whether subflow `i` may carry data (joined).
    pub fn is_active(&self, i: usize) -> bool {
        self.subflows[i].join == Join::Active
    }

    /// Joined and not counted as failed: upstream skips stale subflows, the
    /// out-of-tree kernel those in RTO recovery.
    fn usable(&self, i: usize) -> bool {
        let s = &self.subflows[i];
        s.join == Join::Active
            && match self.reinjection {
                Policy::Upstream => !s.stale,
                Policy::SubflowTimeout => !s.tcp.timed_out(),
            }
    }

    // ---- scheduling --------------------------------------------------------

    /// Length of the next new chunk, if the application, the send buffer and
    /// the receiver's window allow one: whole segments, at most `max` bytes
    /// (at least one segment), or the application's last, short segment.
    /// Segments are whole from data sequence 0, so every segment a subflow
    /// sends lies in one chunk and DATA_ACK is always a segment boundary.
    fn new_chunk_len(&self, max: u64) -> Option<u64> {
        let (room, end) = self.new_room()?;
        if room >= self.mss {
            let whole = room.min(max.max(self.mss)) / self.mss * self.mss;
            // the application's last bytes go with the segments before them
            let rest = end - self.data_nxt;
            Some(if self.closed && rest <= room && rest < whole + self.mss {
                rest
            } else {
                whole
            })
        } else {
            Some(room)
        }
    }

    /// Whether there is a new chunk to send (`new_chunk_len` is Some),
    /// without working out its length.
    fn has_new_chunk(&self) -> bool {
        self.new_room().is_some()
    }

    /// New bytes the application, the send buffer and the receiver's window
    /// allow, and where the application's data ends, if that is a chunk: at
    /// least a segment, or the application's last, short one.
    fn new_room(&self) -> Option<(u64, u64)> {
        let end = self.app_end.unwrap_or(u64::MAX);
        let limit = end.min(self.window_edge).min(self.data_una + self.send_buffer);
        if self.data_nxt >= limit {
            return None;
        }
        let room = limit - self.data_nxt;
        (room >= self.mss || (self.closed && limit == end)).then_some((room, end))
    }

    fn candidate(&self, i: usize) -> Candidate {
        // (the default scheduler looks at queues, not at room in the cwnd)
        let room = if self.scheduler == Scheduler::Default {
            0
        } else {
            self.subflows[i].tcp.send_room()
        };
        Candidate {
            room,
            ..self.candidate_without_room(i)
        }
    }

    fn candidate_without_room(&self, i: usize) -> Candidate {
        let t = &self.subflows[i].tcp;
        let (cwnd, unsent) = (t.cwnd(), t.unsent());
        Candidate {
            usable: self.usable(i),
            backup: self.subflows[i].backup,
            cwnd,
            ssthresh: t.ssthresh(),
            srtt: t.srtt(),
            queued: t.flight_size() + unsent,
            unsent,
            room: 0,
            mss: self.mss,
            limit: self.queue_limit(cwnd),
        }
    }

    /// What a subflow may hold queued before Linux stops handing it data
    /// (`sk_stream_memory_free`): the send buffer that `window` or `sndbuf`
    /// sets on the MPTCP socket, which Linux copies to every subflow; left
    /// unset, Linux's autotuned size (`tcp_sndbuf_expand`: 2 × max(cwnd, 10)
    /// segments of 4352 B of memory, about 3 × a 1448-B segment each), in
    /// payload bytes.
    fn queue_limit(&self, cwnd: u64) -> u64 {
        if self.cfg.sndbuf < UNSET_BUFFER {
            self.send_buffer
        } else {
            6 * cwnd.max(10 * self.mss)
        }
    }

    /// Hand chunks to subflows while the scheduler finds one with room.
    /// (Inlined: after most ACKs there is nothing to do, which the test
    /// says without the call.)
    #[inline]
    fn push(&mut self, now: Time, out: &mut Outbox) {
        if !self.started {
            return;
        }
        if self.scheduler == Scheduler::Redundant {
            self.push_redundant(now, out);
        } else if !self.nothing_to_schedule() {
            self.push_scheduled(now, out);
        }
        if self.reinjection == Policy::Upstream && self.rtx_deadline.is_none() && self.data_una < self.data_nxt {
            self.rtx_deadline = Some(now + self.rtx_interval(now));
        }
    }

    /// Subflow `i` changed: the scheduler looks at it again.
    fn mark(&mut self, i: usize) {
        self.refresh |= 1 << i;
        self.full &= !(1 << i);
    }
    fn mark_all(&mut self) {
        self.refresh = self.all;
        self.full = 0;
    }

    /// Subflow `i`'s next timer: its join's retransmission while it joins,
    /// its TCP timers once active.
    fn subflow_timer(&self, i: usize) -> Time {
        let s = &self.subflows[i];
        match s.join {
            Join::Sent { deadline, .. } => deadline,
            Join::Active => s.tcp.next_timer(),
            Join::Waiting => Time::MAX,
        }
    }

    /// The usual ACK under the default scheduler: nothing to reinject, and no
    /// usable subflow with send memory free or no new data (the subflow's
    /// queue is topped up in pieces, and the piece before overshot). Send
    /// memory first: it is what is mostly missing, and mostly known.
    #[inline]
    fn nothing_to_schedule(&mut self) -> bool {
        self.scheduler == Scheduler::Default
            && self.reinject.is_empty()
            && !(self.opportunistic_retransmission || self.penalisation)
            && !(self.memory_free() && self.has_new_chunk())
    }

    #[inline(never)] // (see `push`)
    fn push_scheduled(&mut self, now: Time, out: &mut Outbox) {
        // What is left of the current burst. A burst lasts one push:
        // upstream picks the subflow afresh every time it pushes
        // (`__mptcp_push_pending`, since Linux 6.5 dropped `msk->last_snd`;
        // 5.10 to 6.4 went on with the last subflow while its burst lasted,
        // across pushes).
        let mut burst_left = 0;
        let mut cands = std::mem::take(&mut self.cands);
        let mut fresh = false;
        loop {
            // A queued reinjection is dropped once DATA_ACK covers it or the
            // subflow that had it delivered it after all.
            let (data_una, subflows) = (self.data_una, &self.subflows);
            if !self.reinject.is_empty() {
                self.reinject.retain_mut(|r| {
                    let keep = r.dsn + r.len > data_una && subflows[r.had].tcp.snd_una() < r.ssn + r.len;
                    if keep && r.dsn < data_una {
                        // partly DATA_ACKed: only the rest goes again
                        let done = data_una - r.dsn;
                        (r.dsn, r.ssn, r.len) = (data_una, r.ssn + done, r.len - done);
                    }
                    keep
                });
            }
            if !fresh && (!self.reinject.is_empty() || self.has_new_chunk()) {
                self.refresh_candidates(&mut cands);
                fresh = true;
            }
            let Some((dsn, len, reinjection, i)) = self.next_job(&cands, &mut burst_left) else {
                break;
            };
            self.last_pick = i;
            burst_left = burst_left.saturating_sub(len);
            self.send_chunk(now, i, dsn, len, out);
            // A write changes only what the subflow holds (its cwnd, RTT and
            // state stay), and its room shrinks by exactly the bytes written.
            let t = &self.subflows[i].tcp;
            let c = &mut cands[i];
            c.unsent = t.unsent();
            c.queued = t.flight_size() + c.unsent;
            c.room = c.room.saturating_sub(len);
            self.refresh &= !(1 << i);
            if let Some(k) = reinjection {
                self.reinject.remove(k);
            } else {
                self.data_nxt += len;
            }
        }
        if (self.opportunistic_retransmission || self.penalisation) && self.window_blocked() {
            if !fresh {
                self.refresh_candidates(&mut cands);
            }
            self.optimise_receive_buffer(now, &cands, out);
        }
        self.cands = cands;
    }

    /// Whether some usable subflow has send memory free (the test the default
    /// scheduler's pick starts with), from the view where it is up to date
    /// and from the subflow itself where it is not.
    fn memory_free(&mut self) -> bool {
        if self.cands.len() != self.subflows.len() {
            return true; // no view yet: build it
        }
        debug_assert!(
            (0..self.subflows.len()).all(|k| self.full & (1 << k) == 0 || !self.has_memory_free(k)),
            "a subflow found full changed unmarked"
        );
        // (only the subflows not found full since they last changed: after an
        // ACK, mostly the one it was for; this runs on every ACK)
        let mut open = self.all & !self.full;
        while open != 0 {
            let k = open.trailing_zeros() as usize;
            open &= open - 1;
            let free = if self.refresh & (1 << k) == 0 {
                let c = &self.cands[k];
                c.usable && c.queued < c.limit
            } else {
                self.has_memory_free(k)
            };
            if free {
                return true;
            }
            self.full |= 1 << k;
        }
        false
    }

    /// Subflow `k` is usable and holds less than Linux lets it queue.
    fn has_memory_free(&self, k: usize) -> bool {
        let t = &self.subflows[k].tcp;
        t.flight_size() + t.unsent() < self.queue_limit(t.cwnd()) && self.usable(k)
    }

    /// Bring the scheduler's view up to date: the marked subflows (all of
    /// them the first time).
    fn refresh_candidates(&mut self, cands: &mut Vec<Candidate>) {
        if cands.len() != self.subflows.len() {
            cands.clear();
            cands.extend((0..self.subflows.len()).map(|k| self.candidate(k)));
        } else {
            for (k, c) in cands.iter_mut().enumerate() {
                if self.refresh & (1 << k) != 0 {
                    *c = self.candidate(k);
                } else {
                    debug_assert_eq!(*c, self.candidate(k), "subflow {k} changed unmarked");
                }
            }
        }
        self.refresh = 0;
    }

    /// The redundant scheduler: every subflow with room takes the oldest chunk
    /// not yet DATA_ACKed that it has not carried, or new data; lowest RTT first.
    #[inline(never)] // (out of the default scheduler's path: see `Connection::hold` in receiver.rs)
    fn push_redundant(&mut self, now: Time, out: &mut Outbox) {
        let n = self.subflows.len();
        let backups_only = !(0..n).any(|i| self.usable(i) && !self.subflows[i].backup);
        let mut order: Vec<usize> = (0..n)
            .filter(|&i| self.usable(i) && self.subflows[i].backup == backups_only)
            .collect();
        order.sort_by_key(|&i| self.subflows[i].tcp.srtt().unwrap_or(0));
        loop {
            let mut sent = false;
            for &i in &order {
                let t = &self.subflows[i].tcp;
                if t.send_room() < self.mss || t.unsent() > 0 {
                    continue;
                }
                // chunks are whole segments from data sequence 0 (the
                // application's last excepted), so DATA_ACK and every
                // chunk's end are chunk boundaries
                let from = self.redundant_next[i].max(self.data_una);
                let (dsn, len, new) = if from < self.data_nxt {
                    (from, self.mss.min(self.data_nxt - from), false)
                } else if let Some(len) = self.new_chunk_len(self.mss) {
                    (self.data_nxt, len, true)
                } else {
                    continue;
                };
                self.send_chunk(now, i, dsn, len, out);
                self.redundant_next[i] = dsn + len;
                if new {
                    self.data_nxt += len;
                }
                sent = true;
            }
            if !sent {
                break;
            }
        }
    }

    /// The application has data the connection's window keeps back.
    fn window_blocked(&self) -> bool {
        let end = self.app_end.unwrap_or(u64::MAX);
        self.data_nxt < end && self.data_nxt + self.mss.min(end - self.data_nxt) > self.window_edge
    }

    /// The out-of-tree kernel's `mptcp_rcv_buf_optimization`, for the subflow
    /// `s` the scheduler would give new data: the chunk at DATA_ACK, carried
    /// by another subflow, goes again on `s` if `s` has not carried it and
    /// the other subflow is slow to deliver it (cwnd ≤ 4 segments or srtt >
    /// 4 × s's); and, at most once per s's srtt, that subflow is penalised.
    #[inline(never)] // (out of the default scheduler's path: see `Connection::hold` in receiver.rs)
    fn optimise_receive_buffer(&mut self, now: Time, cands: &[Candidate], out: &mut Outbox) {
        let Some((s, _)) = self.scheduler.pick(cands, self.last_pick, None) else {
            return;
        };
        let una = self.data_una;
        // the segment at DATA_ACK, if subflow k carries it
        let carries = |k: usize| {
            self.subflows[k]
                .maps
                .iter()
                .find(|m| m.dsn <= una && una < m.dsn + m.len)
                .map(|m| Map {
                    ssn: m.ssn + (una - m.dsn),
                    dsn: una,
                    len: self.mss.min(m.dsn + m.len - una),
                })
        };
        let Some((owner, chunk)) = (0..self.subflows.len())
            .filter(|&k| k != s)
            .find_map(|k| carries(k).map(|m| (k, m)))
        else {
            return;
        };
        let s_carries = carries(s).is_some();
        let srtt_s = self.subflows[s].tcp.srtt().unwrap_or(0);
        let owner_srtt = self.subflows[owner].tcp.srtt().unwrap_or(0);
        // Penalisation: the slower subflow that has the chunk, in the Open state.
        if self.penalisation && owner_srtt > srtt_s {
            let due = self.last_optimisation[s].is_none_or(|t| now >= t + srtt_s);
            if due && self.subflows[owner].tcp.penalise(now) {
                self.last_optimisation[s] = Some(now);
                self.mark(owner);
            }
        }
        // Opportunistic retransmission, on a subflow with nothing waiting (so
        // the chunk is one segment of its own).
        let slow = self.subflows[owner].tcp.cwnd() <= 4 * self.mss || owner_srtt > 4 * srtt_s;
        if self.opportunistic_retransmission && slow && !s_carries && self.subflows[s].tcp.unsent() == 0 {
            self.send_chunk(now, s, chunk.dsn, chunk.len, out);
        }
    }

    /// The next chunk and its subflow: the first queued reinjection some
    /// subflow other than the one that had it can take, else new data.
    /// `burst_left` is what is left of the push's current burst.
    fn next_job(&mut self, cands: &[Candidate], burst_left: &mut u64) -> Option<(u64, u64, Option<usize>, usize)> {
        if !self.reinject.is_empty() {
            let placeable: Vec<Option<(usize, u64)>> = (0..self.subflows.len())
                .map(|h| self.scheduler.pick(cands, self.last_pick, Some(h)))
                .collect();
            if placeable.iter().any(Option::is_some) {
                let found = self
                    .reinject
                    .iter()
                    .enumerate()
                    .find_map(|(k, r)| placeable[r.had].map(|p| (k, *r, p)));
                if let Some((k, r, (i, _))) = found {
                    // (a resend starts no burst: upstream's `__mptcp_retrans`
                    // leaves `snd_burst` alone, and new data is picked afresh)
                    *burst_left = 0;
                    return Some((r.dsn, r.len, Some(k), i));
                }
            }
        }
        if !self.has_new_chunk() {
            return None;
        }
        // Within a push the default scheduler keeps filling the subflow of
        // its burst while it can queue whole segments (and is still of the
        // tier in use: a backup only while no active subflow is usable).
        let active_usable = cands.iter().any(|c| c.usable && !c.backup);
        let continuing = self.scheduler == Scheduler::Default
            && *burst_left > 0
            && cands
                .get(self.last_pick)
                .is_some_and(|c| c.usable && can_queue(c) && (!c.backup || !active_usable));
        let i = if continuing {
            self.last_pick
        } else {
            let (i, allowance) = self.scheduler.pick(cands, self.last_pick, None)?;
            // (upstream caps it at what the connection's window allows, which
            // `new_chunk_len` does here for each chunk)
            *burst_left = allowance;
            i
        };
        // The default scheduler: one piece of a page fragment, as upstream
        // appends it (see `upstream_chunk`), within the burst; minRTT: as many
        // segments as it would give this subflow one by one while its cwnd has
        // room (its RTT, and so the choice, does not change as it is given
        // data); round-robin one.
        let c = &cands[i];
        let max = match self.scheduler {
            Scheduler::Default => (*burst_left).min(self.upstream_chunk(c)),
            Scheduler::MinRtt => c.room,
            Scheduler::RoundRobin | Scheduler::Redundant => self.mss,
        };
        let len = self.new_chunk_len(max)?;
        Some((self.data_nxt, len, None, i))
    }

    /// How much upstream Linux appends to a subflow in one step of a push
    /// (`mptcp_sendmsg_frag`): the application's data sits in page fragments
    /// of 32 KB (`SKB_FRAG_PAGE_ORDER`; here whole segments from data
    /// sequence 0), and one step copies what is left of the current fragment,
    /// at most the subflow's TSO size goal (`tcp_send_mss`). Whether the
    /// subflow may take it is a yes/no test of its send memory
    /// (`sk_stream_memory_free`, `can_queue`), so a step may overshoot the send
    /// buffer by up to a step, and the next step waits until that much has
    /// been acknowledged: the subflow's queue is topped up in pieces of up to
    /// 32 KB, not segment by segment as ACKs free room.
    fn upstream_chunk(&self, c: &Candidate) -> u64 {
        let fragment = self.page_fragment;
        let left = fragment - self.data_nxt % fragment;
        left.min(tso_size_goal(c, self.gso_segments))
    }

    /// Hand subflow `i` data bytes [dsn, dsn + len) as one mapped write; what
    /// it sends at once goes into `out` with its options.
    fn send_chunk(&mut self, now: Time, i: usize, dsn: u64, len: u64, out: &mut Outbox) {
        self.mark(i);
        let sub = &mut self.subflows[i];
        sub.maps.push(Map {
            ssn: sub.tcp.written_end(),
            dsn,
            len,
        });
        let from = out.len();
        let taken = sub.tcp.write(now, len, out);
        debug_assert_eq!(taken, len, "a subflow's own buffer never limits");
        self.flush_subflow(i, out, from);
    }

    /// Give what subflow `i` has just put in `out` (from index `from`) its
    /// path and options.
    fn flush_subflow(&mut self, i: usize, out: &mut Outbox, from: usize) {
        let header = self.cfg.header_bytes;
        let maps = &mut self.subflows[i].maps;
        for tx in &mut out[from..] {
            tx.path = i as u8;
            if let Body::Tcp(seg) = &mut tx.body {
                let dss = if seg.len > 0 {
                    // new data is in the chunk just written; a retransmission is searched for
                    debug_assert!(
                        {
                            let m = maps.find(seg.seq);
                            m.ssn <= seg.seq && seg.seq + seg.len as u64 <= m.ssn + m.len
                        },
                        "every segment lies in one mapped chunk"
                    );
                    Dss::Mapping { dsn: maps.dsn(seg.seq) }
                } else {
                    Dss::DataAck(0)
                };
                seg.set_dss(Some(dss));
                // (the connection's first data goes with MP_CAPABLE instead
                // of DSS, each time it is sent: `MP_CAPABLE_WITH_DATA`)
                let option = match dss {
                    Dss::Mapping { dsn: 0 } => MP_CAPABLE_WITH_DATA,
                    _ => dss.wire_bytes(),
                };
                tx.size = tx.size.max(header) + option;
            }
        }
    }

    // ---- joins -------------------------------------------------------------

    #[cold]
    fn send_join(&mut self, now: Time, i: usize, packet: u8, rto: Time, resent: bool, out: &mut Outbox) {
        let flags = if packet == 1 { tcp_flags::SYN } else { tcp_flags::ACK };
        let join = MptcpHandshake::Join { packet };
        let seg = TcpSegment {
            seq: 0,
            len: 0,
            ack: 0,
            wnd: 0,
            flags,
            sack: Default::default(),
            ..Default::default()
        };
        let size = self.cfg.header_bytes + join.wire_bytes();
        out.push(Transmit {
            path: i as u8,
            body: Body::Tcp(seg),
            size,
            ect: false,
            ext: Some(Box::new(Ext::MptcpHandshake(join))),
        });
        self.mark(i);
        self.subflows[i].join = Join::Sent {
            packet,
            deadline: now + rto,
            rto,
            sent_at: now,
            resent,
        };
    }

    /// The connection is established: every other subflow starts its join.
    #[cold]
    fn establish(&mut self, now: Time, out: &mut Outbox) {
        self.established = true;
        for i in 1..self.subflows.len() {
            self.send_join(now, i, 1, self.cfg.rto_initial, false, out);
        }
    }

    /// A handshake packet for subflow `i`; true if it was one.
    #[cold]
    fn on_join_packet(
        &mut self,
        now: Time,
        i: usize,
        seg: &TcpSegment,
        handshake: Option<MptcpHandshake>,
        out: &mut Outbox,
    ) -> bool {
        let Join::Sent {
            packet,
            sent_at,
            resent,
            ..
        } = self.subflows[i].join
        else {
            return false;
        };
        if packet == 1 && handshake == Some(MptcpHandshake::Join { packet: 2 }) {
            if !resent {
                // the subflow's first RTT sample, as Linux takes it from the handshake
                self.subflows[i].tcp.on_handshake_rtt(now - sent_at);
            }
            self.send_join(now, i, 3, self.cfg.rto_initial, false, out);
            return true;
        }
        if packet == 3 && seg.flags & tcp_flags::SYN == 0 && handshake.is_none() && seg.dss().is_none() {
            self.subflows[i].join = Join::Active;
            return true;
        }
        true // anything else on a joining subflow is ignored
    }

    // ---- acknowledgements and timers ---------------------------------------

    fn on_data_ack(&mut self, now: Time, i: usize, seg: &TcpSegment, out: &mut Outbox) {
        let una_before = self.data_una;
        if let Some(Dss::DataAck(data_ack)) = seg.dss() {
            if data_ack >= self.data_una {
                self.data_una = data_ack.min(self.data_nxt.max(self.data_una));
                self.window_edge = self.window_edge.max(data_ack + seg.wnd as u64);
            }
        }
        self.mark(i);
        let s = &mut self.subflows[i];
        s.last_ack = Some(now);
        s.stale = false;
        self.views.clear();
        if self.coupled {
            for (k, s) in self.subflows.iter().enumerate() {
                if k != i && s.join == Join::Active {
                    self.views.push(s.tcp.view());
                }
            }
        }
        let sub = &mut self.subflows[i];
        let from = out.len();
        sub.tcp.on_segment_with(now, seg, &self.views, out);
        let una = sub.tcp.snd_una();
        sub.maps.drop_acked(una);
        self.flush_subflow(i, out, from);
        // (re-armed from the subflows' timers as this ACK left them)
        if self.reinjection == Policy::Upstream && self.data_una > una_before {
            self.rtx_deadline = (self.data_una < self.data_nxt).then(|| now + self.rtx_interval(now));
        }
        if !self.established && i == 0 {
            self.establish(now, out);
        }
        self.check_complete(now);
    }

    fn check_complete(&mut self, now: Time) {
        if self.completed_at.is_none() && self.closed && self.app_end == Some(self.data_una) {
            self.completed_at = Some(now);
        }
    }

    /// Upstream's connection-level timer interval: the longest time to go of
    /// the subflows' pending RTO timers (stale-counting ones left out), at
    /// least `rto_min` (`mptcp_set_timeout`).
    fn rtx_interval(&self, now: Time) -> Time {
        let mut interval = self.cfg.rto_min;
        for s in &self.subflows {
            if s.join == Join::Active && s.stale_count == 0 && s.tcp.flight_size() > 0 {
                let t = s.tcp.next_loss_timer();
                if t != Time::MAX {
                    interval = interval.max(t.saturating_sub(now));
                }
            }
        }
        interval
    }

    /// Upstream's connection-level retransmission timer fired
    /// (`__mptcp_retrans`): count subflows that hold data and hear nothing
    /// towards staleness, then send the data at DATA_ACK again on a subflow
    /// with nothing outstanding.
    #[cold]
    fn on_retransmit_timer(&mut self, now: Time, out: &mut Outbox) {
        self.rtx_deadline = None;
        if self.data_una >= self.data_nxt {
            return;
        }
        for i in 0..self.subflows.len() {
            let s = &mut self.subflows[i];
            if s.join != Join::Active || s.stale || !s.holds_data() {
                continue;
            }
            if s.last_ack == s.last_ack_at_check {
                s.stale_count += 1;
            } else {
                s.last_ack_at_check = s.last_ack;
                s.stale_count = 0;
            }
            // stale only if another subflow can take over its data
            let others =
                (0..self.subflows.len()).any(|k| k != i && self.usable(k) && self.subflows[k].stale_count == 0);
            if self.subflows[i].stale_count >= STALE_LOSS_COUNT && others {
                self.subflows[i].stale = true;
                self.reinject_from(i);
            }
        }
        let idle = |k: usize| self.usable(k) && !self.subflows[k].holds_data();
        let pick = (0..self.subflows.len())
            .filter(|&k| idle(k))
            .min_by_key(|&k| self.subflows[k].backup);
        if let Some(k) = pick {
            // whole segments (DATA_ACK is a segment boundary), or up to the
            // application's last byte
            let len = self.page_fragment.min(self.data_nxt - self.data_una);
            self.send_chunk(now, k, self.data_una, len, out);
        }
        self.rtx_deadline = Some(now + self.rtx_interval(now));
    }

    /// Subflow `i` timed out: its data not yet DATA_ACKed goes again on
    /// another subflow (again, if an earlier copy went to one that failed too).
    #[cold]
    fn reinject_from(&mut self, i: usize) {
        // (the redundant scheduler sends everything on every subflow anyway)
        if self.scheduler == Scheduler::Redundant || self.subflows.iter().filter(|s| s.join == Join::Active).count() < 2
        {
            return;
        }
        // data already queued to go again (by any subflow) is not queued twice
        let mut queued = RangeSet::default();
        for r in &self.reinject {
            queued.add(r.dsn, r.dsn + r.len);
        }
        let una = self.subflows[i].tcp.snd_una();
        let mut pieces = Vec::new();
        for m in self.subflows[i].maps.iter() {
            // what the subflow has not had acknowledged, and the connection neither
            let skip = una.saturating_sub(m.ssn).max(self.data_una.saturating_sub(m.dsn));
            let mut from = m.dsn + skip;
            let end = m.dsn + m.len;
            for &(s, e) in queued.ranges() {
                if e <= from || s >= end {
                    continue;
                }
                if s > from {
                    pieces.push((from, s, m));
                }
                from = from.max(e);
            }
            if from < end {
                pieces.push((from, end, m));
            }
        }
        for (from, end, m) in pieces {
            self.reinject.push_back(Reinjection {
                dsn: from,
                len: end - from,
                had: i,
                ssn: m.ssn + (from - m.dsn),
            });
        }
    }
}

/// A bit for each of `n` subflows (at most 64: `sim::build` checks the paths).
fn every(n: usize) -> u64 {
    u64::MAX.checked_shr(64 - n as u32).unwrap_or(0)
}

/// What one MPTCP GSO packet holds at most (`MPTCP_MAX_GSO_SIZE`: 64 KiB
/// less `MAX_TCP_HEADER` + 1, 320 + 1 bytes on x86-64).
const MAX_GSO: u64 = 65536 - 321;

/// Linux's TSO size goal for a subflow (`tcp_tso_autosize`): about 1 ms of
/// data at its pacing rate (`sk_pacing_shift` 10: the rate / 1024), at least
/// two segments, at most `most` (the segments of one MPTCP GSO packet,
/// `MAX_GSO`). The pacing rate is the default scheduler's (cwnd / srtt × 2 in
/// slow start, × 1.2 after); before an RTT sample it is unlimited.
fn tso_size_goal(c: &Candidate, most: u64) -> u64 {
    let Some(srtt) = c.srtt.filter(|&t| t > 0) else {
        return most * c.mss;
    };
    let per_ms = pacing_ratio(c) * c.cwnd as f64 * (1e9 / 1024.0) / srtt as f64;
    ((per_ms / c.mss as f64) as u64).clamp(2, most) * c.mss
}

impl StreamSender for MptcpSender {
    fn kind(&self) -> &'static str {
        "mptcp"
    }
    fn write_all(&mut self, now: Time, bytes: Option<u64>, out: &mut Outbox) {
        self.started = true;
        self.app_end = bytes.map(|b| self.data_nxt + b);
        self.push(now, out);
    }
    fn close(&mut self, now: Time, out: &mut Outbox) {
        self.closed = true;
        if self.app_end.is_none() {
            self.app_end = Some(self.data_nxt);
        }
        self.push(now, out);
        self.check_complete(now);
    }
    fn stop(&mut self) {
        // (data already handed out, reinjections included, is still delivered)
        self.app_end = Some(self.data_nxt);
    }
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        let Some((seg, i, handshake)) = super::open_segment(rx, self.subflows.len()) else {
            return;
        };
        if self.subflows[i].join != Join::Active {
            self.mark_all(); // a join changes which subflows are usable
            self.on_join_packet(now, i, seg, handshake, out);
        } else if seg.flags & tcp_flags::ACK != 0 && seg.flags & tcp_flags::SYN == 0 && handshake.is_none() {
            // (a late duplicate of a handshake packet is not a subflow ACK)
            self.on_data_ack(now, i, seg, out);
        }
        self.push(now, out);
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        // Only a timer that fired sends: the simulator may wake the
        // connection when nothing is due (a timer stopped or moved later),
        // and a scheduling round there would penalise a subflow or resend a
        // chunk at a moment no stack would (the penalty is rationed by time).
        if self.poll_at().is_none_or(|t| t > now) {
            return;
        }
        self.mark_all();
        for i in 0..self.subflows.len() {
            if let Join::Sent {
                packet, deadline, rto, ..
            } = self.subflows[i].join
            {
                if now >= deadline {
                    let rto = (2 * rto).min(self.cfg.rto_max);
                    self.send_join(now, i, packet, rto, true, out);
                }
                continue;
            }
            if self.subflows[i].tcp.next_timer() <= now {
                let before = self.subflows[i].tcp.stats().timeouts;
                let from = out.len();
                self.subflows[i].tcp.on_timer(now, out);
                self.flush_subflow(i, out, from);
                if self.reinjection == Policy::SubflowTimeout && self.subflows[i].tcp.stats().timeouts > before {
                    self.reinject_from(i);
                }
            }
        }
        if self.rtx_deadline.is_some_and(|t| t <= now) {
            self.on_retransmit_timer(now, out);
        }
        self.push(now, out);
    }
    fn poll_at(&self) -> Option<Time> {
        // (a plain loop: the engine asks after every packet)
        let mut at = self.rtx_deadline.unwrap_or(Time::MAX);
        for i in 0..self.subflows.len() {
            at = at.min(self.subflow_timer(i));
        }
        deadline(at)
    }
    fn path_count(&self) -> usize {
        self.subflows.len()
    }
    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot {
        match scope {
            Scope::Path(i) => {
                let t = &mut self.subflows[i].tcp;
                Snapshot {
                    counters: t.stats_at(now),
                    sender: Some(t.state()),
                }
            }
            Scope::All => {
                let mut counters = TransportCounters::default();
                for s in &mut self.subflows {
                    counters = counters.plus(&s.tcp.stats_at(now));
                }
                // The connection's window: the sum of the subflows' windows;
                // RTT and RTO those of its fastest working subflow (the
                // initial one if none works).
                let working = self
                    .subflows
                    .iter()
                    .filter(|s| s.join == Join::Active && !s.tcp.timed_out());
                let fastest = working
                    .min_by_key(|s| s.tcp.srtt().unwrap_or(Time::MAX))
                    .unwrap_or(&self.subflows[0]);
                let first = fastest.tcp.state();
                let active = self.subflows.iter().filter(|s| s.join == Join::Active);
                let cwnd = active.map(|s| s.tcp.cwnd()).sum();
                Snapshot {
                    counters,
                    sender: Some(SenderState {
                        cwnd,
                        ssthresh: None,
                        ..first
                    }),
                }
            }
        }
    }
    fn report(&self) -> Report {
        let mut log: Vec<_> = self
            .subflows
            .iter()
            .flat_map(|s| s.tcp.congestion_log().iter().cloned())
            .collect();
        log.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
        Report {
            congestion_control: Some(self.subflows[0].tcp.controller_name()),
            completed_at: self.completed_at,
            congestion_log: log,
        }
    }
}

#[cfg(test)]
impl MptcpSender {
    pub fn debug_state(&self) -> String {
        let mut s = format!(
            "data_una {} data_nxt {} window_edge {} app_end {:?} reinject {:?} rtx_deadline {:?} poll {:?}\n",
            self.data_una,
            self.data_nxt,
            self.window_edge,
            self.app_end,
            self.reinject,
            self.rtx_deadline,
            crate::transport::StreamSender::poll_at(self)
        );
        for (i, sf) in self.subflows.iter().enumerate() {
            let t = &sf.tcp;
            s += &format!(
                "  sf{i}: join {:?} stale {} cnt {} una {} written {} flight {} unsent {} cwnd {} room {} timed_out {} rto {} poll {:?} maps {:?}\n",
                sf.join, sf.stale, sf.stale_count, t.snd_una(), t.written_end(), t.flight_size(), t.unsent(), t.cwnd(),
                t.send_room(), t.timed_out(), t.rto(), t.poll_at(), sf.maps.iter().collect::<Vec<_>>()
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sender of `paths` subflows, each with controller `cc`, default settings.
    fn sender(paths: usize, cc: &str) -> MptcpSender {
        let cfg = TcpConfig::default();
        let ccs = (0..paths)
            .map(|_| {
                crate::cc::build(
                    "",
                    cc,
                    &cfg.cc_params,
                    super::super::subflow_config(&cfg).controller_config(),
                )
                .unwrap()
            })
            .collect();
        MptcpSender::new(cfg, &MptcpConfig::default(), ccs)
    }

    #[test]
    fn upstream_tops_a_subflow_up_in_page_fragment_pieces() {
        // Upstream Linux (net/mptcp/protocol.c, mptcp_sendmsg_frag and
        // __mptcp_subflow_push_pending): the data waits in 32 KB page
        // fragments; one step appends what is left of the current fragment (at
        // most the TSO size goal), and the subflow's send memory is tested
        // (yes or no) only between steps. So a subflow's queue ends at or
        // above its send buffer, less than one fragment above it, and no
        // mapping crosses a fragment boundary.
        let mut s = sender(2, "cubic");
        let mut out = Vec::new();
        s.write_all(0, None, &mut out);
        let fragment = 32 * 1024 / s.mss * s.mss;
        let sub = &s.subflows[0];
        let limit = s.queue_limit(sub.tcp.cwnd());
        let queued = sub.tcp.flight_size() + sub.tcp.unsent();
        assert!(
            queued >= limit && queued < limit + fragment,
            "queued {queued}, send buffer {limit}"
        );
        assert!(sub.maps.iter().count() >= 2, "the queue took more than one piece");
        for m in sub.maps.iter() {
            assert!(m.len <= fragment, "{m:?}");
            assert_eq!(
                m.dsn / fragment,
                (m.dsn + m.len - 1) / fragment,
                "{m:?} crosses a fragment"
            );
        }
        // the subflow sends its initial window at once; the rest waits
        assert_eq!(out.len() as u64, s.subflows[0].tcp.cwnd() / s.mss);
    }

    #[test]
    fn the_first_data_goes_with_mp_capable_and_the_rest_with_dss() {
        // RFC 8684 §3.1: the client's first data segment carries MP_CAPABLE
        // with both keys and the data-level length (22 bytes, 24 padded),
        // which maps it; every later one a DSS mapping (§3.3.1: a 4-byte
        // DATA_ACK, an 8-byte data sequence number, a 4-byte subflow one and
        // the length, no checksum: the 22-byte option this kernel sends, 24
        // padded), taken out of the payload, so that a full segment is the
        // same size as a plain TCP one (Linux: 1424 bytes of payload at MTU
        // 1500 with timestamps)
        let mut s = sender(2, "reno");
        let mut out = Vec::new();
        s.write_all(0, None, &mut out);
        let cfg = TcpConfig::default();
        let segs: Vec<(u32, u64, u32)> = out
            .iter()
            .map(|tx| match &tx.body {
                Body::Tcp(seg) => match seg.dss() {
                    Some(Dss::Mapping { dsn }) => (tx.size, dsn, seg.len),
                    other => panic!("a data segment without a mapping: {other:?}"),
                },
                _ => unreachable!(),
            })
            .collect();
        assert!(segs.len() >= 2, "{segs:?}");
        // the first maps data byte 0 (MP_CAPABLE), the others follow on
        assert_eq!(segs[0].1, 0, "{segs:?}");
        assert!(segs.windows(2).all(|w| w[1].1 == w[0].1 + w[0].2 as u64), "{segs:?}");
        // every full segment is header + MSS on the wire, its payload 24 B short
        assert!(
            segs.iter()
                .all(|&(size, _, len)| size == cfg.header_bytes + cfg.mss && len == cfg.mss - 24),
            "{segs:?}"
        );
    }

    #[test]
    fn reinjection_queues_what_no_queued_copy_covers() {
        // Subflow 0 holds the retransmission timer's 32 KB copy from DATA_ACK,
        // subflow 1 the original 64-segment burst: when both fail, all 64
        // segments are queued to go again, each once (a copy that starts at the
        // same data byte does not stand for a longer map).
        let mut s = sender(3, "reno");
        let mss = s.mss;
        for sub in &mut s.subflows {
            sub.join = Join::Active;
        }
        let short = RETRANSMIT_FRAGMENT / mss * mss;
        s.subflows[0].maps.push(Map {
            ssn: 0,
            dsn: 0,
            len: short,
        });
        s.subflows[1].maps.push(Map {
            ssn: 0,
            dsn: 0,
            len: 64 * mss,
        });
        s.data_nxt = 64 * mss;
        s.reinject_from(0);
        s.reinject_from(1);
        let mut covered = RangeSet::default();
        let mut total = 0;
        for r in &s.reinject {
            total += r.len;
            covered.add(r.dsn, r.dsn + r.len);
        }
        assert_eq!(covered.ranges(), &[(0, 64 * mss)], "queued: {:?}", s.reinject);
        assert_eq!(total, 64 * mss, "each byte queued once: {:?}", s.reinject);
    }
}
