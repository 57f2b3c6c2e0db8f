"""Replay's bookkeeping on a thread of its own, overlapped with the writes it records.

While a provider carries out a batch of writes, replay hands each outcome to a ``Recorder``,
which writes it into staging (outbox, mirror, bases, journal) on one background thread, in
the order given, while the next write is under way: a local store's write spends much of its
time waiting on its disk, a remote one's on the network, and recording the writes before it
fits in that wait instead of following it.

The order of things a crash could separate is unchanged: an outcome is handed over only after
its write returned (nothing is recorded before it is acknowledged), each hand-over is one
transaction as before, and whatever the recorder committed stays committed. ``drain`` waits
until everything handed over is committed and raises what failed there (a full disk), so the
cycle reads staging again only once its own records are in it. The next batch's writes are
read from staging on the same thread, before this batch's records (``read``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class Recorder:
    """One thread that runs staging writes in the order they were handed over."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memsync-record")
        self._handed: deque[Future[Any]] = deque()

    def record(self, write: Callable[..., Any], *args: Any) -> None:
        """Run ``write(*args)`` after everything handed over before it."""
        self._raise_failed()
        self._handed.append(self._pool.submit(write, *args))

    def read(self, read: Callable[..., T], *args: Any) -> Future[T]:
        """Run ``read(*args)`` in turn with the writes; its result is ready once drained."""
        self._raise_failed()
        future = self._pool.submit(read, *args)
        self._handed.append(future)
        return future

    def drain(self) -> None:
        """Wait until every write handed over is done; raise the first that failed."""
        failure: BaseException | None = None
        while self._handed:
            exc = self._handed.popleft().exception()
            failure = failure or exc
        if failure is not None:
            raise failure

    def close(self) -> None:
        try:
            self.drain()
        finally:
            self._pool.shutdown(wait=True)

    def _raise_failed(self) -> None:
        """Raise at once a write that already failed, instead of queueing more after it."""
        while self._handed and self._handed[0].done():
            if self._handed[0].exception() is not None:
                self.drain()
            self._handed.popleft()

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
