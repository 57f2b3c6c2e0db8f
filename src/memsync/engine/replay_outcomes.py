"""How replay records what each write did, as the next mirror will see it.

A success is recorded with its group; a failure at once, with its back-off (exponential,
parked as dead after ``max_attempts``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from typing import Any

from memsync.base.errors import MemsyncError, TransientProviderError
from memsync.base.faults import fault_point
from memsync.base.records import utc_now_iso
from memsync.base.write_kind import WriteKind
from memsync.engine.recorder import Recorder
from memsync.engine.report import CycleReport, FailureEntry
from memsync.providers.base import Provider, WriteResult
from memsync.staging.journal import journal_row
from memsync.staging.links import FirstAgreement, NewBase
from memsync.staging.outbox import OutboxRow
from memsync.staging.store import StagingStore, record_row

BACKOFF_BASE = timedelta(seconds=30)
BACKOFF_MAX = timedelta(hours=1)


@dataclass
class Written:
    """The rows that record a group of successful writes, built before they are kept."""

    now: str
    done: list[int] = field(default_factory=list)  # outbox ids
    records: list[tuple[Any, ...]] = field(default_factory=list)
    bases: list[NewBase] = field(default_factory=list)
    agreements: list[FirstAgreement] = field(default_factory=list)
    journal: list[tuple[Any, ...]] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)  # records gone from the provider
    unlinked: list[tuple[str, str, str | None]] = field(default_factory=list)  # their bases
    restored: list[tuple[str, str]] = field(default_factory=list)  # write-backs that landed

    def in_key_order(self) -> None:
        """Each table's rows in the order of its key: tens of thousands of rows inserted in
        key order cost about a third less than in the plan's (the B-trees' pages stay in
        SQLite's cache), measured at 100k outcomes of a first sync."""
        self.done.sort()
        self.records.sort(key=itemgetter(0, 1))  # provider, provider id
        self.bases.sort(key=itemgetter(0, 1))  # link, provider
        self.agreements.sort(key=itemgetter(0))  # link
        self.journal.sort(key=itemgetter(4))  # link (changes_by_link)


class Outcomes:
    """The outcomes of one replay's writes, recorded into the staging store."""

    def __init__(self, store: StagingStore, max_attempts: int) -> None:
        self.store = store
        self.max_attempts = max_attempts

    def record_held(
        self,
        recorder: Recorder,
        provider: Provider,
        held: list[tuple[OutboxRow, WriteResult]],
        report: CycleReport,
        settled: set[int],
    ) -> None:
        """The run of failures ended without the breaker opening: record each as failed."""
        for row, result in held:
            settled.add(row.id)
            self.record_outcome(recorder, provider, row, result, report)
        held.clear()

    def record_outcome(
        self,
        recorder: Recorder,
        provider: Provider,
        row: OutboxRow,
        result: WriteResult,
        report: CycleReport,
    ) -> bool:
        """Count a success (recorded with its group); hand a failure to the recorder at once.
        True if the write was done."""
        outcome = report.providers[provider.name]
        if result.error is None:
            report.replayed[row.kind] += 1
            outcome.written += 1
            return True
        dead, message, retry = self.failure_of(row, result.error)
        recorder.record(self.record_failure, row.id, dead, message[:500], retry)
        outcome.failed += 1
        report.failures.append(FailureEntry(provider.name, row.kind, row.link_id, message, dead))
        return False

    def failure_of(self, row: OutboxRow, error: Exception) -> tuple[bool, str, datetime]:
        """A failed write's fate: parked as dead, or retried after its back-off; its message."""
        attempts = row.attempts + 1
        dead = attempts >= self.max_attempts
        delay = min(BACKOFF_BASE * (2 ** (attempts - 1)), BACKOFF_MAX)
        if isinstance(error, TransientProviderError) and error.retry_after:
            delay = max(delay, timedelta(seconds=error.retry_after))
        message = str(error) if isinstance(error, MemsyncError) else repr(error)
        return dead, message, datetime.now(UTC) + delay

    def record_failure(self, action_id: int, dead: bool, error: str, retry: datetime) -> None:
        with self.store.transaction():
            self.keep_failure(action_id, dead, error, retry)

    def keep_failure(self, action_id: int, dead: bool, error: str, retry: datetime) -> None:
        """A failed write, recorded in the caller's transaction."""
        self.store.outbox.fail(
            action_id, dead=dead, error=error, next_attempt_at=retry.isoformat(), now=utc_now_iso()
        )

    def remember_written(self, provider: str, done: list[tuple[OutboxRow, WriteResult]]) -> None:
        """Record a group of successes: outbox done, and the writes as the mirror will see them.

        Successes are recorded in groups (OUTCOME_GROUP writes or OUTCOME_DELAY seconds), not
        one transaction per write: a commit between every write made the stores' own fsyncs
        slower (12% of a first sync into Mem0). A crash loses at most one group's records,
        never a memory: the writes carry origin markers and the next mirror recognises them
        (the crash matrix kills memsync between every write to prove it).
        """
        if not done:
            return
        written = written_rows(provider, done)
        with self.store.transaction():
            self.keep_written(written)
        fault_point("replay:remembered")

    def keep_written(self, written: Written) -> None:
        """The rows of ``written_rows``, in the caller's transaction."""
        self.store.outbox.finish(written.done, written.now)
        self.store.upsert_records(written.records)
        self.store.links.set_bases(written.bases)
        self.store.links.agree_if_new(written.agreements)
        self.store.records.remove(written.removed)
        self.store.links.drop_bases(written.unlinked)
        self.store.journal.append(written.journal)
        self.store.write_backs.settle(written.restored)


def written_rows(
    provider: str, done: list[tuple[OutboxRow, WriteResult]], into: Written | None = None
) -> Written:
    """The rows that record these successful writes, as the next mirror will see them (added
    to INTO when given): no SQL, so they may be built while the writes are still being made."""
    written = into if into is not None else Written(utc_now_iso())
    now = written.now
    for row, result in done:
        link_id, run_id = row.link_id, row.run_id
        written.done.append(row.id)
        record = result.record
        if row.kind == WriteKind.DELETE:
            assert row.provider_id is not None  # a delete always names its target
            written.removed.append((provider, row.provider_id))
            written.unlinked.append((link_id, provider, row.provider_id))
            written.journal.append(
                journal_row(run_id, provider, link_id, "removed", None, row.provider_id, now)
            )
            continue
        if record is None:
            continue
        written.records.append(record_row(provider, link_id, record, run_id))
        if row.provider_id and row.provider_id != record.id:
            # The provider gave the memory a new id on update (Cognee): drop the old row.
            written.removed.append((provider, row.provider_id))
        if _restores_own_fields(row, provider):
            written.restored.append((provider, link_id))
        else:
            written.bases.append(
                NewBase(link_id, provider, record.id, record.fingerprint, record.content_hash, now)
            )
        written.agreements.append(
            FirstAgreement(
                link_id, record.fingerprint, record.content_hash, record.updated_at or now, now
            )
        )
        written.journal.append(
            journal_row(run_id, provider, link_id, "written", record, record.id, now)
        )
    return written


def _restores_own_fields(row: OutboxRow, provider: str) -> bool:
    """A repair the mirror queued (a store's own record written back with the fields an agent
    rewrite dropped): it reconciles nothing, so the provider's base stays where it was. Moving
    it would hide the agent's edit from the planner while a conflict on it is still open."""
    return (
        row.kind == WriteKind.UPDATE and row.source == provider and row.source_link == row.link_id
    )
