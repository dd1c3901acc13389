"""Thin helpers around ip(8) and sysctl(8); a failing command raises
EmuError with the command and what it printed."""

from __future__ import annotations

import subprocess
from typing import Sequence

from ..lifetime import die_with_parent


class EmuError(Exception):
    """An emu run failed for a reason outside the scenario (a command, a tool)."""


def run(cmd: Sequence[str], *, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(list(cmd), input=input, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise EmuError(f"command failed ({r.returncode}): {' '.join(cmd)}\n{(r.stderr or r.stdout).strip()}")
    return r


def in_ns(ns: str, cmd: Sequence[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


def ip_batch(lines: list[str], ns: str | None = None) -> None:
    """Run many ip(8) commands in one process (much faster than one each)."""
    if not lines:
        return
    cmd = ["ip"] + (["-n", ns] if ns else []) + ["-batch", "-"]
    run(cmd, input="\n".join(lines) + "\n")


def sysctl(ns: str, settings: dict[str, str | int]) -> None:
    if settings:
        run(in_ns(ns, ["sysctl", "-q", "-w", *[f"{k}={v}" for k, v in settings.items()]]))


def spawn(ns: str, cmd: Sequence[str], **kw) -> subprocess.Popen:
    return subprocess.Popen(in_ns(ns, cmd), preexec_fn=die_with_parent, **kw)
