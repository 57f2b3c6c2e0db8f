"""The outbox: planned writes go in (``enqueue``), replay carries them out and records each
outcome before relying on it.

Targets replay in a fixed order: the active backend, the other providers, backups last.
At-least-once replay plus origin markers make it effectively once: a write whose outcome
was lost in a crash shows up in the next mirror under its origin and is recognised, not
redone. Failures back off exponentially and are parked as dead after ``max_attempts``
(``replay_outcomes``).

A provider that stops answering (its HTTP client's breaker opens after a few connection
failures in a row) gets no more writes this cycle: its writes stay pending, their attempts
unspent, the report says once "NAME unreachable (reason); K writes kept for the next cycle",
and replay goes on with the other providers.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial

from memsync.base.errors import (
    AuthError,
    MemsyncError,
    ProviderBusy,
    ProviderUnreachable,
    TransientProviderError,
)
from memsync.base.faults import fault_point
from memsync.base.records import parse_instant, utc_now_iso
from memsync.engine.freshness import changed_targets
from memsync.engine.plan import Action, Topology
from memsync.engine.prepared import write_prepared
from memsync.engine.recorder import Recorder
from memsync.engine.replay_outcomes import Outcomes
from memsync.engine.report import (
    CycleReport,
    ProviderState,
    SyncOptions,
)
from memsync.engine.writes import ops_for
from memsync.providers.base import Provider, WriteOp, WriteResult
from memsync.staging.outbox import NewAction, OutboxRow
from memsync.staging.store import StagingStore

log = logging.getLogger(__name__)

OUTCOME_GROUP = 200  # successful writes recorded per transaction during replay
OUTCOME_DELAY = 2.0  # ...or after this many seconds, whichever comes first
REPLAY_BATCH = 1000  # writes per batch (a freshness check before each, outcomes drained after)
# ...into a provider that writes a batch in a few calls (the Platform's /v1/batch/, a mnem
# commit, a PMM file rewritten whole): a batch costs its calls, not its rows, and its
# freshness check a listing of what changed, memsync's own writes of earlier batches included.
BATCHED_REPLAY = 10_000
# ...and into one whose every commit costs in proportion to the whole store (mnem): a batch as
# large as what the store already holds, so that the commits of a copy into it cost within
# about twice one commit of everything (10k, 10k, 20k, 40k... rather than quadratic), up to
# this many writes a batch, which bounds the memory a batch holds.
STORE_SIZED_REPLAY = 50_000


def supersede_stale(store: StagingStore, run_id: int, options: SyncOptions) -> None:
    """Actions of earlier runs that never finished: the new plan decides afresh."""
    if options.dry_run:
        return
    with store.transaction():
        store.outbox.supersede_unfinished(run_id, utc_now_iso())
        if options.retry_dead:
            store.outbox.revive_dead(utc_now_iso())


def outbox_action(
    store: StagingStore, run_id: int, action: Action, report: CycleReport, *, any_failed: bool
) -> NewAction | None:
    """The outbox row of a planned write, or None while an earlier attempt at it is backing
    off or dead (``any_failed``: whether any action failed at all; if none did, no lookup).
    A retry continues the earlier attempt's count, which is superseded here."""
    attempts = 0
    prior = (
        store.outbox.last_failure(action.link_id, action.target, action.kind)
        if any_failed
        else None
    )
    if prior is not None:
        if prior.dead:
            report.waiting += 1
            return None
        retry_at = parse_instant(prior.next_attempt_at)
        if retry_at and retry_at > datetime.now(UTC):
            report.waiting += 1
            return None
        attempts = prior.attempts
        store.outbox.supersede(prior.id)
    return NewAction(
        run_id,
        action.link_id,
        action.target,
        action.kind,
        action.provider_id,
        action.source,
        action.source_link,
        attempts,
    )


