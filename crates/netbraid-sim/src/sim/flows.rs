//! The kinds of flow, and the two endpoints each one puts on the network:
//! the one place a new kind is registered (`builtin`). A library user (or a
//! test) can pass a factory of its own to `Simulation::with_factory`.

use crate::app::{
    BulkSender, CbrSource, OnOffDistribution, OnOffSource, ReadPolicy, Reader, Relay, TcpReader, UdpSink,
};
use crate::endpoint::Endpoint;
use crate::engine::{RandomStream, Time};
use crate::error::SimError;
use crate::scenario::{FlowKind, FlowSpec, ProxySpec};
use crate::transport::mptcp::{MptcpReceiver, MptcpSender};
use crate::transport::sctp::{SctpReceiver, SctpSender};
use crate::transport::tcp::{TcpReceiver, TcpSender};
use rand::RngCore;

use super::build::{check_rate, check_time};

/// What a factory knows about the flow it builds endpoints for.
pub struct FlowSetup<'a> {
    /// The flow's name in messages (e.g. "flow 'bulk'").
    pub field: &'a str,
    pub seed: u64,
    /// When the application starts (jitter applied) and stops (`Time::MAX`: never).
    pub start: Time,
    pub stop: Time,
    /// How many paths the flow has (one per `PathSpec`).
    pub paths: usize,
}

/// The sending and the receiving end of a flow.
pub type EndpointPair = (Box<dyn Endpoint>, Box<dyn Endpoint>);

/// Builds the endpoints of one flow, or says why it cannot.
pub type EndpointFactory<'a> = dyn Fn(&FlowSpec, &FlowSetup) -> Result<EndpointPair, SimError> + 'a;

/// A flow's (or a subflow's) congestion controller, with a seed of its own
/// for a controller that draws random numbers.
fn controller(
    spec: &FlowSpec,
    setup: &FlowSetup,
    tcp: &crate::transport::tcp::TcpConfig,
    part: &str,
) -> Result<Box<dyn crate::cc::CongestionControl>, SimError> {
    let mut cfg = tcp.controller_config();
    cfg.seed = RandomStream::new(setup.seed, &format!("cc:{}:{part}", spec.name))
        .inner()
        .next_u64();
    crate::cc::build(&format!("{}.", setup.field), &tcp.cc, &tcp.cc_params, cfg)
}

/// The relay a proxy runs for `spec`'s leg `leg` → `leg + 1` (a TCP flow;
/// `field` names the proxy in messages).
pub fn relay(
    spec: &FlowSpec,
    setup: &FlowSetup,
    proxy: &ProxySpec,
    leg: usize,
    field: &str,
) -> Result<Box<dyn Endpoint>, SimError> {
    let FlowKind::Tcp { bytes, .. } = &spec.kind else {
        return Err(SimError::invalid(
            format!("{}.via", setup.field),
            "only TCP flows can be relayed through proxies",
        ));
    };
    let tcp = &proxy.tcp;
    tcp.validate(&format!("{field}.tcp."))?;
    if proxy.buffer_bytes < tcp.mss as u64 {
        return Err(SimError::invalid(
            format!("{field}.buffer"),
            format!(
                "{} B is smaller than one segment (allowed: at least the MSS, {} B)",
                proxy.buffer_bytes, tcp.mss
            ),
        ));
    }
    let cc = controller(spec, setup, tcp, &format!("leg {}", leg + 1))?;
    let tcp = std::sync::Arc::new(tcp.clone());
    Ok(Box::new(Relay::new(
        TcpReceiver::new(tcp.clone()),
        TcpSender::new(tcp, cc),
        proxy.buffer_bytes,
        *bytes,
    )))
}

