"""A circuit breaker per provider and cycle: a server that is down is noticed once.

Each request that cannot reach the server (connection refused, reset, no answer in time)
counts; any answer at all, even an error status, shows the server is there and resets the
count. After ``threshold`` such failures in a row, across all of a provider's workers, the
breaker opens: every later request of the cycle fails at once with ``ProviderUnreachable``
instead of being sent and retried, and replay keeps the provider's writes pending for the
next cycle (``engine/replay.py``). A new cycle makes a new client, and so a closed breaker.

Without it, a server killed mid-cycle cost every pending write its full retry schedule (four
tries with backoff, eight at a time): 145 writes took 92 s and printed some 580 lines.
"""

from __future__ import annotations

import threading

from memsync.base.errors import ProviderUnreachable

THRESHOLD = 3  # connection failures in a row that make a provider unreachable for the cycle


class Breaker:
    """Counts a provider's connection failures in a row; open once ``threshold`` is reached."""

    def __init__(self, provider: str, threshold: int = THRESHOLD) -> None:
        self.provider = provider
        self.threshold = max(1, threshold)
        self._lock = threading.Lock()
        self._streak = 0
        self._reason: str | None = None  # set when open: the failure that opened it

    @property
    def reason(self) -> str | None:
        """Why the provider is unreachable (None while the breaker is closed)."""
        return self._reason

    def check(self) -> None:
        """Before a request: raise ``ProviderUnreachable`` if the breaker is open."""
        if self._reason is not None:
            raise self.error()

    def error(self) -> ProviderUnreachable:
        return ProviderUnreachable(f"{self.provider} unreachable ({self._reason})")

    def answered(self) -> None:
        """The server answered (any status): it is reachable."""
        if self._streak:
            with self._lock:
                if self._reason is None:
                    self._streak = 0

    def failed(self, reason: str) -> bool:
        """A request could not reach the server; True if this failure opened the breaker."""
        with self._lock:
            if self._reason is not None:
                return False
            self._streak += 1
            if self._streak < self.threshold:
                return False
            self._reason = reason
            return True
