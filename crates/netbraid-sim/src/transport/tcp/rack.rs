//! RACK-TLP (RFC 8985): loss detection by time instead of by counting
//! duplicate ACKs, and tail loss probes.
//!
//! RACK remembers the most recently *sent* segment known delivered (ACKed or
//! SACKed) and its RTT; a segment sent before it that is still missing a
//! reordering window after that RTT is lost. So a lost retransmission is
//! found like any other loss (sent before something delivered later), and a
//! loss with too few segments after it for three duplicate ACKs is found
//! once anything sent later arrives. TLP sends one probe when a flight goes
//! quiet for about two round trips, so that a loss at the tail brings SACKs
//! (and RACK) instead of a retransmission timeout.
//!
//! The sender keeps per segment its last send time and whether it is marked
//! lost or has a retransmission in flight (`sender.rs`); this module keeps
//! RACK's and TLP's own state and rules.

use crate::engine::time::MILLISECOND;
use crate::engine::Time;

/// RFC 8985's WCDelAckT: the worst-case delayed-ACK time added to the probe
/// timeout when a single segment is in flight (its ACK may be delayed).
pub const WORST_CASE_DELAYED_ACK: Time = 200 * MILLISECOND;
/// Linux's floor under the probe timeout (`tcp_schedule_loss_probe`: 10 ms);
/// RFC 8985 sets none. Without it a 0.1 ms round trip would probe after
/// 0.2 ms of silence.
pub const MIN_PROBE_TIMEOUT: Time = 10 * MILLISECOND;
/// The probe timeout before any RTT sample (RFC 8985 §7.2; Linux's
/// TCP_TIMEOUT_INIT).
pub const PROBE_TIMEOUT_WITHOUT_RTT: Time = 1000 * MILLISECOND;

/// Linux's slack on its RACK reordering timer and on a probe timeout of
/// more than one segment (`TCP_TIMEOUT_MIN_US`, 2 ms), added before the
/// time is rounded up to the kernel's tick.
pub const LINUX_TIMER_SLACK: Time = 2 * MILLISECOND;

/// When a timer set at `now` to run `after` fires: at once (`tick` 0), or,
/// as a kernel timer counted in jiffies, at the boundary of the tick that
/// many whole ticks ahead (`after` rounded up to ticks, counted from the
/// tick now under way: Linux's `usecs_to_jiffies` and timer wheel).
pub fn tick_deadline(now: Time, after: Time, tick: Time) -> Time {
    if tick == 0 {
        return now + after;
    }
    (now / tick).saturating_add(after.div_ceil(tick)).saturating_mul(tick)
}

/// `t1, seq1` was sent after `t2, seq2` (the later end breaks a tie in time:
/// segments sent in one burst).
pub fn sent_after(t1: Time, seq1: u64, t2: Time, seq2: u64) -> bool {
    t1 > t2 || (t1 == t2 && seq1 > seq2)
}

/// RACK's state (RFC 8985 §6.1).
#[derive(Debug, Default)]
pub struct Rack {
    /// Send time and end of the most recently sent segment known delivered
    /// (RACK.xmit_ts, RACK.end_seq); None before the first delivery.
    pub latest: Option<(Time, u64)>,
    /// That segment's round trip (RACK.rtt).
    pub rtt: Time,
    /// Highest end of any delivered segment (RACK.fack).
    pub fack: u64,
    /// `fack` before the ACK being processed: a segment delivered by this
    /// ACK below it arrived after one sent later (reordering); below `fack`
    /// alone it may just have been held for a delayed ACK.
    prior_fack: u64,
    /// The most recently sent segment this ACK delivered: (send time, end, RTT).
    this_ack: Option<(Time, u64, Time)>,
    /// A segment was delivered below `fack` without having been sent again:
    /// the path reorders (RACK.reordering_seen).
    pub reordering_seen: bool,
    /// The reordering timer: when segments not yet lost (still inside the
    /// window) are to be looked at again.
    pub deadline: Option<Time>,
    /// D-SACK adaptation (RFC 8985 §6.2 step 4, as Linux's
    /// tcp_rack_update_reo_wnd): the window is `extra_steps` + 1 quarters
    /// of the minimum RTT; a D-SACK adds one, at most once a round trip
    /// (until snd_una passes `dsack_round`), and the widening lasts
    /// `persist` recoveries (16 from the last D-SACK).
    extra_steps: u32,
    dsack_round: Option<u64>,
    persist: u32,
}

