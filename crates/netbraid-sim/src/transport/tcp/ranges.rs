//! Sorted, disjoint, merged byte ranges `[start, end)`. The sender's SACK
//! scoreboard (RFC 6675 §3: what the receiver reported holding above the
//! cumulative ACK) and the receiver's out-of-order queue are both one.

#[derive(Default, Debug)]
pub struct RangeSet {
    /// The ranges from `head` on; those before it were pruned. Pruning moves
    /// `head` and the vector is compacted only now and then, because the
    /// queue can hold thousands of ranges (an MPTCP receiver's, with two
    /// subflows' data interleaved) and is pruned on almost every delivery.
    ranges: Vec<(u64, u64)>,
    head: usize,
    /// Bytes in all ranges, kept as they change: a sum a sender or receiver
    /// needs on every packet, which after a burst of losses would otherwise
    /// cost a pass over thousands of ranges.
    total: u64,
    /// Bytes below `mark.0`, kept as ranges are added and pruned and moved
    /// along with the mark (`below`): a prefix sum at a point that mostly
    /// moves up (a sender's HighRxt in recovery).
    mark: std::cell::Cell<(u64, u64)>,
}

impl RangeSet {
    pub fn is_empty(&self) -> bool {
        // (every range holds at least a byte)
        self.total == 0
    }

    /// The lowest range. (Pruning clears the vector when it removes the last
    /// live range, so a range lies at `head` whenever any is left; this and
    /// `last` ask every packet, without building the slice of `ranges`.)
    #[inline]
    pub fn first(&self) -> Option<&(u64, u64)> {
        debug_assert!(self.head < self.ranges.len() || self.ranges.is_empty());
        self.ranges.get(self.head)
    }

    /// The highest range.
    #[inline]
    pub fn last(&self) -> Option<&(u64, u64)> {
        debug_assert!(self.head < self.ranges.len() || self.ranges.is_empty());
        self.ranges.last()
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
        self.head = 0;
        self.total = 0;
        self.mark.set((0, 0));
    }

    /// Bytes in all ranges.
    pub fn bytes(&self) -> u64 {
        self.total
    }

    /// Bytes below `seq`. Cheap when `seq` is at or above the last point
    /// asked for (only the ranges between are counted) or near the bottom.
    pub fn below(&self, seq: u64) -> u64 {
        let (m, under) = self.mark.get();
        let under = if seq >= m {
            under + self.overlap(m, seq)
        } else if self.overlap_is_short(seq) {
            self.overlap(0, seq)
        } else {
            under - self.overlap(seq, m)
        };
        self.mark.set((seq, under));
        under
    }

    /// Whether few ranges lie below `seq` (counting up from the bottom is cheap).
    fn overlap_is_short(&self, seq: u64) -> bool {
        self.ranges().iter().take(8).any(|r| r.1 >= seq)
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges[self.head..]
    }

    /// Add a range; returns how many bytes were not known before.
    pub fn add(&mut self, start: u64, end: u64) -> u64 {
        self.add_with(start, end, |_, _| {})
    }

    /// Add a range, handing `new` each part of it that was not known
    /// before, in order; returns how many bytes those parts hold.
    pub fn add_with(&mut self, start: u64, end: u64, mut new: impl FnMut(u64, u64)) -> u64 {
        if start >= end {
            return 0;
        }
        // The usual case (data arriving in order above a hole): a range after
        // every other, or one that extends the last.
        if let Some(&(s, e)) = self.last().filter(|&&(_, e)| start >= e) {
            new(start, end);
            if start == e {
                *self.ranges.last_mut().expect("not empty") = (s, end);
            } else {
                self.ranges.push((start, end));
            }
            self.total += end - start;
            let (m, under) = self.mark.get();
            if start < m {
                self.mark.set((m, under + end.min(m) - start));
            }
            return end - start;
        }
        // Merge with every range that overlaps or touches [start, end): only
        // those can hold bytes of it.
        let first = self.head + self.ranges().partition_point(|r| r.1 < start);
        let mut last = first;
        let (mut s, mut e) = (start, end);
        let mut covered_before = 0;
        let mut cursor = start; // below it, [start, end) is accounted for
        while last < self.ranges.len() && self.ranges[last].0 <= end {
            let (rs, re) = self.ranges[last];
            covered_before += re.min(end).saturating_sub(rs.max(start));
            if rs > cursor {
                new(cursor, rs.min(end));
            }
            cursor = cursor.max(re);
            s = s.min(rs);
            e = e.max(re);
            last += 1;
        }
        if cursor < end {
            new(cursor, end);
        }
        let added = (end - start) - covered_before;
        self.total += added;
        let (m, under) = self.mark.get();
        if start < m {
            // the new bytes below the mark: [start, min(end, m)) less what was there
            let span = end.min(m) - start;
            let had = covered_below(&self.ranges[first..last], start, end.min(m));
            self.mark.set((m, under + span - had));
        }
        match last - first {
            0 => self.ranges.insert(first, (s, e)),
            1 => self.ranges[first] = (s, e),
            _ => {
                self.ranges[first] = (s, e);
                self.ranges.drain(first + 1..last);
            }
        }
        added
    }

