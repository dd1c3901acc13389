"""The command line follows its ecosystem's conventions: a version flag that
reports the installed package's version, and -h beside --help on every
command."""

import subprocess
from importlib.metadata import version

import pytest


def netbraid(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["netbraid", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_packages(flag):
    r = netbraid(flag)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"netbraid {version('netbraid')}"


@pytest.mark.parametrize("args", [[], ["run"], ["paper"], ["emu"], ["emu", "check"]])
def test_short_help_on_every_command(args):
    short, long = netbraid(*args, "-h"), netbraid(*args, "--help")
    assert short.returncode == 0 and short.stdout == long.stdout
    assert "Usage: netbraid" in short.stdout
