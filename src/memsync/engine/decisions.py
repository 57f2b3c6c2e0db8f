"""Planning the dirty set: each memory's decision (``plan.plan_link``), recorded in staging.

A decision moves the bases (what each provider is now known to hold), the agreed version,
records a conflict it met, carries out a resolution the user chose, and puts its writes in
the outbox. Each chunk of memories commits on its own; a dry run records nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memsync.base.faults import fault_point
from memsync.base.records import Record, utc_now_iso
from memsync.engine.dirty import dirty_chunks, link_views
from memsync.engine.plan import Change, Decision, Topology, plan_link
from memsync.engine.replay import outbox_action
from memsync.engine.report import ConflictEntry, CycleReport, PlannedEntry, SyncOptions
from memsync.staging.links import Acknowledgement, Agreement
from memsync.staging.outbox import NewAction
from memsync.staging.store import StagingStore, dumps


def plan_dirty(
    store: StagingStore,
    run_id: int,
    providers: Sequence[str],
    topology: Topology,
    report: CycleReport,
    options: SyncOptions,
) -> None:
    """Plan every dirty memory (``store.dirty`` is marked), chunk by chunk."""
    resolving = store.conflicts.resolving()
    any_failed = store.outbox.any_failed()
    complete = {n: (o.mirror.complete if o.mirror else True) for n, o in report.providers.items()}
    for chunk in dirty_chunks(store):
        views, extras = link_views(store, providers, chunk, complete)
        decisions = [plan_link(view, topology) for view in views]
        duplicates = [
            a for a in extras if a.target not in topology.unavailable and complete.get(a.target)
        ]
        for decision in decisions:
            for action in decision.actions:
                report.add_planned(PlannedEntry.of(action))
        for action in duplicates:
            report.add_planned(PlannedEntry.of(action))
        if options.dry_run:
            for decision in decisions:
                if decision.conflict:
                    report.conflicts.append(conflict_entry(decision, None))
            continue
        with store.transaction():
            chunk_record = ChunkRecord(utc_now_iso())
            for decision in decisions:
                _record(store, run_id, decision, report, resolving, any_failed, chunk_record)
            for action in duplicates:
                chunk_record.enqueue(
                    outbox_action(store, run_id, action, report, any_failed=any_failed)
                )
            chunk_record.write(store)
        fault_point("plan:chunk")


@dataclass
class ChunkRecord:
    """The chunk's frequent writes, collected and written in one statement each (a first
    sync plans thousands of memories a second, and a statement a memory was half of it).
    The memories of a chunk are distinct, so the order between tables does not matter; the
    outbox keeps the order the actions were planned in, which is replay's order."""

    now: str
    agreements: list[Agreement] = field(default_factory=list)
    acknowledgements: list[Acknowledgement] = field(default_factory=list)
    forgotten: list[tuple[str, str]] = field(default_factory=list)  # (memory, provider)
    actions: list[NewAction] = field(default_factory=list)

    def enqueue(self, action: NewAction | None) -> None:
        if action is not None:
            self.actions.append(action)

    def write(self, store: StagingStore) -> None:
        store.links.agree(self.agreements)
        store.links.acknowledge(self.acknowledgements)
        store.links.forget_bases(self.forgotten)
        store.outbox.enqueue_many(self.actions, self.now)


def _record(
    store: StagingStore,
    run_id: int,
    decision: Decision,
    report: CycleReport,
    resolving: set[str],
    any_failed: bool,
    chunk_record: ChunkRecord,
) -> None:
    now = chunk_record.now
    if decision.conflict is not None:
        _store_conflict(store, run_id, decision, report)
    if decision.blocked:
        return
    if decision.settled_rollbacks:
        store.rollbacks.clear((p, decision.link_id) for p in decision.settled_rollbacks)
    if decision.winner is not None:
        if decision.deleted:
            store.links.agree_deleted(decision.link_id, now)
        else:
            chunk_record.agreements.append(
                Agreement(decision.link_id, decision.winner, decision.agreed, now)
            )
    for provider, fingerprint in decision.acknowledge.items():
        if fingerprint is None:
            chunk_record.forgotten.append((decision.link_id, provider))
        else:
            chunk_record.acknowledgements.append(
                Acknowledgement(now, decision.link_id, provider, fingerprint)
            )
    if decision.link_id in resolving:
        store.conflicts.mark_resolved(decision.link_id, now)
    for action in decision.actions:
        chunk_record.enqueue(outbox_action(store, run_id, action, report, any_failed=any_failed))


def _store_conflict(
    store: StagingStore, run_id: int, decision: Decision, report: CycleReport
) -> None:
    """Record the conflict with each side's version (an open one only once)."""
    conflict = decision.conflict
    assert conflict is not None
    if conflict.winner is None:
        existing = store.conflicts.open_id(decision.link_id)
        if existing is not None:
            report.conflicts.append(conflict_entry(decision, existing))
            return
    versions = conflict_versions(store, decision.link_id, conflict.changes)
    conflict_id = store.conflicts.add(
        decision.link_id,
        run_id,
        conflict.policy,
        conflict.winner,
        dumps(versions),
        utc_now_iso(),
        rolled_back=conflict.rolled_back,
    )
    report.conflicts.append(conflict_entry(decision, conflict_id))


GONE: dict[str, Any] = {
    "provider_id": None,
    "content": None,
    "metadata": {},
    "updated_at": None,
    "fingerprint": None,
    "gone": True,
}  # a side of a rollback whose store lost the memory with it


def conflict_versions(
    store: StagingStore, link_id: str, changes: Sequence[Change]
) -> dict[str, dict[str, Any]]:
    """Each side's version as the mirror holds it, for the conflict's record."""
    versions: dict[str, dict[str, Any]] = {}
    for change in changes:
        if change.version is None:
            versions[change.provider] = dict(GONE)
            continue
        fingerprint = change.version.fingerprint
        record = store.records.with_fingerprint(change.provider, link_id, fingerprint)
        if record is not None:
            versions[change.provider] = version_entry(record)
    return versions


def version_entry(record: Record) -> dict[str, Any]:
    """One side of a conflict, as it is recorded and shown."""
    return {
        "provider_id": record.id,
        "content": record.content,
        "metadata": record.metadata,
        "updated_at": record.updated_at,
        "fingerprint": record.fingerprint,
    }


def conflict_entry(decision: Decision, conflict_id: int | None) -> ConflictEntry:
    conflict = decision.conflict
    assert conflict is not None
    return ConflictEntry(
        id=conflict_id,
        link_id=decision.link_id,
        providers=[c.provider for c in conflict.changes],
        policy=conflict.policy,
        winner=conflict.winner,
        state="open" if conflict.winner is None else "resolved",
        kept_as_copies=list(conflict.keep_both_from),
        rolled_back=conflict.rolled_back,
    )
