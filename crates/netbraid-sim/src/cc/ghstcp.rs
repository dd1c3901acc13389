//! gHSTCP-approx: an APPROXIMATION of Gentle HighSpeed TCP (Zhang, Hasegawa,
//! Murata, MASCOTS 2004), named so wherever a user sees it.
//!
//! What the published sources confirm (abstracts of the authors' papers, and
//! seed 002 §2.2.2): congestion avoidance has two modes, switched by whether
//! the RTT shows an increasing trend — a queue building at the bottleneck —
//! in which case the window is updated "with the same algorithm as TCP
//! Reno"; otherwise it grows as HighSpeed TCP. A refined version for real
//! networks picks the mode by comparing the RTT with two thresholds. The
//! trend detector, its parameters, the decrease in each mode and the slow
//! start of the original could not be found; what follows is chosen here
//! (`protocols.md` §3) and every choice is a parameter:
//!
//! - rounds: a round ends when data sent after it began is acknowledged;
//!   r_k is the mean RTT of the ACKs of round k;
//! - original detector (default): over the last K rounds, PCT = the share
//!   of rounds whose RTT rose over the previous one (by more than
//!   `min_rise` min RTTs, so that jitter is no trend); PCT ≥ `pct_reno` →
//!   Reno mode, PCT ≤ `pct_hs` → HighSpeed mode, between: keep the mode. The
//!   history is cleared at each loss event;
//! - refined detector (`refined`): queueing delay q = srtt − min RTT; q >
//!   `t_hi`·min RTT → Reno mode, q < `t_lo`·min RTT → HighSpeed mode;
//! - increase: +1 segment per RTT in Reno mode or at a window ≤ Low_Window,
//!   a(w) in HighSpeed mode; decrease: Reno's halving in Reno mode
//!   (`reno_decrease`, as seed 002's wording reads), else b(w);
//! - slow start, timeouts and the response function as HighSpeed TCP's.

use super::hstcp::{check_response, HsWindow, OPTION_PARAMS, RESPONSE_PARAMS};
use super::{AckEvent, CcConfig, CongestionControl, ControllerInfo, ParamInfo, ParamKind, Params};
use crate::engine::time::as_secs_f64;
use crate::engine::Time;
use std::collections::VecDeque;

const DETECTOR_PARAMS: [ParamInfo; 8] = [
    ParamInfo {
        name: "refined",
        doc: "pick the mode by the queueing delay against two thresholds (the refined gHSTCP) instead of the RTT trend",
        kind: ParamKind::Flag { default: false },
    },
    ParamInfo {
        name: "rounds",
        doc: "K: round trips the trend detector looks back over",
        kind: ParamKind::Number {
            default: 8.0,
            min: 2.0,
            max: 1000.0,
        },
    },
    ParamInfo {
        name: "min_rise",
        doc: "a round's RTT counts as rising when it exceeds the last by more than this share of the min RTT (noise is not a trend)",
        kind: ParamKind::Number {
            default: 0.001,
            min: 0.0,
            max: 1.0,
        },
    },
    ParamInfo {
        name: "pct_reno",
        doc: "share of rising round-trip RTTs at or above which the mode turns to Reno",
        kind: ParamKind::Number {
            default: 0.66,
            min: 0.0,
            max: 1.0,
        },
    },
    ParamInfo {
        name: "pct_hs",
        doc: "share of rising round-trip RTTs at or below which the mode turns to HighSpeed",
        kind: ParamKind::Number {
            default: 0.5,
            min: 0.0,
            max: 1.0,
        },
    },
    ParamInfo {
        name: "t_hi",
        doc: "refined: queueing delay (in min RTTs) above which the mode turns to Reno",
        kind: ParamKind::Number {
            default: 0.2,
            min: 0.0,
            max: 100.0,
        },
    },
    ParamInfo {
        name: "t_lo",
        doc: "refined: queueing delay (in min RTTs) below which the mode turns to HighSpeed",
        kind: ParamKind::Number {
            default: 0.05,
            min: 0.0,
            max: 100.0,
        },
    },
    ParamInfo {
        name: "reno_decrease",
        doc: "a loss in Reno mode halves the window, as Reno (off: HighSpeed's b(w) in both modes)",
        kind: ParamKind::Flag { default: true },
    },
];

const fn all_params() -> [ParamInfo; 17] {
    let r = RESPONSE_PARAMS;
    let d = DETECTOR_PARAMS;
    let o = OPTION_PARAMS;
    [
        r[0], r[1], r[2], r[3], r[4], d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], o[0], o[1], o[2], o[3],
    ]
}
const PARAMS: [ParamInfo; 17] = all_params();

pub(super) const INFO: ControllerInfo = ControllerInfo {
    name: "ghstcp-approx",
    aliases: &[],
    doc: "an APPROXIMATION of gHSTCP (Zhang, Hasegawa, Murata 2004): HighSpeed TCP that grows as Reno while the RTT rises",
    params: &PARAMS,
    constraints: check,
    build: |cfg, p| Box::new(GentleHighSpeedApprox::new(cfg, p)),
};

