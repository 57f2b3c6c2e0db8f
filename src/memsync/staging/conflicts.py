"""Conflicts (``conflicts``): memories changed on two sides since memsync last reconciled them.

Reading and settling them by hand (`memsync conflicts`, `memsync resolve`, the status page)
lives here; the cycle's own writes (storing a conflict it found, closing one it applied) sit
in their own section of the same class.
"""

from __future__ import annotations

import json
import sqlite3
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

    @classmethod
    def from_row(cls, row: sqlite3.Row | tuple[Any, ...]) -> ConflictRow:
        return cls(row[0], row[1], row[2], row[3], row[4], row[5], json.loads(row[6]), *row[7:10])

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
        }


_COLUMNS_WAITING = (
    "SELECT id, link_id, run_id, policy, state, winner, versions, created_at, resolved_at, "
    "resolution FROM conflicts WHERE state != 'resolved' ORDER BY id"
)
_COLUMNS_ALL = (
    "SELECT id, link_id, run_id, policy, state, winner, versions, created_at, resolved_at, "
    "resolution FROM conflicts ORDER BY id"
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
            "resolved_at, resolution FROM conflicts WHERE id = ?",
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
