"""The server double's history in a real PostgreSQL table, as upstream PR #6968 keeps it.

mem0ai 2.2.1 keeps each memory's history in SQLite (``mem0/memory/storage.py``
``SQLiteManager``). Upstream PR #6968 (mem0 commit 1f31e59d1, 2026-08-14, "migration 007",
not merged at 8d5b786) moves it into the server's PostgreSQL app database (``mem0_app``):
``mem0/memory/history_store/postgres.py`` ``PostgresHistoryStore``, through SQLAlchemy, with
the table ``tests.postgres_server.history_table`` creates. mem0ai 2.2.1 has no such module,
so this double carries the PR's SQL (its statements, verbatim but for the driver's parameter
style) behind the seven calls ``Memory`` makes on ``self.db``: assigned to a real
``Memory.db``, Mem0's own add, update and delete write the rows, as on such a server.
"""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg

from tests.postgres_server import history_table

_INSERT_HISTORY = (
    "INSERT INTO history (id, memory_id, old_memory, new_memory, event, created_at, updated_at, "
    "is_deleted, actor_id, role) VALUES (%(id)s, %(memory_id)s, %(old_memory)s, "
    "%(new_memory)s, %(event)s, %(created_at)s, %(updated_at)s, %(is_deleted)s, %(actor_id)s, "
    "%(role)s)"
)
_GET_HISTORY = (
    "SELECT id, memory_id, old_memory, new_memory, event, created_at, updated_at, is_deleted, "
    "actor_id, role FROM history WHERE memory_id = %s ORDER BY created_at ASC, updated_at ASC"
)


class PostgresHistory:
    """PR #6968's ``PostgresHistoryStore`` on the database at URL (its table made if missing)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.db_path = url  # where Mem0's history is, as SQLiteManager names it
        self._lock = threading.Lock()
        history_table(url)
        self._conn: Any = psycopg.connect(url, autocommit=True)

    def add_history(
        self,
        memory_id: str,
        old_memory: str | None,
        new_memory: str | None,
        event: str,
        *,
        created_at: str | None = None,
        updated_at: str | None = None,
        is_deleted: int = 0,
        actor_id: str | None = None,
        role: str | None = None,
    ) -> None:
        self.batch_add_history(
            [
                {
                    "memory_id": memory_id,
                    "old_memory": old_memory,
                    "new_memory": new_memory,
                    "event": event,
                    "created_at": created_at,
                    "updated_at": updated_at,
                    "is_deleted": is_deleted,
                    "actor_id": actor_id,
                    "role": role,
                }
            ]
        )

    def batch_add_history(self, records: list[dict[str, Any]]) -> None:
        rows = [
            {
                "id": str(uuid.uuid4()),
                "is_deleted": 0,
                "actor_id": None,
                "role": None,
                "old_memory": None,
                "created_at": None,
                "updated_at": None,
                **record,
            }
            for record in records
        ]
        with self._lock, self._conn.transaction():
            self._conn.cursor().executemany(_INSERT_HISTORY, rows)

    def get_history(self, memory_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(_GET_HISTORY, (memory_id,)).fetchall()
        keys = ("id", "memory_id", "old_memory", "new_memory", "event", "created_at")
        keys += ("updated_at", "is_deleted", "actor_id", "role")
        found = [dict(zip(keys, row, strict=True)) for row in rows]
        for entry in found:
            entry["is_deleted"] = bool(entry["is_deleted"])
        return found

    def save_messages(self, messages: list[dict[str, Any]], session_scope: str) -> None:
        now = datetime.now(UTC)
        rows = [
            (
                str(uuid.uuid4()),
                session_scope,
                m.get("role"),
                m.get("content"),
                m.get("name"),
                (now + timedelta(microseconds=i)).isoformat(),
            )
            for i, m in enumerate(messages)
        ]
        with self._lock, self._conn.transaction():
            self._conn.cursor().executemany(
                "INSERT INTO messages (id, session_scope, role, content, name, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s)",
                rows,
            )

    def get_last_messages(self, session_scope: str, limit: int = 10) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._conn.execute(
                "SELECT role, content, name, created_at FROM (SELECT role, content, name, "
                "created_at, id FROM messages WHERE session_scope = %s ORDER BY created_at DESC, "
                "id DESC LIMIT %s) recent ORDER BY created_at ASC, id ASC",
                (session_scope, limit),
            ).fetchall()
        return [dict(zip(("role", "content", "name", "created_at"), r, strict=True)) for r in rows]

    def reset(self) -> None:
        with self._lock:
            self._conn.execute("DROP TABLE IF EXISTS history")
            self._conn.execute("DROP TABLE IF EXISTS messages")

    def close(self) -> None:
        self._conn.close()
