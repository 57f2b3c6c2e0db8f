"""The script a user would write instead of memsync: list one Mem0 store, add each memory to
another. ``python -m bench.mem0_copy_script SOURCE_DIR TARGET_DIR`` (stores as bench_first_sync
lays them out: local Qdrant, the hash embedder, ``infer=False``).

It opens both stores exactly as memsync's mem0-oss provider does (``bench_first_sync.provider``),
so the two sides differ only in what they do once the stores are open.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("MEM0_TELEMETRY", "False")


def copy(source_root: Path, target_root: Path) -> int:
    from bench.bench_first_sync import provider

    source, target = provider("a", source_root), provider("b", target_root)
    source.open()
    items = source.memory.get_all(filters={"user_id": "alice"}, top_k=1_000_000)["results"]
    source.close()
    target.open()
    for item in items:
        target.memory.add(
            item["memory"], user_id="alice", metadata=item.get("metadata") or {}, infer=False
        )
    target.close()
    return len(items)


if __name__ == "__main__":
    print(copy(Path(sys.argv[1]), Path(sys.argv[2])))
