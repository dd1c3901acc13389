"""Fidelity of the simulator's Linux TCP: the same scenarios on sim (profile
"linux") and on emu (this machine's kernel), cell by cell.

Grid (issue 16): one flow over one 50 Mb/s link between two hosts; one-way
delay 5, 20 and 50 ms; random loss on the data direction 0, 0.1 %, 1 % and
3 %; controllers reno, cubic and bbr; a drop-tail buffer of 0.5, 1 and 2 ×
the BDP (in 1500-byte packets) — 108 cells; then two and four competing
flows (20 ms, no loss, 1 BDP) of one controller and of mixed ones, where
each controller's share of the total is compared (flows of one controller
are interchangeable: their shares are summed), and for flows of one
controller Jain's fairness index.

    python bench/fidelity.py --quick          # 3 cells, 2 replications, 10 s runs
    python bench/fidelity.py                  # the whole grid: 5 replications, 20 s runs (hours on emu)
    python bench/fidelity.py --cells cubic:20:0.001:1 bbr:50:0.01:2
    python bench/fidelity.py --cells mix:cubic+cubic+bbr+bbr:20:1:200us   # the link with ±200 µs jitter, both backends

Method: every replication of a cell is one run on each backend with its own
seed (sim) or one real run (emu; runs alternate sim, emu); goodput is
measured after a warm-up of a quarter of the run. Competing flows start at
instants drawn per replication in the first 200 ms, the same on both
backends, so that each pair of runs is the same experiment. Each row is appended to
the CSV (`--out`, default bench/results/fidelity.csv; with --quick a new
temporary file, so a quick check shows this build) as it is produced, so
an interrupted run resumes where it stopped (rows already there are not
run again). The table gives, per cell, the mean and 95 % Student-t
interval on each side and the gap (sim − emu) / emu; `--plot` draws sim
against emu. Emu needs root and network namespaces: without them it is
skipped with the reason, and the sim columns are still printed.
"""

from __future__ import annotations

import argparse
import csv
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

import netbraid as nb  # noqa: E402
from netbraid.stats import mean_ci  # noqa: E402

RATE_BPS = 50e6
PACKET = 1500
DELAYS_MS = [5, 20, 50]
LOSSES = [0.0, 0.001, 0.01, 0.03]
CONTROLLERS = ["reno", "cubic", "bbr"]
BUFFERS_BDP = [0.5, 1, 2]
COMPETING = [("cubic", "cubic"), ("bbr", "bbr"), ("cubic", "bbr"), ("reno", "cubic"),
             ("cubic",) * 4, ("cubic", "cubic", "bbr", "bbr")]
QUICK = ["cubic:20:0.001:1", "bbr:20:0.01:1", "reno:5:0:0.5"]
MIX_SPREAD_MS = 200.0  # competing flows start at random instants in the first 200 ms (see scenario)
#: Columns of the CSV; files written before srtt_mean_s and queue_delay_s (the
#: bottleneck's, client → server) keep the columns of their header.
FIELDS = ["cell", "duration_s", "backend", "rep", "flow", "goodput_bps", "share", "retransmits", "rtt_mean_s",
          "srtt_mean_s", "queue_delay_s"]


def buffer_packets(delay_ms: float, bdp: float) -> int:
    rtt = 2 * delay_ms / 1000
    return max(2, round(RATE_BPS * rtt / 8 / PACKET * bdp))


def scenario(cell: str, duration_s: float, rep: int = 0) -> nb.Scenario:
    """A cell's scenario from its name: "cc:delay_ms:loss:buffer_bdp" for
    one flow, "mix:cc+cc+...:delay_ms:buffer_bdp" for competing flows
    (replication `rep`'s start instants); either may end in ":JITTER" (a
    time, e.g. 200us), the link's delay jitter on both backends (the start
    instants stay those of the cell without it, so the two pair up)."""
    parts = cell.split(":")
    if len(parts) not in (4, 5):
        raise ValueError(f"expected 4 fields and an optional jitter, got {len(parts)}")
    jitter = parts[4] if len(parts) == 5 else "0ms"
    base = ":".join(parts[:4])
    if parts[0] == "mix":
        ccs, delay, loss, bdp = parts[1].split("+"), float(parts[2]), 0.0, float(parts[3])
    else:
        ccs, delay, loss, bdp = [parts[0]], float(parts[1]), float(parts[2]), float(parts[3])
    s = nb.Scenario(name=f"fidelity-{cell}", duration=f"{duration_s}s")
    s.add_host("client").add_host("server")
    s.add_link("client", "server", rate="50Mbps", delay=f"{delay}ms", queue=f"{buffer_packets(delay, bdp)}p",
               jitter=jitter, ab={"loss": loss} if loss else None)
    # Competing flows start at random instants in the first MIX_SPREAD_MS:
    # with simultaneous starts every simulated replication is the same run
    # (no loss, no randomness), and how drop-tail losses fall between the
    # flows depends on their phase. The instants are drawn here, once per
    # replication, and given to both backends: which flow starts first
    # decides much of a run's shares, and had each backend drawn its own
    # (the seed's stream on sim, the emu backend's own), eight replications
    # started CUBIC first in 7 kernel runs and 3 simulated ones.
    starts = random.Random(f"fidelity/{base}/{rep}")
    for k, cc in enumerate(ccs):
        start = {"start": f"{starts.random() * MIX_SPREAD_MS:.3f}ms"} if len(ccs) > 1 else {}
        s.add_flow(f"{cc}{k}", "client", "server", cc=cc, profile="linux", **start)
    s.measure = nb.Measure(start=f"{duration_s / 4}s")
    return s


