//! D-SACK (RFC 2883): the receiver's blocks against the RFC's examples
//! (§4.1), and the sender undoing a reduction that D-SACKs prove spurious
//! (Linux's tcp_try_undo_dsack).

use super::tests::sack_ack;
use super::*;
use crate::endpoint::Transmit;
use crate::engine::time::{MILLISECOND, SECOND};
use crate::net::packet::{tcp_flags, Body, TcpSegment};

/// RFC 2883's examples use 500-byte segments from sequence 3000; the
/// receiver here starts at 0, so every sequence number below is the RFC's
/// minus 3000.
const SEG: u64 = 500;

fn receiver(dsack: bool, max_sack_blocks: u32) -> TcpReceiver {
    TcpReceiver::new(TcpConfig {
        mss: SEG as u32,
        rcvbuf: 1 << 20,
        delayed_ack: false,
        dsack,
        max_sack_blocks,
        ..TcpConfig::default()
    })
}

/// Deliver [start, end) (RFC numbering) and return the ACK it brought:
/// (cumulative ACK, SACK blocks), RFC numbering.
fn deliver(r: &mut TcpReceiver, start: u64, end: u64) -> (u64, Vec<(u64, u64)>) {
    let mut out = Vec::new();
    let seg = TcpSegment {
        seq: start - 3000,
        len: (end - start) as u32,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    r.on_segment(0, &seg, 40 + (end - start) as u32, false, &mut out);
    assert_eq!(out.len(), 1, "one ACK at once for [{start}, {end})");
    let Body::Tcp(ack) = out[0].body else { unreachable!() };
    let blocks = ack.sack.iter(ack.ack).map(|(s, e)| (s + 3000, e + 3000)).collect();
    (ack.ack + 3000, blocks)
}

/// §4.1.1: ACKs lost, the sender resends 3000-3499; the receiver reports
/// the duplicate in the first block, below the cumulative ACK, once.
#[test]
fn rfc2883_reporting_a_duplicate_segment() {
    let mut r = receiver(true, 4);
    deliver(&mut r, 3000, 3500);
    deliver(&mut r, 3500, 4000);
    assert_eq!(deliver(&mut r, 3000, 3500), (4000, vec![(3000, 3500)]));
    // (the D-SACK goes in one ACK only)
    assert_eq!(deliver(&mut r, 4000, 4500), (4500, vec![]));
}

/// §4.1.2: an out-of-order segment held, then a duplicate: the D-SACK
/// block first, then the SACK block.
#[test]
fn rfc2883_reporting_an_out_of_order_segment_and_a_duplicate_segment() {
    let mut r = receiver(true, 4);
    deliver(&mut r, 3000, 3500);
    deliver(&mut r, 3500, 4000);
    // 4000-4499 lost
    assert_eq!(deliver(&mut r, 4500, 5000), (4000, vec![(4500, 5000)]));
    assert_eq!(deliver(&mut r, 3000, 3500), (4000, vec![(3000, 3500), (4500, 5000)]));
}

/// §4.1.3: a duplicate of data held out of order: the D-SACK block, then
/// the block it lies in, then the others.
#[test]
fn rfc2883_reporting_a_duplicate_of_an_out_of_order_segment() {
    let mut r = receiver(true, 4);
    deliver(&mut r, 3000, 3500);
    deliver(&mut r, 3500, 4000);
    assert_eq!(deliver(&mut r, 4500, 5000), (4000, vec![(4500, 5000)]));
    assert_eq!(deliver(&mut r, 5000, 5500), (4000, vec![(4500, 5500)]));
    assert_eq!(deliver(&mut r, 6000, 6500), (4000, vec![(6000, 6500), (4500, 5500)]));
    assert_eq!(
        deliver(&mut r, 5000, 5500),
        (4000, vec![(5000, 5500), (4500, 5500), (6000, 6500)])
    );
}

/// The D-SACK block counts against the option's room (three blocks beside
/// timestamps); without `dsack`, a duplicate brings RFC 2018's blocks only.
#[test]
fn a_dsack_block_takes_one_of_the_blocks_and_only_when_asked() {
    for (dsack, expect) in [
        (true, vec![(3000, 3500), (7000, 7500), (6000, 6500)]),
        (false, vec![(7000, 7500), (6000, 6500), (5000, 5500)]),
    ] {
        let mut r = receiver(dsack, 3);
        deliver(&mut r, 3000, 3500);
        for s in [4000, 5000, 6000, 7000] {
            deliver(&mut r, s, s + 500); // four holes' worth of blocks
        }
        let (ack, blocks) = deliver(&mut r, 3000, 3500);
        assert_eq!((ack, blocks), (3500, expect), "dsack = {dsack}");
    }
}

// ---- the sender --------------------------------------------------------

const MSS: u64 = 1000;

fn sender_config() -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        initial_window: 10,
        recovery: Recovery::Sack,
        limited_transmit: false,
        ssthresh_from_cwnd: true,
        dsack: true,
        log_congestion: true,
        ..TcpConfig::default()
    }
}

