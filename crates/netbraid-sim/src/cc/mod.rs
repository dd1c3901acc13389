//! Congestion controllers. Each is a small state machine in its own file,
//! behind one trait; the sender drives it and owns everything else (loss
//! detection, recovery, timers). The controller owns `cwnd` and `ssthresh`.
//!
//! Units are bytes; `mss` is the sender's maximum segment size.
//!
//! `CONTROLLERS` is the one list of controllers, with their parameters: the
//! scenario is checked against it, and the Python layer reads it (through
//! `controllers_json`) instead of keeping a list of its own.

mod balia;
mod bbr;
mod coupled;
mod cubic;
mod cubic_linux;
mod ghstcp;
mod hstcp;
mod hystart;
mod lia;
mod olia;
mod reno;

pub use balia::Balia;
pub use bbr::Bbr;
pub use cubic::Cubic;
pub use ghstcp::GentleHighSpeedApprox;
pub use hstcp::{HighSpeed, Response as HsResponse};
pub use lia::Lia;
pub use olia::Olia;
pub use reno::Reno;

use crate::engine::Time;
use crate::error::SimError;
pub use crate::transport::tcp::rate::RateSample;
use std::collections::BTreeMap;

/// What the sender knows when new data is cumulatively acknowledged.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckEvent<'a> {
    pub now: Time,
    /// Bytes newly acknowledged by this ACK.
    pub newly_acked: u64,
    /// The RTT this ACK measured (never from a retransmitted segment: Karn).
    pub rtt_sample: Option<Time>,
    /// The RTT of the newest segment this ACK acknowledges, if it was sent
    /// once: a sample on every ACK, as Linux takes from send times or
    /// timestamps (`rtt_sample` is one per round trip, RFC 6298's way).
    /// Only for controllers that ask for it (`wants_ack_rtt`).
    pub ack_rtt: Option<Time>,
    /// Smoothed RTT, once there is a sample.
    pub srtt: Option<Time>,
    /// Smallest RTT sample so far.
    pub min_rtt: Option<Time>,
    /// Bytes outstanding just before this ACK.
    pub flight: u64,
    /// Round trips so far: a round ends when data sent after it began is
    /// acknowledged (the first ACK of new data starts round 1).
    pub round: u64,
    /// This ACK ended a round (it is the first of round `round`).
    pub round_start: bool,
    /// Whether the window was the limit on sending (RFC 7661): a controller
    /// must not grow cwnd that the sender could not use.
    pub cwnd_limited: bool,
    /// The other subflows of the same multipath connection, read-only (empty
    /// for a single-path connection): what coupled controllers need.
    pub siblings: &'a [SubflowView],
}

/// Where the sender is in loss recovery (the part of Linux's `ca_state`
/// a rate-based controller reads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum LossState {
    #[default]
    Open,
    /// Fast recovery (a loss found by SACK, duplicate ACKs or RACK).
    Recovery,
    /// After a retransmission timeout, until the data outstanding then is acknowledged.
    Loss,
}

/// What a rate-based controller (`rate_based`) learns from every ACK, once
/// the sender has updated its loss marks: Linux's `rate_sample` as its
/// `cong_control` hook sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct RateEvent {
    pub now: Time,
    /// The delivery-rate sample (no rate when the ACK gave none).
    pub sample: RateSample,
    /// Bytes delivered on the connection so far.
    pub delivered: u64,
    /// Bytes this ACK delivered (cumulatively ACKed or newly SACKed).
    pub acked_sacked: u64,
    /// Bytes this ACK's processing marked lost.
    pub losses: u64,
    /// Bytes marked lost so far on the connection, by ACKs, timers and
    /// timeouts (Linux's `tp->lost`).
    pub lost_total: u64,
    /// Bytes in flight before this ACK and after it (sent, not delivered,
    /// not marked lost; retransmissions counted).
    pub prior_in_flight: u64,
    pub in_flight: u64,
    /// RTT of the newest segment this ACK delivered, if it was sent once.
    pub rtt: Option<Time>,
    pub srtt: Option<Time>,
    pub state: LossState,
    /// How long until pacing lets the next segment go (0: now).
    pub pacing_wait: Time,
}

