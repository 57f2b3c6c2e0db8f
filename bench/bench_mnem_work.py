"""Work, not time: what the mnem provider reads and writes on a 10,000-node store.

Runs on the mnem test double (tests/doubles/mnem_double.py), whose ``stats`` counts node
objects read from storage and commits written. The baseline, measured in the same run, is a
full listing (every node read once). Then, from the cursor that listing returned:

- a cycle with no new commit: the provider compares the cursor with the head and reads none;
- cycles after an agent changed, added or forgot 100 nodes: ``diff(cursor, head)`` reads
  only those (a modified node twice: the SDK hands over its old and its new version);
- writing 10,000 records with ``write_many`` in batches: one commit per batch.

Prints ``name: value (target)``. Run: ``.venv/bin/python bench/bench_mnem_work.py``.
"""

from __future__ import annotations

import gc
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for tests.doubles

from tests.doubles import mnem_double as mnem

from memsync.base.records import Outgoing
from memsync.providers.base import Listing, WriteOp
from memsync.providers.mnem.provider import MnemProvider

N = 10_000
CHANGED = 100
BATCH = 500


def drain(listing: Listing) -> int:
    """Iterate a listing to the end; the number of records it carried."""
    return sum(len(page.records) for page in listing.pages())


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "agent"
        mnem.init(root)
        gc.collect()
        provider = MnemProvider("mnem", root, sdk=mnem, busy_timeout=0)
        provider.open()

        mnem.stats.reset()
        for start in range(0, N, BATCH):
            ops = [
                WriteOp(
                    "create",
                    f"k{i}",
                    item=Outgoing(
                        origin=f"mem0:{i:08d}",
                        content=f"memory number {i}",
                        metadata={"seq": i},
                        created_at="2024-01-01T00:00:00Z",
                        provenance={"source": "user", "user_id": "bench"},
                    ),
                )
                for i in range(start, start + BATCH)
            ]
            failed = [r.error for r in provider.write_many(ops) if r.error]
            assert not failed, failed[:3]
        commits = mnem.stats.commits_written
        batches = N // BATCH

        mnem.stats.reset()
        full = provider.listing()
        carried = drain(full)
        baseline = mnem.stats.nodes_read
        assert carried == N and full.complete

        mnem.stats.reset()
        idle = provider.listing(full.cursor)
        drain(idle)
        idle_reads = mnem.stats.nodes_read

        def after(change: str) -> tuple[int, int, str | None]:
            cursor = provider.store.head_commit()
            store = provider.store
            if change == "modified":
                items = [{"id": f"mem0:{i:08d}", "content": f"edited {i}"} for i in range(CHANGED)]
                mnem.agents.remember_many(store, items, author="agent")
            elif change == "added":
                items = [{"id": f"native-{i}", "content": f"new {i}"} for i in range(CHANGED)]
                mnem.agents.remember_many(store, items, author="agent")
            else:
                for i in range(CHANGED, 2 * CHANGED):
                    store.rm(f"mem0:{i:08d}")
                store.commit(f"forget {CHANGED} nodes", author="agent")
            del store
            mnem.stats.reset()
            listing = provider.listing(cursor)
            records = drain(listing)
            assert listing.mode == "incremental"
            assert records + len(listing.removed) == CHANGED
            return mnem.stats.nodes_read, records, listing.cursor

        modified_reads, _, _ = after("modified")
        added_reads, _, _ = after("added")
        forgotten_reads, _, _ = after("forgotten")
        provider.close()

    print(f"nodes read, full listing of {N} nodes (baseline): {baseline} (target {N})")
    print(f"nodes read, cycle with no new commit: {idle_reads} (target 0)")
    print(
        f"nodes read, cycle after {CHANGED} modified nodes: {modified_reads} "
        f"(target ~{CHANGED}, not {N}: old + new per node = {2 * CHANGED})"
    )
    print(f"nodes read, cycle after {CHANGED} added nodes: {added_reads} (target {CHANGED})")
    print(
        f"nodes read, cycle after {CHANGED} forgotten nodes: {forgotten_reads} (target {CHANGED})"
    )
    print(
        f"incremental / full reads after {CHANGED} modified: "
        f"{modified_reads / baseline:.3f} (target <= {2 * CHANGED / N:.3f})"
    )
    print(
        f"commits written for {N} records in batches of {BATCH}: {commits} "
        f"(target {batches}, one per batch)"
    )
    print(f"commits per batch: {commits / batches:.2f} (target 1.00)")


if __name__ == "__main__":
    main()
