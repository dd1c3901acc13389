"""`netbraid proxy --transparent` in network namespaces: a client connects to
the server's own address, a router redirects the connection to the proxy
(nftables REDIRECT, then TPROXY), and the server sees the proxy's address as
its peer — the data went through the proxy, not around it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from proxy_harness import PROXY

NEEDS = [t for t in ("ip", "nft") if shutil.which(t) is None]
REASON = ("needs root" if os.geteuid() != 0 else
          f"missing {', '.join(NEEDS)} (Debian iproute2, nftables)" if NEEDS else None)
pytestmark = [pytest.mark.emu, pytest.mark.skipif(REASON is not None, reason=f"namespaces unavailable: {REASON}")]

SERVER = r"""
import socket, sys
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("10.77.2.1", 5000)); srv.listen(4)
print("ready", flush=True)
c, peer = srv.accept()
data = b""
while chunk := c.recv(65536):
    data += chunk
c.sendall(f"peer={peer[0]} got={len(data)}".encode())
c.close()
"""

CLIENT = r"""
import socket
s = socket.create_connection(("10.77.2.1", 5000), timeout=10)
s.sendall(b"x" * 200000); s.shutdown(socket.SHUT_WR)
out = b""
while chunk := s.recv(4096):
    out += chunk
print(out.decode())
"""


def sh(*cmd: str, ns: str | None = None, **kw) -> subprocess.CompletedProcess:
    full = (["ip", "netns", "exec", ns] if ns else []) + list(cmd)
    return subprocess.run(full, check=True, capture_output=True, text=True, **kw)


@pytest.fixture
def topology():
    """client ── router (proxy) ── server, each in its own namespace."""
    tag = f"nbpx{os.getpid() % 100000}"
    c, r, s = f"{tag}c", f"{tag}r", f"{tag}s"
    try:
        for ns in (c, r, s):
            sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", f"{tag}a", "netns", c, "type", "veth", "peer", "name", f"{tag}b", "netns", r)
        sh("ip", "link", "add", f"{tag}x", "netns", r, "type", "veth", "peer", "name", f"{tag}y", "netns", s)
        for ns, dev, addr in ((c, f"{tag}a", "10.77.1.1/24"), (r, f"{tag}b", "10.77.1.2/24"),
                              (r, f"{tag}x", "10.77.2.2/24"), (s, f"{tag}y", "10.77.2.1/24")):
            sh("ip", "addr", "add", addr, "dev", dev, ns=ns)
            sh("ip", "link", "set", dev, "up", ns=ns)
        for ns in (c, r, s):
            sh("ip", "link", "set", "lo", "up", ns=ns)
        sh("ip", "route", "add", "default", "via", "10.77.1.2", ns=c)
        sh("ip", "route", "add", "default", "via", "10.77.2.2", ns=s)
        sh("sysctl", "-qw", "net.ipv4.ip_forward=1", ns=r)
        yield {"client": c, "router": r, "server": s, "in": f"{tag}b"}
    finally:
        for ns in (c, r, s):
            subprocess.run(["ip", "netns", "pids", ns], capture_output=True)
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def through(topo: dict, tmp_path: Path, rules: list[list[str]]) -> tuple[str, list[dict]]:
    """Sets the router's rules, starts the proxy there, runs one transfer;
    returns what the server said and the proxy's records."""
    r = topo["router"]
    for rule in rules:
        sh(*rule, ns=r)
    log = tmp_path / "proxy.jsonl"
    err = tmp_path / "proxy.stderr"
    proxy = subprocess.Popen(["ip", "netns", "exec", r, *PROXY, "--listen", "0.0.0.0:7000", "--transparent",
                              "--allow", "10.77.2.0/24", "--log-json", str(log)],
                             stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    server = subprocess.Popen(["ip", "netns", "exec", topo["server"], sys.executable, "-c", SERVER],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while "listening on" not in err.read_text():
            assert proxy.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        said = sh(sys.executable, "-c", CLIENT, ns=topo["client"], timeout=30).stdout.strip()
        server.wait(10)
    finally:
        proxy.terminate()
        assert proxy.wait(30) == 0, err.read_text()
        server.kill()
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return said, records


def test_without_redirection_the_client_reaches_the_server_directly(topology, tmp_path):
    said, records = through(topology, tmp_path, [])
    assert said == "peer=10.77.1.1 got=200000" and records == []


def test_redirect_sends_the_connection_through_the_proxy(topology, tmp_path):
    rules = [["nft", "add table ip nbpx"],
             ["nft", "add chain ip nbpx pre { type nat hook prerouting priority dstnat; }"],
             ["nft", f"add rule ip nbpx pre iifname {topology['in']} tcp dport 5000 redirect to :7000"]]
    said, records = through(topology, tmp_path, rules)
    assert said == "peer=10.77.2.2 got=200000"  # the proxy's address: it went through the proxy
    (rec,) = records
    assert (rec["mode"], rec["destination"], rec["upstream"]) == ("transparent", "10.77.2.1:5000", "10.77.2.1:5000")
    assert (rec["bytes_up"], rec["outcome"], rec["reason"]) == (200000, "relayed", "closed")


def test_tproxy_sends_the_connection_through_the_proxy(topology, tmp_path):
    rules = [["nft", "add table ip nbpx"],
             ["nft", "add chain ip nbpx pre { type filter hook prerouting priority mangle; }"],
             ["nft", f"add rule ip nbpx pre iifname {topology['in']} tcp dport 5000 tproxy to :7000 "
                     "meta mark set 1 accept"],
             ["ip", "rule", "add", "fwmark", "1", "lookup", "100"],
             ["ip", "route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", "100"]]
    said, records = through(topology, tmp_path, rules)
    assert said == "peer=10.77.2.2 got=200000"
    (rec,) = records
    assert (rec["destination"], rec["upstream"], rec["bytes_up"]) == ("10.77.2.1:5000", "10.77.2.1:5000", 200000)


MPTCP_SERVER = r"""
import socket, time
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)  # IPPROTO_MPTCP
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("10.78.1.1", 5000)); srv.listen(4)
print("ready", flush=True)
c, peer = srv.accept()
c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
got = 0
while chunk := c.recv(16384):
    got += len(chunk)
    time.sleep(0.01)  # a slow reader keeps the connection open while its subflows are counted
c.sendall(f"got={got}".encode())
c.close()
"""

MPTCP_CLIENT = r"""
import socket, sys
s = socket.create_connection(("127.0.0.1", 7000), timeout=60)
s.sendall(b"m" * 1000000); s.shutdown(socket.SHUT_WR)
out = b""
while chunk := s.recv(4096):
    out += chunk
print(out.decode())
"""


@pytest.fixture
def two_paths():
    """proxy ══ server over two veth pairs (10.78.1.0/24 and 10.78.2.0/24)."""
    tag = f"nbpm{os.getpid() % 100000}"
    p, s = f"{tag}p", f"{tag}s"
    try:
        for ns in (p, s):
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
        for i in (1, 2):
            sh("ip", "link", "add", f"{tag}p{i}", "netns", p, "type", "veth", "peer", "name", f"{tag}s{i}", "netns", s)
            sh("ip", "addr", "add", f"10.78.{i}.2/24", "dev", f"{tag}p{i}", ns=p)
            sh("ip", "addr", "add", f"10.78.{i}.1/24", "dev", f"{tag}s{i}", ns=s)
            sh("ip", "link", "set", f"{tag}p{i}", "up", ns=p)
            sh("ip", "link", "set", f"{tag}s{i}", "up", ns=s)
        sh("ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2", ns=p)
        sh("ip", "mptcp", "limits", "set", "subflows", "2", "add_addr_accepted", "2", ns=s)
        sh("ip", "mptcp", "endpoint", "add", "10.78.2.2", "dev", f"{tag}p2", "subflow", ns=p)
        yield {"proxy": p, "server": s}
    finally:
        for ns in (p, s):
            for pid in subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split():
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_an_mptcp_upstream_carries_one_tcp_client_over_two_paths(two_paths, tmp_path):
    from netbraid.emu import platform

    why = platform.unavailable_reason(mptcp=True)
    if why:
        pytest.skip(f"MPTCP unavailable: {why}")
    p, s = two_paths["proxy"], two_paths["server"]
    err = tmp_path / "proxy.stderr"
    log = tmp_path / "proxy.jsonl"
    proxy = subprocess.Popen(["ip", "netns", "exec", p, *PROXY, "--listen", "127.0.0.1:7000", "--to",
                              "10.78.1.1:5000", "--mptcp", "--log-json", str(log)],
                             stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    server = subprocess.Popen(["ip", "netns", "exec", s, sys.executable, "-c", MPTCP_SERVER],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 30
        while "listening on" not in err.read_text():
            assert proxy.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        client = subprocess.Popen(["ip", "netns", "exec", p, sys.executable, "-c", MPTCP_CLIENT],
                                  stdout=subprocess.PIPE, text=True)
        # The server's TCP subflows of the one connection, by the proxy's address.
        peers: set[str] = set()
        deadline = time.monotonic() + 10
        while len(peers) < 2 and time.monotonic() < deadline and client.poll() is None:
            out = sh("ss", "-tnH", "state", "established", "( sport = :5000 )", ns=s).stdout
            peers |= {line.split()[-1].rsplit(":", 1)[0] for line in out.splitlines() if line.strip()}
            time.sleep(0.05)
        said = client.communicate(timeout=60)[0].strip()
    finally:
        proxy.terminate()
        assert proxy.wait(30) == 0, err.read_text()
        server.kill()
    assert peers == {"10.78.1.2", "10.78.2.2"}, peers
    assert said == "got=1000000"
    (rec,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert (rec["bytes_up"], rec["reason"]) == (1000000, "closed")
