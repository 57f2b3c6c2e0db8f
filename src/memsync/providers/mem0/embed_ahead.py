"""Embeddings computed ahead, concurrently, for the memories mem0-oss is about to add.

Mem0's ``add`` embeds each memory before it writes it. With a remote embedder (OpenAI,
Azure, a hosted model) that is a network round trip per memory, and nearly all of a write's
time. The vector store behind it is another matter: local Qdrant, FAISS or Chroma files and
Mem0's history SQLite are single-writer, and Mem0 does not promise that concurrent ``add``
calls are safe on them. So only the embedding calls run concurrently: before a group of adds,
their texts are embedded ``concurrency`` at a time, and the adds then run one by one as before,
finding their vectors ready. A text whose embedding failed ahead is embedded again by ``add``
itself, so its error surfaces on its own write, as it always did.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

ADD = "add"


class EmbeddedAhead:
    """Stands in for Mem0's embedder: vectors prepared by ``prepare``, else the real call."""

    def __init__(self, inner: Any, concurrency: int) -> None:
        self.inner = inner
        self.concurrency = concurrency
        self._ready: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # config, dims...: whatever Mem0 reads
        return getattr(self.inner, name)

    def prepare(self, texts: Iterable[str]) -> None:
        """Embed ``texts`` for adding, ``concurrency`` calls at a time."""
        wanted = list(dict.fromkeys(t for t in texts if t not in self._ready))
        if not wanted:
            return

        def embed(text: str) -> None:
            try:
                vector = self.inner.embed(text, ADD)
            except Exception:
                return
            with self._lock:
                self._ready[text] = vector

        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="memsync-embed") as pool:
            list(pool.map(embed, wanted))

    def embed(self, text: Any, memory_action: str | None = None) -> Any:
        if memory_action == ADD:
            with self._lock:
                vector = self._ready.pop(text, None) if isinstance(text, str) else None
            if vector is not None:
                return vector
        return self.inner.embed(text, memory_action)

    def forget(self) -> None:
        with self._lock:
            self._ready.clear()
