//! CUBIC as the Linux kernel computes it (net/ipv4/tcp_cubic.c): `cubic`
//! with `linux_integer`, which the Linux profile turns on.
//!
//! The curve is RFC 9438's (cubic.rs); what differs is how Linux walks it,
//! in integers and in jiffies:
//! - the window is whole segments, raised by one every `cnt` segments ACKed
//!   (tcp_cong_avoid_ai), never by a fraction per ACK;
//! - `cnt` = cwnd / (W(t + delay_min) − cwnd) is worked out again only when
//!   cwnd has changed or more than HZ/32 jiffies have passed (HZ/32 = 7 at
//!   HZ = 250), at most once a jiffy;
//!   time is jiffies since the epoch, in 2^-10 s for the curve; `cnt` is at
//!   least 2 (at most 1.5× per round trip) and, while no W_max is known (the
//!   first epoch, or after a timeout, which forgets it), at most 20 (5 % per
//!   round trip);
//! - the Reno-friendly estimate counts ACKed segments, one segment per
//!   cwnd·β_scale/8 of them (β_scale = 8(1 + β)/3/(1 − β), 15 for β = 717/1024:
//!   0.53 segments per round trip, RFC 9438's α), and caps `cnt` to reach it;
//! - slow start adds every segment an ACK covers, up to ssthresh, and
//!   the rest goes to congestion avoidance (tcp_slow_start);
//! - ssthresh = cwnd · β/1024 (at least 2); RTT samples in the first second
//!   of an epoch are not taken for delay_min.
//!
//! Where it departs from the kernel: K is the exact integer cube root,
//! where Linux uses a table lookup refined by one Newton step (within
//! ~0.2 % by its comment); time when the flow was not cwnd-limited is not
//! counted in t (as the float model, RFC 9438 §4.2), where Linux moves the
//! epoch only when it sends again after an idle spell (same for bulk
//! transfers, not for receive-window- or application-limited ones); ACKed
//! segments are those the cumulative ACK covers, where Linux also counts
//! segments as they are SACKed (the same totals, other timing).

use super::hystart::HyStart;
use super::{AckEvent, CcConfig, CongestionControl, Params};
use crate::engine::time::NANOS_PER_SEC;
use crate::engine::Time;

/// tcp_cubic.c's fixed point: β in 1/1024, time in 2^-10 s (BICTCP_HZ).
const BETA_SCALE: u64 = 1024;
const TIME_SHIFT: u32 = 10;

pub struct LinuxCubic {
    cfg: CcConfig,
    /// Congestion window, segments (snd_cwnd).
    cwnd: u64,
    /// Segments ACKed toward the next one-segment increase (snd_cwnd_cnt).
    cwnd_cnt: u64,
    /// Slow-start threshold, bytes (u64::MAX until the first reduction).
    ssthresh: u64,
    /// Segments to ACK per one-segment increase (ca->cnt).
    cnt: u64,
    /// Window before the last reduction, segments; 0 when unknown.
    last_max_cwnd: u64,
    /// cwnd and jiffy when `cnt` was last worked out.
    last_cwnd: u64,
    last_time: u64,
    /// The curve's plateau (segments) and the time to reach it (2^-10 s).
    origin: u64,
    k: u64,
    /// Smallest RTT seen, microseconds (0: none yet).
    delay_min_us: u64,
    /// Jiffy the current congestion-avoidance epoch began.
    epoch_start: Option<u64>,
    /// Segments ACKed for the Reno-friendly estimate, and that estimate.
    ack_cnt: u64,
    tcp_cwnd: u64,
    /// When the flow stopped being cwnd-limited: the epoch moves on by that
    /// time (the float model's rule; Linux moves it only after idle, see above).
    limited_since: Option<Time>,
    hystart: Option<HyStart>,
    /// Kernel constants from the parameters.
    ns_per_jiffy: u64,
    hz: u64,
    beta: u64,
    cube_rtt_scale: u64,
    cube_factor: u64,
    beta_scale: u64,
    fast_convergence: bool,
    tcp_friendliness: bool,
}

