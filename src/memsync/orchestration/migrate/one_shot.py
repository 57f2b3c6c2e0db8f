"""The one-shot pass: every memory a source lists, copied into a target once, with a report.

The report says what was carried, already there, skipped (and why) or refused.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from memsync.base.errors import ProviderError
from memsync.base.history import HistoryReport
from memsync.base.records import Outgoing, Record, Skipped
from memsync.base.sameness import Copies, SameKey, same_key, scope_of, star_scope
from memsync.engine.history import begin_with_history
from memsync.providers.base import Provider, WriteOp
from memsync.providers.mem0.object_source import Mem0Source
from memsync.providers.mnem.handle import StagedChangesPresent
from memsync.providers.mnem.history_import import allocated_bytes
from memsync.providers.mnem.provider import MnemProvider

log = logging.getLogger("memsync.migrate")

DEFAULT_BATCH = 500
STORE_SIZED_BATCH = 50_000  # bounds what one batch holds in memory
CHANGED_REASON = (
    "already in {target} with other content; not overwritten (memsync sync carries changes)"
)


@dataclass
class MigrationReport:
    """What a migration did: counts, and every memory not carried with the reason why."""

    source: str
    target: str
    dry_run: bool = False
    listed: int = 0  # memories the source listed (skipped ones included)
    planned: int = 0  # memories to write (in a dry run: that would be written)
    imported: int = 0  # memories written
    already_present: int = 0
    skipped: list[Skipped] = field(default_factory=list)  # not carried, expectedly (with why)
    failed: list[Skipped] = field(default_factory=list)  # writes the target refused (with why)
    complete: bool = False  # the source listing was proven whole
    partial_reason: str | None = None
    history: HistoryReport | None = None  # the past brought along (a new mnem store)

    @property
    def skipped_ids(self) -> list[str]:
        return [s.id for s in self.skipped]

    @property
    def ok(self) -> bool:
        """Everything listed was proven whole and nothing failed."""
        return self.complete and not self.failed

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "listed": self.listed,
            "planned": self.planned,
            "imported": self.imported,
            "already_present": self.already_present,
            "skipped": [s.as_dict() for s in self.skipped],
            "failed": [s.as_dict() for s in self.failed],
            "complete": self.complete,
            "partial_reason": self.partial_reason,
            "history": self.history.as_dict() if self.history is not None else None,
        }


def import_mem0(
    store: Any,
    mem0_memory: Any,
    *,
    filters: Mapping[str, Any],
    batch_size: int | None = None,
    dry_run: bool = False,
    api: Literal["auto", "memory", "client"] = "auto",
    sdk: ModuleType | None = None,
) -> MigrationReport:
    """Import the current state of one Mem0 scope into an open mnem ``Store`` (ADR-0024).

    ``mem0_memory`` is a ``mem0.Memory`` (``get_all(filters=, top_k=)``) or a
    ``MemoryClient``-shaped object (``get_all(filters=, page=, page_size=)`` answering
    ``{count, next, results}``); ``api`` forces one when detection by signature cannot tell.
    ``filters`` must name a user_id, agent_id, app_id (the Platform's) or run_id (Mem0 has no
    list-everything call).
    The store stays open: the caller owns it.
    """
    target = MnemProvider.attached(store, name="mnem", sdk=sdk)
    if target._foreign_staging:
        raise StagedChangesPresent(
            f"mnem: {len(target._foreign_staging)} uncommitted change(s) are staged in "
            f"{target.path} ({', '.join(target._foreign_staging[:5])}); import_mem0 will not "
            "commit them for you: commit or unstage them first"
        )
    source = Mem0Source(mem0_memory, filters, api=api)
    return migrate(source, target, dry_run=dry_run, batch_size=batch_size)


def migrate(
    source: Provider,
    target: Provider,
    *,
    dry_run: bool = False,
    batch_size: int | None = None,
    history: bool | None = None,
    history_budget: float | None = None,
    gone: Iterable[Record] = (),
) -> MigrationReport:
    """Copy every memory SOURCE lists into TARGET once; open and close both around the pass.

    A memory counts as already present when TARGET holds a record of the same logical memory
    (origin) with the same fingerprint; with another fingerprint it is skipped, never
    overwritten. Empty ones are skipped by the source's listing. Writes go in batches through
    ``write_many`` (one commit each for mnem): ``batch_size`` each when given, else sized as
    the module docstring says.

    ``history``: first write each memory's past into TARGET, a new store (``engine.history``):
    True asks for it, False leaves it, None does what TARGET's config says (mnem's
    ``import_history``) when it can. ``history_budget`` overrides the config's disk budget;
    ``gone``: memories memsync saw in SOURCE before they were deleted there (the journal's).
    """
    if batch_size is not None and batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    report = MigrationReport(source=source.name, target=target.name, dry_run=dry_run)
    with source, target:
        if source.identity() == target.identity():
            raise ProviderError(
                f"{source.name} and {target.name} are the same store; migrate between two"
            )
        records = _list_source(source, report)
        carried: set[str] = set()
        if source.capabilities.history and (
            history or (history is None and target.takes_history())
        ):
            report.history = begin_with_history(
                source, target, records, gone=gone, budget=history_budget, dry_run=dry_run
            )
            if report.history.written:
                carried = set(report.history.heads)
        star = star_scope([source.scope_key(), target.scope_key()])
        if carried:  # a new store that holds exactly these (its HEAD was checked): no listing
            written = [(source.origin_of(r), r) for r in records if source.origin_of(r) in carried]
            present, copies = _carried_inventory(target, written, star)
        else:
            present, copies = _target_inventory(target, star)
        to_write = _plan(source, target, records, present, copies, star, report, carried)
        report.planned = len(to_write)
        if not dry_run:
            start, held = 0, len(present)
            while start < len(to_write):
                size = batch_size or _batch_size(target, held)
                _write_batch(target, to_write[start : start + size], report)
                start, held = start + size, held + size
    if report.history is not None and report.history.written and isinstance(target, MnemProvider):
        report.history.store_bytes = allocated_bytes(target.path)  # the handle let go: final
    log.info(
        "migrate %s -> %s: %d imported, %d already present, %d skipped, %d failed%s",
        source.name,
        target.name,
        report.imported,
        report.already_present,
        len(report.skipped),
        len(report.failed),
        " (dry run)" if dry_run else "",
    )
    return report


def _list_source(source: Provider, report: MigrationReport) -> list[Record]:
    listing = source.listing()
    records: list[Record] = []
    for page in listing.kept_pages(source.exclusion):
        records.extend(page.records)
        for skipped in page.skipped:
            log.warning("%s: skipped %s: %s", source.name, skipped.id, skipped.reason)
            report.skipped.append(skipped)
    report.listed = len(records) + len(report.skipped)
    report.complete = listing.complete
    report.partial_reason = listing.partial_reason
    if not listing.complete:
        log.warning(
            "%s: the listing is not proven whole (%s); what was listed is imported, the rest "
            "is not",
            source.name,
            listing.partial_reason or "no reason given",
        )
    return records


def _target_inventory(
    target: Provider, star: str
) -> tuple[dict[str, tuple[set[str], SameKey]], Copies]:
    """The target's memories by origin (fingerprints, text key), and its copies per text."""
    present: dict[str, tuple[set[str], SameKey]] = {}
    copies = Copies()
    listed = (record for page in target.listing().pages() for record in page.records)
    # expired memories are kept but not served: they are present too
    for record in itertools.chain(listed, target.hidden_records()):
        key = same_key(scope_of(target.scope_key(), record.scope_key, star), record)
        present.setdefault(target.origin_of(record), (set(), key))[0].add(record.fingerprint)
        copies.add(key)
    return present, copies


def _carried_inventory(
    target: Provider, written: list[tuple[str, Record]], star: str
) -> tuple[dict[str, tuple[set[str], SameKey]], Copies]:
    """The inventory of a store the history import just filled (and checked): the records it
    wrote at HEAD, by origin, as ``_target_inventory`` would list them."""
    present: dict[str, tuple[set[str], SameKey]] = {}
    copies = Copies()
    for origin, record in written:
        key = same_key(scope_of(target.scope_key(), target.scope_key(), star), record)
        present[origin] = ({record.fingerprint}, key)
        copies.add(key)
    return present, copies


def _plan(
    source: Provider,
    target: Provider,
    records: list[Record],
    present: dict[str, tuple[set[str], SameKey]],
    copies: Copies,
    star: str,
    report: MigrationReport,
    carried: Set[str] = frozenset(),
) -> list[Outgoing]:
    """What to write; CARRIED: memories the history import wrote already (imported, then)."""
    to_write: list[Outgoing] = []
    seen: set[str] = set()
    unmatched: list[tuple[str, Record]] = []
    for record in records:
        origin = source.origin_of(record)
        if origin in seen:  # offset paging may list a memory twice
            continue
        seen.add(origin)
        if origin not in present:
            unmatched.append((origin, record))
            continue
        fingerprints, key = present[origin]
        copies.claim(key)  # this copy is the memory's own: no other source record takes it
        if record.fingerprint in fingerprints and origin in carried:
            report.imported += 1  # written at the head of its history
        elif record.fingerprint in fingerprints:
            report.already_present += 1
        else:
            reason = CHANGED_REASON.format(target=target.name)
            log.warning("%s: skipped %s: %s", source.name, record.id, reason)
            report.skipped.append(Skipped(record.id, reason))
    for origin, record in unmatched:
        if copies.claim(same_key(scope_of(source.scope_key(), record.scope_key, star), record)):
            report.already_present += 1  # held under another id: adopted, not imported
        else:
            to_write.append(Outgoing.from_record(record, origin))
    return to_write


def _batch_size(target: Provider, held: int) -> int:
    """Writes in the next batch into TARGET, which holds about HELD memories."""
    if not target.capabilities.commits_scan_store:
        return DEFAULT_BATCH
    return min(max(DEFAULT_BATCH, held), STORE_SIZED_BATCH)


def _write_batch(target: Provider, batch: list[Outgoing], report: MigrationReport) -> None:
    ops = [WriteOp("create", item.origin, item=item) for item in batch]
    for result in target.write_many(ops):
        if result.error is None:
            report.imported += 1
        else:
            log.error("%s: could not write %s: %s", target.name, result.op.key, result.error)
            report.failed.append(Skipped(result.op.key, str(result.error)))
