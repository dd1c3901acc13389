//! On-off UDP sources with the semantics of ns-2's Application/Traffic/
//! Exponential and /Pareto (protocols.md §10): while ON, one packet every
//! T = size·8/rate; a burst is N = max(1, round(X)) packets with X drawn
//! with mean burst_time/T; every packet is followed by a gap T, the last of
//! a burst by T plus an OFF time drawn with mean idle_time. The first packet
//! comes after T plus an OFF time, as in ns-2.

use crate::endpoint::{Endpoint, Outbox, Received, Scope, Snapshot};
use crate::engine::time::{serialisation_time, SECOND};
use crate::engine::{RandomStream, Time};
use crate::trace::counters::TransportCounters;
use serde::Deserialize;

use super::cbr::Emitter;

#[derive(Clone, Copy, Debug, PartialEq, Deserialize)]
#[serde(tag = "distribution", rename_all = "snake_case")]
pub enum OnOffDistribution {
    Exponential,
    /// Pareto with this shape (ns-2 default 1.5): heavy-tailed bursts and gaps.
    Pareto {
        shape: f64,
    },
}

pub struct OnOffSource {
    emitter: Emitter,
    gaps: OnOffGaps,
}

/// The ON/OFF process: how long to wait after each packet. Public so that
/// the emu backend's UDP generator sends with the very same process.
pub struct OnOffGaps {
    /// Packet interval while ON.
    interval: Time,
    /// Mean burst length in packets (burst_time / interval).
    burst_mean: f64,
    /// Mean OFF time in seconds.
    idle_mean: f64,
    distribution: OnOffDistribution,
    rng: RandomStream,
    /// Packets left in the current burst.
    remaining: u64,
}

impl OnOffSource {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        rate_bps: u64,
        payload: u32,
        header: u32,
        burst: Time,
        idle: Time,
        distribution: OnOffDistribution,
        rng: RandomStream,
        start: Time,
        stop: Time,
    ) -> Self {
        let mut gaps = OnOffGaps::new(rate_bps, payload, burst, idle, distribution, rng);
        let first = start.saturating_add(gaps.next_gap());
        Self {
            emitter: Emitter::new(payload, header, first, stop),
            gaps,
        }
    }

    pub fn stats(&self) -> &TransportCounters {
        &self.emitter.stats
    }
}

impl Endpoint for OnOffSource {
    fn kind(&self) -> &'static str {
        "udp"
    }
    fn on_packet(&mut self, _now: Time, _rx: Received<'_>, _out: &mut Outbox) {}
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        let gaps = &mut self.gaps;
        self.emitter.run(now, out, || gaps.next_gap());
    }
    fn poll_at(&self) -> Option<Time> {
        self.emitter.poll_at()
    }
    fn snapshot(&mut self, _now: Time, _scope: Scope) -> Snapshot {
        Snapshot {
            counters: self.emitter.stats,
            sender: None,
        }
    }
}

impl OnOffGaps {
    pub fn new(
        rate_bps: u64,
        payload: u32,
        burst: Time,
        idle: Time,
        distribution: OnOffDistribution,
        rng: RandomStream,
    ) -> Self {
        // ns-2 paces by the packet size it is given (no header added there).
        let interval = serialisation_time(payload, rate_bps).max(1);
        Self {
            interval,
            burst_mean: burst as f64 / interval as f64,
            idle_mean: idle as f64 / SECOND as f64,
            distribution,
            rng,
            remaining: 0,
        }
    }

    /// Draw with the configured distribution and mean.
    fn draw(&mut self, mean: f64) -> f64 {
        match self.distribution {
            OnOffDistribution::Exponential => self.rng.exponential(mean),
            OnOffDistribution::Pareto { shape } => {
                // Pareto with scale = mean·(shape−1)/shape has that mean.
                let scale = mean * (shape - 1.0) / shape;
                scale * (1.0 - self.rng.uniform()).powf(-1.0 / shape)
            }
        }
    }

