"""How a memsync memory is a Hindsight document and back: metadata as strings, units as text.

A memsync record is one Hindsight *document*, because the document is what Hindsight lets a
client name, replace and delete; its content is the text of the document's memory units in
order. ``observation`` units are Hindsight's own inferences over other memories, not
something a user wrote, so they are left out (not reported as skipped).

Hindsight keeps only string metadata values: anything else is written as JSON behind a
marker and decoded on read, so metadata round-trips with its types.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC
from typing import Any

from memsync.base.records import ORIGIN_KEY, Outgoing, Record, Skipped, is_blank, parse_instant

# Hindsight has no expiry and no history. A memory's expiration_date is kept in this metadata
# key; once it has passed, memsync deletes the document (at the write, or at the first full
# listing after the date) so agents stop being served it, and keeps the memory itself: the
# staging journal and PMM backups hold it, and clearing or moving the date writes it back.
EXPIRES_KEY = "memsync_expiration_date"
OBSERVATION = "observation"
PROVENANCE_KEY = "memsync_provenance"
# Non-string metadata values travel as this marker followed by their JSON. A string that
# itself starts with the marker is encoded too, so decoding is never ambiguous.
JSON_MARKER = "memsync-json:"
EMPTY_REASON = "empty content"
NO_DOCUMENT_REASON = "memory without a document: Hindsight can neither replace nor delete it"


# metadata ---------------------------------------------------------------------------------


def encode_value(value: Any) -> str:
    """A metadata value as the string Hindsight can keep; ``decode_value`` reverses it."""
    if isinstance(value, str) and not value.startswith(JSON_MARKER):
        return value
    return JSON_MARKER + json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def decode_value(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(JSON_MARKER):
        try:
            return json.loads(value[len(JSON_MARKER) :])
        except ValueError:
            return value
    return value


def metadata_for_hindsight(item: Outgoing) -> dict[str, str]:
    """The user's metadata as strings, plus the origin marker and the provenance."""
    metadata = {key: encode_value(value) for key, value in item.metadata.items()}
    metadata[ORIGIN_KEY] = item.origin
    provenance = {k: v for k, v in item.provenance.items() if v is not None}
    if provenance:
        metadata[PROVENANCE_KEY] = json.dumps(provenance, ensure_ascii=False, sort_keys=True)
    if item.expiration_date:
        metadata[EXPIRES_KEY] = item.expiration_date
    return metadata


# record mapping ---------------------------------------------------------------------------


def _unit_order(unit: dict[str, Any]) -> tuple[str, int]:
    """Units of one document in the order they were written (chunk index, then time)."""
    chunk = str(unit.get("chunk_id") or "")
    tail = chunk.rsplit("_", 1)[-1]
    return (str(unit.get("mentioned_at") or ""), int(tail) if tail.isdigit() else 0)


def version_of(units: list[dict[str, Any]]) -> str:
    """Changes whenever a unit is replaced (new id) or rewritten (new updated_at)."""
    stamps = sorted(f"{u.get('id')}@{u.get('updated_at') or ''}" for u in units)
    return hashlib.sha256("|".join(stamps).encode()).hexdigest()[:32]


def record_from_units(
    record_id: str, units: list[dict[str, Any]], scope_key: str, text: str | None = None
) -> Record | Skipped:
    """One document's memory units as a Record, or Skipped (by id) when they hold no text.

    ``text`` is the document's own text, passed when it was cut into several units: their
    texts joined would not give back what was written.
    """
    units = sorted(units, key=_unit_order)
    if text is None:
        text = "\n".join(str(u.get("text") or "") for u in units)
    if is_blank(text):
        return Skipped(record_id, EMPTY_REASON)
    raw = dict(units[0].get("metadata") or {})
    origin = raw.pop(ORIGIN_KEY, None)
    expires = raw.pop(EXPIRES_KEY, None)
    provenance = _decode_provenance(raw.pop(PROVENANCE_KEY, None))
    metadata = {str(k): decode_value(v) for k, v in raw.items()}
    context = units[0].get("context")
    if context:
        provenance["context"] = context
    tags = sorted({t for u in units for t in (u.get("tags") or [])})
    if tags:
        provenance["tags"] = tags
    provenance["fact_types"] = sorted({str(u.get("fact_type") or "") for u in units})
    provenance["memory_ids"] = [str(u.get("id")) for u in units]
    mentioned = [parse_instant(u.get("mentioned_at")) for u in units]
    first = min((m for m in mentioned if m is not None), default=None)
    updated = [str(u["updated_at"]) for u in units if u.get("updated_at")]
    return Record(
        id=record_id,
        content=text,
        metadata=metadata,
        scope_key=scope_key,
        created_at=first.isoformat() if first else None,
        updated_at=max(updated, key=instant_key) if updated else None,
        version=version_of(units),
        provenance=provenance,
        origin=origin if isinstance(origin, str) and origin else None,
        expiration_date=expires if isinstance(expires, str) and expires else None,
    )


def _decode_provenance(value: Any) -> dict[str, Any]:
    if not isinstance(value, str):
        return {}
    try:
        decoded = json.loads(value)
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}


def instant_key(value: str) -> float:
    instant = parse_instant(value)
    return instant.timestamp() if instant else 0.0


def utc_iso(value: str) -> str:
    """An ISO instant in UTC with a Z, or the value unchanged when it is no instant."""
    instant = parse_instant(value)
    if instant is None:
        return value
    return instant.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class DocumentRef:
    """Where one record lives: its bank and its document id."""

    bank: str
    document: str
