"""The whole single-flow fidelity grid (issue 16) from the recorded runs:
5 replications per cell on sim and on this kernel, each cell's gap, the
count within ±10 % and ±20 %, and a plot.

Runs are 5 × 15 s, except the twelve cells at 50 ms one way with 0.1 % or
3 % loss, where a 15 s run holds too few losses for the kernel's runs to
agree with each other: 5 × 20 s. Where each side comes from
(bench/results/, each made by `python bench/fidelity.py --reps 5 --duration
15|20 --out <file> --cells <the cells>`, resumable; `--no-emu` for the
simulator's file):

- the simulator, every cell: fidelity_grid_sim_2026-12-06_probertt.csv
  (the model of this commit; re-made whenever the model changes: the BBR
  rows were re-made for its min-RTT rule, the others are those of
  fidelity_grid_sim_2026-12-06_sackrtt.csv, which that rule cannot move);
- the kernel, CUBIC and Reno: fidelity_grid_default_cc_2026-11-27.csv and
  fidelity_50ms_5x20_default_cc_2026-11-27.csv, taken after emu's hosts
  stopped pacing every socket (docs/emu.md);
- the kernel, BBR: fidelity_grid_2026-11-27.csv (BBR paces itself, so the
  fix changed nothing for it).

    python bench/fidelity_grid.py [--table] [--plot PATH]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fidelity  # noqa: E402

RESULTS = fidelity.ROOT / "bench" / "results"
SIM = RESULTS / "fidelity_grid_sim_2026-12-06_probertt.csv"
KERNEL = RESULTS / "fidelity_grid_default_cc_2026-11-27.csv"
KERNEL_LONG = RESULTS / "fidelity_50ms_5x20_default_cc_2026-11-27.csv"
KERNEL_BBR = RESULTS / "fidelity_grid_2026-11-27.csv"
LONG_CELLS = {f"{cc}:50:{loss}:{b}" for cc in ("reno", "cubic") for loss in ("0.001", "0.03") for b in ("0.5", "1", "2")}
REPS = 5


def rows() -> list[dict]:
    def pick(path: Path, backend: str, keep) -> list[dict]:
        return [r for r in fidelity.load(path) if r["backend"] == backend and int(r["rep"]) < REPS
                and not r["cell"].startswith("mix:") and keep(r)
                and float(r["duration_s"]) == (20.0 if r["cell"] in LONG_CELLS else 15.0)]

    return (pick(SIM, "sim", lambda r: True)
            + pick(KERNEL, "emu", lambda r: r["cell"] not in LONG_CELLS and not r["cell"].startswith("bbr:"))
            + pick(KERNEL_LONG, "emu", lambda r: r["cell"] in LONG_CELLS)
            + pick(KERNEL_BBR, "emu", lambda r: r["cell"].startswith("bbr:")))


def interval(x: dict) -> str:
    return f"{x['mean'] / 1e6:.1f} ± {(x['ci95_high'] - x['ci95_low']) / 2e6:.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--table", action="store_true", help="print every cell as a Markdown table")
    ap.add_argument("--plot", type=Path, help="write the sim-against-emu plot here (PNG)")
    a = ap.parse_args(argv)
    cells = [c for c in fidelity.grid() if not c.startswith("mix:")]
    have = rows()
    runs = {c: {(r["backend"], r["rep"]) for r in have if r["cell"] == c} for c in cells}
    missing = [c for c in cells if len(runs[c]) < 2 * REPS]
    if missing:
        print(f"{len(missing)} cells have fewer than {REPS} runs on each backend: {', '.join(missing[:6])} …")
    table = [e for e in fidelity.summarize(have, cells) if e["gap"] is not None]
    within = lambda bound: sum(abs(e["gap"]) <= bound for e in table)  # noqa: E731
    print(f"{within(0.10)}/{len(table)} cells within ±10 % of the kernel's goodput, {within(0.20)}/{len(table)} within ±20 %")
    shown = table if a.table else [e for e in table if abs(e["gap"]) > 0.10]
    print("| cell | sim, Mb/s | kernel, Mb/s | sim − kernel |\n|---|---|---|---|")
    for e in shown:
        print(f"| {e['cell']} | {interval(e['sim'])} | {interval(e['emu'])} | {e['gap'] * 100:+.1f} % |")
    if a.plot:
        fidelity.plot(table, a.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
