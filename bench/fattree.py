"""The datacenter case of issue 17: a k = 8 fat tree (128 hosts, 80
switches, every link 10 Gb/s) carrying a random permutation of long TCP
flows, each switch spreading flows over its equal-cost uplinks by a hash of
the flow (per-flow ECMP). Built from the Python API.

Topology (Al-Fares et al., SIGCOMM 2008): k pods, each with k/2 edge and
k/2 aggregation switches; an edge switch has k/2 hosts and a link to every
aggregation switch of its pod; aggregation switch j of a pod links to core
switches j·k/2 … j·k/2 + k/2 − 1. Links 1 µs one way, 100-packet queues.
Traffic: host i sends to host π(i), π a random permutation without fixed
points (seeded), NewReno with SACK, 1448-byte segments, 1 MB windows.

The scenario is resolved once; the `netbraid-sim` binary runs it `--reps`
times in a child process (GNU time for peak RSS). Printed: wall time (median
[min–max]), events, packet-hops, packet-hops per second, peak memory,
aggregate goodput and Jain's index.

htsim's own fat-tree program (sim/datacenter/main_tcp.cpp) is not the same
scenario (an MPTCP wrapper around every flow, 8-packet queues, a fixed 4 s,
seeded from the clock, no event or hop counts), so no side-by-side figure
is given for this case yet.

    python bench/fattree.py --duration 200ms --reps 3 --out bench/results/fattree_2026-11-26.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import netbraid as nb

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "netbraid-sim"


def fat_tree(k: int = 8, duration: str = "200ms", seed: int = 1) -> nb.Scenario:
    half = k // 2
    s = nb.Scenario(
        name=f"fattree-k{k}", duration=duration, seed=seed,
        tcp=nb.TcpOptions(cc="newreno", recovery="sack", mss=1448, header_bytes=52, window="1MB"),
    )
    link = {"rate": "10Gbps", "delay": "1us", "queue": "100p"}
    for c in range(half * half):
        s.add_router(f"core{c}", multipath="ecmp")
    hosts = []
    for p in range(k):
        for j in range(half):
            s.add_router(f"agg{p}_{j}", multipath="ecmp")
            for c in range(j * half, (j + 1) * half):
                s.add_link(f"agg{p}_{j}", f"core{c}", **link)
        for e in range(half):
            s.add_router(f"edge{p}_{e}", multipath="ecmp")
            for j in range(half):
                s.add_link(f"edge{p}_{e}", f"agg{p}_{j}", **link)
            for h in range(half):
                name = f"h{p}_{e}_{h}"
                s.add_host(name)
                s.add_link(name, f"edge{p}_{e}", **link)
                hosts.append(name)
    rng = random.Random(seed)
    while True:  # a permutation without fixed points
        dst = hosts[:]
        rng.shuffle(dst)
        if all(a != b for a, b in zip(hosts, dst)):
            break
    for i, (a, b) in enumerate(zip(hosts, dst)):
        s.add_flow(f"f{i}", a, b, kind="tcp", start=f"{i}us")
    s.measure = nb.Measure(start="50ms")
    return s


def run(binary: Path, path: str) -> dict:
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, str(binary), path],
                           capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"{binary} failed: {r.stderr[-2000:]}")
        kib = int(rss.read().strip().splitlines()[-1])
    out = json.loads(r.stdout)
    g = [f["goodput_bps"] for f in out["flows"]]
    return {"wall_s": wall, "loop_s": out["wall_s"], "events": out["events"], "packet_hops": out["packet_hops"],
            "peak_mib": kib / 1024, "agg_goodput_bps": sum(g), "jain": nb.jain_fairness(g)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, default=BINARY)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--duration", default="200ms")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if not args.binary.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "netbraid-sim"], cwd=ROOT, check=True)
    resolved = nb.resolve(fat_tree(args.k, args.duration))
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(resolved, f)
    runs = []
    for rep in range(args.reps):
        runs.append(run(args.binary, f.name))
        print(f"  repetition {rep + 1}/{args.reps}: {runs[-1]['wall_s']:.2f} s", flush=True)
    Path(f.name).unlink()
    walls = [r["wall_s"] for r in runs]
    med, last = statistics.median(walls), runs[-1]
    hosts = (args.k ** 3) // 4
    print(f"\nfat tree k={args.k}: {hosts} hosts, {5 * args.k ** 2 // 4} switches, {hosts} flows, "
          f"{args.duration} simulated; median of {args.reps}")
    print(f"  wall {med:.2f} s [{min(walls):.2f}-{max(walls):.2f}], events {last['events']:,}, "
          f"packet-hops {last['packet_hops']:,} ({last['packet_hops'] / med / 1e6:.2f} M/s), "
          f"peak {max(r['peak_mib'] for r in runs):.1f} MiB")
    print(f"  aggregate goodput {last['agg_goodput_bps'] / 1e9:.1f} Gb/s, Jain {last['jain']:.3f}")
    if args.out:
        args.out.write_text(json.dumps({"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                                        "k": args.k, "duration": args.duration, "runs": runs}, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
