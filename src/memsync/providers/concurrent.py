"""Run a batch of writes on a few threads, keeping each logical memory's writes in order.

A remote provider spends nearly all of a write waiting on the network, so ``concurrency``
writes in flight make a batch that many times faster. Writes are grouped into *lanes*, one
per logical memory (its origin, or for a delete the provider id): a lane runs on one worker
in the order the engine gave, so two writes to one memory never overtake each other.

Listings that page by number fetch pages ahead with ``PagesAhead``; listings that need one
read per memory (Cognee's raw text) make them with ``read_concurrently``.

Results come back in the order they complete, each as soon as its write returned, so the
engine records outcomes exactly as it does for one-at-a-time writes. If the consumer stops
early (SIGTERM, an error), lanes not yet started never start and the writes in flight are
waited for: nothing is left running behind the engine's back. Once a write is refused for
its credentials, or the provider is found unreachable (its breaker opened), the writes not
yet sent fail with the same error instead of being sent.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from memsync.base.errors import AuthError, ProviderUnreachable
from memsync.providers.base import WriteOp, WriteResult

Lane = list[WriteOp]
T = TypeVar("T")
K = TypeVar("K")


def lane_of(op: WriteOp) -> str:
    """The logical memory an op writes: ops sharing it must run one after another."""
    if op.item is not None and op.item.origin:
        return f"origin:{op.item.origin}"
    return f"id:{op.provider_id or op.key}"


def _names(op: WriteOp) -> set[str]:
    """Everything that identifies the memory an op touches: its origin and its id."""
    names = {lane_of(op)}
    if op.provider_id:
        names.add(f"id:{op.provider_id}")
    return names


def lanes(ops: list[WriteOp]) -> list[Lane]:
    """The ops grouped by the memory they touch (same origin or same provider id), each
    group in the given order."""
    lane_by_name: dict[str, int] = {}
    members: dict[int, list[int]] = {}
    for index, op in enumerate(ops):
        found = sorted({lane_by_name[n] for n in _names(op) if n in lane_by_name})
        lane = found[0] if found else index
        members.setdefault(lane, [])
        for other in found[1:]:  # this op ties two lanes together: they become one
            members[lane].extend(members.pop(other))
            for name, owner in lane_by_name.items():
                if owner == other:
                    lane_by_name[name] = lane
        members[lane].append(index)
        for name in _names(op):
            lane_by_name[name] = lane
    return [[ops[i] for i in sorted(indices)] for _, indices in sorted(members.items())]


def write_concurrently(
    ops: list[WriteOp],
    write_lane: Callable[[Lane], Iterator[WriteResult]],
    concurrency: int,
) -> Iterator[WriteResult]:
    """``write_lane`` over every lane of ``ops``, ``concurrency`` lanes at a time."""
    groups = lanes(ops)
    if concurrency <= 1 or len(groups) <= 1:
        yield from write_lane(ops)
        return
    results: queue.Queue[WriteResult | None] = queue.Queue()
    stopping = threading.Event()
    refused: list[AuthError | ProviderUnreachable] = []  # every write not yet sent fails so

    def run(lane: Lane) -> None:
        try:
            for index, op in enumerate(lane):
                if stopping.is_set():
                    return
                if refused:
                    for skipped in lane[index:]:
                        results.put(WriteResult(skipped, error=refused[0]))
                    return
                for result in write_lane([op]):
                    if isinstance(result.error, AuthError | ProviderUnreachable):
                        refused.append(result.error)
                    results.put(result)
        finally:
            results.put(None)

    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="memsync-write")
    try:
        for lane in groups:
            pool.submit(run, lane)
        finished = 0
        while finished < len(groups):
            result = results.get()
            if result is None:
                finished += 1
            else:
                yield result
    finally:
        stopping.set()
        pool.shutdown(wait=True, cancel_futures=True)


class PagesAhead(Generic[T]):
    """Numbered pages fetched up to ``concurrency`` ahead of the one being read.

    Set ``last`` once the API has said how many pages there are (a count on the first page):
    pages up to it are requested while earlier ones are staged, and each is handed out in
    order, its error (if any) raised when it is reached, as a plain loop would. ``close``
    drops what was fetched ahead but not needed.
    """

    def __init__(self, fetch: Callable[[int], T], concurrency: int) -> None:
        self.fetch = fetch
        self.concurrency = concurrency
        self.last: int | None = None
        self._ahead: dict[int, Future[T]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def get(self, number: int) -> T:
        if self.concurrency > 1 and self.last is not None:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="memsync-page")
            for ahead in range(number, min(self.last, number + self.concurrency - 1) + 1):
                if ahead not in self._ahead:
                    self._ahead[ahead] = self._pool.submit(self.fetch, ahead)
        future = self._ahead.pop(number, None)
        return future.result() if future is not None else self.fetch(number)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._ahead.clear()


def read_concurrently(
    read: Callable[[K], T], keys: list[K], concurrency: int
) -> list[T | Exception]:
    """``read`` of every key, ``concurrency`` at a time, in the keys' order; a read that
    failed gives its exception in its place, for the caller to judge one by one."""

    def attempt(key: K) -> T | Exception:
        try:
            return read(key)
        except Exception as exc:
            return exc

    if concurrency <= 1 or len(keys) <= 1:
        return [attempt(key) for key in keys]
    with ThreadPoolExecutor(concurrency, thread_name_prefix="memsync-read") as pool:
        return list(pool.map(attempt, keys))
