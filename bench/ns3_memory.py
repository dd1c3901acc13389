"""Issue 17's "under ns-3's memory" for its two scale cases: the 1000-flow
dumbbell at 10 Gb/s (bench/dumbbell.py --case 1000, 60 s simulated) and the
k = 8 fat tree (bench/fattree.py, 200 ms simulated), in ns-3 beside netbraid.

ns-3 is Debian's (package libns3-dev, ns-3.37); bench/ns3/ns3_scale.cc
builds both cases with its point-to-point links, traffic-control FIFOs,
global routing and BulkSend/PacketSink over NewReno with SACK (the file
says what matches netbraid's scenario and what cannot: ns-3.37's only ECMP
is a random choice per packet). It is compiled here on first use.

Method. ns-3 runs these cases at tens of thousands of events per second
here (1.5 s of the dumbbell took 7 minutes), so a full run (hours) is not
practical. It runs a prefix instead (`--ns3-dumbbell`, default 0.5 s;
`--ns3-fattree`, default 1 ms). Both simulators are deterministic, a
prefix is the same execution cut short, and the peak resident set of a run
is the largest over its life, so **the peak of ns-3's prefix is a lower
bound on the peak of its full run**. netbraid runs the full case (and the
same prefix, for reference, where its flows all start within it: netbraid
refuses a flow that would start after the end of the run); "under ns-3's memory" holds when netbraid's
full-run peak is below ns-3's prefix peak. Peak memory is GNU time's
maximum resident set (Debian package `time`); netbraid's binary is
bench/sim_binary.py's.

    python bench/ns3_memory.py [--out bench/results/ns3_memory_DATE.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import netbraid as nb
from dumbbell import anchor_scenario, run_child
from fattree import WARMUP_S, fat_tree, permutation, run
from sim_binary import sim_binary

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "bench" / "ns3" / "ns3_scale.cc"
PROGRAM = ROOT / "bench" / ".ns3-build" / "ns3_scale"
NS3_LIBS = ["-lns3-applications", "-lns3-internet", "-lns3-point-to-point", "-lns3-traffic-control",
            "-lns3-network", "-lns3-bridge", "-lns3-stats", "-lns3-core"]


def ns3_program() -> Path:
    """bench/ns3/ns3_scale.cc compiled against Debian's ns-3 (rebuilt when the source is newer)."""
    if not Path("/usr/include/ns3/core-module.h").exists():
        sys.exit("ns3_memory: needs ns-3's headers and libraries: apt-get install libns3-dev")
    if shutil.which("g++") is None:
        sys.exit("ns3_memory: needs g++: apt-get install g++")
    if not PROGRAM.exists() or PROGRAM.stat().st_mtime < SOURCE.stat().st_mtime:
        PROGRAM.parent.mkdir(exist_ok=True)
        r = subprocess.run(["g++", "-std=c++17", "-O2", str(SOURCE), "-o", str(PROGRAM), *NS3_LIBS],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"compiling {SOURCE} failed:\n{r.stderr[-4000:]}")
    return PROGRAM


def run_ns3(args: list[str]) -> dict:
    wall, stdout, peak_mib, _ = run_child([str(ns3_program()), *args])
    kv = dict(item.split("=", 1) for line in stdout.splitlines() for item in line.split())
    return {"wall_s": wall, "loop_s": float(kv["wall_run_s"]), "events": int(kv["events"]),
            "peak_mib": peak_mib, "goodput_bps": float(kv["goodput_bps"])}


def run_netbraid(binary: Path, scenario: nb.Scenario) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(nb.resolve(scenario), f)
        f.flush()
        r = run(binary, f.name)
    return {"wall_s": r["wall_s"], "events": r["events"], "peak_mib": r["peak_mib"],
            "goodput_bps": r["agg_goodput_bps"]}


def dumbbell(duration_s: float) -> nb.Scenario:
    s = anchor_scenario(1000)
    s.duration = f"{duration_s}s"
    if duration_s <= 15:  # the case measures from 15 s: a prefix measures all of itself
        s.measure = nb.Measure()
    return s


def fattree(duration_s: float) -> nb.Scenario:
    s = fat_tree(8, f"{duration_s * 1e6:.0f}us", 1)
    if duration_s <= WARMUP_S:  # as above, from its warm-up of 50 ms
        s.measure = nb.Measure()
    return s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ns3-dumbbell", type=float, default=0.5, help="simulated seconds of ns-3's dumbbell prefix")
    ap.add_argument("--ns3-fattree", type=float, default=0.001, help="simulated seconds of ns-3's fat-tree prefix")
    ap.add_argument("--out", type=Path, help="write the runs as JSON")
    args = ap.parse_args()
    if not Path("/usr/bin/time").exists():
        sys.exit("needs GNU time: apt-get install -y time")
    if not (0 < args.ns3_dumbbell <= 60 and 0 < args.ns3_fattree <= 0.2):
        sys.exit("--ns3-dumbbell must be in (0, 60] s and --ns3-fattree in (0, 0.2] s (the cases' lengths)")
    binary = sim_binary()
    ns3_program()
    perm = ",".join(map(str, permutation(8, 1)))
    cases = {
        "dumbbell-1000": {
            "full_s": 60.0, "prefix_s": args.ns3_dumbbell,
            "netbraid": lambda d: run_netbraid(binary, dumbbell(d)),
            "ns3": lambda d: run_ns3(["--case=dumbbell", "--flows=1000", "--rate=10Gbps", f"--duration={d}"]),
        },
        "fattree-k8": {
            "full_s": 0.2, "prefix_s": args.ns3_fattree,
            "netbraid": lambda d: run_netbraid(binary, fattree(d)),
            "ns3": lambda d: run_ns3(["--case=fattree", "--k=8", "--rate=10Gbps", f"--duration={d}", f"--perm={perm}"]),
        },
    }
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "netbraid_binary": str(binary), "cases": {}}
    print(f"{'case':<15} {'run':<34} {'wall s':>9} {'events':>13} {'peak MiB':>9}")
    for name, c in cases.items():
        rows = {"netbraid_full": c["netbraid"](c["full_s"])}
        try:
            rows["netbraid_prefix"] = c["netbraid"](c["prefix_s"])
        except nb.ScenarioError:  # the dumbbell's last flows would start after the prefix's end
            pass
        rows["ns3_prefix"] = c["ns3"](c["prefix_s"])
        labels = {"netbraid_full": f"netbraid, full {c['full_s']:g} s",
                  "netbraid_prefix": f"netbraid, prefix {c['prefix_s']:g} s",
                  "ns3_prefix": f"ns-3.37, prefix {c['prefix_s']:g} s"}
        for key, r in rows.items():
            print(f"{name:<15} {labels[key]:<34} {r['wall_s']:>9.2f} {r['events']:>13,} {r['peak_mib']:>9.1f}")
        under = rows["netbraid_full"]["peak_mib"] < rows["ns3_prefix"]["peak_mib"]
        print(f"{name:<15} netbraid's full run {'is' if under else 'is NOT'} under ns-3's memory "
              f"({rows['netbraid_full']['peak_mib']:.1f} MiB against at least {rows['ns3_prefix']['peak_mib']:.1f})")
        report["cases"][name] = {"full_s": c["full_s"], "prefix_s": c["prefix_s"], **rows, "under_ns3": under}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
