//! The event queue, keyed by (time, insertion sequence).
//!
//! The sequence number breaks ties in insertion order, so two events at the
//! same nanosecond always run in the order they were scheduled: the run is
//! deterministic without any care from the caller.
//!
//! The obvious queue is one binary heap (`Heap`, which is still what holds
//! timers). Link arrivals, almost every event, go first to a sorted ring
//! (`Run`): a link's new head arrives a link delay from now, after nearly
//! everything already queued, and the packet right behind a head that just
//! arrived follows a serialisation time later, before nearly everything; at
//! either end a few moves put it in place and the next event is the ring's
//! first, where a heap would sift it through its levels with a branch per
//! level that the CPU cannot predict. An arrival that would fall deeper
//! inside goes to a heap of its own. Which structure holds an event changes
//! nothing but speed: the next event is the smallest key of the three, and
//! keys are unique.

use super::Time;

/// A place in the order of events: (time, sequence), as `reserve` gave it.
/// Two words rather than one u128, so that it packs at 8-byte alignment in
/// the structures that hold many (`net::link::InLink`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventKey {
    time: Time,
    seq: u64,
}

impl EventKey {
    pub fn time(&self) -> Time {
        self.time
    }
    /// A time with no place in the order of events: for what will never be
    /// scheduled (a link's forwarded entries), so that it takes no sequence
    /// number from those that will.
    pub fn unscheduled(time: Time) -> Self {
        Self { time, seq: u64::MAX }
    }
    /// Time in the high 64 bits, sequence in the low 64: one integer compare.
    #[inline]
    fn packed(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

/// A binary min-heap with the keys and the events in two arrays: sifting
/// compares and moves keys in a dense array and moves each event once
/// ("hole" sifting).
struct Heap<E> {
    /// Time in the high 64 bits, sequence in the low 64: one integer compare.
    keys: Vec<u128>,
    events: Vec<E>,
    /// The root is the event `take_root` last returned, not yet removed:
    /// most events schedule one more as they run, and that one then takes
    /// the root's place with a single sift down, instead of a sift down to
    /// remove the root and a sift up to insert. The order of events is the
    /// same either way: it is the order of the keys, whatever the layout.
    root_spent: bool,
}

impl<E: Copy> Heap<E> {
    fn new() -> Self {
        Self {
            keys: Vec::with_capacity(1024),
            events: Vec::with_capacity(1024),
            root_spent: false,
        }
    }

    fn len(&self) -> usize {
        self.keys.len() - self.root_spent as usize
    }

    fn push(&mut self, key: u128, event: E) {
        if self.root_spent {
            self.root_spent = false;
            return self.replace_root(key, event);
        }
        // sift up: move parents down into the hole until the key fits
        let mut hole = self.keys.len();
        self.keys.push(key);
        self.events.push(event);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[hole] = self.keys[parent];
            self.events[hole] = self.events[parent];
            hole = parent;
        }
        self.keys[hole] = key;
        self.events[hole] = event;
    }

    /// The smallest key, `u128::MAX` if empty (no real key is: its sequence
    /// number would have to be 2^64 − 1).
    #[inline]
    fn min_key(&mut self) -> u128 {
        self.settle();
        self.keys.first().copied().unwrap_or(u128::MAX)
    }

    /// The root's event, leaving the root spent (see `root_spent`); only
    /// after `min_key` said the heap is not empty.
    #[inline]
    fn take_root(&mut self) -> E {
        self.root_spent = true;
        self.events[0]
    }

    /// Remove a spent root: the last entry takes its place.
    #[inline]
    fn settle(&mut self) {
        if !self.root_spent {
            return;
        }
        self.root_spent = false;
        let key = self.keys.pop().expect("a spent root is in the heap");
        let event = self.events.pop().expect("keys and events pair up");
        if !self.keys.is_empty() {
            self.replace_root(key, event);
        }
    }

    /// Put (key, event) at the root and sift it down.
    #[inline]
    fn replace_root(&mut self, key: u128, event: E) {
        let n = self.keys.len();
        let (keys, events) = (&mut self.keys[..n], &mut self.events[..n]);
        let mut hole = 0;
        loop {
            let left = 2 * hole + 1;
            if left >= n {
                break;
            }
            // The smaller child, chosen by arithmetic rather than a branch:
            // which child is smaller is a coin toss the CPU cannot predict.
            let child = if left + 1 < n {
                left + (keys[left + 1] < keys[left]) as usize
            } else {
                left
            };
            let least = keys[child];
            if least >= key {
                break;
            }
            keys[hole] = least;
            events[hole] = events[child];
            hole = child;
        }
        keys[hole] = key;
        events[hole] = event;
    }
}

/// How far from either end of the sorted run an arrival may be put (entries
/// moved to make room): further in, it goes to the heap.
const RUN_REACH: usize = 8;

/// Events in order of their keys, in a ring: a sorted run. Link arrivals
/// mostly fall near its ends — a new head of a link with the link's delay
/// ahead of it among the last events due, the next packet behind a head
/// that just arrived among the first — where a few moves put them in place
/// and taking the first is one step, where a heap sifts through its levels.
struct Run<E> {
    /// Keys and events, in two power-of-two rings of the same length
    /// (`mask` + 1): the search reads keys only.
    keys: Vec<u128>,
    events: Vec<E>,
    mask: usize,
    /// Index of the first (smallest) entry.
    head: usize,
    len: usize,
}

impl<E: Copy> Run<E> {
    fn new() -> Self {
        Self {
            keys: Vec::new(),
            events: Vec::new(),
            mask: 0,
            head: 0,
            len: 0,
        }
    }

