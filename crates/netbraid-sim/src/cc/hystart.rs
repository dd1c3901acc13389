//! HyStart (Ha and Rhee, "Taming the Elephants: New TCP Slow Start", 2011),
//! as Linux's CUBIC runs it (net/ipv4/tcp_cubic.c since 5.8): slow start
//! ends before the first loss, when the ACKs of a round keep coming for
//! longer than half the minimum RTT (the ACK train: the pipe is full), or
//! when the round's smallest RTT has grown by max(4 ms, min RTT / 8), at
//! most 16 ms (the delay: a queue is building). Either sets ssthresh to cwnd.
//!
//! The detector only reads ACKs; the controller owns cwnd and ssthresh.

use super::AckEvent;
use crate::engine::time::{MILLISECOND, SECOND};
use crate::engine::Time;

/// RTT samples a round needs before its delay is compared (Linux: HYSTART_MIN_SAMPLES).
const MIN_SAMPLES: u32 = 8;
/// Bounds of the delay increase that ends slow start (HYSTART_DELAY_MIN / _MAX).
const DELAY_MIN: Time = 4 * MILLISECOND;
const DELAY_MAX: Time = 16 * MILLISECOND;
/// Linux's GSO size: the ACK train's allowance for a TSO burst is the time
/// four of them take at the pacing rate, at most 1 ms.
const GSO_BYTES: f64 = 65_536.0;

#[derive(Clone, Debug)]
pub struct HyStart {
    /// Only at or above this window (segments): below it slow start is short anyway.
    pub low_window: f64,
    /// ACKs at most this far apart belong to one train (Linux: 2 ms).
    pub ack_delta: Time,
    pub ack_train: bool,
    pub delay: bool,
    /// Slow start's end has been found (until a timeout starts it again).
    found: bool,
    /// The sender's round at the last reset; None before the first.
    round: Option<u64>,
    /// When the current round started, and the last ACK of its train.
    round_start: Time,
    last_ack: Time,
    /// Smallest RTT sample of the current round, and how many it has had.
    curr_rtt: Time,
    samples: u32,
    /// Smallest RTT sample ever (Linux's delay_min).
    delay_min: Option<Time>,
}

impl HyStart {
    pub fn new(low_window: f64, ack_delta: Time, ack_train: bool, delay: bool) -> Self {
        Self {
            low_window,
            ack_delta,
            ack_train,
            delay,
            found: false,
            round: None,
            round_start: 0,
            last_ack: 0,
            curr_rtt: Time::MAX,
            samples: 0,
            delay_min: None,
        }
    }

    /// After a timeout slow start begins again, and so does the search (as
    /// Linux resets its state on entering loss recovery).
    pub fn restart(&mut self) {
        self.found = false;
        self.round = None;
    }

    /// Forget the minimum RTT too, as Linux's CUBIC does on entering loss
    /// recovery (its delay_min is one field, zeroed with the rest).
    pub fn forget_delay_min(&mut self) {
        self.delay_min = None;
    }

