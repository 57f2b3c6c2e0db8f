"""``memsync verify A B``: prove two providers hold the same memories, or show what differs.

Compares live listings (not the staging mirror): the multiset of (normalised text, user
metadata) within each provider's scope, so every copy of a text counts. Ids and timestamps
differ between providers by nature and are not compared.

Equal counts are not enough: two stores that each held a text before memsync linked them, and
each got the other's copy (what a first sync without adoption does), hold it twice each, in
step. The staging journal tells: each side holds, as a copy memsync wrote, a memory the other
side held as its own before memsync linked them. Such a text is reported as duplicated, and
the two are not called reconciled.

A difference memsync's own documented handling makes is **explained**, reported apart, and
does not fail verify: a memory one side still lists while the other does not serve it,
because it expired (memsync forgot it there with a tombstone, as in mnem and Hindsight, or the
store hides expired ones) or because the Mem0 Platform's Dream retired it (superseded or
merged: memsync forgets it in mnem, a ``latest_only`` listing leaves it out). Everything else
is a difference.

A team's verify, every scope of a wildcard config, is ``orchestration/verify.py``.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsync.base.dream import Dream
from memsync.base.errors import MemsyncError
from memsync.base.records import Record, canonical_json, normalise_text, utc_now_iso
from memsync.providers.base import Provider
from memsync.staging.journal import FirstSighting
from memsync.staging.store import StagingStore

log = logging.getLogger(__name__)


@dataclass
class Difference:
    content: str
    metadata: dict[str, Any]
    only_in: str
    count: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "only_in": self.only_in,
            "content": self.content,
            "metadata": self.metadata,
            "count": self.count,
        }


@dataclass
class Explained(Difference):
    """A difference memsync's documented handling makes (see the module docstring)."""

    reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {**super().as_dict(), "reason": self.reason}


@dataclass
class Duplicated:
    """A text each side held as its own and also received from the other: copied both ways."""

    content: str
    copies: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return {"content": self.content, "copies": self.copies}


@dataclass
class VerifyReport:
    a: str
    b: str
    count_a: int = 0
    count_b: int = 0
    differences: list[Difference] = field(default_factory=list)
    duplicated: list[Duplicated] = field(default_factory=list)
    explained: list[Explained] = field(default_factory=list)

    @property
    def reconciled(self) -> bool:
        return not self.differences and not self.duplicated

    @property
    def difference_count(self) -> int:
        return sum(d.count for d in self.differences)

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "count": {self.a: self.count_a, self.b: self.count_b},
            "reconciled": self.reconciled,
            "differences": [d.as_dict() for d in self.differences],
            "duplicated": [d.as_dict() for d in self.duplicated],
            "explained": [e.as_dict() for e in self.explained],
        }


class _Copies:
    """Per text held more than once: the provider ids of its copies."""

    def __init__(self) -> None:
        self.ids: dict[str, list[str]] = {}
        self.texts: dict[str, str] = {}

    def add(self, record: Any) -> None:
        self.ids.setdefault(record.content_hash, []).append(record.id)
        self.texts.setdefault(record.content_hash, record.content)


def _copied_both_ways(
    store: StagingStore, a: str, b: str, copies_a: _Copies, copies_b: _Copies
) -> list[Duplicated]:
    """Texts each side held before memsync linked them, then received from the other too.

    From the journal: a copy memsync first saw in a listing is the provider's own; one it
    first wrote is a copy. A text is duplicated when A's own copy was written into B and B's
    own into A, both owners having been seen before either write (so adoption could have
    paired them). A text written on one side after the other's copy arrived is not flagged.
    """
    found: list[Duplicated] = []
    shared = [
        h for h, ids in copies_a.ids.items() if len(ids) > 1 and len(copies_b.ids.get(h, [])) > 1
    ]
    if not shared:
        return found
    seen_a = store.journal.first_sightings(a, [i for h in shared for i in copies_a.ids[h]])
    seen_b = store.journal.first_sightings(b, [i for h in shared for i in copies_b.ids[h]])
    for text in shared:
        own_a = {
            seen_a[i].link_id: seen_a[i].seq
            for i in copies_a.ids[text]
            if _kind(seen_a, i) == "added"
        }
        own_b = {
            seen_b[i].link_id: seen_b[i].seq
            for i in copies_b.ids[text]
            if _kind(seen_b, i) == "added"
        }
        into_a = {
            seen_a[i].link_id: seen_a[i].seq
            for i in copies_a.ids[text]
            if _kind(seen_a, i) == "written"
        }
        into_b = {
            seen_b[i].link_id: seen_b[i].seq
            for i in copies_b.ids[text]
            if _kind(seen_b, i) == "written"
        }
        for link_a, owned_a_at in own_a.items():
            if link_a not in into_b:
                continue
            if any(
                link_b in into_a
                and max(owned_a_at, owned_b_at) < min(into_b[link_a], into_a[link_b])
                for link_b, owned_b_at in own_b.items()
            ):
                counts = {a: len(copies_a.ids[text]), b: len(copies_b.ids[text])}
                found.append(Duplicated(copies_a.texts[text], counts))
                break
    return sorted(found, key=lambda d: d.content)


def _kind(seen: dict[str, FirstSighting], provider_id: str) -> str | None:
    entry = seen.get(provider_id)
    return entry.kind if entry and entry.link_id is not None else None


