"""Adoption: link records that providers already held in common before memsync linked them.

Ids and origin markers link what memsync wrote. Two stores that hold the same memories under
different ids (an earlier import by another tool, agents that wrote to both, a backup restored
under new ids) would otherwise have every shared memory copied across, twice. So before the
plan, each record that no link claims is paired with an unlinked copy of the same text in the
same scope in another provider (``memsync.base.sameness``), one copy to one copy, and takes that
copy's logical id. Nothing is written to any provider: each keeps its own ids, and an origin
marker is added only when memsync writes the record for another reason (an update), because a
rewrite of every adopted memory just to mark it would cost a write per memory on day one and
the content hash finds the pair again after a rebuild anyway.

What the pair then needs is the planner's business, as for any memory: equal fingerprints
need nothing; different metadata is two versions of one memory with no common ancestor, which
the configured conflict policy settles (and the conflicts table keeps both versions).

The search runs in SQL on the staging store (``staging/adoption.py``); only one group of copies
of one text is in Python at a time, where ``pair_copies``, a pure function, pairs them.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from memsync.base.faults import fault_point
from memsync.base.records import utc_now_iso
from memsync.base.sameness import star_scope
from memsync.providers.base import Provider
from memsync.staging.adoption import AdoptionSearch, OpenMemoryRow, SharedCopy
from memsync.staging.store import StagingStore

FLUSH = 20_000  # relinks written per executemany, in primary-key order


@dataclass(frozen=True)
class Copy:
    """An unlinked record holding the text: its provider, id and provisional logical id."""

    provider: str
    provider_id: str
    link_id: str
    order: str = ""  # created_at: within a provider, the oldest copies pair first


@dataclass(frozen=True)
class OpenMemory:
    """A memory memsync agreed on, with this text, that some providers do not hold yet."""

    link_id: str
    present: frozenset[str]  # providers that hold it, or were reconciled with it
    anchor: tuple[str, str] | None = None  # a (provider, provider_id) that holds it


@dataclass(frozen=True)
class Adoption:
    """A record joining a logical memory: from now on it is that memory in its provider."""

    provider: str
    provider_id: str
    old_link: str
    link_id: str
    from_provider: str | None
    from_provider_id: str | None


def pair_copies(
    copies: list[Copy], open_memories: list[OpenMemory], preference: list[str]
) -> list[Adoption]:
    """Pair the unlinked copies of one text in one scope, one per provider per memory.

    First, memories memsync already agreed on take a copy from each provider they lack (in
    link order). The remaining copies pair by rank: each provider's first copy with every
    other provider's first, second with second... The copy of the provider earliest in
    PREFERENCE (the active backend first) lends its logical id to its rank. A rank held by
    one provider alone is a memory the others lack: it stays as it is, and the plan creates it.
    """
    rank = {name: index for index, name in enumerate(preference)}
    if not open_memories and len({copy.provider for copy in copies}) == len(copies):
        # The common case, one copy in each provider: one memory, the preferred copy's.
        anchor, *others = sorted(
            copies, key=lambda c: (rank.get(c.provider, len(rank)), c.provider)
        )
        return [
            Adoption(
                c.provider,
                c.provider_id,
                c.link_id,
                anchor.link_id,
                anchor.provider,
                anchor.provider_id,
            )
            for c in others
        ]
    queues: dict[str, list[Copy]] = defaultdict(list)
    for copy in sorted(copies, key=lambda c: (c.order, c.provider_id)):
        queues[copy.provider].append(copy)
    providers = sorted(queues, key=lambda name: (rank.get(name, len(rank)), name))
    adoptions: list[Adoption] = []
    for memory in sorted(open_memories, key=lambda m: m.link_id):
        anchor_provider, anchor_id = memory.anchor or (None, None)
        for provider in providers:
            if provider in memory.present or not queues[provider]:
                continue
            copy = queues[provider].pop(0)
            adoptions.append(
                Adoption(
                    provider,
                    copy.provider_id,
                    copy.link_id,
                    memory.link_id,
                    anchor_provider,
                    anchor_id,
                )
            )
    while True:
        row = [queues[provider].pop(0) for provider in providers if queues[provider]]
        if len(row) < 2:
            return adoptions
        anchor = row[0]
        adoptions.extend(
            Adoption(
                copy.provider,
                copy.provider_id,
                copy.link_id,
                anchor.link_id,
                anchor.provider,
                anchor.provider_id,
            )
            for copy in row[1:]
        )


@dataclass
class AdoptionResult:
    """What one adoption pass linked: counts per provider, the first few, in full."""

    total: int = 0
    by_provider: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    listed: list[Adoption] = field(default_factory=list)


def adopt(
    store: StagingStore,
    providers: Mapping[str, Provider],
    active: str,
    run_id: int,
    *,
    listed_max: int = 1000,
) -> AdoptionResult:
    """Relink every unlinked record that another provider holds a copy of (see the module).

    The caller holds the write transaction: the relinks and the adoption journal commit with
    it, or not at all (a dry run rolls them back).
    """
    preference = [active, *(name for name in providers if name != active)]
    star = star_scope(providers[name].scope_key() for name in preference)
    search = store.adoption
    search.find_candidates(
        [(name, star if providers[name].scope_key() else None) for name in preference]
    )
    result = AdoptionResult()
    if not _anything_to_pair(search, preference):
        return result
    search.find_open_memories()

    now = utc_now_iso()
    relinks: list[tuple[str, str, str]] = []
    journal: list[tuple[Any, ...]] = []
    for (content_hash, scope), copies, memories in _groups(search):
        adoptions = pair_copies(copies, memories, preference)
        # Both sides of a new pair count as adopted; a memory agreed before counts only the
        # copy that joined it.
        provisional = {copy.link_id for copy in copies}
        for provider, _ in {
            (a.from_provider, a.link_id)
            for a in adoptions
            if a.from_provider and a.link_id in provisional
        }:
            result.by_provider[provider] += 1
        for adoption in adoptions:
            result.total += 1
            result.by_provider[adoption.provider] += 1
            if len(result.listed) < listed_max:
                result.listed.append(adoption)
            relinks.append((adoption.link_id, adoption.provider, adoption.provider_id))
            journal.append(
                (
                    run_id,
                    now,
                    adoption.link_id,
                    adoption.provider,
                    adoption.provider_id,
                    adoption.old_link,
                    adoption.from_provider,
                    adoption.from_provider_id,
                    scope,
                    content_hash,
                )
            )
        if len(relinks) >= FLUSH:
            _flush(search, relinks, journal)
    _flush(search, relinks, journal)
    return result


def _anything_to_pair(search: AdoptionSearch, providers: list[str]) -> bool:
    """False when no unlinked record could have a partner: none at all (a quiet cycle), or
    all in one provider while no other provider holds any record (a first sync into empty
    stores)."""
    holding = [p for p in providers if search.has_candidates(p)]
    if len(holding) != 1:
        return len(holding) > 1
    return any(search.has_records(p) for p in providers if p != holding[0])


def _flush(
    search: AdoptionSearch, relinks: list[tuple[str, str, str]], journal: list[tuple[Any, ...]]
) -> None:
    relinks.sort(key=lambda relink: (relink[1], relink[2]))  # the records table's key order
    search.relink(relinks, journal)
    relinks.clear()
    journal.clear()
    fault_point("adopt:flushed")  # inside the caller's transaction: a kill here keeps nothing


Key = tuple[str, str]


def _groups(search: AdoptionSearch) -> Iterator[tuple[Key, list[Copy], list[OpenMemory]]]:
    """Copies and open memories of each (text, scope), merged from two key-ordered streams."""
    # Two cursors streamed side by side (temporary tables only: the relinks written between
    # their steps touch ``records``, not what they read).
    copies = itertools.groupby(search.shared_copies(), key=_key)
    memories = itertools.groupby(search.open_memories(), key=_key)
    pending_memories: tuple[Key, list[OpenMemory]] | None = _next_memories(memories)
    for key, rows in copies:
        while pending_memories is not None and pending_memories[0] < key:
            pending_memories = _next_memories(memories)
        found: list[OpenMemory] = []
        if pending_memories is not None and pending_memories[0] == key:
            found = pending_memories[1]
            pending_memories = _next_memories(memories)
        yield key, [Copy(r.provider, r.provider_id, r.link_id, r.created_at) for r in rows], found


def _key(row: SharedCopy | OpenMemoryRow) -> Key:
    return row.content_hash, row.scope


def _next_memories(
    groups: Iterator[tuple[Key, Iterator[OpenMemoryRow]]],
) -> tuple[Key, list[OpenMemory]] | None:
    for key, rows in groups:
        return key, [
            OpenMemory(
                r.link_id,
                frozenset((r.present or "").split("\x1f")),
                (r.anchor_provider, r.anchor_id)
                if r.anchor_provider is not None and r.anchor_id is not None
                else None,
            )
            for r in rows
        ]
    return None
