"""Mem0's past written into a new mnem store: each version at its own time, HEAD as today.

A history import goes only into a store with no commit yet: mnem's ``log`` orders commits by
their time, so past-dated commits after present ones would read as the oldest. It writes:

1. an empty first commit, ``memsync: Mem0 history of SCOPE begins``, dated just before the
   first event (mnem-mcp's ``when_did`` bisects from the first commit, where the memory it asks
   about must not be yet);
2. the planned commits (``memsync.base.history.windows``: the finest windows the disk budget
   allows, no two versions of one memory in one commit), each dated by its newest event, its
   author the Mem0 actor when all its events share one (else ``mem0``), its message saying
   what happened (``mem0: 12 added, 3 updated, 1 deleted (2025-03; by bot-7)``);
3. the check that HEAD is exactly what the current-state import writes (every head version is
   built by the very ``node_spec`` it uses, so a difference is a bug: it stops, naming it);
4. the expiry and Dream tombstones the current-state import makes (``expiry``), and
5. an empty last commit, ``memsync: Mem0 history of SCOPE imported (...)``, at the move.

A past version is the node as it then was: the same id, its text then, ``event_time`` the
memory's ``created_at``, ``provenance.source`` the event's actor (else role), and memsync's note
without metadata (Mem0's history keeps none) and with ``memsync_history = "mem0"`` among its
provenance, which says so. Each commit is noted as in flight before it is staged, like any
batch, so a kill leaves nothing staged that memsync cannot take back.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memsync.base.errors import ProviderError
from memsync.base.history.events import SCOPE_IDS
from memsync.base.history.report import FOLDED, HistoryReport
from memsync.base.history.timeline import MemoryPast, Timeline, Version
from memsync.base.history.windows import Plan, Step, plan_history
from memsync.base.records import Outgoing, Record, canonical_json, is_expired
from memsync.providers.mnem.commits import CommitEntry, now_ms
from memsync.providers.mnem.convert import NodeSpec, node_spec, node_version
from memsync.providers.mnem.expiry import forget_expired, forget_retired
from memsync.providers.mnem.handle import AUTHOR, StoreHandle

log = logging.getLogger("memsync.mnem")

HISTORY_MARK = "memsync_history"  # provenance of a past version: Mem0's history made it
VERSION_OVERHEAD = 500  # bytes a version costs the store beyond its JSON (objects, indexes)


@dataclass(frozen=True)
class _Written:
    """One version as a node to write (None: the node is removed from then on)."""

    past: MemoryPast
    version: Version
    spec: NodeSpec | None
    node_id: str  # the node every version of the memory is written to


def refusal(handle: StoreHandle) -> str | None:
    """Why a history cannot begin this open store, or None when it can."""
    if handle._foreign_staging:
        return "another writer left changes staged in the store"
    head = handle.sdk_call("read the head commit", lambda: handle.store.head_commit())
    if head is not None:
        return (
            "the store has commits already; a history can only begin a new store "
            "(mnem orders its log by time)"
        )
    return None


def import_history(
    handle: StoreHandle, timeline: Timeline, *, budget: float, dry_run: bool
) -> HistoryReport:
    """Write TIMELINE into the open, empty store (a plan only when DRY_RUN); see the module."""
    report = HistoryReport(timeline.source, budget=budget, requests=timeline.requests)
    report.reasons = dict(timeline.reasons)
    written, heads, failed = _nodes(handle, timeline)
    for reason, count in failed.items():
        report.reasons[reason] = report.reasons.get(reason, 0) + count
    steps = [_step(w) for w in written]
    head_costs = [_cost(spec) for spec in heads.values()]
    expired = [i for i, spec in heads.items() if is_expired(spec.expiration_date)]
    retired = [i for i, spec in heads.items() if spec.retired and i not in set(expired)]
    extra = int(bool(expired)) + int(bool(retired))
    plan = plan_history(steps, budget=budget, head_costs=head_costs, extra_commits=extra)
    _describe(report, plan, written)
    if not plan.within_budget:
        report.not_imported = (
            f"even one commit a year would make the store {plan.ratio:.1f}x its size without "
            f"history, past the budget of {budget:g}x"
        )
        return report
    if dry_run:
        return report
    started = time.perf_counter()
    report.removal_seconds = _write(handle, timeline, plan, written)
    report.write_seconds = time.perf_counter() - started
    _check_head(handle, heads)
    forget_expired(handle, expired)
    forget_retired(handle, retired)
    # what this hold knows of the store's nodes was "none": a write that follows checks
    handle.known.forget_all()  # type: ignore[attr-defined]  # (a MnemProvider's)
    where = _scope_text(handle)
    message = (
        f"{AUTHOR}: Mem0 history of {where} imported ({report.versions} versions of "
        f"{report.memories} memories in {report.commits} commits by {plan.window}); "
        "memsync syncs from here"
    )
    with handle.writing():  # after the tombstones' commits, never at their very millisecond
        newest = handle.sdk_call("read the log", lambda: handle.store.log(limit=1))
        _commit(handle, message, max(now_ms(), int(newest[0].time) + 1 if newest else 0))
    report.written = True
    report.heads = {w.past.origin for w in written if w.version.head}
    return report


def _nodes(
    handle: StoreHandle, timeline: Timeline
) -> tuple[list[_Written], dict[str, NodeSpec], dict[str, int]]:
    """Every version as a node (in time order), the head nodes by id, and the memories that
    could not be written at all, by why (a layout that cannot place them)."""
    written: list[_Written] = []
    heads: dict[str, NodeSpec] = {}
    failed: dict[str, int] = {}
    for past in timeline.pasts:
        try:
            specs = [_spec(handle, past, v) for v in past.versions]
        except ProviderError as exc:
            reason = f"cannot be written: {exc}"
            failed[reason] = failed.get(reason, 0) + 1
            continue
        node_id = next((spec.id for spec in specs if spec is not None), None)
        if node_id is None:
            continue  # no text at all (every version empty): nothing to write
        for version, spec in zip(past.versions, specs, strict=True):
            written.append(_Written(past, version, spec, node_id))
            if version.head and spec is not None:
                heads[spec.id] = spec
    written.sort(key=lambda w: w.version.at_ms)
    return written, heads, failed


def _spec(handle: StoreHandle, past: MemoryPast, version: Version) -> NodeSpec | None:
    if version.text is None:
        return None
    if version.head:  # exactly what the current-state import writes for this memory
        return node_spec(Outgoing.from_record(past.record, past.origin), layout=handle.layout)
    return node_spec(_past_item(past.record, past.origin, version), layout=handle.layout)


def _past_item(record: Record, origin: str, version: Version) -> Outgoing:
    """A past version as memsync writes it: its text, the memory's scope and date, the event's
    actor; no metadata (Mem0's history keeps none), and the mark that says so."""
    provenance: dict[str, Any] = {
        k: record.provenance[k] for k in SCOPE_IDS if record.provenance.get(k)
    }
    if version.actor_id:
        provenance["actor_id"] = version.actor_id
    if version.role:
        provenance["role"] = version.role
    source = version.actor_id or version.role or record.provenance.get("source")
    if source:
        provenance["source"] = source
    provenance[HISTORY_MARK] = "mem0"
    return Outgoing(
        origin=origin,
        content=version.text or "",
        scope_key=record.scope_key,
        created_at=record.created_at,
        provenance=provenance,
    )


def _step(written: _Written) -> Step:
    version, spec = written.version, written.spec
    return Step(
        key=written.node_id,
        at_ms=version.at_ms,
        present=spec is not None,
        cost=_cost(spec) if spec is not None else 0,
        actor=version.actor_id or version.role,
    )


def _cost(spec: NodeSpec) -> int:
    return len(canonical_json([spec.content, spec.provenance]).encode("utf-8")) + VERSION_OVERHEAD


def _describe(report: HistoryReport, plan: Plan, written: list[_Written]) -> None:
    report.memories = len({id(w.past) for w in written})
    kept = {i for commit in plan.commits for i in commit.steps}
    report.versions = len(kept)
    report.window = plan.window
    report.layer_cap = plan.layer_cap
    report.commits = len(plan.commits)
    report.predicted_bytes = plan.predicted
    report.baseline_bytes = plan.baseline
    report.within_budget = plan.within_budget
    if plan.folded:
        report.reasons[FOLDED] = len(plan.folded)


def _write(handle: StoreHandle, timeline: Timeline, plan: Plan, written: list[_Written]) -> float:
    """The first commit, then every planned one, each staged whole and committed; the seconds
    spent removing nodes (mnem 0.0.7's ``rm`` reads the whole head state at each call)."""
    removing = 0.0
    where = _scope_text(handle)
    first = min((c.at_ms for c in plan.commits), default=timeline.cutover_ms)
    with handle.writing():
        _commit(handle, f"{AUTHOR}: Mem0 history of {where} begins", first - 1)
        for commit in plan.commits:
            nodes = [written[i] for i in commit.steps]
            handle.note_batch([w.node_id for w in nodes])
            try:
                for node in nodes:
                    removing += _stage(handle, node)
                _commit(handle, commit.message, commit.at_ms, author=commit.author, nodes=nodes)
            except ProviderError:
                if handle.unstage([w.node_id for w in nodes]):
                    handle.in_flight.clear()
                raise
            handle.in_flight.clear()
    return removing


def _stage(handle: StoreHandle, written: _Written) -> float:
    """Stage one version; the seconds it took when it was a removal (else 0)."""
    spec = written.spec
    if spec is None:
        node_id = written.node_id
        started = time.perf_counter()
        handle.sdk_call(f"forget node {node_id!r}", lambda: handle.store.rm(node_id))
        return time.perf_counter() - started
    handle.sdk_call(
        f"stage node {spec.id!r}",
        lambda: handle.store.add(
            spec.id,
            spec.content,
            content_kind=spec.content_kind,
            provenance=handle.sdk.Provenance(**spec.provenance),
            event_time=spec.event_time,
        ),
        bad_input=True,
    )
    return 0.0


def _commit(
    handle: StoreHandle,
    message: str,
    at_ms: int,
    *,
    author: str = AUTHOR,
    nodes: Sequence[_Written] = (),
) -> None:
    """One commit at AT_MS of what is staged (NODES' versions), noted with what it wrote, so
    that the dating of versions (``dates``) reads this history without asking mnem."""
    commit = handle.sdk_call(
        "commit Mem0's history",
        lambda: handle.store.commit(message, author=author, time_ms=at_ms),
    )
    handle.meanwhile.wrote(commit)
    made = {w.node_id: w.spec.identity() for w in nodes if w.spec is not None}
    removed = frozenset(w.node_id for w in nodes if w.spec is None)
    handle.commits.note(CommitEntry(commit, at_ms, made, removed))


def _check_head(handle: StoreHandle, heads: dict[str, NodeSpec]) -> None:
    """HEAD holds exactly the head versions, each as the current-state import writes it."""
    nodes = handle.sdk_call("read working memory", lambda: handle.store.working_memory())
    for node_id, spec in heads.items():
        node = nodes.get(node_id)
        if node is None or node_version(node) != spec.identity():
            raise ProviderError(
                f"{handle.name}: after the history import, node {node_id!r} is not what the "
                "current-state import writes; this is a memsync bug: please report it"
            )
    extra = sorted(set(nodes) - set(heads))
    if extra:
        raise ProviderError(
            f"{handle.name}: after the history import, HEAD holds {len(extra)} node(s) the "
            f"current state does not ({extra[0]!r}...); this is a memsync bug: please report it"
        )


def _scope_text(handle: StoreHandle) -> str:
    return handle.scope_key() or str(handle.path)


def allocated_bytes(path: Path) -> int:
    """The bytes a store takes on disk (allocated blocks of ``.mnem/``): measure it once its
    handle is let go, since dropping a handle rewrites the store file."""
    total = 0
    for folder, _, files in os.walk(path / ".mnem"):
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue  # a file removed meanwhile
    return total
