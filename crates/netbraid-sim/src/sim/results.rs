//! The results of one run, as the CLI's `--json` and the Python API see them.

use super::measure::{Counts, FlowSnapshot};
use super::Simulation;
use crate::endpoint::Scope;
use crate::engine::time::as_secs_f64;
use crate::ids::ChannelId;
use crate::net::link::ChannelCounters;
use crate::net::routing::five_tuple_hash_of;
use crate::net::{format_addr, iface_addr};
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
    /// (Each row boxed: built as its flow's endpoints are freed, it can take
    /// their place on the heap instead of adding an array of every flow's
    /// row to the run's peak memory.)
    pub flows: Vec<Box<FlowResult>>,
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
    /// The interface addresses the connection joins (an MPTCP flow's initial
    /// subflow; a relayed flow's source and destination, which the proxies
    /// are transparent between).
    pub src_addr: Option<String>,
    pub dst_addr: Option<String>,
    /// Every data byte that reached the receiver, headers and retransmissions included.
    pub throughput_bps: f64,
    /// Application bytes the receiver read (new, in order).
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
    /// Zero-window probes the sender sent (persist timer).
    pub window_probes: u64,
    /// Tail loss probes the sender sent (RACK-TLP).
    pub loss_probes: u64,
    /// Segments the receiver reported received twice (D-SACK, with `dsack`;
    /// TCP_INFO's tcpi_dsack_dups), and window reductions undone for them.
    pub dsack_dups: u64,
    pub undos: u64,
    /// ACKs the receiver sent to reopen a window its application's reading freed.
    pub window_updates: u64,
    /// Data the receiver already had (TCP segments, SCTP chunks): spurious
    /// retransmissions, seen from the receiving end.
    pub duplicates_received: u64,
    /// Mean of the RTT samples the sender took in the window.
    pub rtt_mean_s: Option<f64>,
    pub rtt_min_s: Option<f64>,
    /// The smoothed RTT at the end, and its time-weighted mean over the
    /// window (what emu's readings of the kernel's srtt average).
    pub srtt_s: Option<f64>,
    pub srtt_mean_s: Option<f64>,
    pub rto_s: Option<f64>,
    /// Time-weighted mean congestion window.
    pub cwnd_mean_bytes: Option<f64>,
    pub cwnd_bytes: Option<u64>,
    pub ssthresh_bytes: Option<u64>,
    /// The pacing rate at the end (payload bits per second), if the sender paces.
    pub pacing_rate_bps: Option<f64>,
    pub congestion_control: Option<&'static str>,
    /// For a finite transfer: when the last byte was acknowledged.
    pub completion_time_s: Option<f64>,
    pub congestion_events: Option<Vec<CongestionRecord>>,
    /// Link directions the flow's packets (data and ACKs) were offered to,
    /// over the whole run, by name ("from->to").
    pub links: Vec<String>,
    /// Per path, for flows with several (MPTCP subflows); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subflows: Vec<SubflowResult>,
    /// Per connection, for a flow relayed through proxies (leg 0 leaves the
    /// source, the last reaches the destination); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub legs: Vec<SubflowResult>,
    /// Whole-run byte accounting of this flow's packets, both directions.
    pub accounting: Accounting,
}

/// Per-path metrics over the measurement window.
#[derive(Debug, Serialize)]
pub struct SubflowResult {
    /// "flow#i".
    pub name: String,
    /// Source and destination addresses of the path.
    pub src_addr: String,
    pub dst_addr: String,
    pub throughput_bps: f64,
    pub goodput_bps: f64,
    pub loss_rate: f64,
    pub retransmits: u64,
    pub packets_sent: u64,
    pub packets_lost: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub loss_probes: u64,
    /// Segments the receiver reported twice on this path (D-SACK).
    pub dsack_dups: u64,
    /// Data that arrived on this path and the receiver already had.
    pub duplicates_received: u64,
    pub rtt_mean_s: Option<f64>,
    pub srtt_s: Option<f64>,
    pub srtt_mean_s: Option<f64>,
    pub cwnd_mean_bytes: Option<f64>,
    pub cwnd_bytes: Option<u64>,
    /// This path's share of the flow's goodput.
    pub share: Option<f64>,
    pub links: Vec<String>,
    /// A relayed flow's leg: the nodes it joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// A leg that leaves a proxy: the most its relay buffer held (whole run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relay_buffer_max_bytes: Option<u64>,
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
    /// "from->to" ("from->to#k" for the k-th of parallel links, k ≥ 2).
    pub name: String,
    pub from: String,
    pub to: String,
    pub rate_bps: u64,
    pub delay_s: f64,
    /// The delay varies within ±this (0: fixed).
    pub jitter_s: f64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub queue_drops: u64,
    pub loss_drops: u64,
    pub ecn_marks: u64,
    /// Fraction of the window the transmitter was busy.
    pub utilisation: f64,
    /// Mean time a packet waited in the queue for the transmitter (none:
    /// no packet was sent): the number waiting integrated over the window,
    /// over the packets sent in it (Little's law).
    pub queue_delay_s: Option<f64>,
}

