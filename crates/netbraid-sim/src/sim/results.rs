//! The results of one run, as the CLI's `--json` and the Python API see them.

use super::{Role, Simulation, Snapshot};
use crate::engine::time::as_secs_f64;
use crate::trace::series::TimeSeries;
use crate::transport::tcp::CongestionRecord;
use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct RunResult {
    pub scenario: String,
    pub seed: u64,
    pub duration_s: f64,
    pub measure_start_s: f64,
    pub measure_stop_s: f64,
    /// Simulator events executed.
    pub events: u64,
    /// Packets transmitted on every link direction (data and ACKs).
    pub packet_hops: u64,
    pub wall_s: f64,
    pub flows: Vec<FlowResult>,
    pub links: Vec<LinkResult>,
    pub series: Option<TimeSeries>,
    /// Packets dropped for want of a route (0 unless static routes are wrong).
    pub unroutable_packets: u64,
}

/// Per-flow metrics over the measurement window.
#[derive(Debug, Serialize)]
pub struct FlowResult {
    pub name: String,
    /// "tcp" or "udp".
    pub kind: &'static str,
    pub src: String,
    pub dst: String,
    /// Every data byte that reached the receiver, headers and retransmissions included.
    pub throughput_bps: f64,
    /// New, in-order application bytes delivered.
    pub goodput_bps: f64,
    /// Data packets lost in the network / data packets sent.
    pub loss_rate: f64,
    pub retransmits: u64,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub packets_received: u64,
    pub bytes_delivered: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    /// Window reductions in response to ECN echoes.
    pub ecn_reductions: u64,
    pub rtt_mean_s: Option<f64>,
    pub rtt_min_s: Option<f64>,
    pub srtt_s: Option<f64>,
    pub rto_s: Option<f64>,
    /// Time-weighted mean congestion window.
    pub cwnd_mean_bytes: Option<f64>,
    pub cwnd_bytes: Option<u64>,
    pub ssthresh_bytes: Option<u64>,
    pub congestion_control: Option<&'static str>,
    /// For a finite transfer: when the last byte was acknowledged.
    pub completion_time_s: Option<f64>,
    pub congestion_events: Option<Vec<CongestionRecord>>,
    /// Whole-run byte accounting of this flow's packets, both directions.
    pub accounting: Accounting,
}

