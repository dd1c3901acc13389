//! Sorted, disjoint, merged byte ranges `[start, end)`. The sender's SACK
//! scoreboard (RFC 6675 §3: what the receiver reported holding above the
//! cumulative ACK) and the receiver's out-of-order queue are both one.

#[derive(Default, Debug)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    pub fn clear(&mut self) {
        self.ranges.clear();
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Add a range; returns how many bytes were not known before.
    pub fn add(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let covered_before: u64 = self.overlap(start, end);
        // Merge with every range that overlaps or touches [start, end).
        let first = self.ranges.partition_point(|r| r.1 < start);
        let mut last = first;
        let (mut s, mut e) = (start, end);
        while last < self.ranges.len() && self.ranges[last].0 <= end {
            s = s.min(self.ranges[last].0);
            e = e.max(self.ranges[last].1);
            last += 1;
        }
        self.ranges.splice(first..last, [(s, e)]);
        (end - start) - covered_before
    }

    /// Bytes of [start, end) already SACKed.
    pub fn overlap(&self, start: u64, end: u64) -> u64 {
        self.ranges
            .iter()
            .map(|&(s, e)| e.min(end).saturating_sub(s.max(start)))
            .sum()
    }

    /// Forget everything below `ack`.
    pub fn prune_below(&mut self, ack: u64) {
        let keep_from = self.ranges.partition_point(|r| r.1 <= ack);
        self.ranges.drain(..keep_from);
        if let Some(first) = self.ranges.first_mut() {
            first.0 = first.0.max(ack);
        }
    }

    pub fn is_sacked(&self, seq: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.1 <= seq);
        i < self.ranges.len() && self.ranges[i].0 <= seq
    }

    /// End of the highest SACKed range.
    pub fn highest(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1)
    }

    /// SACKed bytes and number of SACKed ranges strictly above `seq`.
    pub fn above(&self, seq: u64) -> (u64, usize) {
        let i = self.ranges.partition_point(|r| r.1 <= seq);
        let mut bytes = 0;
        for &(s, e) in &self.ranges[i..] {
            bytes += e - s.max(seq);
        }
        (bytes, self.ranges.len() - i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
