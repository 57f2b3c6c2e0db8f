"""What an agent does with a mnem store, as mnem's own clients do it: operations by name, with
JSON arguments and a JSON answer, on an open Store.

``mnem-mcp`` and ``mnem-langgraph`` call the SDK in their own process. memsync's clients run the
same calls either there (no daemon serves the store: the Store is theirs) or in the daemon that
holds it; one table serves both, so the answers cannot depend on where the store is held.
Each write is one commit with the agent's author, summary and provenance (``mnem.agents``),
exactly as mnem's clients make it; one difference: a write over a memory memsync synced keeps
memsync's note in it (``KeepingNotes``), where mnem's clients drop it and memsync would write
it back in a second commit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from mnem import InvalidRefError, MnemError, Provenance, agents

from memsync.base.mnem_items import item_of
from memsync.providers.mnem.kept_note import PROVENANCE_FIELDS, keeping_note

Op = Callable[..., Any]
LOG_LIMIT = 20  # mnem-mcp's default for history


class Unknown(Exception):
    """An operation name this memsync does not know (a newer client, an older daemon)."""


class KeepingNotes:
    """The store as an agent's write sees it, with memsync's note kept in a rewritten node
    (``providers/mnem/kept_note``): one commit per edit of a synced memory, not two."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def add(
        self,
        id: str,
        content: Any,
        *,
        content_kind: str = "note",
        provenance: Any = None,
        event_time: int | None = None,
    ) -> Any:
        fields = {name: getattr(provenance, name, None) for name in PROVENANCE_FIELDS}
        spec = None
        if event_time is None:
            spec = keeping_note(self._store.working_node(id), id, content, fields, content_kind)
        if spec is None:
            return self._store.add(
                id, content, content_kind=content_kind, provenance=provenance, event_time=event_time
            )
        return self._store.add(
            id,
            spec.content,
            content_kind=spec.content_kind,
            provenance=Provenance(**spec.provenance),
            event_time=spec.event_time,
        )


def remember(
    store: Any,
    id: str,
    content: Any,
    *,
    source: str | None = None,
    step: str | None = None,
    observation: str | None = None,
    tool_call: str | None = None,
    note: str | None = None,
    summary: str | None = None,
    author: str = "agent",
) -> dict[str, Any]:
    keeping: Any = KeepingNotes(store)
    commit = agents.remember(
        keeping,
        id,
        content,
        source=source,
        step=step,
        observation=observation,
        tool_call=tool_call,
        note=note,
        summary=summary,
        author=author,
    )
    return {"commit": commit}


def remember_many(
    store: Any, items: list[dict[str, Any]], *, summary: str | None = None, author: str = "agent"
) -> dict[str, Any]:
    keeping: Any = KeepingNotes(store)
    commit = agents.remember_many(keeping, items, summary=summary, author=author)
    return {"commit": commit}


def forget(
    store: Any, id: str, *, summary: str | None = None, author: str = "agent"
) -> dict[str, Any]:
    return {"commit": agents.forget(store, id, summary=summary, author=author)}


def recall(store: Any, id: str | None = None) -> dict[str, Any] | None:
    if id is None:
        return {k: n.to_dict() for k, n in store.working_memory().items()}
    node = store.working_node(id)
    return node.to_dict() if node is not None else None


def recall_at(store: Any, commit: str, id: str | None = None) -> dict[str, Any] | None:
    state = store.state_at(commit)
    if id is None:
        return {k: n.to_dict() for k, n in state.items()}
    node = state.get(id)
    return node.to_dict() if node is not None else None


def history(store: Any, limit: int = LOG_LIMIT) -> list[dict[str, Any]]:
    return [c.to_dict() for c in store.log(limit=limit)]


def why(store: Any, id: str, at: str | None = None) -> dict[str, Any]:
    blame: dict[str, Any] = store.blame(id, at).to_dict()
    return blame


def when_did(
    store: Any,
    id: str,
    *,
    equals: Any = None,
    has_equals: bool = False,
    absent: bool = False,
    present: bool = False,
    good: str | None = None,
) -> dict[str, Any]:
    """The first commit where a memory equals a value, is absent or is present (one of them)."""
    predicate: Callable[[dict[str, Any]], bool]
    if absent:

        def predicate(state: dict[str, Any]) -> bool:
            return id not in state

    elif present:

        def predicate(state: dict[str, Any]) -> bool:
            return id in state

    elif has_equals:

        def predicate(state: dict[str, Any]) -> bool:
            return id in state and bool(state[id].content == equals)

    else:
        raise _invalid_ref("when_did needs one of equals, absent or present")
    commit = store.bisect(predicate, good=good)
    result: dict[str, Any] = {"commit": commit}
    try:
        result["blame"] = store.blame(id, commit).to_dict()
    except MnemError:
        result["blame"] = None
    return result


def whats_new(store: Any, commit: str) -> dict[str, str]:
    changed: dict[str, str] = store.changed_by(commit)
    return changed


def commit_view(store: Any, commit: str) -> dict[str, Any]:
    return {
        "changed": store.changed_by(commit),
        "state": {k: n.to_dict() for k, n in store.state_at(commit).items()},
    }


def branch(store: Any, name: str, start: str | None = None) -> dict[str, Any]:
    store.new_branch(name, start=start)
    return {"branch": name}


