"""One-shot migration with an honest report: ADR-0024's ``import_mem0``, and provider to provider.

``import_mem0(store, mem0_memory, filters=...)`` copies the current state of one Mem0 scope
into a mnem store, with ADR-0024's semantics exactly:

- paging is a real loop: ``Memory.get_all`` is asked with a growing ``top_k`` until a call
  comes back short (``mem0.paging``); a ``MemoryClient`` is paged with ``page``/``page_size``
  until ``next`` is empty and the total matches ``count``. Nothing is dropped past a cap; a
  listing that cannot be proven whole says so in the report (``complete=False``);
- a memory with empty content is skipped, logged by its Mem0 id and reported, and the import
  goes on; nothing empty is ever written;
- an expired memory (Mem0 hides it) is imported with its ``expiration_date``: mnem, which has
  no expiry, gets it in a commit and then forgets it in a tombstone commit, so its history
  keeps it (see ``providers/mnem/``); a Mem0 target gets the date natively;
- node ids are ``mem0:{memory_id}``; provenance maps as every adapter's does (actor_id, else
  role, as source; created_at kept; the rest kept, see ``providers/mnem/``);
- errors are memsync's typed errors; a per-record skip is a result, not an error;
- it is idempotent: a memory already imported with the same content is counted as already
  present, never written twice; one imported before and changed in Mem0 since is reported
  as skipped (``memsync sync`` carries changes, a one-shot import does not overwrite);
- a memory the target already holds under another id (the same text in the same scope, as
  ``memsync.base.sameness`` defines it, one copy for one copy) is already present too: a second
  run against a store that another tool filled imports nothing;
- writes go in batched commits (one commit per batch). A target whose every commit costs in
  proportion to the whole store (mnem) gets batches as large as what it already holds, up to
  ``STORE_SIZED_BATCH``: a copy of N memories then commits about twice N nodes' worth in all,
  where batches of a fixed size would commit N²/size (quadratic); others get ``DEFAULT_BATCH``.

Mem0's per-memory edit history is not ported, only the current state: Mem0 keeps history per
memory id, with no store-wide event log to replay.

``migrate(source, target)`` is the same pass between any two configured providers (the CLI's
``memsync migrate --from NAME --to NAME [--dry-run]``).
"""

from __future__ import annotations

import inspect
import itertools
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from types import ModuleType
from typing import Any, Literal

from memsync.base.errors import (
    AuthError,
    InvalidResponse,
    ProviderError,
    TransientProviderError,
)
from memsync.base.records import Outgoing, Record, Skipped
from memsync.base.sameness import Copies, SameKey, same_key, scope_of, star_scope
from memsync.providers.base import Listing, Page, Provider, WriteOp
from memsync.providers.mem0.convert import record_from_mem0, scope_key_of
from memsync.providers.mem0.paging import fetch_all
from memsync.providers.mnem.handle import StagedChangesPresent
from memsync.providers.mnem.provider import MnemProvider

log = logging.getLogger("memsync.migrate")

