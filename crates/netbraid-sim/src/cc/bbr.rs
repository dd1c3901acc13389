//! BBR version 1, as Linux's `tcp_bbr.c` runs it (the kernel here defaults
//! to it). A model, not a reaction to loss: the bottleneck bandwidth is the
//! windowed maximum of delivery-rate samples over 10 round trips, the
//! propagation delay the minimum RTT over 10 s; the sender paces at
//! pacing_gain × bandwidth and keeps at most cwnd_gain × BDP in flight.
//!
//! Modes: STARTUP (gain 2/ln 2 until the bandwidth stops growing by 25 %
//! for 3 rounds), DRAIN (the inverse gain until the flight is down to one
//! BDP), PROBE_BW (pacing gain cycling 1.25, 0.75, 1 × 6, one min-RTT per
//! phase, starting at a random phase other than 0.75), PROBE_RTT (when the
//! min RTT is 10 s old: 4 segments in flight for 200 ms and a round).
//! In recovery, the first round conserves packets (cwnd = in flight +
//! delivered), later rounds slow-start towards the target, and leaving
//! recovery restores the window held before it. After a timeout the
//! window is one segment, growing towards the target.
//!
//! Kept from Linux: its ceil rounding of the BDP in segments, the
//! quantisation budget (3 × the TSO goal, even, +2 in the 1.25 phase), the
//! ACK-aggregation allowance (extra data ACKed beyond the estimate, over
//! 5–10 rounds, at most 100 ms of data), the 1 % pacing margin and the
//! pacing rate that never falls before the pipe is full, and the long-term
//! ("policer") bandwidth: two intervals of 4–16 rounds in a row, each
//! ending at a loss with at least 50/256 of its packets lost, whose
//! delivery rates agree within 1/8 (or 4 kbit/s), make their mean the
//! estimate, paced at gain 1, for 48 rounds. Not modelled: the restart
//! from idle.

use super::{CcConfig, CongestionControl, ControllerInfo, LossState, ParamInfo, ParamKind, Params, RateEvent};
use crate::engine::time::{MILLISECOND, SECOND};
use crate::engine::{RandomStream, Time};
use std::collections::VecDeque;

/// 2/ln 2: the smallest gain that doubles the delivery rate every round.
const HIGH_GAIN: f64 = 2.885;
/// Probe-bandwidth pacing gains, one phase per min RTT.
const CYCLE: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Linux's floor on the window: two ACK-every-other-segment pairs.
const MIN_CWND_SEGMENTS: u64 = 4;
/// Linux's TCP_INIT_CWND, which BBR uses whatever the initial window.
const INIT_CWND_SEGMENTS: u64 = 10;
/// Linux paces 1 % below the estimate (`bbr_pacing_margin_percent`).
const PACING_MARGIN: f64 = 0.99;
/// Long-term sampling (Linux's `bbr_lt_*`): an interval lasts 4 to 16
/// rounds and counts when at least 50/256 of what it delivered was lost;
/// two in a row agree within 1/8 or 4 kbit/s (500 B/s); the estimate is
/// then used for 48 rounds.
const LT_INTERVAL_MIN_ROUNDS: u32 = 4;
const LT_LOSS_THRESHOLD: f64 = 50.0 / 256.0;
const LT_BW_RATIO: f64 = 1.0 / 8.0;
const LT_BW_DIFF: f64 = 500.0;
const LT_BW_MAX_ROUNDS: u32 = 48;

