"""What staging keeps of a provider's ``exclude`` (``excluded_records``, ``exclude_rules``).

Each provider's excluded records, listed or staged from before the rule, with the memory key
they are (or would be) linked as: no memory with such a key is ever planned (the dirty set
drops it), so nothing is written to, deleted from or copied out of an excluded record. Beside
them, the rule they were found with, so that a changed rule is noticed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import NamedTuple

_CHUNK = 500


class StagedKind(NamedTuple):
    """A staged record's id, memory key and content kind (None: the store has no kinds)."""

    provider_id: str
    link_id: str
    content_kind: str | None


class ExcludedRecords:
    """The ``excluded_records`` and ``exclude_rules`` tables (``store.excluded``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # the rule -------------------------------------------------------------------------------

    def rule(self, provider: str) -> str:
        """The rule (``Exclusion.key``) the provider's rows were found with; "" for none."""
        row = self.conn.execute(
            "SELECT rule FROM exclude_rules WHERE provider = ?", (provider,)
        ).fetchone()
        return "" if row is None else str(row[0])

    def replace_rule(
        self, provider: str, rule: str, covered: Sequence[StagedKind], now: str
    ) -> None:
        """A new rule for PROVIDER: its rows become the staged records the rule COVERS."""
        self.conn.execute("DELETE FROM excluded_records WHERE provider = ?", (provider,))
        self.conn.execute("DELETE FROM exclude_rules WHERE provider = ?", (provider,))
        if rule:
            self.conn.execute(
                "INSERT INTO exclude_rules (provider, rule, since) VALUES (?, ?, ?)",
                (provider, rule, now),
            )
        self.conn.executemany(
            "INSERT INTO excluded_records (provider, provider_id, link_id, since) "
            "VALUES (?, ?, ?, ?)",
            [(provider, row.provider_id, row.link_id, now) for row in covered],
        )

    def staged_kinds(self, provider: str, kind_path: str) -> list[StagedKind]:
        """Every staged record of PROVIDER with its content kind (at ``kind_path`` in the
        record's provenance, e.g. ``$.mnem_content_kind``)."""
        cursor = self.conn.execute(
            "SELECT provider_id, link_id, json_extract(provenance, ?) FROM records "
            "WHERE provider = ?",
            (kind_path, provider),
        )
        return [
            StagedKind(str(row[0]), str(row[1]), row[2] if isinstance(row[2], str) else None)
            for row in cursor
        ]

    # the records ----------------------------------------------------------------------------

    def ids(self, provider: str) -> set[str]:
        """The provider ids of PROVIDER's excluded records."""
        cursor = self.conn.execute(
            "SELECT provider_id FROM excluded_records WHERE provider = ?", (provider,)
        )
        return {str(row[0]) for row in cursor}

    def add(self, provider: str, keys: Sequence[tuple[str, str]], now: str) -> None:
        """Records a listing excluded, as (provider id, memory key); a staged one keeps the
        key it is staged under."""
        for start in range(0, len(keys), _CHUNK):
            chunk = json.dumps([list(key) for key in keys[start : start + _CHUNK]])
            self.conn.execute(
                "INSERT OR IGNORE INTO excluded_records (provider, provider_id, link_id, since) "
                "SELECT ?, json_extract(k.value, '$[0]'), COALESCE(r.link_id, "
                "json_extract(k.value, '$[1]')), ? FROM json_each(?) k LEFT JOIN records r "
                "ON r.provider = ? AND r.provider_id = json_extract(k.value, '$[0]')",
                (provider, now, chunk, provider),
            )

    def drop(self, provider: str, provider_ids: Sequence[str]) -> None:
        """Records the rule no longer covers (a node whose content kind changed back)."""
        for start in range(0, len(provider_ids), _CHUNK):
            self.conn.execute(
                "DELETE FROM excluded_records WHERE provider = ? "
                "AND provider_id IN (SELECT value FROM json_each(?))",
                (provider, json.dumps(list(provider_ids[start : start + _CHUNK]))),
            )

    def prune(self, provider: str, listed: Sequence[str]) -> None:
        """After a complete full listing: forget rows of records neither staged nor among
        LISTED (excluded records this listing returned), that is, gone from the store before
        memsync ever synced them. A staged one stays: it was synced, and stays as it was."""
        self.conn.execute(
            "DELETE FROM excluded_records WHERE provider = ? "
            "AND provider_id NOT IN (SELECT value FROM json_each(?)) "
            "AND NOT EXISTS (SELECT 1 FROM records r WHERE r.provider = excluded_records.provider "
            "AND r.provider_id = excluded_records.provider_id)",
            (provider, json.dumps(list(listed))),
        )

    # status ---------------------------------------------------------------------------------

    def copies(self, provider: str) -> dict[str, int]:
        """How many copies of PROVIDER's excluded records other providers hold, by provider
        (copies memsync made before the rule excluded them)."""
        cursor = self.conn.execute(
            "SELECT r.provider, COUNT(*) FROM excluded_records e "
            "JOIN records r INDEXED BY records_by_link ON r.link_id = e.link_id "
            "WHERE e.provider = ? AND r.provider != e.provider GROUP BY r.provider",
            (provider,),
        )
        return {str(row[0]): int(row[1]) for row in cursor}
