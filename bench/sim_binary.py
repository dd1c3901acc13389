"""The `netbraid-sim` binary the benchmarks run, built when needed.

It is the `sim` profile's build (Cargo.toml: the release build without
unwinding), profile-guided (pgo/README.md) and statically
linked against the C library (`-Ctarget-feature=+crt-static`, Rust's
explicit `--target` build for this host). Linked statically, the process
maps only the parts of libc and libm it calls: its peak resident set is
about 1.2 MiB smaller than the dynamically linked `target/sim/netbraid-sim`
(whose resident set is mostly shared-library pages: bench/RESULTS.md,
2026-11-29 evening), at the same speed and with identical results. The
explicit target gives the simulator other symbol names, so scripts/pgo
trains this build as well.

    from sim_binary import sim_binary
    path = sim_binary()          # cargo build (a no-op when up to date, once per process), then the path
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def host_triple() -> str:
    out = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
    return next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("host: "))


@functools.cache
def sim_binary() -> Path:
    """Build (or bring up to date) the benchmarks' netbraid-sim, once per
    process; its path."""
    host = host_triple()
    env = dict(os.environ)
    env["RUSTFLAGS"] = (env.get("RUSTFLAGS", "") + " -Ctarget-feature=+crt-static").strip()
    build = subprocess.run(
        ["cargo", "build", "--quiet", "--profile", "sim", "-p", "netbraid-sim", "--bin", "netbraid-sim", "--target", host],
        cwd=ROOT, env=env, capture_output=True, text=True)
    if build.returncode != 0:
        sys.exit(f"building the statically linked netbraid-sim failed (it needs the C library's static "
                 f"archives: Debian package libc6-dev):\n{build.stderr[-3000:]}")
    target_dir = Path(os.environ.get("CARGO_TARGET_DIR") or ROOT / "target")
    return (ROOT / target_dir) / host / "sim" / "netbraid-sim"
