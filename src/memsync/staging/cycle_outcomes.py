"""What one finished run did, as /metrics counts it: the run, its writes, what they carried.

Read once per cycle, right after it ends, by run id (the run's own outbox rows are kept
until later runs prune them, and the journal keeps every version): the counters behind
/metrics come from the same rows `memsync status` and the page read, never from a tally of
their own that could disagree.
"""

from __future__ import annotations

import sqlite3
from typing import NamedTuple


class FinishedRun(NamedTuple):
    id: int
    started_at: str
    finished_at: str | None
    status: str


class WriteCount(NamedTuple):
    """Writes of one run into one provider, of one kind, with one outcome."""

    provider: str
    kind: str  # create, update, delete
    state: str  # done, failed, dead
    writes: int


class Propagation(NamedTuple):
    """One memory whose last outstanding write this run acknowledged."""

    link_id: str
    target: str  # one of the providers written (the scope is the same for all)
    seen_at: str | None  # when memsync first saw the version it carried (the journal)
    acked_at: str  # when the last target acknowledged it (the outbox row finished)


# The version written is the source's newest listing of it (added or changed); a delete's
# is the first removal seen after the memory's last version, wherever it was seen.
_PROPAGATED = """
SELECT o.link_id, MIN(o.provider), MIN(CASE WHEN o.kind = 'delete' THEN (
        SELECT MIN(c.at) FROM changes c WHERE c.link_id = o.link_id AND c.kind = 'removed'
        AND c.seq > (SELECT COALESCE(MAX(d.seq), 0) FROM changes d
                     WHERE d.link_id = o.link_id AND d.kind != 'removed'))
    ELSE (
        SELECT c.at FROM changes c
        WHERE c.link_id = COALESCE(json_extract(o.payload, '$.source_link'), o.link_id)
        AND c.provider = json_extract(o.payload, '$.source')
        AND c.kind IN ('added', 'changed') ORDER BY c.seq DESC LIMIT 1)
    END), MAX(o.updated_at)
FROM outbox o
WHERE o.run_id = ? AND o.state = 'done'
AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.link_id = o.link_id
                AND p.state IN ('pending', 'running', 'failed', 'dead'))
GROUP BY o.link_id
"""


class CycleOutcomes:
    """Read-only: ``runs``, ``outbox`` and ``changes`` of one finished run."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def run(self, run_id: int) -> FinishedRun | None:
        row = self.conn.execute(
            "SELECT id, started_at, finished_at, status FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        return None if row is None else FinishedRun(*row)

    def writes(self, run_id: int) -> list[WriteCount]:
        """The run's writes that were tried, by provider, kind and outcome."""
        cursor = self.conn.execute(
            "SELECT provider, kind, state, COUNT(*) FROM outbox WHERE run_id = ? "
            "AND state IN ('done', 'failed', 'dead') GROUP BY provider, kind, state",
            (run_id,),
        )
        return [WriteCount(*row) for row in cursor]

    def propagated(self, run_id: int) -> list[Propagation]:
        """Memories the run finished carrying: no write of theirs is left outstanding."""
        return [Propagation(*row) for row in self.conn.execute(_PROPAGATED, (run_id,))]
