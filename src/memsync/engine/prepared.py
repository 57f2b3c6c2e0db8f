"""Replay into a provider that makes a cycle's writes visible all at once (``prepare_writes``).

A first sync into a store created in this cycle may have had its creates staged ahead while
the cycle mirrored and planned (``engine/ahead.py``; mnem stages them in a writer process).
Replay then prepares every batch of the run's writes (``prepare_writes``: what each will
leave) and builds the rows that record those outcomes (``replay_outcomes.written_rows``), all
while the writer may still be at work, with no staging transaction open. Then the provider
commits every write at once (``commit_prepared``), and one short transaction records every
outcome.

Crash points, in order (``memsync.base.faults``):

- ``replay:prepared``: every outcome built in memory; staging holds none of them, the store
  no commit (its staged nodes are named by memsync's note and unstaged at the next open): the
  rerun plans and writes everything once.
- ``mnem:commit`` (inside mnem's commit): the store holds all of it or none of it.
- ``replay:committed``: the store holds every write, staging none of their outcomes: the
  rerun's mirror recognises each memory by its origin and writes nothing twice.
- ``replay:remembered``: both kept.

A commit that fails makes none of the writes; replay then writes the same outbox rows the
ordinary way (``write_many``), nothing having been recorded.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from memsync.base.errors import ProviderError
from memsync.base.faults import fault_point
from memsync.base.records import utc_now_iso
from memsync.engine.replay_outcomes import Outcomes, Written, written_rows
from memsync.engine.report import CycleReport, FailureEntry, SyncOptions
from memsync.engine.writes import ops_for
from memsync.providers.base import Provider, WriteResult
from memsync.staging.outbox import OutboxRow
from memsync.staging.store import StagingStore

log = logging.getLogger(__name__)


@dataclass
class _Prepared:
    """The run's writes into one provider, prepared: the rows that will record them."""

    written: Written = field(default_factory=lambda: Written(utc_now_iso()))
    started: list[int] = field(default_factory=list)  # outbox ids of the writes prepared
    unwritable: list[int] = field(default_factory=list)  # outbox ids with nothing to write
    failed: list[tuple[OutboxRow, WriteResult]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # of each write done, for the report


def write_prepared(
    store: StagingStore,
    outcomes: Outcomes,
    run_id: int,
    provider: Provider,
    report: CycleReport,
    options: SyncOptions,
    batch_size: Callable[[int], int],
) -> bool:
    """Carry out this run's writes into PROVIDER as prepared writes; False when it has none
    prepared (nothing was done: replay writes them the ordinary way). ``batch_size`` says
    how many writes to read next, given how many the batch before held."""
    if provider.prepare_writes([]) is None:  # asked first: nothing read for the others
        return False
    name = provider.name
    prepared = _Prepared()
    rows = store.outbox.pending(run_id, name, 0, batch_size(0))
    while rows:
        if options.stop is not None and options.stop.is_set():
            report.interrupted = True  # nothing kept; closing the provider stops its writer
            return True
        _prepare(store, provider, rows, prepared)
        rows = store.outbox.pending(run_id, name, rows[-1].id, batch_size(len(rows)))
    prepared.written.in_key_order()  # while the writer is still at work, usually
    fault_point("replay:prepared")
    try:
        provider.commit_prepared()
    except ProviderError as exc:
        log.warning("%s: %s; writing the batch again the ordinary way", name, exc)
        with store.transaction():  # none was written: pending again, the attempt given back
            store.outbox.keep_pending(prepared.started, utc_now_iso())
        return False
    fault_point("replay:committed")
    _record(store, outcomes, prepared)
    fault_point("replay:remembered")
    outcome = report.providers[name]
    for kind in prepared.kinds:
        report.replayed[kind] += 1
    outcome.written += len(prepared.kinds)
    for row, result in prepared.failed:
        assert result.error is not None
        dead, message, _ = outcomes.failure_of(row, result.error)
        outcome.failed += 1
        report.failures.append(FailureEntry(name, row.kind, row.link_id, message, dead))
    return True


def _prepare(
    store: StagingStore, provider: Provider, rows: list[OutboxRow], prepared: _Prepared
) -> None:
    """Prepare one batch's writes, and build the rows that will record their outcomes."""
    ops = ops_for(store, rows)
    results = provider.prepare_writes(list(ops.values()))
    assert results is not None  # a provider that prepared one batch prepares them all
    by_key = {row.key: row for row in rows}
    prepared.unwritable += [row.id for row in rows if row.key not in ops]
    started = [by_key[key].id for key in ops]
    with store.transaction():  # being written (what a kill leaves the next run supersedes)
        store.outbox.start(started, utc_now_iso())
    prepared.started += started
    done = [(by_key[r.op.key], r) for r in results if r.error is None]
    prepared.failed += [(by_key[r.op.key], r) for r in results if r.error is not None]
    prepared.kinds += [row.kind for row, _ in done]
    written_rows(provider.name, done, into=prepared.written)


def _record(store: StagingStore, outcomes: Outcomes, prepared: _Prepared) -> None:
    """Every outcome, in one transaction: the writes are made by now."""
    with store.transaction():
        store.outbox.supersede_unwritable(prepared.unwritable)
        outcomes.keep_written(prepared.written)
        for row, result in prepared.failed:
            assert result.error is not None
            dead, message, retry = outcomes.failure_of(row, result.error)
            outcomes.keep_failure(row.id, dead, message[:500], retry)
