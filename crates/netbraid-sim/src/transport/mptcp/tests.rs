//! MPTCP end to end in the simulator, against expectations from outside the
//! code: path capacity, a single TCP on the same paths, exact delivery of a
//! finite transfer, the receive buffer's bound (protocols.md §5.5).

use std::cell::Cell;
use std::rc::Rc;

use super::{subflow_config, MptcpConfig, MptcpReceiver, Reinjection, Scheduler};
use crate::app::{ReadPolicy, Reader};
use crate::endpoint::{Endpoint, Outbox, Received, Scope, Snapshot};
use crate::engine::time::{MILLISECOND, SECOND};
use crate::engine::Time;
use crate::scenario::*;
use crate::sim::{builtin, EndpointPair, FlowSetup};
use crate::sim::{RunResult, Simulation};
use crate::testing::{two_links, PathNet};
use crate::transport::mptcp::MptcpSender;
use crate::transport::tcp::TcpConfig;

fn tcp_cfg(cc: &str) -> TcpConfig {
    TcpConfig {
        cc: cc.into(),
        ..TcpConfig::default()
    }
}

/// An MPTCP flow with subflows from each client interface to the server's
/// first address, as Linux's path manager makes them.
fn mptcp_flow(tcp: TcpConfig, scheduler: Scheduler, bytes: Option<u64>) -> FlowSpec {
    mptcp_flow_with(
        tcp,
        MptcpConfig {
            scheduler,
            ..MptcpConfig::default()
        },
        bytes,
    )
}

fn mptcp_flow_with(tcp: TcpConfig, mptcp: MptcpConfig, bytes: Option<u64>) -> FlowSpec {
    FlowSpec {
        name: "m".into(),
        src: 0,
        dst: 1,
        src_iface: None,
        dst_iface: None,
        paths: vec![
            PathSpec {
                src_iface: Some(0),
                dst_iface: Some(1),
            },
            PathSpec {
                src_iface: Some(2),
                dst_iface: Some(1),
            },
        ],
        start_ns: 0,
        start_jitter_ns: 0,
        via: vec![],
        stop_ns: None,
        kind: FlowKind::Mptcp {
            tcp: Box::new(tcp),
            bytes,
            mptcp: Box::new(mptcp),
        },
    }
}

/// A single TCP flow on path `k` (client interface 2k).
fn tcp_flow(tcp: TcpConfig, k: u32) -> FlowSpec {
    FlowSpec {
        name: format!("t{k}"),
        src: 0,
        dst: 1,
        src_iface: Some(2 * k),
        dst_iface: Some(2 * k + 1),
        paths: vec![],
        start_ns: 0,
        start_jitter_ns: 0,
        via: vec![],
        stop_ns: None,
        kind: FlowKind::Tcp {
            tcp: tcp.into(),
            bytes: None,
            read_rate_bps: None,
        },
    }
}

fn run(scn: &Scenario) -> RunResult {
    Simulation::new(scn).unwrap().run().unwrap()
}

/// An endpoint with a look at it after everything it handles (its start,
/// each packet, each timer): the tests' window on an end's state mid-run.
struct Observed<E> {
    inner: E,
    look: Box<dyn Fn(&E)>,
}

impl<E: Endpoint> Endpoint for Observed<E> {
    fn kind(&self) -> &'static str {
        self.inner.kind()
    }
    fn start(&mut self, now: Time, out: &mut Outbox) {
        self.inner.start(now, out);
        (self.look)(&self.inner);
    }
    fn on_packet(&mut self, now: Time, rx: Received<'_>, out: &mut Outbox) {
        self.inner.on_packet(now, rx, out);
        (self.look)(&self.inner);
    }
    fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        self.inner.on_timer(now, out);
        (self.look)(&self.inner);
    }
    fn poll_at(&self) -> Option<Time> {
        self.inner.poll_at()
    }
    fn path_count(&self) -> usize {
        self.inner.path_count()
    }
    fn snapshot(&mut self, now: Time, scope: Scope) -> Snapshot {
        self.inner.snapshot(now, scope)
    }
}

/// Runs the scenario with the MPTCP receiver watched: the most bytes it
/// ever held and the duplicate data bytes it dropped.
fn run_watched(scn: &Scenario) -> (RunResult, u64, u64) {
    let (max_held, duplicates) = (Rc::new(Cell::new(0)), Rc::new(Cell::new(0)));
    let (h, d) = (max_held.clone(), duplicates.clone());
    let factory = move |spec: &FlowSpec, setup: &FlowSetup| -> Result<EndpointPair, crate::SimError> {
        let (sender, receiver) = builtin(spec, setup)?;
        let FlowKind::Mptcp { tcp, .. } = &spec.kind else {
            return Ok((sender, receiver));
        };
        drop(receiver);
        let inner = Reader::new(MptcpReceiver::new(tcp, setup.paths), ReadPolicy::Waiting);
        let (h, d) = (h.clone(), d.clone());
        let look = move |r: &Reader<MptcpReceiver>| {
            h.set(r.socket().max_held());
            d.set(r.socket().duplicate_bytes());
        };
        Ok((
            sender,
            Box::new(Observed {
                inner,
                look: Box::new(look),
            }),
        ))
    };
    let r = Simulation::with_factory(scn, &factory).unwrap().run().unwrap();
    (r, max_held.get(), duplicates.get())
}

const MBPS: u64 = 1_000_000;

