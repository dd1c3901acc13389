//! Applications: what runs on the nodes and drives the transports. Each is
//! an `Endpoint` the simulator drives, owning the socket(s) it writes to or
//! reads from:
//! - `BulkSender`: writes into a stream socket (TCP, MPTCP) endlessly or a
//!   byte count (iperf's client, `-n`);
//! - `Reader` (`TcpReader` for TCP): reads from a stream socket, at once
//!   (iperf's server) or at a limited rate (a slow consumer: back-pressure);
//! - `CbrSource`, `OnOffSource`: UDP datagram sources;
//! - `UdpSink`: counts what arrives;
//! - `Relay`: a split-TCP proxy's relay between two TCP connections.

mod bulk;
mod cbr;
mod onoff;
mod reader;
mod relay;
mod udp_sink;

pub use bulk::BulkSender;
pub use cbr::CbrSource;
pub use onoff::{OnOffDistribution, OnOffGaps, OnOffSource};
pub use reader::{ReadPolicy, Reader, TcpReader};
pub use relay::Relay;
pub use udp_sink::UdpSink;
