"""Traffic on the real stacks, and what it measured.

- TCP and MPTCP bulk transfers: iperf3 (MPTCP under ``mptcpize run``), one
  server per flow; goodput from the receiver's 0.1 s intervals inside the
  measurement window, retransmissions and RTT from the sender's TCP_INFO.
- MPTCP subflows: the subflow sockets' ``bytes_acked`` read from the kernel
  (``ss -ti``) every 0.1 s in the client's namespace.
- UDP CBR and on-off: the project's generator (``udpgen``).
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .netns import EmuError, in_ns, spawn

IPERF_PORT = 5201
SS_ADDR = re.compile(r"(\d+\.\d+\.\d+\.\d+)(?:%\S+)?:(\d+)")
SS_ACKED = re.compile(r"\bbytes_acked:(\d+)")
#: "token:<local>(id:n)/<remote>(id:m)": the remote token names the connection
SS_TOKEN = re.compile(r"\btoken:[0-9a-f]+\(id:\d+\)/([0-9a-f]+)")


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


class IperfFlow:
    def __init__(self, spec: dict[str, Any], index: int, topo, workdir: Path):
        self.spec = spec
        self.port = IPERF_PORT + index
        self.topo = topo
        self.workdir = workdir
        self.mptcp = spec["kind"] == "mptcp"
        self.server: subprocess.Popen | None = None
        self.client: subprocess.Popen | None = None
        self.started_at_ns: int | None = None
        self.out_path = workdir / f"iperf-{index}.json"
        #: (time, {connection token: {(local addr, local port, remote addr): bytes_acked}})
        self.samples: list[tuple[int, dict[str, dict[tuple[str, str, str], int]]]] = []

    def _wrap(self, cmd: list[str]) -> list[str]:
        return ["mptcpize", "run", *cmd] if self.mptcp else cmd

    def start_server(self) -> None:
        ns = self.topo.ns[self.spec["dst"]]
        self.server = spawn(ns, self._wrap(["iperf3", "-s", "-1", "-J", "-p", str(self.port), "-i", "0.1"]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def client_command(self, seconds: int) -> list[str]:
        s, tcp = self.spec, self.spec["tcp"]
        cmd = ["iperf3", "-c", self.topo.addr(s["dst_addr_iface"]), "-p", str(self.port), "-J",
               "--get-server-output", "-C", s["linux_cc"], "-i", "0.1"]
        cmd += ["-n", str(s["bytes"])] if s.get("bytes") else ["-t", str(seconds)]
        if "window" in s["explicit"] or {"rcvbuf", "sndbuf"} & set(s["explicit"]):
            cmd += ["-w", str(tcp["rcvbuf"])]
        if "mss" in s["explicit"]:
            cmd += ["-M", str(tcp["mss"])]
        if s.get("bind_iface") is not None:
            cmd += ["-B", self.topo.addr(s["bind_iface"])]
        return self._wrap(cmd)

    def start_client(self, seconds: int) -> None:
        if self.server is not None and self.server.poll() is not None:
            raise EmuError(f"flow {self.spec['name']}: the iperf3 server exited: {self.server.stderr.read().strip()}")
        ns = self.topo.ns[self.spec["src"]]
        self.started_at_ns = time.time_ns()
        self.client = spawn(ns, self.client_command(seconds), stdout=open(self.out_path, "w"), stderr=subprocess.PIPE)

    # MPTCP subflows ------------------------------------------------------------
    def sample_subflows(self) -> None:
        """One reading of every subflow's bytes_acked (client side)."""
        if not self.mptcp or self.client is None:
            return
        ns = self.topo.ns[self.spec["src"]]
        r = subprocess.run(in_ns(ns, ["ss", "-tinHO", "state", "established", "dport", "=", f":{self.port}"]),
                           capture_output=True, text=True)
        by_token: dict[str, dict[tuple[str, str, str], int]] = {}
        for line in r.stdout.splitlines():
            addrs = SS_ADDR.findall(line)
            acked, token = SS_ACKED.search(line), SS_TOKEN.search(line)
            if len(addrs) < 2 or acked is None:
                continue
            key = (addrs[0][0], addrs[0][1], addrs[1][0])  # a subflow: local address and port, remote address
            by_token.setdefault(token.group(1) if token else "?", {})[key] = int(acked.group(1))
        if by_token:
            self.samples.append((time.time_ns(), by_token))

    # results ---------------------------------------------------------------------
    def finish(self, timeout: float) -> dict[str, Any]:
        name = self.spec["name"]
        try:
            self.client.wait(timeout)
        except subprocess.TimeoutExpired:
            self.client.kill()
            raise EmuError(f"flow {name}: iperf3 did not finish within {timeout:.0f} s") from None
        try:
            doc = json.loads(self.out_path.read_text())
        except ValueError:
            raise EmuError(f"flow {name}: iperf3 printed no JSON: {self.client.stderr.read().strip()}") from None
        if "error" in doc:
            raise EmuError(f"flow {name}: iperf3: {doc['error']}")
        return doc

    def result(self, doc: dict[str, Any], window: tuple[int, int]) -> dict[str, Any]:
        s = self.spec
        w0 = (window[0] - self.started_at_ns) / 1e9
        w1 = (window[1] - self.started_at_ns) / 1e9
        server = doc.get("server_output_json") or {}
        got = 0.0
        for iv in server.get("intervals", []):
            su = iv["sum"]
            if su["end"] > su["start"]:
                got += su["bytes"] * _overlap(su["start"], su["end"], w0, w1) / (su["end"] - su["start"])
        span = (window[1] - window[0]) / 1e9
        sent = doc["end"].get("sum_sent", {})
        streams = doc["end"].get("streams", [{}])
        sender = streams[0].get("sender", {}) if streams else {}
        mss = doc.get("start", {}).get("tcp_mss_default") or s["tcp"]["mss"]
        retrans = sent.get("retransmits")
        segs = sent.get("bytes", 0) / mss if mss else 0
        row = {
            "name": s["name"], "kind": s["kind"], "src": s["src_name"], "dst": s["dst_name"],
            "throughput_bps": None,
            "goodput_bps": got * 8 / span if span > 0 else None,
            "loss_rate": (retrans / (segs + retrans)) if retrans is not None and segs + retrans > 0 else None,
            "retransmits": retrans,
            "bytes_delivered": doc["end"].get("sum_received", {}).get("bytes"),
            "rtt_mean_s": sender.get("mean_rtt", 0) / 1e6 if sender.get("mean_rtt") else None,
            "rtt_min_s": sender.get("min_rtt", 0) / 1e6 if sender.get("min_rtt") else None,
            "congestion_control": s["linux_cc"],
        }
        if self.mptcp:
            row["subflows"] = self.subflow_results(window)
        return row

    def subflow_results(self, window: tuple[int, int]) -> list[dict[str, Any]]:
        if not self.samples:
            return []
        # iperf3 has a control and a data connection: the data one carries the bytes
        totals: dict[str, int] = {}
        for _, by_token in self.samples:
            for token, d in by_token.items():
                totals[token] = max(totals.get(token, 0), sum(d.values()))
        data = max(totals, key=totals.get)
        samples = [(t, bt[data]) for t, bt in self.samples if data in bt]
        keys = sorted({k for _, d in samples for k in d})
        inside = [(t, d) for t, d in samples if window[0] <= t <= window[1]] or samples
        (t0, d0), (t1, d1) = inside[0], inside[-1]
        last = {k: max(d.get(k, 0) for _, d in samples) for k in keys}
        total = sum(last.values()) or 1
        out = []
        for key in keys:
            src, port, dst = key
            rate = (d1.get(key, 0) - d0.get(key, 0)) * 8e9 / (t1 - t0) if t1 > t0 else None
            unique = sum(1 for k in keys if k[0] == src and k[2] == dst) == 1
            out.append({"name": f"{src}->{dst}" if unique else f"{src}:{port}->{dst}", "src_addr": src, "dst_addr": dst,
                        "bytes_acked": last[key], "share": last[key] / total, "goodput_bps": rate})
        return out

    def stop(self) -> None:
        for p in (self.client, self.server):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


