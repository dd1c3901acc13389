"""The profile-guided build (pgo/README.md): the rustc wrapper gives the
profile to optimised compilations only, and only to a rustc whose LLVM can
read it; the training set that makes the profile still resolves."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WRAPPER = ROOT / "scripts" / "rustc-pgo"


@pytest.fixture
def fake_tree(tmp_path: Path) -> Path:
    """A copy of the wrapper beside a pgo/ directory of our own, and a fake
    rustc that prints the arguments it was given (and an LLVM version)."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(WRAPPER, tmp_path / "scripts" / "rustc-pgo")
    (tmp_path / "pgo").mkdir()
    with open(tmp_path / "pgo" / "netbraid.profdata.gz", "wb") as gz:
        subprocess.run(["gzip", "-c"], input=b"profile bytes", stdout=gz, check=True)
    (tmp_path / "pgo" / "llvm-major").write_text("22\n")
    rustc = tmp_path / "rustc"
    rustc.write_text('#!/bin/sh\nif [ "$1" = -vV ]; then echo "release: 1.95.0"; echo "LLVM version: ${FAKE_LLVM:-22.1.2}";'
                     ' exit 0; fi\nprintf "%s\\n" "$@"\n')
    rustc.chmod(0o755)
    (tmp_path / "out" / "deps").mkdir(parents=True)
    return tmp_path


def wrapped(tree: Path, *args: str, **env: str) -> list[str]:
    done = subprocess.run([str(tree / "scripts" / "rustc-pgo"), str(tree / "rustc"), *args],
                          capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin", **env})
    return done.stdout.split("\n")[:-1]


OPTIMISED = ["--crate-name", "netbraid_sim", "-C", "opt-level=3", "--out-dir"]


def test_an_optimised_compilation_gets_the_profile_unpacked_beside_the_output(fake_tree: Path):
    out = str(fake_tree / "out" / "deps")
    args = wrapped(fake_tree, *OPTIMISED, out)
    profile = fake_tree / "out" / "netbraid.profdata"
    assert args[:6] == [*OPTIMISED, out]
    assert f"-Cprofile-use={fake_tree / 'out' / 'deps' / '..' / 'netbraid.profdata'}" in args
    assert profile.read_bytes() == b"profile bytes"


@pytest.mark.parametrize("case", ["debug", "instrumented", "other llvm", "switched off", "no profile"])
def test_everything_else_reaches_rustc_unchanged(fake_tree: Path, case: str):
    out = str(fake_tree / "out" / "deps")
    args, env = [*OPTIMISED, out], {}
    if case == "debug":
        args = ["--crate-name", "netbraid_sim", "-C", "opt-level=0", "--out-dir", out]
    elif case == "instrumented":
        args = [*args, "-Cprofile-generate=/tmp/x"]
    elif case == "other llvm":
        env = {"FAKE_LLVM": "21.1.0"}  # a profile of LLVM 22 is an error to LLVM 21
    elif case == "switched off":
        env = {"NETBRAID_PGO": "0"}
    else:
        (fake_tree / "pgo" / "netbraid.profdata.gz").unlink()
    assert wrapped(fake_tree, *args, **env) == args
    assert not (fake_tree / "out" / "netbraid.profdata").exists()


def test_cargo_runs_rustc_through_the_wrapper():
    config = (ROOT / ".cargo" / "config.toml").read_text()
    assert 'rustc-wrapper = "scripts/rustc-pgo"' in config
    assert (ROOT / "pgo" / "llvm-major").read_text().strip().isdigit()


def test_the_training_set_still_resolves(tmp_path: Path):
    """scripts/pgo runs these; a scenario the schema no longer accepts would
    stop it (and so stale the profile) without this."""
    subprocess.run([sys.executable, str(ROOT / "scripts" / "pgo_training.py"), "--write", str(tmp_path)], check=True,
                   capture_output=True)
    names = {p.stem for p in tmp_path.glob("*.json")}
    assert {"dumbbell-10", "mptcp-cost-mptcp", "hstcp-10g", "split_proxy", "p003", "red-ecn"} <= names
    assert len(names) >= 30
