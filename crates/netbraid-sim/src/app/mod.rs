//! Applications: what drives the transports. Bulk transfer writes into a TCP
//! sender (see `TcpSender::write`); sources of datagrams are here.

mod cbr;

pub use cbr::{CbrSource, CbrStats};
