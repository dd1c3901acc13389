//! The simulation end to end, from Rust: paths chosen per packet, five-tuple
//! ECMP, links used per flow, conservation and determinism.

use super::flows::{builtin, EndpointPair, FlowSetup};
use super::Simulation;
use crate::app::UdpSink;
use crate::endpoint::{Endpoint, Outbox, Received, Scope, Snapshot, Transmit};
use crate::engine::time::{MILLISECOND, SECOND};
use crate::engine::Time;
use crate::ids::IfaceId;
use crate::net::packet::{Body, UdpDatagram};
use crate::net::{format_addr, iface_addr};
use crate::scenario::*;
use crate::trace::counters::TransportCounters;
use crate::transport::tcp::TcpConfig;

fn direction(rate_bps: u64, delay_ns: u64) -> DirectionSpec {
    crate::testing::direction(rate_bps, delay_ns, 100)
}

fn scenario(nodes: &[(&str, bool)], links: &[(u32, u32)], flows: Vec<FlowSpec>, duration: Time) -> Scenario {
    Scenario {
        name: "test".into(),
        seed: 1,
        duration_ns: duration,
        nodes: nodes
            .iter()
            .map(|(n, r)| NodeSpec {
                name: n.to_string(),
                router: *r,
                multipath: Default::default(),
            })
            .collect(),
        links: links
            .iter()
            .map(|&(a, b)| LinkSpec {
                name: None,
                a,
                b,
                ab: direction(10_000_000, MILLISECOND),
                ba: direction(10_000_000, MILLISECOND),
            })
            .collect(),
        routes: vec![],
        flows,
        proxies: vec![],
        measure: MeasureSpec {
            start_ns: 0,
            stop_ns: duration,
            interval_ns: None,
        },
        pcap: vec![],
    }
}

fn flow(name: &str, src: u32, dst: u32, kind: FlowKind) -> FlowSpec {
    FlowSpec {
        name: name.into(),
        src,
        dst,
        src_iface: None,
        dst_iface: None,
        paths: vec![],
        start_ns: 0,
        start_jitter_ns: 0,
        via: vec![],
        stop_ns: None,
        kind,
    }
}

fn tcp() -> FlowKind {
    tcp_with(TcpConfig::default())
}

/// Exponential on-off UDP at `rate_bps` while on, 50 ms on and off on average.
fn on_off(rate_bps: u64) -> FlowKind {
    FlowKind::OnOff {
        rate_bps,
        packet_bytes: 1000,
        header_bytes: 28,
        burst_ns: 50 * MILLISECOND,
        idle_ns: 50 * MILLISECOND,
        distribution: "exponential".into(),
        shape: 1.5,
    }
}

/// An endless TCP flow with these settings.
fn tcp_with(tcp: TcpConfig) -> FlowKind {
    FlowKind::Tcp {
        tcp: tcp.into(),
        bytes: None,
        read_rate_bps: None,
    }
}

/// Sends `counts[i]` datagrams on path i at the start: the path is the
/// sender's choice, packet by packet.
struct PathChooser {
    counts: Vec<u64>,
    sent: Vec<TransportCounters>,
}

impl Endpoint for PathChooser {
    fn kind(&self) -> &'static str {
        "udp"
    }
    fn start(&mut self, _now: Time, out: &mut Outbox) {
        for (path, &n) in self.counts.iter().enumerate() {
            for seq in 0..n {
                let mut t = Transmit::new(Body::Udp(UdpDatagram { seq, len: 500 }), 528, false);
                t.path = path as u8;
                out.push(t);
                self.sent[path].packets_sent += 1;
            }
        }
    }
    fn on_packet(&mut self, _now: Time, _rx: Received<'_>, _out: &mut Outbox) {}
    fn on_timer(&mut self, _now: Time, _out: &mut Outbox) {}
    fn poll_at(&self) -> Option<Time> {
        None
    }
    fn path_count(&self) -> usize {
        self.counts.len()
    }
    fn snapshot(&mut self, _now: Time, scope: Scope) -> Snapshot {
        let counters = match scope {
            Scope::All => self.sent.iter().fold(TransportCounters::default(), |a, c| a.plus(c)),
            Scope::Path(i) => self.sent[i],
        };
        Snapshot { counters, sender: None }
    }
}

/// Read the source and destination addresses of every packet in a pcap file.
fn pcap_addresses(path: &std::path::Path) -> Vec<(String, String)> {
    let data = std::fs::read(path).unwrap();
    let mut at = 24;
    let mut out = Vec::new();
    while at + 16 <= data.len() {
        let caplen = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        let ip = &data[at + 16..at + 16 + caplen];
        let addr = |b: &[u8]| format!("{}.{}.{}.{}", b[0], b[1], b[2], b[3]);
        out.push((addr(&ip[12..16]), addr(&ip[16..20])));
        at += 16 + caplen;
    }
    out
}