/// The metrics of a flow or a path over the window `window` seconds long.
struct Rates {
    throughput_bps: f64,
    goodput_bps: f64,
    loss_rate: f64,
    rtt_mean_s: Option<f64>,
    srtt_mean_s: Option<f64>,
    cwnd_mean_bytes: Option<f64>,
}

fn rates(c: &Counts, window: f64) -> Rates {
    let t = &c.transport;
    Rates {
        throughput_bps: t.wire_bytes_received as f64 * 8.0 / window,
        goodput_bps: t.read_bytes as f64 * 8.0 / window,
        loss_rate: if c.acct.data_packets_sent > 0 {
            c.acct.data_packets_dropped as f64 / c.acct.data_packets_sent as f64
        } else {
            0.0
        },
        rtt_mean_s: (t.rtt_samples > 0).then(|| t.rtt_sum_ns as f64 / t.rtt_samples as f64 / 1e9),
        srtt_mean_s: (t.srtt_time_ns > 0).then(|| t.srtt_area / t.srtt_time_ns as f64 / 1e9),
        cwnd_mean_bytes: c.sender.map(|_| t.cwnd_area / (window * 1e9)),
    }
}

impl Simulation {
    fn node_name_of_iface(&self, iface: crate::net::IfaceId) -> String {
        self.node_names[self.iface_node[iface.idx()].idx()].clone()
    }

    /// Names of the channels the tracks `tracks` (paths of flow `f`) used.
    fn link_names(&self, f: usize, tracks: std::ops::Range<u32>) -> Vec<String> {
        let used = if self.mark_links {
            self.tracks.used(tracks)
        } else {
            self.links_of(f, tracks)
        };
        used.into_iter()
            .map(|ch| self.channels[ch.idx()].name.clone())
            .collect()
    }

    /// Without per-packet multipath routing a path's channels follow from
    /// the tables (and the five-tuple hash at ECMP routers):
    /// from each end's first channel, hop by hop to the other end (both
    /// directions), for the directions that sent anything.
    fn links_of(&self, f: usize, tracks: std::ops::Range<u32>) -> Vec<ChannelId> {
        let flow = &self.flows[f];
        // (a list, not a flag per channel: results for many flows would
        // otherwise cost flows × channels)
        let mut used = Vec::new();
        for t in tracks {
            let acct = &self.tracks.acct[t as usize];
            let k = (t - flow.tracks.start) as usize;
            let (tx, rx) = self.ends_of(f, k);
            for ((end, idx), sent) in [(tx, acct.data_packets_sent), (rx, acct.ack_packets_sent)] {
                if sent == 0 {
                    continue;
                }
                let path = self.endpoints[end.idx()].paths[idx];
                let target = self.iface_node[path.remote.idx()];
                let protocol = self.tracks.protocol[t as usize];
                let mut ch = path.out_channel;
                // Routes were checked loop-free when the flow was built.
                for _ in 0..=self.channels.len() {
                    used.push(ch);
                    let node = self.channels[ch.idx()].to;
                    // (the hash the packets got at each ECMP router)
                    let hash = || {
                        five_tuple_hash_of(
                            path.local,
                            path.remote,
                            path.local_port,
                            path.remote_port,
                            protocol,
                            node,
                        )
                    };
                    match self.routes.lookup_flow(node, path.remote, hash).channel() {
                        Some(next) if node != target => ch = next,
                        _ => break,
                    }
                }
            }
        }
        used.sort_unstable();
        used.dedup();
        used
    }

