"""What memsync read or made of a versioned store's commits (``store_commits``), kept between
runs so that no commit is read from the store twice (``providers/mnem/commits.py`` says why a
read is dear in mnem 0.0.7).

A row is a cache: losing one costs a read of the store, never a wrong answer. So rows of
commits a listing has gone past are dropped (``forget_below``), and a store's identity names
its rows (a store replaced under the same path has other commit ids).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable, Sequence

# Rows kept this long whatever a listing says (another scope of the same store, listed from
# an older cursor in the same run, may still want them).
GRACE_S = 3600


class StoreCommits:
    """The ``store_commits`` table: store identity → commit id → (time, changes as JSON)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def commits(self, store: str, commit_ids: Sequence[str]) -> dict[str, tuple[int, str]]:
        """(time in ms, changes) of those of COMMIT_IDS that are kept for STORE."""
        found: dict[str, tuple[int, str]] = {}
        for start in range(0, len(commit_ids), 500):
            chunk = json.dumps(list(commit_ids[start : start + 500]))
            cursor = self.conn.execute(
                "SELECT commit_id, time_ms, changes FROM store_commits "
                "WHERE store = ? AND commit_id IN (SELECT value FROM json_each(?))",
                (store, chunk),
            )
            for commit_id, time_ms, changes in cursor:
                found[str(commit_id)] = (int(time_ms), str(changes))
        return found

    def keep(self, store: str, rows: Iterable[tuple[str, int, str]], now: float) -> None:
        """Keep ROWS (commit id, time in ms, changes) for STORE; a commit kept already stays."""
        body = json.dumps([list(row) for row in rows])
        self.conn.execute(
            "INSERT INTO store_commits (store, commit_id, time_ms, changes, kept_at) "
            "SELECT ?, json_extract(value, '$[0]'), json_extract(value, '$[1]'), "
            "json_extract(value, '$[2]'), ? FROM json_each(?) WHERE true "
            "ON CONFLICT (store, commit_id) DO NOTHING",
            (store, now, body),
        )

    def forget_below(self, store: str, above: Collection[str], now: float) -> None:
        """Drop STORE's rows but those of the commits ABOVE (a listing's cursor, the ones it
        has yet to reach) and those kept in the last ``GRACE_S`` seconds."""
        self.conn.execute(
            "DELETE FROM store_commits WHERE store = ? AND kept_at < ? "
            "AND commit_id NOT IN (SELECT value FROM json_each(?))",
            (store, now - GRACE_S, json.dumps(list(above))),
        )

    def count(self, store: str) -> int:
        row = self.conn.execute(
            "SELECT COUNT(*) FROM store_commits WHERE store = ?", (store,)
        ).fetchone()
        return int(row[0])
