//! Which subflow carries the next chunk of data.
//!
//! - `Default`: Linux upstream's (`mptcp_subflow_get_send`, kernels 5.x–6.x):
//!   among active subflows that can queue more, the one whose queued data
//!   (in flight and unsent) drains soonest at its pacing rate
//!   (cwnd / srtt × 2 in slow start, × 1.2 after, as `sk_pacing_rate`);
//!   the chosen subflow takes a burst of up to 64 KB (`MPTCP_SEND_BURST_SIZE`)
//!   that waits in its own
//!   queue if its cwnd is full, handed over in pieces of a 32 KB page
//!   fragment (`MptcpSender::upstream_chunk`). A burst lasts one push: the
//!   next ACK's push picks afresh (since Linux 6.5; 5.10 to 6.4 went on with
//!   the last subflow while its burst lasted, `msk->last_snd`). "Can queue more" is
//!   Linux's `sk_stream_memory_free`: the subflow's queued data is below
//!   its send buffer (`Candidate::limit`), whatever its cwnd, so a subflow
//!   slowed by loss can hold much of the connection's window.
//! - `MinRtt`: the out-of-tree kernel's default (`mptcp_sched.c`): among
//!   subflows with room in their cwnd, the lowest smoothed RTT, one segment
//!   at a time; nothing is queued into a full subflow. A subflow without an
//!   RTT sample yet counts as 0 (it is tried first).
//! - `RoundRobin`: the out-of-tree `mptcp_rr.c` with its defaults: one
//!   segment to each subflow with room in turn.
//! - `Redundant`: the out-of-tree `mptcp_redundant.c`: every segment on
//!   every subflow, each subflow taking the oldest data not yet DATA_ACKed
//!   that it has not carried when its cwnd has room (lowest RTT first); the
//!   receiver keeps the first copy. Latency for throughput: the connection
//!   gets about what its best path could carry alone.
//!
//! All skip subflows that are not usable (still joining, or failed as the
//! connection's `Reinjection` policy says: stale for upstream's, in RTO
//! recovery for the out-of-tree kernel's), and use backup subflows only
//! when no active one is usable, not merely when it is full.
//! The default scheduler waits when its soonest-draining subflow cannot
//! queue more, rather than falling back to a slower one (as Linux).

use serde::Deserialize;

use crate::engine::Time;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheduler {
    #[default]
    Default,
    MinRtt,
    RoundRobin,
    Redundant,
}

/// Linux's MPTCP_SEND_BURST_SIZE.
pub const SEND_BURST: u64 = 65428;

/// What a scheduler sees of one subflow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate {
    pub usable: bool,
    pub backup: bool,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub srtt: Option<Time>,
    /// In flight + waiting unsent.
    pub queued: u64,
    pub unsent: u64,
    /// New bytes its cwnd would let go now (beyond those waiting).
    pub room: u64,
    pub mss: u64,
    /// Most it may hold queued (in flight + unsent): its send buffer.
    pub limit: u64,
}

impl Scheduler {
    /// The subflow for the next chunk and how many bytes it may take (a
    /// burst for the default scheduler, one segment otherwise), or None if
    /// no subflow can take data now. `last` is the subflow picked
    /// before (round-robin's position).
    pub fn pick(&self, subflows: &[Candidate], last: usize, exclude: Option<usize>) -> Option<(usize, u64)> {
        match self {
            Scheduler::Default => pick_default(subflows, exclude),
            Scheduler::MinRtt | Scheduler::Redundant => {
                let tier = in_tier(subflows, exclude);
                subflows
                    .iter()
                    .enumerate()
                    .filter(|&(i, c)| tier(i, c) && has_room(c))
                    .min_by_key(|(_, c)| c.srtt.unwrap_or(0))
                    .map(|(i, c)| (i, c.mss))
            }
            Scheduler::RoundRobin => {
                let n = subflows.len();
                let tier = in_tier(subflows, exclude);
                (1..=n)
                    .map(|k| (last + k) % n)
                    .find(|&i| tier(i, &subflows[i]) && has_room(&subflows[i]))
                    .map(|i| (i, subflows[i].mss))
            }
        }
    }
}

/// Whether a subflow is of the tier in use, and not excluded. Backups are a
/// tier apart: used only when no active subflow is usable at all (not
/// merely full), as both kernels do.
fn in_tier(subflows: &[Candidate], exclude: Option<usize>) -> impl Fn(usize, &Candidate) -> bool {
    let backup = !subflows.iter().any(|c| c.usable && !c.backup);
    move |i, c| c.usable && c.backup == backup && Some(i) != exclude
}

/// The default scheduler: the soonest-draining subflow of the tier in use
/// (the first of equals); if it cannot queue more, wait for it (Linux does
/// not fall back to a slower subflow). Backups are a tier apart, used only
/// when no active subflow is usable at all (not merely full). One pass: this
/// runs on every ACK.
fn pick_default(subflows: &[Candidate], exclude: Option<usize>) -> Option<(usize, u64)> {
    // Whichever it picks must have room in its send buffer: if none has, no
    // need to rank them (the usual case once an ACK's room has been filled).
    if !subflows.iter().any(|c| c.usable && c.queued < c.limit) {
        return None;
    }
    let exclude = exclude.unwrap_or(usize::MAX);
    let mut any_active = false;
    // the soonest-draining active and backup subflows (index, linger)
    let (mut active, mut backup) = ((usize::MAX, 0.0), (usize::MAX, 0.0));
    for (i, c) in subflows.iter().enumerate() {
        if !c.usable {
            continue;
        }
        any_active |= !c.backup;
        if i == exclude {
            continue;
        }
        let l = linger(c);
        let best = if c.backup { &mut backup } else { &mut active };
        if best.0 == usize::MAX || l < best.1 {
            *best = (i, l);
        }
    }
    let i = if any_active { active.0 } else { backup.0 };
    (i != usize::MAX && can_queue(&subflows[i])).then_some((i, SEND_BURST))
}

