"""A provider's ``exclude``: records memsync leaves alone, by id glob (and mnem content kind).

Agent frameworks keep bookkeeping beside the memories in a store: mnem's session and memory
adapters write a counter node ``{id}:_seq`` per session. Those are not memories, and copying
them into Mem0 makes them look like one. An excluded record is never copied, never written and
never deleted, in its own store or anywhere else: memsync acts as if it were not there.

The rule itself lives here (``Exclusion``): globs checked when the config loads, matching,
and splitting records, which every reader that copies or compares applies (the
mirror, verify, migrate, export). What the mirror keeps about excluded records across cycles
is ``engine/excluded.py``; a listing's pages without them, ``Listing.kept_pages``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import translate

from memsync.base.records import Record

__all__ = ["NO_EXCLUSION", "Exclusion", "check_glob"]

# Where a record carries its store's content kind: providers.mnem.convert.CONTENT_KIND_KEY
# (not imported: the providers import this module).
CONTENT_KIND_KEY = "mnem_content_kind"
GLOB_HINT = "'*' any run of characters (':' and '/' too), '?' one, '[abc]' or '[!abc]' a set"


def check_glob(glob: str) -> str:
    """The glob, or ValueError saying what is wrong with it and how to write it."""
    if not glob:
        raise ValueError("an empty glob excludes nothing; remove it")
    if glob.strip("*") == "":
        raise ValueError(
            f"{glob!r} excludes every record; to stop syncing this provider, remove it from "
            "the config"
        )
    at = 0
    while (start := glob.find("[", at)) != -1:
        end = start + 1
        if end < len(glob) and glob[end] == "!":
            end += 1
        if end < len(glob) and glob[end] == "]":
            end += 1  # a ']' first in a set is the character itself
        close = glob.find("]", end)
        if close == -1:
            raise ValueError(
                f"{glob!r}: the '[' at position {start} is never closed; write '[[]' to match "
                f"a literal '[' ({GLOB_HINT})"
            )
        at = close + 1
    return glob


@dataclass(frozen=True)
class Exclusion:
    """Which records of one provider memsync leaves alone: ids matching a glob (``ids``), or
    of a content kind (``content_kinds``; mnem's node kinds, a node without one is a note)."""

    ids: tuple[str, ...] = ()
    content_kinds: frozenset[str] = frozenset()
    _pattern: re.Pattern[str] | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        for glob in self.ids:
            check_glob(glob)
        if self.ids:
            object.__setattr__(
                self, "_pattern", re.compile("|".join(translate(g) for g in self.ids))
            )

    @classmethod
    def of(cls, entry: object) -> Exclusion:
        """The rule a provider's config entry sets (its ``exclude`` table), or none."""
        table = getattr(entry, "exclude", None)
        if table is None:
            return NO_EXCLUSION
        ids = tuple(getattr(table, "ids", ()))
        kinds = frozenset(getattr(table, "content_kinds", ()))
        return cls(ids, kinds) if ids or kinds else NO_EXCLUSION

    def __bool__(self) -> bool:
        return bool(self.ids or self.content_kinds)

    @property
    def key(self) -> str:
        """The rule as one stable string: staging keeps it to notice when the rule changes."""
        if not self:
            return ""
        kinds = ",".join(sorted(self.content_kinds))
        return "ids=" + "\x1f".join(self.ids) + ";content_kinds=" + kinds

    def describe(self) -> str:
        """The rule for a person: ids *:_seq, content kind claim."""
        parts = []
        if self.ids:
            parts.append("ids " + ", ".join(self.ids))
        if self.content_kinds:
            parts.append("content kind " + ", ".join(sorted(self.content_kinds)))
        return "; ".join(parts) or "nothing"

    def covers(self, record_id: str, content_kind: str | None = None) -> bool:
        """Whether the record with this id (and content kind) is excluded."""
        if self._pattern is not None and self._pattern.fullmatch(record_id) is not None:
            return True
        return bool(self.content_kinds) and (content_kind or "note") in self.content_kinds

    def matches(self, record: Record) -> bool:
        kind = record.provenance.get(CONTENT_KIND_KEY)
        return self.covers(record.id, kind if isinstance(kind, str) else None)

    def split(self, records: Iterable[Record]) -> tuple[list[Record], list[Record]]:
        """(kept, excluded)."""
        kept: list[Record] = []
        excluded: list[Record] = []
        for record in records:
            (excluded if self.matches(record) else kept).append(record)
        return kept, excluded


NO_EXCLUSION = Exclusion()
