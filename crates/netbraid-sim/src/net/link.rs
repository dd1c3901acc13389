//! One direction of a point-to-point link: queue → transmitter (serialisation
//! at the rate) → loss → wire (delay), as a rate server.
//!
//! The obvious model (kept as the test oracle in `link_reference`) schedules
//! two events per packet: "transmission done", which starts the next packet
//! waiting, and "arrival" at the far end. But a FIFO at a fixed rate knows a
//! packet's whole future when it admits it: serialisation starts when the
//! transmitter is free, `start = max(now, busy_until)`, and ends `size / rate`
//! later; the packet arrives `delay` after that. So a packet costs one event
//! here, its arrival, and only the first packet in the link has its arrival in
//! the event queue (the others arrive in order behind it). What the obvious
//! model knew from its events is derived instead:
//!
//! - the queue at any instant is the packets admitted whose serialisation
//!   has not started (`advance`), which is what tail drop and RED look at;
//! - the end of a busy period (RED's idle time) is `busy_until` when the next
//!   packet finds the transmitter free;
//! - the loss model is drawn at admission, in admission order, which for a
//!   FIFO is the order of transmission; an outage is checked at the packet's
//!   departure time; a lost packet leaves the link when it would have
//!   arrived, but its drop is counted as of its departure whenever the
//!   counters are read (`Simulation::count_wire_losses`);
//! - counters of transmitted packets are kept at admission and corrected for
//!   the packets not yet departed when read (`counters_at`).
//!
//! A link into a router that forwards everything it brings to one other
//! link, and that nothing else feeds (`sim::transit`), hands its packets on
//! when it admits them: each is offered to that next link at once, at the
//! instant it would reach the router (`Admitted::transit`). One that has to
//! wait for the transmitter keeps an entry here, *forwarded*: it keeps its
//! place in the FIFO (the queue reads it) but no event takes it out — it
//! leaves when a later admission or arrival finds it past
//! (`prune_forwarded`); one that starts at once takes none. Only the
//! unforwarded entries, which are the FIFO's tail (forwarding stops at the
//! run's end, and arrivals are in order), have their arrival in the event
//! queue, the first of them at a time.
//!
//! At one instant, the link's own departures come before anything else: a
//! packet offered at the very nanosecond the transmitter finishes finds it
//! free, and a snapshot at that instant counts the departure.
//!
//! A link with `jitter` J delivers each packet a uniform draw within ±J of
//! its delay after its departure, never before the packet ahead of it (the
//! user-space emulator's jitter, netem's without reordering). The wire then
//! takes `delay − J` (so a departure is still its arrival less the wire's
//! delay) and a `JitterLine` at the far end holds each packet for a draw in
//! [0, 2J): one more event per packet, on such links only.

use super::loss::LossProcess;
use super::queue::DropTailQueue;
use super::red::{Red, RedVerdict};
use super::{ChannelId, IfaceId, NodeId};
use crate::engine::time::serialisation_time;
use crate::engine::{EventKey, RandomStream, Ring, Time};
use crate::ids::PacketRef;
use std::collections::VecDeque;

crate::counters! {
    /// Counters of one link direction (cumulative since the start of the run).
    pub struct ChannelCounters {
        /// Packets and bytes that finished serialisation (including those then lost).
        pub tx_packets: u64,
        pub tx_bytes: u64,
        /// Packets refused by a full queue.
        pub queue_drops: u64,
        /// Packets lost on the wire by the loss model.
        pub loss_drops: u64,
        /// Packets RED marked Congestion Experienced instead of dropping.
        pub ecn_marks: u64,
        /// The number of packets waiting for the transmitter, integrated
        /// over time (packet·ns): over an interval, the mean number
        /// waiting; over the packets sent in it, their mean queueing delay
        /// (Little's law). Added for a packet's whole wait when it is
        /// admitted; `counters_at` takes the part still to come back out.
        pub queue_wait_ns: u64,
    }
}

