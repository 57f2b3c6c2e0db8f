"""Closed sets are enforced by SQLite itself (migration 5), and upgrading to it loses nothing."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memsync.base.errors import StagingError
from memsync.engine.conflicts import choose_winner
from memsync.engine.verify import VerifyReport, record_verify
from memsync.staging import StagingStore
from memsync.staging import store as store_module
from memsync.staging.schema import LATEST, MIGRATIONS
from tests.engine_helpers import World

FIXTURES = Path(__file__).parent / "fixtures"
# The migration that adds the CHECK constraints (found by what it says, not by its number).
CHECKED = next(m.version for m in MIGRATIONS if m.description.startswith("CHECK constraints"))


def snapshot(path: Path) -> dict[str, Any]:
    """Every row of every table (as column -> value), the AUTOINCREMENT high-water marks and
    the indexes."""
    conn = sqlite3.connect(path)
    try:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT IN ('sqlite_sequence', 'schema_migrations')"
            )
        ]
        rows = {}
        for table in tables:
            cursor = conn.execute(f"SELECT * FROM {table}")
            names = [d[0] for d in cursor.description]
            rows[table] = sorted(
                (dict(zip(names, row, strict=True)) for row in cursor), key=lambda r: repr(r)
            )
        return {
            "rows": rows,
            "sequence": dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall()),
            "indexes": set(
                conn.execute(
                    "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' "
                    "AND sql IS NOT NULL"
                ).fetchall()
            ),
        }
    finally:
        conn.close()


def test_an_upgraded_v1_database_keeps_every_row(tmp_path: Path) -> None:
    db = tmp_path / "staging.db"
    shutil.copy(FIXTURES / "v1_staging.db", db)
    before = snapshot(db)
    with StagingStore.open(db) as store:
        assert store.schema_version() == LATEST
        assert store.check_integrity() == "ok"
    after = snapshot(db)
    assert before["rows"]["outbox"] and before["rows"]["runs"] and before["rows"]["link_state"]
    for table, rows in before["rows"].items():
        # Columns added since schema 1 are new; migration 2 forgets the records' version
        # tokens on purpose (the next mirror re-reads each text exactly). The rest is kept.
        kept = [c for c in rows[0] if (table, c) != ("records", "version")] if rows else []
        assert [{c: r[c] for c in kept} for r in after["rows"][table]] == [
            {c: r[c] for c in kept} for r in rows
        ], table
    assert after["sequence"] == before["sequence"]
    assert before["indexes"] <= after["indexes"]


def written_before_the_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A staging database one schema before the checks holding what today's engine wrote:
    creates, updates and a delete replayed, a conflict chosen by hand and one left open,
    verify results both ways. Today's engine needs today's schema (migrations after the
    checks add tables it uses), so it writes a current database whose rows are then copied,
    column for column, into one made by the migrations before the checks."""
    world = World(tmp_path, {"mem0": "both", "mnem": "both"}, "mnem", conflict="error")
    mem0 = world.providers["mem0"]
    kept, edited, dropped = (mem0.app_add(t) for t in ("likes tea", "likes jazz", "likes rain"))
    assert world.sync().exit_code == 0
    mem0.app_edit(edited, "likes jazz a lot")
    mem0.delete(dropped)
    assert world.sync().exit_code == 0
    for text, when in (("likes green tea", "10"), ("likes black tea", "11")):
        mem0.app_edit(kept, text, when=f"2030-01-01T{when}:00:00Z")
        mnem_id = next(
            k for k, r in world.stores["mnem"].records.items() if "tea" in r.content.lower()
        )
        world.providers["mnem"].app_edit(mnem_id, text.upper(), when=f"2030-01-01T{when}:30:00Z")
        assert world.sync().exit_code == 1  # an open conflict (policy "error")
        if when == "10":
            with StagingStore.open(world.db_path) as store:
                choose_winner(store, store.conflicts.waiting()[0].id, "mnem")
            assert world.sync().exit_code == 0
    with StagingStore.open(world.db_path) as store:
        record_verify(store, "mem0", "mnem", VerifyReport("mem0", "mnem"))
        record_verify(store, "mem0", "mnem", None, "the listing of mem0 was partial")
        # The outbox forgets finished actions: the newest id is gone, its number stays taken.
        store.conn.execute("DELETE FROM outbox WHERE id = (SELECT MAX(id) FROM outbox)")
    _as_schema_before_the_checks(world.db_path, monkeypatch)
    return world


