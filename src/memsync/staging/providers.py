"""What memsync keeps per provider (``providers``, ``cursors``): the store it is, its last
cycle, and where its last incremental listing ended."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


class Cursor(NamedTuple):
    """Where the provider's last complete listing ended, and when it last listed everything."""

    cursor: str | None
    full_scan_at: str | None


class LastCycle(NamedTuple):
    name: str
    summary: str | None  # JSON, as the engine saved it


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