/// A packet admitted to a link and not yet at its far end (24 bytes: a link
/// holds as many as its queue and its bandwidth-delay product). When its
/// serialisation starts is not kept: it is the departure less the
/// serialisation time of its size (`advance`).
#[derive(Clone, Copy, Debug)]
pub struct InLink {
    /// Its arrival's place in the order of events (time = departure + delay).
    pub arrival: EventKey,
    pub packet: PacketRef,
    /// Size in bytes; in the top bit whether the loss model (or an outage)
    /// took it (then it is dropped, not delivered), in the next whether that
    /// drop has been counted already (`Simulation::count_wire_losses`), in
    /// the next whether it was forwarded at admission (see the module's
    /// notes: then its packet is no longer this link's to read).
    size_lost: u32,
}

impl InLink {
    const LOST: u32 = 1 << 31;
    const COUNTED: u32 = 1 << 30;
    const FORWARDED: u32 = 1 << 29;
    pub fn size(&self) -> u32 {
        self.size_lost & !(Self::LOST | Self::COUNTED | Self::FORWARDED)
    }
    pub fn forwarded(&self) -> bool {
        self.size_lost & Self::FORWARDED != 0
    }
    pub fn lost(&self) -> bool {
        self.size_lost & Self::LOST != 0
    }
    pub fn counted(&self) -> bool {
        self.size_lost & Self::COUNTED != 0
    }
    pub fn set_counted(&mut self) {
        self.size_lost |= Self::COUNTED;
    }
}

/// A link direction. Its fields are laid out by hand, by how often a packet
/// reads them: a packet's admission touches the first three cache lines
/// (the FIFO, the transmitter, the counters, the loss process), its arrival
/// the first and the last (the FIFO; the lost count, the node it reaches),
/// and a direction is 256 bytes aligned to a line, so no more than that. (Left to the
/// compiler, the same fields measured 2 % slower at N=10: bench/RESULTS.md,
/// 2026-12-06.)
#[repr(C, align(64))]
pub struct Channel {
    // -- line 1: the FIFO
    /// Every packet admitted and not yet arrived, in order: waiting, on the
    /// transmitter, on the wire.
    pub in_link: Ring<InLink>,
    /// Occupancy of the waiting packets: the last `queue.len()` entries of
    /// `in_link`, as of the last `advance`.
    pub queue: DropTailQueue,
    // -- line 2: the transmitter
    /// When the transmitter finishes the last packet admitted (≤ now: idle).
    pub busy_until: Time,
    pub delay: Time,
    /// Serialisation times of recent sizes, direct-mapped on (size / 4) mod 4:
    /// a division costs more than the rest of an admission, and a link sees
    /// few sizes (data and ACKs). Sizes and times in two arrays, not pairs:
    /// 48 bytes instead of 64 with the pairs' padding. (A packet touches a
    /// link's state on every hop; the smaller it is, the more links stay in
    /// the L1 cache: bench/RESULTS.md, 2026-12-06.)
    pub ser_times: [Time; 4],
    pub ser_sizes: [u32; 4],
    // -- line 3: what happens to the packet at admission
    /// Counted when a packet is admitted, as if it had already departed:
    /// read them through `counters_at`.
    pub counters: ChannelCounters,
    /// Active queue management in front of the FIFO (its limit still
    /// holds); boxed, so that a link without it (most) keeps one word, not
    /// 96 bytes: a datacenter run has thousands of links.
    pub red: Option<Box<Red>>,
    /// Random loss and outages (a cut cable, a failed path): a packet that
    /// finishes serialisation lost is counted as a loss drop. One word on a
    /// link without either.
    pub loss: LossProcess,
    // -- line 4: what its arrival reads, then what the hot path reads
    // rarely or never
    /// Lost packets among `in_link` (so that reading the counters can skip
    /// the links that hold none).
    pub lost_in_link: u32,
    pub to: NodeId,
    /// Bytes the link layer adds to every packet on the wire (Ethernet: 38
    /// with preamble, header, FCS and the inter-frame gap); they take
    /// transmission time, not queue room.
    pub framing_bytes: u32,
    pub id: ChannelId,
    pub from: NodeId,
    /// Interface at the receiving end.
    pub to_iface: IfaceId,
    pub rate_bps: u64,
    /// "a->b" style name for reports.
    pub name: String,
    /// Delivery-time jitter, if any (then `delay` is the wire's, the
    /// nominal delay less the jitter).
    pub jitter: Option<Box<JitterLine>>,
}

