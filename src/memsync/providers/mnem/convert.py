"""How a memsync memory is a mnem node and back: the single place this mapping is defined.

- **Id.** The node id is the logical memory's origin key (ADR-0024): ``mem0:{memory_id}``,
  ``pmm:{id}``...; a memory that came from mnem (origin ``mnem:X``) goes back to node ``X``.
  A node memsync did not write has origin ``mnem:{id}``, unless its id already carries an
  import family prefix (``mem0:``, ``pmm:``, ``hindsight:``, ``cognee:``), as a future SDK
  ``import_mem0`` would write it.
- **Content.** Where a memory sits and what its content holds is the provider's layout
  (``layouts``): by default the node id above and the text as a JSON string with
  ``content_kind = "note"``; a LangGraph layout places it at namespace + key as a dict value. A
  memory-shaped dict (``{"content": text}``, ``{"kind": ..., "content": {"content": text}}``)
  is read as its text, its other top-level keys as metadata, its ``_meta`` as provenance, and
  ``provenance["mnem_value"]`` says how to build it again. Any other non-string content (native
  agents may store any JSON value) is carried as its canonical JSON text (sorted keys, no
  spaces) and marked ``provenance["mnem_content"] = "json"``, so writing it back restores the
  JSON value; a ``claim`` node is marked ``provenance["mnem_content_kind"] = "claim"``. Null,
  empty text and empty containers are skipped as empty content.
- **Provenance.** mnem has five provenance fields and no metadata. ``source`` (Mem0's
  ``actor_id``, else ``role``), ``agent_step``, ``observation`` and ``tool_call`` are written
  to mnem's own fields. Everything else lives in ``provenance.note`` as one JSON object,
  ``{"memsync": 1, "origin", "metadata", "provenance", "created_at"}``: the user's
  metadata (in a dict value only the keys its top level cannot hold: ``content``, ``kind``,
  ``_meta``), the remaining provenance (a native note among it), and ``created_at`` verbatim.
  In a dict value the note also sits in ``_meta.note``, with mnem's native fields as
  ``mnem-langgraph`` writes them (``source``, ``step``, ``observation``, ``tool_call``), so a
  LangGraph agent's read-modify-write keeps it.
  ``created_at`` is also ``event_time`` (Unix ms); on reading, the verbatim string wins while
  it still names the same millisecond, so offsets and microseconds survive the round trip.
  A memory's ``expiration_date`` (mnem has none) lives in the note too, and so do Dream's
  ``lifecycle_state``, ``replaced_by`` and ``synthesized`` (in the note's provenance; a node
  Dream retired is forgotten, see ``expiry``).
- **Version token.** sha256 over the node's canonical JSON: it changes exactly when mnem's
  own node object id does (content, kind, provenance or event_time).
- **updated_at** is no field of a node: a version is as new as the commit that made it, which
  the listing does not read (a blame per node); the mirror asks ``dates`` for the versions it
  has not staged. A record made here leaves it empty.

Agent rewrites: an agent that edits a memory through mnem's own API (``mnem.agents.remember``,
``Store.add``) replaces the whole node, memsync's note with it. Such a node is read with
``Record.detached`` set and a ``bare-`` version token. When the version the mirror staged for
that node did carry the note, the text and mnem's native provenance fields are the agent's
change, and the user's metadata, ``created_at``, ``expiration_date`` and origin are carried
over from the staged version (nothing is lost, the edit flows on as a text change); the mirror
then queues a write back into mnem that restores the note (unless mnem is ``pull`` only or the
run is a dry run: then the next listing that returns the node tries again). A node memsync
never saw with a note (a native memory) is read as it is; a note that lists no metadata is a
real removal.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any, Literal

from memsync.base.dream import Dream
from memsync.base.errors import ProviderError
from memsync.base.mnem_items import META_FIELDS
from memsync.base.records import (
    Outgoing,
    Record,
    Skipped,
    canonical_json,
    is_blank,
    is_expired,
    parse_instant,
)
from memsync.providers.mnem.layouts import (
    MEM0,
    VALUE_KEY,
    Layout,
    build_value,
    meta_of,
    read_value,
    reserved_keys,
)

NOTE_MARK = "memsync"
NOTE_VERSION = 1
IMPORT_FAMILIES = frozenset({"mem0", "pmm", "hindsight", "cognee"})
NATIVE_FIELDS = ("agent_step", "observation", "tool_call", "source")
CONTENT_JSON_KEY = "mnem_content"  # provenance marker: the node's content was a JSON value
CONTENT_KIND_KEY = "mnem_content_kind"  # provenance marker: the node is a "claim"
EMPTY_REASON = "empty content"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# --- ids ---------------------------------------------------------------------------------


def node_id_for(origin: str) -> str:
    """The node id a logical memory gets by default: its origin key, or X for a memory from
    mnem (mnem:X); a provider's layout may place it elsewhere (``layouts``)."""
    return MEM0.node_id(origin)