    /// One ACK in slow start with `cwnd` bytes of window: whether slow
    /// start should end now (the caller sets ssthresh = cwnd).
    pub fn on_ack(&mut self, ack: &AckEvent<'_>, cwnd: u64, mss: u64) -> bool {
        let rtt = ack.ack_rtt.map(|r| r.max(1));
        if let Some(r) = rtt {
            self.delay_min = Some(self.delay_min.map_or(r, |m| m.min(r)));
        }
        let Some(min_rtt) = self.delay_min else {
            return false;
        };
        if self.found {
            return false;
        }
        // A round starts whenever the sender's does (data sent after the
        // last start is acked), at any window: Linux since "tcp_cubic: fix
        // incorrect HyStart round start detection" (6.14, and the stable
        // kernels from 6.1) marks rounds before it tests the low window, so
        // a window that reaches it mid-round is timed from the round's start.
        if self.round != Some(ack.round) {
            self.round = Some(ack.round);
            self.round_start = ack.now;
            self.last_ack = ack.now;
            self.curr_rtt = Time::MAX;
            self.samples = 0;
        }
        if (cwnd as f64) < self.low_window * mss as f64 {
            return false;
        }
        if self.ack_train && ack.now - self.last_ack <= self.ack_delta {
            self.last_ack = ack.now;
            // Linux adds the time four GSO bursts take at its pacing rate
            // (2 × cwnd / srtt in slow start), at most 1 ms; without pacing
            // (no fq, not BBR) the threshold is half of min RTT + that.
            let srtt = ack.srtt.unwrap_or(min_rtt).max(1) as f64 / SECOND as f64;
            let pacing_rate = 2.0 * cwnd as f64 / srtt;
            let ack_delay = ((4.0 * GSO_BYTES / pacing_rate) * SECOND as f64).min(MILLISECOND as f64) as Time;
            if ack.now - self.round_start > (min_rtt + ack_delay) / 2 {
                self.found = true;
                return true;
            }
        }
        if let (true, Some(rtt)) = (self.delay, rtt) {
            self.curr_rtt = self.curr_rtt.min(rtt);
            if self.samples < MIN_SAMPLES {
                self.samples += 1;
            } else if self.curr_rtt > min_rtt + (min_rtt / 8).clamp(DELAY_MIN, DELAY_MAX) {
                self.found = true;
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(now: Time, rtt: Time, min_rtt: Time, round: u64) -> AckEvent<'static> {
        AckEvent {
            now,
            newly_acked: MSS,
            ack_rtt: Some(rtt),
            srtt: Some(min_rtt),
            round,
            cwnd_limited: true,
            ..Default::default()
        }
    }

    /// Below the low window nothing is measured.
    #[test]
    fn silent_below_the_low_window() {
        let mut h = HyStart::new(16.0, 2 * MILLISECOND, true, true);
        for i in 0..100 {
            assert!(!h.on_ack(
                &ack(i * MILLISECOND, 200 * MILLISECOND, 10 * MILLISECOND, 1),
                15 * MSS,
                MSS
            ));
        }
    }

    /// The delay rule: with a 40 ms minimum RTT the threshold is 40/8 = 5 ms;
    /// samples 4 ms above it do not end slow start, 6 ms above do, and only
    /// after eight samples in the round.
    #[test]
    fn delay_increase_beyond_an_eighth_of_the_min_rtt() {
        let min = 40 * MILLISECOND;
        let mut h = HyStart::new(16.0, 0, false, true);
        h.on_ack(&ack(0, min, min, 0), 20 * MSS, MSS); // the minimum, in an earlier round
        for i in 0..50 {
            assert!(!h.on_ack(&ack(i * 10 * MILLISECOND, min + 4 * MILLISECOND, min, 1), 20 * MSS, MSS));
        }
        let mut h = HyStart::new(16.0, 0, false, true);
        h.on_ack(&ack(0, min, min, 0), 20 * MSS, MSS);
        let ended: Vec<bool> = (0..10)
            .map(|i| h.on_ack(&ack(i * 10 * MILLISECOND, min + 6 * MILLISECOND, min, 1), 20 * MSS, MSS))
            .collect();
        assert_eq!(ended.iter().position(|&e| e), Some(8), "after eight samples: {ended:?}");
    }

    /// The delay rule's floor is 4 ms and its ceiling 16 ms.
    #[test]
    fn delay_threshold_is_clamped() {
        let check = |min: Time, extra: Time| {
            let mut h = HyStart::new(16.0, 0, false, true);
            h.on_ack(&ack(0, min, min, 0), 20 * MSS, MSS);
            (0..10).any(|i| h.on_ack(&ack(i * SECOND, min + extra, min, 1), 20 * MSS, MSS))
        };
        assert!(!check(8 * MILLISECOND, 3 * MILLISECOND)); // 8/8 = 1 ms, raised to 4
        assert!(check(8 * MILLISECOND, 5 * MILLISECOND));
        assert!(!check(400 * MILLISECOND, 15 * MILLISECOND)); // 400/8 = 50 ms, lowered to 16
        assert!(check(400 * MILLISECOND, 17 * MILLISECOND));
    }

    /// The ACK train: ACKs 1 ms apart from the round's start; it ends slow
    /// start once the train is longer than half the minimum RTT (+ the TSO
    /// allowance, here 4 × 64 KB at 2 × 1 MB / 20 ms = 2.6 ms, capped at 1 ms).
    #[test]
    fn ack_train_longer_than_half_the_min_rtt() {
        let min = 20 * MILLISECOND;
        let mut h = HyStart::new(16.0, 2 * MILLISECOND, true, false);
        let cwnd = 1000 * MSS;
        let mut ended_at = None;
        for i in 0..30 {
            let now = SECOND + i * MILLISECOND;
            if h.on_ack(&ack(now, min, min, 3), cwnd, MSS) {
                ended_at = Some(now - SECOND);
                break;
            }
        }
        // threshold (20 + 1) / 2 = 10.5 ms: the first ACK past it is at 11 ms
        assert_eq!(ended_at, Some(11 * MILLISECOND));
        // A gap longer than ack_delta breaks the train: no end.
        let mut h = HyStart::new(16.0, 2 * MILLISECOND, true, false);
        assert!(!(0..30).any(|i| h.on_ack(&ack(SECOND + i * 3 * MILLISECOND, min, min, 3), cwnd, MSS)));
    }

    /// A round is timed from its start even while the window is below the
    /// low window (Linux's "tcp_cubic: fix incorrect HyStart round start
    /// detection"): a window that reaches it 5 ms into a round finds the
    /// train's last ACK 5 ms back, more than ack_delta, so that round's
    /// train is broken; the next round's train ends slow start as usual.
    #[test]
    fn a_round_is_timed_from_its_start_below_the_low_window() {
        let min = 20 * MILLISECOND;
        let mut h = HyStart::new(16.0, 2 * MILLISECOND, true, false);
        let at = |i: u64| SECOND + i * MILLISECOND;
        for i in 0..5 {
            assert!(!h.on_ack(&ack(at(i), min, min, 3), 15 * MSS, MSS));
        }
        for i in 5..31 {
            assert!(!h.on_ack(&ack(at(i), min, min, 3), 1000 * MSS, MSS), "round 3, {i} ms");
        }
        let ended = (31..60).find(|&i| h.on_ack(&ack(at(i), min, min, 4), 1000 * MSS, MSS));
        assert_eq!(ended, Some(31 + 11), "round 4 starts at 31 ms; (20 + 1) / 2 ms later");
    }
}
