"""Paper 001: Linux MPTCP between two PCs over two ~1 Gb/s paths, with a
network emulator adding delay or loss on Path0 (the initial subflow, the
"main flow") while Path1 stays clean, iperf's window (-w) swept from 100 to
400 KB in 50 KB steps; TCP on Path0 alone for comparison. See
docs/papers/001.md for every assumption.

The paper gives figures, not tables; its findings are stated in words
(`FINDINGS`), and netbraid's tables are printed beside them.

Where the paper is silent (each overridable in code, stated in the doc):
- both paths 1 Gb/s with a 50 µs one-way base delay and 1000-packet queues
  (a NIC's txqueuelen); the emulator's delay and loss apply to the data
  direction of Path0 (netem on the egress towards the receiver);
- iperf's `-w 100K` is 100 KiB (iperf counts K as 1024) and sets both
  socket buffers: `window` in netbraid (the connection's buffers for MPTCP);
- Linux's TCP as the simulator's `profile = "linux"` has it (IW10, Linux's
  RTO with its 200 ms minimum, 1448-byte segments with timestamps, SACK with
  D-SACK, RACK-TLP, PRR, CUBIC in the kernel's integer arithmetic at HZ =
  250), at the paper's rates without the socket-buffer rule of Linux 6.6
  and later (the paper's kernel made the window the `-w` asked for), and
  with it where it is set beside this machine's kernel (×0.2); upstream
  MPTCP's default
  scheduler and uncoupled CUBIC on each subflow (upstream Linux has no
  coupled control);
- iperf's default 10 s per run, measured from 1 s (the slow start of an
  iperf report's first second is left out).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ScenarioError
from ..experiment import Axis, execute, make_plan
from ..schema import Measure, Scenario
from ..stats import mean_ci, mean_pm

TITLE = "Linux MPTCP with delay or loss on the main path (two ~1 Gb/s paths, iperf -w swept)"

WINDOWS_KIB = [100, 150, 200, 250, 300, 350, 400]
DELAYS_MS = [0, 1, 2, 5, 10, 15, 20]
LOSSES = [0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5]
#: --quick: a subset of each axis, 3 replications of 5 s
QUICK_WINDOWS_KIB = [100, 250, 400]
QUICK_DELAYS_MS = [0, 2, 10, 20]
QUICK_LOSSES = [0.0, 0.05, 0.2, 0.5]
DEFAULT_REPS = 5

#: The paper's findings, in its words (summarised), and the figure each is from.
FINDINGS = [
    ("fig. 2-3", "no delay: TCP is about the same for every window; MPTCP is lower with small windows, "
                 "below TCP at 100 KB"),
    ("fig. 2-3", "TCP falls in proportion to the delay; MPTCP falls gradually for 100-300 KB and sharply "
                 "for 350-400 KB"),
    ("fig. 4", "400 KB, 10 ms: periodic dips; the clean subflow drops whenever the delayed main flow does "
               "(retransmission timeouts on the main flow)"),
    ("fig. 5-6", "TCP falls earlier with loss for smaller windows; MPTCP converges to 600-700 Mb/s at high "
                 "loss (only the clean subflow works)"),
    ("fig. 5, 8", "around 20 % loss MPTCP is below that plateau (e.g. 100 KB): both subflows run slowly"),
]

RATE_BPS = 1_000_000_000
BASE_DELAY_MS = 0.05
#: The simulator is given Linux's TCP (on emu it is the kernel's own): the
#: profile, at the paper's rates with the paper era's socket buffers (window
#: = `-w`: kernels before 6.6 advertised about the buffer they were given).
#: Until 2026-12-07 the profile's TCP fields alone (`LINUX_TCP`) with RFC
#: 9438's CUBIC: its step per ACK, worked out at every ACK, kept the window
#: at ~6 segments at 5 % loss and a 0.2 ms round trip, where the kernel's,
#: worked out again only every HZ/32 jiffies while the window stays put,
#: holds it at 2-3 and its goodput at a third.
TCP_SETTINGS: dict[str, Any] = {"profile": "linux", "linux_buffers": False}
#: The simulator at EMU_SCALE stands beside this machine's kernel (Linux
#: 6.18), so it takes that kernel's socket-buffer rule too (6.6 and later:
#: the window about 2 × `-w` × 0.63; `linux_buffers`, the profile's default;
#: docs/papers/001.md, "Results on the kernel").
KERNEL_TCP_SETTINGS: dict[str, Any] = {"profile": "linux"}
#: On emu, rates and windows are scaled alike (window / bandwidth-delay
#: product kept): 2 × 200 Mb/s is within what linkemu holds (bench/RESULTS.md).
EMU_SCALE = 0.2


def scenario(kind: str, window_kib: int = 100, *, delay_ms: float = 0.0, loss: float = 0.0, duration_s: float = 10.0,
             scale: float = 1.0, backend: str = "sim", beside_kernel: bool = False) -> Scenario:
    """Two PCs joined by two cables; the emulator on Path0 adds `delay_ms`
    and `loss` to the data direction. `kind` "tcp" runs on Path0 alone,
    "mptcp" with its initial subflow on Path0 and one more on Path1 (to the
    receiver's Path0 address, as Linux's `subflow` endpoint makes it).
    `scale` multiplies the path rates and the window alike. The simulator
    takes the paper era's TCP (`TCP_SETTINGS`), or with `beside_kernel`,
    where it is set beside this machine's kernel, that kernel's
    (`KERNEL_TCP_SETTINGS`)."""
    if kind not in ("tcp", "mptcp"):
        raise ScenarioError(f"paper 001: kind {kind!r} (allowed: tcp, mptcp)")
    if backend != "sim":
        tcp: dict[str, Any] = {"cc": "cubic"}
    else:
        tcp = dict(KERNEL_TCP_SETTINGS if beside_kernel else TCP_SETTINGS)
    rate = f"{round(RATE_BPS * scale)}bps"
    s = Scenario(name=f"paper-001 {kind} w={window_kib}KiB d={delay_ms:g}ms p={loss:g} x{scale:g}",
                 duration=f"{duration_s:g}s", tcp=tcp)
    s.add_host("pc0").add_host("pc1")
    ab: dict[str, Any] = {"delay": f"{BASE_DELAY_MS + delay_ms:g}ms"}
    if loss > 0:
        ab["loss"] = loss
    s.add_link("pc0", "pc1", rate=rate, delay=f"{BASE_DELAY_MS:g}ms", queue="1000p", ab=ab)
    s.add_link("pc0", "pc1", rate=rate, delay=f"{BASE_DELAY_MS:g}ms", queue="1000p")
    flow: dict[str, Any] = {"kind": kind, "window": f"{window_bytes(window_kib, scale)}B"}
    if kind == "tcp":
        flow.update(from_iface=0, to_iface=0)
    s.add_flow("iperf", "pc0", "pc1", **flow)
    s.measure = Measure(start="1s")
    return s


def window_bytes(window_kib: int, scale: float = 1.0) -> int:
    return round(window_kib * 1024 * scale)


def _axes(quick: bool) -> dict[str, list]:
    return {"window": QUICK_WINDOWS_KIB if quick else WINDOWS_KIB,
            "delay": QUICK_DELAYS_MS if quick else DELAYS_MS,
            "loss": QUICK_LOSSES if quick else LOSSES}


def run(*, quick: bool = False, reps: int | None = None, seed: int = 1, workers: int | None = None,
        out: Path | None = None, progress: bool = False, backend: str = "sim") -> dict[str, Any]:
    """Both sweeps for TCP and MPTCP. `backend` "sim" runs the paper's
    rates; "emu" the real stacks at EMU_SCALE; "both" the two, plus the
    simulator at EMU_SCALE to set beside emu. Returns
    {"runs": {label: {sweep: {kind: {window: {x: mean_ci}}}}}, ...} in Mb/s."""
    if backend not in ("sim", "emu", "both"):
        raise ScenarioError(f"--backend: {backend!r} is not allowed (sim, emu, both)")
    axes = _axes(quick)
    cases = []  # (label, backend, scale)
    if backend in ("sim", "both"):
        cases.append(("sim", "sim", 1.0))
    if backend in ("emu", "both"):
        if backend == "both":
            cases.append((f"sim ×{EMU_SCALE:g}", "sim", EMU_SCALE))
        cases.append((f"emu ×{EMU_SCALE:g}", "emu", EMU_SCALE))
    results: dict[str, Any] = {"axes": axes, "runs": {}, "reps": {}, "duration_s": {}}
    for label, be, scale in cases:
        n = reps or ((3 if quick else DEFAULT_REPS) if be == "sim" else 2)
        duration = (5.0 if quick else 10.0)
        results["reps"][label], results["duration_s"][label] = n, duration
        results["runs"][label] = _sweeps(axes, be, scale, n, duration, seed, workers,
                                         None if out is None else out / label.replace(" ", "").replace("×", "x"),
                                         progress, beside_kernel=scale != 1.0)
    return results


def _sweeps(axes, backend, scale, reps, duration, seed, workers, out, progress,
            beside_kernel: bool = False) -> dict[str, Any]:
    windows = [f"{window_bytes(w, scale)}B" for w in axes["window"]]
    found: dict[str, Any] = {}
    for sweep, path, values in (("delay", "links.0.ab.delay", [f"{BASE_DELAY_MS + d:g}ms" for d in axes["delay"]]),
                                ("loss", "links.0.ab.loss", axes["loss"])):
        found[sweep] = {}
        for kind in ("tcp", "mptcp"):
            base = scenario(kind, axes["window"][0], duration_s=duration, scale=scale, backend=backend,
                            beside_kernel=beside_kernel)
            if sweep == "loss":
                base.links[0].ab.loss = 0.0
            plan = make_plan(base, grid=[Axis("flows.iperf.window", tuple(windows)), Axis(path, tuple(values))],
                             reps=reps, seed=seed, backend=backend)
            where = None if out is None else out / f"{sweep}-{kind}"
            runs, _ = execute(plan, where, workers=workers, progress=progress, label=f"{sweep} sweep, {kind}",
                              resume=where is not None and (where / "manifest.json").exists(), kind="paper")
            found[sweep][kind] = _summarise(runs, path, axes["window"], windows, axes[sweep], values)
    return found


def _summarise(runs: pd.DataFrame, path: str, windows_kib: list[int], windows: list[str], xs: list,
               values: list) -> dict:
    """{window KiB: {x: mean_ci of goodput (Mb/s)}} and per subflow."""
    flows = runs[runs["subflow"].isna()] if "subflow" in runs else runs
    subs = runs[runs["subflow"].notna()] if "subflow" in runs else runs.iloc[0:0]
    table: dict[int, dict] = {}
    for w, wv in zip(windows_kib, windows):
        table[w] = {}
        for x, v in zip(xs, values):
            sel = (flows["flows.iperf.window"] == wv) & (flows[path] == v)
            cell = mean_ci((flows.loc[sel, "goodput_bps"] / 1e6).tolist())
            per_sub = []
            if len(subs):
                ssel = (subs["flows.iperf.window"] == wv) & (subs[path] == v)
                for name, g in subs[ssel].groupby("subflow", sort=True):
                    per_sub.append(mean_ci((g["goodput_bps"] / 1e6).tolist())["mean"])
            cell["subflows"] = per_sub
            table[w][x] = cell
    return table


def time_series(*, seed: int = 1) -> dict[str, dict[str, Any]]:
    """Per-subflow goodput over time for the paper's Figures 4, 7 and 8
    (window, delay, loss): 100 ms samples over 10 s."""
    cases = {"fig4": (400, 10.0, 0.0), "fig7": (50, 0.0, 0.5), "fig8": (50, 0.0, 0.2)}
    from ..api import simulate

    out = {}
    for name, (w, d, p) in cases.items():
        s = scenario("mptcp", w, delay_ms=d, loss=p, duration_s=10.0)
        s.measure = Measure(start="0s", interval="100ms")
        r = simulate(s, seed=seed)
        series = r["series"]
        flow = series["flows"][0]
        out[name] = {"window_kib": w, "delay_ms": d, "loss": p, "time_s": series["time_s"],
                     "subflows": {sf["name"]: sf["goodput_bps"] for sf in flow.get("subflows", [])},
                     "total": flow["goodput_bps"],
                     "timeouts": [sf["timeouts"] for sf in r["flows"][0]["subflows"]]}
    return out


# ---- explaining the findings -------------------------------------------------------

#: Mechanisms switched on and off, one column each: (name, what it changes,
#: MPTCP flow settings, window factor). The first is the model of upstream
#: Linux that the sweeps use.
VARIANTS: list[tuple[str, str, dict[str, Any], int]] = [
    ("as Linux", "upstream's scheduler (bursts queued on the soonest-draining subflow, whatever its cwnd), "
                 "its connection-level retransmission timer (32 KB from DATA_ACK on an idle subflow)", {}, 1),
    ("RTO reinjection", "the out-of-tree kernel's reinjection: a subflow's RTO sends all its data on the other "
                        "at once, and it gets no new data until it recovers", {"reinjection": "subflow_timeout"}, 1),
    ("minRTT", "the out-of-tree scheduler: a subflow gets a segment only when its cwnd has room (no data "
               "queued behind a slow subflow), with its RTO reinjection", {"scheduler": "min_rtt"}, 1),
    ("buffer ×8", "as Linux with 8 × the window: the shared receive buffer is no longer what stops the clean "
                  "subflow", {}, 8),
]
#: Where each finding is looked at: (figure, point, window KiB, delay ms, loss on Path0).
EXPLAIN_POINTS: list[tuple[str, str, int, float, float]] = [
    ("fig. 2-3", "no delay, 100 KB", 100, 0.0, 0.0),
    ("fig. 2-4", "10 ms, 400 KB", 400, 10.0, 0.0),
    ("fig. 5, 8", "20 % loss, 100 KB", 100, 0.0, 0.2),
    ("fig. 5-7", "50 % loss, 100 KB", 100, 0.0, 0.5),
]


def explain(*, quick: bool = False, reps: int | None = None, seed: int = 1, workers: int | None = None,
            out: Path | None = None, progress: bool = False, backend: str = "sim") -> dict[str, Any]:
    """Each finding's point with the mechanisms switched one at a time
    (`VARIANTS`), TCP on Path0 beside. On sim at the paper's rates; with
    `backend` "emu" or "both" also the real kernel at EMU_SCALE, as it is and
    with the buffer ×8 (the one switch the kernel has), beside the simulator
    at the same scale. Returns {label: {point: {column: {"total", "clean"}}}}
    in Mb/s (`clean`: the subflow on Path1)."""
    if backend not in ("sim", "emu", "both"):
        raise ScenarioError(f"--backend: {backend!r} is not allowed (sim, emu, both)")
    cases = []  # (label, backend, scale, variants)
    if backend in ("sim", "both"):
        cases.append(("sim", "sim", 1.0, VARIANTS))
    if backend in ("emu", "both"):
        cases.append((f"sim ×{EMU_SCALE:g}", "sim", EMU_SCALE, VARIANTS))
        cases.append((f"emu ×{EMU_SCALE:g}", "emu", EMU_SCALE, [v for v in VARIANTS if not v[2]]))
    duration = 5.0 if quick else 10.0
    results: dict[str, Any] = {"points": [p[1] for p in EXPLAIN_POINTS], "columns": {}, "cells": {}, "reps": {}}
    for label, be, scale, variants in cases:
        n = reps or ((3 if quick else DEFAULT_REPS) if be == "sim" else (2 if quick else 3))
        results["reps"][label] = n
        results["columns"][label] = ["TCP (Path0)"] + [v[0] for v in variants]
        cells: dict[str, dict[str, Any]] = {}
        for fig, point, w, d, p in EXPLAIN_POINTS:
            cells[point] = {}
            columns = [("TCP (Path0)", "tcp", {}, 1)] + [(name, "mptcp", extra, k) for name, _, extra, k in variants]
            for name, kind, extra, factor in columns:
                s = scenario(kind, w * factor, delay_ms=d, loss=p, duration_s=duration, scale=scale, backend=be,
                             beside_kernel=scale != 1.0)
                for key, value in extra.items():
                    setattr(s.flows[0], key, value)
                tag = f"{label}-{point}-{name}".replace(" ", "").replace("×", "x").replace("%", "pc").replace(",", "")
                where = None if out is None else out / "explain" / tag
                runs, _ = execute(make_plan(s, reps=n, seed=seed, backend=be), where, workers=workers,
                                  progress=progress, label=f"{label} {point} {name} ({be})", resume=where is not None and (where / "manifest.json").exists(), kind="paper")
                flows = runs[runs["subflow"].isna()] if "subflow" in runs else runs
                total = mean_ci((flows["goodput_bps"] / 1e6).tolist())
                clean = None
                if kind == "mptcp":
                    clean = mean_ci([_clean_goodput(runs[runs["run_id"] == r]) / 1e6 for r in flows["run_id"]])
                cells[point][name] = {"total": total, "clean": clean}
        results["cells"][label] = cells
    return results


def _clean_goodput(rows: pd.DataFrame) -> float:
    """Goodput of one run's subflows other than the initial one: the first
    by name on both backends (sim: "iperf#0"; emu: the Path0 address, the
    lowest). 0 if the second subflow never joined."""
    subs = rows[rows["subflow"].notna()].sort_values("subflow")
    return float(subs["goodput_bps"].iloc[1:].fillna(0).sum())


def explain_tables(results: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) per backend: goodput of the connection, and in
    brackets of its clean subflow (Path1), mean ± 95 % half-width."""
    out = []
    for label, cells in results["cells"].items():
        header = ["point"] + results["columns"][label]
        rows = []
        for point in results["points"]:
            row = [point]
            for col in results["columns"][label]:
                c = cells[point][col]
                text = _cell(c["total"])
                if c["clean"] is not None:
                    text += f" ({c['clean']['mean']:.0f})"
                row.append(text)
            rows.append(row)
        out.append((f"{label}: goodput (Mb/s; in brackets the clean subflow on Path1), "
                    f"{results['reps'][label]} replications", header, rows))
    return out


