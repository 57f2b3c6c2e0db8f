"""Rollbacks (``rollbacks``): memories a store went back in time on, and what memsync saw of
them before (from the change journal), to tell a rollback from an edit.

A row holds a memory out of the plan in that store until the user settles it (``memsync
resolve``); the cycle clears it when the user's choice is carried out or the store holds the
agreed version again.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple

_CHUNK = 500


class SeenVersion(NamedTuple):
    """One version of a record memsync saw in its provider (a listing or its own write)."""

    provider_id: str
    updated_at: str | None
    version: str | None


class Rollback(NamedTuple):
    """A memory a store went back in time on."""

    provider: str
    link_id: str
    provider_id: str
    seen_updated_at: str | None  # the newest updated_at memsync had seen of it there
    listed_updated_at: str | None  # what the store holds now; None: gone from it
    run_id: int | None
    at: str


class Rollbacks:
    """The ``rollbacks`` table, and the journal reads that find one."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # telling a rollback from an edit --------------------------------------------------------

    def seen_versions(self, provider: str, link_ids: Sequence[str]) -> list[SeenVersion]:
        """Every version of these memories the journal holds for PROVIDER."""
        found: list[SeenVersion] = []
        for start in range(0, len(link_ids), _CHUNK):
            cursor = self.conn.execute(
                "SELECT provider_id, updated_at, version FROM changes INDEXED BY changes_by_link "
                "WHERE link_id IN (SELECT value FROM json_each(?)) AND provider = ? "
                "AND kind != 'removed'",
                (json.dumps(list(link_ids[start : start + _CHUNK])), provider),
            )
            found.extend(SeenVersion(*row) for row in cursor)
        return found

    # the rows ---------------------------------------------------------------------------

    def flag(self, rows: Iterable[Rollback]) -> None:
        """Hold these memories as rolled back (a memory flagged again keeps its first row)."""
        self.conn.executemany(
            "INSERT INTO rollbacks (provider, link_id, provider_id, seen_updated_at, "
            "listed_updated_at, run_id, at) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (provider, link_id) DO UPDATE SET provider_id = excluded.provider_id, "
            "listed_updated_at = excluded.listed_updated_at",
            rows,
        )

    def flagged(self, link_ids: Sequence[str]) -> set[tuple[str, str]]:
        """(link id, provider) of the rolled-back among these memories."""
        cursor = self.conn.execute(
            "SELECT link_id, provider FROM rollbacks "
            "WHERE link_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(link_ids)),),
        )
        return {(str(row[0]), str(row[1])) for row in cursor}

    def any_in(self, provider: str) -> bool:
        row = self.conn.execute(
            "SELECT 1 FROM rollbacks WHERE provider = ? LIMIT 1", (provider,)
        ).fetchone()
        return row is not None

    def unsettled(self, provider: str) -> int:
        """How many memories PROVIDER went back in time on that the user has not settled."""
        row = self.conn.execute(
            "SELECT COUNT(*) FROM rollbacks r WHERE r.provider = ? AND NOT EXISTS "
            "(SELECT 1 FROM conflicts c WHERE c.link_id = r.link_id AND c.state = 'resolving')",
            (provider,),
        ).fetchone()
        return int(row[0])

    def of_provider(self, provider: str) -> list[Rollback]:
        cursor = self.conn.execute(
            "SELECT provider, link_id, provider_id, seen_updated_at, listed_updated_at, run_id, "
            "at FROM rollbacks WHERE provider = ? ORDER BY link_id",
            (provider,),
        )
        return [Rollback(*row) for row in cursor]

    def counts(self) -> dict[str, int]:
        """Provider -> how many memories it went back in time on (status)."""
        cursor = self.conn.execute("SELECT provider, COUNT(*) FROM rollbacks GROUP BY provider")
        return {str(row[0]): int(row[1]) for row in cursor}

    def clear(self, keys: Iterable[tuple[str, str]]) -> None:
        """Settled: (provider, link id) holds no rollback any more."""
        self.conn.executemany("DELETE FROM rollbacks WHERE provider = ? AND link_id = ?", keys)

    def forget_provider(self, provider: str) -> None:
        self.conn.execute("DELETE FROM rollbacks WHERE provider = ?", (provider,))