/// A host with two interfaces on two disjoint paths sends on either, by
/// choice per packet: each path's packets cross that path's links only
/// (link counters and pcap), and the flow reports both paths.
#[test]
fn two_interfaces_send_on_the_path_chosen() {
    // a —(link 0)— r1 —(link 2)— b ;  a —(link 1)— r2 —(link 3)— b
    let nodes = [("a", false), ("r1", true), ("r2", true), ("b", false)];
    let mut f = flow(
        "two",
        0,
        3,
        FlowKind::Cbr {
            rate_bps: 1,
            packet_bytes: 1,
            header_bytes: 28,
        },
    );
    // a's interfaces are 0 (link 0) and 2 (link 1); b's are 5 (link 2) and 7 (link 3).
    f.paths = vec![
        PathSpec {
            src_iface: Some(0),
            dst_iface: Some(5),
        },
        PathSpec {
            src_iface: Some(2),
            dst_iface: Some(7),
        },
    ];
    let mut scn = scenario(&nodes, &[(0, 1), (0, 2), (1, 3), (2, 3)], vec![f], SECOND);
    let dir = std::env::temp_dir().join(format!("netbraid-two-paths-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (p0, p1) = (dir.join("a_r1.pcap"), dir.join("a_r2.pcap"));
    scn.pcap = vec![
        PcapSpec {
            channel: 0,
            path: p0.to_string_lossy().into(),
        },
        PcapSpec {
            channel: 2,
            path: p1.to_string_lossy().into(),
        },
    ];
    let factory = |_: &FlowSpec, setup: &FlowSetup| -> Result<EndpointPair, crate::SimError> {
        assert_eq!(setup.paths, 2);
        Ok((
            Box::new(PathChooser {
                counts: vec![3, 5],
                sent: vec![Default::default(); 2],
            }),
            Box::new(UdpSink::default()),
        ))
    };
    let r = Simulation::with_factory(&scn, &factory).unwrap().run().unwrap();
    let tx = |name: &str| r.links.iter().find(|l| l.name == name).unwrap().tx_packets;
    assert_eq!((tx("a->r1"), tx("r1->b")), (3, 3));
    assert_eq!((tx("a->r2"), tx("r2->b")), (5, 5));
    let (a0, a1, b0, b1) = (
        format_addr(iface_addr(IfaceId(0))),
        format_addr(iface_addr(IfaceId(2))),
        format_addr(iface_addr(IfaceId(5))),
        format_addr(iface_addr(IfaceId(7))),
    );
    assert_eq!(pcap_addresses(&p0), vec![(a0, b0); 3]);
    assert_eq!(pcap_addresses(&p1), vec![(a1, b1); 5]);
    let fl = &r.flows[0];
    assert_eq!(fl.subflows.len(), 2);
    assert_eq!(fl.subflows[0].links, ["a->r1", "r1->b"]);
    assert_eq!(fl.subflows[1].links, ["a->r2", "r2->b"]);
    assert_eq!(fl.subflows[0].packets_sent + fl.subflows[1].packets_sent, 8);
    assert_eq!(fl.packets_received, 8);
    std::fs::remove_dir_all(&dir).ok();
}

/// h1 — r1 =(m1 | m2)= r2 — h2 with per-flow ECMP at r1 and r2.
fn ecmp_scenario(n_flows: usize) -> Scenario {
    let nodes = [
        ("h1", false),
        ("r1", true),
        ("m1", true),
        ("m2", true),
        ("r2", true),
        ("h2", false),
    ];
    let flows = (0..n_flows).map(|i| flow(&format!("f{i}"), 0, 5, tcp())).collect();
    let mut scn = scenario(
        &nodes,
        &[(0, 1), (1, 2), (1, 3), (2, 4), (3, 4), (4, 5)],
        flows,
        2 * SECOND,
    );
    for n in [1, 4] {
        scn.nodes[n].multipath = crate::net::routing::Multipath::Ecmp;
    }
    scn
}

/// Connections between the same two hosts differ only in their ports; ECMP
/// hashes the five-tuple, so some take one path and some the other, each
/// sticks to one, and the same five-tuples pick the same paths every run.
#[test]
fn ecmp_splits_connections_by_five_tuple() {
    let run = || Simulation::new(&ecmp_scenario(8)).unwrap().run().unwrap();
    let r = run();
    let via = |links: &[String]| -> Vec<&str> {
        ["r1->m1", "r1->m2"]
            .into_iter()
            .filter(|m| links.iter().any(|l| l == m))
            .collect()
    };
    let paths: Vec<Vec<&str>> = r.flows.iter().map(|f| via(&f.links)).collect();
    assert!(
        paths.iter().all(|p| p.len() == 1),
        "a connection split across paths: {paths:?}"
    );
    assert!(
        paths.iter().any(|p| p == &["r1->m1"]) && paths.iter().any(|p| p == &["r1->m2"]),
        "{paths:?}"
    );
    let again = run();
    for (a, b) in r.flows.iter().zip(&again.flows) {
        assert_eq!(a.links, b.links);
        assert_eq!(a.goodput_bps, b.goodput_bps);
    }
}

/// Under ECMP a flow's links are not recorded hop by hop but walked from the
/// tables with its five-tuple hash: the walk finds exactly the links that
/// recording every packet finds, for both directions of every connection.
#[test]
fn ecmp_links_walked_by_hash_match_links_recorded() {
    let scn = ecmp_scenario(8);
    let run = |mark: bool| {
        let mut sim = Simulation::new(&scn).unwrap();
        assert!(!sim.mark_links, "ECMP alone needs no recording");
        sim.mark_links = mark;
        sim.run().unwrap()
    };
    let (walked, recorded) = (run(false), run(true));
    for (a, b) in walked.flows.iter().zip(&recorded.flows) {
        assert_eq!(a.links, b.links, "{}", a.name);
        assert_eq!(a.links.len(), 8, "{}: both directions over four links", a.name);
    }
}

/// Conservation for every flow of a lossy, congested run: bytes sent =
/// delivered + dropped + in flight.
#[test]
fn conservation_with_loss_and_congestion() {
    let mut scn = ecmp_scenario(6);
    scn.links[1].ab.loss = LossSpec::Bernoulli { p: 0.01 };
    scn.links[1].ab.queue.packets = Some(5);
    let r = Simulation::new(&scn).unwrap().run().unwrap();
    for f in &r.flows {
        let a = f.accounting;
        assert_eq!(
            a.sent_bytes,
            a.delivered_bytes + a.dropped_bytes + a.in_flight_bytes,
            "{}",
            f.name
        );
    }
    assert!(r.flows.iter().map(|f| f.accounting.dropped_bytes).sum::<u64>() > 0);
}

/// A packet the link loses on the wire is one the flow loses, counted at the
/// same instant (its departure): over measurement windows and run ends that
/// fall while lost packets are still on a long wire, the flow's lost packets
/// equal the link's loss drops, and conservation holds at the end.
#[test]
fn wire_losses_count_for_the_flow_when_the_link_counts_them() {
    for (stop, end) in [
        (1_013_000_000, 3_020_000_000),
        (2_000_000_000, 2_000_000_000),
        (777_777_777, 1_234_567_890),
    ] {
        let cbr = FlowKind::Cbr {
            rate_bps: 5_000_000,
            packet_bytes: 1000,
            header_bytes: 28,
        };
        let mut scn = scenario(
            &[("a", false), ("b", false)],
            &[(0, 1)],
            vec![flow("u", 0, 1, cbr)],
            end,
        );
        scn.links[0].ab.delay_ns = 50 * MILLISECOND;
        scn.links[0].ab.loss = LossSpec::Bernoulli { p: 0.1 };
        scn.measure.start_ns = 100_000_000;
        scn.measure.stop_ns = stop;
        let r = Simulation::new(&scn).unwrap().run().unwrap();
        let f = &r.flows[0];
        let link = r.links.iter().find(|l| l.name == "a->b").unwrap();
        assert!(link.loss_drops > 10, "the case must lose packets");
        assert_eq!(f.packets_lost, link.loss_drops, "window ending at {stop}");
        let a = f.accounting;
        assert_eq!(a.sent_bytes, a.delivered_bytes + a.dropped_bytes + a.in_flight_bytes);
    }
}

/// One TCP flow a → b over one link (10 Mb/s, 1 ms each way).
fn tcp_over_one_link(duration: Time) -> Scenario {
    scenario(
        &[("a", false), ("b", false)],
        &[(0, 1)],
        vec![flow("t", 0, 1, tcp())],
        duration,
    )
}

/// Packets held by a link's jitter line when the run ends are in flight:
/// conservation holds with lossy, jittered links whose lines are full at the
/// end (a TCP flow mid-transfer, its data and ACKs both delayed ±5 ms), and
/// the link reports the delay and jitter it was given.
#[test]
fn conservation_with_packets_held_by_jitter_at_the_end() {
    let mut scn = tcp_over_one_link(2_345_678_901);
    let link = &mut scn.links[0];
    for d in [&mut link.ab, &mut link.ba] {
        d.delay_ns = 20 * MILLISECOND;
        d.jitter_ns = 5 * MILLISECOND;
    }
    scn.links[0].ab.loss = LossSpec::Bernoulli { p: 0.01 };
    let r = Simulation::new(&scn).unwrap().run().unwrap();
    let a = r.flows[0].accounting;
    assert!(
        a.in_flight_bytes > 0 && a.dropped_bytes > 0,
        "the case must end mid-flight and lose packets"
    );
    assert_eq!(a.sent_bytes, a.delivered_bytes + a.dropped_bytes + a.in_flight_bytes);
    let link = r.links.iter().find(|l| l.name == "a->b").unwrap();
    assert_eq!((link.delay_s, link.jitter_s), (0.020, 0.005));
}

/// Jitter above the delay is refused, naming the field and both values.
#[test]
fn jitter_above_the_delay_is_refused() {
    let mut scn = tcp_over_one_link(SECOND);
    scn.links[0].ba.jitter_ns = 1_500_000;
    let err = Simulation::new(&scn).err().expect("refused").to_string();
    assert!(
        err.contains("links[0].ba.jitter") && err.contains("1500us is more than the delay (1ms)"),
        "{err}"
    );
}

/// Built-in kinds use one path; asking for two is a clear error.
#[test]
fn single_path_kinds_refuse_several_paths() {
    let mut f = flow("x", 0, 3, tcp());
    f.paths = vec![PathSpec::default(), PathSpec::default()];
    let setup = FlowSetup {
        field: "flow 'x'",
        seed: 1,
        start: 0,
        stop: Time::MAX,
        paths: 2,
    };
    let e = builtin(&f, &setup).err().unwrap().to_string();
    assert!(
        e.starts_with("flow 'x'.paths: a flow of this kind uses one path, not 2"),
        "{e}"
    );
}

/// Without multipath routing the links a flow used are read off the tables
/// rather than recorded per hop; recording them (the simple way, kept as the
/// oracle) gives the same lists, data and ACK directions alike.
#[test]
fn links_from_tables_match_links_recorded() {
    // h0, h1 — r0 — r1 — h2, h3 (a dumbbell) with TCP and a UDP flow
    let nodes = [
        ("h0", false),
        ("h1", false),
        ("r0", true),
        ("r1", true),
        ("h2", false),
        ("h3", false),
    ];
    let links = [(0, 2), (1, 2), (2, 3), (3, 4), (3, 5)];
    let flows = vec![
        flow("t", 0, 4, tcp()),
        flow(
            "u",
            1,
            5,
            FlowKind::Cbr {
                rate_bps: 1_000_000,
                packet_bytes: 500,
                header_bytes: 28,
            },
        ),
    ];
    let scn = scenario(&nodes, &links, flows, SECOND);
    let run = |mark: bool| {
        let mut sim = Simulation::new(&scn).unwrap();
        assert!(!sim.mark_links);
        sim.mark_links = mark;
        sim.run().unwrap()
    };
    let (walked, recorded) = (run(false), run(true));
    for (a, b) in walked.flows.iter().zip(&recorded.flows) {
        assert_eq!(a.links, b.links, "{}", a.name);
    }
    assert_eq!(
        walked.flows[0].links,
        ["h0->r0", "r0->h0", "r0->r1", "r1->r0", "r1->h2", "h2->r1"]
    );
    assert_eq!(
        walked.flows[1].links,
        ["h1->r0", "r0->r1", "r1->h3"],
        "UDP: no packets come back"
    );
}

/// Sends one datagram every 100 ms; its first timer (at 0) is already due
/// when its flow starts at 1 s.
struct Ticker {
    next: Time,
    sent: TransportCounters,
}

impl Endpoint for Ticker {
    fn kind(&self) -> &'static str {
        "udp"
    }
    fn on_packet(&mut self, _now: Time, _rx: Received<'_>, _out: &mut Outbox) {}
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        while self.next <= now {
            out.push(Transmit::new(
                Body::Udp(UdpDatagram {
                    seq: self.sent.packets_sent,
                    len: 100,
                }),
                128,
                false,
            ));
            self.sent.packets_sent += 1;
            self.next += 100 * MILLISECOND;
        }
    }
    fn poll_at(&self) -> Option<Time> {
        Some(self.next)
    }
    fn snapshot(&mut self, _now: Time, _scope: Scope) -> Snapshot {
        Snapshot {
            counters: self.sent,
            sender: None,
        }
    }
}

/// A timer that is already due when asked for runs at once, and the
/// endpoint's later timers still run (the wake-up is booked for when it
/// really happens).
#[test]
fn timers_already_due_run_now_and_later_ones_still_run() {
    let nodes = [("a", false), ("b", false)];
    let mut f = flow(
        "tick",
        0,
        1,
        FlowKind::Cbr {
            rate_bps: 1,
            packet_bytes: 1,
            header_bytes: 28,
        },
    );
    f.start_ns = SECOND;
    let scn = scenario(&nodes, &[(0, 1)], vec![f], 2 * SECOND);
    let factory = |_: &FlowSpec, _: &FlowSetup| -> Result<EndpointPair, crate::SimError> {
        let ticker: Box<dyn Endpoint> = Box::new(Ticker {
            next: 0,
            sent: TransportCounters::default(),
        });
        Ok((ticker, Box::new(UdpSink::default())))
    };
    let r = Simulation::with_factory(&scn, &factory).unwrap().run().unwrap();
    // at 1 s the eleven ticks due since 0 go at once, then one per 100 ms
    // up to 1.9 s inside the window that ends at 2 s (a timer lost after the
    // first wake-up would leave 11)
    assert_eq!(r.flows[0].packets_sent, 20);
    assert_eq!(r.flows[0].packets_received, 20);
}

/// Flows with the same TCP settings share one copy (a sender keeps it for
/// the whole run); flows with other settings keep their own.
#[test]
fn flows_with_the_same_settings_share_one_copy() {
    let cubic = tcp_with(TcpConfig {
        cc: "cubic".into(),
        ..TcpConfig::default()
    });
    let flows = vec![
        flow("a", 0, 1, tcp()),
        flow("b", 0, 1, tcp()),
        flow("c", 0, 1, cubic.clone()),
        flow("d", 0, 1, cubic),
    ];
    let mut scn = scenario(&[("x", false), ("y", false)], &[(0, 1)], flows, SECOND);
    scn.share_settings();
    assert_reno_pair_and_cubic_pair_share(&scn);
}

/// Flows 0 and 1 (Reno) point to one copy of their settings, flows 2 and 3
/// (CUBIC) to another.
fn assert_reno_pair_and_cubic_pair_share(scn: &Scenario) {
    let cfg = |i: usize| match &scn.flows[i].kind {
        FlowKind::Tcp { tcp, .. } => tcp.clone(),
        _ => unreachable!("TCP flows"),
    };
    assert!(std::sync::Arc::ptr_eq(&cfg(0), &cfg(1)), "equal settings are shared");
    assert!(std::sync::Arc::ptr_eq(&cfg(2), &cfg(3)));
    assert!(!std::sync::Arc::ptr_eq(&cfg(1), &cfg(2)), "different settings are not");
    assert_eq!((cfg(1).cc.as_str(), cfg(2).cc.as_str()), ("reno", "cubic"));
}

/// Parsing a resolved scenario shares equal TCP settings as it goes (so
/// that every flow's own copy is never alive at once): neighbours with the
/// same settings point to one copy, a flow with other settings has its own.
#[test]
fn parsed_flows_with_the_same_settings_share_one_copy() {
    let tcp = |cc: &str| {
        serde_json::to_value(TcpConfig {
            cc: cc.into(),
            ..TcpConfig::default()
        })
        .unwrap()
    };
    let flow = |name: &str, cc: &str| {
        serde_json::json!({"name": name, "src": 0, "dst": 1, "start_ns": 0, "stop_ns": null,
                           "kind": "tcp", "tcp": tcp(cc), "bytes": null})
    };
    let direction = serde_json::json!({"rate_bps": 1_000_000, "delay_ns": 1_000_000,
                                       "queue": {"packets": 100, "bytes": null}, "loss": {"model": "none"}});
    let json = serde_json::json!({
        "name": "share", "seed": 1, "duration_ns": 1_000_000_000,
        "nodes": [{"name": "x", "router": false}, {"name": "y", "router": false}],
        "links": [{"a": 0, "b": 1, "ab": direction, "ba": direction}],
        "flows": [flow("a", "reno"), flow("b", "reno"), flow("c", "cubic"), flow("d", "cubic")],
        "measure": {"start_ns": 0, "stop_ns": 1_000_000_000, "interval_ns": null},
    });
    let scn = crate::parse_scenario(&json.to_string()).unwrap();
    assert_reno_pair_and_cubic_pair_share(&scn);
}

/// Every kind of endpoint, each in a small scenario of its own over lossy,
/// congested links: the cases of the tests below.
fn endpoint_cases() -> Vec<(&'static str, Scenario)> {
    let linux_tcp = || TcpConfig {
        cc: "cubic".into(),
        cc_params: [
            ("hystart", true.into()),
            ("linux_integer", true.into()),
            ("beta", 0.7001953125.into()),
        ]
        .into_iter()
        .map(|(k, v): (&str, serde_json::Value)| (k.to_string(), v))
        .collect(),
        initial_window: 10,
        delack_timeout: 40 * MILLISECOND,
        quick_acks: 16,
        rto_min: 200 * MILLISECOND,
        max_sack_blocks: 3,
        rack: true,
        tlp: true,
        prr: true,
        ssthresh_from_cwnd: true,
        linux_rto: true,
        dsack: true,
        ..TcpConfig::default()
    };
    let tcp_named = |cc: &str| {
        tcp_with(TcpConfig {
            cc: cc.into(),
            ..TcpConfig::default()
        })
    };
    use crate::transport::mptcp::Scheduler;
    let mptcp_with = |cc: &str, scheduler: Scheduler| FlowKind::Mptcp {
        tcp: Box::new(TcpConfig {
            cc: cc.into(),
            ..TcpConfig::default()
        }),
        bytes: None,
        mptcp: Box::new(crate::transport::mptcp::MptcpConfig {
            scheduler,
            ..Default::default()
        }),
    };
    let sctp = |cmt: bool| FlowKind::Sctp {
        sctp: Box::new(crate::transport::sctp::SctpConfig {
            cmt,
            ..Default::default()
        }),
        bytes: None,
    };
    // a —(links 0, 1)— b: interfaces 0 and 2 on a, 1 and 3 on b
    let two_links = |name: &'static str, kind: FlowKind, two_paths: bool| {
        let mut flows = vec![flow(name, 0, 1, kind), flow("beside", 0, 1, tcp())];
        if two_paths {
            flows[0].paths = [(0, 1), (2, 3)]
                .map(|(s, d)| PathSpec {
                    src_iface: Some(s),
                    dst_iface: Some(d),
                })
                .to_vec();
        }
        (
            name,
            scenario(&[("a", false), ("b", false)], &[(0, 1), (0, 1)], flows, 3 * SECOND),
        )
    };
    let relayed = {
        // a — p — b, the flow split at p, an on-off source beside it
        let mut f = flow("relayed", 0, 2, tcp());
        f.via = vec![0]; // (proxy 0, at p)
        let flows = vec![f, flow("on-off", 0, 2, on_off(2_000_000))];
        let mut scn = scenario(
            &[("a", false), ("p", true), ("b", false)],
            &[(0, 1), (1, 2)],
            flows,
            3 * SECOND,
        );
        scn.proxies = vec![ProxySpec {
            node: 1,
            buffer_bytes: 64 * 1024,
            tcp: linux_tcp(),
        }];
        scn
    };
    let cases = vec![
        two_links("tcp", tcp(), false),
        two_links("tcp-linux", tcp_with(linux_tcp()), false),
        two_links(
            "tcp-bbr",
            tcp_with(TcpConfig {
                cc: "bbr".into(),
                cc_params: Default::default(),
                ..linux_tcp()
            }),
            false,
        ),
        two_links(
            "mptcp",
            FlowKind::Mptcp {
                tcp: Box::new(linux_tcp()),
                bytes: None,
                mptcp: Default::default(),
            },
            true,
        ),
        two_links(
            "mptcp-lia-minrtt-small-buffer",
            FlowKind::Mptcp {
                tcp: Box::new(TcpConfig {
                    cc: "lia".into(),
                    cc_params: Default::default(),
                    rcvbuf: 64 * 1024,
                    ..linux_tcp()
                }),
                bytes: None,
                mptcp: Box::new(crate::transport::mptcp::MptcpConfig {
                    scheduler: Scheduler::MinRtt,
                    opportunistic_retransmission: true,
                    penalisation: true,
                    reinjection: Some(crate::transport::mptcp::Reinjection::SubflowTimeout),
                    ..Default::default()
                }),
            },
            true,
        ),
        two_links(
            "mptcp-olia-round-robin",
            mptcp_with("olia", Scheduler::RoundRobin),
            true,
        ),
        two_links("mptcp-balia-redundant", mptcp_with("balia", Scheduler::Redundant), true),
        two_links("tcp-hstcp", tcp_named("hstcp"), false),
        two_links("tcp-ghstcp-approx", tcp_named("ghstcp-approx"), false),
        two_links(
            "tcp-ns2-tahoe",
            tcp_with(TcpConfig {
                semantics: crate::transport::tcp::Semantics::Ns2,
                recovery: crate::transport::tcp::Recovery::Tahoe,
                delayed_ack: false,
                ..TcpConfig::default()
            }),
            false,
        ),
        {
            // a reader slower than the path (the window closes and window
            // updates reopen it), ECN marks from RED, link jitter, and
            // link 0 down for a while (RTOs, backoff)
            let (name, mut scn) = two_links(
                "tcp-slow-reader-ecn-red-jitter-outage",
                FlowKind::Tcp {
                    tcp: TcpConfig {
                        ecn: true,
                        rcvbuf: 8 * 1024,
                        ..linux_tcp()
                    }
                    .into(),
                    bytes: None,
                    read_rate_bps: Some(400_000),
                },
                false,
            );
            scn.links[0].ab.queue.red = Some(crate::net::red::RedParams {
                min_th: 5.0,
                max_th: 15.0,
                max_p: 0.1,
                w_q: 0.002,
                gentle: true,
                ecn: true,
            });
            scn.links[0].ab.jitter_ns = 200 * 1000;
            scn.links[0].ab.down = vec![(SECOND, SECOND + 700 * MILLISECOND)];
            (name, scn)
        },
        two_links("sctp-cmt", sctp(true), true),
        two_links("sctp", sctp(false), true),
        ("relay and on-off", relayed),
    ];
    cases
        .into_iter()
        .map(|(name, mut scn)| {
            for l in &mut scn.links {
                l.ab.loss = LossSpec::Bernoulli { p: 0.002 };
            }
            (name, scn)
        })
        .collect()
}