/// The default scheduler may queue a chunk on the subflow: its send buffer
/// has room, and what waits unsent is whole segments.
pub fn can_queue(c: &Candidate) -> bool {
    c.queued < c.limit && c.unsent.is_multiple_of(c.mss)
}

/// Room in the cwnd for a whole segment, with nothing waiting unsent.
fn has_room(c: &Candidate) -> bool {
    c.room >= c.mss && c.unsent == 0
}

/// Time to drain a subflow's queued data at its pacing rate (ns·bytes
/// units cancel: queued × srtt / (ratio × cwnd)).
fn linger(c: &Candidate) -> f64 {
    let ratio = pacing_ratio(c);
    // (every value is far below 2^63: through i64 the conversion is one
    // instruction, and exact as u64's)
    let srtt = c.srtt.unwrap_or(0).max(1) as i64 as f64;
    c.queued as i64 as f64 * srtt / (ratio * c.cwnd.max(1) as i64 as f64)
}

/// Linux's pacing rate over cwnd / srtt (`sk_pacing_rate`): × 2 in slow
/// start, × 1.2 after.
pub fn pacing_ratio(c: &Candidate) -> f64 {
    if c.cwnd < c.ssthresh / 2 {
        2.0
    } else {
        1.2
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MILLISECOND;

    fn cand(srtt_ms: u64, room: u64) -> Candidate {
        Candidate {
            usable: true,
            backup: false,
            cwnd: 10_000,
            ssthresh: u64::MAX,
            srtt: Some(srtt_ms * MILLISECOND),
            queued: 10_000 - room,
            unsent: 0,
            room,
            mss: 1000,
            limit: 20_000,
        }
    }

    #[test]
    fn min_rtt_sends_every_segment_on_the_fast_subflow_while_it_has_room() {
        // protocols.md §5.5: 10 ms and 100 ms subflows, both with room.
        let subflows = [cand(100, 5000), cand(10, 5000)];
        assert_eq!(Scheduler::MinRtt.pick(&subflows, 0, None), Some((1, 1000)));
        // the fast one full: the slow one gets it
        let subflows = [cand(100, 5000), cand(10, 500)];
        assert_eq!(Scheduler::MinRtt.pick(&subflows, 0, None), Some((0, 1000)));
    }

    #[test]
    fn backups_only_when_no_active_subflow_is_usable() {
        let mut b = cand(1, 5000);
        b.backup = true;
        for s in [Scheduler::Default, Scheduler::MinRtt, Scheduler::RoundRobin] {
            assert_eq!(s.pick(&[cand(50, 5000), b], 0, None).unwrap().0, 0, "{s:?}");
            // full, not failed: wait rather than use the backup
            let mut full = cand(50, 0);
            full.unsent = full.cwnd;
            full.queued = full.limit;
            assert_eq!(s.pick(&[full, b], 0, None), None, "{s:?}");
            // failed (timed out): the backup takes over
            let failed = Candidate {
                usable: false,
                ..cand(50, 5000)
            };
            assert_eq!(s.pick(&[failed, b], 0, None).unwrap().0, 1, "{s:?}");
        }
    }

    #[test]
    fn round_robin_takes_turns_and_skips_full_subflows() {
        let subflows = [cand(10, 5000), cand(10, 5000), cand(10, 0)];
        assert_eq!(Scheduler::RoundRobin.pick(&subflows, 0, None).unwrap().0, 1);
        assert_eq!(Scheduler::RoundRobin.pick(&subflows, 1, None).unwrap().0, 0);
    }

    #[test]
    fn default_queues_beyond_the_cwnd_up_to_the_send_buffer() {
        // Linux checks the subflow's send buffer (sk_stream_memory_free), not
        // its cwnd: a subflow with a one-segment cwnd and nothing queued
        // takes a whole burst; one whose queue fills its buffer takes none.
        let mut slow = cand(10, 0);
        slow.cwnd = 1000;
        slow.queued = 0;
        assert_eq!(Scheduler::Default.pick(&[slow], 0, None), Some((0, SEND_BURST)));
        slow.queued = 15_000;
        slow.unsent = 14_000;
        assert!(
            can_queue(&slow),
            "14 segments waiting behind a 1-segment cwnd: still room in the buffer"
        );
        slow.queued = slow.limit;
        assert_eq!(Scheduler::Default.pick(&[slow], 0, None), None);
    }

    #[test]
    fn default_prefers_the_subflow_that_drains_soonest() {
        // same cwnd and queue, RTT 10 vs 40 ms: the 10 ms one drains 4x sooner
        let subflows = [cand(40, 5000), cand(10, 5000)];
        assert_eq!(Scheduler::Default.pick(&subflows, 0, None), Some((1, SEND_BURST)));
        // an empty queue drains at once, whatever the RTT
        let mut idle = cand(40, 10_000);
        idle.queued = 0;
        assert_eq!(Scheduler::Default.pick(&[cand(10, 5000), idle], 0, None).unwrap().0, 1);
    }
}
