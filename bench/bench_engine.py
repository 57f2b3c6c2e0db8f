"""The engine on 10,000 memories in in-process providers: steady-state cost against the first.

mem0 (both, generated) <-> mnem (active) -> backup (push). The first cycle copies every
memory twice; a no-change cycle should cost a fraction of it, and a cycle where 1% changed
not much more than a no-change one.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench._common import QUICK, report, timed
from bench.synthetic import SyntheticProvider
from memsync.config import parse_config
from memsync.engine.from_config import build_engine
from memsync.engine.report import SyncOptions
from memsync.providers.memory import MemoryProvider
from memsync.staging import StagingStore

N = 2_000 if QUICK else 10_000

CONFIG = """
[sync]
active = "mnem"
[providers.mem0]
type = "pmm-dir"
path = "/unused/mem0"
[providers.mnem]
type = "pmm-dir"
path = "/unused/mnem"
[providers.backup]
type = "pmm-dir"
path = "/unused/backup"
direction = "push"
"""


def main() -> None:
    db = Path(tempfile.mkdtemp(prefix="memsync-bench-engine-")) / "staging.db"
    config = parse_config(CONFIG)
    source = SyntheticProvider("mem0", N)
    providers = {
        "mem0": source,
        "mnem": MemoryProvider("mnem", client_ids=True, family="mnem", page_size=1000),
        "backup": MemoryProvider("backup", client_ids=True, family="pmm", page_size=1000),
    }

    def cycle() -> None:
        with StagingStore.open(db) as store:
            report_ = build_engine(config, store, providers).run_cycle(SyncOptions())  # type: ignore[arg-type]
            assert report_.exit_code == 0, report_.as_dict()

    first = timed(cycle)
    quiet = min(timed(cycle) for _ in range(3))
    source.edited = set(range(0, N, 100))  # 1% changed
    changed = timed(cycle)
    assert (
        sum("(edited)" in r.content for r in providers["backup"].store.records.values()) == N // 100
    )
    ratio = quiet / first
    report(f"engine no-change cycle vs first ({N // 1000}k)", ratio, "x", "<= 0.2x", ratio <= 0.2)
    ratio = changed / quiet
    report(f"engine 1% change cycle vs no-change ({N // 1000}k)", ratio, "x", "<= 2x", ratio <= 2)


if __name__ == "__main__":
    main()
