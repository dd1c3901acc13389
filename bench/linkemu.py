"""netbraid-linkemu on this machine: the highest link rate at which it still
meets the accuracy targets, and its CPU use at 100 Mb/s.

Method (root needed; about two minutes):
- rate: one link a→b at R with 5 ms delay and a 200-packet queue, offered
  CBR UDP at 1.15 R (1472-byte datagrams) for 3 s; the receiver's IP-level
  arrival rate (kernel timestamps, first to last datagram) must be within
  2 % of R (a 2000-packet queue keeps the link backlogged through the
  Python sender's scheduling stalls).
- delay: the same link offered 0.5 R; the median one-way delay must be
  within 0.2 ms of 5 ms + one serialisation, the 99th percentile within 2 ms.
- R goes up in steps until a target fails; the last R that met both is
  reported.
- CPU: linkemu's user + system time over a run that forwards 100 Mb/s
  (CBR at 100 Mb/s on a 1 Gb/s link, 10 s), divided by the run's traffic time.

Usage: python bench/linkemu.py [--max 1000]
"""

from __future__ import annotations

import argparse

import netbraid as nb


def run(rate_mbps: float, offered_mbps: float, duration: str = "3s", queue: str = "2000p") -> dict:
    s = nb.Scenario(name="linkemu-bench", duration=duration)
    s.add_host("a").add_host("b")
    s.add_link("a", "b", rate=f"{rate_mbps}Mbps", delay="5ms", queue=queue)
    s.add_flow("u", "a", "b", kind="cbr", rate=f"{offered_mbps}Mbps", packet_size="1472B")
    return nb.simulate(s, backend="emu")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max", type=float, default=1000)
    args = ap.parse_args()
    best = None
    print(f"{'rate Mb/s':>10} {'delivered':>10} {'err %':>7} {'p50 ms':>8} {'p99 ms':>8}  verdict")
    for rate in [100, 200, 300, 400, 500, 600, 700, 800, 1000]:
        if rate > args.max:
            break
        over = run(rate, rate * 1.15)["flows"][0]
        err = over["arrival_rate_bps"] / (rate * 1e6) - 1
        half = run(rate, rate * 0.5)["flows"][0]
        expected = 0.005 + 1500 * 8 / (rate * 1e6)
        p50, p99 = half["delay_p50_s"], half["delay_p99_s"]
        ok = abs(err) < 0.02 and abs(p50 - expected) < 0.2e-3 and p99 - expected < 2e-3
        print(f"{rate:>10} {over['arrival_rate_bps'] / 1e6:>10.1f} {100 * err:>+7.2f} {1e3 * p50:>8.3f} {1e3 * p99:>8.3f}  {'ok' if ok else 'FAILS'}")
        if not ok:
            break
        best = rate
    print(f"highest rate meeting the targets: {best} Mb/s")
    r = run(1000, 100, duration="10s")
    traffic_s = r["duration_s"]
    print(f"CPU at 100 Mb/s: {r['linkemu_cpu_s']:.2f} s over {traffic_s:.0f} s = "
          f"{100 * r['linkemu_cpu_s'] / traffic_s:.1f} % of one core "
          f"(delivered {r['flows'][0]['goodput_bps'] / 1e6:.1f} Mb/s of payload)")


if __name__ == "__main__":
    main()