    /// Bytes of [start, end) already SACKed.
    pub fn overlap(&self, start: u64, end: u64) -> u64 {
        let live = self.ranges();
        let first = live.partition_point(|r| r.1 <= start);
        live[first..]
            .iter()
            .take_while(|r| r.0 < end)
            .map(|&(s, e)| e.min(end).saturating_sub(s.max(start)))
            .sum()
    }

    /// Forget everything below `ack`.
    #[inline]
    pub fn prune_below(&mut self, ack: u64) {
        // usually nothing lies below it (a receiver's hole still open, a
        // sender's scoreboard empty): callers on every packet pay a compare
        if self.first().is_some_and(|r| r.0 < ack) {
            self.prune_some_below(ack);
        }
    }

    fn prune_some_below(&mut self, ack: u64) {
        let gone = self.ranges().partition_point(|r| r.1 <= ack);
        let mut removed: u64 = self.ranges()[..gone].iter().map(|(s, e)| e - s).sum();
        self.head += gone;
        if self.head == self.ranges.len() {
            self.clear();
        } else {
            let first = &mut self.ranges[self.head];
            removed += ack.saturating_sub(first.0).min(first.1 - first.0);
            first.0 = first.0.max(ack);
            self.total -= removed;
            // everything removed lay below `ack`; what lay below the mark goes too
            let (m, under) = self.mark.get();
            self.mark.set(if ack >= m { (m, 0) } else { (m, under - removed) });
            if self.head >= 64 && self.head * 2 >= self.ranges.len() {
                self.ranges.drain(..self.head);
                self.head = 0;
            }
        }
    }

    pub fn is_sacked(&self, seq: u64) -> bool {
        // (data arriving in order above a hole lies at or past the last range)
        if self.last().is_none_or(|r| r.1 <= seq) {
            return false;
        }
        let live = self.ranges();
        let i = live.partition_point(|r| r.1 <= seq);
        i < live.len() && live[i].0 <= seq
    }

    /// The first byte at or above `seq` that no range covers (ranges are
    /// merged, so at most one is jumped).
    pub fn first_gap_from(&self, seq: u64) -> u64 {
        let live = self.ranges();
        let i = live.partition_point(|r| r.1 <= seq);
        if i < live.len() && live[i].0 <= seq {
            live[i].1
        } else {
            seq
        }
    }

    /// The last byte below `seq` that no range covers, if any is at or above `floor`.
    pub fn last_gap_below(&self, seq: u64, floor: u64) -> Option<u64> {
        let live = self.ranges();
        let i = live.partition_point(|r| r.1 < seq);
        let top = if i < live.len() && live[i].0 < seq {
            live[i].0
        } else {
            seq
        };
        (top > floor).then(|| top - 1)
    }

    /// End of the highest SACKed range.
    pub fn highest(&self) -> Option<u64> {
        self.last().map(|r| r.1)
    }

    /// SACKed bytes and number of SACKed ranges strictly above `seq`.
    pub fn above(&self, seq: u64) -> (u64, usize) {
        let live = self.ranges();
        if live.first().is_none_or(|r| r.0 >= seq) {
            return (self.total, live.len());
        }
        let i = live.partition_point(|r| r.1 <= seq);
        let mut bytes = 0;
        for &(s, e) in &live[i..] {
            bytes += e - s.max(seq);
        }
        (bytes, live.len() - i)
    }
}