def grid() -> list[str]:
    cells = [f"{cc}:{d}:{l}:{b}" for cc in CONTROLLERS for d in DELAYS_MS for l in LOSSES for b in BUFFERS_BDP]
    cells += [f"mix:{'+'.join(m)}:20:1" for m in COMPETING]
    return cells


def rows_of(cell: str, duration_s: float, backend: str, rep: int, result: dict) -> list[dict]:
    flows = result["flows"]
    total = sum(f["goodput_bps"] or 0 for f in flows) or 1.0
    bottleneck = result["links"][0]  # client -> server
    return [{"cell": cell, "duration_s": duration_s, "backend": backend, "rep": rep, "flow": f["name"], "goodput_bps": f["goodput_bps"],
             "share": (f["goodput_bps"] or 0) / total, "retransmits": f.get("retransmits"),
             "rtt_mean_s": f.get("rtt_mean_s"), "srtt_mean_s": f.get("srtt_mean_s"),
             "queue_delay_s": bottleneck.get("queue_delay_s")} for f in flows]


def load(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with path.open() as fh:
        return list(csv.DictReader(fh))


def run(cells: list[str], reps: int, duration_s: float, out: Path, emu: bool) -> list[dict]:
    # (rows of runs of another length are other experiments: not reused)
    same = lambda r: float(r["duration_s"]) == duration_s  # noqa: E731
    done = {(r["cell"], r["backend"], int(r["rep"])) for r in load(out) if same(r)}
    out.parent.mkdir(parents=True, exist_ok=True)
    new_file = not out.exists() or out.stat().st_size == 0
    header = FIELDS
    if not new_file:
        with out.open() as old:
            header = next(csv.reader(old))
    with out.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=header, extrasaction="ignore")
        if new_file:
            writer.writeheader()
        for cell in cells:
            for rep in range(reps):
                s = scenario(cell, duration_s, rep)
                for backend in ["sim", "emu"] if emu else ["sim"]:
                    if (cell, backend, rep) in done:
                        continue
                    result = nb.simulate(s, seed=rep + 1, backend=backend)
                    for row in rows_of(cell, duration_s, backend, rep, result):
                        writer.writerow(row)
                    fh.flush()
                    print(f"  {cell} {backend} rep {rep}: "
                          + ", ".join(f"{f['name']} {f['goodput_bps'] / 1e6:.1f} Mb/s" for f in result["flows"]),
                          flush=True)
    return [r for r in load(out) if r["cell"] in set(cells) and int(r["rep"]) < reps and same(r)]


def _controller(flow: str) -> str:
    return flow.rstrip("0123456789")


def summarize(rows: list[dict], cells: list[str]) -> list[dict]:
    """Per cell: sim and emu means with intervals, and the gap. Single flows
    compare goodput. Competing flows compare each controller's share of the
    total (flows of one controller are interchangeable, so their shares are
    summed); a cell of one controller compares Jain's fairness index."""
    table = []
    for cell in cells:
        here = [r for r in rows if r["cell"] == cell]
        if cell.startswith("mix:"):
            ccs = sorted({_controller(r["flow"]) for r in here})
            groups = [(cc, "share") for cc in ccs] if len(ccs) > 1 else [(ccs[0] if ccs else "", "jain")]
        else:
            groups = [(f, "goodput_bps") for f in sorted({r["flow"] for r in here})]
        for flow, metric in groups:
            entry = {"cell": cell, "flow": flow, "metric": metric}
            for backend in ("sim", "emu"):
                vals = []
                for rep in sorted({int(r["rep"]) for r in here if r["backend"] == backend}):
                    run = [r for r in here if r["backend"] == backend and int(r["rep"]) == rep]
                    if metric == "goodput_bps":
                        vals += [float(r["goodput_bps"]) for r in run if r["flow"] == flow]
                    elif metric == "share":
                        vals.append(sum(float(r["share"]) for r in run if _controller(r["flow"]) == flow))
                    else:
                        vals.append(nb.jain_fairness([float(r["goodput_bps"]) for r in run]))
                entry[backend] = mean_ci(vals) if vals else None  # (one value: no interval, NaN)
            sim, emu = entry["sim"], entry["emu"]
            entry["gap"] = (sim["mean"] - emu["mean"]) / emu["mean"] if sim and emu and emu["mean"] else None
            table.append(entry)
    return table