#[test]
fn two_clean_equal_paths_carry_twice_one_tcp() {
    for scheduler in [Scheduler::Default, Scheduler::MinRtt, Scheduler::RoundRobin] {
        let paths = || {
            [
                (50 * MBPS, 5 * MILLISECOND, LossSpec::None),
                (50 * MBPS, 5 * MILLISECOND, LossSpec::None),
            ]
        };
        let m = run(&two_links(
            paths(),
            vec![mptcp_flow(tcp_cfg("reno"), scheduler, None)],
            10 * SECOND,
            2 * SECOND,
        ));
        let t = run(&two_links(
            paths(),
            vec![tcp_flow(tcp_cfg("reno"), 0)],
            10 * SECOND,
            2 * SECOND,
        ));
        let (mg, tg) = (m.flows[0].goodput_bps, t.flows[0].goodput_bps);
        // one TCP fills its 50 Mb/s path (payload 1460 of 1500 B on the wire)
        assert!(tg > 0.95 * 50e6 * 1460.0 / 1500.0, "{scheduler:?}: tcp {tg}");
        assert!(mg > 1.9 * tg, "{scheduler:?}: mptcp {mg} vs tcp {tg}");
        let subs = &m.flows[0].subflows;
        assert_eq!(subs.len(), 2);
        for s in subs {
            assert!(
                (s.goodput_bps / mg - 0.5).abs() < 0.05,
                "{scheduler:?}: share {}",
                s.goodput_bps / mg
            );
        }
    }
}

#[test]
fn a_finite_transfer_is_delivered_exactly_once_despite_loss() {
    let bytes = 4_000_000;
    let paths = [
        (20 * MBPS, 5 * MILLISECOND, LossSpec::Bernoulli { p: 0.01 }),
        (20 * MBPS, 20 * MILLISECOND, LossSpec::None),
    ];
    let (r, max_held, _) = run_watched(&two_links(
        paths,
        vec![mptcp_flow(tcp_cfg("cubic"), Scheduler::Default, Some(bytes))],
        20 * SECOND,
        0,
    ));
    let f = &r.flows[0];
    assert_eq!(f.bytes_delivered, bytes, "every byte read once");
    assert!(f.completion_time_s.is_some());
    assert!(max_held <= TcpConfig::default().rcvbuf);
    // conservation at the packet level, both directions
    let a = &f.accounting;
    assert_eq!(a.sent_bytes, a.delivered_bytes + a.dropped_bytes + a.in_flight_bytes);
}

/// Connection-level conservation: at every packet or timer either end
/// handles, the data the sender has handed out (W), the data the receiver
/// has delivered in order (R) and the data the sender has seen DATA_ACKed
/// (A) keep A ≤ R ≤ W (nothing delivered that was not sent, nothing
/// acknowledged that was not delivered: what is in flight, W − R, is never
/// negative) and W − A within the send buffer; a finite transfer ends with W
/// = R = A = the bytes written. Over a lossy path, with a send buffer small
/// enough to bind.
#[test]
fn data_is_conserved_at_the_connection_level_throughout() {
    #[derive(Default)]
    struct Books {
        sent: Cell<u64>,
        delivered: Cell<u64>,
        acked: Cell<u64>,
        checks: Cell<u64>,
        broken: Cell<u64>,
        most_out: Cell<u64>,
    }
    impl Books {
        fn check(&self, sndbuf: u64) {
            let (w, r, a) = (self.sent.get(), self.delivered.get(), self.acked.get());
            self.checks.set(self.checks.get() + 1);
            self.most_out.set(self.most_out.get().max(w.saturating_sub(a)));
            if !(a <= r && r <= w && w - a <= sndbuf) {
                self.broken.set(self.broken.get() + 1);
            }
        }
    }
    let bytes = 3_000_000;
    let sndbuf = 256 * 1024;
    let tcp = TcpConfig {
        sndbuf,
        ..tcp_cfg("cubic")
    };
    let paths = [
        (20 * MBPS, 5 * MILLISECOND, LossSpec::Bernoulli { p: 0.02 }),
        (20 * MBPS, 20 * MILLISECOND, LossSpec::None),
    ];
    let scn = two_links(
        paths,
        vec![mptcp_flow(tcp, Scheduler::Default, Some(bytes))],
        30 * SECOND,
        0,
    );
    let books = Rc::new(Books::default());
    let b = books.clone();
    let factory = move |spec: &FlowSpec, setup: &FlowSetup| -> Result<EndpointPair, crate::SimError> {
        let FlowKind::Mptcp { tcp, bytes, mptcp } = &spec.kind else {
            return builtin(spec, setup);
        };
        let controllers = (0..setup.paths)
            .map(|_| crate::cc::build("", &tcp.cc, &tcp.cc_params, subflow_config(tcp).controller_config()))
            .collect::<Result<Vec<_>, _>>()?;
        let sender = crate::app::BulkSender::new(MptcpSender::new((**tcp).clone(), mptcp, controllers), *bytes);
        let reader = Reader::new(MptcpReceiver::new(tcp, setup.paths), ReadPolicy::Waiting);
        let (sb, rb, limit) = (b.clone(), b.clone(), tcp.sndbuf);
        let look_sender = move |s: &crate::app::BulkSender<MptcpSender>| {
            sb.sent.set(s.socket().data_sent());
            sb.acked.set(s.socket().data_acked());
            sb.check(limit);
        };
        let look_receiver = move |r: &Reader<MptcpReceiver>| {
            rb.delivered.set(r.socket().data_ack());
            rb.check(limit);
        };
        Ok((
            Box::new(Observed {
                inner: sender,
                look: Box::new(look_sender),
            }),
            Box::new(Observed {
                inner: reader,
                look: Box::new(look_receiver),
            }),
        ))
    };
    let r = Simulation::with_factory(&scn, &factory).unwrap().run().unwrap();
    assert!(books.checks.get() > 1000, "{} checks", books.checks.get());
    assert_eq!(books.broken.get(), 0, "of {} checks", books.checks.get());
    assert_eq!(
        (books.sent.get(), books.delivered.get(), books.acked.get()),
        (bytes, bytes, bytes)
    );
    assert_eq!(r.flows[0].bytes_delivered, bytes);
    // the send buffer was filled, and data was lost and sent again: the
    // bounds were tested where they bind
    assert!(
        books.most_out.get() > sndbuf / 2,
        "at most {} B out",
        books.most_out.get()
    );
    assert!(r.flows[0].retransmits > 0);
}