/// The far end of a link with jitter: packets off the wire wait a uniform
/// draw in [0, 2·jitter), in order.
pub struct JitterLine {
    pub jitter: Time,
    rng: RandomStream,
    /// Release time of the last packet taken in (none may leave before it).
    last: Time,
    held: VecDeque<(Time, PacketRef)>,
}

impl JitterLine {
    pub fn new(jitter: Time, rng: RandomStream) -> Self {
        Self {
            jitter,
            rng,
            last: 0,
            held: VecDeque::new(),
        }
    }

    /// Take in a packet off the wire at `now`; its release time when it is
    /// the only packet held (the event to schedule; the others follow it).
    pub fn hold(&mut self, now: Time, packet: PacketRef) -> Option<Time> {
        let wait = (self.rng.uniform() * (2 * self.jitter) as f64) as Time;
        let at = now.saturating_add(wait).max(self.last);
        self.last = at;
        self.held.push_back((at, packet));
        (self.held.len() == 1).then_some(at)
    }

    /// The first packet held reached the far end: it, and the next release.
    pub fn release(&mut self) -> (PacketRef, Option<Time>) {
        let (_, packet) = self.held.pop_front().expect("a release without a packet held");
        (packet, self.held.front().map(|&(at, _)| at))
    }
}

/// What happened to a packet offered to a channel.
pub enum Offer {
    /// Refused by a full queue or RED.
    Dropped,
    Admitted {
        /// RED marked it Congestion Experienced.
        marked: bool,
        /// Its arrival, when it is the only packet in the link (the others
        /// arrive behind the first): the event to schedule.
        schedule: Option<EventKey>,
        /// When its serialisation starts and ends.
        start: Time,
        depart: Time,
        /// Forwarded at admission (`offer`'s `forward_before`): when it
        /// reaches the far end, and whether the wire loses it on the way.
        transit: Option<(Time, bool)>,
    },
}

impl Channel {
    #[inline]
    fn serialisation_time(&mut self, size: u32) -> Time {
        let slot = (size as usize >> 2) & 3;
        if self.ser_sizes[slot] != size {
            self.ser_sizes[slot] = size;
            self.ser_times[slot] = serialisation_time(size + self.framing_bytes, self.rate_bps);
        }
        self.ser_times[slot]
    }

    /// Serialisation time of a size, read from the cache where it is there
    /// (a packet waiting in the queue was sized at its admission).
    #[inline]
    fn serialisation_time_of(&self, size: u32) -> Time {
        let slot = (size as usize >> 2) & 3;
        if self.ser_sizes[slot] == size {
            self.ser_times[slot]
        } else {
            serialisation_time(size + self.framing_bytes, self.rate_bps)
        }
    }

    /// Bring the queue's occupancy to `now`: waiting packets whose
    /// serialisation has started leave it. A packet's start is its
    /// departure less its serialisation time (for one that waited, the
    /// departure of the packet admitted before it, which may have left the
    /// link or never entered it: see `offer`).
    #[inline]
    pub fn advance(&mut self, now: Time) {
        while !self.queue.is_empty() {
            let first = self.in_link[self.in_link.len() - self.queue.len()];
            if self.departure(&first) - self.serialisation_time_of(first.size()) > now {
                break;
            }
            self.queue.pop(first.size());
        }
    }

