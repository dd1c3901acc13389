//! Round-trip time estimation and the retransmission timeout: RFC 6298,
//! or Linux's variant of it (`linux`).
//!
//! Linux (net/ipv4/tcp_input.c, `tcp_rtt_estimator`, `tcp_set_rto`) keeps
//! SRTT as RFC 6298 does (gain 1/8, in microseconds) but the variation its
//! own way: `mdev` is four times the mean deviation (gain 1/4, and 1/32 when
//! the RTT falls, so a falling RTT does not raise the RTO); `rttvar` follows
//! the largest `mdev` of each round trip at once and decays a quarter of the
//! way towards it once a round trip, never below the minimum RTO, which is
//! where the minimum enters: RTO = SRTT + rttvar, so at least SRTT + 200 ms,
//! where RFC 6298 gives max(SRTT + 4·RTTVAR, 200 ms). Linux takes a sample
//! on every ACK that acknowledges new data (the oldest segment it covers;
//! none when the ACK covers retransmitted data, where Linux would use the
//! echoed timestamp, which is not modelled).

use crate::engine::Time;

/// Linux's estimator state, in microseconds as the kernel keeps it.
struct LinuxRto {
    /// SRTT × 8.
    srtt8: i64,
    /// Four times the smoothed mean deviation.
    mdev: i64,
    /// The largest `mdev` of the round trip under way (at least the minimum RTO).
    mdev_max: i64,
    /// The variation term of the RTO.
    rttvar: i64,
    /// The round trip under way ends when snd_una passes this.
    rtt_seq: u64,
    /// The minimum RTO, µs.
    rto_min: i64,
}

impl LinuxRto {
    fn sample(&mut self, m: i64, snd_una: u64, snd_nxt: u64) {
        if self.srtt8 != 0 {
            let mut m = m;
            m -= self.srtt8 >> 3; // the error of the estimate
            self.srtt8 += m; // SRTT gains 1/8 of it
            if m < 0 {
                m = -m - (self.mdev >> 2);
                // falling RTT: a finer gain, so the RTO does not grow from it
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= self.mdev >> 2;
            }
            self.mdev += m;
            if self.mdev > self.mdev_max {
                self.mdev_max = self.mdev;
                self.rttvar = self.rttvar.max(self.mdev_max);
            }
            if snd_una > self.rtt_seq {
                // a round trip ended: rttvar decays towards its largest mdev
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max = self.rto_min;
            }
        } else {
            // the first sample: RTO = 3 × RTT (at least RTT + the minimum)
            self.srtt8 = m << 3;
            self.mdev = m << 1;
            self.rttvar = self.mdev.max(self.rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
        }
        self.srtt8 = self.srtt8.max(1);
    }

    fn rto_us(&self) -> i64 {
        (self.srtt8 >> 3) + self.rttvar
    }
}

pub struct RttEstimator {
    /// Smoothed RTT and RTT variation in ns; `None` before the first sample.
    srtt: Option<f64>,
    /// `srtt` in whole ns, as senders read it on every ACK (a float's
    /// conversion, which saturates, is several instructions).
    srtt_ns: Option<Time>,
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
    /// Linux's estimator, when it is the one in use (`use_linux`).
    linux: Option<Box<LinuxRto>>,
}

impl RttEstimator {
    pub fn new(rto_min: Time, rto_max: Time, rto_initial: Time, granularity: Time) -> Self {
        Self {
            srtt: None,
            srtt_ns: None,
            rttvar: 0.0,
            backoff: 0,
            rto_min,
            rto_max,
            rto_initial,
            granularity,
            min_rtt: None,
            rto: rto_initial.min(rto_max),
            linux: None,
        }
    }

    /// Linux's estimator (module docs) instead of RFC 6298's: its samples
    /// come through `on_sample_linux`.
    pub fn use_linux(&mut self) {
        self.linux = Some(Box::new(LinuxRto {
            srtt8: 0,
            mdev: 0,
            mdev_max: 0,
            rttvar: 0,
            rtt_seq: 0,
            rto_min: (self.rto_min / 1_000) as i64,
        }));
    }

    pub fn is_linux(&self) -> bool {
        self.linux.is_some()
    }

    /// A sample for Linux's estimator: snd_una after the ACK that gave it
    /// and the highest sequence sent (a round trip of the estimator ends
    /// when snd_una passes the latter of the round before). Microseconds,
    /// as the kernel counts (at least 1).
    pub fn on_sample_linux(&mut self, r: Time, snd_una: u64, snd_nxt: u64) {
        let Some(l) = self.linux.as_deref_mut() else {
            return self.on_sample(r);
        };
        l.sample(((r / 1_000) as i64).max(1), snd_una, snd_nxt);
        self.srtt = Some(((l.srtt8 >> 3) as Time * 1_000) as f64);
        self.sampled(r);
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
        self.sampled(r);
    }

    /// What every valid sample does beside the estimates: the backoff is
    /// cleared (RFC 6298 §5.7), the minimum kept, the RTO worked out again.
    fn sampled(&mut self, r: Time) {
        self.srtt_ns = self.srtt.map(|s| s as Time);
        self.backoff = 0;
        self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        self.rto = self.current_rto();
    }

