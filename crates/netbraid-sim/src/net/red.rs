//! RED (Floyd & Jacobson 1993) with ns-2's parameter names and defaults:
//! an EWMA of the queue length decides an early drop (or ECN mark) with a
//! probability rising from 0 at `min_th` to `max_p` at `max_th`; with
//! `gentle` it rises on to 1 at 2·max_th instead of jumping. Marks are spaced
//! uniformly: p_a = p_b / (1 − count·p_b), count = packets since the last one.

use crate::engine::{RandomStream, Time};

#[derive(Clone, Copy, Debug, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedParams {
    /// Thresholds on the average queue, packets (ns-2 thresh_ 5, maxthresh_ 15).
    pub min_th: f64,
    pub max_th: f64,
    /// Drop probability at max_th (ns-2: 1/linterm_ = 0.1).
    pub max_p: f64,
    /// EWMA weight (ns-2 q_weight_ 0.002).
    pub w_q: f64,
    pub gentle: bool,
    /// Mark ECN-capable packets instead of dropping them early.
    pub ecn: bool,
}

/// What RED decides for an arriving packet.
#[derive(Debug, PartialEq, Eq)]
pub enum RedVerdict {
    Enqueue,
    Mark,
    Drop,
}

pub struct Red {
    p: RedParams,
    avg: f64,
    /// Packets since the last early drop/mark (−1 below min_th, as in the paper).
    count: i64,
    /// When the queue last went empty, for the idle-time decay of `avg`.
    idle_since: Option<Time>,
    /// Serialisation time of a typical packet, for that decay.
    typical_tx: Time,
    rng: RandomStream,
}

impl Red {
    pub fn new(p: RedParams, typical_tx: Time, rng: RandomStream) -> Self {
        Self {
            p,
            avg: 0.0,
            count: -1,
            idle_since: Some(0),
            typical_tx: typical_tx.max(1),
            rng,
        }
    }

    pub fn average(&self) -> f64 {
        self.avg
    }

    /// The queue (waiting packets) just became empty.
    pub fn on_empty(&mut self, now: Time) {
        self.idle_since = Some(now);
    }

    /// Decide for a packet arriving at `now` to a queue holding `qlen` packets.
    pub fn on_arrival(&mut self, now: Time, qlen: usize, ect: bool) -> RedVerdict {
        if let Some(since) = self.idle_since.take().filter(|_| qlen == 0) {
            // While idle, the average decays as if m small packets had been sent.
            let m = (now.saturating_sub(since) / self.typical_tx) as i32;
            self.avg *= (1.0 - self.p.w_q).powi(m);
        }
        self.avg = (1.0 - self.p.w_q) * self.avg + self.p.w_q * qlen as f64;
        let (min, max) = (self.p.min_th, self.p.max_th);
        let pb = if self.avg < min {
            self.count = -1;
            return RedVerdict::Enqueue;
        } else if self.avg < max {
            self.p.max_p * (self.avg - min) / (max - min)
        } else if self.p.gentle && self.avg < 2.0 * max {
            self.p.max_p + (1.0 - self.p.max_p) * (self.avg - max) / max
        } else {
            self.count = 0;
            return RedVerdict::Drop; // forced
        };
        self.count += 1;
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 { 1.0 } else { (pb / denom).min(1.0) };
        if self.rng.bernoulli(pa) {
            self.count = 0;
            if self.p.ecn && ect {
                RedVerdict::Mark
            } else {
                RedVerdict::Drop
            }
        } else {
            RedVerdict::Enqueue
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(gentle: bool) -> Red {
        let p = RedParams {
            min_th: 5.0,
            max_th: 15.0,
            max_p: 0.1,
            w_q: 0.002,
            gentle,
            ecn: true,
        };
        Red::new(p, 1000, RandomStream::new(1, "red"))
    }

    /// Early drops happen at the rate the RED equations give for a held average.
    #[test]
    fn drop_rate_follows_the_linear_ramp() {
        for (q, want) in [(3usize, 0.0), (10, 0.05), (14, 0.09)] {
            let mut r = red(false);
            let mut drops = 0;
            let n = 200_000;
            for i in 0..n {
                if r.on_arrival(i as Time, q, false) != RedVerdict::Enqueue {
                    drops += 1;
                }
            }
            // p_a = p_b/(1 − count·p_b) makes the gap between drops uniform
            // on 1..1/p_b, so the long-run rate is 1/E[gap] = 2/(1/p_b + 1).
            let got = drops as f64 / n as f64;
            let expect = if want == 0.0 { 0.0 } else { 2.0 / (1.0 / want + 1.0) };
            assert!((got - expect).abs() <= 0.1 * expect + 1e-9, "q={q}: {got} vs {expect}");
        }
    }

    #[test]
    fn above_max_threshold_drops_unless_gentle() {
        let mut hard = red(false);
        let mut soft = red(true);
        for i in 0..20_000 {
            hard.on_arrival(i, 20, true);
            soft.on_arrival(i, 20, true);
        }
        assert_eq!(hard.on_arrival(20_000, 20, true), RedVerdict::Drop); // avg ≈ 20 > 15
        let marks = (0..1000)
            .filter(|&i| soft.on_arrival(20_001 + i, 20, true) != RedVerdict::Enqueue)
            .count();
        assert!(
            marks < 1000,
            "gentle RED still lets some through at avg {}",
            soft.average()
        );
    }

    #[test]
    fn average_decays_while_idle() {
        let mut r = red(false);
        for i in 0..5000 {
            r.on_arrival(i, 10, false);
        }
        let busy = r.average();
        r.on_empty(5000);
        r.on_arrival(5000 + 1000 * 1000, 0, false); // idle for 1000 packet times
        assert!(r.average() < busy * (1.0 - 0.002f64).powi(1000) * 1.01);
    }
}
