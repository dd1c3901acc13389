//! The receiving application of a UDP flow: takes every datagram as it arrives.

use crate::endpoint::{Endpoint, Outbox, Received, Scope, Snapshot};
use crate::engine::Time;
use crate::net::packet::Body;
use crate::transport::udp::UdpReceiver;

#[derive(Default)]
pub struct UdpSink {
    socket: UdpReceiver,
}

impl Endpoint for UdpSink {
    fn kind(&self) -> &'static str {
        "udp"
    }
    fn on_packet(&mut self, _now: Time, rx: Received<'_>, _out: &mut Outbox) {
        if let Body::Udp(d) = &rx.packet.body {
            self.socket.on_datagram(d, rx.packet.size);
        }
    }
    fn on_timer(&mut self, _now: Time, _out: &mut Outbox) {}
    fn poll_at(&self) -> Option<Time> {
        None
    }
    fn snapshot(&mut self, _now: Time, _scope: Scope) -> Snapshot {
        Snapshot {
            counters: *self.socket.stats(),
            sender: None,
        }
    }
}