fn check(p: &Params) -> Result<(), (&'static str, String)> {
    check_response(p)?;
    let (reno, hs) = (p.number("pct_reno"), p.number("pct_hs"));
    if hs > reno {
        return Err(("pct_hs", format!("{hs} must not exceed pct_reno ({reno})")));
    }
    let (hi, lo) = (p.number("t_hi"), p.number("t_lo"));
    if lo > hi {
        return Err(("t_lo", format!("{lo} must not exceed t_hi ({hi})")));
    }
    Ok(())
}

/// How the window grows in congestion avoidance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    HighSpeed,
    Reno,
}

pub struct GentleHighSpeedApprox {
    w: HsWindow,
    pub(crate) mode: Mode,
    refined: bool,
    /// K, and the thresholds on the share of rising rounds.
    rounds: usize,
    /// A rise smaller than this share of the min RTT is noise.
    min_rise: f64,
    pct_reno: f64,
    pct_hs: f64,
    /// Refined thresholds, in min RTTs.
    t_hi: f64,
    t_lo: f64,
    reno_decrease: bool,
    /// Mean RTT (s) of each of the last K complete rounds.
    history: VecDeque<f64>,
    /// This round's RTT samples: their sum (s) and count.
    round_sum: f64,
    round_samples: u32,
}

impl GentleHighSpeedApprox {
    pub fn new(cfg: CcConfig, p: &Params) -> Self {
        Self {
            w: HsWindow::new(cfg, p),
            mode: Mode::HighSpeed,
            refined: p.flag("refined"),
            rounds: p.number("rounds") as usize,
            min_rise: p.number("min_rise"),
            pct_reno: p.number("pct_reno"),
            pct_hs: p.number("pct_hs"),
            t_hi: p.number("t_hi"),
            t_lo: p.number("t_lo"),
            reno_decrease: p.flag("reno_decrease"),
            history: VecDeque::new(),
            round_sum: 0.0,
            round_samples: 0,
        }
    }

    /// Follow the RTT: close a round at its end, and pick the mode.
    fn observe(&mut self, ack: &AckEvent<'_>) {
        if self.refined {
            if let (Some(srtt), Some(min)) = (ack.srtt, ack.min_rtt) {
                let q = as_secs_f64(srtt.saturating_sub(min));
                let base = as_secs_f64(min);
                if q > self.t_hi * base {
                    self.mode = Mode::Reno;
                } else if q < self.t_lo * base {
                    self.mode = Mode::HighSpeed;
                }
            }
            return;
        }
        if ack.round_start && self.round_samples > 0 {
            self.history.push_back(self.round_sum / self.round_samples as f64);
            if self.history.len() > self.rounds {
                self.history.pop_front();
            }
            (self.round_sum, self.round_samples) = (0.0, 0);
            if self.history.len() == self.rounds {
                let eps = self.min_rise * ack.min_rtt.map_or(0.0, as_secs_f64);
                let rising = self
                    .history
                    .iter()
                    .zip(self.history.iter().skip(1))
                    .filter(|(a, b)| **b > **a + eps)
                    .count();
                let pct = rising as f64 / (self.rounds - 1) as f64;
                if pct >= self.pct_reno {
                    self.mode = Mode::Reno;
                } else if pct <= self.pct_hs {
                    self.mode = Mode::HighSpeed;
                }
            }
        }
        if let Some(rtt) = ack.ack_rtt {
            self.round_sum += as_secs_f64(rtt);
            self.round_samples += 1;
        }
    }
}

