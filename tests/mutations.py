"""Hypothesis strategies that turn the example scenarios into wrong or odd
ones, and the one property every input must have: a clean error or a sane
result, never a traceback or a panic. Used by tests/test_fuzz.py (bounded,
in CI) and bench/fuzz.py (long runs, with a corpus)."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.toml"))
TEXTS = {p.name: p.read_text() for p in EXAMPLES}
DATA = {name: tomllib.loads(text) for name, text in TEXTS.items()}

UNITS = ["", "s", "ms", "us", "ns", "min", "bps", "kbps", "Mbps", "Gbps", "Tbps", "B", "KB", "MB", "GB", "p",
         "packets", "%", "Mbsp", "MB/s", "µs"]
NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -0.0, 1, -1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, 1e308, 1e-308, 1e30, 0.5]),
)
NUMBER_TEXT = st.one_of(
    st.sampled_from(["0", "-0", "1", "-1", "1e308", "1e30", "1e-9", "0.0000001", "18446744073.709", "1e400", "nan",
                     "inf", "1.5", "2147483648", "9999999999999999999999"]),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
WITH_UNIT = st.builds(lambda n, u, space: f"{n}{' ' if space else ''}{u}", NUMBER_TEXT, st.sampled_from(UNITS),
                      st.booleans())
SCALARS = st.one_of(NUMBERS, WITH_UNIT, st.booleans(), st.text(max_size=12),
                    st.sampled_from(["reno", "cubic", "sack", "tahoe", "ns2", "pareto", "mptcp", "cbr", "onoff",
                                     "src", "dst", "r1", "a", "[/red]", "", "lia", "olia", "ecmp"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=6)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value in a TOML document (tables and lists included)."""
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, prefix + (i,))
    return out


def _apply(data: dict[str, Any], path: tuple, op: str, value: Any) -> None:
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    last = path[-1]
    if op == "set":
        parent[last] = value
    elif op == "delete":
        del parent[last]
    elif op == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif op == "add" and isinstance(parent, dict):
        parent[str(value)[:12] or "x"] = value


@st.composite
def mutated_document(draw) -> tuple[str, dict[str, Any]]:
    """(example name, its TOML document with 1–4 values replaced, deleted,
    duplicated or added)."""
    name = draw(st.sampled_from(sorted(DATA)))
    data = copy.deepcopy(DATA[name])
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["set", "set", "set", "delete", "duplicate", "add"]))
        _apply(data, path, op, draw(VALUES))
    return name, data


_QUANTITY = __import__("re").compile(r"^([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-zµ/%]*)$")


@st.composite
def tweaked_document(draw) -> tuple[str, dict[str, Any]]:
    """(example name, its document with 1–3 values changed to another of the
    same kind: a quantity keeps its unit, a count stays an integer, a
    probability a float). Most are valid scenarios, so the engine runs them."""
    name = draw(st.sampled_from(sorted(DATA)))
    data = copy.deepcopy(DATA[name])
    leaves = [p for p in _paths(data) if not isinstance(_get(data, p), (dict, list))]
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(leaves))
        old = _get(data, path)
        if isinstance(old, bool):
            new: Any = draw(st.booleans())
        elif isinstance(old, int):
            new = draw(st.one_of(st.integers(0, 2 * max(old, 4)), st.sampled_from([0, 1, 2**31, 2**63])))
        elif isinstance(old, float):
            new = draw(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 1.0, 1e-9, 0.999])))
        elif isinstance(old, str) and (m := _QUANTITY.match(old)):
            number = float(m.group(1))
            factor = draw(st.sampled_from([0, 0.001, 0.1, 0.5, 2, 10, 1000, 1e6]))
            new = f"{number * factor:g}{m.group(2)}"
        else:
            new = draw(SCALARS)
        _apply(data, path, "set", new)
    return name, data


def _get(data: Any, path: tuple) -> Any:
    for p in path:
        data = data[p]
    return data


@st.composite
def mutated_text(draw) -> tuple[str, str]:
    """(example name, its TOML text with a line deleted, duplicated or
    changed, or bytes inserted): what a hand edit gets wrong."""
    name = draw(st.sampled_from(sorted(TEXTS)))
    lines = TEXTS[name].splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "value", "insert"]))
        if op == "delete" and len(lines) > 1:
            del lines[i]
        elif op == "duplicate":
            lines.insert(i, lines[i])
        elif op == "value" and "=" in lines[i]:
            key = lines[i].split("=", 1)[0]
            lines[i] = f"{key}= {json.dumps(draw(WITH_UNIT)) if draw(st.booleans()) else draw(NUMBER_TEXT)}"
        else:
            lines.insert(i, draw(st.text(max_size=20)))
    return name, "\n".join(lines) + "\n"