    /// Gap after the packet just sent (ns-2's next_interval); also the wait
    /// before the first packet.
    pub fn next_gap(&mut self) -> Time {
        let mut t = self.interval;
        if self.remaining == 0 {
            let n = (self.draw(self.burst_mean) + 0.5) as u64;
            self.remaining = n.max(1);
            let off = self.draw(self.idle_mean);
            t = t.saturating_add((off * SECOND as f64) as Time);
        }
        self.remaining -= 1;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MILLISECOND;

    /// Run a source for `secs` and return its mean payload rate (bit/s).
    fn mean_rate(dist: OnOffDistribution, rate: u64, size: u32, burst: Time, idle: Time, secs: u64) -> f64 {
        let stop = secs * SECOND;
        let mut src = OnOffSource::new(rate, size, 0, burst, idle, dist, RandomStream::new(1, "t"), 0, stop);
        let mut out = Vec::new();
        while let Some(t) = src.poll_at() {
            src.on_timer(t, &mut out);
            out.clear();
        }
        src.stats().bytes_sent as f64 * 8.0 / secs as f64
    }

    /// protocols.md §10 renewal formula: rate = E[N]·size·8 / (E[N]·T + idle),
    /// E[N] = e^{-0.5/m}/(1 − e^{-1/m}) + 1 − e^{-0.5/m}, m = burst/T.
    fn renewal_rate(rate: f64, size: f64, burst: f64, idle: f64) -> f64 {
        let t = size * 8.0 / rate;
        let m = burst / t;
        let a = (-0.5 / m).exp();
        let en = a / (1.0 - (-1.0 / m).exp()) + 1.0 - a;
        en * size * 8.0 / (en * t + idle)
    }

    #[test]
    fn exponential_mean_rate_matches_the_renewal_formula() {
        // ns-2 defaults (210 B, 64 kb/s, 0.5 s / 0.5 s: 32.02 kb/s), the
        // one-packet-minimum case (1000 B at 1 Mb/s, 10/10 ms: 553 kb/s),
        // and paper 003's sources (1.5 Mb/s, 20/120 ms). > 10^4 cycles each.
        for (rate, size, burst, idle, secs) in [
            (64_000u64, 210u32, 500 * MILLISECOND, 500 * MILLISECOND, 20_000u64),
            (1_000_000, 1000, 10 * MILLISECOND, 10 * MILLISECOND, 400),
            (1_500_000, 210, 20 * MILLISECOND, 120 * MILLISECOND, 3_000),
        ] {
            let got = mean_rate(OnOffDistribution::Exponential, rate, size, burst, idle, secs);
            let want = renewal_rate(rate as f64, size as f64, burst as f64 / 1e9, idle as f64 / 1e9);
            assert!((got - want).abs() / want < 0.02, "{rate} {size}: {got} vs {want}");
        }
        let defaults = renewal_rate(64_000.0, 210.0, 0.5, 0.5);
        assert!((defaults - 32_020.0).abs() < 50.0, "{defaults}");
    }

    #[test]
    fn pareto_mean_rate_is_near_the_on_fraction() {
        // Long bursts (m = 100) make rounding negligible: rate ≈ R·on/(on+off).
        let got = mean_rate(
            OnOffDistribution::Pareto { shape: 1.5 },
            1_000_000,
            125,
            100 * MILLISECOND,
            100 * MILLISECOND,
            20_000,
        );
        assert!((got - 500_000.0).abs() / 500_000.0 < 0.1, "{got}");
    }

    #[test]
    fn off_times_are_exponential() {
        // Gaps beyond T are the OFF times: their mean is idle, and a fraction
        // e^{-1} of them exceed the mean.
        let mut src = OnOffSource::new(
            8_000_000,
            1000,
            0,
            MILLISECOND,
            50 * MILLISECOND,
            OnOffDistribution::Exponential,
            RandomStream::new(5, "g"),
            0,
            Time::MAX,
        );
        let mut offs = Vec::new();
        for _ in 0..200_000 {
            let g = src.gaps.next_gap();
            if g > src.gaps.interval {
                offs.push((g - src.gaps.interval) as f64 / 1e9);
            }
        }
        let mean = offs.iter().sum::<f64>() / offs.len() as f64;
        let above = offs.iter().filter(|&&x| x > 0.05).count() as f64 / offs.len() as f64;
        assert!((mean - 0.05).abs() / 0.05 < 0.02, "{mean}");
        assert!((above - (-1f64).exp()).abs() < 0.01, "{above}");
    }
}
