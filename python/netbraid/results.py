"""`nb.load(DIR)`: any results directory netbraid writes — one run (`run
--out`), replications (`run --reps N --out`), a sweep, a paper — as the same
DataFrames."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .experiment import (JOURNAL, MANIFEST, SERIES_PARTS, DamagedResults, ExperimentError, Journal,
                         tables_from_records)
from .stats import summarize
from .tidy import FLOW_METRICS, LINK_METRICS, flow_rows, link_rows, with_metric_columns


@dataclass
class Results:
    """The tables of a results directory.

    - ``flows``: one row per run × flow; an MPTCP flow's subflows and a
      relayed flow's legs follow it as rows with ``subflow`` set;
    - ``links``: one row per run × link direction (``link`` is "a->b",
      utilisation, queue and loss drops);
    - ``series`` / ``link_series``: time series (with ``measure.interval``)
      of flows and of queue lengths, long format;
    - ``manifest``: what was run (axes, replications, seeds, command).

    Every row carries its run's ``run_id``, ``seed`` and swept values, so
    ``summary()`` (or ``nb.summarize``) can group by any of them."""

    flows: pd.DataFrame
    links: pd.DataFrame
    series: pd.DataFrame = field(default_factory=pd.DataFrame)
    link_series: pd.DataFrame = field(default_factory=pd.DataFrame)
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def axes(self) -> list[str]:
        """The swept fields (empty for one run or replications)."""
        return [a for a in self.manifest.get("axes", []) if a in self.flows.columns]

    def summary(self, what: str = "flows") -> pd.DataFrame:
        """Mean, 95 % interval and its own ``n`` of every metric, per flow
        (``what="flows"``) or link direction (``"links"``) and swept point."""
        if what == "links":
            return summarize(self.links, self.axes + ["link"], LINK_METRICS)
        flows = self.flows[self.flows["subflow"].isna()] if "subflow" in self.flows else self.flows
        return summarize(flows, self.axes + ["flow", "kind"], FLOW_METRICS)

    def _repr_html_(self) -> str:
        """A notebook's view: what was run, and the flows' and busy links'
        means with their intervals (``summary()``)."""
        import html

        runs = self.flows["run_id"].nunique() if "run_id" in self.flows else 0
        head = f"<strong>netbraid results</strong>: {runs} run(s)"
        if self.axes:
            head += ", swept: " + html.escape(", ".join(self.axes))
        flows = self.summary("flows")
        keep = [c for c in flows.columns if not c.endswith(("_ci95_low", "_ci95_high", "_n")) or c == "n"]
        parts = [f"<div>{head}", "<p>flows (means; <code>summary()</code> has the intervals)</p>",
                 flows[[c for c in keep if not flows[c].isna().all()]].to_html(index=False, max_rows=40)]
        if len(self.links):
            links = self.summary("links")
            busy = links[(links["utilisation_mean"] >= 0.01) | (links["queue_drops_mean"] > 0)
                         | (links["loss_drops_mean"] > 0)]
            if len(busy):
                lk = [c for c in busy.columns if c.endswith("_mean") or c in ("link", "n", *self.axes)]
                parts += ["<p>link directions ≥ 1 % busy or dropping</p>", busy[lk].to_html(index=False, max_rows=40)]
        return "".join(parts) + "</div>"

    def __repr__(self) -> str:
        runs = self.flows["run_id"].nunique() if "run_id" in self.flows else 0
        return (f"Results({runs} run(s), {len(self.flows)} flow rows, {len(self.links)} link rows, "
                f"{len(self.series)} series rows, axes={self.axes})")


#: What holds a results directory's runs: the journal (replications, sweeps,
#: papers), the tables alone, or one run's result.
RESULT_FILES = (JOURNAL, "runs.parquet", "result.json")


def load(directory: str | Path) -> Results:
    """Read a results directory written by netbraid (any command's `--out`)."""
    d = Path(directory)
    if d.is_file():
        raise ExperimentError(f"{d} is a file; a results directory is what --out wrote (e.g. netbraid run "
                              "SCENARIO --out DIR, then DIR here)")
    if not d.is_dir():
        raise ExperimentError(f"{d}: no such results directory")
    try:
        return _load(d)
    except (ValueError, KeyError) as e:
        # (json's and pyarrow's parse errors are ValueErrors; a record without a field netbraid writes, a KeyError)
        what = f"no field {e}" if isinstance(e, KeyError) else str(e).splitlines()[0] if str(e) else type(e).__name__
        raise DamagedResults(f"{d}: its results cannot be read ({what}): a file there is damaged or not one "
                             "netbraid wrote; make them again with the command that wrote the directory") from e
    except OSError as e:
        raise ExperimentError(f"{d}: cannot read its results: {e.strerror or e} ({e.filename or d})") from e


def _json(path: Path) -> Any:
    """A JSON file of a results directory; a damaged one is named."""
    try:
        return json.loads(path.read_text())
    except ValueError as e:
        raise DamagedResults(f"{path}: not valid JSON ({e}): damaged, or not a file netbraid wrote; make the "
                             "results again with the command that wrote the directory") from e


def _load(d: Path) -> Results:
    manifest = _json(d / MANIFEST) if (d / MANIFEST).exists() else {}
    if (d / JOURNAL).exists():
        runs, series, links, link_series = tables_from_records(Journal(d).read().values(), d / SERIES_PARTS)
    elif (d / "runs.parquet").exists():
        runs = with_metric_columns(pd.read_parquet(d / "runs.parquet"), FLOW_METRICS)
        read = lambda name: pd.read_parquet(d / name) if (d / name).exists() else pd.DataFrame()  # noqa: E731
        series, links, link_series = read("series.parquet"), read("links.parquet"), read("link_series.parquet")
        links = with_metric_columns(links, LINK_METRICS)
    elif (d / "result.json").exists():
        return _load_run(d)
    elif parts := _parts(d):
        return _load_parts(d, parts)
    else:
        raise ExperimentError(f"{d} holds no results (no {', '.join(RESULT_FILES)}, here or in a "
                              "directory below); make them with netbraid run --out, run --reps --out, "
                              "netbraid sweep --out or netbraid paper --out")
    return Results(runs, links, series, link_series, manifest)


def _parts(d: Path, depth: int = 3) -> list[Path]:
    """The results directories below `d` (a paper's --out holds one per
    configuration, some two levels down), in order of their paths."""
    found = []
    for sub in sorted(p for p in d.iterdir() if p.is_dir()):
        if any((sub / f).exists() for f in (MANIFEST, *RESULT_FILES)):
            found.append(sub)
        elif depth > 1:
            found += _parts(sub, depth - 1)
    return found


def _load_parts(d: Path, parts: list[Path]) -> Results:
    """Several results directories as one: every row gets `part` (the
    directory's path below `d`), the first axis, and run_ids are prefixed
    with it so that runs of different parts stay apart."""
    tables: dict[str, list[pd.DataFrame]] = {"flows": [], "links": [], "series": [], "link_series": []}
    axes = ["part"]
    loaded = []
    for sub in parts:
        try:
            loaded.append((sub, load(sub)))
        except DamagedResults:
            raise  # named, not passed over: a part missing from the tables would go unnoticed
        except ExperimentError:
            continue  # a part that has no finished run yet (a paper still running, or stopped early)
    if not loaded:
        raise ExperimentError(f"{d} holds results directories with no finished runs yet "
                              f"({', '.join(p.relative_to(d).as_posix() for p in parts[:5])})")
    for sub, r in loaded:
        name = sub.relative_to(d).as_posix()
        axes += [a for a in r.axes if a not in axes]
        for key, df in tables.items():
            t = getattr(r, key)
            if t.empty:
                continue
            t = t.copy()
            if "run_id" in t:
                t["run_id"] = name + "/" + t["run_id"].astype(str)
            t.insert(0, "part", name)
            df.append(t)
    joined = {k: pd.concat(v, ignore_index=True) if v else pd.DataFrame() for k, v in tables.items()}
    return Results(joined["flows"], joined["links"], joined["series"], joined["link_series"],
                   {"kind": "parts", "parts": [p.relative_to(d).as_posix() for p, _ in loaded], "axes": axes})


def _load_run(d: Path) -> Results:
    """A single run's directory (`netbraid run --out`)."""
    result = _json(d / "result.json")
    if not isinstance(result, dict) or not isinstance(result.get("flows"), list):
        raise DamagedResults(f"{d / 'result.json'}: not a run's results (no list of flows); make them again with "
                             "netbraid run SCENARIO --out DIR")
    command = _json(d / "command.json") if (d / "command.json").exists() else {}
    context = {"run_id": "r0", "point": 0, "rep": 0, "seed": result.get("seed")}

    def read(name: str) -> pd.DataFrame:  # the same columns as a sweep's series: context first
        if not (d / name).exists():
            return pd.DataFrame()
        df = pd.read_csv(d / name)
        return pd.concat([pd.DataFrame([context] * len(df)), df], axis=1)

    series, link_series = read("series_flows.csv"), read("series_links.csv")
    return Results(pd.DataFrame(flow_rows(result, context)), pd.DataFrame(link_rows(result, context)), series,
                   link_series, {"axes": [], "command": command.get("argv"), "seed": result.get("seed")})
