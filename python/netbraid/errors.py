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
        if e["type"] in ("literal_error", "enum"):
            problems.append(f"{where}: {e['input']!r} is not allowed; {msg[0].lower()}{msg[1:]}")
            continue
        if not e["type"].startswith("value_error") and isinstance(e.get("input"), (int, float, str, bool)):
            msg = f"{msg} (got {e['input']!r})"
        problems.append(f"{where}: {msg}")
    unique = list(dict.fromkeys(problems))
    return ScenarioError(unique, source)
