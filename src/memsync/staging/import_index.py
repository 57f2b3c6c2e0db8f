"""A scratch SQLite file answering an import's duplicate questions about its target.

Not the staging database: a private temporary file (removed on close) holding the target's
ids, origins and content hashes per scope, so neither side of an import has to fit in memory.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable


class ImportIndex:
    """The target's ids (and origins) per scope, and its unclaimed copies of each text."""

    def __init__(self) -> None:
        self.db = sqlite3.connect("")  # "" = a private temporary file, removed on close
        self.db.execute("CREATE TABLE ids (scope TEXT, key TEXT, provider_id TEXT)")
        # Copies of each text the target holds that no file record has claimed yet.
        self.db.execute("CREATE TABLE hashes (scope TEXT, hash TEXT, copies INTEGER)")

    def add_page(
        self, ids: Iterable[tuple[str, str, str]], texts: Iterable[tuple[str, str]]
    ) -> None:
        """One page of the target: (scope, id or origin, provider id) and (scope, text hash)."""
        self.db.executemany("INSERT INTO ids VALUES (?, ?, ?)", ids)
        self.db.executemany("INSERT INTO hashes VALUES (?, ?, 1)", texts)

    def finish_loading(self) -> None:
        """Index the ids and count the copies of each text (after the last page)."""
        self.db.execute("CREATE INDEX ids_key ON ids (scope, key)")
        self.db.execute(
            "CREATE TABLE copies AS SELECT scope, hash, SUM(copies) AS copies FROM hashes "
            "GROUP BY scope, hash"
        )
        self.db.execute("DROP TABLE hashes")
        self.db.execute("CREATE UNIQUE INDEX copies_key ON copies (scope, hash)")

    def provider_id(self, scope: str, *keys: str) -> str | None:
        """The target id the first of KEYS (ids or origins) known in SCOPE names."""
        for key in keys:
            row = self.db.execute(
                "SELECT provider_id FROM ids WHERE scope = ? AND key = ?", (scope, key)
            ).fetchone()
            if row:
                return str(row[0])
        return None

    def claim_copy(self, key: tuple[str, str]) -> bool:
        """Take one unclaimed copy of the text KEY (scope, text hash): True when there was one."""
        cursor = self.db.execute(
            "UPDATE copies SET copies = copies - 1 WHERE scope = ? AND hash = ? AND copies > 0",
            key,
        )
        return cursor.rowcount > 0

    def remember(self, scope: str, keys: list[str]) -> None:
        """KEYS now name a memory in the target (written by this import)."""
        self.db.executemany("INSERT INTO ids VALUES (?, ?, '')", [(scope, k) for k in keys])

    def close(self) -> None:
        self.db.close()
