"""Pacing on a server's rate-limit headers: wait before the limit instead of bouncing off it.

Servers that limit requests per window say so on every answer: ``X-RateLimit-Limit`` (the
requests a window allows), ``X-RateLimit-Remaining`` (what is left of it) and
``X-RateLimit-Reset`` (when it starts afresh). Mem0's own client reads the three, with
``Retry-After``, on a 429 (``mem0/client/utils.py`` at mem0 8d5b786); memsync reads them on
every answer and stops sending when the window is spent, until it resets, so a long first sync
meets no 429 at all.

One ``RateLimitPacer`` per provider, shared by every worker of its pool and by every scope's
client (a limit answers for the key, not for one thread). It counts what the current window
still allows: the first answer's ``Remaining`` less memsync's requests already on their way,
then one less for each request it lets through, and never more than the latest answer's
``Remaining`` (how another client using the same key shows). While memsync is the key's only
client the count is exact: a window is used to its last request and never past it. A request
that finds the window spent is promised a place in the next one and told how long to wait, so
each waits once, whatever ``sleep`` does. Routes are told apart by the limit their answers
name (add and search limits differ); a route whose answers carry no headers is never paced. A
429 still goes through the shared pause of ``retry`` (``Retry-After``), as when another client
spends the window under memsync's feet; this module keeps memsync from causing one.

``Reset`` is read as seconds from now, or as a Unix time (seconds or milliseconds) when it is
that large, or as an HTTP date; the answer's own arrival is the clock, so the estimated end of
a window is never earlier than the server's.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from memsync.providers.http.retry import parse_retry_after

log = logging.getLogger("memsync.http")

LIMIT = "X-RateLimit-Limit"
REMAINING = "X-RateLimit-Remaining"
RESET = "X-RateLimit-Reset"
# Seconds added to a wait for the next window: the server's clock and ours may disagree by a
# tick, and a request a hair early is a 429.
MARGIN = 0.005
_EPOCH_SECONDS = 1e9  # a Reset this large is a Unix time, not a delay
_EPOCH_MILLIS = 1e12
_ID_SEGMENT = re.compile(r"^(?=.*\d)[0-9a-fA-F-]{8,}$|^\d+$")


@dataclass(frozen=True)
class RateLimitHeaders:
    """The three headers of one answer, as numbers: ``reset`` in seconds from the answer."""

    limit: int
    remaining: int
    reset: float


def read_headers(
    headers: Mapping[str, str], *, wall: Callable[[], float] = time.time
) -> RateLimitHeaders | None:
    """The rate-limit headers of an answer; None when any of the three is absent or garbled."""
    try:
        limit = int(float(headers[LIMIT]))
        remaining = int(float(headers[REMAINING]))
        raw = headers[RESET].strip()
    except (KeyError, ValueError, TypeError):
        return None
    reset = _seconds_until(raw, wall)
    if reset is None or limit <= 0:
        return None
    return RateLimitHeaders(limit, max(0, remaining), reset)


def _seconds_until(raw: str, wall: Callable[[], float]) -> float | None:
    try:
        number = float(raw)
    except ValueError:
        return parse_retry_after(raw)  # an HTTP date
    if not math.isfinite(number):
        return None
    if number >= _EPOCH_MILLIS:
        return max(0.0, number / 1000.0 - wall())
    if number >= _EPOCH_SECONDS:
        return max(0.0, number - wall())
    return max(0.0, number)


def route_of(method: str, path: str) -> str:
    """A request's route: its method and path with ids taken out (``/v1/memories/*/``)."""
    parts = ["*" if _ID_SEGMENT.match(part) else part for part in path.split("/")]
    return f"{method.upper()} {'/'.join(parts)}"


@dataclass(frozen=True)
class Ticket:
    """One request's place: its route, and how long it waits first (0: go now)."""

    route: str
    wait: float = 0.0


@dataclass(eq=False)
class _Window:
    """What memsync knows of one limit's current window."""

    limit: int
    length: float  # seconds, the longest Reset seen: how far apart windows start
    ends_at: float  # monotonic instant this window ends (never before the server's)
    allowed: int  # requests this window still allows, by the cautious count
    promised: int = 0  # requests told to wait for a later window
    guessed: bool = False  # ends_at extrapolated past a window no answer has confirmed

    def roll(self, now: float) -> None:
        """Past the end: a fresh window, less the requests already promised to it."""
        if now < self.ends_at:
            return
        periods = int((now - self.ends_at) // self.length) + 1 if self.length > 0 else 1
        first = min(self.promised, self.limit)
        self.promised = max(0, self.promised - periods * self.limit)
        self.allowed = self.limit - (first if periods == 1 else 0)
        self.ends_at += periods * self.length if self.length > 0 else now - self.ends_at
        self.guessed = True


class RateLimitPacer:
    """The pause before the limit, shared by every request of one provider."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._windows: dict[int, _Window] = {}  # by the limit they name
        self._routes: dict[str, int] = {}  # route -> the limit its answers name
        self._unpaced: dict[str, int] = {}  # requests sent on a route before its limit was known
        self.waits = 0  # requests that waited for a window (for tests and benchmarks)

    def reserve(self, method: str, path: str) -> Ticket:
        """A place for one request: ``wait`` seconds first (0: go now). Pass the ticket to
        ``done`` once answered (or failed)."""
        route = route_of(method, path)
        with self._lock:
            now = self._clock()
            limit = self._routes.get(route)
            window = self._windows.get(limit) if limit is not None else None
            if window is None:
                self._unpaced[route] = self._unpaced.get(route, 0) + 1
                return Ticket(route)
            window.roll(now)
            if window.allowed > 0:
                window.allowed -= 1
                return Ticket(route)
            later = window.promised // window.limit  # 0: the next window
            window.promised += 1
            ticket = Ticket(route, max(0.0, window.ends_at + later * window.length + MARGIN - now))
            self.waits += 1
            if window.promised == 1:
                log.info(
                    "rate limit: the window of %d requests is spent; waiting %.1fs for the "
                    "next one",
                    window.limit,
                    ticket.wait,
                )
            return ticket

    def done(self, ticket: Ticket, headers: Mapping[str, str] | None) -> None:
        """The request is over; learn from its answer's headers (None: no answer)."""
        seen = read_headers(headers) if headers is not None else None
        if seen is None:
            return
        with self._lock:
            now = self._clock()
            self._routes[ticket.route] = seen.limit
            window = self._windows.get(seen.limit)
            if window is None:
                sent = self._unpaced.pop(ticket.route, 1)  # this one and those on their way
                allowed = max(0, min(seen.limit - sent, seen.remaining))
                self._windows[seen.limit] = _Window(
                    seen.limit, seen.reset, now + seen.reset, allowed
                )
                return
            self._learn(window, seen, now)

    @staticmethod
    def _learn(window: _Window, seen: RateLimitHeaders, now: float) -> None:
        window.roll(now)
        window.length = max(window.length, seen.reset)
        ends = now + seen.reset
        left = seen.remaining
        slack = window.length / 2
        if ends > window.ends_at + slack:  # the server has moved on to a later window
            first = min(window.promised, window.limit)  # promised to it, not yet counted
            window.promised -= first
            window.ends_at, window.allowed = ends, max(0, min(window.limit, left) - first)
            window.guessed = False
        elif ends >= window.ends_at - slack:  # this window: the tighter bound, the lower count
            # Every answer's end is at or after the server's; a guess may be before it.
            window.ends_at = ends if window.guessed else min(window.ends_at, ends)
            window.guessed = False
            window.allowed = min(window.allowed, left)
        # else: an answer from a window already over, sent before it ended: nothing to learn
