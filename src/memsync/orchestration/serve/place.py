"""Which configured mnem provider, and which scope, a store on disk is: the daemon serves only
the stores it syncs, and a write there starts a cycle for that provider and scope alone.

A store that holds every scope in its namespaces (a LangGraph layout naming scope keys: one
store for a whole team) is no one scope: an agent's write there names its scope by the node it
wrote, so a put into ``("memories", "bob")`` starts bob's cycle, not the team's. A root with a
store per namespace (``stores = "per-namespace"``) is served shard by shard: each shard is the
place of the scope its namespace names."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memsync.base.mnem_items import namespace_keys, place_in_namespace, place_of_namespace
from memsync.base.mnem_shards import namespace_of_shard
from memsync.base.scopes import Scope
from memsync.config import Config, MnemConfig
from memsync.config.scoping import is_template, sharded
from memsync.providers.mnem.watched import MnemTemplate
from memsync.providers.watched import Hint


@dataclass(frozen=True)
class Place:
    """A served store: its root (the directory holding ``.mnem``), provider and scope."""

    root: Path
    provider: str
    scope: Scope | None
    scope_key: str  # its records' PMM scope_key, as a cycle gives them
    busy_timeout: float
    namespace: tuple[str, ...] | None = None  # a store holding many scopes: its template
    branch: str | None = None  # the branch the provider syncs (its batches' notes name it)
    outside: bool = False  # a shard whose namespace is no scope's: memsync syncs nothing in it

    @property
    def hint(self) -> Hint:
        return Hint(self.provider, self.scope)

    def hints_for(self, node_ids: list[str]) -> set[Hint]:
        """The scopes a write of NODE_IDS changed: on a store holding many scopes, the scopes
        of the namespaces the nodes are in (a node outside every one is not memsync's: none);
        otherwise, or when the write names no node (a branch, a merge), the store's hint."""
        if self.outside:
            return set()
        if self.namespace is None or not node_ids:
            return {self.hint}
        hints = set()
        for node_id in node_ids:
            values = place_in_namespace(self.namespace, node_id)
            if values:
                hints.add(Hint(self.provider, Scope.of(values)))
        return hints

    @property
    def label(self) -> str:
        return self.hint.label


def store_root(path: str | Path) -> Path | None:
    """The store ``mnem.open(path)`` opens: the nearest directory at or above PATH holding a
    ``.mnem`` directory; None when there is none."""
    start = Path(path).expanduser().resolve()
    for candidate in (start, *start.parents):
        if (candidate / ".mnem").is_dir():
            return candidate
    return None


def serves_any(config: Config) -> bool:
    """Whether the config names a mnem store to serve to agents."""
    return any(isinstance(entry, MnemConfig) for entry in config.providers.values())


def place_of(config: Config, root: Path) -> Place | None:
    """The configured mnem provider (and scope, for a path template) whose store ROOT is."""
    for name, entry in config.providers.items():
        if not isinstance(entry, MnemConfig):
            continue
        if is_template(entry):
            for template in _spellings(Path(entry.path)):
                hint = MnemTemplate(name, template).hint_for(root / ".mnem" / "store")
                if hint is not None and hint.scope is not None:
                    return Place(
                        root,
                        name,
                        hint.scope,
                        hint.scope.pmm_key,
                        entry.busy_timeout,
                        branch=entry.branch,
                    )
            continue
        if sharded(entry):
            place = _shard_place(name, entry, root)
            if place is not None:
                return place
            continue
        if Path(entry.path).expanduser().resolve() == root:
            key = entry.scope_key or root.name
            return Place(
                root, name, None, key, entry.busy_timeout, _many_scopes(entry), entry.branch
            )
    return None


def _shard_place(name: str, entry: MnemConfig, root: Path) -> Place | None:
    """The place of ROOT when it is a shard of ENTRY's sharded root: the scope its namespace
    names, or no scope (``outside``) for a namespace the layout does not name."""
    if root.parent != Path(entry.path).expanduser().resolve():
        return None
    namespace = namespace_of_shard(root.name)
    if namespace is None or isinstance(entry.layout, str):
        return None
    segments = namespace.split(":") if namespace else []
    values = place_of_namespace(entry.layout.namespace, segments)
    scope = Scope.of(values) if values else None
    key = entry.scope_key or (scope.pmm_key if scope is not None else root.name)
    return Place(
        root,
        name,
        scope,
        key,
        entry.busy_timeout,
        branch=entry.branch,
        outside=values is None,
    )


def _many_scopes(entry: MnemConfig) -> tuple[str, ...] | None:
    """The namespace template of a store that holds a scope per namespace, else None."""
    layout = entry.layout
    if isinstance(layout, str) or not namespace_keys(layout.namespace):
        return None
    return tuple(layout.namespace)


def _spellings(template: Path) -> list[Path]:
    """The template as written, and with its fixed part resolved (a symlinked home, /tmp)."""
    expanded = template.expanduser()
    fixed = next((n for n, part in enumerate(expanded.parts) if "{" in part), 0)
    resolved = Path(*expanded.parts[:fixed]).resolve().joinpath(*expanded.parts[fixed:])
    return [expanded] if resolved == expanded else [expanded, resolved]
