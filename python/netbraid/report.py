"""`netbraid report DIR`: summary tables, plots and one HTML page from a
results directory."""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any, Iterable, Iterator

import pandas as pd

from .api import jain_fairness
from .experiment import ExperimentError
from .stats import clip_to_range, interval_text, mean_ci, summarize
from .units import parse_rate, parse_size, parse_time

FLOW_METRICS = {  # column → (label, scale)
    "goodput_bps": ("goodput (Mb/s)", 1e-6),
    "throughput_bps": ("throughput (Mb/s)", 1e-6),
    "loss_rate": ("loss (%)", 100.0),
    "retransmits": ("retransmissions", 1.0),
    "rtt_mean_s": ("mean RTT (ms)", 1e3),
    "srtt_mean_s": ("mean srtt (ms)", 1e3),
}


# ---- per-point aggregates ----------------------------------------------------------


def per_run(runs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """One row per run over its flows (a subflow's bytes are its flow's):
    aggregate goodput, mean loss, and Jain's fairness index per kind of flow
    with two or more (`jain_tcp`, `jain_udp`, …): a CBR stream does not
    compete for a fair share, so one index over all would mislead."""
    rows = []
    flows = runs[runs["subflow"].isna()] if "subflow" in runs else runs
    for run_id, g in flows.groupby("run_id", sort=True):
        goodputs = g["goodput_bps"].astype(float).tolist()
        row = {
            "run_id": run_id, **{a: g[a].iloc[0] for a in axes},
            "aggregate_goodput_bps": sum(goodputs),
            "mean_loss_rate": float(g["loss_rate"].mean()),
        }
        for kind, k in g.groupby("kind", sort=False):
            if len(k) > 1:
                row[f"jain_{kind}"] = jain_fairness(k["goodput_bps"].astype(float).tolist())
        rows.append(row)
    return pd.DataFrame(rows)


def jain_columns(pr: pd.DataFrame) -> list[str]:
    return [c for c in pr.columns if c.startswith("jain_")]


def identical_replications(runs: pd.DataFrame, axes: list[str]) -> bool:
    """True when some point has several replications that all gave the same
    result: the scenario has no random element, so its intervals mean nothing."""
    pr = per_run(runs, axes)
    groups = pr.groupby(axes, sort=False, dropna=False) if axes else [((), pr)]
    return any(len(g) > 1 and g["aggregate_goodput_bps"].nunique() == 1 for _, g in groups)


IDENTICAL_NOTE = ("note: replications gave identical results — the scenario has no random element. "
                  "Add random loss, or start_jitter on the flows, so that each seed gives another run.")


def _fmt_ci(c: dict[str, float], scale: float) -> str:
    if c["n"] == 0:
        return "–"
    if c["n"] < 2 or math.isnan(c["ci95_high"]):
        return f"{c['mean'] * scale:.4g}"
    return interval_text(c, scale, 4)


def point_summary(runs: pd.DataFrame, axes: list[str]) -> pd.DataFrame:
    """A readable table: per point, aggregate goodput, Jain and loss (mean ± 95 % CI)."""
    pr = per_run(runs, axes)
    rows = []
    groups = pr.groupby(axes, sort=False, dropna=False) if axes else [((), pr)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        rows.append({
            **{a: str(v) for a, v in zip(axes, key)},
            "aggregate goodput (Mb/s)": _fmt_ci(mean_ci(g["aggregate_goodput_bps"].tolist()), 1e-6),
            **{f"Jain ({c[5:]} flows)": _fmt_ci(clip_to_range(mean_ci(g[c].tolist()), c), 1.0)
               for c in jain_columns(pr)},
            "mean loss (%)": _fmt_ci(mean_ci(g["mean_loss_rate"].tolist()), 100.0),
            "n": len(g),
        })
    return pd.DataFrame(rows)


def flow_links(runs: pd.DataFrame, axes: list[str]) -> pd.DataFrame | None:
    """Per point × flow, the link directions the flow used ("a->b, b->a, …";
    several sets joined by " | " when replications differ, as ECMP may make
    them); None for results without links (emu, or made before they existed)."""
    if "links" not in runs or not runs["links"].notna().any():
        return None

    def joined(values: pd.Series) -> str:
        return " | ".join(dict.fromkeys(v for v in values if isinstance(v, str) and v))

    keys = axes + ["flow"]
    return runs.groupby(keys, sort=False, dropna=False)["links"].agg(joined).reset_index()


# ---- axis values as numbers ---------------------------------------------------------


def axis_numbers(values: list[Any]) -> tuple[list[float] | None, str]:
    """Numbers for plotting an axis, and the unit they are in (None: categorical)."""
    try:
        return [float(v) for v in values], ""
    except (TypeError, ValueError):
        pass
    for parse, scale, unit in ((parse_rate, 1e-6, "Mb/s"), (parse_time, 1e-6, "ms"), (parse_size, 1 / 1024, "KB")):
        try:
            return [parse(v) * scale for v in values], unit
        except (TypeError, ValueError):
            continue
    return None, ""


# ---- markdown ---------------------------------------------------------------------


def markdown_table(df: pd.DataFrame) -> str:
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join("" if (isinstance(v, float) and math.isnan(v)) else str(v) for v in row) + " |")
    return "\n".join(lines) + "\n"


# ---- plots ------------------------------------------------------------------------


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=110)
    ax.grid(True, alpha=0.3)
    return fig, ax