#[test]
fn a_cut_path_does_not_stop_the_transfer() {
    // From its 300th packet on, path 1 loses everything (the cable is pulled):
    // the subflow times out, its data goes again on path 0, and the transfer
    // completes with every byte delivered once, with either kernel's
    // reinjection. The out-of-tree kernel re-sends exactly the cut
    // subflow's data, so nothing arrives twice; upstream re-sends 32 KB
    // from DATA_ACK per timer firing, some of which path 0 had delivered.
    let bytes = 6_000_000;
    let cut = LossSpec::List {
        indices: (300..400_000).collect(),
    };
    for policy in [Reinjection::Upstream, Reinjection::SubflowTimeout] {
        let paths = [
            (20 * MBPS, 5 * MILLISECOND, LossSpec::None),
            (20 * MBPS, 5 * MILLISECOND, cut.clone()),
        ];
        let cfg = MptcpConfig {
            reinjection: Some(policy),
            ..MptcpConfig::default()
        };
        let (r, _, duplicates) = run_watched(&two_links(
            paths,
            vec![mptcp_flow_with(tcp_cfg("reno"), cfg, Some(bytes))],
            30 * SECOND,
            0,
        ));
        let f = &r.flows[0];
        assert_eq!(f.bytes_delivered, bytes, "{policy:?}");
        let done = f.completion_time_s.expect("the transfer completes");
        // 6 MB at 20 Mb/s take 2.4 s on one path alone: the cut costs timeouts, not the transfer
        assert!(done < 10.0, "{policy:?}: completed at {done} s");
        assert!(f.subflows[1].timeouts > 0);
        if policy == Reinjection::SubflowTimeout {
            assert_eq!(
                duplicates, 0,
                "the cut path delivered nothing, so nothing arrived twice"
            );
        }
    }
}

#[test]
fn a_small_shared_buffer_blocks_the_fast_path_behind_the_slow_one() {
    // protocols.md §5.4–5.5: 10 ms and 210 ms round trips, 10 Mb/s each,
    // a 64 KB connection buffer, far below RTT_max × Σ rate (525 KB): data
    // on the slow path holds DATA_ACK back, the fast path's data fills the
    // buffer, and the connection gets less than the fast path alone would.
    let mut tcp = tcp_cfg("reno");
    tcp.rcvbuf = 64 * 1024;
    tcp.sndbuf = 64 * 1024;
    let paths = || {
        [
            (10 * MBPS, 5 * MILLISECOND, LossSpec::None),
            (10 * MBPS, 105 * MILLISECOND, LossSpec::None),
        ]
    };
    let (m, max_held, duplicates) = run_watched(&two_links(
        paths(),
        vec![mptcp_flow(tcp.clone(), Scheduler::Default, None)],
        10 * SECOND,
        2 * SECOND,
    ));
    let t = run(&two_links(
        paths(),
        vec![tcp_flow(tcp.clone(), 0)],
        10 * SECOND,
        2 * SECOND,
    ));
    let (mg, tg) = (m.flows[0].goodput_bps, t.flows[0].goodput_bps);
    assert!(
        mg < 0.8 * tg,
        "mptcp {mg} should fall well below the fast path alone {tg}"
    );
    assert!(max_held <= tcp.rcvbuf, "held {max_held} > buffer {}", tcp.rcvbuf);
    assert_eq!(duplicates, 0);
}

#[test]
fn runs_are_deterministic() {
    let paths = || {
        [
            (20 * MBPS, 5 * MILLISECOND, LossSpec::Bernoulli { p: 0.005 }),
            (20 * MBPS, 15 * MILLISECOND, LossSpec::Bernoulli { p: 0.005 }),
        ]
    };
    let go = || {
        let r = run(&two_links(
            paths(),
            vec![mptcp_flow(tcp_cfg("cubic"), Scheduler::Default, None)],
            5 * SECOND,
            SECOND,
        ));
        (
            r.events,
            r.flows[0].goodput_bps,
            r.flows[0].subflows.iter().map(|s| s.retransmits).collect::<Vec<_>>(),
        )
    };
    assert_eq!(go(), go());
}

// ---- coupled congestion control (protocols.md §5.5) -----------------------------

#[test]
fn coupled_subflows_on_one_bottleneck_take_what_one_tcp_takes() {
    // client ⇉ r (two 100 Mb/s links) → server over one 20 Mb/s bottleneck,
    // shared with a TCP from a second host: LIA's total ≈ the TCP's (±20 %).
    // Uncoupled Reno subflows, for contrast, take about twice the TCP's.
    // (minRTT: the out-of-tree kernel's scheduler, which LIA ran with.)
    let dir = |rate_bps, delay_ns| crate::testing::direction(rate_bps, delay_ns, 50);
    let link = |a, b, rate, delay| LinkSpec {
        name: None,
        a,
        b,
        ab: dir(rate, delay),
        ba: dir(rate, delay),
    };
    let scn = |cc: &str, seed: u64| Scenario {
        name: "shared".into(),
        seed,
        duration_ns: 60 * SECOND,
        nodes: [("client", false), ("other", false), ("r", true), ("server", false)]
            .iter()
            .map(|(n, r)| NodeSpec {
                name: n.to_string(),
                router: *r,
                multipath: Default::default(),
            })
            .collect(),
        links: vec![
            link(0, 2, 100 * MBPS, MILLISECOND),
            link(0, 2, 100 * MBPS, MILLISECOND),
            link(1, 2, 100 * MBPS, MILLISECOND),
            link(2, 3, 20 * MBPS, 10 * MILLISECOND),
        ],
        routes: vec![],
        proxies: vec![],
        flows: vec![
            FlowSpec {
                dst: 3,
                paths: vec![
                    PathSpec {
                        src_iface: Some(0),
                        dst_iface: None,
                    },
                    PathSpec {
                        src_iface: Some(2),
                        dst_iface: None,
                    },
                ],
                ..mptcp_flow(tcp_cfg(cc), Scheduler::MinRtt, None)
            },
            FlowSpec {
                src: 1,
                dst: 3,
                src_iface: None,
                dst_iface: None,
                start_jitter_ns: 500 * MILLISECOND,
                via: vec![],
                ..tcp_flow(tcp_cfg("reno"), 0)
            },
        ],
        measure: MeasureSpec {
            start_ns: 10 * SECOND,
            stop_ns: 60 * SECOND,
            interval_ns: None,
        },
        pcap: vec![],
    };
    // the mean over three seeds (the TCP's start is jittered), so one
    // drop-tail synchronisation pattern does not decide
    let ratio = |cc: &str| {
        (1..=3)
            .map(|seed| {
                let r = run(&scn(cc, seed));
                r.flows[0].goodput_bps / r.flows[1].goodput_bps
            })
            .sum::<f64>()
            / 3.0
    };
    let (lia, reno) = (ratio("lia"), ratio("reno"));
    assert!((0.8..=1.2).contains(&lia), "LIA/TCP = {lia}");
    assert!(reno > 1.5, "uncoupled/TCP = {reno}");
}

