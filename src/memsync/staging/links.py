"""Links: what each provider held when memsync last reconciled a memory, and what was agreed.

``links`` holds one base per (memory, provider): the record and fingerprint memsync last
took into account there. ``link_state`` holds the agreed version of each memory (or that it
is deleted). The planner reads them beside the mirror as a ``LinkView``; decisions and
successful writes move them.

Reads for a chunk of memories take the keys as one JSON array parameter (``json_each``).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from typing import NamedTuple


class CurrentVersion(NamedTuple):
    """A record of a memory in the mirror, as the planner sees it."""

    link_id: str
    provider: str
    provider_id: str
    fingerprint: str
    updated_at: str | None


class Base(NamedTuple):
    """What a provider held when memsync last reconciled the memory there."""

    link_id: str
    provider: str
    fingerprint: str
    provider_id: str | None


class Agreement(NamedTuple):
    """A decision's agreed version: the winner's record with this fingerprint."""

    link_id: str
    winner: str
    fingerprint: str | None
    now: str


class Acknowledgement(NamedTuple):
    """A provider's record with this fingerprint, its new base for the memory."""

    now: str
    link_id: str
    provider: str
    fingerprint: str


class Agreed(NamedTuple):
    """The version of a memory everyone converges on (or that it is deleted)."""

    link_id: str
    fingerprint: str | None
    deleted: bool
    version_at: str | None


class NewBase(NamedTuple):
    """A base moved by a successful write."""

    link_id: str
    provider: str
    provider_id: str
    fingerprint: str
    content_hash: str
    synced_at: str


class FirstAgreement(NamedTuple):
    """An agreed version recorded by a write when no decision recorded one before."""

    link_id: str
    fingerprint: str
    content_hash: str
    version_at: str
    updated_at: str


_CURRENT = (
    "SELECT link_id, provider, provider_id, fingerprint, updated_at FROM records "
    "WHERE link_id IN (SELECT value FROM json_each(?)) ORDER BY provider_id"
)
_BASES = (
    "SELECT link_id, provider, fingerprint, provider_id FROM links "
    "WHERE link_id IN (SELECT value FROM json_each(?))"
)
_AGREED = (
    "SELECT link_id, fingerprint, deleted, version_at FROM link_state "
    "WHERE link_id IN (SELECT value FROM json_each(?))"
)
_ACKNOWLEDGE = (
    "INSERT INTO links (link_id, provider, provider_id, fingerprint, content_hash, synced_at) "
    "SELECT link_id, provider, provider_id, fingerprint, content_hash, ? "
    "FROM records INDEXED BY records_by_link "
    "WHERE link_id = ? AND provider = ? AND fingerprint = ? LIMIT 1 "
    "ON CONFLICT (link_id, provider) DO UPDATE SET provider_id = excluded.provider_id, "
    "fingerprint = excluded.fingerprint, content_hash = excluded.content_hash, "
    "synced_at = excluded.synced_at"
)
_AGREE = (
    "INSERT INTO link_state (link_id, fingerprint, content_hash, deleted, version_at, "
    "updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (link_id) DO UPDATE SET "
    "fingerprint = excluded.fingerprint, content_hash = excluded.content_hash, "
    "deleted = excluded.deleted, version_at = excluded.version_at, "
    "updated_at = excluded.updated_at"
)
# The agreed version, its content hash and update time read from the winner's record in one
# lookup (none found: no hash, and the decision's time).
_AGREE_ON_RECORD = (
    "INSERT INTO link_state (link_id, fingerprint, content_hash, deleted, version_at, "
    "updated_at) SELECT ?1, ?3, winner.content_hash, 0, "
    "COALESCE(NULLIF(winner.updated_at, ''), ?4), ?4 FROM (SELECT 1) LEFT JOIN "
    "(SELECT content_hash, updated_at FROM records INDEXED BY records_by_link "
    "WHERE link_id = ?1 AND provider = ?2 AND fingerprint = ?3 LIMIT 1) AS winner ON true "
    "WHERE true ON CONFLICT (link_id) DO UPDATE SET "
    "fingerprint = excluded.fingerprint, content_hash = excluded.content_hash, "
    "deleted = excluded.deleted, version_at = excluded.version_at, "
    "updated_at = excluded.updated_at"
)
_SET_BASE = (
    "INSERT INTO links (link_id, provider, provider_id, fingerprint, content_hash, "
    "synced_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (link_id, provider) DO UPDATE "
    "SET provider_id = excluded.provider_id, fingerprint = excluded.fingerprint, "
    "content_hash = excluded.content_hash, synced_at = excluded.synced_at"
)
_AGREE_IF_NEW = (
    "INSERT INTO link_state (link_id, fingerprint, content_hash, deleted, version_at, "
    "updated_at) VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT (link_id) DO NOTHING"
)


def _keys(link_ids: Sequence[str]) -> str:
    return json.dumps(list(link_ids))


class Links:
    """The links and link_state tables (``store.links``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # the planner's view -------------------------------------------------------------------

    def current_versions(self, link_ids: Sequence[str]) -> list[CurrentVersion]:
        """Every mirrored record of these memories, in provider-id order."""
        cursor = self.conn.cursor()
        cursor.row_factory = None
        return [CurrentVersion._make(row) for row in cursor.execute(_CURRENT, (_keys(link_ids),))]

    def bases(self, link_ids: Sequence[str]) -> list[Base]:
        cursor = self.conn.cursor()
        cursor.row_factory = None
        return [Base._make(row) for row in cursor.execute(_BASES, (_keys(link_ids),))]

    def agreed(self, link_ids: Sequence[str]) -> list[Agreed]:
        cursor = self.conn.cursor()
        cursor.row_factory = None
        return [
            Agreed(link_id, fingerprint, bool(deleted), version_at)
            for link_id, fingerprint, deleted, version_at in cursor.execute(
                _AGREED, (_keys(link_ids),)
            )
        ]

    # decisions ----------------------------------------------------------------------------

    def forget_bases(self, rows: Iterable[tuple[str, str]]) -> None:
        """Each provider is known to hold nothing of the memory (link_id, provider)."""
        self.conn.executemany("DELETE FROM links WHERE link_id = ? AND provider = ?", rows)

    def acknowledge(self, rows: Iterable[Acknowledgement]) -> None:
        """Each provider's record with the fingerprint becomes its base for the memory."""
        self.conn.executemany(_ACKNOWLEDGE, rows)

    def agree(self, rows: Iterable[Agreement]) -> None:
        """Record the versions everyone converges on, each with its winner's own update time
        (the time of the decision when the winner's record has none)."""
        self.conn.executemany(_AGREE_ON_RECORD, rows)

    def agree_deleted(self, link_id: str, now: str) -> None:
        """Record that the memory is deleted everywhere."""
        self.conn.execute(_AGREE, (link_id, None, None, 1, now, now))

    # successful writes --------------------------------------------------------------------

    def set_bases(self, rows: Iterable[NewBase]) -> None:
        self.conn.executemany(_SET_BASE, rows)

    def agree_if_new(self, rows: Iterable[FirstAgreement]) -> None:
        self.conn.executemany(_AGREE_IF_NEW, rows)

    def drop_bases(self, rows: Iterable[tuple[str, str, str | None]]) -> None:
        """Bases of (memory, provider) that pointed at a record now deleted (its id given)."""
        self.conn.executemany(
            "DELETE FROM links WHERE link_id = ? AND provider = ? AND provider_id IS ?", rows
        )
