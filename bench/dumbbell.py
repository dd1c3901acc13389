"""The dumbbell benchmark of shared/anchors/dumbbell-benchmark.md, measured
the way the anchor measured ns-3 and htsim.

Method: the scenario is resolved to JSON once, then the Rust binary
`netbraid-sim` (release build) runs it in a child process, so Python's
start-up and memory are not counted. Wall time is the child's elapsed time;
peak memory its maximum resident set as GNU time reports it (Debian package
`time`; without it, getrusage of children is used, which also counts the
forked Python parent's pages and so overstates the figure); events are
the simulator's executed events; packet-hops are packets transmitted on
every link direction (data and ACKs), as the anchor counts them.

    python bench/dumbbell.py            # both cases, 3 repetitions each
    python bench/dumbbell.py --case 10  # only N=10
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import netbraid as nb

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "netbraid-sim"

# Reference figures recorded in shared/anchors/dumbbell-benchmark.md (median wall s, events, hops, RSS MiB).
ANCHORS = {
    10: {"ns-3": (8.37, 2_434_057, 691_588, 17.4), "htsim": (0.166, 1_820_879, 901_580, 3.9)},
    100: {"ns-3": (1529.0, 236_089_886, 66_858_416, 37.0), "htsim": (16.7, 149_602_933, 74_794_089, 5.1)},
}


def anchor_scenario(n: int) -> nb.Scenario:
    """N senders → R1 → R2 → N receivers, as the anchor describes."""
    fast = n == 100
    access = "10Gbps" if fast else "100Mbps"
    s = nb.Scenario(
        name=f"anchor-dumbbell-{n}",
        duration="180s",
        tcp=nb.TcpOptions(
            cc="newreno", recovery="sack", mss=1448, header_bytes=52,  # 1500-byte IP packets
            window="128KB",  # ns-3 default socket buffers (131072 B)
            delayed_ack=True, delack_count=2, delack_timeout="200ms", rto_min="1s",
        ),
    )
    s.add_host("L", count=n).add_host("D", count=n).add_router("R1").add_router("R2")
    s.add_link("L", "R1", rate=access, delay="2ms", queue="1000p")
    s.add_link("R1", "R2", rate="1Gbps" if fast else "10Mbps", delay="5ms", queue="100p")
    s.add_link("R2", "D", rate=access, delay="2ms", queue="1000p")
    s.add_flow("tcp", "L", "D", start="0.1s", start_step="10ms")
    s.measure = nb.Measure(start="10s", stop="180s")
    return s


GNU_TIME = Path("/usr/bin/time")


def run_once(path: str) -> tuple[float, dict, float]:
    """(wall seconds, result, peak RSS in MiB) of one run."""
    cmd = [str(BINARY), path]
    if GNU_TIME.exists():
        cmd = [str(GNU_TIME), "-f", "%M", *cmd]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    if GNU_TIME.exists():
        rss_kib = int(out.stderr.strip().splitlines()[-1])
    else:
        rss_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, json.loads(out.stdout), rss_kib / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", type=int, choices=[10, 100], action="append")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    if not BINARY.exists():
        subprocess.run(["cargo", "build", "--release", "-p", "netbraid-sim"], cwd=ROOT, check=True)
    for n in args.case or [10, 100]:
        resolved = nb.resolve(anchor_scenario(n))
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(resolved, f)
        walls, rss = [], 0.0
        for _ in range(args.reps):
            wall, result, peak = run_once(f.name)
            walls.append(wall)
            rss = max(rss, peak)
        os.unlink(f.name)
        med = statistics.median(walls)
        ev, hops = result["events"], result["packet_hops"]
        g = [fl["goodput_bps"] for fl in result["flows"]]
        drops = sum(l["queue_drops"] for l in result["links"])
        print(f"\n== N={n}: {len(g)} flows, 180 s simulated (cpu: {os.cpu_count()} cores, one used)")
        print(f"netbraid: wall min {min(walls):.3f} s / median {med:.3f} s; events {ev:,} ({ev / med / 1e6:.2f} M/s); "
              f"packet-hops {hops:,} ({hops / med / 1e6:.2f} M/s); peak RSS {rss:.1f} MiB")
        print(f"          aggregate goodput {sum(g) / 1e6:.2f} Mb/s; per flow {min(g) / 1e6:.2f}–{max(g) / 1e6:.2f} Mb/s; "
              f"Jain {nb.jain_fairness(g):.3f}; bottleneck drops {drops:,}; retransmits {sum(fl['retransmits'] for fl in result['flows']):,}")
        for tool, (w, aev, ahops, arss) in ANCHORS[n].items():
            print(f"{tool:>8}: median {w} s, events {aev:,}, packet-hops {ahops:,}, RSS {arss} MiB "
                  f"-> netbraid: {w / med:.1f}x faster per run, {(hops / med) / (ahops / w):.1f}x its packet-hops/s")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