#[test]
fn coupled_subflows_on_two_equally_lossy_paths_take_one_tcps_share() {
    // Two disjoint 100 Mb/s paths, 20 ms round trip, 1 % loss each: loss
    // limits every flow (Mathis: ~1.2 MSS/RTT/√p ≈ 7 Mb/s). Two LIA subflows
    // each act as AIMD(1/4, 1/2): together about one TCP, not two.
    let lossy = || {
        [
            (100 * MBPS, 10 * MILLISECOND, LossSpec::Bernoulli { p: 0.01 }),
            (100 * MBPS, 10 * MILLISECOND, LossSpec::Bernoulli { p: 0.01 }),
        ]
    };
    let goodput = |flow: FlowSpec| run(&two_links(lossy(), vec![flow], 60 * SECOND, 5 * SECOND)).flows[0].goodput_bps;
    let tcp = goodput(tcp_flow(tcp_cfg("reno"), 0));
    let lia = goodput(mptcp_flow(tcp_cfg("lia"), Scheduler::Default, None));
    let reno = goodput(mptcp_flow(tcp_cfg("reno"), Scheduler::Default, None));
    assert!((0.75..=1.35).contains(&(lia / tcp)), "LIA {lia} vs TCP {tcp}");
    assert!((1.7..=2.3).contains(&(reno / tcp)), "uncoupled {reno} vs TCP {tcp}");
}

#[test]
fn coupled_totals_reach_the_best_single_path() {
    // A clean 20 Mb/s path with a 20 ms round trip and a 20 Mb/s path with
    // 1 % loss and 80 ms: each coupled controller's total is at least 0.9 ×
    // what one TCP gets on the better path (RFC 6356 goal 1, protocols.md §5.5).
    let paths = || {
        [
            (20 * MBPS, 10 * MILLISECOND, LossSpec::None),
            (20 * MBPS, 40 * MILLISECOND, LossSpec::Bernoulli { p: 0.01 }),
        ]
    };
    let best = run(&two_links(
        paths(),
        vec![tcp_flow(tcp_cfg("reno"), 0)],
        30 * SECOND,
        5 * SECOND,
    ))
    .flows[0]
        .goodput_bps;
    for cc in ["lia", "olia", "balia"] {
        let total = run(&two_links(
            paths(),
            vec![mptcp_flow(tcp_cfg(cc), Scheduler::Default, None)],
            30 * SECOND,
            5 * SECOND,
        ))
        .flows[0]
            .goodput_bps;
        assert!(total >= 0.9 * best, "{cc}: {total} < 0.9 × {best}");
    }
}

#[test]
fn a_window_limited_connection_is_not_held_by_delayed_acks() {
    // 1 Gb/s paths, one with a 4 ms round trip, one with 0.1 ms, and a
    // 250 KB connection window: at least one window per slowest round trip
    // gets through (≥ 0.8 × 250 KB / 4 ms ≈ 410 Mb/s). A receiver that
    // announced the reopened window only with its next delayed ACK would
    // stall up to 200 ms per window.
    let mut tcp = tcp_cfg("cubic");
    tcp.rcvbuf = 250_000;
    tcp.sndbuf = 250_000;
    let paths = [
        (1000 * MBPS, 2 * MILLISECOND, LossSpec::None),
        (1000 * MBPS, 50_000, LossSpec::None),
    ];
    let r = run(&two_links(
        paths,
        vec![mptcp_flow(tcp, Scheduler::Default, None)],
        2 * SECOND,
        SECOND / 2,
    ));
    let bound = 0.8 * 250_000.0 * 8.0 / 0.0041;
    assert!(r.flows[0].goodput_bps > bound, "{} < {bound}", r.flows[0].goodput_bps);
}

// ---- failures and edge cases, driven directly ---------------------------------

/// The harness net with an MPTCP connection over `delay.len()` paths.
fn mptcp_net(tcp: TcpConfig, sched: Scheduler, cc: &str, delay: Vec<Time>, rate_bps: Vec<u64>) -> Net {
    let paths = delay.len();
    let mut cfg = tcp.clone();
    cfg.cc = cc.into();
    let ccs = (0..paths)
        .map(|_| crate::cc::build("", &cfg.cc, &cfg.cc_params, subflow_config(&cfg).controller_config()).unwrap())
        .collect();
    let mcfg = MptcpConfig {
        scheduler: sched,
        ..MptcpConfig::default()
    };
    let rx = MptcpReceiver::new(&cfg, paths);
    PathNet::new(MptcpSender::new(cfg, &mcfg, ccs), rx, delay, rate_bps)
}

type Net = PathNet<MptcpSender, MptcpReceiver>;

fn big_buffers(mb: u64) -> TcpConfig {
    TcpConfig {
        rcvbuf: mb << 20,
        sndbuf: mb << 20,
        ..TcpConfig::default()
    }
}

