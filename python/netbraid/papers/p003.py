"""Paper 003: multipath routing in ns-2 (per-packet round robin over d
parallel links; TCP and exponential on-off UDP; 20 replications, 95 %
intervals). See docs/papers/003.md for every assumption.

Where the paper is silent, ns-2's defaults are used, each overridable:
those of ns-2.27, the release current while the paper was written (2004).
TCP is ns-2's `Agent/TCP` (Tahoe) with `Agent/TCPSink` (an ACK per packet),
packetSize_ 1000 B plus a 40-byte TCP/IP header, window_ 20 packets,
windowInit_ 2, minrto_ 1 s, rtxcur_init_ 6 s, singledup_ 1 (limited
transmit); queues are DropTail with limit_ 50; the on-off sources use
packetSize_ 210 B and ns-2's UDP adds no header; every source starts at
t = 0. Each of the d paths runs through its own "Link" node, as ns-2 needs.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..errors import ScenarioError
from ..experiment import execute, make_plan
from ..resolve import resolve
from ..schema import Measure, Scenario
from ..stats import mean_ci

TITLE = "Multipath routing with TCP and on-off UDP (ns-2, per-packet round robin)"

#: (label, link rates in Mb/s) in the paper's order
HOMOGENEOUS = [("d=1", [10]), ("d=2", [10, 10]), ("d=3", [10, 10, 10]), ("d=4", [10, 10, 10, 10])]
HETEROGENEOUS = [("12,8", [12, 8]), ("15,5", [15, 5]), ("15,10,5", [15, 10, 5]), ("20,7,3", [20, 7, 3]),
                 ("15,10,10,5", [15, 10, 10, 5]), ("20,10,7,3", [20, 10, 7, 3])]

#: The paper's 95 % intervals: (low, high); kb/s for throughput, % for loss.
PAPER = {
    "d=1": {"tcp_thr": (909.846, 911.07), "tcp_good": (888.890, 890.292), "udp_thr": (198.716, 203.208),
            "tcp_loss": (3.432, 3.462), "udp_loss": (7.032, 7.224)},
    "d=2": {"tcp_thr": (920.156, 920.750), "tcp_good": (887.117, 887.891), "udp_thr": (202.553, 205.579),
            "tcp_loss": (2.301, 2.323), "udp_loss": (5.493, 5.699)},
    # printed as [887.643, 879.627] in the paper (bounds reversed)
    "d=3": {"tcp_thr": (920.689, 921.263), "tcp_good": (879.627, 887.643), "udp_thr": (205.876, 208.820),
            "tcp_loss": (1.902, 1.920), "udp_loss": (3.995, 4.155)},
    "d=4": {"tcp_thr": (920.542, 920.934), "tcp_good": (858.909, 859.647), "udp_thr": (208.895, 210.973),
            "tcp_loss": (1.511, 1.533), "udp_loss": (2.786, 2.884)},
    "12,8": {"tcp_thr": (742.424, 742.924), "tcp_good": (577.851, 579.963), "udp_thr": (207.093, 210.133),
             "tcp_loss": (1.596, 1.620), "udp_loss": (3.475, 3.563)},
    "15,5": {"tcp_thr": (458.928, 459.470), "tcp_good": (366.812, 367.364), "udp_thr": (200.508, 203.706),
             "tcp_loss": (3.050, 3.156), "udp_loss": (6.486, 6.732)},
    "15,10,5": {"tcp_thr": (456.286, 456.756), "tcp_good": (357.398, 357.940), "udp_thr": (208.464, 211.352),
                "tcp_loss": (1.466, 1.498), "udp_loss": (2.798, 2.928)},
    "20,7,3": {"tcp_thr": (275.33, 275.838), "tcp_good": (221.112, 221.532), "udp_thr": (203.158, 205.886),
               "tcp_loss": (3.821, 3.853), "udp_loss": (5.117, 5.423)},
    "15,10,10,5": {"tcp_thr": (490.940, 491.388), "tcp_good": (411.28, 411.732), "udp_thr": (205.560, 207.586),
                   "tcp_loss": (2.932, 2.954), "udp_loss": (4.368, 4.436)},
    "20,10,7,3": {"tcp_thr": (319.384, 319.810), "tcp_good": (274.664, 275.100), "udp_thr": (198.989, 200.905),
                  "tcp_loss": (5.902, 5.932), "udp_loss": (7.379, 7.479)},
}

#: Tables in the paper's layout: (number, title, rows, columns)
TABLES = [
    ("3.1", "homogeneous links: throughput and goodput (kb/s per flow)", HOMOGENEOUS, ["tcp_thr", "tcp_good", "udp_thr"]),
    ("3.2", "homogeneous links: packet loss (%)", HOMOGENEOUS, ["tcp_loss", "udp_loss"]),
    ("3.3", "heterogeneous links: TCP throughput and goodput (kb/s per flow)", HETEROGENEOUS, ["tcp_thr", "tcp_good"]),
    ("3.4", "heterogeneous links: UDP throughput (kb/s per flow)", HETEROGENEOUS, ["udp_thr"]),
    ("3.5", "heterogeneous links: packet loss (%)", HETEROGENEOUS, ["tcp_loss", "udp_loss"]),
]
COLUMN_NAMES = {"tcp_thr": "TCP throughput", "tcp_good": "TCP goodput", "udp_thr": "UDP throughput",
                "tcp_loss": "TCP loss %", "udp_loss": "UDP loss %"}

MSS, TCP_HEADER = 1000, 40

#: ns-2.27's `Agent/TCP` (Tahoe) and `Agent/TCPSink`, the release current
#: while the paper was written (Jan 2004 – Feb 2005; ns-2.28 came out on
#: 2005-02-03). Two defaults differ from ns-2.35's: `minrto_` was 1 s until
#: 2004-10-14 (0.2 s from ns-2.28) and `rtxcur_init_` 6 s until 2006-01-21.
#: The sender follows ns-2's rules where they depart from the RFCs
#: (`semantics = "ns2"`), and starts with ssthresh_ = window_.
NS2_TCP: dict[str, Any] = dict(
    cc="reno", recovery="tahoe", semantics="ns2", mss=MSS, header_bytes=TCP_HEADER, window=f"{20 * MSS}B",
    initial_ssthresh=f"{20 * MSS}B", delayed_ack=False, initial_window=2, limited_transmit=True,
    rto_min="1s", rto_initial="6s")
#: The same with ns-2.35's defaults (`--tcp rto_min=200ms --tcp rto_initial=3s`).
NS2_35_TCP: dict[str, Any] = dict(NS2_TCP, rto_min="200ms", rto_initial="3s")


def scenario(rates_mbps: list[float], *, measure_s: float = 180.0, tcp: dict[str, Any] | None = None,
             link_nodes: bool = True, queue_limit: int = 50) -> Scenario:
    """The paper's topology for one set of inter-router links: per link 10
    TCP and 2 UDP sources (Link:UDP:TCP = 1:2:10), sources → R1 (100 Mb/s,
    2 ms), d paths R1 → R2, R2 → destinations (100 Mb/s, 2 ms).

    The paper counts "Link" among its nodes (Link:UDP:TCP are node counts),
    and ns-2 keeps a single link per node pair, so each path runs through
    its own middle node: R1 → link_i → R2, both hops at the path's rate and
    5 ms. `link_nodes=False` joins R1 and R2 directly by d links instead.

    `queue_limit` is ns-2's DropTail `limit_`: ns-2 drops an arrival when
    the waiting packets would reach the limit, so `limit_ 50` keeps at most
    49 waiting beside the one on the wire; netbraid's queue limit counts
    waiting packets only, hence `queue_limit - 1`."""
    d = len(rates_mbps)
    s = Scenario(name=f"paper-003 {','.join(f'{r:g}' for r in rates_mbps)} Mb/s", duration=f"{6 + measure_s}s",
                 tcp={**NS2_TCP, **(tcp or {})})
    s.add_host("tcp_src", count=10 * d).add_host("tcp_dst", count=10 * d)
    s.add_host("udp_src", count=2 * d).add_host("udp_dst", count=2 * d)
    s.add_router("router1", multipath="round_robin").add_router("router2", multipath="round_robin")
    queue = f"{queue_limit - 1}p"
    for group in ("tcp_src", "udp_src"):
        s.add_link(group, "router1", rate="100Mbps", delay="2ms", queue=queue)
    for i, r in enumerate(rates_mbps, 1):
        hop = dict(rate=f"{r:g}Mbps", delay="5ms", queue=queue)
        if link_nodes:
            s.add_router(f"link{i}")
            s.add_link("router1", f"link{i}", **hop)
            s.add_link(f"link{i}", "router2", **hop)
        else:
            s.add_link("router1", "router2", **hop)
    for group in ("tcp_dst", "udp_dst"):
        s.add_link("router2", group, rate="100Mbps", delay="2ms", queue=queue)
    s.add_flow("tcp", "tcp_src", "tcp_dst")
    s.add_flow("udp", "udp_src", "udp_dst", kind="onoff", rate="1.5Mbps", burst_time="20ms", idle_time="120ms",
               packet_size="210B", header_bytes=0)
    s.measure = Measure(start="6s", stop=f"{6 + measure_s}s")
    return s


def check(tcp: dict[str, Any] | None) -> None:
    """Raise ScenarioError, naming the setting, if `tcp` overrides cannot
    run (before any output is written)."""
    try:
        resolve(scenario(HOMOGENEOUS[0][1], tcp=tcp))
    except ScenarioError as e:
        raise ScenarioError(f"--tcp: {e}") from None


def per_run(runs: pd.DataFrame) -> pd.DataFrame:
    """The paper's metrics for each run, averaged over the flows of a group.
    Throughput counts every payload byte that arrived (retransmissions too);
    goodput only new in-order bytes; loss = lost / sent packets."""
    rows = []
    for run_id, g in runs.groupby("run_id", sort=True):
        tcp, udp = g[g["kind"] == "tcp"], g[g["kind"] == "udp"]
        rows.append({
            "run_id": run_id,
            "tcp_thr": (tcp["throughput_bps"] * MSS / (MSS + TCP_HEADER)).mean() / 1e3,
            "tcp_good": tcp["goodput_bps"].mean() / 1e3,
            "udp_thr": udp["throughput_bps"].mean() / 1e3,
            "tcp_loss": 100 * tcp["loss_rate"].mean(),
            "udp_loss": 100 * udp["loss_rate"].mean(),
        })
    return pd.DataFrame(rows)


def run(*, reps: int = 20, measure_s: float = 180.0, seed: int = 1, workers: int | None = None,
        out=None, progress: bool = False, tcp: dict[str, Any] | None = None) -> dict[str, dict[str, dict[str, float]]]:
    """Every configuration of the paper: {label: {metric: mean_ci}}. `tcp`
    overrides the TCP settings (e.g. {"limited_transmit": False} for ns-2
    before singledup_ defaulted to 1)."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    for label, rates in HOMOGENEOUS + HETEROGENEOUS:
        plan = make_plan(scenario(rates, measure_s=measure_s, tcp=tcp), reps=reps, seed=seed)
        where = None if out is None else out / label.replace(",", "-").replace("=", "")
        runs, _ = execute(plan, where, workers=workers, progress=progress, label=label, resume=where is not None and (where / "manifest.json").exists(), kind="paper")
        metrics = per_run(runs)
        results[label] = {m: mean_ci(metrics[m].tolist()) for m in PAPER[label]}
    return results


