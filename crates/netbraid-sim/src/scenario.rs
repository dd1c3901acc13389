//! A fully resolved scenario: every unit converted (ns, bit/s, bytes), every
//! group expanded, every name turned into an index. The Python layer parses
//! and validates what users write and produces this; the simulator checks it
//! again and reports a clear error rather than panicking on a bad index.

use crate::net::loss::LossModel;
use crate::transport::tcp::TcpConfig;
use serde::Deserialize;
use std::sync::Arc;

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub seed: u64,
    pub duration_ns: u64,
    pub nodes: Vec<NodeSpec>,
    pub links: Vec<LinkSpec>,
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    #[serde(deserialize_with = "flows_sharing_settings")]
    pub flows: Vec<FlowSpec>,
    /// Split-TCP proxies: relays on nodes that flows name in `via`.
    #[serde(default)]
    pub proxies: Vec<ProxySpec>,
    pub measure: MeasureSpec,
    #[serde(default)]
    pub pcap: Vec<PcapSpec>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
    pub router: bool,
    /// How a router uses several equal-cost next hops.
    #[serde(default)]
    pub multipath: crate::net::routing::Multipath,
}

impl Scenario {
    /// Let TCP flows with the same settings share one copy: each parsed
    /// flow has its own, and a sender keeps its flow's for the whole run
    /// (with thousands of flows, that copy was a tenth of an idle flow's
    /// memory). Flows written with `count` are neighbours, so comparing
    /// with the last distinct settings finds nearly all the sharing.
    /// (Parsing shares already, flow by flow; this is for scenarios built
    /// otherwise.)
    pub fn share_settings(&mut self) {
        let mut last = None;
        for f in &mut self.flows {
            share_with_last(f, &mut last);
        }
    }
}

fn share_with_last(f: &mut FlowSpec, last: &mut Option<Arc<TcpConfig>>) {
    if let FlowKind::Tcp { tcp, .. } = &mut f.kind {
        match last {
            Some(l) if **l == **tcp => *tcp = l.clone(),
            _ => *last = Some(tcp.clone()),
        }
    }
}

/// The flow list, each flow's TCP settings shared with its neighbour's as
/// soon as it is parsed: otherwise every flow's own copy (a Linux-profile
/// one with its controller's parameters is ~600 bytes) would be alive at
/// once until parsing ends — the peak of a run with many flows.
fn flows_sharing_settings<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<FlowSpec>, D::Error> {
    struct Flows;
    impl<'de> serde::de::Visitor<'de> for Flows {
        type Value = Vec<FlowSpec>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a list of flows")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<FlowSpec>, A::Error> {
            let mut flows = Vec::new();
            let mut last = None;
            while let Some(mut f) = seq.next_element::<FlowSpec>()? {
                share_with_last(&mut f, &mut last);
                flows.push(f);
            }
            Ok(flows)
        }
    }
    d.deserialize_seq(Flows)
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// The scenario's name for the link (`name`, or "a-b" as written), which
    /// results carry beside each direction's "from->to"; not used to run.
    #[serde(default)]
    pub name: Option<String>,
    pub a: u32,
    pub b: u32,
    /// Direction a→b.
    pub ab: DirectionSpec,
    /// Direction b→a.
    pub ba: DirectionSpec,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionSpec {
    pub rate_bps: u64,
    /// Link-layer bytes per packet (0: none counted).
    #[serde(default)]
    pub framing_bytes: u32,
    /// Outages [from, until) in ns.
    #[serde(default)]
    pub down: Vec<(u64, u64)>,
    pub delay_ns: u64,
    /// Delivery within ±jitter of the delay, never reordering (0: none).
    #[serde(default)]
    pub jitter_ns: u64,
    pub queue: QueueSpec,
    pub loss: LossSpec,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueSpec {
    pub packets: Option<u32>,
    pub bytes: Option<u64>,
    /// RED in front of the FIFO (its limit still holds).
    #[serde(default)]
    pub red: Option<crate::net::red::RedParams>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossSpec {
    None,
    Bernoulli {
        p: f64,
    },
    GilbertElliott {
        p_gb: f64,
        p_bg: f64,
        loss_good: f64,
        loss_bad: f64,
    },
    List {
        indices: Vec<u64>,
    },
}

impl From<&LossSpec> for LossModel {
    fn from(s: &LossSpec) -> Self {
        match s {
            LossSpec::None => LossModel::None,
            LossSpec::Bernoulli { p } => LossModel::Bernoulli { p: *p },
            LossSpec::GilbertElliott {
                p_gb,
                p_bg,
                loss_good,
                loss_bad,
            } => LossModel::GilbertElliott {
                p_gb: *p_gb,
                p_bg: *p_bg,
                loss_good: *loss_good,
                loss_bad: *loss_bad,
            },
            LossSpec::List { indices } => LossModel::List {
                indices: indices.clone(),
            },
        }
    }
}

/// A static route: at `node`, packets for interface `dst_iface` leave on `channel`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    pub node: u32,
    pub dst_iface: u32,
    pub channel: u32,
}

/// (No `deny_unknown_fields` here: serde cannot combine it with `flatten`.)
#[derive(Clone, Debug, Deserialize)]
pub struct FlowSpec {
    pub name: String,
    pub src: u32,
    pub dst: u32,
    /// Source interface; `None` = the one the route to the destination leaves by.
    pub src_iface: Option<u32>,
    /// Destination interface; `None` = the destination's first interface.
    pub dst_iface: Option<u32>,
    /// Several paths (for multipath kinds), each a pair of interfaces; when
    /// empty, the one path `src_iface` → `dst_iface`.
    #[serde(default)]
    pub paths: Vec<PathSpec>,
    pub start_ns: u64,
    /// The start is drawn uniformly from [start, start + jitter), from the
    /// flow's own random stream (so replications differ).
    #[serde(default)]
    pub start_jitter_ns: u64,
    pub stop_ns: Option<u64>,
    /// The proxies (indices into `Scenario::proxies`) the flow is relayed
    /// through, in path order: one TCP connection per leg.
    #[serde(default)]
    pub via: Vec<u32>,
    #[serde(flatten)]
    pub kind: FlowKind,
}

/// A split-TCP proxy on a node: for each flow relayed through it, it
/// terminates the incoming leg and opens the outgoing one.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxySpec {
    pub node: u32,
    /// The relay buffer between the two sockets of each relayed flow, bytes.
    pub buffer_bytes: u64,
    /// Its sockets: the receiver of the incoming leg, the sender (and
    /// controller) of the outgoing one.
    pub tcp: TcpConfig,
}