/// Conservation: sent = delivered + dropped + in_flight, counted separately.
#[derive(Debug, Serialize, Clone, Copy)]
pub struct Accounting {
    pub sent_bytes: u64,
    pub delivered_bytes: u64,
    pub dropped_bytes: u64,
    pub in_flight_bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct LinkResult {
    /// "from->to".
    pub name: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    pub delay_s: f64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub ecn_marks: u64,
    /// Fraction of the window the transmitter was busy.
    pub utilisation: f64,
}

impl Simulation {
    pub(super) fn results(mut self, wall_s: f64) -> RunResult {
        let end = self.events.now().max(self.duration.min(self.measure.stop_ns));
        let stop = match self.at_stop.take() {
            Some(s) => s,
            None => self.snapshot(end),
        };
        let start = self.at_start.take().unwrap_or_else(|| Snapshot {
            time: 0,
            flows: vec![Default::default(); self.flows.len()],
            channels: vec![Default::default(); self.channels.len()],
        });
        let window = as_secs_f64(stop.time - start.time).max(1e-12);
        let mut in_flight = vec![0u64; self.flows.len()];
        for p in self.pool.iter_live() {
            in_flight[p.flow as usize] += p.size as u64;
        }
        let flows = self
            .flows
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let (a, b) = (&stop.flows[i], &start.flows[i]);
                let acct = a.acct.since(&b.acct);
                let mut r = FlowResult {
                    name: f.name.clone(),
                    kind: "udp",
                    src: self.node_names[f.src as usize].clone(),
                    dst: self.node_names[f.dst as usize].clone(),
                    throughput_bps: 0.0,
                    goodput_bps: 0.0,
                    loss_rate: if acct.data_packets_sent > 0 {
                        acct.data_packets_dropped as f64 / acct.data_packets_sent as f64
                    } else {
                        0.0
                    },
                    retransmits: 0,
                    packets_sent: acct.data_packets_sent,
                    packets_lost: acct.data_packets_dropped,
                    packets_received: 0,
                    bytes_delivered: 0,
                    timeouts: 0,
                    fast_retransmits: 0,
                    ecn_reductions: 0,
                    rtt_mean_s: None,
                    rtt_min_s: None,
                    srtt_s: None,
                    rto_s: None,
                    cwnd_mean_bytes: None,
                    cwnd_bytes: None,
                    ssthresh_bytes: None,
                    congestion_control: None,
                    completion_time_s: None,
                    congestion_events: None,
                    accounting: Accounting {
                        sent_bytes: f.acct.sent_bytes,
                        delivered_bytes: f.acct.delivered_bytes,
                        dropped_bytes: f.acct.dropped_bytes,
                        in_flight_bytes: in_flight[i],
                    },
                };
                if let Role::TcpSender(s) = &self.endpoints[f.sender as usize].role {
                    let tx = a.tx.since(&b.tx);
                    let rx = a.rx.since(&b.rx);
                    r.kind = "tcp";
                    r.throughput_bps = rx.wire_bytes_received as f64 * 8.0 / window;
                    r.goodput_bps = rx.goodput_bytes as f64 * 8.0 / window;
                    r.retransmits = tx.retransmits;
                    r.packets_received = rx.segments_received;
                    r.bytes_delivered = rx.goodput_bytes;
                    r.timeouts = tx.timeouts;
                    r.fast_retransmits = tx.fast_retransmits;
                    r.ecn_reductions = tx.ecn_reductions;
                    r.rtt_mean_s = (tx.rtt_samples > 0).then(|| tx.rtt_sum_ns as f64 / tx.rtt_samples as f64 / 1e9);
                    r.rtt_min_s = s.min_rtt().map(as_secs_f64);
                    r.srtt_s = s.srtt().map(as_secs_f64);
                    r.rto_s = Some(as_secs_f64(s.rto()));
                    r.cwnd_mean_bytes = Some(tx.cwnd_area / (window * 1e9));
                    r.cwnd_bytes = Some(s.cwnd());
                    r.ssthresh_bytes = (s.ssthresh() != u64::MAX).then(|| s.ssthresh());
                    r.congestion_control = Some(s.controller_name());
                    r.completion_time_s = s.completed_at().map(as_secs_f64);
                    let log = s.congestion_log();
                    r.congestion_events = (!log.is_empty()).then(|| log.to_vec());
                } else {
                    let sink = a.sink.since(&b.sink);
                    r.throughput_bps = sink.wire_bytes_received as f64 * 8.0 / window;
                    r.goodput_bps = sink.payload_bytes_received as f64 * 8.0 / window;
                    r.packets_received = sink.datagrams_received;
                    r.bytes_delivered = sink.payload_bytes_received;
                }
                r
            })
            .collect();
        let links = self
            .channels
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let k = stop.channels[i].since(&start.channels[i]);
                LinkResult {
                    name: c.name.clone(),
                    from: self.node_names[c.from as usize].clone(),
                    to: self.node_names[c.to as usize].clone(),
                    rate_bps: c.rate_bps,
                    delay_s: as_secs_f64(c.delay),
                    tx_packets: k.tx_packets,
                    tx_bytes: k.tx_bytes,
                    queue_drops: k.queue_drops,
                    loss_drops: k.loss_drops,
                    ecn_marks: k.ecn_marks,
                    utilisation: k.tx_bytes as f64 * 8.0 / (c.rate_bps as f64 * window),
                }
            })
            .collect();
        let packet_hops = self.channels.iter().map(|c| c.counters.tx_packets).sum();
        RunResult {
            scenario: self.name.clone(),
            seed: self.seed,
            duration_s: as_secs_f64(self.duration),
            measure_start_s: as_secs_f64(start.time),
            measure_stop_s: as_secs_f64(stop.time),
            events: self.events.executed(),
            packet_hops,
            wall_s,
            flows,
            links,
            series: self.series.take(),
            unroutable_packets: self.unroutable,
        }
    }
}