FIELD_PATHS = st.sampled_from([
    "duration", "seed", "links.0.rate", "links.0.delay", "links.0.queue", "links.0.loss", "links.1.rate",
    "flows.0.start", "flows.0.bytes", "flows.0.window", "flows.0.cc", "flows.0.count", "flows.0.mss",
    "tcp.rto_min", "tcp.window", "measure.start", "measure.interval", "hosts.0.count", "links.0.ab.rate",
    "flows.0.rate", "flows.0.packet_size", "nosuch", "links.99.rate", "flows.nosuch.cc", "links..rate",
])


@st.composite
def overrides(draw) -> list[str]:
    """--set assignments, some malformed."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        path = draw(FIELD_PATHS)
        value = draw(st.one_of(WITH_UNIT, NUMBER_TEXT, st.text(max_size=10)))
        out.append(draw(st.sampled_from([f"{path}={value}", f"{path}", f"={value}", f"{path}=={value}"])))
    return out


@st.composite
def axes(draw) -> list[str]:
    """--grid axes, some malformed."""
    out = []
    for _ in range(draw(st.integers(1, 2))):
        values = draw(st.lists(st.one_of(WITH_UNIT, NUMBER_TEXT), min_size=1, max_size=3))
        out.append(f"{draw(FIELD_PATHS)}={','.join(values)}")
    return out


API_CALLS = st.sampled_from(["add_host", "add_router", "add_link", "add_flow", "add_route",
                             "TcpOptions", "Measure", "Host", "Link", "Flow", "Route", "Router"])


@st.composite
def api_calls(draw) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """Calls of the Python API's builder methods with odd arguments."""
    calls = []
    names = ["a", "b", "r", "", "a0"]
    for _ in range(draw(st.integers(1, 6))):
        method = draw(API_CALLS)
        args = [draw(st.one_of(st.sampled_from(names), SCALARS)) for _ in range(draw(st.integers(0, 3)))]
        kwargs = {}
        for key in draw(st.lists(st.sampled_from(["rate", "delay", "queue", "loss", "count", "kind", "cc", "bytes",
                                                  "window", "start", "to_iface", "multipath", "nosuch", "profile", "mss",
                                                  "interval", "name", "a", "b"]),
                                 max_size=3, unique=True)):
            kwargs[key] = draw(SCALARS)
        calls.append((method, args, kwargs))
    return calls


# ---- the property ----------------------------------------------------------------

#: Scenarios bigger than this (nodes + flows after expansion) are only
#: validated, not resolved: resolving a million hosts is correct but slow.
MAX_EXPANDED = 5_000


def _expanded_size(s) -> int:
    nodes = sum(h.count or 1 for h in [*s.hosts, *s.routers])
    return nodes + sum(f.count for f in s.flows) * max(1, nodes // 2)


def check_scenario_input(data: Any = None, *, text: str | None = None, set_: list[str] = (),
                         grid: list[str] = (), tmp: Path | None = None) -> str:
    """Load (from `text` through the file reader, or from the document
    `data`), apply `set_` and `grid` as the CLI does, resolve and let the
    engine check the result. Returns "ok" or the error message; any other
    exception (a traceback, a Rust panic) is the failure this looks for."""
    from netbraid import _sim
    from netbraid.errors import ScenarioError
    from netbraid.experiment import make_plan, parse_axis
    from netbraid.scenario_io import load_scenario, validate, with_overrides

    try:
        if text is not None:
            path = (tmp or Path(".")) / "fuzz.toml"
            path.write_text(text)
            s = load_scenario(path, list(set_))
        else:
            s = with_overrides(validate(data), list(set_))
        if _expanded_size(s) > MAX_EXPANDED:
            return "ok (large: validated only)"
        plan = make_plan(s, [parse_axis(a) for a in grid])
        for resolved in plan.resolved:
            try:
                _sim.check_json(json.dumps(resolved))
            except ValueError as e:
                raise ScenarioError(str(e)) from None
        return "ok"
    except ScenarioError as e:
        message = str(e)
        assert message.strip(), "an error without a message"
        assert "Traceback" not in message and "panicked" not in message, message
        return message


def check_api_calls(calls: list[tuple[str, list[Any], dict[str, Any]]]) -> str:
    """The builder calls on a fresh Scenario, then resolve: a ScenarioError
    (or a TypeError for a wrong number of arguments, as Python reports it)
    or a resolved scenario."""
    import netbraid as nb

    s = nb.Scenario(name="fuzz", duration="1s")
    try:
        for method, args, kwargs in calls:
            try:
                if method[0].isupper():  # an option object, built directly
                    getattr(nb, method)(**kwargs)
                else:
                    getattr(s, method)(*args, **kwargs)
            except TypeError as e:
                if "argument" not in str(e):
                    raise  # a TypeError from inside netbraid is a bug, not a wrong call
                continue
        if _expanded_size(s) > MAX_EXPANDED:
            return "ok (large: validated only)"
        nb.resolve(s)
        return "ok"
    except nb.ScenarioError as e:
        assert str(e).strip()
        return str(e)