pub(super) const INFO: ControllerInfo = ControllerInfo {
    name: "bbr",
    aliases: &[],
    doc: "BBR v1 as in Linux: paced at a windowed-max bandwidth estimate, cwnd two BDPs (sender paces)",
    params: &[
        ParamInfo {
            name: "high_gain",
            doc: "STARTUP's pacing and window gain (Linux: 2.885 = 2/ln 2)",
            kind: ParamKind::Number {
                default: HIGH_GAIN,
                min: 1.0,
                max: 10.0,
            },
        },
        ParamInfo {
            name: "cwnd_gain",
            doc: "PROBE_BW's window in BDPs (Linux: 2)",
            kind: ParamKind::Number {
                default: 2.0,
                min: 1.0,
                max: 10.0,
            },
        },
        ParamInfo {
            name: "bw_window_rounds",
            doc: "rounds over which the bandwidth estimate is the maximum sample (Linux: 10)",
            kind: ParamKind::Number {
                default: 10.0,
                min: 1.0,
                max: 1000.0,
            },
        },
        ParamInfo {
            name: "min_rtt_window_s",
            doc: "seconds a min-RTT estimate lasts before PROBE_RTT (Linux: 10)",
            kind: ParamKind::Number {
                default: 10.0,
                min: 0.1,
                max: 3600.0,
            },
        },
        ParamInfo {
            name: "probe_rtt_ms",
            doc: "time PROBE_RTT holds 4 segments in flight (Linux: 200 ms)",
            kind: ParamKind::Number {
                default: 200.0,
                min: 0.0,
                max: 10000.0,
            },
        },
        ParamInfo {
            name: "ack_aggregation",
            doc: "add the recent extra data ACKed beyond the estimate to the window (Linux 5.1+)",
            kind: ParamKind::Flag { default: true },
        },
        ParamInfo {
            name: "long_term_bw",
            doc: "use the mean rate of two lossy intervals that agree as the estimate for 48 rounds (Linux's policer detection)",
            kind: ParamKind::Flag { default: true },
        },
    ],
    constraints: super::independent,
    build: |cfg, p| Box::new(Bbr::with_params(cfg, p)),
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// The largest sample of the last `window` rounds (exact, by a deque of
/// samples in falling order).
#[derive(Default)]
struct MaxFilter {
    samples: VecDeque<(u64, f64)>,
}

impl MaxFilter {
    fn update(&mut self, round: u64, value: f64, window: u64) {
        while self.samples.back().is_some_and(|&(_, v)| v <= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((round, value));
        while self.samples.front().is_some_and(|&(r, _)| round - r > window) {
            self.samples.pop_front();
        }
    }
    fn get(&self) -> f64 {
        self.samples.front().map_or(0.0, |&(_, v)| v)
    }
}

pub struct Bbr {
    cfg: CcConfig,
    high_gain: f64,
    probe_bw_cwnd_gain: f64,
    bw_window: u64,
    min_rtt_window: Time,
    probe_rtt_time: Time,
    ack_aggregation: bool,
    long_term_bw: bool,
    mode: Mode,
    /// Congestion window, bytes (whole segments).
    cwnd: u64,
    /// Reported ssthresh: the BDP when STARTUP ends (as Linux sets it).
    ssthresh: u64,
    /// Bottleneck bandwidth estimate (bytes/s): max over `bw_window` rounds.
    bw: MaxFilter,
    min_rtt: Option<Time>,
    min_rtt_stamp: Time,
    /// Packet-timed rounds: one ends when data sent after it began is delivered.
    rounds: u64,
    next_round_delivered: u64,
    round_start: bool,
    pacing_gain: f64,
    cwnd_gain: f64,
    /// Bytes per second (from the initial window and a nominal RTT until samples come).
    pacing_rate: f64,
    has_seen_rtt: bool,
    /// STARTUP's exit: the bandwidth when it last grew by 25 %, and the
    /// rounds since.
    full_bw: f64,
    full_bw_count: u32,
    full_bw_reached: bool,
    cycle_index: usize,
    cycle_stamp: Time,
    probe_rtt_done: Option<Time>,
    probe_rtt_round_done: bool,
    /// The window to come back to after recovery or PROBE_RTT.
    prior_cwnd: u64,
    packet_conservation: bool,
    prev_state: LossState,
    /// ACK aggregation: data ACKed in this epoch, its start, and the
    /// largest excess over the estimate in each of two 5-round windows.
    ack_epoch_start: Option<Time>,
    ack_epoch_acked: u64,
    extra_acked: [u64; 2],
    extra_acked_rounds: u32,
    extra_acked_index: usize,
    /// Long-term ("policer") sampling; lost bytes so far, counted here.
    lt: LongTerm,
    lost: u64,
    /// Bytes delivered as of the last sample, and when data was last
    /// delivered (Linux's `delivered_mstamp`).
    delivered: u64,
    delivered_at: Time,
    rng: RandomStream,
}

/// Linux's long-term bandwidth sampling state.
#[derive(Clone, Copy, Debug, Default)]
struct LongTerm {
    /// An interval is being sampled (it starts at a loss).
    sampling: bool,
    /// Rounds in this interval, or, while `use_bw`, since it was taken up.
    rounds: u32,
    /// The previous interval's rate, or the estimate in use (bytes/s).
    bw: f64,
    use_bw: bool,
    /// Where this interval started: time, bytes delivered and lost.
    start: Time,
    start_delivered: u64,
    start_lost: u64,
}

impl Bbr {
    pub fn with_params(cfg: CcConfig, p: &Params) -> Self {
        let mut bbr = Self {
            high_gain: p.number("high_gain"),
            probe_bw_cwnd_gain: p.number("cwnd_gain"),
            bw_window: p.number("bw_window_rounds") as u64,
            min_rtt_window: (p.number("min_rtt_window_s") * SECOND as f64) as Time,
            probe_rtt_time: (p.number("probe_rtt_ms") * MILLISECOND as f64) as Time,
            ack_aggregation: p.flag("ack_aggregation"),
            long_term_bw: p.flag("long_term_bw"),
            mode: Mode::Startup,
            cwnd: cfg.initial_window,
            ssthresh: u64::MAX,
            bw: MaxFilter::default(),
            min_rtt: None,
            min_rtt_stamp: 0,
            rounds: 0,
            next_round_delivered: 0,
            round_start: false,
            pacing_gain: p.number("high_gain"),
            cwnd_gain: p.number("high_gain"),
            pacing_rate: 0.0,
            has_seen_rtt: false,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_reached: false,
            cycle_index: 0,
            cycle_stamp: 0,
            probe_rtt_done: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            packet_conservation: false,
            prev_state: LossState::Open,
            ack_epoch_start: None,
            ack_epoch_acked: 0,
            extra_acked: [0, 0],
            extra_acked_rounds: 0,
            extra_acked_index: 0,
            lt: LongTerm::default(),
            lost: 0,
            delivered: 0,
            delivered_at: 0,
            rng: RandomStream::new(cfg.seed, "bbr"),
            cfg,
        };
        bbr.init_pacing_rate(None);
        bbr
    }

    fn mss(&self) -> u64 {
        self.cfg.mss
    }

    /// high_gain × cwnd / RTT, with a nominal 1 ms before any RTT sample.
    fn init_pacing_rate(&mut self, srtt: Option<Time>) {
        let rtt = srtt.unwrap_or(MILLISECOND).max(1);
        self.has_seen_rtt = srtt.is_some();
        let bw = self.cwnd as f64 * SECOND as f64 / rtt as f64;
        self.pacing_rate = bw * self.high_gain * PACING_MARGIN;
    }

    fn max_bw(&self) -> f64 {
        self.bw.get()
    }

    /// The estimate the pacing rate and the window follow: the long-term
    /// one while it is in use, else the windowed maximum (Linux's bbr_bw).
    fn bw(&self) -> f64 {
        if self.lt.use_bw {
            self.lt.bw
        } else {
            self.max_bw()
        }
    }

    /// `gain` × bandwidth × min RTT in bytes, rounded up to whole segments
    /// (Linux's packets); the initial window while there is no RTT sample.
    fn bdp(&self, bw: f64, gain: f64) -> u64 {
        let Some(min_rtt) = self.min_rtt else {
            return INIT_CWND_SEGMENTS * self.mss();
        };
        let bytes = bw * min_rtt as f64 / SECOND as f64 * gain;
        (bytes / self.mss() as f64).ceil() as u64 * self.mss()
    }

    /// Segments Linux puts in one TSO burst at this pacing rate (about
    /// 1 ms of data, at least 2, under 64 KB).
    fn tso_segments(&self) -> u64 {
        let bytes = (self.pacing_rate / 1024.0).min((65536 - 1 - 320) as f64) as u64;
        let min = if self.pacing_rate < 1.2e6 / 8.0 { 1 } else { 2 };
        (bytes / self.mss()).clamp(min, 127)
    }

    /// Room for whole TSO bursts at both ends, rounded up to an even number
    /// of segments (delayed ACKs), two more in the probing phase.
    fn quantization_budget(&self, cwnd: u64) -> u64 {
        let mss = self.mss();
        let mut segs = cwnd.div_ceil(mss) + 3 * self.tso_segments();
        segs = (segs + 1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_index == 0 {
            segs += 2;
        }
        segs * mss
    }

    fn inflight(&self, bw: f64, gain: f64) -> u64 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if self.prev_state < LossState::Recovery && self.mode != Mode::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn enter_probe_bw(&mut self, now: Time) {
        self.mode = Mode::ProbeBw;
        // a random phase, never the draining one (Linux: 7 − rand(7), then advance)
        let r = (self.rng.uniform() * 7.0) as usize;
        self.cycle_index = (CYCLE.len() - 1 - r.min(6) + 1) % CYCLE.len();
        self.cycle_stamp = now;
    }

    fn reset_mode(&mut self, now: Time) {
        if self.full_bw_reached {
            self.enter_probe_bw(now);
        } else {
            self.mode = Mode::Startup;
        }
    }

    fn update_bw(&mut self, ev: &RateEvent) {
        self.round_start = false;
        let Some(rate) = ev.sample.rate() else {
            return;
        };
        if ev.sample.prior_delivered >= self.next_round_delivered {
            self.next_round_delivered = ev.delivered;
            self.rounds += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        if self.long_term_bw {
            self.lt_sampling(ev.now, ev.delivered, ev.losses > 0, ev.sample.app_limited);
        }
        if !ev.sample.app_limited || rate >= self.max_bw() {
            self.bw.update(self.rounds, rate, self.bw_window);
        }
    }

    fn lt_reset_interval(&mut self, now: Time, delivered: u64) {
        self.lt.start = now;
        self.lt.start_delivered = delivered;
        self.lt.start_lost = self.lost;
        self.lt.rounds = 0;
    }

    fn lt_reset(&mut self, now: Time, delivered: u64) {
        self.lt.bw = 0.0;
        self.lt.use_bw = false;
        self.lt.sampling = false;
        self.lt_reset_interval(now, delivered);
    }

    /// Linux's bbr_lt_bw_sampling: is a policer holding the flow to a rate?
    /// An interval starts at a loss, lasts 4–16 rounds and ends at a loss
    /// with at least 50/256 of its data lost; its rate is what it delivered
    /// over its length. Two such intervals in a row that agree make their
    /// mean the estimate for 48 rounds.
    fn lt_sampling(&mut self, now: Time, delivered: u64, lost_now: bool, app_limited: bool) {
        if self.lt.use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt.rounds += 1;
                if self.lt.rounds >= LT_BW_MAX_ROUNDS {
                    self.lt_reset(now, delivered);
                    self.enter_probe_bw(now);
                }
            }
            return;
        }
        if !self.lt.sampling {
            // (the first loss: a policer's tokens are spent from here on)
            if !lost_now {
                return;
            }
            self.lt_reset_interval(now, delivered);
            self.lt.sampling = true;
        }
        if app_limited {
            return self.lt_reset(now, delivered);
        }
        if self.round_start {
            self.lt.rounds += 1;
        }
        if self.lt.rounds < LT_INTERVAL_MIN_ROUNDS {
            return;
        }
        if self.lt.rounds > 4 * LT_INTERVAL_MIN_ROUNDS {
            return self.lt_reset(now, delivered);
        }
        if !lost_now {
            return;
        }
        let got = delivered - self.lt.start_delivered;
        let lost = self.lost - self.lt.start_lost;
        if got == 0 || (lost as f64) < LT_LOSS_THRESHOLD * got as f64 {
            return;
        }
        // (Linux times the interval in whole milliseconds)
        let ms = now / MILLISECOND - self.lt.start / MILLISECOND;
        if ms < 1 {
            return;
        }
        let bw = got as f64 * 1000.0 / ms as f64;
        if self.lt.bw > 0.0 {
            let diff = (bw - self.lt.bw).abs();
            // (Linux compares the difference as a rate with the pacing margin)
            if diff <= LT_BW_RATIO * self.lt.bw || diff * PACING_MARGIN <= LT_BW_DIFF {
                self.lt.bw = (bw + self.lt.bw) / 2.0;
                self.lt.use_bw = true;
                self.lt.rounds = 0;
                return;
            }
        }
        self.lt.bw = bw;
        self.lt_reset_interval(now, delivered);
    }

    fn update_ack_aggregation(&mut self, ev: &RateEvent) {
        if !self.ack_aggregation || ev.acked_sacked == 0 || ev.sample.rate().is_none() {
            return;
        }
        if self.round_start {
            self.extra_acked_rounds = (self.extra_acked_rounds + 1).min(31);
            if self.extra_acked_rounds >= 5 {
                self.extra_acked_rounds = 0;
                self.extra_acked_index ^= 1;
                self.extra_acked[self.extra_acked_index] = 0;
            }
        }
        let start = *self.ack_epoch_start.get_or_insert(ev.now); // (Linux: the connection's start)
        let epoch = ev.now.saturating_sub(start);
        let mut expected = (self.bw() * epoch as f64 / SECOND as f64) as u64;
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + ev.acked_sacked >= (1 << 20) * self.mss() {
            self.ack_epoch_acked = 0;
            self.ack_epoch_start = Some(ev.now);
            expected = 0;
        }
        self.ack_epoch_acked += ev.acked_sacked;
        let extra = (self.ack_epoch_acked - expected).min(self.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_index];
        *slot = (*slot).max(extra);
    }

    fn aggregation_allowance(&self) -> u64 {
        if !self.ack_aggregation || !self.full_bw_reached {
            return 0;
        }
        let cap = (self.bw() * 0.1) as u64; // 100 ms of data
        self.extra_acked[0].max(self.extra_acked[1]).min(cap)
    }

    /// What will be in the network when the next paced segment leaves
    /// (Linux's bbr_packets_in_net_at_edt): the flight, plus the TSO burst
    /// about to go when probing up, less what drains at the estimate meanwhile.
    fn in_net_at_edt(&self, in_flight: u64, pacing_wait: Time) -> u64 {
        let mut at_edt = in_flight;
        if self.pacing_gain > 1.0 {
            at_edt += self.tso_segments() * self.mss();
        }
        let drained = (self.bw() * pacing_wait as f64 / SECOND as f64) as u64;
        at_edt.saturating_sub(drained)
    }

    fn update_cycle_phase(&mut self, ev: &RateEvent) {
        if self.mode != Mode::ProbeBw || self.lt.use_bw {
            return;
        }
        let full_length = self
            .min_rtt
            .is_some_and(|m| ev.now.saturating_sub(self.cycle_stamp) > m);
        let gain = CYCLE[self.cycle_index];
        let in_net = || self.in_net_at_edt(ev.prior_in_flight, ev.pacing_wait);
        let next = if gain == 1.0 {
            full_length
        } else if gain > 1.0 {
            full_length && (ev.losses > 0 || in_net() >= self.inflight(self.max_bw(), gain))
        } else {
            full_length || in_net() <= self.inflight(self.max_bw(), 1.0)
        };
        if next {
            self.cycle_index = (self.cycle_index + 1) % CYCLE.len();
            self.cycle_stamp = ev.now;
        }
    }

    fn check_full_bw_reached(&mut self, ev: &RateEvent) {
        if self.full_bw_reached || !self.round_start || ev.sample.app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * 1.25 {
            self.full_bw = self.max_bw();
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_reached = self.full_bw_count >= 3;
    }

    fn check_drain(&mut self, ev: &RateEvent) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            self.ssthresh = self.inflight(self.max_bw(), 1.0);
        }
        if self.mode == Mode::Drain
            && self.in_net_at_edt(ev.in_flight, ev.pacing_wait) <= self.inflight(self.max_bw(), 1.0)
        {
            self.enter_probe_bw(ev.now);
        }
    }

    fn update_min_rtt(&mut self, ev: &RateEvent) {
        // (the window runs from the first sample: Linux stamps it when the connection starts)
        let expired = self.min_rtt.is_some() && ev.now > self.min_rtt_stamp + self.min_rtt_window;
        if let Some(rtt) = ev.rtt {
            // Only a smaller RTT restarts the window, not an equal one: Linux
            // since 5.10 ("tcp: only postpone PROBE_RTT if RTT is < current
            // min_rtt estimate"). With `<=`, a flow whose queue drains saw
            // its base RTT again and again to the nanosecond here and never
            // probed, where the kernel probes every 10 s: single BBR flows
            // ran 1–3 % above this kernel (bench/RESULTS.md, 2026-12-06).
            if self.min_rtt.is_none_or(|m| rtt < m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = ev.now;
            }
        }
        if self.probe_rtt_time > 0 && expired && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd();
            self.probe_rtt_done = None;
        }
        if self.mode == Mode::ProbeRtt {
            match self.probe_rtt_done {
                None if ev.in_flight <= MIN_CWND_SEGMENTS * self.mss() => {
                    self.probe_rtt_done = Some(ev.now + self.probe_rtt_time);
                    self.probe_rtt_round_done = false;
                    self.next_round_delivered = ev.delivered;
                }
                None => {}
                Some(done) => {
                    self.probe_rtt_round_done |= self.round_start;
                    if self.probe_rtt_round_done && ev.now > done {
                        self.min_rtt_stamp = ev.now;
                        self.cwnd = self.cwnd.max(self.prior_cwnd);
                        self.reset_mode(ev.now);
                    }
                }
            }
        }
    }

    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (self.high_gain, self.high_gain),
            Mode::Drain => (1.0 / self.high_gain, self.high_gain),
            Mode::ProbeBw if self.lt.use_bw => (1.0, self.probe_bw_cwnd_gain),
            Mode::ProbeBw => (CYCLE[self.cycle_index], self.probe_bw_cwnd_gain),
            Mode::ProbeRtt => (1.0, 1.0),
        };
    }

    fn set_pacing_rate(&mut self, srtt: Option<Time>) {
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_pacing_rate(srtt);
        }
        let rate = self.bw() * self.pacing_gain * PACING_MARGIN;
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// Recovery's window rules; true while packet conservation decides.
    fn recover_or_restore(&mut self, ev: &RateEvent, cwnd: &mut u64) -> bool {
        let mss = self.mss();
        if ev.losses > 0 {
            *cwnd = cwnd.saturating_sub(ev.losses).max(mss);
        }
        if ev.state == LossState::Recovery && self.prev_state != LossState::Recovery {
            self.packet_conservation = true;
            self.next_round_delivered = ev.delivered; // the first round of recovery starts now
            *cwnd = ev.in_flight + ev.acked_sacked;
        } else if self.prev_state >= LossState::Recovery && ev.state < LossState::Recovery {
            *cwnd = (*cwnd).max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_state = ev.state;
        if self.packet_conservation {
            *cwnd = (*cwnd).max(ev.in_flight + ev.acked_sacked);
            return true;
        }
        false
    }

    fn set_cwnd(&mut self, ev: &RateEvent) {
        let mss = self.mss();
        let mut cwnd = self.cwnd;
        if ev.acked_sacked > 0 && !self.recover_or_restore(ev, &mut cwnd) {
            let target = self.quantization_budget(self.bdp(self.bw(), self.cwnd_gain) + self.aggregation_allowance());
            if self.full_bw_reached {
                cwnd = (cwnd + ev.acked_sacked).min(target);
            } else if cwnd < target || ev.delivered < INIT_CWND_SEGMENTS * mss {
                cwnd += ev.acked_sacked;
            }
            cwnd = cwnd.max(MIN_CWND_SEGMENTS * mss);
        }
        if self.mode == Mode::ProbeRtt {
            cwnd = cwnd.min(MIN_CWND_SEGMENTS * mss);
        }
        self.cwnd = cwnd;
    }
}

