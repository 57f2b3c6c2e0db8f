"""The import a user would run instead of memsync: ADR-0024's ``import_mem0``, as a script.

``python -m bench.adr0024_import SOURCE_DIR TARGET_DIR`` copies one Mem0 scope (user ``alice``,
stores laid out as ``bench_first_sync`` lays them out: local Qdrant, the hash embedder) into a
new mnem store at TARGET_DIR, written from the ADR's semantics and nothing more:

- ``get_all`` with a rising ``top_k`` (from 1,000, sixteen times larger each call) until a
  call returns fewer than it asked for; ``show_expired=True``, or a short answer proves
  nothing (Mem0 drops expired memories after the fetch);
- a memory with empty content is skipped and its Mem0 id printed;
- node id ``mem0:{id}``; ``actor_id``, else ``role``, as the provenance source; ``created_at``
  as the event time (Unix ms); every other field Mem0 attaches folded into ``provenance.note``
  as one JSON object;
- ``Store.add`` for each memory, then one commit.

It opens Mem0 exactly as memsync's mem0-oss provider does (``bench_first_sync.provider``), so
the two differ only in what they do once the stores are open. It prints the memories written,
the memories skipped, and the ``get_all`` calls and memories they fetched.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("MEM0_TELEMETRY", "False")

FIRST_TOP_K = 1_000
RISE = 16
_SOURCE_FIELDS = ("actor_id", "role")
_NOT_FOLDED = {"id", "memory", "created_at"}


def event_time(created_at: Any) -> int | None:
    if not isinstance(created_at, str) or not created_at:
        return None
    instant = datetime.fromisoformat(created_at)
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=UTC)
    return int(instant.timestamp() * 1000)


def list_everything(memory: Any, filters: dict[str, str]) -> tuple[list[dict[str, Any]], int, int]:
    """Every memory of the scope, and the calls made and memories fetched to prove it."""
    top_k, calls, fetched = FIRST_TOP_K, 0, 0
    while True:
        results = memory.get_all(filters=filters, top_k=top_k, show_expired=True)["results"]
        calls, fetched = calls + 1, fetched + len(results)
        if len(results) < top_k:
            return results, calls, fetched
        top_k *= RISE


def import_mem0(source_root: Path, target_root: Path) -> None:
    import mnem

    from bench.bench_first_sync import provider

    source = provider("mem0", source_root)
    source.open()
    items, calls, fetched = list_everything(source.memory, {"user_id": "alice"})
    source.close()
    store = mnem.init(str(target_root))
    written, skipped = 0, []
    for item in items:
        text = item.get("memory")
        if not isinstance(text, str) or not text.strip():
            skipped.append(str(item.get("id")))
            continue
        source_name = next((item[f] for f in _SOURCE_FIELDS if item.get(f)), None)
        rest = {k: v for k, v in item.items() if k not in _NOT_FOLDED and v is not None}
        store.add(
            f"mem0:{item['id']}",
            text,
            provenance=mnem.Provenance(source=source_name, note=json.dumps(rest, default=str)),
            event_time=event_time(item.get("created_at")),
        )
        written += 1
    store.commit(f"import_mem0: {written} memories from Mem0", author="import_mem0")
    print(json.dumps({"written": written, "skipped": skipped, "calls": calls, "fetched": fetched}))


if __name__ == "__main__":
    import_mem0(Path(sys.argv[1]), Path(sys.argv[2]))
