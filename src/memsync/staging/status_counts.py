"""The counts `memsync status` and the status page show: mirror per scope, outbox, conflicts."""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


class ScopeCount(NamedTuple):
    provider: str
    scope_key: str
    records: int


class MaybeHidden(NamedTuple):
    """Records of one provider and scope that a store may no longer serve: with an
    expiration date, or a Dream state (judged by the caller, as ``records.is_expired`` and
    ``dream.Dream`` do everywhere)."""

    provider: str
    type: str
    scope_key: str
    expiration_date: str | None
    lifecycle_state: str | None
    replaced_by: str | None
    records: int


class OutboxCount(NamedTuple):
    provider: str
    state: str
    actions: int


class DeadAction(NamedTuple):
    """A write that failed for good, as status lists it."""

    id: int
    provider: str
    kind: str
    link_id: str
    attempts: int
    last_error: str | None


# The outbox's counts below spell the terms of its two partial indexes (schema 11 and 3) as
# they are, "state IN ('pending', 'running')" and "state IN ('failed', 'dead')", so that SQLite
# reads from them: done actions are most of the outbox (200,000 after a first sync at 5,000
# users), and a scan of them cost each look at status 100 ms.


class StatusCounts:
    """Read-only aggregates over ``records`` and ``outbox``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def records_by_scope(self) -> list[ScopeCount]:
        cursor = self.conn.execute(
            "SELECT provider, scope_key, COUNT(*) FROM records GROUP BY provider, scope_key"
        )
        return [ScopeCount(*row) for row in cursor]

    def maybe_hidden_by_scope(self) -> list[MaybeHidden]:
        """Records with an expiration date or a Dream state, per provider (and its type),
        scope, date and state."""
        cursor = self.conn.execute(
            "SELECT r.provider, COALESCE(p.type, ''), r.scope_key, r.expiration_date, "
            "json_extract(r.provenance, '$.lifecycle_state'), "
            "json_extract(r.provenance, '$.replaced_by'), COUNT(*) "
            "FROM records r LEFT JOIN providers p ON p.name = r.provider "
            "WHERE r.expiration_date IS NOT NULL "
            "OR json_extract(r.provenance, '$.lifecycle_state') IS NOT NULL "
            "OR json_extract(r.provenance, '$.replaced_by') IS NOT NULL "
            "GROUP BY 1, 2, 3, 4, 5, 6"
        )
        return [MaybeHidden(*row) for row in cursor]

    def outbox_needing_work(self) -> list[OutboxCount]:
        """Pending, failed and dead actions per provider and state."""
        cursor = self.conn.execute(
            "SELECT provider, state, COUNT(*) FROM ("
            "SELECT provider, state FROM outbox "
            "WHERE state IN ('pending', 'running') AND state = 'pending' "
            "UNION ALL SELECT provider, state FROM outbox WHERE state IN ('failed', 'dead')"
            ") GROUP BY provider, state ORDER BY provider, state"
        )
        return [OutboxCount(*row) for row in cursor]

    def outbox_between(self, a: str, b: str) -> dict[str, int]:
        """State -> actions not done yet (running ones too) into A or B."""
        cursor = self.conn.execute(
            "SELECT state, COUNT(*) FROM ("
            "SELECT state FROM outbox WHERE provider IN (?, ?) "
            "AND state IN ('pending', 'running') UNION ALL SELECT state FROM outbox "
            "WHERE provider IN (?, ?) AND state IN ('failed', 'dead')"
            ") GROUP BY state",
            (a, b, a, b),
        )
        return {str(row[0]): int(row[1]) for row in cursor}

    def dead_actions(self, limit: int) -> list[DeadAction]:
        """The oldest LIMIT dead actions."""
        cursor = self.conn.execute(
            "SELECT id, provider, kind, link_id, attempts, last_error FROM outbox "
            "WHERE state IN ('failed', 'dead') AND state = 'dead' ORDER BY id LIMIT ?",
            (limit,),
        )
        return [DeadAction(*row) for row in cursor]
