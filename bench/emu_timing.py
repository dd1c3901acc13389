"""The emu testbed's own timing noise: how far each packet's one-way delay
through netbraid-linkemu strays from the emulated delay (issue 16's
competing-flow cells are sensitive to it; docs/model.md).

One cell of bench/fidelity.py runs on emu; mid-run, tcpdump (Debian
`tcpdump`) captures both ends of the link for a few seconds (the client's
and the server's device, each in its namespace; one clock). Packets of the
direction that does not queue (server → client: the receivers' ACKs) are
matched by their TCP header (ports, sequence and ACK numbers, timestamp
value, length, SACK edge) and each one's one-way delay less the link's
delay and the packet's serialisation is the noise a packet meets: the
user-space emulator's reading of the packet (its reader thread's wake-up)
and its delivery (the writer's), with the kernel's own path on both sides.

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
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fidelity  # noqa: E402

import netbraid as nb  # noqa: E402

FIELDS = ["frame.time_epoch", "tcp.srcport", "tcp.dstport", "tcp.seq_raw", "tcp.ack_raw",
          "tcp.options.timestamp.tsval", "tcp.len", "tcp.options.sack_le", "ip.len"]


def namespaces(wait_s: float = 30.0) -> tuple[str, str]:
    """The emu run's two namespaces (client, server), once they exist."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        names = sorted(line.split()[0] for line in
                       subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
                       if line.startswith("nb"))
        if len(names) >= 2:
            return names[0], names[1]
        time.sleep(0.2)
    sys.exit("the emu run's namespaces did not appear")


def device(ns: str) -> str:
    out = subprocess.run(["ip", "netns", "exec", ns, "ip", "-o", "link"], capture_output=True, text=True).stdout
    return next(line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ": lo:" not in line)


def packets(pcap: Path) -> dict[tuple, list[float]]:
    out = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", *sum((["-e", f] for f in FIELDS), [])],
                         capture_output=True, text=True).stdout
    seen: dict[tuple, list[float]] = {}
    for line in out.splitlines():
        p = (line.split("\t") + [""] * len(FIELDS))[:len(FIELDS)]
        if p[0]:
            seen.setdefault(tuple(p[1:]), []).append(float(p[0]))
    return seen


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", default="mix:cubic+cubic+bbr+bbr:20:1", help="a bench/fidelity.py cell")
    ap.add_argument("--seconds", type=float, default=4.0, help="capture this long, from a quarter of the run")
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
    run = threading.Thread(target=lambda: nb.simulate(s, seed=a.rep + 1, backend="emu"), daemon=True)
    run.start()
    client, server = namespaces()
    time.sleep(duration / 4)
    with tempfile.TemporaryDirectory() as tmp:
        caps = {ns: Path(tmp) / f"{ns}.pcap" for ns in (client, server)}
        dumps = [subprocess.Popen(["ip", "netns", "exec", ns, "timeout", str(a.seconds), "tcpdump", "-i", device(ns),
                                   "-n", "-s", "128", "-w", str(path)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL) for ns, path in caps.items()]
        for d in dumps:
            d.wait()
        run.join()
        sent, got = packets(caps[server]), packets(caps[client])
    noise = []
    for key, times in sent.items():
        if key[5] == "0" and len(times) == 1 and len(got.get(key, [])) == 1:  # an ACK, seen once at each end
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
