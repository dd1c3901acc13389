"""netbraid: throughput, loss and fairness of (multipath) transports over
the paths you describe, on a fast simulator or real stacks."""

from ._sim import __version__
from .api import jain_fairness, run, run_resolved
from .errors import ScenarioError
from .resolve import resolve
from .scenario_io import load_scenario
from .schema import Flow, Host, Link, Measure, Route, Router, Scenario, TcpOptions

__all__ = [
    "__version__",
    "Flow",
    "Host",
    "Link",
    "Measure",
    "Route",
    "Router",
    "Scenario",
    "ScenarioError",
    "TcpOptions",
    "jain_fairness",
    "load_scenario",
    "resolve",
    "run",
    "run_resolved",
]
