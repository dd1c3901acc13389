"""The Python API: run a scenario (a file or a ``Scenario`` built in code)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import _sim
from .errors import ScenarioError
from .resolve import resolve
from .scenario_io import load_scenario, with_overrides
from .schema import Scenario


def as_scenario(scenario: Scenario | str | Path, overrides: list[str] | None = None) -> Scenario:
    if isinstance(scenario, Scenario):
        return with_overrides(scenario, overrides or [])
    return load_scenario(scenario, overrides)


def run_resolved(resolved: dict[str, Any]) -> dict[str, Any]:
    """Run an already resolved scenario on the simulator."""
    try:
        out = _sim.run_json(json.dumps(resolved))
    except ValueError as e:
        raise ScenarioError(str(e)) from None
    return json.loads(out)


def run(
    scenario: Scenario | str | Path,
    *,
    seed: int | None = None,
    overrides: list[str] | None = None,
    pcap: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """Run one scenario once on the simulator and return its results: a dict
    with ``flows`` (per-flow metrics), ``links``, ``events``, ``wall_s`` and,
    if the scenario asks for it (``measure.interval``), ``series``."""
    s = as_scenario(scenario, overrides)
    return run_resolved(resolve(s, seed=seed, pcap=pcap))


def jain_fairness(values: list[float]) -> float:
    """Jain's index: 1 when all equal, 1/n when one takes everything."""
    if not values:
        return float("nan")
    s, sq = sum(values), sum(v * v for v in values)
    return s * s / (len(values) * sq) if sq > 0 else 1.0
