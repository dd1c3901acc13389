"""Traffic on the real stacks, and what it measured.

- TCP and MPTCP bulk transfers: iperf3 (MPTCP under ``mptcpize run``), one
  server per flow; goodput from the receiver's 0.1 s intervals inside the
  measurement window.
- What the kernel did: the sending sockets' TCP_INFO (``ss -ti``: bytes
  sent, acknowledged and retransmitted, retransmissions, smoothed RTT,
  cwnd, delivery and pacing rates) read every 0.1 s in the client's
  namespace; per-flow retransmissions, RTT, cwnd, rates and the throughput
  on the wire come from the readings inside the measurement window (the
  same window as the simulator's), and MPTCP subflows' goodput from their
  ``bytes_acked``.
- UDP CBR and on-off: the project's generator (``udpgen``).
- SCTP and SCTP-CMT: the project's usrsctp programs (``netbraid-sctpgen``:
  the FreeBSD SCTP stack in user space, over raw IPv4), multihomed over the
  flow's paths; goodput from the receiver's bytes inside the measurement
  window, each path's cwnd and smoothed RTT from the sender's readings.
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

from . import platform
from .netns import EmuError, in_ns, spawn

IPERF_PORT = 5201
#: Proxy k of flow i listens on RELAY_PORT + 16 i + k.
RELAY_PORT = 7100
SS_ADDR = re.compile(r"(\d+\.\d+\.\d+\.\d+)(?:%\S+)?:(\d+)")
#: TCP_INFO fields as ``ss -tinO`` prints them (counters and gauges)
SS_FIELDS = {
    "bytes_acked": re.compile(r"\bbytes_acked:(\d+)"),
    "bytes_sent": re.compile(r"\bbytes_sent:(\d+)"),
    "bytes_retrans": re.compile(r"\bbytes_retrans:(\d+)"),
    "retrans_total": re.compile(r"\bretrans:\d+/(\d+)"),
    "cwnd": re.compile(r"\bcwnd:(\d+)"),
    "mss": re.compile(r"\bmss:(\d+)"),
    "srtt_ms": re.compile(r"\brtt:([\d.]+)/"),
    "minrtt_ms": re.compile(r"\bminrtt:([\d.]+)"),
    # (printed only once nonzero)
    "dsack_dups": re.compile(r"\bdsack_dups:(\d+)"),
}
SS_RATES = {
    "pacing_rate_bps": re.compile(r"\bpacing_rate ([\d.]+)([KMG]?)bps"),
    "delivery_rate_bps": re.compile(r"\bdelivery_rate ([\d.]+)([KMG]?)bps"),
}
UNIT = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9}
#: "token:<local>(id:n)/<remote>(id:m)": the remote token names the connection
SS_TOKEN = re.compile(r"\btoken:[0-9a-f]+\(id:\d+\)/([0-9a-f]+)")


def parse_ss_line(line: str) -> dict[str, float]:
    """The TCP_INFO fields of one ``ss -tinO`` line (those present)."""
    out: dict[str, float] = {}
    for k, rx in SS_FIELDS.items():
        m = rx.search(line)
        if m:
            out[k] = float(m.group(1))
    for k, rx in SS_RATES.items():
        m = rx.search(line)
        if m:
            out[k] = float(m.group(1)) * UNIT[m.group(2)]
    return out


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
        #: The proxies this flow is relayed through (`netbraid proxy`), in path order.
        self.relay: list[dict[str, Any]] = spec.get("relay") or []
        self.relay_ports = [RELAY_PORT + 16 * index + k for k in range(len(self.relay))]
        self.proxies: list[subprocess.Popen] = []
        #: Per leg (sender -> first proxy -> ... -> receiver): the sending sockets' readings,
        #: (time, {connection token ("" for TCP): {(local addr, local port, remote addr): TCP_INFO fields}}).
        self.leg_samples: list[list[tuple[int, dict[str, dict[tuple[str, str, str], dict[str, float]]]]]] = [
            [] for _ in range(len(self.relay) + 1)]
        self.samples = self.leg_samples[0]  # the sender's

    def _wrap(self, cmd: list[str]) -> list[str]:
        return ["mptcpize", "run", *cmd] if self.mptcp else cmd

    def start_server(self) -> None:
        ns = self.topo.ns[self.spec["dst"]]
        self.server = spawn(ns, self._wrap(["iperf3", "-s", "-1", "-J", "-p", str(self.port), "-i", "0.1"]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for k in reversed(range(len(self.relay))):
            self.proxies.insert(0, self._start_proxy(k))
        for k, p in enumerate(self.proxies):
            self._wait_listening(k, p)

    def _hop(self, k: int) -> tuple[str, int]:
        """Where leg k goes: the k-th proxy, or after the last, the receiver."""
        if k < len(self.relay):
            return self.topo.addr(self.relay[k]["addr_iface"]), self.relay_ports[k]
        return self.topo.addr(self.spec["dst_addr_iface"]), self.port

    def _leg_from(self, k: int) -> int:
        """The node whose sockets send leg k."""
        return self.spec["src"] if k == 0 else self.relay[k - 1]["node"]

    def _start_proxy(self, k: int) -> subprocess.Popen:
        r = self.relay[k]
        to = "{}:{}".format(*self._hop(k + 1))
        cmd = [sys.executable, "-m", "netbraid.entry", "proxy", "--listen", f"0.0.0.0:{self.relay_ports[k]}",
               "--to", to, "--quiet", "--drain-timeout", "1s", "--idle-timeout", "0",
               "--buffer", str(r["buffer_bytes"]), "--upstream-cc", r["linux_cc"],
               "--log-json", str(self.workdir / f"proxy-{self.port}-{k}.jsonl")]
        if r["rcvbuf"] is not None:
            cmd += ["--client-rcvbuf", str(r["rcvbuf"])]
        if r["sndbuf"] is not None:
            cmd += ["--upstream-sndbuf", str(r["sndbuf"])]
        if r["mss"] is not None:
            cmd += ["--client-mss", str(r["mss"]), "--upstream-mss", str(r["mss"])]
        return spawn(self.topo.ns[r["node"]], cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def _wait_listening(self, k: int, proc: subprocess.Popen) -> None:
        ns, port = self.topo.ns[self.relay[k]["node"]], self.relay_ports[k]
        deadline = time.monotonic() + 20
        while not subprocess.run(in_ns(ns, ["ss", "-ltnH", f"( sport = :{port} )"]), capture_output=True,
                                 text=True).stdout.strip():
            if proc.poll() is not None:
                raise EmuError(f"flow {self.spec['name']}: the proxy on {self.relay[k]['node_name']} exited: "
                               f"{proc.stderr.read().strip()}")
            if time.monotonic() > deadline:
                raise EmuError(f"flow {self.spec['name']}: the proxy on {self.relay[k]['node_name']} is not "
                               "listening after 20 s")
            time.sleep(0.02)

    def client_command(self, seconds: int) -> list[str]:
        s, tcp = self.spec, self.spec["tcp"]
        addr, port = self._hop(0)
        cmd = ["iperf3", "-c", addr, "-p", str(port), "-J",
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

    # the kernel's view --------------------------------------------------------
    def sample_kernel(self) -> None:
        """One reading of the sending sockets' TCP_INFO (client side): the
        data connection's (and MPTCP's subflows'), and iperf3's control one."""
        if self.client is None:
            return
        for k, samples in enumerate(self.leg_samples):
            self._sample_leg(self.topo.ns[self._leg_from(k)], self._hop(k)[1], samples)

    @staticmethod
    def _sample_leg(ns: str, dport: int, samples: list) -> None:
        r = subprocess.run(in_ns(ns, ["ss", "-tinHO", "state", "established", "dport", "=", f":{dport}"]),
                           capture_output=True, text=True)
        by_token: dict[str, dict[tuple[str, str, str], dict[str, float]]] = {}
        for line in r.stdout.splitlines():
            addrs = SS_ADDR.findall(line)
            info, token = parse_ss_line(line), SS_TOKEN.search(line)
            if len(addrs) < 2 or "bytes_acked" not in info and "bytes_sent" not in info:
                continue
            key = (addrs[0][0], addrs[0][1], addrs[1][0])  # a socket: local address and port, remote address
            by_token.setdefault(token.group(1) if token else "", {})[key] = info
        if by_token:
            samples.append((time.time_ns(), by_token))

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
        srtt_mean = sender["mean_rtt"] / 1e6 if sender.get("mean_rtt") else None
        row = {
            "name": s["name"], "kind": s["kind"], "src": s["src_name"], "dst": s["dst_name"],
            "throughput_bps": None,
            "goodput_bps": got * 8 / span if span > 0 else None,
            "loss_rate": (retrans / (segs + retrans)) if retrans is not None and segs + retrans > 0 else None,
            "retransmits": retrans,
            "bytes_delivered": doc["end"].get("sum_received", {}).get("bytes"),
            # iperf3's mean_rtt averages its readings of the kernel's srtt
            "rtt_mean_s": srtt_mean,
            "srtt_mean_s": srtt_mean,
            "rtt_min_s": sender.get("min_rtt", 0) / 1e6 if sender.get("min_rtt") else None,
            "congestion_control": s["linux_cc"],
        }
        if self.mptcp:
            row["subflows"] = self.subflow_results(window)
            dups = [sub["dsack_dups"] for sub in row["subflows"] if sub.get("dsack_dups") is not None]
            row["dsack_dups"] = sum(dups) if dups else None  # the connection's: its subflows'
        else:
            row.update(self.kernel_results(window, row))
        if self.relay:
            row["legs"] = self.leg_results(window)
        return row

    def leg_results(self, window: tuple[int, int]) -> list[dict[str, Any]]:
        """Each relayed leg's connection as its sender's kernel saw it inside
        the window: goodput from bytes acknowledged, and TCP_INFO's figures."""
        names = [self.spec["src_name"], *(r["node_name"] for r in self.relay), self.spec["dst_name"]]
        legs = []
        for k in range(len(self.leg_samples)):
            data = self._data_connection(k)
            leg = {"name": f"{names[k]}->{names[k + 1]}", "from": names[k], "to": names[k + 1]}
            inside = [(t, next(iter(d.values()))) for t, d in data if window[0] <= t <= window[1]]
            if len(inside) >= 2:
                (t0, a), (t1, b) = inside[0], inside[-1]
                acked = b.get("bytes_acked", 0) - a.get("bytes_acked", 0)
                leg["goodput_bps"] = acked * 8e9 / (t1 - t0) if t1 > t0 else None
                leg.update(self.kernel_results(window, {"retransmits": None, "rtt_mean_s": None}, data))
            legs.append(leg)
        return legs

    def _data_connection(self, leg: int = 0) -> list[tuple[int, dict[tuple[str, str, str], dict[str, float]]]]:
        """The readings of the data connection's sockets: iperf3 also has a
        control connection; the data one acknowledged the most."""
        totals: dict[str, float] = {}
        for _, by_token in self.leg_samples[leg]:
            for token, d in by_token.items():
                totals[token] = max(totals.get(token, 0), sum(x.get("bytes_acked", 0) for x in d.values()))
        if not totals:
            return []
        data = max(totals, key=totals.get)
        samples = [(t, bt[data]) for t, bt in self.leg_samples[leg] if data in bt]
        if self.mptcp:
            return samples
        # a TCP flow: iperf3's control socket shares no token; keep the busiest socket
        last = samples[-1][1]
        key = max(last, key=lambda k: last[k].get("bytes_acked", 0))
        return [(t, {key: d[key]}) for t, d in samples if key in d]

    def kernel_results(self, window: tuple[int, int], row: dict[str, Any], data=None) -> dict[str, Any]:
        """Per-flow metrics from TCP_INFO over the measurement window: what
        the kernel retransmitted, its mean smoothed RTT, cwnd, delivery and
        pacing rates, and the data it put on the wire. Nothing (iperf3's
        whole-run figures stay) when fewer than two readings fell inside the
        window (a run too short for 0.1 s sampling)."""
        data = self._data_connection() if data is None else data
        samples = [(t, next(iter(d.values()))) for t, d in data]
        inside = [(t, x) for t, x in samples if window[0] <= t <= window[1]]
        if len(inside) < 2:
            return {}
        (t0, a), (t1, b) = inside[0], inside[-1]
        dt = (t1 - t0) / 1e9
        mss = b.get("mss") or self.spec["tcp"]["mss"]
        header = self.spec["tcp"].get("header_bytes", 52)

        def mean(k: str) -> float | None:
            vals = [x[k] for _, x in inside if k in x]
            return sum(vals) / len(vals) if vals else None

        def delta(k: str) -> float | None:
            return b[k] - a[k] if k in a and k in b else None

        sent, retrans = delta("bytes_sent"), delta("retrans_total")
        srtt_ms, cwnd = mean("srtt_ms"), mean("cwnd")
        srtt_mean = srtt_ms / 1e3 if srtt_ms is not None else row["rtt_mean_s"]
        out = {
            "retransmits": int(retrans) if retrans is not None else row["retransmits"],
            # data segments the sender put on the wire (lost ones included), headers counted per segment
            "throughput_bps": sent * (1 + header / mss) * 8 / dt if sent is not None and dt > 0 else None,
            # the kernel keeps no RTT samples to average: its smoothed RTT,
            # averaged over the readings, stands in for them
            "rtt_mean_s": srtt_mean,
            "srtt_mean_s": srtt_mean,
            "srtt_s": b["srtt_ms"] / 1e3 if "srtt_ms" in b else None,
            "cwnd_mean_bytes": cwnd * mss if cwnd is not None else None,
            "delivery_rate_bps": mean("delivery_rate_bps"),
            "pacing_rate_bps": mean("pacing_rate_bps"),
            # segments the receiver reported twice (ss prints none before the first)
            "dsack_dups": int(b.get("dsack_dups", 0) - a.get("dsack_dups", 0)),
            "undos": None,  # (the kernel keeps no per-socket count of undos)
        }
        if retrans is not None and sent:
            out["loss_rate"] = retrans / (sent / mss)
        return out

    def subflow_results(self, window: tuple[int, int]) -> list[dict[str, Any]]:
        """Each subflow's goodput and share (its bytes_acked), and what the
        kernel did on it over the measurement window, as for a flow
        (`kernel_results`: retransmissions, RTT, cwnd, rates, throughput):
        each subflow is a TCP socket of its own with its own TCP_INFO."""
        data = self._data_connection()
        samples = [(t, {k: int(x.get("bytes_acked", 0)) for k, x in d.items()}) for t, d in data]
        if not samples:
            return []
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
            row = {"name": f"{src}->{dst}" if unique else f"{src}:{port}->{dst}", "src_addr": src, "dst_addr": dst,
                   "bytes_acked": last[key], "share": last[key] / total, "goodput_bps": rate}
            own = [(t, {key: d[key]}) for t, d in data if key in d]
            row.update(self.kernel_results(window, {"retransmits": None, "rtt_mean_s": None}, data=own))
            out.append(row)
        return out

    def stop(self) -> None:
        for p in (self.client, self.server, *self.proxies):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


