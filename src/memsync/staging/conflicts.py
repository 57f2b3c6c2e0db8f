"""Conflicts: two providers changed one memory differently; settled by policy or left open."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

# --- engine side: conflicts found by a plan, and resolutions it carries out -----------------


class Conflicts:
    """The conflicts table (``store.conflicts``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

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
    ) -> int:
        """Record a conflict: open (no winner) or resolved by ``policy``; its id."""
        cursor = self.conn.execute(
            "INSERT INTO conflicts (link_id, run_id, policy, state, winner, versions, created_at, "
            "resolved_at, resolution) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            ),
        )
        return int(cursor.lastrowid or 0)

    def mark_resolved(self, link_id: str, now: str) -> None:
        """The plan carried out the user's resolution of this memory's conflict."""
        self.conn.execute(
            "UPDATE conflicts SET state = 'resolved', resolved_at = ? "
            "WHERE link_id = ? AND state = 'resolving'",
            (now, link_id),
        )
