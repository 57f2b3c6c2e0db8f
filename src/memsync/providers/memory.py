"""An in-process provider holding memories in a dict: for tests, benchmarks and the planner.

Like vdirsyncer's memory storage: the smallest thing that honours the provider contract, so
the engine can be tested on it in milliseconds. It can be told to fail (``faults``) the way
real providers do. Not configurable from config.toml.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

from memsync.base.errors import NotFound, ProviderBusy, TransientProviderError
from memsync.base.records import Outgoing, Record, utc_now_iso
from memsync.providers.base import (
    Capabilities,
    Listing,
    Page,
    Provider,
    SimpleListing,
    require_content,
    stored_text,
)


@dataclass
class Faults:
    """Failures to inject; each counter is consumed as it fires."""

    busy: bool = False  # open() raises ProviderBusy
    fail_writes: int = 0  # the next N writes raise TransientProviderError
    fail_listing_after_pages: int | None = None  # the listing breaks after N pages
    list_nothing: bool = False  # the listing returns no memories (but says complete)


@dataclass
class MemoryStore:
    """The backing data, shareable between provider instances (a 'server')."""

    records: dict[str, Record] = field(default_factory=dict)
    counter: Iterator[int] = field(default_factory=lambda: itertools.count(1))


class MemoryProvider(Provider):
    type = "memory"
    family = "memory"

    def __init__(
        self,
        name: str,
        store: MemoryStore | None = None,
        *,
        scope: str = "",
        page_size: int = 100,
        client_ids: bool = False,
        family: str | None = None,
        strip_text: bool = False,
    ) -> None:
        super().__init__(name)
        self.store = store or MemoryStore()
        self.scope = scope
        self.page_size = page_size
        self.capabilities = Capabilities(  # type: ignore[misc]
            client_ids=client_ids, text_on_write="strip" if strip_text else "exact"
        )
        if family:
            self.family = family  # type: ignore[misc]
        self.faults = Faults()
        self.writes = 0

    def identity(self) -> str:
        return f"memory:{id(self.store)}#{self.scope}"

    def scope_key(self) -> str:
        return self.scope

    def open(self) -> None:
        if self.faults.busy:
            raise ProviderBusy(f"{self.name}: store busy (held by another process)")

    def origin_of(self, record: Record) -> str:
        if self.capabilities.client_ids and ":" in record.id:
            return record.id
        return super().origin_of(record)

    def _mine(self) -> list[Record]:
        return sorted(
            (r for r in self.store.records.values() if r.scope_key == self.scope),
            key=lambda r: r.id,
        )

    def listing(self, cursor: str | None = None) -> Listing:
        return SimpleListing(self._pages())

    def _pages(self) -> Iterator[Page]:
        records = [] if self.faults.list_nothing else self._mine()
        for number, start in enumerate(range(0, len(records), self.page_size)):
            if (
                self.faults.fail_listing_after_pages is not None
                and number >= self.faults.fail_listing_after_pages
            ):
                raise TransientProviderError(f"{self.name}: listing failed (injected)")
            yield Page([_copy(r) for r in records[start : start + self.page_size]])

    def get(self, provider_id: str) -> Record | None:
        record = self.store.records.get(provider_id)
        return _copy(record) if record and record.scope_key == self.scope else None

    def _write_fault(self) -> None:
        self.writes += 1
        if self.faults.fail_writes:
            self.faults.fail_writes -= 1
            raise TransientProviderError(f"{self.name}: write failed (injected)")

    def create(self, item: Outgoing) -> Record:
        require_content(self.name, item)
        self._write_fault()
        record_id = item.origin if self.capabilities.client_ids else f"m{next(self.store.counter)}"
        now = utc_now_iso()
        record = Record(
            id=record_id,
            content=stored_text(self.capabilities, item.content),
            metadata=dict(item.metadata),
            scope_key=self.scope,
            created_at=item.created_at or now,
            updated_at=now,
            version=now,
            provenance=dict(item.provenance),
            origin=item.origin,
            expiration_date=item.expiration_date,
        )
        self.store.records[record_id] = record
        return _copy(record)

    def update(self, provider_id: str, item: Outgoing) -> Record:
        require_content(self.name, item)
        self._write_fault()
        old = self.store.records.get(provider_id)
        if old is None or old.scope_key != self.scope:
            raise NotFound(f"{self.name}: no memory {provider_id!r}")
        now = utc_now_iso()
        record = Record(
            id=provider_id,
            content=stored_text(self.capabilities, item.content),
            metadata=dict(item.metadata),
            scope_key=self.scope,
            created_at=old.created_at,
            updated_at=now,
            version=f"{now}#{next(self.store.counter)}",
            provenance=dict(item.provenance),
            origin=item.origin,
            expiration_date=item.expiration_date,
        )
        self.store.records[provider_id] = record
        return _copy(record)

    def delete(self, provider_id: str) -> None:
        self._write_fault()
        record = self.store.records.get(provider_id)
        if record is not None and record.scope_key == self.scope:
            del self.store.records[provider_id]

    # helpers for tests: what an application writing the store directly would do ------------

    def app_add(self, text: str, **metadata: object) -> str:
        """Write a memory as the application would (no origin marker)."""
        record_id = f"app{next(self.store.counter)}"
        now = utc_now_iso()
        self.store.records[record_id] = Record(
            id=record_id,
            content=text,
            metadata=dict(metadata),
            scope_key=self.scope,
            created_at=now,
            updated_at=now,
            version=now,
        )
        return record_id

    def app_edit(self, record_id: str, text: str, when: str | None = None) -> None:
        old = self.store.records[record_id]
        now = when or utc_now_iso()
        self.store.records[record_id] = Record(
            id=record_id,
            content=text,
            metadata=old.metadata,
            scope_key=old.scope_key,
            created_at=old.created_at,
            updated_at=now,
            version=f"{now}#{next(self.store.counter)}",
            provenance=old.provenance,
            origin=old.origin,
            expiration_date=old.expiration_date,
        )

    def contents(self) -> list[str]:
        return sorted(r.content for r in self._mine())


def _copy(record: Record) -> Record:
    return Record(
        id=record.id,
        content=record.content,
        metadata=dict(record.metadata),
        scope_key=record.scope_key,
        created_at=record.created_at,
        updated_at=record.updated_at,
        version=record.version,
        provenance=dict(record.provenance),
        origin=record.origin,
        expiration_date=record.expiration_date,
    )
