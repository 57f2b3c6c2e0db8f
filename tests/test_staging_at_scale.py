"""What every hinted cycle and every look at status asks of staging is found through an index,
never by reading the tables a first sync filled (issue 40, at 5,000 users: superseding the
unfinished actions of earlier runs was half of each hinted cycle, and the newest discovery
parsed a 6 MB report at each look of status and /metrics).

SQLite's own ``EXPLAIN QUERY PLAN`` says how it runs each statement, on a real staging store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memsync.staging import StagingStore
from memsync.staging import store as store_module
from memsync.staging.schema import LATEST, MIGRATIONS

NOW = "2026-12-04T10:00:00.000Z"


def plan(store: StagingStore, sql: str, *args: object) -> str:
    rows = store.conn.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
    return " / ".join(str(row[3]) for row in rows)


def test_a_cycles_and_a_looks_statements_search_an_index(tmp_path: Path) -> None:
    with StagingStore.open(tmp_path / "staging.db") as store:
        supersede = plan(
            store,
            "UPDATE outbox SET state = 'superseded', updated_at = ? "
            "WHERE state IN ('pending', 'running') AND run_id < ?",
            NOW,
            9,
        )
        assert "USING INDEX outbox_unfinished" in supersede, supersede
        hidden = plan(
            store,
            "SELECT r.provider, r.scope_key, COUNT(*) FROM records r "
            "WHERE r.expiration_date IS NOT NULL "
            "OR json_extract(r.provenance, '$.lifecycle_state') IS NOT NULL "
            "OR json_extract(r.provenance, '$.replaced_by') IS NOT NULL GROUP BY 1, 2",
        )
        assert "records_maybe_hidden" in hidden, hidden
        discovery = plan(
            store,
            "SELECT id, finished_at, discovery FROM runs WHERE discovery IS NOT NULL "
            "ORDER BY id DESC LIMIT 1",
        )
        assert "runs_with_discovery" in discovery, discovery


def test_the_newest_discovery_is_kept_apart_and_found_in_runs_from_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "staging.db"
    found = {"server": {"state": "ok", "scopes": 3, "complete": True}}
    with monkeypatch.context() as before:  # a database of the release before: no column yet
        before.setattr(store_module, "MIGRATIONS", tuple(m for m in MIGRATIONS if m.version < 11))
        before.setattr(store_module, "LATEST", 10)
        with StagingStore.open(path) as store, store.transaction():
            for discovery in (found, None):  # a full pass, then a hinted cycle that looked not
                run = store.runs.start(NOW, 1)
                summary = {"run_id": run} | ({"discovery": discovery} if discovery else {})
                store.conn.execute(
                    "UPDATE runs SET finished_at = ?, status = 'ok', summary = ? WHERE id = ?",
                    (NOW, json.dumps(summary), run),
                )
    with StagingStore.open(path) as store:  # migrated
        assert store.schema_version() == LATEST
        newest = store.runs.latest_discovery()
        assert newest is not None and json.loads(newest[2]) == found
        with store.transaction():
            run = store.runs.start(NOW, 1)
            later = {"server": {"state": "partial", "scopes": 4, "complete": False}}
            store.runs.finish(run, NOW, "ok", "{}", json.dumps(later))
        newest = store.runs.latest_discovery()
        assert newest is not None and newest[0] == run and json.loads(newest[2]) == later