fn sender() -> TcpSender {
    TcpSender::from_config(sender_config()).unwrap()
}

/// Ten segments out in slow start (cwnd 10, ssthresh unset); segment 0 is
/// held up behind 1, 2 and 3: the third duplicate ACK starts a recovery
/// and retransmits it.
fn spurious_fast_retransmit(s: &mut TcpSender, out: &mut Vec<Transmit>) -> Time {
    s.write_all(0, None, out);
    out.clear();
    let t = 100 * MILLISECOND;
    for k in 2..=4 {
        sack_ack(s, t, 0, &[(MSS, k * MSS)], out);
    }
    assert!(s.in_recovery());
    assert_eq!(s.stats().retransmits, 1);
    assert_eq!(s.ssthresh(), 5 * MSS, "halved from the window of 10");
    t
}

/// Segment 0 was only late: its original arrives (the cumulative ACK
/// jumps), then the retransmission, which the receiver reports with a
/// D-SACK. Every retransmission of the recovery proved needless: Linux
/// undoes the reduction (tcp_try_undo_dsack → tcp_undo_cwnd_reduction):
/// cwnd back to what it was (tcp_reno_undo_cwnd), ssthresh back to what it
/// was — here unset, so slow start resumes — and the recovery ends.
#[test]
fn a_dsack_for_every_retransmission_undoes_the_reduction() {
    let mut s = sender();
    let mut out = Vec::new();
    let t = spurious_fast_retransmit(&mut s, &mut out);
    sack_ack(&mut s, t + MILLISECOND, 4 * MSS, &[], &mut out);
    assert!(s.cwnd() < 10 * MSS);
    sack_ack(&mut s, t + 2 * MILLISECOND, 4 * MSS, &[(0, MSS)], &mut out);
    assert_eq!(s.stats().dsack_dups, 1);
    assert_eq!(s.stats().undos, 1);
    assert!(!s.in_recovery());
    assert!(s.cwnd() >= 10 * MSS, "cwnd {} back to at least 10 segments", s.cwnd());
    assert_eq!(s.ssthresh(), u64::MAX, "slow start again");
    let kinds: Vec<_> = s.congestion_log().iter().map(|r| r.kind).collect();
    assert_eq!(kinds, vec!["fast_retransmit", "undo"]);
}

/// A D-SACK inside the second block (RFC 2883 §4: a duplicate of data
/// held above the cumulative ACK) counts as well. Segments 0 and 1 are
/// both late and both retransmitted; 1's copy is reported while 0 is still
/// missing (above the ACK), 0's after it arrived (below): only the two
/// together undo.
#[test]
fn a_dsack_above_the_ack_counts_too() {
    let mut s = sender();
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    out.clear();
    let t = 100 * MILLISECOND;
    for k in 3..=7 {
        sack_ack(&mut s, t, 0, &[(2 * MSS, k * MSS)], &mut out);
    }
    assert!(s.in_recovery());
    assert_eq!(seqs(&out), vec![0, MSS], "both holes resent");
    // 1's original, then its copy: a D-SACK inside the block
    sack_ack(&mut s, t + MILLISECOND, 0, &[(MSS, 7 * MSS)], &mut out);
    sack_ack(&mut s, t + MILLISECOND, 0, &[(MSS, 2 * MSS), (MSS, 7 * MSS)], &mut out);
    assert_eq!((s.stats().dsack_dups, s.stats().undos), (1, 0));
    // 0's original, then its copy: a D-SACK below the ACK
    sack_ack(&mut s, t + 2 * MILLISECOND, 7 * MSS, &[], &mut out);
    sack_ack(&mut s, t + 2 * MILLISECOND, 7 * MSS, &[(0, MSS)], &mut out);
    assert_eq!((s.stats().dsack_dups, s.stats().undos), (2, 1));
    assert!(s.cwnd() >= 10 * MSS);
}

