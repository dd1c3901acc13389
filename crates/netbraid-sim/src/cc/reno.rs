//! Reno / NewReno window growth (RFC 5681): slow start below ssthresh,
//! one MSS per RTT in congestion avoidance (MSS²/cwnd per ACK, so a delayed-ACK
//! receiver halves the growth rate, as Mathis' C = 0.87 assumes; with
//! `byte_counting`, MSS per cwnd of bytes ACKed, as RFC 3465 and Linux),
//! halving on loss.

use super::{half_flight, slow_start_increase, AckEvent, CcConfig, CongestionControl, ControllerInfo};
use crate::engine::Time;

pub(super) const INFO: ControllerInfo = ControllerInfo {
    name: "reno",
    aliases: &["newreno"],
    doc: "RFC 5681 AIMD: +1 MSS per RTT, halving on loss (NewReno's recovery is chosen separately)",
    params: &[],
    constraints: super::independent,
    build: |cfg, _| Box::new(Reno::new(cfg)),
};

pub struct Reno {
    cfg: CcConfig,
    /// Congestion window, bytes.
    cwnd: u64,
    /// Slow-start threshold, bytes.
    ssthresh: u64,
    /// Remainder of MSS²/cwnd increments not yet added (bytes × cwnd), so
    /// that growth is exactly one MSS per window of ACKs at any window size.
    ca_credit: u64,
}

impl Reno {
    pub fn new(cfg: CcConfig) -> Self {
        Self {
            cwnd: cfg.initial_window,
            ssthresh: cfg.initial_ssthresh,
            ca_credit: 0,
            cfg,
        }
    }
}

impl CongestionControl for Reno {
    fn on_ack(&mut self, ack: &AckEvent<'_>) {
        if !ack.cwnd_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += slow_start_increase(&self.cfg, ack.newly_acked);
        } else {
            // one MSS per cwnd: per ACK (RFC 5681), or per cwnd of bytes ACKed (RFC 3465)
            self.ca_credit += self.cfg.mss
                * if self.cfg.byte_counting {
                    ack.newly_acked
                } else {
                    self.cfg.mss
                };
            let grow = self.ca_credit / self.cwnd;
            self.ca_credit %= self.cwnd;
            self.cwnd += grow;
        }
    }

    fn on_congestion_event(&mut self, _now: Time, flight_size: u64) {
        self.ssthresh = half_flight(&self.cfg, flight_size);
        self.cwnd = self.ssthresh;
    }

    fn on_timeout(&mut self, _now: Time, flight_size: u64, first: bool) {
        if first {
            self.ssthresh = half_flight(&self.cfg, flight_size);
        }
        self.cwnd = self.cfg.mss;
    }

    fn penalise(&mut self) {
        (self.cwnd, self.ssthresh) = super::penalised(&self.cfg, self.cwnd, self.ssthresh);
    }
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        (self.cwnd, self.ssthresh) = super::undone(self.cwnd, self.ssthresh, prior_cwnd, prior_ssthresh);
    }
    fn window(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn name(&self) -> &'static str {
        "reno"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn reno() -> Reno {
        Reno::new(CcConfig {
            mss: MSS,
            initial_window: 2 * MSS,
            initial_ssthresh: u64::MAX,
            abc_limit: 1,
            byte_counting: false,
            seed: 0,
        })
    }

    fn ack(bytes: u64) -> AckEvent<'static> {
        AckEvent {
            now: 0,
            newly_acked: bytes,
            cwnd_limited: true,
            ..Default::default()
        }
    }

    #[test]
    fn slow_start_doubles_per_window() {
        let mut r = reno();
        for _ in 0..2 {
            r.on_ack(&ack(MSS));
        }
        assert_eq!(r.window(), 4 * MSS);
    }

    #[test]
    fn abc_limit_caps_stretch_acks() {
        let mut r = reno();
        r.on_ack(&ack(2 * MSS)); // one ACK for two segments: +1 MSS with L = 1
        assert_eq!(r.window(), 3 * MSS);
    }

    #[test]
    fn congestion_avoidance_adds_one_mss_per_window() {
        let mut r = reno();
        r.on_congestion_event(0, 40 * MSS); // ssthresh = cwnd = 20 MSS
        assert_eq!(r.window(), 20 * MSS);
        for _ in 0..20 {
            r.on_ack(&ack(MSS));
        }
        // 20 increments of MSS²/cwnd with cwnd slowly rising: just under +1 MSS.
        let grown = r.window() - 20 * MSS;
        assert!((950..=1000).contains(&grown), "{grown}");
    }

    /// RFC 5681 §3.1: at most (and, ACK per segment, about) one MSS per RTT,
    /// at any window size — no integer truncation of MSS²/cwnd.
    #[test]
    fn one_mss_per_window_even_for_large_windows() {
        for w in [100, 1000, 8000] {
            let mut r = reno();
            r.on_congestion_event(0, 2 * w * MSS); // cwnd = w segments
            for _ in 0..w {
                r.on_ack(&ack(MSS));
            }
            let grown = (r.window() - w * MSS) as f64 / MSS as f64;
            assert!((0.99..=1.0).contains(&grown), "window {w}: grew {grown} MSS");
        }
    }

    #[test]
    fn halving_uses_flight_size_and_floor() {
        let mut r = reno();
        r.on_congestion_event(0, 3 * MSS);
        assert_eq!(r.ssthresh(), 2 * MSS); // floor 2·SMSS
        r.on_timeout(0, 30 * MSS, true);
        assert_eq!((r.ssthresh(), r.window()), (15 * MSS, MSS));
        r.on_timeout(0, MSS, false); // repeated timeout: ssthresh kept
        assert_eq!(r.ssthresh(), 15 * MSS);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut r = reno();
        r.on_ack(&AckEvent {
            cwnd_limited: false,
            ..ack(MSS)
        });
        assert_eq!(r.window(), 2 * MSS);
    }
}