/// A read-only view of one subflow, for coupled multipath controllers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SubflowView {
    pub cwnd: u64,
    pub ssthresh: u64,
    pub srtt: Option<Time>,
    pub mss: u64,
    /// Bytes cumulatively acknowledged on the subflow so far.
    pub bytes_acked: u64,
    /// Bytes acknowledged since its last loss event, and between its last
    /// two (OLIA's ℓ is the larger of the two).
    pub bytes_since_loss: u64,
    pub bytes_between_losses: u64,
    pub in_recovery: bool,
}

pub trait CongestionControl: Send {
    /// Grow the window for newly acknowledged data (slow start or congestion
    /// avoidance). Not called during fast recovery.
    fn on_ack(&mut self, ack: &AckEvent<'_>);
    /// New data acknowledged during loss recovery, where the window belongs
    /// to the recovery algorithm. For controllers that learn from every RTT
    /// sample or round (delay- and trend-based ones); most ignore it.
    fn on_ack_in_recovery(&mut self, ack: &AckEvent<'_>) {
        let _ = ack;
    }
    /// A loss detected by duplicate ACKs / SACK, or an ECN echo: set ssthresh
    /// from the flight size and cwnd to the post-recovery window. (A coupled
    /// controller whose decrease depends on the other subflows, as BALIA's,
    /// uses the sibling view of the latest ACK: at most one ACK old.)
    fn on_congestion_event(&mut self, now: Time, flight_size: u64);
    /// Retransmission timeout. `first` is false when the same segment timed
    /// out again (ssthresh is then left alone, RFC 6298 / RFC 5681).
    fn on_timeout(&mut self, now: Time, flight_size: u64, first: bool);
    /// MPTCP's penalisation of a subflow that holds the others back (the
    /// out-of-tree kernel's `mptcp_rcv_buf_optimization`): cwnd halves (at
    /// least one segment) and a finite ssthresh halves (at least two), the
    /// controller's other state left as it is, as Linux writes the two fields.
    fn penalise(&mut self);
    /// The last reduction proved spurious (D-SACK showed every
    /// retransmission it led to was not needed) and is undone, as Linux's
    /// `tcp_undo_cwnd_reduction`: cwnd back to at least `prior_cwnd`, the
    /// window when the reduction began (`tcp_reno_undo_cwnd`, which CUBIC
    /// uses too), and ssthresh to at least `prior_ssthresh`; the
    /// controller's other state stays as it is.
    fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64);
    /// Congestion window in bytes.
    fn window(&self) -> u64;
    fn ssthresh(&self) -> u64;
    fn name(&self) -> &'static str;
    /// Whether it reads the other subflows of its MPTCP connection (a coupled
    /// controller); if not, the connection need not build their view.
    fn coupled(&self) -> bool {
        false
    }
    /// Whether it reads `AckEvent::ack_rtt` (the sender then looks it up on every ACK).
    fn wants_ack_rtt(&self) -> bool {
        false
    }
    /// A rate-based controller (BBR) sets the window on every ACK, in
    /// recovery too, from delivery-rate samples (Linux's `cong_control`
    /// hook): the sender then calls `on_rate_sample` instead of `on_ack`
    /// and `on_ack_in_recovery`, and applies no PRR. `on_congestion_event`
    /// and `on_timeout` still say that a recovery or a timeout began.
    fn rate_based(&self) -> bool {
        false
    }
    /// A timeout has just marked the flight lost: the connection's bytes
    /// marked lost so far, before `on_timeout` (rate-based controllers).
    fn on_timeout_marked(&mut self, lost_total: u64) {
        let _ = lost_total;
    }
    fn on_rate_sample(&mut self, ev: &RateEvent) {
        let _ = ev;
    }
    /// The rate (payload bytes per second) the sender must pace at, if the
    /// controller asks for pacing.
    fn pacing_rate(&self) -> Option<f64> {
        None
    }
    /// Segments the sender may send back to back at each pacing time
    /// (Linux paces TSO/GSO bursts, not segments).
    fn pacing_burst(&self) -> u64 {
        1
    }
    /// The controller itself holds the flight down (BBR's PROBE_RTT):
    /// delivery-rate samples taken now are marked app-limited.
    fn holds_flight_down(&self) -> bool {
        false
    }
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
    /// Congestion avoidance counts bytes acknowledged, not ACKs (RFC 3465).
    pub byte_counting: bool,
    /// Seed for a controller that draws random numbers (BBR's first gain
    /// phase), derived from the run's seed and the flow's name.
    pub seed: u64,
}