impl CongestionControl for Bbr {
    fn on_ack(&mut self, _ack: &super::AckEvent<'_>) {
        // (a rate-based controller: the sender calls on_rate_sample instead)
    }

    fn on_rate_sample(&mut self, ev: &RateEvent) {
        self.lost = ev.lost_total;
        self.delivered = ev.delivered;
        if ev.acked_sacked > 0 {
            self.delivered_at = ev.now;
        }
        self.update_bw(ev);
        self.update_ack_aggregation(ev);
        self.update_cycle_phase(ev);
        self.check_full_bw_reached(ev);
        self.check_drain(ev);
        self.update_min_rtt(ev);
        self.update_gains();
        self.set_pacing_rate(ev.srtt);
        self.set_cwnd(ev);
    }

    /// Recovery begins: only the window to restore is kept (the next
    /// sample starts packet conservation).
    fn on_congestion_event(&mut self, _now: Time, _flight_size: u64) {
        self.save_cwnd();
    }

    /// A timeout: the window is what is in flight (nothing, all being
    /// marked lost) plus one segment; STARTUP's plateau count restarts.
    fn on_timeout_marked(&mut self, lost_total: u64) {
        self.lost = lost_total;
    }

    fn on_timeout(&mut self, _now: Time, _flight_size: u64, first: bool) {
        if first {
            self.save_cwnd();
        }
        self.prev_state = LossState::Loss;
        self.full_bw = 0.0;
        self.round_start = true; // (Linux: treat a timeout as the end of a round)
        if self.long_term_bw {
            // (as Linux's bbr_set_state: a sample with a loss, timed at the
            // last delivery; `on_timeout_marked` has counted the flight lost)
            self.lt_sampling(self.delivered_at, self.delivered, true, false);
        }
        self.cwnd = self.mss();
    }

