"""The change journal (``changes``) and the adoption journal beside it: append, and read back.

Both are append-only. Reads serve ``memsync log``, ``history``, ``restore --at``, verify's
look for texts copied both ways, the status page's search and the cutover check.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from memsync.base.records import Record, utc_now_iso
from memsync.staging.rows import row_record

INSERT_CHANGE = (
    "INSERT INTO changes (run_id, at, provider, provider_id, link_id, kind, content, metadata, "
    "scope_key, created_at, updated_at, version, provenance, fingerprint, content_hash, origin, "
    "expiration_date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def journal_row(
    run_id: int,
    provider: str,
    link_id: str,
    kind: str,
    record: Record | None,
    provider_id: str,
    at: str | None = None,
) -> tuple[Any, ...]:
    """A row of the change journal (INSERT_CHANGE's order); a removal carries no content.

    ``at`` is when it happened (now by default). The metadata and provenance are the same
    JSON the record's staged row holds, serialised once for both."""
    at = at or utc_now_iso()
    if record is None:
        return (run_id, at, provider, provider_id, link_id, kind) + (None,) * 11
    return (
        run_id,
        at,
        provider,
        provider_id,
        link_id,
        kind,
        record.content,
        record.metadata_json,
        record.scope_key,
        record.created_at,
        record.updated_at,
        record.version,
        record.provenance_json,
        record.fingerprint,
        record.content_hash,
        record.origin,
        record.expiration_date,
    )


class LoggedChange(NamedTuple):
    """A journal entry as `memsync log` shows it."""

    seq: int
    at: str
    provider: str
    provider_id: str
    link_id: str
    kind: str
    content: str | None


class LoggedAdoption(NamedTuple):
    """An adoption as `memsync log` shows it, with the adopted record's current text."""

    at: str
    provider: str
    provider_id: str
    link_id: str
    from_provider: str | None
    from_provider_id: str | None
    content: str | None


class AdoptionEntry(NamedTuple):
    """An adoption in a memory's history: which record joined, leaving which logical id."""

    at: str
    provider: str
    provider_id: str
    link_id: str
    old_link_id: str
    from_provider: str | None
    from_provider_id: str | None
    content: str | None


class Version(NamedTuple):
    """One journalled version of a memory in one provider (`memsync history`)."""

    seq: int
    at: str
    run_id: int | None
    provider: str
    provider_id: str
    link_id: str
    kind: str
    content: str | None
    metadata: str | None
    updated_at: str | None
    fingerprint: str | None
    provenance: str | None


class FirstSighting(NamedTuple):
    """How the journal first met a record in its memory: listed (added) or written."""

    kind: str
    seq: int
    link_id: str


class LatestText(NamedTuple):
    at: str
    provider: str
    content: str


# `memsync log`: one fixed statement per filter shape (a provider list or not; since is an
# optional bound). The list goes in as JSON, so the provider index still answers it.
_LOG_ALL = (
    "SELECT seq, at, provider, provider_id, link_id, kind, content FROM changes "
    "WHERE (?1 IS NULL OR at >= ?1) ORDER BY seq DESC LIMIT ?2"
)
_LOG_OF = (
    "SELECT seq, at, provider, provider_id, link_id, kind, content FROM changes "
    "WHERE provider IN (SELECT value FROM json_each(?3)) AND (?1 IS NULL OR at >= ?1) "
    "ORDER BY seq DESC LIMIT ?2"
)
_ADOPTED_ALL = (
    "SELECT a.at, a.provider, a.provider_id, a.link_id, a.from_provider, a.from_provider_id, "
    "(SELECT content FROM records r WHERE r.provider = a.provider "
    "AND r.provider_id = a.provider_id) AS content FROM adoptions a "
    "WHERE (?1 IS NULL OR a.at >= ?1) ORDER BY a.seq DESC LIMIT ?2"
)
_ADOPTED_OF = (
    "SELECT a.at, a.provider, a.provider_id, a.link_id, a.from_provider, a.from_provider_id, "
    "(SELECT content FROM records r WHERE r.provider = a.provider "
    "AND r.provider_id = a.provider_id) AS content FROM adoptions a "
    "WHERE a.provider IN (SELECT value FROM json_each(?3)) AND (?1 IS NULL OR a.at >= ?1) "
    "ORDER BY a.seq DESC LIMIT ?2"
)


# `memsync log --follow`: what was journalled after the last entry shown (by seq: the
# primary key answers it, so a poll that finds nothing costs one index seek).
_AFTER_ALL = (
    "SELECT seq, at, provider, provider_id, link_id, kind, content FROM changes "
    "WHERE seq > ?1 ORDER BY seq LIMIT ?2"
)
_AFTER_OF = (
    "SELECT seq, at, provider, provider_id, link_id, kind, content FROM changes "
    "WHERE seq > ?1 AND provider IN (SELECT value FROM json_each(?3)) ORDER BY seq LIMIT ?2"
)
_ADOPTED_AFTER_ALL = (
    "SELECT a.seq, a.at, a.provider, a.provider_id, a.link_id, a.from_provider, "
    "a.from_provider_id, (SELECT content FROM records r WHERE r.provider = a.provider "
    "AND r.provider_id = a.provider_id) AS content FROM adoptions a "
    "WHERE a.seq > ?1 ORDER BY a.seq LIMIT ?2"
)
_ADOPTED_AFTER_OF = (
    "SELECT a.seq, a.at, a.provider, a.provider_id, a.link_id, a.from_provider, "
    "a.from_provider_id, (SELECT content FROM records r WHERE r.provider = a.provider "
    "AND r.provider_id = a.provider_id) AS content FROM adoptions a "
    "WHERE a.seq > ?1 AND a.provider IN (SELECT value FROM json_each(?3)) "
    "ORDER BY a.seq LIMIT ?2"
)


class Journal:
    """The ``changes`` and ``adoptions`` tables."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # writing ------------------------------------------------------------------------------

    def append(self, rows: Iterable[Sequence[Any]]) -> None:
        """Journal rows made by ``journal_row``, in one statement batch."""
        self.conn.executemany(INSERT_CHANGE, rows)

    # the log ------------------------------------------------------------------------------

    def newest_changes(
        self, providers: list[str] | None, since: str | None, limit: int
    ) -> list[LoggedChange]:
        """The newest LIMIT entries, newest first, of PROVIDERS (None: all) at or after SINCE."""
        return self._log(_LOG_ALL, _LOG_OF, LoggedChange, providers, since, limit)

    def newest_adoptions(
        self, providers: list[str] | None, since: str | None, limit: int
    ) -> list[LoggedAdoption]:
        """The newest LIMIT adoptions, newest first, of PROVIDERS (None: all) since SINCE."""
        return self._log(_ADOPTED_ALL, _ADOPTED_OF, LoggedAdoption, providers, since, limit)

    def _log(
        self,
        every: str,
        some: str,
        row_type: Any,
        providers: list[str] | None,
        since: str | None,
        limit: int,
    ) -> list[Any]:
        if providers is None:
            cursor = self.conn.execute(every, (since, limit))
        else:
            cursor = self.conn.execute(some, (since, limit, json.dumps(providers)))
        return [row_type(*row) for row in cursor]

    def changes_after(
        self, seq: int, providers: list[str] | None, limit: int
    ) -> list[LoggedChange]:
        """Up to LIMIT entries after SEQ, oldest first, of PROVIDERS (None: all)."""
        if providers is None:
            cursor = self.conn.execute(_AFTER_ALL, (seq, limit))
        else:
            cursor = self.conn.execute(_AFTER_OF, (seq, limit, json.dumps(providers)))
        return [LoggedChange(*row) for row in cursor]

    def adoptions_after(
        self, seq: int, providers: list[str] | None, limit: int
    ) -> list[tuple[int, LoggedAdoption]]:
        """Up to LIMIT adoptions after SEQ, oldest first, each with its seq."""
        if providers is None:
            cursor = self.conn.execute(_ADOPTED_AFTER_ALL, (seq, limit))
        else:
            cursor = self.conn.execute(_ADOPTED_AFTER_OF, (seq, limit, json.dumps(providers)))
        return [(int(row[0]), LoggedAdoption(*row[1:])) for row in cursor]

    def newest_adoption_seq(self) -> int:
        row = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM adoptions").fetchone()
        return int(row[0])

    # one memory's history -----------------------------------------------------------------

    def link_of(self, memory: str) -> str | None:
        """The logical id MEMORY names: a logical id, or a record's id (adopted or not)."""
        for statement, params in (
            ("SELECT link_id FROM changes WHERE link_id = ? LIMIT 1", (memory,)),
            (
                "SELECT link_id FROM adoptions WHERE link_id = ? OR provider_id = ? "
                "ORDER BY seq DESC LIMIT 1",
                (memory, memory),
            ),
            (
                "SELECT link_id FROM changes WHERE provider_id = ? ORDER BY seq DESC LIMIT 1",
                (memory,),
            ),
        ):
            row = self.conn.execute(statement, params).fetchone()
            if row is not None:
                return str(row[0])
        return None

    def adoptions_touching(self, link_id: str) -> list[AdoptionEntry]:
        """Adoptions into LINK_ID or out of it (a record that left it), oldest first."""
        cursor = self.conn.execute(
            "SELECT at, provider, provider_id, link_id, old_link_id, from_provider, "
            "from_provider_id, NULL AS content FROM adoptions "
            "WHERE link_id = ? OR old_link_id = ? ORDER BY seq",
            (link_id, link_id),
        )
        return [AdoptionEntry(*row) for row in cursor]

    def adoptions_into(self, link_id: str) -> list[AdoptionEntry]:
        """Records that joined LINK_ID by adoption, oldest first."""
        cursor = self.conn.execute(
            "SELECT at, provider, provider_id, link_id, old_link_id, from_provider, "
            "from_provider_id, NULL AS content FROM adoptions WHERE link_id = ? ORDER BY seq",
            (link_id,),
        )
        return [AdoptionEntry(*row) for row in cursor]

    def versions(self, link_ids: list[str]) -> list[Version]:
        """Every journalled version under any of LINK_IDS, oldest first."""
        cursor = self.conn.execute(
            "SELECT seq, at, run_id, provider, provider_id, link_id, kind, content, metadata, "
            "updated_at, fingerprint, provenance FROM changes "
            "WHERE link_id IN (SELECT value FROM json_each(?)) ORDER BY seq",
            (json.dumps(link_ids),),
        )
        return [Version(*row) for row in cursor]

    def records_at(self, provider: str, when: str) -> Iterator[Record]:
        """A provider's memories as they stood at WHEN (UTC text), rebuilt (streamed, id order)."""
        cursor = self.conn.execute(
            "SELECT c.* FROM changes c JOIN (SELECT provider_id, MAX(seq) AS seq FROM changes "
            "WHERE provider = ? AND at <= ? GROUP BY provider_id) last ON last.seq = c.seq "
            "WHERE c.kind != 'removed' ORDER BY c.provider_id",
            (provider, when),
        )
        for row in cursor:
            record = row_record(row)
            record.origin = row["origin"] or row["link_id"]
            yield record

    def last_seen(self, provider: str) -> list[Record]:
        """PROVIDER's memories that were removed from it, each as last seen before (its scope,
        provenance and dates): where a Mem0 history, which names no scope, places them."""
        cursor = self.conn.execute(
            "SELECT c.* FROM changes c JOIN (SELECT provider_id, MAX(seq) AS seq FROM changes "
            "WHERE provider = ?1 AND kind != 'removed' GROUP BY provider_id) last "
            "ON last.seq = c.seq WHERE EXISTS (SELECT 1 FROM changes r WHERE r.provider = ?1 "
            "AND r.provider_id = c.provider_id AND r.kind = 'removed' AND r.seq > c.seq) "
            "ORDER BY c.provider_id",
            (provider,),
        )
        found = []
        for row in cursor:
            record = row_record(row)
            record.origin = row["origin"] or row["link_id"]
            found.append(record)
        return found

    # verify and cutover -------------------------------------------------------------------

    def wrote_recently(self, provider: str, provider_id: str, since: str) -> bool:
        """Whether memsync itself wrote PROVIDER_ID into PROVIDER at or after SINCE."""
        row = self.conn.execute(
            "SELECT 1 FROM changes WHERE provider = ? AND provider_id = ? AND kind = 'written' "
            "AND at >= ? LIMIT 1",
            (provider, provider_id, since),
        ).fetchone()
        return row is not None

    def newest_seq(self) -> int:
        row = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM changes").fetchone()
        return int(row[0])

    def count_since(self, a: str, b: str, seq: int) -> int:
        """Entries of A or B after SEQ (by seq, not time: the (provider, seq) index answers)."""
        row = self.conn.execute(
            "SELECT COUNT(*) FROM changes WHERE provider IN (?, ?) AND seq > ?", (a, b, seq)
        ).fetchone()
        return int(row[0])

    def first_sightings(self, provider: str, ids: list[str]) -> dict[str, FirstSighting]:
        """provider id -> the journal's first entry for it in the memory it is staged under.

        Looked up through the mirror's link and the journal's link index, so the cost is per
        id, not per journal entry. A record adopted into another memory has its first sighting
        under its old logical id: it is not found here.
        """
        found: dict[str, FirstSighting] = {}
        for start in range(0, len(ids), 500):
            cursor = self.conn.execute(
                "SELECT r.provider_id, c.kind, c.seq, r.link_id FROM records r "
                "JOIN changes c ON c.seq = (SELECT MIN(x.seq) FROM changes x "
                "INDEXED BY changes_by_link WHERE x.link_id = r.link_id "
                "AND x.provider = r.provider AND x.provider_id = r.provider_id) "
                "WHERE r.provider = ? AND r.provider_id IN (SELECT value FROM json_each(?))",
                (provider, json.dumps(ids[start : start + 500])),
            )
            for row in cursor:
                found[row[0]] = FirstSighting(row[1], row[2], row[3])
        return found

    # the status page's search -------------------------------------------------------------

    def links_matching(self, query: str, limit: int) -> list[str]:
        """Logical ids whose id or a record id is QUERY, or whose text contains it; newest
        first."""
        pattern = "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        cursor = self.conn.execute(
            "SELECT link_id FROM changes WHERE link_id = ? OR provider_id = ? "
            "OR content LIKE ? ESCAPE '\\' GROUP BY link_id ORDER BY MAX(seq) DESC LIMIT ?",
            (query, query, pattern, limit),
        )
        return [str(row[0]) for row in cursor]

    def latest_text(self, link_id: str) -> LatestText | None:
        """The newest journalled text of a memory, where and when it was seen."""
        row = self.conn.execute(
            "SELECT at, provider, content FROM changes WHERE link_id = ? AND content IS NOT NULL "
            "ORDER BY seq DESC LIMIT 1",
            (link_id,),
        ).fetchone()
        return None if row is None else LatestText(*row)
