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
    store: StagingStore,
    *,
    provider: str | None = None,
    since: str | None = None,
    limit: int = 200,
    providers: list[str] | None = None,
) -> list[dict[str, Any]]:
    """The newest journal entries, newest last; adoptions show as kind ``adopted``.

    ``providers``: entries of any of these (e.g. one scope's providers).
    """
    clauses, params = [], []
    if provider:
        clauses.append("provider = ?")
        params.append(provider)
    if providers is not None:
        clauses.append(f"provider IN ({','.join('?' * len(providers))})")
        params.extend(providers)
    if since:
        clauses.append("at >= ?")
        params.append(_utc_text(since, "--since"))
    where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
    rows = store.conn.execute(
        f"SELECT seq, at, provider, provider_id, link_id, kind, content FROM changes {where} "
        "ORDER BY seq DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    entries = [dict(r) for r in rows]
    adopted = store.conn.execute(
        "SELECT a.at, a.provider, a.provider_id, a.link_id, a.from_provider, a.from_provider_id, "
        "(SELECT content FROM records r WHERE r.provider = a.provider "
        "AND r.provider_id = a.provider_id) AS content "
        f"FROM adoptions a {where.replace('WHERE ', 'WHERE a.').replace('AND ', 'AND a.')} "
        "ORDER BY a.seq DESC LIMIT ?",
        (*params, limit),
    ).fetchall()
    entries += [_adoption_entry(r) for r in adopted]
    entries.sort(key=lambda e: (e["at"], e["kind"] != "added"))
    return entries[-limit:]


def _adoption_entry(row: Any) -> dict[str, Any]:
    """An adoption as a journal entry: which record joined which memory, paired with what."""
    return {
        "seq": None,
        "at": row["at"],
        "provider": row["provider"],
        "provider_id": row["provider_id"],
        "link_id": row["link_id"],
        "kind": "adopted",
        "content": row["content"],
        "from_provider": row["from_provider"],
        "from_provider_id": row["from_provider_id"],
    }


def memory_history(store: StagingStore, memory: str) -> list[dict[str, Any]]:
    """Every version of one memory seen in any provider; MEMORY is a memory or provider id.

    A record that was adopted (linked by content) was journalled under its own logical id
    before it joined: those entries belong to the memory too, and the adoption is an entry.
    """
    conn = store.conn
    link = memory
    row = conn.execute(
        "SELECT link_id FROM changes WHERE link_id = ? LIMIT 1", (memory,)
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT link_id FROM adoptions WHERE link_id = ? OR provider_id = ? "
            "ORDER BY seq DESC LIMIT 1",
            (memory, memory),
        ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT link_id FROM changes WHERE provider_id = ? ORDER BY seq DESC LIMIT 1",
            (memory,),
        ).fetchone()
        if row is None:
            raise MemsyncError(
                f"no memory {memory!r} in the journal; `memsync log` lists what memsync has seen"
            )
    link = row[0]
    adopted = conn.execute(
        "SELECT at, provider, provider_id, link_id, old_link_id, from_provider, from_provider_id, "
        "NULL AS content FROM adoptions WHERE link_id = ? OR old_link_id = ? ORDER BY seq",
        (link, link),
    ).fetchall()
    if adopted and all(a["old_link_id"] == link for a in adopted):
        link = adopted[-1]["link_id"]  # MEMORY named a record's id from before it was adopted
        adopted = conn.execute(
            "SELECT at, provider, provider_id, link_id, old_link_id, from_provider, "
            "from_provider_id, NULL AS content FROM adoptions WHERE link_id = ? ORDER BY seq",
            (link,),
        ).fetchall()
    links = [link, *(a["old_link_id"] for a in adopted if a["link_id"] == link)]
    marks = ",".join("?" * len(links))
    rows = conn.execute(
        "SELECT seq, at, run_id, provider, provider_id, link_id, kind, content, metadata, "
        f"updated_at, fingerprint, provenance FROM changes WHERE link_id IN ({marks}) ORDER BY seq",
        links,
    ).fetchall()
    entries: list[dict[str, Any]] = [
        {
            **dict(r),
            "metadata": json.loads(r["metadata"]) if r["metadata"] else None,
            "provenance": json.loads(r["provenance"]) if r["provenance"] else None,
        }
        for r in rows
    ]
    for adoption in adopted:
        if adoption["link_id"] != link:
            continue
        entry = _adoption_entry(adoption)
        entry.update({"run_id": None, "metadata": None, "updated_at": None, "fingerprint": None})
        entry["old_link_id"] = adoption["old_link_id"]
        # After the record's own first sighting, before anything written for the memory.
        position = next(
            (
                i
                for i, e in enumerate(entries)
                if e["at"] > entry["at"] or (e["at"] == entry["at"] and e["kind"] == "written")
            ),
            len(entries),
        )
        entries.insert(position, entry)
    return entries


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
