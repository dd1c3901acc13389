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

With --side-by-side the same case runs in htsim too, alternating (netbraid,
htsim, netbraid, ...): htsim's own fat-tree program (sim/datacenter/
main_tcp.cpp) is not the same scenario (an MPTCP wrapper around every flow,
8-packet queues, a fixed 4 s, seeded from the clock, no event or hop
counts), so bench/htsim/htsim_fattree.cpp builds this one from htsim's
Queue and Pipe: the same tree, rates, delays and queues, the same
permutation (passed on its command line), a random equal-cost path per flow
and direction. It is compiled against the htsim library that
bench/dumbbell.py builds (../shared/anchors/htsim/build.sh), on first use.
htsim's TCP has no SACK and no delayed ACK (an ACK per packet), so it moves
more packets for the same data: compare packet-hops per second.

    python bench/fattree.py --duration 200ms --reps 3 --out bench/results/fattree_2026-11-26.json
    python bench/fattree.py --side-by-side --reps 3
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
from sim_binary import sim_binary

ROOT = Path(__file__).resolve().parent.parent
HTSIM_SOURCE = ROOT / "bench" / "htsim" / "htsim_fattree.cpp"
# The case, in numbers both simulators are given (netbraid's "1MB" is 2^20 bytes).
RATE_MBPS, DELAY_US, QUEUE_PACKETS, WINDOW_BYTES, WARMUP_S = 10_000, 1, 100, 2 ** 20, 0.05


def fat_tree(k: int = 8, duration: str = "200ms", seed: int = 1) -> nb.Scenario:
    half = k // 2
    s = nb.Scenario(
        name=f"fattree-k{k}", duration=duration, seed=seed,
        tcp=nb.TcpOptions(cc="newreno", recovery="sack", mss=1448, header_bytes=52, window=f"{WINDOW_BYTES}B"),
    )
    link = {"rate": f"{RATE_MBPS}Mbps", "delay": f"{DELAY_US}us", "queue": f"{QUEUE_PACKETS}p"}
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
    for i, j in enumerate(permutation(k, seed)):
        s.add_flow(f"f{i}", hosts[i], hosts[j], kind="tcp", start=f"{i}us")
    s.measure = nb.Measure(start=f"{WARMUP_S}s")  # the measurement window starts here, in both
    return s


def permutation(k: int, seed: int) -> list[int]:
    """Host i sends to host π(i) (hosts numbered pod, edge, host), a seeded
    random permutation without fixed points."""
    n = k ** 3 // 4
    rng = random.Random(seed)
    while True:
        dst = list(range(n))
        rng.shuffle(dst)
        if all(a != b for a, b in enumerate(dst)):
            return dst


