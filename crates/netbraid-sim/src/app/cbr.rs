//! Constant-bit-rate UDP source: one datagram every size·8/rate seconds,
//! from `start` until `stop` (sans-IO: the simulator calls `on_timer` at
//! `poll_at`). Also the `Emitter` every datagram source is built on.

use crate::endpoint::{Endpoint, Outbox, Received, Scope, Snapshot, Transmit};
use crate::engine::time::serialisation_time;
use crate::engine::Time;
use crate::net::packet::{Body, UdpDatagram};
use crate::trace::counters::TransportCounters;

/// What every datagram source shares: sequence numbers, counters, the stop
/// time and the send loop. A source only says how long to wait after each
/// datagram.
pub(crate) struct Emitter {
    /// Payload bytes per datagram.
    payload: u32,
    /// Header bytes added on the wire.
    header: u32,
    next_at: Option<Time>,
    stop: Time,
    seq: u64,
    pub(crate) stats: TransportCounters,
}

impl Emitter {
    pub(crate) fn new(payload: u32, header: u32, first: Time, stop: Time) -> Self {
        Self {
            payload,
            header,
            next_at: Some(first),
            stop,
            seq: 0,
            stats: TransportCounters::default(),
        }
    }

    pub(crate) fn poll_at(&self) -> Option<Time> {
        self.next_at
    }

    /// Send every datagram due by `now`; `gap` gives the wait after each.
    pub(crate) fn run(&mut self, now: Time, out: &mut Outbox, mut gap: impl FnMut() -> Time) {
        while let Some(at) = self.next_at {
            if at > now {
                break;
            }
            if at >= self.stop {
                self.next_at = None;
                break;
            }
            out.push(Transmit::new(
                Body::Udp(UdpDatagram {
                    seq: self.seq,
                    len: self.payload,
                }),
                self.payload + self.header,
                false,
            ));
            self.seq += 1;
            self.stats.packets_sent += 1;
            self.stats.bytes_sent += self.payload as u64;
            self.next_at = Some(at.saturating_add(gap()));
        }
    }
}

pub struct CbrSource {
    emitter: Emitter,
    /// Interval between datagrams: the *payload* rate is the configured rate
    /// (as iperf's -b), so the wire rate is higher by the headers.
    interval: Time,
}

impl CbrSource {
    pub fn new(rate_bps: u64, payload: u32, header: u32, start: Time, stop: Time) -> Self {
        Self {
            emitter: Emitter::new(payload, header, start, stop),
            interval: serialisation_time(payload, rate_bps).max(1),
        }
    }

    pub fn stats(&self) -> &TransportCounters {
        &self.emitter.stats
    }
}

impl Endpoint for CbrSource {
    fn kind(&self) -> &'static str {
        "udp"
    }
    fn on_packet(&mut self, _now: Time, _rx: Received<'_>, _out: &mut Outbox) {}
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        let interval = self.interval;
        self.emitter.run(now, out, || interval);
    }
    fn poll_at(&self) -> Option<Time> {
        self.emitter.poll_at()
    }
    fn snapshot(&mut self, _now: Time, _scope: Scope) -> Snapshot {
        Snapshot {
            counters: self.emitter.stats,
            sender: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::Endpoint;
    use crate::engine::time::SECOND;

    #[test]
    fn sends_at_the_configured_rate() {
        // 1 Mb/s with 1000-byte payloads: one datagram every 8 ms, 125 per second.
        let mut src = CbrSource::new(1_000_000, 1000, 28, 0, SECOND);
        let mut out = Vec::new();
        while let Some(t) = src.poll_at() {
            src.on_timer(t, &mut out);
        }
        assert_eq!(out.len(), 125);
        assert_eq!(out[0].size, 1028);
    }
}
