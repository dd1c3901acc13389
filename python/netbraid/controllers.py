"""The simulator's congestion controllers and their parameters, read from
the one list the Rust core keeps (``_sim.controllers_json``): nothing here is
written down a second time."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from . import _sim


@lru_cache(maxsize=1)
def controllers() -> tuple[dict[str, Any], ...]:
    """[{name, aliases, doc, params: [{name, doc, kind: {type, default, min, max}}]}], in the order users see them."""
    return tuple(json.loads(_sim.controllers_json()))


def sim_cc_names() -> tuple[str, ...]:
    """Every name `cc` accepts on sim, aliases included (reno, newreno, cubic, …)."""
    return tuple(n for c in controllers() for n in (c["name"], *c["aliases"]))


def canonical(name: str) -> str:
    """The controller an alias stands for (newreno → reno); unknown names unchanged."""
    return next((c["name"] for c in controllers() if name == c["name"] or name in c["aliases"]), name)


def describe_param(p: dict[str, Any]) -> str:
    """`beta` → "number, default 0.7, 0.1 to 0.95"."""
    k = p["kind"]
    if k["type"] == "flag":
        return f"true/false, default {str(k['default']).lower()}"
    return f"number, default {k['default']:g}, {k['min']:g} to {k['max']:g}"
