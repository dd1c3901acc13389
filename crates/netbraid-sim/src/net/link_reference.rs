//! The test oracle for `link::Channel`: a link direction modelled the obvious
//! way, with a queue of waiting packets, a transmitter that holds one packet
//! and a "transmission done" event that starts the next. The rate server in
//! `link` must make exactly the same decisions (admission, RED, marks, losses,
//! departure and arrival times, queue lengths, counters) for any sequence of
//! offers; the randomized test below checks that.

use super::link::{Channel, ChannelCounters, Offer};
use super::loss::{LossModel, LossProcess};
use super::queue::{DropTailQueue, QueueLimit};
use super::red::{Red, RedParams, RedVerdict};
use super::{ChannelId, NodeId};
use crate::engine::time::serialisation_time;
use crate::engine::{EventQueue, RandomStream, Time};
use crate::ids::PacketRef;
use std::collections::VecDeque;

/// What became of one offered packet.
#[derive(Debug, PartialEq, Clone, Copy)]
enum Fate {
    Dropped,
    Sent {
        marked: bool,
        start: Time,
        depart: Time,
        lost: bool,
    },
}

/// The obvious model: events at each end of a serialisation.
struct Reference {
    rate_bps: u64,
    framing_bytes: u32,
    down: Vec<(Time, Time)>,
    limit: QueueLimit,
    /// Waiting packets: (index of the offer, size).
    waiting: VecDeque<(usize, u32)>,
    /// Up to when `counters.queue_wait_ns` integrates `waiting.len()`.
    waited_until: Time,
    waiting_bytes: u64,
    /// On the transmitter: (index, size, start, end of serialisation).
    transmitting: Option<(usize, u32, Time, Time)>,
    red: Option<Red>,
    loss: LossProcess,
    counters: ChannelCounters,
    fates: Vec<Option<Fate>>,
    marked: Vec<bool>,
}

impl Reference {
    fn ser(&self, size: u32) -> Time {
        serialisation_time(size + self.framing_bytes, self.rate_bps)
    }

    fn start(&mut self, now: Time, i: usize, size: u32) {
        let end = now + self.ser(size);
        self.transmitting = Some((i, size, now, end));
    }

    /// Bring the integral of the number waiting up to `t`.
    fn integrate_waiting(&mut self, t: Time) {
        self.counters.queue_wait_ns += self.waiting.len() as u64 * (t - self.waited_until);
        self.waited_until = t;
    }

    /// Run every "transmission done" up to and including `t`.
    fn run_until(&mut self, t: Time) {
        while let Some((i, size, start, end)) = self.transmitting {
            if end > t {
                break;
            }
            self.counters.tx_packets += 1;
            self.counters.tx_bytes += size as u64;
            let down = self.down.iter().any(|&(a, b)| a <= end && end < b);
            let lost = self.loss.lose_next(end) || down;
            self.counters.loss_drops += lost as u64;
            self.fates[i] = Some(Fate::Sent {
                marked: self.marked[i],
                start,
                depart: end,
                lost,
            });
            self.transmitting = None;
            self.integrate_waiting(end);
            match self.waiting.pop_front() {
                Some((j, s)) => {
                    self.waiting_bytes -= s as u64;
                    self.start(end, j, s);
                }
                None => {
                    if let Some(red) = &mut self.red {
                        red.on_empty(end);
                    }
                }
            }
        }
        self.integrate_waiting(t.max(self.waited_until));
    }

    fn offer(&mut self, now: Time, size: u32, ect: bool) {
        let i = self.fates.len();
        self.fates.push(None);
        self.marked.push(false);
        if self.transmitting.is_none() {
            return self.start(now, i, size);
        }
        let verdict = match &mut self.red {
            Some(red) => red.on_arrival(now, self.waiting.len(), ect),
            None => RedVerdict::Enqueue,
        };
        let fits = match self.limit {
            QueueLimit::Packets(n) => (self.waiting.len() as u64) < n as u64,
            QueueLimit::Bytes(b) => self.waiting_bytes + size as u64 <= b,
        };
        if verdict == RedVerdict::Drop || !fits {
            self.counters.queue_drops += 1;
            self.fates[i] = Some(Fate::Dropped);
            return;
        }
        self.integrate_waiting(now);
        self.waiting.push_back((i, size));
        self.waiting_bytes += size as u64;
        if verdict == RedVerdict::Mark {
            self.counters.ecn_marks += 1;
            self.marked[i] = true;
        }
    }
}

