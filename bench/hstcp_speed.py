"""One HighSpeed TCP flow at 10 Gb/s and 100 ms, netbraid beside ns-2, side
by side (issue 14's speed target).

    python bench/hstcp_speed.py [--cases 1e-5:60:1-5,1e-7:200:1] [--reps 3] [--ns2-reps 1] [--same-losses]

Per case (loss rate : simulated seconds : seeds) and per seed: the same
scenario in netbraid
(bench/sim_binary.py's `netbraid-sim` on the resolved scenario; SACK, an ACK
per packet, HSTCP by the RFC's formulas) and in ns-2 (bench/ns2/hstcp.tcl:
Agent/TCP/Sack1, windowOption_ 8), run in alternation (netbraid, ns-2,
netbraid, …), wall time of each process. Prints medians, what each
simulator delivered (the two HSTCPs differ in details, so the same scenario
is not quite the same work: both are shown), netbraid's packet-hops per
second and nanoseconds per ACK, and appends the rows to
bench/results/hstcp_speed.json.

Several seeds, because one seed is one draw of the random loss, and the
draw decides the work: where the first losses fall decides how far slow
start overshoots and how long the window takes to come down, so either
simulator's wall time varies several-fold from seed to seed, and ns-2's
per-ACK cost grows with its window. The ratio is given per seed and for
the sum over seeds.

With --same-losses the two simulators do not draw their losses: per case
and seed, one list of lost packets is drawn here (each packet of a → r's
transmission order lost with probability LOSS, from a stream seeded by the
case and the seed) and given to both — netbraid's `list` loss model, ns-2's
ErrorModel/List, both counting packets from 0 in transmission order — so
that one scenario is one piece of work for both, and what remains between
them is the two TCPs' own differences.
"""

from __future__ import annotations

import argparse
import json
import math
import random
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
from sim_binary import sim_binary

ROOT = Path(__file__).resolve().parent.parent
TCL = ROOT / "bench" / "ns2" / "hstcp.tcl"
MSS = 1460


# a → r carries 1500-byte data packets at 10 Gb/s: the most it can send
PACKETS_PER_S = 10e9 / (8 * (MSS + 40))


def loss_list(loss: float, seconds: float, seed: int) -> list[int]:
    """Indices of the lost packets, each of the packets a → r could send in
    `seconds` lost with probability `loss` (geometric gaps between losses)."""
    if loss <= 0:
        return []
    rng = random.Random(f"hstcp-losses/{loss:g}/{seconds:g}/{seed}")
    def gap() -> int:  # packets delivered before the next loss
        return int(math.log(1.0 - rng.random()) / math.log1p(-loss))

    bound, out, i = math.ceil(PACKETS_PER_S * seconds), [], gap()
    while i < bound:
        out.append(i)
        i += 1 + gap()
    return out


def scenario(loss: float, seconds: float, seed: int = 1, drops: list[int] | None = None) -> nb.Scenario:
    s = nb.Scenario(name=f"hstcp 10G p={loss:g}", duration=f"{seconds:g}s", seed=seed,
                    tcp={"cc": "hstcp", "recovery": "sack", "delayed_ack": False, "window": "1GB", "mss": MSS})
    s.add_host("a").add_host("b").add_router("r")
    ab = {"loss": loss if drops is None else {"model": "list", "indices": drops}}
    s.add_link("a", "r", rate="10Gbps", delay="25ms", queue="100000p", ab=ab)
    s.add_link("r", "b", rate="10Gbps", delay="25ms", queue="100000p")
    s.add_flow("hs", "a", "b")
    return s


