"""The Python API: run a scenario (a file or a ``Scenario`` built in code)."""

from __future__ import annotations

import json
import numbers
import sys
import warnings
from pathlib import Path
from typing import Any

from . import _sim
from .errors import ScenarioError
from .resolve import label_links, resolve
from .scenario_io import load_scenario, with_overrides
from .schema import Scenario


def as_scenario(scenario: Scenario | str | Path, overrides: list[str] | None = None) -> Scenario:
    if isinstance(overrides, str):
        raise ScenarioError(f"overrides: expected a list of 'PATH=VALUE' strings, e.g. [{overrides!r}]")
    if overrides is not None:
        overrides = list(overrides)  # (a generator is read once)
        if not all(isinstance(o, str) for o in overrides):
            raise ScenarioError("overrides: expected a list of 'PATH=VALUE' strings")
    if isinstance(scenario, Scenario):
        return with_overrides(scenario, overrides or [])
    if isinstance(scenario, (str, Path)):
        return load_scenario(scenario, overrides)
    raise ScenarioError(f"scenario: expected a netbraid.Scenario or the path of a TOML file, got {type(scenario).__name__}")


def resolve_scenario(scenario: Scenario | str | Path, *, seed: int | None = None,
                     pcap: list[tuple[str, str]] | None = None, backend: str = "sim",
                     overrides: list[str] | None = None) -> dict[str, Any]:
    """``nb.resolve``: the resolved scenario (a JSON-ready dict) for
    ``backend``, from a ``Scenario`` (validated again as a whole, as
    ``simulate`` does) or a scenario file; ``pcap`` is a list of (link
    direction "a->b", output path)."""
    seed, _ = check_run_options(seed=seed, pcap=pcap)
    return resolve(as_scenario(scenario, overrides), seed=seed, pcap=pcap, backend=backend)


def check_run_options(seed: Any = None, workers: Any = None, pcap: Any = None) -> tuple[int | None, int | None]:
    """The Python API's own arguments, checked as the CLI checks its options;
    returns seed and workers as Python ints (a numpy integer is welcome)."""
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
            raise ScenarioError(f"seed: {seed!r} is not allowed (an integer from 0 to 2^64-1)")
        seed = int(seed)
    if workers is not None:
        if isinstance(workers, bool) or not isinstance(workers, numbers.Integral) or workers < 1:
            raise ScenarioError(f"workers: {workers!r} is not allowed (an integer, at least 1)")
        workers = int(workers)
    if pcap is not None:
        pair = lambda p: isinstance(p, (tuple, list)) and len(p) == 2 and all(isinstance(x, (str, Path)) for x in p)  # noqa: E731
        if isinstance(pcap, str) or pair(pcap) or not all(pair(p) for p in pcap):
            raise ScenarioError(f"pcap: expected a list of (link direction, file) pairs, e.g. "
                                f"[('r1->r2', 'r1-r2.pcap')], got {pcap!r}")
    return seed, workers


