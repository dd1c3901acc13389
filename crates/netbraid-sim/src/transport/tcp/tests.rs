//! The sender driven by hand (sans-IO): each test feeds ACKs and timer
//! expiries at chosen times and checks the RFC 6298 / RFC 5681 rules.

use super::*;
use crate::endpoint::Transmit;
use crate::engine::time::{MILLISECOND, SECOND};
use crate::net::packet::{tcp_flags, Body, TcpSegment};

const MSS: u64 = 1000;

fn sender() -> TcpSender {
    TcpSender::from_config(TcpConfig {
        mss: MSS as u32,
        initial_window: 3,
        recovery: Recovery::NewReno,
        log_congestion: true,
        ..TcpConfig::default()
    })
    .unwrap()
}

fn ack(s: &mut TcpSender, now: Time, ack: u64, out: &mut Vec<Transmit>) {
    let seg = TcpSegment {
        ack,
        wnd: 1 << 30,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    s.on_segment(now, &seg, out);
}

/// Start an unlimited transfer and ack the first four segments one by one
/// (slow start: the window grows to seven); returns the time and the flight
/// size, with the outbox cleared.
fn grow_window(s: &mut TcpSender, out: &mut Vec<Transmit>) -> (Time, u64) {
    s.write_all(0, None, out);
    let mut t = 100 * MILLISECOND;
    for a in 1..=4 {
        ack(s, t, a * MSS, out);
        t += MILLISECOND;
    }
    out.clear();
    (t, s.flight_size())
}

fn seqs(out: &[Transmit]) -> Vec<u64> {
    out.iter()
        .map(|t| match t.body {
            Body::Tcp(s) => s.seq,
            _ => unreachable!(),
        })
        .collect()
}

#[test]
fn initial_window_then_one_sample() {
    let mut s = sender();
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    assert_eq!(seqs(&out), vec![0, 1000, 2000]);
    out.clear();
    ack(&mut s, 100 * MILLISECOND, 1000, &mut out);
    assert_eq!(s.srtt(), Some(100 * MILLISECOND));
    // RTO = max(1 s, 3 × 100 ms) = 1 s (RFC 6298 minimum).
    assert_eq!(s.rto(), SECOND);
}

/// RFC 6298 §5.5: each expiry doubles the RTO, up to RTO_max (60 s).
#[test]
fn consecutive_timeouts_double_the_interval() {
    let mut s = sender();
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    ack(&mut s, 100 * MILLISECOND, 1000, &mut out);
    let mut fired = Vec::new();
    for _ in 0..8 {
        let at = s.poll_at().expect("timer armed while data is outstanding");
        s.on_timer(at, &mut out);
        fired.push(at);
    }
    let gaps: Vec<Time> = fired.windows(2).map(|w| (w[1] - w[0]) / SECOND).collect();
    assert_eq!(gaps, vec![2, 4, 8, 16, 32, 60, 60]);
    assert_eq!(s.stats().timeouts, 8);
}

/// RFC 6298 §5.5 / RFC 5681 eq. 4: ssthresh is set from the flight size on
/// the first timeout of a segment only; cwnd falls to one segment each time.
#[test]
fn ssthresh_only_on_first_timeout() {
    let mut s = sender();
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    ack(&mut s, 100 * MILLISECOND, 1000, &mut out); // flight now 4 segments
    let flight = s.flight_size();
    let t1 = s.poll_at().unwrap();
    s.on_timer(t1, &mut out);
    assert_eq!(s.ssthresh(), (flight / 2).max(2 * MSS));
    assert_eq!(s.cwnd(), MSS);
    let after_first = s.ssthresh();
    s.on_timer(s.poll_at().unwrap(), &mut out);
    assert_eq!(s.ssthresh(), after_first);
}

/// Karn: an ACK that covers a retransmitted segment gives no RTT sample,
/// and the backed-off RTO is kept until a valid sample arrives.
#[test]
fn karn_ignores_acks_of_retransmissions() {
    let mut s = sender();
    let mut out = Vec::new();
    s.write_all(0, Some(3000), &mut out);
    s.close(0, &mut out); // exactly three segments
    ack(&mut s, 100 * MILLISECOND, 1000, &mut out);
    let srtt = s.srtt();
    let t = s.poll_at().unwrap();
    s.on_timer(t, &mut out); // retransmits seq 1000
    assert_eq!(s.rto(), 2 * SECOND);
    // A very late ACK for everything, 5 s later: ambiguous, so no sample.
    out.clear();
    ack(&mut s, t + 5 * SECOND, 3000, &mut out);
    assert_eq!(s.srtt(), srtt);
    assert_eq!(s.rto(), 2 * SECOND, "backoff kept without a valid sample");
    assert_eq!(s.completed_at(), Some(t + 5 * SECOND));
}

/// RFC 5681 §3.2: the third duplicate ACK retransmits snd_una once and sets
/// ssthresh = FlightSize / 2 (not cwnd / 2; limited-transmit segments not
/// counted), cwnd = ssthresh + 3·SMSS.
#[test]
fn third_dupack_fast_retransmits_once() {
    let mut s = sender();
    let mut out = Vec::new();
    let (t, flight) = grow_window(&mut s, &mut out);
    for _ in 0..3 {
        ack(&mut s, t, 4 * MSS, &mut out);
    }
    // Dupacks 1 and 2 each send one new segment (limited transmit, RFC 3042);
    // the third retransmits snd_una.
    let sent = seqs(&out);
    assert_eq!(sent.len(), 3);
    assert_eq!(sent.iter().filter(|&&q| q == 4 * MSS).count(), 1);
    assert_eq!(s.ssthresh(), flight / 2);
    assert_eq!(s.cwnd(), flight / 2 + 3 * MSS);
    // Further dupacks inflate by one MSS each and never retransmit again.
    out.clear();
    ack(&mut s, t, 4 * MSS, &mut out);
    assert_eq!(s.cwnd(), flight / 2 + 4 * MSS);
    assert!(seqs(&out).iter().all(|&q| q != 4 * MSS));
    assert_eq!(s.stats().fast_retransmits, 1);
}

/// An ACK with these SACK blocks; the first may be a D-SACK below `ack`.
pub(super) fn sack_ack(s: &mut TcpSender, now: Time, ack: u64, blocks: &[(u64, u64)], out: &mut Vec<Transmit>) {
    let mut seg = TcpSegment {
        ack,
        wnd: 1 << 30,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    for (i, &b) in blocks.iter().enumerate() {
        assert!(if i == 0 {
            seg.sack.push_first(ack, b)
        } else {
            seg.sack.push(ack, b)
        });
    }
    s.on_segment(now, &seg, out);
}

/// RFC 6675 NextSeg rule 4: with the last segment of a transfer lost and no
/// new data to send, one rescue retransmission repairs it without a timeout.
#[test]
fn sack_rescue_retransmits_the_tail() {
    let mut s = TcpSender::from_config(TcpConfig {
        mss: MSS as u32,
        initial_window: 10,
        recovery: Recovery::Sack,
        limited_transmit: false,
        ..TcpConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    s.write_all(0, Some(10 * MSS), &mut out);
    s.close(0, &mut out); // segments 0..9, all of the transfer
    out.clear();
    let t = 100 * MILLISECOND;
    // Segments 2 and 9 are lost; the receiver SACKs 3..9 as they arrive.
    ack(&mut s, t, 2 * MSS, &mut out);
    for k in 4..=6 {
        sack_ack(&mut s, t, 2 * MSS, &[(3 * MSS, k * MSS)], &mut out);
    }
    assert!(s.in_recovery());
    assert_eq!(seqs(&out), vec![2 * MSS]); // the first hole
    out.clear();
    for k in 7..=9 {
        sack_ack(&mut s, t, 2 * MSS, &[(3 * MSS, k * MSS)], &mut out);
    }
    // The retransmission of segment 2 arrives: cumulative ACK to 9000, the tail is missing.
    out.clear();
    ack(&mut s, t + 100 * MILLISECOND, 9 * MSS, &mut out);
    assert_eq!(seqs(&out), vec![9 * MSS], "rescue retransmission of the tail");
    assert_eq!(s.stats().timeouts, 0);
}

/// A reordered, older ACK carries a stale window and SACK view: ignored.
#[test]
fn stale_acks_are_ignored() {
    let mut s = sender();
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    ack(&mut s, 100 * MILLISECOND, 2000, &mut out);
    let before = s.flight_size();
    let seg = TcpSegment {
        ack: 1000,
        wnd: 0,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    s.on_segment(110 * MILLISECOND, &seg, &mut out);
    assert_eq!(s.flight_size(), before);
    out.clear();
    ack(&mut s, 120 * MILLISECOND, 3000, &mut out);
    assert!(
        !out.is_empty(),
        "a zero window from a stale ACK must not stop the sender"
    );
}

/// Tahoe: the third dupack retransmits and closes the window to one segment
/// (ssthresh = FlightSize/2), with no fast recovery and no RTO backoff.
#[test]
fn tahoe_fast_retransmit_restarts_slow_start() {
    let mut s = TcpSender::from_config(TcpConfig {
        mss: MSS as u32,
        initial_window: 3,
        recovery: Recovery::Tahoe,
        limited_transmit: false,
        ..TcpConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    let (t, flight) = grow_window(&mut s, &mut out);
    for _ in 0..3 {
        ack(&mut s, t, 4 * MSS, &mut out);
    }
    assert_eq!(seqs(&out), vec![4 * MSS]);
    assert_eq!(s.cwnd(), MSS);
    assert_eq!(s.ssthresh(), flight / 2);
    assert!(!s.in_recovery());
    assert_eq!(s.rto(), SECOND, "no backoff on a fast retransmit");
}

fn tahoe_with(semantics: Semantics) -> TcpSender {
    TcpSender::from_config(TcpConfig {
        mss: MSS as u32,
        initial_window: 3,
        recovery: Recovery::Tahoe,
        semantics,
        ..TcpConfig::default()
    })
    .unwrap()
}

/// ns-2's Agent/TCP (`semantics = "ns2"`): limited transmit (`singledup_`)
/// sends one segment per early dupack within cwnd + dupacks; ssthresh is
/// half of cwnd in whole segments (RFC 5681 would halve the flight, 3.5
/// segments here); later dupacks of the same episode send nothing; and
/// after go-back-N the limited-transmit segment is a resend.
#[test]
fn ns2_limited_transmit_and_fast_retransmit() {
    let mut s = tahoe_with(Semantics::Ns2);
    let mut out = Vec::new();
    let (t, flight) = grow_window(&mut s, &mut out); // cwnd 7, snd_una 4, snd_max 11 segments
    assert_eq!((flight, s.cwnd()), (7 * MSS, 7 * MSS));
    ack(&mut s, t, 4 * MSS, &mut out);
    ack(&mut s, t, 4 * MSS, &mut out);
    assert_eq!(seqs(&out), vec![11 * MSS, 12 * MSS], "one new segment per dupack");
    out.clear();
    ack(&mut s, t, 4 * MSS, &mut out);
    assert_eq!(seqs(&out), vec![4 * MSS]);
    assert_eq!((s.cwnd(), s.ssthresh()), (MSS, 3 * MSS), "floor(floor(7) / 2) segments");
    assert_eq!(s.poll_at(), Some(t + s.rto()), "a fast retransmit restarts the timer");
    out.clear();
    ack(&mut s, t, 4 * MSS, &mut out);
    assert!(out.is_empty(), "the fourth dupack neither retransmits nor sends");

    // A new ACK: slow start from one segment, going back N from snd_una.
    ack(&mut s, t + MILLISECOND, 6 * MSS, &mut out);
    assert_eq!(seqs(&out), vec![6 * MSS, 7 * MSS]);
    out.clear();
    ack(&mut s, t + 2 * MILLISECOND, 6 * MSS, &mut out);
    assert_eq!(
        seqs(&out),
        vec![8 * MSS],
        "limited transmit resends the segment at snd_nxt"
    );
}

/// The same dupacks under the RFCs: limited transmit sends only new data,
/// so after go-back-N an early dupack sends nothing.
#[test]
fn rfc_limited_transmit_sends_only_new_data() {
    let mut s = tahoe_with(Semantics::Rfc);
    let mut out = Vec::new();
    let (t, _) = grow_window(&mut s, &mut out);
    for _ in 0..3 {
        ack(&mut s, t, 4 * MSS, &mut out);
    }
    ack(&mut s, t + MILLISECOND, 6 * MSS, &mut out);
    out.clear();
    ack(&mut s, t + 2 * MILLISECOND, 6 * MSS, &mut out);
    assert!(out.is_empty(), "{:?}", seqs(&out));
}

/// ns-2 halves cwnd at every timeout, even a repeated one (RFC 5681 holds
/// ssthresh then: `ssthresh_only_on_first_timeout`).
#[test]
fn ns2_every_timeout_halves_cwnd() {
    let mut s = tahoe_with(Semantics::Ns2);
    let mut out = Vec::new();
    let _ = grow_window(&mut s, &mut out); // cwnd 7
    s.on_timer(s.poll_at().unwrap(), &mut out);
    assert_eq!((s.cwnd(), s.ssthresh()), (MSS, 3 * MSS));
    s.on_timer(s.poll_at().unwrap(), &mut out);
    assert_eq!(
        (s.cwnd(), s.ssthresh()),
        (MSS, 2 * MSS),
        "max(floor(1 / 2), 2) segments"
    );
}

/// Segments are whatever the application's writes make them: with
/// TCP_NODELAY three writes of 500, 700 and 1000 bytes leave as three
/// segments of those lengths, and a timeout resends the first with its own
/// boundaries (not at a multiple of the MSS).
#[test]
fn segments_of_any_length_keep_their_boundaries() {
    let mut s = TcpSender::from_config(TcpConfig {
        mss: MSS as u32,
        initial_window: 10,
        nodelay: true,
        ..TcpConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    for n in [500, 700, 1000] {
        assert_eq!(s.write(0, n, &mut out), n);
    }
    let lens: Vec<(u64, u32)> = out
        .iter()
        .map(|t| match t.body {
            Body::Tcp(s) => (s.seq, s.len),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(lens, vec![(0, 500), (500, 700), (1200, 1000)]);
    out.clear();
    s.on_timer(s.poll_at().unwrap(), &mut out);
    let Body::Tcp(first) = out[0].body else { unreachable!() };
    assert_eq!((first.seq, first.len), (0, 500));
}

/// Nagle (RFC 1122 §4.2.3.4): without TCP_NODELAY a short segment waits
/// while data is in flight, and goes when the ACK arrives.
#[test]
fn nagle_holds_a_short_segment_while_data_is_in_flight() {
    let mut s = TcpSender::from_config(TcpConfig {
        mss: MSS as u32,
        initial_window: 10,
        ..TcpConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    s.write(0, 500, &mut out);
    s.write(0, 300, &mut out);
    assert_eq!(seqs(&out), vec![0], "the second short write waits");
    out.clear();
    ack(&mut s, 100 * MILLISECOND, 500, &mut out);
    assert_eq!(seqs(&out), vec![500]);
}

/// The controller sees each ACK's RTT sample (none from a retransmission),
/// and one round per round trip.
#[test]
fn controller_sees_rtt_samples_and_rounds() {
    use crate::cc::{AckEvent, CongestionControl, Reno};
    use std::sync::{Arc, Mutex};
    #[derive(Default)]
    struct Seen {
        samples: Vec<Option<Time>>,
        rounds: Vec<(u64, bool)>,
    }
    struct Recording(Reno, Arc<Mutex<Seen>>);
    impl CongestionControl for Recording {
        fn on_ack(&mut self, ack: &AckEvent<'_>) {
            let mut seen = self.1.lock().unwrap();
            seen.samples.push(ack.rtt_sample);
            seen.rounds.push((ack.round, ack.round_start));
            self.0.on_ack(ack)
        }
        fn on_congestion_event(&mut self, now: Time, flight: u64) {
            self.0.on_congestion_event(now, flight)
        }
        fn on_timeout(&mut self, now: Time, flight: u64, first: bool) {
            self.0.on_timeout(now, flight, first)
        }
        fn penalise(&mut self) {
            self.0.penalise()
        }
        fn undo(&mut self, prior_cwnd: u64, prior_ssthresh: u64) {
            self.0.undo(prior_cwnd, prior_ssthresh)
        }
        fn window(&self) -> u64 {
            self.0.window()
        }
        fn ssthresh(&self) -> u64 {
            self.0.ssthresh()
        }
        fn name(&self) -> &'static str {
            "recording"
        }
    }
    let cfg = TcpConfig {
        mss: MSS as u32,
        initial_window: 2,
        delayed_ack: false,
        ..TcpConfig::default()
    };
    let seen = Arc::new(Mutex::new(Seen::default()));
    let cc = Box::new(Recording(Reno::new(cfg.controller_config()), seen.clone()));
    let mut s = TcpSender::new(cfg, cc);
    let mut out = Vec::new();
    s.write_all(0, None, &mut out); // segments 0, 1
    let rtt = 100 * MILLISECOND;
    ack(&mut s, rtt, MSS, &mut out); // round 1 ends; segments 2, 3 sent
    ack(&mut s, rtt + 1, 2 * MSS, &mut out); // segments 4, 5
    ack(&mut s, 2 * rtt, 3 * MSS, &mut out); // round 2: data sent after round 1's end
    ack(&mut s, 2 * rtt + 1, 4 * MSS, &mut out);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.samples[0], Some(rtt), "the first segment was timed");
    assert_eq!(
        seen.samples.iter().filter(|s| s.is_some()).count(),
        2,
        "one timed segment per round trip"
    );
    assert_eq!(seen.rounds, vec![(1, true), (1, false), (2, true), (2, false)]);
}

/// A window stuck below one segment (a 2000-byte buffer, 700 bytes unread
/// by then, so 1300 advertised, and the receiver's SWS rule) with nothing in
/// flight: the persist probe carries what fits (Linux's tcp_write_wakeup),
/// so the transfer moves instead of probing forever with empty segments.
#[test]
fn persist_probe_carries_data_into_a_window_below_one_segment() {
    let mut s = TcpSender::from_config(TcpConfig {
        mss: 1460,
        initial_window: 10,
        nodelay: true,
        ..TcpConfig::default()
    })
    .unwrap();
    let mut out = Vec::new();
    s.write(0, 700, &mut out);
    let seg = TcpSegment {
        ack: 700,
        wnd: 1300,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    s.on_segment(100 * MILLISECOND, &seg, &mut out);
    out.clear();
    s.write_all(100 * MILLISECOND, None, &mut out);
    assert!(out.is_empty(), "no full segment fits a 1300-byte window");
    let at = s.poll_at().expect("persist timer armed");
    s.on_timer(at, &mut out);
    let lens: Vec<(u64, u32)> = out
        .iter()
        .map(|t| match t.body {
            Body::Tcp(s) => (s.seq, s.len),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(lens, vec![(700, 1300)]);
    assert_eq!(s.stats().window_probes, 1);
}

/// RFC 5681 §2: an ACK that changes the advertised window is not a
/// duplicate ACK (a window update while data is outstanding must not
/// trigger a fast retransmit).
#[test]
fn window_updates_are_not_duplicate_acks() {
    let mut s = sender(); // NewReno
    let mut out = Vec::new();
    let (t, _) = grow_window(&mut s, &mut out);
    for (k, wnd) in [(1u32, 40_000u32), (2, 50_000), (3, 60_000), (4, 70_000)] {
        let seg = TcpSegment {
            ack: 4 * MSS,
            wnd,
            flags: tcp_flags::ACK,
            ..Default::default()
        };
        s.on_segment(t + k as Time, &seg, &mut out);
    }
    assert_eq!(s.stats().fast_retransmits, 0);
    assert_eq!(s.stats().retransmits, 0);
}

/// RFC 6298 §5.4: on a timeout the earliest unacknowledged segment is
/// retransmitted even if the peer's window is now smaller than it.
#[test]
fn timeout_retransmits_the_head_whatever_the_window() {
    let mut s = sender();
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    let seg = TcpSegment {
        ack: MSS,
        wnd: 500,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    s.on_segment(100 * MILLISECOND, &seg, &mut out);
    out.clear();
    s.on_timer(s.poll_at().unwrap(), &mut out);
    assert_eq!(seqs(&out), vec![MSS]);
}

/// A segment without data at rcv_nxt (a pure ACK) is not answered; a probe
/// below the window is (RFC 9293 §3.10.7.4).
#[test]
fn receiver_answers_probes_but_not_pure_acks() {
    let cfg = TcpConfig {
        mss: 1000,
        rcvbuf: 4000,
        delayed_ack: false,
        ..TcpConfig::default()
    };
    let mut r = TcpReceiver::new(cfg.clone());
    let mut out = Vec::new();
    let data = TcpSegment {
        seq: 0,
        len: 1000,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    r.on_segment(0, &data, 1040, false, &mut out);
    out.clear();
    r.on_segment(
        1,
        &TcpSegment {
            seq: 1000,
            len: 0,
            flags: tcp_flags::ACK,
            ..Default::default()
        },
        40,
        false,
        &mut out,
    );
    assert!(out.is_empty(), "a pure ACK is not acknowledged");
    r.on_segment(
        2,
        &TcpSegment {
            seq: 999,
            len: 0,
            flags: tcp_flags::ACK,
            ..Default::default()
        },
        40,
        false,
        &mut out,
    );
    assert_eq!(out.len(), 1, "a probe below the window is");
}

/// What a coupled controller sees of a subflow: window, RTT, bytes acked,
/// and the bytes acknowledged since and between its last two losses.
#[test]
fn sibling_view_counts_bytes_between_losses() {
    let mut s = sender();
    let mut out = Vec::new();
    let (t, _) = grow_window(&mut s, &mut out); // snd_una = 4 MSS
    let v = s.view();
    assert_eq!(
        (v.bytes_acked, v.bytes_since_loss, v.bytes_between_losses),
        (4 * MSS, 4 * MSS, 0)
    );
    for _ in 0..3 {
        ack(&mut s, t, 4 * MSS, &mut out); // a loss at 4 MSS
    }
    ack(&mut s, t + 1, 11 * MSS, &mut out); // recovery ends
    let v = s.view();
    assert_eq!((v.bytes_since_loss, v.bytes_between_losses), (7 * MSS, 4 * MSS));
    assert_eq!(v.cwnd, s.cwnd());
    assert_eq!(v.srtt, s.srtt());
}

/// RFC 6937 through the sender: 20 segments in flight (initial window 20,
/// Reno), the first one lost, the other 19 SACKed one ACK at a time. Per
/// ACK from the third on (recovery begins there; ssthresh 10), how many
/// segments the sender sends: RFC 6675 sends the retransmission and then
/// nothing until pipe has fallen below cwnd (half the window later), then
/// one per ACK; PRR sends in step with the deliveries, one segment per two
/// ACKs from the start. Both end with 10 segments sent in recovery (pipe =
/// ssthresh), and the retransmission goes first.
#[test]
fn prr_spreads_recovery_sending_over_the_acks() {
    let run = |prr: bool| {
        let mut s = TcpSender::from_config(TcpConfig {
            mss: MSS as u32,
            initial_window: 20,
            recovery: Recovery::Sack,
            limited_transmit: false,
            prr,
            ..TcpConfig::default()
        })
        .unwrap();
        let mut out = Vec::new();
        s.write_all(0, None, &mut out);
        assert_eq!(out.len(), 20);
        out.clear();
        let t = 100 * MILLISECOND;
        let mut per_ack = Vec::new();
        let mut first = None;
        for k in 2..=20 {
            sack_ack(&mut s, t, 0, &[(MSS, k * MSS)], &mut out);
            if first.is_none() && !out.is_empty() {
                first = Some(seqs(&out)[0]);
            }
            per_ack.push(out.len());
            out.clear();
        }
        (per_ack, first)
    };
    let (rfc, rfc_first) = run(false);
    let (prr, prr_first) = run(true);
    assert_eq!(
        (rfc_first, prr_first),
        (Some(0), Some(0)),
        "the lost segment goes first"
    );
    // ACKs 1-2 (SACKing segments 1 and 2) send nothing; the third starts recovery
    assert_eq!(&rfc[..2], &[0, 0]);
    assert_eq!(&prr[..2], &[0, 0]);
    let (rfc, prr) = (&rfc[2..], &prr[2..]);
    assert_eq!(rfc.iter().sum::<usize>(), prr.iter().sum::<usize>());
    // RFC 6675: after the retransmission, a pause of about half the window
    assert_eq!(rfc[0], 1);
    assert!(rfc[1..8].iter().all(|&n| n == 0), "RFC 6675 pauses: {rfc:?}");
    // PRR: one segment per two ACKs over the same stretch (⌈k·10/20⌉ in
    // all after k ACKs), and never a burst
    assert_eq!(prr[..8], [1, 0, 1, 0, 1, 0, 1, 0], "PRR paces: {prr:?}");
    assert!(prr.iter().all(|&n| n <= 1), "PRR: {prr:?}");
}

/// A rate-based controller that records what it is told and sets the
/// window to in-flight + delivered (packet conservation, as BBR's first
/// round of recovery), with an optional pacing rate.
mod rate_based {
    use super::*;
    use crate::cc::{AckEvent, CongestionControl, RateEvent};
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    pub struct Seen {
        pub losses: u64,
        pub events: Vec<RateEvent>,
    }
    pub struct Conserving {
        pub cwnd: u64,
        pub rate: Option<f64>,
        pub burst: u64,
        /// Keep cwnd = in flight + delivered (else a fixed window).
        pub conserve: bool,
        pub seen: Arc<Mutex<Seen>>,
    }
    impl CongestionControl for Conserving {
        fn on_ack(&mut self, _: &AckEvent<'_>) {
            panic!("a rate-based controller gets on_rate_sample, not on_ack");
        }
        fn on_rate_sample(&mut self, ev: &RateEvent) {
            let mut seen = self.seen.lock().unwrap();
            seen.losses += ev.losses;
            seen.events.push(*ev);
            if ev.acked_sacked > 0 && self.conserve {
                self.cwnd = ev.in_flight + ev.acked_sacked;
            }
        }
        fn on_congestion_event(&mut self, _: Time, _: u64) {}
        fn on_timeout(&mut self, _: Time, _: u64, _: bool) {
            self.cwnd = MSS;
        }
        fn penalise(&mut self) {}
        fn undo(&mut self, _: u64, _: u64) {}
        fn window(&self) -> u64 {
            self.cwnd
        }
        fn ssthresh(&self) -> u64 {
            u64::MAX
        }
        fn name(&self) -> &'static str {
            "conserving"
        }
        fn rate_based(&self) -> bool {
            true
        }
        fn pacing_rate(&self) -> Option<f64> {
            self.rate
        }
        fn pacing_burst(&self) -> u64 {
            self.burst
        }
    }

    pub fn sender(rack: bool, rate: Option<f64>, iw: u32) -> (TcpSender, Arc<Mutex<Seen>>) {
        sender_with_burst(rack, rate, iw, 1)
    }

    pub fn sender_with_burst(rack: bool, rate: Option<f64>, iw: u32, burst: u64) -> (TcpSender, Arc<Mutex<Seen>>) {
        sender_with(rack, rate, iw, burst, true)
    }

    pub fn sender_with(
        rack: bool,
        rate: Option<f64>,
        iw: u32,
        burst: u64,
        conserve: bool,
    ) -> (TcpSender, Arc<Mutex<Seen>>) {
        let cfg = TcpConfig {
            mss: MSS as u32,
            initial_window: iw,
            recovery: Recovery::Sack,
            rack,
            delayed_ack: false,
            ..TcpConfig::default()
        };
        let seen = Arc::new(Mutex::new(Seen::default()));
        let cc = Conserving {
            cwnd: iw as u64 * MSS,
            rate,
            burst,
            conserve,
            seen: seen.clone(),
        };
        (TcpSender::new(cfg, Box::new(cc)), seen)
    }
}

/// Without RACK, a rate-based controller still hears of losses: the bytes
/// RFC 6675's IsLost covers (what Linux's scoreboard marks lost).
#[test]
fn rate_based_controller_hears_of_losses_without_rack() {
    let (mut s, seen) = rate_based::sender(false, None, 10);
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    // segment 0 lost; 1..5 SACKed, one per ACK: from the third, 0 is lost
    for k in 1..=5u64 {
        sack_ack(&mut s, 100 * MILLISECOND + k, 0, &[(MSS, (k + 1) * MSS)], &mut out);
    }
    assert_eq!(seen.lock().unwrap().losses, MSS, "segment 0, told once");
}

/// Entering recovery, the controller sets the window before the fast
/// retransmission goes (Linux runs cong_control before
/// tcp_xmit_recovery): with cwnd = in flight + delivered, the ACK that
/// starts recovery releases exactly what it delivered.
#[test]
fn recovery_entry_releases_what_the_ack_delivered() {
    let (mut s, seen) = rate_based::sender(true, None, 10);
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    out.clear();
    // segment 0 lost; 1, 2, 3 SACKed on one ACK: three segments SACKed
    // above it, so RACK (no reordering seen: a zero window) marks it lost now
    let t = 100 * MILLISECOND;
    sack_ack(&mut s, t, 0, &[(MSS, 4 * MSS)], &mut out);
    let ev = *seen.lock().unwrap().events.last().unwrap();
    assert_eq!((ev.acked_sacked, ev.losses, ev.in_flight), (3 * MSS, MSS, 6 * MSS));
    // the window is 6 + 3: three segments go, the repair first
    assert_eq!(seqs(&out), vec![0, 10 * MSS, 11 * MSS]);
}

/// Linux paces from the tenth segment on (data_segs_out ≥ 10): with an
/// initial window of 20 and a pacing rate of 1 MB/s, nine segments leave
/// at once and the rest one millisecond apart.
#[test]
fn pacing_starts_at_the_tenth_segment() {
    let (mut s, _) = rate_based::sender(true, Some(1e6), 20);
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    assert_eq!(out.len(), 10, "nine unpaced and the tenth, which sets the pace");
    let mut t = 0;
    for _ in 0..10 {
        let next = s.poll_at().unwrap();
        assert!(next > t && next - t <= MILLISECOND, "{next} after {t}");
        t = next;
        let before = out.len();
        s.on_timer(t, &mut out);
        if out.len() == before {
            continue;
        }
        assert_eq!(out.len(), before + 1, "one segment per pacing interval");
    }
    assert_eq!(out.len(), 20);
}

/// Linux's quick-ACK mode (tcp_incr_quickack, TCP_MAX_QUICKACKS = 16): the
/// first 16 in-order segments are ACKed one by one, then every second; after
/// an idle second the receiver ACKs quickly again.
#[test]
fn receiver_quick_acks_at_the_start_and_after_idle() {
    let cfg = TcpConfig {
        mss: 1000,
        rcvbuf: 1 << 20,
        quick_acks: 16,
        ..TcpConfig::default()
    };
    let mut r = TcpReceiver::new(cfg.clone());
    let mut out = Vec::new();
    let mut acks_after = Vec::new();
    for k in 0..24u64 {
        let data = TcpSegment {
            seq: k * 1000,
            len: 1000,
            flags: tcp_flags::ACK,
            ..Default::default()
        };
        let before = out.len();
        r.on_segment(k * MILLISECOND, &data, 1040, false, &mut out);
        acks_after.push(out.len() > before);
    }
    assert!(acks_after[..16].iter().all(|&a| a), "{acks_after:?}");
    assert_eq!(&acks_after[16..], &[false, true, false, true, false, true, false, true]);
    // two seconds later: quick again
    let data = TcpSegment {
        seq: 24_000,
        len: 1000,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    let before = out.len();
    r.on_segment(2 * SECOND, &data, 1040, false, &mut out);
    assert_eq!(out.len(), before + 1);
}

/// Linux's SACK compression (tcp_input.c, __tcp_ack_snd_check; sysctls
/// tcp_comp_sack_nr = 44, tcp_comp_sack_delay_ns = 1 ms): behind a hole the
/// first three duplicate ACKs go at once (the sender's dupthresh needs
/// them), later ones wait — one ACK for up to 44 segments, sent at the
/// latest 1 ms after the first it holds; the segment that fills the hole is
/// ACKed at once. Without it (RFC 5681 §4.2) every out-of-order segment is.
#[test]
fn receiver_compresses_sacks_after_three_dupacks() {
    let cfg = |nr| TcpConfig {
        mss: 1000,
        rcvbuf: 1 << 20,
        sack_compression: nr,
        sack_compression_delay: MILLISECOND,
        ..TcpConfig::default()
    };
    let seg = |k: u64| TcpSegment {
        seq: k * 1000,
        len: 1000,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    let us = MILLISECOND / 1000;
    // segment 0 is lost; 1..=60 arrive 10 µs apart
    for (nr, expect_immediate) in [(0u32, 60usize), (44, 3)] {
        let mut r = TcpReceiver::new(cfg(nr));
        let mut out = Vec::new();
        let mut immediate = 0;
        for k in 1..=60u64 {
            let now = 10 * k * us;
            let before = out.len();
            r.on_segment(now, &seg(k), 1040, false, &mut out);
            immediate += out.len() - before;
            if nr > 0 && k == 3 {
                assert_eq!(r.poll_at(), None, "nothing held after the third dupack");
            }
            if nr > 0 && k == 4 {
                assert_eq!(r.poll_at(), Some(now + MILLISECOND), "the fourth waits at most 1 ms");
            }
        }
        if nr == 0 {
            assert_eq!(immediate, expect_immediate);
            continue;
        }
        // 3 at once; the 4th..47th (44 held) make the 48th go at once; the
        // 48th resets the count, so 49..=60 are held again
        assert_eq!(
            immediate,
            expect_immediate + 1,
            "three dupacks, then one when 44 were held"
        );
        let due = r.poll_at().expect("held SACKs wait for the timer");
        assert_eq!(due, 10 * 49 * us + MILLISECOND);
        let before = out.len();
        r.on_timer(due - 1, &mut out);
        assert_eq!(out.len(), before, "not before the delay");
        r.on_timer(due, &mut out);
        assert_eq!(out.len(), before + 1, "one ACK for the held ones");
        let Body::Tcp(ack) = out.last().unwrap().body else {
            unreachable!()
        };
        assert_eq!(ack.ack, 0);
        assert_eq!(
            ack.sack.iter(ack.ack).next(),
            Some((1000, 61_000)),
            "it SACKs all that arrived"
        );
        assert_eq!(r.poll_at(), None);
        // the retransmission fills the hole: ACKed at once
        let before = out.len();
        r.on_segment(2 * MILLISECOND, &seg(0), 1040, false, &mut out);
        assert_eq!(out.len(), before + 1);
        let Body::Tcp(ack) = out.last().unwrap().body else {
            unreachable!()
        };
        assert_eq!(ack.ack, 61_000);
    }
}

/// Linux paces TSO bursts: with a burst of 4 segments at 1 MB/s (1 ms a
/// segment), after the unpaced start the segments leave four at a time,
/// 4 ms apart.
#[test]
fn pacing_sends_bursts_of_the_given_size() {
    let (mut s, _) = rate_based::sender_with_burst(true, Some(1e6), 30, 4);
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    let mut sends: Vec<(Time, usize)> = Vec::new();
    while out.len() < 30 {
        let t = s.poll_at().unwrap();
        let before = out.len();
        s.on_timer(t, &mut out);
        if out.len() > before {
            sends.push((t, out.len() - before));
        }
    }
    let full: Vec<_> = sends.iter().filter(|&&(_, n)| n == 4).collect();
    assert!(full.len() >= 3, "{sends:?}");
    for w in full.windows(2) {
        assert_eq!(w[1].0 - w[0].0, 4 * MILLISECOND, "{sends:?}");
    }
}

/// ACKs that arrive between pacing times do not break the bursts up:
/// Linux builds each TSO packet when pacing lets it leave, so a sender
/// paced in bursts of 2 segments at 1 MB/s sends pairs 2 ms apart, however
/// the ACKs fall (seen in captures of this kernel's BBR: 92 % of its
/// segments leave in pairs at 50 Mb/s). An ACK 1 ms after a pair used to
/// release one segment ahead of time, and the flow went out one by one.
#[test]
fn acks_between_pacing_times_keep_the_bursts_whole() {
    // (a fixed window of 1000 segments: pacing alone holds the sender back)
    let (mut s, _) = rate_based::sender_with(true, Some(1e6), 1000, 2, false);
    let mut out = Vec::new();
    s.write_all(0, None, &mut out);
    let mut sends: Vec<(Time, usize)> = Vec::new();
    let mut acked = 0;
    let mut t = 0;
    while sends.len() < 20 {
        let timer = s.poll_at().unwrap();
        // an ACK for one more segment halfway to the next pacing time
        let at_ack = t + (timer - t) / 2;
        let before = out.len();
        if at_ack > t && at_ack < timer {
            acked += MSS;
            ack(&mut s, at_ack, acked, &mut out);
            if out.len() > before {
                sends.push((at_ack, out.len() - before));
            }
        }
        let before = out.len();
        s.on_timer(timer, &mut out);
        if out.len() > before {
            sends.push((timer, out.len() - before));
        }
        t = timer;
    }
    assert!(sends.iter().all(|&(_, n)| n == 2), "{sends:?}");
    for w in sends.windows(2) {
        assert_eq!(w[1].0 - w[0].0, 2 * MILLISECOND, "{sends:?}");
    }
}

/// An IW10 SACK sender without limited transmit; `from_cwnd` as Linux
/// computes ssthresh.
fn iw10_config(from_cwnd: bool) -> TcpConfig {
    TcpConfig {
        mss: MSS as u32,
        initial_window: 10,
        recovery: Recovery::Sack,
        limited_transmit: false,
        ssthresh_from_cwnd: from_cwnd,
        ..TcpConfig::default()
    }
}

fn iw10_sack_sender(from_cwnd: bool) -> TcpSender {
    TcpSender::from_config(iw10_config(from_cwnd)).unwrap()
}

/// Segment 0 lost; 1, 2 and 3 arrive: the third duplicate ACK.
fn third_dupack_for_segment_0(s: &mut TcpSender, out: &mut Vec<Transmit>) {
    for k in 2..=4 {
        sack_ack(s, 100 * MILLISECOND, 0, &[(MSS, k * MSS)], out);
    }
}

/// Linux computes ssthresh from the window (`tcp_reno_ssthresh`: cwnd / 2),
/// the RFCs from FlightSize (RFC 5681: FlightSize / 2). An application that
/// keeps only six segments in flight under a window of ten tells them apart.
#[test]
fn linux_halves_the_window_where_the_rfcs_halve_the_flight() {
    let run = |from_cwnd: bool| {
        let mut s = iw10_sack_sender(from_cwnd);
        let mut out = Vec::new();
        s.write_all(0, Some(6 * MSS), &mut out);
        assert_eq!((s.flight_size(), s.cwnd()), (6 * MSS, 10 * MSS));
        third_dupack_for_segment_0(&mut s, &mut out);
        s.ssthresh()
    };
    assert_eq!(run(false), 3 * MSS, "RFC 5681: FlightSize / 2");
    assert_eq!(run(true), 5 * MSS, "Linux: cwnd / 2");
}

/// Linux reduces once per window of data: a timeout while fast recovery is
/// still repairing that window keeps the recovery's ssthresh
/// (`tcp_enter_loss`: "Reduce ssthresh if it has not yet been made inside
/// this window") instead of halving the recovery's window again; the RFCs
/// take half the flight at the timeout (RFC 5681 §3.1).
#[test]
fn a_timeout_in_fast_recovery_keeps_linux_ssthresh() {
    let run = |from_cwnd: bool| {
        let mut s = iw10_sack_sender(from_cwnd);
        let mut out = Vec::new();
        s.write_all(0, None, &mut out);
        third_dupack_for_segment_0(&mut s, &mut out);
        let (in_recovery, cwnd, flight) = (s.ssthresh(), s.cwnd(), s.flight_size());
        let rto = s.poll_at().unwrap();
        s.on_timer(rto, &mut out);
        (in_recovery, cwnd, flight, s.ssthresh())
    };
    let (in_recovery, cwnd, _, after) = run(true);
    assert_eq!(in_recovery, 5 * MSS, "ten segments' window halved");
    assert!(
        cwnd / 2 < in_recovery,
        "halving the recovery's window again would lower it"
    );
    assert_eq!(after, in_recovery, "Linux: the recovery's ssthresh stays");
    let (_, _, flight, after) = run(false);
    assert_eq!(after, flight / 2, "RFC 5681: FlightSize / 2 at the timeout");
}

/// Linux's socket buffers (`linux_buffers`): SO_RCVBUF / SO_SNDBUF are
/// doubled (sk_setsockopt) up to 2 × rmem_max / wmem_max (4 MB here); the
/// window is the receive buffer's memory times the scaling ratio
/// (tcp_win_from_space); unset buffers autotune up to tcp_rmem[2] = 32 MB
/// and tcp_wmem[2] = 4 MB. Without the flag the options are the window and
/// the send buffer as given.
#[test]
fn linux_sizes_socket_buffers_from_the_options() {
    let cfg = |rcvbuf, sndbuf, linux_buffers| TcpConfig {
        rcvbuf,
        sndbuf,
        linux_buffers,
        scaling_ratio: 162.0 / 256.0,
        ..TcpConfig::default()
    };
    let k = 1024;
    let c = cfg(64 * k, 64 * k, true);
    assert_eq!((c.receive_buffer(), c.send_buffer()), (82_944, 128 * k));
    let c = cfg(16 << 20, 16 << 20, true); // beyond rmem_max: capped
    assert_eq!((c.receive_buffer(), c.send_buffer()), (5_308_416, 8 << 20));
    let c = cfg(UNSET_BUFFER, UNSET_BUFFER, true);
    assert_eq!((c.receive_buffer(), c.send_buffer()), (21_233_664, 4 << 20));
    let c = cfg(64 * k, 64 * k, false);
    assert_eq!((c.receive_buffer(), c.send_buffer()), (64 * k, 64 * k));
    // a receiver advertises what the rule gives
    let mut r = TcpReceiver::new(cfg(64 * k, 64 * k, true));
    let mut out = Vec::new();
    let data = TcpSegment {
        seq: 0,
        len: 1000,
        flags: tcp_flags::ACK,
        ..Default::default()
    };
    r.on_segment(0, &data, 1040, false, &mut out);
    r.on_timer(SECOND, &mut out);
    let Body::Tcp(ack) = out.last().unwrap().body else {
        unreachable!()
    };
    assert_eq!(ack.wnd as u64, 82_944 - 1000);
}

/// Linux's RTO takes an RTT sample from an ACK that only SACKs new data:
/// the first newly SACKed segment sent once (tcp_sacktag_one's
/// first_sackt, used by tcp_ack_update_rtt when the cumulative ACK gives
/// none); RFC 6298's estimator times one segment, cumulatively ACKed.
#[test]
fn linux_rto_samples_the_rtt_from_sacks() {
    for (linux_rto, rack) in [(true, true), (true, false), (false, true)] {
        let mut s = TcpSender::from_config(TcpConfig {
            linux_rto,
            rack,
            ..iw10_config(true)
        })
        .unwrap();
        let mut out = Vec::new();
        s.write_all(0, None, &mut out);
        // segment 0 lost: 80 ms later the ACK SACKs segment 1 only
        sack_ack(&mut s, 80 * MILLISECOND, 0, &[(MSS, 2 * MSS)], &mut out);
        let expect = linux_rto.then_some(80e6);
        assert_eq!(s.srtt().map(|t| t as f64), expect, "linux_rto {linux_rto}, rack {rack}");
    }
}
