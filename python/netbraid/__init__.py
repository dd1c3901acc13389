"""netbraid: throughput, loss and fairness of (multipath) transports over
the paths you describe, on a fast simulator or real stacks."""

from ._sim import __version__
from .api import jain_fairness, run, run_resolved, simulate, sweep
from .errors import ScenarioError
from .resolve import resolve
from .scenario_io import load_scenario
from .experiment import ExperimentError
from .schema import Flow, Host, Link, Measure, Route, Router, Scenario, Sweep, TcpOptions
from . import stats
from .stats import mean_ci, summarize

__all__ = [
    "__version__",
    "ExperimentError",
    "Sweep",
    "mean_ci",
    "simulate",
    "summarize",
    "sweep",
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
