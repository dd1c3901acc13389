"""Where an MPTCP connection waits: one cell of paper 001 (MPTCP, loss on
Path0, at emu's ×0.2) on the simulator and on this machine's kernel, each
captured on every link direction (the simulator's pcap, with its DSS
options; tcpdump in the kernel sender's namespace), read back with tshark's
MPTCP fields. Per backend: goodput per subflow; how long DATA_ACK stood
still (gaps over 2 and 20 ms); the ~RTO-long idles of each subflow; its
segments sent again and how long after the first sending; and on emu the
kernel's own counters (`nstat` polled in both hosts' namespaces:
connection-level retransmissions, duplicate data, timeouts, loss probes).
docs/papers/001.md, "Not done yet", reads these for 2 % and 100 KB.

    python bench/mptcp_stalls.py [--loss 0.02] [--window 100] [--seconds 6] [--seed 1]

The emu part needs root and network namespaces (it is skipped, with a
message, where they are missing); tshark and tcpdump from Debian.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ack_pattern import capturing, tshark_rows  # noqa: E402

import netbraid as nb  # noqa: E402
from netbraid.papers import p001  # noqa: E402

FIELDS = ["frame.time_epoch", "ip.src", "tcp.srcport", "tcp.dstport", "tcp.len", "tcp.seq",
          "tcp.options.mptcp.rawdataack"]
#: the client's two addresses (its interface on each path), as both backends number them
CLIENT = {"10.0.1.1", "10.0.2.1"}
#: kernel counters worth reading here (those not 0 are printed)
COUNTERS = ("MPTcpExtMPTCPRetrans", "MPTcpExtDuplicateData", "MPTcpExtNoDSSInWindow", "MPTcpExtRcvPruned",
            "MPTcpExtOFOPruned", "MPTcpExtBacklogDrop", "MPTcpExtRcvWndConflict", "TcpExtTCPTimeouts",
            "TcpExtTCPLossProbes", "TcpExtTCPLossProbeRecovery", "TcpExtTCPSackRecovery")


def stalls(rows: list[list[str]]) -> dict:
    """What the rows of one capture say of the data connection (the subflows
    that carry most data; iperf3's control connection is left out)."""
    sent = collections.Counter((r[2], r[1]) for r in rows if r[1] in CLIENT and r[4] and int(r[4]) > 0)
    busiest = [pa for pa, n in sent.most_common() if n > 100][:2]
    ports = [p for p, _ in busiest]
    path_of = {p: f"Path{int(a.split('.')[2]) - 1} ({a})" for p, a in busiest}
    first: dict[tuple[str, int], float] = {}
    resent: dict[str, list[float]] = collections.defaultdict(list)
    times: dict[str, list[float]] = collections.defaultdict(list)
    acks = []
    for r in rows:
        t = float(r[0])
        if r[1] in CLIENT and r[2] in ports and r[4] and int(r[4]) > 0:
            times[r[2]].append(t)
            key = (r[2], int(r[5]))
            if key in first:
                resent[r[2]].append(t - first[key])
            else:
                first[key] = t
        elif r[1] not in CLIENT and r[3] in ports and r[6]:
            acks.append((t, int(r[6])))
    acks.sort()
    gaps, last_t, last_a = [], None, None
    for t, a in acks:
        if last_a is None or a > last_a:
            if last_t is not None:
                gaps.append(t - last_t)
            last_t, last_a = t, a

    def over(values: list[float], s: float) -> tuple[int, float]:
        big = [v for v in values if v > s]
        return len(big), round(sum(big), 2)

    out = {"data_ack_still_over_2ms": over(gaps, 0.002), "data_ack_still_over_20ms": over(gaps, 0.02),
           "subflows": {}}
    for p in sorted(ports, key=lambda p: path_of[p]):
        ts = times[p]
        idles = [b - a for a, b in zip(ts, ts[1:])]
        again = sorted(resent[p])
        out["subflows"][path_of[p]] = {
            "segments": len(ts), "sent_again": len(again),
            "sent_again_after_ms_median": round(1e3 * again[len(again) // 2], 2) if again else None,
            "idles_over_100ms": over(idles, 0.1)}
    return out


def on_sim(loss: float, window: int, seconds: float, seed: int, tmp: Path) -> dict:
    s = p001.scenario("mptcp", window, loss=loss, scale=p001.EMU_SCALE, duration_s=seconds, beside_kernel=True)
    dirs = ["pc0->pc1", "pc1->pc0", "pc0->pc1#2", "pc1->pc0#2"]
    files = [tmp / f"sim{k}.pcap" for k in range(4)]
    r = nb.simulate(s, seed=seed, pcap=[(d, str(f)) for d, f in zip(dirs, files)])
    merged = tmp / "sim.pcap"
    subprocess.run(["mergecap", "-w", str(merged), *map(str, files)], check=True)
    return {"goodput_mbps": _goodputs(r), **stalls(tshark_rows(merged, FIELDS))}


def on_emu(loss: float, window: int, seconds: float, seed: int, tmp: Path) -> dict:
    from netbraid.emu import topology

    counters: dict[int, str] = {}
    done = threading.Event()

    def poll(namespaces: list[str]) -> None:
        # the last reading before the namespaces go is the run's
        while not done.is_set():
            for host, ns in enumerate(namespaces):
                c = subprocess.run(["ip", "netns", "exec", ns, "nstat", "-az", "--json"],
                                   capture_output=True, text=True)
                if c.returncode == 0 and c.stdout.strip():
                    counters[host] = c.stdout
            time.sleep(0.3)

    build = topology.Topology.build

    def build_and_poll(self, *a, **k):
        build(self, *a, **k)
        threading.Thread(target=poll, args=(list(self.ns),), daemon=True).start()

    pcap = tmp / "emu.pcap"
    topology.Topology.build = build_and_poll
    try:
        with capturing({0: pcap}):
            r = nb.simulate(p001.scenario("mptcp", window, loss=loss, scale=p001.EMU_SCALE, duration_s=seconds,
                                          backend="emu"), seed=seed, backend="emu")
    finally:
        topology.Topology.build = build
        done.set()
    kernel = {}
    for host, text in sorted(counters.items()):
        values = {k: v for section in json.loads(text).values() for k, v in section.items()}
        kernel[("client", "server")[host]] = {k: values[k] for k in COUNTERS if values.get(k)}
    return {"goodput_mbps": _goodputs(r), **stalls(tshark_rows(pcap, FIELDS)), "kernel_counters": kernel}


def _goodputs(r: dict) -> dict:
    f = r["flows"][0]
    return {"connection": round(f["goodput_bps"] / 1e6, 1),
            "subflows": [round(s["goodput_bps"] / 1e6, 1) for s in f.get("subflows", [])]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loss", type=float, default=0.02, help="loss on Path0's data direction (default 0.02)")
    ap.add_argument("--window", type=int, default=100, help="iperf's -w in KB at the paper's scale (default 100)")
    ap.add_argument("--seconds", type=float, default=6.0, help="run length (default 6)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not 0 <= a.loss < 1 or a.window <= 0 or a.seconds <= 0:
        sys.exit("--loss in [0, 1), --window and --seconds above 0")
    with tempfile.TemporaryDirectory() as tmp:
        print("sim:", json.dumps(on_sim(a.loss, a.window, a.seconds, a.seed, Path(tmp))))
        from netbraid.emu.platform import unavailable_reason

        reason = unavailable_reason()
        if reason:
            print(f"emu: skipped ({reason})")
            return
        print("emu:", json.dumps(on_emu(a.loss, a.window, a.seconds, a.seed, Path(tmp))))


if __name__ == "__main__":
    main()
