//! CUBIC (RFC 9438). Window growth is a cubic function of the time since the
//! last congestion event, with a Reno-friendly lower bound (W_est). With
//! `hystart`, slow start ends before the first loss as Linux's does (hystart.rs).

use super::cubic_linux::{valid_hz, LinuxCubic, LINUX_HZ};
use super::hystart::HyStart;
use super::{slow_start_increase, AckEvent, CcConfig, CongestionControl, ControllerInfo, ParamInfo, ParamKind, Params};
use crate::engine::time::{as_secs_f64, to_f64, MILLISECOND};
use crate::engine::Time;

/// RFC 9438 constants (the defaults of the parameters).
const C: f64 = 0.4;
const BETA: f64 = 0.7;

pub(super) const INFO: ControllerInfo = ControllerInfo {
    name: "cubic",
    aliases: &[],
    doc: "RFC 9438: cubic window growth in time since the last reduction, Reno-friendly floor",
    params: &[
        ParamInfo {
            name: "c",
            doc: "C, the cubic curve's scale (segments/s³)",
            kind: ParamKind::Number {
                default: C,
                min: 0.01,
                max: 10.0,
            },
        },
        ParamInfo {
            name: "beta",
            doc: "β_cubic, the window kept at a reduction",
            kind: ParamKind::Number {
                default: BETA,
                min: 0.1,
                max: 0.95,
            },
        },
        ParamInfo {
            name: "fast_convergence",
            doc: "lower W_max when a reduction comes below the last one (RFC 9438 §4.7)",
            kind: ParamKind::Flag { default: true },
        },
        ParamInfo {
            name: "reno_friendly",
            doc: "never grow slower than the Reno estimate W_est (RFC 9438 §4.3)",
            kind: ParamKind::Flag { default: true },
        },
        ParamInfo {
            name: "hystart",
            doc: "HyStart as in Linux: leave slow start when the ACK train or the RTT says the pipe is full",
            kind: ParamKind::Flag { default: false },
        },
        ParamInfo {
            name: "hystart_low_window",
            doc: "HyStart runs only from this window (segments; Linux: 16)",
            kind: ParamKind::Number {
                default: 16.0,
                min: 2.0,
                max: 1e6,
            },
        },
        ParamInfo {
            name: "hystart_ack_delta_ms",
            doc: "ACKs at most this far apart (ms) form a train (Linux: 2)",
            kind: ParamKind::Number {
                default: 2.0,
                min: 0.0,
                max: 1000.0,
            },
        },
        ParamInfo {
            name: "hystart_ack_train",
            doc: "HyStart's ACK-train detection",
            kind: ParamKind::Flag { default: true },
        },
        ParamInfo {
            name: "hystart_delay",
            doc: "HyStart's delay-increase detection",
            kind: ParamKind::Flag { default: true },
        },
        ParamInfo {
            name: "alpha_switch",
            doc: "W_est grows at α = 1 once it passes the window before the last reduction (RFC 9438 §4.3; Linux keeps 3(1−β)/(1+β))",
            kind: ParamKind::Flag { default: true },
        },
        ParamInfo {
            name: "friendly_ramp",
            doc: "below the Reno estimate W_est, approach it over about a round trip (Linux's cnt ≤ cwnd / (W_est − cwnd)) instead of taking it at once (RFC 9438 §4.3)",
            kind: ParamKind::Flag { default: false },
        },
        ParamInfo {
            name: "target_min_rtt",
            doc: "aim at W_cubic(t + min RTT), as Linux (delay_min), not RFC 9438's smoothed RTT",
            kind: ParamKind::Flag { default: false },
        },
        ParamInfo {
            name: "linux_integer",
            doc: "walk the curve as Linux's tcp_cubic.c does: whole segments, cnt per jiffy, integer time (cubic_linux.rs); alpha_switch, friendly_ramp and target_min_rtt do not apply",
            kind: ParamKind::Flag { default: false },
        },
        ParamInfo {
            name: "hz",
            doc: "with linux_integer: the kernel's jiffies per second, CONFIG_HZ (Debian: 250); must divide 10^9",
            kind: ParamKind::Number {
                default: LINUX_HZ,
                min: 1.0,
                max: 10_000.0,
            },
        },
    ],
    constraints,
    build: |cfg, p| {
        if p.flag("linux_integer") {
            Box::new(LinuxCubic::with_params(cfg, p, hystart(p)))
        } else {
            Box::new(Cubic::with_params(cfg, p))
        }
    },
};

