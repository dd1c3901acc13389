"""Helpers for the proxy tests: start `netbraid proxy` as a user would, scrape
its counters, read its records, and a checking upstream server.

The checking protocol: a client sends a 24-byte header (bytes it will send,
bytes it wants back, a seed), then its bytes, then FIN. The server sends
the bytes asked for (a stream the client can regenerate from the seed) and,
after the client's FIN, the SHA-256 of everything it received; then it
closes. So every byte is checked end to end, both ways, through a relay
that must pass half-closes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import resource
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

# `netbraid proxy` as users start it; NETBRAID_PROXY_BIN=path runs the
# standalone binary instead (target/release/netbraid-proxy).
PROXY = ([os.environ["NETBRAID_PROXY_BIN"]] if os.environ.get("NETBRAID_PROXY_BIN")
         else [sys.executable, "-m", "netbraid.entry", "proxy"])
HEADER = struct.Struct("!QQQ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


class Proxy:
    """One `netbraid proxy` process listening on a free loopback port."""

    def __init__(self, args: list[str], workdir: Path, name: str = "proxy", listen: str | None = None,
                 prefix: list[str] | None = None):
        self.port = free_port()
        self.metrics_port = free_port()
        self.listen = listen or f"127.0.0.1:{self.port}"
        self.log = workdir / f"{name}.jsonl"
        self.err_path = workdir / f"{name}.stderr"
        cmd = [*(prefix or []), *PROXY, "--listen", self.listen, "--metrics", f"127.0.0.1:{self.metrics_port}",
               "--log-json", str(self.log), *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(self.err_path, "w"),
                                     start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                self.metrics()
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"proxy exited {self.proc.returncode}: {self.stderr()}") from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def metrics(self) -> dict[str, float]:
        with socket.create_connection(("127.0.0.1", self.metrics_port), timeout=5) as s:
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        out = {}
        for line in body.decode().splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def wait_idle(self, timeout: float = 30) -> None:
        """Until no connection is open (every record written)."""
        deadline = time.monotonic() + timeout
        while self.metrics()["netbraid_proxy_connections_active"] > 0:
            assert time.monotonic() < deadline, "connections still open"
            time.sleep(0.05)

    def records(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line]

    def stderr(self) -> str:
        return self.err_path.read_text() if self.err_path.exists() else ""

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def fds_settle(self, at_most: int, timeout: float = 5) -> int:
        """The descriptor count once it is at most `at_most` (the last
        scrape's socket may still be closing), or after `timeout`."""
        deadline = time.monotonic() + timeout
        while (n := self.fds()) > at_most and time.monotonic() < deadline:
            time.sleep(0.05)
        return n

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        raise AssertionError("no VmRSS")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise


def stream(seed: int, n: int) -> bytes:
    return random.Random(seed).randbytes(n)


async def checking_server(host: str = "127.0.0.1", port: int = 0) -> asyncio.AbstractServer:
    """The upstream end of the checking protocol."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            header = await reader.readexactly(HEADER.size)
            _n_up, n_down, seed = HEADER.unpack(header)

            async def send() -> None:
                data = stream(seed + 1, n_down)
                for i in range(0, n_down, 65536):
                    writer.write(data[i:i + 65536])
                    await writer.drain()

            async def receive() -> bytes:
                h = hashlib.sha256()
                while chunk := await reader.read(65536):
                    h.update(chunk)
                return h.digest()

            _, digest = await asyncio.gather(send(), receive())
            writer.write(digest)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    return await asyncio.start_server(serve, host, port, backlog=4096)


async def checked_transfer(port: int, n_up: int, n_down: int, seed: int, host: str = "127.0.0.1",
                           socks_target: tuple[str, int] | None = None) -> None:
    """One connection of the checking protocol; raises if any byte differs."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        if socks_target is not None:
            await socks5_connect(reader, writer, *socks_target)
        up = stream(seed, n_up)

        async def send() -> None:
            writer.write(HEADER.pack(n_up, n_down, seed))
            for i in range(0, n_up, 65536):
                writer.write(up[i:i + 65536])
                await writer.drain()
            writer.write_eof()

        async def receive() -> bytes:
            chunks = []
            while chunk := await reader.read(65536):
                chunks.append(chunk)
            return b"".join(chunks)

        _, got = await asyncio.gather(send(), receive())
        assert len(got) == n_down + 32, f"seed {seed}: {len(got)} bytes back, {n_down + 32} expected"
        assert got[:n_down] == stream(seed + 1, n_down), f"seed {seed}: downstream bytes differ"
        assert got[n_down:] == hashlib.sha256(up).digest(), \
            f"seed {seed}: the server received other bytes than were sent"
    finally:
        writer.close()


async def socks5_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str, port: int) -> None:
    writer.write(b"\x05\x01\x00")
    assert await reader.readexactly(2) == b"\x05\x00"
    writer.write(b"\x05\x01\x00\x01" + socket.inet_aton(host) + struct.pack("!H", port))
    rep = await reader.readexactly(10)
    assert rep[1] == 0, f"SOCKS5 reply {rep[1]}"


def socks5_reply(port: int, request: bytes, greeting: bytes = b"\x05\x01\x00") -> bytes:
    """Sends a greeting and a raw request; returns what came back before close."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(greeting + request)
        data = b""
        try:
            while chunk := s.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass
        return data
