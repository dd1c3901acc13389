//! The two halves of a reliable byte stream as an application sees them,
//! whatever carries it (one TCP connection, or an MPTCP connection over
//! several subflows): the applications in `app` are written against these.

use crate::endpoint::{Outbox, Received, Report, Scope, Snapshot};
use crate::engine::Time;

/// The sending half: the application writes, the socket sends.
pub trait StreamSender {
    /// "tcp", "mptcp": the flow kind in results.
    fn kind(&self) -> &'static str;
    /// A blocked writer hands over `bytes` (None: endlessly); they enter the
    /// send buffer as room opens.
    fn write_all(&mut self, now: Time, bytes: Option<u64>, out: &mut Outbox);
    /// Nothing more will be written (shutdown for writing).
    fn close(&mut self, now: Time, out: &mut Outbox);
    /// The application stops writing: what was sent is still delivered.
    fn stop(&mut self);
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox);
    fn on_timer(&mut self, now: Time, out: &mut Outbox);
    fn poll_at(&self) -> Option<Time>;
    /// Paths reported separately (subflows).
    fn path_count(&self) -> usize {
        1
    }
    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot;
    fn report(&self) -> Report;
}

/// The receiving half: data arrives, the application reads.
pub trait StreamReceiver {
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox);
    fn on_timer(&mut self, now: Time, out: &mut Outbox);
    fn poll_at(&self) -> Option<Time>;
    /// The application waits in read(): in-order data is taken as it arrives.
    fn set_reader_waiting(&mut self, waiting: bool);
    /// In-order bytes waiting for the application.
    fn readable(&self) -> u64;
    /// Read up to `max` bytes (a window update may go out); returns how many.
    fn read(&mut self, max: u64, out: &mut Outbox) -> u64;
    fn path_count(&self) -> usize {
        1
    }
    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot;
}
