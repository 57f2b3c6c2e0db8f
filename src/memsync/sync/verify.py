"""``memsync verify A B``: prove two providers hold the same memories, or show what differs.

Compares live listings (not the staging mirror): the multiset of (normalised text, user
metadata) within each provider's scope. Ids and timestamps differ between providers by
nature and are not compared.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memsync.errors import MemsyncError
from memsync.providers.base import Provider
from memsync.records import canonical_json, normalise_text


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
            # the same notion of "the same memory" as sync's fingerprint: a store that strips
            # text, or a target written before texts were carried exactly, still agrees
            key = canonical_json([normalise_text(record.content), record.metadata])
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
