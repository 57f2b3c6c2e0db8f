"""Mem0's record shape and memsync's Record, both ways, for all three Mem0 provider types.

ADR-0024's provenance mapping: ``actor_id`` (or ``role`` when absent) is the source;
``created_at`` is preserved; ``user_id``/``agent_id``/``app_id``/``run_id`` are the scope
(``app_id`` on the Platform only); everything else Mem0 attaches is kept in ``provenance`` so
nothing is dropped, the Platform's Dream fields among it (see ``memsync.base.dream``). A memory
with empty content is skipped and reported by its Mem0 id, never carried as an empty memory.

Writes carry memsync's reserved metadata keys: ``memsync_origin`` (the logical memory, so links
can be rebuilt from Mem0 itself), ``memsync_provenance`` (provenance Mem0 has no field for)
and, when needed, ``memsync_escaped`` (user keys whose names Mem0 reserves for itself).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memsync.base.dream import FIELDS as DREAM_FIELDS
from memsync.base.dream import Dream, says_nothing
from memsync.base.records import ORIGIN_KEY, Outgoing, Record, Skipped, is_blank

PROVENANCE_KEY = "memsync_provenance"
ESCAPED_KEY = "memsync_escaped"
# Mem0's update merges metadata (a key can be overwritten, never dropped), so a user key
# memsync removes is overwritten with this value, and reads hide keys that hold it: what
# memsync wrote reads back with the fingerprint it was written with. The value alone marks
# it, so an update needs to know only the keys the memory showed before (the staging store
# has them), not an earlier list of removals.
TOMBSTONE = "memsync:removed"
# Stores written before TOMBSTONE list removed keys here (each nulled): still hidden on read.
REMOVED_KEY = "memsync_removed"
SCOPE_IDS = ("user_id", "agent_id", "app_id", "run_id")  # app_id: the Platform's alone
# Payload keys Mem0 (2.2.1) owns: a user metadata key with one of these names would be hidden,
# overwritten, dropped, or obeyed (a past ``expiration_date`` hides the memory). Writes move
# such keys under ESCAPED_KEY as JSON and reads put them back, so they round-trip unharmed.
MEM0_OWN_KEYS = frozenset(
    {
        "data",
        "hash",
        "created_at",
        "updated_at",
        "id",
        "text_lemmatized",
        "user_id",
        "agent_id",
        "run_id",
        "actor_id",
        "role",
        "attributed_to",
        "expiration_date",
    }
)
# Top-level fields of a Mem0 record that are not provenance: memsync models them directly.
_MODELLED = {
    "id",
    "memory",
    "hash",
    "metadata",
    "created_at",
    "updated_at",
    "score",
    "expiration_date",
}
EMPTY_REASON = "empty content"


def scope_key_of(scope: Mapping[str, str]) -> str:
    """The PMM scope_key of a Mem0 scope: its user id, else agent id, else app id, else run id."""
    for key in SCOPE_IDS:
        if scope.get(key):
            return scope[key]
    return ""


def version_of(raw: Mapping[str, Any]) -> str | None:
    """Mem0's version token: the content hash with the update time, and what Dream says.

    Dream's marks join only when they say something (an untouched memory keeps the token it
    always had): whether Dream moves ``updated_at`` when it retires a memory is not
    documented, and a token that stayed the same would let the mirror skip the change.
    """
    digest, updated = raw.get("hash"), raw.get("updated_at")
    dream = Dream.of(raw).hashed()
    if not digest and not updated and not dream:
        return None
    token = f"{digest or ''}@{updated or ''}"
    if dream:
        token += "#" + ",".join(f"{k}={dream[k]}" for k in sorted(dream))
    return token


def record_from_mem0(raw: Mapping[str, Any], scope_key: str) -> Record | Skipped:
    """A Mem0 record as a memsync Record, or Skipped (by id) when it has no content."""
    memory_id = str(raw.get("id") or "")
    text = raw.get("memory")
    if not isinstance(text, str) or is_blank(text):
        return Skipped(memory_id, EMPTY_REASON)
    metadata = {k: v for k, v in (raw.get("metadata") or {}).items() if v != TOMBSTONE}
    for key in _listed(metadata.pop(REMOVED_KEY, None)):
        if metadata.get(key) is None:  # a key written again since is shown again
            metadata.pop(key, None)
    metadata.update(_decode_object(metadata.pop(ESCAPED_KEY, None)))
    origin = metadata.pop(ORIGIN_KEY, None)
    provenance = _decode_provenance(metadata.pop(PROVENANCE_KEY, None))
    for key, value in raw.items():
        if key in _MODELLED or value is None:
            continue
        if key in DREAM_FIELDS and key in provenance and says_nothing(key, value):
            continue  # a copy memsync wrote: the state it carried stands (see dream.says_nothing)
        provenance[key] = value
    if "session_id" in provenance and "run_id" not in provenance:
        provenance["run_id"] = provenance.pop("session_id")  # the Platform's name for run_id
    # ADR-0024: source is actor_id, else role. A source memsync wrote that Mem0 has no field
    # for (an mnem agent's "agent-x") came back in memsync_provenance and stands.
    source = raw.get("actor_id") or raw.get("role")
    if source and "source" not in provenance:
        provenance["source"] = source
    return Record(
        id=memory_id,
        content=text,
        metadata=metadata,
        scope_key=scope_key,
        created_at=_iso(raw.get("created_at")),
        updated_at=_iso(raw.get("updated_at")),
        version=version_of(raw),
        provenance=provenance,
        origin=origin if isinstance(origin, str) and origin else None,
        expiration_date=_iso(raw.get("expiration_date")) or None,
    )


def metadata_for_mem0(
    item: Outgoing,
    *,
    replacing: Mapping[str, Any] | None = None,
    native: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The metadata memsync writes with a memory: the user's, the origin, the provenance.

    For an update to a store that may merge metadata (Mem0's ``update``), pass the user
    metadata of the memory being ``replacing``: keys it had that the item has not are
    overwritten with TOMBSTONE, and memsync's own JSON keys are rewritten even when empty,
    so merge and replace both leave exactly the item's metadata.
    ``native`` names the provenance the write sets through Mem0's own fields (role, actor,
    scope ids): those are read back from there, so they are not stored twice.
    """
    metadata: dict[str, Any] = {k: v for k, v in item.metadata.items() if k not in MEM0_OWN_KEYS}
    escaped = {k: v for k, v in item.metadata.items() if k in MEM0_OWN_KEYS}
    if escaped:
        metadata[ESCAPED_KEY] = json.dumps(escaped, ensure_ascii=False, sort_keys=True)
    metadata[ORIGIN_KEY] = item.origin
    provenance = _beyond_native(item.provenance, native or {})
    if provenance:
        metadata[PROVENANCE_KEY] = json.dumps(provenance, ensure_ascii=False, sort_keys=True)
    if replacing is not None:
        metadata.setdefault(ESCAPED_KEY, "{}")
        metadata.setdefault(PROVENANCE_KEY, "{}")
        for key in replacing:
            if key not in metadata and key not in MEM0_OWN_KEYS and key not in item.metadata:
                metadata[key] = TOMBSTONE
    return metadata


def _beyond_native(provenance: Mapping[str, Any], native: Mapping[str, Any]) -> dict[str, Any]:
    """The provenance Mem0 will not give back by itself from its own fields."""
    kept = {k: v for k, v in provenance.items() if v is not None and native.get(k) != v}
    derived = native.get("actor_id") or native.get("role")  # how record_from_mem0 rebuilds it
    if kept.get("source") is not None and kept["source"] == derived:
        del kept["source"]
    return kept


def _listed(value: Any) -> list[str]:
    return [k for k in value if isinstance(k, str)] if isinstance(value, list) else []


def _decode_provenance(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, str):
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            return {"note": value}
        return decoded if isinstance(decoded, dict) else {"note": value}
    return {}


def _decode_object(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    return dict(value) if isinstance(value, dict) else {}


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)
