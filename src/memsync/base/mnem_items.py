"""How a LangGraph item is a mnem node: the one place its vocabulary is spelled.

mnem-langgraph names a node ``":".join([*namespace, key])`` (``item_node_id``; back with
``item_of``) and lifts the value's ``_meta`` into mnem's Provenance (``META_FIELDS``,
``provenance_of``). A team's store holds each scope in the namespace its template names
(``["memories", "{user_id}"]``). The sync's layouts (``providers/mnem/layouts``), the served
operations (``orchestration/serve/ops``) and ``memsync.langgraph`` all speak it from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memsync.base.scopes import SCOPE_KEYS, HostileScope, Scope

NAMESPACE_SEPARATOR = ":"  # mnem-langgraph joins namespace and key with it into a node id
META = "_meta"  # a value's provenance, as mnem-langgraph reads and writes it
# _meta's keys that mnem-langgraph lifts into mnem's Provenance, and the field each one fills.
META_FIELDS = {
    "source": "source",
    "step": "agent_step",
    "observation": "observation",
    "tool_call": "tool_call",
    "note": "note",
}


# --- items as nodes ------------------------------------------------------------------------


def item_node_id(namespace: Sequence[str], key: str) -> str:
    """The node a LangGraph item is: ``":".join([*namespace, key])``, as mnem-langgraph joins it."""
    return NAMESPACE_SEPARATOR.join([*namespace, key])


def item_of(node_id: str) -> tuple[tuple[str, ...], str]:
    """A node's LangGraph namespace and key, as mnem-langgraph splits its id (the last
    segment is the key)."""
    namespace, _, key = node_id.rpartition(NAMESPACE_SEPARATOR)
    return (tuple(namespace.split(NAMESPACE_SEPARATOR)) if namespace else ()), key


def namespace_id(namespace: Sequence[str]) -> str:
    """A namespace spelled as node ids spell it before their key (``"memories:alice"``)."""
    return NAMESPACE_SEPARATOR.join(namespace)


def namespace_id_of(node_id: str) -> str:
    """The namespace part of a node id, spelled as ``namespace_id`` spells it (no split: a
    run groups every node of a store by it)."""
    return node_id.rpartition(NAMESPACE_SEPARATOR)[0]


def provenance_of(value: Mapping[str, Any]) -> dict[str, Any]:
    """What a value's ``_meta`` lifts into mnem's Provenance, by ``_meta`` key (the keyword
    arguments of ``mnem.agents.remember``), as mnem-langgraph's ``put`` lifts it; ``{}`` when
    ``_meta`` is not a dict."""
    meta = value.get(META, {})
    if not isinstance(meta, dict):
        return {}
    return {key: meta.get(key) for key in META_FIELDS}


# --- namespace templates: a scope per namespace --------------------------------------------


def namespace_keys(template: Sequence[str]) -> tuple[str, ...]:
    """The scope keys a LangGraph namespace template names, each a whole segment
    (``["memories", "{user_id}"]``); ValueError for a segment that cannot be a namespace's."""
    keys: list[str] = []
    if not template:
        raise ValueError(
            'namespace is empty; name at least one segment, e.g. ["memories", "{user_id}"]'
        )
    for segment in template:
        if segment.startswith("{") and segment.endswith("}"):
            key = segment[1:-1]
            if key not in SCOPE_KEYS:
                raise ValueError(
                    f"namespace segment {segment!r} is not a scope key; a template names "
                    '"{user_id}", "{agent_id}", "{app_id}" or "{run_id}" as a whole segment'
                )
            if key not in keys:
                keys.append(key)
            continue
        problem = _segment_problem(segment)
        if problem or "{" in segment or "}" in segment:
            raise ValueError(
                f"namespace segment {segment!r} {problem or 'mixes text and a placeholder'}; "
                'write a placeholder as a whole segment ("{user_id}") and literal segments '
                f"without {NAMESPACE_SEPARATOR!r}"
            )
    return tuple(k for k in SCOPE_KEYS if k in keys)


def fill_namespace(template: Sequence[str], scope: Scope, *, provider: str) -> tuple[str, ...]:
    """The namespace of one scope; HostileScope when a value cannot be a namespace segment."""
    values = scope.as_dict()
    filled: list[str] = []
    for segment in template:
        if segment.startswith("{") and segment.endswith("}"):
            key = segment[1:-1]
            value = values.get(key)
            if value is None:
                raise HostileScope(
                    f"scope {scope.label}: no {key} to fill the namespace of "
                    f"providers.{provider}.layout"
                )
            problem = _segment_problem(value)
            if problem:
                raise HostileScope(
                    f"scope {scope.label}: refused: {key} {value!r} {problem}, so it cannot "
                    f"name a LangGraph namespace in providers.{provider}.layout (mnem-langgraph "
                    f"joins namespace segments with {NAMESPACE_SEPARATOR!r}); nothing was written "
                    "for this scope"
                )
            filled.append(value)
        else:
            filled.append(segment)
    return tuple(filled)


def place_in_namespace(template: Sequence[str], node_id: str) -> dict[str, str] | None:
    """The scope values a node id's namespace names under TEMPLATE (``{}`` for a template
    without placeholders), or None when the node lies outside every namespace it names."""
    namespace, key = item_of(node_id)
    return place_of_namespace(template, namespace) if key else None


def place_of_namespace(template: Sequence[str], namespace: Sequence[str]) -> dict[str, str] | None:
    """The scope values NAMESPACE names under TEMPLATE (``{}`` for a template without
    placeholders), or None when it is none of the namespaces the template names."""
    if len(namespace) != len(template):
        return None
    values: dict[str, str] = {}
    for segment, part in zip(template, namespace, strict=True):
        if segment.startswith("{") and segment.endswith("}"):
            key = segment[1:-1]
            if not part or values.get(key, part) != part:
                return None
            values[key] = part
        elif segment != part:
            return None
    return values


def _segment_problem(value: str) -> str | None:
    if not value:
        return "is empty"
    if NAMESPACE_SEPARATOR in value:
        return f"contains {NAMESPACE_SEPARATOR!r}"
    if any(ord(c) < 32 for c in value):
        return "contains a control character"
    return None
