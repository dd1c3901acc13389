"""netbraid: throughput, loss and fairness of (multipath) transports over
the paths you describe, on a fast simulator or real stacks.

Names are imported on first use (PEP 562), so that small entry points such as
``netbraid-linkemu`` and the emu traffic tools start without loading pandas
and scipy."""

from importlib import import_module
from typing import Any

from ._sim import __version__

# `resolve` is both a submodule and a function; bind the function eagerly, or
# the first import of the submodule would shadow it (pydantic only, no pandas).
# The API's: a Scenario (checked again as a whole) or a scenario file.
from .api import resolve_scenario as resolve

_WHERE = {
    "jain_fairness": "api",
    "run": "api",
    "run_resolved": "api",
    "simulate": "api",
    "sweep": "api",
    "ScenarioError": "errors",
    "load_scenario": "scenario_io",
    "ExperimentError": "experiment",
    "Flow": "schema",
    "Host": "schema",
    "Link": "schema",
    "Measure": "schema",
    "Route": "schema",
    "Router": "schema",
    "Scenario": "schema",
    "Sweep": "schema",
    "TcpOptions": "schema",
    "load": "results",
    "Results": "results",
    "mean_ci": "stats",
    "summarize": "stats",
}

__all__ = ["__version__", "resolve", "stats", *_WHERE]


def __getattr__(name: str) -> Any:
    if name == "stats":
        return import_module(".stats", __name__)
    if name in _WHERE:
        return getattr(import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module 'netbraid' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
