"""The mirror (``records``): each provider's memories as last listed, what one listing saw,
and the reads the engine makes of it (whole records to write, freshness tokens).

The seen set of the listing under way is a temporary table (``temp.seen``): a full listing's
removals are the staged records it did not return. Id lists go to SQLite as one JSON array
(``json_each``), never spliced into a statement.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from memsync.base.dream import Dream
from memsync.base.records import Record
from memsync.staging.rows import UPSERT_RECORD, row_record

_CHUNK = 500  # ids per lookup: one page's worth, so a lookup's JSON stays small


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


class StagedVersion(NamedTuple):
    """What the mirror holds of a record: enough to tell whether a listing changed it, and
    the dates a new version is judged by (a created_at it lacks, an updated_at it rolls back)."""

    link_id: str
    fingerprint: str
    version: str | None
    created_at: str | None = None
    updated_at: str | None = None


class StagedRef(NamedTuple):
    """A staged record by id, with its memory, expiry and Dream marks (a removal candidate)."""

    provider_id: str
    link_id: str
    expiration_date: str | None
    provenance: str | None = None  # the staged provenance's JSON

    @property
    def retired(self) -> bool:
        """Whether Dream had superseded or merged it when it was staged."""
        return Dream.of(json.loads(self.provenance or "{}")).retired


class KeptFields(NamedTuple):
    """The fields memsync keeps beside a record's text, as staged (see Mirror._carry_over)."""

    metadata: dict[str, Any]
    created_at: str | None
    expiration_date: str | None
    origin: str | None
    provenance: dict[str, Any]


class TokenRefresh(NamedTuple):
    """A record listed unchanged under a new version token (or a spelling of the same text)."""

    version: str | None
    updated_at: str | None
    content: str
    provider: str
    provider_id: str


