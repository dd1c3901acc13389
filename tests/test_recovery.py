"""Loss recovery through the whole simulator, with drops placed exactly
(loss model "list": the n-th packet on the data direction is lost).
Expectations: RFC 5681 / RFC 6582 / RFC 6675, protocols.md §1.10 (3, 4)."""

import pytest

import netbraid as nb
from conftest import MSS, single_path

RTT = 0.1


def run_with_drops(recovery: str, drops: list[int], **extra):
    # Slow start without a ceiling: by packet 200 the window is ~100 segments.
    s = single_path(data_loss={"model": "list", "indices": drops}, duration="20s", measure_start="0s",
                    recovery=recovery, log_congestion=True, delayed_ack=False, rto_min="1s", **extra)
    return nb.simulate(s)["flows"][0]


@pytest.mark.parametrize("recovery", ["reno", "newreno", "sack"])
def test_one_drop_in_a_large_window(recovery):
    f = run_with_drops(recovery, [200])
    assert f["retransmits"] == 1
    assert f["timeouts"] == 0
    assert f["fast_retransmits"] == 1
    events = f["congestion_events"]
    fr = next(e for e in events if e["kind"] == "fast_retransmit")
    # ssthresh = FlightSize/2 at the loss (±1 SMSS), and after recovery cwnd = ssthresh.
    assert fr["ssthresh"] == pytest.approx(fr["flight_bytes"] / 2, abs=MSS)
    assert fr["flight_bytes"] > 50 * MSS  # it really was a large window
    exit_ = next(e for e in events if e["kind"] == "recovery_exit")
    assert exit_["cwnd_after"] == fr["ssthresh"]


@pytest.mark.parametrize("recovery,rtts", [("newreno", 3), ("sack", 1)])
def test_three_drops_in_one_window_recover_without_timeout(recovery, rtts):
    f = run_with_drops(recovery, [200, 205, 210])
    assert f["timeouts"] == 0
    assert f["fast_retransmits"] == 1  # one halving for one window
    assert f["retransmits"] == 3
    events = f["congestion_events"]
    start = next(e for e in events if e["kind"] == "fast_retransmit")["time_s"]
    end = next(e for e in events if e["kind"] == "recovery_exit")["time_s"]
    # NewReno repairs one hole per RTT; SACK repairs all three in about one RTT.
    assert (end - start) / RTT == pytest.approx(rtts, abs=0.5)


def test_three_drops_in_one_window_reno_halves_twice_or_times_out():
    f = run_with_drops("reno", [200, 205, 210])
    # Plain Reno leaves recovery on the first partial ACK: it halves again
    # for the next hole, or stalls into a retransmission timeout.
    assert f["fast_retransmits"] >= 2 or f["timeouts"] >= 1
    assert f["retransmits"] >= 3


def test_outage_gives_doubling_timeouts():
    # A 14-segment window; every data packet from #100 on is lost for a while,
    # so the retransmissions time out again and again.
    f = run_with_drops("newreno", list(range(100, 119)), window=f"{14 * MSS}B")
    times = [e["time_s"] for e in f["congestion_events"] if e["kind"] == "timeout"]
    assert len(times) >= 4
    gaps = [b - a for a, b in zip(times, times[1:])]
    for a, b in zip(gaps, gaps[1:]):
        assert b == pytest.approx(2 * a, rel=1e-6)


# ---- reordering: D-SACK and undo (RFC 2883, RFC 8985 §6.2; Linux's tcp_try_undo_dsack) ----


def run_reordering(dsack: bool) -> dict:
    """Per-packet round robin over two 20 Mb/s paths whose delays differ by
    10 ms: every other segment arrives 10 ms late, far beyond RACK's first
    reordering window (a quarter of the ~22 ms minimum RTT)."""
    s = nb.Scenario(name="reordering", duration="20s", seed=1)
    s.add_host("a").add_host("b").add_router("r1", multipath="round_robin").add_router("r2")
    s.add_link("a", "r1", rate="100Mbps", delay="1ms")
    s.add_link("r1", "r2", rate="20Mbps", delay="10ms", queue="200 packets")
    s.add_link("r1", "r2", rate="20Mbps", delay="20ms", queue="200 packets")
    s.add_link("r2", "b", rate="100Mbps", delay="1ms")
    s.add_flow("f", "a", "b", profile="linux", dsack=dsack)
    return nb.simulate(s)["flows"][0]


def test_dsack_undoes_reductions_that_reordering_caused():
    with_dsack, without = run_reordering(True), run_reordering(False)
    # duplicates are reported (RFC 2883), at most once each
    assert 0 < with_dsack["dsack_dups"] <= with_dsack["duplicates_received"]
    assert with_dsack["undos"] >= 1
    assert (without["dsack_dups"], without["undos"]) == (0, 0)
    # without D-SACK, RACK's window never widens: each late segment is
    # "lost", each recovery halves; with it, the window grows to cover the
    # 10 ms and the flow keeps most of the two paths' 40 Mb/s
    assert with_dsack["goodput_bps"] > 0.5 * 40e6
    assert without["goodput_bps"] < 0.25 * with_dsack["goodput_bps"]
    assert with_dsack["fast_retransmits"] < without["fast_retransmits"] / 10
