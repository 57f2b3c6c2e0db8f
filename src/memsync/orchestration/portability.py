"""Export a provider to a PMM file, and import a PMM file into a provider, with honest reports.

Import reads the header before anything is written (an invalid header writes nothing), then
imports the good records and lists the bad ones by line or index. ``skip_duplicates`` skips a
record whose id the target already holds, or whose text it already holds in the same scope
(``memsync.base.sameness``: one copy in the target answers for one copy in the file, as sync pairs
them, so a file holding a text twice restores it twice into an empty store); ``overwrite``
replaces a memory with the same id and creates the rest. Duplicate lookups live in a
temporary SQLite file, so neither side of an import has to fit in memory.

A provider synced per scope (a team) takes a file of many scopes (``import_into_scopes``):
each record goes into the store of the scope its ``scope_key`` names, as a team's backup
writes them; a record whose ``scope_key`` names no scope is rejected, never guessed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from memsync.base.errors import MemsyncError, ProviderError
from memsync.base.pmm import Format, Header, Rejected, open_pmm, write_pmm_file, write_pmm_stream
from memsync.base.records import Outgoing, Record, Skipped, utc_now_iso
from memsync.base.sameness import same_key
from memsync.config import Config
from memsync.config.scoping import store_per_scope, wildcard_keys
from memsync.engine.journal import records_at
from memsync.orchestration.scopes.binding import binding_by_pmm_key
from memsync.providers import build_provider
from memsync.providers.base import Provider, WriteOp
from memsync.staging import StagingStore
from memsync.staging.import_index import ImportIndex

Strategy = Literal["skip_duplicates", "overwrite"]
BATCH = 500
Progress = Callable[[int], None]


@dataclass
class ExportReport:
    provider: str
    count: int = 0
    complete: bool = True
    partial_reason: str | None = None
    skipped: list[Skipped] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "exported": self.count,
            "complete": self.complete,
            "partial_reason": self.partial_reason,
            "skipped": [s.as_dict() for s in self.skipped],
        }


def export_provider(
    provider: Provider,
    *,
    output: Path | IO[str],
    fmt: Format = "jsonl",
    progress: Progress | None = None,
) -> ExportReport:
    """Stream every memory of a provider's scope into a PMM file (atomically) or stream."""
    report = ExportReport(provider.name)
    listing = provider.listing()

    def records() -> Iterator[Record]:
        for page in listing.kept_pages(provider.exclusion):
            report.skipped.extend(page.skipped)
            for record in page.records:
                record.origin = provider.origin_of(record)
                yield record
            if progress:
                progress(len(page.records))

    header = Header(source_provider=provider.family, scope=provider.describe_scope())
    if isinstance(output, Path):
        report.count = write_pmm_file(output, header, records(), fmt)
    else:
        report.count = write_pmm_stream(output, header, records(), fmt)
    report.complete = listing.complete
    report.partial_reason = listing.partial_reason
    return report


@dataclass
class ImportReport:
    target: str
    dry_run: bool = False
    imported: int = 0
    updated: int = 0
    skipped_duplicate: list[str] = field(default_factory=list)
    skipped_empty: list[str] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.rejected and not self.failed

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "dry_run": self.dry_run,
            "imported": self.imported,
            "updated": self.updated,
            "skipped": [{"id": i, "reason": "duplicate"} for i in self.skipped_duplicate]
            + [{"id": i, "reason": "empty content"} for i in self.skipped_empty],
            "rejected": [r.as_dict() for r in self.rejected],
            "failed": self.failed,
        }


def _index_target(provider: Provider) -> ImportIndex:
    """The target's ids, origins and content hashes per scope, in a scratch SQLite file."""
    index = ImportIndex()
    try:
        for page in provider.listing().pages():
            ids = []
            for record in page.records:
                ids.append((record.scope_key, record.id, record.id))
                ids.append((record.scope_key, provider.origin_of(record), record.id))
            index.add_page(ids, [same_key(r.scope_key, r) for r in page.records])
        index.finish_loading()
    except BaseException:
        index.close()
        raise
    return index


