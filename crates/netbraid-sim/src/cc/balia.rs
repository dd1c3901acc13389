//! BALIA, the Balanced Linked Adaptation algorithm (Peng, Walid, Hwang and
//! Low, IEEE/ACM ToN 2016; the out-of-tree kernel's `mptcp_balia.c`). With
//! x_k = w_k/rtt_k and α_r = max_k x_k / x_r, per ACK on subflow r in
//! congestion avoidance, in segments:
//! Δw_r = (x_r/rtt_r)/(Σ_k x_k)² · (1+α_r)/2 · (4+α_r)/5, and on loss
//! w_r −= (w_r/2)·min(α_r, 1.5): a subflow slower than the best backs off
//! more (up to 3/4 of its window), the fastest halves, balancing
//! friendliness and responsiveness. On one subflow α = 1: Reno. The loss
//! decrease uses α from the latest ACK (at most one ACK old).

use super::coupled::{paths, Window};
use super::{AckEvent, CcConfig, CongestionControl, ControllerInfo};
use crate::engine::Time;

pub(super) const INFO: ControllerInfo = ControllerInfo {
    name: "balia",
    aliases: &[],
    doc: "MPTCP coupled control, BALIA (Peng et al. 2016): balances friendliness and responsiveness",
    params: &[],
    constraints: super::independent,
    build: |cfg, _| Box::new(Balia::new(cfg)),
};

pub struct Balia {
    w: Window,
    /// α_r at the latest ACK.
    alpha: f64,
}

impl Balia {
    pub fn new(cfg: CcConfig) -> Self {
        Self {
            w: Window::new(cfg),
            alpha: 1.0,
        }
    }
}

impl CongestionControl for Balia {
    fn on_ack(&mut self, ack: &AckEvent<'_>) {
        let mss = self.w.cfg.mss as f64;
        let ps = paths((self.w.cwnd, ack.srtt), ack.siblings);
        let own = ack
            .srtt
            .filter(|&r| r > 0)
            .map(|r| (self.w.cwnd as f64 / mss, r as f64 / 1e9));
        let Some((w, r)) = own else {
            self.w.slow_start(ack);
            return;
        };
        let x_r = w / r;
        let xs: Vec<f64> = ps.iter().map(|&(wb, rt)| wb / mss / rt).collect();
        let max_x = xs.iter().copied().fold(x_r, f64::max);
        let sum_x: f64 = xs.iter().sum();
        self.alpha = max_x / x_r;
        if !ack.cwnd_limited || self.w.slow_start(ack) {
            return;
        }
        let a = self.alpha;
        let delta_segments = (x_r / r) / (sum_x * sum_x) * (1.0 + a) / 2.0 * (4.0 + a) / 5.0;
        self.w.grow(delta_segments * mss);
    }
    fn on_congestion_event(&mut self, _now: Time, flight_size: u64) {
        let cut = (flight_size as f64 / 2.0 * self.alpha.min(1.5)) as u64;
        self.w.ssthresh = flight_size.saturating_sub(cut).max(2 * self.w.cfg.mss);
        self.w.cwnd = self.w.ssthresh;
    }
    fn on_timeout(&mut self, _now: Time, flight_size: u64, first: bool) {
        self.w.timeout(flight_size, first);
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
    fn coupled(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "balia"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::coupled::testing::*;

    #[test]
    fn alone_it_is_reno() {
        let g = growth_over_one_window(&mut Balia::new(cfg()), 20, 10, &[]);
        assert!((0.95..=1.0).contains(&g), "{g}");
        let mut b = Balia::new(cfg());
        b.on_congestion_event(0, 40 * MSS);
        assert_eq!(b.window(), 20 * MSS, "halves alone");
    }

    #[test]
    fn the_slower_subflow_backs_off_more() {
        // x_me = 20/0.1 = 200, x_other = 20/0.01 = 2000: α = 10, so the
        // decrease is w/2 · min(α, 1.5) = 0.75·w: from 40 segments to 10.
        let mut b = Balia::new(cfg());
        growth_over_one_window(&mut b, 20, 100, &[view(20, 10)]);
        b.on_congestion_event(0, 40 * MSS);
        assert_eq!(b.window(), 10 * MSS);
        // the faster one (α = 1) halves
        let mut f = Balia::new(cfg());
        growth_over_one_window(&mut f, 20, 10, &[view(20, 100)]);
        f.on_congestion_event(0, 40 * MSS);
        assert_eq!(f.window(), 20 * MSS);
    }
}
