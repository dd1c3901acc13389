"""The emu backend's UDP traffic: ``python -m netbraid.emu.udpgen
send|recv JSON``, run inside a namespace. The generator is Rust
(crates/netbraid-udpgen, built into ``netbraid._sim``): CBR and the
simulator's own on-off process, a header of (flow id, sequence, send time)
on every datagram, receive times from the kernel (SO_TIMESTAMPNS)."""

from __future__ import annotations

import sys


def main() -> None:
    from .. import _sim

    sys.exit(_sim.udpgen_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
