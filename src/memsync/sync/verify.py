"""``memsync verify A B``: prove two providers hold the same memories, or show what differs.

Compares live listings (not the staging mirror): the multiset of (normalised text, user
metadata) within each provider's scope, so every copy of a text counts. Ids and timestamps
differ between providers by nature and are not compared.

Equal counts are not enough: two stores that each held a text before memsync linked them, and
each got the other's copy (what a first sync without adoption does), hold it twice each, in
step. The origin keys tell: each side holds, as a copy, a memory the other side holds as its
own. Such a text is reported as duplicated, and the two are not called reconciled.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memsync.errors import MemsyncError
from memsync.providers.base import Provider
from memsync.records import canonical_json


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

    @property
    def reconciled(self) -> bool:
        return not self.differences and not self.duplicated

    def as_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "count": {self.a: self.count_a, self.b: self.count_b},
            "reconciled": self.reconciled,
            "differences": [d.as_dict() for d in self.differences],
            "duplicated": [d.as_dict() for d in self.duplicated],
        }


@dataclass
class _Origins:
    """Per text: the logical keys a provider holds as its own, and those it holds as copies."""

    own: dict[str, set[str]] = field(default_factory=dict)
    copied: dict[str, set[str]] = field(default_factory=dict)
    copies: Counter[str] = field(default_factory=Counter)
    texts: dict[str, str] = field(default_factory=dict)

    def add(self, provider: Provider, record: Any) -> None:
        key = provider.origin_of(record)
        text = record.content_hash
        mine = key == f"{provider.family}:{record.id}"
        (self.own if mine else self.copied).setdefault(text, set()).add(key)
        self.copies[text] += 1
        self.texts.setdefault(text, record.content)


def _copied_both_ways(a: str, b: str, origins_a: _Origins, origins_b: _Origins) -> list[Duplicated]:
    found = []
    for text, copied_into_a in origins_a.copied.items():
        from_b = copied_into_a & origins_b.own.get(text, set())
        from_a = origins_b.copied.get(text, set()) & origins_a.own.get(text, set())
        if from_a and from_b:
            copies = {a: origins_a.copies[text], b: origins_b.copies[text]}
            found.append(Duplicated(origins_a.texts[text], copies))
    return sorted(found, key=lambda d: d.content)


def _inventory(
    provider: Provider, origins: _Origins
) -> tuple[Counter[str], dict[str, tuple[str, dict[str, Any]]]]:
    counts: Counter[str] = Counter()
    examples: dict[str, tuple[str, dict[str, Any]]] = {}
    listing = provider.listing()
    for page in listing.pages():
        for record in page.records:
            key = canonical_json([record.content, record.metadata])
            counts[key] += 1
            examples.setdefault(key, (record.content, record.metadata))
            origins.add(provider, record)
    if not listing.complete:
        raise MemsyncError(
            f"cannot verify: the listing of {provider.name} was partial "
            f"({listing.partial_reason or 'incomplete'}); try again"
        )
    return counts, examples


def verify(a: Provider, b: Provider) -> VerifyReport:
    report = VerifyReport(a.name, b.name)
    origins_a, origins_b = _Origins(), _Origins()
    with a:
        counts_a, examples_a = _inventory(a, origins_a)
    with b:
        counts_b, examples_b = _inventory(b, origins_b)
    report.duplicated = _copied_both_ways(a.name, b.name, origins_a, origins_b)
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