/// One path of a flow: the interfaces it leaves from and is addressed to
/// (`None`: chosen as for a single-path flow).
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    pub src_iface: Option<u32>,
    pub dst_iface: Option<u32>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FlowKind {
    /// Bulk TCP transfer: unlimited, or `bytes` then done, to a receiving
    /// application that reads as data arrives or at `read_rate_bps`.
    Tcp {
        /// Shared by the flows that have the same settings
        /// (`Scenario::share_settings`): a sender points to it.
        tcp: Arc<TcpConfig>,
        bytes: Option<u64>,
        #[serde(default)]
        read_rate_bps: Option<u64>,
    },
    /// Bulk transfer over MPTCP: one subflow per path, the TCP settings
    /// for each subflow and the buffers for the connection.
    // (the larger settings boxed: every flow of a scenario is as large as
    // the largest kind, and a scenario may have 10^5 flows)
    Mptcp {
        tcp: Box<TcpConfig>,
        bytes: Option<u64>,
        #[serde(default)]
        mptcp: Box<crate::transport::mptcp::MptcpConfig>,
    },
    /// Bulk transfer over an SCTP association (with CMT or not): one path
    /// per pair of addresses (path i is destination i).
    Sctp {
        sctp: Box<crate::transport::sctp::SctpConfig>,
        bytes: Option<u64>,
    },
    /// UDP constant bit rate (payload rate).
    Cbr {
        rate_bps: u64,
        packet_bytes: u32,
        /// IP + UDP header bytes per datagram (28; ns-2's UDP adds none).
        #[serde(default = "udp_header")]
        header_bytes: u32,
    },
    /// UDP on-off source (ns-2 Application/Traffic/Exponential or /Pareto).
    OnOff {
        rate_bps: u64,
        packet_bytes: u32,
        #[serde(default = "udp_header")]
        header_bytes: u32,
        burst_ns: u64,
        idle_ns: u64,
        /// "exponential" or "pareto".
        distribution: String,
        /// Pareto shape (ignored for exponential).
        #[serde(default = "pareto_shape")]
        shape: f64,
    },
}

fn udp_header() -> u32 {
    crate::transport::udp::UDP_HEADER_BYTES
}

fn pareto_shape() -> f64 {
    1.5
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasureSpec {
    pub start_ns: u64,
    pub stop_ns: u64,
    /// Time-series sampling interval; `None` = no time series.
    pub interval_ns: Option<u64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapSpec {
    pub channel: u32,
    pub path: String,
}
