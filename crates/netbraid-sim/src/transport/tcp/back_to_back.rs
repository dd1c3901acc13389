//! A TCP sender and receiver back to back over one link (`testing::BackToBack`),
//! each owned by its application, as in a run: checks against the window/RTT
//! model, the receive buffer's bound, and back-pressure from a slow reader
//! (window closing, persist probes with backoff, resumption, no deadlock).

use super::{Recovery, TcpConfig, TcpReceiver, TcpSender};
use crate::app::{BulkSender, ReadPolicy, TcpReader};
use crate::engine::time::{MILLISECOND, SECOND};
use crate::engine::Time;
use crate::net::packet::Body;
use crate::testing::{BackToBack, Dir, Sent};

const MSS: u32 = 1460;

fn config(rcvbuf: u64) -> TcpConfig {
    TcpConfig {
        mss: MSS,
        rcvbuf,
        sndbuf: 1 << 30,
        recovery: Recovery::Sack,
        ..TcpConfig::default()
    }
}

fn pair(cfg: TcpConfig, policy: ReadPolicy, rate_bps: u64, delay: Time) -> BackToBack<BulkSender, TcpReader> {
    let sender = BulkSender::new(TcpSender::from_config(cfg.clone()).unwrap(), None);
    let reader = TcpReader::new(TcpReceiver::new(cfg.clone()), policy);
    let mut h = BackToBack::new(sender, reader, rate_bps, delay);
    h.start();
    h
}

/// Bytes the receiving application read between two times (goodput).
fn read_between(h: &mut BackToBack<BulkSender, TcpReader>, from: Time, to: Time) -> u64 {
    h.run_until(from);
    let before = h.b_stats().counters.read_bytes;
    h.run_until(to);
    h.b_stats().counters.read_bytes - before
}

fn window(s: &Sent) -> Option<u64> {
    match (s.dir, s.body) {
        (Dir::BtoA, Body::Tcp(seg)) => Some(seg.wnd as u64),
        _ => None,
    }
}

fn is_probe(s: &Sent) -> bool {
    matches!((s.dir, s.body), (Dir::AtoB, Body::Tcp(seg)) if seg.len == 0)
}

/// protocols.md §1.10 property 1: lossless and window-limited (64 KiB, base
/// RTT 100 ms, 100 Mb/s, so W < BDP): goodput = W/RTT = 5.24 Mb/s ± 3 %. The
/// sender sends whole segments only, so W is ⌊65536/1460⌋ segments.
#[test]
fn window_limited_goodput_is_window_over_rtt() {
    let mut h = pair(config(65536), ReadPolicy::Waiting, 100_000_000, 50 * MILLISECOND);
    let got = read_between(&mut h, 10 * SECOND, 30 * SECOND) as f64 * 8.0 / 20.0;
    let want = 65536.0 * 8.0 / 0.1;
    assert!((got - want).abs() / want < 0.03, "{got} vs {want}");
}

/// A reader draining 1 Mb/s behind a 10 Mb/s link sets the pace: goodput
/// 1 Mb/s ± 2 %, the advertised window closes to about what the reader
/// drains in a round trip, window updates reopen it,
/// and the buffer never holds more than its size.
#[test]
fn slow_reader_sets_the_pace() {
    let rcvbuf = 64 * 1024;
    let policy = ReadPolicy::Rate {
        rate_bps: 1_000_000,
        chunk: MSS as u64,
    };
    let mut h = pair(config(rcvbuf), policy, 10_000_000, 10 * MILLISECOND);
    let mut t = 0;
    while t < 5 * SECOND {
        t += MILLISECOND;
        h.run_until(t);
        let c = h.b_stats().counters;
        assert!(
            c.delivered_bytes - c.read_bytes <= rcvbuf,
            "buffer holds {} B > {rcvbuf} B",
            c.delivered_bytes - c.read_bytes
        );
    }
    let got = read_between(&mut h, 5 * SECOND, 25 * SECOND) as f64 * 8.0 / 20.0;
    assert!((got - 1e6).abs() / 1e6 < 0.02, "goodput {got}");
    // The window closes to what the reader drains while a window update
    // travels and the sender answers (rate × RTT), plus the segments that
    // rounding to whole segments and SWS avoidance leave: far below the buffer.
    let steady: Vec<u64> = h.log.iter().filter(|s| s.at > 5 * SECOND).filter_map(window).collect();
    let bound = 1e6 / 8.0 * 0.020 + 3.0 * MSS as f64;
    assert!(
        steady.iter().all(|&w| (w as f64) <= bound),
        "window up to {:?} > {bound}",
        steady.iter().max()
    );
    assert!(h.b_stats().counters.window_updates > 0);
    assert_eq!(h.a_stats().counters.retransmits, 0, "back-pressure is not loss");
}

