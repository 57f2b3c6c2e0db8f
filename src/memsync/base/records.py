"""One memory as a provider holds it, and the fingerprints that identify and version it.

``content_hash`` is the dedup key across providers (text only); ``fingerprint`` is the change
detector within a provider (text, the user's own metadata, the expiration date and what Dream
says of the memory, see ``memsync.base.dream``). Both are
computed over the normalised text so that NFC/NFD spellings and stray whitespace never look
like edits. The text itself is carried byte for byte: normalisation lives only inside the
hashes and the emptiness test (``is_blank``), never in what memsync stores or writes.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import Any

from memsync.base.dream import Dream

# Bump when the fingerprint algorithm changes; stored beside every fingerprint so an upgrade
# re-fingerprints instead of reporting every record as changed.
FP_VERSION = 1

# Metadata keys memsync itself owns. They are never part of a fingerprint and never shown as
# user metadata; in PMM files they live under metadata["memsync"].
RESERVED_PREFIX = "memsync"
ORIGIN_KEY = "memsync_origin"


def normalise_text(text: str) -> str:
    """The form every hash is taken over: Unicode NFC, line endings as LF, surrounding
    whitespace stripped. Spelling variants a store may introduce (Cognee turns CRLF into LF)
    never look like edits; the text itself is always carried as it was given."""
    text = unicodedata.normalize("NFC", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.strip()


def is_blank(text: str) -> bool:
    """The emptiness test: nothing but whitespace once normalised (never carried, ADR-0024)."""
    return not normalise_text(text)


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


def fingerprint(
    text: str,
    metadata: Mapping[str, Any] | None,
    expiration_date: str | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> str:
    """sha256 over the canonical JSON of normalised text, user metadata, expiration date and
    the Dream fields of ``provenance``.

    The date and Dream's marks join the payload only when they say something, so a memory
    without them keeps the fingerprint it had before they travelled (no mass "changed" on
    upgrade).
    """
    payload: dict[str, Any] = {"t": normalise_text(text), "m": user_metadata(metadata)}
    if expiration_date:
        payload["x"] = expiration_date
    dream = Dream.of(provenance).hashed()
    if dream:
        payload["d"] = dream
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


def is_expired(expiration_date: str | None, now: datetime | None = None) -> bool:
    """Whether a memory's expiration date has passed, as Mem0 decides it.

    Mem0 (2.2.1) stores ``YYYY-MM-DD`` and hides a memory once that day is over in UTC
    (``date < today``); a full timestamp expires at that instant.
    """
    if not expiration_date:
        return False
    now = now or utc_clock()
    text = expiration_date.strip()
    if len(text) == 10:
        try:
            return date.fromisoformat(text) < now.astimezone(UTC).date()
        except ValueError:
            return False
    instant = parse_instant(text)
    return instant is not None and instant <= now


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


def utc_clock() -> datetime:
    """The current instant (one place, so a test can move the clock past an expiry date)."""
    return datetime.now(UTC)


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
    expiration_date: str | None = None  # Mem0's field, verbatim; travels like the text does
    # True when this version lost what memsync keeps beside the text in a store that has no
    # room for it (metadata, created_at, expiration_date, origin): an agent rewrote the memory
    # through the store's own API. The mirror carries those over from the version it staged.
    detached: bool = False
    _hashes: tuple[str, str, str] | None = field(
        default=None, init=False, repr=False, compare=False
    )
    _provenance_json: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.metadata = user_metadata(self.metadata)

    @property
    def is_blank(self) -> bool:
        return is_blank(self.content)

    @property
    def provenance_json(self) -> str:
        """The provenance as canonical JSON, built once: the record's staged row and its
        journal entry store the same bytes."""
        if self._provenance_json is None:
            self._provenance_json = canonical_json(self.provenance) if self.provenance else "{}"
        return self._provenance_json

    @property
    def expired(self) -> bool:
        return is_expired(self.expiration_date)

    def _compute(self) -> tuple[str, str, str]:
        # Computed once: content and metadata are not changed after a Record is made.
        if self._hashes is None:
            text = normalise_text(self.content)
            text_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
            metadata_json = canonical_json(self.metadata) if self.metadata else "{}"
            # The same bytes as fingerprint(content, metadata, expiration_date, provenance),
            # built once (canonical JSON sorts the keys: d, m, t, x).
            content_json = json.dumps(text, ensure_ascii=False)
            dream = Dream.of(self.provenance).hashed()
            payload = '{"d":' + canonical_json(dream) + "," if dream else "{"
            payload += '"m":' + metadata_json + ',"t":' + content_json
            if self.expiration_date:
                payload += ',"x":' + json.dumps(self.expiration_date, ensure_ascii=False)
            digest = hashlib.sha256((payload + "}").encode("utf-8")).hexdigest()
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
    expiration_date: str | None = None
    # When the source last changed it (its own updated_at), for stores that keep the date
    # beside the memory (a PMM backup); None when the source does not know it (mnem).
    updated_at: str | None = None

    def __post_init__(self) -> None:
        self.metadata = user_metadata(self.metadata)

    @property
    def is_blank(self) -> bool:
        return is_blank(self.content)

    @property
    def expired(self) -> bool:
        return is_expired(self.expiration_date)

    @classmethod
    def from_record(cls, record: Record, origin: str) -> Outgoing:
        return cls(
            origin=origin,
            content=record.content,
            metadata=dict(record.metadata),
            scope_key=record.scope_key,
            created_at=record.created_at,
            provenance=dict(record.provenance),
            expiration_date=record.expiration_date,
            updated_at=record.updated_at,
        )

    @property
    def content_hash(self) -> str:
        return content_hash(self.content)

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.content, self.metadata, self.expiration_date, self.provenance)


@dataclass(slots=True, frozen=True)
class Skipped:
    """A record a provider listed but memsync will not carry (empty content, too large...)."""

    id: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "reason": self.reason}
