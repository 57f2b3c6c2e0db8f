"""A root with a mnem store per namespace (``base/mnem_shards``), served to an agent as one
store: each operation goes to the shard of the namespace it names.

memsync's clients (``memsync.langgraph.MnemosyneStore``, ``memsync mcp``) take the root's path
as they take a store's. Operations on one item (get, put, delete; recall, remember, forget,
why, when_did) reach its namespace's shard alone, through a ``StoreClient`` of that shard (the
daemon holds it when it runs, this process when not: each shard is handed over as a store
is); the ``OPEN_SHARDS`` most recently used are kept attached. A write into a namespace with
no shard yet makes it (``mnem.init``), so an agent's first put for a new user just works.

Operations on the whole root read every shard they concern, O(shards): ``search`` under a
prefix (the shards under it; LangMem's own-namespace search reads one), ``recall()`` and
``history`` (every shard, merged by node id and by time). ``list_namespaces`` is one
``readdir``, no shard opened; it lists a namespace whose items were all deleted (its store
keeps the history), where one store would not. A commit id names a commit of one shard:
``recall_at``, ``whats_new`` and ``commit_view`` look it up in the shard this client saw it
come from, else in each shard in turn. Branches are per store, so ``branch``, ``switch`` and
``merge`` are refused on a sharded root, as are the PMM tools (use ``memsync export`` per
scope).
"""

from __future__ import annotations

import gc
import heapq
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mnem

from memsync.base.errors import MemsyncError
from memsync.base.mnem_items import item_node_id, namespace_id_of
from memsync.base.mnem_shards import (
    ShardNameError,
    is_sharded_root,
    mark_root,
    shard_name,
    shards,
)
from memsync.base.paths import Paths, resolve_paths
from memsync.config import MnemConfig, load_config
from memsync.config.scoping import sharded
from memsync.orchestration.serve import ops
from memsync.orchestration.serve.client import StoreClient
from memsync.orchestration.serve.place import store_root
from memsync.providers.mnem.making import clear_unfinished, init_store

OPEN_SHARDS = 16  # shards kept attached (an fd and ~0.5 MB each where they are held)
KNOWN_COMMITS = 4096  # commit ids remembered with the shard they came from
BY_ID = frozenset({"remember", "forget", "recall", "why", "when_did"})
BY_COMMIT = frozenset({"recall_at", "whats_new", "commit_view"})
NOT_SHARDED = {
    "branch": "branches are per store",
    "switch": "branches are per store",
    "merge": "branches are per store",
    "memory_export": "use `memsync export --provider NAME` (a file per scope)",
    "memory_import": "use `memsync import FILE --provider NAME` (each record to its scope)",
}


class NotOnShardedRoot(MemsyncError):
    """An operation that needs one store, asked of a root holding a store per namespace."""