/// One random configuration: rate, framing, delay, limit, RED, loss, outages.
struct Config {
    rate_bps: u64,
    framing_bytes: u32,
    delay: Time,
    limit: QueueLimit,
    red: Option<RedParams>,
    loss: LossModel,
    down: Vec<(Time, Time)>,
}

fn random_config(r: &mut RandomStream) -> Config {
    let pick = |r: &mut RandomStream, n: usize| (r.uniform() * n as f64) as usize;
    let rate_bps = [1_000_000, 10_000_000, 999_983, 1_000_000_000][pick(r, 4)];
    Config {
        rate_bps,
        framing_bytes: [0, 38][pick(r, 2)],
        delay: [0, 1_000, 5_000_000][pick(r, 3)],
        limit: if r.bernoulli(0.5) {
            QueueLimit::Packets(1 + pick(r, 20) as u32)
        } else {
            QueueLimit::Bytes(1500 + pick(r, 30_000) as u64)
        },
        red: r.bernoulli(0.4).then(|| RedParams {
            min_th: 2.0,
            max_th: 6.0,
            max_p: 0.2,
            w_q: 0.05,
            gentle: r.bernoulli(0.5),
            ecn: r.bernoulli(0.5),
        }),
        loss: if r.bernoulli(0.5) {
            LossModel::Bernoulli { p: 0.05 }
        } else {
            LossModel::None
        },
        down: if r.bernoulli(0.3) {
            vec![(20_000_000, 40_000_000)]
        } else {
            Vec::new()
        },
    }
}

fn typical_tx(c: &Config) -> Time {
    serialisation_time(1000, c.rate_bps)
}

fn reference(c: &Config, seed: u64) -> Reference {
    Reference {
        rate_bps: c.rate_bps,
        framing_bytes: c.framing_bytes,
        down: c.down.clone(),
        limit: c.limit,
        waiting: VecDeque::new(),
        waited_until: 0,
        waiting_bytes: 0,
        transmitting: None,
        red: c
            .red
            .map(|p| Red::new(p, typical_tx(c), RandomStream::new(seed, "red"))),
        loss: LossProcess::new(c.loss.clone(), RandomStream::new(seed, "loss")),
        counters: ChannelCounters::default(),
        fates: Vec::new(),
        marked: Vec::new(),
    }
}

fn rate_server(c: &Config, seed: u64) -> Channel {
    let id = ChannelId(0);
    let limit = DropTailQueue::new(c.limit);
    Channel {
        id,
        name: "a->b".into(),
        from: NodeId(0),
        to: NodeId(1),
        to_iface: id.to_iface(),
        rate_bps: c.rate_bps,
        framing_bytes: c.framing_bytes,
        delay: c.delay,
        queue: limit,
        red: c
            .red
            .map(|p| Box::new(Red::new(p, typical_tx(c), RandomStream::new(seed, "red")))),
        loss: LossProcess::with_outages(c.loss.clone(), RandomStream::new(seed, "loss"), c.down.clone()),
        in_link: crate::engine::Ring::new(),
        busy_until: 0,
        lost_in_link: 0,
        counters: ChannelCounters::default(),
        ser_sizes: [u32::MAX; 4],
        ser_times: [0; 4],
        jitter: None,
    }
}

/// Random offers at random times: bursts at one instant, gaps of exactly one
/// serialisation time (ties with departures), long idle periods.
fn random_offers(r: &mut RandomStream, c: &Config, n: usize) -> Vec<(Time, u32, bool)> {
    let sizes = [40u32, 52, 576, 1500, 1448, 9000];
    let mut t: Time = 0;
    (0..n)
        .map(|_| {
            let size = sizes[(r.uniform() * sizes.len() as f64) as usize];
            let u = r.uniform();
            t += if u < 0.3 {
                0
            } else if u < 0.5 {
                serialisation_time(size + c.framing_bytes, c.rate_bps)
            } else if u < 0.95 {
                (r.exponential(1.0) * serialisation_time(1500, c.rate_bps) as f64) as Time
            } else {
                (r.exponential(1.0) * 5e7) as Time
            };
            (t, size, r.bernoulli(0.5))
        })
        .collect()
}