#[test]
fn a_reinjection_nobody_can_take_does_not_block_the_rest() {
    // Path 1 (1 s one way) is cut for good at 8 s; path 0 has an outage
    // from 8.5 to 10 s. Path 0's timeout queues its data for reinjection
    // while path 1 is full but not yet timed out; path 1 then times out for
    // good. Path 0 works again from 10 s: the connection must move on it.
    let mut net = mptcp_net(
        big_buffers(4),
        Scheduler::MinRtt,
        "reno",
        vec![10 * MILLISECOND, 1000 * MILLISECOND],
        vec![10 * MBPS, 10 * MBPS],
    );
    net.drop = Box::new(|p, _to_rx, now, _t| {
        (p == 1 && now >= 8 * SECOND) || (p == 0 && (8500 * MILLISECOND..10_000 * MILLISECOND).contains(&now))
    });
    net.start(None);
    net.run(20 * SECOND);
    let at20 = net.tx.data_acked();
    net.run(60 * SECOND);
    // 40 s of a working 10 Mb/s path: tens of megabytes
    assert!(
        net.tx.data_acked() > at20 + 10_000_000,
        "moved {} bytes in 40 s",
        net.tx.data_acked() - at20
    );
}

#[test]
fn data_reinjected_onto_a_subflow_that_then_fails_goes_again() {
    // Three paths; path 0 fails for good at 8 s (its data is reinjected on
    // the others), path 1 at 9.1 s, holding some of it: path 2 still works
    // and must get everything through.
    for sched in [Scheduler::Default, Scheduler::MinRtt] {
        let mut net = mptcp_net(
            big_buffers(4),
            sched,
            "reno",
            vec![20 * MILLISECOND, 5 * MILLISECOND, 40 * MILLISECOND],
            vec![10 * MBPS; 3],
        );
        net.drop =
            Box::new(|p, _to_rx, now, _t| (p == 0 && now >= 8 * SECOND) || (p == 1 && now >= 9100 * MILLISECOND));
        net.start(None);
        net.run(60 * SECOND);
        let a = net.tx.data_acked();
        net.run(120 * SECOND);
        assert!(
            net.tx.data_acked() > a + 10_000_000,
            "{sched:?}: moved {} bytes in 60 s",
            net.tx.data_acked() - a
        );
    }
}

#[test]
fn data_held_above_a_dead_subflows_hole_is_released() {
    // One loss on path 1 at 5 s, then path 1 is cut: the segments that arrived
    // above its hole can never move up on it; once their data came on path 0
    // and was DATA_ACKed, the connection's buffer must not count them.
    let tcp = TcpConfig {
        rcvbuf: 128 * 1024,
        sndbuf: 128 * 1024,
        ..TcpConfig::default()
    };
    let mut net = mptcp_net(
        tcp,
        Scheduler::Default,
        "reno",
        vec![5 * MILLISECOND, 20 * MILLISECOND],
        vec![50 * MBPS; 2],
    );
    let mut dropped_one = false;
    net.drop = Box::new(move |p, to_rx, now, t| {
        if p == 1 && to_rx && now >= 5 * SECOND && !dropped_one && t.size > 100 {
            dropped_one = true;
            return true;
        }
        p == 1 && now >= 5 * SECOND + 40 * MILLISECOND
    });
    net.start(None);
    net.run(30 * SECOND);
    let a = net.tx.data_acked();
    net.run(40 * SECOND);
    assert_eq!(net.rx.held(), 0, "bytes still counted as held");
    // the window is path 0's alone again: 128 KB per 10 ms round trip ≫ 50 Mb/s
    let mbps = (net.tx.data_acked() - a) as f64 * 8.0 / 10.0 / 1e6;
    // (a full segment: 1436 B of data in 1500 B on the wire)
    assert!(mbps > 0.9 * 50.0 * 1436.0 / 1500.0, "{mbps} Mb/s");
}

#[test]
fn a_new_subflow_starts_with_the_rtt_of_its_join() {
    // Paths of 10 ms and 800 ms round trip: the slow subflow's first RTT
    // comes from its MP_JOIN; without it the default scheduler would think
    // it drains at once and wait on it for a whole round trip.
    let mut net = mptcp_net(
        big_buffers(8),
        Scheduler::Default,
        "reno",
        vec![5 * MILLISECOND, 400 * MILLISECOND],
        vec![50 * MBPS, 50 * MBPS],
    );
    net.start(None);
    net.run(1700 * MILLISECOND);
    assert!(net.tx.is_active(1));
    let srtt = net.tx.subflow(1).srtt().expect("a sample from the join");
    assert!((790 * MILLISECOND..900 * MILLISECOND).contains(&srtt), "{srtt}");
    let a = net.tx.subflow(0).snd_max();
    net.run(2400 * MILLISECOND);
    let mbps = (net.tx.subflow(0).snd_max() - a) as f64 * 8.0 / 0.7 / 1e6;
    assert!(mbps > 25.0, "path 0 sent {mbps:.1} Mb/s");
}

fn lossy_paths(p: f64) -> [(u64, Time, LossSpec); 2] {
    [
        (10 * MBPS, 5 * MILLISECOND, LossSpec::Bernoulli { p }),
        (10 * MBPS, 20 * MILLISECOND, LossSpec::Bernoulli { p }),
    ]
}

#[test]
fn min_rtt_lia_on_two_lossy_paths_reaches_the_best_single_path() {
    // protocols.md §5.5 with minRTT: subflows get data only when they have
    // room, which must include limited transmit's (RFC 3042) as TCP's does.
    let (mut ratio, mut n) = (0.0, 0.0);
    for seed in 1..=3u64 {
        let mut t = two_links(
            lossy_paths(0.02),
            vec![tcp_flow(tcp_cfg("reno"), 0)],
            60 * SECOND,
            5 * SECOND,
        );
        t.seed = seed;
        let mut m = two_links(
            lossy_paths(0.02),
            vec![mptcp_flow(tcp_cfg("lia"), Scheduler::MinRtt, None)],
            60 * SECOND,
            5 * SECOND,
        );
        m.seed = seed;
        ratio += run(&m).flows[0].goodput_bps / run(&t).flows[0].goodput_bps;
        n += 1.0;
    }
    assert!(
        ratio / n >= 0.9,
        "LIA/minRTT total = {:.2} × the best single path",
        ratio / n
    );
}

