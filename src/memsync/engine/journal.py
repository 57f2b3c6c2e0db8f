"""Reading the change journal: the log, one memory's history, a provider as it stood at a time."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.records import Record, parse_instant
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
    # Oldest first before the sort, which is stable: entries of the same millisecond keep
    # the order they were journalled in.
    entries = [c._asdict() for c in reversed(store.journal.newest_changes(names, bound, limit))]
    entries += [
        _adoption_entry(a._asdict())
        for a in reversed(store.journal.newest_adoptions(names, bound, limit))
    ]
    entries.sort(key=lambda e: (e["at"], e["kind"] != "added"))
    return entries[-limit:]


FOLLOW_POLL = 1.0  # seconds between looks at the journal while following it
FOLLOW_PAGE = 500  # entries read at a time, so a burst of thousands is never read at once


def follow_entries(
    store: StagingStore,
    *,
    provider: str | None = None,
    since: str | None = None,
    limit: int = 200,
    providers: list[str] | None = None,
    stop: threading.Event | None = None,
    poll: float = FOLLOW_POLL,
) -> Iterator[list[dict[str, Any]]]:
    """``log_entries``, then each batch of entries journalled after them, as they come.

    Like ``journalctl -f``. Between looks it sleeps and holds nothing: no transaction, so no
    lock and no snapshot that would keep the WAL from being checkpointed. A look that finds
    no commit by anyone (``PRAGMA data_version``) reads nothing else. Runs until STOP is set
    (or forever; Ctrl-C ends the command).
    """
    names = providers
    if provider:
        names = [provider] if providers is None or provider in providers else []
    bound = _utc_text(since, "--since") if since else None
    journal = store.journal
    stop = stop or threading.Event()
    version = store.data_version()  # before the marks: a commit after them is looked at
    change_mark, adoption_mark = journal.newest_seq(), journal.newest_adoption_seq()
    first = log_entries(store, provider=provider, since=since, limit=limit, providers=providers)
    change_mark = max([change_mark, *(e["seq"] for e in first if e["seq"] is not None)])
    shown = {_adoption_key(e) for e in first if e["seq"] is None}  # may come again below
    yield first
    while not stop.wait(poll):
        now = store.data_version()
        if now == version:
            continue
        version = now
        while True:
            changes = journal.changes_after(change_mark, names, FOLLOW_PAGE)
            adoptions = journal.adoptions_after(adoption_mark, names, FOLLOW_PAGE)
            if not changes and not adoptions:
                break
            if changes:
                change_mark = changes[-1].seq
            if adoptions:
                adoption_mark = adoptions[-1][0]
            batch = [c._asdict() for c in changes]
            for _, adoption in adoptions:
                entry = _adoption_entry(adoption._asdict())
                if _adoption_key(entry) not in shown:
                    batch.append(entry)
            shown.clear()
            batch = [e for e in batch if bound is None or e["at"] >= bound]
            batch.sort(key=lambda e: (e["at"], e["kind"] != "added"))
            if batch:
                yield batch


def _adoption_key(entry: dict[str, Any]) -> tuple[Any, ...]:
    return (entry["at"], entry["provider"], entry["provider_id"], entry["link_id"])


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
