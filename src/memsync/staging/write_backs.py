"""Write-backs memsync owes its stores (``write_backs``): durable until one lands.

The mirror holds one when it carries memsync's fields over to a record an agent rewrote through
its store's own API (``engine/mirror.py``): the record must go back into that store with them.
Every cycle that mirrors the provider, incremental ones included, queues an outbox update for
each write-back still held (``requeue``), so one that a killed run, a busy store or a failed
write left behind lands at the next cycle, never waiting for a full listing to return the
record; the replay of one that lands lets it go (``settle``). A record that is gone takes its
write-back with it; one whose last attempt is backing off or dead is not queued again until
the outbox's own rule would retry it, and a retry carries the attempts before it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

# Each write-back PROVIDER owes, with its record's id and the latest update of that memory in
# its store (whatever planned it: its state, attempts and back-off).
_OWED = (
    "SELECT w.link_id, r.provider_id, last.id, last.run_id, last.state, last.attempts, "
    "last.next_attempt_at FROM write_backs AS w "
    "JOIN records AS r ON r.provider = w.provider AND r.link_id = w.link_id "
    "LEFT JOIN outbox AS last ON last.id = ("
    "SELECT o.id FROM outbox AS o WHERE o.link_id = w.link_id AND o.provider = w.provider "
    "AND o.kind = 'update' ORDER BY o.id DESC LIMIT 1) "
    "WHERE w.provider = ?"
)


class WriteBacks:
    """The ``write_backs`` table (``store.write_backs``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def hold(self, provider: str, links: Iterable[str], now: str) -> None:
        """PROVIDER owes its store the staged record of each of LINKS."""
        self.conn.executemany(
            "INSERT OR IGNORE INTO write_backs (provider, link_id, since) VALUES (?, ?, ?)",
            [(provider, link, now) for link in links],
        )

    def requeue(self, run_id: int, provider: str, now: str) -> int:
        """Queue, in RUN_ID, an update for every write-back PROVIDER still owes (those whose
        record is gone are dropped); how many were queued."""
        self.conn.execute(
            "DELETE FROM write_backs WHERE provider = ? AND link_id NOT IN "
            "(SELECT link_id FROM records WHERE provider = ?)",
            (provider, provider),
        )
        queued: list[tuple[object, ...]] = []
        retried: list[tuple[str, int]] = []
        for link, provider_id, last, run, state, attempts, retry_at in self.conn.execute(
            _OWED, (provider,)
        ):
            if run == run_id and state in ("pending", "running"):
                continue  # queued in this run already
            if state == "dead" or (state == "failed" and retry_at and retry_at > now):
                continue  # parked, or backing off: the outbox's rule says when
            payload = json.dumps({"source": provider, "source_link": link})
            carried = attempts if state == "failed" else 0
            queued.append((run_id, link, provider, provider_id, payload, carried, now, now))
            if state == "failed":
                retried.append((now, last))  # continued by this one, not shown as failing
        self.conn.executemany(
            "INSERT INTO outbox (run_id, link_id, provider, kind, provider_id, payload, state, "
            "attempts, created_at, updated_at) "
            "VALUES (?, ?, ?, 'update', ?, ?, 'pending', ?, ?, ?)",
            queued,
        )
        self.conn.executemany(
            "UPDATE outbox SET state = 'superseded', updated_at = ? WHERE id = ?", retried
        )
        return len(queued)

    def settle(self, landed: Iterable[tuple[str, str]]) -> None:
        """These write-backs (provider, link) landed."""
        self.conn.executemany(
            "DELETE FROM write_backs WHERE provider = ? AND link_id = ?", list(landed)
        )

    def owed(self, provider: str) -> list[str]:
        """The memories (links) PROVIDER still owes a write-back of."""
        rows = self.conn.execute(
            "SELECT link_id FROM write_backs WHERE provider = ? ORDER BY link_id", (provider,)
        )
        return [str(row[0]) for row in rows]


__all__ = ["WriteBacks"]