def run_netbraid(path: Path) -> dict:
    started = time.perf_counter()
    done = subprocess.run([str(sim_binary()), str(path)], capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    r = json.loads(done.stdout)
    f = r["flows"][0]
    return {"wall_s": wall, "delivered_packets": f["packets_received"], "goodput_bps": f["goodput_bps"],
            "retransmits": f["retransmits"], "packet_hops": r["packet_hops"], "events": r["events"]}


def run_ns2(loss: float | Path, seconds: float, seed: int) -> dict:
    """`loss` a probability, or a file of lost packets' indices."""
    started = time.perf_counter()
    how = f"@{loss}" if isinstance(loss, Path) else f"{loss:g}"
    done = subprocess.run(["ns", str(TCL), str(seed), how, f"{seconds:g}"], capture_output=True, text=True,
                          check=True)
    wall = time.perf_counter() - started
    m = re.search(r"acked (\d+) sent (\d+) rexmit (\d+)", done.stdout)
    acked, sent, rexmit = (int(x) for x in m.groups())
    return {"wall_s": wall, "delivered_packets": acked, "goodput_bps": acked * MSS * 8 / seconds,
            "retransmits": rexmit, "packet_hops_estimated": 2 * sent + 2 * acked}


def parse_cases(spec: str) -> list[tuple[float, float, list[int]]]:
    """LOSS:SECONDS[:SEEDS],... with SEEDS a list like 1-5 or 1,3 joined by '+' (default 1)."""
    cases = []
    for case in spec.split(","):
        parts = case.split(":")
        if len(parts) not in (2, 3):
            sys.exit(f"--cases {case!r}: expected LOSS:SECONDS[:SEEDS], e.g. 1e-5:60:1-5")
        try:
            loss, seconds = float(parts[0]), float(parts[1])
            seeds: list[int] = []
            for item in (parts[2] if len(parts) == 3 else "1").split("+"):
                lo, _, hi = item.partition("-")
                seeds += list(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            sys.exit(f"--cases {case!r}: LOSS and SECONDS are numbers, SEEDS like 1-5 or 1+3 (positive integers)")
        if not (0 <= loss < 1 and seconds > 0 and seeds and min(seeds) > 0):
            sys.exit(f"--cases {case!r}: need 0 <= LOSS < 1, SECONDS > 0 and seeds >= 1")
        cases.append((loss, seconds, seeds))
    return cases


def measure(loss: float, seconds: float, seed: int, reps: int, ns2_reps: int, same_losses: bool = False) -> dict:
    """Alternating runs of one case and seed; the medians and what each simulator carried."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scenario.json"
        drops = loss_list(loss, seconds, seed) if same_losses else None
        path.write_text(json.dumps(resolve(scenario(loss, seconds, seed, drops))))
        ns2_loss: float | Path = loss
        if drops is not None:
            ns2_loss = Path(tmp) / "drops.txt"
            ns2_loss.write_text(" ".join(map(str, drops)) + "\n")
        nbr, ns2 = [], []
        for k in range(reps):
            nbr.append(run_netbraid(path))
            if k < ns2_reps:
                ns2.append(run_ns2(ns2_loss, seconds, seed))
            print(f"  p={loss:g} seed {seed}: netbraid {nbr[-1]['wall_s']:.2f} s"
                  + (f", ns-2 {ns2[-1]['wall_s']:.2f} s" if k < len(ns2) else ""), flush=True)
    med = lambda xs, key: statistics.median(x[key] for x in xs)  # noqa: E731
    a, b = nbr[0], ns2[0]
    row = {
        "date": time.strftime("%Y-%m-%d"), "loss": loss, "seconds": seconds, "seed": seed,
        "losses": "same list" if same_losses else "drawn by each", "lost_packets_listed": len(drops or []),
        "netbraid_wall_s": med(nbr, "wall_s"), "ns2_wall_s": med(ns2, "wall_s"),
        "netbraid_goodput_bps": a["goodput_bps"], "ns2_goodput_bps": b["goodput_bps"],
        "netbraid_packets": a["delivered_packets"], "ns2_packets": b["delivered_packets"],
        "netbraid_retransmits": a["retransmits"], "ns2_retransmits": b["retransmits"],
        "netbraid_packet_hops": a["packet_hops"], "ns2_packet_hops_estimated": b["packet_hops_estimated"],
        "netbraid_reps": len(nbr), "ns2_reps": len(ns2),
    }
    row["wall_ratio"] = row["ns2_wall_s"] / row["netbraid_wall_s"]
    row["netbraid_ns_per_ack"] = row["netbraid_wall_s"] / a["delivered_packets"] * 1e9
    row["ns2_ns_per_ack"] = row["ns2_wall_s"] / b["delivered_packets"] * 1e9
    row["netbraid_hops_per_s"] = a["packet_hops"] / row["netbraid_wall_s"]
    row["ns2_hops_per_s_estimated"] = b["packet_hops_estimated"] / row["ns2_wall_s"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="1e-5:60:1-5,1e-7:200:1",
                    help="LOSS:SECONDS[:SEEDS],... (default %(default)s)")
    ap.add_argument("--reps", type=int, default=3, help="runs of each simulator per case and seed")
    ap.add_argument("--ns2-reps", type=int, default=None, help="ns-2 runs per case and seed (default: --reps)")
    ap.add_argument("--same-losses", action="store_true",
                    help="give both simulators one list of lost packets per case and seed (see above)")
    args = ap.parse_args()
    cases = parse_cases(args.cases)
    if args.reps < 1 or (args.ns2_reps is not None and args.ns2_reps < 1):
        sys.exit("--reps and --ns2-reps must be at least 1")
    if shutil.which("ns") is None:
        sys.exit("hstcp_speed: ns-2 is not installed (apt-get install ns2)")
    sim_binary()
    out = ROOT / "bench" / "results" / "hstcp_speed.json"
    out.parent.mkdir(exist_ok=True)
    rows = []
    for loss, seconds, seeds in cases:
        for seed in seeds:
            rows.append(measure(loss, seconds, seed, args.reps, args.ns2_reps or args.reps, args.same_losses))
            # Written as produced: a long case interrupted keeps the seeds done.
            old = json.loads(out.read_text()) if out.exists() else []
            out.write_text(json.dumps(old + [rows[-1]], indent=2) + "\n")
    print("| loss, s, seed | netbraid wall | ns-2 wall | ns-2 / netbraid | goodput netbraid / ns-2 "
          "| retransmits netbraid / ns-2 | ns per ACK netbraid / ns-2 | packet-hops/s netbraid / ns-2 (est.) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['loss']:g}, {r['seconds']:g}, {r['seed']} | {r['netbraid_wall_s']:.2f} s | {r['ns2_wall_s']:.2f} s | "
              f"{r['wall_ratio']:.1f}× | {r['netbraid_goodput_bps'] / 1e6:.0f} / {r['ns2_goodput_bps'] / 1e6:.0f} Mb/s | "
              f"{r['netbraid_retransmits']:,} / {r['ns2_retransmits']:,} | "
              f"{r['netbraid_ns_per_ack']:.0f} / {r['ns2_ns_per_ack']:.0f} | "
              f"{r['netbraid_hops_per_s'] / 1e6:.1f} M / {r['ns2_hops_per_s_estimated'] / 1e6:.1f} M |")
    for loss, seconds, seeds in cases:
        mine = [r for r in rows if r["loss"] == loss and r["seconds"] == seconds]
        if len(mine) > 1:
            nbw, nsw = sum(r["netbraid_wall_s"] for r in mine), sum(r["ns2_wall_s"] for r in mine)
            ratios = sorted(r["wall_ratio"] for r in mine)
            print(f"p={loss:g}, {seconds:g} s, seeds {seeds[0]}-{seeds[-1]}: summed wall netbraid {nbw:.2f} s, "
                  f"ns-2 {nsw:.2f} s, ratio {nsw / nbw:.1f}×; per seed {ratios[0]:.1f}× to {ratios[-1]:.1f}×, "
                  f"median {statistics.median(ratios):.1f}×")


if __name__ == "__main__":
    main()
