"""A double of Hindsight's HTTP API (``hindsight-api`` 1.1.0, routes under ``/v1/default``).

It follows what ``hindsight_api/api/http.py`` and the Postgres memory store do, for the routes
memsync uses, as a server started with ``HINDSIGHT_API_LLM_PROVIDER=none`` behaves: retain runs
in "chunks" mode, so each item's text becomes memory units verbatim (one per chunk, fact_type
``world``), with ``mentioned_at`` = the item's timestamp plus 10 ms per fact of its document.

- ``POST /banks/{bank}/memories``: validated like ``RetainRequest`` (metadata values must be
  strings and content non-blank, else 422); creates the bank; a ``document_id`` that exists is replaced, unless its
  text is byte-identical, in which case only metadata and tags change (the "delta" path).
- ``GET /banks/{bank}/memories/list``: ``mentioned_at DESC NULLS LAST, created_at DESC, id``
  with ``limit``/``offset``/``type``/``document_id``/time window; ``total`` counts the filter;
  404 for a bank never created. Rows carry every field, nulls included, as a real 1.1.0
  server answered them.
- ``GET /banks/{bank}/documents`` (``updated_at DESC``), ``GET``/``DELETE`` one document (404
  when missing), ``GET /banks``.

What it adds for tests: ``Faults`` (429/5xx/stalls/malformed bodies), ``on_list_page`` (runs
after a list page is computed, e.g. to write between pages), observations and empty units
written behind the API's back.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.doubles import ASGIApp, ASGIBridge, Faults

API = "/v1/default"
SECONDS_PER_FACT = 0.01
MEMORY_TIME_FIELDS = ("created_at", "updated_at", "mentioned_at", "occurred_start", "occurred_end")
DOCUMENT_TIME_FIELDS = ("created_at", "updated_at")


class MemoryItem(BaseModel):
    content: str
    timestamp: str | None = None
    context: str | None = None
    metadata: dict[str, str] | None = None
    document_id: str | None = None
    tags: list[str] | None = None
    update_mode: Literal["replace", "append"] | None = None


class RetainRequest(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    items: list[MemoryItem]
    async_: bool = Field(default=False, alias="async")


@dataclass
class Unit:
    id: str
    text: str
    fact_type: str
    document_id: str | None
    mentioned_at: datetime | None
    created_at: datetime
    updated_at: datetime
    chunk_id: str | None = None
    context: str = ""
    tags: list[str] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    source_memory_ids: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": self.id,
            "text": self.text,
            "context": self.context,
            "date": _iso(self.mentioned_at) or "",
            "fact_type": self.fact_type,
            "document_id": self.document_id,
            "mentioned_at": _iso(self.mentioned_at),
            "occurred_start": None,
            "occurred_end": None,
            "entities": "",
            "chunk_id": self.chunk_id,
            "proof_count": 1,
            "tags": list(self.tags),
            "metadata": dict(self.metadata),
            "consolidated_at": None,
            "consolidation_failed_at": None,
            "state": "valid",
            "invalidation_reason": None,
            "invalidated_at": None,
            "edited_at": None,
            "updated_at": _iso(self.updated_at),
            "source_memory_ids": list(self.source_memory_ids),
        }
        return row


@dataclass
class Document:
    id: str
    bank_id: str
    original_text: str
    content_hash: str
    created_at: datetime
    updated_at: datetime
    metadata: dict[str, str]
    tags: list[str]
    retain_params: dict[str, Any]

    def as_json(self, unit_count: int, *, with_text: bool) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": self.id,
            "bank_id": self.bank_id,
            "content_hash": self.content_hash,
            "created_at": _iso(self.created_at),
            "updated_at": _iso(self.updated_at),
            "text_length": len(self.original_text),
            "memory_unit_count": unit_count,
            "retain_params": self.retain_params,
            "document_metadata": dict(self.metadata),
            "tags": list(self.tags),
        }
        if with_text:
            row["original_text"] = self.original_text
        return row


@dataclass
class Bank:
    id: str
    created_at: datetime
    updated_at: datetime
    units: dict[str, Unit] = field(default_factory=dict)
    documents: dict[str, Document] = field(default_factory=dict)


class HindsightDouble:
    """State and options of one double; ``app`` is the ASGI app, ``transport()`` a client's."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        chunk_size: int = 3000,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.api_key = api_key
        self.chunk_size = chunk_size
        self.clock = clock or (lambda: datetime.now(UTC))
        self.banks: dict[str, Bank] = {}
        self.faults = Faults()
        # Called as on_list_page(bank, route, offset) after a page is computed, before it is
        # sent: the place to write "between two pages" of a listing.
        self.on_list_page: Callable[[str, str, int], None] | None = None
        self._tick = 0
        base = f"{API}/banks/{{bank_id}}"
        routes = [
            Route(f"{API}/banks", self.list_banks, methods=["GET"]),
            Route(f"{base}/memories", self.retain, methods=["POST"]),
            Route(f"{base}/memories/list", self.list_memories, methods=["GET"]),
            Route(f"{base}/documents", self.list_documents, methods=["GET"]),
            Route(f"{base}/documents/{{document_id:path}}", self.get_document, methods=["GET"]),
            Route(
                f"{base}/documents/{{document_id:path}}", self.delete_document, methods=["DELETE"]
            ),
        ]
        self.app: ASGIApp = self.faults.wrap(Starlette(routes=routes))

    def transport(self) -> ASGIBridge:
        return ASGIBridge(self.app)

    # behind the API's back -------------------------------------------------------------

    def now(self) -> datetime:
        # Strictly increasing, like rows written one after another.
        self._tick += 1
        return self.clock() + timedelta(microseconds=self._tick)

    def bank(self, bank_id: str) -> Bank:
        if bank_id not in self.banks:
            now = self.now()
            self.banks[bank_id] = Bank(bank_id, now, now)
        return self.banks[bank_id]

    def add_observation(self, bank_id: str, text: str, sources: list[str] | None = None) -> str:
        """A consolidated observation, as Hindsight derives them (no document of its own)."""
        now = self.now()
        unit = Unit(
            id=str(uuid.uuid4()),
            text=text,
            fact_type="observation",
            document_id=None,
            mentioned_at=now,
            created_at=now,
            updated_at=now,
            source_memory_ids=list(sources or []),
        )
        self.bank(bank_id).units[unit.id] = unit
        return unit.id

    def insert_empty(self, bank_id: str, document_id: str) -> str:
        """A document whose only memory unit has no text (a store edited by other tools)."""
        now = self.now()
        bank = self.bank(bank_id)
        bank.documents[document_id] = Document(
            document_id, bank_id, "", _sha(""), now, now, {}, [], {}
        )
        unit = Unit(str(uuid.uuid4()), "", "world", document_id, now, now, now)
        bank.units[unit.id] = unit
        return document_id

    def write(self, bank_id: str, document_id: str, text: str) -> None:
        """Retain one item as another client would (usable while a request is being served)."""
        bank = self.bank(bank_id)
        self._retain_document(bank, document_id, [MemoryItem(content=text)])
        bank.updated_at = self.now()

    def remove(self, bank_id: str, document_id: str) -> None:
        """Delete a document as another client would."""
        self._drop_document(self.banks[bank_id], document_id)

    def units_of(self, bank_id: str) -> list[Unit]:
        return list(self.banks[bank_id].units.values()) if bank_id in self.banks else []

    # helpers ----------------------------------------------------------------------------

    def _unauthorized(self, request: Request) -> Response | None:
        if self.api_key is None:
            return None
        header = request.headers.get("authorization", "")
        key = header[7:].strip() if header.lower().startswith("bearer ") else header.strip()
        if key == self.api_key:
            return None
        return JSONResponse({"detail": "Invalid API key"}, status_code=401)

    def _existing_bank(self, bank_id: str) -> Bank | Response:
        if bank_id not in self.banks:
            return JSONResponse({"detail": f"Bank '{bank_id}' not found"}, status_code=404)
        return self.banks[bank_id]

    # routes -----------------------------------------------------------------------------

    async def list_banks(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        paging = _paging(request)
        if isinstance(paging, Response):
            return paging
        limit, offset = paging
        banks = sorted(self.banks.values(), key=lambda b: (b.updated_at, b.id), reverse=True)
        rows = [
            {
                "bank_id": b.id,
                "name": b.id,
                "disposition": {"skepticism": 3, "literalism": 3, "empathy": 3},
                "created_at": _iso(b.created_at),
                "updated_at": _iso(b.updated_at),
                "fact_count": len(b.units),
                "matched_aliases": [],
            }
            for b in banks[offset : offset + limit]
        ]
        return JSONResponse({"banks": rows, "total": len(banks), "limit": limit, "offset": offset})

    async def list_memories(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        bank_id = request.path_params["bank_id"]
        bank = self._existing_bank(bank_id)
        if isinstance(bank, Response):
            return bank
        paging = _paging(request)
        if isinstance(paging, Response):
            return paging
        limit, offset = paging
        query = request.query_params
        window = _window(query, MEMORY_TIME_FIELDS)
        if isinstance(window, Response):
            return window
        units = list(bank.units.values())
        if query.get("type"):
            units = [u for u in units if u.fact_type == query["type"]]
        if query.get("document_id"):
            units = [u for u in units if u.document_id == query["document_id"]]
        if window is None:
            units.sort(key=lambda u: u.id)
            units.sort(
                key=lambda u: (
                    u.mentioned_at is not None,
                    u.mentioned_at or datetime.min.replace(tzinfo=UTC),
                    u.created_at,
                ),
                reverse=True,
            )
        else:
            units = _windowed(units, *window)
        rows = [u.as_json() for u in units[offset : offset + limit]]
        total = len(units)
        if self.on_list_page:
            self.on_list_page(bank_id, "memories/list", offset)
        return JSONResponse({"items": rows, "total": total, "limit": limit, "offset": offset})

    async def list_documents(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        bank_id = request.path_params["bank_id"]
        bank = self._existing_bank(bank_id)
        if isinstance(bank, Response):
            return bank
        paging = _paging(request)
        if isinstance(paging, Response):
            return paging
        limit, offset = paging
        window = _window(request.query_params, DOCUMENT_TIME_FIELDS)
        if isinstance(window, Response):
            return window
        documents = list(bank.documents.values())
        if window is None:
            documents.sort(key=lambda d: d.id)
            documents.sort(key=lambda d: d.updated_at, reverse=True)
        else:
            documents = _windowed(documents, *window)
        counts = self._unit_counts(bank)
        rows = [
            d.as_json(counts.get(d.id, 0), with_text=False)
            for d in documents[offset : offset + limit]
        ]
        if self.on_list_page:
            self.on_list_page(bank_id, "documents", offset)
        return JSONResponse(
            {
                "items": rows,
                "total": len(documents),
                "limit": limit,
                "offset": offset,
                "total_is_estimate": False,
            }
        )

    async def get_document(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        bank = self.banks.get(request.path_params["bank_id"])
        document = bank.documents.get(request.path_params["document_id"]) if bank else None
        if bank is None or document is None:
            return JSONResponse({"detail": "Document not found"}, status_code=404)
        counts = self._unit_counts(bank)
        return JSONResponse(document.as_json(counts.get(document.id, 0), with_text=True))

    async def delete_document(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        document_id = request.path_params["document_id"]
        bank = self.banks.get(request.path_params["bank_id"])
        if bank is None or document_id not in bank.documents:
            return JSONResponse({"detail": "Document not found"}, status_code=404)
        deleted = self._drop_document(bank, document_id)
        return JSONResponse(
            {
                "success": True,
                "message": f"Document '{document_id}' and {deleted} associated memory units "
                "deleted successfully",
                "document_id": document_id,
                "memory_units_deleted": deleted,
            }
        )

    async def retain(self, request: Request) -> Response:
        if denied := self._unauthorized(request):
            return denied
        try:
            payload = json.loads(await request.body())
            retain = RetainRequest.model_validate(payload)
        except ValueError as exc:
            return _invalid(exc)
        for index, item in enumerate(retain.items):
            if not item.content.strip():
                return JSONResponse(
                    {
                        "detail": [
                            {
                                "type": "value_error",
                                "loc": ["body", "items", index, "content"],
                                "msg": "Value error, content cannot be empty",
                                "input": item.content,
                            }
                        ]
                    },
                    status_code=422,
                )
            if item.timestamp not in (None, "", "unset") and _parse(item.timestamp) is None:
                return JSONResponse(
                    {
                        "detail": [
                            {
                                "type": "value_error",
                                "loc": ["body", "items", index, "timestamp"],
                                "msg": f"Invalid timestamp/event_date format: '{item.timestamp}'",
                            }
                        ]
                    },
                    status_code=422,
                )
        bank = self.bank(request.path_params["bank_id"])
        groups: dict[str, list[MemoryItem]] = {}
        shared = f"retain_{uuid.uuid4()}"
        any_id = any(item.document_id for item in retain.items)
        for item in retain.items:
            document_id = item.document_id or (f"retain_{uuid.uuid4()}" if any_id else shared)
            groups.setdefault(document_id, []).append(item)
        for document_id, items in groups.items():
            self._retain_document(bank, document_id, items)
        bank.updated_at = self.now()
        return JSONResponse(
            {
                "success": True,
                "bank_id": bank.id,
                "items_count": len(retain.items),
                "async": retain.async_,
                "usage": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0},
            }
        )

    # retain -----------------------------------------------------------------------------

    def _retain_document(self, bank: Bank, document_id: str, items: list[MemoryItem]) -> None:
        text = "\n".join(item.content for item in items)
        digest = _sha(text)
        now = self.now()
        metadata = dict(items[0].metadata or {})
        tags = sorted({t for item in items for t in (item.tags or [])})
        existing = bank.documents.get(document_id)
        if existing is not None and existing.content_hash == digest:
            existing.metadata, existing.tags, existing.updated_at = metadata, tags, now
            for unit in bank.units.values():
                if unit.document_id == document_id:
                    unit.metadata, unit.tags, unit.updated_at = dict(metadata), list(tags), now
            return
        created_at = existing.created_at if existing else now
        if existing is not None:
            self._drop_document(bank, document_id)
        bank.documents[document_id] = Document(
            document_id,
            bank.id,
            text,
            digest,
            created_at,
            now,
            metadata,
            tags,
            {"metadata": metadata, "event_date": _iso(_event_date(items[0].timestamp, now))},
        )
        fact = 0
        for item in items:
            event = _event_date(item.timestamp, now)
            for piece in _chunks(item.content, self.chunk_size):
                unit = Unit(
                    id=str(uuid.uuid4()),
                    text=piece,
                    fact_type="world",
                    document_id=document_id,
                    mentioned_at=event + timedelta(seconds=fact * SECONDS_PER_FACT)
                    if event
                    else None,
                    created_at=now,
                    updated_at=now,
                    chunk_id=f"{bank.id}_{document_id}_{fact}",
                    context=item.context or "",
                    tags=list(item.tags or []),
                    metadata=dict(item.metadata or {}),
                )
                bank.units[unit.id] = unit
                fact += 1

    def _drop_document(self, bank: Bank, document_id: str) -> int:
        doomed = [u.id for u in bank.units.values() if u.document_id == document_id]
        for unit_id in doomed:
            del bank.units[unit_id]
        bank.documents.pop(document_id, None)
        return len(doomed)

    @staticmethod
    def _unit_counts(bank: Bank) -> dict[str, int]:
        counts: dict[str, int] = {}
        for unit in bank.units.values():
            if unit.document_id:
                counts[unit.document_id] = counts.get(unit.document_id, 0) + 1
        return counts


# request parsing --------------------------------------------------------------------------


def _paging(request: Request) -> tuple[int, int] | Response:
    values = []
    for name, default in (("limit", 100), ("offset", 0)):
        raw = request.query_params.get(name)
        try:
            value = default if raw is None else int(raw)
        except ValueError:
            return _query_error(name, raw, "Input should be a valid integer")
        if value < 0:
            return _query_error(name, raw, "Input should be greater than or equal to 0")
        values.append(value)
    return values[0], values[1]


def _window(query: Any, allowed: tuple[str, ...]) -> tuple[str, Any, Any] | Response | None:
    field_name = query.get("time_field")
    start, end = query.get("start_date"), query.get("end_date")
    if field_name is None and start is None and end is None:
        return None
    field_name = field_name or "created_at"
    if field_name not in allowed:
        return JSONResponse({"detail": f"Invalid time_field '{field_name}'"}, status_code=400)
    bounds = []
    for value in (start, end):
        parsed = _parse(value) if value else None
        if value and parsed is None:
            return JSONResponse({"detail": f"Invalid date '{value}'"}, status_code=400)
        bounds.append(parsed)
    return field_name, bounds[0], bounds[1]


def _windowed(rows: list[Any], field_name: str, start: Any, end: Any) -> list[Any]:
    """Rows carrying a value on the axis, inside [start, end), newest first, then id."""
    kept = [r for r in rows if getattr(r, field_name, None) is not None]
    kept = [r for r in kept if start is None or getattr(r, field_name) >= start]
    kept = [r for r in kept if end is None or getattr(r, field_name) < end]
    kept.sort(key=lambda r: r.id)
    kept.sort(key=lambda r: getattr(r, field_name), reverse=True)
    return kept


def _query_error(name: str, value: Any, message: str) -> Response:
    return JSONResponse(
        {
            "detail": [
                {"type": "value_error", "loc": ["query", name], "msg": message, "input": value}
            ]
        },
        status_code=422,
    )


def _invalid(exc: ValueError) -> Response:
    if isinstance(exc, ValidationError):
        errors = json.loads(exc.json(include_url=False))
        for error in errors:
            error["loc"] = ["body", *error["loc"]]
        return JSONResponse({"detail": errors}, status_code=422)
    return JSONResponse(
        {"detail": [{"type": "json_invalid", "loc": ["body"], "msg": "JSON decode error"}]},
        status_code=422,
    )


def _parse(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _event_date(timestamp: str | None, now: datetime) -> datetime | None:
    if timestamp == "unset":
        return None
    return _parse(timestamp) or now


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _iso(value: datetime | None) -> str | None:
    return value.astimezone(UTC).isoformat() if value else None
