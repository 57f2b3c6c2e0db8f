"""Conflicts (``conflicts``): memories changed on two sides since memsync last reconciled them.

Reading and settling them by hand (`memsync conflicts`, `memsync resolve`, the status page)
lives here; the cycle's own writes (storing a conflict it found, closing one it applied) sit
in their own section of the same class.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ConflictRow:
    """One conflict; ``versions`` maps each provider to the version it held."""

    id: int
    link_id: str
    run_id: int | None
    policy: str
    state: str
    winner: str | None
    versions: dict[str, Any]
    created_at: str
    resolved_at: str | None
    resolution: str | None
    rolled_back: str | None = None  # a rollback: the store that went back in time

    @classmethod
    def from_row(cls, row: sqlite3.Row | tuple[Any, ...]) -> ConflictRow:
        return cls(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6]), *row[7:11])

    def as_dict(self) -> dict[str, Any]:
        """The conflict as `memsync conflicts --json` prints it (columns in table order)."""
        return {
            "id": self.id,
            "link_id": self.link_id,
            "run_id": self.run_id,
            "policy": self.policy,
            "state": self.state,
            "winner": self.winner,
            "versions": self.versions,
            "created_at": self.created_at,
            "resolved_at": self.resolved_at,
            "resolution": self.resolution,
            "rolled_back": self.rolled_back,
        }


_COLUMNS_WAITING = (
    "SELECT id, link_id, run_id, policy, state, winner, versions, created_at, resolved_at, "
    "resolution, rolled_back FROM conflicts WHERE state != 'resolved' ORDER BY id"
)
_COLUMNS_ALL = (
    "SELECT id, link_id, run_id, policy, state, winner, versions, created_at, resolved_at, "
    "resolution, rolled_back FROM conflicts ORDER BY id"
)


class Conflicts:
    """The ``conflicts`` table."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # reading and resolving by hand (command line, status page) -----------------------------

    def waiting(self) -> list[ConflictRow]:
        """Conflicts not settled yet (open, or chosen and waiting for a cycle), oldest first."""
        return [ConflictRow.from_row(row) for row in self.conn.execute(_COLUMNS_WAITING)]

    def every(self) -> list[ConflictRow]:
        """Every conflict ever recorded, settled ones too, oldest first."""
        return [ConflictRow.from_row(row) for row in self.conn.execute(_COLUMNS_ALL)]

    def get(self, conflict_id: int) -> ConflictRow | None:
        row = self.conn.execute(
            "SELECT id, link_id, run_id, policy, state, winner, versions, created_at, "
            "resolved_at, resolution, rolled_back FROM conflicts WHERE id = ?",
            (conflict_id,),
        ).fetchone()
        return None if row is None else ConflictRow.from_row(row)

    def count_open(self) -> int:
        row = self.conn.execute("SELECT COUNT(*) FROM conflicts WHERE state = 'open'").fetchone()
        return int(row[0])

    def choose_winner(self, conflict_id: int, keep: str, resolution: str) -> None:
        """Mark the conflict resolving with KEEP's version: the next cycle writes it."""
        self.conn.execute(
            "UPDATE conflicts SET state = 'resolving', winner = ?, resolution = ? WHERE id = ?",
            (keep, resolution, conflict_id),
        )

    # the cycle's side ------------------------------------------------------------

    def resolving(self) -> set[str]:
        """Memories whose conflict the user resolved, waiting for the next plan."""
        return {
            row[0]
            for row in self.conn.execute("SELECT link_id FROM conflicts WHERE state = 'resolving'")
        }

    def chosen_winners(self, link_ids: Sequence[str]) -> dict[str, str]:
        """The winner the user chose, per memory among these whose conflict is resolving."""
        return {
            row[0]: row[1]
            for row in self.conn.execute(
                "SELECT link_id, winner FROM conflicts WHERE state = 'resolving' "
                "AND link_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(link_ids)),),
            )
        }

    def open_id(self, link_id: str) -> int | None:
        """The id of the memory's open conflict, if it has one."""
        row = self.conn.execute(
            "SELECT id FROM conflicts WHERE link_id = ? AND state = 'open'", (link_id,)
        ).fetchone()
        return int(row[0]) if row is not None else None

    def add(
        self,
        link_id: str,
        run_id: int,
        policy: str,
        winner: str | None,
        versions: str,
        now: str,
        rolled_back: str | None = None,
    ) -> int:
        """Record a conflict: open (no winner) or resolved by ``policy``; its id.
        ``rolled_back``: the store that went back in time (a rollback, always open)."""
        cursor = self.conn.execute(
            "INSERT INTO conflicts (link_id, run_id, policy, state, winner, versions, created_at, "
            "resolved_at, resolution, rolled_back) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                link_id,
                run_id,
                policy,
                "open" if winner is None else "resolved",
                winner,
                versions,
                now,
                now if winner else None,
                "policy " + policy if winner else None,
                rolled_back,
            ),
        )
        return int(cursor.lastrowid or 0)

    def resolving_rolled_back(
        self,
        link_id: str,
        run_id: int | None,
        policy: str,
        keep: str,
        versions: str,
        rolled_back: str,
        now: str,
    ) -> None:
        """A rollback the user settled in bulk before any cycle recorded it as a conflict:
        recorded as chosen (resolving), the next cycle writes KEEP's version."""
        self.conn.execute(
            "INSERT INTO conflicts (link_id, run_id, policy, state, winner, versions, created_at, "
            "resolution, rolled_back) VALUES (?, ?, ?, 'resolving', ?, ?, ?, ?, ?)",
            (link_id, run_id, policy, keep, versions, now, f"kept {keep} by hand", rolled_back),
        )

    def mark_resolved(self, link_id: str, now: str) -> None:
        """The plan carried out the user's resolution of this memory's conflict."""
        self.conn.execute(
            "UPDATE conflicts SET state = 'resolved', resolved_at = ? "
            "WHERE link_id = ? AND state = 'resolving'",
            (now, link_id),
        )
