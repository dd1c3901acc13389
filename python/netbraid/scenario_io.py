"""Reading scenario files (TOML) into a validated ``Scenario``."""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .errors import ScenarioError, from_validation_error
from .overrides import apply_overrides
from .schema import Scenario


def read_toml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")  # tolerate a byte-order mark
    except FileNotFoundError:
        raise ScenarioError(f"no such scenario file: {p}") from None
    except (IsADirectoryError, PermissionError, UnicodeDecodeError) as e:
        raise ScenarioError(f"cannot read scenario file {p}: {e}") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        hint = ""
        if text.lstrip().startswith("{"):
            hint = ("; this looks like JSON: scenarios are TOML files (examples/*.toml), and a resolved scenario "
                    "(netbraid resolve's JSON) runs with target/sim/netbraid-sim FILE.json")
        raise ScenarioError(f"invalid TOML: {_explain_toml_error(str(e), text)}{hint}", source=str(p)) from None
    except RecursionError:
        raise ScenarioError("invalid TOML: nested too deeply", source=str(p)) from None


def _explain_toml_error(message: str, text: str) -> str:
    """tomllib's message, with the key named when a key or table is given
    twice (tomllib says only "Cannot overwrite a value")."""
    m = re.search(r"\(at line (\d+), column \d+\)|\(at end of document\)", message)
    lines = text.splitlines()
    if m is None or not lines:
        return message
    lineno = int(m.group(1)) if m.group(1) else len(lines)
    while lineno > 1 and not lines[lineno - 1].strip():
        lineno -= 1  # "at end of document": the last key written
    where = f"line {lineno}"
    declared = re.match(r"Cannot declare \((.*)\) twice", message)
    if declared:
        parts = [q.strip().strip("'\"") for q in declared.group(1).split(",") if q.strip()]
        return f"the table [{'.'.join(parts)}] is declared twice ({where}); each table may be declared once"
    if message.startswith("Cannot overwrite a value"):
        key = lines[lineno - 1].split("=", 1)[0].strip()
        table = next((h.strip() for h in reversed(lines[: lineno - 1]) if h.strip().startswith("[")), "")
        table = table.split("#", 1)[0].strip()
        inside = f" in {table}" if table else ""
        return f"the key {key!r} is given twice{inside} ({where}); each key may appear once per table"
    return message


def validate(data: dict[str, Any], source: str | None = None) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as e:
        raise from_validation_error(e, source) from None


def load_scenario(path: str | Path, overrides: list[str] | None = None) -> Scenario:
    data = read_toml(path)
    try:
        apply_overrides(data, overrides or [])
    except ScenarioError as e:
        raise ScenarioError(e.problems, source=str(path)) from None
    return validate(data, source=str(path))


def with_overrides(s: Scenario, overrides: list[str]) -> Scenario:
    """A copy of `s` with `--set`-style assignments applied, validated again
    as a whole: code may have changed it in ways its fields' own checks do
    not see (an element appended to a list, a field set on a copy), and
    those get the same errors as a scenario file."""
    # (warnings off: a wrong element, e.g. a str among the hosts, is dumped
    # as it is and refused by the validation below, field named)
    data = copy.deepcopy(s.model_dump(by_alias=True, exclude_none=True, warnings=False))
    apply_overrides(data, overrides)
    return validate(data)