/// The reader stops: the window closes with nothing in flight, and the
/// sender probes on the persist timer at RTO, 2·RTO, 4·RTO… When the reader
/// comes back, its window update is lost on purpose; the next probe's ACK
/// reopens the window and the transfer resumes (no deadlock).
#[test]
fn zero_window_persist_probes_back_off_and_recover() {
    let rcvbuf = 32 * 1024;
    let mut h = pair(config(rcvbuf), ReadPolicy::Paused, 10_000_000, 10 * MILLISECOND);
    h.run_until(60 * SECOND);
    let probes: Vec<Time> = h.log.iter().filter(|s| is_probe(s)).map(|s| s.at).collect();
    assert!(probes.len() >= 4, "{} probes", probes.len());
    let gaps: Vec<f64> = probes.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    for g in gaps.windows(2) {
        let ratio = g[1] / g[0];
        assert!(
            (ratio - 2.0).abs() < 0.01 || g[1] >= 59.0 * SECOND as f64,
            "backoff ratio {ratio}"
        );
    }
    let stalled = h.b_stats().counters.delivered_bytes;
    assert!(stalled <= rcvbuf);
    // The reader resumes; drop its first window update.
    let resume = h.now;
    let mut dropped_one = false;
    h.drop = Box::new(move |s| {
        let update = s.at >= resume && matches!((s.dir, s.body), (Dir::BtoA, Body::Tcp(seg)) if seg.wnd > 0);
        let drop = update && !dropped_one;
        dropped_one |= drop;
        drop
    });
    let mut out = Vec::new();
    h.b.set_policy(resume, ReadPolicy::Waiting, &mut out);
    assert_eq!(out.len(), 1, "reading reopens the window with an update");
    h.send(Dir::BtoA, &mut out); // on the link: the filter drops it
    assert!(h.log.last().is_some_and(|s| s.dropped), "the window update was lost");
    h.run_until(resume + 130 * SECOND);
    let after = h.b_stats().counters.read_bytes;
    assert!(after > stalled + 10 * rcvbuf, "transfer did not resume: {after} B read");
}

/// A receiver on its own: delayed ACKs every second full segment, an
/// immediate ACK with a SACK block for out-of-order data, and data beyond
/// the advertised window refused.
#[test]
fn receiver_acks_and_bounds() {
    use crate::net::packet::{tcp_flags, TcpSegment};
    let cfg = TcpConfig {
        mss: 1000,
        rcvbuf: 4000,
        ..TcpConfig::default()
    };
    let mut r = TcpReceiver::new(cfg.clone());
    let mut out = Vec::new();
    let seg = |seq: u64| TcpSegment {
        seq,
        len: 1000,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    r.on_segment(0, &seg(0), 1040, false, &mut out);
    assert!(out.is_empty(), "first segment: ACK delayed");
    assert!(r.poll_at().is_some());
    r.on_segment(1, &seg(1000), 1040, false, &mut out);
    assert_eq!(out.len(), 1, "second full segment: ACK now (RFC 5681 §4.2)");
    let Body::Tcp(a) = out[0].body else { unreachable!() };
    assert_eq!(
        (a.ack, a.wnd),
        (2000, 2000),
        "nothing read yet: the window is the free buffer"
    );
    out.clear();
    r.on_segment(2, &seg(3000), 1040, false, &mut out);
    let Body::Tcp(a) = out[0].body else { unreachable!() };
    assert_eq!(
        a.sack.iter(a.ack).collect::<Vec<_>>(),
        vec![(3000, 4000)],
        "out of order: ACK at once, with SACK"
    );
    out.clear();
    r.on_segment(3, &seg(4000), 1040, false, &mut out);
    assert_eq!(r.buffered(), 3000, "beyond the right edge (4000): refused");
    assert_eq!(r.read(10_000, &mut out), 2000);
    assert_eq!(r.buffered(), 1000);
}
