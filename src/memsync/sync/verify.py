"""``memsync verify A B``: prove two providers hold the same memories, or show what differs.

Compares live listings (not the staging mirror): the multiset of (normalised text, user
metadata) within each provider's scope. Ids and timestamps differ between providers by
nature and are not compared.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memsync.errors import MemsyncError
from memsync.providers.base import Provider
from memsync.records import canonical_json, utc_now_iso
from memsync.staging import StagingStore

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
class VerifyReport:
    a: str
    b: str
    count_a: int = 0
    count_b: int = 0
    differences: list[Difference] = field(default_factory=list)

    @property
    def reconciled(self) -> bool:
        return not self.differences

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "count": {self.a: self.count_a, self.b: self.count_b},
            "reconciled": self.reconciled,
            "differences": [d.as_dict() for d in self.differences],
        }


def _inventory(provider: Provider) -> tuple[Counter[str], dict[str, tuple[str, dict[str, Any]]]]:
    counts: Counter[str] = Counter()
    examples: dict[str, tuple[str, dict[str, Any]]] = {}
    listing = provider.listing()
    for page in listing.pages():
        for record in page.records:
            key = canonical_json([record.content, record.metadata])
            counts[key] += 1
            examples.setdefault(key, (record.content, record.metadata))
    if not listing.complete:
        raise MemsyncError(
            f"cannot verify: the listing of {provider.name} was partial "
            f"({listing.partial_reason or 'incomplete'}); try again"
        )
    return counts, examples


def verify(a: Provider, b: Provider) -> VerifyReport:
    report = VerifyReport(a.name, b.name)
    with a:
        counts_a, examples_a = _inventory(a)
    with b:
        counts_b, examples_b = _inventory(b)
    report.count_a, report.count_b = sum(counts_a.values()), sum(counts_b.values())
    for key in sorted(set(counts_a) | set(counts_b)):
        extra_a = counts_a[key] - counts_b[key]
        if extra_a > 0:
            content, metadata = examples_a[key]
            report.differences.append(Difference(content, metadata, a.name, extra_a))
        elif extra_a < 0:
            content, metadata = examples_b[key]
            report.differences.append(Difference(content, metadata, b.name, -extra_a))
    return report


def record_verify(
    store: StagingStore, a: str, b: str, report: VerifyReport | None, error: str | None = None
) -> None:
    """Keep what a verify found (or why it could not compare) for the cutover readiness view."""
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO verify_results (a, b, at, reconciled, count_a, count_b, differences, "
            "error, journal_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
            "(SELECT COALESCE(MAX(seq), 0) FROM changes))",
            (
                a,
                b,
                utc_now_iso(),
                int(report is not None and report.reconciled),
                report.count_a if report else None,
                report.count_b if report else None,
                sum(d.count for d in report.differences) if report else 0,
                error,
            ),
        )


def verify_and_record(a: Provider, b: Provider, database: Path) -> VerifyReport:
    """verify(a, b), its outcome kept in the staging database when there is one."""
    try:
        report = verify(a, b)
    except MemsyncError as exc:
        _record_quietly(database, a.name, b.name, None, str(exc))
        raise
    _record_quietly(database, a.name, b.name, report, None)
    return report


def _record_quietly(
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
