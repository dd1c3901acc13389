"""Sim against emu on the same scenario: does the simulated result hold on
a real stack?

Both backends run the scenario `reps` times (seeds S, S+1, …) through the
experiments layer, so both sides are the same tables over the same
measurement window (docs/experiments.md). Each metric is lined up per flow,
per subflow or leg (matched by their addresses, which both backends give
alike) and per link direction, as a mean with its 95 % interval on each
side and a verdict: the Welch interval of the difference of the means
holds 0 ("consistent") or not ("differs"). One run per side gives no
interval and no verdict.

Loss is shown as each backend can measure it, under the same definitions:
`retx %` is the sender's retransmissions / data segments it sent (the
simulator's counters; TCP_INFO on the kernel), `loss %` of a UDP flow is
datagrams not received / sent, and every link direction's queue and
random-loss drops are linkemu's and the simulator's counters over the
window. The network's loss per TCP flow is known to the simulator only.

The simulator's TCP defaults are the RFCs' (initial window per RFC 5681,
minimum RTO 1 s, MSS 1460). Linux differs, so by default `compare` runs the
simulator with `profile = "linux"` where the scenario names no profile:
Linux's values for every TCP field the scenario leaves unset, and CUBIC as
Linux runs it where the scenario names CUBIC (a flow that names no
controller keeps the built-in one, as on emu); fields the scenario sets are
used on both sides as they are.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any, Callable

import pandas as pd
from scipy import stats as sps

from .experiment import Tables, execute_tables, make_plan
from .resolve import TCP_DEFAULTS
from .schema import Scenario
from .stats import clip_to_range, mean_ci

#: Per flow, subflow or leg: (column, label, scale to the shown unit).
PATH_METRICS = [
    ("goodput_bps", "goodput Mb/s", 1e-6),
    ("throughput_bps", "throughput Mb/s", 1e-6),
    ("retx_rate", "retx %", 100),
    ("loss_rate", "loss %", 100),
    ("net_loss_rate", "network loss %", 100),
    # the smoothed RTT's mean over the window: what both backends measure
    # alike (the kernel keeps no RTT samples to average; the simulator's
    # rtt_mean_s, their mean, weights each ACK rather than each instant)
    ("srtt_mean_s", "srtt ms", 1e3),
    ("cwnd_mean_bytes", "cwnd KB", 1 / 1024),
    # segments the receiver reported twice (D-SACK): needless retransmissions
    ("dsack_dups", "D-SACKed segs", 1),
]
#: Per link direction.
LINK_METRICS = [
    ("utilisation", "utilisation %", 100),
    ("queue_drops", "queue drops", 1),
    ("loss_drops", "loss drops", 1),
    # mean wait of a packet for the transmitter
    ("queue_delay_s", "queue delay ms", 1e3),
]


def with_linux_defaults(s: Scenario) -> Scenario:
    """The scenario with `profile = "linux"` under its own TCP settings (a
    flow's or [tcp]'s profile, if it names one, stays). Until 2026-11-28 this
    set Linux's TCP fields alone (`LINUX_TCP`), so a CUBIC flow ran RFC 9438's
    CUBIC, not Linux's (no HyStart, β = 0.7): examples/linux_tcp_loss.toml
    gave 25.9 ± 0.9 Mb/s over 20 seeds against 22.6 ± 0.9 with the profile
    and the kernel's 20–20.5."""
    data = s.model_dump(mode="json", by_alias=True, exclude_none=True)
    tcp = data.setdefault("tcp", {})
    tcp.setdefault("profile", "linux")
    if "cc" not in tcp:
        # the profile's CUBIC only where the scenario names it: a flow or
        # proxy that names no controller runs the built-in one on emu too
        for item in data.get("flows", []):
            if item.get("kind", "tcp") in ("tcp", "mptcp"):
                item.setdefault("cc", TCP_DEFAULTS["cc"])
        for proxy in data.get("proxies", []):
            proxy.setdefault("tcp", {}).setdefault("cc", TCP_DEFAULTS["cc"])
    return Scenario.model_validate(data)


def relative_difference(sim: float | None, emu: float | None) -> float | None:
    """(sim − emu) / emu: the simulator's error against the real stack."""
    if sim is None or emu is None or emu == 0 or math.isnan(sim) or math.isnan(emu):
        return None
    return (sim - emu) / emu


def difference_interval(sim: list[float], emu: list[float]) -> tuple[float, float] | None:
    """The 95 % Welch interval of mean(sim) − mean(emu); None with fewer
    than two values on a side."""
    if len(sim) < 2 or len(emu) < 2:
        return None
    if pd.Series(sim).std() == 0 and pd.Series(emu).std() == 0:
        # no spread on either side: equal means agree, and unequal ones cannot
        # be judged by an interval (the runs are not random)
        d = sum(sim) / len(sim) - sum(emu) / len(emu)
        return (0.0, 0.0) if abs(d) <= 1e-9 * max(abs(sum(sim) / len(sim)), 1e-300) else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # scipy's "precision loss" on nearly equal samples
        ci = sps.ttest_ind(sim, emu, equal_var=False).confidence_interval(0.95)
    return (float(ci.low), float(ci.high))


def verdict(interval: tuple[float, float] | None) -> str | None:
    if interval is None:
        return None
    return "consistent" if interval[0] <= 0 <= interval[1] else "differs"


