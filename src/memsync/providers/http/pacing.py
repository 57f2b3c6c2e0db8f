"""Pacing under a rate limit: a sliding-window log on memsync's side, one per server and key.

Servers that limit requests per window say so on every answer: ``X-RateLimit-Limit`` (the
requests a window allows), ``X-RateLimit-Remaining`` (what is left of it) and
``X-RateLimit-Reset`` (when the next request is free). Mem0's own client reads the three, with
``Retry-After``, on a 429 (``mem0/client/utils.py`` at mem0 8d5b786). The Platform documents
1,000 requests a minute and not the kind of window; memsync paces as if it slides, which is
safe against fixed windows too: no fixed window holds more of memsync's requests than some
sliding one does.

``RateLimiter`` keeps the moment each of memsync's requests was *answered*, an upper bound of
when the server counted it, so clocks never need to agree. A request's slot is free again
``window + MARGIN`` after that. While the budget is spent, a new request takes over the oldest
slot still held and waits until it ages out: one slot frees per request aging out, so waiting
requests resume one at a time, at the pace the first ones went, never as a crowd (a crowd is
what the fixed-window model met: issue 39 §4, issue 40 §5). The server still has the last
word: ``Limit`` sets the budget, and ``Remaining`` shows what the key's other clients hold
(agents on the same key), which the budget leaves them, with ``headroom`` for their growth
between answers; when they hold the whole window, one request waits for ``Reset`` and goes
alone. Routes are told apart by the limit their answers name; a route answered without the
headers is never paced. A 429 still goes through ``retry``'s shared pause.

One limiter per (base URL, key, transport) in a process (``limiter_for``): every provider a
cycle builds, each scope's client, the probes, ``verify`` and the webhook commands share the
key's window, and a cycle starting at a minute's end knows what the minute holds.

``Reset`` is read as seconds from now, or as a Unix time (seconds or milliseconds) when it is
that large, or as an HTTP date.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import math
import re
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memsync.providers.http.retry import parse_retry_after

log = logging.getLogger("memsync.http")

LIMIT = "X-RateLimit-Limit"
REMAINING = "X-RateLimit-Remaining"
RESET = "X-RateLimit-Reset"
# Seconds past a slot's window before it is reused: the server's bucketing and a timer's
# rounding, against 0.1 % of the throughput at 1,000 a minute.
MARGIN = 0.05
ANSWER_WAIT = 1.0  # a request that finds every slot in flight looks again after this
_EPOCH_SECONDS = 1e9  # a Reset this large is a Unix time, not a delay
_EPOCH_MILLIS = 1e12
_ID_SEGMENT = re.compile(r"^(?=.*\d)[0-9a-fA-F-]{8,}$|^\d+$")
_UNKNOWN = 0  # the log of requests sent before any answer named a limit


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
    """One request's place: its route, how long it waits first (0: go now), and the log
    (by the limit it names) that holds its slot; None: a route no limit covers."""

    route: str
    wait: float = 0.0
    log: int | None = None


@dataclass(eq=False)
class _Log:
    """memsync's requests under one limit: answered ones by the moment of their answer."""

    limit: int
    documented: float = 0.0  # the window the config gives for this limit, if it does
    longest_reset: float = 0.0  # the longest Reset an answer naming this limit gave
    answered: collections.deque[float] = field(default_factory=collections.deque)
    in_flight: int = 0  # slots granted, not yet answered (waiting ones included)
    others: int = 0  # slots the server's last answer showed the key's other clients holding
    others_at: float = -math.inf  # when that answer came
    alone_until: float = 0.0  # others hold the window: one request goes alone at this instant
    said_at: float = -math.inf  # when a wait was last logged
    heard: bool = False  # an answer has named this limit: the window's state is known

    @property
    def window(self) -> float:
        """How long a slot stays held: the documented window, or the longest Reset seen when
        that is longer (no window gives a Reset longer than itself)."""
        return max(self.documented, self.longest_reset)

    def live(self, now: float) -> int:
        """Answered requests still inside the window (older ones are dropped)."""
        horizon = now - self.window - MARGIN
        while self.answered and self.answered[0] <= horizon:
            self.answered.popleft()
        return len(self.answered)


