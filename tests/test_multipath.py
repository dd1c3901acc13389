"""Multipath forwarding through the whole simulator (protocols.md §9)."""

import pytest

import netbraid as nb

PAYLOAD = 1460 / 1500  # goodput per bit of link capacity


def parallel_paths(rates: list[str], policy: str, flows: int = 1, duration: str = "60s") -> nb.Scenario:
    """h → r1 ⇉ (one link per rate) ⇉ r2 → d, the policy at both routers."""
    s = nb.Scenario(name="parallel", duration=duration)
    s.add_host("h", count=flows).add_host("d", count=flows)
    s.add_router("r1", multipath=policy).add_router("r2", multipath=policy)
    s.add_link("h", "r1", rate="1Gbps", delay="1ms", queue="1000p")
    for r in rates:
        s.add_link("r1", "r2", rate=r, delay="10ms", queue="200p")
    s.add_link("r2", "d", rate="1Gbps", delay="1ms", queue="1000p")
    s.add_flow("f", "h", "d", recovery="sack", delayed_ack=False)
    s.measure = nb.Measure(start="10s")
    return s


def test_round_robin_over_equal_paths_adds_their_capacity():
    for k in (2, 3):
        f = nb.simulate(parallel_paths(["10Mbps"] * k, "round_robin"))["flows"][0]
        assert f["goodput_bps"] >= 0.9 * k * 10e6 * PAYLOAD
        # equal paths: no reordering, so (almost) every retransmission repairs a real loss
        assert f["retransmits"] <= f["packets_lost"] + 3


def test_round_robin_over_unequal_paths_is_held_to_k_times_the_slowest():
    f = nb.simulate(parallel_paths(["10Mbps", "5Mbps"], "round_robin"))["flows"][0]
    assert f["goodput_bps"] <= 2 * 5e6 * 1.02  # not 15 Mb/s: equal packet counts per path


def test_weighted_splitting_uses_unequal_paths_in_proportion():
    # 12 Mb/s of CBR over 10 + 5 Mb/s: packets split 2:1 by rate, so each
    # path runs at 80 % and nothing is dropped (per-packet round robin would
    # send 6 Mb/s into the 5 Mb/s path).
    s = nb.Scenario(name="w", duration="20s")
    s.add_host("h").add_host("d").add_router("r1", multipath="weighted").add_router("r2")
    s.add_link("h", "r1", rate="1Gbps", delay="1ms")
    s.add_link("r1", "r2", rate="10Mbps", delay="10ms")
    s.add_link("r1", "r2", rate="5Mbps", delay="10ms")
    s.add_link("r2", "d", rate="1Gbps", delay="1ms")
    s.add_flow("u", "h", "d", kind="cbr", rate="12Mbps", packet_size="1000B")
    r = nb.simulate(s)
    fast, slow = (l for l in r["links"] if l["from"] == "r1" and l["to"] == "r2")
    assert fast["tx_packets"] / slow["tx_packets"] == pytest.approx(2.0, rel=0.01)
    assert r["flows"][0]["loss_rate"] == 0.0


def test_ecmp_keeps_each_flow_on_one_path():
    r = nb.simulate(parallel_paths(["10Mbps"] * 4, "ecmp", flows=1))
    f = r["flows"][0]
    assert f["goodput_bps"] <= 10e6  # one path's worth at most
    busy = [l for l in r["links"] if l["from"] == "r1" and l["to"] == "r2" and l["tx_packets"] > 0]
    assert len(busy) == 1
    many = nb.simulate(parallel_paths(["10Mbps"] * 4, "ecmp", flows=16))
    assert sum(1 for l in many["links"] if l["from"] == "r1" and l["to"] == "r2" and l["tx_packets"] > 0) >= 3


def test_delay_skew_under_round_robin_causes_spurious_retransmissions():
    s = parallel_paths(["10Mbps", "10Mbps"], "round_robin")
    s.links[2] = s.links[2].model_copy(update={"delay": 40_000_000})  # second path 40 ms instead of 10
    f = nb.simulate(s)["flows"][0]
    assert f["retransmits"] > f["packets_lost"]


def renewal_rate(rate: float, size: float, burst: float, idle: float) -> float:
    """protocols.md §10: mean rate of ns-2's exponential on-off source."""
    import math

    t = size * 8 / rate
    m = burst / t
    a = math.exp(-0.5 / m)
    en = a / (1 - math.exp(-1 / m)) + 1 - a
    return en * size * 8 / (en * t + idle)


@pytest.mark.parametrize("header", [0, 28])
def test_onoff_source_long_run_rate_through_the_simulator(header):
    # Paper 003's UDP sources: 1.5 Mb/s while on, 20 ms / 120 ms, 210-byte packets.
    s = nb.Scenario(name="onoff", duration="1500s")
    s.add_host("a").add_host("b")
    s.add_link("a", "b", rate="100Mbps", delay="1ms")
    s.add_flow("u", "a", "b", kind="onoff", rate="1.5Mbps", burst_time="20ms", idle_time="120ms",
               packet_size="210B", header_bytes=header)
    f = nb.simulate(s)["flows"][0]
    want = renewal_rate(1.5e6, 210, 0.020, 0.120)
    assert f["goodput_bps"] == pytest.approx(want, rel=0.02)
    assert f["throughput_bps"] == pytest.approx(f["goodput_bps"] * (210 + header) / 210, rel=1e-9)