/// A run's results as JSON, less what may differ between two runs of the
/// same scenario (the wall time, the count of events) and `drop`.
fn results_less(sim: Simulation, drop: &[&str]) -> serde_json::Value {
    let mut r = serde_json::to_value(sim.run().unwrap()).unwrap();
    let o = r.as_object_mut().unwrap();
    for key in ["wall_s", "events"].iter().chain(drop) {
        o.remove(*key);
    }
    for f in r["flows"].as_array().unwrap() {
        assert!(
            f["bytes_delivered"].as_u64().unwrap() > 0,
            "{} delivered nothing",
            f["name"]
        );
    }
    r
}

/// `a` and `b` are the same results: every field equal, floating-point
/// ones up to rounding (a time-weighted mean integrated in more steps is
/// summed in another order).
fn assert_same(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: other fields");
            for (k, v) in x {
                assert_same(v, &y[k], &format!("{at}.{k}"));
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}: other lengths");
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                assert_same(v, w, &format!("{at}[{i}]"));
            }
        }
        (Value::Number(x), Value::Number(y)) if x.is_f64() || y.is_f64() => {
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            assert!((x - y).abs() <= 1e-12 * x.abs().max(y.abs()), "{at}: {x} against {y}");
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

/// Endpoints are polled, not called back at their deadlines (smoltcp's
/// contract): the simulator may wake one when nothing is due — a timer
/// stopped or moved later leaves its wake-up in the queue — and what it
/// does must not depend on such wake-ups. Every kind of endpoint, run as
/// usual and then with a wake-up every 0.7 ms on top (a different phase
/// per endpoint), over lossy, congested links: the results must be the
/// same but for the count of events. (It found the SCTP sender starting a
/// sending round, with a fresh Max.Burst and CMT's next destination, on
/// every wake-up, and the MPTCP sender running its scheduler there, whose
/// penalisation is rationed by time.)
#[test]
fn spurious_wake_ups_change_nothing() {
    for (name, scn) in endpoint_cases() {
        let mut woken = Simulation::new(&scn).unwrap();
        for ep in 0..woken.endpoints.len() {
            for k in 0..(scn.duration_ns / (700 * 1000)) {
                let at = k * 700 * 1000 + 37 * 1000 * ep as Time;
                woken
                    .events
                    .schedule(at, super::Event::Wake(crate::ids::EndpointId(ep as u32)));
            }
        }
        let plain = results_less(Simulation::new(&scn).unwrap(), &[]);
        assert_same(&plain, &results_less(woken, &[]), &format!("{name}, woken"));
    }
}

/// Sampling time series reads every endpoint's state (through `&mut`:
/// integrals are brought up to the sample) every interval; it must not
/// change what the run does. The same cases with a sample every 7 ms: the
/// results the same but for the series.
#[test]
fn sampling_changes_nothing_but_the_series() {
    for (name, mut scn) in endpoint_cases() {
        let plain = results_less(Simulation::new(&scn).unwrap(), &["series"]);
        scn.measure.interval_ns = Some(7 * MILLISECOND);
        let sampled = results_less(Simulation::new(&scn).unwrap(), &["series"]);
        assert_same(&plain, &sampled, &format!("{name}, sampled"));
    }
}

/// What a measurement window reports does not depend on what happens after
/// it: the cases run for 3 s with the window [0, 2 s], and for 2 s. Only
/// what the results give as of the run's end may differ (the state at the
/// end — window, smoothed RTT, RTO, the smallest RTT seen, pacing rate —
/// and the whole run's accounting and packet-hops); every windowed figure,
/// the links' included, must be the same. (Guards against counting at the
/// window's edge what only the run's end decides, as a packet lost on the
/// wire is counted when it departs.)
#[test]
fn a_window_reports_the_same_in_a_longer_run() {
    const AT_THE_END: [&str; 9] = [
        "accounting",
        "cwnd_bytes",
        "srtt_s",
        "ssthresh_bytes",
        "rto_s",
        "rtt_min_s",
        "pacing_rate_bps",
        "completion_time_s",
        "relay_buffer_max_bytes",
    ];
    // (from every flow, and from its subflows and legs)
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(o) => {
                for key in AT_THE_END {
                    o.remove(key);
                }
                o.values_mut().for_each(strip);
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let windowed = |mut r: serde_json::Value| {
        strip(&mut r["flows"]);
        r
    };
    for (name, scn) in endpoint_cases() {
        let mut long = scn.clone();
        (long.duration_ns, long.measure.stop_ns) = (3 * SECOND, 2 * SECOND);
        let mut short = scn.clone();
        (short.duration_ns, short.measure.stop_ns) = (2 * SECOND, 2 * SECOND);
        let ends = ["duration_s", "packet_hops"];
        let long = windowed(results_less(Simulation::new(&long).unwrap(), &ends));
        let short = windowed(results_less(Simulation::new(&short).unwrap(), &ends));
        assert_same(&long, &short, &format!("{name}, window [0, 2 s] of 3 s against 2 s"));
    }
}

/// a — r1 — r2 — r3 — b: three routers that only pass packets along, TCP
/// both ways, SCTP, MPTCP over the one path and an on-off source, over a
/// lossy hop, a short queue, RED with ECN and an outage.
fn transit_chain() -> Scenario {
    let linux = tcp_with(TcpConfig {
        cc: "cubic".into(),
        ecn: true,
        rack: true,
        tlp: true,
        prr: true,
        delack_timeout: 40 * MILLISECOND,
        ..TcpConfig::default()
    });
    let flows = vec![
        flow("forward", 0, 4, tcp()),
        flow("backward", 4, 0, linux),
        flow(
            "sctp",
            0,
            4,
            FlowKind::Sctp {
                sctp: Default::default(),
                bytes: None,
            },
        ),
        flow(
            "mptcp",
            4,
            0,
            FlowKind::Mptcp {
                tcp: Default::default(),
                bytes: None,
                mptcp: Default::default(),
            },
        ),
        flow("on-off", 0, 4, on_off(3_000_000)),
    ];
    let mut scn = scenario(
        &[("a", false), ("r1", true), ("r2", true), ("r3", true), ("b", false)],
        &[(0, 1), (1, 2), (2, 3), (3, 4)],
        flows,
        3 * SECOND,
    );
    scn.links[1].ab.loss = LossSpec::Bernoulli { p: 0.005 };
    scn.links[2].ab.queue.packets = Some(8);
    scn.links[2].ab.rate_bps = 6_000_000;
    scn.links[1].ba.rate_bps = 5_000_000;
    scn.links[1].ba.queue.red = Some(crate::net::red::RedParams {
        min_th: 3.0,
        max_th: 10.0,
        max_p: 0.1,
        w_q: 0.01,
        gentle: true,
        ecn: true,
    });
    scn.links[2].ba.down = vec![(SECOND, SECOND + 300 * MILLISECOND)];
    scn
}

/// The channels of a scenario that hand their packets on at admission, as
/// (from, to) node names of each and of the next.
fn transit_of(sim: &Simulation) -> Vec<(String, String)> {
    let name = |c: crate::net::ChannelId| {
        let ch = &sim.channels[c.idx()];
        format!("{}>{}", sim.node_names[ch.from.idx()], sim.node_names[ch.to.idx()])
    };
    let mut pairs: Vec<(String, String)> = sim
        .transit
        .iter()
        .enumerate()
        .filter_map(|(i, t)| t.map(|next| (name(crate::net::ChannelId(i as u32)), name(next))))
        .collect();
    pairs.sort();
    pairs
}

/// A router that only passes packets along is crossed without an event
/// (`sim::transit`), and that changes nothing but the count of events:
/// the chain's results with it and without it, field by field, over drops,
/// losses, marks and an outage, with packets still between the routers at
/// the run's end.
#[test]
fn transit_routers_change_nothing_but_the_events() {
    let scn = transit_chain();
    let with = Simulation::new(&scn).unwrap();
    assert_eq!(transit_of(&with).len(), 6, "{:?}", transit_of(&with));
    assert!(transit_of(&with).contains(&("a>r1".into(), "r1>r2".into())));
    assert!(transit_of(&with).contains(&("r3>r2".into(), "r2>r1".into())));
    let without = || {
        let mut sim = Simulation::new(&scn).unwrap();
        sim.transit.iter_mut().for_each(|t| *t = None);
        sim
    };
    let events = |sim: Simulation| sim.run().unwrap().events;
    let (fewer, all) = (events(Simulation::new(&scn).unwrap()), events(without()));
    // (of a packet's four hops, three end at a transit router)
    assert!(fewer * 10 < all * 4, "{fewer} events against {all}");
    let without = without();
    let (with, without) = (results_less(with, &[]), results_less(without, &[]));
    assert_same(&with, &without, "transit");
    // (the hops the routers hand packets on to did drop, lose and mark)
    let sum = |k: &str| -> u64 {
        with["links"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l[k].as_u64().unwrap())
            .sum()
    };
    assert!(
        sum("queue_drops") > 0 && sum("loss_drops") > 0 && sum("ecn_marks") > 0,
        "{} {} {}",
        sum("queue_drops"),
        sum("loss_drops"),
        sum("ecn_marks")
    );
    for f in with["flows"].as_array().unwrap() {
        let a = &f["accounting"];
        let n = |k: &str| a[k].as_u64().unwrap();
        assert_eq!(
            n("sent_bytes"),
            n("delivered_bytes") + n("dropped_bytes") + n("in_flight_bytes"),
            "{}",
            f["name"]
        );
    }
}

/// Where an early hand-on could be seen, or the router does more than pass
/// packets along, it is not used.
#[test]
fn transit_only_where_nothing_sees_it() {
    let count = |scn: &Scenario| transit_of(&Simulation::new(scn).unwrap()).len();
    assert_eq!(count(&transit_chain()), 6);
    let mut s = transit_chain();
    s.measure.interval_ns = Some(100 * MILLISECOND);
    assert_eq!(count(&s), 0, "a time series");
    let mut s = transit_chain();
    s.measure.start_ns = MILLISECOND;
    assert_eq!(count(&s), 0, "a window after the start");
    let mut s = transit_chain();
    s.measure.stop_ns = 2 * SECOND;
    assert_eq!(count(&s), 0, "a window before the end");
    let mut s = transit_chain();
    s.routes = vec![RouteSpec {
        node: 1,
        dst_iface: 0,
        channel: 1,
    }];
    assert_eq!(count(&s), 0, "a static route");
    // a capture on r1—r2, jitter on r3—b: r1, r2 and r3 each touch one
    let mut s = transit_chain();
    let dir = std::env::temp_dir().join(format!("netbraid-transit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    s.pcap = vec![PcapSpec {
        channel: 2,
        path: dir.join("c.pcap").to_string_lossy().into(),
    }];
    assert_eq!(count(&s), 2, "a capture");
    std::fs::remove_dir_all(&dir).unwrap();
    let mut s = transit_chain();
    s.links[3].ba.jitter_ns = 100 * 1000;
    assert_eq!(count(&s), 4, "jitter");
    // a proxy at r2; a third neighbour of r2
    let mut s = transit_chain();
    s.flows[0].via = vec![0];
    s.proxies = vec![ProxySpec {
        node: 2,
        buffer_bytes: 64 * 1024,
        tcp: TcpConfig::default(),
    }];
    assert_eq!(count(&s), 4, "a proxy");
    let mut s = transit_chain();
    s.nodes.push(NodeSpec {
        name: "c".into(),
        router: false,
        multipath: Default::default(),
    });
    let mut extra = s.links[0].clone();
    (extra.a, extra.b) = (2, 5);
    s.links.push(extra);
    assert_eq!(count(&s), 4, "three neighbours");
}