#[test]
fn a_short_last_chunk_is_never_merged_with_the_next() {
    // The application's short last chunk waits in a subflow; a reinjected
    // chunk must not be queued behind it (a segment would span two mappings:
    // the sender's debug assertion). Seed 75 is one in which that happens:
    // with `can_queue`'s whole-segment test taken out, this run fails (the
    // first such seed from 1 up).
    let bytes = 776_599; // 540 × 1436 + 1159
    let mut scn = two_links(
        lossy_paths(0.15),
        vec![mptcp_flow(tcp_cfg("reno"), Scheduler::Default, Some(bytes))],
        120 * SECOND,
        0,
    );
    scn.seed = 75;
    assert_eq!(run(&scn).flows[0].bytes_delivered, bytes);
}

#[test]
fn subflow_shares_count_each_byte_once() {
    // With 5 % loss data is reinjected and some arrives twice: each byte is
    // credited to the subflow that brought it first.
    let bytes = 3_000_000;
    let (r, _, dups) = run_watched(&two_links(
        lossy_paths(0.05),
        vec![mptcp_flow(tcp_cfg("reno"), Scheduler::Default, Some(bytes))],
        200 * SECOND,
        0,
    ));
    let f = &r.flows[0];
    assert_eq!(f.bytes_delivered, bytes);
    let shares: f64 = f.subflows.iter().map(|s| s.share.unwrap()).sum();
    assert!(
        (shares - 1.0).abs() < 1e-9,
        "shares sum to {shares} ({dups} duplicate bytes)"
    );
}

#[test]
fn receive_buffer_optimisations_raise_goodput_under_a_small_buffer() {
    // protocols.md §5.4-5.5: 10 Mb/s paths with 10 and 210 ms round trips
    // and a 64 KB buffer (far below RTT_max × Σ rate ≈ 500 KB): goodput falls
    // below the fast path alone; opportunistic retransmission sends the chunk
    // holding DATA_ACK back again on the fast subflow, penalisation shrinks
    // the slow subflow's window: goodput rises. With minRTT, the out-of-tree
    // kernel's default, where these optimisations live: the fast path's
    // 5-packet queue keeps its cwnd (~20 KB) below the buffer, so minRTT
    // spills segments onto the slow subflow whenever the fast one is full.
    let tcp = TcpConfig {
        rcvbuf: 64 * 1024,
        sndbuf: 64 * 1024,
        cc: "reno".into(),
        ..TcpConfig::default()
    };
    let scenario = |flow: FlowSpec| {
        let mut s = two_links(
            [
                (10 * MBPS, 5 * MILLISECOND, LossSpec::None),
                (10 * MBPS, 105 * MILLISECOND, LossSpec::None),
            ],
            vec![flow],
            10 * SECOND,
            2 * SECOND,
        );
        s.links[0].ab.queue.packets = Some(5);
        s
    };
    let goodput = |opt: bool| {
        let cfg = MptcpConfig {
            opportunistic_retransmission: opt,
            penalisation: opt,
            scheduler: Scheduler::MinRtt,
            ..MptcpConfig::default()
        };
        let (r, max_held, _) = run_watched(&scenario(mptcp_flow_with(tcp.clone(), cfg, None)));
        assert!(max_held <= tcp.rcvbuf);
        r.flows[0].goodput_bps
    };
    let (without, with) = (goodput(false), goodput(true));
    let fast_alone = run(&scenario(tcp_flow(tcp.clone(), 0))).flows[0].goodput_bps;
    assert!(without < fast_alone, "{without} vs the fast path alone {fast_alone}");
    assert!(with > 1.3 * without, "with {with} vs without {without}");
}

#[test]
fn the_redundant_scheduler_sends_everything_on_every_path() {
    // Two clean 50 Mb/s paths: every byte goes on both, so the connection
    // gets one path's worth (not two), each subflow sends about all the
    // data, and a finite transfer is delivered exactly once.
    let paths = || {
        [
            (50 * MBPS, 5 * MILLISECOND, LossSpec::None),
            (50 * MBPS, 10 * MILLISECOND, LossSpec::None),
        ]
    };
    let r = run(&two_links(
        paths(),
        vec![mptcp_flow(tcp_cfg("reno"), Scheduler::Redundant, None)],
        10 * SECOND,
        2 * SECOND,
    ));
    let f = &r.flows[0];
    // a full segment: 1460 − 24 B of payload (the DSS option comes out of
    // it), 40 B of headers and the 24 B option, 1500 B on the wire
    let one_path = 50e6 * 1436.0 / 1500.0;
    assert!(
        f.goodput_bps > 0.9 * one_path && f.goodput_bps <= one_path * 1.001,
        "{}",
        f.goodput_bps
    );
    let bytes = 5_000_000;
    let (r, _, duplicates) = run_watched(&two_links(
        paths(),
        vec![mptcp_flow(tcp_cfg("reno"), Scheduler::Redundant, Some(bytes))],
        20 * SECOND,
        0,
    ));
    let f = &r.flows[0];
    assert_eq!(f.bytes_delivered, bytes);
    // the slower path's copies mostly arrive second; it skips only what the
    // faster one got DATA_ACKed before its turn came
    assert!(duplicates > bytes / 2, "{duplicates}");
    let sent: u64 = f.subflows.iter().map(|s| s.packets_sent).sum();
    assert!(
        sent as f64 > 1.5 * bytes as f64 / 1436.0,
        "{sent} data packets for {bytes} bytes"
    );
}