/// `hz` belongs to `linux_integer`, and the float model's Linux flags do
/// not apply with it (the kernel's own rules do): each mismatch is an
/// error rather than a setting silently ignored.
fn constraints(p: &Params) -> Result<(), (&'static str, String)> {
    let hz = p.number("hz");
    if !valid_hz(hz) {
        return Err((
            "hz",
            format!("{hz} jiffies per second do not divide a second into whole nanoseconds; use e.g. 100, 250 or 1000"),
        ));
    }
    if p.flag("linux_integer") {
        for (name, default) in [
            ("target_min_rtt", false),
            ("alpha_switch", true),
            ("friendly_ramp", false),
        ] {
            if p.flag(name) != default {
                let why = "has no effect with linux_integer = true (the kernel's own rule applies); leave it out";
                return Err((name, why.to_string()));
            }
        }
    } else if hz != LINUX_HZ {
        return Err(("hz", "applies only with linux_integer = true".to_string()));
    }
    Ok(())
}

/// HyStart from the parameters, if on.
fn hystart(p: &Params) -> Option<HyStart> {
    p.flag("hystart").then(|| {
        HyStart::new(
            p.number("hystart_low_window"),
            (p.number("hystart_ack_delta_ms") * MILLISECOND as f64) as Time,
            p.flag("hystart_ack_train"),
            p.flag("hystart_delay"),
        )
    })
}

pub struct Cubic {
    cfg: CcConfig,
    /// Curve scale C (segments/s³).
    c: f64,
    /// Multiplicative decrease β_cubic.
    beta: f64,
    /// The Reno-friendly estimate's growth, 3(1 − β)/(1 + β) per round trip
    /// (worked out once: a division per ACK showed in the profile).
    friendly_alpha: f64,
    fast_convergence: bool,
    reno_friendly: bool,
    /// Congestion window, bytes.
    cwnd: u64,
    /// Slow-start threshold, bytes.
    ssthresh: u64,
    /// Window (segments) just before the last reduction, after fast convergence.
    w_max: f64,
    /// cwnd (segments) at the last congestion event, for the Reno-friendly α switch.
    cwnd_prior: f64,
    /// Start of the current congestion-avoidance epoch.
    epoch_start: Option<Time>,
    /// Time (s) the cubic curve takes to return to w_max.
    k: f64,
    /// Reno-friendly window estimate (segments).
    w_est: f64,
    /// cwnd in segments as a float, so that sub-segment growth accumulates.
    cwnd_seg: f64,
    /// The next congestion-avoidance epoch follows a timeout: it starts with
    /// K = 0 and W_max = cwnd at its start (RFC 9438 §4.8).
    after_timeout: bool,
    /// When the flow stopped being cwnd-limited: that time is not counted in
    /// t (RFC 9438 §4.2), so the epoch start moves forward by it.
    limited_since: Option<Time>,
    /// Slow start's exit detector, when on.
    hystart: Option<HyStart>,
    /// Look ahead by the smallest per-ACK RTT (Linux's delay_min) instead of
    /// the smoothed RTT: with a standing queue, srtt runs ahead of the
    /// path's delay and the curve would be climbed sooner than Linux does.
    target_min_rtt: bool,
    delay_min: Option<Time>,
    /// RFC 9438's α = 1 once W_est passes cwnd_prior (Linux has no switch).
    alpha_switch: bool,
    /// Linux's Reno-friendly step: grow toward W_est by (W_est − cwnd) per
    /// cwnd of ACKs, not to it at once.
    friendly_ramp: bool,
}

impl Cubic {
    /// With RFC 9438's constants.
    pub fn new(cfg: CcConfig) -> Self {
        Self::with_params(
            cfg,
            &super::check("", "cubic", &Default::default()).expect("defaults are valid"),
        )
    }

    pub fn with_params(cfg: CcConfig, p: &Params) -> Self {
        let w = cfg.initial_window as f64 / cfg.mss as f64;
        Self {
            c: p.number("c"),
            beta: p.number("beta"),
            friendly_alpha: 3.0 * (1.0 - p.number("beta")) / (1.0 + p.number("beta")),
            fast_convergence: p.flag("fast_convergence"),
            reno_friendly: p.flag("reno_friendly"),
            cwnd: cfg.initial_window,
            ssthresh: cfg.initial_ssthresh,
            w_max: 0.0,
            cwnd_prior: 0.0,
            epoch_start: None,
            k: 0.0,
            w_est: w,
            cwnd_seg: w,
            after_timeout: false,
            limited_since: None,
            target_min_rtt: p.flag("target_min_rtt"),
            alpha_switch: p.flag("alpha_switch"),
            friendly_ramp: p.flag("friendly_ramp"),
            delay_min: None,
            hystart: hystart(p),
            cfg,
        }
    }