@dataclass
class _Inventory:
    """One side's live listing, by "the same memory" key."""

    provider: Provider
    counts: Counter[str] = field(default_factory=Counter)
    records: dict[str, list[Record]] = field(default_factory=dict)
    hides_expired: bool = False  # the store does not serve an expired memory
    forgets_expired: bool = False  # ...because memsync forgets it there (a tombstone)
    hides_retired: bool = False  # ...nor one Dream retired (superseded or merged)
    forgets_retired: bool = False


def _inventory(provider: Provider, copies: _Copies) -> _Inventory:
    found = _Inventory(provider)
    listing = provider.listing()
    for page in listing.kept_pages(provider.exclusion):
        for record in page.records:
            # the same notion of "the same memory" as sync's fingerprint: a store that strips
            # text, or a target written before texts were carried exactly, still agrees
            key = canonical_json([normalise_text(record.content), record.metadata])
            found.counts[key] += 1
            found.records.setdefault(key, []).append(record)
            copies.add(record)
    if not listing.complete:
        raise MemsyncError(
            f"cannot verify: the listing of {provider.name} was partial "
            f"({listing.partial_reason or 'incomplete'}); try again"
        )
    found.forgets_expired = listing.tombstones_expired
    found.hides_expired = listing.hides_expired or listing.tombstones_expired
    found.forgets_retired = listing.tombstones_retired
    found.hides_retired = listing.hides_retired or listing.tombstones_retired
    return found


def _explain(holder: _Inventory, other: _Inventory, key: str, extra: int) -> list[Explained]:
    """How many of HOLDER's EXTRA copies of KEY memsync's documented handling accounts for:
    copies the other store does not serve (expired, or retired by Dream) as memsync says."""
    records = holder.records[key]
    content, metadata, name = records[0].content, records[0].metadata, holder.provider.name
    theirs = other.provider.name
    explained: list[Explained] = []
    left = extra
    reasons = (
        (
            other.hides_expired,
            lambda r: r.expired,
            "expired; "
            + (
                f"memsync forgot it in {theirs} (its history keeps it)"
                if other.forgets_expired
                else f"{theirs} does not serve expired memories"
            ),
        ),
        (
            other.hides_retired,
            lambda r: Dream.of(r.provenance).retired,
            "retired by Dream; "
            + (
                f"memsync forgot it in {theirs} (its history keeps it)"
                if other.forgets_retired
                else f"{theirs} serves current memories only"
            ),
        ),
    )
    for applies, hidden, reason in reasons:
        count = min(left, sum(1 for r in records if hidden(r))) if applies else 0
        if count:
            explained.append(Explained(content, metadata, name, count, reason=reason))
            left -= count
    return explained


def verify(a: Provider, b: Provider, store: StagingStore | None = None) -> VerifyReport:
    """Compare A and B; with the staging STORE, also find texts copied both ways."""
    report = VerifyReport(a.name, b.name)
    copies_a, copies_b = _Copies(), _Copies()
    with a:
        side_a = _inventory(a, copies_a)
    with b:
        side_b = _inventory(b, copies_b)
    if store is not None:
        report.duplicated = _copied_both_ways(store, a.name, b.name, copies_a, copies_b)
    counts_a, counts_b = side_a.counts, side_b.counts
    report.count_a, report.count_b = sum(counts_a.values()), sum(counts_b.values())
    for key in sorted(set(counts_a) | set(counts_b)):
        extra_a = counts_a[key] - counts_b[key]
        if extra_a == 0:
            continue
        holder, other = (side_a, side_b) if extra_a > 0 else (side_b, side_a)
        extra = abs(extra_a)
        explained = _explain(holder, other, key, extra)
        report.explained.extend(explained)
        extra -= sum(e.count for e in explained)
        if extra:
            first = holder.records[key][0]
            report.differences.append(
                Difference(first.content, first.metadata, holder.provider.name, extra)
            )
    return report


def record_verify(
    store: StagingStore, a: str, b: str, report: VerifyReport | None, error: str | None = None
) -> None:
    """Keep what a verify found (or why it could not compare) for the cutover readiness view."""
    with store.transaction():
        store.verify_results.record(
            a,
            b,
            utc_now_iso(),
            reconciled=report is not None and report.reconciled,
            counts=(report.count_a, report.count_b) if report else None,
            differences=report.difference_count if report else 0,
            error=error,
        )


def verify_and_record(a: Provider, b: Provider, database: Path) -> VerifyReport:
    """verify(a, b), its outcome kept in the staging database when there is one (which also
    lets verify find texts copied both ways)."""
    try:
        if database.exists():
            with StagingStore.open(database, create=False) as store:
                report = verify(a, b, store)
        else:
            report = verify(a, b)
    except MemsyncError as exc:
        record_quietly(database, a.name, b.name, None, str(exc))
        raise
    record_quietly(database, a.name, b.name, report, None)
    return report


def record_quietly(
    database: Path, a: str, b: str, report: VerifyReport | None, error: str | None
) -> None:
    """Recording is a convenience: a verify is never lost or failed by a busy database."""
    if not database.exists():
        return
    try:
        with StagingStore.open(database, create=False) as store:
            record_verify(store, a, b, report, error)
    except (MemsyncError, sqlite3.Error) as exc:
        log.warning("could not record the verify result in %s: %s", database, exc)


def record_verify_failure(database: Path, a: str, b: str, error: str) -> None:
    """Keep that A and B could not be compared (a provider that cannot be built or reached)."""
    record_quietly(database, a, b, None, error)