    /// Ring index of the `i`-th entry.
    #[inline(always)]
    fn at(&self, i: usize) -> usize {
        (self.head + i) & self.mask
    }

    /// The smallest key, `u128::MAX` if empty.
    #[inline(always)]
    fn min_key(&self) -> u128 {
        if self.len == 0 {
            u128::MAX
        } else {
            self.keys[self.head]
        }
    }

    /// Take the first entry's event (the run is not empty).
    #[inline(always)]
    fn pop_front(&mut self) -> E {
        let e = self.events[self.head];
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
        e
    }

    /// Put (key, event) in order if that moves at most `RUN_REACH` entries;
    /// otherwise give it back.
    #[inline(always)]
    fn insert(&mut self, key: u128, event: E) -> Result<(), (u128, E)> {
        if self.len == self.keys.len() {
            self.grow(key, event);
        }
        let (n, head, mask) = (self.len, self.head, self.mask);
        // (slices of exactly the ring's length: an index masked by `mask` is
        // then known to be in bounds, and the moves below are not checked)
        let keys = &mut self.keys[..=mask];
        let events = &mut self.events[..=mask];
        let at = |i: usize| (head + i) & mask;
        if n == 0 || keys[at(n - 1)] < key {
            // after everything (a new head of a link: its delay ahead)
            (keys[at(n)], events[at(n)]) = (key, event);
        } else if key < keys[head] {
            // before everything (the next packet right behind a head)
            self.head = at(mask);
            (keys[self.head], events[self.head]) = (key, event);
        } else if n > RUN_REACH && keys[at(RUN_REACH)] > key {
            // at most RUN_REACH entries before it: move them down one
            let head = at(mask);
            self.head = head;
            let at = |i: usize| (head + i) & mask;
            let mut i = 0;
            while keys[at(i + 1)] < key {
                (keys[at(i)], events[at(i)]) = (keys[at(i + 1)], events[at(i + 1)]);
                i += 1;
            }
            (keys[at(i)], events[at(i)]) = (key, event);
        } else if n <= RUN_REACH || keys[at(n - 1 - RUN_REACH)] < key {
            // at most RUN_REACH entries after it: move them up one
            let mut i = n;
            while keys[at(i - 1)] > key {
                (keys[at(i)], events[at(i)]) = (keys[at(i - 1)], events[at(i - 1)]);
                i -= 1;
            }
            (keys[at(i)], events[at(i)]) = (key, event);
        } else {
            return Err((key, event));
        }
        self.len = n + 1;
        Ok(())
    }

    /// Double the rings (in order from index 0); the new slots are filled
    /// with (key, event) until used.
    #[cold]
    fn grow(&mut self, key: u128, event: E) {
        let cap = (2 * self.keys.len()).max(16);
        let (mut keys, mut events) = (Vec::with_capacity(cap), Vec::with_capacity(cap));
        for i in 0..self.len {
            keys.push(self.keys[self.at(i)]);
            events.push(self.events[self.at(i)]);
        }
        keys.resize(cap, key);
        events.resize(cap, event);
        (self.keys, self.events) = (keys, events);
        self.mask = cap - 1;
        self.head = 0;
    }
}

/// The event queue: link arrivals in a sorted run (`Run`), where they
/// mostly fall near its ends, or, falling deeper inside, in a heap of their
/// own; timers and the other one-off events in a second heap. The next event
/// is the smallest of the three firsts: the order is the order of the keys,
/// wherever an event waits.
pub struct EventQueue<E> {
    run: Run<E>,
    /// Arrivals that would fall deep inside the run.
    arrivals: Heap<E>,
    /// Everything scheduled with `schedule`: timers, starts, samples.
    others: Heap<E>,
    /// The smaller of the two heaps' first keys, kept while both heaps are
    /// settled (`None` after one gave up its root): nearly every event is
    /// the run's first, and this lets the pop compare it with one key
    /// instead of settling and reading both heaps each time.
    heaps_first: Option<u128>,
    next_seq: u64,
    now: Time,
    executed: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        Self {
            run: Run::new(),
            arrivals: Heap::new(),
            others: Heap::new(),
            heaps_first: Some(u128::MAX),
            next_seq: 0,
            now: 0,
            executed: 0,
        }
    }