    /// Offer a packet at `now`; `ect` says it may be ECN-marked instead of
    /// dropped. An admitted packet takes its arrival's place in the order of
    /// events from `reserve` (given its arrival time). One that would reach
    /// the far end before `forward_before` (0 on a link that forwards
    /// nothing) is forwarded: its caller takes it on from there.
    #[inline]
    pub fn offer(
        &mut self,
        now: Time,
        packet: PacketRef,
        size: u32,
        ect: bool,
        forward_before: Time,
        reserve: impl FnOnce(Time) -> EventKey,
    ) -> Offer {
        if forward_before > 0 {
            self.prune_forwarded(now);
        }
        let mut marked = false;
        let start = if self.busy_until <= now {
            // The transmitter went idle at `busy_until`: every packet admitted
            // has started (no walk over them to find out), and RED's idle
            // time began then.
            self.queue.clear();
            if let Some(red) = &mut self.red {
                red.on_empty(self.busy_until);
            }
            now
        } else {
            self.advance(now);
            let verdict = match &mut self.red {
                Some(red) => red.on_arrival(now, self.queue.len(), ect),
                None => RedVerdict::Enqueue,
            };
            if verdict == RedVerdict::Drop || !self.queue.admits(size) {
                self.counters.queue_drops += 1;
                return Offer::Dropped;
            }
            self.queue.push(size);
            // (saturating, as `depart` below)
            self.counters.queue_wait_ns = self.counters.queue_wait_ns.saturating_add(self.busy_until - now);
            if verdict == RedVerdict::Mark {
                self.counters.ecn_marks += 1;
                marked = true;
            }
            self.busy_until
        };
        // (saturating: a queue of many packets on a very slow link may be
        // busy beyond the end of time; those never leave before the run ends)
        let depart = start.saturating_add(self.serialisation_time(size));
        self.busy_until = depart;
        self.counters.tx_packets += 1;
        self.counters.tx_bytes += size as u64;
        let lost = self.loss.lose_next(depart);
        let at = depart.saturating_add(self.delay);
        let forwarded = at < forward_before;
        if lost {
            self.counters.loss_drops += 1;
            // (a forwarded packet's loss is its caller's to count)
            self.lost_in_link += !forwarded as u32;
        }
        debug_assert!(size < InLink::FORWARDED, "packet sizes are checked far below 512 MiB");
        let arrival = if forwarded {
            EventKey::unscheduled(at)
        } else {
            reserve(at)
        };
        // A forwarded packet that starts at once takes no entry: it never
        // waits in the queue, its packet is the next link's, and it departs
        // before the run's end, the only time counters are read in a run
        // that forwards (`sim::transit`). Most forwarded packets are these.
        if forwarded && start == now {
            return Offer::Admitted {
                marked,
                schedule: None,
                start,
                depart,
                transit: Some((at, lost)),
            };
        }
        // the first unforwarded entry's arrival is the link's event (the
        // unforwarded entries are the FIFO's tail)
        let schedule = (!forwarded && self.in_link.back().is_none_or(InLink::forwarded)).then_some(arrival);
        self.in_link.push_back(InLink {
            arrival,
            packet,
            size_lost: size | if lost { InLink::LOST } else { 0 } | if forwarded { InLink::FORWARDED } else { 0 },
        });
        Offer::Admitted {
            marked,
            schedule,
            start,
            depart,
            transit: forwarded.then_some((at, lost)),
        }
    }

    /// The first unforwarded packet in the link reached the far end: take it
    /// out (with the forwarded ones ahead of it), with the place of the next
    /// arrival, if any.
    #[inline]
    pub fn arrive(&mut self) -> (InLink, Option<EventKey>) {
        loop {
            let head = self.take_front();
            if head.forwarded() {
                continue;
            }
            self.lost_in_link -= head.lost() as u32;
            // (the entries behind an unforwarded one are unforwarded)
            return (head, self.in_link.front().map(|n| n.arrival));
        }
    }

    /// Take the link's first entry out.
    #[inline]
    fn take_front(&mut self) -> InLink {
        let head = self
            .in_link
            .pop_front()
            .expect("an arrival without a packet in the link");
        // The queue's count is brought up to date only where it is read
        // (`advance`); the head, long started, must only leave it, if it was
        // still counted (waiting at the last offer, none since). Where no
        // packet is waiting this is one well-predicted test, where a walk
        // was a branch that each link's arrivals took differently.
        if self.queue.len() > self.in_link.len() {
            self.queue.pop(head.size());
        }
        head
    }

    /// Forwarded entries that have reached the far end by `now` leave.
    #[inline]
    fn prune_forwarded(&mut self, now: Time) {
        while self
            .in_link
            .front()
            .is_some_and(|f| f.forwarded() && f.arrival.time() <= now)
        {
            self.take_front();
        }
    }

    /// The packet `k` places behind the head, if the link holds one.
    #[inline]
    pub fn behind_head(&self, k: usize) -> Option<PacketRef> {
        self.in_link.get(k).map(|n| n.packet)
    }

