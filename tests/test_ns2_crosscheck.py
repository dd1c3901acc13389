"""netbraid against ns-2 itself on paper 003's scenario: the same topology
(per-packet round robin over d paths, DropTail limit_ 50), ns-2's Tahoe
`Agent/TCP` with ns-2.27's defaults, and its exponential on-off source. The
expected numbers come from running ns-2 (Debian's ns-2.35, `bench/ns2/`),
an independent implementation, on every test run.

Tolerances allow for seed noise only: the two simulators draw different
random numbers, so they agree in distribution, not run by run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from netbraid.experiment import execute, make_plan
from netbraid.papers import p003

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "ns2"))
import runner  # noqa: E402

pytestmark = [pytest.mark.ns2,
              pytest.mark.skipif(runner.available() is not None, reason=str(runner.available()))]

MEASURE_S = 60.0
#: relative tolerance per metric: TCP rates are steady (the paths are
#: saturated); losses and the six bursty UDP sources vary more between seeds
#: Measured: within 0.2 %, 0.3 %, 0.7 %, 4.3 % and 4.3 %. Each case fails
#: when netbraid departs from ns-2: with ns-2.35's minrto_ {20,7,3} is off
#: by 7 %, 11 %, 3 %, 54 %, 46 %; with RFC sender rules instead of ns-2's,
#: {15,10,5} goodput by 3.1 % and losses by −10 % and −14 %.
TOLERANCE = {"tcp_thr": 0.02, "tcp_good": 0.02, "udp_thr": 0.05, "tcp_loss": 0.08, "udp_loss": 0.10}


@pytest.mark.parametrize("label,rates", [("d=1", [10]), ("15,10,5", [15, 10, 5]), ("20,7,3", [20, 7, 3])])
def test_netbraid_matches_ns2_on_the_papers_scenario(label, rates):
    ns2 = runner.run(rates, [1, 2, 3], MEASURE_S, runner.NS2_27)
    runs, _ = execute(make_plan(p003.scenario(rates, measure_s=MEASURE_S, tcp=p003.NS2_TCP), reps=6, seed=1),
                      None, progress=False)
    ours = p003.per_run(runs)
    for metric, tol in TOLERANCE.items():
        expected = sum(r[metric] for r in ns2) / len(ns2)
        got = float(ours[metric].mean())
        assert abs(got / expected - 1) <= tol, (label, metric, got, expected)
