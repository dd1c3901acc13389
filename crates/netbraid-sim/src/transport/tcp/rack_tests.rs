//! RACK-TLP (RFC 8985) against the losses it exists for, each beside the
//! same run without it: a lost retransmission found without a timeout, and
//! a loss at the tail of a transfer repaired by a probe instead of a
//! timeout. A sender and receiver back to back (`testing::BackToBack`) with
//! chosen packets dropped.

use super::{Recovery, TcpConfig, TcpReceiver, TcpSender};
use crate::app::{BulkSender, ReadPolicy, TcpReader};
use crate::engine::time::{MILLISECOND, SECOND};
use crate::engine::Time;
use crate::net::packet::Body;
use crate::testing::{BackToBack, Dir, Sent};

const MSS: u64 = 1460;
/// 10 Mb/s, 20 ms one way: a 40 ms round trip, and an RTO of at least 1 s
/// (RFC 6298's minimum), so a timeout stands out.
const RATE: u64 = 10_000_000;
const DELAY: Time = 20 * MILLISECOND;

fn config(rack: bool) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        recovery: Recovery::Sack,
        rack,
        tlp: rack,
        log_congestion: true,
        ..TcpConfig::default()
    }
}

type Pair = BackToBack<BulkSender<TcpSender>, TcpReader>;

fn pair(rack: bool, bytes: Option<u64>, drop: impl FnMut(&Sent) -> bool + 'static) -> Pair {
    let cfg = config(rack);
    let sender = BulkSender::new(TcpSender::from_config(cfg.clone()).unwrap(), bytes);
    let reader = TcpReader::new(TcpReceiver::new(cfg.clone()), ReadPolicy::Waiting);
    let mut h = BackToBack::new(sender, reader, RATE, DELAY);
    h.drop = Box::new(drop);
    h.start();
    h
}

/// Drop the first `times` transmissions of the data segment starting at `seq`.
fn drop_segment(seq: u64, times: u32) -> impl FnMut(&Sent) -> bool {
    let mut seen = 0;
    move |s: &Sent| match (s.dir, s.body) {
        (Dir::AtoB, Body::Tcp(seg)) if seg.seq == seq && seg.len > 0 && seen < times => {
            seen += 1;
            true
        }
        _ => false,
    }
}

/// Segment 100 is lost, and so is its fast retransmission. RFC 6675 alone
/// cannot tell that a retransmission was lost: it waits for the RTO. RACK
/// sees segments sent after the retransmission delivered and marks it lost
/// a round trip later: no timeout, and the transfer goes on at once.
#[test]
fn rack_finds_a_lost_retransmission_without_a_timeout() {
    let bytes = 400 * MSS;
    let run = |rack: bool| {
        let mut h = pair(rack, Some(bytes), drop_segment(100 * MSS, 2));
        h.run_until(20 * SECOND);
        let (tx, rx) = (h.a_stats().counters, h.b_stats().counters);
        assert_eq!(rx.read_bytes, bytes, "rack={rack}: every byte delivered");
        // when the last byte arrived
        let done = h
            .log
            .iter()
            .filter(|s| s.dir == Dir::BtoA && matches!(s.body, Body::Tcp(seg) if seg.ack >= bytes))
            .map(|s| s.at)
            .min()
            .unwrap();
        (tx.timeouts, tx.retransmits, done)
    };
    let (rfc_timeouts, _, rfc_done) = run(false);
    let (rack_timeouts, rack_rtx, rack_done) = run(true);
    assert!(rfc_timeouts >= 1, "the control: RFC 6675 needs a timeout here");
    assert_eq!(rack_timeouts, 0, "RACK needs none");
    assert_eq!(rack_rtx, 2, "the segment twice, nothing else");
    // the RTO (at least 1 s) is what the RFC run loses
    assert!(
        rfc_done >= rack_done + SECOND / 2,
        "RACK {rack_done} ns vs RFC {rfc_done} ns"
    );
}