    /// Ask the CPU to load the link's entry `k` places behind the head.
    #[inline]
    pub fn prefetch_entry(&self, k: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(e) = self.in_link.get(k) {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: a prefetch is a hint with no architectural effect and
            // never faults.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(e as *const InLink as *const i8) }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = k;
    }

    /// When a packet in the link finishes serialisation.
    pub fn departure(&self, p: &InLink) -> Time {
        p.arrival.time() - self.delay
    }

    /// The jitter the link was given (0: none).
    pub fn jitter(&self) -> Time {
        self.jitter.as_ref().map_or(0, |j| j.jitter)
    }

    /// The delay the link was given (the wire's plus the jitter's mean).
    pub fn nominal_delay(&self) -> Time {
        self.delay + self.jitter()
    }

    /// The counters as of `now`: packets that have not finished
    /// serialisation yet are taken back out, and the waits of those not yet
    /// started are counted up to `now` only.
    pub fn counters_at(&self, now: Time) -> ChannelCounters {
        let mut c = self.counters;
        for p in self.in_link.iter().rev() {
            let depart = self.departure(p);
            if depart <= now {
                break;
            }
            c.tx_packets -= 1;
            c.tx_bytes -= p.size() as u64;
            c.loss_drops -= p.lost() as u64;
            let start = depart - serialisation_time(p.size() + self.framing_bytes, self.rate_bps);
            // (a sum that saturated at admission stays saturated)
            if start > now && c.queue_wait_ns < u64::MAX {
                c.queue_wait_ns = c.queue_wait_ns.saturating_sub(start - now);
            }
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_direction_is_four_cache_lines() {
        // the layout above: an admission reads lines 1-3, an arrival lines 1 and 4
        assert_eq!(std::mem::size_of::<Channel>(), 256);
        assert_eq!(std::mem::align_of::<Channel>(), 64);
        assert_eq!(std::mem::offset_of!(Channel, busy_until), 64);
        assert_eq!(std::mem::offset_of!(Channel, counters), 128);
        assert!(std::mem::offset_of!(Channel, loss) < 192);
        assert_eq!(std::mem::offset_of!(Channel, lost_in_link), 192);
        assert!(std::mem::offset_of!(Channel, to) < 256);
        assert!(std::mem::offset_of!(Channel, jitter) < 256);
    }

    fn line(jitter: Time) -> JitterLine {
        JitterLine::new(jitter, RandomStream::new(1, "test"))
    }

    #[test]
    fn a_jitter_line_holds_each_packet_a_uniform_draw_below_twice_the_jitter() {
        // packets 10 ms apart, far more than the 2 ms span: independent
        // draws, uniform on [0, 2 ms): mean 1 ms, a tenth of them in each
        // tenth of the span
        let mut l = line(1_000_000);
        let n = 20_000u64;
        let mut waits = Vec::new();
        for k in 0..n {
            let now = k * 10_000_000;
            let at = l.hold(now, PacketRef(k as u32)).expect("alone in the line");
            let (p, next) = l.release();
            assert_eq!((p, next), (PacketRef(k as u32), None));
            assert!((now..now + 2_000_000).contains(&at));
            waits.push(at - now);
        }
        let mean = waits.iter().sum::<u64>() as f64 / n as f64;
        // the mean of n uniform draws: 1 ms ± 4.5 standard errors (0.577 ms / √n)
        assert!((mean - 1e6).abs() < 4.5 * 577_350.0 / (n as f64).sqrt(), "{mean}");
        let mut tenths = [0u64; 10];
        for w in &waits {
            tenths[(*w / 200_000) as usize] += 1;
        }
        assert!(tenths.iter().all(|&c| c.abs_diff(n / 10) < 300), "{tenths:?}");
    }

    #[test]
    fn a_jitter_line_keeps_packets_in_order() {
        // packets 10 µs apart through ±1 ms: most draws would overtake; none
        // leaves before the one ahead, and none later than its own latest
        // (now + 2 ms) or the one ahead's release
        let mut l = line(1_000_000);
        let mut releases = Vec::new();
        let mut ahead = 0;
        for k in 0..1000u64 {
            let now = k * 10_000;
            if let Some(at) = l.hold(now, PacketRef(k as u32)) {
                releases.push(at);
            }
            let at = l.held.back().unwrap().0;
            assert!(at >= ahead && at >= now && (at < now + 2_000_000 || at == ahead));
            ahead = at;
        }
        for k in 0..1000u32 {
            let (p, _) = l.release();
            assert_eq!(p, PacketRef(k));
        }
        assert!(!releases.is_empty());
    }
}
