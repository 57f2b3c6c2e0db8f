"""The dirty set: memories where some provider differs from what memsync last reconciled.

Found in SQL by comparing the mirror (``records``), the bases (``links``) and the agreed
versions (``link_state``): state, not events, so a crash or a dry run never makes a change
invisible to the next cycle. The set lives in a temporary table for the rest of the cycle.

A scoped cycle (one scope among others in the same store) looks only at rows of its own
providers: their names go to ``temp.cycle_providers`` and each query has a fixed variant
that joins it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

_SETUP = (
    "CREATE TEMP TABLE IF NOT EXISTS dirty (link_id TEXT PRIMARY KEY)",
    "CREATE TEMP TABLE IF NOT EXISTS cycle_providers (name TEXT PRIMARY KEY)",
    "DELETE FROM temp.dirty",
    "DELETE FROM temp.cycle_providers",
)

# Each query, for every provider and for this cycle's own (scoped).
_DIRTY_EVERYWHERE = (
    # a record that is new here, or changed since its base
    "INSERT OR IGNORE INTO temp.dirty SELECT r.link_id FROM records r LEFT JOIN links b "
    "ON b.link_id = r.link_id AND b.provider = r.provider "
    "WHERE (b.fingerprint IS NULL OR b.fingerprint != r.fingerprint)",
    # a base whose record is gone
    "INSERT OR IGNORE INTO temp.dirty SELECT b.link_id FROM links b "
    "WHERE NOT EXISTS (SELECT 1 FROM records r INDEXED BY records_by_link "
    "WHERE r.provider = b.provider AND r.link_id = b.link_id)",
    # a base behind the agreed version (an earlier write failed)
    "INSERT OR IGNORE INTO temp.dirty SELECT b.link_id FROM links b "
    "JOIN link_state s ON s.link_id = b.link_id "
    "WHERE s.deleted = 0 AND b.fingerprint != s.fingerprint",
    # a deleted memory some provider still holds
    "INSERT OR IGNORE INTO temp.dirty SELECT s.link_id FROM link_state s "
    "JOIN records r ON r.link_id = s.link_id WHERE s.deleted = 1",
    # a conflict the user resolved
    "INSERT OR IGNORE INTO temp.dirty SELECT link_id FROM conflicts WHERE state = 'resolving'",
    # two records of one memory in one provider (a duplicate to clean up)
    "INSERT OR IGNORE INTO temp.dirty SELECT link_id FROM records r "
    "GROUP BY provider, link_id HAVING COUNT(*) > 1",
)
_DIRTY_OWN = (
    "INSERT OR IGNORE INTO temp.dirty SELECT r.link_id FROM records r LEFT JOIN links b "
    "ON b.link_id = r.link_id AND b.provider = r.provider "
    "WHERE (b.fingerprint IS NULL OR b.fingerprint != r.fingerprint) "
    "AND r.provider IN (SELECT name FROM temp.cycle_providers)",
    "INSERT OR IGNORE INTO temp.dirty SELECT b.link_id FROM links b "
    "WHERE NOT EXISTS (SELECT 1 FROM records r INDEXED BY records_by_link "
    "WHERE r.provider = b.provider AND r.link_id = b.link_id) "
    "AND b.provider IN (SELECT name FROM temp.cycle_providers)",
    "INSERT OR IGNORE INTO temp.dirty SELECT b.link_id FROM links b "
    "JOIN link_state s ON s.link_id = b.link_id "
    "WHERE s.deleted = 0 AND b.fingerprint != s.fingerprint "
    "AND b.provider IN (SELECT name FROM temp.cycle_providers)",
    "INSERT OR IGNORE INTO temp.dirty SELECT s.link_id FROM link_state s "
    "JOIN records r ON r.link_id = s.link_id WHERE s.deleted = 1 "
    "AND r.provider IN (SELECT name FROM temp.cycle_providers)",
    "INSERT OR IGNORE INTO temp.dirty SELECT link_id FROM conflicts WHERE state = 'resolving' "
    "AND link_id IN (SELECT o.link_id FROM links o "
    "WHERE o.provider IN (SELECT name FROM temp.cycle_providers) "
    "UNION SELECT o.link_id FROM records o "
    "WHERE o.provider IN (SELECT name FROM temp.cycle_providers))",
    "INSERT OR IGNORE INTO temp.dirty SELECT link_id FROM records r "
    "WHERE r.provider IN (SELECT name FROM temp.cycle_providers) "
    "GROUP BY provider, link_id HAVING COUNT(*) > 1",
)
# an agreed memory a receiver has no base for (never written there, or its write failed)
_MISSING_IN_RECEIVER = (
    "INSERT OR IGNORE INTO temp.dirty SELECT s.link_id FROM link_state s WHERE s.deleted = 0 "
    "AND NOT EXISTS (SELECT 1 FROM links b WHERE b.link_id = s.link_id AND b.provider = ?)"
)
_MISSING_IN_RECEIVER_OWN = (
    "INSERT OR IGNORE INTO temp.dirty SELECT s.link_id FROM links o "
    "JOIN link_state s ON s.link_id = o.link_id "
    "WHERE o.provider IN (SELECT name FROM temp.cycle_providers) AND s.deleted = 0 "
    "AND NOT EXISTS (SELECT 1 FROM links b WHERE b.link_id = s.link_id AND b.provider = ?)"
)

# a memory one of whose records a provider's exclude covers is never planned (memsync.base.exclude)
_NEVER_EXCLUDED = "DELETE FROM temp.dirty WHERE link_id IN (SELECT link_id FROM excluded_records)"


class DirtySet:
    """The dirty set of the cycle under way (``store.dirty``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def mark(self, receivers: Sequence[str], *, own: Sequence[str] | None = None) -> int:
        """Find every dirty memory; ``own``: only rows of these providers (a scoped cycle).

        Returns how many memories are dirty.
        """
        conn = self.conn
        for statement in _SETUP:
            conn.execute(statement)
        if own is None:
            queries, missing = _DIRTY_EVERYWHERE, _MISSING_IN_RECEIVER
        else:
            conn.executemany(
                "INSERT OR IGNORE INTO temp.cycle_providers (name) VALUES (?)",
                [(name,) for name in own],
            )
            queries, missing = _DIRTY_OWN, _MISSING_IN_RECEIVER_OWN
        for query in queries:
            conn.execute(query)
        for receiver in receivers:
            conn.execute(missing, (receiver,))
        conn.execute(_NEVER_EXCLUDED)
        return int(conn.execute("SELECT COUNT(*) FROM temp.dirty").fetchone()[0])

    def after(self, last: str, limit: int) -> list[str]:
        """The next ``limit`` dirty memories after ``last``, in key order."""
        return [
            row[0]
            for row in self.conn.execute(
                "SELECT link_id FROM temp.dirty WHERE link_id > ? ORDER BY link_id LIMIT ?",
                (last, limit),
            )
        ]
