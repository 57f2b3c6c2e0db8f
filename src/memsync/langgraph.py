"""``memsync.langgraph.MnemosyneStore``: mnem-langgraph's LangGraph store, on a store memsync
serves.

A drop-in for ``mnem_langgraph.MnemosyneStore`` (0.0.1): the same constructor, the same
``BaseStore`` operations (``batch``/``abatch`` and everything LangGraph builds on them: ``get``,
``put``, ``search``, ``delete``, ``list_namespaces`` and their async forms), and ``branch``,
``switch``, ``why`` and ``history``, with the same mapping (namespace + key is the node id
``":".join([*namespace, key])``; the value dict is the node's content, its ``_meta`` lifted into
provenance; every ``put`` and ``delete`` is one commit by ``author``). An application changes
one import line::

    from memsync.langgraph import MnemosyneStore   # was: from mnem_langgraph import ...

The difference is where the store is held: by the memsync daemon while it runs, so memsync
syncs the application's writes at once instead of finding the store busy; by this object when
no daemon runs, as mnem-langgraph holds it (``memsync.orchestration.serve.client``). PATH may
also be a root holding a store per namespace (``layout.stores = "per-namespace"``): it is
served as one store, each item in its namespace's (``memsync.orchestration.serve.sharded``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import mnem
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchItem,
    SearchOp,
)

from memsync.base.mnem_items import item_node_id, provenance_of
from memsync.orchestration.serve.sharded import store_client


def _timestamp(event_time: int | None) -> datetime:
    if event_time is not None:
        return datetime.fromtimestamp(event_time / 1000, tz=UTC)
    return datetime.now(tz=UTC)


def _memory_node(node: dict[str, Any]) -> mnem.MemoryNode:
    return mnem.MemoryNode(
        id=node["id"],
        content=node["content"],
        content_kind=node["content_kind"],
        provenance=mnem.Provenance(**node["provenance"]),
        event_time=node.get("event_time"),
    )


class MnemosyneStore(BaseStore):
    """A ``BaseStore`` whose every write is a Mnemosyne commit, held by the memsync daemon."""

    supports_ttl = False

    def __init__(self, path: str = ".", *, author: str = "agent") -> None:
        self._client = store_client(path, client="memsync.langgraph")
        self._author = author

    # --- the interface ---------------------------------------------------

    def batch(self, ops: Any) -> list[Any]:
        return [self._run(op) for op in ops]

    async def abatch(self, ops: Any) -> list[Any]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _run(self, op: Any) -> Any:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key)
        if isinstance(op, PutOp):
            return self._put(op.namespace, op.key, op.value)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        msg = f"unsupported store op: {type(op).__name__}"
        raise NotImplementedError(msg)

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        node = self._client.call("recall", id=item_node_id(namespace, key))
        if node is None:
            return None
        ts = _timestamp(node.get("event_time"))
        return Item(
            value=node["content"], key=key, namespace=namespace, created_at=ts, updated_at=ts
        )

    def _put(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any] | None) -> None:
        node_id = item_node_id(namespace, key)
        if value is None:
            self._client.call("forget", id=node_id, author=self._author)
            return
        self._client.call(
            "remember",
            id=node_id,
            content=value,
            author=self._author,
            summary=f"put {node_id}",
            **provenance_of(value),
        )

    def _search(self, op: SearchOp) -> list[SearchItem]:
        found = self._client.call(
            "search",
            prefix=list(op.namespace_prefix),
            query=op.query,
            filter=op.filter,
            offset=op.offset,
            limit=op.limit,
        )
        out = []
        for namespace, key, value, event_time in found:
            ts = _timestamp(event_time)
            out.append(SearchItem(tuple(namespace), key, value, ts, ts))
        return out

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = [
            {"match_type": condition.match_type, "path": list(condition.path)}
            for condition in op.match_conditions or ()
        ]
        found = self._client.call(
            "list_namespaces",
            conditions=conditions,
            max_depth=op.max_depth,
            offset=op.offset,
            limit=op.limit,
        )
        return [tuple(namespace) for namespace in found]

    # --- extra methods for a graph node --------------------------------

    def branch(self, name: str, *, start: str | None = None) -> str:
        """Fork memory onto a new branch (not part of ``BaseStore``)."""
        self._client.call("branch", name=name, start=start)
        return name

    def switch(self, target: str) -> None:
        """Move to a branch or commit."""
        self._client.call("switch", target=target)

    def why(self, namespace: tuple[str, ...], key: str) -> mnem.Blame:
        """The commit and provenance that set this memory's current value."""
        blame = self._client.call("why", id=item_node_id(namespace, key))
        return mnem.Blame(
            commit=blame["commit"], node=_memory_node(blame["node"]), time=blame["time"]
        )

    def history(self, *, limit: int = 20) -> list[mnem.Commit]:
        """The recent commits, newest first."""
        return [
            mnem.Commit(
                id=row["id"],
                parents=tuple(row["parents"]),
                state=row["state"],
                message=row["message"],
                author=row["author"],
                time=row["time"],
            )
            for row in self._client.call("history", limit=limit)
        ]

    def close(self) -> None:
        """Let go of the store (mnem-langgraph has no such call: it lets go when collected)."""
        self._client.close()


__all__ = ["MnemosyneStore"]
