//! OLIA, the Opportunistic Linked Increases Algorithm (Khalili et al.,
//! IEEE/ACM ToN 2013; the out-of-tree kernel's `mptcp_olia.c`). Per ACK on
//! subflow r in congestion avoidance, in segments:
//! Δw_r = (w_r/rtt_r²) / (Σ_p w_p/rtt_p)² + α_r/w_r, where, with ℓ_p the
//! larger of the bytes acknowledged between the last two losses and since
//! the last loss, B the paths maximising ℓ_p/rtt_p², M those with the
//! largest window and n the number of subflows: α_r = 1/(n·|B∖M|) on B∖M,
//! −1/(n·|M|) on M when B∖M is not empty, and 0 otherwise. It moves window
//! from the paths that have it to the paths that are best, which LIA does
//! not. Loss halves the window; a sibling in fast recovery counts with its
//! ssthresh as its window, as Linux's implementation does.

use super::coupled::Window;
use super::{AckEvent, CcConfig, CongestionControl, ControllerInfo};
use crate::engine::Time;

pub(super) const INFO: ControllerInfo = ControllerInfo {
    name: "olia",
    aliases: &[],
    doc: "MPTCP coupled control, OLIA (Khalili et al. 2013): Pareto-optimal, shifts window to the best paths",
    params: &[],
    constraints: super::independent,
    build: |cfg, _| Box::new(Olia::new(cfg)),
};

pub struct Olia {
    w: Window,
    /// Bytes acknowledged since the last loss, and between the last two.
    since_loss: u64,
    between_losses: u64,
}

impl Olia {
    pub fn new(cfg: CcConfig) -> Self {
        Self {
            w: Window::new(cfg),
            since_loss: 0,
            between_losses: 0,
        }
    }

    fn loss(&mut self) {
        self.between_losses = self.since_loss;
        self.since_loss = 0;
    }
}

impl CongestionControl for Olia {
    fn on_ack(&mut self, ack: &AckEvent<'_>) {
        self.since_loss += ack.newly_acked;
        if !ack.cwnd_limited || self.w.slow_start(ack) {
            return;
        }
        let mss = self.w.cfg.mss as f64;
        let Some(own_rtt) = ack.srtt.filter(|&r| r > 0) else {
            return;
        };
        // (window in segments, rtt in s, ℓ in bytes); this subflow first
        let mut ps = vec![(
            self.w.cwnd as f64 / mss,
            own_rtt as f64 / 1e9,
            self.since_loss.max(self.between_losses) as f64,
        )];
        for s in ack.siblings {
            if let Some(r) = s.srtt.filter(|&r| r > 0) {
                let w = if s.in_recovery { s.ssthresh.min(s.cwnd) } else { s.cwnd };
                ps.push((
                    w as f64 / mss,
                    r as f64 / 1e9,
                    s.bytes_since_loss.max(s.bytes_between_losses) as f64,
                ));
            }
        }
        let n = ps.len() as f64;
        let quality = |&(_, r, l): &(f64, f64, f64)| l / (r * r);
        let best_q = ps.iter().map(quality).fold(f64::MIN, f64::max);
        let max_w = ps.iter().map(|p| p.0).fold(f64::MIN, f64::max);
        let in_b = |p: &(f64, f64, f64)| quality(p) >= best_q * (1.0 - 1e-9);
        let in_m = |p: &(f64, f64, f64)| p.0 >= max_w * (1.0 - 1e-9);
        let b_not_m = ps.iter().filter(|p| in_b(p) && !in_m(p)).count() as f64;
        let m = ps.iter().filter(|p| in_m(p)).count() as f64;
        let me = &ps[0];
        let alpha = if b_not_m == 0.0 {
            0.0
        } else if in_b(me) && !in_m(me) {
            1.0 / (n * b_not_m)
        } else if in_m(me) {
            -1.0 / (n * m)
        } else {
            0.0
        };
        let sum: f64 = ps.iter().map(|&(w, r, _)| w / r).sum();
        let (w, r) = (me.0, me.1);
        let delta_segments = (w / (r * r)) / (sum * sum) + alpha / w;
        self.w.grow(delta_segments * mss);
    }
    fn on_ack_in_recovery(&mut self, ack: &AckEvent<'_>) {
        self.since_loss += ack.newly_acked;
    }
    fn on_congestion_event(&mut self, _now: Time, flight_size: u64) {
        self.loss();
        self.w.halve(flight_size);
    }
    fn on_timeout(&mut self, _now: Time, flight_size: u64, first: bool) {
        self.loss();
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
        "olia"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::coupled::testing::*;
    use crate::cc::SubflowView;

    #[test]
    fn alone_it_is_reno() {
        let g = growth_over_one_window(&mut Olia::new(cfg()), 20, 10, &[]);
        assert!((0.95..=1.0).contains(&g), "{g}");
    }

    #[test]
    fn without_a_better_small_path_only_the_coupled_term_grows() {
        // The sibling is both the best path (largest ℓ) and the largest
        // window, so B∖M is empty and α = 0: per ACK (w/r²)/(Σ w_p/r_p)²,
        // over one window of 20 ACKs 20·20/41² = 0.238 segments.
        let s = SubflowView {
            bytes_since_loss: 10_000_000,
            ..view(21, 10)
        };
        let g = growth_over_one_window(&mut Olia::new(cfg()), 20, 10, &[s]);
        assert!((g - 400.0 / 1681.0).abs() < 0.01, "{g}");
    }

    #[test]
    fn a_best_path_with_a_small_window_gets_the_bonus() {
        // We carried more bytes between losses (better path) but have the
        // smaller window: α = 1/(n·|B∖M|) = 1/2 adds half a segment per ACK·w,
        // i.e. +0.5 segments per window on top of the coupled term.
        let mut olia = Olia::new(cfg());
        olia.since_loss = 10_000_000;
        let big = SubflowView {
            bytes_since_loss: 1000,
            ..view(40, 10)
        };
        let with_bonus = growth_over_one_window(&mut olia, 10, 10, &[big]);
        let coupled_only = 10.0 * (10.0 / 1e-4) / ((50.0 / 0.01) * (50.0 / 0.01)); // Σ over one window of ACKs
        assert!(
            (with_bonus - (coupled_only + 0.5)).abs() < 0.02,
            "{with_bonus} vs {}",
            coupled_only + 0.5
        );
    }
}
