//! What the coupled multipath controllers (LIA, OLIA, BALIA) share: slow
//! start, timeouts and the per-subflow window are TCP's; only congestion
//! avoidance (and, for BALIA, the decrease) is coupled through the view of
//! the sibling subflows (protocols.md §5.2).
//!
//! Increases are applied once per ACK, with bytes_acked counted as one MSS,
//! as netbraid's Reno counts (RFC 5681 eq. 3): each coupled controller on a
//! single subflow is then exactly Reno.

use super::{half_flight, slow_start_increase, AckEvent, CcConfig, SubflowView};
use crate::engine::Time;

/// One subflow's window, and the fractional growth not yet added.
pub(super) struct Window {
    pub cfg: CcConfig,
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Growth in bytes still below one byte.
    credit: f64,
}

impl Window {
    pub fn new(cfg: CcConfig) -> Self {
        Self {
            cwnd: cfg.initial_window,
            ssthresh: cfg.initial_ssthresh,
            credit: 0.0,
            cfg,
        }
    }

    /// Slow start if below ssthresh (true), else leave it to the caller.
    pub fn slow_start(&mut self, ack: &AckEvent<'_>) -> bool {
        if self.cwnd < self.ssthresh {
            self.cwnd += slow_start_increase(&self.cfg, ack.newly_acked);
            return true;
        }
        false
    }

    /// Add `bytes` (fractional) of congestion-avoidance growth.
    pub fn grow(&mut self, bytes: f64) {
        self.credit += bytes;
        let whole = self.credit.floor();
        if whole >= 1.0 {
            self.cwnd += whole as u64;
            self.credit -= whole;
        } else if whole < 0.0 {
            // OLIA's α may shrink a window; never below one segment.
            self.cwnd = (self.cwnd as i64 + whole as i64).max(self.cfg.mss as i64) as u64;
            self.credit -= whole;
        }
    }

    pub fn halve(&mut self, flight_size: u64) {
        self.ssthresh = half_flight(&self.cfg, flight_size);
        self.cwnd = self.ssthresh;
        self.credit = 0.0;
    }

    pub fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
        (self.cwnd, self.ssthresh) = super::undone(self.cwnd, self.ssthresh, prior_cwnd, prior_ssthresh);
    }

    pub fn penalise(&mut self) {
        (self.cwnd, self.ssthresh) = super::penalised(&self.cfg, self.cwnd, self.ssthresh);
        self.credit = 0.0;
    }

    pub fn timeout(&mut self, flight_size: u64, first: bool) {
        if first {
            self.ssthresh = half_flight(&self.cfg, flight_size);
        }
        self.cwnd = self.cfg.mss;
        self.credit = 0.0;
    }
}

/// This subflow and its siblings as (cwnd bytes, RTT seconds), leaving out
/// subflows without an RTT sample yet. `own` is this subflow's.
pub(super) fn paths(own: (u64, Option<Time>), siblings: &[SubflowView]) -> Vec<(f64, f64)> {
    std::iter::once(own)
        .chain(siblings.iter().map(|s| (s.cwnd, s.srtt)))
        .filter_map(|(w, rtt)| rtt.filter(|&r| r > 0).map(|r| (w as f64, r as f64 / 1e9)))
        .collect()
}

#[cfg(test)]
pub(super) mod testing {
    use super::*;
    use crate::cc::CongestionControl;
    use crate::engine::time::MILLISECOND;

    pub const MSS: u64 = 1000;

    pub fn cfg() -> CcConfig {
        CcConfig {
            mss: MSS,
            initial_window: 10 * MSS,
            initial_ssthresh: u64::MAX,
            abc_limit: 1,
            byte_counting: false,
            seed: 0,
        }
    }

    pub fn view(cwnd_segments: u64, rtt_ms: u64) -> SubflowView {
        SubflowView {
            cwnd: cwnd_segments * MSS,
            ssthresh: 0,
            srtt: Some(rtt_ms * MILLISECOND),
            mss: MSS,
            ..Default::default()
        }
    }

    /// Put `cc` in congestion avoidance at `w` segments, then deliver one
    /// window of ACKs (one per segment) with these siblings and `rtt_ms`;
    /// returns the growth in segments.
    pub fn growth_over_one_window(
        cc: &mut dyn CongestionControl,
        w: u64,
        rtt_ms: u64,
        siblings: &[SubflowView],
    ) -> f64 {
        cc.on_congestion_event(0, 2 * w * MSS);
        assert_eq!(cc.window(), w * MSS);
        let start = cc.window();
        for _ in 0..w {
            cc.on_ack(&AckEvent {
                newly_acked: MSS,
                cwnd_limited: true,
                srtt: Some(rtt_ms * MILLISECOND),
                siblings,
                ..Default::default()
            });
        }
        (cc.window() as f64 - start as f64) / MSS as f64
    }
}
