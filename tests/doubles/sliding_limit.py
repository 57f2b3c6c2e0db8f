"""A rate limit over a sliding window, for the Platform double: the documented 1,000 a minute.

The Platform documents the limit ("ADD API 1000/min", ``docs/changelog/platform.mdx``) but not
the kind of window nor which routes it covers; the hardest case for a client is a log over
every route: ``limit`` requests in any ``window`` seconds, a slot freeing as each request
ages out, one at a time. A request is counted when the double takes it (after the injected
latency, as ``Faults`` applies it before the app); a 429 is not counted, as in the fixed-window
``RateLimit``. Headers as there: ``X-RateLimit-Limit``, ``-Remaining`` (the limit less the
requests in the last window) and ``-Reset``: seconds until the oldest counted request leaves
the window (``reset``: "exact", or whole seconds rounded "ceil" or "floor", since upstream
does not document the unit); a 429 carries ``Retry-After`` in whole seconds, rounded up
(Mem0's client reads it with ``int()``).

Each request is counted for who sent it (``who``, from the ``X-Bench-Client`` header the
benchmarks' other clients send), so memsync's 429s are told from the agents'.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

MEMSYNC = "memsync"


@dataclass
class SlidingLimit:
    """``limit`` requests in any ``window`` seconds over ``routes`` (None: every route)."""

    limit: int = 1000
    window: float = 60.0
    routes: tuple[tuple[str, str], ...] | None = None
    reset: Literal["exact", "ceil", "floor"] = "exact"
    clock: Callable[[], float] = time.monotonic
    first_at: float | None = None  # when the first counted request arrived
    allowed: collections.Counter[str] = field(default_factory=collections.Counter)
    refused: collections.Counter[str] = field(default_factory=collections.Counter)
    _log: collections.deque[float] = field(default_factory=collections.deque)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def covers(self, method: str, path: str) -> bool:
        return self.routes is None or (method, path) in self.routes

    def take(self, who: str = MEMSYNC) -> tuple[bool, dict[str, str]]:
        """Whether one more request fits the window, and the headers that say how many do."""
        with self._lock:
            now = self.clock()
            while self._log and self._log[0] <= now - self.window:
                self._log.popleft()
            allowed = len(self._log) < self.limit
            if allowed:
                self._log.append(now)
                self.first_at = now if self.first_at is None else self.first_at
                self.allowed[who] += 1
            else:
                self.refused[who] += 1
            until = self._log[0] + self.window - now if self._log else self.window
            headers = {
                "X-RateLimit-Limit": str(self.limit),
                "X-RateLimit-Remaining": str(max(0, self.limit - len(self._log))),
                "X-RateLimit-Reset": self._seconds(max(0.0, until)),
            }
            if not allowed:
                headers["Retry-After"] = str(max(1, math.ceil(until)))
            return allowed, headers

    def _seconds(self, seconds: float) -> str:
        if self.reset == "ceil":
            return str(math.ceil(seconds))
        if self.reset == "floor":
            return str(math.floor(seconds))
        return f"{seconds:.3f}"