/// The last segment of a 20-segment transfer is lost: no segment after it
/// can bring SACKs. RFC 6675 waits for the RTO (at least 1 s); TLP sends a
/// probe — the last segment again — two round trips (+ the worst-case
/// delayed ACK: one segment is in flight) after the flight went quiet, and
/// the transfer ends without a timeout. The ACK of the probe is exactly at
/// its end, which (without D-SACK) cannot tell a repaired loss from a late
/// original (RFC 8985 §7.4.2): no window reduction.
#[test]
fn tlp_repairs_a_tail_loss_without_a_timeout() {
    let bytes = 20 * MSS;
    let run = |rack: bool| {
        let mut h = pair(rack, Some(bytes), drop_segment(19 * MSS, 1));
        h.run_until(10 * SECOND);
        let (tx, rx) = (h.a_stats().counters, h.b_stats().counters);
        assert_eq!(rx.read_bytes, bytes, "rack={rack}: every byte delivered");
        let done = h
            .log
            .iter()
            .filter(|s| s.dir == Dir::BtoA && matches!(s.body, Body::Tcp(seg) if seg.ack >= bytes))
            .map(|s| s.at)
            .min()
            .unwrap();
        let reductions =
            h.a.socket()
                .congestion_log()
                .iter()
                .filter(|r| r.kind == "tlp_recovery")
                .count();
        (tx.timeouts, tx.loss_probes, done, reductions)
    };
    let (rfc_timeouts, rfc_probes, rfc_done, _) = run(false);
    let (tlp_timeouts, tlp_probes, tlp_done, reductions) = run(true);
    assert_eq!((rfc_timeouts, rfc_probes), (1, 0), "the control: an RTO");
    assert!(rfc_done > SECOND, "RFC: after the RTO ({rfc_done} ns)");
    assert_eq!((tlp_timeouts, tlp_probes), (0, 1));
    // the last data went out well under 1 s (slow start over a 40 ms round
    // trip: a few round trips), then PTO = 2 SRTT + 200 ms, then one round trip
    assert!(tlp_done < 600 * MILLISECOND, "TLP: done at {tlp_done} ns");
    assert_eq!(reductions, 0, "an ACK at the probe's end is no proof of a loss");
}

/// Without losses RACK-TLP changes nothing: the same packets at the same
/// times as RFC 6675, and no probe (ACKs keep coming, so the probe timer
/// never fires while data is in flight).
#[test]
fn without_losses_rack_tlp_sends_what_rfc_6675_sends() {
    let log = |rack: bool| {
        let mut h = pair(rack, Some(300 * MSS), |_| false);
        h.run_until(5 * SECOND);
        assert_eq!(h.a_stats().counters.loss_probes, 0);
        h.log.iter().map(|s| (s.at, s.dir, s.body)).collect::<Vec<_>>()
    };
    assert_eq!(log(true), log(false));
}

/// Drop every data packet of one pattern: each (segment, transmission)
/// pair is lost with probability `p`, decided by a hash of the pair and the
/// seed, so runs with and without RACK-TLP meet the same losses.
fn pattern(seed: u64, p: f64) -> impl FnMut(&Sent) -> bool {
    let mut sent = std::collections::HashMap::<u64, u64>::new();
    move |s: &Sent| match (s.dir, s.body) {
        (Dir::AtoB, Body::Tcp(seg)) if seg.len > 0 => {
            let n = sent.entry(seg.seq).or_insert(0);
            *n += 1;
            let mut x = seed ^ seg.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03);
            x ^= x >> 31;
            x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x ^= x >> 29;
            (x as f64 / u64::MAX as f64) < p
        }
        _ => false,
    }
}

fn done_at(h: &Pair, bytes: u64) -> Option<Time> {
    h.log
        .iter()
        .filter(|s| s.dir == Dir::BtoA && matches!(s.body, Body::Tcp(seg) if seg.ack >= bytes))
        .map(|s| s.at)
        .min()
}

/// Everything sent between 300 and 700 ms is lost (an RTO), and then the
/// second segment of the go-back-N is lost again. RACK marks that resend
/// lost once later segments arrive, and it goes again within a round trip
/// (as Linux resends lost-marked data in timeout recovery), with no second,
/// backed-off timeout; TLP stays quiet while the timeout's recovery lasts.
#[test]
fn a_lost_resend_after_a_timeout_goes_again_without_another() {
    for tlp in [false, true] {
        let bytes = 2000 * MSS;
        let (mut first, mut dropped) = (None, false);
        let drop = move |s: &Sent| match (s.dir, s.body) {
            (Dir::AtoB, Body::Tcp(seg)) if seg.len > 0 => {
                if (300 * MILLISECOND..700 * MILLISECOND).contains(&s.at) {
                    return true;
                }
                if s.at >= 700 * MILLISECOND {
                    let head = *first.get_or_insert(seg.seq);
                    if !dropped && seg.seq == head + MSS {
                        dropped = true;
                        return true;
                    }
                }
                false
            }
            _ => false,
        };
        let mut cfg = config(true);
        cfg.tlp = tlp;
        let sender = BulkSender::new(TcpSender::from_config(cfg.clone()).unwrap(), Some(bytes));
        let reader = TcpReader::new(TcpReceiver::new(cfg.clone()), ReadPolicy::Waiting);
        let mut h = BackToBack::new(sender, reader, RATE, DELAY);
        h.drop = Box::new(drop);
        h.start();
        h.run_until(60 * SECOND);
        assert_eq!(h.a_stats().counters.timeouts, 1, "tlp={tlp}");
        // 2000 segments at 10 Mb/s take 2.3 s; with the timeout (≥ 1 s after
        // 700 ms) and slow start again, well under 6 s
        let done = done_at(&h, bytes);
        assert!(done.is_some_and(|d| d < 6 * SECOND), "tlp={tlp}: done at {done:?}");
    }
}

