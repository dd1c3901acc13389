"""The emu backend's UDP traffic: a CBR or on-off sender and a receiver,
each run inside a namespace as ``python -m netbraid.emu.udpgen send|recv
JSON``. Every datagram starts with (flow id u32, sequence u64, send time
u64 ns, CLOCK_REALTIME), so the receiver counts loss and one-way delay;
receive times are the kernel's (SO_TIMESTAMPNS), not Python's.

On-off follows ns-2's Application/Traffic/Exponential and /Pareto: a burst
of max(1, round(X)) packets, X of mean burst_time / interval, sent one
interval (= size × 8 / rate) apart, then an idle period of mean idle_time.

Standard library only: it starts in ~50 ms inside each namespace."""

from __future__ import annotations

import json
import math
import random
import socket
import struct
import sys
import time
from typing import Any

HEADER = struct.Struct("!IQQ")
#: Linux's SO_TIMESTAMPNS (Python's socket module does not name it)
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
UDP_IP_HEADER = 28


def _sleep_until(t_ns: int) -> None:
    while True:
        left = t_ns - time.time_ns()
        if left <= 0:
            return
        time.sleep(left / 1e9)


def _draw(rng: random.Random, mean: float, dist: str, shape: float) -> float:
    """Exponential, or Pareto with this shape, of the given mean."""
    if dist == "pareto":
        scale = mean * (shape - 1) / shape
        return scale / (1.0 - rng.random()) ** (1.0 / shape)
    return rng.expovariate(1.0 / mean)


def _burst_packets(rng: random.Random, mean: float, dist: str, shape: float) -> int:
    return max(1, int(_draw(rng, mean, dist, shape) + 0.5))


def send(cfg: dict[str, Any]) -> dict[str, Any]:
    """Send from cfg["start_ns"] until cfg["stop_ns"] (CLOCK_REALTIME)."""
    size = cfg["packet_bytes"]
    interval = size * 8 * 1e9 / cfg["rate_bps"]
    rng = random.Random(cfg["seed"])
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    if cfg.get("bind"):
        sock.bind((cfg["bind"], 0))
    dst = (cfg["dst"], cfg["port"])
    pad = b"\0" * (size - HEADER.size)
    seq = sent_bytes = errors = 0
    start, stop = cfg["start_ns"], cfg["stop_ns"]
    onoff = cfg["kind"] == "on_off"
    burst_left = _burst_packets(rng, cfg["burst_ns"] / interval, cfg["distribution"], cfg["shape"]) if onoff else 0
    next_ns = float(start)
    _sleep_until(start)
    while next_ns < stop:
        _sleep_until(int(next_ns))
        try:
            sock.sendto(HEADER.pack(cfg["flow_id"], seq, time.time_ns()) + pad, dst)
            sent_bytes += size
        except OSError:
            errors += 1  # e.g. no buffer space: counted as sent and lost
        seq += 1
        next_ns += interval
        if onoff:
            burst_left -= 1
            if burst_left == 0:
                next_ns += int(_draw(rng, cfg["idle_ns"], cfg["distribution"], cfg["shape"]))
                burst_left = _burst_packets(rng, cfg["burst_ns"] / interval, cfg["distribution"], cfg["shape"])
    return {"packets_sent": seq, "bytes_sent": seq * size, "send_errors": errors}


def _quantile(sorted_values: list[int], q: float) -> float | None:
    if not sorted_values:
        return None
    k = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[k] / 1e9


def receive(cfg: dict[str, Any]) -> dict[str, Any]:
    """Receive on cfg["port"] until cfg["until_ns"]; count what arrived in
    the measurement window [window_start_ns, window_stop_ns)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind(("0.0.0.0", cfg["port"]))
    print("ready", flush=True)
    w0, w1, until = cfg["window_start_ns"], cfg["window_stop_ns"], cfg["until_ns"]
    received = rx_bytes = win_packets = win_bytes = reordered = 0
    max_seq = -1
    delays: list[int] = []
    first = last = None
    bytes_after_first = 0
    anc_size = socket.CMSG_SPACE(16)
    while True:
        left = until - time.time_ns()
        if left <= 0:
            break
        sock.settimeout(min(left / 1e9, 0.5))
        try:
            data, anc, _, _ = sock.recvmsg(65536, anc_size)
        except socket.timeout:
            continue
        t = time.time_ns()
        for level, kind, value in anc:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                sec, nsec = struct.unpack("qq", value[:16])
                t = sec * 1_000_000_000 + nsec
        if len(data) < HEADER.size:
            continue
        _, seq, sent_at = HEADER.unpack_from(data)
        n = len(data)
        received += 1
        rx_bytes += n
        if seq < max_seq:
            reordered += 1
        max_seq = max(max_seq, seq)
        delays.append(t - sent_at)
        if first is None:
            first = t
        else:
            bytes_after_first += n + UDP_IP_HEADER
        last = t
        if w0 <= t < w1:
            win_packets += 1
            win_bytes += n
    delays.sort()
    return {
        "packets_received": received,
        "bytes_received": rx_bytes,
        "window_packets": win_packets,
        "window_bytes": win_bytes,
        "reordered": reordered,
        "delay_p50_s": _quantile(delays, 0.5),
        "delay_p99_s": _quantile(delays, 0.99),
        "delay_min_s": _quantile(delays, 0.0),
        "delay_max_s": _quantile(delays, 1.0),
        "delay_mean_s": (sum(delays) / len(delays) / 1e9) if delays else None,
        # IP-level rate between the first and the last arrival
        "arrival_rate_bps": (bytes_after_first * 8e9 / (last - first)) if first is not None and last > first else None,
    }


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("send", "recv"):
        print("usage: python -m netbraid.emu.udpgen send|recv JSON", file=sys.stderr)
        return 2
    cfg = json.loads(argv[1])
    out = send(cfg) if argv[0] == "send" else receive(cfg)
    with open(cfg["out"], "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