DEFAULT_BATCH = 500
STORE_SIZED_BATCH = 50_000  # bounds what one batch holds in memory
CLIENT_PAGE_SIZE = 200  # the Mem0 Platform's largest page
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
) -> MigrationReport:
    """Copy every memory SOURCE lists into TARGET once; open and close both around the pass.

    A memory counts as already present when TARGET holds a record of the same logical memory
    (origin) with the same fingerprint; with another fingerprint it is skipped, never
    overwritten. Empty ones are skipped by the source's listing. Writes go in batches through
    ``write_many`` (one commit each for mnem): ``batch_size`` each when given, else sized as
    the module docstring says.
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
        star = star_scope([source.scope_key(), target.scope_key()])
        present, copies = _target_inventory(target, star)
        to_write = _plan(source, target, records, present, copies, star, report)
        report.planned = len(to_write)
        if not dry_run:
            start, held = 0, len(present)
            while start < len(to_write):
                size = batch_size or _batch_size(target, held)
                _write_batch(target, to_write[start : start + size], report)
                start, held = start + size, held + size
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


def _plan(
    source: Provider,
    target: Provider,
    records: list[Record],
    present: dict[str, tuple[set[str], SameKey]],
    copies: Copies,
    star: str,
    report: MigrationReport,
) -> list[Outgoing]:
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
        if record.fingerprint in fingerprints:
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


# --- a Mem0 object as a read-only source ------------------------------------------------------


class Mem0Source(Provider):
    """A Mem0 ``Memory`` or ``MemoryClient`` object the caller built, listed for one scope."""

    type = "mem0-object"
    family = "mem0"

    def __init__(
        self,
        mem0: Any,
        filters: Mapping[str, Any],
        *,
        name: str = "mem0",
        api: Literal["auto", "memory", "client"] = "auto",
    ) -> None:
        super().__init__(name)
        self.mem0 = mem0
        self.filters = dict(filters or {})
        if not any(self.filters.get(key) for key in _SCOPE_IDS):
            raise ProviderError(
                "import_mem0: filters must name a user_id, agent_id, app_id or run_id, e.g. "
                "filters={'user_id': 'alice'}; Mem0 has no 'list everything' call"
            )
        self.api = api if api != "auto" else _api_of(mem0)

    def identity(self) -> str:
        scope = ",".join(f"{k}={v}" for k, v in sorted(self.filters.items()))
        return f"mem0-object:{id(self.mem0)}#{scope}"

    def scope_key(self) -> str:
        return scope_key_of({k: str(v) for k, v in self.filters.items() if k in _SCOPE_IDS})

    def origin_of(self, record: Record) -> str:
        return record.origin or f"mem0:{record.id}"

    def listing(self, cursor: str | None = None) -> Listing:
        return _Mem0Listing(self)

    def get(self, provider_id: str) -> Record | None:
        raise ProviderError(f"{self.name}: a Mem0 import source is read-only")

    def create(self, item: Outgoing) -> Record:
        raise ProviderError(f"{self.name}: a Mem0 import source is read-only")

    def update(self, provider_id: str, item: Outgoing) -> Record:
        raise ProviderError(f"{self.name}: a Mem0 import source is read-only")

    def delete(self, provider_id: str) -> None:
        raise ProviderError(f"{self.name}: a Mem0 import source is read-only")

    # fetching --------------------------------------------------------------------------

    def fetch(self, listing: Listing) -> list[Mapping[str, Any]]:
        if self.api == "memory":
            return self._fetch_memory(listing)
        return self._fetch_client(listing)

    def _fetch_memory(self, listing: Listing) -> list[Mapping[str, Any]]:
        def get_all(top_k: int) -> list[Mapping[str, Any]]:
            # show_expired=True: Mem0 then fetches exactly top_k, so a short answer proves
            # "all"; expired memories move with their date, never silently left behind.
            answer = self._call(
                lambda: self.mem0.get_all(
                    filters=dict(self.filters), top_k=top_k, show_expired=True
                )
            )
            return _results_of(answer, self.name)

        result = fetch_all(get_all)
        if not result.complete:
            listing.mark_partial(
                f"Mem0 returned {len(result.items)} memories at top_k={result.top_k}, the "
                "largest memsync asks for; more may exist"
            )
        return result.items

    def _fetch_client(self, listing: Listing) -> list[Mapping[str, Any]]:
        items: list[Mapping[str, Any]] = []
        count: Any = None
        page = 1
        while True:
            answer = self._call(partial(self._client_page, page))
            results = _results_of(answer, self.name)
            count = answer.get("count", count)
            items.extend(results)
            if not results or not answer.get("next"):
                break
            page += 1
        unique = {str(item.get("id")): item for item in items}
        if not isinstance(count, int) or len(unique) != count:
            listing.mark_partial(
                f"Mem0 listed {len(unique)} distinct memories but counts {count}; the store "
                "changed while paging: run the import again"
            )
        return list(unique.values())

    def _client_page(self, page: int) -> Any:
        # show_expired: an expired memory still exists; it is imported with its date (and a
        # store without expiry tombstones it), never silently left behind. include_merged: so
        # does one the Platform's Dream merged (it moves with its state; mnem forgets it).
        return self.mem0.get_all(
            filters=dict(self.filters),
            page=page,
            page_size=CLIENT_PAGE_SIZE,
            show_expired=True,
            include_merged=True,
        )

    def _call(self, call: Callable[[], Any]) -> Any:
        error: ProviderError
        try:
            return call()
        except ProviderError:
            raise
        except ValueError as exc:  # Memory's own validation: filters, top_k
            error = ProviderError(f"{self.name}: Mem0 refused the listing: {exc}")
        except Exception as exc:
            error = _mem0_error(self.name, exc)
        raise error


class _Mem0Listing(Listing):
    def __init__(self, source: Mem0Source) -> None:
        super().__init__()
        self.source = source

    def pages(self) -> Iterator[Page]:
        raws = self.source.fetch(self)
        scope_key = self.source.scope_key()
        page = Page([])
        for raw in raws:
            mapped = record_from_mem0(raw, scope_key)
            if isinstance(mapped, Skipped):
                page.skipped.append(mapped)
            else:  # an expired memory too: it moves with its date (mnem tombstones it)
                page.records.append(mapped)
        yield page
        if self.partial_reason is None:
            self.complete = True


_SCOPE_IDS = ("user_id", "agent_id", "app_id", "run_id")  # app_id: the Platform's alone


def _api_of(mem0: Any) -> Literal["memory", "client"]:
    """``Memory.get_all`` takes ``top_k``; ``MemoryClient.get_all`` pages instead."""
    get_all = getattr(mem0, "get_all", None)
    if get_all is None:
        raise ProviderError("import_mem0: expected a mem0 Memory or MemoryClient (no get_all)")
    try:
        parameters = inspect.signature(get_all).parameters
    except (TypeError, ValueError):
        return "memory"
    return "memory" if "top_k" in parameters else "client"


def _results_of(answer: Any, name: str) -> list[Mapping[str, Any]]:
    results = answer.get("results") if isinstance(answer, Mapping) else None
    if not isinstance(results, list) or not all(isinstance(r, Mapping) for r in results):
        raise InvalidResponse(f"{name}: Mem0's get_all answered without a 'results' list")
    return results


def _mem0_error(name: str, exc: Exception) -> ProviderError:
    """A Mem0 client error as a typed memsync error (by class name: mem0 stays optional)."""
    kind = type(exc).__name__
    if kind in ("AuthenticationError", "PermissionError") or "401" in str(exc)[:80]:
        return AuthError(f"{name}: Mem0 refused the credentials; check the API key")
    if kind in ("RateLimitError", "NetworkError", "ConnectError", "TimeoutException"):
        return TransientProviderError(f"{name}: Mem0 is unreachable or busy ({kind}); try again")
    return ProviderError(f"{name}: Mem0 failed to list memories: {kind}: {exc}")