#[test]
fn late_copies_do_not_count_against_the_buffer_twice() {
    // A small buffer, loss on both paths and upstream's reinjection: copies of
    // data the connection already has arrive above holes in their subflows.
    // They are duplicates, not held data: the receiver never holds more
    // than its buffer, and every byte is delivered once.
    let tcp = TcpConfig {
        mss: 1448,
        rcvbuf: 20_000,
        sndbuf: 20_000,
        ..tcp_cfg("reno")
    };
    let paths = [
        (10 * MBPS, 5 * MILLISECOND, LossSpec::Bernoulli { p: 0.05 }),
        (10 * MBPS, 40 * MILLISECOND, LossSpec::Bernoulli { p: 0.02 }),
    ];
    let bytes = 1_000_001;
    let (r, max_held, _) = run_watched(&two_links(
        paths,
        vec![mptcp_flow(tcp.clone(), Scheduler::Default, Some(bytes))],
        120 * SECOND,
        0,
    ));
    assert_eq!(r.flows[0].bytes_delivered, bytes);
    assert!(max_held <= tcp.rcvbuf, "held {max_held} > {}", tcp.rcvbuf);
}

/// Every scheduler and reinjection policy, for the matrices below.
const SCHEDULERS: [Scheduler; 4] = [
    Scheduler::Default,
    Scheduler::MinRtt,
    Scheduler::RoundRobin,
    Scheduler::Redundant,
];
const POLICIES: [Reinjection; 2] = [Reinjection::Upstream, Reinjection::SubflowTimeout];

/// One case of a matrix: its error, or its panic's message, so that a
/// matrix lists every failing case rather than stopping at the first.
fn checked(case: impl FnOnce() -> Result<(), String> + std::panic::UnwindSafe) -> Result<(), String> {
    std::panic::catch_unwind(case).unwrap_or_else(|e| {
        let msg = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(format!("PANIC {msg}"))
    })
}

/// Many finite transfers across schedulers, reinjection policies, buffers,
/// segment sizes and impairments (loss, cut paths, outages): every one
/// completes with every byte delivered once and the receiver within its
/// buffer; failures are collected and listed together.
mod matrix_over_paths {
    use super::*;

    fn case(
        sched: Scheduler,
        policy: Reinjection,
        buf: Option<u64>,
        bytes: u64,
        paths: [(u64, Time, LossSpec); 2],
        mss: u32,
        cc: &str,
    ) -> Result<(), String> {
        let mut tcp = tcp_cfg(cc);
        tcp.mss = mss;
        if let Some(b) = buf {
            tcp.rcvbuf = b;
            tcp.sndbuf = b;
        }
        let cfg = MptcpConfig {
            scheduler: sched,
            reinjection: Some(policy),
            ..MptcpConfig::default()
        };
        let scn = two_links(
            paths,
            vec![mptcp_flow_with(tcp.clone(), cfg, Some(bytes))],
            120 * SECOND,
            0,
        );
        let (r, max_held, _) = run_watched(&scn);
        let f = &r.flows[0];
        let mut errs = vec![];
        if f.bytes_delivered != bytes {
            errs.push(format!("delivered {} of {bytes}", f.bytes_delivered));
        }
        if f.completion_time_s.is_none() {
            errs.push("not completed".into());
        }
        if max_held > tcp.rcvbuf {
            errs.push(format!("held {max_held} > {}", tcp.rcvbuf));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(format!("{errs:?} done={:?}", f.completion_time_s))
        }
    }

    #[test]
    fn every_transfer_completes_within_the_buffer() {
        let cut = |from: u64| LossSpec::List {
            indices: (from..400_000).collect(),
        };
        let cut_window = |from: u64, to: u64| LossSpec::List {
            indices: (from..to).collect(),
        };
        type Paths = [(u64, Time, LossSpec); 2];
        let path_sets: Vec<(&str, Paths)> = vec![
            (
                "loss1%/none",
                [
                    (20 * MBPS, 5 * MILLISECOND, LossSpec::Bernoulli { p: 0.01 }),
                    (20 * MBPS, 20 * MILLISECOND, LossSpec::None),
                ],
            ),
            (
                "loss5%/loss2%",
                [
                    (10 * MBPS, 5 * MILLISECOND, LossSpec::Bernoulli { p: 0.05 }),
                    (10 * MBPS, 40 * MILLISECOND, LossSpec::Bernoulli { p: 0.02 }),
                ],
            ),
            (
                "none/cut300",
                [
                    (20 * MBPS, 5 * MILLISECOND, LossSpec::None),
                    (20 * MBPS, 5 * MILLISECOND, cut(300)),
                ],
            ),
            (
                "cut50/none",
                [
                    (20 * MBPS, 5 * MILLISECOND, cut(50)),
                    (20 * MBPS, 30 * MILLISECOND, LossSpec::None),
                ],
            ),
            (
                "outage/loss",
                [
                    (20 * MBPS, 5 * MILLISECOND, cut_window(200, 1200)),
                    (5 * MBPS, 50 * MILLISECOND, LossSpec::Bernoulli { p: 0.02 }),
                ],
            ),
        ];
        let mut failures = vec![];
        let mut n = 0;
        for sched in SCHEDULERS {
            for policy in POLICIES {
                for buf in [None, Some(64 * 1024), Some(20_000)] {
                    // (86,864 B is a whole number of subflow segments at both
                    // sizes: 61 × 1424 and 89 × 976)
                    for bytes in [1_000_001u64, 86_864 * 8, 777] {
                        for (name, paths) in &path_sets {
                            for mss in [1448u32, 1000] {
                                n += 1;
                                if let Err(e) = checked(|| case(sched, policy, buf, bytes, paths.clone(), mss, "reno"))
                                {
                                    let line =
                                        format!("{sched:?} {policy:?} buf={buf:?} bytes={bytes} {name} mss={mss}: {e}");
                                    eprintln!("{line}");
                                    failures.push(line);
                                }
                            }
                        }
                    }
                }
            }
        }
        eprintln!("{} failures of {n}", failures.len());
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}

/// The same invariants through the direct-drive harness, with outages that
/// no LossSpec expresses: all paths out for seconds, flapping paths, ACKs
/// lost in one direction, 2 and 3 paths, a backup.
mod matrix_under_outages {
    use super::*;
    use crate::endpoint::Transmit;
    use crate::transport::{StreamReceiver, StreamSender};