def origin_for(node_id: str, written_origin: str | None = None) -> str:
    """The logical memory a node belongs to (see "Id" in the module docstring)."""
    if written_origin:
        return written_origin
    family, sep, _ = node_id.partition(":")
    if sep and family in IMPORT_FAMILIES:
        return node_id
    return f"mnem:{node_id}"


def family_of(origin: str) -> str:
    family, sep, _ = origin.partition(":")
    return family if sep else "mnem"


# --- times -------------------------------------------------------------------------------


def to_ms(created_at: str | None) -> int | None:
    """An ISO instant as Unix milliseconds (floored), or None when absent or unparseable."""
    instant = parse_instant(created_at)
    if instant is None:
        return None
    return (instant - _EPOCH) // timedelta(milliseconds=1)


def iso_from_ms(ms: int) -> str:
    instant = _EPOCH + timedelta(milliseconds=ms)
    return instant.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _created_at(verbatim: Any, event_time: int | None) -> str | None:
    if isinstance(verbatim, str) and (event_time is None or to_ms(verbatim) == event_time):
        return verbatim
    return iso_from_ms(event_time) if event_time is not None else None


# --- nodes <-> records ---------------------------------------------------------------------


@dataclass(frozen=True)
class NodeSpec:
    """The node memsync writes for one memory: the arguments of ``Store.add``."""

    id: str
    content: Any
    content_kind: Literal["note", "claim"]
    provenance: dict[str, str | None]  # the five mnem Provenance fields
    event_time: int | None
    origin: str
    expiration_date: str | None = None
    retired: bool = False  # Dream superseded or merged it: written, then forgotten

    def identity(self) -> str:
        return _node_identity(
            self.id, self.content, self.content_kind, self.provenance, self.event_time
        )

    def as_node(self, sdk: ModuleType) -> Any:
        return sdk.MemoryNode(
            id=self.id,
            content=self.content,
            content_kind=self.content_kind,
            provenance=sdk.Provenance(**self.provenance),
            event_time=self.event_time,
        )


def _provenance_fields(provenance: Any) -> dict[str, str | None]:
    return {
        name: getattr(provenance, name)
        for name in ("agent_step", "observation", "tool_call", "source", "note")
    }