def _as_schema_before_the_checks(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Replace the database at PATH by one of the schema before the checks, same rows."""
    old = path.with_name("before-the-checks.db")
    with monkeypatch.context() as patch:
        patch.setattr(
            store_module, "MIGRATIONS", tuple(m for m in MIGRATIONS if m.version < CHECKED)
        )
        patch.setattr(store_module, "LATEST", CHECKED - 1)
        StagingStore.open(old).close()
    conn = sqlite3.connect(old)
    try:
        conn.execute("ATTACH DATABASE ? AS today", (str(path),))
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT IN ('sqlite_sequence', 'schema_migrations')"
            )
        ]
        for table in tables:
            columns = ", ".join(r[1] for r in conn.execute(f"PRAGMA main.table_info({table})"))
            conn.execute(
                f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM today.{table}"
            )
        conn.execute("DELETE FROM main.sqlite_sequence")
        conn.execute("INSERT INTO main.sqlite_sequence SELECT * FROM today.sqlite_sequence")
        conn.commit()
        conn.execute("DETACH DATABASE today")
    finally:
        conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    old.rename(path)


def kept(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """AFTER as BEFORE's tables and columns: what later migrations add is new, not kept."""
    rows = {
        table: sorted(
            ({c: row[c] for c in (rows[0] if rows else {})} for row in after["rows"][table]),
            key=lambda r: repr(r),
        )
        for table, rows in before["rows"].items()
    }
    return {**after, "rows": rows, "indexes": after["indexes"] & before["indexes"]}


def test_a_database_written_by_todays_code_keeps_every_row_and_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = written_before_the_checks(tmp_path, monkeypatch)
    before = snapshot(world.db_path)
    outbox = before["rows"]["outbox"]
    assert {row["kind"] for row in outbox} == {"create", "update", "delete"}
    assert {row["state"] for row in before["rows"]["conflicts"]} == {"resolved", "open"}
    assert {row["status"] for row in before["rows"]["runs"]} == {"ok", "attention"}
    assert {row["deleted"] for row in before["rows"]["link_state"]} == {0, 1}
    assert {row["reconciled"] for row in before["rows"]["verify_results"]} == {0, 1}
    assert before["sequence"]["outbox"] > max(row["id"] for row in outbox)

    with StagingStore.open(world.db_path) as store:
        assert store.schema_version() == LATEST
    after = snapshot(world.db_path)
    assert kept(before, after) == before
    assert before["indexes"] <= after["indexes"]
    assert all(not after["rows"][t] for t in set(after["rows"]) - set(before["rows"]))

    # And the upgraded database carries on: the open conflict is still there to resolve.
    with StagingStore.open(world.db_path) as store:
        (conflict,) = store.conflicts.waiting()
        choose_winner(store, conflict.id, "mem0")
    assert world.sync().exit_code == 0
    assert world.contents("mnem") == ["likes black tea", "likes jazz a lot"]
    with sqlite3.connect(world.db_path) as conn:  # the writes of that last cycle
        new_ids = [
            r[0]
            for r in conn.execute("SELECT id FROM outbox WHERE run_id = (SELECT MAX(id) FROM runs)")
        ]
    assert new_ids and min(new_ids) > before["sequence"]["outbox"]  # no id handed out twice


def test_a_failed_upgrade_leaves_the_database_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = written_before_the_checks(tmp_path, monkeypatch)
    with sqlite3.connect(world.db_path) as conn:  # a value no memsync writes
        conn.execute("UPDATE runs SET status = 'exploded' WHERE id = 1")
    before = snapshot(world.db_path)
    with pytest.raises(StagingError, match="memsync repair"):
        StagingStore.open(world.db_path)
    assert snapshot(world.db_path) == before
    with sqlite3.connect(world.db_path) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == (
            CHECKED - 1
        )


# Each closed set: table, column, every value memsync writes, one it never does, and the other
# columns a row needs.
CLOSED_SETS = [
    (
        "outbox",
        "kind",
        ["create", "update", "delete"],
        "upsert",
        {"run_id": 1, "link_id": "l", "provider": "p", "created_at": "t", "updated_at": "t"},
    ),
    (
        "outbox",
        "state",
        ["pending", "running", "done", "failed", "dead", "superseded"],
        "lost",
        {
            "run_id": 1,
            "link_id": "l",
            "provider": "p",
            "kind": "create",
            "created_at": "t",
            "updated_at": "t",
        },
    ),
    (
        "conflicts",
        "policy",
        ["error", "active", "newest", "keep-both"],
        "oldest",
        {"link_id": "l", "versions": "{}", "created_at": "t"},
    ),
    (
        "conflicts",
        "state",
        ["open", "resolving", "resolved"],
        "closed",
        {"link_id": "l", "policy": "newest", "versions": "{}", "created_at": "t"},
    ),
    (
        "runs",
        "status",
        ["running", "ok", "attention", "interrupted"],
        "failed",
        {"started_at": "t"},
    ),
    ("link_state", "deleted", [0, 1], 2, {"link_id": "l", "updated_at": "t"}),
    ("verify_results", "reconciled", [0, 1], 2, {"a": "a", "b": "b", "at": "t"}),
    (
        "changes",
        "kind",
        ["added", "changed", "removed", "written"],
        "adopted",
        {"at": "t", "provider": "p", "provider_id": "i", "link_id": "l"},
    ),
]


@pytest.mark.parametrize(
    ("table", "column", "allowed", "refused", "others"),
    CLOSED_SETS,
    ids=[f"{c[0]}.{c[1]}" for c in CLOSED_SETS],
)
def test_sqlite_refuses_a_value_outside_a_closed_set(
    tmp_path: Path,
    table: str,
    column: str,
    allowed: list[object],
    refused: object,
    others: dict[str, object],
) -> None:
    with StagingStore.open(tmp_path / "staging.db") as store:
        names = ", ".join([*others, column])
        marks = ", ".join("?" * (len(others) + 1))
        insert = f"INSERT INTO {table} ({names}) VALUES ({marks})"
        for number, value in enumerate(allowed):
            row = {**others, "link_id": f"l{number}"} if "link_id" in others else others
            store.conn.execute(insert, (*row.values(), value))
        with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
            store.conn.execute(insert, (*others.values(), refused))
        held = store.conn.execute(f"SELECT {column} FROM {table}").fetchall()
    assert sorted(str(row[0]) for row in held) == sorted(str(value) for value in allowed)
