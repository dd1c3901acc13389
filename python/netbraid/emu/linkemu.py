"""The link emulator process: ``netbraid-linkemu CONFIG.json``.

The emulator itself is Rust (crates/netbraid-linkemu), built into the
``netbraid._sim`` extension so that ``pip install`` is the only setup step;
this module is its command-line entry point and the orchestrator's handle
on one running emulator."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from ..lifetime import die_with_parent
from .netns import EmuError


def main() -> None:
    from .. import _sim

    sys.exit(_sim.linkemu_main(sys.argv[1:]))


def command() -> list[str]:
    """How to start the emulator: the installed command, or this module."""
    return [sys.executable, "-c", "from netbraid.emu.linkemu import main; main()"]


class LinkEmulator:
    """One emulator process serving every link of a run."""

    def __init__(self, config: dict[str, Any], workdir: Path):
        self.config_path = workdir / "linkemu.json"
        self.stats_path = workdir / "linkemu-stats.json"
        config = {**config, "stats": str(self.stats_path)}
        self.config_path.write_text(json.dumps(config))
        self.proc: subprocess.Popen | None = None
        self.ready: dict[str, Any] = {}

    def start(self, timeout: float = 15.0) -> None:
        self.proc = subprocess.Popen(
            [*command(), str(self.config_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, preexec_fn=die_with_parent,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if r:
                line = self.proc.stdout.readline()
                if line:
                    self.ready = json.loads(line)
                    return
            if self.proc.poll() is not None:
                break
        err = self.proc.stderr.read() if self.proc.poll() is not None else "(no answer)"
        self.stop()
        raise EmuError(f"netbraid-linkemu did not start: {err.strip()}")

    def _read_stats(self) -> dict[str, Any]:
        try:
            return json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return {}

    def snapshot(self, timeout: float = 1.0) -> dict[str, Any] | None:
        """The counters now: the emulator writes them on SIGUSR1, stamped
        with when it read them (`taken_ns`); None if no fresh copy came."""
        if self.proc is None or self.proc.poll() is not None:
            return None
        asked = time.time_ns()
        self.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stats = self._read_stats()
            if stats.get("taken_ns", 0) >= asked:
                return stats
            time.sleep(0.002)
        return None

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system, all threads) the emulator has used."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, AttributeError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> dict[str, Any]:
        """Stop the emulator (its TUN devices vanish with it); returns the
        final counters, with the CPU time it used."""
        cpu = self.cpu_seconds() if self.proc is not None else None
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return {**self._read_stats(), "cpu_s": cpu}

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None


if __name__ == "__main__":  # pragma: no cover
    main()
