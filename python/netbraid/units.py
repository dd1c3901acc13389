"""Quantities with units, as users write them in scenarios.

Rates are decimal, as networking counts them ("10Mbps" = 10 000 000 bit/s).
Sizes are binary, as socket buffers and iperf count them ("64KB" = "64KiB" =
65 536 bytes, so ``window = "64KB"`` is ``iperf -w 64K``). Times take ns, us,
ms, s or min. Every parser raises ``ValueError`` whose text says what is allowed.
"""

from __future__ import annotations

import math
import re

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_PATTERN = re.compile(rf"^\s*{_NUMBER}\s*([A-Za-zµ/]*)\s*$")

RATE_UNITS = {
    # ("kbit", "mbit", … are tc's spellings of the same bits per second)
    "bps": 1, "b/s": 1, "bit": 1, "bit/s": 1,
    "kbps": 1e3, "kb/s": 1e3, "kbit/s": 1e3, "kbit": 1e3,
    "mbps": 1e6, "mb/s": 1e6, "mbit/s": 1e6, "mbit": 1e6,
    "gbps": 1e9, "gb/s": 1e9, "gbit/s": 1e9, "gbit": 1e9,
    "tbps": 1e12, "tb/s": 1e12, "tbit/s": 1e12, "tbit": 1e12,
}
TIME_UNITS = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9, "min": 60e9}
SIZE_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "k": 1024, "kb": 1024, "kib": 1024,
    "m": 1024**2, "mb": 1024**2, "mib": 1024**2,
    "g": 1024**3, "gb": 1024**3, "gib": 1024**3,
}
PACKET_UNITS = {"p", "pkt", "pkts", "packet", "packets"}

RATE_HELP = ('a rate with a unit, e.g. "10Mbps", "1.5Gbps", "64kbps" (bps, kbps, Mbps, Gbps, Tbps; '
             'tc\'s "10mbit" too)')
TIME_HELP = 'a time with a unit, e.g. "5ms", "1.5s", "200us" (ns, us, ms, s, min)'
SIZE_HELP = 'a size with a unit, e.g. "64KB", "1MB", "1500B" (B, KB, MB, GB; 1 KB = 1024 B)'
QUEUE_HELP = 'a queue limit: packets ("100p", "100 packets" or a bare integer) or bytes ("64KB")'


def _split(text: object, what: str) -> tuple[float, str]:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"expected {what}, got {text!r}")
    m = _PATTERN.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not {what}")
    value = float(m.group(1))
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value, m.group(2)


# Upper bounds keep every sum of times, sizes and rates far inside the
# simulator's 64-bit integers (2^64 ns is 584 years).
MAX_TIME_NS = 10**16  # about 115 days
MAX_RATE_BPS = 10**13  # 10 Tb/s
MAX_SIZE_BYTES = 2**50  # 1 PiB


def _negative(text: object) -> bool:
    """A string with a minus sign before a non-zero number ("-0s" is zero)."""
    if not (isinstance(text, str) and text.strip().startswith("-")):
        return False
    m = _PATTERN.match(text.strip()[1:])
    return not (m and float(m.group(1)) == 0.0)


def _unsigned(text: object) -> object:
    """`text` without the minus sign of a negative zero."""
    return text.strip()[1:] if isinstance(text, str) and text.strip().startswith("-") else text


def _bounded(value: float, limit: int, text: object, what: str) -> int:
    """`value` rounded to an integer, refused above `limit` before the
    conversion (a float such as 1e308 × 1e9 is infinite and has no integer)."""
    if not value <= limit:
        raise ValueError(f"{text!r} is too large (allowed: up to {what})")
    return round(value)


def parse_rate(text: object) -> int:
    """Bit/s as an integer."""
    value, unit = _split(text, RATE_HELP)
    if "B" in unit:
        raise ValueError(f"{text!r}: rates are in bits per second, not bytes (8 bits = 1 byte); e.g. \"80Mbps\" for 10 MB/s")
    factor = RATE_UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"{text!r}: unknown or missing rate unit; expected {RATE_HELP}")
    bps = _bounded(value * factor, MAX_RATE_BPS, text, "10 Tbps")
    if bps <= 0:
        raise ValueError(f"{text!r} is not allowed: a rate is at least 1 bps" if value > 0
                         else f"{text!r}: a rate must be positive (at least 1 bps)")
    return bps


