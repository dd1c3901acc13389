"""netbraid proxy beside haproxy (TCP mode) and socat, relaying the same
traffic in one sitting, runs alternating (A B C D A B C D ...).

Method (root, about 5 minutes with the defaults):
- throughput: iperf3 (C) through the relay for --seconds, one stream and
  four; the receiver's rate from iperf3's JSON. On loopback, and through
  veth pairs between namespaces (client ns -> relay ns -> server ns).
- CPU per Gb/s: the relay process's user + system time (children included:
  socat forks one per connection) over the run, divided by the run's length
  and by the rate in Gb/s: cores busy per Gb/s relayed.
- connection rate: crates/netbraid-proxy/examples/connrate.rs, 50 workers
  each connecting, reading one byte and closing, for --seconds, on loopback.
- Relays: netbraid-proxy (the release binary of `netbraid proxy`, default
  settings), haproxy 2.6 in TCP mode as Debian configures it (no splice) and
  with `option splice-auto`, socat (fork per connection). haproxy and
  netbraid use two threads (one per core); socat one process per connection.

Medians over --reps; results in bench/results/proxy.json.
Usage: python bench/proxy.py [--reps 3] [--seconds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system time of the process and its descendants: those reaped
    (cutime, cstime) and those still running (socat's per-connection children)."""
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    # utime, stime, cutime, cstime are fields 14-17 (1-based); after ")" they start at index 11.
    total = sum(int(x) for x in f[11:15]) / TICK
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except FileNotFoundError:
            continue
        total += sum(cpu_seconds(int(c)) for c in children)
    return total


def build() -> Path:
    subprocess.run(["cargo", "build", "--quiet", "--release", "-p", "netbraid-proxy", "--bin", "netbraid-proxy",
                    "--example", "connrate"], cwd=ROOT, check=True)
    return ROOT / "target" / "release"


def relay_command(kind: str, listen: str, target: str, workdir: Path, binaries: Path) -> list[str]:
    host, port = listen.rsplit(":", 1)
    if kind == "netbraid":
        return [str(binaries / "netbraid-proxy"), "--listen", listen, "--to", target, "--quiet",
                "--max-connections", "3000"]
    if kind.startswith("haproxy"):
        cfg = workdir / f"{kind}.cfg"
        splice = "    option splice-auto\n" if kind == "haproxy-splice" else ""
        cfg.write_text(
            "global\n    maxconn 4000\n    nbthread 2\n"
            "defaults\n    mode tcp\n    timeout connect 10s\n    timeout client 1m\n    timeout server 1m\n"
            f"{splice}"
            f"listen relay\n    bind {listen}\n    server s1 {target}\n"
        )
        return ["haproxy", "-f", str(cfg), "-db"]
    if kind == "socat":
        return ["socat", f"TCP-LISTEN:{port},bind={host},fork,reuseaddr,backlog=4096", f"TCP:{target}"]
    raise ValueError(kind)


