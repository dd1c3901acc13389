"""Paper 003 three ways: the paper's table, ns-2 (Debian's ns-2.35, run on
the same topology with the chosen release's TCP defaults) and netbraid.

    python bench/ns2_p003.py [--defaults 2.27|2.35] [--seeds 4] [--reps 20] [--measure 180]

Needs `ns` (apt-get install ns2). Prints a Markdown table per metric group
and writes bench/results/ns2_p003_<defaults>.json. Each ns-2 run is a single
process; two run at once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from statistics import mean

sys.path.insert(0, str(Path(__file__).resolve().parent / "ns2"))
import runner  # noqa: E402

from netbraid.experiment import execute, make_plan  # noqa: E402
from netbraid.papers import p003  # noqa: E402

METRICS = ["tcp_thr", "tcp_good", "udp_thr", "tcp_loss", "udp_loss"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--defaults", choices=["2.27", "2.35"], default="2.27")
    ap.add_argument("--seeds", type=int, default=4, help="ns-2 runs per configuration")
    ap.add_argument("--reps", type=int, default=20, help="netbraid runs per configuration")
    ap.add_argument("--measure", type=float, default=180.0, help="measured seconds (after 6 s)")
    ap.add_argument("--configs", default=None, help="';'-separated labels, e.g. 'd=1;20,7,3' (default: all)")
    args = ap.parse_args()
    why = runner.available()
    if why:
        sys.exit(f"ns2_p003: {why}")
    settings = runner.NS2_27 if args.defaults == "2.27" else runner.NS2_35
    tcp = p003.NS2_TCP if args.defaults == "2.27" else p003.NS2_35_TCP
    wanted = None if args.configs is None else set(args.configs.split(";"))
    results = {}
    for label, rates in p003.HOMOGENEOUS + p003.HETEROGENEOUS:
        if wanted is not None and label not in wanted:
            continue
        t0 = time.perf_counter()
        ns2 = runner.run(rates, list(range(1, args.seeds + 1)), args.measure, settings)
        t1 = time.perf_counter()
        runs, _ = execute(make_plan(p003.scenario(rates, measure_s=args.measure, tcp=tcp), reps=args.reps, seed=1),
                          None, progress=False)
        t2 = time.perf_counter()
        nb = p003.per_run(runs)
        results[label] = {
            m: {"paper": p003.midpoint(label, m), "ns2": mean(r[m] for r in ns2), "netbraid": float(nb[m].mean()),
                "ns2_runs": [r[m] for r in ns2]}
            for m in METRICS}
        results[label]["wall_s"] = {"ns2": t1 - t0, "netbraid": t2 - t1}
        print(f"{label}: ns-2 {t1 - t0:.0f} s, netbraid {t2 - t1:.1f} s", file=sys.stderr, flush=True)

    print(f"ns-2 (Debian 2.35, {args.defaults} TCP defaults, {args.seeds} seeds) and netbraid ({args.reps} "
          f"replications), {args.measure:g} s measured; paper = midpoint of its 95 % interval\n")
    print("| config | metric | paper | ns-2 | netbraid | netbraid vs ns-2 | netbraid vs paper |")
    print("|---|---|---|---|---|---|---|")
    for label, r in results.items():
        for m in METRICS:
            v = r[m]
            print(f"| {label} | {p003.COLUMN_NAMES[m]} | {v['paper']:.4g} | {v['ns2']:.4g} | {v['netbraid']:.4g} | "
                  f"{100 * (v['netbraid'] / v['ns2'] - 1):+.1f} % | {100 * (v['netbraid'] / v['paper'] - 1):+.1f} % |")
    out = Path(__file__).resolve().parent / "results" / f"ns2_p003_{args.defaults}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"seeds": args.seeds, "reps": args.reps, "measure_s": args.measure,
                               "defaults": args.defaults, "results": results}, indent=1))


if __name__ == "__main__":
    main()
