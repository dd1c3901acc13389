//! Measurement: snapshots of every counter at the window's edges, and the
//! sampled time series. A window's figures are differences of two
//! snapshots, so nothing is counted twice and nothing needs resetting.

use super::{FlowAccounting, Simulation};
use crate::endpoint::{Scope, SenderState};
use crate::engine::Time;
use crate::ids::EndpointId;
use crate::net::link::ChannelCounters;
use crate::trace::counters::TransportCounters;
use crate::trace::series::{FlowSeries, LinkSeries, TimeSeries};

/// The state of measurement during a run.
#[derive(Default)]
pub(super) struct Meter {
    pub at_start: Option<Snapshot>,
    pub at_stop: Option<Snapshot>,
    pub series: Option<TimeSeries>,
    pub last_sample: Option<Snapshot>,
}

/// A flow's (or one path's) counters at one instant: both ends, and the network's view.
#[derive(Clone, Copy, Default)]
pub(super) struct Counts {
    pub transport: TransportCounters,
    pub acct: FlowAccounting,
    /// The sending end's window and timers (None for UDP).
    pub sender: Option<SenderState>,
}

impl Counts {
    pub fn since(&self, earlier: &Counts) -> Counts {
        Counts {
            transport: self.transport.since(&earlier.transport),
            acct: self.acct.since(&earlier.acct),
            sender: self.sender,
        }
    }
}

#[derive(Clone, Default)]
pub(super) struct FlowSnapshot {
    pub total: Counts,
    /// Per path, when the flow has several.
    pub paths: Vec<Counts>,
}

/// Every counter at one instant.
#[derive(Clone)]
pub(super) struct Snapshot {
    pub time: Time,
    pub flows: Vec<FlowSnapshot>,
    pub channels: Vec<ChannelCounters>,
}

impl Simulation {
    /// One end's and the network's counters of flow `f`, for `scope`.
    fn counts(&mut self, now: Time, f: usize, scope: Scope) -> Counts {
        if !self.flows[f].legs.is_empty() {
            return self.relayed_counts(now, f, scope);
        }
        let (sender, receiver) = (self.flows[f].sender, self.flows[f].receiver);
        let tx = self.endpoints[sender.idx()].endpoint.snapshot(now, scope);
        let rx = self.endpoints[receiver.idx()].endpoint.snapshot(now, scope);
        let tracks = self.flows[f].tracks.clone();
        let acct = match scope {
            Scope::All => self.tracks.acct(tracks),
            Scope::Path(i) => self.tracks.acct[tracks.start as usize + i],
        };
        Counts {
            transport: tx.counters.plus(&rx.counters),
            acct,
            sender: tx.sender.or(rx.sender),
        }
    }

    /// A relayed flow: per leg, that connection's two ends; end to end, every
    /// leg's sending side (retransmissions, timeouts on any leg) and the
    /// destination's receiving side (what the application got), with the
    /// source's window and RTT (the first leg's: what the sending host sees).
    fn relayed_counts(&mut self, now: Time, f: usize, scope: Scope) -> Counts {
        let (n, first_track) = (self.flows[f].legs.len(), self.flows[f].tracks.start as usize);
        let mut side = |ep: EndpointId, path: u8| {
            self.endpoints[ep.idx()]
                .endpoint
                .snapshot(now, Scope::Path(path as usize))
        };
        let leg = |k: usize| self.flows[f].legs[k];
        match scope {
            Scope::Path(k) => {
                let l = leg(k);
                let tx = side(l.sender, l.sender_path);
                let rx = side(l.receiver, l.receiver_path);
                Counts {
                    transport: tx.counters.plus(&rx.counters),
                    acct: self.tracks.acct[first_track + k],
                    sender: tx.sender,
                }
            }
            Scope::All => {
                let last = leg(n - 1);
                let mut transport = side(last.receiver, last.receiver_path).counters;
                let mut source = None;
                for l in (0..n).map(leg) {
                    let tx = side(l.sender, l.sender_path);
                    transport = transport.plus(&tx.counters);
                    source.get_or_insert(tx);
                }
                let source = source.expect("a relayed flow has legs");
                let c = &source.counters;
                (transport.cwnd_area, transport.rtt_samples, transport.rtt_sum_ns) =
                    (c.cwnd_area, c.rtt_samples, c.rtt_sum_ns);
                (transport.srtt_area, transport.srtt_time_ns) = (c.srtt_area, c.srtt_time_ns);
                Counts {
                    transport,
                    acct: self.tracks.acct(self.flows[f].tracks.clone()),
                    sender: source.sender,
                }
            }
        }
    }

