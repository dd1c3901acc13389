"""Replications and sweeps: expand a scenario into runs, execute them on
local processes or a Dask cluster, and collect tidy tables.

A backend runs one resolved scenario with one seed and knows nothing of
this layer. Seeds: replication r of a sweep with base seed S runs with seed
S + r, at every point of the sweep (common random numbers: two points
differ by their parameters, not by their draws). The simulator hashes
(seed, component name) into each random stream, so consecutive seeds give
unrelated streams.

A results directory holds `manifest.json` (what was asked, by which
command and version), `journal.jsonl` (one line per finished run, appended
and synced as runs finish: the record that `--resume` continues from), and,
once the runs are done, `runs.parquet` / `runs.csv` (one row per run ×
flow) and `series.parquet` (time series, if the scenario samples them).
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, NamedTuple

import pandas as pd
from pydantic import ValidationError

from ._sim import __version__
from .errors import DirectoryError, ScenarioError, from_validation_error
from . import footprint
from .lifetime import pool_worker_init
from .overrides import parse_value, set_path, split_assignment
from .resolve import resolve
from .results_dir import DirectoryLock, describe_kind, listed, made_by, remove_results
from .schema import Scenario
from .tidy import FLOW_METRICS, LINK_METRICS, flow_rows, link_rows, link_series_rows, series_rows, with_metric_columns

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
SERIES_PARTS = "series-parts"


class ExperimentError(RuntimeError):
    """A sweep could not go on (interrupted, a worker died, a bad results
    directory). Nothing already written is lost."""


class Interrupted(ExperimentError):
    """Ctrl-C or SIGTERM stopped the runs; every finished run is saved."""


class DamagedResults(ExperimentError):
    """A results directory holds a file netbraid cannot read back (damaged,
    or not one netbraid wrote): named, never skipped as "not finished yet"."""


@dataclass(frozen=True)
class Axis:
    path: str
    values: tuple[Any, ...]


def parse_axis(text: str, option: str = "--grid") -> Axis:
    """`PATH=v1,v2,…` (values read like --set values; they cannot contain commas)."""
    path, raw = split_assignment(text, option)
    values = tuple(parse_value(v.strip()) for v in raw.split(","))
    if any(v == "" for v in values):
        raise ScenarioError(f"{option} {text!r}: empty value in the list; write PATH=v1,v2,…")
    return Axis(path, values)


@dataclass
class Plan:
    """Everything a sweep will run: the scenario, its axes, the replications."""

    scenario: Scenario
    grid: list[Axis] = field(default_factory=list)
    zipped: list[Axis] = field(default_factory=list)
    reps: int = 1
    base_seed: int | None = None
    #: replications run are first_rep … first_rep + reps − 1 (sequential mode adds batches)
    first_rep: int = 0
    points: list[dict[str, Any]] = field(default_factory=list)
    resolved: list[dict[str, Any]] = field(default_factory=list)
    #: per point, the axis values as the tables show them (see column_values)
    labels: list[dict[str, Any]] = field(default_factory=list)
    #: "sim" or "emu" (emu runs one at a time, on this machine)
    backend: str = "sim"

    @property
    def seed(self) -> int:
        return self.scenario.seed if self.base_seed is None else self.base_seed

    @property
    def axes(self) -> list[str]:
        return [a.path for a in self.zipped] + [a.path for a in self.grid]

    def fingerprint(self) -> dict[str, Any]:
        """What must match for `--resume` to continue a directory."""
        return {
            "scenario": self.scenario.model_dump(mode="json", by_alias=True, exclude_none=True),
            "grid": [[a.path, list(a.values)] for a in self.grid],
            "zip": [[a.path, list(a.values)] for a in self.zipped],
            "reps": self.reps,
            "seed": self.seed,
            **({"backend": self.backend} if self.backend != "sim" else {}),
        }

    def tasks(self) -> list[dict[str, Any]]:
        out = []
        for p, resolved in enumerate(self.resolved):
            for r in range(self.first_rep, self.first_rep + self.reps):
                seed = (self.seed + r) % 2**64
                out.append({
                    "run_id": f"p{p:04d}-r{r:04d}",
                    "point": p,
                    "rep": r,
                    "seed": seed,
                    "labels": self.labels[p],
                    "backend": self.backend,
                    "resolved": {**resolved, "seed": seed},
                })
        return out


def make_plan(scenario: Scenario, grid: Iterable[Axis] = (), zipped: Iterable[Axis] = (), reps: int = 1,
              seed: int | None = None, first_rep: int = 0, backend: str = "sim") -> Plan:
    """Expand the axes (zipped axes together, then the Cartesian product with
    the grid axes) and resolve every point now, so a bad value fails before
    anything runs."""
    grid, zipped = list(grid), list(zipped)
    if reps < 1:
        raise ScenarioError(f"--reps: {reps} is not allowed (at least 1)")
    paths = [a.path for a in zipped + grid]
    for p in set(paths):
        if paths.count(p) > 1:
            raise ScenarioError(f"the axis {p!r} is given twice")
    for a in zipped + grid:
        if not a.values:
            raise ScenarioError(f"the axis {a.path!r} has no values; give at least one")
    # a point given twice would be shown as replications of one point; zip
    # axes pair value by value, so there it is a repeated tuple that counts
    for a in grid:
        twice = [v for i, v in enumerate(a.values) if v in a.values[:i]]
        if twice:
            raise ScenarioError(f"the axis {a.path!r} lists {twice[0]!r} more than once; each value is one point "
                                "(for more runs of a point, use replications: --reps)")
    if zipped:
        tuples = list(zip(*[a.values for a in zipped]))
        twice = [t for i, t in enumerate(tuples) if t in tuples[:i]]
        if twice:
            pairs = ", ".join(f"{a.path}={v!r}" for a, v in zip(zipped, twice[0]))
            raise ScenarioError(f"the zip axes give the point {pairs} more than once; each is one point "
                                "(for more runs of a point, use replications: --reps)")
    if zipped and len({len(a.values) for a in zipped}) > 1:
        lengths = ", ".join(f"{a.path} ({len(a.values)})" for a in zipped)
        raise ScenarioError(f"--zip axes must have the same number of values: {lengths}")
    def rows(axes: list[Axis], combine) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        names = [a.path for a in axes]
        raw = [dict(zip(names, v)) for v in combine(*[a.values for a in axes])]
        shown = [dict(zip(names, v)) for v in combine(*[column_values(a) for a in axes])]
        return (raw, shown) if axes else ([{}], [{}])

    zip_raw, zip_shown = rows(zipped, zip)
    grid_raw, grid_shown = rows(grid, itertools.product)
    points = [{**z, **g} for z in zip_raw for g in grid_raw]
    labels = [{**z, **g} for z in zip_shown for g in grid_shown]
    base = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    resolved = []
    for point in points:
        data = copy.deepcopy(base)
        for path, value in point.items():
            set_path(data, path, value, f"axis {path}={value}")
        try:
            s = Scenario.model_validate(data)
        except ValidationError as e:
            where = ", ".join(f"{k}={v}" for k, v in point.items())
            raise from_validation_error(e, source=f"sweep point {where}" if where else None) from None
        resolved.append(resolve(s, seed=seed, backend=backend))
    return Plan(scenario, grid, zipped, reps, seed, first_rep, points, resolved, labels, backend)


def execute_task(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task (in a worker process or on a Dask worker)."""
    from .api import run_resolved

    try:
        result = run_resolved(task["resolved"], task.get("backend") or "sim")
    except ScenarioError as e:
        raise ScenarioError(f"run {task['run_id']}: {e}") from None
    return {"run_id": task["run_id"], "result": result}


