"""What the emu backend needs from the machine, checked up front so that a
missing piece is explained instead of failing half-way through a run."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path


class EmuUnavailable(Exception):
    """The emu backend cannot run here; the message says why and what to do."""


APT_HINT = "apt-get install iproute2 iperf3 mptcpize"


def require_root() -> None:
    if os.geteuid() != 0:
        raise EmuUnavailable(
            "the emu backend needs root (it creates network namespaces and TUN devices); "
            "run netbraid as root, e.g. with sudo, or use --backend sim"
        )


def require_tools(mptcp: bool = False) -> None:
    need = ["ip", "iperf3", "ss", "sysctl"] + (["mptcpize"] if mptcp else [])
    missing = [t for t in need if shutil.which(t) is None]
    if missing:
        raise EmuUnavailable(f"the emu backend needs {', '.join(missing)} on PATH; install them with: {APT_HINT}")


def require_tun() -> None:
    if not Path("/dev/net/tun").exists():
        raise EmuUnavailable("/dev/net/tun is missing: this kernel or container has no TUN support, which linkemu needs")


def require_netns() -> None:
    probe = f"nbprobe{uuid.uuid4().hex[:8]}"
    r = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if r.returncode != 0:
        raise EmuUnavailable(f"cannot create a network namespace ({r.stderr.strip() or 'ip netns add failed'}); "
                             "the emu backend needs CAP_SYS_ADMIN and namespace support")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


def require_mptcp() -> None:
    p = Path("/proc/sys/net/mptcp/enabled")
    if not p.exists():
        raise EmuUnavailable("this kernel has no MPTCP (no /proc/sys/net/mptcp); mptcp flows need a kernel with CONFIG_MPTCP")


#: Where `cargo build --release -p netbraid-sctpgen` leaves it (an editable install's repository).
SCTPGEN_BUILT = Path(__file__).resolve().parents[3] / "target" / "release" / "netbraid-sctpgen"
SCTPGEN_HINT = ("apt-get install libusrsctp-dev && cargo build --release -p netbraid-sctpgen "
                "(scripts/test does both), or set NETBRAID_SCTPGEN to the program")


def sctpgen() -> str:
    """The SCTP traffic program (usrsctp): $NETBRAID_SCTPGEN, the repository's
    build, or netbraid-sctpgen on PATH."""
    for candidate in (os.environ.get("NETBRAID_SCTPGEN"), str(SCTPGEN_BUILT), shutil.which("netbraid-sctpgen")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise EmuUnavailable(f"SCTP on emu needs netbraid-sctpgen, built against Debian's usrsctp: {SCTPGEN_HINT}")


def available_congestion_controls() -> list[str]:
    p = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    return p.read_text().split() if p.exists() else []


def check(mptcp: bool = False, sctp: bool = False) -> None:
    """Raise EmuUnavailable unless everything an emu run needs is here."""
    require_root()
    require_tools(mptcp)
    require_tun()
    require_netns()
    if mptcp:
        require_mptcp()
    if sctp:
        sctpgen()


def unavailable_reason(mptcp: bool = False, sctp: bool = False) -> str | None:
    """None if the emu backend can run here, else why not (for test skips)."""
    try:
        check(mptcp, sctp)
    except EmuUnavailable as e:
        return str(e)
    return None
