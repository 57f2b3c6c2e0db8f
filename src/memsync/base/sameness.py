"""What "the same memory" means for records memsync never linked: one definition for everyone.

Two records are copies of one memory when they hold the same normalised text (their
``content_hash``) in the same scope. Metadata is not part of it: equal text with different
metadata is one memory whose versions differ, settled like any other difference. Copies pair
one to one: a store may hold a text twice (Mem0 allows it), so two copies on one side and one
on the other are one shared memory plus one the other side lacks.

The sync engine (``engine/adopt.py``, in SQL), ``migrate``/``import_mem0`` and PMM import with
``skip_duplicates`` all use this key and this counting.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from memsync.base.records import Record

SameKey = tuple[str, str]  # (scope, content_hash)


def star_scope(provider_scopes: Iterable[str]) -> str:
    """The one scope that every single-scope provider of a configuration stands for.

    A single-scope provider (a Mem0 user, a mnem store, a Cognee dataset) names its scope in
    its own terms; configured side by side, they mirror one scope whatever each calls it. The
    first non-empty name (the active backend's, when the caller lists it first) stands for all.
    """
    return next((scope for scope in provider_scopes if scope), "")


def scope_of(provider_scope: str, record_scope: str, star: str) -> str:
    """The scope a record is compared in: the star's for a single-scope provider, else its own."""
    return star if provider_scope else record_scope


def same_key(scope: str, record: Record) -> SameKey:
    return (scope, record.content_hash)


class Copies:
    """Copies a store holds per (scope, text), claimed one at a time (one-to-one pairing)."""

    def __init__(self) -> None:
        self._left: Counter[SameKey] = Counter()

    def add(self, key: SameKey) -> None:
        self._left[key] += 1

    def claim(self, key: SameKey) -> bool:
        """Take one unclaimed copy of KEY: True when there was one (the memory is held)."""
        if self._left[key] <= 0:
            return False
        self._left[key] -= 1
        return True