    pub(super) fn results(mut self, wall_s: f64) -> RunResult {
        let end = self.events.now().max(self.duration.min(self.measure.stop_ns));
        // No stop snapshot when the window ends with the run: each flow's
        // counters are read at `end` as its row is built.
        let stop = self.meter.at_stop.take();
        let stop_time = stop.as_ref().map_or(end, |s| s.time);
        // No start snapshot: the window starts at 0, when every counter is 0.
        let start = self.meter.at_start.take();
        let start_time = start.as_ref().map_or(0, |s| s.time);
        let (zero_flow, zero_counts, zero_channel) =
            (FlowSnapshot::default(), Counts::default(), ChannelCounters::default());
        let window = as_secs_f64(stop_time - start_time).max(1e-12);
        // Every departure up to the end has happened: a packet lost on the
        // wire by then is dropped, not in flight, though still in its link.
        self.count_wire_losses(self.duration);
        let mut in_flight = vec![0u64; self.flows.len()];
        for p in self.pool.iter_live() {
            in_flight[p.flow.idx()] += p.size as u64;
        }
        for c in &self.channels {
            for p in c.in_link.iter().filter(|p| p.counted()) {
                let pkt = self.pool.get(p.packet);
                in_flight[pkt.flow.idx()] -= pkt.size as u64;
            }
        }
        let mut flows = Vec::with_capacity(self.flows.len());
        // Last flow first, so that each flow's endpoints and link records
        // (the ends of the vectors) are freed as soon as its row is built:
        // the run's peak memory is then the simulation's, not the
        // simulation's plus every row.
        for i in (0..self.flows.len()).rev() {
            let at_end;
            let a = match &stop {
                Some(s) => &s.flows[i],
                None => {
                    // (wire losses were counted up to the duration above)
                    debug_assert_eq!(end, self.duration);
                    at_end = self.flow_snapshot(end, i);
                    &at_end
                }
            };
            let b = start.as_ref().map_or(&zero_flow, |s| &s.flows[i]);
            let c = a.total.since(&b.total);
            let r = rates(&c, window);
            let sender_ep = self.flows[i].sender;
            let now_state = self.endpoints[sender_ep.idx()]
                .endpoint
                .snapshot(end, Scope::All)
                .sender;
            let endpoint = &self.endpoints[sender_ep.idx()];
            let mut report = endpoint.endpoint.report();
            let f = &self.flows[i];
            if let Some(last) = f.legs.last() {
                // a relayed transfer is complete when the destination has it all
                report.completed_at = self.endpoints[last.sender.idx()].endpoint.report().completed_at;
            }
            let relayed = !f.legs.is_empty();
            let acct = self.tracks.acct(f.tracks.clone());
            let paths: Vec<SubflowResult> = a
                .paths
                .iter()
                .zip(b.paths.iter().chain(std::iter::repeat(&zero_counts)))
                .enumerate()
                .map(|(k, (pa, pb))| {
                    let pc = pa.since(pb);
                    let pr = rates(&pc, window);
                    let ((tx, tx_path), _) = self.ends_of(i, k);
                    let path = &self.endpoints[tx.idx()].paths[tx_path];
                    let relay = self.endpoints[tx.idx()].endpoint.relay_buffer();
                    SubflowResult {
                        name: format!("{}#{k}", f.name),
                        src_addr: format_addr(iface_addr(path.local)),
                        dst_addr: format_addr(iface_addr(path.remote)),
                        throughput_bps: pr.throughput_bps,
                        goodput_bps: pr.goodput_bps,
                        loss_rate: pr.loss_rate,
                        retransmits: pc.transport.retransmits,
                        packets_sent: pc.acct.data_packets_sent,
                        packets_lost: pc.acct.data_packets_dropped,
                        timeouts: pc.transport.timeouts,
                        fast_retransmits: pc.transport.fast_retransmits,
                        loss_probes: pc.transport.loss_probes,
                        dsack_dups: pc.transport.dsack_dups,
                        duplicates_received: pc.transport.duplicate_packets,
                        rtt_mean_s: pr.rtt_mean_s,
                        srtt_s: pa.sender.and_then(|s| s.srtt).map(as_secs_f64),
                        srtt_mean_s: pr.srtt_mean_s,
                        cwnd_mean_bytes: pr.cwnd_mean_bytes,
                        cwnd_bytes: pa.sender.map(|s| s.cwnd),
                        share: (!relayed && r.goodput_bps > 0.0).then(|| pr.goodput_bps / r.goodput_bps),
                        links: self.link_names(i, f.tracks.start + k as u32..f.tracks.start + k as u32 + 1),
                        from: relayed.then(|| self.node_name_of_iface(path.local)),
                        to: relayed.then(|| self.node_name_of_iface(path.remote)),
                        relay_buffer_max_bytes: relay.map(|(_, peak)| peak),
                    }
                })
                .collect();
            let (subflows, legs) = if relayed {
                (Vec::new(), paths)
            } else {
                (paths, Vec::new())
            };
            let address = |k: usize, remote: bool| {
                let ((tx, tx_path), _) = self.ends_of(i, k);
                let path = self.endpoints[tx.idx()].paths.get(tx_path)?;
                Some(format_addr(iface_addr(if remote { path.remote } else { path.local })))
            };
            let log = report.congestion_log;
            flows.push(Box::new(FlowResult {
                name: f.name.clone(),
                kind: endpoint.endpoint.kind(),
                src: self.node_names[f.src.idx()].clone(),
                dst: self.node_names[f.dst.idx()].clone(),
                src_addr: address(0, false),
                dst_addr: address(f.legs.len().saturating_sub(1), true),
                throughput_bps: r.throughput_bps,
                goodput_bps: r.goodput_bps,
                loss_rate: r.loss_rate,
                retransmits: c.transport.retransmits,
                packets_sent: c.acct.data_packets_sent,
                packets_lost: c.acct.data_packets_dropped,
                packets_received: c.transport.packets_received,
                bytes_delivered: c.transport.read_bytes,
                timeouts: c.transport.timeouts,
                fast_retransmits: c.transport.fast_retransmits,
                ecn_reductions: c.transport.ecn_reductions,
                window_probes: c.transport.window_probes,
                loss_probes: c.transport.loss_probes,
                dsack_dups: c.transport.dsack_dups,
                undos: c.transport.undos,
                window_updates: c.transport.window_updates,
                duplicates_received: c.transport.duplicate_packets,
                rtt_mean_s: r.rtt_mean_s,
                rtt_min_s: now_state.and_then(|s| s.min_rtt).map(as_secs_f64),
                srtt_s: now_state.and_then(|s| s.srtt).map(as_secs_f64),
                srtt_mean_s: r.srtt_mean_s,
                rto_s: now_state.map(|s| as_secs_f64(s.rto)),
                cwnd_mean_bytes: r.cwnd_mean_bytes,
                cwnd_bytes: now_state.map(|s| s.cwnd),
                ssthresh_bytes: now_state.and_then(|s| s.ssthresh),
                pacing_rate_bps: now_state.and_then(|s| s.pacing_rate_bps),
                congestion_control: report.congestion_control,
                completion_time_s: report.completed_at.map(as_secs_f64),
                congestion_events: (!log.is_empty()).then_some(log),
                links: self.link_names(i, f.tracks.clone()),
                subflows,
                legs,
                accounting: Accounting {
                    sent_bytes: acct.sent_bytes,
                    delivered_bytes: acct.delivered_bytes,
                    dropped_bytes: acct.dropped_bytes,
                    in_flight_bytes: in_flight[i],
                },
            }));
            // flow i's endpoints are the range sender..=receiver, its
            // tracks f.tracks: both at the end of their vectors now
            let (first_end, first_track) = (f.sender.idx(), f.tracks.start as usize);
            debug_assert_eq!(self.endpoints.len(), f.receiver.idx() + 1);
            debug_assert_eq!(self.tracks.links.len(), f.tracks.end as usize);
            self.endpoints.truncate(first_end);
            self.tracks.links.truncate(first_track);
        }
        flows.reverse();
        let links = self
            .channels
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let at_stop = stop.as_ref().map_or_else(|| c.counters_at(end), |s| s.channels[i]);
                let k = at_stop.since(start.as_ref().map_or(&zero_channel, |s| &s.channels[i]));
                LinkResult {
                    name: c.name.clone(),
                    from: self.node_names[c.from.idx()].clone(),
                    to: self.node_names[c.to.idx()].clone(),
                    rate_bps: c.rate_bps,
                    delay_s: as_secs_f64(c.nominal_delay()),
                    jitter_s: as_secs_f64(c.jitter()),
                    tx_packets: k.tx_packets,
                    tx_bytes: k.tx_bytes,
                    queue_drops: k.queue_drops,
                    loss_drops: k.loss_drops,
                    ecn_marks: k.ecn_marks,
                    utilisation: (k.tx_bytes + k.tx_packets * c.framing_bytes as u64) as f64 * 8.0
                        / (c.rate_bps as f64 * window),
                    queue_delay_s: (k.tx_packets > 0).then(|| k.queue_wait_ns as f64 / 1e9 / k.tx_packets as f64),
                }
            })
            .collect();
        let packet_hops = self
            .channels
            .iter()
            .map(|c| c.counters_at(self.duration).tx_packets)
            .sum();
        RunResult {
            scenario: self.name.clone(),
            seed: self.seed,
            duration_s: as_secs_f64(self.duration),
            measure_start_s: as_secs_f64(start_time),
            measure_stop_s: as_secs_f64(stop_time),
            events: self.events.executed(),
            packet_hops,
            wall_s,
            flows,
            links,
            series: self.meter.series.take(),
            unroutable_packets: self.unroutable,
        }
    }
}