    /// Flow `f`'s counters now (after `count_wire_losses(now)`).
    pub(super) fn flow_snapshot(&mut self, now: Time, f: usize) -> FlowSnapshot {
        let total = self.counts(now, f, Scope::All);
        let n = match self.flows[f].legs.len() {
            0 => self.endpoints[self.flows[f].sender.idx()].endpoint.path_count(),
            legs => legs,
        };
        let paths = if n > 1 {
            (0..n).map(|i| self.counts(now, f, Scope::Path(i))).collect()
        } else {
            Vec::new()
        };
        FlowSnapshot { total, paths }
    }

    pub(super) fn snapshot(&mut self, now: Time) -> Snapshot {
        self.count_wire_losses(now);
        let flows = (0..self.flows.len()).map(|f| self.flow_snapshot(now, f)).collect();
        Snapshot {
            time: now,
            flows,
            channels: self.channels.iter().map(|c| c.counters_at(now)).collect(),
        }
    }

    pub(super) fn sample(&mut self, now: Time) {
        let snap = self.snapshot(now);
        let prev = self
            .meter
            .last_sample
            .replace(snap.clone())
            .expect("first sample taken at start");
        let dt = (now - prev.time) as f64 / 1e9;
        let series = self.meter.series.get_or_insert_with(|| TimeSeries {
            flows: self
                .flows
                .iter()
                .map(|f| FlowSeries {
                    name: f.name.clone(),
                    ..Default::default()
                })
                .collect(),
            links: self
                .channels
                .iter()
                .map(|c| LinkSeries {
                    name: c.name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
        series.time_s.push(now as f64 / 1e9);
        for (i, fs) in series.flows.iter_mut().enumerate() {
            let (a, b) = (&snap.flows[i], &prev.flows[i]);
            push_sample(fs, &a.total, &b.total, dt);
            for (k, (pa, pb)) in a.paths.iter().zip(&b.paths).enumerate() {
                if fs.subflows.len() <= k {
                    let back = fs.time_len();
                    fs.subflows
                        .push(FlowSeries::padded(format!("{}#{k}", fs.name), back - 1));
                }
                push_sample(&mut fs.subflows[k], pa, pb, dt);
            }
        }
        for (f, fs) in self.flows.iter().zip(series.flows.iter_mut()) {
            for (k, leg) in f.legs.iter().skip(1).enumerate() {
                let (held, _) = self.endpoints[leg.sender.idx()]
                    .endpoint
                    .relay_buffer()
                    .expect("a leg after the first leaves a relay");
                if fs.relay_buffer_bytes.len() <= k {
                    fs.relay_buffer_bytes.push(vec![0; fs.time_len() - 1]);
                }
                fs.relay_buffer_bytes[k].push(held);
            }
        }
        for (i, c) in self.channels.iter_mut().enumerate() {
            c.advance(now);
            let ls = &mut series.links[i];
            ls.queue_packets.push(c.queue.len() as u64);
            ls.queue_bytes.push(c.queue.bytes());
        }
    }
}

fn push_sample(fs: &mut FlowSeries, a: &Counts, b: &Counts, dt: f64) {
    let d = a.transport.since(&b.transport);
    fs.throughput_bps.push(d.wire_bytes_received as f64 * 8.0 / dt);
    fs.goodput_bps.push(d.read_bytes as f64 * 8.0 / dt);
    fs.cwnd_bytes.push(a.sender.map(|s| s.cwnd));
    fs.srtt_s.push(a.sender.and_then(|s| s.srtt).map(|t| t as f64 / 1e9));
}
