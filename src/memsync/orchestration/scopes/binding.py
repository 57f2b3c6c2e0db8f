"""Binding the configured (wildcard) providers to one scope.

Each provider binds itself (``Provider.bind``): ``mem0`` becomes ``mem0[user_id=alice]``, a
mnem path template that scope's store, a pmm-dir its scope's file. Inside staging each memory
key carries its scope (``InScope``), so keys never cross scopes; a store that could not be
opened this cycle stays ``Unavailable``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.records import Outgoing, Record
from memsync.base.scopes import Scope
from memsync.config import Config
from memsync.config.scoping import scoped_config_keys
from memsync.providers.base import (
    CommitBook,
    Listing,
    Provider,
    VersionDates,
    WriteOp,
    WriteResult,
)


class Unavailable(Provider):
    """A provider bound to a scope whose store could not be opened this cycle (busy, down).

    It keeps the real provider's identity (so the mirror is not reset) and fails on open
    with the original error, so each scope reports it without waiting on it again.
    """

    def __init__(self, inner: Provider, error: MemsyncError) -> None:
        super().__init__(inner.name)
        self.inner = inner
        self.error = error
        self.exclusion = inner.exclusion
        self.type = inner.type  # type: ignore[misc]
        self.family = inner.family  # type: ignore[misc]
        self.capabilities = inner.capabilities  # type: ignore[misc]

    def open(self) -> None:
        raise self.error

    def identity(self) -> str:
        return self.inner.identity()

    def scope_key(self) -> str:
        return self.inner.scope_key()

    def listing(self, cursor: str | None = None) -> Listing:
        raise self.error

    def get(self, provider_id: str) -> Record | None:
        raise self.error

    def create(self, item: Any) -> Record:
        raise self.error

    def update(self, provider_id: str, item: Any) -> Record:
        raise self.error

    def delete(self, provider_id: str) -> None:
        raise self.error


class InScope(Provider):
    """A provider bound to one scope, whose memories staging keys by scope as well as origin.

    Staging keeps one agreed version per memory key (``link_state``), shared by every
    provider. Two scopes may well hold memories with the same origin: agents writing their
    own mnem stores name nodes alike (``profile``), foreign PMM files number their records
    from 1. Keyed by origin alone, alice deleting her ``profile`` would mark bob's deleted.
    So inside staging each key carries its scope (``[user_id=alice]mnem:profile``), and the
    scope is taken off again at the provider's edge: stores see the origin markers they
    always did, and a memory's key never crosses scopes.
    """

    def __init__(self, inner: Provider, scope: Scope) -> None:
        super().__init__(inner.name)
        self.inner = inner
        self.prefix = f"[{scope.label}]"
        self.exclusion = inner.exclusion
        self.type = inner.type  # type: ignore[misc]
        self.family = inner.family  # type: ignore[misc]
        self.capabilities = inner.capabilities  # type: ignore[misc]

    def _outside(self, item: Outgoing) -> Outgoing:
        if not item.origin.startswith(self.prefix):
            return item
        return dataclasses.replace(item, origin=item.origin[len(self.prefix) :])

    def open(self) -> None:
        self.inner.open()

    def close(self) -> None:
        self.inner.close()

    def identity(self) -> str:
        return self.inner.identity()

    def scope_key(self) -> str:
        return self.inner.scope_key()

    def describe_scope(self) -> dict[str, Any]:
        return self.inner.describe_scope()

    def left_token(self) -> str | None:
        return self.inner.left_token()

    def origin_of(self, record: Record) -> str:
        return self.prefix + self.inner.origin_of(record)

    def check(self) -> str:
        return self.inner.check()

    def listing(self, cursor: str | None = None) -> Listing:
        return self.inner.listing(cursor)

    def get(self, provider_id: str) -> Record | None:
        return self.inner.get(provider_id)

    def version_dates(self, created: list[str], updated: Mapping[str, str | None]) -> VersionDates:
        return self.inner.version_dates(created, updated)

    def keep_commits_in(self, book: CommitBook) -> None:
        self.inner.keep_commits_in(book)

    def create(self, item: Outgoing) -> Record:
        return self.inner.create(self._outside(item))

    def update(self, provider_id: str, item: Outgoing) -> Record:
        return self.inner.update(provider_id, self._outside(item))

    def delete(self, provider_id: str) -> None:
        self.inner.delete(provider_id)

    def write_many(self, ops: list[WriteOp]) -> Iterator[WriteResult]:
        asked = {op.key: op for op in ops}
        outside = [
            dataclasses.replace(op, item=self._outside(op.item)) if op.item is not None else op
            for op in ops
        ]
        for result in self.inner.write_many(outside):
            yield WriteResult(asked[result.op.key], record=result.record, error=result.error)


class ScopeBinder:
    """Builds the providers of one scope from the configured (wildcard) ones."""

    def __init__(self, config: Config, bases: Mapping[str, Provider]) -> None:
        self.config = config
        self.bases = dict(bases)
        self.keys = scoped_config_keys(config.providers)
        self.unavailable: dict[str, MemsyncError] = {}

    def bind_all(self, scope: Scope) -> dict[str, Provider]:
        """Every provider bound to ``scope``; HostileScope when a template refuses its keys."""
        bound: dict[str, Provider] = {}
        for name, base in self.bases.items():
            provider: Provider = InScope(self.bind(name, base, scope), scope)
            if name in self.unavailable:
                provider = Unavailable(provider, self.unavailable[name])
            bound[provider.name] = provider
        return bound

    def bind(self, name: str, base: Provider, scope: Scope) -> Provider:
        """Provider NAME bound to ``scope``; its ``exclude`` holds in every scope."""
        bound = base.bind(scope)
        if bound is None:
            entry = self.config.providers[name]
            raise MemsyncError(
                f"providers.{name}: a {entry.type} provider cannot be bound to a scope"
            )
        bound.exclusion = base.exclusion
        return bound


def binding_by_pmm_key(
    config: Config, name: str, base: Provider
) -> Callable[[str], Provider | None]:
    """Provider NAME (synced per scope) bound to the scope a PMM ``scope_key`` names, as a
    team's backup writes them; None when the key names no scope."""
    binder = ScopeBinder(config, {name: base})

    def bind(key: str) -> Provider | None:
        scope = Scope.from_pmm_key(key, binder.keys)
        return None if scope is None else binder.bind(name, base, scope)

    return bind
