//! Congestion controllers. Each is a small state machine behind one trait;
//! the TCP sender drives it and owns everything else (loss detection,
//! recovery, timers). The controller owns `cwnd` and `ssthresh`.
//!
//! Units are bytes; `mss` is the sender's maximum segment size.

mod cubic;
mod reno;

pub use cubic::Cubic;
pub use reno::Reno;

use crate::engine::Time;

/// What the sender knows when new data is cumulatively acknowledged outside
/// loss recovery.
#[derive(Clone, Copy, Debug)]
pub struct AckEvent {
    pub now: Time,
    /// Bytes newly acknowledged by this ACK.
    pub newly_acked: u64,
    /// Smoothed RTT, once there is a sample.
    pub srtt: Option<Time>,
    /// Whether the window was the limit on sending (RFC 7661): a controller
    /// must not grow cwnd that the sender could not use.
    pub cwnd_limited: bool,
}

pub trait CongestionControl: Send {
    /// Grow the window for newly acknowledged data (slow start or congestion
    /// avoidance). Not called during fast recovery.
    fn on_ack(&mut self, ack: &AckEvent);
    /// A loss detected by duplicate ACKs / SACK, or an ECN echo: set ssthresh
    /// from the flight size and cwnd to the post-recovery window.
    fn on_congestion_event(&mut self, now: Time, flight_size: u64);
    /// Retransmission timeout. `first` is false when the same segment timed
    /// out again (ssthresh is then left alone, RFC 6298 / RFC 5681).
    fn on_timeout(&mut self, now: Time, flight_size: u64, first: bool);
    /// Congestion window in bytes.
    fn window(&self) -> u64;
    fn ssthresh(&self) -> u64;
    fn name(&self) -> &'static str;
}

/// Which controller a flow uses (from the scenario).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ControllerKind {
    /// RFC 5681 AIMD. `newreno` names the same window rule (ns-3's name for
    /// it); NewReno's *recovery* is chosen separately.
    #[serde(alias = "newreno")]
    Reno,
    Cubic,
}

/// Settings shared by all controllers.
#[derive(Clone, Copy, Debug)]
pub struct CcConfig {
    pub mss: u64,
    pub initial_window: u64,
    /// Initial ssthresh ("arbitrarily high" by default).
    pub initial_ssthresh: u64,
    /// Appropriate Byte Counting limit L in slow start (RFC 3465): growth per
    /// ACK is at most L·MSS. L = 1 is RFC 5681's rule.
    pub abc_limit: u64,
}

pub fn new_controller(kind: ControllerKind, cfg: CcConfig) -> Box<dyn CongestionControl> {
    match kind {
        ControllerKind::Reno => Box::new(Reno::new(cfg)),
        ControllerKind::Cubic => Box::new(Cubic::new(cfg)),
    }
}

/// RFC 5681 slow-start step, shared by every controller that uses it.
pub(crate) fn slow_start_increase(cfg: &CcConfig, newly_acked: u64) -> u64 {
    newly_acked.min(cfg.abc_limit * cfg.mss)
}

/// RFC 5681 equation (4): ssthresh = max(FlightSize / 2, 2·SMSS).
pub(crate) fn half_flight(cfg: &CcConfig, flight_size: u64) -> u64 {
    (flight_size / 2).max(2 * cfg.mss)
}
