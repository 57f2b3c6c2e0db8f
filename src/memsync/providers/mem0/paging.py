"""Complete listings from Mem0's ``get_all``, whose ``top_k`` is a cap without a cursor (ADR-0024).

One call that returns exactly as many memories as it asked for proves nothing: the cap may
have cut the rest. A call that returns *fewer* than it asked for has returned everything in
scope. So ask again with a larger ``top_k`` until a call comes back short; only that proves the
listing complete. Each call repeats the previous ones' work (no cursor), so ``top_k`` grows
geometrically: the records fetched in all stay within about twice the scope's size.

This is a pure loop over a callable, shared by every Mem0 provider type and by import_mem0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_START = 1000
# The total fetched is bounded by N * (1 + f/(f-1)): 3 N at 2, 2.33 N at 4, 2.07 N at 16. A
# larger factor costs nothing on the last call (it returns only what exists), so callers whose
# calls cost the same whatever top_k asks (local Qdrant) pass a larger one.
DEFAULT_FACTOR = 4
DEFAULT_LIMIT = 1_000_000  # the largest top_k asked for; a scope this large is listed partially


@dataclass(frozen=True)
class FetchResult(Generic[T]):
    """What the loop got: the last call's items, whether they are provably all, and its cost."""

    items: list[T]
    complete: bool  # True only when the last call returned fewer items than it asked for
    calls: int  # get_all calls made
    fetched: int  # items transferred across all calls (the cost of having no cursor)
    top_k: int  # what the last call asked for


def fetch_all(
    get_all: Callable[[int], Sequence[T]],
    *,
    start: int = DEFAULT_START,
    factor: int = DEFAULT_FACTOR,
    limit: int = DEFAULT_LIMIT,
) -> FetchResult[T]:
    """Call ``get_all(top_k)`` with a growing ``top_k`` until a call returns fewer than asked.

    ``start`` is the first ``top_k`` (pass a little more than the expected count to finish in
    one call); each further call asks ``factor`` times more, up to ``limit`` (a backend's own
    maximum, e.g. the Mem0 REST server's 1000). When even ``limit`` comes back full, the
    result says ``complete=False`` and carries what was returned: partial, never silently cut.

    With Mem0's ``Memory.get_all`` pass ``show_expired=True``: otherwise Mem0 over-fetches,
    drops expired memories and cuts to ``top_k``, so a short answer no longer proves "all".
    """
    if start < 1:
        raise ValueError("start must be at least 1")
    if factor < 2:
        raise ValueError("factor must be at least 2, or the loop may never end")
    if limit < 1:
        raise ValueError("limit must be at least 1")
    top_k = min(start, limit)
    calls = fetched = 0
    while True:
        items = list(get_all(top_k))
        calls += 1
        fetched += len(items)
        if len(items) < top_k:
            return FetchResult(items, True, calls, fetched, top_k)
        if top_k >= limit:
            return FetchResult(items, False, calls, fetched, top_k)
        top_k = min(top_k * factor, limit)


def start_for(expected: int | None, *, minimum: int = DEFAULT_START) -> int:
    """A first ``top_k`` that finishes in one call when about ``expected`` items exist.

    The margin absorbs writes that land between counting and listing; the proof of
    completeness still comes from the short call, never from the count.
    """
    if expected is None or expected < 0:
        return minimum
    return max(minimum, expected + expected // 8 + 1)