def import_file(
    path: Path | IO[bytes],
    provider: Provider,
    *,
    strategy: Strategy = "skip_duplicates",
    dry_run: bool = False,
    max_content_bytes: int,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a PMM file (or a stream of one) into a provider; see the module docstring."""
    report = ImportReport(provider.name, dry_run=dry_run)
    with open_pmm(path, max_content_bytes) as reader:  # the header is checked here, first
        family = reader.header.source_provider
        _import_into(provider, reader, family, strategy, dry_run, report, progress)
    return report


def import_into(
    path: Path,
    config: Config,
    name: str,
    *,
    strategy: Strategy = "skip_duplicates",
    dry_run: bool = False,
    max_content_bytes: int,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a PMM file into configured provider NAME: into its one scope, or, when it is
    synced per scope (a team), each record into the scope its ``scope_key`` names."""
    entry = config.provider(name)
    base = build_provider(name, config)
    options: dict[str, Any] = dict(
        strategy=strategy, dry_run=dry_run, max_content_bytes=max_content_bytes, progress=progress
    )
    if not (wildcard_keys(entry) or store_per_scope(entry)):
        with base:
            return import_file(path, base, **options)
    try:  # the scopes' copies share what the base opens on their behalf (an HTTP client)
        return import_into_scopes(path, name, binding_by_pmm_key(config, name, base), **options)
    finally:
        base.close()


def import_into_scopes(
    path: Path,
    name: str,
    bind: Callable[[str], Provider | None],
    *,
    strategy: Strategy = "skip_duplicates",
    dry_run: bool = False,
    max_content_bytes: int,
    progress: Progress | None = None,
) -> ImportReport:
    """Import a file of many scopes into provider NAME, synced per scope: ``bind(scope_key)``
    gives the scope's provider (None: the key names no scope, and its records are rejected).
    Each run of records of one scope is imported as ``import_file`` imports a file."""
    report = ImportReport(name, dry_run=dry_run)
    with open_pmm(path, max_content_bytes) as reader:
        family = reader.header.source_provider
        runs = itertools.groupby(
            reader, key=lambda item: item.scope_key if isinstance(item, Record) else None
        )
        for scope_key, items in runs:
            if scope_key is None:
                report.rejected.extend(i for i in items if isinstance(i, Rejected))
                continue
            try:
                provider = bind(scope_key)
                if provider is None:
                    why = (
                        f"scope_key {scope_key!r} names no scope of {name}"
                        if scope_key
                        else (f"no scope_key: {name} is synced per scope")
                    )
                    report.failed.extend({"id": r.id or "?", "error": why} for r in items)
                    continue
                with provider:
                    _import_into(provider, items, family, strategy, dry_run, report, progress)
            except MemsyncError as exc:  # this scope's store only: the other scopes go on
                report.failed.append({"id": f"{name}[{scope_key}]", "error": str(exc)})
    return report


def _import_into(
    provider: Provider,
    items: Iterable[Record | Rejected],
    family: str,
    strategy: Strategy,
    dry_run: bool,
    report: ImportReport,
    progress: Progress | None,
) -> None:
    existing = _index_target(provider)
    try:
        batch: list[WriteOp] = []
        for item in items:
            if isinstance(item, Rejected):
                report.rejected.append(item)
                continue
            op = _plan_one(item, provider, family, strategy, existing, report)
            if op is None:
                continue
            if dry_run:
                _count(report, op)
                continue
            batch.append(op)
            if len(batch) >= BATCH:
                _flush(provider, batch, report, progress)
                batch = []
        if batch and not dry_run:
            _flush(provider, batch, report, progress)
    finally:
        existing.close()


def _plan_one(
    record: Record,
    provider: Provider,
    family: str,
    strategy: Strategy,
    existing: ImportIndex,
    report: ImportReport,
) -> WriteOp | None:
    label = record.id or f"sha256:{record.content_hash[:16]}"
    if record.is_blank:
        report.skipped_empty.append(label)
        return None
    origin = record.origin or (
        f"{family}:{record.id}" if record.id else f"pmm:{record.content_hash[:32]}"
    )
    scope = provider.scope_key() or record.scope_key
    keys = [k for k in (record.id, origin) if k]
    match = existing.provider_id(scope, *keys)
    item = Outgoing.from_record(record, origin)
    item.scope_key = scope
    if strategy == "skip_duplicates" and (
        match is not None or existing.claim_copy(same_key(scope, record))
    ):
        report.skipped_duplicate.append(label)
        return None
    existing.remember(scope, keys)
    if match:
        return WriteOp("update", label, item=item, provider_id=match)
    return WriteOp("create", label, item=item)


def _count(report: ImportReport, op: WriteOp) -> None:
    if op.kind == "update":
        report.updated += 1
    else:
        report.imported += 1


def _flush(
    provider: Provider, batch: list[WriteOp], report: ImportReport, progress: Progress | None
) -> None:
    for result in provider.write_many(batch):
        if result.error is not None:
            message = (
                str(result.error) if isinstance(result.error, ProviderError) else repr(result.error)
            )
            report.failed.append({"id": result.op.key, "error": message})
        else:
            _count(report, result.op)
    if progress:
        progress(len(batch))


def export_at(store: StagingStore, provider: str, at: str, output: Path | IO[str]) -> int:
    """Write PROVIDER's memories as they stood at AT, rebuilt from the journal, as a PMM file
    (written atomically) or stream; how many there were."""
    header = Header(
        source_provider=provider,
        scope={"provider": provider, "at": at},
        exported_at=utc_now_iso(),
    )
    records = records_at(store, provider, at)
    if isinstance(output, Path):
        return write_pmm_file(output, header, records)
    return write_pmm_stream(output, header, records)