/// Random loss of 10 and 20 % (the same losses with and without RACK-TLP,
/// 30 seeds each, 300 segments): every byte arrives, RACK-TLP takes fewer
/// timeouts in all and, on average, less time — and in no run does it
/// leave the cumulative ACK standing much longer than RFC 6675 does.
#[test]
fn under_random_loss_rack_tlp_never_stalls_and_times_out_less() {
    let bytes = 300 * MSS;
    for p in [0.1, 0.2] {
        let (mut timeouts, mut total) = ([0u64; 2], [0u64; 2]);
        for seed in 0..30 {
            let mut stood = [0; 2];
            for (k, rack) in [false, true].into_iter().enumerate() {
                let mut h = pair(rack, Some(bytes), pattern(seed, p));
                h.run_until(600 * SECOND);
                assert_eq!(h.b_stats().counters.read_bytes, bytes, "p={p} seed={seed} rack={rack}");
                timeouts[k] += h.a_stats().counters.timeouts;
                total[k] += done_at(&h, bytes).unwrap();
                // the longest time the cumulative ACK stood still
                let (mut last, mut since, mut longest) = (0, 0, 0);
                for s in &h.log {
                    if let (Dir::BtoA, Body::Tcp(seg)) = (s.dir, s.body) {
                        if seg.ack > last {
                            longest = longest.max(s.at - since);
                            (last, since) = (seg.ack, s.at);
                        }
                    }
                }
                stood[k] = longest;
            }
            assert!(
                stood[1] <= stood[0] + 4 * SECOND,
                "p={p} seed={seed}: ACK stood still {} ms with RACK-TLP, {} ms without",
                stood[1] / MILLISECOND,
                stood[0] / MILLISECOND
            );
        }
        assert!(timeouts[1] < timeouts[0], "p={p}: timeouts {timeouts:?}");
        assert!(total[1] < total[0], "p={p}: total completion {total:?}");
    }
}

/// A probe that was not needed: the originals' ACK comes 10 ms after the
/// probe (a resend of the last segment) went, reaching exactly its end, and
/// then the probe's duplicate ACK. No loss happened, and the window stays.
#[test]
fn a_late_original_is_not_taken_for_a_repaired_loss() {
    let mss = 1000;
    let ms = MILLISECOND;
    let mut s = TcpSender::from_config(TcpConfig {
        mss: mss as u32,
        initial_window: 10,
        recovery: Recovery::Sack,
        rack: true,
        tlp: true,
        log_congestion: true,
        ..TcpConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    s.write_all(0, Some(4 * mss), &mut out);
    s.close(0, &mut out);
    let ack = |s: &mut TcpSender, now: Time, ack: u64, out: &mut Vec<_>| {
        let seg = crate::net::packet::TcpSegment {
            ack,
            wnd: 1 << 30,
            flags: crate::net::packet::tcp_flags::ACK,
            ..Default::default()
        };
        s.on_segment(now, &seg, out);
    };
    ack(&mut s, 100 * ms, mss, &mut out); // SRTT 100 ms
    let pto = s.poll_at().unwrap();
    assert_eq!(pto, 100 * ms + 200 * ms, "PTO = 2 SRTT");
    out.clear();
    s.on_timer(pto, &mut out);
    assert_eq!(out.len(), 1, "one probe: the last segment again");
    let cwnd = s.cwnd();
    ack(&mut s, 310 * ms, 4 * mss, &mut out); // the originals' ACK, at the probe's end
    ack(&mut s, 400 * ms, 4 * mss, &mut out); // the probe's duplicate ACK
    assert!(s.congestion_log().iter().all(|r| r.kind != "tlp_recovery"));
    assert!(s.cwnd() >= cwnd, "no reduction");
    assert_eq!(s.stats().loss_probes, 1);
}
