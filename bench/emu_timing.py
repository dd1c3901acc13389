"""The emu testbed's own timing noise: how far each packet's one-way delay
through netbraid-linkemu strays from the emulated delay (issue 16's
competing-flow cells are sensitive to it; docs/model.md).

One cell of bench/fidelity.py runs on emu with tcpdump (Debian `tcpdump`)
in both hosts' namespaces (one clock; bench/ack_pattern.py's `capturing`).
Packets of the direction that does not queue (server → client: the
receivers' ACKs) seen from a quarter of the run for `--seconds` are
matched by their headers (ports, sequence and ACK numbers, timestamp
value, length, SACK edge, IP length) and each one's one-way delay less
the link's delay and the packet's serialisation is the noise a packet
meets: the user-space emulator's reading of the packet (its reader
thread's wake-up) and its delivery (the writer's), with the kernel's own
path on both sides.

    python bench/emu_timing.py [--cell mix:cubic+cubic+bbr+bbr:20:1] [--seconds 4]

Prints the noise's percentiles, mean and standard deviation, and the link
`jitter` (uniform within ±J) with the same standard deviation, J = √3 · σ,
which a cell of bench/fidelity.py takes as a suffix (e.g. `mix:cubic+cubic+bbr+bbr:20:1:85us`).
Needs root and network namespaces.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fidelity  # noqa: E402
from ack_pattern import capturing, tshark_rows  # noqa: E402

import netbraid as nb  # noqa: E402

FIELDS = ["frame.time_epoch", "tcp.srcport", "tcp.dstport", "tcp.seq_raw", "tcp.ack_raw",
          "tcp.options.timestamp.tsval", "tcp.len", "tcp.options.sack_le", "ip.len"]


def packets(pcap: Path) -> dict[tuple, list[float]]:
    """Each packet's headers → the times it was seen."""
    seen: dict[tuple, list[float]] = {}
    for row in tshark_rows(pcap, FIELDS):
        if row[0]:
            seen.setdefault(tuple(row[1:]), []).append(float(row[0]))
    return seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", default="mix:cubic+cubic+bbr+bbr:20:1", help="a bench/fidelity.py cell")
    ap.add_argument("--seconds", type=float, default=4.0, help="analyse this long, from a quarter of the run")
    ap.add_argument("--rep", type=int, default=0, help="the cell's replication (start instants, seed)")
    a = ap.parse_args()
    from netbraid.emu.platform import unavailable_reason

    reason = unavailable_reason()
    if reason:
        sys.exit(f"emu unavailable: {reason}")
    duration = 20.0
    s = fidelity.scenario(a.cell, duration, a.rep)
    link = s.links[0]
    delay_s, rate = link.delay / 1e9, link.rate  # (ns and bit/s once validated)
    with tempfile.TemporaryDirectory() as tmp:
        client, server = Path(tmp) / "client.pcap", Path(tmp) / "server.pcap"
        with capturing({0: client, 1: server}):
            nb.simulate(s, seed=a.rep + 1, backend="emu")
        sent, got = packets(server), packets(client)
    start = min(t for times in sent.values() for t in times) + duration / 4
    noise = []
    for key, times in sent.items():
        in_window = start <= times[0] < start + a.seconds
        if in_window and key[5] == "0" and len(times) == 1 and len(got.get(key, [])) == 1:  # an ACK, seen once at each end
            noise.append(got[key][0] - times[0] - delay_s - int(key[7]) * 8 / rate)
    if len(noise) < 100:
        sys.exit(f"only {len(noise)} packets matched: was the capture inside the run?")
    noise.sort()
    q = lambda f: noise[min(len(noise) - 1, int(f * len(noise)))] * 1e6  # noqa: E731
    sd = statistics.pstdev(noise) * 1e6
    print(f"{a.cell}, rep {a.rep}: {len(noise)} ACKs server → client, one-way delay less "
          f"{delay_s * 1e3:g} ms and serialisation, µs:")
    print(f"  min {q(0):.0f}  p10 {q(0.1):.0f}  p50 {q(0.5):.0f}  p90 {q(0.9):.0f}  p99 {q(0.99):.0f}  "
          f"max {noise[-1] * 1e6:.0f};  mean {statistics.mean(noise) * 1e6:.1f}, sd {sd:.1f}")
    print(f"  a uniform jitter of the same spread: ±{math.sqrt(3) * sd:.0f} µs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