class Records:
    """The ``records`` table and the listing's seen set."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # reading ------------------------------------------------------------------------------

    def count(self, provider: str | None = None) -> int:
        if provider is None:
            row = self.conn.execute("SELECT COUNT(*) FROM records").fetchone()
        else:
            row = self.conn.execute(
                "SELECT COUNT(*) FROM records WHERE provider = ?", (provider,)
            ).fetchone()
        return int(row[0])

    def count_created_by(self, providers: Sequence[str], created_by: str) -> int:
        """The records of these providers created at or before CREATED_BY (an ISO instant;
        dates compared as instants, whatever their offset)."""
        row = self.conn.execute(
            "SELECT COUNT(*) FROM records WHERE provider IN (SELECT value FROM json_each(?)) "
            "AND julianday(created_at) <= julianday(?)",
            (json.dumps(list(providers)), created_by),
        ).fetchone()
        return int(row[0])

    def scope_of(self, providers: Sequence[str], provider_id: str) -> tuple[str, str] | None:
        """Which of these providers holds the memory PROVIDER_ID, and its text; None when
        none does."""
        row = self.conn.execute(
            "SELECT provider, content FROM records WHERE provider_id = ? "
            "AND provider IN (SELECT value FROM json_each(?)) LIMIT 1",
            (provider_id, json.dumps(list(providers))),
        ).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def of_provider(self, provider: str) -> Iterator[Record]:
        """The mirrored records of a provider, in id order, streamed."""
        cursor = self.conn.execute(
            "SELECT provider, provider_id, link_id, content, metadata, scope_key, created_at, "
            "updated_at, version, provenance, origin, content_hash, fingerprint, fp_version, "
            "seen_run, expiration_date FROM records WHERE provider = ? ORDER BY provider_id",
            (provider,),
        )
        for row in cursor:
            yield row_record(row)

    def staged_versions(self, provider: str, ids: list[str]) -> dict[str, StagedVersion]:
        """provider id -> what is staged for it, for those of IDS the mirror holds."""
        found: dict[str, StagedVersion] = {}
        for start in range(0, len(ids), _CHUNK):
            cursor = self.conn.execute(
                "SELECT provider_id, link_id, fingerprint, version, created_at, updated_at "
                "FROM records "
                "WHERE provider = ? AND provider_id IN (SELECT value FROM json_each(?))",
                (provider, json.dumps(ids[start : start + _CHUNK])),
            )
            for row in cursor:
                found[row[0]] = StagedVersion(row[1], row[2], row[3], row[4], row[5])
        return found

    def kept_fields(self, provider: str, provider_id: str) -> KeptFields:
        """What is staged beside a record's text (the record must be staged)."""
        row = self.conn.execute(
            "SELECT metadata, created_at, expiration_date, origin, provenance FROM records "
            "WHERE provider = ? AND provider_id = ?",
            (provider, provider_id),
        ).fetchone()
        return KeptFields(
            json.loads(row[0] or "{}"), row[1], row[2], row[3], json.loads(row[4] or "{}")
        )

    def refs(self, provider: str, ids: Iterable[str]) -> list[StagedRef]:
        """The staged records among IDS."""
        id_list = list(ids)
        found: list[StagedRef] = []
        for start in range(0, len(id_list), _CHUNK):
            cursor = self.conn.execute(
                "SELECT provider_id, link_id, expiration_date, provenance FROM records "
                "WHERE provider = ? AND provider_id IN (SELECT value FROM json_each(?))",
                (provider, json.dumps(id_list[start : start + _CHUNK])),
            )
            found.extend(StagedRef(*row) for row in cursor)
        return found

    def providers_holding(self, link_id: str) -> list[str]:
        """The providers whose mirror holds a record of this memory, by name."""
        cursor = self.conn.execute(
            "SELECT provider FROM records WHERE link_id = ? ORDER BY provider", (link_id,)
        )
        return [str(row[0]) for row in cursor]

    # the engine's reads: whole records to write, what an update replaces, freshness

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

    # writing ------------------------------------------------------------------------------

    def upsert(self, rows: Iterable[Sequence[Any]]) -> None:
        """Insert or replace mirror rows (made by ``record_row``) in one statement batch."""
        self.conn.executemany(UPSERT_RECORD, rows)

    def refresh_tokens(self, refreshes: Iterable[TokenRefresh]) -> None:
        """Take each record's new token and exact bytes, nothing else."""
        self.conn.executemany(
            "UPDATE records SET version = ?, updated_at = ?, content = ? "
            "WHERE provider = ? AND provider_id = ?",
            refreshes,
        )

    def remove(self, keys: Iterable[tuple[str, str]]) -> None:
        """Drop mirrored records by (provider, provider id): gone from a listing, or deleted
        or replaced by a write."""
        self.conn.executemany("DELETE FROM records WHERE provider = ? AND provider_id = ?", keys)

    def forget_provider(self, provider: str) -> None:
        """Drop the provider's mirror, bases and cursor (its store moved: start afresh)."""
        self.conn.execute("DELETE FROM records WHERE provider = ?", (provider,))
        self.conn.execute("DELETE FROM links WHERE provider = ?", (provider,))
        self.conn.execute("DELETE FROM cursors WHERE provider = ?", (provider,))
        self.conn.execute("DELETE FROM rollbacks WHERE provider = ?", (provider,))

    def record_skipped(self, rows: Iterable[tuple[int, str, str, str, str]]) -> None:
        """(run id, provider, provider id, reason, at): records listed but not carried."""
        self.conn.executemany("INSERT OR REPLACE INTO skipped VALUES (?, ?, ?, ?, ?)", rows)

    # the listing's seen set ---------------------------------------------------------------

    def start_listing(self) -> None:
        """An empty seen set for a new listing."""
        self.conn.execute("CREATE TEMP TABLE IF NOT EXISTS seen (provider_id TEXT PRIMARY KEY)")
        self.conn.execute("DELETE FROM temp.seen")

    def already_seen(self, ids: list[str]) -> set[str]:
        """Those of IDS this listing returned before (offset paging can repeat items)."""
        repeated: set[str] = set()
        for start in range(0, len(ids), _CHUNK):
            cursor = self.conn.execute(
                "SELECT provider_id FROM temp.seen "
                "WHERE provider_id IN (SELECT value FROM json_each(?))",
                (json.dumps(ids[start : start + _CHUNK]),),
            )
            repeated.update(row[0] for row in cursor)
        return repeated

    def mark_seen(self, ids: Iterable[str]) -> None:
        self.conn.executemany("INSERT INTO temp.seen VALUES (?)", [(i,) for i in ids])

    def unseen(self, provider: str) -> list[StagedRef]:
        """Staged records of PROVIDER this listing did not return."""
        cursor = self.conn.execute(
            "SELECT provider_id, link_id, expiration_date, provenance FROM records "
            "WHERE provider = ? AND provider_id NOT IN (SELECT provider_id FROM temp.seen)",
            (provider,),
        )
        return [StagedRef(*row) for row in cursor]