def switch(store: Any, target: str) -> dict[str, Any]:
    store.checkout(target)
    return {"head": store.head()}


def merge(
    store: Any,
    theirs: str,
    *,
    resolutions: dict[str, str] | None = None,
    strategy: str | None = None,
    author: str | None = None,
) -> dict[str, Any]:
    result: dict[str, Any] = store.merge(
        theirs, resolutions=resolutions, strategy=strategy, author=author
    ).to_dict()
    return result


# LangGraph's BaseStore over a store, as mnem-langgraph maps it: namespace + key is the node id
# (``base/mnem_items``); search and list_namespaces read working memory.


def search(
    store: Any,
    prefix: list[str],
    *,
    query: str | None = None,
    filter: dict[str, Any] | None = None,
    offset: int = 0,
    limit: int = 10,
) -> list[list[Any]]:
    """``[namespace, key, value, event_time]`` of each match, as mnem-langgraph finds them."""
    wanted = tuple(prefix)
    text = (query or "").lower()
    found: list[list[Any]] = []
    for node_id, node in store.working_memory().items():
        namespace, key = item_of(node_id)
        if namespace[: len(wanted)] != wanted:
            continue
        value = node.content if isinstance(node.content, dict) else {"value": node.content}
        if filter and any(value.get(k) != v for k, v in filter.items()):
            continue
        if text and text not in json.dumps(value, default=str).lower():
            continue
        found.append([list(namespace), key, value, node.event_time])
    return found[offset : offset + limit]


def list_namespaces(
    store: Any,
    *,
    conditions: list[dict[str, Any]] | None = None,
    max_depth: int | None = None,
    offset: int = 0,
    limit: int = 100,
) -> list[list[str]]:
    """The namespaces of working memory, as mnem-langgraph lists them (conditions are
    ``{"match_type": "prefix"|"suffix", "path": [...]}``)."""
    namespaces = (item_of(node_id)[0] for node_id in store.working_memory())
    return listed_namespaces(namespaces, conditions, max_depth, offset, limit)


def listed_namespaces(
    namespaces: Iterable[tuple[str, ...]],
    conditions: list[dict[str, Any]] | None,
    max_depth: int | None,
    offset: int,
    limit: int,
) -> list[list[str]]:
    """``list_namespaces``'s answer over these namespaces (one store's nodes', or a sharded
    root's stores')."""
    seen: set[tuple[str, ...]] = set()
    for namespace in namespaces:
        if max_depth is not None:
            namespace = namespace[:max_depth]
        if namespace and _matches(namespace, conditions or []):
            seen.add(namespace)
    return [list(namespace) for namespace in sorted(seen)[offset : offset + limit]]


def _matches(namespace: tuple[str, ...], conditions: list[dict[str, Any]]) -> bool:
    for condition in conditions:
        path = tuple(p for p in condition["path"] if p != "*")
        if condition["match_type"] == "prefix" and namespace[: len(path)] != path:
            return False
        if condition["match_type"] == "suffix" and namespace[-len(path) :] != path:
            return False
    return True


def _invalid_ref(message: str) -> MnemError:
    error: MnemError = InvalidRefError(message)
    return error


def _portable() -> ModuleType:
    # The PMM tools bring the codec, the import and a sync provider: loaded when an agent first
    # asks for them, not in every agent's start (importing memsync.langgraph, +90 ms).
    from memsync.orchestration.serve import portable

    return portable


def memory_export(store: Any, **args: Any) -> Any:
    """OpenMem's ``memory_export``: the store as a PMM document (``portable``)."""
    return _portable().memory_export(store, **args)


def memory_import(store: Any, **args: Any) -> Any:
    """OpenMem's ``memory_import``: a PMM document into the store (``portable``)."""
    return _portable().memory_import(store, **args)


OPS: dict[str, Op] = {
    "remember": remember,
    "remember_many": remember_many,
    "forget": forget,
    "recall": recall,
    "recall_at": recall_at,
    "history": history,
    "why": why,
    "when_did": when_did,
    "whats_new": whats_new,
    "commit_view": commit_view,
    "branch": branch,
    "switch": switch,
    "merge": merge,
    "search": search,
    "list_namespaces": list_namespaces,
    "memory_export": memory_export,  # memsync's PMM tools beside mnem's own
    "memory_import": memory_import,
}
# Each of these commits (or moves HEAD): the daemon acknowledges it only once mnem has, and
# marks the store's scope changed.
WRITES = frozenset(
    {"remember", "remember_many", "forget", "branch", "switch", "merge", "memory_import"}
)


def run(store: Any, op: str, args: dict[str, Any]) -> Any:
    """Operation OP on STORE with ARGS (JSON); its answer (JSON). SDK errors pass through."""
    function = OPS.get(op)
    if function is None:
        raise Unknown(f"unknown operation {op!r}")
    return function(store, **args)


def staged_by(op: str, args: dict[str, Any]) -> list[str]:
    """The node ids a write operation stages before its commit (to unstage after a crash)."""
    if op in ("remember", "forget"):
        return [str(args["id"])]
    if op == "remember_many":
        return [str(item.get("id")) for item in args.get("items", []) if isinstance(item, dict)]
    return []
