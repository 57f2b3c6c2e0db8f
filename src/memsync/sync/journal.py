"""Reading the change journal: the log, one memory's history, a provider as it stood at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from memsync.errors import MemsyncError
from memsync.records import Record, parse_instant
from memsync.staging.store import StagingStore, row_record


def _utc_text(value: str, what: str) -> str:
    from datetime import UTC

    instant = parse_instant(value)
    if instant is None:
        raise MemsyncError(
            f"{what}: {value!r} is not a time; use ISO-8601 such as 2026-11-30T09:00:00Z"
        )
    return instant.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def log_entries(
    store: StagingStore, *, provider: str | None = None, since: str | None = None, limit: int = 200
) -> list[dict[str, Any]]:
    """The newest journal entries, newest last."""
    clauses, params = [], []
    if provider:
        clauses.append("provider = ?")
        params.append(provider)
    if since:
        clauses.append("at >= ?")
        params.append(_utc_text(since, "--since"))
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.conn.execute(
        f"SELECT seq, at, provider, provider_id, link_id, kind, content FROM changes {where} "
        "ORDER BY seq DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    return [dict(r) for r in reversed(rows)]


def memory_history(store: StagingStore, memory: str) -> list[dict[str, Any]]:
    """Every version of one memory seen in any provider; MEMORY is a memory or provider id."""
    link = memory
    row = store.conn.execute(
        "SELECT link_id FROM changes WHERE link_id = ? LIMIT 1", (memory,)
    ).fetchone()
    if row is None:
        row = store.conn.execute(
            "SELECT link_id FROM changes WHERE provider_id = ? ORDER BY seq DESC LIMIT 1",
            (memory,),
        ).fetchone()
        if row is None:
            raise MemsyncError(
                f"no memory {memory!r} in the journal; `memsync log` lists what memsync has seen"
            )
        link = row[0]
    rows = store.conn.execute(
        "SELECT seq, at, run_id, provider, provider_id, link_id, kind, content, metadata, "
        "updated_at, fingerprint, provenance FROM changes WHERE link_id = ? ORDER BY seq",
        (link,),
    ).fetchall()
    return [
        {
            **dict(r),
            "metadata": json.loads(r["metadata"]) if r["metadata"] else None,
            "provenance": json.loads(r["provenance"]) if r["provenance"] else None,
        }
        for r in rows
    ]


def records_at(store: StagingStore, provider: str, at: str) -> Iterator[Record]:
    """A provider's memories as they stood at a time, rebuilt from the journal (streamed)."""
    when = _utc_text(at, "--at")
    cursor = store.conn.execute(
        "SELECT c.* FROM changes c JOIN (SELECT provider_id, MAX(seq) AS seq FROM changes "
        "WHERE provider = ? AND at <= ? GROUP BY provider_id) last ON last.seq = c.seq "
        "WHERE c.kind != 'removed' ORDER BY c.provider_id",
        (provider, when),
    )
    for row in cursor:
        record = row_record(row)
        record.origin = row["origin"] or row["link_id"]
        yield record