#[test]
fn rate_server_decides_as_the_two_event_model() {
    let mut r = RandomStream::new(42, "link-oracle");
    // What the rounds exercised, so that the comparison cannot pass vacuously.
    let mut seen = ChannelCounters::default();
    let mut ties = 0;
    for round in 0..300u64 {
        let c = random_config(&mut r);
        let offers = random_offers(&mut r, &c, 400);
        let mut old = reference(&c, round);
        let mut new = rate_server(&c, round);
        let mut keys: EventQueue<()> = EventQueue::new();
        let mut fates = Vec::new();
        let mut in_order: VecDeque<usize> = VecDeque::new();
        for (i, &(t, size, ect)) in offers.iter().enumerate() {
            // The oracle runs its departures up to t first: the tie rule.
            old.run_until(t);
            // Arrivals due by t leave the rate server's link in order, at
            // departure + delay.
            while new.in_link.front().is_some_and(|p| p.arrival.time() <= t) {
                let at = new.in_link.front().unwrap().arrival.time();
                let (head, _) = new.arrive();
                let k = in_order.pop_front().unwrap();
                assert_eq!(head.packet, PacketRef(k as u32));
                let Some(Fate::Sent { depart, lost, .. }) = fates[k] else {
                    panic!("arrived: {k}")
                };
                assert_eq!((at, head.lost()), (depart + c.delay, lost), "round {round}, packet {k}");
            }
            new.advance(t);
            assert_eq!(
                (new.queue.len(), new.queue.bytes()),
                (old.waiting.len(), old.waiting_bytes),
                "round {round}: queue seen by offer {i}"
            );
            assert_eq!(
                new.counters_at(t),
                old.counters,
                "round {round}: counters before offer {i}"
            );
            let fate = match new.offer(t, PacketRef(i as u32), size, ect, 0, |at| keys.reserve(at)) {
                Offer::Dropped => Fate::Dropped,
                Offer::Admitted {
                    marked, start, depart, ..
                } => {
                    in_order.push_back(i);
                    let lost = new.in_link.back().unwrap().lost();
                    Fate::Sent {
                        marked,
                        start,
                        depart,
                        lost,
                    }
                }
            };
            fates.push(Some(fate));
            old.offer(t, size, ect);
            ties += fates
                .iter()
                .filter(|f| matches!(f, Some(Fate::Sent { depart, .. }) if *depart == t))
                .count();
        }
        old.run_until(Time::MAX);
        assert_eq!(old.fates, fates, "round {round}: {} offers", offers.len());
        assert_eq!(new.counters_at(Time::MAX - c.delay), old.counters, "round {round}");
        seen = seen.plus(&old.counters);
    }
    assert!(
        seen.queue_drops > 1000 && seen.ecn_marks > 100 && seen.loss_drops > 1000 && seen.queue_wait_ns > 0,
        "{seen:?}"
    );
    assert!(ties > 500, "offers at the instant of a departure: {ties}");
}

/// A very slow link with a long queue may be busy beyond the end of time:
/// departures saturate at the largest time instead of wrapping round, and
/// the packets still leave in order.
#[test]
fn a_link_busy_beyond_the_end_of_time_saturates() {
    let c = Config {
        rate_bps: 1,
        framing_bytes: 0,
        delay: 1_000,
        limit: QueueLimit::Packets(100_000),
        red: None,
        loss: LossModel::None,
        down: Vec::new(),
    };
    let mut link = rate_server(&c, 1);
    let mut keys: EventQueue<()> = EventQueue::new();
    let mut last = None;
    for i in 0..40_000u32 {
        match link.offer(0, PacketRef(i), 65_507, false, 0, |at| keys.reserve(at)) {
            Offer::Admitted { depart, .. } => {
                let key = link.in_link.back().unwrap().arrival;
                assert!(last.is_none_or(|l| l < key), "packet {i} arrives out of order");
                assert!(depart >= last.map_or(0, |l: crate::engine::EventKey| l.time() - c.delay));
                last = Some(key);
            }
            Offer::Dropped => panic!("the queue has room"),
        }
    }
    assert_eq!(link.busy_until, Time::MAX);
    assert_eq!(link.counters_at(1_000_000).tx_packets, 0);
}
