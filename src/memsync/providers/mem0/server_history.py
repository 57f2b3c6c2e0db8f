"""Where a Mem0 self-hosted server keeps each memory's history, read for a history import.

Upstream's server has kept it in three places, and memsync reads whichever it is given:

- **a PostgreSQL table** (``history_table``, ``history`` by default): upstream PR #6968 (its
  migration 007, 2026-08, not merged at mem0 8d5b786) moves the history out of SQLite into the
  app database ``mem0_app``, beside ``users`` and ``api_keys``; the issue that asked for this
  import names it in the server's PostgreSQL. Read through a read-only session
  (``server_database``) on ``history_database_url_env`` (or ``_file``) when set, else on the
  ``database_url_env`` connection: one query for the memories asked about (and the ids of
  others it shows deleted, which name no scope and are counted). The role needs
  ``GRANT SELECT ON history`` and nothing else of that database;
- **a SQLite file** (``history_db_path``): upstream's main branch, where the server runs the
  library with ``HISTORY_DB_PATH=/app/history/history.db`` on a volume; memsync reads it where
  it runs on that host (or has the volume mounted), read-only, one query;
- **the route** ``GET /memories/{id}/history``: one request per memory, on the provider's
  own lanes (``concurrency`` at a time), retried like every read.

A database that has no such table, or a role without the grant, falls back to the route, and
the report's source says why.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.history import HistoryRead, event_from_row
from memsync.base.history.events import COLUMNS
from memsync.base.secrets import resolve_secret
from memsync.config import Mem0ServerConfig
from memsync.providers.mem0.history_reads import route_history, rows_history, sqlite_history
from memsync.providers.mem0.server_database import ServerDatabase, psycopg_missing

log = logging.getLogger("memsync.providers.mem0_server")

ROUTE = "GET /memories/{id}/history"


class ServerHistory:
    """How one server's history is read: its table, its file, or (neither) its route."""

    def __init__(
        self, provider: str, *, database: ServerDatabase | None = None, path: Path | None = None
    ) -> None:
        self.provider = provider
        self.database = database
        self.path = path

    def read(
        self, memory_ids: list[str], fetch: Callable[[str], Any], *, concurrency: int
    ) -> HistoryRead:
        """The history of MEMORY_IDS; FETCH reads one memory's through the route."""
        if self.path is not None:
            where = str(Path(self.path).expanduser())
            return sqlite_history(memory_ids, path=where, where=where)
        why = ""
        if self.database is not None:
            try:
                rows = self.database.select(self._query(), (memory_ids, memory_ids))
            except MemsyncError as exc:
                why = f" (its database could not be read: {exc})"
                log.warning(
                    "%s: reading the history through %s instead%s", self.provider, ROUTE, why
                )
            else:
                return rows_history(rows, source=self.database.describe())
        return route_history(
            memory_ids,
            fetch,
            event_from_row,
            concurrency=concurrency,
            source=f"the server's route {ROUTE}{why}",
        )

    def _query(self) -> Any:
        from psycopg import sql

        assert self.database is not None
        table = sql.Identifier(self.database.table)
        nothing = sql.SQL(", ").join(sql.SQL("NULL") for _ in COLUMNS[1:])
        return sql.SQL(
            "SELECT {} FROM {} WHERE memory_id = ANY(%s) UNION ALL SELECT memory_id, {} FROM "
            "(SELECT DISTINCT memory_id FROM {} WHERE event = 'DELETE' "
            "AND NOT memory_id = ANY(%s)) AS deleted"
        ).format(sql.SQL(", ").join(sql.Identifier(c) for c in COLUMNS), table, nothing, table)

    def close(self) -> None:
        if self.database is not None:
            self.database.close()


def history_from_config(
    name: str, entry: Mem0ServerConfig, database: ServerDatabase | None
) -> ServerHistory:
    """Where the server's history is read (``server_history``), as its config says."""
    if entry.history_db_path is not None:
        return ServerHistory(name, path=entry.history_db_path)
    hint = "set history_table to the table the server keeps its history in"
    if entry.history_database_url_env or entry.history_database_url_file:
        missing = psycopg_missing(name)
        if missing is not None:
            raise missing
        url = resolve_secret(
            name,
            entry.history_database_url_env,
            entry.history_database_url_file,
            key="history_database_url",
        )
        assert url is not None
        return ServerHistory(
            name, database=ServerDatabase(name, url, entry.history_table, table_hint=hint)
        )
    if database is not None:  # the server's own database, read for its history table too
        own = ServerDatabase(name, database.url, entry.history_table, table_hint=hint)
        return ServerHistory(name, database=own)
    return ServerHistory(name)
