"""Every shipped example is valid and runs."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.toml")), ids=lambda p: p.name)
def test_toml_example_runs(path):
    r = subprocess.run(["netbraid", "run", str(path), "--set", "duration=12s", "--set", "measure.start=1s"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "aggregate goodput" in r.stdout


def test_python_example_runs():
    r = subprocess.run([sys.executable, str(EXAMPLES / "parking_lot.py"), "3"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "cross2" in r.stdout
