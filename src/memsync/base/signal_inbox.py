"""Stop and reload signals, seen by the main thread whichever thread the kernel hands them to.

The kernel gives a signal sent to the process to any one thread that does not block it.
memsync blocks its signals in the threads it starts, but a library can start threads before
that: numpy's OpenBLAS pool starts at import (and sqlite-utils imports numpy when it is
installed). A SIGTERM or SIGHUP landing there took the default action and killed the process
on the spot; a SIGINT raised KeyboardInterrupt wherever the main thread happened to be.

So each signal taken here gets a handler that only records it: Python's C-level handler writes
the signal's number to a wakeup socket (async-signal-safe, on whichever thread it runs) and
the main thread waits on that socket. The Python-level handler does nothing, so nothing ever
runs in the middle of a lock it would need.
"""

from __future__ import annotations

import contextlib
import select
import signal
import socket
from collections.abc import Iterable, Iterator
from types import FrameType, TracebackType


def _recorded(signum: int, frame: FrameType | None) -> None:
    """The signal's number is already in the wakeup socket; nothing else is done here."""


class SignalInbox:
    """While open, SIGNALS are only recorded; ``wait`` returns the ones that arrived."""

    def __init__(self, signals: Iterable[signal.Signals]) -> None:
        self.signals = tuple(signals)
        self._receive, self._send = socket.socketpair()
        self._previous: dict[signal.Signals, object] = {}
        self._previous_fd = -1

    def __enter__(self) -> SignalInbox:
        for end in (self._receive, self._send):
            end.setblocking(False)
        self._previous_fd = signal.set_wakeup_fd(self._send.fileno(), warn_on_full_buffer=False)
        for sig in self.signals:
            self._previous[sig] = signal.signal(sig, _recorded)
        # Taken even where the parent left a signal ignored (a shell's `&` ignores SIGINT):
        # `memsync ui` and the daemon say they stop on it, and a test or supervisor relies on it.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, self.signals)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        signal.set_wakeup_fd(self._previous_fd)
        self._receive.close()
        self._send.close()

    def wait(self, timeout: float | None) -> list[signal.Signals]:
        """The signals that arrived, oldest first, waiting up to TIMEOUT seconds for one."""
        ready, _, _ = select.select([self._receive], [], [], timeout)
        if not ready:
            return []
        arrived: list[signal.Signals] = []
        with contextlib.suppress(BlockingIOError):
            while data := self._receive.recv(512):
                arrived.extend(signal.Signals(n) for n in data if n in self.signals)
        return arrived


@contextlib.contextmanager
def blocked_in_new_threads(signals: Iterable[signal.Signals]) -> Iterator[None]:
    """Threads started inside inherit a mask that blocks SIGNALS, so they never take one."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, signals)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