impl LinuxCubic {
    /// From `cubic`'s parameters: c → bic_scale = c · 1024 / 10 (0.4 → 41),
    /// beta → β · 1024 (0.7 → 717), hz the kernel's jiffies per second.
    pub fn with_params(cfg: CcConfig, p: &Params, hystart: Option<HyStart>) -> Self {
        let bic_scale = (p.number("c") * BETA_SCALE as f64 / 10.0).round().max(1.0) as u64;
        let beta = ((p.number("beta") * BETA_SCALE as f64).round() as u64).clamp(1, BETA_SCALE - 1);
        let hz = p.number("hz") as u64;
        let cube_rtt_scale = bic_scale * 10;
        Self {
            cwnd: (cfg.initial_window / cfg.mss).max(1),
            cwnd_cnt: 0,
            ssthresh: cfg.initial_ssthresh,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: 0,
            origin: 0,
            k: 0,
            delay_min_us: 0,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            limited_since: None,
            hystart,
            ns_per_jiffy: NANOS_PER_SEC / hz,
            hz,
            beta,
            cube_rtt_scale,
            cube_factor: (1u64 << (TIME_SHIFT * 4)) / cube_rtt_scale,
            beta_scale: 8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta),
            fast_convergence: p.flag("fast_convergence"),
            tcp_friendliness: p.flag("reno_friendly"),
            cfg,
        }
    }

    fn jiffies(&self, t: Time) -> u64 {
        t / self.ns_per_jiffy
    }

    fn in_slow_start(&self) -> bool {
        self.cwnd * self.cfg.mss < self.ssthresh
    }

    /// cubictcp_acked: delay_min from every ACK's RTT, except in the first
    /// second of an epoch (just after a recovery). `now` in jiffies.
    fn note_rtt(&mut self, ack: &AckEvent<'_>, now: u64) {
        let Some(rtt) = ack.ack_rtt.or(ack.rtt_sample) else {
            return;
        };
        if self.epoch_start.is_some_and(|e| now - e < self.hz) {
            return;
        }
        let us = (rtt / 1_000).max(1);
        if self.delay_min_us == 0 || us < self.delay_min_us {
            self.delay_min_us = us;
        }
    }

    /// bictcp_update: `cnt` for the current window at jiffy `now`.
    fn update(&mut self, acked: u64, now: u64) {
        let cwnd = self.cwnd;
        self.ack_cnt += acked;
        if self.last_cwnd == cwnd && now - self.last_time <= self.hz / 32 {
            return;
        }
        // (at most once a jiffy; a new epoch is always worked out)
        if !(self.epoch_start.is_some() && now == self.last_time) {
            self.last_cwnd = cwnd;
            self.last_time = now;
            let epoch = *self.epoch_start.get_or_insert_with(|| {
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0;
                    self.origin = cwnd;
                } else {
                    self.k = cube_root(self.cube_factor.saturating_mul(self.last_max_cwnd - cwnd));
                    self.origin = self.last_max_cwnd;
                }
                now
            });
            let ahead = (self.delay_min_us * self.hz).div_ceil(1_000_000); // usecs_to_jiffies
            let t = ((now - epoch + ahead) << TIME_SHIFT) / self.hz;
            let offs = t.abs_diff(self.k) as u128;
            let delta = ((self.cube_rtt_scale as u128 * offs * offs * offs) >> (TIME_SHIFT * 4)) as u64;
            let target = if t < self.k {
                self.origin.saturating_sub(delta)
            } else {
                self.origin.saturating_add(delta)
            };
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100 * cwnd
            };
            if self.last_max_cwnd == 0 {
                self.cnt = self.cnt.min(20);
            }
        }
        if self.tcp_friendliness {
            let per_segment = ((cwnd * self.beta_scale) >> 3).max(1);
            if self.ack_cnt > per_segment {
                let n = (self.ack_cnt - 1) / per_segment;
                self.ack_cnt -= n * per_segment;
                self.tcp_cwnd += n;
            }
            if self.tcp_cwnd > cwnd {
                self.cnt = self.cnt.min(cwnd / (self.tcp_cwnd - cwnd));
            }
        }
        self.cnt = self.cnt.max(2);
    }

    /// tcp_cong_avoid_ai: one segment more every `cnt` segments ACKed.
    fn grow(&mut self, acked: u64) {
        let w = self.cnt;
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let steps = self.cwnd_cnt / w;
            self.cwnd_cnt -= steps * w;
            self.cwnd += steps;
        }
    }

    /// bictcp_recalc_ssthresh, from `base` bytes (the window at the event).
    fn reduce(&mut self, base: u64) {
        self.epoch_start = None;
        self.last_max_cwnd = if self.fast_convergence && self.cwnd < self.last_max_cwnd {
            self.cwnd * (BETA_SCALE + self.beta) / (2 * BETA_SCALE)
        } else {
            self.cwnd
        };
        let segments = (base / self.cfg.mss * self.beta / BETA_SCALE).max(2);
        self.ssthresh = segments * self.cfg.mss;
    }
}

