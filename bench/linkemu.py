"""netbraid-linkemu against the ceilings of this machine, side by side, with
real senders (iperf3, C).

Three ways of joining two namespaces `a` and `b` are measured in one run,
case after case (A B C A B C ...):

- ``linkemu R``: one emulated link at rate R, 5 ms delay each way, a
  1000-packet queue, no loss — netbraid-linkemu as emu runs it;
- ``ceiling``: the same emulator at 100 Gb/s, a rate it cannot reach, and
  no delay (as the forwarder: with 5 ms each way TCP's receive window would
  be the limit), so its own machinery is the limit (target: at least 70 % of
  the forwarder);
- ``forwarder``: the same program and the same TUN I/O with the emulation
  switched off (``forward_only``): every packet written out as soon as it is
  read — the ceiling of the I/O method;
- ``bridge``: a veth pair from each namespace into a Linux bridge — the
  machine's own ceiling for moving packets between namespaces.

Per case and repetition:

- **rate**: iperf3 TCP (CUBIC, one stream, 64 KiB writes) a→b for
  ``--seconds`` s; the delivered rate is the receiver's goodput over the
  intervals after the first two seconds (slow start left out), scaled to IP
  packets (× 1500 / 1448: MSS 1448 with timestamps at MTU 1500), the unit the
  link's rate is set in. Target: within ±2 % of R.
- **delay**: netbraid's UDP probe (200-byte datagrams at 1 Mb/s, send time
  stamped, kernel receive time, CLOCK_REALTIME in both namespaces) while
  iperf3 UDP loads the link at half its rate; p50 and p99 of the one-way
  delay. Target (linkemu): p99 within +1 ms of the set delay plus one
  1500-byte serialisation.
- **CPU**: the emulator process's user + system time during the rate step
  per gigabit delivered, and the whole path's: iperf3 sender and receiver,
  the emulator and the kernel's softirq threads (the bridge's work is kernel
  work done in those), each from the kernel's exact per-process accounting
  (``/proc/PID/stat``, ``wait4``); ``/proc/stat``'s tick-sampled machine
  totals miss much of a thread that wakes 10^4-10^5 times a second.
- **two links**: two parallel links a–b (each at R), one iperf3 stream on
  each; the sum of the two delivered rates. Target at R = 1 Gb/s: ≥ 1.2 Gb/s.

Root is needed (namespaces, TUN). Usage:

    python bench/linkemu.py                   # R = 100 and 1000 Mb/s, 3 repetitions
    python bench/linkemu.py --rates 500,1000 --reps 3 --seconds 8
    python bench/linkemu.py --baseline /tmp/netbraid-linkemu-old   # an older build beside this one
    python bench/linkemu.py --profile 1000    # where linkemu's time goes (perf), at 1 Gb/s
    NETBRAID_LINKEMU=target/release/netbraid-linkemu python bench/linkemu.py

Every namespace, device and process it creates is removed on exit and on
Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from netbraid.emu import linkemu as linkemu_mod
from netbraid.emu.netns import ip_batch

NS = ("nblb-a", "nblb-b", "nblb-m")
ADDR = ("10.231.0.1", "10.231.0.2", "10.231.1.1", "10.231.1.2")
WIRE = 1500 / 1448
CEILING_TEST_MBPS = 100_000.0  # IP bytes per TCP payload byte at MSS 1448


def emulator_command() -> list[str]:
    exe = os.environ.get("NETBRAID_LINKEMU")
    return [exe] if exe else linkemu_mod.command()


def in_ns(ns: str, cmd: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *cmd]


def cleanup() -> None:
    for ns in NS:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ksoftirqd_cpu() -> float:
    """CPU seconds of the kernel's softirq threads (packet processing the
    kernel deferred out of the senders' and receivers' own contexts)."""
    total = 0.0
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().startswith("ksoftirqd"):
                    total += cpu_of(int(d.name))
            except OSError:
                pass
    return total


def finish(p: subprocess.Popen, timeout: float) -> tuple[str, float]:
    """Wait for `p`; its standard output and the CPU seconds it used (the
    kernel's exact accounting, from wait4)."""
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return out, usage.ru_utime + usage.ru_stime


class Topology:
    """Namespaces a and b joined by `links` links of one kind."""

    def __init__(self, kind: str, rate_mbps: float, links: int, workdir: Path, exe: list[str]):
        self.kind, self.links, self.emu = kind, links, None
        cleanup()
        ip_batch([f"netns add {NS[0]}", f"netns add {NS[1]}"])
        devs = []
        if kind == "bridge":
            ip_batch([f"netns add {NS[2]}"])
            lines_m = []
            for l in range(links):
                lines_m += [f"link add br{l} type bridge", f"link set br{l} up"]
                for side, ns in ((0, NS[0]), (1, NS[1])):
                    dev, peer = f"nblb{l}{'ab'[side]}", f"nblbp{l}{'ab'[side]}"
                    ip_batch([f"link add {dev} type veth peer name {peer}",
                              f"link set {dev} netns {ns}", f"link set {peer} netns {NS[2]}"])
                    lines_m += [f"link set {peer} master br{l}", f"link set {peer} up"]
                    devs.append((ns, dev))
            ip_batch(lines_m, NS[2])
        else:
            # (the forwarder ignores the rate but the configuration needs one)
            # The ceiling case has no delay, like the forwarder: with 5 ms each
            # way, TCP's receive window (tcp_rmem's 6 MB) would be its limit.
            delay_ns = 0 if kind == "ceiling" else 5_000_000
            direction = {"rate_bps": int((rate_mbps or 1000) * 1e6), "delay_ns": delay_ns, "jitter_ns": 0,
                         "queue": {"packets": 1000, "bytes": None}, "loss": {"model": "none"}}
            cfg = {"seed": 1, **({"forward_only": True} if kind == "forwarder" else {}),
                   "stats": str(workdir / "stats.json"),
                   "links": [{"name": f"l{l}", "a_dev": f"nblb{l}a", "b_dev": f"nblb{l}b",
                              "ab": direction, "ba": direction} for l in range(links)]}
            (workdir / "linkemu.json").write_text(json.dumps(cfg))
            self.emu = subprocess.Popen([*exe, str(workdir / "linkemu.json")],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            line = self.emu.stdout.readline()
            if not line.startswith('{"ready"'):
                raise SystemExit(f"netbraid-linkemu did not start: {self.emu.stderr.read()}")
            self.ready = json.loads(line)
            for l in range(links):
                devs += [(NS[0], f"nblb{l}a"), (NS[1], f"nblb{l}b")]
            ip_batch([f"link set {d} netns {ns}" for ns, d in devs])
        for k, (ns, dev) in enumerate(devs):
            l, side = divmod(k, 2)
            ip_batch(["link set lo up", f"addr add {ADDR[2 * l + side]}/24 dev {dev}",
                      f"link set {dev} mtu 1500 txqueuelen 10000 up"], ns)

    def close(self) -> None:
        if self.emu is not None and self.emu.poll() is None:
            self.emu.send_signal(signal.SIGTERM)
            self.emu.wait(10)
        cleanup()


def iperf_server(ns: str, port: int) -> subprocess.Popen:
    p = subprocess.Popen(in_ns(ns, ["iperf3", "-s", "-1", "-p", str(port), "-J"]), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    return p


def tcp_rates(topo: Topology, seconds: int) -> tuple[list[float], float, float]:
    """Delivered IP rate of one iperf3 TCP stream per link (b/s), and CPU
    seconds per gigabit delivered over the whole run: the emulator's, and
    the whole path's (iperf3 senders and receivers, the emulator, the
    kernel's softirq threads; each process's exact accounting)."""
    servers = [iperf_server(NS[1], 5201 + l) for l in range(topo.links)]
    cpu0 = cpu_of(topo.emu.pid) if topo.emu else 0.0
    soft0 = ksoftirqd_cpu()
    clients = [subprocess.Popen(in_ns(NS[0], ["iperf3", "-c", ADDR[2 * l + 1], "-p", str(5201 + l), "-t",
                                              str(seconds), "-C", "cubic", "-l", "64K", "-J"]),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for l in range(topo.links)]
    sent = [finish(c, seconds + 30) for c in clients]
    cpu = (cpu_of(topo.emu.pid) if topo.emu else 0.0) - cpu0
    got = [finish(s, 10) for s in servers]
    path = cpu + ksoftirqd_cpu() - soft0 + sum(c for _, c in sent + got)
    rates, gbit = [], 0.0
    for (out, _), (sender, _) in zip(got, sent):
        d = json.loads(out)  # the receiver's report: its intervals count bytes received
        if "error" in d or "error" in json.loads(sender):
            raise SystemExit(f"iperf3: {d.get('error') or json.loads(sender)['error']}")
        iv = [i["sum"] for i in d["intervals"] if i["sum"]["start"] >= 2.0 - 1e-6]
        rates.append(sum(i["bytes"] for i in iv) * 8 * WIRE / sum(i["seconds"] for i in iv))
        gbit += d["end"]["sum_received"]["bytes"] * 8 * WIRE / 1e9
    return rates, cpu / gbit, path / gbit


def probe_delay(topo: Topology, load_mbps: float, seconds: float = 4.0) -> tuple[float, float]:
    """p50 and p99 one-way delay (s) of a 1 Mb/s probe beside an iperf3 UDP
    load of `load_mbps`."""
    server = iperf_server(NS[1], 5301)
    load = subprocess.Popen(in_ns(NS[0], ["iperf3", "-c", ADDR[1], "-p", "5301", "-u", "-b", f"{load_mbps}M",
                                          "-l", "1472", "-t", str(int(seconds) + 1), "--pacing-timer", "100"]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(0.5)
    now = time.clock_gettime_ns(time.CLOCK_REALTIME)
    start, stop = now + 200_000_000, now + int(seconds * 1e9)
    with tempfile.TemporaryDirectory() as d:
        rcfg = {"port": 5400, "window_start_ns": start, "window_stop_ns": stop, "until_ns": stop + 300_000_000,
                "out": f"{d}/recv.json"}
        recv = subprocess.Popen(in_ns(NS[1], [sys.executable, "-m", "netbraid.emu.udpgen", "recv", json.dumps(rcfg)]),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert recv.stdout.readline().strip() == "ready", recv.stderr.read()
        scfg = {"flow_id": 1, "dst": ADDR[1], "port": 5400, "start_ns": start, "stop_ns": stop, "rate_bps": 1_000_000,
                "packet_bytes": 200, "kind": "cbr", "seed": 1, "out": f"{d}/send.json"}
        subprocess.run(in_ns(NS[0], [sys.executable, "-m", "netbraid.emu.udpgen", "send", json.dumps(scfg)]),
                       check=True, capture_output=True)
        recv.wait(10)
        got = json.loads(Path(f"{d}/recv.json").read_text())
    load.wait(30)
    server.kill()
    server.wait()
    return got["delay_p50_s"], got["delay_p99_s"]


def measure(kind: str, rate: float, seconds: int, exe: list[str]) -> dict:
    with tempfile.TemporaryDirectory() as d:
        topo = Topology(kind, rate, 1, Path(d), exe)
        try:
            (r,), cpu, busy = tcp_rates(topo, seconds)
            p50, p99 = probe_delay(topo, 0.5 * min(rate or 1000, 1000))
        finally:
            topo.close()
        topo2 = Topology(kind, rate, 2, Path(d), exe)
        try:
            two, _, _ = tcp_rates(topo2, seconds)
        finally:
            topo2.close()
    return {"kind": kind, "rate_mbps": rate, "delivered_bps": r, "p50_s": p50, "p99_s": p99,
            "emu_cpu_per_gbit": cpu if kind != "bridge" else None, "path_cpu_per_gbit": busy,
            "two_links_bps": sum(two)}


def profile(rate: float, exe: list[str]) -> None:
    """perf (Debian's) on the emulator while one iperf3 TCP stream crosses a
    link at `rate`: where linkemu's time goes, by symbol, with call chains."""
    with tempfile.TemporaryDirectory() as d:
        topo = Topology("linkemu", rate, 1, Path(d), exe)
        try:
            server = iperf_server(NS[1], 5201)
            data = Path(d) / "perf.data"
            perf = subprocess.Popen(["perf", "record", "-g", "-o", str(data), "-p", str(topo.emu.pid), "--", "sleep",
                                     "5"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run(in_ns(NS[0], ["iperf3", "-c", ADDR[1], "-t", "6", "-C", "cubic"]), capture_output=True,
                           check=True)
            perf.wait()
            server.wait(10)
        finally:
            topo.close()
        report = subprocess.run(["perf", "report", "-i", str(data), "--no-children", "--sort", "sym", "--stdio",
                                 "-g", "caller,0.5,callee,function,percent", "--percent-limit", "1.5"],
                                capture_output=True, text=True).stdout
    print("\n".join(line for line in report.splitlines() if line.strip() and not line.startswith("#")))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="100,1000", help="link rates in Mb/s, comma-separated")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--json", help="write every measurement here")
    ap.add_argument("--profile", type=float, metavar="MBPS", help="instead of the comparison: perf profile of "
                                                                  "linkemu forwarding one TCP stream at this rate")
    ap.add_argument("--baseline", help="another netbraid-linkemu binary (an older build) measured beside this one "
                                       "at the same rates")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("bench/linkemu.py needs root (network namespaces, TUN devices)")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.profile:
        try:
            profile(args.profile, emulator_command())
        finally:
            cleanup()
        return
    # "ceiling": the emulator at a rate it cannot reach (100 Gb/s), so its own
    # machinery is the limit, to set beside the forwarder's
    mine, theirs = emulator_command(), [args.baseline] if args.baseline else None
    cases = []
    for r in args.rates.split(","):
        cases.append(("linkemu", float(r), mine))
        if theirs:
            cases.append(("baseline", float(r), theirs))
    cases += [("ceiling", CEILING_TEST_MBPS, mine), ("forwarder", 0.0, mine), ("bridge", 0.0, None)]
    rows = []
    try:
        for rep in range(args.reps):
            for kind, rate, exe in cases:
                m = measure(kind, rate, args.seconds, exe)
                rows.append(m)
                print(f"rep {rep + 1} {kind:>9} {rate or '':>6}: {m['delivered_bps'] / 1e6:7.1f} Mb/s, "
                      f"p50 {1e3 * m['p50_s']:.3f} ms p99 {1e3 * m['p99_s']:.3f} ms, "
                      f"two links {m['two_links_bps'] / 1e6:7.1f} Mb/s, path CPU {m['path_cpu_per_gbit']:.2f} s/Gb"
                      + (f", emulator CPU {m['emu_cpu_per_gbit']:.2f} s/Gb" if m["emu_cpu_per_gbit"] is not None
                         else ""), flush=True)
    finally:
        cleanup()
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    med = lambda kind, rate, k: statistics.median(m[k] for m in rows if m["kind"] == kind and m["rate_mbps"] == rate)  # noqa: E731
    fwd = med("forwarder", 0.0, "delivered_bps")
    print(f"\nmedians of {args.reps} ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs)")
    print("| case | delivered | error | delay p50 | p99 | two links | emulator CPU/Gb | path CPU/Gb | verdict |")
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, rate, _ in cases:
        d, p50, p99 = (med(kind, rate, k) for k in ("delivered_bps", "p50_s", "p99_s"))
        two, mcpu = med(kind, rate, "two_links_bps"), med(kind, rate, "path_cpu_per_gbit")
        ecpu = med(kind, rate, "emu_cpu_per_gbit") if kind != "bridge" else None
        if kind in ("linkemu", "baseline"):
            err = d / (rate * 1e6) - 1
            expected = 0.005 + 1500 * 8 / (rate * 1e6)
            ok = abs(err) <= 0.02 and p99 - expected <= 1e-3
            verdict = "ok" if ok else "FAILS"
            err_s = f"{100 * err:+.2f} %"
        elif kind == "ceiling":
            verdict, err_s = f"{d / fwd:.0%} of the forwarder (target >= 70 %)", ""
        else:
            verdict, err_s = "", ""
        print(f"| {kind} {int(rate) if rate and kind != 'ceiling' else ''} | {d / 1e6:.1f} Mb/s | {err_s} | {1e3 * p50:.3f} ms | "
              f"{1e3 * p99:.3f} ms | {two / 1e6:.0f} Mb/s | {'' if ecpu is None else f'{ecpu:.2f} s'} | "
              f"{mcpu:.2f} s | {verdict} |")


if __name__ == "__main__":
    main()
