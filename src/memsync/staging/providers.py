"""What memsync keeps per provider (``providers``, ``cursors``): the store it is, its last
cycle, and where its last incremental listing ended."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from typing import NamedTuple

# A cycle summary's counts that a team's fold sums, kept as ``cycle_<name>`` columns (schema 13)
SUMMED = ("added", "changed", "removed", "listed", "written", "failed", "excluded")
# Its times of which a fold keeps the earliest (the scope furthest behind)
EARLIEST = ("synced_at", "unsynced_since", "busy_since")


class Cursor(NamedTuple):
    """Where the provider's last complete listing ended, and when it last listed everything."""

    cursor: str | None
    full_scan_at: str | None


class LastCycle(NamedTuple):
    name: str
    summary: str | None  # JSON, as the engine saved it


class FoldedLastCycle(NamedTuple):
    """A provider's last cycle, or None where ``cycle_groups`` sums it (``summed``)."""

    name: str
    summary: str | None
    summed: bool


class CycleGroup(NamedTuple):
    """The plain last cycles (ok or skipped, no copies kept out) of one configured provider's
    scopes in one state, summed: what folding each of them one by one would give."""

    base: str
    state: str
    cycles: int
    finished_at: str | None  # the latest
    complete: bool  # every one of them
    run_id: int  # the newest
    run_ids: tuple[int, ...]  # each run they were part of
    sums: dict[str, int]  # SUMMED
    earliest: dict[str, str]  # EARLIEST, where any has one
    outside: int | None  # the largest


