"""Paper 002: a split-TCP proxy pair over a WAN (Osaka–Kawasaki), with Reno,
HighSpeed TCP and gHSTCP between the proxies. See docs/papers/002.md for
every assumption.

The WAN, from the paper's §4: a 70 Mb/s bottleneck with a ~100 KB drop-tail
buffer, 18 ms minimum round trip, MTU 1400; the "Tokyo–Okinawa" case adds
25 ms one way (the issue's reading; the paper does not say which way) with
an emulator on the receiving side. End hosts run Reno with 64 KB socket
buffers (swept), SACK off or on; the proxies sit next to the end hosts with
large buffers (4 MB here: the paper gives no size). The paper measured five
2-minute iperf transfers per point; here each replication starts its flows
at a random time within the first second, and `background` adds on-off UDP
cross traffic on the WAN (the real WAN's load is unknown: off by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..api import jain_fairness
from ..errors import ScenarioError
from ..experiment import Axis, execute, make_plan
from ..schema import Measure, Scenario
from ..stats import mean_ci, mean_pm

TITLE = "Split-TCP proxies over a WAN: Reno, HighSpeed TCP and gHSTCP (netbraid's ghstcp-approx) between the proxies"

RATE = "70Mbps"
#: one-way delays (ms) of the WAN's two halves: 2 × (0.1 + 8.8 + 0.1) ms = 18 ms round trip
WAN_MS = (4.4, 4.4)
ACCESS_MS = 0.1
#: the emulator's added one-way delay per case ("Tokyo–Osaka", "Tokyo–Okinawa")
CASES = {"osaka": 0.0, "okinawa": 25.0}
QUEUE = "100KB"
MSS, HEADER = 1360, 40  # MTU 1400
BUFFERS_KIB = [16, 32, 64, 128, 256, 512, 1024]
QUICK_BUFFERS_KIB = [32, 64, 256]
CONTROLLERS = ["reno", "hstcp", "ghstcp-approx"]
SACK = {"off": "newreno", "on": "sack"}
PROXY_BUFFER = "4MB"
#: Figure 12's variation: the direct flow with a socket buffer that does not bind
DIRECT_LARGE = "2MB"
#: placement: a proxy at hop k of a 10-hop path with the Okinawa case's round trip
PLACEMENT_HOPS = 10
PLACEMENT_POSITIONS = [1, 2, 3, 4, 5, 6, 7, 8, 9]
QUICK_PLACEMENT_POSITIONS = [1, 3, 5, 7, 9]
DEFAULT_REPS = 5

#: End hosts: Linux 2.4's Reno (the paper: the kernel's standard TCP), 200 ms minimum RTO.
END_HOST_TCP: dict[str, Any] = dict(cc="reno", mss=MSS, header_bytes=HEADER, rto_min="200ms", window="64KB")
#: On emu the end hosts are this kernel's Reno (its minimum RTO is 200 ms already; header sizes are its own).
EMU_END_HOST_TCP: dict[str, Any] = dict(cc="reno", mss=MSS, window="64KB", recovery="sack")
#: Between the proxies on emu: what this kernel offers (it has no HighSpeed TCP).
EMU_CONTROLLERS = ["reno", "cubic", "bbr"]

#: The paper's statements (it prints no numbers from its figures, only these).
FINDINGS = [
    ("abstract, Fig. 10", "the proxies give up to about 4× the direct throughput"),
    ("abstract, Fig. 11", "with HSTCP or gHSTCP between the proxies, up to about 5.5×"),
    ("Fig. 9", "64 KB end-host buffers cannot fill the path (BDP ≈ 160 KB); in the Okinawa case not even large ones"),
    ("Fig. 10", "Okinawa case: even with the proxies, Reno between them stays below the Osaka case"),
    ("Fig. 11", "HSTCP beats Reno, gHSTCP beats HSTCP; SACK helps HSTCP most; 70 Mb/s is not reached"),
    ("Fig. 12", "HSTCP between the proxies cuts a coexisting direct Reno flow sharply; gHSTCP leaves it about what Reno "
                "between the proxies leaves it"),
    ("§5.1 (citing Maki et al.)", "the gain is largest when the proxies split the end-to-end delay evenly"),
]


def scenario(*, case: str = "okinawa", relayed: bool = False, between: str = "reno", direct_beside: bool = False,
             duration_s: float = 120.0, background_bps: float = 0.0, tcp: dict[str, Any] | None = None) -> Scenario:
    """The paper's Figure 6: sender — proxy A — WAN (bottleneck) — proxy B
    — receiver. `relayed`: the flow runs through both proxies with `between`
    on the middle leg; `direct_beside`: a second, direct Reno flow from
    another host pair on the same WAN (Figure 12)."""
    if case not in CASES:
        raise ScenarioError(f"paper 002: case {case!r} (allowed: {', '.join(CASES)})")
    s = Scenario(name=f"paper-002 {case}", duration=f"{duration_s:g}s", tcp=tcp or END_HOST_TCP)
    s.add_host("sender").add_host("receiver")
    s.add_router("proxy_a").add_router("wan").add_router("proxy_b")
    access = dict(rate="1Gbps", delay=f"{ACCESS_MS:g}ms", queue="1000p")
    s.add_link("sender", "proxy_a", **access)
    s.add_link("proxy_a", "wan", rate=RATE, delay=f"{WAN_MS[0]:g}ms", queue=QUEUE)
    s.add_link("wan", "proxy_b", rate="1Gbps", delay=f"{WAN_MS[1] + CASES[case]:g}ms", queue="1000p")
    s.add_link("proxy_b", "receiver", **access)
    jitter = {"start_jitter": "1s"}
    if relayed:
        s.add_proxy("proxy_a", buffer=PROXY_BUFFER, tcp={"window": PROXY_BUFFER, "cc": between})
        s.add_proxy("proxy_b", buffer=PROXY_BUFFER, tcp={"window": PROXY_BUFFER})
        s.add_flow("proxied", "sender", "receiver", via=["proxy_a", "proxy_b"], **jitter)
    else:
        s.add_flow("direct", "sender", "receiver", **jitter)
    if direct_beside:
        s.add_host("sender2").add_host("receiver2")
        s.add_link("sender2", "proxy_a", **access)
        s.add_link("proxy_b", "receiver2", **access)
        s.add_flow("direct", "sender2", "receiver2", **jitter)
    if background_bps > 0:
        s.add_host("bg_src").add_host("bg_dst")
        s.add_link("bg_src", "proxy_a", **access)
        s.add_link("proxy_b", "bg_dst", **access)
        # exponential on-off, ON half the time at twice the mean rate
        s.add_flow("background", "bg_src", "bg_dst", kind="onoff", rate=f"{2 * background_bps:g}bps",
                   burst_time="500ms", idle_time="500ms", packet_size="1372B")
    s.measure = Measure(start="0s")
    return s


def placement_scenario(position: int | None, *, duration_s: float = 120.0) -> Scenario:
    """A 10-hop path with the Okinawa case's round trip and the WAN's
    bottleneck on its first hop; one proxy at router `position` (1–9; None:
    direct). Every socket is 64 KB, so each connection is window-limited."""
    rtt_ms = 2 * (2 * ACCESS_MS + sum(WAN_MS) + CASES["okinawa"])
    s = Scenario(name=f"paper-002 placement {position}", duration=f"{duration_s:g}s", tcp=END_HOST_TCP)
    s.add_host("sender").add_host("receiver").add_router("r", count=PLACEMENT_HOPS - 1)
    nodes = ["sender", *[f"r{k}" for k in range(PLACEMENT_HOPS - 1)], "receiver"]
    for k, (a, b) in enumerate(zip(nodes, nodes[1:])):
        s.add_link(a, b, rate=RATE if k == 0 else "1Gbps", delay=f"{rtt_ms / 2 / PLACEMENT_HOPS:g}ms",
                   queue=QUEUE if k == 0 else "1000p")
    flow: dict[str, Any] = {"start_jitter": "1s"}
    if position is not None:
        s.add_proxy(f"r{position - 1}", buffer=PROXY_BUFFER)
        flow["via"] = [f"r{position - 1}"]
    s.add_flow("f", "sender", "receiver", **flow)
    s.measure = Measure(start="0s")
    return s


def _run(base: Scenario, grid: list[Axis], reps: int, seed: int, workers, out: Path | None, name: str,
         progress: bool, backend: str = "sim") -> pd.DataFrame:
    plan = make_plan(base, grid=grid, reps=reps, seed=seed, backend=backend)
    where = None if out is None else out / name
    runs, _ = execute(plan, where, workers=workers, progress=progress, label=name,
                      resume=where is not None and (where / "manifest.json").exists(), kind="paper")
    return runs[runs["subflow"].isna()] if "subflow" in runs else runs


def _rows(runs: pd.DataFrame, **where: Any) -> pd.Series:
    """Rows whose axis columns (dotted paths) hold the given values."""
    sel = pd.Series(True, index=runs.index)
    for path, value in where.items():
        sel &= runs[path].astype(str) == str(value)
    return sel


def _cell(runs: pd.DataFrame, flow: str, **where: Any) -> dict[str, float]:
    sel = _rows(runs, **where) & (runs["flow"] == flow)
    return mean_ci((runs.loc[sel, "goodput_bps"] / 1e6).tolist())


def run(*, quick: bool = False, reps: int | None = None, seed: int = 1, workers: int | None = None,
        out: Path | None = None, progress: bool = False, background_bps: float = 0.0,
        backend: str = "sim") -> dict[str, Any]:
    """Every figure's points: {figure: {...: mean_ci of goodput in Mb/s}};
    with `backend` "emu" (only that) or "both" (and the figures), the
    direct and proxied cases on the real stacks (`emu`)."""
    if backend not in ("sim", "emu", "both"):
        raise ScenarioError(f"--backend: {backend!r} is not allowed (sim, emu, both)")
    res: dict[str, Any] = {"backend": backend}
    if backend in ("sim", "both"):
        res.update(_figures(quick=quick, reps=reps, seed=seed, workers=workers, out=out, progress=progress,
                            background_bps=background_bps))
    if backend in ("emu", "both"):
        res["emu"] = run_emu(quick=quick, reps=reps, seed=seed, workers=workers, out=out, progress=progress)
        res.setdefault("reps", res["emu"]["reps"])
        res.setdefault("duration_s", res["emu"]["duration_s"])
    return res


def run_emu(*, quick: bool = False, reps: int | None = None, seed: int = 1, workers: int | None = None,
            out: Path | None = None, progress: bool = False) -> dict[str, Any]:
    """The direct and the proxied transfer on the real stacks — this kernel's
    TCP at the end hosts and `netbraid proxy` on the proxies, with each
    controller this kernel offers between them — at the paper's rates
    (linkemu holds 70 Mb/s), SACK on, 64 KB end hosts; the same scenarios
    on the simulator beside (Linux's controllers, the simulator's TCP)."""
    reps = reps or (2 if quick else 3)
    duration = 20.0 if quick else 60.0
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for case in CASES:
        cells[case] = {}
        for between in ["direct", *EMU_CONTROLLERS]:
            base = scenario(case=case, relayed=between != "direct", between=between, duration_s=duration,
                            tcp=EMU_END_HOST_TCP)
            flow = "direct" if between == "direct" else "proxied"
            cells[case][between] = {}
            for b in ("emu", "sim"):
                runs = _run(base, [], reps, seed, 1 if b == "emu" else workers, out, f"emu-table-{case}-{between}-{b}",
                            progress, backend=b)
                cells[case][between][b] = _cell(runs, flow)
    return {"reps": reps, "duration_s": duration, "controllers": EMU_CONTROLLERS, "cells": cells}


def _figures(*, quick: bool, reps: int | None, seed: int, workers: int | None, out: Path | None, progress: bool,
             background_bps: float) -> dict[str, Any]:
    reps = reps or (2 if quick else DEFAULT_REPS)
    duration = 20.0 if quick else 120.0
    buffers = QUICK_BUFFERS_KIB if quick else BUFFERS_KIB
    positions = QUICK_PLACEMENT_POSITIONS if quick else PLACEMENT_POSITIONS
    windows = [f"{b}KB" for b in buffers]
    delay_path = "links.2.delay"
    case_delays = {case: f"{WAN_MS[1] + added:g}ms" for case, added in CASES.items()}
    cases = Axis(delay_path, tuple(case_delays.values()))
    sack = Axis("tcp.recovery", tuple(SACK.values()))
    common = dict(duration_s=duration, background_bps=background_bps)
    res: dict[str, Any] = {"reps": reps, "duration_s": duration, "buffers_kib": buffers, "positions": positions,
                           "background_bps": background_bps}

    def by_case(runs: pd.DataFrame, flow: str, extra: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {case: {on: _cell(runs, flow, **{delay_path: d, "tcp.recovery": rec}, **extra)
                       for on, rec in SACK.items()} for case, d in case_delays.items()}

    for fig, relayed, flow in (("fig9", False, "direct"), ("fig10", True, "proxied")):
        runs = _run(scenario(relayed=relayed, **common), [Axis("tcp.window", tuple(windows)), cases, sack],
                    reps, seed, workers, out, fig, progress)
        res[fig] = {b: by_case(runs, flow, {"tcp.window": w}) for b, w in zip(buffers, windows)}
    runs = _run(scenario(relayed=True, **common), [Axis("proxies.0.tcp.cc", tuple(CONTROLLERS)), cases, sack],
                reps, seed, workers, out, "fig11", progress)
    res["fig11"] = {cc: by_case(runs, "proxied", {"proxies.0.tcp.cc": cc}) for cc in CONTROLLERS}
    # the direct flow with the paper's 64 KB, and with a buffer that does not
    # bind (its rate then depends on the losses it meets, not on its window)
    direct_windows = ("64KB", DIRECT_LARGE)
    runs = _run(scenario(relayed=True, direct_beside=True, **common),
                [Axis("proxies.0.tcp.cc", tuple(CONTROLLERS)), sack, Axis("flows.1.window", direct_windows)],
                reps, seed, workers, out, "fig12", progress)
    res["fig12"] = {}
    for w in direct_windows:
        res["fig12"][w] = {}
        for cc in CONTROLLERS:
            res["fig12"][w][cc] = {}
            for on, rec in SACK.items():
                where = {"proxies.0.tcp.cc": cc, "tcp.recovery": rec, "flows.1.window": w}
                sel = _rows(runs, **where) & runs["flow"].isin(["proxied", "direct"])
                jain = [jain_fairness(g["goodput_bps"].tolist()) for _, g in runs[sel].groupby("run_id")]
                res["fig12"][w][cc][on] = {"proxied": _cell(runs, "proxied", **where),
                                           "direct": _cell(runs, "direct", **where), "jain": mean_ci(jain)}
    direct = _run(placement_scenario(None, duration_s=duration), [], reps, seed, workers, out, "placement-direct",
                  progress)
    res["placement"] = {"direct": _cell(direct, "f"), "at": {}}
    for k in positions:
        r = _run(placement_scenario(k, duration_s=duration), [], reps, seed, workers, out, f"placement-{k}", progress)
        res["placement"]["at"][k] = _cell(r, "f")
    return res


# ---- presenting -------------------------------------------------------------


def rtt_s(case: str) -> float:
    """The path's round trip without queueing."""
    return 2 * (2 * ACCESS_MS + sum(WAN_MS) + CASES[case]) / 1e3


