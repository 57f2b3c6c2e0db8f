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

The library's and server's rows name no scope, so rows of memories not asked about are kept
only when their history ends with a delete: the timeline counts those as deleted memories of
unknown scope (another scope's live memory is none of this store's business).
"""

from __future__ import annotations

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

_SELECT = f"SELECT rowid, {', '.join(COLUMNS)} FROM history ORDER BY rowid"


def sqlite_history(
    memory_ids: Iterable[str],
    *,
    path: str | None = None,
    connection: sqlite3.Connection | None = None,
    where: str,
) -> HistoryRead:
    """The library's history table (a file at PATH, opened read-only, or an open CONNECTION
    for one kept in memory), one query; events of MEMORY_IDS and of other deleted memories."""
    try:
        if connection is None:
            assert path is not None
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as own:
                rows = own.execute(_SELECT).fetchall()
            own.close()
        else:
            rows = connection.execute(_SELECT).fetchall()
    except sqlite3.Error as exc:
        raise ProviderError(f"cannot read Mem0's history at {where}: {exc}") from None
    read = HistoryRead(source=f"the history database at {where}", ordered=True)
    events = (event_from_row(dict(zip(COLUMNS, row[1:], strict=True)), row[0]) for row in rows)
    _keep(read, events, memory_ids)
    return read


def rows_history(rows: Iterable[Any], memory_ids: Iterable[str], *, source: str) -> HistoryRead:
    """History rows read elsewhere (PostgreSQL: tuples in ``COLUMNS`` order), with no order of
    their own: their events are ordered by time."""
    read = HistoryRead(source=source, ordered=False)
    events = (
        event_from_row(dict(zip(COLUMNS, row, strict=True)), seq) for seq, row in enumerate(rows)
    )
    _keep(read, events, memory_ids)
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


def _keep(read: HistoryRead, events: Iterable[HistoryEvent | None], asked: Iterable[str]) -> None:
    """The events of the memories ASKED about, and of others whose history ends deleted."""
    wanted = set(asked)
    others: dict[str, list[HistoryEvent]] = {}
    for event in events:
        if event is None:
            continue
        if event.memory_id in wanted:
            read.add(event)
        else:
            others.setdefault(event.memory_id, []).append(event)
    for memory_id, found in others.items():
        last = max(found, key=(lambda e: e.seq) if read.ordered else HistoryEvent.sort_key)
        if last.kind == "DELETE":
            read.events[memory_id] = found