class ProviderRegistry:
    """The ``providers`` and ``cursors`` tables."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def identity(self, name: str) -> str | None:
        """The identity (the store it points at) NAME was registered with; None if never."""
        row = self.conn.execute("SELECT identity FROM providers WHERE name = ?", (name,)).fetchone()
        return None if row is None else str(row[0])

    def register(self, name: str, type_: str, identity: str, now: str) -> None:
        """Record NAME, first seen NOW, or take its new type and identity."""
        self.conn.execute(
            "INSERT INTO providers (name, type, identity, first_seen) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET type = excluded.type, identity = excluded.identity",
            (name, type_, identity, now),
        )

    def save_last_cycle(self, name: str, summary: str) -> None:
        """Keep NAME's last cycle (JSON) for `memsync status`."""
        self.conn.execute("UPDATE providers SET last_cycle = ? WHERE name = ?", (summary, name))

    def last_cycle(self, name: str) -> str | None:
        """NAME's last cycle summary (JSON), or None if it never finished one."""
        row = self.conn.execute(
            "SELECT last_cycle FROM providers WHERE name = ?", (name,)
        ).fetchone()
        return None if row is None else row[0]

    def last_cycles(self) -> list[LastCycle]:
        """Every registered provider with its last cycle summary."""
        return [
            LastCycle(*row) for row in self.conn.execute("SELECT name, last_cycle FROM providers")
        ]

    def folded_last_cycles(self, bases: Collection[str]) -> list[FoldedLastCycle]:
        """Every registered provider with its last cycle (``last_cycles``), except that the
        plain cycles of BASES' scopes are left out, marked summed: ``cycle_groups`` sums them
        in SQL (at 5,000 users, parsing and folding 15,000 cycles took the page 170 ms)."""
        # A scoped name of BASES as status folds it into its provider (``_Folds.of``): the name
        # before the first "[" one of BASES, a scope between brackets.
        cursor = self.conn.execute(
            "SELECT name, CASE WHEN summed THEN NULL ELSE last_cycle END, summed FROM "
            "(SELECT name, last_cycle, COALESCE(cycle_plain, 0) AND instr(name, '[') > 1 "
            "AND name LIKE '%]' AND length(name) > instr(name, '[') + 1 "
            "AND substr(name, 1, instr(name, '[') - 1) IN (SELECT value FROM json_each(?)) "
            "AS summed FROM providers ORDER BY rowid)",
            (json.dumps(sorted(bases)),),
        )
        return [FoldedLastCycle(name, summary, bool(summed)) for name, summary, summed in cursor]

    def cycle_groups(self, bases: Collection[str]) -> list[CycleGroup]:
        """The plain last cycles of BASES' scopes, summed per configured provider and state."""
        # The columns in SUMMED's order, then EARLIEST's (schema 13 makes them)
        rows = self.conn.execute(
            "SELECT substr(name, 1, instr(name, '[') - 1) AS base, cycle_state, COUNT(*), "
            "MAX(cycle_finished_at), MIN(COALESCE(cycle_complete, 0) != 0), "
            "COALESCE(MAX(cycle_run_id), 0), GROUP_CONCAT(DISTINCT cycle_run_id), "
            "COALESCE(SUM(cycle_added), 0), COALESCE(SUM(cycle_changed), 0), "
            "COALESCE(SUM(cycle_removed), 0), COALESCE(SUM(cycle_listed), 0), "
            "COALESCE(SUM(cycle_written), 0), COALESCE(SUM(cycle_failed), 0), "
            "COALESCE(SUM(cycle_excluded), 0), MIN(NULLIF(cycle_synced_at, '')), "
            "MIN(NULLIF(cycle_unsynced_since, '')), MIN(NULLIF(cycle_busy_since, '')), "
            "MAX(cycle_outside) FROM providers WHERE cycle_plain AND instr(name, '[') > 1 "
            "AND name LIKE '%]' AND length(name) > instr(name, '[') + 1 "
            "AND substr(name, 1, instr(name, '[') - 1) IN (SELECT value FROM json_each(?)) "
            "GROUP BY base, cycle_state",
            (json.dumps(sorted(bases)),),
        ).fetchall()
        groups = []
        for row in rows:
            base, state, cycles, finished_at, complete, run_id, run_ids = row[:7]
            counts = row[7 : 7 + len(SUMMED)]
            times = row[7 + len(SUMMED) : -1]
            groups.append(
                CycleGroup(
                    base,
                    state,
                    cycles,
                    finished_at or None,
                    bool(complete),
                    int(run_id),
                    tuple(int(r) for r in str(run_ids or "").split(",") if r),
                    {key: int(n) for key, n in zip(SUMMED, counts, strict=True)},
                    {k: str(t) for k, t in zip(EARLIEST, times, strict=True) if t},
                    row[-1],
                )
            )
        return groups

    def scoped_names(self) -> list[str]:
        """Registered names of providers synced per scope (``name[scope]``)."""
        cursor = self.conn.execute("SELECT name FROM providers WHERE name LIKE '%[%]'")
        return [str(row[0]) for row in cursor]

    # cursors ------------------------------------------------------------------------------

    def cursor(self, name: str) -> Cursor:
        row = self.conn.execute(
            "SELECT cursor, full_scan_at FROM cursors WHERE provider = ?", (name,)
        ).fetchone()
        return Cursor(None, None) if row is None else Cursor(row[0], row[1])

    def save_cursor(
        self, name: str, cursor: str | None, full_scan_at: str | None, now: str
    ) -> None:
        """Keep where a complete listing ended; FULL_SCAN_AT None keeps the previous one."""
        self.conn.execute(
            "INSERT INTO cursors (provider, cursor, full_scan_at, updated_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (provider) DO UPDATE SET cursor = excluded.cursor, "
            "full_scan_at = COALESCE(excluded.full_scan_at, cursors.full_scan_at), "
            "updated_at = excluded.updated_at",
            (name, cursor, full_scan_at, now),
        )

    def forget_full_scan(self, name: str) -> None:
        """Make NAME's next listing a full one (its last full listing no longer counts)."""
        self.conn.execute("UPDATE cursors SET full_scan_at = NULL WHERE provider = ?", (name,))
