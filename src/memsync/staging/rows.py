"""How a Record becomes a row of the staging tables and back (records, journal): one place."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memsync.base.records import FP_VERSION, Record

UPSERT_RECORD = """
INSERT INTO records (provider, provider_id, link_id, content, metadata, scope_key, created_at,
    updated_at, version, provenance, origin, content_hash, fingerprint, fp_version, seen_run,
    expiration_date)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (provider, provider_id) DO UPDATE SET
    link_id = excluded.link_id, content = excluded.content, metadata = excluded.metadata,
    scope_key = excluded.scope_key, created_at = excluded.created_at,
    updated_at = CASE  -- a write that left a version as it was (its store said nothing of when)
        WHEN excluded.updated_at IS NULL AND excluded.version = records.version
        THEN records.updated_at ELSE excluded.updated_at END,
    version = excluded.version,
    provenance = excluded.provenance, origin = excluded.origin,
    content_hash = excluded.content_hash, fingerprint = excluded.fingerprint,
    fp_version = excluded.fp_version, seen_run = excluded.seen_run,
    expiration_date = excluded.expiration_date
"""

RECORD_COLUMNS = (
    "provider, provider_id, link_id, content, metadata, scope_key, created_at, updated_at, "
    "version, provenance, origin, content_hash, fingerprint, fp_version, seen_run, expiration_date"
)


def dumps(value: Any) -> str:
    if not value and isinstance(value, dict):
        return "{}"
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def record_row(provider: str, link_id: str, record: Record, run_id: int) -> tuple[Any, ...]:
    """A Record as a row of the records table, in RECORD_COLUMNS order."""
    return (
        provider,
        record.id,
        link_id,
        record.content,
        record.metadata_json,
        record.scope_key,
        record.created_at,
        record.updated_at,
        record.version,
        record.provenance_json,
        record.origin,
        record.content_hash,
        record.fingerprint,
        FP_VERSION,
        run_id,
        record.expiration_date,
    )


def row_record(row: sqlite3.Row | dict[str, Any]) -> Record:
    """A records-table (or journal) row as a Record."""
    return Record(
        id=row["provider_id"],
        content=row["content"] or "",
        metadata=_object(row["metadata"]),
        scope_key=row["scope_key"] or "",
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        version=row["version"],
        provenance=_object(row["provenance"]),
        origin=_optional(row, "origin"),
        expiration_date=_optional(row, "expiration_date"),
    )


def _object(text: str | None) -> dict[str, Any]:
    """A stored JSON object; most are empty, and those need no parsing."""
    if not text or text == "{}":
        return {}
    value: dict[str, Any] = json.loads(text)
    return value


def _optional(row: sqlite3.Row | dict[str, Any], column: str) -> Any:
    """A column that older queries' rows do not have (None then)."""
    try:
        return row[column]
    except (IndexError, KeyError):  # sqlite3.Row raises IndexError for a missing name
        return None
