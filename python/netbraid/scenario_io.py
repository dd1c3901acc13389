"""Reading scenario files (TOML) into a validated ``Scenario``."""

from __future__ import annotations

import copy
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
        raise ScenarioError(f"invalid TOML: {e}", source=str(p)) from None
    except RecursionError:
        raise ScenarioError("invalid TOML: nested too deeply", source=str(p)) from None


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
    """A copy of `s` with `--set`-style assignments applied."""
    if not overrides:
        return s
    data = copy.deepcopy(s.model_dump(by_alias=True, exclude_none=True))
    apply_overrides(data, overrides)
    return validate(data)