    /// Linux's delay_min: the smallest RTT of any ACK (its pkts_acked hook).
    fn note_rtt(&mut self, ack: &AckEvent<'_>) {
        if let Some(r) = ack.ack_rtt.or(ack.rtt_sample) {
            self.delay_min = Some(self.delay_min.map_or(r, |m| m.min(r)));
        }
    }

    fn w_cubic(&self, t: f64) -> f64 {
        self.c * (t - self.k).powi(3) + self.w_max
    }

    fn set_cwnd_segments(&mut self, w: f64) {
        self.cwnd_seg = w;
        self.cwnd = ((w * to_f64(self.cfg.mss)) as u64).max(self.cfg.mss);
    }

    fn reduce(&mut self, flight_size: u64) {
        let w = self.cwnd as f64 / self.cfg.mss as f64;
        self.cwnd_prior = w;
        // Fast convergence: release bandwidth sooner when the window shrank.
        self.w_max = if self.fast_convergence && w < self.w_max {
            w * (1.0 + self.beta) / 2.0
        } else {
            w
        };
        self.ssthresh = ((flight_size as f64 * self.beta) as u64).max(2 * self.cfg.mss);
        self.epoch_start = None;
    }
}

impl CongestionControl for Cubic {
    fn on_ack_in_recovery(&mut self, ack: &AckEvent<'_>) {
        self.note_rtt(ack);
    }

