"""Every command the README's "Using it" block prints runs as printed (in a
scratch directory holding the examples), with a zero exit status and no
traceback. The `netbraid paper` lines are run by their own tests with
`--quick` (tests/test_paper000.py … 003.py); a full `paper 003` takes too
long for the default suite, so those lines are only parsed here, as the CLI
parses them (every option's name and value)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = text.split("## Using it", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    block = re.sub(r"\\\n\s*", " ", block)  # continuation lines
    return [" ".join(shlex.split(line, comments=True)) for line in block.splitlines() if line.strip()]


COMMANDS = readme_commands()


def test_the_readme_has_its_commands():
    assert len(COMMANDS) >= 15 and all(c.startswith(("netbraid ", "target/")) for c in COMMANDS), COMMANDS


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    d = tmp_path_factory.mktemp("readme")
    (d / "examples").symlink_to(ROOT / "examples")
    (d / "target").symlink_to(ROOT / "target")
    return d


@pytest.mark.parametrize("command", [c for c in COMMANDS if not c.startswith("netbraid paper")])
def test_a_readme_command_runs_as_printed(command, scratch):
    if command.startswith("target/sim/netbraid-sim") and not (ROOT / "target/sim/netbraid-sim").exists():
        pytest.fail("target/sim/netbraid-sim is not built: cargo build --profile sim -p netbraid-sim (scripts/test does)")
    # in the README's order: later lines read what earlier ones wrote (db.json, results/sweep)
    r = subprocess.run(shlex.split(command), cwd=scratch, capture_output=True, text=True, timeout=900,
                       env={**os.environ, "COLUMNS": "100"})
    assert r.returncode == 0, (command, r.stderr[-2000:])
    assert "Traceback" not in r.stderr and "panicked" not in r.stderr, r.stderr[-2000:]
    writes = re.search(r"(--out|-o) (\S+)", command)
    assert r.stdout.strip() or (writes and (scratch / writes.group(2)).exists()), command  # output, or the file


def paper_context(args: list[str]):
    """Parse `netbraid paper ARGS` as the CLI would (names, types and
    choices of every argument and option checked, values converted), without
    running it; a bad one raises click's UsageError."""
    import typer.main

    from netbraid.cli import app

    group = typer.main.get_command(app)
    ctx = group.make_context("netbraid", ["paper"])
    name, paper, rest = group.resolve_command(ctx, ["paper", *args])
    return paper.make_context(name, rest, parent=ctx)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("netbraid paper")])
def test_a_readme_paper_command_parses(command):
    from netbraid.papers import PAPERS

    args = shlex.split(command)[2:]  # after "netbraid paper"
    ctx = paper_context(args)
    assert ctx.params["number"].zfill(3) in PAPERS and ctx.params["backend"] in ("sim", "emu", "both"), ctx.params


def test_the_paper_parse_check_refuses_what_the_cli_refuses():
    for bad, message in ((["003", "--reps", "many"], "valid integer"), (["001", "--no-such-option"], "No such option"),
                         ([], "Missing")):
        with pytest.raises(Exception, match=message):
            paper_context(bad)