/// ⌊∛a⌋.
fn cube_root(a: u64) -> u64 {
    let mut r = (a as f64).cbrt() as u64;
    let cube = |x: u64| (x as u128).pow(3);
    while r > 0 && cube(r) > a as u128 {
        r -= 1;
    }
    while cube(r + 1) <= a as u128 {
        r += 1;
    }
    r
}

impl CongestionControl for LinuxCubic {
    fn on_ack_in_recovery(&mut self, ack: &AckEvent<'_>) {
        self.note_rtt(ack, self.jiffies(ack.now));
    }

    fn on_ack(&mut self, ack: &AckEvent<'_>) {
        let now = self.jiffies(ack.now);
        self.note_rtt(ack, now);
        if self.in_slow_start() {
            if let Some(h) = &mut self.hystart {
                if h.on_ack(ack, self.cwnd * self.cfg.mss, self.cfg.mss) {
                    self.ssthresh = self.cwnd * self.cfg.mss;
                }
            }
        }
        if !ack.cwnd_limited {
            self.limited_since.get_or_insert(ack.now);
            return;
        }
        if let Some(since) = self.limited_since.take() {
            let idle = now - self.jiffies(since);
            if let Some(e) = &mut self.epoch_start {
                *e = (*e + idle).min(now);
            }
        }
        // Linux counts packets: a part of a segment is one.
        let mut acked = ack.newly_acked.div_ceil(self.cfg.mss);
        if self.in_slow_start() {
            let ssthresh = self.ssthresh / self.cfg.mss;
            let grown = (self.cwnd + acked).min(ssthresh);
            acked -= grown - self.cwnd;
            self.cwnd = grown;
            if acked == 0 {
                return;
            }
        }
        self.update(acked, now);
        self.grow(acked);
    }

    fn on_congestion_event(&mut self, _now: Time, flight_size: u64) {
        self.reduce(flight_size);
        self.cwnd = self.ssthresh / self.cfg.mss;
        self.cwnd_cnt = 0;
        self.limited_since = None;
    }

    fn on_timeout(&mut self, _now: Time, flight_size: u64, first: bool) {
        if first {
            self.reduce(flight_size);
        }
        // Entering loss recovery resets the controller (bictcp_reset): the
        // next epoch has no W_max and climbs at least 5 % per round trip.
        self.epoch_start = None;
        (self.last_max_cwnd, self.last_cwnd, self.last_time) = (0, 0, 0);
        (self.origin, self.k, self.delay_min_us) = (0, 0, 0);
        (self.ack_cnt, self.tcp_cwnd, self.cnt) = (0, 0, 0);
        if let Some(h) = &mut self.hystart {
            h.restart();
            h.forget_delay_min();
        }
        self.limited_since = None;
        self.cwnd = 1;
        self.cwnd_cnt = 0;
    }

    fn penalise(&mut self) {
        let (cwnd, ssthresh) = super::penalised(&self.cfg, self.window(), self.ssthresh);
        self.ssthresh = ssthresh;
        self.cwnd = (cwnd / self.cfg.mss).max(1);
    }
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.ssthresh = self.ssthresh.max(prior_ssthresh);
        self.cwnd = self.cwnd.max(prior_cwnd / self.cfg.mss);
    }
    fn window(&self) -> u64 {
        self.cwnd * self.cfg.mss
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn wants_ack_rtt(&self) -> bool {
        true
    }
}

