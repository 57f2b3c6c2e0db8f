"""Binding the configured (wildcard) providers to one scope.

``mem0`` becomes ``mem0[user_id=alice]``, a mnem path template that scope's store, a pmm-dir
its scope's file. Inside staging each memory key carries its scope (``InScope``), so keys
never cross scopes; a store that could not be opened this cycle stays ``Unavailable``.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from memsync.base.errors import MemsyncError
from memsync.base.records import Outgoing, Record
from memsync.base.scopes import Scope, fill_template, scoped_name
from memsync.config import Config
from memsync.config.scoping import (
    MEM0_TYPES,
    fixed_keys,
    is_template,
    scoped_config_keys,
    scoped_in_store,
)
from memsync.providers.base import Listing, Provider, WriteOp, WriteResult


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

    def first_dates(self, provider_ids: list[str]) -> dict[str, str]:
        return self.inner.first_dates(provider_ids)

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
        self._shared: dict[str, Any] = {}  # name -> SharedStore: one store, a namespace a scope

    def shared_store(self, name: str, base: Provider | None = None) -> Any:
        """The SharedStore of a mnem provider whose one store holds every scope (made once)."""
        if name not in self._shared:
            from memsync.providers.mnem.shared import SharedStore

            self._shared[name] = SharedStore(base or self.bases[name])  # type: ignore[arg-type]
        return self._shared[name]

    def discover_in_store(self, name: str) -> set[Scope]:
        """The scopes whose namespaces hold nodes in such a store."""
        found: set[Scope] = self.shared_store(name).discover()
        return found

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
        bound = self._bound(name, base, scope)
        bound.exclusion = base.exclusion
        return bound

    def _bound(self, name: str, base: Provider, scope: Scope) -> Provider:
        entry = self.config.providers[name]
        scoped = scoped_name(name, scope)
        if entry.type in MEM0_TYPES:
            values = {**fixed_keys(entry), **scope.as_dict()}
            own = getattr(base, "bound_to", None)  # a provider class may bind itself
            if callable(own):
                bound: Provider = own(scoped, values)
                return bound
            return self._bind_mem0(name, scoped, base, values)
        if scoped_in_store(entry):
            from memsync.providers.mnem.shared import ScopeInStore

            return ScopeInStore(
                scoped, self.shared_store(name, base), scope, scope_key=scope.pmm_key
            )
        if is_template(entry):
            from memsync.providers.mnem.on_demand import OnDemandMnemProvider

            assert entry.type == "mnem"
            return OnDemandMnemProvider(
                scoped,
                fill_template(entry.path, scope, provider=name),
                create=entry.create,
                config_name=name,
                scope_label=scope.label,
                branch=entry.branch,
                scope_key=scope.pmm_key,
                busy_timeout=entry.busy_timeout,
                sdk=getattr(base, "sdk", None),
                held=getattr(base, "held", None),
            )
        if entry.type == "pmm-dir":
            from memsync.providers.pmm_dir import PmmDirProvider

            return PmmDirProvider(
                scoped,
                entry.path,
                scope_key=scope.pmm_key,
                max_content_bytes=self.config.pmm.max_content_bytes,
            )
        raise MemsyncError(f"providers.{name}: a {entry.type} provider cannot be bound to a scope")

    def _bind_mem0(
        self, name: str, scoped: str, base: Provider, values: dict[str, str]
    ) -> Provider:
        from memsync.providers import FACTORIES
        from memsync.providers.mem0.http import Mem0HttpProvider

        entry = self.config.providers[name]
        if entry.type == "mem0-oss" and getattr(base, "memory", None) is not None:
            from memsync.providers.mem0.oss import Mem0OssProvider

            assert isinstance(base, Mem0OssProvider)
            # Shares the Memory opened once for discovery: one store handle for all scopes.
            return Mem0OssProvider.from_memory(
                scoped,
                base.memory,
                values,
                mem0_config=base.mem0_config,
                embedder=base.embedder,
                telemetry=base.telemetry,
                mem0_dir=base.mem0_dir,
                busy_timeout=base.busy_timeout,
            )
        if isinstance(base, Mem0HttpProvider):
            return _http_bound(base, scoped, values)
        module_name, _, function = FACTORIES[entry.type].partition(":")
        factory = getattr(importlib.import_module(module_name), function)
        provider: Provider = factory(
            scoped, entry.model_copy(update={"scope": values}), self.config
        )
        return provider


def binding_by_pmm_key(
    config: Config, name: str, base: Provider
) -> Callable[[str], Provider | None]:
    """Provider NAME (synced per scope) bound to the scope a PMM ``scope_key`` names, as a
    team's backup writes them; None when the key names no scope."""
    from memsync.orchestration.scopes.discovery import scope_from_pmm_key

    binder = ScopeBinder(config, {name: base})

    def bind(key: str) -> Provider | None:
        scope = scope_from_pmm_key(key, binder.keys)
        return None if scope is None else binder.bind(name, base, scope)

    return bind


def _http_bound(base: Any, name: str, scope: Mapping[str, str]) -> Provider:
    """The HTTP provider of one scope: the configured one's settings (key, endpoint, transport)
    and client, its own scope and name."""
    bound = base.sharing(name)
    bound.scope = base.scope_ids(scope)
    if hasattr(bound, "_features"):
        bound._features = None
    assert isinstance(bound, Provider)
    return bound
