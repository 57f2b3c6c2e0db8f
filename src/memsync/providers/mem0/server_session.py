"""What memsync learns about one Mem0 server in a cycle, learnt once and shared by every scope.

A wildcard provider becomes one provider per scope (``alice``, ``bob``...), each with an HTTP
client of its own; the server they talk to is the same. Its features (from ``/openapi.json``)
and its ``GET /entities`` answer are read once per provider and cycle and kept here, so twenty
users cost one schema request, not twenty. The configured provider owns the session and clears
it when the cycle closes it (a server may be upgraded between cycles); the scope bindings share
it and leave it alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

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

    def clear(self) -> None:
        with self._lock:
            self._features, self._census, self._census_read = None, None, False
