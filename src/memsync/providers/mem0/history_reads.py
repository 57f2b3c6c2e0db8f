"""Reading Mem0's history where each flavour keeps it: a SQLite file, a PostgreSQL table, a route.

- **The library** (and a self-hosted server on upstream's main branch, whose history is the
  library's file on the server's host, ``/app/history/history.db``): one query over the
  ``history`` table, read-only (``mode=ro``), in ``rowid`` order, which is the order Mem0 wrote
  the rows in and is trusted over their dates. A history kept ``:memory:`` is read through the
  open ``Memory``'s own connection (the same process), with the same one query.
- **A server whose history is in PostgreSQL** (upstream PR #6968's migration 007: a ``history``
  table of the same ten columns, no row order, in the app database ``mem0_app``): one query
  for the memories asked about, through a read-only session (``server_database``).
- **The route** (``GET /memories/{id}/history`` on a server, ``GET /v1/memories/{id}/history/``
  on the Platform): one request per memory, ``concurrency`` at a time on the provider's own
  client, so its retries, pacing and breaker apply. A memory whose read failed after its
  retries is *unreadable* (it then gets its current version only, counted).

The query reads the rows of the memories asked about (those listed now, and those memsync saw
before they were deleted), and the ids of the other memories the history shows deleted: the
library's and the server's rows name no scope, so those cannot be placed, and are counted (in a
store of several scopes, by each scope's import: none of them can say whose they were).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from memsync.base.errors import AuthError, MemsyncError, NotFound, ProviderError
from memsync.base.history.events import (
    COLUMNS,
    HistoryEvent,
    HistoryRead,
    event_from_row,
)
from memsync.providers.concurrent import read_concurrently

# The asked memories' rows, then (rowid NULL) the ids of the others some row shows deleted.
# The columns are ``COLUMNS``, in that order (a literal: no SQL is assembled from strings).
_SELECT = (
    "SELECT rowid, memory_id, old_memory, new_memory, event, created_at, updated_at, "
    "is_deleted, actor_id, role FROM history WHERE memory_id IN (SELECT value FROM json_each(?1)) "
    "UNION ALL SELECT NULL, memory_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL "
    "FROM (SELECT DISTINCT memory_id FROM history WHERE event = 'DELETE' "
    "AND memory_id NOT IN (SELECT value FROM json_each(?1))) ORDER BY 1"
)


def sqlite_history(
    memory_ids: Iterable[str],
    *,
    path: str | None = None,
    connection: sqlite3.Connection | None = None,
    where: str,
) -> HistoryRead:
    """The library's history table (a file at PATH, opened read-only, or an open CONNECTION
    for one kept in memory), one query; events of MEMORY_IDS and of other deleted memories."""
    asked = json.dumps(list(memory_ids))
    try:
        if connection is None:
            assert path is not None
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as own:
                rows = own.execute(_SELECT, (asked,)).fetchall()
            own.close()
        else:
            rows = connection.execute(_SELECT, (asked,)).fetchall()
    except sqlite3.Error as exc:
        raise ProviderError(f"cannot read Mem0's history at {where}: {exc}") from None
    read = HistoryRead(source=f"the history database at {where}", ordered=True)
    for row in rows:
        if row[0] is None:
            read.deleted_elsewhere.add(str(row[1]))
            continue
        event = event_from_row(dict(zip(COLUMNS, row[1:], strict=True)), row[0])
        if event is not None:
            read.add(event)
    return read


def rows_history(rows: Iterable[Any], *, source: str) -> HistoryRead:
    """History rows read elsewhere (PostgreSQL: tuples in ``COLUMNS`` order, and for the other
    memories shown deleted their id alone, the event NULL), with no order of their own: their
    events are ordered by time."""
    read = HistoryRead(source=source, ordered=False)
    for seq, row in enumerate(rows):
        if row[3] is None:
            read.deleted_elsewhere.add(str(row[0]))
            continue
        event = event_from_row(dict(zip(COLUMNS, row, strict=True)), seq)
        if event is not None:
            read.add(event)
    return read


def route_history(
    memory_ids: list[str],
    fetch: Callable[[str], Any],
    parse: Callable[[Any, int], HistoryEvent | None],
    *,
    concurrency: int,
    source: str,
) -> HistoryRead:
    """One request per memory (FETCH: its answer, a list of entries), CONCURRENCY at a time;
    a memory the route does not know has no history, one whose read failed is unreadable."""
    read = HistoryRead(source=source, ordered=False, requests=len(memory_ids))
    answers = read_concurrently(fetch, memory_ids, concurrency)
    for memory_id, answer in zip(memory_ids, answers, strict=True):
        if isinstance(answer, NotFound):
            continue
        if isinstance(answer, AuthError):
            raise answer  # the key is refused: every other read would be too
        if isinstance(answer, MemsyncError):
            read.unreadable[memory_id] = str(answer)
            continue
        if isinstance(answer, Exception):
            raise answer
        if not isinstance(answer, list):
            read.unreadable[memory_id] = "the route did not answer a list of entries"
            continue
        for seq, entry in enumerate(answer):
            event = parse(entry, seq) if isinstance(entry, dict) else None
            if event is not None and event.memory_id == memory_id:
                read.add(event)
    return read
