"""The `netbraid` command."""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .api import jain_fairness, run_resolved, sweep_axes
from .errors import ScenarioError
from .experiment import (ExperimentError, Interrupted, execute, execute_tables, make_plan, parse_axis,
                         replicate_until)
from .lifetime import install_stop_handlers, stop_exit_code
from .stats import clip_to_range, interval_text, mean_ci
from .tidy import paths_of
from .resolve import PCAP_ON_EMU, resolve
from .results_dir import DirectoryLock, check_run_directory, write_run
from .scenario_io import load_scenario
from .emu.netns import EmuError
from .emu.platform import EmuUnavailable
from .units import format_rate, parse_rate

EMU_FAILURES = (EmuError, EmuUnavailable)

def _flags_without_metavar() -> None:
    """typer's rich help writes `<bool>` beside every on/off flag (as if it
    took a value); a flag takes none, so show none, as click and argparse do."""
    from typer.core import TyperOption

    shown = TyperOption.display_type_rich

    def display_type_rich(self, ctx):
        return None if self.is_flag else shown(self, ctx)

    TyperOption.display_type_rich = display_type_rich


_flags_without_metavar()

app = typer.Typer(
    help="netbraid: throughput, loss and fairness of (multipath) transports over the paths you describe.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(asked: bool) -> None:
    if asked:
        from . import __version__

        print(f"netbraid {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: bool = typer.Option(False, "--version", "-V", callback=_print_version, is_eager=True,
                                 help="Print netbraid's version and exit."),
) -> None:
    # the app's help is Typer(help=…); --version acts in its callback
    del version


# Off a terminal rich assumes 80 columns, which folds the flow table; use more.
out_console = Console(width=None if sys.stdout.isatty() else 130)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 130)

SET_HELP = "Change a scenario field: PATH=VALUE, e.g. links.0.rate=20Mbps or flows.bulk.cc=cubic (repeatable)."


def fail(e: Exception, code: int = 2) -> None:
    # The message quotes user input verbatim: never read it as rich markup.
    err_console.print(Text.assemble(("error:", "bold red"), " ", str(e)), highlight=False, soft_wrap=True)
    raise typer.Exit(code)


@contextmanager
def errors_reported(interrupted: str | None = "interrupted",
                    os_error: Callable[[OSError], Exception] | None = None) -> Iterator[None]:
    """Turn the failures a command can meet into an error line and an exit
    status: 2 for the user's mistakes, 3 when emu cannot run, 130 on Ctrl-C
    and 143 on SIGTERM (unless `interrupted` is None), and `os_error(e)` for
    I/O errors."""
    try:
        yield
    except Interrupted as e:
        fail(e, code=stop_exit_code())
    except (ScenarioError, ExperimentError) as e:
        fail(e)
    except EMU_FAILURES as e:
        fail(e, code=3)
    except KeyboardInterrupt:
        if interrupted is None:
            raise
        fail(ScenarioError(interrupted), code=stop_exit_code())
    except MemoryError:
        fail(ScenarioError("this machine ran out of memory for the run; make the scenario smaller (fewer nodes, "
                           "flows or samples) or run fewer at once (--workers)"))
    except OSError as e:
        if os_error is None:
            raise
        fail(os_error(e))


def warn_if_large(s, parallel: int = 1) -> None:
    """Say so before a run that will take more than half the free memory,
    or minutes for the datagrams its UDP sources send."""
    from . import footprint

    for text in (footprint.warning(footprint.estimate(s), parallel), footprint.udp_work_warning(s)):
        if text:
            err_console.print(text, highlight=False)


def prepare_out(out: Optional[Path]) -> None:
    """Make sure --out can be written before anything runs."""
    if out is None:
        return
    if out.exists() and not out.is_dir():
        fail(ScenarioError(f"--out: {out} exists and is not a directory"))
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        fail(ScenarioError(f"--out: cannot create {out}: {e.strerror or e}"))


MAX_ROWS = 50  # flows shown in a table; the rest are in --json / --out


