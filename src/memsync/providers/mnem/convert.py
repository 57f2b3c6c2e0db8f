"""How a memsync memory is a mnem node and back: the single place this mapping is defined.

- **Id.** The node id is the logical memory's origin key (ADR-0024): ``mem0:{memory_id}``,
  ``pmm:{id}``...; a memory that came from mnem (origin ``mnem:X``) goes back to node ``X``.
  A node memsync did not write has origin ``mnem:{id}``, unless its id already carries an
  import family prefix (``mem0:``, ``pmm:``, ``hindsight:``, ``cognee:``), as a future SDK
  ``import_mem0`` would write it.
- **Content.** Text is stored as a JSON string with ``content_kind = "note"``. A node whose
  content is not a string (native agents may store any JSON value) is carried as its
  canonical JSON text (sorted keys, no spaces) and marked ``provenance["mnem_content"] =
  "json"``, so writing it back restores the JSON value; a ``claim`` node is marked
  ``provenance["mnem_content_kind"] = "claim"``. Null, empty text and empty containers are
  skipped as empty content.
- **Provenance.** mnem has five provenance fields and no metadata. ``source`` (Mem0's
  ``actor_id``, else ``role``), ``agent_step``, ``observation`` and ``tool_call`` are written
  to mnem's own fields. Everything else lives in ``provenance.note`` as one JSON object,
  ``{"memsync": 1, "origin", "metadata", "provenance", "created_at"}``: the user's
  metadata, the remaining provenance (a native note among it), and ``created_at`` verbatim.
  ``created_at`` is also ``event_time`` (Unix ms); on reading, the verbatim string wins while
  it still names the same millisecond, so offsets and microseconds survive the round trip.
  A memory's ``expiration_date`` (mnem has none) lives in the note too, and so do Dream's
  ``lifecycle_state``, ``replaced_by`` and ``synthesized`` (in the note's provenance; a node
  Dream retired is forgotten, see ``expiry``).
- **Version token.** sha256 over the node's canonical JSON: it changes exactly when mnem's
  own node object id does (content, kind, provenance or event_time).
- **updated_at** is not known per node (it would take a blame per node) and is left empty.

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

from memsync.dream import Dream
from memsync.errors import ProviderError
from memsync.records import (
    Outgoing,
    Record,
    Skipped,
    canonical_json,
    is_blank,
    is_expired,
    parse_instant,
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
    """The node id a logical memory gets: its origin key, or X for a memory from mnem (mnem:X)."""
    return origin[len("mnem:") :] if origin.startswith("mnem:") else origin


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
    identity = _node_identity(
        node.id,
        node.content,
        node.content_kind,
        _provenance_fields(node.provenance),
        node.event_time,
    )
    return identity if memsync_note(node) is not None else BARE_VERSION + identity


def node_spec(item: Outgoing, node_id: str | None = None) -> NodeSpec:
    """The node for an outgoing memory (its id from the origin unless given)."""
    provenance = {k: v for k, v in item.provenance.items() if v is not None}
    as_json = provenance.pop(CONTENT_JSON_KEY, None) == "json"
    kind = provenance.pop(CONTENT_KIND_KEY, "note")
    if kind not in ("note", "claim"):
        provenance[CONTENT_KIND_KEY] = kind
        kind = "note"
    native: dict[str, str | None] = {name: None for name in NATIVE_FIELDS}
    for name in NATIVE_FIELDS:
        if isinstance(provenance.get(name), str):
            native[name] = provenance.pop(name)
    note: dict[str, Any] = {
        NOTE_MARK: NOTE_VERSION,
        "origin": item.origin,
        "metadata": dict(item.metadata),
        "provenance": provenance,
    }
    if item.created_at is not None:
        note["created_at"] = item.created_at
    if item.expiration_date:
        note["expiration_date"] = item.expiration_date
    content: Any = item.content
    if as_json:  # back to the JSON value it was; text that is no longer JSON stays text
        value = _json_value(item.content, default=item.content)
        content = item.content if isinstance(value, str) else value
    target = node_id if node_id is not None else node_id_for(item.origin)
    if not target:
        raise ProviderError(f"origin {item.origin!r} names no mnem node id")
    return NodeSpec(
        id=target,
        content=content,
        content_kind="claim" if kind == "claim" else "note",
        provenance={**native, "note": canonical_json(note)},
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
    """The JSON object memsync keeps in provenance.note, or None for a node it did not write."""
    raw = node.provenance.note
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
    """A node's content as text, and whether it was a JSON value rather than a string."""
    if isinstance(content, str):
        return content, False
    if content is None or content == {} or content == []:
        return "", False
    return canonical_json(content), True


def record_from_node(node: Any, scope_key: str) -> Record | Skipped:
    """A node as a memsync Record, or Skipped (by node id) when it holds no content."""
    text, as_json = content_text(node.content)
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
    for name in NATIVE_FIELDS:
        value = getattr(node.provenance, name)
        if value is not None:
            provenance[name] = value
    if as_json:
        provenance[CONTENT_JSON_KEY] = "json"
    if node.content_kind != "note":
        provenance[CONTENT_KIND_KEY] = node.content_kind
    return Record(
        id=node.id,
        content=text,
        metadata=metadata,
        scope_key=scope_key,
        created_at=_created_at(note.get("created_at") if note else None, node.event_time),
        updated_at=None,
        version=node_version(node),
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
