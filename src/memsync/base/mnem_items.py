"""How a LangGraph item is a mnem node: the namespace separator and namespace templates.

mnem-langgraph names a node ``":".join([*namespace, key])``; a team's store holds each scope in
the namespace its template names (``["memories", "{user_id}"]``).
"""

from __future__ import annotations

from collections.abc import Sequence

from memsync.base.scopes import SCOPE_KEYS, HostileScope, Scope

NAMESPACE_SEPARATOR = ":"  # mnem-langgraph joins namespace and key with it into a node id


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
                    "joins namespace segments with ':'); nothing was written for this scope"
                )
            filled.append(value)
        else:
            filled.append(segment)
    return tuple(filled)


def place_in_namespace(template: Sequence[str], node_id: str) -> dict[str, str] | None:
    """The scope values a node id's namespace names under TEMPLATE (``{}`` for a template
    without placeholders), or None when the node lies outside every namespace it names."""
    parts = node_id.split(NAMESPACE_SEPARATOR)
    if len(parts) != len(template) + 1 or not parts[-1]:
        return None
    values: dict[str, str] = {}
    for segment, part in zip(template, parts, strict=False):
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
