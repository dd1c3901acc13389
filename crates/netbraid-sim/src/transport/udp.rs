//! UDP: the receiving socket, which counts what arrives. Sources and the
//! sink application live in `app`.

use crate::net::packet::UdpDatagram;
use crate::trace::counters::TransportCounters;

/// IPv4 (20) + UDP (8) header bytes.
pub const UDP_HEADER_BYTES: u32 = 28;

#[derive(Default)]
pub struct UdpReceiver {
    stats: TransportCounters,
}

impl UdpReceiver {
    /// A datagram arrived; its payload is read at once (UDP has no buffer
    /// to fill in this model).
    pub fn on_datagram(&mut self, d: &UdpDatagram, wire_size: u32) {
        self.stats.packets_received += 1;
        self.stats.wire_bytes_received += wire_size as u64;
        self.stats.delivered_bytes += d.len as u64;
        self.stats.read_bytes += d.len as u64;
    }
    pub fn stats(&self) -> &TransportCounters {
        &self.stats
    }
}
