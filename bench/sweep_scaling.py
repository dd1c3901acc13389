"""Does a sweep keep both cores busy? 200 short runs (the dumbbell example,
ten TCP flows, shortened), executed with one worker process and with one per
core, written to a results directory as a real sweep is (journal synced per
run). Reports runs/s for each and their ratio (target: ≥ 1.8× on 2 cores).

    python bench/sweep_scaling.py [--duration 120s] [--runs 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import netbraid as nb
from netbraid.experiment import Axis, execute, make_plan

ROOT = Path(__file__).resolve().parent.parent


def rate(workers: int, runs: int, duration: str) -> tuple[float, float]:
    s = nb.load_scenario(ROOT / "examples" / "dumbbell.toml", [f"duration={duration}"])
    plan = make_plan(s, grid=[Axis("links.1.rate", ("8Mbps", "10Mbps", "12Mbps", "14Mbps"))], reps=runs // 4)
    with tempfile.TemporaryDirectory() as d:
        t0 = time.perf_counter()
        execute(plan, Path(d) / "out", workers=workers)
        wall = time.perf_counter() - t0
    return runs / wall, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--duration", default="120s")
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    one, w1 = rate(1, args.runs, args.duration)
    many, wn = rate(cores, args.runs, args.duration)
    print(f"{args.runs} runs of the dumbbell ({args.duration} simulated each)")
    print(f"1 worker : {w1:6.2f} s, {one:6.1f} runs/s")
    print(f"{cores} workers: {wn:6.2f} s, {many:6.1f} runs/s -> {many / one:.2f}x")


if __name__ == "__main__":
    main()