class RateLimiter:
    """The sliding-window pacing of one server and key (module docstring).

    ``limit``/``window``: the documented limit, applied to every route until an answer names
    one (None: nothing is paced before an answer does); ``headroom``: the share of a limit
    left to the key's other clients.
    """

    def __init__(
        self,
        *,
        limit: int | None = None,
        window: float | None = None,
        headroom: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._logs: dict[int, _Log] = {}
        self._routes: dict[str, int | None] = {}  # route -> the limit its answers name
        self.limit = limit
        self.window = window
        self.headroom = headroom
        self.waits = 0  # requests that waited for a slot (tests and benchmarks read it)

    def configure(self, *, limit: int | None, window: float | None, headroom: float) -> None:
        """Take the settings of a config (re)loaded: the logs kept so far stay."""
        with self._cond:
            self.limit, self.window, self.headroom = limit, window, headroom
            for log in self._logs.values():
                log.documented = (window or 0.0) if log.limit == limit else 0.0

    # the logs -----------------------------------------------------------------------------

    def _log(self, limit: int) -> _Log:
        log = self._logs.get(limit)
        if log is None:
            documented = (self.window or 0.0) if limit == self.limit else 0.0
            log = self._logs[limit] = _Log(limit, documented)
        return log

    def _budget(self, log: _Log, now: float) -> int:
        spare = int(log.limit * self.headroom)
        others = log.others if now - log.others_at < log.window else 0
        return max(1, log.limit - spare - others)

    def _log_for(self, route: str) -> _Log | None:
        if route in self._routes:
            known = self._routes[route]
            return None if known is None else self._log(known)
        if self.limit is not None:
            return self._log(self.limit)
        return self._log(_UNKNOWN)  # counted, not paced

    # the pacer interface --------------------------------------------------------------------

    def reserve(self, method: str, path: str) -> Ticket:
        """A slot for one request: ``wait`` seconds first (0: go now). Pass the ticket to
        ``done`` once answered (or failed), whatever happened."""
        route = route_of(method, path)
        with self._cond:
            while True:
                log = self._log_for(route)
                if log is None:
                    return Ticket(route)
                if log.limit == _UNKNOWN:
                    log.in_flight += 1
                    return Ticket(route, 0.0, _UNKNOWN)
                ticket = self._place(route, log, self._clock())
                if ticket is not None:
                    return ticket
                self._cond.wait(ANSWER_WAIT)  # every slot is in flight: wait for an answer

    def _place(self, route: str, log: _Log, now: float) -> Ticket | None:
        """The ticket of a request now: at once while the budget allows, else at the moment a
        slot frees; None when none is known to free before an answer comes back."""
        window = log.window
        used = log.in_flight + log.live(now)
        budget = self._budget(log, now)
        if not log.heard and log.in_flight:
            return None  # what the key's other clients hold is unknown until one answer says
        if used < budget and now >= log.alone_until:
            log.in_flight += 1
            return Ticket(route, 0.0, log.limit)
        # When others hold the whole window, the server's Reset says when its oldest request
        # leaves: one request (a scout) may go then, alone; its answer says what is free.
        scout = log.alone_until - now if now < log.alone_until < math.inf else None
        excess = used - budget + 1  # memsync's own slots that must age out first
        if 0 < excess <= len(log.answered):
            takeover = log.answered[excess - 1] + window + MARGIN - now
            if scout is None or takeover <= scout:
                # Take over the slot that frees the budget once it ages out; when others
                # took more of the window meanwhile, that is as many slots further on.
                for _ in range(excess):
                    log.answered.popleft()
                return self._waiting(route, log, max(0.0, takeover), now)
        if scout is not None:
            log.alone_until = math.inf  # nobody else goes until the scout's answer
            return self._waiting(route, log, max(0.0, scout), now)
        return None

    def _waiting(self, route: str, log: _Log, wait: float, now: float) -> Ticket:
        log.in_flight += 1
        self.waits += 1
        if now - log.said_at > log.window:  # said once a window, not once a request
            log.said_at = now
            log_wait(log.limit, wait)
        return Ticket(route, wait, log.limit)

    def done(self, ticket: Ticket, headers: Mapping[str, str] | None) -> None:
        """The request is over: its slot is held from now for a window; learn what the
        answer's headers say (None: no answer). Until a first answer has named the limit, one
        request goes at a time: a process that just started (a `verify` beside the daemon)
        does not know what the key's other clients hold of the window."""
        seen = read_headers(headers) if headers is not None else None
        with self._cond:
            now = self._clock()
            if ticket.log is not None:
                sent = self._logs.get(ticket.log)
                if sent is not None:
                    sent.in_flight = max(0, sent.in_flight - 1)
                    if sent.alone_until == math.inf:
                        sent.alone_until = 0.0  # the lone request is back: the rest look again
                # Held in the log of the limit the answer names (it may not be the one the
                # request was sent under: the documented limit, or none known yet).
                held = sent if seen is None else self._log(seen.limit)
                if held is not None:
                    held.answered.append(now)
            if headers is not None and seen is None:
                self._routes[ticket.route] = None  # answered without a limit: never paced
            elif seen is not None:
                self._learn(ticket.route, seen, now)
            self._cond.notify_all()

    def _learn(self, route: str, seen: RateLimitHeaders, now: float) -> None:
        self._routes[route] = seen.limit
        log = self._log(seen.limit)
        log.heard = True
        log.longest_reset = max(log.longest_reset, seen.reset)
        held = seen.limit - seen.remaining  # the window's requests the server counts
        ours = log.in_flight + log.live(now)
        log.others, log.others_at = max(0, held - ours), now
        if seen.remaining <= 0 and log.others > 0:
            log.alone_until = now + seen.reset + MARGIN  # nothing goes before a slot frees
        elif log.alone_until != math.inf:
            log.alone_until = 0.0


def log_wait(limit: int, wait: float) -> None:
    log.info(
        "rate limit: %d requests a window spent; the next request waits %.1fs for a slot",
        limit,
        wait,
    )


# one limiter per server and key in the process ------------------------------------------------

_LIMITERS: dict[tuple[str, str], RateLimiter] = {}
_BY_TRANSPORT: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], RateLimiter]] = (
    weakref.WeakKeyDictionary()
)
_REGISTRY = threading.Lock()


def limiter_for(
    base_url: str,
    key: str | None,
    *,
    transport: Any = None,
    limit: int | None = None,
    window: float | None = None,
    headroom: float = 0.0,
) -> RateLimiter:
    """The process's limiter for BASE_URL and KEY (the key is hashed, never kept), set to
    these settings; a custom TRANSPORT (a test's in-process server) is a server of its own."""
    digest = hashlib.sha256(f"{base_url.rstrip('/')}\n{key or ''}".encode()).hexdigest()
    where = (base_url.rstrip("/"), digest)
    with _REGISTRY:
        table = _LIMITERS if transport is None else _BY_TRANSPORT.setdefault(transport, {})
        limiter = table.get(where)
        if limiter is None:
            limiter = table[where] = RateLimiter(limit=limit, window=window, headroom=headroom)
        else:
            limiter.configure(limit=limit, window=window, headroom=headroom)
        return limiter


__all__ = [
    "MARGIN",
    "RateLimitHeaders",
    "RateLimiter",
    "Ticket",
    "limiter_for",
    "read_headers",
    "route_of",
]