def check_count(name: str, value: Any) -> None:
    """A count the Python API takes (reps, max_reps): an integer, at least 1."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1):
        raise ScenarioError(f"{name}: {value!r} is not allowed (an integer, at least 1)")


def run_resolved(resolved: dict[str, Any], backend: str = "sim") -> dict[str, Any]:
    """Run an already resolved scenario on `backend` ("sim" or "emu"; resolve
    it for that backend)."""
    if backend == "emu":
        from .emu.backend import run as run_emu

        return run_emu(resolved)
    try:
        out = _sim.run_json(json.dumps(resolved))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    return label_links(json.loads(out), resolved)


def simulate(
    scenario: Scenario | str | Path,
    *,
    seed: int | None = None,
    overrides: list[str] | None = None,
    pcap: list[tuple[str, str]] | None = None,
    backend: str = "sim",
) -> dict[str, Any]:
    """Run one scenario once and return its raw results: a dict with
    ``flows`` (per-flow metrics), ``links``, ``events``, ``wall_s`` and, if
    the scenario asks for it on sim (``measure.interval``), ``series``.
    ``backend="emu"`` runs it on real Linux stacks (root; see docs/emu.md)."""
    seed, _ = check_run_options(seed=seed, pcap=pcap)
    s = as_scenario(scenario, overrides)
    return run_resolved(resolve(s, seed=seed, pcap=pcap, backend=backend), backend)


def run(
    scenario: Scenario | str | Path,
    *,
    reps: int = 1,
    seed: int | None = None,
    overrides: list[str] | None = None,
    workers: int | None = None,
    until: float | None = None,
    max_reps: int = 100,
    metric: str = "goodput_bps",
    progress: bool | None = None,
) -> "pd.DataFrame":
    """Run replications of one scenario; one row per replication × flow.
    A progress bar is shown by default in interactive use (a terminal, a
    notebook); ``progress=False`` turns it off.

    With ``until`` (e.g. 0.05), replications are added in batches until the
    95 % interval of ``metric`` is within ±until × mean for every flow, or
    ``max_reps`` is reached (sequential mode; a warning says when the
    target was not reached, and ``df.attrs["until"]`` holds whether it
    was and the widest interval). Replication r uses seed
    (seed or the scenario's) + r. Time series, if sampled, are in
    ``df.attrs["series"]``; per link direction, ``df.attrs["links"]`` and
    ``df.attrs["link_series"]``."""
    from .experiment import execute_tables, make_plan, replicate_until

    seed, workers = check_run_options(seed=seed, workers=workers)
    check_count("reps", reps)
    check_count("max_reps", max_reps)
    s = as_scenario(scenario, overrides)
    if until is None:
        return _with_tables(execute_tables(make_plan(s, reps=reps, seed=seed), workers=workers,
                                           progress=interactive() if progress is None else progress,
                                           label=f"{s.name}: replications"))
    seq = replicate_until(s, until, max_reps=max_reps, reps=reps, seed=seed, workers=workers, metric=metric)
    if not seq.reached:
        warnings.warn(f"until={until:g} not reached: after max_reps={max_reps} replications the widest {metric} "
                      f"interval is ±{100 * seq.widest:.1f} % of the mean"
                      + (f" (flow {seq.widest_flow})" if seq.widest_flow else ""), stacklevel=2)
    runs = _with_tables(seq.tables)
    runs.attrs["until"] = {"target": until, "reached": seq.reached, "widest": seq.widest}
    return runs


def _with_tables(t) -> "pd.DataFrame":
    """The run × flow table, the other tables in its ``attrs`` ("series",
    "links", "link_series"). pandas cannot write DataFrames in ``attrs`` to
    Parquet: ``df.attrs.clear()`` first, or pass ``out=`` and read it back
    with ``nb.load``."""
    t.runs.attrs.update(series=t.series, links=t.links, link_series=t.link_series)
    return t.runs


def sweep(
    scenario: Scenario | str | Path,
    grid: dict[str, list[Any]] | None = None,
    zip: dict[str, list[Any]] | None = None,
    *,
    reps: int | None = None,
    seed: int | None = None,
    overrides: list[str] | None = None,
    out: str | Path | None = None,
    resume: bool = False,
    workers: int | None = None,
    dask: Any = None,
    progress: bool | None = None,
) -> "pd.DataFrame":
    """Run a sweep: the Cartesian product of ``grid`` axes (path → values),
    crossed with the ``zip`` axes taken together, each point ``reps`` times.
    Axes and reps declared in the scenario's ``[sweep]`` come first. With
    ``out``, results are written there as runs finish and ``resume=True``
    continues an interrupted sweep. ``dask`` is a scheduler address or a
    ``distributed.Client``. Returns one row per run × flow; time series in
    ``df.attrs["series"]``, link rows and queue series in ``df.attrs["links"]``
    and ``df.attrs["link_series"]`` (or ``nb.load(out)``: all as one object).
    A progress bar is shown by default in interactive use."""
    from .experiment import execute_tables, make_plan

    seed, workers = check_run_options(seed=seed, workers=workers)
    check_count("reps", reps)
    s = as_scenario(scenario, overrides)
    grid_axes, zip_axes = sweep_axes(s, grid or {}, zip or {})
    n = reps if reps is not None else (s.sweep.reps if s.sweep and s.sweep.reps else 1)
    plan = make_plan(s, grid_axes, zip_axes, reps=n, seed=seed)
    return _with_tables(execute_tables(plan, Path(out) if out is not None else None, resume=resume, workers=workers,
                                       dask=dask, progress=interactive() if progress is None else progress,
                                       label=f"sweep of {s.name}"))


def sweep_axes(s: Scenario, grid: dict[str, list[Any]], zip: dict[str, list[Any]]):
    """The scenario's declared axes, then these (a path given again replaces the declared one)."""
    from .experiment import Axis

    declared_grid = dict(s.sweep.grid) if s.sweep else {}
    declared_zip = dict(s.sweep.zip) if s.sweep else {}
    for option, given in (("grid", grid), ("zip", zip)):
        if not isinstance(given, dict):
            raise ScenarioError(f"{option}: expected a dict of path → list of values, got {type(given).__name__}")
        for path, values in given.items():
            if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__iter__"):
                raise ScenarioError(f"{option}[{path!r}]: expected a list of values, e.g. [{values!r}], "
                                    f"got {type(values).__name__}")
    declared_grid.update(grid)
    declared_zip.update(zip)
    for path in set(declared_grid) & set(declared_zip):
        raise ScenarioError(f"the axis {path!r} is both a grid axis and a zip axis")
    return ([Axis(p, tuple(v)) for p, v in declared_grid.items()], [Axis(p, tuple(v)) for p, v in declared_zip.items()])


def interactive() -> bool:
    """Whether a person is watching: a notebook or IPython, the Python
    prompt, or a terminal on stderr (where progress bars go)."""
    try:
        from IPython import get_ipython  # only present where IPython is installed

        if get_ipython() is not None:
            return True
    except ImportError:
        pass
    return hasattr(sys, "ps1") or sys.stderr.isatty()


def jain_fairness(values: list[float]) -> float:
    """Jain's index: 1 when all equal, 1/n when one takes everything."""
    if not values:
        return float("nan")
    s, sq = sum(values), sum(v * v for v in values)
    return s * s / (len(values) * sq) if sq > 0 else 1.0