class ShardedClient:
    """A sharded root as one store for an agent's process (see the module docstring)."""

    def __init__(self, root: str | os.PathLike[str], *, client: str, paths: Paths | None = None):
        self.root = Path(root).expanduser()
        self.client = client
        self.paths = paths if paths is not None else resolve_paths()
        self._lock = threading.RLock()
        self._open: OrderedDict[str, StoreClient] = OrderedDict()
        self._commits: OrderedDict[str, str] = OrderedDict()  # commit id -> shard name
        self._closed = False

    @property
    def via_daemon(self) -> bool:
        """Whether the daemon holds the shards this client has open (any of them)."""
        return any(shard.via_daemon for shard in self._open.values())

    # shards ---------------------------------------------------------------------------------

    def _shard(self, name: str, *, create: bool = False) -> StoreClient | None:
        """The client of shard NAME (made with CREATE); None when there is no such shard."""
        found = self._open.get(name)
        if found is not None:
            self._open.move_to_end(name)
            return found
        path = self.root / name
        if not (path / ".mnem").is_dir() or clear_unfinished(mnem, path):
            if not create:
                return None
            _make_shard(self.root, path)
        shard = StoreClient(path, client=self.client, paths=self.paths)
        self._open[name] = shard
        while len(self._open) > OPEN_SHARDS:
            _, evicted = self._open.popitem(last=False)
            evicted.close()
        return shard

    def _every_shard(self, prefix: tuple[str, ...] = ()) -> list[tuple[str, str]]:
        """(namespace id, shard name) of every shard whose namespace starts with PREFIX."""
        found = []
        for namespace, path in shards(self.root):
            segments = tuple(namespace.split(":")) if namespace else ()
            if segments[: len(prefix)] == prefix:
                found.append((namespace, path.name))
        return found

    def _learn(self, answer: Any, name: str) -> None:
        """Remember which shard the commits in ANSWER came from."""
        commits: list[Any] = []
        if isinstance(answer, dict) and "commit" in answer:
            commits.append(answer["commit"])
        elif isinstance(answer, list):
            commits.extend(row.get("id") for row in answer if isinstance(row, dict))
        for commit in commits:
            if isinstance(commit, str):
                self._commits[commit] = name
                self._commits.move_to_end(commit)
        while len(self._commits) > KNOWN_COMMITS:
            self._commits.popitem(last=False)

    # operations ---------------------------------------------------------------------------

    def call(self, op: str, **args: Any) -> Any:
        """Operation OP (``serve.ops``) with ARGS, on the shard or shards it concerns."""
        with self._lock:
            if self._closed:
                raise mnem.StoreIoError(f"the store client for {self.root} was closed")
            if op in NOT_SHARDED:
                raise NotOnShardedRoot(
                    f"{op} is not served on {self.root}, which holds a store per namespace: "
                    f"{NOT_SHARDED[op]}"
                )
            route = _ROUTES.get(op)
            if route is not None:
                return route(self, args)
            if op in BY_ID:
                return self._by_id(op, args)
            if op in BY_COMMIT:
                return self._by_commit(op, args)
            raise ops.Unknown(f"unknown operation {op!r}")

    def _by_id(self, op: str, args: dict[str, Any]) -> Any:
        node_id = str(args.get("id")) if args.get("id") is not None else None
        if node_id is None:
            if op == "recall":  # recall() of everything
                return self._recall_all()
            raise TypeError(f"{op}() missing 1 required argument: 'id'")
        name = _name_of(node_id)
        shard = self._shard(name, create=op == "remember")
        if shard is None:
            return _as_empty_store(op, node_id)
        answer = shard.call(op, **args)
        self._learn(answer, name)
        return answer

    def _recall_all(self) -> dict[str, Any]:
        merged: dict[str, Any] = {}
        for _, name in self._every_shard():
            shard = self._shard(name)
            if shard is not None:
                merged.update(shard.call("recall") or {})
        return dict(sorted(merged.items()))

    def _by_commit(self, op: str, args: dict[str, Any]) -> Any:
        commit = str(args.get("commit"))
        node_id = args.get("id")
        if node_id is not None:
            candidates = [_name_of(str(node_id))]
        else:
            known = self._commits.get(commit)
            others = [name for _, name in self._every_shard() if name != known]
            candidates = ([known] if known else []) + others
        failed: mnem.MnemError | None = None
        for name in candidates:
            shard = self._shard(name)
            if shard is None:
                continue
            try:
                answer = shard.call(op, **args)
            except mnem.InvalidRefError as exc:
                failed = failed or exc
                continue
            self._commits[commit] = name
            return answer
        raise failed or mnem.InvalidRefError(f'invalid ref: no commit matching "{commit}"')

    def remember_many(self, args: dict[str, Any]) -> dict[str, Any]:
        """One commit per shard the items fall in (one, for items of one namespace)."""
        items = list(args.get("items") or [])
        groups: dict[str, list[Any]] = {}
        for item in items:
            groups.setdefault(_name_of(str(item["id"])), []).append(item)
        commits = []
        for name, group in groups.items():
            shard = self._shard(name, create=True)
            assert shard is not None
            answer = shard.call("remember_many", **{**args, "items": group})
            self._learn(answer, name)
            commits.append(answer["commit"])
        if not commits:
            return {"commit": None}
        return {"commit": commits[-1]} | ({"commits": commits} if len(commits) > 1 else {})

    def history(self, args: dict[str, Any]) -> list[dict[str, Any]]:
        """Every shard's newest commits, merged newest first."""
        limit = int(args.get("limit", ops.LOG_LIMIT))
        rows: list[dict[str, Any]] = []
        for _, name in self._every_shard():
            shard = self._shard(name)
            if shard is not None:
                found = shard.call("history", **args)
                self._learn(found, name)
                rows.extend(found)
        rows.sort(key=lambda row: row["time"], reverse=True)
        return rows[:limit]

    def search(self, args: dict[str, Any]) -> list[list[Any]]:
        """The matches of every shard under the prefix, in node-id order as one store's."""
        prefix = tuple(args.get("prefix") or ())
        offset, limit = int(args.get("offset", 0)), int(args.get("limit", 10))
        found: list[list[list[Any]]] = []
        for _, name in self._every_shard(prefix):
            shard = self._shard(name)
            if shard is not None:
                found.append(shard.call("search", **{**args, "offset": 0, "limit": offset + limit}))
        merged = heapq.merge(*found, key=lambda hit: item_node_id(hit[0], hit[1]))
        return list(merged)[offset : offset + limit]

    def list_namespaces(self, args: dict[str, Any]) -> list[list[str]]:
        """The shards' namespaces, no shard opened (one ``readdir``)."""
        namespaces = (tuple(ns.split(":")) if ns else () for ns, _ in self._every_shard())
        return ops.listed_namespaces(
            namespaces,
            args.get("conditions"),
            args.get("max_depth"),
            int(args.get("offset", 0)),
            int(args.get("limit", 100)),
        )

    def place_args(self) -> dict[str, str]:
        return {}

    def close(self) -> None:
        """Let go of every shard (the daemon's, after its linger, or ours)."""
        with self._lock:
            self._closed = True
            while self._open:
                _, shard = self._open.popitem()
                shard.close()