def _node_identity(
    node_id: str,
    content: Any,
    kind: str,
    provenance: dict[str, str | None],
    event_time: int | None,
) -> str:
    payload = {
        "id": node_id,
        "content": content,
        "content_kind": kind,
        "provenance": provenance,
        "event_time": event_time,
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


BARE_VERSION = "bare-"  # version prefix of a node without memsync's note


def node_version(node: Any) -> str:
    """The version token of a node: sha256 of its canonical JSON (changes with its object id),
    prefixed ``bare-`` when the node holds no memsync note, so the mirror can tell later
    whether the version it staged carried memsync's fields (see "Agent rewrites")."""
    return _version(node, noted=memsync_note(node) is not None)


def _version(node: Any, *, noted: bool) -> str:
    identity = _node_identity(
        node.id,
        node.content,
        node.content_kind,
        _provenance_fields(node.provenance),
        node.event_time,
    )
    return identity if noted else BARE_VERSION + identity


def node_spec(item: Outgoing, node_id: str | None = None, layout: Layout = MEM0) -> NodeSpec:
    """The node for an outgoing memory (its id from the layout unless given)."""
    provenance = {k: v for k, v in item.provenance.items() if v is not None}
    as_json = provenance.pop(CONTENT_JSON_KEY, None) == "json"
    envelope = provenance.pop(VALUE_KEY, None)
    if not isinstance(envelope, dict):
        envelope = None
    kind = provenance.pop(CONTENT_KIND_KEY, "note")
    if kind not in ("note", "claim"):
        provenance[CONTENT_KIND_KEY] = kind
        kind = "note"
    native: dict[str, str | None] = {name: None for name in NATIVE_FIELDS}
    for name in NATIVE_FIELDS:
        if isinstance(provenance.get(name), str):
            native[name] = provenance.pop(name)
    json_value: Any = None
    if as_json:  # back to the JSON value it was; text that is no longer JSON is a memory's text
        json_value = _json_value(item.content, default=None)
    shape = str((envelope or {}).get("shape") or layout.default_shape)
    if json_value is not None and not isinstance(json_value, str):
        shape = "json"
    elif shape not in ("text", "content", "kind"):
        shape = layout.default_shape
    reserved = reserved_keys(shape)
    dict_value = shape in ("content", "kind")
    top = {k: v for k, v in item.metadata.items() if dict_value and k not in reserved}
    note: dict[str, Any] = {
        NOTE_MARK: NOTE_VERSION,
        "origin": item.origin,
        "metadata": {k: v for k, v in item.metadata.items() if k not in top},
        "provenance": provenance,
    }
    if item.created_at is not None:
        note["created_at"] = item.created_at
    if item.expiration_date:
        note["expiration_date"] = item.expiration_date
    note_text = canonical_json(note)
    content: Any
    if shape == "json":
        content = json_value
    else:
        meta = {key: native[name] for key, name in META_FIELDS.items() if native.get(name)}
        content = build_value(shape, item.content, top, envelope, {**meta, "note": note_text})
    try:
        target = node_id if node_id is not None else layout.node_id(item.origin)
    except ValueError as exc:
        raise ProviderError(f"origin {item.origin!r}: {exc}") from None
    if not target:
        raise ProviderError(f"origin {item.origin!r} names no mnem node id")
    return NodeSpec(
        id=target,
        content=content,
        content_kind="claim" if kind == "claim" else "note",
        provenance={**native, "note": note_text},
        event_time=to_ms(item.created_at),
        origin=item.origin,
        expiration_date=item.expiration_date or None,
        retired=Dream.of(item.provenance).retired,
    )


def _json_value(text: str, default: Any) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(name)

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError:
        return default


def memsync_note(node: Any) -> dict[str, Any] | None:
    """The JSON object memsync keeps in provenance.note (or, in a dict value, in
    ``_meta.note``), or None for a node it did not write."""
    return _note_in(node.provenance.note) or _note_in(meta_of(node.content).get("note"))


def _note_in(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, str) or not raw.startswith("{"):
        return None
    try:
        note = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(note, dict) or note.get(NOTE_MARK) != NOTE_VERSION:
        return None
    return note


def content_text(content: Any) -> tuple[str, bool]:
    """A node's content as the memory's text (a memory-shaped dict's text, see ``layouts``),
    and whether it was carried as a JSON value rather than text."""
    value = read_value(content)
    return value.text, value.as_json


def record_from_node(node: Any, scope_key: str, layout: Layout = MEM0) -> Record | Skipped:
    """A node as a memsync Record, or Skipped (by node id) when it holds no content."""
    value = read_value(node.content, layout.default_shape)
    text = value.text
    if is_blank(text):
        return Skipped(node.id, EMPTY_REASON)
    note = memsync_note(node)
    provenance: dict[str, Any] = {}
    metadata: dict[str, Any] = {}
    if note is not None:
        provenance.update(note.get("provenance") or {})
        metadata = dict(note.get("metadata") or {})
    elif node.provenance.note is not None:
        provenance["note"] = node.provenance.note
    elif isinstance(value.meta.get("note"), str):
        provenance["note"] = value.meta["note"]
    metadata.update(value.metadata)
    for key, name in META_FIELDS.items():
        if name == "note":
            continue
        found = getattr(node.provenance, name)
        if found is None and isinstance(value.meta.get(key), str):
            found = value.meta[key]
        if found is not None:
            provenance[name] = found
    if value.as_json:
        provenance[CONTENT_JSON_KEY] = "json"
    if value.envelope is not None:
        provenance[VALUE_KEY] = value.envelope
    if node.content_kind != "note":
        provenance[CONTENT_KIND_KEY] = node.content_kind
    return Record(
        id=node.id,
        content=text,
        metadata=metadata,
        scope_key=scope_key,
        created_at=_created_at(note.get("created_at") if note else None, node.event_time),
        updated_at=None,
        version=_version(node, noted=note is not None),  # the note parsed once, not twice
        provenance=provenance,
        origin=origin_for(node.id, note.get("origin") if note else None),
        expiration_date=_str_or_none(note.get("expiration_date")) if note else None,
        detached=note is None,
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def expired_in_note(node: Any) -> bool:
    note = memsync_note(node)
    return note is not None and is_expired(_str_or_none(note.get("expiration_date")))


def retired_in_note(node: Any) -> bool:
    """Whether memsync wrote this node for a memory Dream superseded or merged."""
    note = memsync_note(node)
    return note is not None and Dream.of(note.get("provenance")).retired
