//! Bulk transfer over TCP, as iperf's client: write endlessly, or `bytes`
//! and then close. The writer blocks on a full send buffer and resumes the
//! moment room opens (`TcpSender::write_all`).

use crate::endpoint::{Endpoint, Outbox, Received, Report, Scope, Snapshot};
use crate::engine::Time;
use crate::net::packet::Body;
use crate::transport::tcp::TcpSender;

pub struct BulkSender {
    socket: TcpSender,
    /// None: endless.
    bytes: Option<u64>,
}

impl BulkSender {
    pub fn new(socket: TcpSender, bytes: Option<u64>) -> Self {
        Self { socket, bytes }
    }
}

impl Endpoint for BulkSender {
    fn kind(&self) -> &'static str {
        "tcp"
    }
    fn start(&mut self, now: Time, out: &mut Outbox) {
        self.socket.write_all(now, self.bytes, out);
        if self.bytes.is_some() {
            self.socket.close(now, out);
        }
    }
    fn stop(&mut self, _now: Time, _out: &mut Outbox) {
        self.socket.stop();
    }
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        if let Body::Tcp(seg) = &rx.packet.body {
            self.socket.on_segment(now, seg, out);
        }
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        self.socket.on_timer(now, out);
    }
    fn poll_at(&self) -> Option<Time> {
        self.socket.poll_at()
    }
    fn snapshot(&mut self, now: Time, _scope: Scope) -> Snapshot {
        Snapshot {
            counters: self.socket.stats_at(now),
            sender: Some(self.socket.state()),
        }
    }
    fn report(&self) -> Report {
        Report {
            congestion_control: Some(self.socket.controller_name()),
            completed_at: self.socket.completed_at(),
            congestion_log: self.socket.congestion_log().to_vec(),
        }
    }
}