    #[inline]
    pub fn srtt(&self) -> Option<Time> {
        self.srtt_ns
    }

    /// RTO before backoff.
    fn base_rto(&self) -> Time {
        if let Some(l) = self.linux.as_deref().filter(|_| self.srtt.is_some()) {
            return (l.rto_us() as Time).saturating_mul(1_000);
        }
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

    fn linux(min: Time) -> RttEstimator {
        let mut e = est(min);
        e.use_linux();
        e
    }

    /// Feed `n` samples of `r`, an ACK of one segment each, as a window of
    /// one segment gives them (a round of the estimator ends every second
    /// sample: snd_una must pass the snd_nxt of the round's start).
    fn steady(e: &mut RttEstimator, r: Time, n: u64, seq: &mut u64) {
        for _ in 0..n {
            *seq += 1000;
            e.on_sample_linux(r, *seq, *seq + 1000);
        }
    }

    #[test]
    fn linux_first_sample_gives_rtt_plus_the_minimum_at_least() {
        // mdev = 2R, rttvar = max(2R, rto_min), RTO = R + rttvar
        let mut e = linux(200 * MILLISECOND);
        e.on_sample_linux(100 * MILLISECOND, 1000, 2000);
        assert_eq!(e.rto(), 300 * MILLISECOND);
        let mut e = linux(200 * MILLISECOND);
        e.on_sample_linux(40 * MILLISECOND, 1000, 2000);
        assert_eq!(e.rto(), 240 * MILLISECOND); // RFC 6298: max(40 + 80, 200) = 200 ms
    }

    #[test]
    fn linux_steady_rtt_settles_at_srtt_plus_the_minimum() {
        // the deviation decays to nothing; the variation term cannot go
        // below rto_min: RTO = SRTT + 200 ms, where RFC 6298 floors at 200 ms
        let (mut e, mut seq) = (linux(200 * MILLISECOND), 0);
        steady(&mut e, 40 * MILLISECOND, 200, &mut seq);
        assert_eq!(e.srtt(), Some(40 * MILLISECOND));
        assert!(e.rto().abs_diff(240 * MILLISECOND) <= 10_000, "{}", e.rto());
        let mut r = est(200 * MILLISECOND);
        (0..200).for_each(|_| r.on_sample(40 * MILLISECOND));
        assert_eq!(r.rto(), 200 * MILLISECOND);
    }

    #[test]
    fn linux_rto_jumps_with_a_rising_rtt_at_once() {
        // after a steady 40 ms, one 440 ms sample: SRTT = 40 + 400/8 = 90 ms,
        // mdev ≈ 400 ms (4 × the deviation's quarter gain), which rttvar
        // takes at once: RTO ≈ 490 ms
        let (mut e, mut seq) = (linux(200 * MILLISECOND), 0);
        steady(&mut e, 40 * MILLISECOND, 200, &mut seq);
        e.on_sample_linux(440 * MILLISECOND, seq, seq + 1000);
        assert_eq!(e.srtt(), Some(90 * MILLISECOND));
        assert!(e.rto().abs_diff(490 * MILLISECOND) <= 100_000, "{}", e.rto());
    }

    #[test]
    fn linux_falling_rtt_does_not_raise_the_rto() {
        // a sample below SRTT enters mdev with a gain of 1/32, not 1/4: the
        // RTO falls with SRTT (RFC 6298 would add a quarter of the error)
        let (mut e, mut seq) = (linux(200 * MILLISECOND), 0);
        steady(&mut e, 100 * MILLISECOND, 200, &mut seq);
        let before = e.rto();
        e.on_sample_linux(50 * MILLISECOND, seq, seq + 1000);
        assert!(e.rto() < before, "{} then {}", before, e.rto());
        assert_eq!(e.srtt(), Some(93_750_000));
    }

    #[test]
    fn linux_variation_decays_a_quarter_per_round_trip() {
        // After a steady 40 ms, a 440 ms sample that also ends a round trip:
        // rttvar takes mdev ≈ 400 ms at once and the new round's largest
        // mdev starts again from rto_min. Ten 90 ms samples inside the round
        // shrink mdev (400 → 300 → 225 → …), so the round's largest is 300
        // ms, and rttvar stays at 400 until the round ends; then it falls a
        // quarter of the way to 300: 375 ms.
        let (mut e, mut seq) = (linux(200 * MILLISECOND), 0);
        steady(&mut e, 40 * MILLISECOND, 200, &mut seq);
        let round_end = seq + 1_000_000_000;
        e.on_sample_linux(440 * MILLISECOND, seq + 500_000, round_end);
        let var = |e: &RttEstimator| (e.rto() - e.srtt().unwrap()) as f64 / 1e6;
        assert!((var(&e) - 400.0).abs() < 0.1, "{}", var(&e));
        for k in 1..=10 {
            e.on_sample_linux(90 * MILLISECOND, seq + 500_000 + k, round_end);
        }
        assert!((var(&e) - 400.0).abs() < 0.1, "{} inside the round", var(&e));
        e.on_sample_linux(90 * MILLISECOND, round_end + 1, round_end + 2);
        assert!((var(&e) - 375.0).abs() < 0.1, "{} after the round", var(&e));
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