def htsim_program() -> Path:
    """bench/htsim/htsim_fattree.cpp compiled against the htsim library
    (built by bench/dumbbell.py's locate_htsim if missing); rebuilt when the
    source is newer."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from dumbbell import HTSIM_BUILD_DIR, locate_htsim

    locate_htsim()  # builds htsim's library on first use
    lib = HTSIM_BUILD_DIR / "sim"
    if not (lib / "libhtsim.a").exists():
        sys.exit(f"no htsim library at {lib} (NETBRAID_HTSIM set? the fat tree needs {HTSIM_BUILD_DIR})")
    out = lib / "fat" / "htsim_fattree"
    if not out.exists() or out.stat().st_mtime < HTSIM_SOURCE.stat().st_mtime:
        out.parent.mkdir(exist_ok=True)
        r = subprocess.run(["g++", "-std=c++11", "-O3", f"-I{lib}", str(HTSIM_SOURCE), f"-L{lib}", "-lhtsim",
                            "-o", str(out)], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"compiling {HTSIM_SOURCE} failed:\n{r.stderr[-4000:]}")
    return out


def run_htsim(program: Path, k: int, seconds: float, seed: int) -> dict:
    args = [str(program), "-k", str(k), "-t", str(seconds), "-warmup", str(WARMUP_S),
            "-rate", str(RATE_MBPS), "-delay_us", str(DELAY_US), "-qs", str(QUEUE_PACKETS),
            "-window", str(WINDOW_BYTES), "-seed", str(seed),
            "-perm", ",".join(map(str, permutation(k, seed)))]
    with tempfile.NamedTemporaryFile("r", suffix=".rss") as rss:
        t0 = time.perf_counter()
        r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *args], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit(f"{program} failed: {r.stderr[-2000:]}")
        kib = int(rss.read().strip().splitlines()[-1])
    kv = dict(item.split("=", 1) for line in r.stdout.splitlines() for item in line.split())
    return {"wall_s": wall, "loop_s": float(kv["wall_run_s"]), "events": int(kv["events"]),
            "packet_hops": int(kv["packet_hops"]), "peak_mib": kib / 1024,
            "agg_goodput_bps": float(kv["agg_goodput_bps"]), "jain": float(kv["jain"])}


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


def summary(label: str, runs: list[dict]) -> dict:
    walls = [r["wall_s"] for r in runs]
    med = statistics.median(walls)
    last = runs[-1]
    return {"label": label, "wall_s": med, "wall_min_s": min(walls), "wall_max_s": max(walls),
            "events": last["events"], "packet_hops": last["packet_hops"],
            "hops_per_s": last["packet_hops"] / med, "peak_mib": max(r["peak_mib"] for r in runs),
            "agg_goodput_bps": last["agg_goodput_bps"], "jain": last["jain"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, help="a netbraid-sim binary (default: bench/sim_binary.py's build)")
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--duration", default="200ms")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--side-by-side", action="store_true", help="also run htsim on the same case, alternating")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    if args.k < 2 or args.k % 2 or args.reps < 1:
        sys.exit("--k must be even and at least 2, --reps at least 1")
    if not Path("/usr/bin/time").exists():
        sys.exit("needs GNU time: apt-get install -y time")
    args.binary = args.binary or sim_binary()
    program = htsim_program() if args.side_by_side else None
    resolved = nb.resolve(fat_tree(args.k, args.duration, args.seed))
    seconds = resolved["duration_ns"] / 1e9
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(resolved, f)
    runs: dict[str, list[dict]] = {"netbraid": [], "htsim": []}
    for rep in range(args.reps):
        runs["netbraid"].append(run(args.binary, f.name))
        line = f"  repetition {rep + 1}/{args.reps}: netbraid {runs['netbraid'][-1]['wall_s']:.2f} s"
        if program:
            runs["htsim"].append(run_htsim(program, args.k, seconds, args.seed))
            line += f", htsim {runs['htsim'][-1]['wall_s']:.2f} s"
        print(line, flush=True)
    Path(f.name).unlink()
    hosts = (args.k ** 3) // 4
    print(f"\nfat tree k={args.k}: {hosts} hosts, {5 * args.k ** 2 // 4} switches, {hosts} flows, "
          f"{args.duration} simulated; median of {args.reps}")
    sums = [summary(label, r) for label, r in runs.items() if r]
    for m in sums:
        print(f"  {m['label']:8} wall {m['wall_s']:.2f} s [{m['wall_min_s']:.2f}-{m['wall_max_s']:.2f}], "
              f"events {m['events']:,}, packet-hops {m['packet_hops']:,} ({m['hops_per_s'] / 1e6:.2f} M/s), "
              f"peak {m['peak_mib']:.1f} MiB; aggregate goodput {m['agg_goodput_bps'] / 1e9:.1f} Gb/s, "
              f"Jain {m['jain']:.3f}")
    if len(sums) == 2:
        a, b = sums
        print(f"  netbraid / htsim: packet-hops/s {a['hops_per_s'] / b['hops_per_s']:.2f}x, "
              f"wall {a['wall_s'] / b['wall_s']:.2f}x, peak memory {a['peak_mib'] / b['peak_mib']:.2f}x")
    if args.out:
        args.out.write_text(json.dumps({"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                                        "k": args.k, "duration": args.duration, "seed": args.seed,
                                        "runs": runs, "summary": sums}, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