/// Recoveries a widened reordering window outlasts (TCP_RACK_RECOVERY_THRESH).
const REORDERING_PERSIST: u32 = 16;

impl Rack {
    /// An ACK is about to report deliveries (`on_delivered`, then `end_ack`).
    pub fn begin_ack(&mut self) {
        self.prior_fack = self.fack;
        self.this_ack = None;
    }

    /// A segment sent (last) at `xmit_ts`, ending at `end`, was delivered
    /// (RFC 8985 §6.2 steps 2 and 3). `retransmitted`: it was sent more
    /// than once; its RTT is then ambiguous and is not used if shorter than
    /// the connection's minimum RTT (the ACK may be for the original).
    pub fn on_delivered(&mut self, now: Time, xmit_ts: Time, end: u64, retransmitted: bool, min_rtt: Option<Time>) {
        let rtt = now.saturating_sub(xmit_ts);
        if end < self.prior_fack && !retransmitted {
            self.reordering_seen = true;
        }
        self.fack = self.fack.max(end);
        if retransmitted && min_rtt.is_some_and(|m| rtt < m) {
            return;
        }
        if self.this_ack.is_none_or(|(t, e, _)| sent_after(xmit_ts, end, t, e)) {
            self.this_ack = Some((xmit_ts, end, rtt));
        }
    }

    /// The ACK's deliveries are all in: RACK.rtt is the RTT of the most
    /// recently sent segment it delivered (RFC 8985 walks them in send
    /// order, so the last sets it), and RACK's segment moves to that one if
    /// it was sent after RACK's.
    pub fn end_ack(&mut self) {
        if let Some((t, e, rtt)) = self.this_ack.take() {
            self.rtt = rtt;
            if self.latest.is_none_or(|(lt, le)| sent_after(t, e, lt, le)) {
                self.latest = Some((t, e));
            }
        }
    }

    /// An ACK reported a duplicate (D-SACK): the path may reorder more than
    /// the window allows, so widen it by a quarter of the minimum RTT, once
    /// per round trip. (Linux counts it only once reordering was seen, as
    /// here; RFC 8985 always.)
    pub fn on_dsack(&mut self, snd_una: u64, snd_nxt: u64) {
        if !self.reordering_seen || self.dsack_round.is_some_and(|r| snd_una < r) {
            return;
        }
        self.dsack_round = Some(snd_nxt);
        self.extra_steps = (self.extra_steps + 1).min(254);
        self.persist = REORDERING_PERSIST;
    }

    /// A recovery ended: undone (it was spurious: keep the widening one
    /// recovery longer, as tcp_try_undo_dsack) or not (one fewer left;
    /// at none the window is one quarter again).
    pub fn on_recovery_end(&mut self, undone: bool) {
        if undone {
            self.persist = (self.persist + 1).min(REORDERING_PERSIST);
        } else {
            self.persist = self.persist.saturating_sub(1);
            if self.persist == 0 {
                self.extra_steps = 0;
            }
        }
    }

    /// The reordering window (RFC 8985 §6.2 step 4): none while no
    /// reordering was seen and the sender is in recovery or DupThresh
    /// segments are SACKed, else a quarter of the minimum RTT (times the
    /// D-SACK multiplier), at most SRTT.
    pub fn reordering_window(
        &self,
        in_recovery: bool,
        dupthresh_sacked: bool,
        min_rtt: Option<Time>,
        srtt: Option<Time>,
    ) -> Time {
        if !self.reordering_seen && (in_recovery || dupthresh_sacked) {
            return 0;
        }
        let window = min_rtt.unwrap_or(0) / 4 * (self.extra_steps as Time + 1);
        srtt.map_or(window, |s| window.min(s))
    }

    /// Time left before a segment sent at `xmit_ts` counts as lost, or None
    /// if it was not sent before the latest delivered segment (RACK cannot
    /// judge it yet). Zero: lost now.
    pub fn remaining(&self, now: Time, xmit_ts: Time, end: u64, reo_wnd: Time) -> Option<Time> {
        let (t, e) = self.latest?;
        sent_after(t, e, xmit_ts, end).then(|| (xmit_ts + self.rtt + reo_wnd).saturating_sub(now))
    }
}