/// Bytes of [a, b) that `ranges` cover.
fn covered_below(ranges: &[(u64, u64)], a: u64, b: u64) -> u64 {
    ranges.iter().map(|&(s, e)| e.min(b).saturating_sub(s.max(a))).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The running sums agree with counting the ranges, through adds,
    /// merges, prunes and a mark moving both ways.
    #[test]
    fn running_sums_match_the_ranges() {
        let mut rng = crate::engine::RandomStream::new(7, "ranges");
        let mut sb = RangeSet::default();
        let mut floor = 0;
        for _ in 0..20_000 {
            let r = rng.uniform();
            if r < 0.6 {
                let start = floor + (rng.uniform() * 10_000.0) as u64;
                sb.add(start, start + 1 + (rng.uniform() * 300.0) as u64);
            } else if r < 0.65 {
                floor += (rng.uniform() * 500.0) as u64;
                sb.prune_below(floor);
            } else {
                let at = floor + (rng.uniform() * 11_000.0) as u64;
                assert_eq!(sb.below(at), sb.overlap(0, at), "below({at})");
            }
            let sum: u64 = sb.ranges().iter().map(|(s, e)| e - s).sum();
            assert_eq!(sb.bytes(), sum);
            assert_eq!(sb.above(floor), (sum, sb.ranges().len()));
        }
    }

    #[test]
    fn gaps_next_to_ranges() {
        let mut sb = RangeSet::default();
        sb.add(10, 20);
        sb.add(30, 40);
        assert_eq!(sb.first_gap_from(5), 5);
        assert_eq!(sb.first_gap_from(10), 20);
        assert_eq!(sb.first_gap_from(19), 20);
        assert_eq!(sb.first_gap_from(20), 20);
        assert_eq!(sb.first_gap_from(35), 40);
        assert_eq!(sb.last_gap_below(40, 0), Some(29));
        assert_eq!(sb.last_gap_below(45, 0), Some(44));
        assert_eq!(sb.last_gap_below(20, 0), Some(9));
        assert_eq!(sb.last_gap_below(20, 10), None);
        assert_eq!(sb.last_gap_below(25, 0), Some(24));
    }

    #[test]
    fn merges_and_counts_new_bytes() {
        let mut sb = RangeSet::default();
        assert_eq!(sb.add(10, 20), 10);
        assert_eq!(sb.add(30, 40), 10);
        assert_eq!(sb.add(15, 35), 10); // only 20..30 is new
        assert_eq!(sb.ranges(), &[(10, 40)]);
        assert_eq!(sb.add(40, 50), 10); // touching ranges merge
        assert_eq!(sb.ranges(), &[(10, 50)]);
    }

    #[test]
    fn prune_and_query() {
        let mut sb = RangeSet::default();
        sb.add(10, 20);
        sb.add(30, 40);
        sb.add(50, 60);
        assert!(sb.is_sacked(35) && !sb.is_sacked(25) && !sb.is_sacked(40));
        assert_eq!(sb.above(25), (20, 2));
        assert_eq!(sb.above(15), (25, 3));
        sb.prune_below(35);
        assert_eq!(sb.ranges(), &[(35, 40), (50, 60)]);
        assert_eq!(sb.highest(), Some(60));
        assert_eq!(sb.overlap(0, 100), 15);
        assert_eq!(sb.overlap(38, 55), 7);
        sb.prune_below(60);
        assert!(sb.is_empty());
    }

    /// Against a byte-by-byte model: random adds and prunes, many ranges
    /// (the pruned front is compacted now and then).
    #[test]
    fn matches_a_set_of_bytes() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut sb = RangeSet::default();
        let mut bytes = std::collections::BTreeSet::new();
        let mut floor = 0u64;
        for step in 0..20_000 {
            if step % 50 == 49 {
                floor += rng.gen_range(0..40);
                sb.prune_below(floor);
                bytes.retain(|&b| b >= floor);
            } else {
                let start = floor + rng.gen_range(0..2_000);
                let end = start + rng.gen_range(0..6);
                let new = (start..end).filter(|b| !bytes.contains(b)).count() as u64;
                assert_eq!(sb.overlap(start, end), (end - start) - new);
                let mut parts = Vec::new();
                assert_eq!(sb.add_with(start, end, |s, e| parts.push((s, e))), new);
                let listed: Vec<u64> = parts.iter().flat_map(|&(s, e)| s..e).collect();
                let expected: Vec<u64> = (start..end).filter(|b| !bytes.contains(b)).collect();
                assert_eq!(listed, expected, "the new parts of [{start}, {end})");
                bytes.extend(start..end);
            }
            let probe = floor + rng.gen_range(0..2_000);
            assert_eq!(sb.is_sacked(probe), bytes.contains(&probe));
        }
        let mut expect = Vec::new();
        for &b in &bytes {
            match expect.last_mut() {
                Some((_, e)) if *e == b => *e += 1,
                _ => expect.push((b, b + 1)),
            }
        }
        assert_eq!(sb.ranges(), &expect[..]);
    }
}