def _metrics_by_backend(runs: pd.DataFrame, backend: str) -> pd.DataFrame:
    """The rows compare shows, with the loss columns defined alike."""
    runs = runs.copy()
    tcp = runs["kind"].isin(["tcp", "mptcp", "sctp"]) | runs["subflow"].notna()  # flows that retransmit
    if backend == "sim":
        sent = runs["packets_sent"].where(runs["packets_sent"] > 0)
        runs["retx_rate"] = (runs["retransmits"] / sent).where(tcp)
        runs["net_loss_rate"] = runs["loss_rate"].where(tcp)
    else:
        # the kernel's retransmissions / segments sent (docs/emu.md)
        runs["retx_rate"] = runs["loss_rate"].where(tcp)
        runs["net_loss_rate"] = math.nan
    runs["loss_rate"] = runs["loss_rate"].where(~tcp)
    return runs


def _path_key(row: pd.Series) -> tuple:
    """A leg lines up by the nodes it joins, a subflow by its addresses (the
    same on both backends), else by name."""
    for a, b in (("from", "to"), ("src_addr", "dst_addr")):
        if a in row and isinstance(row.get(a), str) and isinstance(row.get(b), str):
            return (row["flow"], row[a], row[b])
    return (row["flow"], row["subflow"])


def _line_up(sim: pd.DataFrame, emu: pd.DataFrame, key: Callable[[pd.Series], tuple],
             metrics: list[tuple[str, str, float]], label: Callable[[pd.Series], dict[str, Any]]) -> list[dict[str, Any]]:
    sides = {name: {} for name in ("sim", "emu")}
    for name, df in (("sim", sim), ("emu", emu)):
        for _, row in df.iterrows():
            sides[name].setdefault(key(row), []).append(row)
    rows = []
    for k in list(dict.fromkeys([*sides["emu"], *sides["sim"]])):
        s_rows, e_rows = sides["sim"].get(k, []), sides["emu"].get(k, [])
        head = label((e_rows or s_rows)[0])
        for column, shown, scale in metrics:
            values = {side: [float(r[column]) for r in rs if column in r and pd.notna(r[column])]
                      for side, rs in (("sim", s_rows), ("emu", e_rows))}
            if not values["sim"] and not values["emu"]:
                continue
            interval = difference_interval(values["sim"], values["emu"])
            sim_c, emu_c = (clip_to_range(mean_ci(values[side]), column) for side in ("sim", "emu"))
            rows.append({**head, "metric": column, "label": shown, "scale": scale, "sim": sim_c, "emu": emu_c,
                         "rel_diff": relative_difference(sim_c["mean"], emu_c["mean"]),
                         "diff_ci95": list(interval) if interval else None, "verdict": verdict(interval)})
    return rows


def compare(s: Scenario, *, seed: int | None = None, reps: int = 1, linux_defaults: bool = True,
            progress: bool = False, workers: int | None = None, out: Path | None = None,
            overwrite: bool = False) -> dict[str, Any]:
    """Run `s` `reps` times on each backend (sim first: it takes seconds)
    and line the results up. Returns {"rows": per flow/subflow/leg and
    metric, "links": per link direction and metric, "sim"/"emu": the
    experiments layer's Tables, …}. With `out`, each backend's runs are a
    results directory of their own, `out/sim` and `out/emu`."""
    sim_scenario = with_linux_defaults(s) if linux_defaults else s
    where = (lambda side: out / side) if out is not None else (lambda side: None)  # noqa: E731
    sim_t: Tables = execute_tables(make_plan(sim_scenario, reps=reps, seed=seed, backend="sim"), where("sim"),
                                   workers=workers, progress=progress, label="sim runs", kind="replications",
                                   overwrite=overwrite)
    emu_t: Tables = execute_tables(make_plan(s, reps=reps, seed=seed, backend="emu"), where("emu"),
                                   progress=progress, label="emu runs (real time)", kind="replications",
                                   overwrite=overwrite)
    sim_runs, emu_runs = _metrics_by_backend(sim_t.runs, "sim"), _metrics_by_backend(emu_t.runs, "emu")
    flows = lambda df: df[df["subflow"].isna()]  # noqa: E731
    paths = lambda df: df[df["subflow"].notna()]  # noqa: E731
    rows = _line_up(flows(sim_runs), flows(emu_runs), lambda r: (r["flow"],), PATH_METRICS,
                    lambda r: {"flow": r["flow"], "kind": r["kind"], "subflow": None})
    sub_rows = _line_up(paths(sim_runs), paths(emu_runs), _path_key, PATH_METRICS,
                        lambda r: {"flow": r["flow"], "kind": "leg" if isinstance(r.get("from"), str) else "subflow",
                                   "subflow": r["subflow"]})
    ordered = []  # each flow's subflows right under it
    for flow in dict.fromkeys(r["flow"] for r in rows):
        ordered += [r for r in rows if r["flow"] == flow] + [x for x in sub_rows if x["flow"] == flow]
    link_rows = _line_up(sim_t.links, emu_t.links, lambda r: (r["link"],), LINK_METRICS,
                         lambda r: {"link": r["link"], "link_name": r.get("link_name")})
    # the link directions worth a look: ≥ 1 % busy or dropping, on either side
    floor = {"utilisation": 0.01, "queue_drops": 1, "loss_drops": 1, "queue_delay_s": 1e-4}
    busy = {r["link"] for r in link_rows
            if any(c["n"] and c["mean"] >= floor[r["metric"]] for c in (r["sim"], r["emu"]))}
    seeds = sorted(int(x) for x in emu_t.runs.drop_duplicates("run_id")["seed"])
    return {"scenario": s.name, "reps": reps, "seeds": seeds, "linux_defaults_on_sim": linux_defaults,
            "rows": ordered, "links": [r for r in link_rows if r["link"] in busy], "sim": sim_t, "emu": emu_t}