fn seqs(out: &[Transmit]) -> Vec<u64> {
    out.iter()
        .filter_map(|t| match t.body {
            Body::Tcp(s) if s.len > 0 && s.seq < 10 * MSS => Some(s.seq),
            _ => None,
        })
        .collect()
}

/// Two segments retransmitted, only one reported twice: the other was a
/// real loss, and the reduction stands.
#[test]
fn a_real_loss_among_the_retransmissions_keeps_the_reduction() {
    let mut s = sender();
    let mut out = Vec::new();
    let t = spurious_fast_retransmit(&mut s, &mut out);
    // segment 4 is found lost as well, and retransmitted
    out.clear();
    for k in 6..=8 {
        sack_ack(&mut s, t, 0, &[(5 * MSS, k * MSS), (MSS, 4 * MSS)], &mut out);
    }
    assert_eq!(s.stats().retransmits, 2, "{:?}", out.len());
    // 0's original arrives, then its copy (D-SACK); 4's retransmission repairs it
    sack_ack(&mut s, t + MILLISECOND, 4 * MSS, &[(5 * MSS, 8 * MSS)], &mut out);
    sack_ack(
        &mut s,
        t + MILLISECOND,
        4 * MSS,
        &[(0, MSS), (5 * MSS, 8 * MSS)],
        &mut out,
    );
    assert_eq!((s.stats().dsack_dups, s.stats().undos), (1, 0));
    sack_ack(&mut s, t + 2 * MILLISECOND, 8 * MSS, &[], &mut out);
    assert_eq!(s.stats().undos, 0);
    assert!(s.ssthresh() <= 5 * MSS);
}

/// A D-SACK for data never retransmitted (a duplicate the network made) is
/// dubious, as Linux's tcp_dsack_seen: counted (tcpi_dsack_dups counts it
/// before the test) but ignored — no undo, and RACK's reordering window
/// does not widen, reordering seen or not.
#[test]
fn a_dsack_without_retransmissions_is_ignored() {
    let mut s = TcpSender::from_config(TcpConfig {
        rack: true,
        ..sender_config()
    })
    .unwrap();
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    // segment 1 arrives after 2: reordering seen
    sack_ack(&mut s, 100 * MILLISECOND, MSS, &[(2 * MSS, 3 * MSS)], &mut out);
    sack_ack(&mut s, 101 * MILLISECOND, 3 * MSS, &[], &mut out);
    assert!(s.rack_reordering_seen());
    let window = s.rack_reordering_window();
    sack_ack(&mut s, 102 * MILLISECOND, 3 * MSS, &[(0, MSS)], &mut out);
    assert_eq!((s.stats().dsack_dups, s.stats().undos), (1, 0));
    assert_eq!(s.rack_reordering_window(), window);
}

/// RFC 8985 §6.2 step 4: a D-SACK widens RACK's reordering window by a
/// quarter of the minimum RTT, at most once per round trip; the widening
/// lasts 16 recoveries from the last D-SACK (TCP_RACK_RECOVERY_THRESH),
/// then the window is one quarter again. (Linux counts a D-SACK only once
/// reordering was seen.)
#[test]
fn dsacks_widen_the_reordering_window_for_sixteen_recoveries() {
    use super::rack::Rack;
    let min_rtt = Some(40 * MILLISECOND);
    let window = |r: &Rack| r.reordering_window(false, false, min_rtt, Some(SECOND));
    let mut r = Rack::default();
    r.on_dsack(0, 10_000);
    assert_eq!(window(&r), 10 * MILLISECOND, "no reordering seen yet: no widening");
    r.reordering_seen = true;
    r.on_dsack(0, 10_000);
    assert_eq!(window(&r), 20 * MILLISECOND);
    r.on_dsack(5_000, 12_000);
    assert_eq!(window(&r), 20 * MILLISECOND, "the same round trip");
    r.on_dsack(10_000, 20_000);
    assert_eq!(window(&r), 30 * MILLISECOND, "the next one");
    // capped by SRTT
    assert_eq!(
        r.reordering_window(false, false, min_rtt, Some(25 * MILLISECOND)),
        25 * MILLISECOND
    );
    for _ in 0..15 {
        r.on_recovery_end(false);
    }
    assert_eq!(window(&r), 30 * MILLISECOND);
    r.on_recovery_end(true); // an undone recovery holds the widening
    r.on_recovery_end(false);
    assert_eq!(window(&r), 30 * MILLISECOND);
    r.on_recovery_end(false);
    assert_eq!(window(&r), 10 * MILLISECOND, "sixteen recoveries without D-SACK");
}
