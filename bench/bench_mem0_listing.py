"""How much a complete, proven mem0-oss listing costs against one direct ``Memory.get_all``.

Builds a local Qdrant store holding N memories of one user plus other users' noise, then
times, in the same run:

- the baseline: one ``Memory.get_all(filters={"user_id": ...}, top_k=N)`` — what a caller who
  already knows the size would do (and which proves nothing about completeness);
- the provider's listing through every page, with the Qdrant count hint (the default) and
  without it (the bare ADR-0024 paging loop, as used for stores that cannot count).

The store is local Qdrant in memory: a local Qdrant keeps every point in RAM whether it has a
path or not, so listing costs the same, while building 11,000 points on disk costs one
committed SQLite write per point (minutes on a busy disk).

Prints ``name: value (target)`` lines. Run: ``.venv/bin/python bench/bench_mem0_listing.py``.
"""

from __future__ import annotations

import hashlib
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memsync.providers.mem0.oss import Mem0OssProvider

N = 10_000
NOISE = 1_000  # other users' memories in the same collection
DIMS = 64
REPEATS = 5
USER = "bench-user"


def fill(memory: Any, user: str, count: int) -> None:
    """Write COUNT memories shaped exactly as Mem0's add(infer=False) writes them, in batches.

    ``add`` costs one Qdrant upsert and one history row per memory (about 25 s for 10,000);
    the listing under test reads only the vector store, so batched inserts build the same
    store in a fraction of the time.
    """
    batch = 1000
    for start in range(0, count, batch):
        payloads, vectors, ids = [], [], []
        for i in range(start, min(count, start + batch)):
            text = f"{user} memory number {i}: likes item {i % 97} on day {i % 31}"
            now = datetime.now(UTC).isoformat()
            payloads.append(
                {
                    "data": text,
                    "hash": hashlib.md5(text.encode()).hexdigest(),
                    "created_at": now,
                    "updated_at": now,
                    "text_lemmatized": text,
                    "user_id": user,
                    "role": "user",
                    "memsync_origin": f"bench:{i}",
                    "topic": f"t{i % 13}",
                }
            )
            vectors.append(memory.embedding_model.embed(text, "add"))
            ids.append(str(uuid.uuid4()))
        memory.vector_store.insert(vectors=vectors, payloads=payloads, ids=ids)


def median_seconds(action: Any) -> tuple[float, Any]:
    action()  # warm up: first calls pay one-time costs on both sides
    times, result = [], None
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def list_through(provider: Mem0OssProvider) -> tuple[int, bool, Any]:
    listing = provider.listing()
    count = sum(len(page.records) for page in listing.pages())
    return count, listing.complete, listing.fetch


def main() -> int:
    root = Path(tempfile.mkdtemp(prefix="memsync-bench-mem0-"))
    owner = Mem0OssProvider(
        "bench",
        {"user_id": USER},
        mem0_config={
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": "bench",
                    "embedding_model_dims": DIMS,
                    "path": ":memory:",
                },
            },
            "history_db_path": ":memory:",
        },
        embedder="hash",
        mem0_dir=root / "mem0dir",
    )
    owner.open()
    try:
        memory = owner.memory
        started = time.perf_counter()
        fill(memory, USER, N)
        fill(memory, "someone-else", NOISE)
        print(f"# built {N} + {NOISE} memories in {time.perf_counter() - started:.1f}s", flush=True)

        baseline, direct = median_seconds(
            lambda: memory.get_all(filters={"user_id": USER}, top_k=N)["results"]
        )
        assert len(direct) == N, len(direct)

        hinted, (count, complete, fetch) = median_seconds(lambda: list_through(owner))
        bare_provider = Mem0OssProvider.from_memory(
            "bench", memory, {"user_id": USER}, count_hint=False
        )
        bare, (bare_count, bare_complete, bare_fetch) = median_seconds(
            lambda: list_through(bare_provider)
        )
        assert count == bare_count == N, (count, bare_count)

        print(f"# baseline get_all(top_k={N}): {baseline * 1000:.0f} ms (median of {REPEATS})")
        print(f"# provider listing: {hinted * 1000:.0f} ms, calls {fetch.calls}")
        print(f"# provider listing, no count hint: {bare * 1000:.0f} ms, calls {bare_fetch.calls}")
        print(f"listing_complete: {complete and bare_complete} (True)")
        print(f"mem0_listing_vs_get_all: {hinted / baseline:.2f}x (<= 1.5x)")
        print(f"mem0_paging_fetched_per_memory: {fetch.fetched / N:.2f} (<= 2.0)")
        # the fallback for vector stores other than Qdrant; a local Qdrant scans (and copies)
        # every payload on each call, so here each extra call costs about one baseline
        print(f"mem0_listing_no_count_hint_vs_get_all: {bare / baseline:.2f}x (info, no target)")
        print(
            f"mem0_paging_no_count_hint_fetched_per_memory: {bare_fetch.fetched / N:.2f} (<= 2.0)"
        )
    finally:
        owner.close()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
