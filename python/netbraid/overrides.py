"""`--set PATH=VALUE`: change any scenario field from the command line.

PATH walks the scenario as written: table keys separated by dots; list
elements by position (``links.0.rate``) or by their ``name``
(``flows.bulk.cc``, ``links.wan.delay``); a link without a name is named by
its ends as written (``links.client-r1.delay``; ``client-r1#2`` for the
second such link between them). VALUE is read as a TOML value when it is one (numbers,
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
    except (tomllib.TOMLDecodeError, RecursionError):
        return raw


def element_names(container: list[Any]) -> list[str | None]:
    """The name of each element of a scenario list: its `name`; a link
    without one is named by its ends, "a-b", and "a-b#2", "#3", … for the
    second, third, … unnamed link between the same ends (as written)."""
    names: list[str | None] = []
    seen: dict[str, int] = {}
    for e in container:
        if isinstance(e, dict) and e.get("name") is not None:
            names.append(str(e["name"]))
        elif isinstance(e, dict) and "a" in e and "b" in e:
            base = f"{e['a']}-{e['b']}"
            seen[base] = seen.get(base, 0) + 1
            names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
        else:
            names.append(None)
    return names


def _step(container: Any, key: str, origin: str, create: bool) -> Any:
    if isinstance(container, list):
        if key.isdigit():
            idx = int(key)
            if idx >= len(container):
                raise ScenarioError(f"{origin}: index {idx} is out of range (the list has {len(container)} element(s))")
            return idx
        names = element_names(container)
        if key in names:
            return names.index(key)
        have = ", ".join(str(n) for n in names if n is not None)
        raise ScenarioError(f"{origin}: no element named '{key}' (have: {have or 'none'}; or use a position, e.g. 0)")
    if isinstance(container, dict):
        if key not in container and create:
            container[key] = {}
        return key
    raise ScenarioError(f"{origin}: '{key}' goes inside a value that is not a table or list")


def split_assignment(assignment: str, option: str = "--set", example: str = "links.0.rate=20Mbps") -> tuple[str, str]:
    """"PATH=VALUE" → (PATH, VALUE), with a clear error for anything else."""
    if "=" not in assignment:
        what = "KEY=VALUE" if "." not in example.split("=")[0] else "PATH=VALUE"
        raise ScenarioError(f"{option} {assignment!r}: expected {what}, e.g. {option} {example}")
    path, raw = assignment.split("=", 1)
    path = path.strip()
    if not path or any(not p for p in path.split(".")):
        raise ScenarioError(f"{option} {assignment!r}: the path is empty or has an empty part")
    return path, raw.strip()


def set_path(data: dict[str, Any], path: str, value: Any, origin: str) -> None:
    """Set the field at dotted `path`; `origin` names the option in errors."""
    parts = path.split(".")
    cur: Any = data
    for part, following in zip(parts[:-1], parts[1:]):
        if isinstance(cur, dict) and part not in cur and following.isdigit():
            raise ScenarioError(f"{origin}: there is no '{part}' list yet, so it has no element {following}")
        cur = cur[_step(cur, part, origin, create=True)]
    cur[_step(cur, parts[-1], origin, create=False)] = value


def apply_override(data: dict[str, Any], assignment: str) -> None:
    path, raw = split_assignment(assignment)
    set_path(data, path, parse_value(raw), f"--set {assignment}")


def apply_overrides(data: dict[str, Any], assignments: list[str]) -> dict[str, Any]:
    for a in assignments:
        apply_override(data, a)
    return data
