"""`netbraid proxy` on loopback: every byte end to end under load and through
a chain, faults on either leg, the allow-list and hostile SOCKS5 input,
graceful shutdown. (Transparent mode needs namespaces: test_proxy_netns.py.)
"""

from __future__ import annotations

import asyncio
import random
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

import pytest

from proxy_harness import (
    PROXY,
    Proxy,
    checked_transfer,
    checking_server,
    free_port,
    raise_fd_limit,
    socks5_reply,
)


@pytest.fixture
def proxies(tmp_path):
    started: list[Proxy] = []

    def start(args: list[str], name: str = "proxy", **kw) -> Proxy:
        p = Proxy(args, tmp_path, name=name, **kw)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.proc.poll() is None:
            p.stop(signal.SIGKILL)
        assert "panicked" not in p.stderr(), p.stderr()


def run_load(port: int, server_port: int, connections: int, max_bytes: int, seed: int, socks: bool = False):
    """`connections` concurrent checked transfers of random sizes both ways."""
    raise_fd_limit()
    rng = random.Random(seed)
    sizes = [(rng.randrange(max_bytes), rng.randrange(max_bytes)) for _ in range(connections)]

    async def main():
        server = await checking_server(port=server_port)
        async with server:
            target = ("127.0.0.1", server_port) if socks else None
            await asyncio.gather(*(
                checked_transfer(port, up, down, seed * 100_000 + i, socks_target=target)
                for i, (up, down) in enumerate(sizes)
            ))
        return sum(u + d for u, d in sizes)

    return asyncio.run(main())


def test_a_thousand_concurrent_connections_every_byte_checked(proxies):
    server_port = free_port()
    p = proxies(["--to", f"127.0.0.1:{server_port}", "--buffer", "256KB"])
    fds_before = p.fds()
    moved = run_load(p.port, server_port, connections=1000, max_bytes=200_000, seed=1)
    p.wait_idle()
    recs = p.records()
    assert len(recs) == 1000
    assert all(r["outcome"] == "relayed" and r["reason"] == "closed" for r in recs), \
        {r["reason"] for r in recs}
    assert p.metrics()["netbraid_proxy_memory_bytes"] == 0
    # Counters agree with the records, and with what the clients moved
    # (headers and digests are 24 and 32 bytes per connection).
    m = p.metrics()
    assert m['netbraid_proxy_bytes_total{direction="up"}'] == sum(r["bytes_up"] for r in recs)
    assert sum(r["bytes_up"] + r["bytes_down"] for r in recs) == moved + 1000 * (24 + 32)
    assert m['netbraid_proxy_outcomes_total{outcome="relayed"}'] == 1000
    # No descriptor left behind; memory within the stated bound (docs/proxy.md).
    assert p.fds_settle(fds_before) <= fds_before  # fewer: a start-up scrape had not closed yet
    assert p.peak_rss_mb() < 100, f"peak RSS {p.peak_rss_mb():.0f} MB for 1,000 connections"
    assert p.stop() == 0


def test_a_chain_of_two_proxies_and_socks5(proxies):
    server_port = free_port()
    b = proxies(["--socks5", "--allow", f"127.0.0.1:{server_port}"], name="b")
    a = proxies(["--socks5", "--allow", f"127.0.0.1:{server_port}", "--via-socks5", f"127.0.0.1:{b.port}"],
                name="a")
    fds = (a.fds(), b.fds())
    run_load(a.port, server_port, connections=1000, max_bytes=100_000, seed=2, socks=True)
    a.wait_idle()
    b.wait_idle()
    for proxy in (a, b):
        recs = proxy.records()
        assert len(recs) == 1000 and all(r["reason"] == "closed" for r in recs)
        assert all(r["upstream"] == f"127.0.0.1:{server_port}" for r in recs)
    assert {r["via"] for r in a.records()} == {f"127.0.0.1:{b.port}"}
    assert a.fds_settle(fds[0]) <= fds[0] and b.fds_settle(fds[1]) <= fds[1]


