"""Results directories: writing one run's results with everything needed to
re-run it exactly (the resolved scenario, the command line, the version, the
seed), and making sure a directory is written by one command at a time and
never gets another command's or another scenario's results mixed in."""

from __future__ import annotations

import csv
import errno
import fcntl
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from ._sim import __version__
from .errors import DirectoryError
from .tidy import FLOW_METRICS, LINK_METRICS, SERIES_COLUMNS, link_series_rows, links_text, paths_of, series_rows

FLOW_COLUMNS = ["name", "kind", "src", "dst", "src_addr", "dst_addr", *FLOW_METRICS, "link_names", "links"]
SUBFLOW_COLUMNS = [
    "flow", "name", "src_addr", "dst_addr", "throughput_bps", "goodput_bps", "loss_rate", "retransmits",
    "packets_sent", "packets_lost", "timeouts", "fast_retransmits", "rtt_mean_s", "srtt_s", "srtt_mean_s",
    "cwnd_mean_bytes", "cwnd_bytes", "bytes_acked", "share", "from", "to", "relay_buffer_max_bytes", "link_names", "links",
]
LINK_COLUMNS = ["name", "link_name", "from", "to", *LINK_METRICS]


LOCK_FILE = ".netbraid.lock"
#: What a single `netbraid run --out` writes (pcap files are named by the user's --pcap).
RUN_FILES = ["scenario.resolved.json", "scenario.json", "command.json", "result.json", "flows.csv", "subflows.csv",
             "links.csv", "series_flows.csv", "series_links.csv"]
#: What replications, sweeps and their reports write (experiment.py, report.py).
EXPERIMENT_FILES = ["manifest.json", "manifest.tmp", "journal.jsonl", "series-parts", "runs.parquet", "runs.csv",
                    "series.parquet", "links.parquet", "links.csv", "link_series.parquet", "scenario.resolved.json",
                    "report", "plots"]


class DirectoryLock:
    """One writer per results directory: an exclusive flock on `.netbraid.lock`.
    The kernel drops the lock when its holder dies, however it dies, so a
    lock is never stale; the holder's pid and command are written in the file
    only to say who holds it."""

    def __init__(self, directory: Path):
        self.path = directory / LOCK_FILE
        self.fd: int | None = None

    def __enter__(self) -> "DirectoryLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip()
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise DirectoryError(
                    f"{self.path.parent} is being written by another netbraid ({holder or 'unknown process'}); "
                    "wait for it to finish, or choose another --out") from None
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {' '.join(sys.argv)}\n".encode(), 0)
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing drops the flock; the file stays (unlinking it would race a new holder)
            self.fd = None


def listed(directory: Path) -> list[str]:
    """The directory's entries, without netbraid's lock file."""
    return sorted(p.name for p in directory.iterdir() if p.name != LOCK_FILE) if directory.is_dir() else []


def made_by(directory: Path) -> str | None:
    """Which kind of command made `directory`: "run" (one run), the kind in
    its manifest ("sweep", "replications", or "sweep" for directories made
    before kinds were recorded), or None when netbraid did not write it."""
    manifest = directory / "manifest.json"
    if manifest.exists():
        try:
            return json.loads(manifest.read_text()).get("kind", "sweep")
        except (OSError, ValueError):
            return "sweep"
    if (directory / "command.json").exists() and (directory / "result.json").exists():
        return "run"
    return None


KIND_COMMANDS = {"run": "netbraid run", "replications": "netbraid run --reps", "sweep": "netbraid sweep"}


def describe_kind(kind: str) -> str:
    return KIND_COMMANDS.get(kind, f"netbraid {kind}")


def remove_results(directory: Path) -> None:
    """--overwrite: remove the files netbraid wrote there (nothing else)."""
    for name in {*RUN_FILES, *EXPERIMENT_FILES}:
        p = directory / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def check_run_directory(out: Path, scenario_input: dict[str, Any], overwrite: bool) -> None:
    """Before a single run writes `out`: refuse a directory holding another
    command's results, or a single run of another scenario, unless `overwrite`
    (which removes them). Re-running the same scenario into its own directory
    replaces its results, as a re-run should."""
    kind = made_by(out)
    if kind is None:
        return
    if kind != "run":
        if not overwrite:
            raise DirectoryError(
                f"--out: {out} holds the results of `{describe_kind(kind)}`; a single run there would mix its "
                "records with them. Choose another --out, or pass --overwrite to replace them")
        remove_results(out)
        return
    try:
        before = json.loads((out / "scenario.json").read_text())
    except (OSError, ValueError):
        before = None
    if before != json.loads(json.dumps(scenario_input)) and not overwrite:
        raise DirectoryError(
            f"--out: {out} holds a run of another scenario (its scenario.json differs); "
            "choose another --out, or pass --overwrite to replace it")
    if overwrite:
        remove_results(out)


def _write_csv(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in columns})


def write_run(out: Path, result: dict[str, Any], resolved: dict[str, Any], scenario_input: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "scenario.resolved.json").write_text(json.dumps(resolved, indent=2))
    (out / "scenario.json").write_text(json.dumps(scenario_input, indent=2))
    (out / "command.json").write_text(json.dumps({
        "argv": sys.argv,
        "netbraid_version": __version__,
        "seed": resolved["seed"],
        "written_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }, indent=2))
    series = result.get("series")
    (out / "result.json").write_text(json.dumps({k: v for k, v in result.items() if k != "series"}, indent=2))
    as_text = lambda row: {k: links_text(row.get(k)) for k in ("links", "link_names")}  # noqa: E731
    _write_csv(out / "flows.csv", FLOW_COLUMNS, [{**f, **as_text(f)} for f in result["flows"]])
    subflows = [{**sub, "flow": f["name"], **as_text(sub)}
                for f in result["flows"] for sub in paths_of(f)]
    if subflows:
        _write_csv(out / "subflows.csv", SUBFLOW_COLUMNS, subflows)
    _write_csv(out / "links.csv", LINK_COLUMNS, [{**l} for l in result["links"]])
    if series:
        _write_csv(out / "series_flows.csv", ["time_s", "flow", "subflow", *SERIES_COLUMNS], series_rows(result, {}))
        _write_csv(out / "series_links.csv", ["time_s", "link", "queue_packets", "queue_bytes"],
                   link_series_rows(result, {}))