// ---- the list of controllers --------------------------------------------------

/// One parameter of a controller.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ParamInfo {
    pub name: &'static str,
    pub doc: &'static str,
    pub kind: ParamKind,
}

#[derive(Clone, Copy, Debug, serde::Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ParamKind {
    Number { default: f64, min: f64, max: f64 },
    Flag { default: bool },
}

/// A controller the simulator has.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct ControllerInfo {
    pub name: &'static str,
    /// Other names accepted for it (e.g. ns-3's "newreno" for Reno's window rule).
    pub aliases: &'static [&'static str],
    pub doc: &'static str,
    pub params: &'static [ParamInfo],
    /// Rules between parameters (each checked alone against its range
    /// first): the offending parameter and why.
    #[serde(skip)]
    pub constraints: fn(&Params) -> Result<(), (&'static str, String)>,
    #[serde(skip)]
    pub build: fn(CcConfig, &Params) -> Box<dyn CongestionControl>,
}

/// Every controller, in the order users see them.
pub const CONTROLLERS: &[ControllerInfo] = &[
    reno::INFO,
    cubic::INFO,
    bbr::INFO,
    hstcp::INFO,
    ghstcp::INFO,
    lia::INFO,
    olia::INFO,
    balia::INFO,
];

/// `ControllerInfo::constraints` of a controller whose parameters are independent.
pub(crate) fn independent(_: &Params) -> Result<(), (&'static str, String)> {
    Ok(())
}

/// A controller's parameters, checked, with defaults filled in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Params(BTreeMap<&'static str, f64>);

impl Params {
    pub fn number(&self, name: &str) -> f64 {
        *self
            .0
            .get(name)
            .unwrap_or_else(|| panic!("controller parameter '{name}' is not declared"))
    }
    pub fn flag(&self, name: &str) -> bool {
        self.number(name) != 0.0
    }
}

/// The controller called `name` (or one of its aliases).
pub fn controller_info(name: &str) -> Option<&'static ControllerInfo> {
    CONTROLLERS.iter().find(|c| c.name == name || c.aliases.contains(&name))
}

/// Every name `cc` accepts, aliases included.
pub fn controller_names() -> Vec<&'static str> {
    CONTROLLERS
        .iter()
        .flat_map(|c| std::iter::once(c.name).chain(c.aliases.iter().copied()))
        .collect()
}

/// Check a controller name and its parameters (`cc`, `cc_params`); every
/// mistake names the field and what is allowed. `field` prefixes the names
/// (e.g. "flow 'bulk'.").
pub fn check(field: &str, name: &str, given: &BTreeMap<String, serde_json::Value>) -> Result<Params, SimError> {
    let info = controller_info(name).ok_or_else(|| {
        SimError::invalid(
            format!("{field}cc"),
            format!(
                "'{name}' is not simulated (allowed on sim: {}; other controllers the kernel offers run on --backend emu)",
                controller_names().join(", ")
            ),
        )
    })?;
    let mut params = Params::default();
    for (key, value) in given {
        let Some(p) = info.params.iter().find(|p| p.name == key) else {
            let allowed: Vec<&str> = info.params.iter().map(|p| p.name).collect();
            let allowed = if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed.join(", ")
            };
            return Err(SimError::invalid(
                format!("{field}cc_params.{key}"),
                format!("{} has no parameter '{key}' (allowed: {allowed})", info.name),
            ));
        };
        let v = match (p.kind, value) {
            (ParamKind::Flag { .. }, serde_json::Value::Bool(b)) => *b as u8 as f64,
            (ParamKind::Number { min, max, .. }, serde_json::Value::Number(n)) => {
                let v = n.as_f64().unwrap_or(f64::NAN);
                if !(min..=max).contains(&v) {
                    return Err(SimError::invalid(
                        format!("{field}cc_params.{key}"),
                        format!("{v} is out of range (allowed: {min} to {max})"),
                    ));
                }
                v
            }
            (ParamKind::Flag { .. }, _) => {
                return Err(SimError::invalid(
                    format!("{field}cc_params.{key}"),
                    "must be true or false",
                ))
            }
            (ParamKind::Number { min, max, .. }, _) => {
                return Err(SimError::invalid(
                    format!("{field}cc_params.{key}"),
                    format!("must be a number (allowed: {min} to {max})"),
                ))
            }
        };
        params.0.insert(p.name, v);
    }
    for p in info.params {
        let default = match p.kind {
            ParamKind::Number { default, .. } => default,
            ParamKind::Flag { default } => default as u8 as f64,
        };
        params.0.entry(p.name).or_insert(default);
    }
    (info.constraints)(&params).map_err(|(key, why)| SimError::invalid(format!("{field}cc_params.{key}"), why))?;
    Ok(params)
}

