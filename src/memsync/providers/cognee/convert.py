"""How a memsync memory is a Cognee data item and back: the text file, external_metadata.

A record is one data item of the dataset: its id is Cognee's data id, its text the item's
raw file, its metadata the item's ``external_metadata`` (which also carries memsync's origin
marker, provenance and the memory's own created_at, since Cognee stamps its own).
"""

from __future__ import annotations

import hashlib
from typing import Any

from memsync.base.records import ORIGIN_KEY, Outgoing, Record, Skipped

PROVENANCE_KEY = "memsync_provenance"
CREATED_KEY = "memsync_created_at"
# Cognee has no expiry. The date travels here, so it round-trips; an expired memory is still
# served by Cognee (it cannot restore an item: taking it out would need memsync to re-create
# it under a new id it cannot tell from a deleted one). See docs/reliability.md.
EXPIRES_KEY = "memsync_expiration_date"
# Keys Cognee itself gives meaning to inside external_metadata; a user key of the same name
# is stored under this prefix so Cognee never reads it as its own.
COGNEE_KEYS = ("node_set", "_cognee")
ESCAPED_KEY = "memsync_key:"
EMPTY_REASON = "empty content"


def external_metadata_for(item: Outgoing) -> dict[str, Any]:
    """What memsync stores with an item: user metadata, origin, provenance, created_at."""
    metadata: dict[str, Any] = {
        (ESCAPED_KEY + key if key in COGNEE_KEYS else key): value
        for key, value in item.metadata.items()
    }
    metadata[ORIGIN_KEY] = item.origin
    provenance = {k: v for k, v in item.provenance.items() if v is not None}
    if provenance:
        metadata[PROVENANCE_KEY] = provenance
    if item.created_at:
        metadata[CREATED_KEY] = item.created_at
    if item.expiration_date:
        metadata[EXPIRES_KEY] = item.expiration_date
    return metadata


def text_file_name(text: str) -> str:
    """The name Cognee gives raw text (``text_<md5 of the UTF-8 bytes>.txt``)."""
    return f"text_{hashlib.md5(text.encode('utf-8')).hexdigest()}.txt"


def record_from_item(item: dict[str, Any], text: str, scope_key: str) -> Record | Skipped:
    """One data item (camelCase, as the API answers) and its text as a Record."""
    data_id = str(item.get("id") or "")
    if not text.strip():
        return Skipped(data_id, EMPTY_REASON)
    stored = dict(item.get("externalMetadata") or {})
    origin = stored.pop(ORIGIN_KEY, None)
    provenance = stored.pop(PROVENANCE_KEY, None)
    provenance = dict(provenance) if isinstance(provenance, dict) else {}
    created = stored.pop(CREATED_KEY, None)
    expires = stored.pop(EXPIRES_KEY, None)
    for key in COGNEE_KEYS:
        if key in stored:
            provenance[key] = stored.pop(key)
    metadata = {
        (key[len(ESCAPED_KEY) :] if key.startswith(ESCAPED_KEY) else key): value
        for key, value in stored.items()
    }
    for field in ("name", "label", "mimeType", "dataSize"):
        if item.get(field) is not None:
            provenance.setdefault(field, item[field])
    updated = item.get("updatedAt") or item.get("createdAt")
    return Record(
        id=data_id,
        content=text,
        metadata=metadata,
        scope_key=scope_key,
        created_at=created if isinstance(created, str) else item.get("createdAt"),
        updated_at=updated,
        version=f"{item.get('name') or ''}@{updated or ''}",
        provenance=provenance,
        origin=origin if isinstance(origin, str) and origin else None,
        expiration_date=expires if isinstance(expires, str) and expires else None,
    )
