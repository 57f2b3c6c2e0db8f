"""One memory as a provider holds it, and the fingerprints that identify and version it.

``content_hash`` is the dedup key across providers (text only); ``fingerprint`` is the change
detector within a provider (text plus the user's own metadata). Both are computed over the
normalised text so that NFC/NFD spellings and stray whitespace never look like edits.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

# Bump when the fingerprint algorithm changes; stored beside every fingerprint so an upgrade
# re-fingerprints instead of reporting every record as changed.
FP_VERSION = 1

# Metadata keys memsync itself owns. They are never part of a fingerprint and never shown as
# user metadata; in PMM files they live under metadata["memsync"].
RESERVED_PREFIX = "memsync"
ORIGIN_KEY = "memsync_origin"


def normalise_text(text: str) -> str:
    """Unicode NFC with surrounding whitespace stripped: the form every hash is taken over."""
    return unicodedata.normalize("NFC", text).strip()


def content_hash(text: str) -> str:
    """sha256 of the normalised text."""
    return hashlib.sha256(normalise_text(text).encode("utf-8")).hexdigest()


def user_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's own metadata: everything but memsync's reserved keys."""
    if not metadata:
        return {}
    return {k: v for k, v in metadata.items() if not k.startswith(RESERVED_PREFIX)}


def canonical_json(value: Any) -> str:
    """Deterministic JSON: sorted keys, no whitespace, unicode kept."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def fingerprint(text: str, metadata: Mapping[str, Any] | None) -> str:
    """sha256 over the canonical JSON of normalised text and user metadata."""
    payload = canonical_json({"t": normalise_text(text), "m": user_metadata(metadata)})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def parse_instant(value: str | None) -> datetime | None:
    """An ISO-8601 timestamp as an aware instant (naive ones are taken as UTC); None if absent.

    Mem0 stores written before v1.0.7 carry US/Pacific offsets: compare instants, not strings.
    """
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(slots=True)
class Record:
    """A memory as one provider holds it.

    ``metadata`` is the user's own metadata only. ``provenance`` holds what the provider
    attaches (actor, role, scope ids, provider-specific fields) so nothing is dropped, and
    ``origin`` is the logical memory this record belongs to when memsync wrote it.
    """

    id: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    scope_key: str = ""
    created_at: str | None = None
    updated_at: str | None = None
    version: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    origin: str | None = None
    _hashes: tuple[str, str, str] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        self.content = normalise_text(self.content)
        self.metadata = user_metadata(self.metadata)

    def _compute(self) -> tuple[str, str, str]:
        # Computed once: content and metadata are not changed after a Record is made.
        if self._hashes is None:
            text_hash = hashlib.sha256(self.content.encode("utf-8")).hexdigest()
            metadata_json = canonical_json(self.metadata) if self.metadata else "{}"
            # The same bytes as canonical_json({"t": content, "m": metadata}), built once.
            content_json = json.dumps(self.content, ensure_ascii=False)
            payload = '{"m":' + metadata_json + ',"t":' + content_json + "}"
            digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()
            self._hashes = (text_hash, digest, metadata_json)
        return self._hashes

    @property
    def metadata_json(self) -> str:
        """The user metadata as canonical JSON (what the staging store keeps)."""
        return self._compute()[2]

    @property
    def content_hash(self) -> str:
        return self._compute()[0]

    @property
    def fingerprint(self) -> str:
        return self._compute()[1]


@dataclass(slots=True)
class Outgoing:
    """What memsync asks a provider to write: the content of one logical memory.

    ``origin`` is the logical memory's key (``mem0:{id}``, ``mnem:{node}``...): providers that
    choose their own ids store it as a marker, providers that take client ids use it as the id.
    """

    origin: str
    content: str
    metadata: dict[str, Any] = field(default_factory=dict)
    scope_key: str = ""
    created_at: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.content = normalise_text(self.content)
        self.metadata = user_metadata(self.metadata)

    @classmethod
    def from_record(cls, record: Record, origin: str) -> Outgoing:
        return cls(
            origin=origin,
            content=record.content,
            metadata=dict(record.metadata),
            scope_key=record.scope_key,
            created_at=record.created_at,
            provenance=dict(record.provenance),
        )

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.content.encode("utf-8")).hexdigest()

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.content, self.metadata)


@dataclass(slots=True, frozen=True)
class Skipped:
    """A record a provider listed but memsync will not carry (empty content, too large...)."""

    id: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "reason": self.reason}
