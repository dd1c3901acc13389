//! One direction of an emulated link, free of I/O: given a packet's arrival
//! time and size it decides drop or the absolute time of delivery.
//!
//! The pipeline is the simulator's (`net::link`): tail-drop FIFO → serialiser
//! at the link rate → loss (drawn when serialisation ends, so a lost packet
//! still used the link) → propagation delay (+ optional jitter). Because the
//! serialiser is work-conserving FIFO, it is modelled in virtual time: the
//! departure of each admitted packet is max(arrival, previous departure) +
//! size/rate, and the queue is the set of admitted packets whose departure is
//! still in the future. No packet waits in this struct; the caller holds it
//! until its delivery time.

use std::collections::VecDeque;

use netbraid_sim::engine::time::serialisation_time;
use netbraid_sim::engine::RandomStream;
use netbraid_sim::net::loss::{LossModel, LossProcess};
use netbraid_sim::net::queue::QueueLimit;
use serde::Serialize;

/// What happened to one offered packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver at this absolute time (ns, same clock as the arrival).
    Deliver { at: u64 },
    /// The queue was full (tail drop).
    QueueDrop,
    /// The loss model dropped it after serialisation.
    LossDrop,
}

/// Counters of one direction, written as JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DirectionCounters {
    pub arrived_packets: u64,
    pub arrived_bytes: u64,
    pub forwarded_packets: u64,
    pub forwarded_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    /// The number of packets waiting for the serialiser integrated over
    /// time (packet·ns), as in the simulator: a packet's whole wait is added
    /// when it is admitted, so a reading at an instant takes back out what
    /// is still to come (`wait_ahead`).
    pub queue_wait_ns: u64,
}

pub struct Shaper {
    rate_bps: u64,
    delay_ns: u64,
    /// Delivery is delayed by a uniform draw in [-jitter, +jitter] on top of
    /// `delay_ns`, but never before the previous packet's delivery: jitter
    /// never reorders.
    jitter_ns: u64,
    limit: QueueLimit,
    loss: LossProcess,
    jitter_rng: RandomStream,
    /// (departure time, size) of admitted packets not yet fully serialised;
    /// the front one is on the serialiser, the rest are waiting.
    /// (departure, size, lost) of every packet on or waiting for the serialiser.
    backlog: VecDeque<(u64, u32, bool)>,
    backlog_bytes: u64,
    last_departure: u64,
    last_delivery: u64,
    pub counters: DirectionCounters,
}

impl Shaper {
    /// `name` keys the random streams (with `seed`), as in the simulator.
    pub fn new(
        rate_bps: u64,
        delay_ns: u64,
        jitter_ns: u64,
        limit: QueueLimit,
        loss: LossModel,
        seed: u64,
        name: &str,
    ) -> Self {
        assert!(rate_bps > 0, "rate must be positive (validated by the config)");
        Self {
            rate_bps,
            delay_ns,
            jitter_ns,
            limit,
            loss: LossProcess::new(loss, RandomStream::new(seed, &format!("loss/{name}"))),
            jitter_rng: RandomStream::new(seed, &format!("jitter/{name}")),
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            last_departure: 0,
            last_delivery: 0,
            counters: DirectionCounters::default(),
        }
    }

    /// Packets waiting behind the one being serialised at time `now`.
    fn retire(&mut self, now: u64) {
        while let Some(&(dep, size, _)) = self.backlog.front() {
            if dep > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= size as u64;
        }
    }

    /// Whether a packet of `size` bytes may join the queue. As in the
    /// simulator, the limit counts packets waiting, not the one on the
    /// serialiser; an idle serialiser always takes the packet.
    fn admits(&self, size: u32) -> bool {
        let Some(&(_, in_service, _)) = self.backlog.front() else {
            return true;
        };
        let waiting = self.backlog.len() as u64 - 1;
        let waiting_bytes = self.backlog_bytes - in_service as u64;
        match self.limit {
            QueueLimit::Packets(n) => waiting < n as u64,
            QueueLimit::Bytes(b) => waiting_bytes + size as u64 <= b,
        }
    }

    /// Forwarded packets not yet fully serialised at `now`, and their bytes
    /// not yet serialised (the one on the serialiser counted pro rata):
    /// `forwarded_*` counts a packet when it is queued, so a reading at an
    /// instant subtracts these to get what the link had sent by then, and
    /// bytes sent between two readings never exceed rate × interval.
    pub fn unsent(&self, now: u64) -> (u64, u64) {
        let mut out = (0, 0);
        for &(dep, size, lost) in &self.backlog {
            if dep <= now || lost {
                continue;
            }
            let ser = serialisation_time(size, self.rate_bps).max(1);
            let left = (dep - now).min(ser);
            out.0 += 1;
            out.1 += (size as u128 * left as u128).div_ceil(ser as u128) as u64;
        }
        out
    }