/// This kernel's CONFIG_HZ (Debian's): `hz`'s default.
pub(super) const LINUX_HZ: f64 = 250.0;

/// Whether `hz` is a whole number of jiffies per second that divides a
/// second in nanoseconds exactly (100, 250, 1000, …).
pub(super) fn valid_hz(hz: f64) -> bool {
    hz >= 1.0 && hz.fract() == 0.0 && NANOS_PER_SEC.is_multiple_of(hz as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{MILLISECOND, SECOND};

    const MSS: u64 = 1000;

    /// `cubic`'s parameters with `linux_integer` and the given flags.
    fn params(flags: &[(&str, bool)]) -> Params {
        let given = std::iter::once(("linux_integer", true))
            .chain(flags.iter().copied())
            .map(|(k, v)| (k.to_string(), serde_json::json!(v)))
            .collect();
        super::super::check("", "cubic", &given).expect("valid")
    }

    fn cubic(initial_window: u64) -> LinuxCubic {
        cubic_with(initial_window, &params(&[]))
    }

    fn cubic_with(initial_window: u64, p: &Params) -> LinuxCubic {
        LinuxCubic::with_params(
            CcConfig {
                mss: MSS,
                initial_window: initial_window * MSS,
                initial_ssthresh: u64::MAX,
                abc_limit: 1,
                byte_counting: true,
                seed: 0,
            },
            p,
            None,
        )
    }

    fn ack(now: Time, rtt: Time) -> AckEvent<'static> {
        AckEvent {
            now,
            newly_acked: MSS,
            ack_rtt: Some(rtt),
            rtt_sample: Some(rtt),
            srtt: Some(rtt),
            min_rtt: Some(rtt),
            cwnd_limited: true,
            ..Default::default()
        }
    }

    /// Drive `c` with one ACK per segment, a round trip of `rtt` spread over
    /// cwnd ACKs, from `start` for `span`; the window in segments at the end.
    fn run(c: &mut LinuxCubic, start: Time, span: Time, rtt: Time) -> u64 {
        let mut now = start;
        while now < start + span {
            c.on_ack(&ack(now, rtt));
            now += rtt / c.cwnd;
        }
        c.cwnd
    }

    /// tcp_cubic.c's reduction: ssthresh = cwnd · 717/1024, W_max = cwnd, and
    /// a second loss below W_max lowers W_max to cwnd · (1 + β)/2 (fast
    /// convergence, RFC 9438 §4.7).
    #[test]
    fn reduction_keeps_717_of_1024() {
        let mut c = cubic(100);
        c.on_congestion_event(0, 100 * MSS);
        assert_eq!((c.window(), c.ssthresh()), (70 * MSS, 70 * MSS)); // 100·717/1024 = 70.02
        assert_eq!(c.last_max_cwnd, 100);
        c.on_congestion_event(SECOND, 70 * MSS);
        assert_eq!(c.last_max_cwnd, 70 * 1741 / 2048);
        assert_eq!(c.window(), 49 * MSS); // 70·717/1024 = 49.01
    }

    /// RFC 9438 §4.2: after a reduction from W_max the window follows
    /// W(t) = C(t − K)³ + W_max, K = ∛(W_max(1 − β)/C): flat around t = K,
    /// W_max there, and growing cubically beyond.
    #[test]
    fn window_follows_the_cubic_curve() {
        let rtt = 100 * MILLISECOND;
        let mut c = cubic(1000);
        c.on_congestion_event(0, 1000 * MSS);
        let (w_max, beta, cc): (f64, f64, f64) = (1000.0, 717.0 / 1024.0, 0.4);
        let k = (w_max * (1.0 - beta) / cc).cbrt();
        let w = |t: f64| cc * (t - k).powi(3) + w_max;
        let mut now = 0;
        for t in [2.0, 5.0, 8.0, k, 11.0, 13.0] {
            let until = (t * SECOND as f64) as Time;
            run(&mut c, now, until - now, rtt);
            now = until;
            // Linux aims one delay_min ahead and climbs to it within a round
            // trip: the window lies between W(t) and W(t + RTT)
            let got = c.cwnd as f64;
            let (lo, hi) = (w(t).min(w(t + 0.1)), w(t).max(w(t + 0.1)));
            assert!(
                got >= lo * 0.98 && got <= hi * 1.02,
                "t = {t:.2} s: cwnd {got}, W(t) {:.1}..{:.1}",
                lo,
                hi
            );
        }
    }

    /// cnt ≥ 2: at most one segment more per two ACKed (1.5× per round trip),
    /// however far below the curve the window is.
    #[test]
    fn growth_is_at_most_one_segment_per_two_acked() {
        // a round trip of 10 s: the curve is aimed at 10 s ahead, near W_max,
        // while the window starts far below it
        let rtt = 10 * SECOND;
        let mut c = cubic(1000);
        c.on_congestion_event(0, 1000 * MSS);
        (c.cwnd, c.ssthresh) = (100, 100 * MSS);
        let before = c.cwnd;
        let mut now = 0;
        for _ in 0..400 {
            c.on_ack(&ack(now, rtt));
            now += MILLISECOND;
        }
        assert!(
            c.cwnd - before <= 200 + 1,
            "{} segments more after 400 ACKed",
            c.cwnd - before
        );
        assert!(
            c.cwnd - before >= 190,
            "so far below the curve it should take nearly every step it may"
        );
    }

    /// RFC 9438 §4.3: below the Reno-friendly estimate the window grows at
    /// α = 3(1 − β)/(1 + β) ≈ 0.53 segments per round trip from β·W_max.
    /// With a small W_max and a short round trip the cubic curve is flat for
    /// a long K and the estimate leads.
    #[test]
    fn reno_friendly_region_grows_at_alpha() {
        let rtt = 10 * MILLISECOND;
        let mut c = cubic(20);
        c.on_congestion_event(0, 20 * MSS); // ssthresh 14, K ≈ 2.4 s
        let got = run(&mut c, 0, SECOND, rtt) as f64;
        let beta = 717.0 / 1024.0;
        let w_est = 14.0 + 3.0 * (1.0 - beta) / (1.0 + beta) * 100.0;
        assert!(
            (got - w_est).abs() <= 0.1 * w_est,
            "cwnd {got} after 100 round trips; W_est {w_est:.1}"
        );
    }

    /// tcp_slow_start: an ACK adds every segment it covers up to ssthresh;
    /// what is left over is congestion avoidance's.
    #[test]
    fn slow_start_stops_at_ssthresh() {
        let mut c = cubic(10);
        c.ssthresh = 15 * MSS;
        c.on_ack(&AckEvent {
            newly_acked: 8 * MSS,
            ..ack(0, 100 * MILLISECOND)
        });
        assert_eq!(c.window(), 15 * MSS);
        assert_eq!(c.ack_cnt, 3, "three segments went on to congestion avoidance");
    }

    /// A timeout forgets W_max (bictcp_reset): the next epoch climbs 5 %
    /// per round trip (cnt ≤ 20) where the curve alone, flat at its start,
    /// would hardly move (the Reno-friendly estimate is off here, so that
    /// only the cap can make the window grow).
    #[test]
    fn after_a_timeout_growth_is_five_percent_per_round_trip() {
        let rtt = 100 * MILLISECOND;
        let mut c = cubic_with(100, &params(&[("reno_friendly", false)]));
        c.on_timeout(0, 100 * MSS, true);
        assert_eq!((c.window(), c.ssthresh()), (MSS, 70 * MSS));
        (c.cwnd, c.ssthresh) = (200, 200 * MSS); // straight to congestion avoidance
                                                 // two round trips of ACKs: 200 · 1.05² = 220.5 (whole segments, one per 20 ACKed)
        let grown = run(&mut c, 0, 2 * rtt, rtt);
        assert!(
            (219..=222).contains(&grown),
            "cwnd {grown} after two round trips from 200"
        );
    }

    #[test]
    fn cube_root_is_the_floor() {
        for a in [0u64, 1, 7, 8, 26, 27, 28, 1 << 40, u64::MAX] {
            let r = cube_root(a) as u128;
            assert!(r.pow(3) <= a as u128 && (r + 1).pow(3) > a as u128, "{a}");
        }
    }
}
