"""Peak memory of the simulator per idle flow (issue 17: linear in flows,
under 2 KB per idle flow).

Each case is one run of the `netbraid-sim` binary (the simulator without
Python) in a child process; its peak resident set is GNU time's maximum RSS
(Debian package `time`). An idle flow is a TCP connection that has done its
work: a 1 KB transfer that finishes in the first round trip (its ACK
delayed 200 ms) and then sits for the rest of the 2 s run. Flows start
spread over the first 500 ms, so their packets neither crowd the queues
(dropped, they would be left retrying, not idle) nor swell the packet pool
at once; each run is checked: every flow must have completed. Two layouts,
each grown by flows alone:

- `pair`: every flow between the same two hosts (one 10 Gb/s link);
- `dumbbell`: a host pair per flow, each host on its own link to one of two
  routers (so the figure includes two hosts and two links per flow).

A least-squares line per layout gives the cost of one more flow; the runs
are written to --out as JSON with the date.

    python bench/flow_memory.py --out bench/results/flow_memory_2026-11-26.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import netbraid as nb
from sim_binary import sim_binary

ROOT = Path(__file__).resolve().parent.parent


def scenario(layout: str, flows: int, profile: str = "rfc") -> nb.Scenario:
    s = nb.Scenario(name=f"idle-{layout}-{flows}", duration="2s")
    tcp = {"profile": profile}
    if layout == "pair":
        s.add_host("a").add_host("b")
        s.add_link("a", "b", rate="10Gbps", delay="1ms")
        s.add_flow("tcp", "a", "b", count=flows, bytes="1KB", start="0s", start_jitter="500ms", **tcp)
    else:
        s.add_host("a", count=flows).add_host("b", count=flows).add_router("r1").add_router("r2")
        s.add_link("a", "r1", rate="10Gbps", delay="1ms")
        s.add_link("r1", "r2", rate="10Gbps", delay="1ms")
        s.add_link("r2", "b", rate="10Gbps", delay="1ms")
        s.add_flow("tcp", "a", "b", bytes="1KB", start="0s", start_jitter="500ms", **tcp)
    return s


def peak_kib(binary: Path, resolved: dict) -> int:
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(resolved, f)
        f.flush()
        r = subprocess.run(["/usr/bin/time", "-f", "%M", str(binary), f.name],
                           capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{binary} failed: {r.stderr[-2000:]}")
    flows = json.loads(r.stdout)["flows"]
    busy = sum(f["completion_time_s"] is None for f in flows)
    if busy:
        sys.exit(f"{resolved['name']}: {busy} of {len(flows)} flows did not complete: they are not idle")
    return int(r.stderr.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", type=Path, help="a netbraid-sim binary (default: bench/sim_binary.py's build)")
    ap.add_argument("--flows", type=int, nargs="+", default=[10_000, 20_000, 40_000, 80_000])
    ap.add_argument("--profile", choices=["rfc", "linux"], default="rfc",
                    help="the flows' TCP profile (linux adds RACK, TLP and PRR state to every sender)")
    ap.add_argument("--out", type=Path, help="write the runs and fits as JSON")
    args = ap.parse_args()
    if not Path("/usr/bin/time").exists():
        sys.exit("needs GNU time: apt-get install -y time")
    args.binary = args.binary or sim_binary()
    report = {"date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "binary": str(args.binary), "profile": args.profile, "layouts": {}}
    for layout in ("pair", "dumbbell"):
        rows = [(n, peak_kib(args.binary, nb.resolve(scenario(layout, n, args.profile)))) for n in args.flows]
        slope, intercept = np.polyfit([n for n, _ in rows], [k * 1024 for _, k in rows], 1)
        for n, k in rows:
            print(f"{layout:9} {n:>7,} idle flows: peak {k / 1024:8.1f} MiB")
        print(f"{layout:9} one more idle flow: {slope:,.0f} B (fixed part {intercept / 2**20:.1f} MiB)\n")
        report["layouts"][layout] = {"runs": [{"flows": n, "peak_kib": k} for n, k in rows],
                                     "bytes_per_flow": slope, "fixed_bytes": intercept}
    if args.out:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
