"""The staging store: a real SQLite file, private, migrated, and never mistaken for empty."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memsync.base.errors import StagingError
from memsync.base.records import Record
from memsync.staging import StagingStore
from memsync.staging import store as store_module
from memsync.staging.schema import LATEST, MIGRATIONS
from memsync.staging.store import _statements, record_row


def test_new_database_is_private_wal_and_migrated(tmp_path: Path) -> None:
    path = tmp_path / "state" / "staging.db"
    with StagingStore.open(path) as store:
        assert store.schema_version() == LATEST
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert store.conn.execute("PRAGMA busy_timeout").fetchone()[0] >= 5000
        tables = {
            r[0] for r in store.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
    assert {
        "providers",
        "records",
        "links",
        "changes",
        "outbox",
        "runs",
        "skipped",
        "cursors",
        "conflicts",
        "schema_migrations",
    } <= tables
    assert path.stat().st_mode & 0o777 == 0o600


def test_migrations_are_recorded_and_run_once(tmp_path: Path) -> None:
    path = tmp_path / "staging.db"
    StagingStore.open(path).close()
    with StagingStore.open(path) as store:
        rows = store.conn.execute("SELECT version FROM schema_migrations").fetchall()
    assert [r[0] for r in rows] == list(range(1, LATEST + 1))


def test_corrupt_database_is_an_error_with_a_way_out(tmp_path: Path) -> None:
    path = tmp_path / "staging.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StagingError, match="memsync repair"):
        StagingStore.open(path)
    assert path.read_bytes().startswith(b"this is not sqlite")  # never replaced by an empty one


def test_database_from_a_newer_memsync_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "staging.db"
    StagingStore.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES (999, 'x', 'future')")
    conn.commit()
    conn.close()
    with pytest.raises(StagingError, match="newer memsync"):
        StagingStore.open(path)


def test_an_sqlite_too_old_for_the_schema_is_said_before_anything_is_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module.sqlite3, "sqlite_version_info", (3, 22, 0))
    monkeypatch.setattr(store_module.sqlite3, "sqlite_version", "3.22.0")
    with pytest.raises(StagingError, match=r"SQLite is 3\.22\.0; .* needs SQLite 3\.31\.0"):
        StagingStore.open(tmp_path / "staging.db")
    assert not (tmp_path / "staging.db").exists()


def test_schema_13_keeps_every_provider_its_last_cycle_and_their_order(tmp_path: Path) -> None:
    """Schema 13 makes the providers table again (its cycle columns are STORED): every row,
    in the order status has always read them, and each cycle's figures as columns."""
    path = tmp_path / "staging.db"
    with sqlite3.connect(path, isolation_level=None) as conn:  # a database at schema 12
        conn.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT "
            "NOT NULL, description TEXT)"
        )
        for migration in MIGRATIONS:
            if migration.version < 13:
                for statement in _statements(migration.sql):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO schema_migrations VALUES (?, 'then', ?)",
                    (migration.version, migration.description),
                )
        rows = [
            ("team[user_id=zed]", '{"state": "ok", "added": 2, "complete": true, "run_id": 4}'),
            ("team[user_id=amy]", '{"state": "error", "error": "500", "run_id": 3}'),
            ("mem0", None),
            ("team[user_id=bob]", '{"state": "skipped", "listed": 5, "run_id": 3}'),
        ]
        conn.executemany(
            "INSERT INTO providers (name, type, identity, first_seen, last_cycle) "
            "VALUES (?, 'pmm-dir', ?, 'then', ?)",
            [(name, f"id {name}", cycle) for name, cycle in rows],
        )
    with StagingStore.open(path) as store:
        assert store.schema_version() == LATEST
        assert [tuple(c) for c in store.providers.last_cycles()] == rows
        assert [store.providers.identity(name) for name, _ in rows] == [
            f"id {name}" for name, _ in rows
        ]
        groups = {g.state: g for g in store.providers.cycle_groups(["team"])}
    assert sorted(groups) == ["ok", "skipped"]  # the error is read whole, not summed
    assert (groups["ok"].sums["added"], groups["ok"].complete, groups["ok"].run_ids) == (
        2,
        True,
        (4,),
    )
    assert (groups["skipped"].sums["listed"], groups["skipped"].complete) == (5, False)


def test_upsert_replaces_by_provider_and_id(tmp_path: Path) -> None:
    with StagingStore.open(tmp_path / "s.db") as store:
        with store.transaction():
            store.upsert_records([record_row("p", "l1", Record(id="1", content="old"), 1)])
        with store.transaction():
            store.upsert_records(
                [record_row("p", "l1", Record(id="1", content="new", metadata={"k": 1}), 2)]
            )
        (record,) = list(store.iter_records("p"))
    assert (record.content, record.metadata) == ("new", {"k": 1})


def test_a_failed_transaction_leaves_nothing_behind(tmp_path: Path) -> None:
    with StagingStore.open(tmp_path / "s.db") as store:
        with pytest.raises(RuntimeError), store.transaction():
            store.upsert_records([record_row("p", "l1", Record(id="1", content="x"), 1)])
            raise RuntimeError("crash mid-page")
        assert store.count_records("p") == 0
