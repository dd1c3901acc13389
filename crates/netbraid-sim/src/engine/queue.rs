//! The event queue: a binary heap keyed by (time, insertion sequence).
//!
//! The sequence number breaks ties in insertion order, so two events at the
//! same nanosecond always run in the order they were scheduled: the run is
//! deterministic without any care from the caller.

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
    /// Time in the high 64 bits, sequence in the low 64: one integer compare.
    #[inline]
    fn packed(&self) -> u128 {
        ((self.time as u128) << 64) | self.seq as u128
    }
}

/// A binary min-heap with the keys and the events in two arrays: sifting
/// compares and moves keys in a dense array and moves each event once
/// ("hole" sifting), which is what the event loop spends its time on.
pub struct EventQueue<E> {
    /// Time in the high 64 bits, sequence in the low 64: one integer compare.
    keys: Vec<u128>,
    events: Vec<E>,
    next_seq: u64,
    now: Time,
    executed: u64,
    /// The root is the event `pop` last returned, not yet removed (see `pop`).
    root_spent: bool,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        Self {
            keys: Vec::with_capacity(1024),
            events: Vec::with_capacity(1024),
            next_seq: 0,
            now: 0,
            executed: 0,
            root_spent: false,
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
        self.keys.len() - self.root_spent as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedule `event` at absolute time `at`. Scheduling in the past is a
    /// logic error of the caller; such an event runs "now" to keep time monotone.
    pub fn schedule(&mut self, at: Time, event: E) {
        let key = self.reserve(at);
        self.schedule_reserved(key, event);
    }

    /// Take the place in the order that an event scheduled now at `at`
    /// would have, without putting anything in the heap yet. Events that
    /// happen in a known order (arrivals on one link) wait outside the heap
    /// with their place, and enter it one at a time: the heap stays small
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

    /// Schedule `event` in the place `key` reserved.
    pub fn schedule_reserved(&mut self, key: EventKey, event: E) {
        debug_assert!(key.time >= self.now, "a reserved place already passed");
        let key = key.packed();
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

    /// Time of the next event, if any.
    pub fn peek_time(&mut self) -> Option<Time> {
        self.settle();
        self.keys.first().map(|&k| (k >> 64) as Time)
    }

    /// Remove the earliest event and advance the clock to it.
    ///
    /// The event stays at the root, marked spent, until the queue is next
    /// used: most events schedule one more as they run (an arrival, the next
    /// arrival on its link), and that one then takes the root's place with a
    /// single sift down, instead of a sift down to remove the root and a sift
    /// up to insert. The order of events is the same either way: it is the
    /// order of the keys, whatever the heap's layout.
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.settle();
        let key = *self.keys.first()?;
        self.root_spent = true;
        self.now = (key >> 64) as Time;
        self.executed += 1;
        Some((self.now, self.events[0]))
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
