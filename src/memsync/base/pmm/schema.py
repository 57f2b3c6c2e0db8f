"""PMM v1's two shapes, a header and a record: checked field by field, to and from JSON.

A memory's own metadata keys stay top-level keys of the record's ``metadata`` (where other PMM
readers expect them); what memsync and the provider add lives under ``metadata["memsync"]``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from memsync.base.errors import PMMError, RecordError
from memsync.base.records import RESERVED_PREFIX, Record, parse_instant, utc_now_iso

# The largest text a record may carry when it is read in (config: [pmm] max_content_bytes).
DEFAULT_MAX_CONTENT_BYTES = 1024 * 1024
PMM_VERSION = 1
MEMSYNC_KEY = RESERVED_PREFIX  # metadata["memsync"]
Format = Literal["jsonl", "json"]


@dataclass(frozen=True)
class Header:
    source_provider: str
    scope: dict[str, Any] = field(default_factory=dict)
    exported_at: str = field(default_factory=utc_now_iso)
    pmm_version: int = PMM_VERSION

    def as_dict(self) -> dict[str, Any]:
        return {
            "pmm_version": self.pmm_version,
            "exported_at": self.exported_at,
            "source_provider": self.source_provider,
            "scope": self.scope,
        }


def record_to_pmm(record: Record) -> dict[str, Any]:
    """A Record as a PMM record; memsync's own facts go under metadata["memsync"]."""
    own: dict[str, Any] = {}
    if record.created_at:
        own["created_at"] = record.created_at
    if record.updated_at:
        own["updated_at"] = record.updated_at
    if record.version:
        own["version"] = record.version
    if record.origin:
        own["origin"] = record.origin
    if record.provenance:
        own["provenance"] = record.provenance
    if record.expiration_date:
        own["expiration_date"] = record.expiration_date  # a backup keeps expired memories too
    metadata = dict(record.metadata)
    if own:
        metadata[MEMSYNC_KEY] = own
    return {
        "id": record.id,
        "content": record.content,
        "metadata": metadata,
        "scope_key": record.scope_key,
    }


def record_from_pmm(raw: Any, location: str, max_content_bytes: int) -> Record:
    """Validate one PMM record and turn it into a Record; RecordError names the field."""
    if not isinstance(raw, dict):
        raise RecordError("a record must be a JSON object", location=location)
    if "content" not in raw:
        raise RecordError("missing", location=location, field="content")
    content = raw["content"]
    if not isinstance(content, str):
        raise RecordError(
            f"must be a string, got {type(content).__name__}", location=location, field="content"
        )
    size = len(content.encode("utf-8", errors="surrogatepass"))
    if size > max_content_bytes:
        raise RecordError(
            f"{size} bytes is over the {max_content_bytes}-byte limit "
            "(raise [pmm] max_content_bytes to accept it)",
            location=location,
            field="content",
        )
    record_id = raw.get("id")
    if record_id is not None and not isinstance(record_id, str):
        raise RecordError("must be a string or null", location=location, field="id")
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise RecordError("must be an object", location=location, field="metadata")
    scope_key = raw.get("scope_key") or ""
    if not isinstance(scope_key, str):
        raise RecordError("must be a string", location=location, field="scope_key")
    own = metadata.get(MEMSYNC_KEY)
    own = own if isinstance(own, dict) else {}
    provenance = own.get("provenance")
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        raise RecordError("is not valid Unicode text", location=location, field="content") from None
    return Record(
        id=record_id or "",
        content=content,
        metadata={k: v for k, v in metadata.items() if k != MEMSYNC_KEY},
        scope_key=scope_key,
        created_at=_str_or_none(own.get("created_at")),
        updated_at=_str_or_none(own.get("updated_at")),
        version=_str_or_none(own.get("version")),
        provenance=provenance if isinstance(provenance, dict) else {},
        origin=_str_or_none(own.get("origin")),
        expiration_date=_str_or_none(own.get("expiration_date")),
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def check_header(raw: Any, where: str) -> Header:
    """The header as read, or a PMMError saying what is wrong (the whole file is refused)."""
    if not isinstance(raw, dict):
        raise PMMError(f"{where}: the PMM header must be a JSON object")
    if "pmm_version" not in raw:
        if "content" in raw:
            raise PMMError(
                f"{where}: header missing — the file starts with a record; a PMM file starts "
                "with {pmm_version, exported_at, source_provider, scope}"
            )
        raise PMMError(f"{where}: header has no 'pmm_version'; is this a PMM file?")
    version = raw["pmm_version"]
    if version != PMM_VERSION or isinstance(version, bool):
        raise PMMError(
            f"{where}: pmm_version {version!r} is not supported (this memsync reads version 1)"
        )
    exported_at = raw.get("exported_at")
    if not isinstance(exported_at, str) or parse_instant(exported_at) is None:
        raise PMMError(f"{where}: header field 'exported_at' must be an ISO-8601 timestamp")
    source = raw.get("source_provider")
    if not isinstance(source, str) or not source:
        raise PMMError(f"{where}: header field 'source_provider' must be a non-empty string")
    scope = raw.get("scope", {})
    if not isinstance(scope, dict):
        raise PMMError(f"{where}: header field 'scope' must be an object")
    return Header(source_provider=source, scope=scope, exported_at=exported_at)
