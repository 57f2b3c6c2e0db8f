"""Freshness: a write never overwrites an edit memsync has not seen.

A cycle mirrors first and replays later; an application may edit a memory in between. Before
each replay batch into a provider, one listing-level query asks the provider which memories
changed since the cycle began (``Provider.versions_changed_since``), and any update or delete
whose target's version token no longer matches the mirror is not written: it is superseded,
and the next cycle mirrors the edit (journaling it) and plans again, as a conflict if it is
one. False alarms cost nothing but a re-plan; the tokens compare exactly, so clocks need not
agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from memsync.providers.base import Provider
from memsync.staging.outbox import OutboxRow
from memsync.staging.store import StagingStore


def changed_targets(
    store: StagingStore, provider: Provider, since: datetime, rows: Iterable[OutboxRow]
) -> set[int]:
    """The outbox rows (ids) whose target memory changed in the provider since the mirror."""
    targeted = {row.provider_id: row.id for row in rows if row.provider_id}
    if not targeted:
        return set()
    changed = provider.versions_changed_since(since)
    if not changed:
        return set()
    ids = [pid for pid in changed if pid in targeted]
    mirrored = store.records.versions(provider.name, ids) if ids else {}
    return {
        targeted[pid]
        for pid in ids
        if pid not in mirrored or mirrored[pid] is None or mirrored[pid] != changed[pid]
    }
