"""One HighSpeed TCP flow at 10 Gb/s and 100 ms, netbraid beside ns-2, side
by side (issue 14's speed target).

    python bench/hstcp_speed.py [--cases 1e-5:60,1e-7:200] [--reps 3] [--ns2-reps 1]

Per case (loss rate : simulated seconds): the same scenario in netbraid
(the release `netbraid-sim` binary on the resolved scenario; SACK, an ACK
per packet, HSTCP by the RFC's formulas) and in ns-2 (bench/ns2/hstcp.tcl:
Agent/TCP/Sack1, windowOption_ 8), run in alternation (netbraid, ns-2,
netbraid, …), wall time of each process. Prints medians, what each
simulator delivered (the two HSTCPs differ in details, so the same scenario
is not quite the same work: both are shown), netbraid's packet-hops per
second and nanoseconds per ACK, and appends the rows to
bench/results/hstcp_speed.json.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import netbraid as nb
from netbraid.resolve import resolve

ROOT = Path(__file__).resolve().parent.parent
BINARY = ROOT / "target" / "release" / "netbraid-sim"
TCL = ROOT / "bench" / "ns2" / "hstcp.tcl"
MSS = 1460


def scenario(loss: float, seconds: float) -> nb.Scenario:
    s = nb.Scenario(name=f"hstcp 10G p={loss:g}", duration=f"{seconds:g}s", seed=1,
                    tcp={"cc": "hstcp", "recovery": "sack", "delayed_ack": False, "window": "1GB", "mss": MSS})
    s.add_host("a").add_host("b").add_router("r")
    s.add_link("a", "r", rate="10Gbps", delay="25ms", queue="100000p", ab={"loss": loss})
    s.add_link("r", "b", rate="10Gbps", delay="25ms", queue="100000p")
    s.add_flow("hs", "a", "b")
    return s


def run_netbraid(path: Path) -> dict:
    started = time.perf_counter()
    done = subprocess.run([str(BINARY), str(path)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    r = json.loads(done.stdout)
    f = r["flows"][0]
    return {"wall_s": wall, "delivered_packets": f["packets_received"], "goodput_bps": f["goodput_bps"],
            "retransmits": f["retransmits"], "packet_hops": r["packet_hops"], "events": r["events"]}


def run_ns2(loss: float, seconds: float) -> dict:
    started = time.perf_counter()
    done = subprocess.run(["ns", str(TCL), "1", f"{loss:g}", f"{seconds:g}"], capture_output=True, text=True,
                          check=True)
    wall = time.perf_counter() - started
    m = re.search(r"acked (\d+) sent (\d+) rexmit (\d+)", done.stdout)
    acked, sent, rexmit = (int(x) for x in m.groups())
    return {"wall_s": wall, "delivered_packets": acked, "goodput_bps": acked * MSS * 8 / seconds,
            "retransmits": rexmit, "packet_hops_estimated": 2 * sent + 2 * acked}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="1e-5:60,1e-7:200")
    ap.add_argument("--reps", type=int, default=3, help="runs of each simulator per case")
    ap.add_argument("--ns2-reps", type=int, default=None, help="ns-2 runs per case (default: --reps)")
    args = ap.parse_args()
    if shutil.which("ns") is None:
        sys.exit("hstcp_speed: ns-2 is not installed (apt-get install ns2)")
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "netbraid-sim", "--bin", "netbraid-sim"],
                   cwd=ROOT, check=True)
    rows = []
    for case in args.cases.split(","):
        loss, seconds = (float(x) for x in case.split(":"))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "scenario.json"
            path.write_text(json.dumps(resolve(scenario(loss, seconds))))
            nbr, ns2 = [], []
            for k in range(args.reps):
                nbr.append(run_netbraid(path))
                if k < (args.ns2_reps or args.reps):
                    ns2.append(run_ns2(loss, seconds))
                print(f"  p={loss:g}: netbraid {nbr[-1]['wall_s']:.2f} s"
                      + (f", ns-2 {ns2[-1]['wall_s']:.2f} s" if k < len(ns2) else ""), flush=True)
        med = lambda xs, key: statistics.median(x[key] for x in xs)  # noqa: E731
        a, b = nbr[0], ns2[0]
        row = {
            "date": time.strftime("%Y-%m-%d"), "loss": loss, "seconds": seconds,
            "netbraid_wall_s": med(nbr, "wall_s"), "ns2_wall_s": med(ns2, "wall_s"),
            "netbraid_goodput_bps": a["goodput_bps"], "ns2_goodput_bps": b["goodput_bps"],
            "netbraid_packets": a["delivered_packets"], "ns2_packets": b["delivered_packets"],
            "netbraid_packet_hops": a["packet_hops"], "ns2_packet_hops_estimated": b["packet_hops_estimated"],
            "netbraid_reps": len(nbr), "ns2_reps": len(ns2),
        }
        row["wall_ratio"] = row["ns2_wall_s"] / row["netbraid_wall_s"]
        row["netbraid_ns_per_ack"] = row["netbraid_wall_s"] / a["delivered_packets"] * 1e9
        row["ns2_ns_per_ack"] = row["ns2_wall_s"] / b["delivered_packets"] * 1e9
        row["netbraid_hops_per_s"] = a["packet_hops"] / row["netbraid_wall_s"]
        row["ns2_hops_per_s_estimated"] = b["packet_hops_estimated"] / row["ns2_wall_s"]
        rows.append(row)
    print("| loss, s | netbraid wall | ns-2 wall | ns-2 / netbraid | goodput netbraid / ns-2 | ns per ACK netbraid / ns-2 "
          "| packet-hops/s netbraid / ns-2 (est.) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['loss']:g}, {r['seconds']:g} | {r['netbraid_wall_s']:.2f} s | {r['ns2_wall_s']:.2f} s | "
              f"{r['wall_ratio']:.1f}× | {r['netbraid_goodput_bps'] / 1e6:.0f} / {r['ns2_goodput_bps'] / 1e6:.0f} Mb/s | "
              f"{r['netbraid_ns_per_ack']:.0f} / {r['ns2_ns_per_ack']:.0f} | "
              f"{r['netbraid_hops_per_s'] / 1e6:.1f} M / {r['ns2_hops_per_s_estimated'] / 1e6:.1f} M |")
    out = ROOT / "bench" / "results" / "hstcp_speed.json"
    out.parent.mkdir(exist_ok=True)
    old = json.loads(out.read_text()) if out.exists() else []
    out.write_text(json.dumps(old + rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
