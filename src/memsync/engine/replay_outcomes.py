"""How replay records what each write did, as the next mirror will see it.

A success is recorded with its group; a failure at once, with its back-off (exponential,
parked as dead after ``max_attempts``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

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
        attempts = row.attempts + 1
        dead = attempts >= self.max_attempts
        delay = min(BACKOFF_BASE * (2 ** (attempts - 1)), BACKOFF_MAX)
        if isinstance(result.error, TransientProviderError) and result.error.retry_after:
            delay = max(delay, timedelta(seconds=result.error.retry_after))
        message = (
            str(result.error) if isinstance(result.error, MemsyncError) else repr(result.error)
        )
        recorder.record(self.record_failure, row.id, dead, message[:500], datetime.now(UTC) + delay)
        outcome.failed += 1
        report.failures.append(FailureEntry(provider.name, row.kind, row.link_id, message, dead))
        return False

    def record_failure(self, action_id: int, dead: bool, error: str, retry: datetime) -> None:
        with self.store.transaction():
            self.store.outbox.fail(
                action_id,
                dead=dead,
                error=error,
                next_attempt_at=retry.isoformat(),
                now=utc_now_iso(),
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
        now = utc_now_iso()
        records, bases, agreements, journal = [], [], [], []
        removed: list[tuple[str, str]] = []  # records gone from the provider
        restored: list[str] = []  # write-backs that landed (memories by link)
        unlinked: list[tuple[str, str, str | None]] = []  # bases of deleted records
        for row, result in done:
            link_id, run_id = row.link_id, row.run_id
            record = result.record
            if row.kind == WriteKind.DELETE:
                assert row.provider_id is not None  # a delete always names its target
                removed.append((provider, row.provider_id))
                unlinked.append((link_id, provider, row.provider_id))
                journal.append(
                    journal_row(run_id, provider, link_id, "removed", None, row.provider_id, now)
                )
                continue
            if record is None:
                continue
            records.append(record_row(provider, link_id, record, run_id))
            if row.provider_id and row.provider_id != record.id:
                # The provider gave the memory a new id on update (Cognee): drop the old row.
                removed.append((provider, row.provider_id))
            if _restores_own_fields(row, provider):
                restored.append(link_id)
            else:
                bases.append(
                    NewBase(
                        link_id, provider, record.id, record.fingerprint, record.content_hash, now
                    )
                )
            agreements.append(
                FirstAgreement(
                    link_id, record.fingerprint, record.content_hash, record.updated_at or now, now
                )
            )
            journal.append(
                journal_row(run_id, provider, link_id, "written", record, record.id, now)
            )
        with self.store.transaction():
            self.store.outbox.finish((row.id for row, _ in done), now)
            self.store.upsert_records(records)
            self.store.links.set_bases(bases)
            self.store.links.agree_if_new(agreements)
            self.store.records.remove(removed)
            self.store.links.drop_bases(unlinked)
            self.store.journal.append(journal)
            self.store.write_backs.settle(provider, restored)
        fault_point("replay:remembered")


def _restores_own_fields(row: OutboxRow, provider: str) -> bool:
    """A repair the mirror queued (a store's own record written back with the fields an agent
    rewrite dropped): it reconciles nothing, so the provider's base stays where it was. Moving
    it would hide the agent's edit from the planner while a conflict on it is still open."""
    return (
        row.kind == WriteKind.UPDATE and row.source == provider and row.source_link == row.link_id
    )
