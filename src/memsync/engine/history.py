"""A new store begins with its memories' past: the source's history read, the target's written.

``begin_with_history`` is one import: the source says what its history holds
(``Provider.history``), the pure ``timeline`` turns it into each memory's versions, ending with
what the source lists now, and the target writes them (``Provider.import_history``), its HEAD
exactly the current-state copy. ``migrate`` calls it before its copy (``--history``), and a sync
cycle calls it through ``bring_history`` between the mirrors and the plan, for a store that asks
for it (mnem's ``import_history``) and holds no commit yet: the store is then listed again, and
the plan finds every memory already there, nothing to write.

In a cycle, the source is the one provider that flows into the new store and keeps a history
(a Mem0 provider), listed whole this cycle: what it lists is read from staging, not asked
again. Memories memsync saw in that source before they were deleted there come from the
journal, so their past is placed too (Mem0's library and server name no scope in their
history: without the journal a deleted memory cannot be placed, and is counted).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from memsync.base.history import HistoryReport, build_timeline
from memsync.base.history.events import SCOPE_IDS
from memsync.base.records import Record, utc_clock
from memsync.engine.provider_state import ProviderState
from memsync.providers.base import Provider

if TYPE_CHECKING:  # the cycle passes itself: typed, not imported at run time (no circle)
    from memsync.engine.cycle import Engine
    from memsync.engine.report import CycleReport, SyncOptions

log = logging.getLogger("memsync.history")


def begin_with_history(
    source: Provider,
    target: Provider,
    records: list[Record],
    *,
    gone: Iterable[Record] = (),
    budget: float | None = None,
    dry_run: bool = False,
) -> HistoryReport:
    """Read SOURCE's history of RECORDS (what it lists now) and of GONE (memories memsync saw
    before they were deleted there), and write it as TARGET's (both open)."""
    why = target.history_refusal()
    if why is not None:
        return HistoryReport(source="", not_imported=why)
    listed = {record.id for record in records}
    gone = [record for record in gone if record.id not in listed]
    read = source.history([r.id for r in records] + [r.id for r in gone])
    described = source.describe_scope()
    scope = {k: str(described[k]) for k in SCOPE_IDS if described.get(k) not in (None, "", "*")}
    timeline = build_timeline(
        [(source.origin_of(record), record) for record in records],
        [(record.origin or source.origin_of(record), record) for record in gone],
        read,
        cutover_ms=int(utc_clock().timestamp() * 1000),
        scope=scope,
        scope_key=source.scope_key(),
    )
    if not any(read.events.get(record.id) for record in [*records, *gone]):
        report = HistoryReport(
            read.source,
            not_imported="its history holds none of these memories (written behind Mem0's "
            "API, or a history that was reset): the store begins with their current state",
            requests=read.requests,
        )
        report.reasons = dict(timeline.reasons)
        return report
    report = target.import_history(timeline, budget=budget, dry_run=dry_run)
    for line in report.lines():
        log.info("%s -> %s: %s", source.name, target.name, line.strip())
    return report


def bring_history(engine: Engine, run_id: int, report: CycleReport, options: SyncOptions) -> None:
    """Each new store that asks for its memories' past gets it, before the plan (see module)."""
    for name, target in engine.providers.items():
        outcome = report.providers[name]
        if outcome.state != ProviderState.OK or not engine.topology.is_receiver(name):
            continue
        if not target.takes_history():
            continue
        source = _source_for(engine, name, report)
        if source is None:
            continue
        records = list(engine.store.records.of_provider(source.name))
        gone = engine.store.journal.last_seen(source.name)
        history = begin_with_history(source, target, records, gone=gone, dry_run=options.dry_run)
        outcome.history = history
        if history.written:
            engine.mirror_again(target, run_id, options, outcome)


def _source_for(engine: Engine, target: str, report: CycleReport) -> Provider | None:
    """The one provider flowing into TARGET that keeps a history, listed whole this cycle."""
    found = [
        provider
        for name, provider in engine.providers.items()
        if name != target
        and engine.topology.is_source(name)
        and provider.capabilities.history
        and report.providers[name].state == ProviderState.OK
        and report.providers[name].mirror is not None
    ]
    if len(found) != 1:
        if found:
            log.warning(
                "%s: %d providers with a history flow into it (%s); it begins without one",
                target,
                len(found),
                ", ".join(p.name for p in found),
            )
        return None
    mirror = report.providers[found[0].name].mirror
    if mirror is None or not mirror.complete:
        log.warning(
            "%s: %s was not listed whole this cycle, so what it lists is not all there is; "
            "the store begins without its history",
            target,
            found[0].name,
        )
        return None
    return found[0]