/// TLP's state (RFC 8985 §7).
#[derive(Debug, Default)]
pub struct Tlp {
    /// The probe timer.
    pub deadline: Option<Time>,
    /// snd_max when the outstanding probe went (TLP.end_seq), and whether
    /// it was a retransmission (TLP.is_retrans): one probe per tail.
    pub outstanding: Option<(u64, bool)>,
}

impl Tlp {
    /// The probe timeout (RFC 8985 §7.2): two smoothed RTTs, plus the
    /// worst-case delayed ACK when one segment is in flight; 1 s before any
    /// RTT sample; at least Linux's 10 ms; never beyond the RTO timer.
    pub fn timeout(srtt: Option<Time>, one_segment_in_flight: bool, rto_left: Option<Time>) -> Time {
        let pto = match srtt {
            Some(s) if one_segment_in_flight => 2 * s + WORST_CASE_DELAYED_ACK,
            Some(s) => 2 * s,
            None => PROBE_TIMEOUT_WITHOUT_RTT,
        };
        let pto = pto.max(MIN_PROBE_TIMEOUT);
        rto_left.map_or(pto, |r| pto.min(r))
    }

    /// Linux's probe timeout (`tcp_schedule_loss_probe`, 6.x): two smoothed
    /// RTTs plus the minimum RTO when one segment is in flight (its ACK may
    /// be delayed), else plus 2 ms; 1 s before any RTT sample; never beyond
    /// the RTO timer. (The caller rounds it up to the kernel's tick.)
    pub fn linux_timeout(
        srtt: Option<Time>,
        one_segment_in_flight: bool,
        rto_min: Time,
        rto_left: Option<Time>,
    ) -> Time {
        let pto = match srtt {
            Some(s) if one_segment_in_flight => 2 * s + rto_min,
            Some(s) => 2 * s + LINUX_TIMER_SLACK,
            None => PROBE_TIMEOUT_WITHOUT_RTT,
        };
        rto_left.map_or(pto, |r| pto.min(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Time = MILLISECOND;

    #[test]
    fn a_segment_sent_before_a_delivered_one_is_lost_after_rtt_plus_window() {
        // Segments sent at 0 and 10 ms, the second SACKed at 110 ms
        // (RACK.rtt 100 ms); a reordering window of 25 ms.
        let mut r = Rack::default();
        r.begin_ack();
        r.on_delivered(110 * MS, 10 * MS, 2000, false, None);
        r.end_ack();
        assert_eq!(r.rtt, 100 * MS);
        let reo = 25 * MS;
        // the first: lost at 0 + 100 + 25 = 125 ms
        assert_eq!(r.remaining(110 * MS, 0, 1000, reo), Some(15 * MS));
        assert_eq!(r.remaining(125 * MS, 0, 1000, reo), Some(0));
        // one sent after the delivered segment cannot be judged yet
        assert_eq!(r.remaining(200 * MS, 20 * MS, 3000, reo), None);
        // nor the delivered one itself
        assert_eq!(r.remaining(200 * MS, 10 * MS, 2000, reo), None);
    }

    /// One ACK's deliveries: (now, send time, end, resent).
    fn ack(r: &mut Rack, segs: &[(Time, Time, u64, bool)], min_rtt: Option<Time>) {
        r.begin_ack();
        for &(now, t, e, resent) in segs {
            r.on_delivered(now, t, e, resent, min_rtt);
        }
        r.end_ack();
    }

    #[test]
    fn the_latest_sent_delivered_segment_wins_and_ambiguous_rtts_are_dropped() {
        let mut r = Rack::default();
        ack(&mut r, &[(100 * MS, 50 * MS, 5000, false)], None);
        // an older segment delivered by a later ACK does not move RACK's
        // segment back, but its RTT is RACK.rtt now (RFC 8985 §6.2 step 2)
        ack(&mut r, &[(120 * MS, 10 * MS, 1000, false)], None);
        assert_eq!((r.latest, r.rtt), (Some((50 * MS, 5000)), 110 * MS));
        assert!(
            r.reordering_seen,
            "delivered below an earlier ACK's fack, never resent: reordering"
        );
        // a retransmission acknowledged faster than the minimum RTT: the ACK
        // was for the original, the RTT is not used
        ack(&mut r, &[(130 * MS, 125 * MS, 6000, true)], Some(40 * MS));
        assert_eq!((r.latest, r.rtt), (Some((50 * MS, 5000)), 110 * MS));
        ack(&mut r, &[(200 * MS, 125 * MS, 6000, true)], Some(40 * MS));
        assert_eq!((r.latest, r.rtt), (Some((125 * MS, 6000)), 75 * MS));
    }

    /// A cumulative ACK that covers a segment held for a delayed ACK along
    /// with a SACK above it: the held segment is below the fack this ACK
    /// sets, not below the one before it. No reordering.
    #[test]
    fn one_ack_delivering_below_its_own_sack_is_not_reordering() {
        let mut r = Rack::default();
        ack(&mut r, &[(100 * MS, 0, 1000, false)], None);
        ack(
            &mut r,
            &[(110 * MS, 5 * MS, 3000, false), (110 * MS, 3 * MS, 2000, false)],
            None,
        );
        assert!(!r.reordering_seen);
        assert_eq!((r.latest, r.rtt), (Some((5 * MS, 3000)), 105 * MS));
    }

    #[test]
    fn reordering_window() {
        let r = Rack::default();
        let (min, srtt) = (Some(40 * MS), Some(60 * MS));
        assert_eq!(r.reordering_window(false, false, min, srtt), 10 * MS);
        assert_eq!(
            r.reordering_window(true, false, min, srtt),
            0,
            "in recovery, no reordering seen"
        );
        assert_eq!(
            r.reordering_window(false, true, min, srtt),
            0,
            "DupThresh segments SACKed"
        );
        let seen = Rack {
            reordering_seen: true,
            ..Rack::default()
        };
        assert_eq!(seen.reordering_window(true, true, min, srtt), 10 * MS);
        assert_eq!(
            seen.reordering_window(true, true, Some(400 * MS), srtt),
            60 * MS,
            "at most SRTT"
        );
    }

    /// A kernel timer counts whole ticks from the tick under way
    /// (`usecs_to_jiffies` rounds up; the timer fires as the tick starts).
    #[test]
    fn kernel_timers_fire_on_tick_boundaries() {
        let tick = 4 * MS;
        assert_eq!(
            tick_deadline(5 * MS, 4 * MS + MS / 2, 0),
            9 * MS + MS / 2,
            "no tick: exact"
        );
        // tick under way starts at 4 ms; 4.5 ms is two ticks: fires at 12 ms
        assert_eq!(tick_deadline(5 * MS, 4 * MS + MS / 2, tick), 12 * MS);
        // a whole tick from a boundary fires a tick later
        assert_eq!(tick_deadline(8 * MS, 4 * MS, tick), 12 * MS);
        // late in a tick the wait is shorter than asked, never longer than a tick beyond it
        assert_eq!(tick_deadline(11 * MS, 4 * MS, tick), 12 * MS);
        // Linux's probe timeout at a 10 ms SRTT: 2 x 10 + 2 ms
        assert_eq!(Tlp::linux_timeout(Some(10 * MS), false, 200 * MS, None), 22 * MS);
        assert_eq!(Tlp::linux_timeout(Some(10 * MS), true, 200 * MS, None), 220 * MS);
        assert_eq!(
            Tlp::linux_timeout(Some(10 * MS), false, 200 * MS, Some(15 * MS)),
            15 * MS
        );
    }

    #[test]
    fn probe_timeout() {
        assert_eq!(Tlp::timeout(Some(30 * MS), false, None), 60 * MS);
        assert_eq!(Tlp::timeout(Some(30 * MS), true, None), 260 * MS);
        assert_eq!(Tlp::timeout(None, false, None), 1000 * MS);
        assert_eq!(Tlp::timeout(Some(MS / 10), false, None), 10 * MS, "Linux's floor");
        assert_eq!(
            Tlp::timeout(Some(30 * MS), false, Some(45 * MS)),
            45 * MS,
            "never after the RTO"
        );
    }
}