def midpoint(label: str, metric: str) -> float:
    low, high = PAPER[label][metric]
    return (low + high) / 2


def comparison_rows(results: dict[str, dict[str, dict[str, float]]]) -> list[dict[str, Any]]:
    """One row per table cell: netbraid's mean and interval beside the paper's."""
    rows = []
    for number, _title, configs, metrics in TABLES:
        for label, _ in configs:
            for m in metrics:
                c = results[label][m]
                mid = midpoint(label, m)
                rows.append({
                    "table": number, "config": label, "metric": m, "netbraid_mean": c["mean"],
                    "netbraid_ci95_low": c["ci95_low"], "netbraid_ci95_high": c["ci95_high"], "n": c["n"],
                    "paper_low": PAPER[label][m][0], "paper_high": PAPER[label][m][1],
                    "relative_difference": (c["mean"] - mid) / mid if mid else math.nan,
                })
    return rows


def plots(results: dict[str, dict[str, dict[str, float]]], out) -> list:
    """Throughput and loss against d (homogeneous), and the heterogeneous
    cases beside the paper, as PNG and SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    ds = [1, 2, 3, 4]
    labels = [l for l, _ in HOMOGENEOUS]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.4), dpi=110)
    for metric, ax, ylabel in (("tcp_thr", a1, "kb/s per flow"), ("tcp_good", a1, "kb/s per flow"),
                               ("udp_thr", a1, "kb/s per flow"), ("tcp_loss", a2, "packet loss (%)"),
                               ("udp_loss", a2, "packet loss (%)")):
        mean = [results[l][metric]["mean"] for l in labels]
        err = [results[l][metric]["ci95_high"] - results[l][metric]["mean"] for l in labels]
        line = ax.errorbar(ds, mean, yerr=[0 if math.isnan(e) else e for e in err], marker="o", capsize=4,
                           label=f"{COLUMN_NAMES[metric]} (netbraid)")
        ax.plot(ds, [midpoint(l, metric) for l in labels], linestyle="--", marker="x",
                color=line[0].get_color(), label=f"{COLUMN_NAMES[metric]} (paper)")
        ax.set_xlabel("number of parallel links d")
        ax.set_ylabel(ylabel)
        ax.set_xticks(ds)
        ax.grid(True, alpha=0.3)
    a1.set_title("homogeneous links: per-flow rates")
    a2.set_title("homogeneous links: loss")
    a1.legend(fontsize="x-small")
    a2.legend(fontsize="x-small")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(out / f"homogeneous.{ext}")
        made.append(out / f"homogeneous.{ext}")
    plt.close(fig)

    labels = [l for l, _ in HETEROGENEOUS]
    fig, ax = plt.subplots(figsize=(11, 4.4), dpi=110)
    width = 0.2
    for i, metric in enumerate(("tcp_thr", "tcp_good")):
        x = [k + (2 * i - 1.5) * width for k in range(len(labels))]
        mean = [results[l][metric]["mean"] for l in labels]
        err = [max(0.0, results[l][metric]["ci95_high"] - results[l][metric]["mean"]) if results[l][metric]["n"] > 1 else 0 for l in labels]
        ax.bar(x, mean, width, yerr=err, capsize=3, label=f"{COLUMN_NAMES[metric]} (netbraid)")
        ax.bar([v + width for v in x], [midpoint(l, metric) for l in labels], width, label=f"{COLUMN_NAMES[metric]} (paper)",
               alpha=0.55)
    ax.set_xticks(range(len(labels)), [f"{{{l}}} Mb/s" for l in labels])
    ax.set_ylabel("kb/s per TCP flow")
    ax.set_title("heterogeneous links (same total bandwidth): TCP throughput and goodput")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(out / f"heterogeneous.{ext}")
        made.append(out / f"heterogeneous.{ext}")
    plt.close(fig)
    return made
