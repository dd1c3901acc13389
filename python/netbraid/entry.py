"""The `netbraid` command. `netbraid proxy` goes straight to the Rust proxy:
a long-running relay should not carry the CLI's pandas and scipy (about
150 MB and a second of start-up); every other command is the typer app."""

from __future__ import annotations

import sys


def run_proxy(args: list[str]) -> None:
    import signal

    from ._sim import proxy_main

    # The proxy handles SIGTERM and SIGINT itself (stop accepting, drain, exit).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sys.exit(proxy_main(["netbraid proxy", *args]))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "proxy":
        run_proxy(sys.argv[2:])
    from .cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