# ---- output ---------------------------------------------------------------------


def _cell(c: dict[str, Any]) -> str:
    return mean_pm(c, 0)


def tables(results: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) per sweep and kind: goodput in Mb/s, mean ± the
    95 % t-interval's half-width, one column per window."""
    out = []
    axes = results["axes"]
    for label, runs in results["runs"].items():
        scaled = "×" in label
        for sweep, unit in (("delay", "ms"), ("loss", "%")):
            for kind in ("tcp", "mptcp"):
                t = runs[sweep][kind]
                header = [f"{sweep} ({unit})"] + [f"{w} KB" + (f" ×{EMU_SCALE:g}" if scaled else "") for w in axes["window"]]
                rows = []
                for x in axes[sweep]:
                    name = f"{x:g}" if sweep == "delay" else f"{100 * x:g}"
                    rows.append([name] + [_cell(t[w][x]) for w in axes["window"]])
                what = "TCP on Path0" if kind == "tcp" else "MPTCP (Path0 + Path1)"
                out.append((f"{label}: {what}: goodput (Mb/s) against {sweep} on Path0", header, rows))
    return out


def findings(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each of the paper's findings with what netbraid's simulation shows."""
    axes = results["axes"]
    label = next(iter(results["runs"]))
    d, l = results["runs"][label]["delay"], results["runs"][label]["loss"]
    w_small, w_big = axes["window"][0], axes["window"][-1]
    m = lambda t, w, x: t[w][x]["mean"]  # noqa: E731
    zero_d, max_d = axes["delay"][0], axes["delay"][-1]
    shows = [
        f"no delay: TCP {m(d['tcp'], w_small, zero_d):.0f}-{m(d['tcp'], w_big, zero_d):.0f} Mb/s over the windows; "
        f"MPTCP {m(d['mptcp'], w_small, zero_d):.0f} Mb/s at {w_small} KB, {m(d['mptcp'], w_big, zero_d):.0f} at {w_big} KB",
        f"at {max_d} ms: TCP {m(d['tcp'], w_small, max_d):.0f} / {m(d['tcp'], w_big, max_d):.0f} Mb/s, "
        f"MPTCP {m(d['mptcp'], w_small, max_d):.0f} / {m(d['mptcp'], w_big, max_d):.0f} Mb/s ({w_small} / {w_big} KB)",
        "see the time series (fig4.png): subflow goodput every 100 ms",
        f"at {100 * axes['loss'][-1]:g} % loss: TCP {m(l['tcp'], w_small, axes['loss'][-1]):.1f} Mb/s; MPTCP "
        f"{m(l['mptcp'], w_small, axes['loss'][-1]):.0f}-{m(l['mptcp'], w_big, axes['loss'][-1]):.0f} Mb/s over the windows",
    ]
    mid = min(axes["loss"], key=lambda x: abs(x - 0.2))
    shows.append(f"at {100 * mid:g} % loss: MPTCP {m(l['mptcp'], w_small, mid):.0f} Mb/s at {w_small} KB "
                 f"(plateau at {100 * axes['loss'][-1]:g} %: {m(l['mptcp'], w_small, axes['loss'][-1]):.0f})")
    return [(fig, text, shown) for (fig, text), shown in zip(FINDINGS, shows)]


def plots(results: dict[str, Any], series: dict[str, Any], out: Path) -> list[Path]:
    """Every figure, as PNG (and SVG for the sweeps)."""
    made = []
    for label, runs in results["runs"].items():
        made += _sweep_plots(results["axes"], runs, out, "" if label == "sim" else "-" + label.split()[0] + "-scaled")
    return made + _series_plots(series, out)


def _sweep_plots(axes: dict[str, list], runs: dict[str, Any], out: Path, suffix: str) -> list[Path]:
    """Figures like the paper's 2, 3, 5, 6: goodput against delay or loss,
    a line per window, 95 % intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for sweep, unit, scale in (("delay", "delay on Path0 (ms)", 1), ("loss", "loss on Path0 (%)", 100)):
        fig, panels = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110, sharey=True)
        for ax, kind in zip(panels, ("mptcp", "tcp")):
            for w in axes["window"]:
                xs = [x * scale for x in axes[sweep]]
                cells = [runs[sweep][kind][w][x] for x in axes[sweep]]
                err = [0 if math.isnan(c["ci95_high"]) else c["ci95_high"] - c["mean"] for c in cells]
                ax.errorbar(xs, [c["mean"] for c in cells], yerr=err, marker="o", capsize=3, label=f"{w} KB")
            ax.set_title("MPTCP" if kind == "mptcp" else "TCP (Path0)")
            ax.set_xlabel(unit)
            ax.grid(True, alpha=0.3)
        panels[0].set_ylabel("goodput (Mb/s)")
        panels[0].legend(fontsize="small", title="iperf -w")
        fig.tight_layout()
        for ext in ("png", "svg"):
            fig.savefig(out / f"{sweep}{suffix}.{ext}")
            made.append(out / f"{sweep}{suffix}.{ext}")
        plt.close(fig)
    return made


def _series_plots(series: dict[str, Any], out: Path) -> list[Path]:
    """Figures like the paper's 4, 7, 8: per-subflow goodput over time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    for name, s in series.items():
        fig, ax = plt.subplots(figsize=(9, 3.6), dpi=110)
        for sub, values in s["subflows"].items():
            ax.plot(s["time_s"], [v / 1e6 for v in values], label=sub)
        ax.plot(s["time_s"], [v / 1e6 for v in s["total"]], label="connection", color="black", linewidth=0.8)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("goodput (Mb/s), 100 ms bins")
        ax.set_title(f"{name}: window {s['window_kib']} KB, delay {s['delay_ms']:g} ms, loss {100 * s['loss']:g} % on Path0")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(out / f"{name}.png")
        made.append(out / f"{name}.png")
        plt.close(fig)
    return made
