"""Run paper 003's scenario in ns-2 (`ns`, Debian package `ns2`) and reduce
its per-flow counters to the paper's metrics, so that netbraid can be held
against the simulator the paper used on the same topology and defaults."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from statistics import mean

HERE = Path(__file__).resolve().parent
MSS, TCP_HEADER = 1000, 40

#: `Agent/TCP` defaults of ns-2.27 (the release of 2004) where ns-2.35's
#: differ: minrto_ (0.2 s from 2004-10-14), rtxcur_init_ and
#: precisionReduce_ (changed 2006-01), updated_rttvar_ and bugfix_ss_ (added
#: 2006), maxrto_ (2007), numdupacksFrac_ (2006).
NS2_27 = ("Agent/TCP set minrto_ 1; Agent/TCP set rtxcur_init_ 6.0; Agent/TCP set precisionReduce_ false; "
          "Agent/TCP set updated_rttvar_ false; Agent/TCP set bugfix_ss_ 0; Agent/TCP set maxrto_ 100000; "
          "Agent/TCP set numdupacksFrac_ 100")
NS2_35 = ""


def available() -> str | None:
    """None if ns-2 can run here, else why not."""
    if shutil.which("ns") is None:
        return "ns-2 is not installed (apt-get install ns2)"
    if shutil.which("awk") is None:
        return "awk is not installed"
    return None


def run_once(rates_mbps: list[float], seed: int, measure_s: float, settings: str) -> dict[str, float]:
    """One ns-2 run: the paper's metrics averaged over the flows of each group."""
    with tempfile.TemporaryDirectory(prefix="nb-ns2-") as tmp:
        out = Path(tmp) / "flows.txt"
        done = subprocess.run(["ns", str(HERE / "p003.tcl"), str(seed), f"{measure_s:g}", str(out), settings,
                               *(f"{r:g}" for r in rates_mbps)], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"ns-2 failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
        rows = [line.split() for line in out.read_text().splitlines()]
    tcp = [list(map(int, r[2:])) for r in rows if r[1] == "tcp"]
    udp = [list(map(int, r[2:])) for r in rows if r[1] == "udp"]
    if len(tcp) != 10 * len(rates_mbps) or len(udp) != 2 * len(rates_mbps):
        raise RuntimeError(f"ns-2 reported {len(tcp)} TCP and {len(udp)} UDP flows")
    kbps = 8 / measure_s / 1e3
    return {
        "tcp_thr": mean((b - TCP_HEADER * n) * kbps for _, n, b, _, _ in tcp),
        "tcp_good": mean(first * MSS * kbps for _, _, _, first, _ in tcp),
        "udp_thr": mean(b * kbps for _, _, b, _, _ in udp),
        "tcp_loss": mean(100 * drops / sent for sent, _, _, _, drops in tcp),
        "udp_loss": mean(100 * drops / sent for sent, _, _, _, drops in udp),
    }


def run(rates_mbps: list[float], seeds: list[int], measure_s: float, settings: str, workers: int = 2
        ) -> list[dict[str, float]]:
    """Several seeds in parallel (each ns-2 run is single-threaded)."""
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda s: run_once(rates_mbps, s, measure_s, settings), seeds))