def show(table: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title="sim (profile linux) against emu (this kernel): mean ± 95 % interval")
    for col in ("cell", "flow", "sim", "emu", "sim − emu"):
        t.add_column(col, justify="left" if col in ("cell", "flow") else "right", no_wrap=True)

    def fmt(x: dict | None, metric: str) -> str:
        if not x:
            return "—"
        scale, unit = {"goodput_bps": (1e6, " Mb/s"), "share": (0.01, " %"), "jain": (1.0, "")}[metric]
        half = (x["ci95_high"] - x["ci95_low"]) / 2
        digits = 3 if metric == "jain" else 1
        if x["n"] < 2:
            return f"{x['mean'] / scale:.{digits}f}{unit}"
        return f"{x['mean'] / scale:.{digits}f} ± {half / scale:.{digits}f}{unit}"

    for e in table:
        gap = "—" if e["gap"] is None else f"{e['gap'] * 100:+.1f} %"
        t.add_row(e["cell"], e["flow"], fmt(e["sim"], e["metric"]), fmt(e["emu"], e["metric"]), gap)
    Console(width=150).print(t)
    gaps = [abs(e["gap"]) for e in table if e["gap"] is not None and e["metric"] == "goodput_bps"]
    if gaps:
        within10 = sum(g <= 0.10 for g in gaps)
        within20 = sum(g <= 0.20 for g in gaps)
        print(f"single flows: {within10}/{len(gaps)} cells within ±10 %, {within20}/{len(gaps)} within ±20 %")
    shares = [abs(e["gap"]) for e in table if e["gap"] is not None and e["metric"] in ("share", "jain")]
    if shares:
        print(f"competing flows: {sum(g <= 0.15 for g in shares)}/{len(shares)} controllers' shares "
              "(Jain's index where all flows share one controller) within ±15 % of the kernel's")


def _half(x: dict) -> float:
    return 0.0 if x["n"] < 2 else (x["ci95_high"] - x["ci95_low"]) / 2


def plot(table: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 5))
    pts = [e for e in table if e["sim"] and e["emu"] and e["metric"] == "goodput_bps"]
    for cc, colour in zip(CONTROLLERS, ("tab:blue", "tab:orange", "tab:green")):
        sel = [e for e in pts if e["cell"].startswith(cc + ":")]
        if sel:
            ax.errorbar([e["emu"]["mean"] / 1e6 for e in sel], [e["sim"]["mean"] / 1e6 for e in sel],
                        xerr=[_half(e["emu"]) / 1e6 for e in sel], yerr=[_half(e["sim"]) / 1e6 for e in sel],
                        fmt="o", ms=3, color=colour, label=cc)
    top = RATE_BPS / 1e6
    ax.plot([0, top], [0, top], "k-", lw=0.5)
    ax.fill_between([0, top], [0, 0.9 * top], [0, 1.1 * top], color="grey", alpha=0.2, label="±10 %")
    ax.set_xlabel("emu (kernel) goodput, Mb/s")
    ax.set_ylabel("sim (profile linux) goodput, Mb/s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}: 2 replications of 10 s")
    ap.add_argument("--cells", nargs="*", help="cells to run (cc:delay_ms:loss:buffer_bdp or mix:cc+cc:delay_ms:buffer_bdp)")
    ap.add_argument("--reps", type=int, default=None, help="replications per cell (default 5; 2 with --quick)")
    ap.add_argument("--duration", type=float, default=None, help="seconds per run (default 20; 10 with --quick)")
    ap.add_argument("--out", type=Path, default=None, help="CSV of every run (appended; resumable)")
    ap.add_argument("--no-emu", action="store_true", help="sim only")
    ap.add_argument("--plot", type=Path, default=None, help="write a sim-against-emu plot here (PNG)")
    a = ap.parse_args(argv)
    cells = a.cells or (QUICK if a.quick else grid())
    reps = a.reps or (2 if a.quick else 5)
    duration = a.duration or (10.0 if a.quick else 20.0)
    # (--quick starts afresh unless --out names a file to resume: a quick
    # check shows this build's figures, not rows kept from an earlier one)
    if a.out is None and a.quick:
        a.out = Path(tempfile.mkdtemp(prefix="netbraid-fidelity-quick-")) / "fidelity-quick.csv"
    out = a.out or ROOT / "bench" / "results" / "fidelity.csv"
    for c in cells:
        try:
            scenario(c, duration)
        except (ValueError, IndexError, nb.ScenarioError) as e:
            ap.error(f"cell '{c}': {e} (a cell is cc:delay_ms:loss:buffer_bdp, e.g. cubic:20:0.001:1)")
    emu = not a.no_emu
    if emu:
        from netbraid.emu.platform import unavailable_reason

        reason = unavailable_reason()
        if reason:
            print(f"emu skipped: {reason}; printing the simulator's side only", file=sys.stderr)
            emu = False
    print(f"{len(cells)} cells × {reps} replications × {duration:g} s; rows in {out}")
    rows = run(cells, reps, duration, out, emu)
    table = summarize(rows, cells)
    show(table)
    if a.plot:
        plot(table, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