    fn on_ack(&mut self, ack: &AckEvent<'_>) {
        self.note_rtt(ack);
        // HyStart reads every ACK in slow start, limited or not (as Linux's
        // pkts_acked hook does); the window grows only when cwnd-limited.
        if self.cwnd < self.ssthresh {
            if let Some(h) = &mut self.hystart {
                if h.on_ack(ack, self.cwnd, self.cfg.mss) {
                    self.ssthresh = self.cwnd;
                }
            }
        }
        if !ack.cwnd_limited {
            self.limited_since.get_or_insert(ack.now);
            return;
        }
        if let Some(since) = self.limited_since.take() {
            if let Some(e) = &mut self.epoch_start {
                *e += ack.now - since;
            }
        }
        if self.cwnd < self.ssthresh {
            let w = self.cwnd + slow_start_increase(&self.cfg, ack.newly_acked);
            self.set_cwnd_segments(to_f64(w) / to_f64(self.cfg.mss));
            return;
        }
        let mss = to_f64(self.cfg.mss);
        let cwnd = self.cwnd_seg;
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            // New epoch: K from the distance to w_max (0 if already above it,
            // or right after a timeout, where w_max restarts at cwnd).
            if self.after_timeout || self.w_max < cwnd {
                self.w_max = cwnd;
            }
            self.after_timeout = false;
            self.k = if self.w_max > cwnd {
                ((self.w_max - cwnd) / self.c).cbrt()
            } else {
                0.0
            };
            self.w_est = cwnd;
            ack.now
        });
        let t = as_secs_f64(ack.now - epoch);
        let rtt = if self.target_min_rtt {
            self.delay_min.or(ack.min_rtt)
        } else {
            ack.srtt
        };
        let rtt = rtt.map_or(0.1, as_secs_f64);
        let acked_segments = to_f64(ack.newly_acked) / mss;
        let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
        let mut next = cwnd + (target - cwnd) / cwnd * acked_segments;
        // Reno-friendly region: α = 3(1-β)/(1+β) until W_est reaches cwnd_prior.
        let alpha = if self.alpha_switch && self.w_est >= self.cwnd_prior {
            1.0
        } else {
            self.friendly_alpha
        };
        self.w_est += alpha * acked_segments / cwnd;
        if self.reno_friendly && self.friendly_ramp {
            // Linux (tcp_cubic.c, tcp_friendliness): the per-ACK step is the
            // larger of the cubic one and (W_est − cwnd) / cwnd, and never
            // more than half a segment per segment ACKed (cnt ≥ 2)
            if self.w_est > cwnd {
                let friendly = cwnd + (self.w_est - cwnd) / cwnd * acked_segments;
                next = next.max(friendly.min(cwnd + 0.5 * acked_segments));
            }
        } else if self.reno_friendly && self.w_cubic(t) < self.w_est {
            next = next.max(self.w_est);
        }
        self.set_cwnd_segments(next);
    }

    fn on_congestion_event(&mut self, _now: Time, flight_size: u64) {
        self.reduce(flight_size);
        // Exactly ssthresh (no float truncation below it, which would put
        // the next ACK in slow start).
        self.cwnd = self.ssthresh;
        self.cwnd_seg = self.ssthresh as f64 / self.cfg.mss as f64;
        self.w_est = self.cwnd_seg;
        self.limited_since = None;
    }

    fn on_timeout(&mut self, _now: Time, flight_size: u64, first: bool) {
        if first {
            self.reduce(flight_size);
        }
        self.epoch_start = None;
        self.after_timeout = true;
        if let Some(h) = &mut self.hystart {
            h.restart();
        }
        self.limited_since = None;
        self.set_cwnd_segments(1.0);
    }

    fn penalise(&mut self) {
        let (cwnd, ssthresh) = super::penalised(&self.cfg, self.cwnd, self.ssthresh);
        self.ssthresh = ssthresh;
        self.set_cwnd_segments(cwnd as f64 / self.cfg.mss as f64);
    }
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        let (cwnd, ssthresh) = super::undone(self.cwnd, self.ssthresh, prior_cwnd, prior_ssthresh);
        self.ssthresh = ssthresh;
        if cwnd > self.cwnd {
            self.set_cwnd_segments(cwnd as f64 / self.cfg.mss as f64);
        }
    }
    fn window(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn wants_ack_rtt(&self) -> bool {
        self.hystart.is_some() || self.target_min_rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{MILLISECOND, SECOND};

    const MSS: u64 = 1000;

    fn cubic() -> Cubic {
        Cubic::new(CcConfig {
            mss: MSS,
            initial_window: 10 * MSS,
            initial_ssthresh: u64::MAX,
            abc_limit: 1,
            byte_counting: false,
            seed: 0,
        })
    }

    #[test]
    fn loss_reduces_to_beta() {
        let mut c = cubic();
        c.set_cwnd_segments(100.0);
        c.on_congestion_event(0, 100 * MSS);
        assert_eq!(c.window(), 70 * MSS);
    }

    /// RFC 9438 §4.2: after a reduction from W_max, the window returns to
    /// W_max after K = cbrt(W_max (1-β) / C) seconds.
    #[test]
    fn regains_w_max_after_k_seconds() {
        let mut c = cubic();
        c.set_cwnd_segments(1000.0);
        c.on_congestion_event(0, 1000 * MSS);
        let k = (1000.0 * (1.0 - BETA) / C).cbrt(); // ≈ 9.09 s
                                                    // One RTT at a time, a window's worth of one-segment ACKs. At 100 ms
                                                    // the Reno-friendly estimate stays below the cubic curve (at 1 ms it
                                                    // would not: CUBIC is then Reno-like by design).
        let rtt = 100 * MILLISECOND;
        let mut now = 0;
        let mut reached = None;
        while now < 20 * SECOND {
            now += rtt;
            for _ in 0..c.window() / MSS {
                c.on_ack(&AckEvent {
                    now,
                    newly_acked: MSS,
                    srtt: Some(rtt),
                    cwnd_limited: true,
                    ..Default::default()
                });
            }
            if reached.is_none() && c.window() >= 1000 * MSS {
                reached = Some(as_secs_f64(now));
            }
        }
        let t = reached.expect("never regained w_max");
        assert!((t - k).abs() / k < 0.05, "regained at {t} s, K = {k} s");
    }

    /// Below the Reno estimate W_est, RFC 9438 §4.3 sets cwnd to W_est at
    /// once; Linux's tcp_friendliness caps cnt at cwnd / (W_est − cwnd), so a
    /// window of ACKs closes the gap by about 1 − 1/e of it (dc/da = (W − c)/c).
    #[test]
    fn friendly_ramp_approaches_the_reno_estimate_over_a_round_trip() {
        let run = |ramp: bool| {
            let given = [("friendly_ramp".to_string(), serde_json::Value::Bool(ramp))]
                .into_iter()
                .collect();
            let params = super::super::check("", "cubic", &given).expect("valid");
            let mut c = Cubic::with_params(
                CcConfig {
                    mss: MSS,
                    initial_window: 10 * MSS,
                    initial_ssthresh: 0,
                    abc_limit: 1,
                    byte_counting: false,
                    seed: 0,
                },
                &params,
            );
            c.set_cwnd_segments(100.0);
            c.w_max = 100.0;
            let ack = |now| AckEvent {
                now,
                newly_acked: MSS,
                srtt: Some(MILLISECOND),
                cwnd_limited: true,
                ..Default::default()
            };
            c.on_ack(&ack(SECOND)); // the epoch starts: K = 0, W_est = cwnd
            c.w_est = c.cwnd_seg + 10.0; // a Reno flow would be 10 segments ahead
            c.on_ack(&ack(SECOND));
            let first = c.cwnd_seg;
            for _ in 0..100 {
                c.on_ack(&ack(SECOND));
            }
            (first, c.cwnd_seg)
        };
        let (rfc_first, _) = run(false);
        assert!(rfc_first >= 110.0, "RFC 9438 takes W_est at once: {rfc_first}");
        let (ramp_first, ramp_rtt) = run(true);
        assert!(ramp_first < 100.2, "one ACK closes a tenth of a segment: {ramp_first}");
        let gained = ramp_rtt - 100.0;
        assert!(
            (5.5..7.5).contains(&gained),
            "a round trip of ACKs closes ~63 % of the 10: {gained}"
        );
    }

    /// RFC 9438 §4.8: after a timeout, the first congestion-avoidance epoch
    /// starts with K = 0 and W_max = cwnd at its start, not the pre-timeout window.
    #[test]
    fn epoch_after_timeout_starts_from_the_current_window() {
        let mut c = cubic();
        c.set_cwnd_segments(1000.0);
        c.on_timeout(0, 1000 * MSS, true); // ssthresh = 700 segments, cwnd = 1
        c.set_cwnd_segments(700.0); // as if slow start had reached ssthresh
        c.cwnd = c.ssthresh;
        c.on_ack(&AckEvent {
            now: SECOND,
            newly_acked: MSS,
            srtt: Some(100 * MILLISECOND),
            cwnd_limited: true,
            ..Default::default()
        });
        assert_eq!(c.k, 0.0);
        assert!((c.w_max - 700.0).abs() < 1.0, "w_max {}", c.w_max);
    }

    /// RFC 9438 §4.2: time while not cwnd-limited does not count in t.
    #[test]
    fn time_not_cwnd_limited_is_not_counted() {
        let drive = |pause: bool| {
            let mut c = cubic();
            c.set_cwnd_segments(100.0);
            c.on_congestion_event(0, 100 * MSS);
            let rtt = 100 * MILLISECOND;
            let ack = |c: &mut Cubic, now, limited| {
                c.on_ack(&AckEvent {
                    now,
                    newly_acked: MSS,
                    srtt: Some(rtt),
                    cwnd_limited: limited,
                    ..Default::default()
                })
            };
            ack(&mut c, MILLISECOND, true); // epoch starts
            if pause {
                ack(&mut c, 2 * MILLISECOND, false);
                ack(&mut c, 20 * SECOND, false); // 20 s application-limited
            }
            // one round trip of cwnd-limited ACKs
            for _ in 0..c.window() / MSS {
                ack(&mut c, 20 * SECOND + MILLISECOND, true);
            }
            c.window() / MSS
        };
        // After an application-limited pause the epoch resumes near its start
        // (window ≈ 70); counting the pause would put it 20 s along the curve,
        // growing ×1.5 per round trip.
        assert!(drive(true) < 75, "{}", drive(true));
        assert!(drive(false) > 95, "{}", drive(false));
    }

    #[test]
    fn reduction_sets_cwnd_exactly_to_ssthresh() {
        for w in 40..200 {
            let mut c = cubic();
            c.set_cwnd_segments(w as f64);
            c.on_congestion_event(0, w * 1460);
            assert_eq!(c.window(), c.ssthresh());
        }
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = cubic();
        c.set_cwnd_segments(100.0);
        c.on_congestion_event(0, 100 * MSS); // w_max = 100
        c.on_congestion_event(0, 70 * MSS); // cwnd 70 < 100: w_max = 70·1.7/2
        assert!((c.w_max - 59.5).abs() < 1e-9);
    }
}
