"""The SQL of adoption (``engine/adopt.py``): find unlinked copies of one text, relink them.

Everything runs inside the staging database: candidates go to a temporary table, the groups
come from a join of that table with itself (and with ``link_state``) on (scope, content hash),
streamed in key order, so memory stays flat however many records both sides hold.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

SETUP = (
    "CREATE TEMP TABLE IF NOT EXISTS adopt_scopes (provider TEXT PRIMARY KEY, scope TEXT)",
    "CREATE TEMP TABLE IF NOT EXISTS adopt_candidates ("
    "provider TEXT NOT NULL, provider_id TEXT NOT NULL, link_id TEXT NOT NULL, "
    "scope TEXT NOT NULL, content_hash TEXT NOT NULL, created_at TEXT NOT NULL, "
    "PRIMARY KEY (provider, provider_id)) WITHOUT ROWID",
    # Indexes are built after the candidates are in (a sort, not a random insert per row).
    "DROP INDEX IF EXISTS temp.adopt_candidates_by_key",
    "DROP INDEX IF EXISTS temp.adopt_candidates_by_link",
    "DELETE FROM temp.adopt_scopes",
    "DELETE FROM temp.adopt_candidates",
)

CANDIDATE_INDEXES = (
    "CREATE INDEX temp.adopt_candidates_by_key ON adopt_candidates (content_hash, scope, provider)",
    "CREATE INDEX temp.adopt_candidates_by_link ON adopt_candidates (link_id)",
)

# Cheap existence checks on primary-key prefixes: with unlinked records in one provider only
# and no record anywhere else, there is nothing to pair them with (a first sync into empty
# stores), and the join is skipped.
HAS_CANDIDATE = "SELECT 1 FROM temp.adopt_candidates WHERE provider = ? LIMIT 1"
HAS_RECORD = "SELECT 1 FROM records WHERE provider = ? LIMIT 1"

SCOPES = "INSERT INTO temp.adopt_scopes (provider, scope) VALUES (?, ?)"

# A candidate is a record alone in a logical memory memsync never reconciled: no base in any
# provider, no agreed version, no other record. Records with origin markers are found here
# only when the memory they came from is gone from staging everywhere (a rebuilt database).
# The scope is the star's for single-scope providers (adopt_scopes.scope), else the record's.
# The providers drive (CROSS JOIN keeps that order): only their records are read, by primary
# key, so a cycle over one scope of many does not scan every scope's records.
CANDIDATES = """
INSERT INTO temp.adopt_candidates (provider, provider_id, link_id, scope, content_hash, created_at)
SELECT r.provider, r.provider_id, r.link_id, COALESCE(s.scope, r.scope_key), r.content_hash,
       COALESCE(r.created_at, '')
FROM temp.adopt_scopes s CROSS JOIN records r ON r.provider = s.provider
WHERE NOT EXISTS (SELECT 1 FROM links b WHERE b.link_id = r.link_id)
  AND NOT EXISTS (SELECT 1 FROM link_state st WHERE st.link_id = r.link_id)
  AND NOT EXISTS (
      SELECT 1 FROM records o INDEXED BY records_by_link
      WHERE o.link_id = r.link_id AND (o.provider != r.provider OR o.provider_id != r.provider_id)
  )
"""

# Copies in groups that another provider also holds unlinked, in key order (the index's:
# no sort; the order within a group is pair_copies' business).
SHARED_COPIES = """
SELECT c.content_hash, c.scope, c.provider, c.provider_id, c.link_id, c.created_at
FROM temp.adopt_candidates c
WHERE EXISTS (
    SELECT 1 FROM temp.adopt_candidates o
    WHERE o.content_hash = c.content_hash AND o.scope = c.scope AND o.provider != c.provider
) OR EXISTS (SELECT 1 FROM temp.open_memories m
             WHERE m.content_hash = c.content_hash AND m.scope = c.scope)
ORDER BY c.content_hash, c.scope
"""

# Memories staging already knows (a record with a logical id that is not a lone candidate),
# holding the same text in the same scope, that the candidate's provider neither holds nor
# was reconciled with: the copy joins such a memory first. This covers a provider that was
# away when the memory was agreed, and a rebuilt database, where records memsync wrote carry
# their origin and so are linked already, while the copies they were adopted with are not.
# One pass over the records of the providers in play (``adopt_scopes``, by primary key),
# probing the candidates by hash (CROSS JOIN keeps that order).
OPEN_MEMORIES_SETUP = (
    "CREATE TEMP TABLE IF NOT EXISTS open_memories ("
    "link_id TEXT PRIMARY KEY, scope TEXT NOT NULL, content_hash TEXT NOT NULL, "
    "present TEXT NOT NULL, anchor_provider TEXT, anchor_id TEXT) WITHOUT ROWID",
    "CREATE INDEX IF NOT EXISTS temp.open_memories_by_key ON open_memories (content_hash, scope)",
    "DELETE FROM temp.open_memories",
)

OPEN_MEMORIES = """
INSERT OR IGNORE INTO temp.open_memories
    (link_id, scope, content_hash, present, anchor_provider, anchor_id)
