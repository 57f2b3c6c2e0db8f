"""Helpers for tests that run the real mem0ai library offline (local Qdrant, hash embedder).

Plain functions, not fixtures, so any test module can use them without conftest plumbing.
Nothing here imports mem0 at import time: the provider's ``open()`` must be the first to do it,
after switching telemetry off.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memsync.config import load_config
from memsync.providers import build_provider
from memsync.providers.mem0.oss import Mem0OssProvider

DIMS = 32
COLLECTION = "memsync_test"


def offline_mem0_config(root: Path | None, *, collection: str = COLLECTION) -> dict[str, Any]:
    """A Mem0 config with no LLM and no embedder keys: Qdrant under ROOT, or in memory if None."""
    store: dict[str, Any] = {"collection_name": collection, "embedding_model_dims": DIMS}
    store["path"] = str(root / "qdrant") if root is not None else ":memory:"
    return {
        "vector_store": {"provider": "qdrant", "config": store},
        "history_db_path": str(root / "history.db") if root is not None else ":memory:",
    }


def open_provider(
    root: Path | None,
    scope: dict[str, str],
    *,
    mem0_dir: Path,
    name: str = "mem0",
    **options: Any,
) -> Mem0OssProvider:
    """An opened mem0-oss provider over an offline store, writing with the hash embedder."""
    provider = Mem0OssProvider(
        name,
        scope,
        mem0_config=offline_mem0_config(root),
        embedder="hash",
        mem0_dir=mem0_dir,
        **options,
    )
    provider.open()
    return provider


def insert_behind_memsync(memory: Any, payload: dict[str, Any]) -> str:
    """Write a raw point through Mem0's vector store, as another tool or an old Mem0 might."""
    memory_id = str(uuid.uuid4())
    vector = [1.0] + [0.0] * (DIMS - 1)
    memory.vector_store.insert(vectors=[vector], payloads=[payload], ids=[memory_id])
    return memory_id


def mem0_payload(text: str, **fields: Any) -> dict[str, Any]:
    """The payload Mem0's own ``add(infer=False)`` writes for TEXT (2.2.1's shape)."""
    now = datetime.now(UTC).isoformat()
    return {
        "data": text,
        "hash": hashlib.md5(text.encode()).hexdigest(),
        "created_at": now,
        "updated_at": now,
        "text_lemmatized": text,
        "role": "user",
        **fields,
    }


class Mem0App:
    """The application still on Mem0: the configured ``mem0`` provider's library, opened as the
    team's agents open it, while memsync is not syncing (the local Qdrant allows one client)."""

    def __init__(self, home: Path) -> None:
        self.provider: Any = build_provider("mem0", load_config(home / "config" / "config.toml"))

    def __enter__(self) -> Any:
        self.provider.open()
        return self.provider.memory

    def __exit__(self, *exc: object) -> None:
        self.provider.close()
