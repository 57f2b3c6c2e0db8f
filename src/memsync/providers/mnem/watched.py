"""mnem stores, as the daemon's watcher sees them (``providers/watched.py``): a store at a fixed
path, every per-scope store under a template's root, or every shard of a root with a store per
namespace, stores made after the daemon started included.

mnem rewrites its store file whenever a handle is dropped, even one that only read (a
``verify``, a backup, an agent that looked and left): its time changes, its bytes do not. So a
mnem store is noted by content (``content_signature``: each file's size and the digest of its
first page, where redb keeps its commit slots, which every commit and every staged change
rewrite), not by times. A store whose content moved anyway is asked for the head commit
memsync left (``Provider.left_token``, ``mnem_settled``) before it counts as another program's.
"""

from __future__ import annotations

import re
from pathlib import Path

from memsync.base.errors import MemsyncError
from memsync.base.mnem_items import fill_namespace, namespace_id, place_of_namespace
from memsync.base.mnem_shards import ShardNameError, namespace_of_shard, shard_name
from memsync.base.scopes import HostileScope, Scope, fill_template, template_keys, template_root
from memsync.providers.held import HeldStores
from memsync.providers.mnem.provider import MnemProvider
from memsync.providers.watched import Hint, Signature, WatchedFiles, signature_of, within


def content_signature(store: Path) -> Signature:
    """A mnem store's files by content: unmoved by a handle that only read and let go."""
    return signature_of(store / ".mnem", by_content=True)


def mnem_settled(store: Path, token: str, held: HeldStores | None = None) -> Signature:
    """The content of the mnem store at STORE, if its head is still TOKEN with nothing staged
    and nothing was written while memsync looked (the content before and after agree).

    Opened without waiting: a store someone holds is in use, and that is for a cycle to see
    (in the daemon, borrowed from its ``held`` stores, which hold it for the agents it serves).
    """
    before = content_signature(store)
    handle = MnemProvider("watch", store, busy_timeout=0.0, held=held)
    try:
        handle.open()
        head = handle.left_token()
    except MemsyncError:
        head = None
    finally:
        handle.close()
    after = content_signature(store)
    return after if head == token and after == before else None


class MnemStore(WatchedFiles):
    """A mnem store at a fixed path: its ``.mnem`` directory."""

    # Beside wildcard scopes, one store holding every scope in its namespaces (a LangGraph
    # layout), which the run holds for all of them.
    every_scope = True

    def __init__(self, provider: str, root: Path, held: HeldStores | None = None) -> None:
        super().__init__(provider, root)
        self.held = held

    def hint_for(self, path: Path) -> Hint | None:
        return Hint(self.provider) if within(path, self.root / ".mnem") else None

    def signature(self, scope: Scope | None) -> Signature:
        return content_signature(self.root)

    def settled(self, scope: Scope | None, token: str) -> Signature:
        return mnem_settled(self.root, token, self.held)


class _StorePerScope(WatchedFiles):
    """A store per scope under one root: a scope's signature is its own store's."""

    held: HeldStores | None

    def _store_of(self, scope: Scope | None) -> Path | None:
        raise NotImplementedError

    def signature(self, scope: Scope | None) -> Signature:
        path = self._store_of(scope)
        return None if path is None else content_signature(path)

    def settled(self, scope: Scope | None, token: str) -> Signature:
        path = self._store_of(scope)
        return None if path is None else mnem_settled(path, token, self.held)


class MnemTemplate(_StorePerScope):
    """Every mnem store a path template names (one per scope), watched from the template's root,
    so that a store made after the daemon started is watched as soon as it appears."""

    def __init__(self, provider: str, template: Path, held: HeldStores | None = None) -> None:
        super().__init__(provider, template_root(template))
        self.held = held
        self.template = template
        self.keys = template_keys(str(template))
        self.pattern = _template_pattern(template)

    def hint_for(self, path: Path) -> Hint | None:
        for parent in path.parents:
            if parent.name != ".mnem":
                continue
            match = self.pattern.fullmatch(str(parent.parent))
            if match is None:
                return None
            scope = Scope.of({k: v for k, v in match.groupdict().items() if v is not None})
            try:
                if fill_template(self.template, scope, provider=self.provider) != parent.parent:
                    return None
            except HostileScope:
                return None
            return Hint(self.provider, scope)
        return None

    def _store_of(self, scope: Scope | None) -> Path | None:
        if scope is None:
            return None
        try:
            return fill_template(self.template, scope, provider=self.provider)
        except HostileScope:
            return None


class MnemShards(_StorePerScope):
    """Every shard of a root with a store per namespace (``stores = "per-namespace"``), watched
    from the root, so that a shard made after the daemon started is watched at once. A shard
    whose namespace is no scope's (an agent's ``("scratch",)``) gives no hint."""

    def __init__(
        self,
        provider: str,
        root: Path,
        template: tuple[str, ...],
        held: HeldStores | None = None,
    ) -> None:
        super().__init__(provider, root.expanduser())
        self.template = template
        self.held = held

    def hint_for(self, path: Path) -> Hint | None:
        try:
            parts = path.relative_to(self.root).parts
        except ValueError:
            return None
        if len(parts) < 2 or parts[1] != ".mnem":
            return None
        namespace = namespace_of_shard(parts[0])
        if namespace is None:
            return None
        values = place_of_namespace(self.template, namespace.split(":") if namespace else [])
        return Hint(self.provider, Scope.of(values)) if values else None

    def _store_of(self, scope: Scope | None) -> Path | None:
        if scope is None:
            return None
        try:
            namespace = fill_namespace(self.template, scope, provider=self.provider)
            return self.root / shard_name(namespace_id(namespace))
        except (HostileScope, ShardNameError):
            return None


def _template_pattern(template: Path) -> re.Pattern[str]:
    """A regex matching the store paths a template names, one path segment per placeholder."""
    pattern = ""
    seen: set[str] = set()
    for literal, field in re.findall(r"([^{]*)(?:\{(\w+)\})?", str(template)):
        pattern += re.escape(literal)
        if field:
            pattern += f"(?P={field})" if field in seen else f"(?P<{field}>[^/]+)"
            seen.add(field)
    return re.compile(pattern)


__all__ = ["MnemShards", "MnemStore", "MnemTemplate", "content_signature", "mnem_settled"]
