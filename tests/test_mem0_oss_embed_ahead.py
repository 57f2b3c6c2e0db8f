"""mem0-oss with a slow (remote) embedder: embeddings run concurrently, the store's writes
stay on one thread, and every memory lands once with the vector its text deserves."""

from __future__ import annotations

import threading
import time
from typing import Any

from memsync.base.records import Outgoing
from memsync.providers.base import WriteOp
from memsync.providers.mem0.hash_embedder import HashEmbedder
from memsync.providers.mem0.oss import Mem0OssProvider
from tests.contract import list_all
from tests.doubles.mem0_server_app import DIMS, offline_memory


class SlowEmbedder:
    """A remote embedder's cost: each call waits ``delay`` seconds, as on a network."""

    def __init__(self, delay: float) -> None:
        self.inner = HashEmbedder(DIMS)
        self.config = self.inner.config
        self.delay = delay
        self.calls: list[tuple[str, str | None]] = []
        self.now = 0
        self.most = 0
        self.lock = threading.Lock()

    def embed(self, text: Any, memory_action: str | None = None) -> list[float]:
        with self.lock:
            self.calls.append((text, memory_action))
            self.now += 1
            self.most = max(self.most, self.now)
        time.sleep(self.delay)  # the network round trip being simulated, not a wait on work
        with self.lock:
            self.now -= 1
        return self.inner.embed(text, memory_action)  # type: ignore[no-any-return]


def test_creates_embed_concurrently_and_write_one_at_a_time() -> None:
    memory = offline_memory()
    slow = SlowEmbedder(0.05)
    memory.embedding_model = slow
    writers: set[str] = set()
    insert = memory.vector_store.insert

    def recording_insert(*args: Any, **kwargs: Any) -> Any:
        writers.add(threading.current_thread().name)
        return insert(*args, **kwargs)

    memory.vector_store.insert = recording_insert
    provider = Mem0OssProvider.from_memory("m", memory, {"user_id": "alice"}, concurrency=8)
    texts = [f"memory {i}: likes tea" for i in range(24)]
    ops = [
        WriteOp("create", str(i), item=Outgoing(origin=f"pmm:{i}", content=text))
        for i, text in enumerate(texts)
    ]
    results = list(provider.write_many(ops))
    assert all(r.error is None for r in results)
    assert slow.most > 1  # embeddings overlapped
    assert writers == {threading.current_thread().name}  # the store saw one writer
    assert sorted(t for t, _ in slow.calls) == sorted(texts)  # each text embedded once
    assert memory.embedding_model is slow  # the real embedder is back after the batch
    records, _ = list_all(provider)
    assert sorted(r.content for r in records) == sorted(texts)
    hits = memory.search(texts[5], filters={"user_id": "alice"}, top_k=1)["results"]
    assert hits[0]["memory"] == texts[5]  # its vector is its own text's


def test_concurrency_one_embeds_inline_as_before() -> None:
    memory = offline_memory()
    slow = SlowEmbedder(0.0)
    memory.embedding_model = slow
    provider = Mem0OssProvider.from_memory("m", memory, {"user_id": "alice"}, concurrency=1)
    ops = [
        WriteOp("create", str(i), item=Outgoing(origin=f"pmm:{i}", content=f"m {i}"))
        for i in range(3)
    ]
    assert all(r.error is None for r in provider.write_many(ops))
    assert slow.most == 1
