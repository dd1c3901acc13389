"""Scenario builders shared by the tests. Every expectation in the tests
comes from an RFC, an analytic model or a conservation law, never from a
previous run of this code."""

from __future__ import annotations

import math

import netbraid as nb

MSS = 1460


def single_path(*, rtt_ms=100.0, rate="100Mbps", data_loss=None, queue="10000p", duration="200s",
                measure_start="20s", **tcp) -> nb.Scenario:
    """a → r → b, RTT split evenly over four one-way hops; `data_loss` applies
    to the data direction only (a→r), so ACKs are never lost."""
    s = nb.Scenario(name="single", duration=duration)
    s.add_host("a").add_host("b").add_router("r")
    s.add_link("a", "r", rate=rate, delay=f"{rtt_ms / 4}ms", queue=queue,
               ab={"loss": data_loss} if data_loss is not None else None)
    s.add_link("r", "b", rate=rate, delay=f"{rtt_ms / 4}ms", queue=queue)
    s.add_flow("f", "a", "b", **tcp)
    s.measure = nb.Measure(start=measure_start)
    return s


def dumbbell(n: int, *, bottleneck="10Mbps", rtt_ms=100.0, buffer_pkts=100, duration="300s",
             measure_start="50s", start_step="0s", **tcp) -> nb.Scenario:
    s = nb.Scenario(name="dumbbell", duration=duration)
    s.add_host("s", count=n).add_host("d", count=n).add_router("r1").add_router("r2")
    s.add_link("s", "r1", rate="1Gbps", delay="1ms", queue="10000p")
    s.add_link("r1", "r2", rate=bottleneck, delay=f"{rtt_ms / 2 - 2}ms", queue=f"{buffer_pkts}p")
    s.add_link("r2", "d", rate="1Gbps", delay="1ms", queue="10000p")
    s.add_flow("f", "s", "d", start_step=start_step, **tcp)
    s.measure = nb.Measure(start=measure_start)
    return s


def link(result: dict, name: str) -> dict:
    return next(l for l in result["links"] if l["name"] == name)


def mathis_bps(p: float, C: float, rtt_s: float = 0.1, mss: int = MSS) -> float:
    """Mathis et al. 1997: X = MSS·C / (RTT·sqrt(p))."""
    return mss * 8 * C / (rtt_s * math.sqrt(p))


def padhye_bps(p: float, b: int, rto_s: float, rtt_s: float = 0.1, mss: int = MSS) -> float:
    """Padhye et al. 1998, the approximate closed form (protocols.md §11)."""
    return mss * 8 / (rtt_s * math.sqrt(2 * b * p / 3) + rto_s * min(1, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p))
