//! LIA, the Linked Increases Algorithm (RFC 6356): per ACK on subflow i in
//! congestion avoidance, cwnd_i += min(α·MSS²/cwnd_total, MSS²/cwnd_i) with
//! α = cwnd_total · max_k(cwnd_k/rtt_k²) / (Σ_k cwnd_k/rtt_k)², recomputed
//! on every ACK. The min keeps each subflow no more aggressive than TCP on
//! its path; α makes the total take what one TCP would on the best path.

use super::coupled::{paths, Window};
use super::{AckEvent, CcConfig, CongestionControl, ControllerInfo};
use crate::engine::Time;

pub(super) const INFO: ControllerInfo = ControllerInfo {
    name: "lia",
    aliases: &[],
    doc: "MPTCP coupled control, RFC 6356 (Linux mptcp_coupled): the total no more aggressive than one TCP on the best path",
    params: &[],
    constraints: super::independent,
    build: |cfg, _| Box::new(Lia { w: Window::new(cfg) }),
};

pub struct Lia {
    w: Window,
}

impl CongestionControl for Lia {
    fn on_ack(&mut self, ack: &AckEvent<'_>) {
        if !ack.cwnd_limited || self.w.slow_start(ack) {
            return;
        }
        let mss = self.w.cfg.mss as f64;
        let own = self.w.cwnd as f64;
        let ps = paths((self.w.cwnd, ack.srtt), ack.siblings);
        let total: f64 = own + ack.siblings.iter().map(|s| s.cwnd as f64).sum::<f64>();
        let best = ps.iter().map(|&(w, r)| w / (r * r)).fold(0.0, f64::max);
        let sum: f64 = ps.iter().map(|&(w, r)| w / r).sum();
        let coupled = if sum > 0.0 {
            total * best / (sum * sum) * mss * mss / total
        } else {
            f64::INFINITY
        };
        self.w.grow(coupled.min(mss * mss / own));
    }
    fn on_congestion_event(&mut self, _now: Time, flight_size: u64) {
        self.w.halve(flight_size);
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
        "lia"
    }
}

impl Lia {
    pub fn new(cfg: CcConfig) -> Self {
        Self { w: Window::new(cfg) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::coupled::testing::*;

    #[test]
    fn alone_it_is_reno() {
        // one MSS per window of ACKs
        let g = growth_over_one_window(&mut Lia::new(cfg()), 20, 10, &[]);
        assert!((0.95..=1.0).contains(&g), "{g}");
    }

    #[test]
    fn two_equal_subflows_each_grow_a_quarter_as_fast() {
        // RFC 6356: equal RTTs and windows give α = 1/2, so each subflow grows
        // by α·MSS²/cwnd_total = MSS²/(4·cwnd_i) per ACK: 1/4 MSS per window.
        let g = growth_over_one_window(&mut Lia::new(cfg()), 20, 10, &[view(20, 10)]);
        assert!((0.24..=0.26).contains(&g), "{g}");
    }

    #[test]
    fn never_more_aggressive_than_tcp_on_its_path() {
        // A tiny sibling with a huge RTT: α is large but the min caps growth at Reno's.
        let g = growth_over_one_window(&mut Lia::new(cfg()), 20, 10, &[view(1, 1000)]);
        assert!(g <= 1.0, "{g}");
    }
}
