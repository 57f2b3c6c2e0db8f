"""Scopes staging has seen: the scoped provider names (``mem0[user_id=alice]``) it mirrored."""

from __future__ import annotations

import sqlite3


class ScopesSeen:
    """Scopes known from earlier cycles (``store.scopes``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def scoped_provider_names(self) -> list[str]:
        """Names of mirrored providers bound to a scope (they hold ``[...]``)."""
        return [
            row[0] for row in self.conn.execute("SELECT name FROM providers WHERE name LIKE '%[%]'")
        ]
