"""BBR (v1, as Linux runs it) and the pacing it needs, in the simulator.

Expectations come from BBR's design (Cardwell et al., "BBR: Congestion-Based
Congestion Control", ACM Queue 2016; the kernel's tcp_bbr.c): in steady
state it paces at the bottleneck rate and keeps its queue small (the 1.25
probing phase adds a quarter of a BDP for one round trip, the 0.75 phase
drains it); against a loss-based flow in a buffer shallower than the BDP it
takes more than half (its window is two BDPs whatever the losses, while
CUBIC backs off at every overflow: Hock et al., ICNP 2017; Ware et al.,
IMC 2019).
"""

import pytest

import netbraid as nb
from conftest import dumbbell

RATE = 50e6
RTT = 0.040
PAYLOAD = 1448 / 1500  # payload share of each 1500-byte packet on the wire
BDP_BYTES = RATE * RTT / 8  # 250 kB
BDP_PKTS = BDP_BYTES / 1500  # 167 packets


def _series_queue(result: dict, name: str) -> list[int]:
    return next(l for l in result["series"]["links"] if l["name"] == name)["queue_bytes"]


def test_bbr_paces_at_the_bottleneck_with_a_small_queue():
    s = dumbbell(1, bottleneck="50Mbps", rtt_ms=40, buffer_pkts=int(2 * BDP_PKTS), duration="20s",
                 measure_start="5s", profile="linux", cc="bbr")
    s.measure = nb.Measure(start="5s", interval="10ms")
    r = nb.simulate(s)
    f = r["flows"][0]
    # rate within 5 % of what the bottleneck carries as payload
    assert f["goodput_bps"] >= 0.95 * RATE * PAYLOAD, f["goodput_bps"]
    # after STARTUP, the queue stays below one BDP, on average well below
    q = _series_queue(r, "r1->r2")
    steady = q[len(q) // 10:]
    assert max(steady) < BDP_BYTES, max(steady)
    assert sum(steady) / len(steady) < BDP_BYTES / 4, sum(steady) / len(steady)


def test_bbr_pacing_spreads_the_window():
    """Unpaced, a window leaves at the access link's 1 Gb/s; paced, BBR's
    segments leave at about its pacing rate: the access link's queue
    towards the bottleneck router never builds (at most a TSO-sized burst)."""
    s = dumbbell(1, bottleneck="50Mbps", rtt_ms=40, buffer_pkts=int(2 * BDP_PKTS), duration="10s",
                 measure_start="2s", profile="linux", cc="bbr")
    s.measure = nb.Measure(start="2s", interval="1ms")
    r = nb.simulate(s)
    q = _series_queue(r, "r1->r2")
    # the bottleneck queue stays below a quarter BDP most of the time
    assert sorted(q)[len(q) // 2] < BDP_BYTES / 4


def test_bbr_takes_more_than_half_against_cubic_in_a_shallow_buffer():
    s = nb.Scenario(name="bbr-vs-cubic", duration="30s")
    s.add_host("s", count=2).add_host("d", count=2).add_router("r1").add_router("r2")
    s.add_link("s", "r1", rate="1Gbps", delay="1ms", queue="10000p")
    s.add_link("r1", "r2", rate="50Mbps", delay="18ms", queue=f"{int(BDP_PKTS / 2)}p")
    s.add_link("r2", "d", rate="1Gbps", delay="1ms", queue="10000p")
    s.add_flow("bbr", "s0", "d0", profile="linux", cc="bbr")
    s.add_flow("cubic", "s1", "d1", profile="linux", cc="cubic")
    s.measure = nb.Measure(start="5s")
    r = nb.simulate(s)
    g = {f["name"]: f["goodput_bps"] for f in r["flows"]}
    total = g["bbr"] + g["cubic"]
    assert total >= 0.9 * RATE * PAYLOAD  # the link is used
    assert g["bbr"] / total > 0.6, g


def test_bbr_is_deterministic_and_conserves_bytes():
    """Through a small, lossy bottleneck (BBR keeps sending into the losses):
    bytes sent = delivered + dropped + in flight, and the same seed gives
    the same run (BBR's random first gain phase comes from the run's seed)."""
    s = dumbbell(2, bottleneck="20Mbps", rtt_ms=30, buffer_pkts=30, duration="8.3s", measure_start="0s",
                 profile="linux", cc="bbr")
    s.links[1].loss = 0.01
    a, b = nb.simulate(s, seed=3), nb.simulate(s, seed=3)
    assert a["flows"] == b["flows"]
    for f in a["flows"]:
        acc = f["accounting"]
        assert acc["sent_bytes"] == acc["delivered_bytes"] + acc["dropped_bytes"] + acc["in_flight_bytes"]
        assert acc["dropped_bytes"] > 0 and acc["in_flight_bytes"] > 0


def test_bbr_parameters_are_checked():
    s = dumbbell(1, duration="1s", measure_start="0s", cc="bbr", cc_params={"cwnd_gain": 0.5})
    with pytest.raises(nb.ScenarioError, match=r"cc_params.cwnd_gain: 0.5 is out of range \(allowed: 1 to 10\)"):
        nb.simulate(s)