SELECT h.link_id, c.scope, c.content_hash,
    (SELECT group_concat(provider, char(31)) FROM (
        SELECT provider FROM records INDEXED BY records_by_link WHERE link_id = h.link_id
        UNION SELECT provider FROM links WHERE link_id = h.link_id)),
    h.provider, h.provider_id
FROM temp.adopt_scopes hs
CROSS JOIN records h
CROSS JOIN temp.adopt_candidates c
WHERE h.provider = hs.provider
  AND NOT EXISTS (SELECT 1 FROM temp.adopt_candidates x WHERE x.link_id = h.link_id)
  AND c.content_hash = h.content_hash AND c.scope = COALESCE(hs.scope, h.scope_key)
  AND c.provider != h.provider
  AND NOT EXISTS (SELECT 1 FROM link_state st WHERE st.link_id = h.link_id AND st.deleted = 1)
  AND NOT EXISTS (SELECT 1 FROM links b WHERE b.link_id = h.link_id AND b.provider = c.provider)
  AND NOT EXISTS (
      SELECT 1 FROM records r INDEXED BY records_by_link
      WHERE r.link_id = h.link_id AND r.provider = c.provider
  )
"""

OPEN_MEMORIES_IN_ORDER = """
SELECT content_hash, scope, link_id, present, anchor_provider, anchor_id
FROM temp.open_memories ORDER BY content_hash, scope, link_id
"""

RELINK = "UPDATE records SET link_id = ? WHERE provider = ? AND provider_id = ?"

RECORD = """
INSERT INTO adoptions (run_id, at, link_id, provider, provider_id, old_link_id, from_provider,
    from_provider_id, scope_key, content_hash)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
"""


class SharedCopy(NamedTuple):
    """An unlinked record whose text (in its scope) another provider also holds unlinked."""

    content_hash: str
    scope: str
    provider: str
    provider_id: str
    link_id: str
    created_at: str


class OpenMemoryRow(NamedTuple):
    """A memory staging knows, holding a candidate's text, that the candidate's provider lacks."""

    content_hash: str
    scope: str
    link_id: str
    present: str | None  # providers holding or reconciled with it, joined by char(31)
    anchor_provider: str | None
    anchor_id: str | None


class AdoptionSearch:
    """One adoption pass's temporary tables and the relinks it writes (``engine/adopt.py``).

    Runs inside the caller's write transaction: a dry run rolls the relinks back.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def find_candidates(self, scopes: Iterable[tuple[str, str | None]]) -> None:
        """Collect the unlinked records of the providers in SCOPES ((provider, star scope or
        None for the record's own)) into the candidates table."""
        for statement in SETUP:
            self.conn.execute(statement)
        self.conn.executemany(SCOPES, scopes)
        self.conn.execute(CANDIDATES)

    def has_candidates(self, provider: str) -> bool:
        return self.conn.execute(HAS_CANDIDATE, (provider,)).fetchone() is not None

    def has_records(self, provider: str) -> bool:
        return self.conn.execute(HAS_RECORD, (provider,)).fetchone() is not None

    def find_open_memories(self) -> None:
        """Index the candidates and collect the memories they could join."""
        for statement in (*CANDIDATE_INDEXES, *OPEN_MEMORIES_SETUP):
            self.conn.execute(statement)
        self.conn.execute(OPEN_MEMORIES)

    def shared_copies(self) -> Iterator[SharedCopy]:
        """Candidates in groups another provider (or an open memory) shares, in key order."""
        cursor = self.conn.cursor()
        cursor.row_factory = _shared_copy
        return cursor.execute(SHARED_COPIES)

    def open_memories(self) -> Iterator[OpenMemoryRow]:
        """The open memories in key order (streamed beside ``shared_copies``)."""
        cursor = self.conn.cursor()
        cursor.row_factory = _open_memory
        return cursor.execute(OPEN_MEMORIES_IN_ORDER)

    def relink(
        self, relinks: Iterable[tuple[str, str, str]], journal: Iterable[Sequence[Any]]
    ) -> None:
        """Move records to their new logical ids ((link id, provider, provider id)) and
        journal each adoption (RECORD's columns)."""
        self.conn.executemany(RELINK, relinks)
        self.conn.executemany(RECORD, journal)


def _shared_copy(_cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> SharedCopy:
    return SharedCopy(*row)


def _open_memory(_cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> OpenMemoryRow:
    return OpenMemoryRow(*row)
