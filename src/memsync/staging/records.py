"""Reads of the mirror the engine needs beside the planner's view: whole records to write,
the record an update replaces, a conflict's versions, version tokens for freshness.

Lists of keys go in as one JSON array parameter (``json_each``), never spliced into the SQL.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from memsync.records import Record
from memsync.staging.rows import row_record


class Mirrored(NamedTuple):
    """A record in the mirror, with the provider and memory it belongs to."""

    provider: str
    link_id: str
    record: Record


_BY_LINKS = (
    "SELECT provider, provider_id, link_id, content, metadata, scope_key, created_at, "
    "updated_at, version, provenance, origin, content_hash, fingerprint, fp_version, seen_run, "
    "expiration_date FROM records INDEXED BY records_by_link "
    "WHERE link_id IN (SELECT value FROM json_each(?))"
)
_BY_IDS = (
    "SELECT provider, provider_id, link_id, content, metadata, scope_key, created_at, "
    "updated_at, version, provenance, origin, content_hash, fingerprint, fp_version, seen_run, "
    "expiration_date FROM records WHERE (provider, provider_id) IN "
    "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
)
_WITH_FINGERPRINT = (
    "SELECT provider, provider_id, link_id, content, metadata, scope_key, created_at, "
    "updated_at, version, provenance, origin, content_hash, fingerprint, fp_version, seen_run, "
    "expiration_date FROM records INDEXED BY records_by_link "
    "WHERE provider = ? AND link_id = ? AND fingerprint = ? LIMIT 1"
)
_VERSIONS = (
    "SELECT provider_id, version FROM records WHERE provider = ? "
    "AND provider_id IN (SELECT value FROM json_each(?))"
)


class MirrorRecords:
    """Engine-side reads and removals of mirrored records (``store.records``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def of_memories(self, link_ids: Sequence[str]) -> Iterator[Mirrored]:
        """Every record of these memories, in every provider."""
        for row in self.conn.execute(_BY_LINKS, (json.dumps(list(link_ids)),)):
            yield Mirrored(row["provider"], row["link_id"], row_record(row))

    def by_ids(self, keys: Sequence[tuple[str, str]]) -> Iterator[Mirrored]:
        """The records with these (provider, provider id) keys, those that exist."""
        for row in self.conn.execute(_BY_IDS, (json.dumps([list(key) for key in keys]),)):
            yield Mirrored(row["provider"], row["link_id"], row_record(row))

    def with_fingerprint(self, provider: str, link_id: str, fingerprint: str) -> Record | None:
        """The provider's record of a memory with this fingerprint, if it still holds it."""
        row = self.conn.execute(_WITH_FINGERPRINT, (provider, link_id, fingerprint)).fetchone()
        return row_record(row) if row is not None else None

    def versions(self, provider: str, provider_ids: Sequence[str]) -> dict[str, str | None]:
        """Mirrored version tokens of these records (absent ids: not mirrored)."""
        cursor = self.conn.cursor()
        cursor.row_factory = None
        return dict(cursor.execute(_VERSIONS, (provider, json.dumps(list(provider_ids)))))

    def remove(self, keys: Sequence[tuple[str, str]]) -> None:
        """Drop mirrored records a write deleted or replaced, by (provider, provider id)."""
        self.conn.executemany("DELETE FROM records WHERE provider = ? AND provider_id = ?", keys)
