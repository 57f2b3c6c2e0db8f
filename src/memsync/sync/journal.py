"""Reading the change journal: the log, one memory's history, a provider as it stood at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from memsync.errors import MemsyncError
from memsync.records import Record, parse_instant
from memsync.staging.store import StagingStore


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
    names = providers
    if provider:
        names = [provider] if providers is None or provider in providers else []
    bound = _utc_text(since, "--since") if since else None
    entries = [c._asdict() for c in store.journal.newest_changes(names, bound, limit)]
    entries += [
        _adoption_entry(a._asdict()) for a in store.journal.newest_adoptions(names, bound, limit)
    ]
    entries.sort(key=lambda e: (e["at"], e["kind"] != "added"))
    return entries[-limit:]


def _adoption_entry(row: dict[str, Any]) -> dict[str, Any]:
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
    journal = store.journal
    link = journal.link_of(memory)
    if link is None:
        raise MemsyncError(
            f"no memory {memory!r} in the journal; `memsync log` lists what memsync has seen"
        )
    adopted = journal.adoptions_touching(link)
    if adopted and all(a.old_link_id == link for a in adopted):
        link = adopted[-1].link_id  # MEMORY named a record's id from before it was adopted
        adopted = journal.adoptions_into(link)
    links = [link, *(a.old_link_id for a in adopted if a.link_id == link)]
    entries: list[dict[str, Any]] = [
        {
            **version._asdict(),
            "metadata": json.loads(version.metadata) if version.metadata else None,
            "provenance": json.loads(version.provenance) if version.provenance else None,
        }
        for version in journal.versions(links)
    ]
    for adoption in adopted:
        if adoption.link_id != link:
            continue
        entry = _adoption_entry(adoption._asdict())
        entry.update({"run_id": None, "metadata": None, "updated_at": None, "fingerprint": None})
        entry["old_link_id"] = adoption.old_link_id
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
    return store.journal.records_at(provider, _utc_text(at, "--at"))