    fn penalise(&mut self) {
        self.cwnd = (self.cwnd / 2).max(self.mss());
    }
    /// Linux's bbr_undo_cwnd: the window stays (BBR sets it from its model),
    /// the search for full bandwidth and the long-term sampling start over,
    /// a loss-driven interval having proved spurious.
    fn undo(&mut self, _prior_cwnd: u64, prior_ssthresh: u64) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.lt_reset(self.delivered_at, self.delivered);
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
    }
    fn window(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn name(&self) -> &'static str {
        "bbr"
    }
    fn rate_based(&self) -> bool {
        true
    }
    fn pacing_rate(&self) -> Option<f64> {
        Some(self.pacing_rate)
    }
    /// The TSO burst Linux would build at this rate (bbr_tso_segs_goal).
    fn pacing_burst(&self) -> u64 {
        self.tso_segments()
    }
    fn holds_flight_down(&self) -> bool {
        self.mode == Mode::ProbeRtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::RateSample;

    fn bbr_with(params: &[(&str, serde_json::Value)]) -> Bbr {
        let cfg = CcConfig {
            mss: 1000,
            initial_window: 10_000,
            initial_ssthresh: u64::MAX,
            abc_limit: 1,
            byte_counting: false,
            seed: 1,
        };
        let given = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        Bbr::with_params(cfg, &crate::cc::check("", "bbr", &given).unwrap())
    }
    fn bbr() -> Bbr {
        bbr_with(&[])
    }

    #[test]
    fn max_filter_keeps_the_largest_of_the_window() {
        let mut f = MaxFilter::default();
        f.update(1, 5.0, 10);
        f.update(2, 3.0, 10);
        assert_eq!(f.get(), 5.0);
        f.update(11, 2.0, 10);
        assert_eq!(f.get(), 5.0, "round 1 is 10 rounds old: still in");
        f.update(12, 1.0, 10);
        assert_eq!(f.get(), 3.0, "round 1 has left the window");
    }

    /// The min-RTT window runs from the first sample: a flow whose first
    /// ACK comes 12 s into the run starts in STARTUP (Linux stamps the
    /// window at the connection's start), not in PROBE_RTT.
    #[test]
    fn a_late_first_sample_does_not_probe_rtt() {
        let mut b = bbr();
        let ev = RateEvent {
            now: 12 * SECOND,
            sample: RateSample::new(10_000, 40 * MILLISECOND, 0, false),
            delivered: 10_000,
            acked_sacked: 10_000,
            in_flight: 0,
            rtt: Some(40 * MILLISECOND),
            srtt: Some(40 * MILLISECOND),
            ..RateEvent::default()
        };
        b.on_rate_sample(&ev);
        assert_eq!(b.mode, Mode::Startup);
        assert!(b.cwnd >= 10_000, "{}", b.cwnd);
    }

    /// An RTT equal to the minimum does not postpone PROBE_RTT (Linux's
    /// tcp_bbr.c since 5.10); only a smaller one does.
    #[test]
    fn only_a_smaller_rtt_postpones_probe_rtt() {
        let at = |now: Time, rtt_ms: u64| RateEvent {
            now,
            sample: RateSample::new(10_000, 40 * MILLISECOND, 0, false),
            delivered: 10_000,
            acked_sacked: 10_000,
            in_flight: 50_000,
            rtt: Some(rtt_ms * MILLISECOND),
            srtt: Some(rtt_ms * MILLISECOND),
            ..RateEvent::default()
        };
        let mut b = bbr();
        b.on_rate_sample(&at(SECOND, 40));
        b.on_rate_sample(&at(6 * SECOND, 40)); // equal: the window still runs from 1 s
        b.on_rate_sample(&at(11 * SECOND + 1, 41));
        assert_eq!(b.mode, Mode::ProbeRtt, "10 s after the minimum was first seen");

        let mut b = bbr();
        b.on_rate_sample(&at(SECOND, 40));
        b.on_rate_sample(&at(6 * SECOND, 39)); // smaller: the window restarts
        b.on_rate_sample(&at(11 * SECOND + 1, 41));
        assert_ne!(b.mode, Mode::ProbeRtt);
    }

    /// With no RTT sample, the BDP is Linux's TCP_INIT_CWND (10 segments),
    /// whatever the configured initial window.
    #[test]
    fn no_rtt_bdp_is_ten_segments() {
        let b = bbr_with(&[]);
        assert_eq!(b.bdp(1e6, 1.0), 10 * 1000);
    }

    #[test]
    fn probe_bw_never_starts_in_the_draining_phase() {
        let mut b = bbr();
        for _ in 0..200 {
            b.enter_probe_bw(0);
            assert_ne!(b.cycle_index, 1);
        }
    }

    /// A sample-driven run: a path of 1 MB/s and 100 ms that delivers one
    /// window per round (in one ACK: no aggregation allowance then). STARTUP
    /// must find the rate within a few rounds, leave through DRAIN once the
    /// queue is gone, and PROBE_BW's window must be cwnd_gain × BDP (plus
    /// Linux's small budget: 3 × 2 segments, even, 2 more when probing).
    #[test]
    fn finds_the_bottleneck_and_sets_two_bdp() {
        let mut b = bbr_with(&[("ack_aggregation", false.into())]);
        let (rate, rtt) = (1e6, 100 * MILLISECOND);
        let mut delivered = 0u64;
        let mut now = 0;
        for _ in 0..40 {
            let sent = b.cwnd.min((rate * 0.1) as u64 * 3);
            let delivered_this_round = sent.min((rate * 0.1) as u64);
            let prior = delivered;
            now += rtt;
            delivered += delivered_this_round;
            let ev = RateEvent {
                now,
                sample: RateSample::new(delivered_this_round, rtt, prior, false),
                delivered,
                acked_sacked: delivered_this_round,
                losses: 0,
                lost_total: 0,
                prior_in_flight: sent,
                // (the queue drains while DRAIN paces below the rate)
                in_flight: if b.full_bw_reached {
                    0
                } else {
                    sent - delivered_this_round
                },
                rtt: Some(rtt),
                srtt: Some(rtt),
                state: LossState::Open,
                pacing_wait: 0,
            };
            b.on_rate_sample(&ev);
        }
        assert!(b.full_bw_reached);
        assert_ne!(b.mode, Mode::Startup);
        assert!((b.max_bw() - rate).abs() < 1.0, "{}", b.max_bw());
        let bdp = 100_000;
        assert!(b.cwnd >= 2 * bdp && b.cwnd <= 2 * bdp + 10_000, "{}", b.cwnd);
    }

    /// Drive `rounds` round trips of 100 ms, ten ACKs each, delivering at
    /// `rate` with `loss` of the delivered bytes reported lost alongside;
    /// returns each round's last pacing rate and gain.
    fn drive(b: &mut Bbr, clock: &mut (Time, u64, u64), rounds: usize, rate: f64, loss: f64) -> Vec<(f64, f64)> {
        let rtt = 100 * MILLISECOND;
        let per_ack = (rate * 0.01) as u64; // 10 ms of data
        let mut seen = Vec::new();
        for _ in 0..rounds {
            for _ in 0..10 {
                let losses = (per_ack as f64 * loss) as u64;
                let (now, delivered, lost_total) = (clock.0 + rtt / 10, clock.1 + per_ack, clock.2 + losses);
                *clock = (now, delivered, lost_total);
                let ev = RateEvent {
                    now,
                    sample: RateSample::new(10 * per_ack, rtt, delivered.saturating_sub(10 * per_ack), false),
                    delivered,
                    acked_sacked: per_ack,
                    losses,
                    lost_total,
                    prior_in_flight: 10 * per_ack,
                    in_flight: 10 * per_ack,
                    rtt: Some(rtt),
                    srtt: Some(rtt),
                    state: LossState::Open,
                    pacing_wait: 0,
                };
                b.on_rate_sample(&ev);
            }
            seen.push((b.pacing_rate, b.pacing_gain));
        }
        seen
    }

    /// Linux's policer detection (tcp_bbr.c, bbr_lt_bw_sampling): a flow
    /// in PROBE_BW at 1 MB/s whose path turns into a policer at 0.5 MB/s
    /// dropping a third of its packets takes, after two lossy intervals of
    /// at least 4 rounds whose rates agree, their mean as its estimate —
    /// while the windowed maximum still holds 1 MB/s — and paces at exactly
    /// that (gain 1, 1 % margin) for 48 rounds of PROBE_BW; then the gain
    /// cycles again.
    #[test]
    fn a_policer_is_detected_and_its_rate_used_for_48_rounds() {
        let mut b = bbr_with(&[("ack_aggregation", false.into())]);
        let mut clock = (0, 0, 0);
        drive(&mut b, &mut clock, 30, 1e6, 0.0);
        assert_eq!(b.mode, Mode::ProbeBw);
        let mut rounds = 0;
        while !b.lt.use_bw {
            drive(&mut b, &mut clock, 1, 0.5e6, 1.0 / 3.0);
            rounds += 1;
            assert!(rounds <= 10, "not detected in 10 rounds");
        }
        assert!(
            rounds >= 2 * LT_INTERVAL_MIN_ROUNDS as usize,
            "two intervals of 4 rounds: {rounds}"
        );
        assert!(
            (b.max_bw() / 1e6 - 1.0).abs() < 1e-9,
            "the max filter still holds 1 MB/s"
        );
        assert!((b.pacing_rate / (0.99 * 0.5e6) - 1.0).abs() < 0.01, "{}", b.pacing_rate);
        assert!(b.cwnd < 2 * 100_000, "the window follows the policed rate: {}", b.cwnd);
        let held = drive(&mut b, &mut clock, LT_BW_MAX_ROUNDS as usize - 2, 0.5e6, 1.0 / 3.0);
        for &(rate, gain) in &held {
            assert_eq!(gain, 1.0, "{held:?}");
            assert!((rate / (0.99 * 0.5e6) - 1.0).abs() < 0.01, "{rate}");
        }
        assert!(b.lt.use_bw, "still in use before 48 rounds");
        let after = drive(&mut b, &mut clock, 16, 0.5e6, 0.0);
        assert!(!b.lt.use_bw, "still in use after 48 rounds");
        assert!(after.iter().any(|&(_, g)| g != 1.0), "the gain cycles again: {after:?}");
    }

    /// Below 50/256 lost, or with the sampling off, no long-term estimate:
    /// the rate follows the windowed maximum.
    #[test]
    fn no_policer_below_the_loss_threshold_or_when_off() {
        // (50/256 = 0.195: 0.21 lost is a policer, 0.18 is not)
        let mut b = bbr_with(&[]);
        let mut clock = (0, 0, 0);
        drive(&mut b, &mut clock, 30, 1e6, 0.0);
        drive(&mut b, &mut clock, 12, 0.5e6, 0.21);
        assert!(b.lt.use_bw, "0.21 lost");
        for (params, loss) in [(vec![], 0.18), (vec![("long_term_bw", false.into())], 1.0 / 3.0)] {
            let mut b = bbr_with(&params);
            let mut clock = (0, 0, 0);
            drive(&mut b, &mut clock, 30, 1e6, 0.0);
            let seen = drive(&mut b, &mut clock, 40, 0.5e6, loss);
            assert!(!b.lt.use_bw, "loss {loss}");
            assert!(seen.iter().any(|&(_, g)| g != 1.0), "the gain keeps cycling: {seen:?}");
        }
    }
}