def tables(res: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows): goodput in Mb/s, mean ± the 95 % interval's half-width."""
    out = _figure_tables(res) if "fig9" in res else []
    if "emu" in res:
        e = res["emu"]
        head = ["case", "direct: emu", "sim"]
        for cc in e["controllers"]:
            head += [f"proxies, {cc}: emu", "sim"]
        rows = []
        for case, by in e["cells"].items():
            row = [case]
            for between in ["direct", *e["controllers"]]:
                row += [mean_pm(by[between]["emu"]), mean_pm(by[between]["sim"])]
            rows.append(row)
        out.append((f"On the real stacks — this kernel's TCP at the end hosts (Reno, 64 KB, SACK on), netbraid proxy "
                    f"with each controller between the proxies; {e['reps']} × {e['duration_s']:g} s; the same "
                    "scenarios on sim beside: goodput (Mb/s)", head, rows))
    return out


def _figure_tables(res: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    out = []
    cols = [(case, on) for case in CASES for on in SACK]
    head = [f"{case}, SACK {on}" for case, on in cols]
    for fig, what in (("fig9", "Figure 9 — direct (no proxy)"), ("fig10", "Figure 10 — through the two proxies")):
        rows = []
        for b in res["buffers_kib"]:
            cells = [mean_pm(res[fig][b][case][on]) for case, on in cols]
            if fig == "fig9":  # one window per round trip: the window limit W / RTT
                cells += [f"{b * 1024 * MSS / (MSS + HEADER) * 8 / rtt_s(case) / 1e6:.1f}" for case in CASES]
            rows.append([f"{b} KB"] + cells)
        extra = [f"W/RTT {case}" for case in CASES] if fig == "fig9" else []
        out.append((f"{what}: goodput (Mb/s) against the end hosts' socket buffer", ["buffer", *head, *extra], rows))
    rows = [[cc] + [mean_pm(res["fig11"][cc][case][on]) for case, on in cols] for cc in CONTROLLERS]
    out.append(("Figure 11 — controller between the proxies (end hosts 64 KB): goodput (Mb/s)", ["between", *head],
                rows))
    for w, what in (("64KB", "the direct flow's buffer 64 KB, as the paper's"),
                    (DIRECT_LARGE, f"the direct flow's buffer {DIRECT_LARGE}, not binding")):
        rows = []
        for cc in CONTROLLERS:
            for on in SACK:
                c = res["fig12"][w][cc][on]
                rows.append([cc, on, mean_pm(c["proxied"]), mean_pm(c["direct"]), f"{c['jain']['mean']:.3f}"])
        out.append((f"Figure 12 — Okinawa case: a proxied flow beside a direct Reno flow (Mb/s); {what}",
                    ["between", "SACK", "proxied flow", "direct Reno flow", "Jain's index"], rows))
    d = res["placement"]["direct"]["mean"]
    rows = []
    for k, c in res["placement"]["at"].items():
        x = k / PLACEMENT_HOPS
        rows.append([f"{x:.1f}", mean_pm(c), f"{c['mean'] / d:.2f}" if d else "–", f"{1 / max(x, 1 - x):.2f}"])
    out.append((f"Placement — one proxy along the Okinawa path (64 KB sockets; direct {d:.1f} Mb/s)",
                ["proxy at (share of RTT before it)", "goodput (Mb/s)", "gain", "model 1/max(x, 1−x)"], rows))
    return out


def findings(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each statement of the paper beside what the simulation shows (and,
    after an emu run, what the real stacks show)."""
    out = _sim_findings(res) if "fig9" in res else []
    if "emu" in res:
        m = lambda c: c["mean"]  # noqa: E731
        cells = res["emu"]["cells"]
        gain = {case: {cc: (m(by[cc]["emu"]) / m(by["direct"]["emu"]) if m(by["direct"]["emu"]) else float("nan"),
                            m(by[cc]["sim"]) / m(by["direct"]["sim"]) if m(by["direct"]["sim"]) else float("nan"))
                       for cc in res["emu"]["controllers"]} for case, by in cells.items()}
        shown = "; ".join(f"{case}: " + ", ".join(f"{cc} {g[0]:.1f}× (sim {g[1]:.1f}×)" for cc, g in by.items())
                          for case, by in gain.items())
        out.append(("abstract, Fig. 10 (real stacks)", FINDINGS[0][1], f"emu, proxied over direct: {shown}"))
    return out


def _sim_findings(res: dict[str, Any]) -> list[tuple[str, str, str]]:
    m = lambda c: c["mean"]  # noqa: E731
    bufs = res["buffers_kib"]
    gains = [(m(res["fig10"][b][case][on]) / m(res["fig9"][b][case][on]), b, case, on)
             for b in bufs for case in CASES for on in SACK if m(res["fig9"][b][case][on]) > 0]
    best = max(gains)
    w64 = 64 if 64 in bufs else bufs[0]
    at64 = {case: m(res["fig10"][w64][case]["on"]) / m(res["fig9"][w64][case]["on"]) for case in CASES}
    hs_gains = [(m(res["fig11"][cc][case][on]) / m(res["fig9"][w64][case][on]), cc, case, on)
                for cc in CONTROLLERS for case in CASES for on in SACK if m(res["fig9"][w64][case][on]) > 0]
    hs_best = max(hs_gains)
    big = bufs[-1]
    f11 = res["fig11"]
    okinawa = {cc: {on: m(f11[cc]["okinawa"][on]) for on in SACK} for cc in CONTROLLERS}
    f12 = res["fig12"]
    placement = res["placement"]["at"]
    best_pos = max(placement, key=lambda k: m(placement[k]))
    shows = [
        f"at {w64} KB (SACK on): {at64['osaka']:.1f}× (Osaka), {at64['okinawa']:.1f}× (Okinawa); over the buffers "
        f"swept up to {best[0]:.1f}× ({best[2]}, SACK {best[3]}, {best[1]} KB)",
        f"up to {hs_best[0]:.1f}× ({hs_best[1]} between the proxies, {hs_best[2]}, SACK {hs_best[3]}; direct at {w64} KB)",
        f"direct at {w64} KB: {m(res['fig9'][w64]['osaka']['on']):.1f} (Osaka) and "
        f"{m(res['fig9'][w64]['okinawa']['on']):.1f} Mb/s (Okinawa); at {big} KB: "
        f"{m(res['fig9'][big]['osaka']['on']):.1f} and {m(res['fig9'][big]['okinawa']['on']):.1f}",
        f"proxied, Reno: {m(res['fig10'][w64]['osaka']['on']):.1f} (Osaka) vs "
        f"{m(res['fig10'][w64]['okinawa']['on']):.1f} Mb/s (Okinawa), SACK on",
        "Okinawa, SACK off / on: " + "; ".join(f"{cc} {okinawa[cc]['off']:.1f} / {okinawa[cc]['on']:.1f}"
                                               for cc in CONTROLLERS),
        "direct Reno flow beside, SACK off / on — with 64 KB: " + "; ".join(
            f"{cc} {m(f12['64KB'][cc]['off']['direct']):.1f} / {m(f12['64KB'][cc]['on']['direct']):.1f}"
            for cc in CONTROLLERS) + f" (window-limited); with {DIRECT_LARGE}: " + "; ".join(
            f"{cc} {m(f12[DIRECT_LARGE][cc]['off']['direct']):.1f} / {m(f12[DIRECT_LARGE][cc]['on']['direct']):.1f}"
            for cc in CONTROLLERS),
        f"best at {best_pos / PLACEMENT_HOPS:.1f} of the round trip: {m(placement[best_pos]):.1f} Mb/s "
        f"({m(placement[best_pos]) / m(res['placement']['direct']):.2f}× direct)",
    ]
    return [(fig, text, shown) for (fig, text), shown in zip(FINDINGS, shows)]


def plots(res: dict[str, Any], out: Path) -> list[Path]:
    """Figures 9–11 (goodput against the buffer, per case and SACK) and the placement curve."""
    if "fig9" not in res:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    bufs = res["buffers_kib"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110, sharey=True)
    for ax, case in zip(axes, CASES):
        for key, label, style in (("fig9", "direct", "--"), ("fig10", "proxies (Reno)", "-")):
            for on in SACK:
                c = [res[key][b][case][on] for b in bufs]
                ax.errorbar(bufs, [x["mean"] for x in c],
                            yerr=[0 if x["n"] < 2 else (x["ci95_high"] - x["ci95_low"]) / 2 for x in c],
                            linestyle=style, marker="o", capsize=3, label=f"{label}, SACK {on}")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("end hosts' socket buffer (KB)")
        ax.set_title(f"{case} case")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("goodput (Mb/s)")
    axes[0].legend(fontsize="small")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(out / f"fig9-10.{ext}")
        made.append(out / f"fig9-10.{ext}")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4), dpi=110)
    pos = list(res["placement"]["at"])
    ax.plot([k / PLACEMENT_HOPS for k in pos], [res["placement"]["at"][k]["mean"] for k in pos], "o-", label="proxied")
    ax.axhline(res["placement"]["direct"]["mean"], linestyle="--", color="grey", label="direct")
    ax.set_xlabel("proxy position (share of the round trip before it)")
    ax.set_ylabel("goodput (Mb/s)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(out / f"placement.{ext}")
        made.append(out / f"placement.{ext}")
    plt.close(fig)
    return made