def _legend(ax) -> None:
    """Inside the axes when short; to the right of them when it would cover data."""
    handles, labels = ax.get_legend_handles_labels()
    if not labels:
        return
    if len(labels) <= 4:
        ax.legend(fontsize="small")
    else:
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        ax.figure.set_size_inches(10.5, 4.6)


#: The picture formats a plot is written in when a file name gives one.
PLOT_FORMATS = (".png", ".svg", ".pdf")


def _save(fig, out: Path, stem: str, suffixes: tuple[str, ...] = (".png", ".svg")) -> list[Path]:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    paths = [out / f"{stem}{s}" for s in suffixes]
    # the title travels with the picture: the HTML report's caption
    title = fig.axes[0].get_title() if fig.axes else stem
    for p in paths:
        fig.savefig(p, metadata={"Title": title})
    plt.close(fig)
    return paths


def _errorbar_lines(ax, table: pd.DataFrame, x_axis: str, group_cols: list[str], metric: str, scale: float,
                    label_prefix: str = "") -> None:
    groups = table.groupby(group_cols, sort=False, dropna=False) if group_cols else [((), table)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        xs_raw = g[x_axis].tolist()
        xs, _ = axis_numbers(xs_raw)
        positions = xs if xs is not None else list(range(len(xs_raw)))
        mean = g[f"{metric}_mean"] * scale
        low = (g[f"{metric}_mean"] - g[f"{metric}_ci95_low"]).fillna(0) * scale
        high = (g[f"{metric}_ci95_high"] - g[f"{metric}_mean"]).fillna(0) * scale
        label = label_prefix + ", ".join(f"{c}={v}" for c, v in zip(group_cols, key)) if group_cols else (label_prefix or None)
        ax.errorbar(positions, mean, yerr=[low, high], marker="o", capsize=4, label=label)
        if xs is None:
            ax.set_xticks(range(len(xs_raw)), [str(v) for v in xs_raw])


def sweep_plots(runs: pd.DataFrame, axes: list[str], out: Path) -> list[Path]:
    made: list[Path] = []
    if not axes:
        return made
    x_axis, others = axes[0], axes[1:]
    _, unit = axis_numbers(runs[x_axis].tolist())
    xlabel = f"{x_axis} ({unit})" if unit else x_axis
    pr = per_run(runs, axes)
    jains = jain_columns(pr)
    agg = summarize(pr, axes, ["aggregate_goodput_bps", *jains, "mean_loss_rate"])
    for metrics, ylabel, scale, stem in (
        (["aggregate_goodput_bps"], "aggregate goodput (Mb/s)", 1e-6, "aggregate_goodput"),
        (["mean_loss_rate"], "mean packet loss per flow (%)", 100.0, "loss"),
        (jains, "Jain's fairness index per kind of flow", 1.0, "fairness"),
    ):
        if not metrics:
            continue
        fig, ax = _figure()
        for metric in metrics:
            prefix = f"{metric[5:]} flows" + (": " if others else "") if metric.startswith("jain_") else ""
            _errorbar_lines(ax, agg, x_axis, others, metric, scale, label_prefix=prefix)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(f"{ylabel} against {x_axis}, mean and 95 % interval")
        if others or len(metrics) > 1 or jains == metrics:
            _legend(ax)
        made += _save(fig, out, stem)
    flows = list(dict.fromkeys(runs["flow"]))
    if len(flows) <= 8:
        per_flow = summarize(runs, axes + ["flow"], ["goodput_bps"])
        fig, ax = _figure()
        _errorbar_lines(ax, per_flow, x_axis, others + ["flow"], "goodput_bps", 1e-6)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("goodput (Mb/s)")
        ax.set_title(f"goodput per flow against {x_axis}, mean and 95 % interval")
        _legend(ax)
        made += _save(fig, out, "goodput_per_flow")
    return made


def cdf_plot(runs: pd.DataFrame, axes: list[str], out: Path) -> list[Path]:
    fig, ax = _figure()
    groups = runs.groupby(axes, sort=False, dropna=False) if axes else [("all runs", runs)]
    for i, (key, g) in enumerate(groups):
        if i == 8:
            break
        x = sorted(g["goodput_bps"].astype(float) * 1e-6)
        y = [(k + 1) / len(x) for k in range(len(x))]
        key = key if isinstance(key, tuple) else (key,)
        # (an axis another part of the results sweeps is empty here: left out)
        label = ", ".join(f"{a}={v}" for a, v in zip(axes, key) if not pd.isna(v)) if axes else "all runs"
        ax.step(x, y, where="post", label=label)
    ax.set_xlabel("goodput per flow and run (Mb/s)")
    ax.set_ylabel("fraction of flows × runs ≤ x")
    ax.set_title(f"distribution of per-flow goodput over {runs['run_id'].nunique()} runs"
                 + (f", per point of {', '.join(axes)}" if axes else ""))
    ax.set_ylim(0, 1.02)
    _legend(ax)
    return _save(fig, out, "goodput_cdf")


def _first_runs(runs: pd.DataFrame, axes: list[str]) -> Iterator[tuple[str, str]]:
    """The first replication of up to four points: run id, and the words a
    plot title gives it ("(links.1.rate=5Mbps, seed 3)")."""
    first = runs[runs["rep"] == runs["rep"].min()].drop_duplicates("run_id").head(4)
    # records, not itertuples: axis names contain dots
    for row in first.to_dict("records"):
        where = ", ".join(f"{a}={row[a]}" for a in axes)
        yield row["run_id"], f" ({where}, seed {row['seed']})" if where else f" (seed {row['seed']})"


def _over_time(lines: Iterable[tuple[str, Any, Any]], ylabel: str, title: str, ncol: int, out: Path,
               stem: str, suffixes: tuple[str, ...] = (".png", ".svg")) -> list[Path]:
    """One plot of (label, time, value) lines, in each of `suffixes`' formats."""
    fig, ax = _figure()
    for label, x, y in lines:
        ax.plot(x, y, label=label, linewidth=1.2)
    ax.set_xlabel("time (s)")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small", ncol=ncol, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.set_size_inches(9, 4.4)  # shown at its size (990 px): the legend beside the axes, text legible
    return _save(fig, out, stem, suffixes)


def series_plots(series: pd.DataFrame, runs: pd.DataFrame, axes: list[str], out: Path) -> list[Path]:
    made: list[Path] = []
    if series.empty:
        return made
    for i, (run_id, label) in enumerate(_first_runs(runs, axes)):
        s = series[series["run_id"] == run_id]
        flows = list(dict.fromkeys(s["flow"]))[:10]
        for column, ylabel, scale, stem in (("goodput_bps", "goodput (Mb/s)", 1e-6, "series_goodput"),
                                            ("cwnd_bytes", "congestion window (KB)", 1 / 1024, "series_cwnd")):
            lines = [(name, f["time_s"], f[column].astype(float) * scale)
                     for name in flows for f in [s[s["flow"] == name]] if f[column].notna().any()]  # UDP: no cwnd
            made += _over_time(lines, ylabel, f"{ylabel} over time{label}", 2, out, f"{stem}_{i}")
    return made


def queue_plots(link_series: pd.DataFrame, runs: pd.DataFrame, axes: list[str], out: Path) -> list[Path]:
    """Queue length over time of the (up to 6) link directions whose queue
    was longest, in the first replication of up to 4 points."""
    made: list[Path] = []
    if link_series.empty:
        return made
    for i, (run_id, label) in enumerate(_first_runs(runs, axes)):
        s = link_series[link_series["run_id"] == run_id]
        if s.empty or not (s["queue_packets"] > 0).any():
            continue
        busiest = s.groupby("link")["queue_packets"].max().sort_values(ascending=False).head(6).index
        lines = [(name, q["time_s"], q["queue_packets"]) for name in busiest for q in [s[s["link"] == name]]]
        made += _over_time(lines, "queue (packets)", f"queue length over time{label}", 1, out, f"series_queue_{i}")
    return made


# ---- the report -------------------------------------------------------------------


def load_results(directory: Path) -> tuple[Any, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A results directory (`nb.load`: rebuilt from the journal if the sweep
    was interrupted before the tables were written), and its flow rows, flow
    series and subflow rows kept apart (summed together they would count a
    flow's bytes twice)."""
    from .results import load

    r = load(directory)
    runs, series = r.flows, r.series
    subflows = runs[runs["subflow"].notna()] if "subflow" in runs else runs.iloc[0:0]
    if "subflow" in runs:
        runs = runs[runs["subflow"].isna()]
    if "subflow" in series:
        series = series[series["subflow"].isna()]
    if runs.empty:
        raise ExperimentError(f"{directory} holds no finished runs yet")
    return r, runs, series, subflows


def make_report(directory: Path) -> Path:
    results, runs, series, subflows = load_results(directory)
    axes = results.axes
    manifest = dict(results.manifest)
    if "fingerprint" not in manifest and (directory / "scenario.json").exists():  # a single run's directory
        manifest["fingerprint"] = {"scenario": json.loads((directory / "scenario.json").read_text())}
    out = directory / "report"
    out.mkdir(exist_ok=True)
    flow_table = summarize(runs, axes + ["flow"], list(FLOW_METRICS))
    links = flow_links(runs, axes)
    if links is not None:
        flow_table = flow_table.merge(links, on=axes + ["flow"], how="left")
    flow_table.to_csv(out / "summary_flows.csv", index=False)
    points = point_summary(runs, axes)
    points.to_csv(out / "summary_points.csv", index=False)
    readable = flow_table[axes + ["flow", "n"]].copy()
    for m, (label, scale) in FLOW_METRICS.items():
        readable[label] = [
            _fmt_ci({"mean": r[f"{m}_mean"], "ci95_low": r[f"{m}_ci95_low"], "ci95_high": r[f"{m}_ci95_high"],
                     "n": r[f"{m}_n"]}, scale)
            for _, r in flow_table.iterrows()
        ]
    if links is not None:
        readable["links"] = flow_table["links"].fillna("").tolist()
    md = ["# netbraid report", "", f"Results: `{directory}` — {runs['run_id'].nunique()} runs"]
    if axes:
        md.append(f"swept: {', '.join(axes)}")
    if identical_replications(runs, axes):
        md += ["", f"**{IDENTICAL_NOTE}**"]
    sub_readable = subflow_table(subflows, axes, out)
    md += ["", "## Per point (mean ± 95 % interval over replications)", "", markdown_table(points),
           "## Per flow", "", markdown_table(readable)]
    if sub_readable is not None:
        md += ["## Per subflow (path)", "", markdown_table(sub_readable)]
    link_readable = link_table(results.links, axes, out)
    if link_readable is not None:
        md += ["## Per link direction (busy or lossy ones)", "", markdown_table(link_readable)]
    (out / "summary.md").write_text("\n".join(md))
    images = (sweep_plots(runs, axes, out) + cdf_plot(runs, axes, out) + series_plots(series, runs, axes, out)
              + queue_plots(results.link_series, runs, axes, out))
    (out / "report.html").write_text(
        _html(directory, runs, axes, points, readable, [p for p in images if p.suffix == ".png"], sub_readable,
              link_readable, manifest))
    return out


LINK_LABELS = {
    "utilisation": ("utilisation (%)", 100.0),
    "queue_drops": ("queue drops", 1.0),
    "loss_drops": ("loss drops", 1.0),
    "tx_packets": ("packets sent", 1.0),
    "queue_delay_s": ("queue delay (ms)", 1e3),
}


def link_table(links: pd.DataFrame, axes: list[str], out: Path) -> pd.DataFrame | None:
    """Per point × link direction, mean ± 95 % interval of utilisation and
    drops (all in summary_links.csv; in the report only the directions that
    were at least 10 % busy or dropped anything)."""
    if links.empty:
        return None
    table = summarize(links, axes + ["link"], list(LINK_LABELS))
    table.to_csv(out / "summary_links.csv", index=False)
    shown = table[(table["utilisation_mean"] >= 0.1) | (table["queue_drops_mean"] > 0) | (table["loss_drops_mean"] > 0)]
    if shown.empty:
        return None
    readable = shown[axes + ["link", "n"]].copy()
    if "link_name" in links:  # the scenario's name for the link (what --set links.NAME takes)
        named = links.drop_duplicates("link").set_index("link")["link_name"]
        readable.insert(len(axes) + 1, "named", readable["link"].map(named).fillna(""))
    for m, (label, scale) in LINK_LABELS.items():
        readable[label] = [_fmt_ci({"mean": r[f"{m}_mean"], "ci95_low": r[f"{m}_ci95_low"],
                                    "ci95_high": r[f"{m}_ci95_high"], "n": r[f"{m}_n"]}, scale)
                           for _, r in shown.iterrows()]
    return readable


# A subflow's own metrics (its share of the flow's goodput beside them).
SUBFLOW_METRICS = {
    "goodput_bps": ("goodput (Mb/s)", 1e-6),
    "throughput_bps": ("throughput (Mb/s)", 1e-6),
    "share": ("share (%)", 100.0),
    "loss_rate": ("loss (%)", 100.0),
    "retransmits": ("retransmissions", 1.0),
    "rtt_mean_s": ("mean RTT (ms)", 1e3),
    "srtt_mean_s": ("mean srtt (ms)", 1e3),
}


def subflow_table(subflows: pd.DataFrame, axes: list[str], out: Path) -> pd.DataFrame | None:
    """Per point × flow × subflow, mean ± 95 % interval of each metric the
    subflows have (summary_subflows.csv); None when no flow has subflows."""
    if subflows.empty:
        return None
    metrics = [m for m in SUBFLOW_METRICS if m in subflows and subflows[m].notna().any()]
    table = summarize(subflows, axes + ["flow", "subflow"], metrics)
    table.to_csv(out / "summary_subflows.csv", index=False)
    readable = table[axes + ["flow", "subflow", "n"]].copy()
    for m in metrics:
        label, scale = SUBFLOW_METRICS[m]
        readable[label] = [
            _fmt_ci({"mean": r[f"{m}_mean"], "ci95_low": r[f"{m}_ci95_low"], "ci95_high": r[f"{m}_ci95_high"],
                     "n": r[f"{m}_n"]}, scale)
            for _, r in table.iterrows()
        ]
    return readable


def _html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in df.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _caption(png: Path) -> str:
    """The plot's title, which _save wrote into the PNG."""
    from PIL import Image  # matplotlib's own dependency

    with Image.open(png) as im:
        return im.info.get("Title") or png.stem.replace("_", " ")


def _provenance(manifest: dict[str, Any], runs: pd.DataFrame) -> str:
    """What was run: the command, netbraid's version, when, the seeds, and the scenario as TOML."""
    from shlex import join

    from .schema import Scenario

    seeds = sorted({int(x) for x in runs["seed"]})
    seed_text = f"{seeds[0]}–{seeds[-1]}" if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)) \
        else ", ".join(map(str, seeds))
    rows = [("command", join(manifest["command"]) if isinstance(manifest.get("command"), list) else manifest.get("command")),
            ("netbraid", manifest.get("netbraid_version")), ("written", manifest.get("created")),
            ("seeds", f"{seed_text} ({manifest['seeds']})" if manifest.get("seeds") else seed_text)]
    items = "".join(f"<tr><th>{k}</th><td><code>{html.escape(str(v))}</code></td></tr>" for k, v in rows if v)
    scenario = (manifest.get("fingerprint") or {}).get("scenario")
    toml = ""
    if scenario:
        try:
            toml = Scenario.model_validate(scenario).to_toml()
        except ValueError:
            toml = ""
    shown = (f"<details><summary>the scenario (TOML; <code>netbraid run</code> reads it)</summary>"
             f"<pre>{html.escape(toml)}</pre></details>") if toml else ""
    return f'<h2>What was run</h2><table class="about">{items}</table>{shown}'


def _html(directory: Path, runs: pd.DataFrame, axes: list[str], points: pd.DataFrame, flows: pd.DataFrame,
          images: list[Path], subflows: pd.DataFrame | None = None, links: pd.DataFrame | None = None,
          manifest: dict[str, Any] | None = None) -> str:
    manifest = manifest or {}
    figs = "".join(
        f'<figure><img alt="{caption}" src="data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}">'
        f"<figcaption>{caption}</figcaption></figure>"
        for p in images for caption in [html.escape(_caption(p))]
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>netbraid report: {html.escape(str(directory))}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }}
th {{ background: #f3f3f3; }}
figure {{ display: inline-block; margin: 0.5em; vertical-align: top; }} img {{ max-width: 100%; }}
figcaption {{ text-align: center; font-size: 0.9em; color: #444; }}
table.about th, table.about td {{ text-align: left; }}
pre {{ background: #f7f7f7; padding: 0.8em; overflow-x: auto; }}
</style></head><body>
<h1>netbraid report</h1>
<p>{runs['run_id'].nunique()} runs from <code>{html.escape(str(directory))}</code>{'; swept: ' + html.escape(', '.join(axes)) if axes else ''}.
Intervals are 95 % Student-t intervals over replications, clipped to what each quantity can be (≥ 0; ≤ 100 % for rates);
each cell counts the runs that have its metric.</p>
{_provenance(manifest, runs)}
<h2>Per point</h2>{_html_table(points)}
<h2>Per flow</h2>{_html_table(flows)}
{'<h2>Per subflow (path)</h2>' + _html_table(subflows) if subflows is not None else ''}
{'<h2>Per link direction</h2><p>Directions at least 10 % busy or with drops; every direction is in report/summary_links.csv.</p>' + _html_table(links) if links is not None else ''}
<h2>Plots</h2>{figs}
</body></html>
"""