def parse_time(text: object, *, allow_zero: bool = True) -> int:
    """Nanoseconds as an integer. Negative times are rejected by the pattern."""
    if _negative(text):
        raise ValueError(f"{text!r}: a time cannot be negative")
    text = _unsigned(text)
    value, unit = _split(text, TIME_HELP)
    factor = TIME_UNITS.get(unit)
    if factor is None:
        raise ValueError(f"{text!r}: unknown or missing time unit; expected {TIME_HELP}")
    ns = _bounded(value * factor, MAX_TIME_NS, text, "10^7 s, about 115 days")
    if ns == 0 and not allow_zero:
        raise ValueError(f"{text!r}: must be longer than zero")
    return ns


def parse_size(text: object) -> int:
    """Bytes as an integer."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"{text}: a size cannot be negative")
        return _bounded(text, MAX_SIZE_BYTES, text, "1 PiB")
    if _negative(text):
        raise ValueError(f"{text!r}: a size cannot be negative")
    text = _unsigned(text)
    value, unit = _split(text, SIZE_HELP)
    factor = SIZE_UNITS.get(unit.lower())
    if factor is None:
        raise ValueError(f"{text!r}: unknown or missing size unit; expected {SIZE_HELP}")
    if unit.endswith("b"):  # (of the size units, "b", "kb", "kib", … end so; "byte" does not)
        # a lowercase b is bits in rates ("kbps"): a size of "64kb" is ambiguous
        number = str(text).strip()[: -len(unit)].strip()
        raise ValueError(f"{text!r}: a lowercase b reads as bits; sizes are in bytes: write "
                         f"\"{number}{unit[0].upper() + unit[1:-1] if len(unit) > 1 else ''}B\" "
                         "(1 KB = 1024 B)")
    n = _bounded(value * factor, MAX_SIZE_BYTES, text, "1 PiB")
    if factor == 1 and value != int(value):
        raise ValueError(f"{text!r} is not a whole number of bytes")
    if n == 0 and value > 0:
        raise ValueError(f"{text!r} is less than one byte (sizes are whole bytes)")
    return n


def parse_queue(text: object) -> tuple[str, int]:
    """("packets", n) or ("bytes", n)."""
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"{text}: a queue limit cannot be negative")
        return ("packets", _bounded(text, 2**31, text, "2^31 packets"))
    if _negative(text):
        raise ValueError(f"{text!r}: a queue limit cannot be negative")
    text = _unsigned(text)
    value, unit = _split(text, QUEUE_HELP)
    if unit.lower() in PACKET_UNITS:
        if value != int(value):
            raise ValueError(f"{text!r}: a packet count must be a whole number")
        return ("packets", _bounded(value, 2**31, text, "2^31 packets"))
    if unit.lower() in SIZE_UNITS:
        return ("bytes", parse_size(text))
    raise ValueError(f"{text!r}: unknown queue unit; expected {QUEUE_HELP}")


def format_rate(bps: float) -> str:
    shown = abs(float(f"{bps:.3g}"))  # 999.8 kb/s rounds to 1 Mb/s, not "1e+03 kb/s"
    for unit, f in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if shown >= f:
            return f"{bps / f:.3g} {unit}"
    return f"{bps:.3g} b/s"


def format_time(ns: int) -> str:
    """A duration in ns, in the largest unit that keeps it short: "20 s", "150 ms", "40 µs"."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:g} {unit}"
    return f"{ns} ns"


def _exact(value: int, units: list[tuple[str, int]]) -> str:
    """`value` in the largest unit that holds it exactly, so that parsing
    the text gives `value` back: 40_000_000_000 ns → "40s", 1500 ms → "1500ms"."""
    for unit, factor in units:
        if value and value % factor == 0:
            return f"{value // factor}{unit}"
    return f"{value}{units[-1][0]}"


def exact_time(ns: int) -> str:
    return _exact(ns, [("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1)])


def exact_rate(bps: int) -> str:
    return _exact(bps, [("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3), ("bps", 1)])


def exact_size(n: int) -> str:
    return _exact(n, [("GB", 1024**3), ("MB", 1024**2), ("KB", 1024), ("B", 1)])