# ---- results directory --------------------------------------------------------


class Journal:
    """Append-only record of finished runs: one JSON line each, synced to
    disk before the next is written, so a crash loses at most the run that
    was being written (a torn last line is ignored when read back)."""

    def __init__(self, directory: Path):
        self.path = directory / JOURNAL

    def read(self) -> dict[str, dict[str, Any]]:
        done: dict[str, dict[str, Any]] = {}
        if not self.path.exists():
            return done
        with self.path.open() as f:
            for number, line in enumerate(f, 1):
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # torn write from a crash
                if not isinstance(rec, dict) or not isinstance(rec.get("run_id"), str):
                    raise DamagedResults(f"{self.path}, line {number}: not a run netbraid recorded (no run_id); "
                                         "remove the line, or write the directory again")
                done[rec["run_id"]] = rec
        return done

    def append(self, record: dict[str, Any]) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())


def _describe_difference(old: dict[str, Any], new: dict[str, Any]) -> str:
    parts = [k for k in ("scenario", "grid", "zip", "reps", "seed") if old.get(k) != new.get(k)]
    return ", ".join(parts) or "unknown"


def prepare_directory(out: Path, plan: Plan, resume: bool, command: list[str], kind: str = "sweep",
                      overwrite: bool = False) -> Journal:
    """Check that `out` may take this plan's results (the caller holds its
    DirectoryLock), write its manifest if it is new, and open its journal.
    `kind` is the command ("sweep", "replications", "paper"): a directory is
    continued only by the kind and the plan that made it."""
    fingerprint = plan.fingerprint()
    manifest_path = out / MANIFEST
    existing = made_by(out)
    if overwrite and existing is not None:
        remove_results(out)
        existing = None
    if existing == "run":
        raise DirectoryError(f"{out} holds a single run's results (`netbraid run --out`); choose another --out, "
                             "or pass --overwrite to replace them")
    if existing is not None:
        try:
            manifest = json.loads(manifest_path.read_text())
        except json.JSONDecodeError:
            raise ExperimentError(f"{manifest_path} is damaged; it is not a results directory netbraid can continue") from None
        if manifest.get("kind", kind) != kind:
            raise DirectoryError(
                f"{out} holds the results of `{describe_kind(manifest['kind'])}`, not of `{describe_kind(kind)}`; "
                "choose another --out, or pass --overwrite to replace them")
        if not resume:
            raise DirectoryError(
                f"{out} already holds results; pass --resume to continue them, --overwrite to replace them, "
                "or choose another --out")
        if manifest.get("fingerprint") != fingerprint:
            raise DirectoryError(
                f"--resume: {out} holds results of a different {kind} (differs in: "
                f"{_describe_difference(manifest.get('fingerprint', {}), fingerprint)}); "
                f"nothing was changed there; choose another --out"
            )
    else:
        if resume and listed(out):
            raise DirectoryError(f"--resume: {out} holds no netbraid results (no {MANIFEST})")
        if listed(out) and not overwrite:
            raise DirectoryError(f"{out} is not empty and holds no netbraid results; choose another --out "
                                 "(or pass --overwrite to write there anyway)")
        out.mkdir(parents=True, exist_ok=True)
        manifest = {
            "netbraid_version": __version__,
            "kind": kind,
            "command": command,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "axes": plan.axes,
            "points": plan.points,
            "fingerprint": fingerprint,
            "seeds": f"replication r runs with seed {plan.seed} + r at every point",
        }
        tmp = manifest_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(manifest, indent=2))
        tmp.replace(manifest_path)
        (out / "scenario.resolved.json").write_text(json.dumps(plan.resolved[0], indent=2))
    (out / SERIES_PARTS).mkdir(exist_ok=True)
    return Journal(out)


