//! The one interface the simulator drives every endpoint through.
//!
//! An endpoint is one end of a flow: an application with the socket(s) it
//! uses (a bulk sender owning a TCP sender, a reader owning a TCP receiver,
//! a CBR source, a UDP sink; later an MPTCP connection or a relay). It is
//! sans-IO: it consumes packets and timer expiries and pushes what it wants
//! sent into an outbox, naming the path each packet leaves on. The
//! simulation owns the paths' addressing (interfaces, ports, first channel)
//! and stamps it on each packet; the endpoint only picks a path by index.

use crate::engine::Time;
use crate::ids::{ChannelId, EndpointId, IfaceId};
use crate::net::ext::Ext;
use crate::net::packet::{Body, Packet};
use crate::trace::counters::TransportCounters;
use crate::transport::tcp::CongestionRecord;

/// A packet an endpoint wants sent.
#[derive(Clone, Debug, PartialEq)]
pub struct Transmit {
    /// Which of the endpoint's paths it leaves on.
    pub path: u8,
    pub body: Body,
    /// Bytes on the wire (IP header and everything above it).
    pub size: u32,
    /// ECN-capable transport (RFC 3168): routers may mark instead of drop.
    pub ect: bool,
    /// Variable-length part (MPTCP options, SCTP chunks), if any; boxed so
    /// that the common packet without one stays small to move.
    pub ext: Option<Box<Ext>>,
}

impl Transmit {
    /// A packet on path 0 without extension (what single-path endpoints send).
    pub fn new(body: Body, size: u32, ect: bool) -> Self {
        Self {
            path: 0,
            body,
            size,
            ect,
            ext: None,
        }
    }
}

/// What an endpoint pushes its packets into.
pub type Outbox = Vec<Transmit>;

/// One path of an endpoint: where its packets leave and whom they reach.
/// Path i of one end pairs with path i of the other end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    /// Interface packets leave from (their source address).
    pub local: IfaceId,
    /// Interface they are addressed to.
    pub remote: IfaceId,
    pub local_port: u16,
    pub remote_port: u16,
    /// First channel: the link direction leaving `local`.
    pub out_channel: ChannelId,
    /// The endpoint at the other end, and the index this path has there
    /// (the same as here, except at a relay, whose legs are its paths 0 and 1).
    pub peer: EndpointId,
    pub peer_path: u8,
    /// The simulation's record of this path (accounting, links used); the
    /// two ends of a path share it. Paths of one endpoint may belong to
    /// different flows (a relay's two legs).
    pub track: u32,
    /// Packets sent on this path carry the flow's data (else ACKs and other
    /// control), for the loss and drop accounting.
    pub sends_data: bool,
}

/// A packet handed to an endpoint, with its extension taken out of the pool.
pub struct Received<'a> {
    pub packet: &'a Packet,
    pub ext: Option<Box<Ext>>,
}

/// The state of a congestion-controlled sender at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SenderState {
    /// Effective congestion window, bytes.
    pub cwnd: u64,
    /// `None` while unlimited (before the first loss).
    pub ssthresh: Option<u64>,
    pub srtt: Option<Time>,
    pub rto: Time,
    pub min_rtt: Option<Time>,
    /// The pacing rate (payload bits per second), if the sender paces.
    pub pacing_rate_bps: Option<f64>,
}

/// Counters and state of an endpoint, or of one of its paths.
#[derive(Clone, Copy, Debug, Default)]
pub struct Snapshot {
    pub counters: TransportCounters,
    pub sender: Option<SenderState>,
}

/// What a snapshot covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The whole endpoint (for a multipath connection: the connection level).
    All,
    /// One path (subflow).
    Path(usize),
}

/// Facts about an endpoint for the results, read once at the end.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub congestion_control: Option<&'static str>,
    /// For a finite transfer: when the last byte was acknowledged.
    pub completed_at: Option<Time>,
    pub congestion_log: Vec<CongestionRecord>,
}

pub trait Endpoint {
    /// "tcp", "udp", …: the flow kind shown in results (the sending end's).
    fn kind(&self) -> &'static str;
    /// The application starts (the flow's start time).
    fn start(&mut self, now: Time, out: &mut Outbox) {
        let _ = (now, out);
    }
    /// The application stops producing data (the flow's stop time).
    fn stop(&mut self, now: Time, out: &mut Outbox) {
        let _ = (now, out);
    }
    /// A packet arrived for this endpoint on path `packet.path`.
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox);
    /// A timer it asked for (through `poll_at`) may have expired — or not:
    /// the simulator may call this when nothing is due (a timer stopped or
    /// moved later leaves its wake-up queued), and such a call must change
    /// nothing. Act on what is due at `now`, never on the call itself
    /// (`sim::tests::spurious_wake_ups_change_nothing` holds every endpoint
    /// to it).
    fn on_timer(&mut self, now: Time, out: &mut Outbox);
    /// When it next needs `on_timer`.
    fn poll_at(&self) -> Option<Time>;
    /// Paths it reports separately (1 for a single-path endpoint).
    fn path_count(&self) -> usize {
        1
    }
    /// Counters and state now. Takes `&mut` so time integrals (mean cwnd)
    /// can be brought up to `now`; reading them must change nothing else
    /// (`sim::tests::sampling_changes_nothing_but_the_series`).
    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot;
    fn report(&self) -> Report {
        Report::default()
    }
    /// For a relay: the bytes its buffer holds now, and the most it has held.
    fn relay_buffer(&self) -> Option<(u64, u64)> {
        None
    }
}
