"""The mnem provider a config entry describes: one store, a store per scope (a path template),
one store with a namespace per scope (a LangGraph layout naming scope keys), or a root with a
store per namespace (``stores = "per-namespace"``, ``sharded.py``).

``build`` makes the provider, and for the last two gives it how it serves the run over scopes
(``MnemProvider.per_scope``): a template binds a scope to that scope's own store, made on
demand (``on_demand.py``); a store of namespaces finds its scopes in its nodes and binds each
to a view through the one handle the run holds (``shared.py``). ``watched_files`` says which
files the daemon watches for it (``watched.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memsync.base.errors import ProviderUnavailable
from memsync.base.scopes import (
    SCOPE_KEYS,
    WILDCARD,
    Scope,
    fill_template,
    scoped_name,
    template_root,
)
from memsync.config import Config, MnemConfig
from memsync.config.scoping import is_template, scoped_in_store, sharded
from memsync.providers.base import Provider
from memsync.providers.discovery import Discovery
from memsync.providers.disk import DiskUse
from memsync.providers.held import HeldStores
from memsync.providers.mnem.disk import advice as layout_advice
from memsync.providers.mnem.disk import disk_use as store_disk_use
from memsync.providers.mnem.layouts import LangGraphLayout, layout_from_config
from memsync.providers.mnem.on_demand import OnDemandMnemProvider
from memsync.providers.mnem.opening import load_sdk
from memsync.providers.mnem.provider import MnemProvider
from memsync.providers.mnem.sharded import ShardedRoot, ShardPerNamespace, ShardProvider
from memsync.providers.mnem.shared import ScopeInStore, SharedStore
from memsync.providers.mnem.watched import MnemShards, MnemStore, MnemTemplate
from memsync.providers.watched import WatchedFiles


class StorePerScope:
    """A path template: each scope has a store of its own at the path its keys fill in."""

    discovers_scopes = False  # the stores are made on the first write, not found
    holds_every_scope = False

    def __init__(self, base: MnemProvider, entry: MnemConfig) -> None:
        self.base = base
        self.entry = entry

    def discover(self) -> Discovery | None:
        return None

    def describe(self) -> str:
        """Where the stores are: the template names no store of its own to open."""
        create = "created on first write" if self.entry.create else "must exist"
        return f"one store per scope under {template_root(Path(self.entry.path))} ({create})"

    def bind(self, scope: Scope) -> Provider:
        name, entry = self.base.name, self.entry
        bound = OnDemandMnemProvider(
            scoped_name(name, scope),
            fill_template(Path(entry.path), scope, provider=name),
            create=entry.create,
            config_name=name,
            scope_label=scope.label,
            branch=entry.branch,
            scope_key=scope.pmm_key,
            busy_timeout=entry.busy_timeout,
            sdk=self.base.sdk,
            held=self.base.held,
        )
        bound.wants_history, bound.history_budget = entry.import_history, entry.history_budget
        return bound


class NamespacePerScope:
    """One store holding every scope, a LangGraph namespace each: opened and read once for a
    run (``SharedStore``, made at the first use), each scope a view of it."""

    discovers_scopes = True  # the namespaces its nodes sit in
    holds_every_scope = True

    def __init__(self, base: MnemProvider) -> None:
        self.base = base
        self._shared: SharedStore | None = None

    @property
    def shared(self) -> SharedStore:
        if self._shared is None:
            self._shared = SharedStore(self.base)
        return self._shared

    def discover(self) -> Discovery:
        return Discovery(self.shared.discover())

    def describe(self) -> None:
        return None  # the store is opened, and its check counts its namespaces

    def bind(self, scope: Scope) -> Provider:
        name = scoped_name(self.base.name, scope)
        return ScopeInStore(name, self.shared, scope, scope_key=scope.pmm_key)


def build(
    name: str, entry: MnemConfig, config: Config, *, held: HeldStores | None = None
) -> MnemProvider:
    """The provider of ``providers.NAME``; ProviderUnavailable without the mnem SDK.

    In the daemon it borrows its Store from the daemon's held stores (``held``); any other
    process passes none, and the provider opens the store itself."""
    try:
        sdk = load_sdk()
    except ProviderUnavailable as exc:
        raise ProviderUnavailable(f"providers.{name}: {exc}") from None
    provider: MnemProvider
    scope_key = entry.scope_key or config_scope_key(config)
    if sharded(entry):
        return _sharded(name, entry, sdk, scope_key, held)
    if entry.create:
        provider = OnDemandMnemProvider(
            name,
            entry.path,
            create=True,
            config_name=name,
            branch=entry.branch,
            scope_key=scope_key,
            busy_timeout=entry.busy_timeout,
            sdk=sdk,
            held=held,
        )
    else:
        provider = MnemProvider(
            name,
            entry.path,
            branch=entry.branch,
            scope_key=scope_key,
            busy_timeout=entry.busy_timeout,
            sdk=sdk,
            held=held,
        )
    provider.layout = layout_from_config(entry.layout)
    provider.wants_history, provider.history_budget = entry.import_history, entry.history_budget
    if is_template(entry):
        provider.per_scope = StorePerScope(provider, entry)
    elif scoped_in_store(entry):
        provider.per_scope = NamespacePerScope(provider)
    return provider


def _sharded(
    name: str,
    entry: MnemConfig,
    sdk: Any,
    scope_key: str | None,
    held: HeldStores | None,
) -> MnemProvider:
    """A root holding a store per namespace: a shard per scope, or, for a namespace written
    literally (one scope), that namespace's shard alone."""
    layout = layout_from_config(entry.layout)
    assert isinstance(layout, LangGraphLayout)
    if layout.namespace is not None:
        shard = ShardProvider(
            name,
            Path(entry.path),
            layout.namespace,
            create=entry.create,
            config_name=name,
            branch=entry.branch,
            scope_key=scope_key,
            busy_timeout=entry.busy_timeout,
            sdk=sdk,
            held=held,
        )
        shard.layout = layout
        return shard
    root = ShardedRoot(
        name, entry.path, branch=entry.branch, busy_timeout=entry.busy_timeout, sdk=sdk, held=held
    )
    root.layout = layout
    root.per_scope = ShardPerNamespace(root, entry)
    return root


