"""Side-by-side cost per packet-hop of several simulator cases, in
alternation in one process (A B A B …): the shared loop of
`mptcp_cost.py` and `sctp_cost.py`. Wall time is the simulator's own
(`wall_s`: the Rust run, no Python); packet-hops are packets sent on every
link direction, data and control."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Callable

import netbraid as nb


def compare(cases: dict[str, Callable[[], nb.Scenario]], reps: int) -> dict[str, dict[str, float]]:
    """Run every case `reps` times, alternating; print each run; return the
    medians per case (wall_s, packet_hops, events, goodput_bps, ns_per_hop)
    and keep the runs in `compare.runs`."""
    runs: dict[str, list[dict]] = {c: [] for c in cases}
    for rep in range(reps):
        for case, make in cases.items():
            r = nb.simulate(make())
            goodput = sum(f["goodput_bps"] for f in r["flows"])
            runs[case].append({"wall_s": r["wall_s"], "packet_hops": r["packet_hops"], "events": r["events"],
                               "goodput_bps": goodput, "ns_per_hop": r["wall_s"] * 1e9 / r["packet_hops"]})
            print(f"rep {rep} {case:>6}: {r['wall_s']:.3f} s, {r['packet_hops']:,} packet-hops, "
                  f"{r['wall_s'] * 1e9 / r['packet_hops']:.1f} ns/hop, goodput {goodput / 1e6:.0f} Mb/s", flush=True)
    compare.runs = runs
    return {c: {k: statistics.median(x[k] for x in v) for k in v[0]} for c, v in runs.items()}


def arguments(doc: str) -> argparse.Namespace:
    """--rate, --duration, --reps and --out, as both scripts take them."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", default="1Gbps")
    ap.add_argument("--duration", default="20s")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out")
    return ap.parse_args()


def write(path: str | None, **fields) -> None:
    if path:
        with open(path, "w") as f:
            json.dump({"date": time.strftime("%Y-%m-%d"), "runs": compare.runs, **fields}, f, indent=1)