def wait_listening(port: int, ns: str | None = None, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ss", "-ltnH", f"( sport = :{port} )"]
    while not subprocess.run(cmd, capture_output=True, text=True).stdout.strip():
        if time.monotonic() > deadline:
            raise RuntimeError(f"nothing listens on port {port}")
        time.sleep(0.05)


def in_ns(ns: str | None, cmd: list[str]) -> list[str]:
    return (["ip", "netns", "exec", ns] if ns else []) + cmd


def iperf_through(kind: str, where: dict, streams: int, seconds: float, workdir: Path, binaries: Path) -> dict:
    relay = subprocess.Popen(in_ns(where["relay_ns"], relay_command(kind, where["listen"], where["target"],
                                                                      workdir, binaries)),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(int(where["listen"].rsplit(":", 1)[1]), where["relay_ns"])
        cpu0, t0 = cpu_seconds(relay.pid), time.monotonic()
        host, port = where["listen"].rsplit(":", 1)
        out = subprocess.run(in_ns(where["client_ns"], ["iperf3", "-c", host, "-p", port, "-t", str(seconds),
                                                        "-P", str(streams), "-J"]),
                             capture_output=True, text=True, timeout=seconds + 30)
        span = time.monotonic() - t0
        cpu = cpu_seconds(relay.pid) - cpu0
    finally:
        relay.terminate()
        relay.wait(10)
    bps = json.loads(out.stdout)["end"]["sum_received"]["bits_per_second"]
    return {"gbps": bps / 1e9, "cores": cpu / span, "cores_per_gbps": (cpu / span) / (bps / 1e9)}


def connrate_through(kind: str, seconds: float, workdir: Path, binaries: Path) -> dict:
    server = subprocess.Popen([str(binaries / "examples" / "connrate"), "serve", "127.0.0.1:7911"],
                              stdout=subprocess.PIPE, text=True)
    relay = subprocess.Popen(relay_command(kind, "127.0.0.1:7910", "127.0.0.1:7911", workdir, binaries),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert server.stdout.readline().strip() == "ready"
        wait_listening(7910)
        cpu0 = cpu_seconds(relay.pid)
        out = subprocess.run([str(binaries / "examples" / "connrate"), "client", "127.0.0.1:7910", str(seconds),
                              "50"], capture_output=True, text=True, timeout=seconds + 60)
        cpu = cpu_seconds(relay.pid) - cpu0
    finally:
        relay.terminate()
        relay.wait(10)
        server.kill()
        server.wait()
    r = json.loads(out.stdout)
    return {"per_s": r["connections"] / r["seconds"], "errors": r["errors"], "cpu_ms_per_1000": 1e6 * cpu / max(1, r["connections"])}


def namespaces(tag: str) -> dict:
    c, r, s = f"{tag}c", f"{tag}r", f"{tag}s"
    run = lambda *cmd: subprocess.run(list(cmd), check=True, capture_output=True)  # noqa: E731
    for ns in (c, r, s):
        run("ip", "netns", "add", ns)
        run("ip", "-n", ns, "link", "set", "lo", "up")
    run("ip", "link", "add", f"{tag}a", "netns", c, "type", "veth", "peer", "name", f"{tag}b", "netns", r)
    run("ip", "link", "add", f"{tag}x", "netns", r, "type", "veth", "peer", "name", f"{tag}y", "netns", s)
    for ns, dev, addr in ((c, f"{tag}a", "10.79.1.1/24"), (r, f"{tag}b", "10.79.1.2/24"),
                          (r, f"{tag}x", "10.79.2.2/24"), (s, f"{tag}y", "10.79.2.1/24")):
        run("ip", "-n", ns, "addr", "add", addr, "dev", dev)
        run("ip", "-n", ns, "link", "set", dev, "up")
    return {"client": c, "relay": r, "server": s}


def remove(nss: dict) -> None:
    for ns in nss.values():
        for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
            subprocess.run(["kill", "-9", pid], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--relays", default="netbraid,haproxy,haproxy-splice,socat")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "proxy.json")
    args = ap.parse_args()
    missing = [t for t in ("iperf3", "haproxy", "socat", "ip", "ss") if shutil.which(t) is None]
    if missing or os.geteuid() != 0:
        sys.exit(f"needs root and {', '.join(missing) or 'nothing else'} (Debian: iperf3 haproxy socat iproute2)")
    binaries = build()
    relays = args.relays.split(",")
    workdir = Path(tempfile.mkdtemp(prefix="nbpx-bench-"))
    nss = namespaces(f"nbb{os.getpid() % 10000}")
    iperf_srv = [subprocess.Popen(["iperf3", "-s", "-p", "5201"], stdout=subprocess.DEVNULL),
                 subprocess.Popen(in_ns(nss["server"], ["iperf3", "-s", "-B", "10.79.2.1", "-p", "5201"]),
                                  stdout=subprocess.DEVNULL)]
    time.sleep(0.5)
    loop = {"relay_ns": None, "client_ns": None, "listen": "127.0.0.1:7900", "target": "127.0.0.1:5201"}
    veth = {"relay_ns": nss["relay"], "client_ns": nss["client"], "listen": "10.79.1.2:7900",
            "target": "10.79.2.1:5201"}
    cases = {
        "loopback, 1 stream": lambda k: iperf_through(k, loop, 1, args.seconds, workdir, binaries),
        "loopback, 4 streams": lambda k: iperf_through(k, loop, 4, args.seconds, workdir, binaries),
        "veth, 1 stream": lambda k: iperf_through(k, veth, 1, args.seconds, workdir, binaries),
        "connections/s": lambda k: connrate_through(k, args.seconds, workdir, binaries),
    }
    runs: dict = {case: {k: [] for k in relays} for case in cases}
    try:
        for rep in range(args.reps):
            for case, fn in cases.items():
                for kind in relays:
                    r = fn(kind)
                    runs[case][kind].append(r)
                    print(f"rep {rep + 1} {case:20s} {kind:15s} {r}", flush=True)
    finally:
        for p in iperf_srv:
            p.kill()
        remove(nss)
        shutil.rmtree(workdir, ignore_errors=True)
    summary = {}
    print()
    for case, by_kind in runs.items():
        summary[case] = {}
        for kind, rs in by_kind.items():
            med = {key: statistics.median(r[key] for r in rs) for key in rs[0]}
            summary[case][kind] = med
            text = "  ".join(f"{k} {v:.3g}" for k, v in med.items())
            print(f"{case:20s} {kind:15s} {text}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d"), "reps": args.reps, "seconds": args.seconds,
                                    "medians": summary, "runs": runs}, indent=1))
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
