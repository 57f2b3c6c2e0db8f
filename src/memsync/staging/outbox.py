"""The outbox: every planned write, durable before it is tried, with its outcome.

A row goes pending → running → done, or failed (retried after a backoff) → dead (parked),
or superseded (a newer plan decides afresh). Replay reads pending rows of one run and one
provider in id order; finished rows of old runs are pruned (the journal keeps the writes).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from memsync.base.write_kind import WriteKind


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """One pending write as replay reads it."""

    id: int
    run_id: int
    link_id: str
    provider: str
    kind: WriteKind
    provider_id: str | None
    attempts: int
    source: str | None  # the provider whose copy is written (None for a delete)
    source_link: str | None  # keep-both: the memory the copy comes from

    @property
    def key(self) -> str:
        """The WriteOp key that ties a provider's result back to this row."""
        return str(self.id)


class NewAction(NamedTuple):
    """A planned write, about to be put in the outbox."""

    run_id: int
    link_id: str
    provider: str
    kind: WriteKind
    provider_id: str | None
    source: str | None
    source_link: str | None
    attempts: int


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """The latest failed (or dead) attempt at a write, which a new plan of it continues."""

    id: int
    dead: bool
    attempts: int
    next_attempt_at: str | None


_PENDING = (
    "SELECT id, run_id, link_id, provider, kind, provider_id, attempts, payload FROM outbox "
    "WHERE run_id = ? AND provider = ? AND state = 'pending' AND id > ? ORDER BY id LIMIT ?"
)
_TARGETS = "SELECT DISTINCT provider FROM outbox WHERE run_id = ? AND state = 'pending'"
_TARGETS_AMONG = (
    "SELECT DISTINCT provider FROM outbox WHERE run_id = ? AND state = 'pending' "
    "AND provider IN (SELECT value FROM json_each(?))"
)


