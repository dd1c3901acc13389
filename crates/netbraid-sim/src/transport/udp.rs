//! UDP: a sink that counts what arrives. Sources live in `app`.

use crate::net::packet::UdpDatagram;

/// IPv4 (20) + UDP (8) header bytes.
pub const UDP_HEADER_BYTES: u32 = 28;

crate::counters! {
    pub struct UdpSinkStats {
        pub datagrams_received: u64,
        pub wire_bytes_received: u64,
        pub payload_bytes_received: u64,
        /// Datagrams that arrived with a lower sequence number than one already seen.
        pub reordered: u64,
    }
}


#[derive(Default)]
pub struct UdpSink {
    highest_seq: Option<u64>,
    stats: UdpSinkStats,
}

impl UdpSink {
    pub fn on_datagram(&mut self, d: &UdpDatagram, wire_size: u32) {
        self.stats.datagrams_received += 1;
        self.stats.wire_bytes_received += wire_size as u64;
        self.stats.payload_bytes_received += d.len as u64;
        if self.highest_seq.is_some_and(|h| d.seq < h) {
            self.stats.reordered += 1;
        }
        self.highest_seq = Some(self.highest_seq.map_or(d.seq, |h| h.max(d.seq)));
    }
    pub fn stats(&self) -> &UdpSinkStats {
        &self.stats
    }
}
