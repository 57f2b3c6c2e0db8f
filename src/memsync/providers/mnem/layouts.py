"""How a memory is a mnem node: where it sits (its node id) and what its content holds.

A **layout** is the config's ``layout`` of a mnem provider:

- ``mem0`` (the default, ADR-0024's): node ``mem0:{id}`` (the memory's origin key), its text as
  the content, a JSON string. What ``import_mem0`` writes, and what ``mnem-mcp`` agents read as
  plain text. Every node of the store is the provider's.
- ``langgraph``: each memory a LangGraph item, as ``mnem-langgraph`` stores one: node
  ``":".join([*namespace, key])``, the namespace filled from a template over the scope keys
  (``["memories", "{user_id}"]``: LangMem's default, one store holding every user), the key the
  memory's Mem0 id (a UUID, so that LangMem's tools can name it). The content is a dict, in the
  shape the config names (``value``): ``{"content": text}`` (LangMem's ``manage_memory`` tool) or
  ``{"kind": "Memory", "content": {"content": text}}`` (LangMem's store manager). Only the nodes
  in the scope's namespace are the provider's; a node outside every namespace the template names
  is not memsync's (never copied, never deleted), and is counted (``outside``).

Whatever the layout, a **memory-shaped value** (one of those two dicts, written by any client)
is read as its text (``read_value``): the value's other top-level keys are the memory's metadata
(where LangGraph's ``search(filter=...)`` reaches them), and ``_meta`` is provenance, as
``mnem-langgraph`` lifts it into mnem's Provenance. How to build the same value again (its shape,
``kind``, the rest of ``_meta``) travels in the record's provenance under ``VALUE_KEY``, so an edit
made elsewhere comes back in the shape it left. A value that is not memory-shaped is carried as
its canonical JSON text (``convert``'s JSON carriage), and a plain text that happens to parse as
JSON stays text.

The layout is the one place this is decided: the mirror's provider, its writes (``batch``) and a
store served to agents all place and shape memories through it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from memsync.base.mnem_items import (
    META,
    META_FIELDS,
    NAMESPACE_SEPARATOR,
    fill_namespace,
    item_node_id,
    item_of,
    namespace_id,
    namespace_keys,
    place_in_namespace,
)
from memsync.base.records import canonical_json
from memsync.base.scopes import Scope

VALUE_KEY = "mnem_value"  # provenance: how the node's dict value holds the text (see read_value)
_KEY_NAMESPACE = uuid.UUID("5b7f1e2c-3c1a-4f7e-9a59-6d656d73796e")  # uuid5 keys of other origins

Shape = Literal["text", "content", "kind"]


# --- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """What a node's content says of a memory.

    ``text`` the memory's text; ``metadata`` the keys beside it in a dict value; ``envelope``
    how to build the same value again (None for plain text or JSON carriage); ``meta`` the
    value's ``_meta``; ``as_json`` whether the text is the canonical JSON of a value that is not
    memory-shaped.
    """

    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    envelope: dict[str, Any] | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    as_json: bool = False


def read_value(content: Any, default: Shape = "text") -> Value:
    """A node's content as a memory. ``default`` is the shape the layout gives new memories: a
    plain text node in a layout of dict values says so in its envelope, to stay text."""
    if isinstance(content, str):
        return Value(content, envelope={"shape": "text"} if default != "text" else None)
    if content is None or content == {} or content == []:
        return Value("")
    if isinstance(content, dict):
        shaped = _memory_shaped(content)
        if shaped is not None:
            return shaped
    return Value(canonical_json(content), as_json=True)


def _memory_shaped(value: dict[str, Any]) -> Value | None:
    meta = value.get(META, {})
    if not isinstance(meta, dict):
        return None
    inner = value.get("content")
    kind = value.get("kind")
    if isinstance(inner, str):
        shape: Shape = "content"
        text = inner
        reserved = {"content", META}
    elif isinstance(kind, str) and isinstance(inner, dict) and _plain_memory(inner):
        shape = "kind"
        text = inner["content"]
        reserved = {"kind", "content", META}
    else:
        return None
    envelope: dict[str, Any] = {"shape": shape}
    if shape == "kind":
        envelope["kind"] = kind
    extra = {k: v for k, v in meta.items() if k not in META_FIELDS}
    if extra:
        envelope["meta"] = extra
    metadata = {k: v for k, v in value.items() if k not in reserved}
    return Value(text, metadata, envelope, dict(meta))


def _plain_memory(inner: dict[str, Any]) -> bool:
    return set(inner) == {"content"} and isinstance(inner["content"], str)


def reserved_keys(shape: str) -> frozenset[str]:
    """Metadata keys a dict value of this shape cannot hold at its top level."""
    if shape == "kind":
        return frozenset({"kind", "content", META})
    if shape == "content":
        return frozenset({"content", META})
    return frozenset()


def build_value(
    shape: str,
    text: str,
    metadata: Mapping[str, Any],
    envelope: Mapping[str, Any] | None,
    meta: Mapping[str, Any],
) -> Any:
    """The content of a node of that shape: the text, the metadata at the top level (the
    caller keeps reserved keys elsewhere) and ``meta`` as ``_meta``."""
    if shape == "text":
        return text
    value: dict[str, Any] = {}
    if shape == "kind":
        kind = (envelope or {}).get("kind")
        value["kind"] = kind if isinstance(kind, str) else "Memory"
        value["content"] = {"content": text}
    else:
        value["content"] = text
    value.update(metadata)
    extra = (envelope or {}).get("meta")
    value[META] = {**(extra if isinstance(extra, dict) else {}), **meta}
    return value


def meta_of(content: Any) -> dict[str, Any]:
    """The ``_meta`` of a dict value (``{}`` when none)."""
    if isinstance(content, dict):
        meta = content.get(META)
        if isinstance(meta, dict):
            return meta
    return {}


# --- layouts -----------------------------------------------------------------------------


class Layout:
    """Where memories sit in a store and the shape new ones get (``mem0``: ADR-0024's)."""

    name = "mem0"
    default_shape: Shape = "text"

    def node_id(self, origin: str) -> str:
        """The node a memory with this origin gets: its origin key, or X for ``mnem:X``."""
        return origin[len("mnem:") :] if origin.startswith("mnem:") else origin

    def holds(self, node_id: str) -> bool:
        """Whether a node is this provider's to sync."""
        return True

    def outside(self, node_id: str) -> bool:
        """Whether a node lies outside every place the layout names (counted, never synced)."""
        return False

    def bound(self, scope: Scope, *, provider: str) -> Layout:
        return self

    def namespaces(self, node_ids: list[str]) -> int | None:
        """How many scopes' places these nodes fill, when the layout holds several (None)."""
        return None

    def identity(self) -> str:
        """What staging's provider identity adds: moving memories elsewhere resets the mirror."""
        return ""

    def describe(self) -> str:
        return "mem0 (nodes mem0:{id}, the text as content)"


MEM0 = Layout()


@dataclass(frozen=True)
class LangGraphLayout(Layout):
    """Each memory a LangGraph item: namespace + key, a dict value (see the module docstring).

    ``template`` is the configured namespace; ``namespace`` the one of the scope it is bound to
    (the template itself when it names no scope key), None while unbound.
    """

    template: tuple[str, ...]
    shape: Literal["content", "kind"] = "content"
    namespace: tuple[str, ...] | None = None
    name = "langgraph"

    @classmethod
    def of(cls, template: Sequence[str], shape: Literal["content", "kind"]) -> LangGraphLayout:
        fixed = tuple(template) if not namespace_keys(template) else None
        return cls(tuple(template), shape, fixed)

    @property
    def default_shape(self) -> Shape:  # type: ignore[override]
        return self.shape

    def bound(self, scope: Scope, *, provider: str) -> LangGraphLayout:
        return LangGraphLayout(
            self.template, self.shape, fill_namespace(self.template, scope, provider=provider)
        )

    def place(self, node_id: str) -> dict[str, str] | None:
        """The scope values of the namespace a node is in; None outside every one."""
        return place_in_namespace(self.template, node_id)

    def holds(self, node_id: str) -> bool:
        if self.namespace is None:
            return False
        namespace, key = item_of(node_id)
        return bool(key) and namespace == self.namespace

    def outside(self, node_id: str) -> bool:
        return self.place(node_id) is None

    def namespaces(self, node_ids: list[str]) -> int | None:
        if self.namespace is not None:
            return None
        placed = (self.place(node_id) for node_id in node_ids)
        return len({tuple(sorted(p.items())) for p in placed if p is not None})

    def node_id(self, origin: str) -> str:
        """namespace + key: the Mem0 id for a Mem0 memory, the node itself for one of this
        namespace, else a UUID derived from the origin (a key never holds ':')."""
        if self.namespace is None:
            raise ValueError("an unbound LangGraph layout places no memory")
        family, _, rest = origin.partition(":")
        if family == "mnem" and self.holds(rest):
            return rest
        key = rest if family == "mem0" and rest and NAMESPACE_SEPARATOR not in rest else ""
        return item_node_id(self.namespace, key or str(uuid.uuid5(_KEY_NAMESPACE, origin)))

    def identity(self) -> str:
        where = self.namespace if self.namespace is not None else self.template
        return "#langgraph:" + namespace_id(where) + f"/{self.shape}"

    def describe(self) -> str:
        value = (
            '{"content": text}'
            if self.shape == "content"
            else '{"kind": "Memory", "content": {"content": text}}'
        )
        return f"langgraph (namespace {list(self.template)}, value {value})"


def layout_from_config(layout: Any) -> Layout:
    """The Layout a ``MnemConfig.layout`` names."""
    if layout is None or layout == "mem0":
        return MEM0
    return LangGraphLayout.of(layout.namespace, layout.value)
