"""`--set PATH=VALUE`: change any scenario field from the command line.

PATH walks the scenario as written: table keys separated by dots; list
elements by position (``links.0.rate``) or by their ``name``
(``flows.bulk.cc``). VALUE is read as a TOML value when it is one (numbers,
true/false, "strings", [arrays], {inline = "tables"}), otherwise as a plain
string, so ``--set links.0.rate=20Mbps`` needs no quotes.
"""

from __future__ import annotations

import tomllib
from typing import Any

from .errors import ScenarioError


def parse_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def _step(container: Any, key: str, assignment: str, create: bool) -> Any:
    if isinstance(container, list):
        if key.isdigit():
            idx = int(key)
            if idx >= len(container):
                raise ScenarioError(f"--set {assignment}: index {idx} is out of range (the list has {len(container)} element(s))")
            return idx
        names = [e.get("name") for e in container if isinstance(e, dict)]
        if key in names:
            return names.index(key)
        raise ScenarioError(
            f"--set {assignment}: no element named '{key}' (have: {', '.join(map(str, names)) or 'none'}; or use a position, e.g. 0)"
        )
    if isinstance(container, dict):
        if key not in container and create:
            container[key] = {}
        return key
    raise ScenarioError(f"--set {assignment}: '{key}' goes inside a value that is not a table or list")


def apply_override(data: dict[str, Any], assignment: str) -> None:
    if "=" not in assignment:
        raise ScenarioError(f"--set {assignment!r}: expected PATH=VALUE, e.g. --set links.0.rate=20Mbps")
    path, raw = assignment.split("=", 1)
    parts = [p for p in path.strip().split(".")]
    if not path.strip() or any(not p for p in parts):
        raise ScenarioError(f"--set {assignment!r}: the path is empty or has an empty part")
    cur: Any = data
    for part in parts[:-1]:
        cur = cur[_step(cur, part, assignment, create=True)]
    cur[_step(cur, parts[-1], assignment, create=False)] = parse_value(raw.strip())


def apply_overrides(data: dict[str, Any], assignments: list[str]) -> dict[str, Any]:
    for a in assignments:
        apply_override(data, a)
    return data