class UdpFlow:
    def __init__(self, spec: dict[str, Any], index: int, topo, workdir: Path, flow_seed: int):
        self.spec = spec
        self.index = index
        self.port = IPERF_PORT + index
        self.topo = topo
        self.workdir = workdir
        self.seed = flow_seed
        self.receiver: subprocess.Popen | None = None
        self.sender: subprocess.Popen | None = None

    def _cmd(self, role: str, cfg: dict[str, Any]) -> list[str]:
        return [sys.executable, "-m", "netbraid.emu.udpgen", role, json.dumps(cfg)]

    def start(self, t0: int, stop_ns: int, window: tuple[int, int], until_ns: int) -> None:
        s = self.spec
        if s["packet_bytes"] < 20:
            raise EmuError(f"flow {s['name']}: packet_size must be at least 20 B on emu")
        rcfg = {"port": self.port, "window_start_ns": window[0], "window_stop_ns": window[1], "until_ns": until_ns,
                "out": str(self.workdir / f"udp-recv-{self.index}.json")}
        self.receiver = spawn(self.topo.ns[s["dst"]], self._cmd("recv", rcfg), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        line = self.receiver.stdout.readline()
        if line.strip() != "ready":
            raise EmuError(f"flow {s['name']}: UDP receiver failed: {self.receiver.stderr.read().strip()}")
        scfg = {"flow_id": self.index, "dst": self.topo.addr(s["dst_addr_iface"]), "port": self.port,
                "bind": self.topo.addr(s["bind_iface"]) if s.get("bind_iface") is not None else None,
                "start_ns": t0 + s["start_ns"], "stop_ns": stop_ns, "rate_bps": s["rate_bps"],
                "packet_bytes": s["packet_bytes"], "kind": s["kind"], "burst_ns": s.get("burst_ns"),
                "idle_ns": s.get("idle_ns"), "distribution": s.get("distribution", "exponential"),
                "shape": s.get("shape", 1.5), "seed": self.seed,
                "out": str(self.workdir / f"udp-send-{self.index}.json")}
        self.sender = spawn(self.topo.ns[s["src"]], self._cmd("send", scfg), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)

    def finish(self, timeout: float, window: tuple[int, int]) -> dict[str, Any]:
        s = self.spec
        for p, role in ((self.sender, "sender"), (self.receiver, "receiver")):
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                raise EmuError(f"flow {s['name']}: the UDP {role} did not finish") from None
            if p.returncode != 0:
                raise EmuError(f"flow {s['name']}: the UDP {role} failed: {p.stderr.read().strip()}")
        sent = json.loads((self.workdir / f"udp-send-{self.index}.json").read_text())
        got = json.loads((self.workdir / f"udp-recv-{self.index}.json").read_text())
        span = (window[1] - window[0]) / 1e9
        hdr = s["header_bytes"]
        lost = max(0, sent["packets_sent"] - got["packets_received"])
        return {
            "name": s["name"], "kind": "udp", "src": s["src_name"], "dst": s["dst_name"],
            "throughput_bps": got["window_packets"] * (s["packet_bytes"] + hdr) * 8 / span if span > 0 else None,
            "goodput_bps": got["window_bytes"] * 8 / span if span > 0 else None,
            "loss_rate": lost / sent["packets_sent"] if sent["packets_sent"] else None,
            "retransmits": 0,
            "packets_sent": sent["packets_sent"], "packets_lost": lost, "packets_received": got["packets_received"],
            "bytes_delivered": got["bytes_received"],
            "delay_p50_s": got["delay_p50_s"], "delay_p99_s": got["delay_p99_s"],
            "arrival_rate_bps": got["arrival_rate_bps"], "reordered": got["reordered"],
        }

    def stop(self) -> None:
        for p in (self.sender, self.receiver):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def whole_seconds(ns: int) -> int:
    """iperf3 takes whole seconds: the flow runs at least as long as asked."""
    return max(1, math.ceil(ns / 1e9))
