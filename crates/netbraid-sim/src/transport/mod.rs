//! Transport endpoints, free of I/O (smoltcp style): each consumes packets and
//! timer expiries and pushes what it wants sent into an outbox. The simulator
//! (or a test) drives them; they never see the network.

pub mod tcp;
pub mod udp;

use crate::net::packet::Body;

/// A packet an endpoint wants sent: its protocol body and its wire size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub body: Body,
    pub size: u32,
    /// ECN-capable transport (RFC 3168): routers may mark instead of drop.
    pub ect: bool,
}
