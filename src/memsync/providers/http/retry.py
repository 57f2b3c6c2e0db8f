"""How hard a call tries: the retry policy, the pause shared by a provider's workers, Retry-After.

What may pass is retried (429 after its ``Retry-After``, 5xx, timeouts, resets) with exponential
backoff and jitter inside a time budget. A request that is not idempotent (a POST that creates)
is retried only when the server cannot have acted on it (429, or the connection never opened):
retrying a create after a 500 or a read timeout could write the memory twice.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from memsync.base.errors import InvalidResponse, TransientProviderError


@dataclass(frozen=True)
class RetryPolicy:
    """How hard one call tries before giving up with a TransientProviderError.

    ``max_retry_after`` is the longest ``Retry-After`` waited in-process; a server asking for
    longer gets the error at once, carrying ``retry_after`` so the engine schedules the retry.
    """

    attempts: int = 4
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    max_elapsed: float = 60.0
    max_retry_after: float = 60.0


class RateLimited(TransientProviderError):
    """429: the server refused before acting, so even a create may be sent again."""


class NotSent(TransientProviderError):
    """The connection never opened: the request cannot have been acted on."""


class SharedBackoff:
    """One pause every worker of a provider honours: a 429 slows the provider, not one thread.

    A rate limit answers for the whole key, so when one request is told to wait, requests
    started by the other workers wait out the same ``Retry-After`` instead of being refused
    in turn.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._until = 0.0
        self._holder: int | None = None

    def hold(self, seconds: float) -> None:
        with self._lock:
            until = time.monotonic() + seconds
            if until > self._until:
                self._until, self._holder = until, threading.get_ident()

    def release(self) -> None:
        """The request that was told to wait has now been served: the pause is over."""
        with self._lock:
            if self._holder == threading.get_ident():
                self._until, self._holder = 0.0, None

    def remaining(self) -> float:
        with self._lock:
            return max(0.0, self._until - time.monotonic())


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def final_error(exc: TransientProviderError, attempts: int) -> TransientProviderError:
    """The error a caller sees once retries are spent: public type, attempt count, wait hint."""
    message = f"{exc}; gave up after {attempts} attempt{'s' if attempts != 1 else ''}"
    if isinstance(exc, InvalidResponse):
        return InvalidResponse(message, retry_after=exc.retry_after)
    return TransientProviderError(message, retry_after=exc.retry_after)
