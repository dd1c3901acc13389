"""The training set of the simulator's profile-guided build (scripts/pgo).

A profile-guided build optimises for the code paths its training runs took,
and treats code the training never ran as cold. So the training covers every
protocol, controller and network feature a user can ask for, briefly: each
example, the benchmark scenarios (dumbbells in RFC and Linux mode, MPTCP,
SCTP-CMT, HighSpeed TCP at 10 Gb/s), one point of each paper, and the
controllers, schedulers and queue disciplines the examples leave out. It runs
in about a minute instrumented. It is not the benchmarks' exact runs: the
dumbbells and the 10 Gb/s case run shorter, beside everything else.

    python scripts/pgo_training.py --write DIR   # resolved JSON, for netbraid-sim
    python scripts/pgo_training.py --run         # through the Python extension
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import netbraid as nb  # noqa: E402
from netbraid.api import run_resolved  # noqa: E402
from netbraid.papers import p000, p001, p002, p003  # noqa: E402
from netbraid.resolve import resolve  # noqa: E402
from netbraid.scenario_io import load_scenario  # noqa: E402
from netbraid.schema import Measure  # noqa: E402


def _shorter(s: nb.Scenario, duration: str) -> nb.Scenario:
    s.duration = duration
    s.measure = Measure()
    return s


def scenarios() -> Iterator[tuple[str, nb.Scenario]]:
    from dumbbell import anchor_scenario
    from hstcp_speed import scenario as hstcp
    from linux_profile_cost import linux_variant
    from mptcp_cost import scenario as mptcp_cost
    from sctp_cost import scenario as sctp_cost

    for toml in sorted((ROOT / "examples").glob("*.toml")):
        yield toml.stem, load_scenario(toml)
    yield "dumbbell-10", anchor_scenario(10)
    yield "dumbbell-100", _shorter(anchor_scenario(100), "4s")
    for cc in ("cubic", "bbr", "reno"):
        yield f"dumbbell-10-linux-{cc}", linux_variant(10, cc)
    yield "dumbbell-100-linux", _shorter(linux_variant(100, None), "3s")
    for case in ("tcp", "mptcp"):
        yield f"mptcp-cost-{case}", mptcp_cost(case, "1Gbps", "2s")
    for case in ("tcp", "sctp", "cmt"):
        yield f"sctp-cost-{case}", sctp_cost(case, "1Gbps", "1s")
    yield "hstcp-10g", hstcp(1e-5, 4.0)
    # MPTCP's controllers and schedulers, on paper 001's lossy main flow
    for cc, sched in (("lia", "default"), ("olia", "min_rtt"), ("balia", "round_robin"), ("cubic", "redundant")):
        s = p001.scenario("mptcp", 200, loss=0.02, duration_s=3.0)
        for f in s.flows:
            f.cc, f.scheduler = cc, sched
        yield f"p001-{cc}-{sched}", s
    yield "p001-delay", p001.scenario("mptcp", 400, delay_ms=10.0, duration_s=3.0)
    for case in p000.CASES:
        yield f"p000-{case}", p000.scenario("SCTP-CMT", case, duration_s=15.0)
    yield "p000-sctp", p000.scenario("SCTP", "delay", duration_s=15.0)
    yield "p000-tcp", p000.scenario("TCP", "delay", duration_s=15.0)
    for between in ("reno", "hstcp", "ghstcp-approx"):
        yield f"p002-{between}", p002.scenario(relayed=True, between=between, direct_beside=True, duration_s=10.0)
    yield "p002-direct", p002.scenario(duration_s=10.0, tcp={"recovery": "newreno"})
    yield "p003", p003.scenario([10.0, 5.0, 2.0], measure_s=10.0)
    # RED marking ECN-capable packets, and time series
    s = nb.Scenario(name="red-ecn", duration="20s", tcp={"ecn": True}, measure={"interval": "100ms"})
    s.add_host("a").add_host("b").add_router("r1").add_router("r2")
    s.add_link("a", "r1", rate="100Mbps", delay="1ms")
    s.add_link("r1", "r2", rate="10Mbps", delay="10ms", queue="100p", red={"ecn": True})
    s.add_link("r2", "b", rate="100Mbps", delay="1ms")
    for i in range(4):
        s.add_flow(f"f{i}", "a", "b")
    yield "red-ecn", s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--write", type=Path, metavar="DIR", help="write each scenario, resolved, as DIR/NAME.json")
    how.add_argument("--run", action="store_true", help="run each through the Python extension")
    a = ap.parse_args()
    for name, s in scenarios():
        resolved = resolve(s)
        if a.write:
            a.write.mkdir(parents=True, exist_ok=True)
            (a.write / f"{name.replace(' ', '-')}.json").write_text(json.dumps(resolved))
        else:
            run_resolved(resolved)
            print(f"  trained on {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