    /// Current virtual time: the time of the last event popped.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Number of events popped so far.
    pub fn executed(&self) -> u64 {
        self.executed
    }

    pub fn len(&self) -> usize {
        self.run.len + self.arrivals.len() + self.others.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedule `event` at absolute time `at` (timers and other one-off
    /// events). Scheduling in the past is a logic error of the caller; such
    /// an event runs "now" to keep time monotone.
    pub fn schedule(&mut self, at: Time, event: E) {
        let key = self.reserve(at);
        self.push_other(key.packed(), event);
    }

    fn push_other(&mut self, key: u128, event: E) {
        self.others.push(key, event);
        self.heaps_first = self.heaps_first.map(|k| k.min(key));
    }

    /// Take the place in the order that an event scheduled now at `at`
    /// would have, without putting anything in the queue yet. Events that
    /// happen in a known order (arrivals on one link) wait outside the queue
    /// with their place, and enter it one at a time: the queue stays small
    /// and the order of events is exactly what scheduling them all would give.
    pub fn reserve(&mut self, at: Time) -> EventKey {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let at = at.max(self.now);
        let key = EventKey {
            time: at,
            seq: self.next_seq,
        };
        self.next_seq += 1;
        key
    }

    /// Schedule `event` in the place `key` reserved (a link's arrival).
    #[inline(always)]
    pub fn schedule_reserved(&mut self, key: EventKey, event: E) {
        debug_assert!(key.time >= self.now, "a reserved place already passed");
        debug_assert!(key.seq != u64::MAX, "an unscheduled key is never scheduled");
        if let Err((key, event)) = self.run.insert(key.packed(), event) {
            self.arrivals.push(key, event);
            self.heaps_first = self.heaps_first.map(|k| k.min(key));
        }
    }

    /// Time of the next event, if any.
    pub fn peek_time(&mut self) -> Option<Time> {
        let key = self
            .run
            .min_key()
            .min(self.arrivals.min_key())
            .min(self.others.min_key());
        (key != u128::MAX).then_some((key >> 64) as Time)
    }

    /// Remove the earliest event and advance the clock to it.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.pop_until(Time::MAX)
    }

    /// Remove the earliest event and advance the clock to it, if it is due
    /// by `until` (else leave it, and the clock, where they are).
    #[inline]
    pub fn pop_until(&mut self, until: Time) -> Option<(Time, E)> {
        let run = self.run.min_key();
        let heaps = match self.heaps_first {
            Some(k) => k,
            None => {
                let k = self.arrivals.min_key().min(self.others.min_key());
                self.heaps_first = Some(k);
                k
            }
        };
        let first = run.min(heaps);
        if first == u128::MAX || (first >> 64) as Time > until {
            return None;
        }
        let event = if run < heaps {
            self.run.pop_front()
        } else {
            // (both heaps are settled here: `heaps_first` was known)
            self.heaps_first = None;
            if self.arrivals.min_key() == first {
                self.arrivals.take_root()
            } else {
                self.others.take_root()
            }
        };
        self.now = (first >> 64) as Time;
        self.executed += 1;
        Some((self.now, event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_time_order() {
        let mut q = EventQueue::new();
        q.schedule(30, 'c');
        q.schedule(10, 'a');
        q.schedule(20, 'b');
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(order, vec![(10, 'a'), (20, 'b'), (30, 'c')]);
        assert_eq!(q.executed(), 3);
    }

    #[test]
    fn ties_break_by_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..100 {
            q.schedule(5, i);
        }
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn reserved_places_keep_the_order_of_scheduling() {
        // scheduling a, b, c at once, or reserving b's place and scheduling
        // it only after a ran, gives the same order
        let mut q = EventQueue::new();
        q.schedule(10, 'a');
        let b = q.reserve(20);
        q.schedule(20, 'c');
        assert_eq!(q.pop(), Some((10, 'a')));
        q.schedule_reserved(b, 'b');
        assert_eq!(q.pop(), Some((20, 'b')));
        assert_eq!(q.pop(), Some((20, 'c')));
    }

    #[test]
    fn pops_as_a_sorted_list_would() {
        // the oracle: every key pushed, sorted; pushes interleaved with pops
        // at or after the current time, as the simulator makes them
        let mut q = EventQueue::new();
        let mut rng = 0x9e3779b97f4a7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut expected = Vec::new();
        let mut got = Vec::new();
        for round in 0..20_000u64 {
            for _ in 0..(next() % 3) {
                let at = q.now() + next() % 5_000_000;
                let key = q.reserve(at);
                expected.push((key.packed(), round));
                q.schedule_reserved(key, round);
            }
            if next() % 2 == 0 {
                if let Some((t, e)) = q.pop() {
                    got.push((t, e));
                }
            }
        }
        while let Some(x) = q.pop() {
            got.push(x);
        }
        expected.sort();
        let expected: Vec<_> = expected.iter().map(|&(k, e)| ((k >> 64) as Time, e)).collect();
        assert_eq!(got, expected);
    }

    /// A random stream for the tests (xorshift; no dependency).
    fn stream(mut x: u64) -> impl FnMut() -> u64 {
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    #[test]
    fn links_and_timers_pop_as_a_sorted_list_would() {
        // What the simulator does: links whose new heads arrive a delay from
        // now (the run's back), heads followed closely by the next packet
        // (its front), arrivals in between (the arrivals' heap), and timers
        // (the other heap); enough of them at once that the ring wraps and
        // grows. The oracle: every key, sorted.
        let mut q = EventQueue::new();
        let mut next = stream(0x2545f4914f6cdd1d);
        let mut expected = Vec::new();
        let mut got = Vec::new();
        let mut most = 0;
        for round in 0..50_000u64 {
            let at = match next() % 8 {
                0..=2 => q.now() + 2_000_000 + next() % 1_000, // a new head
                3..=5 => q.now() + next() % 2_000,             // the packet behind
                6 => q.now() + next() % 2_000_000,             // anywhere
                _ => {
                    let at = q.now() + next() % 50_000_000; // a timer
                    let key = q.reserve(at);
                    expected.push((key.packed(), round));
                    q.push_other(key.packed(), round);
                    continue;
                }
            };
            let key = q.reserve(at);
            expected.push((key.packed(), round));
            q.schedule_reserved(key, round);
            most = most.max(q.run.len);
            if next() % 16 < 7 {
                got.extend(q.pop());
            }
        }
        assert!(most > 64, "the ring grew ({most} at most)");
        assert!(q.arrivals.len() > 0 && q.others.len() > 0, "every structure was used");
        while let Some(x) = q.pop() {
            got.push(x);
        }
        expected.sort();
        let expected: Vec<_> = expected.iter().map(|&(k, e)| ((k >> 64) as Time, e)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn the_run_places_each_arrival_near_its_ends() {
        let mut r: Run<u32> = Run::new();
        let k = |t: u128| t << 64;
        for t in [10, 20, 30] {
            assert!(r.insert(k(t), t as u32).is_ok()); // after everything
        }
        assert!(r.insert(k(5), 5).is_ok()); // before everything
        assert!(r.insert(k(25), 25).is_ok()); // near the back
        for t in 31..60 {
            assert!(r.insert(k(t), t as u32).is_ok());
        }
        assert!(r.insert(k(7), 7).is_ok()); // near the front, in a long run

        // deep inside a long run: given back for the heap
        assert_eq!(r.insert(k(40) + 1, 99), Err((k(40) + 1, 99)));
        let mut order = Vec::new();
        while r.len > 0 {
            order.push(r.pop_front());
        }
        let mut want = vec![5, 7, 10, 20, 25, 30];
        want.extend(31..60);
        assert_eq!(order, want);
    }

    #[test]
    fn pop_until_leaves_later_events_and_the_clock() {
        let mut q = EventQueue::new();
        q.schedule(10, 'a');
        let k = q.reserve(30);
        q.schedule_reserved(k, 'b');
        assert_eq!(q.pop_until(20), Some((10, 'a')));
        assert_eq!(q.pop_until(20), None);
        assert_eq!((q.now(), q.len()), (10, 1));
        assert_eq!(q.pop_until(30), Some((30, 'b')));
        assert!(q.is_empty());
    }

    #[test]
    fn clock_follows_popped_events() {
        let mut q = EventQueue::new();
        q.schedule(7, ());
        assert_eq!(q.now(), 0);
        q.pop();
        assert_eq!(q.now(), 7);
        q.schedule(7, ()); // same instant is allowed
        assert_eq!(q.pop(), Some((7, ())));
    }
}