@app.command()
def run(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    set_: list[str] = typer.Option([], "--set", metavar="PATH=VALUE", help=SET_HELP),
    seed: Optional[int] = typer.Option(None, help="Random seed (overrides the scenario's)."),
    out: Optional[Path] = typer.Option(None, help="Write results, the resolved scenario and the command here."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document instead of tables."),
    pcap: list[str] = typer.Option([], metavar="FROM->TO", help="Capture a link direction, written FROM->TO (quote it), as pcap (repeatable)."),
    backend: str = typer.Option("sim", help="Backend: sim (the simulator) or emu (real Linux stacks in namespaces; root)."),
    reps: int = typer.Option(1, help="Replications (seeds SEED, SEED+1, …); metrics become mean and 95 % interval."),
    until: Optional[float] = typer.Option(None, help="Sequential mode: add replications until every flow's goodput interval is within ±UNTIL × mean (e.g. 0.05)."),
    max_reps: int = typer.Option(100, help="Most replications in sequential mode."),
    workers: Optional[int] = typer.Option(None, help="Parallel runs (default: every core)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    resume: bool = typer.Option(False, help="With --reps and --out: continue the replications already in --out."),
    overwrite: bool = typer.Option(False, help="Replace the results already in --out (only the files netbraid wrote)."),
) -> None:
    """Run one scenario and print per-flow results."""
    if backend not in ("sim", "emu"):
        fail(ScenarioError(f"--backend: {backend!r} is not a backend (allowed: sim, emu)"))
    if backend == "emu" and pcap:
        fail(ScenarioError(PCAP_ON_EMU))
    if seed is not None and not 0 <= seed < 2**64:
        fail(ScenarioError(f"--seed: {seed} is out of range (allowed: 0 to 2^64-1)"))
    if reps < 1 or max_reps < 1:
        fail(ScenarioError("--reps and --max-reps: at least 1"))
    if workers is not None and workers < 1:
        fail(ScenarioError(f"--workers: {workers} is not allowed (at least 1)"))
    if until is not None and not until > 0:
        fail(ScenarioError(f"--until: {until} is not allowed (a positive fraction of the mean, e.g. 0.05)"))
    if resume and (out is None or (reps == 1 and until is None)):
        fail(ScenarioError("--resume: continues replications in a results directory; use it with --reps N --out DIR"))
    if reps > 1 or until is not None:
        if pcap:
            fail(ScenarioError("--pcap: captures one run; use it without --reps"))
        return run_replications(scenario, set_, seed, out, json_out, reps, until, max_reps, workers, quiet, backend,
                                resume, overwrite)
    prepare_out(out)
    with errors_reported("interrupted: no results were written",
                         lambda e: ScenarioError(f"cannot write {e.filename or 'output'}: {e.strerror or e}")), \
            (DirectoryLock(out) if out is not None else nullcontext()):
        s = load_scenario(scenario, set_)
        warn_if_large(s)
        scenario_input = s.model_dump(mode="json", by_alias=True, exclude_none=True)
        if out is not None:
            check_run_directory(out, scenario_input, overwrite)
        pcap_dir = out if out is not None else Path(".")
        if pcap:
            pcap_dir.mkdir(parents=True, exist_ok=True)
        captures = [(d, str(pcap_dir / f"{d.replace('->', '_to_')}.pcap")) for d in pcap]
        resolved = resolve(s, seed=seed, pcap=captures, backend=backend)
        result = run_resolved(resolved, backend)
        if out is not None:
            try:
                write_run(out, result, resolved, scenario_input)
            except OSError as e:
                fail(ScenarioError(f"--out: cannot write results to {out}: {e.strerror or e}"))
    if json_out:
        doc = {k: v for k, v in result.items() if k != "series"}
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    print_result(result)
    for _, path in captures:
        out_console.print(f"pcap written: {path}")
    if out is not None:
        out_console.print(f"results written to {out}/")


def run_replications(scenario: Path, set_: list[str], seed: Optional[int], out: Optional[Path], json_out: bool,
                     reps: int, until: Optional[float], max_reps: int, workers: Optional[int], quiet: bool,
                     backend: str = "sim", resume: bool = False, overwrite: bool = False) -> None:
    if out is not None and out.exists() and not out.is_dir():
        fail(ScenarioError(f"--out: {out} exists and is not a directory"))
    with errors_reported(os_error=lambda e: ExperimentError(f"--out: cannot write to {out}: {e.strerror or e}")):
        s = load_scenario(scenario, set_)
        warn_if_large(s, min(reps, workers or os.cpu_count() or 1))
        if until is None:
            plan = make_plan(s, reps=reps, seed=seed, backend=backend)
            tables = execute_tables(plan, out, workers=workers, progress=not quiet and not json_out,
                                    kind="replications", resume=resume, overwrite=overwrite,
                                    label=f"{backend} runs" + (" (real time)" if backend == "emu" else ""))
            runs, links = tables.runs, tables.links
        else:
            def report(done: int, widest: float) -> None:
                if not quiet and not json_out:
                    err_console.print(f"{done} replications: widest goodput interval ±{100 * widest:.1f} % of the mean")

            seq = replicate_until(s, until, max_reps=max_reps, reps=reps, seed=seed, workers=workers, on_batch=report,
                                  backend=backend, out=out, overwrite=overwrite, resume=resume)
            runs, links = seq.tables.runs, seq.tables.links
            if not seq.reached:
                err_console.print(f"warning: --until {until:g} not reached: after {runs['run_id'].nunique()} "
                                  f"replications (--max-reps) the "
                                  f"widest goodput interval is ±{100 * seq.widest:.1f} % of the mean"
                                  + (f" (flow {seq.widest_flow})" if seq.widest_flow else "")
                                  + "; the intervals below are wider than asked (raise --max-reps)")
    summary = replication_summary(runs, links)
    if until is not None:
        summary["until"] = {"target": until, "reached": seq.reached,
                            "widest": seq.widest if math.isfinite(seq.widest) else None,
                            "replications": int(runs["run_id"].nunique())}
    if json_out:
        sys.stdout.write(json_text(summary))
        return
    print_replications(summary, s.name)
    from .report import IDENTICAL_NOTE, identical_replications

    if identical_replications(runs, []):
        err_console.print(IDENTICAL_NOTE)
    if out is not None:
        out_console.print(f"results written to {out}/")


REPORTED = ["throughput_bps", "goodput_bps", "loss_rate", "retransmits", "timeouts", "rtt_mean_s", "srtt_mean_s",
            "cwnd_mean_bytes"]


def replication_summary(runs, links=None) -> dict[str, Any]:
    """The --json document with --reps: each metric as {mean, ci95_low,
    ci95_high, n}; Jain's index per kind of flow; with `links` (the link
    table), each link direction's utilisation and drops."""
    flows = []
    subflow_rows = runs[runs["subflow"].notna()]
    for name, g in runs[runs["subflow"].isna()].groupby("flow", sort=False):
        entry: dict[str, Any] = {"name": name, "kind": g["kind"].iloc[0], "src": g["src"].iloc[0], "dst": g["dst"].iloc[0]}
        for m in REPORTED:
            entry[m] = clip_to_range(mean_ci(g[m].tolist()), m)
        if "links" in g:
            entry["links"] = _union_links(g["links"])
        subs = subflow_rows[subflow_rows["flow"] == name]
        if len(subs):
            key = "legs" if "from" in subs and subs["from"].notna().any() else "subflows"
            entry[key] = []
            for sub, sg in subs.groupby("subflow", sort=False):
                se: dict[str, Any] = {"name": sub}
                for m in [*REPORTED, "share"]:
                    if m in sg and sg[m].notna().any():
                        se[m] = clip_to_range(mean_ci(sg[m].dropna().tolist()), m)
                se["bytes"] = mean_ci(sg["bytes_delivered"].tolist())
                if "links" in sg:
                    se["links"] = _union_links(sg["links"])
                for k in ("from", "to", "src_addr", "dst_addr"):
                    if k in sg and sg[k].notna().any():
                        se[k] = sg[k].dropna().iloc[0]
                entry[key].append(se)
        flows.append(entry)
    per_run = runs.drop_duplicates("run_id")
    # Jain's index per kind of flow in each run, then over the runs
    indices: dict[str, list[float]] = {}
    shape: dict[str, dict[str, Any]] = {}
    for _, g in runs[runs["subflow"].isna()].groupby("run_id", sort=False):
        for kind, j in jain_by_kind(g[["kind", "goodput_bps"]].to_dict("records")).items():
            indices.setdefault(kind, []).append(j["index"])
            shape[kind] = j
    jain = {k: {**shape[k], "index": clip_to_range(mean_ci(v), "jain")} for k, v in indices.items()}
    doc = {
        "reps": int(per_run.shape[0]),
        "seeds": sorted(int(x) for x in per_run["seed"]),
        "flows": flows,
        "jain": jain,
        "events": mean_ci(per_run["events"].tolist()),
        "wall_s": mean_ci(per_run["wall_s"].tolist()),
    }
    if links is not None and len(links):
        doc["links"] = [{"name": name, "link_name": g["link_name"].iloc[0] if "link_name" in g else None,
                         "from": g["from"].iloc[0], "to": g["to"].iloc[0], "rate_bps": int(g["rate_bps"].iloc[0]),
                         **{m: clip_to_range(mean_ci(g[m].tolist()), m) for m in ("utilisation", "queue_drops",
                                                                                  "loss_drops", "queue_delay_s")}}
                        for name, g in links.groupby("link", sort=False)]
    return doc


def _union_links(column) -> list[str]:
    """The link directions used in any replication, in order of first use."""
    names: dict[str, None] = {}
    for cell in column:
        if isinstance(cell, str) and cell:
            names.update(dict.fromkeys(cell.split(", ")))
    return list(names)


def _pm(c: dict[str, float], scale: float = 1.0, digits: int = 3) -> str:
    if c["n"] == 0 or c["mean"] != c["mean"]:
        return "–"
    if c["n"] < 2:
        return f"{c['mean'] * scale:.{digits}g}"
    return interval_text(c, scale, digits)


def print_replications(summary: dict[str, Any], name: str) -> None:
    title = f"{escape(name)}: mean ± 95 % interval over {summary['reps']} replications"
    flows = summary["flows"][:MAX_ROWS]
    print_flow_table(title, [{**f, "paths": f.get("subflows") or f.get("legs") or []} for f in flows])
    if len(summary["flows"]) > MAX_ROWS:
        out_console.print(f"… and {len(summary['flows']) - MAX_ROWS} more flows (all of them: --json or --out)")
    print_links([(f["name"], f.get("links"), f["src"], f["dst"]) for f in flows])
    if summary.get("links"):
        print_busy_links(summary["links"])
    line = fairness_text(summary.get("jain") or {})
    if line:
        out_console.print(line.removeprefix(", "))


@app.command()
def sweep(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    grid: list[str] = typer.Option([], metavar="PATH=V1,V2,…", help="An axis: PATH=v1,v2,… (repeatable; axes are crossed)."),
    zip_: list[str] = typer.Option([], "--zip", metavar="PATH=V1,V2,…", help="A zipped axis: PATH=v1,v2,… (all --zip axes advance together)."),
    reps: Optional[int] = typer.Option(None, help="Replications per point (default: the scenario's [sweep] reps, else 1)."),
    out: Path = typer.Option(..., help="Results directory (written as runs finish)."),
    resume: bool = typer.Option(False, help="Continue an interrupted sweep in --out."),
    overwrite: bool = typer.Option(False, help="Replace the results already in --out (only the files netbraid wrote)."),
    set_: list[str] = typer.Option([], "--set", metavar="PATH=VALUE", help=SET_HELP),
    seed: Optional[int] = typer.Option(None, help="Base seed (replication r uses SEED + r)."),
    workers: Optional[int] = typer.Option(None, help="Parallel runs on this machine (default: every core)."),
    dask: Optional[str] = typer.Option(None, help="Run on this Dask scheduler (e.g. tcp://10.0.0.1:8786) instead."),
    backend: str = typer.Option("sim", help="Backend: sim or emu (emu runs one at a time)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
) -> None:
    """Run a scenario over a grid of parameter values, with replications."""
    if backend not in ("sim", "emu"):
        fail(ScenarioError(f"--backend: {backend!r} is not a backend (allowed: sim, emu)"))
    if workers is not None and workers < 1:
        fail(ScenarioError(f"--workers: {workers} is not allowed (at least 1)"))
    if out.exists() and not out.is_dir():
        fail(ScenarioError(f"--out: {out} exists and is not a directory"))
    # Ctrl-C is not caught: the journal already holds every finished run (--resume)
    with errors_reported(interrupted=None, os_error=lambda e: ExperimentError(
            f"--out: cannot write {out}: {e.strerror or e}" + (f" ({e.filename})" if e.filename else ""))):
        s = load_scenario(scenario, set_)
        warn_if_large(s, 1 if backend == "emu" else workers or os.cpu_count() or 1)
        g, z = _axes_given(grid, "--grid"), _axes_given(zip_, "--zip")
        grid_axes, zip_axes = sweep_axes(s, g, z)
        n = reps if reps is not None else (s.sweep.reps if s.sweep and s.sweep.reps else 1)
        plan = make_plan(s, grid_axes, zip_axes, reps=n, seed=seed, backend=backend)
        if not quiet:
            err_console.print(f"{len(plan.points)} points × {n} replications = {len(plan.points) * n} runs → {out}/")
        runs, _ = execute(plan, out, resume=resume, workers=workers, dask=dask, progress=not quiet, overwrite=overwrite,
                          label=f"sweep of {s.name}")
    from .report import IDENTICAL_NOTE, identical_replications, point_summary

    table = point_summary(runs, plan.axes)
    t = Table(title=f"{escape(s.name)}: {len(plan.points)} points × {n} replications (mean ± 95 % interval)")
    for col in table.columns:
        t.add_column(escape(str(col)), justify="right")
    for row in list(table.itertuples(index=False))[:MAX_ROWS]:
        t.add_row(*[escape(str(v)) for v in row])
    out_console.print(t)
    if identical_replications(runs, plan.axes):
        err_console.print(IDENTICAL_NOTE)
    out_console.print(f"results in {out}/ — tables and plots: netbraid report {out}")


def _axes_given(texts: list[str], option: str) -> dict[str, list[Any]]:
    """`--grid`/`--zip` options as {path: values}; a path given twice is
    refused rather than the first silently replaced."""
    axes: dict[str, list[Any]] = {}
    for a in (parse_axis(x, option) for x in texts):
        if a.path in axes:
            raise ScenarioError(f"{option}: {a.path} is given twice; give its values once, comma-separated "
                                f"(e.g. {option} {a.path}=V1,V2)")
        axes[a.path] = list(a.values)
    return axes


@app.command()
def report(directory: Path = typer.Argument(..., help="A results directory (run --out, run --reps --out, sweep, compare --out).")) -> None:
    """Summary tables (Markdown, CSV), plots (PNG, SVG) and an HTML page from a results directory."""
    from .report import make_report

    with errors_reported(os_error=lambda e: ExperimentError(
            f"cannot write the report in {directory / 'report'}: {e.strerror or e} ({e.filename or directory})")):
        out = make_report(directory)
    out_console.print(f"report written to {out}/ (open {out / 'report.html'})")


SERIES_WHAT = {"goodput": ("goodput_bps", "goodput (Mb/s)", 1e-6), "throughput": ("throughput_bps", "throughput (Mb/s)", 1e-6),
               "cwnd": ("cwnd_bytes", "congestion window (KB)", 1 / 1024), "rtt": ("srtt_s", "smoothed RTT (ms)", 1e3),
               "queue": ("queue_packets", "queue (packets)", 1)}


@app.command()
def plot(
    directory: Path = typer.Argument(..., help="A results directory whose runs have time series (measure.interval)."),
    what: str = typer.Option("goodput", help=f"What to plot over time: {', '.join(SERIES_WHAT)}."),
    flow: list[str] = typer.Option([], help="Only this flow (repeatable; its subflows or legs too). Default: every flow."),
    link: list[str] = typer.Option([], metavar="FROM->TO", help="For --what queue: only this link direction (repeatable)."),
    run_id: Optional[str] = typer.Option(None, "--run", help="Which run (its run_id; default: the first)."),
    out: Optional[Path] = typer.Option(None, help="The file to write, .png, .svg or .pdf (without a suffix: "
                                       "both .png and .svg; default: DIRECTORY/plots/<what>-<run>.png and .svg)."),
) -> None:
    """Plot one run's time series (goodput, throughput, cwnd, RTT per flow and subflow, or queue lengths)."""
    from .report import PLOT_FORMATS, _over_time
    from .results import load

    if out is not None and out.suffix and out.suffix.lower() not in PLOT_FORMATS:
        fail(ScenarioError(f"--out: {out.name!r} names no picture format netbraid writes (allowed: "
                           f"{', '.join(PLOT_FORMATS)}, e.g. --out {out.with_suffix('.png').name})"))
    if what not in SERIES_WHAT:
        fail(ScenarioError(f"--what: {what!r} is not one of {', '.join(SERIES_WHAT)}"))
    column, ylabel, scale = SERIES_WHAT[what]
    if link and what != "queue":
        fail(ScenarioError("--link: picks link directions for --what queue; flows are picked with --flow"))
    if flow and what == "queue":
        fail(ScenarioError("--flow: picks flows; a queue belongs to a link direction: --link FROM->TO"))
    with errors_reported():
        r = load(directory)
        table = r.link_series if what == "queue" else r.series
        if table.empty or column not in table:
            raise ExperimentError(f"{directory} has no time series of {what}; run the scenario with "
                                  "--set measure.interval=100ms (or [measure] interval)")
        runs = list(dict.fromkeys(table["run_id"]))
        chosen = run_id or runs[0]
        if chosen not in runs:
            raise ExperimentError(f"--run: {chosen!r} is not a run of {directory}; its runs: {', '.join(runs[:10])}"
                                  + (" …" if len(runs) > 10 else ""))
        rows = table[table["run_id"] == chosen]
        key = "link" if what == "queue" else "flow"
        wanted = link if what == "queue" else flow
        have = list(dict.fromkeys(rows[key]))
        unknown = [w for w in wanted if w not in have]
        if unknown:
            raise ExperimentError(f"--{key}: no {key} {', '.join(map(repr, unknown))} in run {chosen}; "
                                  f"its {key}s: {', '.join(have[:20])}")
        lines = []
        for name in wanted or have:
            mine = rows[rows[key] == name]
            parts = [(name, mine[mine["subflow"].isna()])] if "subflow" in mine else [(name, mine)]
            if "subflow" in mine:
                parts += [(f"{name} └ {sub}", g) for sub, g in mine[mine["subflow"].notna()].groupby("subflow", sort=False)]
            lines += [(label, g["time_s"], g[column].astype(float) * scale) for label, g in parts if g[column].notna().any()]
        if not lines:
            raise ExperimentError(f"run {chosen} has no {what} samples for {', '.join(wanted or have)}")
        seed = rows["seed"].iloc[0] if "seed" in rows else None
        target = out or directory / "plots" / f"{what}-{chosen.replace('/', '_')}.png"
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            made = _over_time(lines, ylabel, f"{ylabel} over time (run {chosen}, seed {seed})", 1, target.parent,
                              target.stem, (out.suffix.lower(),) if out is not None and out.suffix else (".png", ".svg"))
        except OSError as e:
            where = f" ({e.filename})" if e.filename and str(e.filename) != str(target) else ""
            raise ScenarioError(f"--out: cannot write {target}: {e.strerror or e}{where}" if out is not None else
                                f"cannot write the plot {target}: {e.strerror or e}{where}; choose where with --out") from e
    out_console.print(f"plot written to {made[0]}" + (f" and {made[1]}" if len(made) > 1 else ""))


def _interval(c: dict[str, float]) -> str:
    if c["n"] < 2 or c["ci95_high"] != c["ci95_high"]:
        return f"{c['mean']:.4g}"
    return f"{c['mean']:.4g} [{c['ci95_low']:.4g}, {c['ci95_high']:.4g}]"


@app.command()
def paper(
    number: str = typer.Argument(..., help="Which paper: 000, 001, 002 or 003."),
    reps: Optional[int] = typer.Option(None, help="Replications per configuration (default: 003 20, as the paper; 000, 001 and 002 5)."),
    quick: bool = typer.Option(False, help="A check that runs in a minute or two: fewer replications and shorter runs (001: fewer points)."),
    backend: str = typer.Option("sim", help="sim, emu or both (000, 001, 002; 003 is a simulation study: sim)."),
    out: Optional[Path] = typer.Option(None, help="Results directory (default results/paper-NNN)."),
    seed: int = typer.Option(1, help="Base seed (replication r uses SEED + r)."),
    workers: Optional[int] = typer.Option(None, help="Parallel runs (default: every core)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
    tcp: list[str] = typer.Option([], "--tcp", help="003: override a TCP setting: KEY=VALUE, e.g. rto_min=200ms (ns-2.35's minrto_; repeatable)."),
    explain: bool = typer.Option(False, help="001: instead of the sweeps, each finding's point with MPTCP's mechanisms switched one at a time (and, with --backend emu/both, the kernel beside)."),
    background: Optional[str] = typer.Option(None, help="002: mean rate of on-off UDP cross traffic on the WAN, e.g. 10Mbps (default: none; the real WAN's load is unknown)."),
) -> None:
    """Reproduce one of the four source papers (000–003) and print its tables beside the paper's numbers."""
    from .papers import PAPERS

    number = number.zfill(3)
    module = PAPERS.get(number)
    if module is None:
        fail(ScenarioError(f"paper: {number!r} is not available (allowed: {', '.join(PAPERS)})"))
        return
    if reps is not None and reps < 2:
        fail(ScenarioError("--reps: at least 2 (intervals need two replications)"))
    if backend not in ("sim", "emu", "both"):
        fail(ScenarioError(f"--backend: {backend!r} is not allowed (sim, emu, both)"))
    if workers is not None and workers < 1:
        fail(ScenarioError(f"--workers: {workers} is not allowed (at least 1)"))
    if not 0 <= seed < 2**64:
        fail(ScenarioError(f"--seed: {seed} is not allowed (an integer from 0 to 2^64-1)"))
    out = out or Path("results") / f"paper-{number}{'-quick' if quick else ''}"
    if background is not None and number != "002":
        fail(ScenarioError(f"--background: applies to paper 002 (the WAN's cross traffic), not to {number}"))
    if number == "000":
        for given, option in ((tcp, "--tcp"), (explain, "--explain")):
            if given:
                fail(ScenarioError(f"{option}: applies to paper {'003' if option == '--tcp' else '001'}, not to 000"))
        _paper_000(module, reps=reps, quick=quick, backend=backend, out=out, seed=seed, workers=workers, quiet=quiet)
    elif number == "002":
        for given, option in ((tcp, "--tcp"), (explain, "--explain")):
            if given:
                fail(ScenarioError(f"{option}: applies to paper {'003' if option == '--tcp' else '001'}, not to 002"))
        try:
            background_bps = 0.0 if background is None else float(parse_rate(background))
        except ValueError as e:
            fail(ScenarioError(f"--background: {e}"))
            return
        if backend != "sim" and background_bps:
            fail(ScenarioError("--background: the emu tables run without cross traffic; use it with --backend sim"))
        _paper_002(module, reps=reps, quick=quick, out=out, seed=seed, workers=workers, quiet=quiet,
                   background_bps=background_bps, backend=backend)
    elif number == "001":
        if tcp:
            fail(ScenarioError("--tcp: paper 001 uses Linux's TCP settings (docs/papers/001.md); --tcp applies to 003"))
        if explain:
            _paper_001_explain(module, reps=reps, quick=quick, backend=backend, out=out / "explain" if out.name != "explain" else out,
                               seed=seed, workers=workers, quiet=quiet)
        else:
            _paper_001(module, reps=reps, quick=quick, backend=backend, out=out, seed=seed, workers=workers, quiet=quiet)
    else:
        if explain:
            fail(ScenarioError(f"--explain: applies to paper 001 (MPTCP's mechanisms), not to {number}"))
        if backend != "sim":
            fail(ScenarioError(f"--backend {backend}: paper {number} is a simulation study (ns-2); allowed: sim"))
        _paper_tables(module, number, reps=reps or 20, quick=quick, out=out, seed=seed, workers=workers, quiet=quiet, tcp=tcp)


def _timed(out: Path, work: Callable[[], Any]) -> tuple[Any, float]:
    """Make sure `out` can be written, run `work` with its errors reported as
    every command reports them; its result and the wall time it took."""
    import time

    prepare_out(out)
    started = time.perf_counter()
    with errors_reported():
        result = work()
    return result, time.perf_counter() - started


def _paper_001(module, *, reps, quick, backend, out, seed, workers, quiet) -> None:
    (results, series), wall = _timed(out, lambda: (
        module.run(quick=quick, reps=reps, seed=seed, workers=workers, out=out, progress=not quiet, backend=backend),
        module.time_series(seed=seed)))
    out_console.print(f"[bold]paper 001[/]: {escape(module.TITLE)}")
    runs = " · ".join(f"{label}: {results['reps'][label]} replications × {results['duration_s'][label]:g} s"
                      for label in results["runs"])
    scaled = (f" · ×{module.EMU_SCALE:g}: rates and windows scaled alike (2 × {module.EMU_SCALE * 1000:g} Mb/s), "
              "so window / bandwidth-delay product is the paper's" if backend != "sim" else "")
    out_console.print(f"{runs} per point (measured from 1 s){scaled} · goodput in Mb/s, mean ± half-width of the "
                      f"95 % interval · {wall:.1f} s wall")
    md = ["# paper 001: netbraid", "", f"{runs} per point, seeds {seed}…{scaled}, {wall:.1f} s wall.", ""]
    md += _print_tables(module.tables(results))
    first = next(iter(results["runs"]))
    t = Table(title=f"The paper's findings and what netbraid ({first}) shows")
    t.add_column("figure")
    t.add_column("paper")
    t.add_column(f"netbraid ({first})")
    md += ["## The paper's findings", "", f"| figure | paper | netbraid ({first}) |", "|---|---|---|"]
    for fig, text, shown in module.findings(results):
        t.add_row(fig, text, shown)
        md.append(f"| {fig} | {text} | {shown} |")
    out_console.print(t)
    (out / "tables.md").write_text("\n".join(md) + "\n")
    (out / "results.json").write_text(json.dumps({"results": results, "time_series": series}, default=str))
    module.plots(results, series, out)
    out_console.print(f"tables.md, results.json and figures (delay, loss, fig4, fig7, fig8) in {out}/")


def _paper_000(module, *, reps, quick, backend, out, seed, workers, quiet) -> None:
    if backend != "sim":
        from .emu import platform

        reason = platform.unavailable_reason(sctp=True)
        if reason:
            fail(platform.EmuUnavailable(reason), code=3)
    results, wall = _timed(out, lambda: module.run(quick=quick, reps=reps, seed=seed, workers=workers, out=out,
                                                   progress=not quiet, backend=backend))
    out_console.print(f"[bold]paper 000[/]: {escape(module.TITLE)}")
    emu = (f" · emu: {results['emu']['reps']} × {results['emu']['duration_s']:g} s on real stacks"
           if "emu" in results else "")
    head = (f"{results['reps']} replications × {results['duration_s']:g} s per point (goodput from 5 s on){emu} · "
            f"mean ± half-width of the 95 % interval · {wall:.1f} s wall")
    _paper_report(module, "000", results, out, head,
                  None if results.get("backend") == "emu" else "table1, failover")


def _paper_002(module, *, reps, quick, out, seed, workers, quiet, background_bps, backend) -> None:
    if backend != "sim":
        from .emu import platform

        reason = platform.unavailable_reason()
        if reason:
            fail(platform.EmuUnavailable(reason), code=3)
    results, wall = _timed(out, lambda: module.run(quick=quick, reps=reps, seed=seed, workers=workers, out=out,
                                                   progress=not quiet, background_bps=background_bps,
                                                   backend=backend))
    out_console.print(f"[bold]paper 002[/]: {escape(module.TITLE)}")
    bg = f"on-off UDP cross traffic {format_rate(background_bps)} on average" if background_bps else "no cross traffic"
    head = (f"{results['reps']} replications × {results['duration_s']:g} s transfers per point (goodput over the whole "
            f"transfer, as iperf), {bg} · mean ± half-width of the 95 % interval · {wall:.1f} s wall")
    _paper_report(module, "002", results, out, head, "fig9-10, placement" if "fig9" in results else None)


def _paper_report(module, number: str, results, out: Path, head: str, figures: str | None) -> None:
    """Print a paper's tables and its statements beside what netbraid (sim)
    shows, and write tables.md, results.json and (named) figures to `out`."""
    out_console.print(head)
    md = [f"# paper {number}: netbraid", "", head + ".", ""]
    md += _print_tables(module.tables(results))
    t = Table(title="The paper's statements and what netbraid (sim) shows")
    for col in ("where", "paper", "netbraid (sim)"):
        t.add_column(col)
    md += ["## The paper's statements", "", "| where | paper | netbraid (sim) |", "|---|---|---|"]
    for where, text, shown in module.findings(results):
        t.add_row(where, text, shown)
        md.append(f"| {where} | {text} | {shown} |")
    out_console.print(t)
    (out / "tables.md").write_text("\n".join(md) + "\n")
    (out / "results.json").write_text(json.dumps(results, default=str))
    if figures:
        module.plots(results, out)
    out_console.print(f"tables.md, results.json{f' and figures ({figures})' if figures else ''} in {out}/")


def _print_tables(tables: list[tuple[str, list[str], list[list[str]]]]) -> list[str]:
    """Print (title, header, rows) tables; return them as Markdown lines."""
    md: list[str] = []
    for title, header, rows in tables:
        t = Table(title=title)
        for k, h in enumerate(header):
            t.add_column(h, justify="left" if k == 0 else "right")
        md += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for row in rows:
            t.add_row(*row)
            md.append("| " + " | ".join(row) + " |")
        md.append("")
        out_console.print(t)
    return md


def _paper_001_explain(module, *, reps, quick, backend, out, seed, workers, quiet) -> None:
    results, wall = _timed(out, lambda: module.explain(quick=quick, reps=reps, seed=seed, workers=workers, out=out,
                                                       progress=not quiet, backend=backend))
    out_console.print(f"[bold]paper 001, the findings explained[/]: {escape(module.TITLE)}")
    out_console.print(f"{'5' if quick else '10'} s per run, measured from 1 s · mean ± half-width of the 95 % interval "
                      f"· {wall:.1f} s wall")
    md = ["# paper 001: the findings explained", "", f"Seeds {seed}…, {wall:.1f} s wall.", "", "Switches:", ""]
    md += [f"- **{name}**: {what}" for name, what, _, _ in module.VARIANTS]
    md += ["", "Points: " + "; ".join(f"{fig}: {point}" for fig, point, *_ in module.EXPLAIN_POINTS), ""]
    md += _print_tables(module.explain_tables(results))
    t = Table(title="the switches")
    t.add_column("column")
    t.add_column("what it changes")
    for name, what, _, _ in module.VARIANTS:
        t.add_row(name, what)
    out_console.print(t)
    (out / "explain.md").write_text("\n".join(md) + "\n")
    (out / "explain.json").write_text(json.dumps(results, default=str))
    out_console.print(f"explain.md and explain.json in {out}/")


def _paper_tables(module, number, *, reps, quick, out, seed, workers, quiet, tcp) -> None:
    import csv

    if quick:
        reps = min(reps, 3)
    measure_s = 30.0 if quick else 180.0
    from .overrides import parse_value, split_assignment
    from .schema import TCP_FIELDS

    overrides: dict[str, Any] = {}
    try:
        for item in tcp:
            key, raw = split_assignment(item, "--tcp", "rto_min=200ms")
            if key not in TCP_FIELDS:
                raise ScenarioError(f"--tcp {item!r}: unknown TCP setting '{key}' (allowed: {', '.join(TCP_FIELDS)})")
            overrides[key] = parse_value(raw)
        module.check(overrides or None)
    except ScenarioError as e:
        fail(e)
        return
    results, wall = _timed(out, lambda: module.run(reps=reps, measure_s=measure_s, seed=seed, workers=workers,
                                                   out=out, progress=not quiet, tcp=overrides or None))
    rows = module.comparison_rows(results)
    out_console.print(f"[bold]paper {number}[/]: {escape(module.TITLE)}")
    out_console.print(f"{reps} replications × {measure_s:g} s measured per configuration · {wall:.1f} s wall"
                      + (f" · TCP overrides: {escape(str(overrides))}" if overrides else ""))
    md = [f"# paper {number}: netbraid beside the paper", "",
          f"{reps} replications × {measure_s:g} s per configuration, seeds {seed}…{seed + reps - 1}, {wall:.1f} s wall.", ""]
    for table_no, title, configs, metrics in module.TABLES:
        header = ["config"]
        for m in metrics:
            name = module.COLUMN_NAMES[m]
            header += [f"{name} netbraid", f"{name} paper", "diff"]
        md += [f"## Table {table_no}: {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        cells_of = {}
        for label, _ in configs:
            cells = [label]
            for m in metrics:
                r = next(x for x in rows if x["config"] == label and x["metric"] == m)
                cells += [_interval(results[label][m]), f"[{r['paper_low']:g}, {r['paper_high']:g}]",
                          f"{100 * r['relative_difference']:+.1f} %"]
            cells_of[label] = cells
            md.append("| " + " | ".join(cells) + " |")
        md.append("")
        # on screen, two metrics per table: 100 columns or a little more, never cells wrapped in three
        parts = [metrics[k:k + 2] for k in range(0, len(metrics), 2)]
        for p, part in enumerate(parts):
            t = Table(title=f"Table {table_no} — {title}" + (f" ({p + 1}/{len(parts)})" if len(parts) > 1 else ""))
            t.add_column("config", justify="left")
            for m in part:
                name = module.COLUMN_NAMES[m]
                t.add_column(f"{name}\nnetbraid, 95 % CI", justify="right")
                t.add_column(f"{name}\npaper, 95 % CI", justify="right")
                t.add_column("diff", justify="right")
            for label, _ in configs:
                cells = cells_of[label]
                t.add_row(label, *[c for m in part for c in cells[1 + 3 * metrics.index(m): 4 + 3 * metrics.index(m)]])
            out_console.print(t)
    (out / "tables.md").write_text("\n".join(md))
    with (out / "comparison.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    module.plots(results, out)
    out_console.print(f"tables, comparison.csv and plots in {out}/")


@app.command()
def controllers(json_out: bool = typer.Option(False, "--json", help="Print the list as JSON.")) -> None:
    """The congestion controllers the simulator has (cc = …) and their parameters (cc_params = {…})."""
    from .controllers import controllers as listed, describe_param

    if json_out:
        sys.stdout.write(json.dumps(listed(), indent=2) + "\n")
        return
    for c in listed():
        aliases = f" (also: {', '.join(c['aliases'])})" if c["aliases"] else ""
        out_console.print(Text.assemble((c["name"], "bold"), aliases, f" — {c['doc']}"), highlight=False)
        if not c["params"]:
            out_console.print("    no parameters", highlight=False)
        for p in c["params"]:
            out_console.print(Text(f"    {p['name']}: {p['doc']} ({describe_param(p)})"), highlight=False)
    out_console.print(Text('In [tcp] or on a flow: cc = "cubic", cc_params = { beta = 0.5 } (sim only; '
                           "on --backend emu, cc is what the kernel offers)."), highlight=False)


@app.command("resolve")
def resolve_command(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    set_: list[str] = typer.Option([], "--set", metavar="PATH=VALUE", help=SET_HELP),
    seed: Optional[int] = typer.Option(None, help="The run's seed (default: the scenario's seed, 1 unless it sets one)."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Write here instead of stdout."),
) -> None:
    """Print the resolved scenario (JSON) that the simulator runs; `netbraid-sim` runs it without Python."""
    try:
        resolved = resolve(load_scenario(scenario, set_), seed=seed)
    except ScenarioError as e:
        fail(e)
        return
    text = json.dumps(resolved, indent=2)
    if output:
        try:
            output.write_text(text)
        except OSError as e:
            fail(ScenarioError(f"--output: cannot write {output}: {e.strerror or e}"))
    else:
        sys.stdout.write(text + "\n")



@app.command()
def validate(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    set_: list[str] = typer.Option([], "--set", metavar="PATH=VALUE", help=SET_HELP),
) -> None:
    """Check a scenario without running it."""
    from . import _sim

    points = None
    try:
        s = load_scenario(scenario, set_)
        resolved = resolve(s)
        _sim.check_json(json.dumps(resolved))  # the engine's own checks (routes, loops), without running
        if s.sweep is not None:  # the declared axes: every point resolves, as `sweep` checks before it runs
            from .api import sweep_axes

            plan = make_plan(s, *sweep_axes(s, {}, {}))
            for point, one in zip(plan.points, plan.resolved):
                try:
                    _sim.check_json(json.dumps(one))
                except ValueError as e:
                    where = ", ".join(f"{k}={v}" for k, v in point.items())
                    raise ScenarioError(f"[sweep] point {where}: {e}") from None
            points = len(plan.points)
    except ScenarioError as e:
        fail(e)
        return
    except ValueError as e:
        fail(ScenarioError(str(e)))
        return
    out_console.print(
        f"[green]ok[/]: {len(resolved['nodes'])} nodes, {len(resolved['links'])} links, "
        f"{len(resolved['flows'])} flows, {resolved['duration_ns'] / 1e9:g} s"
        + (f"; \\[sweep]: {points} points" if points is not None else "")
    )


def _fmt(v: Any, scale: float = 1.0, digits: int = 3) -> str:
    return "–" if v is None else f"{v * scale:.{digits}g}"


def _rate(v: float | None) -> str:
    return "–" if v is None else format_rate(v)


def compact_links(links: list[str], src: str | None = None, dst: str | None = None) -> str:
    """Link directions as one short line. A link used both ways is written
    once, "a<->b" ("a<->b#2": the second of parallel links); when those form
    one chain from `src` to `dst`, it is written as the chain, "src <-> r1 <-> dst"."""
    have, shown, items, edges = set(links), set(), [], []
    for name in links:
        if name in shown:
            continue
        base, _, k = name.partition("#")
        a, _, b = base.partition("->")
        suffix = f"#{k}" if k else ""
        back = f"{b}->{a}{suffix}"
        if back in have and back != name:
            items.append(f"{a}<->{b}{suffix}")
            edges.append((a, b, suffix))
            shown.update((name, back))
        else:
            items.append(name)
            shown.add(name)
    if src is not None and len(edges) == len(items):  # every link both ways: a chain?
        chain, at, left = [src], src, list(edges)
        while left:
            step = next(((e, e[1] if e[0] == at else e[0]) for e in left if at in e[:2]), None)
            if step is None:
                break
            left.remove(step[0])
            at = step[1]
            chain.append(f"<->{step[0][2]} {at}" if step[0][2] else f"<-> {at}")
        if not left and at == dst and len(set(chain[:1] + [c.split()[-1] for c in chain[1:]])) == len(chain):
            return " ".join(chain)
    return ", ".join(items)


def print_links(named: list[tuple[str, list[str] | None, str | None, str | None]]) -> None:
    """Under a results table: the link directions each flow's packets used
    (name, links, source node, destination node)."""
    named = [x for x in named if x[1]]
    if not named:
        return
    width = max(len(x[0]) for x in named)
    out_console.print("links used (data and ACKs; <->: both directions):", highlight=False)
    for name, links, src, dst in named:
        out_console.print(Text(f"  {name:<{width}}  {compact_links(links, src, dst)}"), highlight=False)


def _value(v: Any) -> float:
    """A table cell's number: the value itself, or an interval's mean
    (replications); missing (None, NaN) counts as 0."""
    x = v["mean"] if isinstance(v, dict) else v
    return 0.0 if x is None or x != x else x


def _unit(values: list[Any]) -> tuple[str, float]:
    """One rate unit for a whole column, from its largest value."""
    top = max((abs(_value(v)) for v in values), default=0.0)
    for unit, scale in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if top >= scale * 0.9995:  # 999.8 kb/s shows as 1 Mb/s
            return unit, 1 / scale
    return "b/s", 1.0


def _cell(v: Any, scale: float = 1.0, whole: bool = False) -> str:
    """A number (one run) or a {mean, ci95_low, ci95_high, n} (replications)."""
    if isinstance(v, dict):
        return _pm(v, scale)
    if v is None or v != v:
        return "–"
    return str(int(v)) if whole else f"{v * scale:.3g}"


#: The flow tables' columns, in this order everywhere: (header, key, scale, whole numbers).
#: The RTT shown is the smoothed RTT's mean while data is out: the one both
#: backends measure alike (the kernel keeps no RTT samples; docs/model.md).
FLOW_COLUMNS = [("loss %", "loss_rate", 100, False), ("retx", "retransmits", 1, True), ("RTOs", "timeouts", 1, True),
                ("srtt ms", "srtt_mean_s", 1e3, False), ("cwnd KB", "cwnd_mean_bytes", 1 / 1024, False)]


def print_flow_table(title: str, flows: list[dict[str, Any]]) -> None:
    """The per-flow table of a run and of replications: the same columns in
    the same order, one unit per column; each flow's subflows or legs
    (`paths`) under it. A metric is a number or a mean with its interval."""
    rows = [(f, None) for f in flows] + [(f, p) for f in flows for p in f["paths"]]
    units = {k: _unit([(p or f).get(k) for f, p in rows]) for k in ("throughput_bps", "goodput_bps")}
    shares = any(p is not None and p.get("share") is not None and not p.get("from") for _, p in rows)
    t = Table(title=title)
    # units on a second header line: the table stays within 100 columns
    cols = [("flow", "left"), ("kind", "left"), ("path", "left"), (f"throughput\n{units['throughput_bps'][0]}", "right"),
            (f"goodput\n{units['goodput_bps'][0]}", "right"), *([("share %", "right")] if shares else []),
            *((h, "right") for h, *_ in FLOW_COLUMNS)]
    for col, justify in cols:
        t.add_column(col, justify=justify)

    def cells(x: dict[str, Any], tcp: bool) -> list[str]:
        return [_cell(x.get(k), scale, whole) if tcp or k in ("loss_rate",) else "–"
                for _, k, scale, whole in FLOW_COLUMNS]

    for f in flows:
        tcp = f["kind"] != "udp"
        t.add_row(f["name"], f["kind"], f"{f['src']} → {f['dst']}",
                  _cell(f.get("throughput_bps"), units["throughput_bps"][1]),
                  _cell(f.get("goodput_bps"), units["goodput_bps"][1]), *([""] if shares else []), *cells(f, tcp))
        for p in f["paths"]:
            where = f"{p['from']} → {p['to']}" if p.get("from") else (
                f"{p['src_addr']} → {p['dst_addr']}" if p.get("src_addr") and p.get("dst_addr") else "")
            t.add_row(f"  └ {p['name']}", "leg" if p.get("from") else "subflow", where,
                      _cell(p.get("throughput_bps"), units["throughput_bps"][1]),
                      _cell(p.get("goodput_bps"), units["goodput_bps"][1]),
                      *([_cell(p.get("share"), 100)] if shares else []), *cells(p, True))
    out_console.print(t)


def print_busy_links(links: list[dict[str, Any]]) -> None:
    """Link directions ≥ 50 % busy or dropping; a metric is a number or a
    mean with its interval (replications)."""
    busy = [l for l in links if _value(l["queue_drops"]) or _value(l["loss_drops"]) or _value(l["utilisation"]) >= 0.5]
    if not busy:
        return
    lt = Table(title="busy or lossy link directions")
    for col in ("link", "named", "rate", "utilisation %", "queue delay ms", "queue drops", "loss drops"):
        lt.add_column(col, justify="left" if col in ("link", "named") else "right")
    for l in sorted(busy, key=lambda l: -_value(l["utilisation"]))[:12]:
        lt.add_row(l["name"], l.get("link_name") or "", format_rate(l["rate_bps"]), _cell(l["utilisation"], 100),
                   _cell(l.get("queue_delay_s"), 1e3), _cell(l["queue_drops"], whole=True),
                   _cell(l["loss_drops"], whole=True))
    out_console.print(lt)


def fairness_text(per_kind: dict[str, Any]) -> str:
    """Jain's index per kind of flow (a CBR stream does not compete for a
    fair share): ", Jain fairness 0.998" with one kind, else ", Jain
    fairness 0.97 over 2 tcp flows, 0.90 over 2 udp flows"; an index is a
    number or a mean with its interval."""
    if not per_kind:
        return ""
    show = lambda c: _cell(c) if isinstance(c, dict) else f"{c:.3f}"  # noqa: E731
    if len(per_kind) == 1 and next(iter(per_kind.values()))["only_kind"]:
        return f", Jain fairness {show(next(iter(per_kind.values()))['index'])}"
    return ", Jain fairness " + ", ".join(f"{show(v['index'])} over {v['flows']} {k} flows" for k, v in per_kind.items())


def jain_by_kind(flows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{kind: {"index", "flows", "only_kind"}} for kinds with two or more flows."""
    kinds: dict[str, list[float]] = {}
    for f in flows:
        kinds.setdefault(f["kind"], []).append(f["goodput_bps"] or 0.0)
    return {k: {"index": jain_fairness(v), "flows": len(v), "only_kind": len(kinds) == 1}
            for k, v in kinds.items() if len(v) > 1}


def print_result(result: dict[str, Any]) -> None:
    window = result["measure_stop_s"] - result["measure_start_s"]
    on = " on real stacks (emu)" if result.get("backend") == "emu" else ""
    flows = result["flows"][:MAX_ROWS]
    print_flow_table(f"{escape(result['scenario'])}{on}: {window:g} s measured (seed {result['seed']})",
                     [{**f, "paths": paths_of(f)} for f in flows])
    if len(result["flows"]) > MAX_ROWS:
        out_console.print(f"… and {len(result['flows']) - MAX_ROWS} more flows (all of them: --json or --out)")
    print_links([(f["name"], f.get("links"), f["src"], f["dst"]) for f in flows]
                + [(s["name"], s.get("links"), f["src"], f["dst"]) for f in flows for s in paths_of(f)])
    print_busy_links(result["links"])
    for f in flows:
        if f.get("completion_time_s") is not None:
            out_console.print(f"{f['name']}: transfer completed at {f['completion_time_s']:.3f} s")
    line = f"aggregate goodput {format_rate(sum(f['goodput_bps'] or 0.0 for f in result['flows']))}"
    line += fairness_text(jain_by_kind(result["flows"]))
    if result.get("events") is None:
        rt = "real-time scheduling" if result.get("realtime") else "no real-time scheduling"
        line += f" · emu run in {result['wall_s']:.1f} s ({rt})"
    else:
        rate = result["events"] / result["wall_s"] if result["wall_s"] > 0 else float("inf")
        line += f" · {result['events']:,} events in {result['wall_s']:.3f} s ({rate / 1e6:.2f} M events/s)"
    out_console.print(line)


@app.command("compare")
def compare_command(
    scenario: Path = typer.Argument(..., help="Scenario file (TOML)."),
    set_: list[str] = typer.Option([], "--set", metavar="PATH=VALUE", help=SET_HELP),
    seed: Optional[int] = typer.Option(None, help="Random seed (overrides the scenario's); replication r uses seed + r."),
    reps: int = typer.Option(1, "--reps", min=1, help="Runs on each backend; with 2 or more, 95 % intervals and a verdict per metric."),
    linux_defaults: bool = typer.Option(True, help="Run the simulator with profile = \"linux\" where the scenario names no profile."),
    out: Optional[Path] = typer.Option(None, help="Also keep both backends' runs: results directories OUT/sim and OUT/emu."),
    overwrite: bool = typer.Option(False, help="Replace the results already in --out."),
    json_out: bool = typer.Option(False, "--json", help="Print one JSON document instead of tables."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Run a scenario on sim and on emu (real stacks) and show them side by side."""
    from .compare import compare

    with errors_reported(os_error=lambda e: ExperimentError(f"--out: cannot write to {out}: {e.strerror or e}")):
        s = load_scenario(scenario, set_)
        doc = compare(s, seed=seed, reps=reps, linux_defaults=linux_defaults, progress=not quiet and not json_out,
                      out=out, overwrite=overwrite)
    shown = {k: v for k, v in doc.items() if k not in ("sim", "emu")}
    if out is not None:
        (out / "compare.json").write_text(json_text(shown))
    if json_out:
        sys.stdout.write(json_text(shown))
        return
    print_comparison(doc, s.name)
    if out is not None:
        out_console.print(f"results written to {out}/ (sim/, emu/, compare.json)")


def print_comparison(doc: dict[str, Any], name: str) -> None:
    reps = doc["reps"]
    note = ", sim with profile = \"linux\"" if doc["linux_defaults_on_sim"] else ""
    what = f"mean ± 95 % interval over {reps} runs each" if reps > 1 else "one run each (--reps 2 or more for intervals)"
    seeds = f"seeds {doc['seeds'][0]}–{doc['seeds'][-1]}" if reps > 1 else f"seed {doc['seeds'][0]}"
    t = Table(title=f"{escape(name)}: sim against emu, {what} ({seeds}{note})")
    for col in ("flow", "metric", "sim", "emu", "sim − emu", "verdict"):
        t.add_column(col, justify="left" if col in ("flow", "metric", "verdict") else "right")
    last = None
    for r in doc["rows"]:
        who = r["flow"] if r["subflow"] is None else f"  └ {r['subflow']}"
        t.add_row(who if who != last else "", r["label"], _pm(r["sim"], r["scale"]), _pm(r["emu"], r["scale"]),
                  "–" if r["rel_diff"] is None else f"{100 * r['rel_diff']:+.1f} %", _verdict(r["verdict"]))
        last = who
    out_console.print(t)
    if doc["links"]:
        lt = Table(title="link directions, busy (≥ 1 %) or dropping on either side")
        for col in ("link", "metric", "sim", "emu", "sim − emu", "verdict"):
            lt.add_column(col, justify="left" if col in ("link", "metric", "verdict") else "right")
        last = None
        for r in doc["links"]:
            lt.add_row(r["link"] if r["link"] != last else "", r["label"], _pm(r["sim"], r["scale"]),
                       _pm(r["emu"], r["scale"]), "–" if r["rel_diff"] is None else f"{100 * r['rel_diff']:+.1f} %",
                       _verdict(r["verdict"]))
            last = r["link"]
        out_console.print(lt)
    out_console.print("sim − emu: the simulator's difference relative to the real stack; verdict: whether the 95 % "
                      "interval of the difference holds 0. retx % is the sender's retransmissions / segments sent on "
                      "both; network loss is the simulator's alone; links count over the measurement window on both "
                      "(docs/emu.md).")


def json_text(doc: Any) -> str:
    """JSON with undefined numbers (an interval of one run, a metric a
    backend lacks, an unbounded width) as null: NaN and infinity are not
    JSON, and jq or a browser refuse them."""
    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        return x

    return json.dumps(clean(doc), indent=2, allow_nan=False) + "\n"


def _verdict(v: str | None) -> str:
    return {"consistent": "[green]consistent[/]", "differs": "[red]differs[/]"}.get(v or "", "–")


emu_app = typer.Typer(help="The emu backend: check this machine, clean up after crashed runs.", no_args_is_help=True)
app.add_typer(emu_app, name="emu")


@emu_app.command("check")
def emu_check() -> None:
    """Say whether emu runs can work here, and what the kernel offers."""
    from .emu import platform

    reason = platform.unavailable_reason(mptcp=True)
    if reason:
        fail(platform.EmuUnavailable(reason), code=3)
    out_console.print("emu backend: ready (root, network namespaces, TUN, iperf3, mptcpize, MPTCP)")
    out_console.print(f"congestion controls: {', '.join(platform.available_congestion_controls())}")
    sctp = platform.unavailable_reason(sctp=True)
    out_console.print("SCTP (usrsctp): " + (f"ready ({platform.sctpgen()})" if sctp is None else f"unavailable: {sctp}"))


@app.command(
    "proxy",
    add_help_option=False,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def proxy(ctx: typer.Context) -> None:
    """A split-TCP proxy (fixed upstream, SOCKS5 or transparent): `netbraid proxy --help`."""
    from .entry import run_proxy

    run_proxy(ctx.args)


@emu_app.command("cleanup")
def emu_cleanup() -> None:
    """Remove what crashed emu runs left behind (namespaces of runs whose
    netbraid process is gone); live runs and anything else are untouched."""
    from .emu.platform import require_root
    from .emu.registry import cleanup_stale

    try:
        require_root()
    except EmuUnavailable as e:
        fail(e, code=3)
    removed = cleanup_stale()
    out_console.print(f"removed {len(removed)}: {', '.join(removed)}" if removed else "nothing to clean up")


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """netbraid's own warnings as one `warning:` line; others as Python prints them."""
    from .emu.fidelity import EmuFidelityWarning

    if issubclass(category, EmuFidelityWarning):
        err_console.print(Text.assemble(("warning:", "bold yellow"), " ", str(message)), highlight=False,
                          soft_wrap=True)
    else:
        _python_show_warning(message, category, filename, lineno, file, line)


_python_show_warning = warnings.showwarning


def main() -> None:
    install_stop_handlers()
    warnings.showwarning = _show_warning
    try:
        app()
    except SystemExit as e:
        from . import lifetime

        if lifetime.stopped_by is not None and e.code not in (0, None):
            raise SystemExit(stop_exit_code()) from None  # click reports an uncaught Ctrl-C as 1
        raise


if __name__ == "__main__":
    main()
