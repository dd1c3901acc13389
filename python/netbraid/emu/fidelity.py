"""Whether this machine emulated a scenario's links faithfully.

Before a run: a link direction set faster than netbraid-linkemu was measured
to emulate within its accuracy targets on this kind of machine is named, with
the rate asked and the ceiling. After a run: a direction whose packets left
the emulator more than 1 ms after their due time (the machine did not keep
up: CPU, scheduling) is named, with how many. Both are warnings
(`EmuFidelityWarning`), printed by the CLI and kept in the results'
``warnings``; the run itself goes on."""

from __future__ import annotations

import warnings
from typing import Any

from ..resolve import direction_names
from ..units import format_rate

#: The fastest link direction netbraid-linkemu emulates within its targets
#: (rate within 2 %, one-way delay p99 within 1 ms of the set delay) on the
#: 2-vCPU machine it was measured on, driven by iperf3 over TCP; two such
#: links together also met them. `python bench/linkemu.py`, bench/RESULTS.md.
CEILING_BPS = 2_000_000_000
#: Share of a direction's packets that may leave late before the run is
#: called unfaithful (the delay target is on the 99th percentile).
LATE_SHARE = 0.01


class EmuFidelityWarning(UserWarning):
    """emu could not (or may not) emulate a link as the scenario sets it."""


def rate_warnings(resolved: dict[str, Any]) -> list[str]:
    """One line per link direction set above the measured ceiling."""
    names = direction_names([n["name"] for n in resolved["nodes"]], resolved["links"])
    out = []
    for l, link in enumerate(resolved["links"]):
        for k, d in enumerate(("ab", "ba")):
            rate = link[d]["rate_bps"]
            if rate > CEILING_BPS:
                out.append(f"link {names[2 * l + k]}: rate {format_rate(rate)} is above what netbraid-linkemu "
                           f"emulates faithfully on a 2-core machine ({format_rate(CEILING_BPS)} per direction, "
                           f"measured by bench/linkemu.py); packets may leave late or the link run slower than set")
    return out


def late_warnings(links: list[dict[str, Any]]) -> list[str]:
    """One line per link direction (result rows) where more than
    `LATE_SHARE` of the forwarded packets left the emulator late."""
    out = []
    for l in links:
        late, sent = l.get("late_packets") or 0, l.get("tx_packets") or 0
        if sent and late > LATE_SHARE * sent:
            out.append(f"link {l['name']}: {late} of {sent} packets ({100 * late / sent:.1f} %) left the emulator "
                       f"more than 1 ms after their due time (worst {l.get('max_late_s', 0) * 1e3:.1f} ms): this "
                       f"machine did not keep up with {format_rate(l['rate_bps'])}; the results overstate this "
                       f"link's delay (fewer links, lower rates or a quieter machine help)")
    return out


def emit(lines: list[str]) -> None:
    for line in lines:
        warnings.warn(line, EmuFidelityWarning, stacklevel=3)
