"""Errors a user can cause, with messages that name the field, the bad value
and what is allowed."""

from __future__ import annotations


class ScenarioError(ValueError):
    """The scenario (or a command-line override of it) is wrong."""

    def __init__(self, problems: list[str] | str, source: str | None = None):
        # (one mistake reached by several routes — a [tcp] setting that the
        # flows and the proxies all inherit — is reported once)
        self.problems = [problems] if isinstance(problems, str) else list(dict.fromkeys(problems))
        self.source = source
        head = f"{source}: " if source else ""
        if len(self.problems) == 1:
            text = head + self.problems[0]
        else:
            text = head + f"{len(self.problems)} problems:\n" + "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(text)


class DirectoryError(ScenarioError):
    """A results directory this command must not write: another command's
    results, another scenario's, or one that another netbraid is writing."""


def format_location(loc: tuple, root: str = "scenario") -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or root


#: The scenario's top-level lists whose entries are tables ([[links]] …).
LISTS_OF_TABLES = frozenset({"hosts", "routers", "links", "flows", "routes", "proxies"})

BOUNDS = {"greater_than": "above", "greater_than_equal": "at least", "less_than": "below",
          "less_than_equal": "at most"}


def _bound_in_units(kind: str, ctx: dict, given: str) -> str | None:
    """A bound pydantic states in the field's internal unit (bytes, ns, bit/s),
    in the unit the user wrote the value in: "at most 500ms", not "less than
    or equal to 500000000"."""
    from . import units

    bound = next((v for k, v in ctx.items() if k in ("gt", "ge", "lt", "le")), None)
    if not isinstance(bound, int):
        return None
    for parse, exact in ((units.parse_size, units.exact_size), (units.parse_time, units.exact_time),
                         (units.parse_rate, units.exact_rate)):
        try:
            parse(given)
        except ValueError:
            continue
        return f"must be {BOUNDS[kind]} {exact(bound) if bound else 0}"
    return None


def from_validation_error(err, source: str | None = None, root: str = "scenario") -> ScenarioError:
    """Turn a pydantic ValidationError into one line per problem (`root`
    names the model itself, for a problem with no field of its own)."""
    problems = []
    for e in err.errors(include_url=False):
        loc = tuple(p for p in e["loc"] if not (isinstance(p, str) and p.startswith("function-")))
        where = format_location(loc, root)
        msg = e["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if e["type"] == "missing":
            problems.append(f"{where}: required field is missing")
            continue
        name = where.split(".")[-1].split("[")[0]  # the field's own name, as a file writes it
        if e["type"] == "model_type":  # "a valid dictionary or instance of TcpOptions": pydantic's words
            got = e.get("input")
            if loc and isinstance(loc[-1], int):
                shape = f"each entry a table ([[{name}]] in a file)" if len(loc) == 2 else "each entry a table"
            elif len(loc) == 1:
                shape = f"a table of settings, e.g. {name} = {{ ... }} (or [{name}] on lines of its own)"
            else:
                shape = f"a table of settings, e.g. {name} = {{ ... }}"
            broken = (" — not valid TOML: a table is written { key = value, ... }"
                      if isinstance(got, str) and got.lstrip()[:1] in ("{", "[") else "")
            problems.append(f"{where}: expected {shape}, got {type(got).__name__} {got!r}"[:300] + broken)
            continue
        if e["type"] == "list_type":
            tables = len(loc) == 1 and name in LISTS_OF_TABLES
            example = f"[[{name}]] tables one after another" if tables else f"{name} = [ ... ]"
            problems.append(f"{where}: expected a list, e.g. {example}, got {type(e.get('input')).__name__}")
            continue
        if e["type"] in ("literal_error", "enum"):
            problems.append(f"{where}: {e['input']!r} is not allowed; {msg[0].lower()}{msg[1:]}")
            continue
        if e["type"] in BOUNDS and isinstance(e.get("input"), str):
            msg = _bound_in_units(e["type"], e.get("ctx") or {}, e["input"]) or msg
        if not e["type"].startswith("value_error") and isinstance(e.get("input"), (int, float, str, bool)):
            msg = f"{msg} (got {e['input']!r})"
        problems.append(f"{where}: {msg}")
    unique = list(dict.fromkeys(problems))
    return ScenarioError(unique, source)