    /// Of `queue_wait_ns`, the waits still to come at `now`: what the packets
    /// not yet on the serialiser will wait from `now` on.
    pub fn wait_ahead(&self, now: u64) -> u64 {
        self.backlog
            .iter()
            .rev()
            .map(|&(dep, size, _)| dep - serialisation_time(size, self.rate_bps))
            .take_while(|&start| start > now)
            .map(|start| start - now)
            .sum()
    }

    /// Offer a packet of `size` bytes arriving at `now` (ns). Arrival times
    /// must not decrease.
    pub fn offer(&mut self, now: u64, size: u32) -> Verdict {
        self.counters.arrived_packets += 1;
        self.counters.arrived_bytes += size as u64;
        self.retire(now);
        if !self.admits(size) {
            self.counters.queue_drops += 1;
            return Verdict::QueueDrop;
        }
        let start = now.max(self.last_departure);
        self.counters.queue_wait_ns += start - now;
        let departure = start + serialisation_time(size, self.rate_bps);
        self.last_departure = departure;
        let lost = self.loss.lose_next(departure);
        self.backlog.push_back((departure, size, lost));
        self.backlog_bytes += size as u64;
        if lost {
            self.counters.loss_drops += 1;
            return Verdict::LossDrop;
        }
        let mut at = departure + self.delay_ns;
        if self.jitter_ns > 0 {
            let j = self.jitter_ns as f64;
            let offset = (self.jitter_rng.uniform() * 2.0 - 1.0) * j;
            at = (at as f64 + offset).max(departure as f64) as u64;
        }
        at = at.max(self.last_delivery);
        self.last_delivery = at;
        self.counters.forwarded_packets += 1;
        self.counters.forwarded_bytes += size as u64;
        Verdict::Deliver { at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn shaper(rate_bps: u64, delay: u64, limit: QueueLimit, loss: LossModel) -> Shaper {
        Shaper::new(rate_bps, delay, 0, limit, loss, 1, "t")
    }

    #[test]
    fn lone_packet_takes_serialisation_plus_delay() {
        // 1500 B at 12 Mb/s = 1 ms on the wire.
        let mut s = shaper(12_000_000, 5 * MS, QueueLimit::Packets(10), LossModel::None);
        assert_eq!(s.offer(100, 1500), Verdict::Deliver { at: 100 + MS + 5 * MS });
    }

    #[test]
    fn back_to_back_packets_leave_one_serialisation_apart() {
        let mut s = shaper(12_000_000, 0, QueueLimit::Packets(10), LossModel::None);
        let times: Vec<u64> = (0..4)
            .map(|_| match s.offer(0, 1500) {
                Verdict::Deliver { at } => at,
                v => panic!("{v:?}"),
            })
            .collect();
        assert_eq!(times, vec![MS, 2 * MS, 3 * MS, 4 * MS]);
    }

    #[test]
    fn unsent_is_what_the_serialiser_has_not_sent_yet() {
        // Three 1500 B packets at 12 Mb/s (1 ms each) queued at 0: half way
        // through the first, 750 B of it and both others are still to go;
        // after 3 ms nothing is, and the sent bytes never outrun the rate.
        let mut s = shaper(12_000_000, 5 * MS, QueueLimit::Packets(10), LossModel::None);
        for _ in 0..3 {
            s.offer(0, 1500);
        }
        assert_eq!(s.unsent(MS / 2), (3, 750 + 3000));
        assert_eq!(s.unsent(2 * MS), (1, 1500));
        assert_eq!(s.unsent(3 * MS), (0, 0));
        for t in (0..=3 * MS).step_by(MS as usize / 7) {
            let sent = s.counters.forwarded_bytes - s.unsent(t).1;
            assert!(sent * 8 <= 12_000_000 * t / 1_000_000_000 + 1, "{sent} B by {t} ns");
        }
    }

    #[test]
    fn each_packet_waits_for_those_ahead_of_it() {
        // Three 1500 B packets at 12 Mb/s (1 ms each) at 0 wait 0, 1 and 2
        // ms; a fourth at 5 ms finds the serialiser idle and waits none.
        let mut s = shaper(12_000_000, 5 * MS, QueueLimit::Packets(10), LossModel::None);
        for t in [0, 0, 0, 5 * MS] {
            s.offer(t, 1500);
        }
        assert_eq!(s.counters.queue_wait_ns, 3 * MS);
        // read at 1.5 ms, the third has waited 1.5 of its 2 ms, the second
        // all of its 1 ms: 2.5 ms so far
        let mut s = shaper(12_000_000, 5 * MS, QueueLimit::Packets(10), LossModel::None);
        for _ in 0..3 {
            s.offer(0, 1500);
        }
        assert_eq!(s.counters.queue_wait_ns - s.wait_ahead(3 * MS / 2), 5 * MS / 2);
        assert_eq!(s.wait_ahead(2 * MS), 0);
    }

    #[test]
    fn packet_limit_counts_waiting_packets_only() {
        // A burst of 20 into a queue of 5: one on the serialiser + 5 waiting.
        let mut s = shaper(12_000_000, 0, QueueLimit::Packets(5), LossModel::None);
        let delivered = (0..20)
            .filter(|_| matches!(s.offer(0, 1500), Verdict::Deliver { .. }))
            .count();
        assert_eq!(delivered, 6);
        assert_eq!(s.counters.queue_drops, 14);
        // Once the first packet has left (t = 1 ms), exactly one more fits.
        assert!(matches!(s.offer(MS, 1500), Verdict::Deliver { .. }));
        assert_eq!(s.offer(MS, 1500), Verdict::QueueDrop);
    }

    #[test]
    fn byte_limit_admits_exactly_what_fits() {
        let mut s = shaper(12_000_000, 0, QueueLimit::Bytes(3000), LossModel::None);
        assert!(matches!(s.offer(0, 1500), Verdict::Deliver { .. })); // on the serialiser
        assert!(matches!(s.offer(0, 1500), Verdict::Deliver { .. })); // 1500 waiting
        assert!(matches!(s.offer(0, 1000), Verdict::Deliver { .. })); // 2500
        assert_eq!(s.offer(0, 501), Verdict::QueueDrop); // 3001 > 3000
        assert!(matches!(s.offer(0, 500), Verdict::Deliver { .. })); // exactly 3000
    }

    #[test]
    fn idle_link_delivers_at_rate_for_a_long_flood() {
        // Offered at twice the rate for 1 s: delivered bytes = rate × time.
        let rate = 100_000_000;
        let mut s = shaper(rate, 0, QueueLimit::Packets(100), LossModel::None);
        let gap = serialisation_time(1500, rate) / 2;
        let mut last = 0;
        for i in 0..(2 * 8333) {
            if let Verdict::Deliver { at } = s.offer(i * gap, 1500) {
                last = at;
            }
        }
        let bits = s.counters.forwarded_bytes as f64 * 8.0;
        let measured = bits / (last as f64 / 1e9);
        assert!((measured - rate as f64).abs() / (rate as f64) < 1e-3, "{measured}");
    }

    #[test]
    fn lost_packets_still_occupy_the_link() {
        let mut s = shaper(
            12_000_000,
            0,
            QueueLimit::Packets(10),
            LossModel::List { indices: vec![0] },
        );
        assert_eq!(s.offer(0, 1500), Verdict::LossDrop);
        assert_eq!(s.offer(0, 1500), Verdict::Deliver { at: 2 * MS });
    }

    #[test]
    fn jitter_never_reorders_and_stays_in_bounds() {
        // Packets 0.1 ms apart with ±2 ms jitter: clamping keeps order.
        let mut s = Shaper::new(
            1_000_000_000,
            10 * MS,
            2 * MS,
            QueueLimit::Packets(1000),
            LossModel::None,
            7,
            "j",
        );
        let mut prev = 0;
        for i in 0..10_000u64 {
            let now = i * 100_000;
            let Verdict::Deliver { at } = s.offer(now, 100) else {
                panic!()
            };
            assert!(at >= prev);
            assert!(at - now <= 12 * MS + 1000);
            prev = at;
        }
        // Packets 5 ms apart never need clamping: delays span [8, 12] ms.
        let mut s = Shaper::new(
            1_000_000_000,
            10 * MS,
            2 * MS,
            QueueLimit::Packets(1000),
            LossModel::None,
            7,
            "j",
        );
        let delays: Vec<u64> = (0..2000u64)
            .map(|i| match s.offer(i * 5 * MS, 100) {
                Verdict::Deliver { at } => at - i * 5 * MS,
                v => panic!("{v:?}"),
            })
            .collect();
        let (lo, hi) = (*delays.iter().min().unwrap(), *delays.iter().max().unwrap());
        assert!(lo >= 8 * MS && hi <= 12 * MS + 1000, "{lo} {hi}");
        assert!(
            lo < 8 * MS + MS / 10 && hi > 12 * MS - MS / 10,
            "jitter does not span its range: {lo} {hi}"
        );
    }
}
