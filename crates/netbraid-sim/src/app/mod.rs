//! Applications: what drives the transports. Bulk transfer writes into a TCP
//! sender (see `TcpSender::write`); sources of datagrams are here.

mod cbr;
mod onoff;

pub use cbr::{CbrSource, CbrStats};
pub use onoff::{OnOffDistribution, OnOffSource};
