"""memsync against the script a user would otherwise write, on real Mem0 OSS stores.

10,000 memories in one local Mem0 store (hash embedder, infer=False) copied into another:
memsync's first cycle against a direct `get_all` + `add` loop over the same memories, both
into fresh stores on the same disk, in the same run. Then, on memsync's stores: a no-change
cycle as a ratio to the first, and a cycle after 1% of the memories changed as a ratio to
the no-change one.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench._common import QUICK, report, timed

N = 1_000 if QUICK else 10_000
DIMS = 32


def mem0_config(root: Path) -> dict[str, Any]:
    return {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "collection_name": "m",
                "path": str(root / "qdrant"),
                "embedding_model_dims": DIMS,
            },
        },
        "history_db_path": str(root / "history.db"),
    }


def provider(name: str, root: Path) -> Any:
    from memsync.providers.mem0.oss import Mem0OssProvider

    return Mem0OssProvider(
        name, {"user_id": "alice"}, mem0_config=mem0_config(root), embedder="hash"
    )


def seed(root: Path) -> None:
    from tests.mem0_fixtures import mem0_payload

    source = provider("seed", root)
    source.open()
    memory = source.memory
    for start in range(0, N, 1000):
        count = min(1000, N - start)
        memory.vector_store.insert(
            vectors=[[1.0] + [0.0] * (DIMS - 1)] * count,
            payloads=[
                mem0_payload(f"memory {start + i}: likes tea, team {i % 97}", user_id="alice")
                for i in range(count)
            ],
            ids=[str(uuid.uuid4()) for _ in range(count)],
        )
    source.close()


def hand_written(source_root: Path, target_root: Path) -> None:
    """What a user would write: list everything, add each memory to the other store."""
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


def main() -> None:
    os.environ.setdefault("MEM0_TELEMETRY", "False")
    workdir = Path(tempfile.mkdtemp(prefix="memsync-bench-first-"))
    os.environ["MEMSYNC_HOME"] = str(workdir / "home")
    seed(workdir / "source")

    from memsync.config import parse_config
    from memsync.staging import StagingStore
    from memsync.sync.from_config import build_engine
    from memsync.sync.report import SyncOptions

    config = parse_config(
        '[sync]\nactive = "target"\n'
        '[providers.source]\ntype = "pmm-dir"\npath = "/unused"\n'
        '[providers.target]\ntype = "pmm-dir"\npath = "/unused"\n'
    )
    providers = {
        "source": provider("source", workdir / "source"),
        "target": provider("target", workdir / "by-memsync"),
    }

    def cycle() -> None:
        with StagingStore.open(workdir / "staging.db") as store:
            result = build_engine(config, store, providers).run_cycle(SyncOptions())
            assert result.exit_code == 0, result.as_dict()

    # Each side twice, alternating, into fresh stores; the best of each (disk noise is large).
    baselines, firsts = [], []
    for attempt in range(2):
        by_hand = workdir / f"by-hand{attempt}"
        baselines.append(timed(lambda: hand_written(workdir / "source", by_hand)))  # noqa: B023
        providers["target"] = provider("target", workdir / f"by-memsync{attempt}")
        (workdir / "staging.db").unlink(missing_ok=True)
        firsts.append(timed(cycle))
    baseline, first = min(baselines), min(firsts)
    quiet = min(timed(cycle) for _ in range(2))
    source = providers["source"]
    source.open()
    items = source.memory.get_all(filters={"user_id": "alice"}, top_k=1_000_000)["results"]
    for item in items[: N // 100]:
        source.memory.update(item["id"], item["memory"] + " (changed)")
    source.close()
    changed = timed(cycle)

    ratio = first / baseline
    report(
        f"first sync {N // 1000}k mem0->mem0 vs get_all+add script",
        ratio,
        "x",
        "<= 1.15x",
        ratio <= 1.15,
    )
    ratio = quiet / first
    report(f"no-change cycle vs first ({N // 1000}k mem0)", ratio, "x", "<= 0.1x", ratio <= 0.1)
    ratio = changed / quiet
    report(f"1% change cycle vs no-change ({N // 1000}k mem0)", ratio, "x", "<= 2x", ratio <= 2)
    print(
        f"# absolute: script {baseline:.1f}s, first {first:.1f}s, quiet {quiet:.2f}s, 1% {changed:.2f}s"
    )
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
