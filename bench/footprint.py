"""Peak memory of `netbraid run` against the size of the scenario: the
measurements behind the per-node, per-link, per-flow and per-sample figures
in python/netbraid/footprint.py (which refuses runs that cannot fit).

Each case is one `netbraid run --json` in a child process; its peak resident
set (ru_maxrss) is what the machine must hold. Cases grow one dimension at a
time (hosts on a star, links per host, flows between two hosts, time-series
samples), at low rates so that packets in flight do not count. A linear fit
per dimension gives the cost of one more; the fixed part is the smallest case.

    python bench/footprint.py            # ~2 min on this machine
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def star(hosts: int, links_per_host: int = 1, flows: int = 1, interval: str | None = None) -> str:
    routers = "".join(f'[[routers]]\nname = "r{k}"\n' for k in range(links_per_host))
    links = "".join(f'[[links]]\na = "h"\nb = "r{k}"\nrate = "1Mbps"\ndelay = "1ms"\n' for k in range(links_per_host))
    if links_per_host > 1:
        links += "".join(f'[[links]]\na = "r{k}"\nb = "r{k + 1}"\nrate = "1Mbps"\ndelay = "1ms"\n'
                         for k in range(links_per_host - 1))
    measure = f'[measure]\ninterval = "{interval}"\n' if interval else ""
    return (f'name = "footprint"\nduration = "1s"\n{measure}[[hosts]]\nname = "h"\ncount = {hosts}\n{routers}{links}'
            f'[[flows]]\nname = "f"\nfrom = "h0"\nto = "h1"\ncount = {flows}\nkind = "cbr"\nrate = "10kbps"\n')


_MEASURE = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode); "
            "sys.stderr.write(r.stderr)")


def peak_rss(text: str) -> tuple[float, float]:
    """(peak resident bytes, wall seconds) of one `netbraid run --json`, in
    a process of its own (a process's ru_maxrss of children is the largest
    child's, so each case gets a fresh parent)."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "s.toml"
        path.write_text(text)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "netbraid.cli", "run", str(path),
                            "--json"], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        kib, code = r.stdout.split()
        if code != "0":
            raise SystemExit(r.stderr)
    return int(kib) * 1024.0, wall


def fit(xs: list[int], ys: list[float]) -> tuple[float, float]:
    slope, intercept = np.polyfit(np.array(xs, float), np.array(ys, float), 1)
    return float(slope), float(intercept)


def main() -> None:
    cases = {
        "host with one link": ([20_000, 40_000, 80_000], lambda n: star(n)),
        "host with two links": ([20_000, 40_000, 80_000], lambda n: star(n, links_per_host=2)),
        "flow": ([20_000, 40_000, 80_000], lambda n: star(2, flows=n)),
        "sample": ([100_000, 200_000, 400_000], lambda n: star(2, flows=1, interval=f"{1e6 / n:g}us")),
    }
    base, _ = peak_rss(star(2))
    print(f"smallest run: {base / 2**20:.0f} MiB")
    per = {}
    for dim, (sizes, make) in cases.items():
        pts = []
        for n in sizes:
            rss, wall = peak_rss(make(n))
            pts.append((n, rss))
            print(f"{dim:>20} x {n:>7,}: {rss / 2**20:7.0f} MiB peak, {wall:5.1f} s", flush=True)
        per[dim], _ = fit([n for n, _ in pts], [r for _, r in pts])
    link = per["host with two links"] - per["host with one link"]
    summary = {"base_bytes": round(base), "node_bytes": round(per["host with one link"] - link), "link_bytes": round(link),
               "flow_bytes": round(per["flow"]), "sample_bytes": round(per["sample"])}
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