def config_scope_key(config: Config) -> str | None:
    """The scope a store of a single-scope config holds: the one its Mem0 providers name (a
    user id, else agent, app or run id), so that its memories carry that scope's key (a PMM
    backup files them under it), not the store directory's name. None when there is none."""
    found = set()
    for entry in config.providers.values():
        scope = getattr(entry, "scope", None)
        if not entry.type.startswith("mem0") or not scope:
            continue
        if WILDCARD in scope.values():
            return None
        found.add(next((scope[k] for k in SCOPE_KEYS if scope.get(k)), ""))
    found.discard("")
    return found.pop() if len(found) == 1 else None


def watched_files(
    name: str, entry: MnemConfig, keys: tuple[str, ...], *, held: HeldStores | None = None
) -> WatchedFiles:
    """Its store's ``.mnem`` directory; a template's, every store under the template's root
    (``held``: the daemon's held stores, which a look into a store borrows it from)."""
    if is_template(entry):
        return MnemTemplate(name, Path(entry.path), held)
    if sharded(entry):
        layout = layout_from_config(entry.layout)
        assert isinstance(layout, LangGraphLayout)
        return MnemShards(name, Path(entry.path), layout.template, held)
    return MnemStore(name, Path(entry.path), held)


def disk_use(name: str, entry: MnemConfig) -> DiskUse:
    """What its stores take on disk now (``disk.py``): read from the files, nothing opened."""
    return store_disk_use(entry)


def disk_advice(name: str, entry: MnemConfig) -> str:
    """What would make its stores grow slower: its layout's (``disk.py``), nothing read."""
    return layout_advice(entry)


__all__ = [
    "NamespacePerScope",
    "StorePerScope",
    "build",
    "config_scope_key",
    "disk_advice",
    "disk_use",
    "watched_files",
]