    type Drop = Box<dyn FnMut(usize, bool, Time, &Transmit) -> bool>;

    fn rng(seed: &mut u64) -> f64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        (*seed >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A name, and a maker of the drop rule (each case gets a fresh one).
    type Impairment = (&'static str, fn() -> Drop);

    fn scenarios() -> Vec<Impairment> {
        vec![
            ("p1 dead at 1s", || Box::new(|p, _, now, _| p == 1 && now >= SECOND)),
            ("all out 1-3s", || {
                Box::new(|_, _, now, _| (SECOND..3 * SECOND).contains(&now))
            }),
            ("all out 1-20s", || {
                Box::new(|_, _, now, _| (SECOND..20 * SECOND).contains(&now))
            }),
            ("p0 dead 1s, p1 out 2-6s", || {
                Box::new(|p, _, now, _| {
                    (p == 0 && now >= SECOND) || (p == 1 && (2 * SECOND..6 * SECOND).contains(&now))
                })
            }),
            ("flap", || {
                Box::new(|p, _, now, _| {
                    let slot = (now / (700 * MILLISECOND)) as usize;
                    now > SECOND && slot % 3 == p
                })
            }),
            ("p1 acks lost", || {
                Box::new(|p, to_rx, now, _| p == 1 && !to_rx && now >= SECOND)
            }),
            ("p0 data lost 1-8s", || {
                Box::new(|p, to_rx, now, _| p == 0 && to_rx && (SECOND..8 * SECOND).contains(&now))
            }),
            ("all out 1-150s", || {
                Box::new(|_, _, now, _| (SECOND..150 * SECOND).contains(&now))
            }),
            ("p1 dead, all out 2-40s", || {
                Box::new(|p, _, now, _| (p == 1 && now >= SECOND) || (2 * SECOND..40 * SECOND).contains(&now))
            }),
            ("all acks lost 1-10s", || {
                Box::new(|_, to_rx, now, _| !to_rx && (SECOND..10 * SECOND).contains(&now))
            }),
            ("p0 acks lost forever at 1s", || {
                Box::new(|p, to_rx, now, _| p == 0 && !to_rx && now >= SECOND)
            }),
            ("p0 dead at 0.3s", || {
                Box::new(|p, _, now, _| p == 0 && now >= 300 * MILLISECOND)
            }),
            ("10% loss", || {
                let mut s = 0x9e3779b97f4a7c15u64;
                Box::new(move |_, _, _, _| rng(&mut s) < 0.10)
            }),
            ("30% loss p0", || {
                let mut s = 12345u64;
                Box::new(move |p, _, _, _| p == 0 && rng(&mut s) < 0.30)
            }),
        ]
    }

    #[allow(clippy::too_many_arguments)]
    fn one(
        sched: Scheduler,
        policy: Reinjection,
        backup: bool,
        paths: usize,
        buf: Option<u64>,
        bytes: u64,
        drop: Drop,
    ) -> Result<(), String> {
        let mut tcp = TcpConfig {
            rto_min: 200 * MILLISECOND,
            ..TcpConfig::default()
        };
        if let Some(b) = buf {
            tcp.rcvbuf = b;
            tcp.sndbuf = b;
        }
        let delay: Vec<Time> = [5, 30, 60][..paths].iter().map(|d| d * MILLISECOND).collect();
        let mut net = mptcp_net(tcp.clone(), sched, "reno", delay, vec![10 * MBPS; paths]);
        let mcfg = MptcpConfig {
            scheduler: sched,
            reinjection: Some(policy),
            backup: if backup {
                (0..paths).map(|i| i == paths - 1).collect()
            } else {
                vec![]
            },
            ..MptcpConfig::default()
        };
        let ccs = (0..paths)
            .map(|_| crate::cc::build("", "reno", &tcp.cc_params, subflow_config(&tcp).controller_config()).unwrap())
            .collect();
        net.tx = MptcpSender::new(tcp.clone(), &mcfg, ccs);
        net.drop = drop;
        net.start(Some(bytes));
        // (long enough for the slowest case: 3 MB through a one-segment
        // buffer over three flapping paths, ~7 KB/s, each loss a timeout,
        // done at 430 s)
        net.run(800 * SECOND);
        let read = net
            .rx
            .snapshot(net.now, crate::endpoint::Scope::All)
            .counters
            .read_bytes;
        let mut errs = vec![];
        if net.tx.data_acked() != bytes {
            errs.push(format!("data_acked {} of {bytes}", net.tx.data_acked()));
        }
        if read != bytes {
            errs.push(format!("read {read}"));
        }
        if net.tx.report().completed_at.is_none() {
            errs.push("not complete".into());
            errs.push(net.tx.debug_state());
            errs.push(net.rx.debug_state());
        }
        if net.rx.max_held() > tcp.rcvbuf {
            errs.push(format!("held {} > {}", net.rx.max_held(), tcp.rcvbuf));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(format!("{errs:?}"))
        }
    }

    #[test]
    fn every_transfer_completes_within_the_buffer() {
        let mut failures = vec![];
        let mut n = 0;
        for sched in SCHEDULERS {
            for policy in POLICIES {
                for (paths, backup) in [(2, false), (3, false), (3, true)] {
                    for buf in [
                        None,
                        Some(64 * 1024),
                        Some(16 * 1024),
                        Some(1500),
                        Some(2000),
                        Some(3000),
                    ] {
                        for bytes in [3_000_001u64, 1436 * 1000] {
                            for (name, mk) in scenarios() {
                                n += 1;
                                if let Err(e) = checked(|| one(sched, policy, backup, paths, buf, bytes, mk())) {
                                    let line = format!(
                                        "{sched:?} {policy:?} paths={paths} backup={backup} buf={buf:?} bytes={bytes} [{name}]: {e}"
                                    );
                                    eprintln!("{line}");
                                    failures.push(line);
                                }
                            }
                        }
                    }
                }
            }
        }
        eprintln!("{} failures of {n}", failures.len());
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }
}
