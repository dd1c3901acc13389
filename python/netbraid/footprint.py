"""The memory a run will need, estimated from the scenario before anything
is expanded or allocated, and checked against what this machine has: a run
that cannot fit is refused up front (with the estimate and the limit), a
large one is warned about.

The figures are peak resident memory of `netbraid run` per node, link, flow
and time-series sample, measured by bench/footprint.py (2026-11-25, this
2-core machine; bench/RESULTS.md). Most of it is the Python side (the
resolved scenario and the results as Python objects), not the simulator.
Packets in flight are not counted: they depend on the traffic, and at the
rates scenarios use they are small beside the rest.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import ScenarioError

if TYPE_CHECKING:
    from .schema import Scenario

#: bench/footprint.py, 2026-11-25 (see the module's docstring): a 2-host
#: run peaks at 183 MiB (Python with pandas and the simulator loaded);
#: each node 466 B, link 6.5 KB, flow 9.3 KB, sample 255 B for 3 series.
BASE_BYTES = 190 * 2**20
NODE_BYTES = 500
LINK_BYTES = 6_600
FLOW_BYTES = 9_400
SAMPLE_BYTES = 90  # one sample time of one series (a flow, a subflow or a link direction)

#: Time-series samples per run (more is refused in resolve, with its own message).
MAX_SAMPLES = 1_000_000
#: Warn above this share of the available memory.
WARN_SHARE = 0.5


@dataclass(frozen=True)
class Footprint:
    nodes: int
    links: int
    flows: int
    series_samples: int

    @property
    def bytes(self) -> int:
        return (BASE_BYTES + self.nodes * NODE_BYTES + self.links * LINK_BYTES + self.flows * FLOW_BYTES
                + self.series_samples * SAMPLE_BYTES)

    def describe(self) -> str:
        parts = [f"{self.nodes:,} nodes", f"{self.links:,} links", f"{self.flows:,} flows"]
        if self.series_samples:
            parts.append(f"{self.series_samples:,} time-series samples")
        return ", ".join(parts)


def group_sizes(s: "Scenario") -> dict[str, int]:
    """The nodes each host or router entry stands for (its group's count, or 1), by name."""
    return {n.name: n.count or 1 for n in [*s.hosts, *s.routers]}


def estimate(s: "Scenario") -> Footprint:
    """From the scenario as written: groups are counted, not expanded."""
    size = group_sizes(s)

    def members(name: str) -> int:
        return size.get(name, 1)  # a member of a group ("h3") is one node

    def ifaces(name: str) -> int:
        # a host has one interface per link it is on (a group member: its group's)
        group = name.rstrip("0123456789") if name not in size else name
        return max(1, sum(1 for l in s.links if group in (l.a, l.b) or name in (l.a, l.b)))

    nodes = sum(size.values())
    links = sum(max(members(l.a), members(l.b)) for l in s.links)
    flows = 0
    series = 0
    for f in s.flows:
        n = max(members(f.src), members(f.dst)) * f.count
        subflows = 0
        if f.paths:
            subflows = len(f.paths)
        elif f.kind == "mptcp":
            subflows = ifaces(f.src) * (ifaces(f.dst) if f.subflows == "fullmesh" else 1)
        elif f.kind == "sctp":
            subflows = ifaces(f.dst)  # a path per destination address
        elif f.via:
            subflows = len(f.via) + 1  # a connection per leg, a relay per proxy
        flows += n * (1 + subflows)
        series += n * (1 + subflows)
    samples = 0
    if s.measure is not None and s.measure.interval:
        samples = min(s.duration // s.measure.interval, MAX_SAMPLES) * (series + 2 * links)
    return Footprint(nodes, links, flows, samples)


def available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (what can be allocated without
    swapping), or None where there is no such file."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def check(s: "Scenario", parallel: int = 1) -> Footprint:
    """Refuse a scenario whose runs (`parallel` at once) cannot fit in this
    machine's available memory; return the estimate (for a warning)."""
    fp = estimate(s)
    have = available_bytes()
    need = fp.bytes * parallel
    if have is not None and need > have:
        each = f" ({parallel} runs at once, {fp.bytes / 2**30:.1f} GiB each)" if parallel > 1 else ""
        raise ScenarioError(
            f"this scenario needs about {need / 2**30:.1f} GiB of memory{each} for {fp.describe()}, "
            f"and this machine has {have / 2**30:.1f} GiB available; make it smaller"
            + (" or run fewer at once (--workers)" if parallel > 1 else "")
            + " (estimate per node, link, flow and sample: docs/scenario.md)")
    return fp


def warning(fp: Footprint, parallel: int = 1) -> str | None:
    """A warning for a run that will take more than half the available memory."""
    have = available_bytes()
    need = fp.bytes * parallel
    if have is not None and WARN_SHARE * have < need <= have:  # above `have`, check() refuses it
        return (f"warning: this run needs about {need / 2**30:.1f} GiB of the {have / 2**30:.1f} GiB available "
                f"({fp.describe()})")
    return None


#: Datagrams a UDP source may send in one run before a warning: at the
#: simulator's tens of millions of packet-hops a second (bench/RESULTS.md),
#: more takes minutes; a rate typed a thousand times too high is the usual cause.
MANY_DATAGRAMS = 200_000_000


def udp_work_warning(s: "Scenario") -> str | None:
    """A warning for UDP sources that will send so many datagrams that the
    run takes minutes (each is simulated, even where a link drops it)."""
    from .resolve import CBR_DEFAULT_PACKET, ONOFF_DEFAULT_PACKET
    from .units import exact_rate, format_time

    size = group_sizes(s)
    worst = None
    total = 0.0
    for f in s.flows:
        if f.kind not in ("cbr", "onoff") or not f.rate:
            continue
        default = CBR_DEFAULT_PACKET if f.kind == "cbr" else ONOFF_DEFAULT_PACKET
        packet = f.packet_size or default
        end = min(f.stop or s.duration, s.duration)
        active = max(0, end - f.start)
        # flow k of the pair's n starts at start + k × start_step; an on-off
        # source sends at `rate` for burst_time out of burst_time + idle_time
        n = max(size.get(f.src, 1), size.get(f.dst, 1)) * f.count
        m = min(n, -(-active // f.start_step)) if f.start_step else n  # those that start before the end
        sending = m * active - f.start_step * m * (m - 1) // 2  # the sum of (active − k × start_step)
        on = f.burst_time / (f.burst_time + f.idle_time) if f.kind == "onoff" else 1.0
        datagrams = f.rate / (8 * packet) * sending / 1e9 * on
        total += datagrams
        if worst is None or datagrams > worst[0]:
            worst = (datagrams, f, packet, active)
    if worst is None or total <= MANY_DATAGRAMS:
        return None
    _, f, packet, active = worst
    return (f"warning: the UDP sources send about {total:.2g} datagrams in this run (flow '{f.name}': "
            f"{exact_rate(f.rate)} of {packet}-B datagrams for {format_time(active)}); each is simulated, so the "
            "run will take minutes: is the rate right?")