class Replay:
    """Carries out one run's pending writes, provider by provider, in batches."""

    def __init__(
        self,
        store: StagingStore,
        providers: Mapping[str, Provider],
        topology: Topology,
        *,
        max_attempts: int,
        use: Callable[[Provider], Provider],
        scoped: bool = False,
    ) -> None:
        """``use`` opens a provider for the rest of the cycle; ``scoped``: replay only into
        these providers (a scope's cycle in a store shared by scopes)."""
        self.store = store
        self.providers = providers
        self.topology = topology
        self.max_attempts = max_attempts
        self.use = use
        self.scoped = scoped
        self.outcomes = Outcomes(store, max_attempts)

    def run(
        self, run_id: int, topology: Topology, report: CycleReport, options: SyncOptions
    ) -> None:
        among = list(self.providers) if self.scoped else None
        targets = self.store.outbox.pending_targets(run_id, among)
        for target in sorted(targets, key=self._rank):
            if target in topology.unavailable or target not in self.providers:
                continue
            if _stopping(options):
                report.interrupted = True
                return
            started = time.monotonic()
            self._into(run_id, self.providers[target], report, options)
            report.providers[target].seconds += time.monotonic() - started

    def _rank(self, name: str) -> tuple[int, int]:
        """Replay order: the active backend first (agents read it, so it is current soonest),
        then the other two-way and pull providers, push-only backups last (a backup copies
        what the others hold); config order within each group. Never by name."""
        order = list(self.providers)
        group = 0 if name == self.topology.active else 1
        if self.topology.directions.get(name) == "push":
            group = 2
        return group, order.index(name) if name in order else len(order)

    def _into(
        self, run_id: int, provider: Provider, report: CycleReport, options: SyncOptions
    ) -> None:
        outcome = report.providers[provider.name]
        try:
            self.use(provider)
            sized = partial(self._batch_size, provider)
            if write_prepared(self.store, self.outcomes, run_id, provider, report, options, sized):
                return  # a first sync staged ahead (``prepared``)
            size = self._batch_size(provider, 0)
            rows = self.store.outbox.pending(run_id, provider.name, 0, size)
            ahead: Ahead | None = None  # the writes of ``rows``, read while the last batch wrote
            while rows:
                if _stopping(options):
                    report.interrupted = True
                    return
                size = self._batch_size(provider, len(rows))
                upcoming = self.store.outbox.pending(run_id, provider.name, rows[-1].id, size)
                fresh = self._skip_changed_targets(provider, rows, report)
                if fresh:
                    ops = ahead.ops_of(fresh) if ahead else ops_for(self.store, fresh)
                    keep_going, ahead = self._batch(provider, fresh, ops, upcoming, report, options)
                    if not keep_going:
                        return
                else:
                    ahead = None
                rows = upcoming
        except ProviderUnreachable as exc:
            # Said once, through the report's failure path (engine/failures.py): the outcome's
            # error and the notice carry the same sentence, which folds into one line.
            kept = self.store.outbox.count_pending(run_id, provider.name)
            said = f"{exc}; {kept} writes kept for the next cycle"
            outcome.state, outcome.error = ProviderState.ERROR, said
            report.report_failure(provider.name, said)
        except ProviderBusy as exc:
            outcome.state, outcome.error = ProviderState.BUSY, str(exc)
        except MemsyncError as exc:
            outcome.state, outcome.error = ProviderState.ERROR, str(exc)

    def _batch_size(self, provider: Provider, writing: int) -> int:
        """How many writes the next batch into PROVIDER takes, WRITING being in the batch
        before it (see STORE_SIZED_REPLAY)."""
        if not provider.capabilities.batch_writes:
            return REPLAY_BATCH
        if not provider.capabilities.commits_scan_store:
            return BATCHED_REPLAY
        held = self.store.records.count(provider.name) + writing
        return min(max(BATCHED_REPLAY, held), STORE_SIZED_REPLAY)

    def _skip_changed_targets(
        self, provider: Provider, rows: list[OutboxRow], report: CycleReport
    ) -> list[OutboxRow]:
        """Never write blind over an edit made since the mirror: such actions are superseded
        and planned again next cycle, after the edit is mirrored (see sync/freshness)."""
        since = parse_instant(report.started_at) or datetime.now(UTC)
        stale = changed_targets(self.store, provider, since, rows)
        if not stale:
            return rows
        with self.store.transaction():
            self.store.outbox.supersede_all(
                stale,
                reason="the target changed since the mirror; planned again next cycle",
                now=utc_now_iso(),
            )
        report.providers[provider.name].replanned += len(stale)
        log.info(
            "%s: %d memories changed since the mirror; their writes wait for the next cycle",
            provider.name,
            len(stale),
        )
        return [row for row in rows if row.id not in stale]

    def _batch(
        self,
        provider: Provider,
        rows: list[OutboxRow],
        ops: dict[str, WriteOp],
        upcoming: list[OutboxRow],
        report: CycleReport,
        options: SyncOptions,
    ) -> tuple[bool, Ahead | None]:
        """Write one batch: whether the provider gets more writes this cycle, and the writes
        of the ``upcoming`` batch, read from staging while this one was written.

        Outcomes are recorded by a ``Recorder`` while the provider goes on writing: each one
        handed over once its write returned, successes in groups, failures one by one.

        Raises ``ProviderUnreachable`` if the provider's breaker opened, after putting back as
        pending every write of the batch without an outcome: those not sent, and those whose
        failure was part of the run of failures that opened it.
        """
        by_key = {row.key: row for row in rows}
        with self.store.transaction():
            self.store.outbox.supersede_unwritable(row.id for row in rows if row.key not in ops)
            self.store.outbox.start((int(key) for key in ops), utc_now_iso())
        fault_point("replay:before-batch")
        keep_going = True
        done: list[tuple[OutboxRow, WriteResult]] = []
        # Transient failures in a row are recorded when the run of them ends (a success, any
        # other outcome, the end of the batch): if they end in the breaker opening, they were
        # the provider going away, and their writes are kept instead of spending an attempt.
        held: list[tuple[OutboxRow, WriteResult]] = []
        settled: set[int] = set()  # rows whose outcome is recorded or being recorded
        unreachable: ProviderUnreachable | None = None
        flushed_at = time.monotonic()
        with Recorder() as recorder:
            reading = recorder.read(ops_for, self.store, upcoming) if upcoming else None
            try:
                for result in provider.write_many(list(ops.values())):
                    row = by_key[result.op.key]
                    if isinstance(result.error, ProviderUnreachable):
                        # Not sent (or not answered) for want of a server: kept pending below.
                        # The writes still in flight are waited for, their outcomes recorded.
                        unreachable = unreachable or result.error
                        continue
                    if _in_a_run_of_failures(result):
                        held.append((row, result))
                    else:
                        if unreachable is None:
                            self.outcomes.record_held(recorder, provider, held, report, settled)
                        settled.add(row.id)
                        if self.outcomes.record_outcome(recorder, provider, row, result, report):
                            done.append((row, result))
                    fault_point("replay:result")
                    if len(done) >= OUTCOME_GROUP or time.monotonic() - flushed_at > OUTCOME_DELAY:
                        recorder.record(self.outcomes.remember_written, provider.name, done)
                        done, flushed_at = [], time.monotonic()
                    if isinstance(result.error, AuthError | ProviderBusy):
                        keep_going = False
                    if _stopping(options):  # SIGTERM: the write in flight is done; stop here
                        report.interrupted, keep_going = True, False
                        break
            finally:
                if done:
                    recorder.record(self.outcomes.remember_written, provider.name, done)
            if unreachable is None:
                self.outcomes.record_held(recorder, provider, held, report, settled)
        if unreachable is not None:
            with self.store.transaction():
                self.store.outbox.keep_pending(
                    [int(key) for key in ops if int(key) not in settled], utc_now_iso()
                )
            raise unreachable
        if reading is None or {r.link_id for r in rows} & {r.link_id for r in upcoming}:
            return keep_going, None  # read before this batch's records of the same memories
        return keep_going, Ahead(reading.result())


class Ahead:
    """The writes of the next batch, read from staging while the batch before it was written.

    Reading them needs nothing that batch records: its rows are other memories (the next
    batch is read again when it shares one), whose sources are other providers' records, or
    records of this provider that the batch does not touch.
    """

    def __init__(self, ops: dict[str, WriteOp]) -> None:
        self.ops = ops

    def ops_of(self, rows: list[OutboxRow]) -> dict[str, WriteOp]:
        """The writes of ``rows`` (the batch, less what the freshness check held back)."""
        keys = {row.key for row in rows}
        return {key: op for key, op in self.ops.items() if key in keys}


def _in_a_run_of_failures(result: WriteResult) -> bool:
    """A failure that may be the provider going away (a timeout, a reset, a refused
    connection, a 5xx): its record waits to see whether the breaker opens."""
    return isinstance(result.error, TransientProviderError) and not isinstance(
        result.error, ProviderBusy
    )


def _stopping(options: SyncOptions) -> bool:
    return options.stop is not None and options.stop.is_set()