/// Build a checked controller.
pub fn build(
    field: &str,
    name: &str,
    given: &BTreeMap<String, serde_json::Value>,
    cfg: CcConfig,
) -> Result<Box<dyn CongestionControl>, SimError> {
    let params = check(field, name, given)?;
    let info = controller_info(name).expect("checked");
    Ok((info.build)(cfg, &params))
}

/// The list as JSON, for the Python layer.
pub fn controllers_json() -> String {
    serde_json::to_string(CONTROLLERS).expect("static data encodes")
}

/// RFC 5681 slow-start step, shared by every controller that uses it.
pub(crate) fn slow_start_increase(cfg: &CcConfig, newly_acked: u64) -> u64 {
    newly_acked.min(cfg.abc_limit * cfg.mss)
}

/// RFC 5681 equation (4): ssthresh = max(FlightSize / 2, 2·SMSS).
pub(crate) fn half_flight(cfg: &CcConfig, flight_size: u64) -> u64 {
    (flight_size / 2).max(2 * cfg.mss)
}

/// The penalisation every controller applies to its cwnd and ssthresh.
pub(crate) fn penalised(cfg: &CcConfig, cwnd: u64, ssthresh: u64) -> (u64, u64) {
    let ssthresh = if ssthresh == u64::MAX {
        ssthresh
    } else {
        (ssthresh / 2).max(2 * cfg.mss)
    };
    ((cwnd / 2).max(cfg.mss), ssthresh)
}

/// The window and ssthresh after an undo (see `CongestionControl::undo`).
pub(crate) fn undone(cwnd: u64, ssthresh: u64, prior_cwnd: u64, prior_ssthresh: u64) -> (u64, u64) {
    (cwnd.max(prior_cwnd), ssthresh.max(prior_ssthresh))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> CcConfig {
        CcConfig {
            mss: 1000,
            initial_window: 3000,
            initial_ssthresh: u64::MAX,
            abc_limit: 1,
            byte_counting: false,
            seed: 0,
        }
    }

    #[test]
    fn names_and_aliases_build() {
        for name in controller_names() {
            let cc = build("", name, &BTreeMap::new(), cfg()).unwrap();
            assert_eq!(cc.window(), 3000);
        }
        assert_eq!(build("", "newreno", &BTreeMap::new(), cfg()).unwrap().name(), "reno");
    }

    #[test]
    fn bad_names_and_parameters_say_what_is_allowed() {
        let e = check("flow 'f'.", "vegas", &BTreeMap::new()).unwrap_err().to_string();
        assert!(
            e.starts_with("flow 'f'.cc: 'vegas' is not simulated (allowed on sim: reno, newreno, cubic"),
            "{e}"
        );
        let p = |k: &str, v: serde_json::Value| BTreeMap::from([(k.to_string(), v)]);
        let e = check("", "cubic", &p("gamma", 1.into())).unwrap_err().to_string();
        assert!(e.contains("cc_params.gamma") && e.contains("allowed: c, beta"), "{e}");
        let e = check("", "cubic", &p("beta", 1.5.into())).unwrap_err().to_string();
        assert!(e.contains("cc_params.beta: 1.5 is out of range"), "{e}");
        let e = check("", "cubic", &p("fast_convergence", 1.into()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("must be true or false"), "{e}");
        let e = check("", "reno", &p("beta", 0.5.into())).unwrap_err().to_string();
        assert!(e.contains("allowed: none"), "{e}");
    }

    #[test]
    fn defaults_fill_in() {
        let p = check("", "cubic", &BTreeMap::from([("beta".to_string(), 0.5.into())])).unwrap();
        assert_eq!(p.number("beta"), 0.5);
        assert_eq!(p.number("c"), 0.4);
        assert!(p.flag("fast_convergence"));
    }
}