class _GeneratorPair:
    """A flow run by one of the project's traffic programs: a receiver in
    the destination's namespace and a sender in the source's, each writing
    a JSON report."""

    what = "traffic"

    def __init__(self, spec: dict[str, Any], index: int, topo, workdir: Path):
        self.spec = spec
        self.index = index
        self.port = IPERF_PORT + index
        self.topo = topo
        self.workdir = workdir
        self.receiver: subprocess.Popen | None = None
        self.sender: subprocess.Popen | None = None

    def _reports(self, timeout: float, prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Wait for both programs; their reports (sender's, receiver's)."""
        for p, role in ((self.sender, "sender"), (self.receiver, "receiver")):
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                raise EmuError(f"flow {self.spec['name']}: the {self.what} {role} did not finish") from None
            if p.returncode != 0:
                raise EmuError(f"flow {self.spec['name']}: the {self.what} {role} failed: {p.stderr.read().strip()}")
        return tuple(json.loads((self.workdir / f"{prefix}-{side}-{self.index}.json").read_text())
                     for side in ("send", "recv"))

    def stop(self) -> None:
        for p in (self.sender, self.receiver):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


class UdpFlow(_GeneratorPair):
    what = "UDP"

    def __init__(self, spec: dict[str, Any], index: int, topo, workdir: Path, flow_seed: int):
        super().__init__(spec, index, topo, workdir)
        self.seed = flow_seed

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
        sent, got = self._reports(timeout, "udp")
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
            "delay_min_s": got["delay_min_s"], "delay_p50_s": got["delay_p50_s"], "delay_p99_s": got["delay_p99_s"],
            "arrival_rate_bps": got["arrival_rate_bps"], "reordered": got["reordered"],
        }


class SctpFlow(_GeneratorPair):
    """An SCTP association on usrsctp: `netbraid-sctpgen recv` in the
    destination's namespace on every destination address of the flow's
    paths, `send` in the source's, connecting to them with the primary
    path's first."""

    what = "SCTP"

    def _addresses(self) -> tuple[list[str], list[str]]:
        paths, primary = self.spec["paths"], self.spec["sctp"].get("primary", 0)
        order = [primary] + [k for k in range(len(paths)) if k != primary]
        local = list(dict.fromkeys(self.topo.addr(paths[k]["src_iface"]) for k in order))
        remote = list(dict.fromkeys(self.topo.addr(paths[k]["dst_iface"]) for k in order))
        return local, remote

    def _stack(self) -> dict[str, Any]:
        c = self.spec["sctp"]
        return {"cmt": bool(c.get("cmt")), "dac": bool(c.get("dac", False)), "sndbuf": c.get("sndbuf", 256 * 1024),
                "rcvbuf": c.get("rcvbuf", 256 * 1024)}

    def start(self, t0: int, stop_ns: int, window: tuple[int, int], until_ns: int) -> None:
        s = self.spec
        exe = platform.sctpgen()
        local, remote = self._addresses()
        rcfg = {**self._stack(), "local": remote, "port": self.port, "window_start_ns": window[0],
                "window_stop_ns": window[1], "until_ns": until_ns, "out": str(self.workdir / f"sctp-recv-{self.index}.json")}
        self.receiver = spawn(self.topo.ns[s["dst"]], [exe, "recv", json.dumps(rcfg)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
        line = self.receiver.stdout.readline()
        if line.strip() != "ready":
            raise EmuError(f"flow {s['name']}: the SCTP receiver failed: {self.receiver.stderr.read().strip()}")
        # a whole-chunk message unless the flow gives one: 45 chunks of 1452 B
        message = s["sctp"].get("message_bytes") or 45 * 1452
        scfg = {**self._stack(), "local": local, "remote": remote, "port": self.port, "local_port": self.port + 1000,
                "start_ns": t0 + s["start_ns"], "stop_ns": stop_ns, "bytes": s.get("bytes"), "message_bytes": message,
                "window_start_ns": window[0], "window_stop_ns": window[1],
                "out": str(self.workdir / f"sctp-send-{self.index}.json")}
        self.sender = spawn(self.topo.ns[s["src"]], [exe, "send", json.dumps(scfg)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)

    def finish(self, timeout: float, window: tuple[int, int]) -> dict[str, Any]:
        s = self.spec
        sent, got = self._reports(timeout, "sctp")
        span = (window[1] - window[0]) / 1e9
        local, remote = self._addresses()
        subflows = []
        for k, path in enumerate(sent["paths"]):
            inside = [x for x in path["samples"] if window[0] <= x[0] <= window[1]] or path["samples"]
            cwnd = [c for _, c, _ in inside]
            rtt = [r for _, _, r in inside if r > 0]
            srtt_mean = sum(rtt) / len(rtt) / 1e3 if rtt else None
            subflows.append({
                "name": f"{s['name']}#{k}", "src_addr": local[min(k, len(local) - 1)], "dst_addr": path["addr"],
                "cwnd_mean_bytes": sum(cwnd) / len(cwnd) if cwnd else None,
                # (usrsctp's readings are of its smoothed RTT, as the kernel's)
                "rtt_mean_s": srtt_mean,
                "srtt_mean_s": srtt_mean,
            })
        return {
            "name": s["name"], "kind": "sctp", "src": s["src_name"], "dst": s["dst_name"],
            "throughput_bps": None,
            "goodput_bps": got["window_bytes"] * 8 / span if span > 0 else None,
            "bytes_delivered": got["bytes_received"],
            "bytes_sent": sent["bytes_sent"],
            # usrsctp's own counters over the window (chunks; its fast
            # retransmissions are counted per chunk, not per recovery)
            "retransmits": sent["window_counters"]["retransmitted_chunks"],
            "fast_retransmitted_chunks": sent["window_counters"]["fast_retransmitted_chunks"],
            "timeouts": sent["window_counters"]["t3_timeouts"],
            "duplicates_received": got["window_counters"]["duplicate_chunks_received"],
            # CPU the two usrsctp processes used (whole run): beside linkemu's,
            # whether the machine's cores were the limit
            "stack_cpu_s": sent.get("cpu_s", 0.0) + got.get("cpu_s", 0.0),
            "congestion_control": "usrsctp-cmt" if s["sctp"].get("cmt") else "usrsctp",
            "subflows": subflows,
        }


def whole_seconds(ns: int) -> int:
    """iperf3 takes whole seconds: the flow runs at least as long as asked."""
    return max(1, math.ceil(ns / 1e9))
