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
    let reader = TcpReader::new(TcpReceiver::new(&cfg), ReadPolicy::Waiting);
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
/// the transfer ends without a timeout, with the window reduced once (the
/// probe repaired a loss).
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
    assert_eq!(reductions, 1, "the repaired loss reduces the window once");
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