def column_values(axis: Axis) -> list[Any]:
    """How an axis's values appear in the tables: as they are when all are
    numbers (or all strings), else as their JSON text, so that every column
    has one type and can be grouped on (inline tables are not hashable)."""
    vals = list(axis.values)
    kinds = {type(v) for v in vals}
    if len(kinds) == 1 and kinds <= {int, float, str, bool}:
        return vals
    if kinds <= {int, float}:
        return [float(v) for v in vals]
    return [v if isinstance(v, str) else json.dumps(v, sort_keys=True) for v in vals]


def _context(task: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": task["run_id"], "point": task["point"], "rep": task["rep"], "seed": task["seed"], **task["labels"]}


class Tables(NamedTuple):
    """Every table of a set of runs: run × flow (subflow rows with
    `subflow` set), the flows' time series, run × link direction, and the
    links' queue-length series."""

    runs: pd.DataFrame
    series: pd.DataFrame
    links: pd.DataFrame
    link_series: pd.DataFrame


def tables_from_records(records: Iterable[dict[str, Any]], series_dir: Path | None = None) -> Tables:
    rows, series, links, link_series = [], [], [], []
    for rec in sorted(records, key=lambda r: r["run_id"]):
        rows.extend(rec["rows"])
        links.extend(rec.get("link_rows") or [])
        for key, part, into in (("series", "", series), ("link_series", ".links", link_series)):
            if series_dir is not None and rec.get(key):
                into.append(pd.read_parquet(series_dir / f"{rec['run_id']}{part}.parquet"))
            elif rec.get(f"{key}_rows"):
                into.append(pd.DataFrame(rec[f"{key}_rows"]))
    concat = lambda parts: pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()  # noqa: E731
    return Tables(with_metric_columns(pd.DataFrame(rows), FLOW_METRICS), concat(series),
                  with_metric_columns(pd.DataFrame(links), LINK_METRICS), concat(link_series))


def _write_tables(out: Path, t: Tables) -> None:
    t.runs.to_parquet(out / "runs.parquet", index=False)
    t.runs.to_csv(out / "runs.csv", index=False)
    if not t.series.empty:
        t.series.to_parquet(out / "series.parquet", index=False)
    if not t.links.empty:
        t.links.to_parquet(out / "links.parquet", index=False)
        t.links.to_csv(out / "links.csv", index=False)
    if not t.link_series.empty:
        t.link_series.to_parquet(out / "link_series.parquet", index=False)


# ---- execution -----------------------------------------------------------------


def _local_results(tasks: list[dict[str, Any]], workers: int) -> Iterable[dict[str, Any]]:
    if workers == 1:
        for t in tasks:
            yield execute_task(t)
        return
    # Workers die with this process however it dies (lifetime.pool_worker_init).
    pool = ProcessPoolExecutor(max_workers=workers, initializer=pool_worker_init, initargs=(os.getpid(),))
    finished = False
    try:
        futures = [pool.submit(execute_task, t) for t in tasks]
        for fut in as_completed(futures):
            yield fut.result()
        finished = True
    except BrokenProcessPool:
        raise ExperimentError("a worker process died") from None
    finally:
        if not finished:
            # Interrupted: the runs in progress cannot be saved, so do not
            # wait for them (the executor has no public way to stop them).
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()
        manager = getattr(pool, "_executor_manager_thread", None)
        pool.shutdown(wait=False, cancel_futures=True)
        if not finished and manager is not None:
            # Let the executor's manager thread see its workers gone and close
            # its wake-up pipe before the interpreter exits: Python 3.11's
            # exit hook otherwise races it and prints "Bad file descriptor".
            manager.join(timeout=10)


def _dask_results(tasks: list[dict[str, Any]], address: Any) -> Iterable[dict[str, Any]]:
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise ExperimentError("--dask needs the 'distributed' package: pip install 'netbraid[dask]'") from None

    if isinstance(address, Client):
        client = address
    else:
        try:
            client = Client(address, timeout="20s")
        except (OSError, TimeoutError, ValueError) as e:
            raise ExperimentError(f"--dask: cannot reach a Dask scheduler at {address!r}: {e}") from None
    try:
        futures = client.map(execute_task, tasks, pure=False)
        for fut in dask_completed(futures):
            yield fut.result()
    finally:
        if client is not address:
            client.close()


def execute(plan: Plan, out: Path | None = None, **options: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`execute_tables`, for callers that want the run × flow table and
    the flows' series only."""
    t = execute_tables(plan, out, **options)
    return t.runs, t.series


def execute_tables(plan: Plan, out: Path | None = None, *, resume: bool = False, workers: int | None = None,
                   dask: Any = None, progress: bool = False, command: list[str] | None = None,
                   on_run: Callable[[dict[str, Any]], None] | None = None, kind: str = "sweep",
                   overwrite: bool = False, label: str = "runs") -> Tables:
    """Run every task of `plan` not already in `out`'s journal; return
    every table of all runs, old and new. `out` is locked for the whole
    run: a second writer is refused. `label` names the progress bar."""
    if out is None:
        return _execute(plan, None, None, workers, dask, progress, on_run, label)
    with DirectoryLock(out):
        journal = prepare_directory(out, plan, resume, command or sys.argv, kind, overwrite)
        return _execute(plan, out, journal, workers, dask, progress, on_run, label)


def _execute(plan: Plan, out: Path | None, journal: Journal | None, workers: int | None, dask: Any, progress: bool,
             on_run: Callable[[dict[str, Any]], None] | None, label: str = "runs") -> Tables:
    tasks = plan.tasks()
    done: dict[str, dict[str, Any]] = journal.read() if journal else {}
    by_id = {t["run_id"]: t for t in tasks}
    pending = [t for t in tasks if t["run_id"] not in done]
    workers = workers or os.cpu_count() or 1
    if plan.backend == "emu":
        if dask is not None:
            raise ExperimentError("--dask: emu runs need this machine's namespaces; run them without --dask")
        workers = 1  # runs on real stacks share the CPU: one at a time keeps them honest
    if dask is not None:
        results = _dask_results(pending, dask)
    else:
        parallel = min(workers, max(1, len(pending)))
        footprint.check(plan.scenario, parallel)  # each point was checked alone when it was resolved
        results = _local_results(pending, parallel)

    from rich.markup import escape
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    # a run on real stacks takes its duration and more: the spinner and the
    # clock say it is alive between two ticks of the bar
    bar = Progress(*([SpinnerColumn()] if plan.backend == "emu" else []), TextColumn(f"[bold]{escape(label)}"),
                   BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                   disable=not progress, transient=False)
    started = time.perf_counter()
    # (a batch of sequential mode is part of a larger plan: its size is no total)
    of_total = f" of {len(tasks)}" if set(done) <= set(by_id) else ""
    try:
        with bar:
            job = bar.add_task("runs", total=len(tasks), completed=len(done), rate="")
            for i, item in enumerate(results, start=1):
                task = by_id[item["run_id"]]
                ctx = _context(task)
                rec: dict[str, Any] = {"run_id": task["run_id"], "rows": flow_rows(item["result"], ctx),
                                       "link_rows": link_rows(item["result"], ctx)}
                for key, rows_, part in (("series", series_rows(item["result"], ctx), ""),
                                         ("link_series", link_series_rows(item["result"], ctx), ".links")):
                    if rows_ and out is not None:
                        pd.DataFrame(rows_).to_parquet(out / SERIES_PARTS / f"{task['run_id']}{part}.parquet",
                                                       index=False)
                        rec[key] = True
                    elif rows_:
                        rec[f"{key}_rows"] = rows_
                if journal:
                    journal.append(rec)
                done[task["run_id"]] = rec
                if on_run:
                    on_run(item["result"])
                elapsed = time.perf_counter() - started
                bar.update(job, advance=1, rate=f"{i / elapsed:.1f} runs/s" if elapsed > 0 else "")
    except KeyboardInterrupt:
        raise Interrupted(
            f"interrupted: {len(done)}{of_total} runs are saved"
            + (f" in {out}; continue with --resume" if out is not None else "")
        ) from None
    except ExperimentError as e:
        raise ExperimentError(
            f"{e}: {len(done)}{of_total} runs are saved"
            + (f" in {out}; continue with --resume" if out else "")
        ) from None
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()  # stop the workers now, not when the generator is collected
    tables = tables_from_records(done.values(), out / SERIES_PARTS if out is not None else None)
    if out is not None:
        _write_tables(out, tables)
    return tables


class MemoryJournal:
    """A journal kept in memory, for runs without a results directory."""

    def __init__(self) -> None:
        self.records: dict[str, dict[str, Any]] = {}

    def read(self) -> dict[str, dict[str, Any]]:
        return dict(self.records)

    def append(self, record: dict[str, Any]) -> None:
        self.records[record["run_id"]] = record


class Sequential(NamedTuple):
    """What sequential mode ran: every table of its runs, whether every
    flow's interval reached the target, and the widest relative half-width
    (with the flow it belongs to)."""

    tables: Tables
    reached: bool
    widest: float
    widest_flow: str


def replicate_until(scenario: Scenario, until: float, *, max_reps: int = 100, reps: int = 3, seed: int | None = None,
                    workers: int | None = None, metric: str = "goodput_bps",
                    on_batch: Callable[[int, float], None] | None = None,
                    backend: str = "sim", out: Path | None = None, overwrite: bool = False,
                    resume: bool = False, command: list[str] | None = None) -> Sequential:
    """Sequential mode: add replications in batches (first `reps`, at least 3;
    then one per worker) until every flow's 95 % interval of `metric` has a
    half-width ≤ until × |mean|, or `max_reps` are done. `on_batch(done,
    widest)` reports progress. With `out`, every run is written there as it
    finishes, as `--reps` writes them (journal, tables, series, manifest):
    the directory is that of `max_reps` replications, of which the first
    ones ran; `resume` continues one (the runs it holds count, and the
    batches go on from there)."""
    from .stats import relative_half_width

    if not until > 0:
        raise ScenarioError(f"until: {until} is not allowed (a positive fraction of the mean, e.g. 0.05)")
    if max_reps < 1:
        raise ScenarioError(f"max_reps: {max_reps} is not allowed (at least 1)")
    full = make_plan(scenario, reps=max_reps, seed=seed, backend=backend)

    def batches(journal: Any) -> Sequential:
        done, batch = 0, max(3, reps)
        while True:
            n = min(batch, max_reps - done)
            part = replace(full, reps=n, first_rep=done)
            tables = _execute(part, out, journal, workers, None, False, None)
            done += n
            runs = tables.runs
            widths = runs[runs["subflow"].isna()].groupby("flow", sort=False)[metric].agg(
                lambda v: relative_half_width(v.tolist()))
            if on_batch:
                on_batch(done, float(widths.max()))
            reached = bool((widths <= until).all())
            if done >= max_reps or reached:
                known = widths.dropna()
                return Sequential(tables, reached, float(widths.max()), str(known.idxmax()) if len(known) else "")
            batch = workers or os.cpu_count() or 2

    if out is None:
        return batches(MemoryJournal())
    with DirectoryLock(out):
        return batches(prepare_directory(out, full, resume, command or sys.argv, "replications", overwrite))
