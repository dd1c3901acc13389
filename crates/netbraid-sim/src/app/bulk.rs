//! Bulk transfer, as iperf's client: write endlessly, or `bytes` and then
//! close, into any stream socket (TCP, MPTCP). The writer blocks on a full
//! send buffer and resumes the moment room opens.

use crate::endpoint::{Endpoint, Outbox, Received, Report, Scope, Snapshot};
use crate::engine::Time;
use crate::transport::tcp::TcpSender;
use crate::transport::StreamSender;

pub struct BulkSender<S: StreamSender = TcpSender> {
    socket: S,
    /// None: endless.
    bytes: Option<u64>,
}

impl<S: StreamSender> BulkSender<S> {
    pub fn new(socket: S, bytes: Option<u64>) -> Self {
        Self { socket, bytes }
    }

    pub fn socket(&self) -> &S {
        &self.socket
    }
}

impl<S: StreamSender> Endpoint for BulkSender<S> {
    fn kind(&self) -> &'static str {
        self.socket.kind()
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
        self.socket.on_packet(now, rx, out);
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        self.socket.on_timer(now, out);
    }
    fn poll_at(&self) -> Option<Time> {
        self.socket.poll_at()
    }
    fn path_count(&self) -> usize {
        self.socket.path_count()
    }
    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot {
        self.socket.snapshot(now, scope)
    }
    fn report(&self) -> Report {
        self.socket.report()
    }
}
