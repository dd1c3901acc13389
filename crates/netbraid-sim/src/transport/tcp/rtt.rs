//! Round-trip time estimation and the retransmission timeout (RFC 6298).

use crate::engine::Time;

pub struct RttEstimator {
    /// Smoothed RTT and RTT variation in ns; `None` before the first sample.
    srtt: Option<f64>,
    rttvar: f64,
    /// Number of consecutive doublings of the RTO (cleared by a valid sample).
    backoff: u32,
    rto_min: Time,
    rto_max: Time,
    rto_initial: Time,
    granularity: Time,
    /// Smallest sample seen, for reporting.
    pub min_rtt: Option<Time>,
    /// The current RTO, kept as the estimates change (senders read it on
    /// every ack that restarts a timer).
    rto: Time,
}

impl RttEstimator {
    pub fn new(rto_min: Time, rto_max: Time, rto_initial: Time, granularity: Time) -> Self {
        Self {
            srtt: None,
            rttvar: 0.0,
            backoff: 0,
            rto_min,
            rto_max,
            rto_initial,
            granularity,
            min_rtt: None,
            rto: rto_initial.min(rto_max),
        }
    }

    /// A valid RTT sample (never from a retransmitted segment: Karn).
    pub fn on_sample(&mut self, r: Time) {
        let rf = r as f64;
        match self.srtt {
            None => {
                self.srtt = Some(rf);
                self.rttvar = rf / 2.0;
            }
            Some(s) => {
                // RFC 6298 §2.3: update RTTVAR with the old SRTT, then SRTT.
                self.rttvar = 0.75 * self.rttvar + 0.25 * (s - rf).abs();
                self.srtt = Some(0.875 * s + 0.125 * rf);
            }
        }
        self.backoff = 0;
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.rto = self.current_rto();
    }

    pub fn srtt(&self) -> Option<Time> {
        self.srtt.map(|s| s as Time)
    }

    /// RTO before backoff.
    fn base_rto(&self) -> Time {
        match self.srtt {
            None => self.rto_initial,
            Some(s) => {
                let var = (4.0 * self.rttvar).max(self.granularity as f64);
                ((s + var) as Time).max(self.rto_min)
            }
        }
    }

    /// Current RTO including exponential backoff, at most `rto_max`.
    pub fn rto(&self) -> Time {
        self.rto
    }

    fn current_rto(&self) -> Time {
        self.base_rto()
            .saturating_mul(1 << self.backoff.min(40))
            .min(self.rto_max)
    }

    /// The timer expired: double the RTO (RFC 6298 §5.5).
    pub fn back_off(&mut self) {
        if self.rto() < self.rto_max {
            self.backoff += 1;
            self.rto = self.current_rto();
        }
    }

    pub fn backoff(&self) -> u32 {
        self.backoff
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::{MILLISECOND, SECOND};

    fn est(min: Time) -> RttEstimator {
        RttEstimator::new(min, 60 * SECOND, SECOND, MILLISECOND)
    }

    #[test]
    fn first_sample_gives_three_rtt() {
        // RTO = srtt + 4·(R/2) = 3R when above the minimum.
        let mut e = est(200 * MILLISECOND);
        e.on_sample(100 * MILLISECOND);
        assert_eq!(e.rto(), 300 * MILLISECOND);
        let mut e = est(SECOND);
        e.on_sample(100 * MILLISECOND);
        assert_eq!(e.rto(), SECOND);
    }

    #[test]
    fn second_sample_uses_old_srtt_for_rttvar() {
        let mut e = est(0);
        e.on_sample(100 * MILLISECOND);
        e.on_sample(200 * MILLISECOND);
        // rttvar = 0.75·50 + 0.25·|100-200| = 62.5 ms; srtt = 112.5 ms
        assert_eq!(e.srtt(), Some(112_500_000));
        assert_eq!(e.rto(), 112_500_000 + 250_000_000);
    }

    #[test]
    fn backoff_doubles_until_max_and_sample_clears() {
        let mut e = est(SECOND);
        let rtos: Vec<Time> = (0..8)
            .map(|_| {
                let r = e.rto();
                e.back_off();
                r
            })
            .collect();
        assert_eq!(rtos, [1, 2, 4, 8, 16, 32, 60, 60].map(|s| s * SECOND));
        e.on_sample(10 * MILLISECOND);
        assert_eq!(e.rto(), SECOND);
    }
}
