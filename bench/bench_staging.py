"""Staging upsert of 100,000 records against raw sqlite3 executemany of the same rows.

Ours starts from Records (fingerprints, JSON columns, the upsert); the baseline inserts the
already-built row tuples with plain executemany, both in one transaction on a fresh file.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

from bench._common import QUICK, best_of, report
from memsync.base.records import Record
from memsync.staging import StagingStore
from memsync.staging.store import RECORD_COLUMNS, record_row

N = 20_000 if QUICK else 100_000


def records() -> list[Record]:
    return [
        Record(
            id=f"{i:08d}",
            content=f"memory {i}: likes tea, team {i % 97}",
            metadata={"topic": "drinks", "n": i},
            scope_key="alice",
            created_at="2026-01-01T00:00:00+00:00",
            version=f"h{i}",
        )
        for i in range(N)
    ]


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="memsync-bench-staging-"))
    data = records()
    rows = [record_row("mem0", f"mem0:{r.id}", r, 1) for r in data]
    counter = iter(range(1000))

    def ours() -> None:
        with StagingStore.open(workdir / f"ours{next(counter)}.db") as store, store.transaction():
            store.upsert_records(record_row("mem0", f"mem0:{r.id}", r, 1) for r in data)

    def raw() -> None:
        path = workdir / f"raw{next(counter)}.db"
        StagingStore.open(path).close()  # same schema, indexes and pragmas
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("BEGIN")
        marks = ",".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO records ({RECORD_COLUMNS}) VALUES ({marks})", rows)
        conn.execute("COMMIT")
        conn.close()

    baseline = best_of(3, raw)
    measured = best_of(3, ours)
    ratio = measured / baseline
    report(f"staging upsert {N // 1000}k vs executemany", ratio, "x", "<= 2x", ratio <= 2)


if __name__ == "__main__":
    main()
