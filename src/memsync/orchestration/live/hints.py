"""The hints waiting for the live loop's next turn, merged into one hinted cycle.

Three kinds wait here between turns: watched changes not yet checked against what memsync left
(``local_stores.py``), writes the daemon served to an agent (changes for certain: nothing to
check), and hinted cycles that could not reach their store, tried again after a delay that
doubles each time. A turn takes all that are due at once (with what the probes flag), so a
burst of hints costs one cycle, and hints that arrive meanwhile wait for the next.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from memsync.providers.watched import Hint

RETRY_FIRST = 5.0  # a hinted cycle that could not reach its store is retried after this,
RETRY_MAX = 300.0  # ...doubling up to this (or the interval, when shorter)


@dataclass
class _Retry:
    due: float
    delay: float


class HintQueue:
    """Watched changes, served writes and retries, until a turn takes them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.pending: set[Hint] = set()  # watched changes not yet checked
        self.written: set[Hint] = set()  # writes the daemon served: changes, nothing to check
        self._retry: dict[Hint, _Retry] = {}

    def watched(self, hints: Iterable[Hint]) -> None:
        """Changes a watch saw (or may have missed): checked at the next turn."""
        with self._lock:
            self.pending |= set(hints)

    def served(self, hints: Iterable[Hint]) -> None:
        """Stores an agent wrote through the daemon: a cycle at the next turn, unchecked."""
        with self._lock:
            self.written |= set(hints)

    def take_pending(self) -> set[Hint]:
        with self._lock:
            pending, self.pending = self.pending, set()
        return pending

    def take_written(self) -> set[Hint]:
        with self._lock:
            written, self.written = self.written, set()
        return written

    def due(self) -> set[Hint]:
        """The retries whose time has come (kept until their cycle went well: ``done``)."""
        now = time.monotonic()
        with self._lock:
            return {hint for hint, retry in self._retry.items() if retry.due <= now}

    def moments(self) -> list[float]:
        """When each retry falls due (``time.monotonic``)."""
        with self._lock:
            return [retry.due for retry in self._retry.values()]

    def done(self, hints: Iterable[Hint]) -> None:
        """Their cycle reached their stores: no retry."""
        with self._lock:
            for hint in hints:
                self._retry.pop(hint, None)

    def retry_soon(self, hints: Iterable[Hint], delay: float) -> None:
        """Try these again after DELAY, their back-off unchanged (a cycle was in the way)."""
        due = time.monotonic() + delay
        with self._lock:
            for hint in hints:
                retry = self._retry.get(hint)
                self._retry[hint] = _Retry(due, retry.delay if retry else 0.0)

    def back_off(self, hints: Iterable[Hint], interval: float) -> None:
        """Try these again later, waiting twice as long as the last time (up to the cap)."""
        cap = min(RETRY_MAX, interval)
        now = time.monotonic()
        with self._lock:
            for hint in hints:
                retry = self._retry.get(hint)
                delay = min(cap, (retry.delay * 2 if retry and retry.delay else RETRY_FIRST))
                self._retry[hint] = _Retry(now + delay, delay)


__all__ = ["HintQueue"]