impl CongestionControl for GentleHighSpeedApprox {
    fn on_ack(&mut self, ack: &AckEvent<'_>) {
        self.observe(ack);
        if !ack.cwnd_limited {
            return;
        }
        if self.w.in_slow_start() {
            self.w.slow_start(ack.newly_acked);
        } else {
            let a = match self.mode {
                Mode::Reno => 1.0,
                Mode::HighSpeed => self.w.a(),
            };
            self.w.grow(a, ack.newly_acked);
        }
    }
    fn on_ack_in_recovery(&mut self, ack: &AckEvent<'_>) {
        self.observe(ack);
    }
    fn on_congestion_event(&mut self, _now: Time, flight_size: u64) {
        let b = if self.mode == Mode::Reno && self.reno_decrease {
            0.5
        } else {
            self.w.b()
        };
        self.w.decrease(b, flight_size);
        self.history.clear();
        (self.round_sum, self.round_samples) = (0.0, 0);
    }
    fn on_timeout(&mut self, _now: Time, flight_size: u64, first: bool) {
        self.w.timeout(flight_size, first);
        self.history.clear();
        (self.round_sum, self.round_samples) = (0.0, 0);
    }
    fn penalise(&mut self) {
        self.w.penalise();
    }
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        self.w.undo(prior_cwnd, prior_ssthresh);
    }
    fn window(&self) -> u64 {
        self.w.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.w.ssthresh
    }
    fn name(&self) -> &'static str {
        "ghstcp-approx"
    }
    fn wants_ack_rtt(&self) -> bool {
        !self.refined
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::hstcp::tests::{cfg, params, MSS};
    use crate::cc::HighSpeed;
    use crate::engine::time::MILLISECOND;

    fn ghs(given: &[(&str, serde_json::Value)]) -> GentleHighSpeedApprox {
        let mut g = GentleHighSpeedApprox::new(cfg(), &params("ghstcp-approx", given));
        g.on_congestion_event(0, 1000 * MSS); // congestion avoidance at 500 segments
        g
    }

    /// One round trip of `acks` ACKs, all measuring `rtt`.
    fn round(g: &mut GentleHighSpeedApprox, n: u64, rtt: Time, acks: u64) {
        for i in 0..acks {
            g.on_ack(&AckEvent {
                newly_acked: MSS,
                cwnd_limited: true,
                round: n,
                round_start: i == 0,
                ack_rtt: Some(rtt),
                srtt: Some(rtt),
                min_rtt: Some(20 * MILLISECOND),
                ..Default::default()
            });
        }
    }

    #[test]
    fn a_rising_rtt_turns_to_reno_within_k_rounds_and_a_flat_one_back() {
        let mut g = ghs(&[]);
        assert_eq!(g.mode, Mode::HighSpeed);
        let mut n = 1;
        let mut switched = None;
        for k in 0..12 {
            round(&mut g, n, (20 + k) * MILLISECOND, 10);
            n += 1;
            if g.mode == Mode::Reno && switched.is_none() {
                switched = Some(k);
            }
        }
        // the K-th round's mean closes when round K + 1 begins
        assert!(switched.is_some_and(|k| k <= 8), "switched after {switched:?} rounds");
        // Reno mode: one segment per RTT
        let w0 = g.window();
        round(&mut g, n, 40 * MILLISECOND, w0 / MSS);
        n += 1;
        let grown = (g.window() - w0) as f64 / MSS as f64;
        assert!(
            (0.9..=1.01).contains(&grown),
            "Reno mode grew {grown} segments in a round"
        );
        for _ in 0..10 {
            round(&mut g, n, 40 * MILLISECOND, 10);
            n += 1;
        }
        assert_eq!(g.mode, Mode::HighSpeed);
    }

    #[test]
    fn flat_rtt_grows_as_highspeed_and_loss_in_reno_mode_halves() {
        let mut g = ghs(&[]);
        let mut hs = HighSpeed::new(cfg(), &params("hstcp", &[]));
        hs.on_congestion_event(0, 1000 * MSS);
        for n in 1..30 {
            let w = g.window() / MSS;
            round(&mut g, n, 20 * MILLISECOND, w);
            for _ in 0..hs.window() / MSS {
                hs.on_ack(&AckEvent {
                    newly_acked: MSS,
                    cwnd_limited: true,
                    ..Default::default()
                });
            }
        }
        assert_eq!(g.window(), hs.window(), "flat RTT: HighSpeed's growth exactly");
        // In Reno mode a loss halves (b(w) at ~600 segments would keep 64 %)
        for (n, k) in (100..).zip(0..10) {
            round(&mut g, n, (20 + k) * MILLISECOND, 10);
        }
        assert_eq!(g.mode, Mode::Reno);
        let w = g.window();
        g.on_congestion_event(0, w);
        assert_eq!(g.window(), w / 2);
        // without reno_decrease: b(w)
        let mut g = ghs(&[("reno_decrease", false.into())]);
        g.mode = Mode::Reno;
        let w = g.window();
        g.on_congestion_event(0, w);
        assert!(g.window() > w * 6 / 10, "{} of {w}", g.window());
    }

    #[test]
    fn refined_detector_uses_two_thresholds() {
        let mut g = ghs(&[("refined", true.into())]);
        let ack = |srtt_ms: u64| AckEvent {
            newly_acked: MSS,
            cwnd_limited: true,
            srtt: Some(srtt_ms * MILLISECOND),
            min_rtt: Some(20 * MILLISECOND),
            ..Default::default()
        };
        g.on_ack(&ack(25)); // q = 0.25 min RTT > 0.2
        assert_eq!(g.mode, Mode::Reno);
        g.on_ack(&ack(22)); // 0.1: between the thresholds, mode kept
        assert_eq!(g.mode, Mode::Reno);
        g.on_ack(&ack(20)); // 0 < 0.05
        assert_eq!(g.mode, Mode::HighSpeed);
    }

    #[test]
    fn contradicting_thresholds_are_refused() {
        let given = |k: &str, v: f64| std::collections::BTreeMap::from([(k.to_string(), serde_json::Value::from(v))]);
        let e = crate::cc::check("", "ghstcp-approx", &given("pct_hs", 0.9))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("cc_params.pct_hs: 0.9 must not exceed pct_reno (0.66)"),
            "{e}"
        );
        let e = crate::cc::check("", "ghstcp-approx", &given("t_lo", 0.5))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cc_params.t_lo"), "{e}");
        let e = crate::cc::check("", "ghstcp-approx", &given("low_window", 1e6))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("cc_params.low_window"), "{e}");
    }
}