def test_a_destination_outside_the_allow_list_is_refused_and_logged(proxies):
    server_port = free_port()
    p = proxies(["--socks5", "--allow", "127.0.0.1:1-1000"])
    req = b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", server_port)
    rep = socks5_reply(p.port, req)
    assert rep[:2] == b"\x05\x00" and rep[2:4] == b"\x05\x02"  # method, then "not allowed by ruleset"
    p.wait_idle()
    (rec,) = p.records()
    assert rec["outcome"] == "refused" and "not in --allow" in rec["reason"]
    assert f"refused 127.0.0.1:" in p.stderr() and "not in --allow" in p.stderr()
    assert p.metrics()['netbraid_proxy_outcomes_total{outcome="refused"}'] == 1
    # A fixed upstream outside the allow-list never starts.
    out = subprocess.run(PROXY + ["--listen", f"127.0.0.1:{free_port()}", "--to", "127.0.0.1:9",
                                  "--allow", "10.0.0.0/8"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "outside every --allow" in out.stderr
    assert "Traceback" not in out.stderr


HOSTILE = {
    "not SOCKS": (b"GET / HTTP/1.1\r\n\r\n", b""),
    "SOCKS4": (b"\x04\x01\x00\x50\x7f\x00\x00\x01\x00", b""),
    "no methods": (b"\x05\x00", b"\x05\xff"),
    "BIND": (b"\x05\x01\x00" + b"\x05\x02\x00\x01\x7f\x00\x00\x01\x00\x50", b"\x05\x00\x05\x07"),
    "bad address type": (b"\x05\x01\x00" + b"\x05\x01\x00\x09", b"\x05\x00\x05\x08"),
    "empty name": (b"\x05\x01\x00" + b"\x05\x01\x00\x03\x00\x00\x50", b"\x05\x00\x05\x04"),
    "oversized name": (b"\x05\x01\x00" + b"\x05\x01\x00\x03\xff" + b"a" * 255 + b"\x00\x50", b"\x05\x00\x05\x04"),
    "NUL in name": (b"\x05\x01\x00" + b"\x05\x01\x00\x03\x03a\x00b\x00\x50", b"\x05\x00\x05\x04"),
    "port 0": (b"\x05\x01\x00" + b"\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x00", b"\x05\x00\x05\x04"),
    "truncated": (b"\x05\x01\x00" + b"\x05\x01\x00\x01\x7f", b"\x05\x00"),
}


def test_hostile_socks5_input_gets_a_clean_close(proxies):
    p = proxies(["--socks5", "--allow", "127.0.0.0/8", "--handshake-timeout", "2s"])
    for what, (sent, want) in HOSTILE.items():
        got = socks5_reply(p.port, sent, greeting=b"")
        assert got[:len(want)] == want and (want or not got), f"{what}: {got!r}"
    rng = random.Random(3)
    for _ in range(200):
        blob = rng.randbytes(rng.randrange(1, 600))
        socks5_reply(p.port, blob, greeting=b"")
    p.wait_idle()
    recs = p.records()
    assert len(recs) == len(HOSTILE) + 200
    assert all(r["outcome"] == "refused" for r in recs), {r["reason"] for r in recs if r["outcome"] != "refused"}
    # Still serving.
    server_port = free_port()
    q = proxies(["--socks5", "--allow", f"127.0.0.1:{server_port}"], name="after")
    run_load(q.port, server_port, connections=5, max_bytes=10_000, seed=4, socks=True)
    assert p.proc.poll() is None


def test_slowloris_is_closed_after_the_handshake_timeout(proxies):
    p = proxies(["--socks5", "--allow", "127.0.0.0/8", "--handshake-timeout", "1.5s"])
    t0 = time.monotonic()
    with socket.create_connection(("127.0.0.1", p.port), timeout=10) as s:
        closed = False
        for byte in b"\x05\x01\x00\x05\x01\x00\x01\x7f\x00":
            try:
                s.sendall(bytes([byte]))
                time.sleep(1.0)
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
        if not closed:
            s.settimeout(5)
            assert s.recv(100) in (b"", b"\x05\x00")
    assert time.monotonic() - t0 < 8
    p.wait_idle()
    (rec,) = p.records()
    assert rec["reason"].startswith("handshake timeout")
    assert p.metrics()["netbraid_proxy_timeouts_total"] == 1


def _reset(sock: socket.socket) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def _listener() -> tuple[socket.socket, int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    return srv, srv.getsockname()[1]


@pytest.mark.parametrize("who", ["client", "upstream"])
def test_a_reset_reaches_the_other_side(proxies, who):
    """One side sends, then resets; the other side, reading, sees the reset."""
    srv, port = _listener()
    p = proxies(["--to", f"127.0.0.1:{port}"])
    c = socket.create_connection(("127.0.0.1", p.port))
    s, _ = srv.accept()
    resetter, reader = (c, s) if who == "client" else (s, c)
    resetter.sendall(b"x" * 100_000)
    got = 0
    while got < 100_000:
        got += len(reader.recv(65536))
    _reset(resetter)
    reader.settimeout(10)
    with pytest.raises(ConnectionResetError):
        while reader.recv(65536):
            pass
    p.wait_idle()
    (rec,) = p.records()
    assert rec["reason"] == f"{who} reset"
    assert rec["bytes_up" if who == "client" else "bytes_down"] == 100_000


def test_an_unreachable_upstream_fails_cleanly(proxies):
    closed_port = free_port()
    p = proxies(["--to", f"127.0.0.1:{closed_port}"])
    with pytest.raises(ConnectionResetError):  # the client sees a reset, as from the server itself
        with socket.create_connection(("127.0.0.1", p.port), timeout=10) as c:
            c.recv(10)  # (or at connect already, when the reset is that fast)
    q = proxies(["--socks5", "--allow", "127.0.0.1", "--connect-timeout", "2s"], name="socks")
    rep = socks5_reply(q.port, b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", closed_port))
    assert rep[2:4] == b"\x05\x05"  # connection refused
    for proxy in (p, q):
        proxy.wait_idle()
        (rec,) = proxy.records()
        assert rec["outcome"] == "failed" and "refused" in rec["reason"].lower()


def test_half_close_is_relayed_both_ways(proxies):
    srv, port = _listener()
    p = proxies(["--to", f"127.0.0.1:{port}"])
    c = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s, _ = srv.accept()
    s.settimeout(10)
    # The server closes its sending side first; the client keeps sending.
    s.sendall(b"done")
    s.shutdown(socket.SHUT_WR)
    assert c.recv(10) == b"done" and c.recv(10) == b""
    c.sendall(b"z" * 300_000)
    got = 0
    while got < 300_000:
        got += len(s.recv(65536))
    c.shutdown(socket.SHUT_WR)
    assert s.recv(10) == b""
    c.close()
    s.close()
    p.wait_idle()
    (rec,) = p.records()
    assert (rec["reason"], rec["bytes_up"], rec["bytes_down"]) == ("closed", 300_000, 4)


def test_a_client_that_never_reads_holds_memory_bounded(proxies):
    srv, port = _listener()
    p = proxies(["--to", f"127.0.0.1:{port}", "--buffer", "256KB", "--client-rcvbuf", "64KB"])
    rss0 = p.rss_mb()
    c = socket.create_connection(("127.0.0.1", p.port))
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    s, _ = srv.accept()
    s.setblocking(False)
    sent = 0
    chunk = b"w" * 65536
    stalled_since = None
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            sent += s.send(chunk)
            stalled_since = None
        except BlockingIOError:
            stalled_since = stalled_since or time.monotonic()
            if time.monotonic() - stalled_since > 1.0:
                break
            time.sleep(0.01)
    # The server is stopped by back-pressure after a few socket buffers,
    # not after the 20 s it had to fill the proxy.
    assert stalled_since is not None, f"the server sent {sent} B without being held back"
    assert sent < 32 * 2**20, sent
    assert p.rss_mb() - rss0 < 10
    _reset(c)
    s.close()


def test_sigterm_drains_open_connections_then_exits(proxies):
    server_port = free_port()
    p = proxies(["--to", f"127.0.0.1:{server_port}", "--drain-timeout", "20s"])
    raise_fd_limit()
    result: dict = {}

    async def main():
        server = await checking_server(port=server_port)
        async with server:
            # Slow transfers: the client paces its sending over ~2 s.
            async def slow(i):
                reader, writer = await asyncio.open_connection("127.0.0.1", p.port)
                await asyncio.sleep(0)
                return reader, writer

            conns = await asyncio.gather(*(slow(i) for i in range(20)))
            # Accepted (not only queued: a closing listener resets its queue).
            while p.metrics()["netbraid_proxy_connections_active"] < 20:
                await asyncio.sleep(0.02)
            p.proc.send_signal(signal.SIGTERM)
            await asyncio.sleep(0.5)
            # No new connections once draining.
            try:
                _, w = await asyncio.open_connection("127.0.0.1", p.port)
                w.close()
                result["new_refused"] = False
            except OSError:
                result["new_refused"] = True
            # The open ones still carry every byte.
            from proxy_harness import HEADER, stream
            import hashlib

            async def finish(i, reader, writer):
                up = stream(i, 100_000)
                writer.write(HEADER.pack(len(up), 50_000, i))
                for k in range(0, len(up), 10_000):
                    writer.write(up[k:k + 10_000])
                    await writer.drain()
                    await asyncio.sleep(0.1)
                writer.write_eof()
                got = await reader.read()
                writer.close()
                assert got[:50_000] == stream(i + 1, 50_000)
                assert got[50_000:] == hashlib.sha256(up).digest()

            await asyncio.gather(*(finish(i, r, w) for i, (r, w) in enumerate(conns)))

    asyncio.run(main())
    assert p.proc.wait(30) == 0
    assert result["new_refused"]
    recs = p.records()
    assert len(recs) == 20 and all(r["reason"] == "closed" for r in recs)


def test_idle_connections_are_closed(proxies):
    srv, port = _listener()
    p = proxies(["--to", f"127.0.0.1:{port}", "--idle-timeout", "1s"])
    c = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s, _ = srv.accept()
    c.sendall(b"hello")
    assert s.recv(10) == b"hello"
    s.settimeout(10)
    t0 = time.monotonic()
    with pytest.raises(ConnectionResetError):  # reset by the proxy after 1 s of silence
        s.recv(10)
    assert 0.9 < time.monotonic() - t0 < 5
    p.wait_idle()
    (rec,) = p.records()
    assert rec["reason"].startswith("idle timeout")


@pytest.mark.parametrize("args, message", [
    (["--socks5"], "no --allow"),
    (["--socks5", "--allow", "10.0.0.1/8"], "host bits"),
    (["--to", "10.0.0.1:80", "--allow", "10.0.0.0/8:99999"], "not a port"),
    (["--to", "10.0.0.1:80", "--buffer", "12 parsecs"], "unknown unit"),
    (["--to", "10.0.0.1:80", "--upstream-cc", "nosuchcc"], "this kernel offers"),
    (["--to", "10.0.0.1:80", "--metrics", "0.0.0.0:9100"], "loopback"),
])
def test_bad_command_lines_name_the_option(args, message):
    out = subprocess.run(PROXY + ["--listen", f"127.0.0.1:{free_port()}", *args], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 2, out
    assert message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "panicked" not in out.stderr


def test_socks5_off_loopback_needs_authentication(tmp_path):
    out = subprocess.run(PROXY + ["--listen", f"0.0.0.0:{free_port()}", "--socks5", "--allow", "10.0.0.0/8"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--socks5-auth" in out.stderr


def test_socks5_username_password(proxies):
    server_port = free_port()
    p = proxies(["--socks5", "--allow", f"127.0.0.1:{server_port}", "--socks5-auth", "alice:s3cret"])
    req = b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", server_port)
    # No username/password offered: no acceptable method.
    assert socks5_reply(p.port, b"", greeting=b"\x05\x01\x00") == b"\x05\xff"
    # Wrong password: status 1, closed.
    bad = b"\x01\x05alice\x05wrong"
    assert socks5_reply(p.port, bad + req, greeting=b"\x05\x01\x02") == b"\x05\x02\x01\x01"
    # Right password: CONNECT goes ahead (the server is down: refused, 0x05).
    good = b"\x01\x05alice\x06s3cret"
    assert socks5_reply(p.port, good + req, greeting=b"\x05\x01\x02")[:6] == b"\x05\x02\x01\x00\x05\x05"


def test_an_upstream_that_never_answers_times_out(proxies):
    """A listener whose accept queue is full drops SYNs: the connect hangs
    until --connect-timeout, then the client gets SOCKS5 reply 6 (TTL expired)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(0)
    port = srv.getsockname()[1]
    fillers = []
    for _ in range(3):  # fill the accept queue (never accepted)
        f = socket.socket()
        f.setblocking(False)
        f.connect_ex(("127.0.0.1", port))
        fillers.append(f)
    time.sleep(0.2)
    p = proxies(["--socks5", "--allow", f"127.0.0.1:{port}", "--connect-timeout", "1s"])
    t0 = time.monotonic()
    rep = socks5_reply(p.port, b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack("!H", port))
    waited = time.monotonic() - t0
    assert rep[2:4] == b"\x05\x06", rep
    assert 0.9 < waited < 3, waited
    p.wait_idle()
    (rec,) = p.records()
    assert rec["outcome"] == "failed" and rec["reason"].startswith("connect timeout")
    assert p.metrics()["netbraid_proxy_timeouts_total"] == 1
    for f in fillers:
        f.close()
    srv.close()


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
def test_curl_through_socks5(proxies, tmp_path):
    """`curl --socks5` (the proxy resolves nothing) and `--socks5-hostname`
    (the proxy resolves the name) both fetch a page through the proxy."""
    import functools
    import http.server

    (tmp_path / "page.txt").write_text("through the proxy\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        p = proxies(["--socks5", "--allow", f"127.0.0.1:{port}"])
        for flag, host in (("--socks5", "127.0.0.1"), ("--socks5-hostname", "localhost")):
            out = subprocess.run(["curl", "-sS", "--max-time", "10", flag, f"127.0.0.1:{p.port}",
                                  f"http://{host}:{port}/page.txt"], capture_output=True, text=True, timeout=30)
            assert out.returncode == 0 and out.stdout == "through the proxy\n", (flag, out)
        out = subprocess.run(["curl", "-sS", "--max-time", "10", "--socks5", f"127.0.0.1:{p.port}",
                              "http://127.0.0.1:9/"], capture_output=True, text=True, timeout=30)
        assert out.returncode != 0  # port 9 is not allowed
        p.wait_idle()
        assert [r["outcome"] for r in p.records()] == ["relayed", "relayed", "refused"]
    finally:
        server.shutdown()


def test_the_memory_budget_comes_back_when_stuck_connections_are_closed(proxies):
    """Two clients that never read fill the whole budget (--max-memory);
    when the idle timeout closes them, what they held is returned: a third
    connection then moves its data. (Budget conservation: every byte taken
    from the budget is given back, however the connection ends.)"""
    srv, port = _listener()
    srv.listen(16)
    stop = threading.Event()

    def flood(conn):
        conn.settimeout(0.5)
        chunk = b"f" * 65536
        while not stop.is_set():
            try:
                conn.send(chunk)
            except socket.timeout:
                continue
            except OSError:
                return

    def serve():
        srv.settimeout(0.5)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except socket.timeout:
                continue
            threading.Thread(target=flood, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        p = proxies(["--to", f"127.0.0.1:{port}", "--max-memory", "128KB", "--buffer", "64KB",
                     "--idle-timeout", "1s", "--client-rcvbuf", "16KB"])
        stuck = []
        for _ in range(2):
            c = socket.socket()
            c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            c.connect(("127.0.0.1", p.port))
            stuck.append(c)
        deadline = time.monotonic() + 15
        while p.metrics()["netbraid_proxy_timeouts_total"] < 2:
            assert time.monotonic() < deadline, "the stuck connections were not closed"
            time.sleep(0.1)
        p.wait_idle()
        assert p.metrics()["netbraid_proxy_memory_bytes"] == 0  # nothing held once nothing is open
        c = socket.create_connection(("127.0.0.1", p.port), timeout=10)
        got = 0
        while got < 1_000_000:
            data = c.recv(65536)
            assert data, "closed early"
            got += len(data)
        c.close()
        for s in stuck:
            s.close()
    finally:
        stop.set()


@pytest.mark.parametrize("fin", [False, True])
def test_urgent_data_in_a_bulk_transfer_is_stepped_over(proxies, fin):
    """TCP urgent data (MSG_OOB) after a bulk start: the proxy, splicing by
    then, passes every normal byte on and skips the urgent one, as recv()
    does (splice alone stops at the urgent mark for good)."""
    srv, port = _listener()
    p = proxies(["--to", f"127.0.0.1:{port}"])
    c = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s, _ = srv.accept()
    c.sendall(b"a" * (1 << 20))
    time.sleep(0.3)
    c.send(b"X", socket.MSG_OOB)
    time.sleep(0.1)
    c.sendall(b"b" * 100_000)
    if fin:
        c.shutdown(socket.SHUT_WR)
    s.settimeout(5)
    got, eof = 0, False
    try:
        while got < (1 << 20) + 100_000 or fin:
            data = s.recv(65536)
            if not data:
                eof = True
                break
            got += len(data)
    except socket.timeout:
        pass
    assert got == (1 << 20) + 100_000 and eof == fin
    c.close()
    s.close()


def test_an_idle_timeout_with_bytes_held_resets_rather_than_ends(proxies):
    """The upstream stops reading, nothing moves, the idle timeout closes the
    connection: bytes were still in the proxy, so the upstream must see a
    reset, not a clean end of stream."""
    srv, port = _listener()
    p = proxies(["--to", f"127.0.0.1:{port}", "--idle-timeout", "1s"])
    c = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s, _ = srv.accept()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.setblocking(False)
    sent = 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        try:
            sent += c.send(b"a" * 65536)
        except BlockingIOError:
            time.sleep(0.05)
        except OSError:
            break
    s.settimeout(10)
    got = 0
    with pytest.raises(ConnectionResetError):
        while data := s.recv(65536):
            got += len(data)
    assert got < sent
    p.wait_idle()
    (rec,) = p.records()
    assert rec["reason"].startswith("idle timeout")


def test_sigterm_while_connections_arrive_still_exits():
    """Connections queued while the proxy is stopped (SIGSTOP), SIGTERM, then
    SIGCONT: the drain ends and the proxy exits, even for connections whose
    tasks had not started when the signal came."""
    srv, port = _listener()
    srv.listen(512)
    listen_port = free_port()
    proc = subprocess.Popen(PROXY + ["--listen", f"127.0.0.1:{listen_port}", "--to", f"127.0.0.1:{port}",
                                     "--threads", "1", "--idle-timeout", "0", "--drain-timeout", "1s", "-q"],
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", listen_port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        proc.send_signal(signal.SIGSTOP)
        clients = [socket.create_connection(("127.0.0.1", listen_port), timeout=5) for _ in range(100)]
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)
        assert proc.wait(15) == 0
        assert "panicked" not in proc.stderr.read()
        for c in clients:
            c.close()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_the_connection_limit_holds_the_rest_in_the_listen_queue(proxies):
    """--max-connections 2: a third client waits (in the listen queue) until
    one of the first two ends; then it is relayed."""
    srv, port = _listener()
    p = proxies(["--to", f"127.0.0.1:{port}", "--max-connections", "2"])
    clients = [socket.create_connection(("127.0.0.1", p.port), timeout=10) for _ in range(3)]
    for i, c in enumerate(clients):
        c.sendall(bytes([i]))
    srv.settimeout(1.0)
    upstream = {}
    for _ in range(2):
        u = srv.accept()[0]
        u.settimeout(10)
        upstream[u.recv(1)[0]] = u
    with pytest.raises(socket.timeout):
        srv.accept()  # the third is held back
    assert p.metrics()["netbraid_proxy_connections_active"] == 2
    first = min(upstream)  # end one relayed connection, both sides
    clients[first].close()
    upstream.pop(first).close()
    srv.settimeout(10)
    (waiting,) = {0, 1, 2} - {first, *upstream}
    third, _ = srv.accept()
    third.settimeout(10)
    assert third.recv(1) == bytes([waiting])  # the client that waited, relayed now
    for s in [*clients, *upstream.values(), third]:
        s.close()
