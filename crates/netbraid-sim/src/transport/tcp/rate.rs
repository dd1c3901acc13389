//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation;
//! Linux's tcp_rate.c): each segment remembers, when it is sent, how much
//! had been delivered by then and when; when it is delivered (cumulatively
//! ACKed or SACKed), the bytes delivered since, over the longer of the
//! send and the ACK intervals, is a sample of the path's delivery rate.
//! Samples taken while the application, not the network, held the sender
//! back are marked app-limited (a rate-based controller then uses them only
//! if they raise its estimate).

use crate::engine::Time;

/// What a segment remembers of the connection when it is (re)sent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendState {
    /// Bytes delivered when it was sent.
    pub delivered: u64,
    /// When `delivered` last changed, as of sending.
    pub delivered_time: Time,
    /// Send time of the first segment of the current sending interval.
    pub first_sent_time: Time,
    /// The connection was app-limited when it was sent.
    pub app_limited: bool,
}

/// The connection's side of the estimator.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateEstimator {
    /// Bytes delivered so far (cumulatively ACKed or SACKed).
    pub delivered: u64,
    delivered_time: Time,
    first_sent_time: Time,
    /// Nonzero while app-limited: the `delivered` count at which the
    /// app-limited stretch ends (its last byte in flight is delivered).
    app_limited_until: u64,
}

/// One ACK's sample: what the controller reads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over `interval` (0: no valid sample on this ACK).
    pub delivered: u64,
    pub interval: Time,
    /// The connection's `delivered` when the sampled segment was sent (a
    /// round-trip counter for the controller: a round ends when data sent
    /// after it began is delivered).
    pub prior_delivered: u64,
    pub app_limited: bool,
    /// Send time of the newest segment delivered by this ACK (internal).
    newest_sent: Option<Time>,
    send_elapsed: Time,
    ack_elapsed: Time,
}

impl RateSample {
    /// A sample of `delivered` bytes over `interval` (for controllers' tests).
    pub fn new(delivered: u64, interval: Time, prior_delivered: u64, app_limited: bool) -> Self {
        Self {
            delivered,
            interval,
            prior_delivered,
            app_limited,
            ..Self::default()
        }
    }

    /// Bytes per second, if this ACK gave a valid sample.
    pub fn rate(&self) -> Option<f64> {
        (self.delivered > 0 && self.interval > 0).then(|| self.delivered as f64 * 1e9 / self.interval as f64)
    }
}

impl RateEstimator {
    /// A segment leaves now; `idle` says nothing was in flight before it
    /// (the sending interval and the delivery clock restart, so an idle
    /// gap is not counted as delivery time).
    pub fn on_send(&mut self, now: Time, idle: bool) -> SendState {
        if idle {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        SendState {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited: self.app_limited_until != 0,
        }
    }

    /// A segment of `len` bytes, sent at `sent_time` with `state`, is
    /// delivered now. The sample follows the most recently sent of the
    /// segments an ACK delivers.
    pub fn on_delivered(&mut self, now: Time, len: u64, sent_time: Time, state: &SendState, rs: &mut RateSample) {
        self.delivered += len;
        self.delivered_time = now;
        if rs.newest_sent.is_none() || state.delivered > rs.prior_delivered {
            rs.newest_sent = Some(sent_time);
            rs.prior_delivered = state.delivered;
            rs.app_limited = state.app_limited;
            rs.send_elapsed = sent_time.saturating_sub(state.first_sent_time);
            rs.ack_elapsed = now.saturating_sub(state.delivered_time);
            // the next sending interval begins with this segment
            self.first_sent_time = sent_time;
        }
    }

    /// Close the ACK's sample. An interval shorter than the minimum RTT
    /// cannot be a path's rate (ACK compression) and is dropped, as Linux does.
    pub fn finish(&mut self, rs: &mut RateSample, min_rtt: Option<Time>) {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if rs.newest_sent.is_none() {
            return;
        }
        rs.interval = rs.send_elapsed.max(rs.ack_elapsed);
        rs.delivered = self.delivered - rs.prior_delivered;
        if rs.interval == 0 || min_rtt.is_some_and(|m| rs.interval < m) {
            rs.delivered = 0;
        }
    }

    /// The application (not the windows) left the sender idle: samples
    /// until what is in flight now is delivered are app-limited.
    pub fn set_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::time::MILLISECOND;

    /// A sender keeping 10 segments of 1000 B in flight over a 10 ms round
    /// trip delivers 1 MB/s: the sample must say so, whatever the moment.
    #[test]
    fn steady_window_gives_window_over_rtt() {
        let mut est = RateEstimator::default();
        let rtt = 10 * MILLISECOND;
        let gap = rtt / 10;
        let mut flight = std::collections::VecDeque::new();
        let mut last = None;
        for i in 0..100u64 {
            let now = i * gap;
            if i >= 10 {
                let (sent, st): (Time, SendState) = flight.pop_front().unwrap();
                let mut rs = RateSample::default();
                est.on_delivered(now, 1000, sent, &st, &mut rs);
                est.finish(&mut rs, Some(rtt));
                last = rs.rate();
            }
            let st = est.on_send(now, i == 0);
            flight.push_back((now, st));
        }
        let rate = last.expect("a sample");
        assert!((rate - 1e6).abs() < 1e6 * 0.01, "{rate}");
    }

    /// An ACK arriving too soon after the segment's delivery clock (a
    /// compressed burst of ACKs) gives no sample shorter than min RTT.
    #[test]
    fn compressed_acks_are_not_samples() {
        let mut est = RateEstimator::default();
        let st = est.on_send(0, true);
        let mut rs = RateSample::default();
        est.on_delivered(MILLISECOND, 1000, 0, &st, &mut rs);
        est.finish(&mut rs, Some(10 * MILLISECOND));
        assert_eq!(rs.rate(), None);
    }

    /// App-limited marks last until the data in flight when it was set is delivered.
    #[test]
    fn app_limited_until_the_flight_is_delivered() {
        let mut est = RateEstimator::default();
        est.set_app_limited(2000);
        let a = est.on_send(0, true);
        assert!(a.app_limited);
        let mut rs = RateSample::default();
        est.on_delivered(MILLISECOND, 1000, 0, &a, &mut rs);
        est.finish(&mut rs, None);
        assert!(rs.app_limited && est.on_send(MILLISECOND, false).app_limited);
        let mut rs = RateSample::default();
        est.on_delivered(2 * MILLISECOND, 1001, 0, &a, &mut rs);
        est.finish(&mut rs, None);
        assert!(!est.on_send(2 * MILLISECOND, false).app_limited);
    }
}