/// The flow kinds netbraid has.
pub fn builtin(spec: &FlowSpec, setup: &FlowSetup) -> Result<EndpointPair, SimError> {
    let path = setup.field;
    if let FlowKind::Mptcp { tcp, bytes, mptcp } = &spec.kind {
        tcp.validate(&format!("{path}."))?;
        mptcp.validate(&format!("{path}."), setup.paths)?;
        if tcp.mss <= crate::net::packet::DSS_ON_DATA {
            return Err(SimError::invalid(
                format!("{path}.mss"),
                format!(
                    "{} B leaves no payload beside MPTCP's {} B DSS option (allowed: more than {} B)",
                    tcp.mss,
                    crate::net::packet::DSS_ON_DATA,
                    crate::net::packet::DSS_ON_DATA
                ),
            ));
        }
        let subflow = crate::transport::mptcp::subflow_config(tcp);
        let controllers = (0..setup.paths)
            .map(|k| controller(spec, setup, &subflow, &format!("subflow {k}")))
            .collect::<Result<Vec<_>, _>>()?;
        let sender = BulkSender::new(MptcpSender::new((**tcp).clone(), mptcp, controllers), *bytes);
        let reader = Reader::new(MptcpReceiver::new(tcp, setup.paths), ReadPolicy::Waiting);
        return Ok((Box::new(sender), Box::new(reader)));
    }
    if let FlowKind::Sctp { sctp, bytes } = &spec.kind {
        sctp.validate(&format!("{path}."), setup.paths)?;
        let seed = RandomStream::new(setup.seed, &format!("sctp:{}", spec.name))
            .inner()
            .next_u64();
        let sender = BulkSender::new(SctpSender::new((**sctp).clone(), setup.paths, seed), *bytes);
        let reader = Reader::new(SctpReceiver::new(sctp, setup.paths), ReadPolicy::Waiting);
        return Ok((Box::new(sender), Box::new(reader)));
    }
    if setup.paths != 1 {
        return Err(SimError::invalid(
            format!("{path}.paths"),
            format!(
                "a flow of this kind uses one path, not {} (several paths need a multipath kind)",
                setup.paths
            ),
        ));
    }
    Ok(match &spec.kind {
        FlowKind::Tcp {
            tcp,
            bytes,
            read_rate_bps,
        } => {
            tcp.validate(&format!("{path}."))?;
            let cc = controller(spec, setup, tcp, "")?;
            let policy = match read_rate_bps {
                None => ReadPolicy::Waiting,
                Some(r) => {
                    check_rate(&format!("{path}.read_rate"), *r)?;
                    ReadPolicy::Rate {
                        rate_bps: *r,
                        chunk: tcp.mss as u64,
                    }
                }
            };
            let sender = BulkSender::new(TcpSender::new(tcp.clone(), cc), *bytes);
            let reader = TcpReader::new(TcpReceiver::new(tcp.clone()), policy);
            (Box::new(sender), Box::new(reader))
        }
        FlowKind::Cbr {
            rate_bps,
            packet_bytes,
            header_bytes,
        }
        | FlowKind::OnOff {
            rate_bps,
            packet_bytes,
            header_bytes,
            ..
        } => {
            check_rate(&format!("{path}.rate"), *rate_bps)?;
            if *packet_bytes == 0 || *packet_bytes > 65507 || *header_bytes > 120 {
                return Err(SimError::invalid(
                    path,
                    "packet size must be 1 to 65507 B, headers up to 120 B",
                ));
            }
            let source: Box<dyn Endpoint> = match &spec.kind {
                FlowKind::OnOff {
                    burst_ns,
                    idle_ns,
                    distribution,
                    shape,
                    ..
                } => {
                    check_time(&format!("{path}.burst_time"), *burst_ns)?;
                    check_time(&format!("{path}.idle_time"), *idle_ns)?;
                    let dist = match distribution.as_str() {
                        "exponential" => OnOffDistribution::Exponential,
                        "pareto" if *shape > 1.0 && shape.is_finite() => OnOffDistribution::Pareto { shape: *shape },
                        "pareto" => {
                            return Err(SimError::invalid(
                                format!("{path}.shape"),
                                "must be above 1 (ns-2's default is 1.5)",
                            ))
                        }
                        other => {
                            return Err(SimError::invalid(
                                format!("{path}.distribution"),
                                format!("'{other}' is not allowed (exponential, pareto)"),
                            ))
                        }
                    };
                    let rng = RandomStream::new(setup.seed, &format!("onoff:{}", spec.name));
                    Box::new(OnOffSource::new(
                        *rate_bps,
                        *packet_bytes,
                        *header_bytes,
                        *burst_ns,
                        *idle_ns,
                        dist,
                        rng,
                        setup.start,
                        setup.stop,
                    ))
                }
                _ => Box::new(CbrSource::new(
                    *rate_bps,
                    *packet_bytes,
                    *header_bytes,
                    setup.start,
                    setup.stop,
                )),
            };
            (source, Box::new(UdpSink::default()))
        }
        FlowKind::Mptcp { .. } | FlowKind::Sctp { .. } => unreachable!("handled above"),
    })
}
