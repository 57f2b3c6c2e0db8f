"""The status page's poll on a large store: /api/status against the raw per-scope count.

The overview asks for `collect_status` every five seconds (the same data as `memsync status
--json`): per provider × scope counts, outbox counts, runs, conflicts, cutover readiness, as
JSON over HTTP. Its baseline is the one question it cannot avoid, the provider × scope
counts, asked of the same file with plain sqlite3 in the same run (from the index staging
keeps on provider and scope_key, as the poll reads them); the ratio is what everything else
the poll does costs on top.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

import httpx

from bench._common import QUICK, best_of, report
from memsync.base.paths import resolve_paths
from memsync.base.records import Record
from memsync.orchestration.ui.server import UiServer
from memsync.staging import StagingStore
from memsync.staging.store import record_row

N = 30_000 if QUICK else 150_000  # memories per provider
PROVIDERS = ("old", "new", "backup")
SCOPES = ("alice", "bob")


def build(home: Path) -> None:
    (home / "config").mkdir(parents=True)
    tables = "".join(
        f'\n[providers.{name}]\ntype = "pmm-dir"\npath = "{home / name}"\n' for name in PROVIDERS
    )
    (home / "config" / "config.toml").write_text(f'[sync]\nactive = "old"\n{tables}')
    with StagingStore.open(resolve_paths().database) as store, store.transaction() as conn:
        for name in PROVIDERS:
            store.upsert_records(
                record_row(
                    name,
                    f"app:{i}",
                    Record(
                        id=f"{i:08d}",
                        content=f"memory {i}: likes tea, team {i % 97}",
                        metadata={"n": i},
                        scope_key=SCOPES[i % 2],
                        version=f"h{i}",
                    ),
                    1,
                )
                for i in range(N)
            )
            conn.executemany(
                "INSERT INTO changes (run_id, at, provider, provider_id, link_id, kind) "
                "VALUES (1, '2026-12-01T00:00:00Z', ?, ?, ?, 'added')",
                ((name, f"{i:08d}", f"app:{i}") for i in range(N)),
            )
        conn.execute(
            "INSERT INTO verify_results (a, b, at, reconciled, journal_seq) "
            "VALUES ('old', 'new', '2026-12-01T00:00:00Z', 1, 1)"
        )


def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="memsync-bench-ui-"))
    os.environ["MEMSYNC_HOME"] = str(home)
    build(home)
    database = resolve_paths().database

    def scan() -> None:
        conn = sqlite3.connect(database)
        conn.execute("SELECT provider, scope_key, COUNT(*) FROM records GROUP BY 1, 2").fetchall()
        conn.close()

    server = UiServer(resolve_paths(), "127.0.0.1", 0)
    server.start_in_thread()
    client = httpx.Client(
        base_url=server.base_url, headers={"Authorization": f"token {server.token}"}, timeout=120
    )

    def poll() -> None:
        response = client.get("/api/status")
        assert response.json()["providers"]["old"]["records"] == N

    try:
        scan()
        poll()  # warm caches for both
        baseline = best_of(5, scan)
        measured = best_of(5, poll)
    finally:
        client.close()
        server.stop()
    ratio = measured / baseline
    size = f"{len(PROVIDERS) * N // 1000}k"
    report(f"status page poll, {size} records vs raw scope counts", ratio, "x", "<= 2x", ratio <= 2)
    report(f"status page poll, {size} records", measured * 1000, " ms", "< 5000 ms", measured < 5)


if __name__ == "__main__":
    main()
