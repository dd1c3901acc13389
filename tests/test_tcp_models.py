"""TCP against analytic models (protocols.md §1.10 and §11)."""

import pytest

import netbraid as nb
from conftest import dumbbell, link, mathis_bps, padhye_bps, single_path


def test_window_limited_flow_gets_window_over_rtt():
    # 64 KiB window, 100 ms RTT, 100 Mb/s: W < BDP, so goodput = W/RTT. The
    # sender fills the window with whole segments: 44 of 1460 B (64,240 of
    # the 65,536 bytes) a round trip, 5.14 Mb/s, less a little for the
    # segments' transmission times in the round trip.
    r = nb.simulate(single_path(window="64KB"))
    expected = 65536 // 1460 * 1460 * 8 / 0.1
    assert r["flows"][0]["goodput_bps"] == pytest.approx(expected, rel=0.01)


@pytest.mark.parametrize("window,ratio", [("64KB", None), ("256KB", None), ("64KB", 0.9), ("8MB", None)])
def test_linux_buffers_double_the_socket_option_and_scale_it(window, ratio):
    # Linux 6.6+ (sk_setsockopt, tcp_win_from_space): SO_RCVBUF = X gives a
    # buffer of 2·min(X, rmem_max = 4 MB) bytes of memory, of which the
    # scaling ratio (162/256 on this machine) is window; SO_SNDBUF doubles
    # too, so the receive window is the limit. 100 ms RTT, 100 Mb/s: W < BDP
    # at each size but the last, whose cap (2 × 4 MB × 0.63 = 5.3 MB) is
    # above the BDP (1.25 MB): the link is the limit there.
    extra = {} if ratio is None else {"scaling_ratio": ratio}
    r = nb.simulate(single_path(window=window, profile="linux", **extra))
    x = nb.resolve(single_path(window=window))["flows"][0]["tcp"]["rcvbuf"]
    wnd = 2 * min(x, 4 << 20) * (ratio or 162 / 256)
    expected = min(wnd // 1448 * 1448 * 8 / 0.1, 100e6 * 1448 / 1500)
    assert r["flows"][0]["goodput_bps"] == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("p", [0.001, 0.01])
@pytest.mark.parametrize("delayed_ack,C,b", [(False, 1.22, 1), (True, 0.87, 2)])
def test_sack_flow_follows_mathis(p, delayed_ack, C, b):
    r = nb.simulate(single_path(data_loss=p, duration="600s", recovery="sack", delayed_ack=delayed_ack))
    f = r["flows"][0]
    assert f["loss_rate"] == pytest.approx(p, rel=0.15)  # the loss model did what was asked
    assert f["goodput_bps"] == pytest.approx(mathis_bps(p, C), rel=0.20)


@pytest.mark.parametrize("p", [0.001, 0.01])
def test_sack_flow_follows_padhye(p):
    # PFTK with T0 from RFC 6298 on this path: the samples sit at the 100 ms
    # round trip (queues stay empty at these rates), so SRTT + 4 RTTVAR is
    # about 100 ms and the 200 ms floor (as Linux's) is the RTO.
    r = nb.simulate(single_path(data_loss=p, duration="600s", recovery="sack", delayed_ack=True, rto_min="200ms"))
    f = r["flows"][0]
    assert f["goodput_bps"] == pytest.approx(padhye_bps(p, b=2, rto_s=0.2), rel=0.20)


@pytest.mark.parametrize("x", [0.25, 0.5, 1.0])
def test_reno_utilisation_with_buffer_fraction_of_bdp(x):
    # One long Reno flow, drop-tail buffer B = x·BDP: U = 3(1+x)^2 / (4(1+x+x^2)).
    bdp_pkts = 10e6 * 0.1 / 8 / 1500
    s = dumbbell(1, buffer_pkts=round(x * bdp_pkts), duration="600s", cc="reno", delayed_ack=False)
    r = nb.simulate(s)
    model = 3 * (1 + x) ** 2 / (4 * (1 + x + x * x))
    assert link(r, "r1->r2")["utilisation"] == pytest.approx(model, rel=0.05)


@pytest.mark.parametrize("n", [4, 10])
def test_flows_share_a_bdp_buffer_fairly(n):
    bdp_pkts = round(10e6 * 0.1 / 8 / 1500)
    r = nb.simulate(dumbbell(n, buffer_pkts=bdp_pkts, start_step="50ms"))
    goodputs = [f["goodput_bps"] for f in r["flows"]]
    assert nb.jain_fairness(goodputs) >= 0.95
    assert link(r, "r1->r2")["utilisation"] >= 0.95


@pytest.mark.parametrize("p", [1e-4, 1e-3])
def test_cubic_matches_reno_at_short_rtt(p):
    # RFC 9438 §4.3: in the Reno-friendly region (RTT 10 ms, p >= 1e-4) CUBIC's
    # AIMD(α = 3(1-β)/(1+β), β = 0.7) has Reno's response function, ±15 %
    # (protocols.md §4). That equivalence is derived for periodic loss, one
    # drop every 1/p packets, so that is the loss used here; W_est counts
    # acked segments, so Reno is compared without delayed ACKs.
    every = round(1 / p)
    periodic = {"model": "list", "indices": list(range(every, 3_000_000, every))}
    runs = {}
    for cc in ("reno", "cubic"):
        s = single_path(rtt_ms=10, rate="1Gbps", data_loss=periodic, duration="120s", measure_start="10s",
                        cc=cc, delayed_ack=False)
        runs[cc] = nb.simulate(s)["flows"][0]["goodput_bps"]
    assert runs["cubic"] == pytest.approx(runs["reno"], rel=0.15)


def test_cubic_beats_reno_at_long_rtt_and_low_loss():
    # At RTT 100 ms, p = 1e-5, CUBIC's average window 1.054 (RTT/p)^0.75 = 1054·... pkts
    # far exceeds Reno's 1.22/sqrt(p): CUBIC must be clearly faster.
    runs = {}
    for cc in ("reno", "cubic"):
        s = single_path(rtt_ms=100, rate="10Gbps", data_loss=1e-5, duration="300s", measure_start="30s", cc=cc)
        runs[cc] = nb.simulate(s)["flows"][0]["goodput_bps"]
    assert runs["cubic"] > 1.5 * runs["reno"]
