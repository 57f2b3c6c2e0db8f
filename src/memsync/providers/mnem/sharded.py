"""A LangGraph layout with a mnem store per namespace under one root (``stores =
"per-namespace"``, ``base/mnem_shards``), synced as a store per scope.

One team store makes every commit cost the whole team's memories on mnem 0.0.7 (about 100
bytes a node a commit); a store per namespace makes it cost one user's. Each scope's namespace
is a store of its own (a shard), synced exactly as a path template's per-scope store with the
``langgraph`` layout bound to that namespace (node ids stay mnem-langgraph's, in full), and
made on its first write, the root's marker with it. The root's scopes are found by one
``readdir``: a namespace only a LangGraph agent wrote (a user Mem0 does not know yet) has a
shard, so it is synced too. A shard whose namespace the template does not name (an agent's
``("scratch",)``) is not memsync's: never read, never written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memsync.base.errors import ProviderError
from memsync.base.mnem_items import fill_namespace, namespace_id, place_of_namespace
from memsync.base.mnem_shards import ShardNameError, is_sharded_root, mark_root, shard_name, shards
from memsync.base.scopes import HostileScope, Scope, scoped_name
from memsync.config import MnemConfig
from memsync.providers.base import Listing, Provider
from memsync.providers.discovery import Discovery
from memsync.providers.mnem.layouts import LangGraphLayout
from memsync.providers.mnem.on_demand import OnDemandMnemProvider
from memsync.providers.mnem.provider import MnemProvider


def split_namespace(namespace: str) -> tuple[str, ...]:
    return tuple(namespace.split(":")) if namespace else ()


class ShardProvider(OnDemandMnemProvider):
    """One namespace's store under a sharded root, made with the root's marker on its first
    write (``create = true``)."""

    def __init__(self, name: str, root: Path, namespace: tuple[str, ...], **kwargs: Any) -> None:
        try:
            where = root / shard_name(namespace_id(namespace))
        except ShardNameError as exc:
            raise HostileScope(f"{name}: refused: {exc}; nothing was written for it") from None
        super().__init__(name, where, **kwargs)
        self.root = root

    def _initialise(self) -> None:
        try:
            mark_root(self.root.expanduser())
        except (ValueError, OSError) as exc:
            raise ProviderError(f"{self.name}: cannot make the sharded root: {exc}") from None
        super()._initialise()


class ShardedRoot(MnemProvider):
    """The configured provider of a sharded root: no store of its own, a shard per scope."""

    def open(self) -> None:
        """Make sure the root is one (its marker, written when the directory is there or
        ``create`` is set), so agents' clients route by namespace from the start."""
        root = self.path.expanduser()
        if is_sharded_root(root):
            return
        if (root / ".mnem").exists():
            raise ProviderError(
                f'{self.name}: {root} is a mnem store, but layout.stores = "per-namespace" '
                "needs a root of its own, holding a store per namespace; point path at a new "
                "directory"
            )
        creates = bool(getattr(self.per_scope, "creates", False))
        if not root.is_dir() and not creates:
            raise ProviderError(
                f"{self.name}: no directory at {root} for its stores; set create = true in "
                f"providers.{self.name} to make it on the first sync, or create it"
            )
        try:
            mark_root(root)
        except OSError as exc:
            raise ProviderError(f"{self.name}: cannot make the sharded root: {exc}") from None

    def close(self) -> None:
        """Nothing held: each scope's shard is opened and closed by its own provider."""

    def check(self) -> str:
        said = None if self.per_scope is None else self.per_scope.describe()
        return said or f"one store per namespace under {self.path}"

    def listing(self, cursor: str | None = None) -> Listing:
        raise ProviderError(f"{self.name}: a sharded root is synced per scope, a store each")

    def identity(self) -> str:
        return f"shards:{self._where()}" + self.layout.identity()


class ShardPerNamespace:
    """How a sharded root serves a run over scopes: a shard each, found by one ``readdir``."""

    discovers_scopes = True  # the namespaces its shards hold
    holds_every_scope = False  # each scope's shard is opened by that scope's cycle

    def __init__(self, base: ShardedRoot, entry: MnemConfig) -> None:
        assert isinstance(base.layout, LangGraphLayout)
        self.base = base
        self.entry = entry
        self.template = base.layout
        self.creates = entry.create

    @property
    def root(self) -> Path:
        return self.base.path.expanduser()

    def found(self) -> list[tuple[Scope, Path]]:
        """Every shard whose namespace is a scope's, with that scope."""
        placed = []
        for namespace, path in shards(self.root):
            values = place_of_namespace(self.template.template, split_namespace(namespace))
            if values:
                placed.append((Scope.of(values), path))
        return placed

    def discover(self) -> Discovery:
        return Discovery({scope for scope, _ in self.found()}, source="its namespace stores")

    def describe(self) -> str:
        every = sum(1 for _ in shards(self.root))
        scopes = len(self.found())
        create = "created on first write" if self.entry.create else "must exist"
        outside = f"; {every - scopes} outside the layout's namespaces" if every > scopes else ""
        return (
            f"reachable, one store per namespace under {self.root}: {scopes} namespace "
            f"store(s){outside} ({create}), layout {self.template.describe()}"
        )

    def bind(self, scope: Scope) -> Provider:
        name = self.base.name
        namespace = fill_namespace(self.template.template, scope, provider=name)
        shard = ShardProvider(
            scoped_name(name, scope),
            self.root,
            namespace,
            create=self.entry.create,
            config_name=name,
            scope_label=scope.label,
            branch=self.entry.branch,
            scope_key=scope.pmm_key,
            busy_timeout=self.entry.busy_timeout,
            sdk=self.base.sdk,
            held=self.base.held,
        )
        shard.layout = self.template.bound(scope, provider=name)
        return shard


__all__ = ["ShardPerNamespace", "ShardProvider", "ShardedRoot", "split_namespace"]
