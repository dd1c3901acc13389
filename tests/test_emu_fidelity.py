"""The emu backend's fidelity warnings, from result rows and resolved
scenarios alone (no root needed)."""

from __future__ import annotations

import netbraid as nb
from netbraid.emu.fidelity import late_warnings, rate_warnings
from netbraid.resolve import resolve


def row(late: int, sent: int, name: str = "a->b") -> dict:
    return {"name": name, "rate_bps": 1e9, "tx_packets": sent, "late_packets": late, "max_late_s": 0.0042}


def test_a_direction_is_named_only_when_more_than_one_percent_left_late():
    # the delay target is on the 99th percentile: up to 1 % may leave late
    assert late_warnings([row(100, 10_000)]) == []  # exactly 1 %: the 99th percentile still holds
    (w,) = late_warnings([row(101, 10_000), row(0, 10_000, "b->a")])
    assert w.startswith("link a->b: 101 of 10000 packets (1.0 %)") and "worst 4.2 ms" in w and "1 Gb/s" in w
    assert late_warnings([row(0, 0)]) == [] and late_warnings([{"name": "x", "rate_bps": 1, "tx_packets": None,
                                                               "late_packets": None}]) == []


def test_each_direction_above_the_measured_ceiling_is_named_with_rate_and_ceiling():
    s = nb.Scenario(name="fast", duration="1s")
    s.add_host("a").add_host("b").add_host("c")
    s.add_link("a", "b", rate="2Gbps", delay="1ms")  # at the ceiling: fine
    s.add_link("b", "c", rate="10Gbps", delay="1ms", ba={"rate": "1Gbps"})
    s.add_flow("u", "a", "c", kind="cbr", rate="1Mbps")
    (w,) = rate_warnings(resolve(s, backend="emu"))
    assert w.startswith("link b->c: rate 10 Gb/s is above") and "(2 Gb/s per direction" in w
