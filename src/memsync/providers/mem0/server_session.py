"""What memsync learns about one Mem0 server in a cycle, learnt once and shared by every scope.

A wildcard provider becomes one provider per scope (``alice``, ``bob``...), each with an HTTP
client of its own; the server they talk to is the same. Its features (from ``/openapi.json``,
which a current server's are once a process: ``server_features.KNOWN``) and its ``GET
/entities`` answer are read once per provider and cycle and kept here, so twenty users cost
one schema request, not twenty. The configured provider owns the session and clears
it when the cycle closes it (a server may be upgraded between cycles); the scope bindings share
it and leave it alone.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from memsync.providers.mem0.server_entities import EntityCensus
from memsync.providers.mem0.server_features import ServerFeatures

T = TypeVar("T")


class ServerSession:
    """Per-cycle facts about one server, each fetched by the first caller that needs it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._features: ServerFeatures | None = None
        self._census: EntityCensus | None = None
        self._census_read = False
        self._ahead: ReadAhead | None = None

    def features(self, load: Callable[[], ServerFeatures]) -> ServerFeatures:
        with self._lock:
            if self._features is None:
                self._features = load()
            return self._features

    def set_features(self, features: ServerFeatures) -> None:
        with self._lock:
            self._features = features

    def census(self, load: Callable[[], EntityCensus | None]) -> EntityCensus | None:
        """The server's ``GET /entities`` answer this cycle (None: it has none)."""
        with self._lock:
            if not self._census_read:
                self._census = load()
                self._census_read = True
            return self._census

    def read_ahead(self, keys: Sequence[Hashable], read: Callable[[Any], Any]) -> None:
        """Start reading KEYS (scopes, in the order the cycle takes them) ahead of it."""
        with self._lock:
            if self._ahead is not None:
                self._ahead.close()
            self._ahead = ReadAhead(list(keys), read)

    def taken(self, key: Hashable) -> tuple[bool, Any]:
        """(True, what was read ahead for KEY: raises what its read raised), or (False, None)
        when KEY was not read ahead."""
        with self._lock:
            ahead = self._ahead
        return (False, None) if ahead is None else ahead.take(key)

    def clear(self) -> None:
        with self._lock:
            self._features, self._census, self._census_read = None, None, False
            ahead, self._ahead = self._ahead, None
        if ahead is not None:
            ahead.close()


class ReadAhead:
    """Reads of the next few keys, on a few threads, while the caller works on earlier ones:
    a thousand users' listings (a round trip each) overlap the cycle's local work instead of
    adding to it. At most ``window`` keys past the one last taken are read."""

    def __init__(
        self, keys: list[Hashable], read: Callable[[Any], Any], lanes: int = 4, window: int = 8
    ) -> None:
        self.keys = keys
        self.position = {key: index for index, key in enumerate(keys)}
        self.read = read
        self.window = window
        self._lock = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(lanes, thread_name_prefix="read-ahead")
        self._futures: dict[int, concurrent.futures.Future[Any]] = {}
        self._next = 0
        self._closed = False
        self._fill(-1)

    def _fill(self, taken: int) -> None:
        last = min(len(self.keys) - 1, taken + self.window)
        while not self._closed and self._next <= last:
            self._futures[self._next] = self._pool.submit(self.read, self.keys[self._next])
            self._next += 1

    def take(self, key: Hashable) -> tuple[bool, Any]:
        with self._lock:
            index = self.position.get(key)
            future = None if index is None else self._futures.pop(index, None)
            if index is not None:
                for stale in [i for i in self._futures if i < index]:  # skipped by the cycle
                    self._futures.pop(stale).cancel()
                self._fill(index)
        if future is None:
            return False, None
        return True, future.result()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            for future in self._futures.values():
                future.cancel()
            self._futures.clear()
        self._pool.shutdown(wait=False)