class Outbox:
    """The outbox table (``store.outbox``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # planning -----------------------------------------------------------------------------

    def supersede_unfinished(self, before_run: int, now: str) -> None:
        """Actions of earlier runs that never finished: the new plan decides afresh."""
        self.conn.execute(
            "UPDATE outbox SET state = 'superseded', updated_at = ? "
            "WHERE state IN ('pending', 'running') AND run_id < ?",
            (now, before_run),
        )

    def revive_dead(self, now: str) -> None:
        """``sync --retry-dead``: parked actions are planned again, with fresh attempts."""
        self.conn.execute(
            "UPDATE outbox SET state = 'superseded', attempts = 0, updated_at = ? "
            "WHERE state = 'dead'",
            (now,),
        )

    def any_failed(self) -> bool:
        """True if some action failed or is dead (else no plan needs to look for one)."""
        row = self.conn.execute(
            "SELECT 1 FROM outbox WHERE state IN ('failed', 'dead') LIMIT 1"
        ).fetchone()
        return row is not None

    def last_failure(self, link_id: str, provider: str, kind: WriteKind) -> FailedAttempt | None:
        """The latest failed or dead attempt at this same write, if any."""
        row = self.conn.execute(
            "SELECT id, state, attempts, next_attempt_at FROM outbox "
            "WHERE link_id = ? AND provider = ? "
            "AND kind = ? AND state IN ('failed', 'dead') ORDER BY id DESC LIMIT 1",
            (link_id, provider, kind),
        ).fetchone()
        if row is None:
            return None
        return FailedAttempt(row[0], row[1] == "dead", row[2], row[3])

    def supersede(self, action_id: int) -> None:
        self.conn.execute("UPDATE outbox SET state = 'superseded' WHERE id = ?", (action_id,))

    def enqueue(
        self,
        run_id: int,
        link_id: str,
        provider: str,
        kind: WriteKind,
        provider_id: str | None,
        *,
        source: str | None,
        source_link: str | None,
        attempts: int,
        now: str,
    ) -> None:
        self.enqueue_many(
            [
                NewAction(
                    run_id, link_id, provider, kind, provider_id, source, source_link, attempts
                )
            ],
            now,
        )

    def enqueue_many(self, actions: Iterable[NewAction], now: str) -> None:
        """Put planned writes in the outbox as pending, in the order given (replay's order)."""
        self.conn.executemany(
            "INSERT INTO outbox (run_id, link_id, provider, kind, provider_id, payload, state, "
            "attempts, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
            (
                (
                    a.run_id,
                    a.link_id,
                    a.provider,
                    a.kind,
                    a.provider_id,
                    json.dumps({"source": a.source, "source_link": a.source_link}),
                    a.attempts,
                    now,
                    now,
                )
                for a in actions
            ),
        )

    # replay -------------------------------------------------------------------------------

    def pending_targets(self, run_id: int, among: Sequence[str] | None = None) -> list[str]:
        """Providers with pending actions in this run (only those ``among``, if given)."""
        if among is None:
            rows = self.conn.execute(_TARGETS, (run_id,))
        else:
            rows = self.conn.execute(_TARGETS_AMONG, (run_id, json.dumps(list(among))))
        return [row[0] for row in rows]

    def pending(self, run_id: int, provider: str, after_id: int, limit: int) -> list[OutboxRow]:
        """The next ``limit`` pending actions into ``provider``, in id order, after ``after_id``."""
        rows: list[OutboxRow] = []
        for row_id, run, link, target, kind, provider_id, attempts, payload in self.conn.execute(
            _PENDING, (run_id, provider, after_id, limit)
        ):
            data = json.loads(payload or "{}")
            rows.append(
                OutboxRow(
                    row_id,
                    run,
                    link,
                    target,
                    WriteKind(kind),
                    provider_id,
                    attempts,
                    data.get("source"),
                    data.get("source_link"),
                )
            )
        return rows

    def supersede_all(self, action_ids: Iterable[int], *, reason: str | None, now: str) -> None:
        """Actions that will not be written this cycle; the next plan decides afresh."""
        self.conn.executemany(
            "UPDATE outbox SET state = 'superseded', last_error = ?, updated_at = ? WHERE id = ?",
            [(reason, now, action_id) for action_id in action_ids],
        )

    def supersede_unwritable(self, action_ids: Iterable[int]) -> None:
        """Actions whose content is gone from the mirror (its source changed under them)."""
        self.conn.executemany(
            "UPDATE outbox SET state = 'superseded' WHERE id = ?",
            [(action_id,) for action_id in action_ids],
        )

    def start(self, action_ids: Iterable[int], now: str) -> None:
        """Mark actions as being written: one more attempt each."""
        self.conn.executemany(
            "UPDATE outbox SET state = 'running', attempts = attempts + 1, updated_at = ? "
            "WHERE id = ?",
            [(now, action_id) for action_id in action_ids],
        )

    def keep_pending(self, action_ids: Sequence[int], now: str) -> None:
        """Writes started but not carried out (their provider became unreachable): pending
        again, for the next cycle, the attempt ``start`` counted given back."""
        self.conn.execute(
            "UPDATE outbox SET state = 'pending', attempts = MAX(attempts - 1, 0), "
            "updated_at = ? WHERE state = 'running' AND id IN (SELECT value FROM json_each(?))",
            (now, json.dumps(list(action_ids))),
        )

    def pending_creates(self, run_id: int, provider: str) -> set[str]:
        """The memories (link ids) this run plans to create in ``provider``."""
        rows = self.conn.execute(
            "SELECT link_id FROM outbox WHERE run_id = ? AND provider = ? "
            "AND state = 'pending' AND kind = 'create'",
            (run_id, provider),
        )
        return {str(row[0]) for row in rows}

    def count_pending(self, run_id: int, provider: str) -> int:
        """How many of this run's writes into ``provider`` are still pending."""
        row = self.conn.execute(
            "SELECT COUNT(*) FROM outbox WHERE run_id = ? AND provider = ? AND state = 'pending'",
            (run_id, provider),
        ).fetchone()
        return int(row[0])

    def fail(
        self, action_id: int, *, dead: bool, error: str, next_attempt_at: str, now: str
    ) -> None:
        """Record a failed write: retried after ``next_attempt_at``, or parked as dead."""
        self.conn.execute(
            "UPDATE outbox SET state = ?, last_error = ?, next_attempt_at = ?, updated_at = ? "
            "WHERE id = ?",
            ("dead" if dead else "failed", error, next_attempt_at, now, action_id),
        )

    def finish(self, action_ids: Iterable[int], now: str) -> None:
        """Record successful writes (one statement, however many: a first sync's are all)."""
        self.conn.execute(
            "UPDATE outbox SET state = 'done', last_error = NULL, updated_at = ? "
            "WHERE id IN (SELECT value FROM json_each(?))",
            (now, json.dumps(list(action_ids))),
        )

    def prune(self, before_run: int) -> None:
        """Forget finished actions of runs before ``before_run`` (the journal keeps them)."""
        self.conn.execute(
            "DELETE FROM outbox WHERE state IN ('done', 'superseded') AND run_id < ?",
            (before_run,),
        )
