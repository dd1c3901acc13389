"""How each flow's receiver ACKs, on sim and on this kernel: data segments
per ACK and the share of ACKs that carry SACK blocks, after the warm-up.

A diagnostic for the fidelity benchmark's competing-flow cells (issue 16):
one cell of bench/fidelity.py, run once per backend with the same seed,
with packets captured — on sim by the simulator's own pcap writer on both
directions of the bottleneck, on emu by tcpdump (Debian `tcpdump`) in the
receiving host's namespace — and read back with tshark. Counts start at
the cell's measurement start (a quarter of the run).

    python bench/ack_pattern.py --cell mix:cubic+cubic+bbr+bbr:20:1 --seed 1

On sim the data segments are counted where they enter the bottleneck
(queue drops excluded); on emu where they reach the receiver. Without root
or namespaces only the simulator's side is printed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fidelity  # noqa: E402

import netbraid as nb  # noqa: E402


def tshark_rows(pcap: Path, fields: list[str]) -> list[list[str]]:
    # (exit status 2 with rows: a capture cut short in its last packet)
    r = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", *sum((["-e", f] for f in fields), [])],
                       capture_output=True, text=True)
    if r.returncode != 0 and not r.stdout:
        sys.exit(f"tshark could not read {pcap}: {r.stderr.strip()}")
    out = r.stdout
    return [(line.split("\t") + [""] * len(fields))[:len(fields)] for line in out.splitlines()]


def tally(rows: list[list[str]], since_s: float, key) -> dict[str, collections.Counter]:
    """rows of (time, tcp.len, sack_le, srcport, dstport) -> per data port:
    data segments, plain ACKs, ACKs with SACK blocks."""
    per: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for t, length, sack, sport, dport in rows:
        if float(t) < since_s:
            continue
        data = int(length or 0) > 0
        port = sport if data else dport  # the sender's port names the flow
        per[key(port)]["data" if data else ("sack" if sack else "plain")] += 1
    return per


FIELDS = ["frame.time_relative", "tcp.len", "tcp.options.sack_le", "tcp.srcport", "tcp.dstport"]


def flow_of_port(names: list[str], first_port: int):
    """Flow i's port is first_port + i; other ports (none expected) stay as they are."""
    return lambda p: names[int(p) - first_port] if 0 <= int(p) - first_port < len(names) else p


def on_sim(cell: str, seed: int, duration: float, tmp: Path, sack_compression: int = 0) -> tuple[dict, list[str]]:
    s = fidelity.scenario(cell, duration)
    for f in s.flows:
        f.sack_compression = sack_compression
    d, a = tmp / "data.pcap", tmp / "acks.pcap"
    r = nb.simulate(s, seed=seed, pcap=[("client->server", str(d)), ("server->client", str(a))])
    names = [f["name"] for f in r["flows"]]
    # the simulator numbers the client ports 10000, 10001, ... in flow order
    rows = tshark_rows(d, FIELDS) + tshark_rows(a, FIELDS)
    return tally(rows, duration / 4, flow_of_port(names, 10000)), names


@contextlib.contextmanager
def capturing(pcaps: dict[int, Path], bpf: str = "tcp"):
    """While an emu run is inside the block, tcpdump (Debian `tcpdump`) in
    its hosts' namespaces (host index → pcap file), from when they are
    built, before the flows start, to the run's end."""
    from netbraid.emu import topology

    procs, build = [], topology.Topology.build

    def build_and_capture(self, *a, **k):  # the namespaces exist once built
        build(self, *a, **k)
        for host, pcap in pcaps.items():
            procs.append(subprocess.Popen(["ip", "netns", "exec", self.ns[host], "tcpdump", "-i", "any", "-s",
                                           "128", "-w", str(pcap), bpf],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)  # tcpdump listening before the flows start

    topology.Topology.build = build_and_capture
    try:
        yield
    finally:
        topology.Topology.build = build
        for p in procs:
            p.send_signal(signal.SIGINT)  # tcpdump flushes and closes the file
            p.wait()


def on_emu(cell: str, seed: int, duration: float, tmp: Path) -> tuple[dict, list[str]]:
    from netbraid.emu.traffic import IPERF_PORT

    pcap = tmp / "emu.pcap"
    with capturing({1: pcap}):
        r = nb.simulate(fidelity.scenario(cell, duration), seed=seed, backend="emu")
    names = [f["name"] for f in r["flows"]]
    # Flow i's server listens on IPERF_PORT + i (a data segment's
    # destination port, an ACK's source port: swapped to tally's order).
    # The capture starts about half a second before the flows, so the
    # warm-up cut falls that much early: a few round trips of 20 s.
    rows = [[t, ln, sack, dp, sp] for t, ln, sack, sp, dp in tshark_rows(pcap, FIELDS)]
    per = tally(rows, duration / 4, flow_of_port(names, IPERF_PORT))
    return {k: v for k, v in per.items() if v["data"] > 100}, names


def show(label: str, per: dict, names: list[str]) -> None:
    print(f"{label}:")
    for name in names:
        c = per.get(name, collections.Counter())
        acks = c["plain"] + c["sack"]
        ratio = f"{c['data'] / acks:.2f}" if acks else "—"
        sack = f"{100 * c['sack'] / acks:.0f} %" if acks else "—"
        print(f"  {name:10} data {c['data']:7d}  ACKs {acks:7d}  data/ACK {ratio:>5}  with SACK {sack:>5}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", default="mix:cubic+cubic+bbr+bbr:20:1", help="a fidelity cell (see bench/fidelity.py)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per run")
    ap.add_argument("--sack-compression", type=int, default=0, metavar="N",
                    help="the simulated receivers' sack_compression (Linux: 44; default 0, the Linux profile's)")
    ap.add_argument("--no-emu", action="store_true", help="the simulator's side only")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        per, names = on_sim(a.cell, a.seed, a.duration, tmp, a.sack_compression)
        show(f"sim (sack_compression = {a.sack_compression})", per, names)
        if a.no_emu:
            return 0
        from netbraid.emu.platform import unavailable_reason

        reason = unavailable_reason()
        if reason:
            print(f"emu skipped: {reason}", file=sys.stderr)
            return 0
        per, names = on_emu(a.cell, a.seed, a.duration, tmp)
        show("emu (this kernel)", per, names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
