"""What the Linux TCP profile costs per packet-hop, against RFC mode, on the
dumbbell benchmark (issue 16: at most 30 % more).

Method: the anchor's dumbbell (bench/dumbbell.py, N=10 at 10 Mb/s, 180 s
simulated) in two TCP settings, run by the same release binary in child
processes, alternating (rfc, linux, rfc, linux, ...) `--reps` times:

- rfc: the anchor's NewReno + SACK (RFC 6675), 200 ms delayed ACKs, 1 s
  minimum RTO, initial window 3;
- linux: `profile = "linux"` with the anchor's buffers (as the window, not
  doubled: `linux_buffers = false`) and MSS: CUBIC with
  HyStart, RACK-TLP, PRR, 40 ms delayed ACKs, 200 ms minimum RTO, initial
  window 10; and `--cc bbr` for BBR with pacing instead of CUBIC.

The two do different work per simulated second (other windows, other
losses), so the comparison is per packet-hop: median wall time / packet-hops.

A third setting, rfc-40ms, is RFC mode with Linux's 40 ms delayed-ACK timer
instead of 200 ms and nothing else changed: at N=10 that timer alone costs
RFC mode about a quarter more per packet-hop (its events break the run of
packet events the CPU predicts; bench/RESULTS.md, 2026-12-06), so the
profile's own cost is linux / rfc-40ms, printed beside the issue's linux /
rfc (`--no-same-timer` leaves it out).

    python bench/linux_profile_cost.py [--reps 5] [--case 10|100] [--cc bbr]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import netbraid as nb  # noqa: E402
from dumbbell import anchor_scenario, run_netbraid  # noqa: E402
from sim_binary import sim_binary  # noqa: E402


def linux_variant(n: int, cc: str | None) -> nb.Scenario:
    s = anchor_scenario(n)
    # (the anchor's window as the window: Linux's rule for socket buffers,
    # 2 × 128 KB × 0.63, costs nothing per packet but would change the traffic)
    s.tcp = nb.TcpOptions(profile="linux", window="128KB", mss=1448, header_bytes=52, linux_buffers=False,
                          **({"cc": cc} if cc else {}))
    return s


def rfc_with_linux_timer(n: int) -> nb.Scenario:
    """RFC mode with only its delayed-ACK timer set to Linux's 40 ms."""
    s = anchor_scenario(n)
    s.tcp = nb.TcpOptions(**{**s.tcp.model_dump(exclude_unset=True), "delack_timeout": "40ms"})
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--case", type=int, choices=[10, 100], default=10)
    ap.add_argument("--cc", default=None, help="the linux side's controller (default: the profile's cubic)")
    ap.add_argument("--binary", type=Path, help="a netbraid-sim binary (default: bench/sim_binary.py's build)")
    ap.add_argument("--no-same-timer", dest="same_timer", action="store_false",
                    help="leave out rfc-40ms (RFC mode with Linux's 40 ms delayed-ACK timer)")
    a = ap.parse_args()
    a.binary = a.binary or sim_binary()
    if not a.binary.exists():
        ap.error(f"{a.binary} is missing")
    files = {}
    settings = [("rfc", anchor_scenario(a.case)), ("linux", linux_variant(a.case, a.cc))]
    if a.same_timer:
        settings.append(("rfc-40ms", rfc_with_linux_timer(a.case)))
    for label, s in settings:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(nb.resolve(s), f)
        files[label] = f.name
    runs: dict[str, list[dict]] = {k: [] for k in files}
    for rep in range(a.reps):
        for label, path in files.items():
            runs[label].append(run_netbraid(a.binary, path))
        print(f"  repetition {rep + 1}/{a.reps}: " + ", ".join(f"{k} {v[-1]['wall_s']:.3f} s" for k, v in runs.items()),
              flush=True)
    per_hop = {}
    for label, rs in runs.items():
        wall = statistics.median(r["wall_s"] for r in rs)
        hops = rs[-1]["packet_hops"]
        per_hop[label] = wall / hops
        print(f"{label:8}: median wall {wall:.3f} s, {hops:,} packet-hops, {hops / wall / 1e6:.2f} M hops/s, "
              f"{per_hop[label] * 1e9:.1f} ns per hop, goodput {rs[-1]['agg_goodput_bps'] / 1e6:.2f} Mb/s")
    print(f"linux / rfc per packet-hop: {per_hop['linux'] / per_hop['rfc']:.3f} (target ≤ 1.30)")
    if a.same_timer:
        print(f"rfc-40ms / rfc: {per_hop['rfc-40ms'] / per_hop['rfc']:.3f} (the 40 ms timer alone); "
              f"linux / rfc-40ms: {per_hop['linux'] / per_hop['rfc-40ms']:.3f} (the profile at the same timer)")
    for f in files.values():
        Path(f).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