_ROUTES: dict[str, Callable[[ShardedClient, dict[str, Any]], Any]] = {
    "remember_many": ShardedClient.remember_many,
    "history": ShardedClient.history,
    "search": ShardedClient.search,
    "list_namespaces": ShardedClient.list_namespaces,
}


def _name_of(node_id: str) -> str:
    """The shard a node id belongs in, or mnem's own error for an id no shard can hold."""
    try:
        return shard_name(namespace_id_of(node_id))
    except ShardNameError as exc:
        raise mnem.InvalidRefError(f"invalid ref: {exc}") from None


def _as_empty_store(op: str, node_id: str) -> Any:
    """What a namespace with no store yet answers: what an empty store answers."""
    if op == "recall":
        return None
    if op == "forget":
        raise mnem.InvalidRefError(f'invalid ref: no node "{node_id}" in memory')
    if op == "why":
        raise mnem.InvalidRefError("invalid ref: cannot blame: HEAD has no commit")
    raise mnem.InvalidRefError("invalid ref: cannot bisect: HEAD has no commit")


def _make_shard(root: Path, path: Path) -> None:
    """A new, empty shard at PATH (someone making it at the same moment is as good)."""
    mark_root(root)
    try:
        store = init_store(mnem, path)
    except mnem.StoreExistsError:
        return
    del store
    gc.collect()


def store_client(
    path: str | os.PathLike[str], *, client: str, paths: Paths | None = None
) -> StoreClient | ShardedClient:
    """The client of the store at PATH: a ``ShardedClient`` for a sharded root (its marker,
    or memsync's config naming PATH as one, which then makes it), else a ``StoreClient``."""
    where = Path(path).expanduser()
    if is_sharded_root(where):
        return ShardedClient(where, client=client, paths=paths)
    if store_root(where) is None and _configured_root(where, paths):
        mark_root(where)
        return ShardedClient(where, client=client, paths=paths)
    return StoreClient(path, client=client, paths=paths)


def _configured_root(where: Path, paths: Paths | None) -> bool:
    """Whether memsync's config names WHERE as the root of a store per namespace."""
    config_file = (paths if paths is not None else resolve_paths()).config_file
    try:
        config = load_config(config_file)
    except MemsyncError:
        return False
    wanted = where.resolve()
    return any(
        isinstance(entry, MnemConfig)
        and sharded(entry)
        and Path(entry.path).expanduser().resolve() == wanted
        for entry in config.providers.values()
    )


__all__ = ["OPEN_SHARDS", "NotOnShardedRoot", "ShardedClient", "store_client"]
