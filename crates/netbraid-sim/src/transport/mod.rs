//! Transport protocols as sans-IO sockets (smoltcp style): each consumes
//! packets and timer expiries and pushes what it wants sent into an outbox.
//! Applications (`app`) own them and are what the simulator drives; the
//! sockets never see the network.

pub mod mptcp;
pub mod sctp;
pub mod stream;
pub mod tcp;
pub mod udp;

pub use stream::{StreamReceiver, StreamSender};

pub use crate::endpoint::{Outbox, Transmit};
