"""How netbraid's processes end: children die with their parent however it
dies, and SIGTERM (a batch scheduler, `kill`, a container stop) unwinds like
Ctrl-C so that results are saved and everything is cleaned up."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
from contextlib import contextmanager
from typing import Iterator

_libc = ctypes.CDLL(None, use_errno=True)
_PR_SET_PDEATHSIG = 1

#: The signal that stopped this process (SIGINT or SIGTERM), once one has.
stopped_by: int | None = None


def die_with_parent() -> None:
    """In a child (preexec_fn, or a pool's initializer): the kernel sends it
    SIGKILL when its parent dies, even by SIGKILL, so nothing outlives a run."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _exit_when_gone(parent: int) -> None:
    try:
        fd = os.pidfd_open(parent)
    except OSError:  # gone already, perhaps before the signal was armed
        os._exit(1)
    import select

    select.select([fd], [], [])  # a pidfd becomes readable when its process exits
    os._exit(1)


def pool_worker_init(parent: int) -> None:
    """A pool worker exits when `parent` (the netbraid that started it) dies.
    The parent-death signal covers a worker forked by the parent's main
    thread; the watching thread covers any other start (it needs the GIL,
    which the simulator releases while it runs)."""
    die_with_parent()
    # A forked worker inherits the parent's stop handlers; it must not turn
    # the parent's SIGTERM (which ends an interrupted sweep's workers) into a
    # KeyboardInterrupt with a traceback, nor act on the terminal's Ctrl-C,
    # which the parent handles for all.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_when_gone, args=(parent,), daemon=True, name="netbraid-parent-watch").start()


def _raise_interrupt(signum: int, frame: object) -> None:
    global stopped_by
    stopped_by = signum
    raise KeyboardInterrupt(signal.Signals(signum).name)


def install_stop_handlers() -> None:
    """SIGINT and SIGTERM both raise KeyboardInterrupt in the main thread and
    are remembered, so the exit status can say which (130 or 143)."""
    signal.signal(signal.SIGINT, _raise_interrupt)
    signal.signal(signal.SIGTERM, _raise_interrupt)


def stop_exit_code() -> int:
    """128 + the stopping signal, as a shell reports it (130 for Ctrl-C)."""
    return 128 + (stopped_by or signal.SIGINT)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C for the duration (for callers that did not
    install the stop handlers, e.g. the Python API), so `finally` runs."""
    try:
        old = signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)
