"""Run-unique names and the record of what each run created.

Every namespace a run creates is named ``<run id>-<node index>`` and every
TUN device ``<run id>l<link><a|b>``; the run id is ``nb`` + 6 hex digits. A
run writes its record (owner pid and start time, namespaces) *before* it
creates anything, so whatever a crash leaves behind is listed somewhere.
``cleanup_stale`` removes what runs whose owner is gone left behind, and
nothing else: namespaces of live runs and namespaces netbraid did not
create are never touched.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

STATE_DIR = Path(os.environ.get("NETBRAID_EMU_STATE", "/run/netbraid"))


def new_run_id() -> str:
    return "nb" + secrets.token_hex(3)


def process_start_time(pid: int) -> int | None:
    """Start time of `pid` in clock ticks since boot (field 22 of stat), to
    tell a live owner from a reused pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


class RunRecord:
    def __init__(self, run_id: str):
        self.run_id = run_id
        self.path = STATE_DIR / f"{run_id}.json"
        self.data: dict[str, Any] = {
            "run_id": run_id,
            "pid": os.getpid(),
            "start_time": process_start_time(os.getpid()),
            "namespaces": [],
        }

    def save(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data))
        os.replace(tmp, self.path)

    def keep_workdir(self, path: Path) -> None:
        """The run's temporary directory (logs, iperf3 output)."""
        self.data["workdir"] = str(path)
        self.save()

    def plan_namespaces(self, names: list[str]) -> None:
        self.data["namespaces"] = list(names)
        self.save()

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def existing_namespaces() -> set[str]:
    r = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    return {line.split()[0] for line in r.stdout.splitlines() if line.strip()}


def kill_namespace_processes(ns: str) -> None:
    r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    for pid in r.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


def delete_namespaces(names: list[str]) -> list[str]:
    """Kill what runs in each namespace, then delete it; returns the names deleted."""
    present = existing_namespaces()
    gone = []
    for ns in names:
        if ns not in present:
            continue
        kill_namespace_processes(ns)
        if subprocess.run(["ip", "netns", "del", ns], capture_output=True).returncode == 0:
            gone.append(ns)
    return gone


def owner_alive(data: dict[str, Any]) -> bool:
    pid, started = data.get("pid"), data.get("start_time")
    return isinstance(pid, int) and started is not None and process_start_time(pid) == started


def cleanup_stale() -> list[str]:
    """Remove the namespaces of runs whose owner process is gone; returns
    what was removed (namespaces, and the records themselves)."""
    removed: list[str] = []
    if not STATE_DIR.is_dir():
        return removed
    for rec in sorted(STATE_DIR.glob("nb*.json")):
        try:
            data = json.loads(rec.read_text())
        except (OSError, ValueError):
            continue
        if owner_alive(data):
            continue
        removed += delete_namespaces(list(data.get("namespaces", [])))
        rec.unlink(missing_ok=True)
        removed.append(f"record {rec.name}")
    for tmp in STATE_DIR.glob("nb*.tmp"):
        tmp.unlink(missing_ok=True)
    removed += remove_stale_workdirs()
    return removed


def remove_stale_workdirs() -> list[str]:
    """Temporary directories (netbraid-<run id>-*) of runs that are not live:
    a run killed before its record was written leaves only this."""
    live = set()
    for rec in STATE_DIR.glob("nb*.json") if STATE_DIR.is_dir() else []:
        try:
            data = json.loads(rec.read_text())
        except (OSError, ValueError):
            continue
        if owner_alive(data):
            live.add(data.get("run_id"))
    removed = []
    for d in sorted(Path(tempfile.gettempdir()).glob("netbraid-nb*-*")):
        run_id = d.name.split("-")[1]
        if d.is_dir() and not d.is_symlink() and run_id not in live:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(f"directory {d}")
    return removed
